"""What ortperf init finds and writes, as plain logic."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.scaffold import Branch, default_branch, extra, init, model_globs


def test_one_glob_per_folder_of_models_zoo_folders_by_their_parent_and_environments_skipped(
    tmp_path: Path,
) -> None:
    for name in ("models/a.onnx", "models/b.onnx", "deep/x/c.onnx", "zoo/resnet/model.onnx", ".venv/lib/d.onnx",
                 "baselines/e.onnx"):  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "zoo" / "resnet" / "test_data_set_0").mkdir()
    assert model_globs(tmp_path) == ["deep/x/*.onnx", "models/*.onnx", "zoo/*"]


def test_init_refuses_what_it_cannot_use_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no \*\.onnx file or model-zoo folder found"):
        init(tmp_path)
    (tmp_path / "m.onnx").write_bytes(b"")
    with pytest.raises(UsageError, match="--ci: expected one of github, gitlab, azure, got 'jenkins'"):
        init(tmp_path, ci="jenkins")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


@pytest.fixture
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Git that reads no user or system config and finds no repository above ``tmp_path``."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


def test_the_default_branch_is_origins_head_else_the_branch_checked_out_else_main(
    tmp_path: Path, isolated_git: None
) -> None:
    (tmp_path / "plain").mkdir()
    assert default_branch(tmp_path / "plain") == Branch("main", "no git branch found, so the usual default")
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    _git(upstream, "init", "-q", "-b", "master")
    assert default_branch(upstream) == Branch("master", "from the branch checked out")  # no commit yet
    (upstream / "m.onnx").write_bytes(b"")
    _git(upstream, "add", "m.onnx")
    _git(upstream, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "m")
    # A clone on a feature branch: origin/HEAD still names the remote's default branch.
    _git(tmp_path, "clone", "-q", str(upstream), "clone")
    _git(tmp_path / "clone", "checkout", "-q", "-b", "feature")
    assert default_branch(tmp_path / "clone") == Branch("master", "from origin/HEAD")
    # A name the workflows could not quote as it is is passed over.
    _git(upstream, "checkout", "-q", "-b", "it's")
    assert default_branch(upstream) == Branch("main", "no git branch found, so the usual default")


def test_the_cpu_wheel_is_installed_only_when_every_provider_is_the_cpu_one() -> None:
    assert extra(["cpu"]) == "cpu"
    assert extra(["cpu", "cuda"]) == "gpu"
    assert extra(["tensorrt"]) == "gpu"


def test_a_repository_on_master_gets_workflows_that_trigger_on_master(
    tmp_path: Path, isolated_git: None
) -> None:
    _git(tmp_path, "init", "-q", "-b", "master")
    (tmp_path / "m.onnx").write_bytes(b"")
    for ci in ("github", "gitlab", "azure"):
        (change,) = [c for c in init(tmp_path, ci=ci) if c.path.name.endswith(".yml")]
        assert '"master"' in change.text
        assert '"main"' not in change.text
        assert "pytest-ortperf[cpu]" in change.text


def test_models_dvc_keeps_are_found_unpulled_and_every_workflow_pulls_them(
    tmp_path: Path, isolated_git: None
) -> None:
    import yaml

    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / ".dvc").mkdir()
    (tmp_path / "models").mkdir()
    # `dvc add models/m.onnx` and a pipeline stage's output, neither pulled here: pointers only.
    (tmp_path / "models" / "m.onnx.dvc").write_text("outs:\n- md5: " + "0" * 32 + "\n  path: m.onnx\n")
    (tmp_path / "dvc.lock").write_text(
        "schema: '2.0'\nstages:\n  export:\n    outs:\n    - path: exported/x.onnx\n      md5: "
        + "1" * 32
        + "\n"
    )
    # A pipeline not run yet: dvc.yaml declares its output.
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "dvc.yaml").write_text(
        "stages:\n  export:\n    cmd: python export.py\n    deps:\n    - export.py\n    outs:\n"
        "    - out/y.onnx:\n        cache: true\n    - out/notes.txt\n"
    )
    assert model_globs(tmp_path) == ["exported/*.onnx", "models/*.onnx", "train/out/*.onnx"]
    for ci in ("github", "gitlab", "azure"):
        (change,) = [c for c in init(tmp_path, ci=ci) if c.path.name.endswith(".yml")]
        assert "pytest-ortperf[cpu,dvc]" in change.text
        assert "dvc pull" in change.text
        assert "pulls the DVC-tracked models" in change.note
        document = yaml.safe_load(change.text)
        if ci == "github":
            for job in ("gate", "record"):
                steps = [step.get("run", "") for step in document["jobs"][job]["steps"]]
                installed = next(i for i, run in enumerate(steps) if "pip install" in run)
                assert steps[installed + 1] == "dvc pull"  # after the install (DVC comes with the extra)
        if ci == "gitlab":
            assert document[".ortperf"]["before_script"][-1] == "dvc pull"


def test_a_repository_without_dvc_gets_no_dvc_step(tmp_path: Path, isolated_git: None) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "m.onnx").write_bytes(b"")
    (change,) = [c for c in init(tmp_path, ci="github") if c.path.name.endswith(".yml")]
    assert "dvc" not in change.text


def test_decoders_are_collected_with_the_generation_check_and_not_asked_for_sizes(tmp_path: Path) -> None:
    """A GPT-2-shaped decoder (its sequence dims unsized) beside a CNN: init writes an ortperf.toml whose
    table collects the decoder with generation alone, and only the CNN's inputs are reported to size;
    an ortperf.toml already there is left as it is, with the tables to add printed."""
    import onnx

    from pytest_ortperf.scaffold import decoder_models, report, unsized_models
    from tests.exported_models import decoder_model, detector_model

    (tmp_path / "models").mkdir()
    onnx.save(decoder_model(1), tmp_path / "models" / "gpt.onnx")
    onnx.save(detector_model(1, 4), tmp_path / "models" / "detector.onnx")
    decoders = decoder_models(tmp_path)
    assert decoders == [tmp_path / "models" / "gpt.onnx"]
    changes = init(tmp_path, decoders=decoders)
    written = (tmp_path / "ortperf.toml").read_text()
    assert '[models."models/gpt.onnx"]\nchecks = ["generation"]\n' in written
    assert written.startswith("# pytest-ortperf: these models read as decoders")
    unsized = unsized_models(tmp_path, decoders=decoders)
    assert [line.split(":")[0] for line in unsized] == ["models/detector.onnx"]
    said = report(changes, tmp_path, unsized=unsized)
    assert "wrote ortperf.toml (1 decoder(s), measured with check_generation())" in said

    again = tmp_path / "again"
    (again / "models").mkdir(parents=True)
    onnx.save(decoder_model(1), again / "models" / "gpt.onnx")
    (again / "ortperf.toml").write_text('[models."other.onnx"]\nseed = 1\n')
    (change,) = [c for c in init(again) if c.path.name == "ortperf.toml"]
    assert not change.written
    assert (again / "ortperf.toml").read_text() == '[models."other.onnx"]\nseed = 1\n'
    assert '[models."models/gpt.onnx"]\nchecks = ["generation"]' in change.text
    assert "ortperf.toml exists and was left as it is; add this to it:" in report([change], again)
