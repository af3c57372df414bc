"""Reference environments (``ortperf env``): keys, spec checks, the cache on disk, and real creates."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pytest_ortperf import cli
from pytest_ortperf.errors import OrtperfError, UsageError
from pytest_ortperf.ort.envs import (
    METADATA_FILE,
    EnvCache,
    ReferenceEnv,
    env_key,
    interpreter,
    normalize_specs,
    probe_environment,
    project_env_root,
)
from pytest_ortperf.ort.runtime import installed_distributions


def write_env(
    root: Path,
    specs: tuple[str, ...],
    *,
    flavour: str = "onnxruntime",
    version: str = "1.31.1",
    created: str = "2026-01-01T00:00:00+00:00",
    providers: tuple[str, ...] = ("CPUExecutionProvider",),
) -> Path:
    """An environment directory as ``create`` leaves it, its ortperf-env.json written by hand."""
    key = env_key(specs)
    path = root / key
    path.mkdir(parents=True)
    record = {
        "key": key,
        "specs": list(normalize_specs(specs)),
        "python": str(interpreter(path)),
        "flavour": flavour,
        "version": version,
        "providers": list(providers),
        "python_version": "3.11.7",
        "created": created,
    }
    (path / METADATA_FILE).write_text(json.dumps(record), encoding="utf-8")
    return path


# Keys --------------------------------------------------------------------------------------------


def test_the_key_is_sha256_of_the_sorted_normalized_specs() -> None:
    expected = hashlib.sha256(b"numpy<2\nonnxruntime==1.31.1").hexdigest()[:12]
    assert env_key(["onnxruntime==1.31.1", "numpy<2"]) == expected
    assert len(expected) == 12


def test_the_same_specs_in_any_order_spelling_or_spacing_give_the_same_key() -> None:
    key = env_key(["onnxruntime-gpu==1.30.0", "numpy<2"])
    assert env_key(["numpy<2", "onnxruntime-gpu==1.30.0"]) == key
    assert env_key(["  ONNXRuntime_GPU==1.30.0\n", "NumPy<2"]) == key
    assert env_key(["numpy<2", "onnxruntime-gpu==1.30.0", "numpy<2"]) == key


def test_different_specs_give_different_keys() -> None:
    keys = {
        env_key(["onnxruntime==1.31.1"]),
        env_key(["onnxruntime==1.32.0"]),
        env_key(["onnxruntime-gpu==1.31.1"]),
        env_key(["onnxruntime==1.31.1", "numpy<2"]),
    }
    assert len(keys) == 4


@pytest.mark.parametrize(
    "spec",
    [
        "onnxruntime==1.31.1",
        "onnxruntime-gpu==1.30.0",
        "onnxruntime-directml==1.20.1",
        "numpy<2",
        "numpy>=1.24,<2",
        "onnxruntime~=1.31",
        "onnxruntime===1.31.1+local",
        "onnxruntime",
        "onnxruntime[extra]==1.31.1",
    ],
)
def test_requirements_are_package_specs(spec: str) -> None:
    assert normalize_specs([spec]) == (spec,)


@pytest.mark.parametrize(
    "spec",
    [
        "--index-url=x",
        "-r",
        "-e.",
        "",
        "   ",
        "onnxruntime ==1.31.1",
        "onnxruntime==1.31.1 --pre",
        "numpy;python_version<'3.12'",
        "onnxruntime==1.31.1;",
        "../onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
        "wheels/onnxruntime",
        "C:\\wheels\\onnxruntime",
        "onnxruntime@https://example.com/onnxruntime.whl",
        "git+https://github.com/microsoft/onnxruntime",
        "onnxruntime==",
    ],
)
def test_anything_else_is_refused_naming_the_spec(tmp_path: Path, spec: str) -> None:
    root = tmp_path / "envs"
    with pytest.raises(UsageError) as info:
        EnvCache(root).create(["onnxruntime==1.31.1", spec])
    assert str(info.value) == (
        f"ortperf env create: {spec!r} is not a package spec "
        "(expected NAME==VERSION such as onnxruntime==1.31.1)"
    )
    assert not root.exists(), "nothing may be created before every spec is checked"


def test_create_needs_an_onnx_runtime_among_the_specs(tmp_path: Path) -> None:
    root = tmp_path / "envs"
    with pytest.raises(UsageError, match=r"numpy<2 protobuf names no ONNX Runtime distribution"):
        EnvCache(root).create(["protobuf", "numpy<2"])
    with pytest.raises(UsageError, match="no package specs given"):
        EnvCache(root).create([])
    assert not root.exists()


# The cache on disk -------------------------------------------------------------------------------


def test_list_reads_complete_environments_by_key(tmp_path: Path) -> None:
    cpu = write_env(tmp_path, ("onnxruntime==1.31.1",))
    gpu = write_env(
        tmp_path,
        ("onnxruntime-gpu==1.30.0", "numpy<2"),
        flavour="onnxruntime-gpu",
        version="1.30.0",
        providers=("CUDAExecutionProvider", "CPUExecutionProvider"),
    )
    envs = EnvCache(tmp_path).list()
    assert [env.path for env in envs] == sorted([cpu, gpu])
    by_key = {env.key: env for env in envs}
    env = by_key[gpu.name]
    assert env == ReferenceEnv(
        key=gpu.name,
        path=gpu,
        specs=("numpy<2", "onnxruntime-gpu==1.30.0"),
        python=interpreter(gpu),
        flavour="onnxruntime-gpu",
        version="1.30.0",
        providers=("CUDAExecutionProvider", "CPUExecutionProvider"),
        python_version="3.11.7",
        created="2026-01-01T00:00:00+00:00",
    )
    assert env.runtime == "onnxruntime-gpu 1.30.0"
    assert by_key[cpu.name].runtime == "onnxruntime 1.31.1"
    assert EnvCache(tmp_path).incomplete() == []


def test_a_missing_cache_directory_is_empty(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path / "nowhere")
    assert cache.list() == []
    assert cache.incomplete() == []
    assert cache.find("onnxruntime", "1.31.1") is None
    assert cache.remove_all() == []


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda p: (p / METADATA_FILE).unlink(), id="no-json"),
        pytest.param(lambda p: (p / METADATA_FILE).write_text('{"key": "', encoding="utf-8"), id="truncated"),
        pytest.param(lambda p: (p / METADATA_FILE).write_text("[]", encoding="utf-8"), id="not-an-object"),
        pytest.param(lambda p: (p / METADATA_FILE).write_bytes(b"\xff\xfe\x00"), id="not-utf8"),
        pytest.param(
            lambda p: (p / METADATA_FILE).write_text(
                json.dumps({**json.loads((p / METADATA_FILE).read_text()), "version": None}), encoding="utf-8"
            ),
            id="wrong-type",
        ),
        pytest.param(
            lambda p: (p / METADATA_FILE).write_text(
                json.dumps(
                    {k: v for k, v in json.loads((p / METADATA_FILE).read_text()).items() if k != "providers"}
                ),
                encoding="utf-8",
            ),
            id="missing-field",
        ),
        pytest.param(
            lambda p: (p / METADATA_FILE).write_text(
                json.dumps({**json.loads((p / METADATA_FILE).read_text()), "key": "0123456789ab"}),
                encoding="utf-8",
            ),
            id="another-key",
        ),
        pytest.param(lambda p: [(p / METADATA_FILE).unlink(), (p / METADATA_FILE).mkdir()], id="a-directory"),
    ],
)
def test_a_damaged_json_makes_an_environment_incomplete_never_a_crash(tmp_path: Path, damage) -> None:
    good = write_env(tmp_path, ("onnxruntime==1.31.1",))
    bad = write_env(tmp_path, ("onnxruntime==1.32.0",), version="1.32.0")
    damage(bad)
    cache = EnvCache(tmp_path)
    assert [env.path for env in cache.list()] == [good]
    assert cache.incomplete() == [bad]
    assert cache.find("onnxruntime", "1.32.0") is None


def test_hidden_entries_and_files_are_not_environments(tmp_path: Path) -> None:
    (tmp_path / ".locks").mkdir()
    (tmp_path / ".gitignore").write_text("*\n")
    (tmp_path / "notes.txt").write_text("hello\n")
    cache = EnvCache(tmp_path)
    assert cache.list() == []
    assert cache.incomplete() == []


def test_find_matches_flavour_and_version_and_takes_the_newest(tmp_path: Path) -> None:
    write_env(tmp_path, ("onnxruntime==1.31.1",), created="2026-01-01T00:00:00+00:00")
    newer = write_env(tmp_path, ("onnxruntime==1.31.1", "numpy<2"), created="2026-02-01T00:00:00+00:00")
    gpu = write_env(tmp_path, ("onnxruntime-gpu==1.31.1",), flavour="onnxruntime-gpu")
    cache = EnvCache(tmp_path)
    found = cache.find("onnxruntime", "1.31.1")
    assert found is not None
    assert found.path == newer
    found_gpu = cache.find("onnxruntime_GPU", "1.31.1")
    assert found_gpu is not None
    assert found_gpu.path == gpu
    assert cache.find("onnxruntime", "1.32.0") is None
    assert cache.find("onnxruntime-directml", "1.31.1") is None


def test_get_finds_the_environment_of_these_specs(tmp_path: Path) -> None:
    path = write_env(tmp_path, ("onnxruntime==1.31.1", "numpy<2"))
    env = EnvCache(tmp_path).get(["NumPy<2", "onnxruntime==1.31.1"])
    assert env is not None
    assert env.path == path
    assert EnvCache(tmp_path).get(["onnxruntime==1.31.1"]) is None


# Removing ----------------------------------------------------------------------------------------


def test_remove_by_key_prefix_or_specs(tmp_path: Path) -> None:
    one = write_env(tmp_path, ("onnxruntime==1.31.1",))
    two = write_env(tmp_path, ("onnxruntime==1.32.0",), version="1.32.0")
    three = write_env(tmp_path, ("onnxruntime-gpu==1.30.0", "numpy<2"), flavour="onnxruntime-gpu")
    cache = EnvCache(tmp_path)
    assert cache.remove(one.name) == [one]
    assert cache.remove(two.name[:4]) == [two]
    assert cache.remove("numpy<2 ONNXRuntime-GPU==1.30.0") == [three]
    assert cache.list() == []
    assert not any(path.exists() for path in (one, two, three))


def test_remove_takes_incomplete_environments_too(tmp_path: Path) -> None:
    leftover = tmp_path / env_key(["onnxruntime==1.31.1"])
    (leftover / "lib").mkdir(parents=True)
    assert EnvCache(tmp_path).remove("onnxruntime==1.31.1") == [leftover]
    assert not leftover.exists()


def test_removing_an_unknown_environment_names_it_lists_the_keys_and_deletes_nothing(tmp_path: Path) -> None:
    one = write_env(tmp_path, ("onnxruntime==1.31.1",))
    two = write_env(tmp_path, ("onnxruntime==1.32.0",), version="1.32.0")
    cache = EnvCache(tmp_path)
    for unknown in ("ffffffffffff", "onnxruntime==1.30.0", "--all", one.name[:3], ""):
        with pytest.raises(OrtperfError) as info:
            cache.remove(unknown)
        message = str(info.value)
        assert f"no environment {unknown!r} in {tmp_path}" in message
        assert f"environments there: {', '.join(sorted([one.name, two.name]))}" in message
    assert all(path.exists() for path in (one, two))
    assert len(cache.list()) == 2


def test_an_ambiguous_prefix_removes_nothing(tmp_path: Path) -> None:
    for name in ("abcd00000001", "abcd00000002"):
        (tmp_path / name).mkdir()
    with pytest.raises(
        OrtperfError,
        match=r"'abcd' matches several environments .*: abcd00000001, abcd00000002; give more of the key",
    ):
        EnvCache(tmp_path).remove("abcd")
    assert (tmp_path / "abcd00000001").exists()
    assert (tmp_path / "abcd00000002").exists()
    assert EnvCache(tmp_path).remove("abcd00000002") == [tmp_path / "abcd00000002"]


def test_remove_all_takes_complete_and_incomplete_environments(tmp_path: Path) -> None:
    complete = write_env(tmp_path, ("onnxruntime==1.31.1",))
    incomplete = tmp_path / "0123456789ab"
    incomplete.mkdir()
    (tmp_path / ".gitignore").write_text("*\n")
    assert EnvCache(tmp_path).remove_all() == sorted([complete, incomplete])
    # Only the locks each removal took are left (a creation in progress would have been waited for).
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gitignore", ".locks"]
    assert not [p for p in (tmp_path / ".locks").iterdir() if not p.name.endswith(".lock")]


# The project root --------------------------------------------------------------------------------


@pytest.mark.parametrize("marker", ["pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"])
def test_the_cache_lives_in_the_nearest_project_root(tmp_path: Path, marker: str) -> None:
    project = tmp_path / "project"
    nested = project / "tests" / "unit"
    nested.mkdir(parents=True)
    (project / marker).write_text("")
    assert project_env_root(nested) == project / ".ortperf" / "envs"
    assert project_env_root(project) == project / ".ortperf" / "envs"


def test_the_nearest_project_file_wins(tmp_path: Path) -> None:
    inner = tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    (tmp_path / "outer" / "pyproject.toml").write_text("")
    (inner / "tox.ini").write_text("")
    assert project_env_root(inner / "x") == inner / ".ortperf" / "envs"


def test_without_a_project_file_the_cache_lives_where_we_start(tmp_path: Path) -> None:
    start = tmp_path / "somewhere"
    start.mkdir()
    if any(
        (d / f).is_file()
        for d in start.parents
        for f in ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
    ):
        pytest.skip(f"a directory above {tmp_path} holds a project file")
    assert project_env_root(start) == start / ".ortperf" / "envs"


# Probing an interpreter for real ---------------------------------------------------------------


def test_probe_reports_this_interpreters_onnx_runtime() -> None:
    import onnxruntime

    probe = probe_environment(Path(sys.executable))
    assert probe.version == onnxruntime.__version__
    assert probe.providers == tuple(onnxruntime.get_available_providers())
    assert probe.python_version == ".".join(map(str, sys.version_info[:3]))
    assert set(installed_distributions()) <= set(probe.distributions)
    flavour = probe.flavour(["onnxruntime==1"])
    assert flavour in {name for name, _ in installed_distributions()}


def test_probe_of_an_interpreter_without_onnx_runtime_fails_with_the_import_error(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    with pytest.raises(OrtperfError) as info:
        probe_environment(interpreter(bare))
    message = str(info.value)
    assert "cannot import onnxruntime" in message
    assert "No module named 'onnxruntime'" in message


# Creating for real ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_failed_install_names_the_spec_and_leaves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "envs"
    log = io.StringIO()
    with pytest.raises(OrtperfError) as info:
        EnvCache(root).create(["onnxruntime==0.0.0.1"], log=log, pip_args=("--no-index",))
    message = str(info.value)
    assert message.startswith(
        "ortperf env create: cannot install onnxruntime==0.0.0.1: the package index has no distribution "
        f"of it for this Python ({platform.python_version()}, "
    )
    assert "No matching distribution found for onnxruntime==0.0.0.1" in message
    assert not (root / env_key(["onnxruntime==0.0.0.1"])).exists()
    assert EnvCache(root).list() == []
    assert EnvCache(root).incomplete() == []
    assert "No matching distribution found" in log.getvalue(), "pip's output goes to the log"


def stub_wheel(directory: Path, version: str) -> Path:
    """A pure-Python wheel of an ``onnxruntime`` distribution that is only its import package:
    what pip, the venv and the probe see of a real one, installed offline in a second."""
    dist_info = f"onnxruntime-{version}.dist-info"
    files = {
        "onnxruntime/__init__.py": (
            f"__version__ = {version!r}\n"
            "def get_available_providers():\n"
            "    return ['CPUExecutionProvider']\n"
        ),
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: onnxruntime\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    wheel = directory / f"onnxruntime-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


@pytest.mark.slow
def test_cli_create_installs_probes_records_and_then_reuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    stub_wheel(wheels, "1.99.0")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    root = tmp_path / "envs"
    key = env_key(["onnxruntime==1.99.0"])
    leftover = root / key / "half-installed"
    leftover.mkdir(parents=True)

    assert cli.main(["env", "create", "ONNXRuntime==1.99.0", "--dir", str(root)]) == 0
    out, err = capsys.readouterr()
    python = interpreter(root / key)
    assert out == f"{python}\n", "stdout holds only the interpreter, for PY=$(ortperf env create ...)"
    assert "removing the incomplete" in err
    assert "Successfully installed onnxruntime-1.99.0" in err
    assert not leftover.exists()

    record = json.loads((root / key / METADATA_FILE).read_text(encoding="utf-8"))
    assert record["key"] == key
    assert record["specs"] == ["onnxruntime==1.99.0"]
    assert record["python"] == str(python)
    assert (record["flavour"], record["version"]) == ("onnxruntime", "1.99.0")
    assert record["providers"] == ["CPUExecutionProvider"]
    assert record["distributions"] == [["onnxruntime", "1.99.0"]]
    assert record["created"].endswith("+00:00")
    env = EnvCache(root).find("onnxruntime", "1.99.0")
    assert env is not None
    assert env.python == python
    ran = subprocess.run(
        [str(env.python), "-I", "-c", "import onnxruntime; print(onnxruntime.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ran.stdout == "1.99.0\n"

    before = os.stat(root / key / METADATA_FILE).st_mtime_ns
    assert cli.main(["env", "create", "onnxruntime==1.99.0", "--dir", str(root)]) == 0
    out, err = capsys.readouterr()
    assert out == f"{python}\n"
    assert f"reusing {key} (onnxruntime 1.99.0)" in err
    assert "pip" not in err.lower()
    assert os.stat(root / key / METADATA_FILE).st_mtime_ns == before


@pytest.mark.skipif(
    os.environ.get("ORTPERF_TEST_NETWORK") != "1",
    reason="installs onnxruntime from the package index: set ORTPERF_TEST_NETWORK=1",
)
def test_create_installs_a_real_onnx_runtime(tmp_path: Path) -> None:
    cache = EnvCache(tmp_path / "envs")
    env = cache.create(["onnxruntime==1.31.1"], log=io.StringIO())
    assert (env.flavour, env.version) == ("onnxruntime", "1.31.1")
    assert "CPUExecutionProvider" in env.providers
    assert cache.list() == [env]
    assert cache.find("onnxruntime", "1.31.1") == env


# The console script -----------------------------------------------------------------------------


def test_cli_list_shows_environments_and_marks_incomplete_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_env(tmp_path, ("onnxruntime==1.31.1", "numpy<2"))
    (tmp_path / "0123456789ab").mkdir()
    assert cli.main(["env", "list", "--dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["KEY", "RUNTIME", "SPECS", "PYTHON", "CREATED"]
    assert len(lines) == 3
    assert lines[2].split() == ["0123456789ab", "incomplete", "-", str(tmp_path / "0123456789ab"), "-"]
    assert lines[1].split() == [
        path.name,
        "onnxruntime",
        "1.31.1",
        "numpy<2",
        "onnxruntime==1.31.1",
        str(interpreter(path)),
        "2026-01-01T00:00:00+00:00",
    ]


def test_cli_list_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_env(tmp_path, ("onnxruntime==1.31.1",))
    (tmp_path / "0123456789ab").mkdir()
    assert cli.main(["env", "list", "--dir", str(tmp_path), "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["root"] == str(tmp_path)
    assert listing["incomplete"] == [str(tmp_path / "0123456789ab")]
    [env] = listing["envs"]
    assert env["key"] == path.name
    assert env["python"] == str(interpreter(path))
    assert env["specs"] == ["onnxruntime==1.31.1"]


def test_cli_list_of_an_empty_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["env", "list", "--dir", str(tmp_path / "envs")]) == 0
    assert capsys.readouterr().out == f"no environments in '{tmp_path / 'envs'}'\n"


def test_cli_defaults_to_the_project_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    path = write_env(tmp_path / ".ortperf" / "envs", ("onnxruntime==1.31.1",))
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path / "tests")
    assert cli.main(["env", "list"]) == 0
    assert path.name in capsys.readouterr().out
    assert cli.main(["env", "remove", path.name]) == 0
    assert capsys.readouterr().out == f"removed {path}\n"


def test_cli_remove(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = write_env(tmp_path, ("onnxruntime==1.31.1", "numpy<2"))
    two = write_env(tmp_path, ("onnxruntime==1.32.0",), version="1.32.0")
    leftover = tmp_path / "0123456789ab"
    leftover.mkdir()
    assert cli.main(["env", "remove", "onnxruntime==1.31.1", "numpy<2", "--dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"removed {one}\n"
    assert cli.main(["env", "remove", "--all", "--dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"removed {p}" for p in sorted([two, leftover])]
    assert cli.main(["env", "remove", "--all", "--dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"no environments in '{tmp_path}'\n"


def test_cli_remove_of_an_unknown_key_fails_and_deletes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_env(tmp_path, ("onnxruntime==1.31.1",))
    assert cli.main(["env", "remove", "ffffffff", "--dir", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"ortperf: error: ortperf env remove: no environment 'ffffffff' in {tmp_path} "
        f"(environments there: {path.name})\n"
    )
    assert path.exists()


@pytest.mark.parametrize("args", [[], ["abc123456789", "--all"]])
def test_cli_remove_wants_a_target_or_all_but_not_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    path = write_env(tmp_path, ("onnxruntime==1.31.1",))
    assert cli.main(["env", "remove", *args, "--dir", str(tmp_path)]) == 2
    assert "give a key, a key prefix or specs, or --all" in capsys.readouterr().err
    assert path.exists()


@pytest.mark.parametrize("spec", ["numpy;python_version<'3'", "../onnxruntime.whl", "--index-url=x"])
def test_cli_create_refuses_a_bad_spec_with_exit_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str
) -> None:
    root = tmp_path / "envs"
    assert cli.main(["env", "create", "--dir", str(root), "--", "onnxruntime==1.31.1", spec]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"ortperf: error: ortperf env create: {spec!r} is not a package spec "
        "(expected NAME==VERSION such as onnxruntime==1.31.1)\n"
    )
    assert not root.exists()
