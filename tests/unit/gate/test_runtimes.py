"""Finding the recorded runtime for a side-by-side plan across runtimes (``gate/runtimes.py``): an
environment found, fetched under ``auto``, or the reason there is none, naming the setting. The
installer and what a worker imports are stand-ins; the environment cache is real."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.runtimes import RuntimeFinder, summary_lines
from pytest_ortperf.ort.envs import EnvCache, env_key, interpreter
from tests.unit.ort.test_env_fetch import StandIn
from tests.unit.ort.test_envs import write_env

WANTED = ("onnxruntime", "1.99.0")


def honest(python: str) -> str:
    """What a worker of an environment made here imports: what its stub says (the version in its path)."""
    if python.endswith("/bad/python"):
        raise OrtperfError("the measuring worker exited")
    return "onnxruntime 1.99.0"


def finder(root: Path, installer: StandIn | None = None, **kwargs: object) -> tuple[RuntimeFinder, list[str]]:
    said: list[str] = []
    made = RuntimeFinder(
        caches=[EnvCache(root, installer or StandIn())],
        imports=honest,
        run_id="run",
        say=said.append,
        **kwargs,  # type: ignore[arg-type]
    )
    return made, said


def test_an_environment_of_the_cache_is_used_and_nothing_is_fetched(tmp_path: Path) -> None:
    path = write_env(tmp_path, ("onnxruntime==1.99.0",), version="1.99.0")
    installer = StandIn()
    found, said = finder(tmp_path, installer)
    assert found.python(*WANTED) == (str(interpreter(path)), f"ortperf env {path.name}")
    assert installer.calls == 0
    assert said == []
    assert found.notes == []


def test_a_missing_runtime_is_fetched_once_with_a_line_before_and_the_time_after(tmp_path: Path) -> None:
    installer = StandIn()
    found, said = finder(tmp_path, installer)
    python, where = found.python(*WANTED)
    key = env_key(["onnxruntime==1.99.0"])
    assert (python, where) == (str(interpreter(tmp_path / key)), f"ortperf env {key}")
    assert found.python(*WANTED) == (python, where)  # asked again: remembered, not fetched again
    assert installer.calls == 1
    assert said[0] == (
        f"ortperf: fetching onnxruntime 1.99.0, the runtime the baselines recorded, into {tmp_path} "
        "(pip install onnxruntime==1.99.0; --ortperf-fetch-runtime=never turns this off) ..."
    )
    assert said[1].startswith(
        f"ortperf: fetched onnxruntime 1.99.0 (the recorded runtime) into {tmp_path / key} in "
    )
    assert said[1].endswith(" s")
    assert found.notes == [said[1].removeprefix("ortperf: ")]


def test_never_fetches_nothing_and_says_so_naming_the_setting(tmp_path: Path) -> None:
    installer = StandIn()
    found, said = finder(tmp_path, installer, fetch=False)
    assert found.python(*WANTED) == (
        "",
        f"no environment here has onnxruntime 1.99.0 (neither --ortperf-ab-python nor an ortperf env in "
        f"{tmp_path}), and --ortperf-fetch-runtime=never (ini ortperf_fetch_runtime) does not fetch it; "
        "create one with: ortperf env create onnxruntime==1.99.0 (run anywhere in the repository)",
    )
    assert installer.calls == 0
    assert said == []


def test_a_failed_fetch_is_the_reason_of_every_check_and_one_line_of_the_summary(tmp_path: Path) -> None:
    installer = StandIn(fail="pip cannot reach the package index: ERROR: ...")
    found, said = finder(tmp_path, installer)
    python, why = found.python(*WANTED)
    assert python == ""
    assert why.startswith(
        "--ortperf-fetch-runtime=auto could not fetch onnxruntime 1.99.0: cannot install onnxruntime==1.99.0: "
        "pip cannot reach the package index: ERROR: ... (pip's output: "
    )
    assert why.endswith(
        "; ortperf env create onnxruntime==1.99.0 makes it by hand, or --ortperf-fetch-runtime=never "
        "(ini ortperf_fetch_runtime) stops trying"
    )
    assert found.python(*WANTED) == ("", why)
    assert installer.calls == 1
    assert len(found.notes) == 1
    assert found.notes[0] == f"not fetched: {why.partition('; ortperf env create')[0]}"
    assert said[1:] == [f"ortperf: {found.notes[0]}"]  # after the line that the fetch starts

    # Another worker of the same run: the remembered failure, with when it happened, and no new try
    # and no second summary line.
    other, _ = finder(tmp_path, installer)
    python, remembered = other.python(*WANTED)
    assert python == ""
    assert "not tried again" in remembered
    assert "pip cannot reach the package index" in remembered
    assert installer.calls == 1
    assert other.notes == []
    assert summary_lines([*found.notes, *other.notes, *found.notes]) == found.notes


def test_an_environment_whose_worker_cannot_start_is_not_used(tmp_path: Path) -> None:
    def broken(python: str) -> str:
        raise OrtperfError("exit status 1")

    path = write_env(tmp_path, ("onnxruntime==1.99.0",), version="1.99.0")
    found = RuntimeFinder(caches=[EnvCache(tmp_path)], imports=broken)
    assert found.python(*WANTED) == (
        "",
        f"ortperf env {path.name} cannot run a measuring worker: exit status 1",
    )


def test_the_configured_interpreter_comes_first_when_it_has_the_runtime(tmp_path: Path) -> None:
    found, _ = finder(tmp_path, ab_python="/env/python")
    assert found.python(*WANTED) == ("/env/python", "--ortperf-ab-python /env/python")


def test_the_timing_lock_is_held_while_pip_works(tmp_path: Path) -> None:
    held: list[str] = []

    @contextlib.contextmanager
    def hold() -> Iterator[None]:
        held.append("taken")
        yield
        held.append("let go")

    installer = StandIn()
    original = installer.__call__

    def installing(*args: object) -> None:
        assert held == ["taken"]
        original(*args)  # type: ignore[arg-type]

    found = RuntimeFinder(caches=[EnvCache(tmp_path, installing)], imports=honest, hold=hold)
    assert found.python(*WANTED)[0]
    assert held == ["taken", "let go"]


def test_a_second_cache_is_searched_but_never_fetched_into(tmp_path: Path) -> None:
    """The cache under rootdir, where runs looked before the git top level: still searched."""
    legacy = write_env(tmp_path / "legacy", ("onnxruntime==1.99.0",), version="1.99.0")
    installer = StandIn()
    found = RuntimeFinder(
        caches=[EnvCache(tmp_path / "top", installer), EnvCache(tmp_path / "legacy")], imports=honest
    )
    assert found.python(*WANTED)[1] == f"ortperf env {legacy.name}"
    assert installer.calls == 0


def test_a_cache_that_cannot_be_written_is_a_reason_not_a_crash(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # the cache's root would be below a file
    found, _ = finder(blocked / "envs")
    python, why = found.python(*WANTED)
    assert python == ""
    assert why.startswith("--ortperf-fetch-runtime=auto could not fetch onnxruntime 1.99.0: ")
    assert str(blocked) in why  # the OS error names the path
    assert found.notes == [f"not fetched: {why.partition('; ortperf env create')[0]}"]
