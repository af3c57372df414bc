"""Models kept in Git LFS, end to end: real git-lfs, a local bare repository as origin, real ONNX
Runtime sessions. A changed model is measured side by side with the recorded one, rebuilt from its
LFS object, on a runner class that has no figures of its own; same-job A/B reads its reference the
same way; where the object cannot be had, the check says why and names the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import onnx
import pytest

from tests.git_lfs import (
    commit_and_push,
    forget_local_objects,
    lfs_repository,
    path_without_git_lfs,
    requires_git_lfs,
    run_git,
)
from tests.models import mlp_model

pytestmark = requires_git_lfs

# Same input shape, four times the layers: a slowdown far beyond any noise of a shared machine.
FAST = {"layers": 4, "width": 256}
SLOW = {"layers": 16, "width": 256}
QUICK = ("--ortperf-ab-budget=0.5", "--ortperf-budget=0.3", "--ortperf-max-cv=1000%")
TEST_FILE = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 16})

def test_model(ort_perf):
    ort_perf.check_latency()
"""


@pytest.fixture(autouse=True)
def _isolated_git(isolated_git: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test here runs git in pytester's directory only, and never skips LFS objects unasked."""
    monkeypatch.delenv("GIT_LFS_SKIP_SMUDGE", raising=False)


@pytest.fixture
def recorded(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> str:
    """A repository whose model.onnx is kept in Git LFS, recorded on runner class ``runner-a`` and
    committed with its baselines, pushed to the bare ``origin``; then the work tree's model made four
    times slower, and the run moved to runner class ``runner-b``, which has no figures. The commit."""
    lfs_repository(pytester.path, remote(pytester))
    onnx.save(mlp_model(**FAST), pytester.path / "model.onnx")
    pytester.makepyfile(test_lfs=TEST_FILE)
    monkeypatch.setenv("ORTPERF_MACHINE", "runner-a")
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    commit = commit_and_push(pytester.path, "model.onnx", "test_lfs.py", "baselines")
    assert run_git(pytester.path, "show", "HEAD:model.onnx").startswith("version https://git-lfs")
    onnx.save(mlp_model(**SLOW), pytester.path / "model.onnx")
    monkeypatch.setenv("ORTPERF_MACHINE", "runner-b")
    return commit


def remote(pytester: pytest.Pytester) -> Path:
    """The bare repository that is this test's ``origin`` (beside pytester's directory, not in it)."""
    return pytester.path.with_name(f"{pytester.path.name}-remote.git")


def latency_record(where: Path) -> dict[str, Any]:
    """The latency check's record in ``where``/report.json."""
    (check,) = [
        c for c in json.loads((where / "report.json").read_text())["checks"] if c["kind"] == "latency"
    ]
    return check


def assert_fails_against_the_recorded_model(
    pytester: pytest.Pytester, commit: str, *, where: Path | None = None
) -> None:
    """A run (in ``where``, else pytester's directory) fails side by side with the recorded model
    read from its LFS object."""
    result = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(failed=1)
    label = f"the recorded model (git {commit[:12]}:model.onnx from Git LFS)"
    result.stdout.fnmatch_lines(
        [f"*latency regression in test_model[[]cpu-all[]] against {label} (same-job A/B)"]
    )
    latency = latency_record(where or pytester.path)
    assert (latency["path"], latency["verdict"]) == (f"side by side vs {label}", "regression")
    assert latency["current"]["median_ms"] > 2 * latency["reference"]["median_ms"]


def test_a_slower_model_fails_side_by_side_with_the_recorded_one_from_its_lfs_object(
    pytester: pytest.Pytester, recorded: str
) -> None:
    figures = json.loads((pytester.path / "baselines" / "test_lfs.py.json").read_text())["entries"]
    assert [key.split("@")[0] for key in figures["test_model[cpu-all]"]["figures"]] == ["runner-a"]
    assert_fails_against_the_recorded_model(pytester, recorded)


@pytest.mark.slow
def test_a_fresh_clone_without_lfs_objects_fetches_the_recorded_one_from_the_remote(
    pytester: pytest.Pytester, recorded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A CI checkout that skips LFS objects: the clone has pointers only, and the recorded model's object
    # is on the remote alone. The model under test is the slower one, written into the clone.
    clone = pytester.path.with_name(f"{pytester.path.name}-clone")
    monkeypatch.setenv("GIT_LFS_SKIP_SMUDGE", "1")
    run_git(pytester.path.parent, "clone", "-q", str(remote(pytester)), str(clone))
    assert (clone / "model.onnx").read_bytes().startswith(b"version https://git-lfs")
    assert not (clone / ".git" / "lfs" / "objects").exists()
    shutil.copy(pytester.path / "model.onnx", clone / "model.onnx")
    monkeypatch.chdir(clone)
    assert_fails_against_the_recorded_model(pytester, recorded, where=clone)


@pytest.mark.slow
@pytest.mark.slow
def test_a_shallow_clone_says_to_fetch_the_history_and_then_compares(
    pytester: pytest.Pytester, recorded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CI checkouts fetch one commit: the pull request's, where the model is the slower one; the commit
    # that recorded the model is not in the clone.
    commit_and_push(pytester.path, "model.onnx", message="a slower model")
    clone = pytester.path.with_name(f"{pytester.path.name}-clone")
    run_git(pytester.path.parent, "clone", "-q", "--depth=1", f"file://{remote(pytester)}", str(clone))
    shutil.copy(pytester.path / "model.onnx", clone / "model.onnx")  # the slower model under test
    monkeypatch.chdir(clone)
    result = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(failed=1)
    latency = latency_record(clone)
    assert latency["verdict"] == "missing"
    assert (
        "the recorded one is not in this clone's history: it is shallow (cut short), and the model cache "
        "(--ortperf-model-cache) does not hold it either; fetch the history (fetch-depth: 0 on GitHub "
        "Actions' actions/checkout, or git fetch --unshallow)"
    ) in latency["message"]
    assert "Record it with" not in latency["message"]
    run_git(clone, "fetch", "-q", "--unshallow")
    assert_fails_against_the_recorded_model(pytester, recorded, where=clone)


def test_the_recorded_object_absent_here_is_fetched_from_the_remote(
    pytester: pytest.Pytester, recorded: str
) -> None:
    forget_local_objects(pytester.path)
    assert_fails_against_the_recorded_model(pytester, recorded)
    assert any((pytester.path / ".git" / "lfs" / "objects").rglob("*")), "fetched, and kept for the next run"


@pytest.mark.slow
def test_without_git_lfs_the_check_says_to_install_it(
    pytester: pytest.Pytester, recorded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", path_without_git_lfs(pytester.path.with_name(f"{pytester.path.name}-bin")))
    result = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(failed=1)
    latency = latency_record(pytester.path)
    assert latency["verdict"] == "missing"
    assert "is kept in Git LFS (object sha256 " in latency["message"]
    assert (
        "git-lfs is not installed here, so the model cannot be read from its LFS object: install git-lfs"
        in (latency["message"])
    )
    result.stdout.fnmatch_lines(
        ["*git-lfs is not installed here*install git-lfs (Debian and Ubuntu: apt-get install git-lfs*"]
    )


@pytest.mark.slow
def test_an_object_no_one_has_is_a_check_that_names_the_fetch_and_the_push(
    pytester: pytest.Pytester, recorded: str
) -> None:
    forget_local_objects(pytester.path)
    shutil.rmtree(remote(pytester) / "lfs")
    result = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(failed=1)
    message = latency_record(pytester.path)["message"]
    assert "is kept in Git LFS and its object (sha256 " in message
    assert "is neither in this clone (.git/lfs/objects) nor to be had from a remote (" in message
    assert f"fetch it (git lfs fetch origin {recorded})" in message
    assert "push it from the clone that committed it (git lfs push --all origin)" in message
    assert "this hardware has no figures of its own (figures exist for: runner-a@" in message


def test_same_job_ab_reads_the_revisions_model_from_its_lfs_object(
    pytester: pytest.Pytester, recorded: str
) -> None:
    forget_local_objects(pytester.path)  # the reference is on the remote alone
    result = pytester.runpytest("--ortperf-ab=HEAD", "--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*latency regression in test_model[[]cpu-all[]] against HEAD:model.onnx (same-job A/B)"]
    )
    latency = latency_record(pytester.path)
    assert (latency["mode"], latency["reference"]["label"], latency["verdict"]) == (
        "a/b",
        "HEAD:model.onnx",
        "regression",
    )


@pytest.mark.slow
def test_same_job_ab_without_the_object_anywhere_is_an_error_naming_the_fix(
    pytester: pytest.Pytester, recorded: str
) -> None:
    forget_local_objects(pytester.path)
    shutil.rmtree(remote(pytester) / "lfs")
    result = pytester.runpytest("--ortperf-ab=HEAD", *QUICK)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*HEAD:model.onnx is kept in Git LFS and its object (sha256 *) is neither in this clone*git lfs fetch origin {recorded}*"
        ]
    )


@pytest.mark.slow
def test_ab_reads_a_model_with_lfs_external_data_as_it_was_at_the_revision(pytester: pytest.Pytester) -> None:
    lfs_repository(pytester.path, remote(pytester))
    model = pytester.path / "model.onnx"
    onnx.save(mlp_model(**FAST), model, save_as_external_data=True, location="model.data", size_threshold=0)
    commit_and_push(pytester.path, "model.onnx", "model.data")
    forget_local_objects(pytester.path)
    (pytester.path / "model.data").unlink()  # onnx appends to an existing data file
    onnx.save(mlp_model(**SLOW), model, save_as_external_data=True, location="model.data", size_threshold=0)
    pytester.makepyfile(test_lfs=TEST_FILE)
    result = pytester.runpytest("--ortperf-ab=HEAD", "--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*latency regression in test_model[[]cpu-all[]] against HEAD:model.onnx (same-job A/B)"]
    )
    (written,) = (pytester.path / ".ortperf" / "revisions").glob("*/model.onnx")
    kept = (written.parent / "model.data").stat().st_size
    assert 1024 < kept < (pytester.path / "model.data").stat().st_size  # the 4 layers' weights, not a pointer
