"""Fetching a recorded runtime into the environment cache (``EnvCache.fetch``): one creation shared
through the lock, a half-made environment never used, a failure remembered for its run; and the
cache found the same from any directory of a repository.

The installer is a stand-in: a real virtual environment without pip (a tenth of a second) holding a
stub ``onnxruntime`` package of the version asked for, so the probe that follows runs for real.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import pytest

from pytest_ortperf import cli
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.ort.envs import (
    FAILED_DIR,
    LOG_DIR,
    EnvCache,
    FetchError,
    env_key,
    env_root,
    git_toplevel,
    pip_failure,
    pip_install,
)
from tests.unit.ort.test_envs import write_env

SPEC = "onnxruntime==1.99.0"
KEY = env_key([SPEC])


class StandIn:
    """An installer that counts its calls, can wait for a signal half-way, and can fail."""

    def __init__(self, *, fail: str = "", hold: threading.Event | None = None) -> None:
        self.calls = 0
        self.pip_args: tuple[str, ...] = ()
        self.fail = fail
        self.hold = hold
        self.halfway = threading.Event()

    def __call__(
        self, env_dir: Path, specs: Sequence[str], python: str, out: TextIO, pip_args: Sequence[str]
    ) -> None:
        self.calls += 1
        self.pip_args = tuple(pip_args)
        pip_install_without_pip(env_dir, python)
        print(f"installing {' '.join(specs)}", file=out)
        self.halfway.set()
        if self.hold is not None:
            assert self.hold.wait(30)
        if self.fail:
            raise OrtperfError(f"ortperf env create: cannot install {' '.join(specs)}: {self.fail}")
        version = specs[0].partition("==")[2]
        site = next((env_dir / "lib").glob("python*/site-packages"))
        package = site / "onnxruntime"
        package.mkdir()
        (package / "__init__.py").write_text(
            f"__version__ = {version!r}\ndef get_available_providers():\n    return ['CPUExecutionProvider']\n"
        )


def pip_install_without_pip(env_dir: Path, python: str) -> None:
    subprocess.run([python, "-m", "venv", "--without-pip", str(env_dir)], check=True)


@pytest.fixture(autouse=True)
def _posix_only() -> None:
    if sys.platform == "win32":
        pytest.skip("the environment lock is POSIX only")


def test_a_fetch_creates_once_and_then_reuses(tmp_path: Path) -> None:
    installer = StandIn()
    cache = EnvCache(tmp_path / "envs", installer)
    first = cache.fetch([SPEC], run_id="run-1")
    assert first.created
    assert (first.env.flavour, first.env.version, first.env.key) == ("onnxruntime", "1.99.0", KEY)
    assert "installing onnxruntime==1.99.0" in (tmp_path / "envs" / LOG_DIR / f"{KEY}.log").read_text()
    again = cache.fetch([SPEC], run_id="run-2")
    assert not again.created
    assert again.env == first.env
    assert installer.calls == 1
    assert cache.find("onnxruntime", "1.99.0") == first.env
    # Inside a test run, holding the timing lock: pip gives up soon where the index is unreachable.
    assert installer.pip_args == ("--retries", "1", "--timeout", "15")


def test_concurrent_fetches_share_one_creation(tmp_path: Path) -> None:
    """Two fetchers (as two xdist workers): the second waits on the lock and reuses the first's."""
    release = threading.Event()
    installer = StandIn(hold=release)
    results: list[object] = []

    def fetch() -> None:
        results.append(EnvCache(tmp_path / "envs", installer).fetch([SPEC], run_id="run"))

    first = threading.Thread(target=fetch)
    first.start()
    assert installer.halfway.wait(30)
    second = threading.Thread(target=fetch)
    second.start()
    time.sleep(0.2)  # the second is now waiting on the lock (it cannot have finished: nothing is complete)
    assert len(results) == 0
    release.set()
    first.join(30)
    second.join(30)
    assert installer.calls == 1
    created = sorted(result.created for result in results)  # type: ignore[attr-defined]
    assert created == [False, True]


def test_a_half_made_environment_is_never_used(tmp_path: Path) -> None:
    release = threading.Event()
    installer = StandIn(hold=release)
    cache = EnvCache(tmp_path / "envs", installer)
    thread = threading.Thread(target=lambda: cache.fetch([SPEC], run_id="run"))
    thread.start()
    try:
        assert installer.halfway.wait(30)
        # Its directory exists, its interpreter too, but nothing says it is complete.
        assert (tmp_path / "envs" / KEY / "bin").is_dir()
        assert cache.find("onnxruntime", "1.99.0") is None
        assert cache.get([SPEC]) is None
        assert cache.list() == []
    finally:
        release.set()
        thread.join(30)
    assert cache.find("onnxruntime", "1.99.0") is not None


def test_a_leftover_of_an_interrupted_creation_is_removed_and_made_again(tmp_path: Path) -> None:
    leftover = tmp_path / "envs" / KEY / "half-installed"
    leftover.mkdir(parents=True)
    cache = EnvCache(tmp_path / "envs", StandIn())
    assert cache.find("onnxruntime", "1.99.0") is None
    assert cache.incomplete() == [tmp_path / "envs" / KEY]
    fetched = cache.fetch([SPEC], run_id="run")
    assert fetched.created
    assert not leftover.exists()


def test_a_failed_fetch_leaves_nothing_and_is_remembered_for_its_run_only(tmp_path: Path) -> None:
    installer = StandIn(fail="the package index has no distribution of it for this Python (3.10)")
    cache = EnvCache(tmp_path / "envs", installer)
    with pytest.raises(FetchError) as info:
        cache.fetch([SPEC], run_id="run-1")
    assert not info.value.remembered
    reason = str(info.value)
    assert reason.startswith("cannot install onnxruntime==1.99.0: the package index has no distribution")
    assert f"pip's output: {tmp_path / 'envs' / LOG_DIR / (KEY + '.log')}" in reason
    assert not (tmp_path / "envs" / KEY).exists()
    assert cache.incomplete() == []
    written = cache.failure(KEY)
    assert written is not None
    assert (written.reason, written.run_id) == (reason, "run-1")
    assert written.when.endswith("+00:00")

    # The same run (another xdist worker): the same reason, without trying again.
    with pytest.raises(FetchError) as again:
        EnvCache(tmp_path / "envs", installer).fetch([SPEC], run_id="run-1")
    assert again.value.remembered
    assert str(again.value) == reason
    assert installer.calls == 1

    # Another run tries again; a success forgets the failure.
    installer.fail = ""
    assert cache.fetch([SPEC], run_id="run-2").created
    assert installer.calls == 2
    assert cache.failure(KEY) is None
    assert not (tmp_path / "envs" / FAILED_DIR / f"{KEY}.json").exists()


def test_a_damaged_failure_record_is_no_failure(tmp_path: Path) -> None:
    (tmp_path / "envs" / FAILED_DIR).mkdir(parents=True)
    (tmp_path / "envs" / FAILED_DIR / f"{KEY}.json").write_text("{not json")
    cache = EnvCache(tmp_path / "envs", StandIn())
    assert cache.failure(KEY) is None
    assert cache.fetch([SPEC], run_id="run").created


def test_a_bad_recorded_spec_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(
        OrtperfError, match=r"fetching a recorded runtime: 'onnxruntime==1 2' is not a package spec"
    ):
        EnvCache(tmp_path / "envs", StandIn()).fetch(["onnxruntime==1 2"], run_id="run")


# pip's failures in plain words ---------------------------------------------------------------------

NO_MATCH = """\
ERROR: Could not find a version that satisfies the requirement onnxruntime-gpu==1.31.1 (from versions: 1.19.0, 1.23.2)
ERROR: No matching distribution found for onnxruntime-gpu==1.31.1
"""
OFFLINE = """\
WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by \
'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new \
connection: [Errno -3] Temporary failure in name resolution')': /simple/onnxruntime-gpu/
ERROR: Could not find a version that satisfies the requirement onnxruntime-gpu==1.31.1 (from versions: none)
ERROR: No matching distribution found for onnxruntime-gpu==1.31.1
"""


def test_no_distribution_for_this_python_says_so_with_pips_words() -> None:
    reason = pip_failure(NO_MATCH, 1, "3.10.14")
    assert reason.startswith("the package index has no distribution of it for this Python (3.10.14, ")
    assert "No matching distribution found for onnxruntime-gpu==1.31.1" in reason
    assert "(from versions: 1.19.0, 1.23.2)" in reason


def test_an_unreachable_index_says_so() -> None:
    reason = pip_failure(OFFLINE, 1)
    assert reason.startswith("pip cannot reach the package index: ERROR: Could not find a version")


def _python310() -> str | None:
    """A Python 3.10 here, looked for as .ci/run does (a pyenv shim without its interpreter is none)."""
    candidates = [
        shutil.which("python3.10"),
        *map(str, sorted(Path.home().glob(".pyenv/versions/3.10.*/bin/python3"))),
    ]
    for candidate in filter(None, candidates):
        check = [candidate, "-c", "import sys; sys.exit(sys.version_info[:2] != (3, 10))"]
        if subprocess.run(check, capture_output=True, check=False).returncode == 0:
            return candidate
    return None


PY310 = _python310()


@pytest.mark.slow
@pytest.mark.skipif(PY310 is None, reason="needs a Python 3.10 interpreter (python3.10 or pyenv's)")
def test_a_wheel_that_does_not_exist_for_this_python_says_so_for_real(tmp_path: Path) -> None:
    """onnxruntime-gpu 1.31.1 has no wheel for Python 3.10 (pip's newest there: 1.23.2): pip asks the
    package index and says so; nothing is installed (no 340 MB download)."""
    assert PY310 is not None
    cache = EnvCache(tmp_path / "envs")
    with pytest.raises(FetchError) as info:
        cache.fetch(["onnxruntime-gpu==1.31.1"], run_id="run", python=PY310)
    reason = str(info.value)
    assert reason.startswith(
        "cannot install onnxruntime-gpu==1.31.1: the package index has no distribution of it for this Python (3.10."
    ), reason
    assert "No matching distribution found for onnxruntime-gpu==1.31.1" in reason


def test_another_pip_failure_gives_its_error_lines_or_its_tail() -> None:
    assert pip_failure("ERROR: Disk quota exceeded\n", 1) == "ERROR: Disk quota exceeded"
    assert pip_failure("something\nbroke\n", 2) == "pip exit status 2: something | broke"


def test_the_default_installer_reports_a_missing_python(tmp_path: Path) -> None:
    with pytest.raises(OrtperfError, match="cannot run /no/such/python"):
        pip_install(tmp_path / "env", [SPEC], "/no/such/python", io.StringIO(), ())


# Where the cache is ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dot_git", ["directory", "file"])  # a file: a git worktree or submodule
def test_the_cache_is_at_the_git_top_level_from_any_directory(tmp_path: Path, dot_git: str) -> None:
    repo = tmp_path / "repo"
    suite = repo / "examples" / "models"
    suite.mkdir(parents=True)
    if dot_git == "directory":
        (repo / ".git").mkdir()
    else:
        (repo / ".git").write_text("gitdir: /elsewhere/.git/worktrees/repo\n")
    (repo / "pyproject.toml").write_text("")
    (repo / "examples" / "pytest.ini").write_text("[pytest]\n")  # a rootdir below the top level
    assert git_toplevel(suite) == repo
    for start in (repo, repo / "examples", suite):
        assert env_root(start) == repo / ".ortperf" / "envs"


def test_outside_git_the_cache_is_in_the_nearest_project_root(tmp_path: Path) -> None:
    if git_toplevel(tmp_path) is not None:
        pytest.skip(f"{tmp_path} is inside a git work tree")
    (tmp_path / "project" / "tests").mkdir(parents=True)
    (tmp_path / "project" / "tox.ini").write_text("")
    assert env_root(tmp_path / "project" / "tests") == tmp_path / "project" / ".ortperf" / "envs"


def test_env_create_at_the_top_level_serves_a_suite_below_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ortperf env list`` at the repository root and in the suite's rootdir see the same cache."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "examples").mkdir()
    (repo / "examples" / "pytest.ini").write_text("[pytest]\n")
    made = write_env(repo / ".ortperf" / "envs", (SPEC,), version="1.99.0")
    for where in (repo, repo / "examples"):
        monkeypatch.chdir(where)
        assert cli.main(["env", "list"]) == 0
        assert made.name in capsys.readouterr().out
