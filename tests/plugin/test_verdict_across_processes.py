"""A side-by-side verdict holds across processes: a first regression or improvement, measured in
this pytest process, is measured again in new measuring worker processes, on real sessions."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from pytest_ortperf.checks.latency_verdicts import NEW_PROCESSES
from tests.models import mlp_model
from tests.plugin.conftest import LATENCY_MODEL, commit_model, reexport

QUICK = ("--ortperf-budget=0.2", "--ortperf-ab-budget=1", "--ortperf-max-cv=1000%", "--ortperf-ab-threshold=10%")


def _check(pytester: pytest.Pytester) -> dict[str, object]:
    checks = json.loads((pytester.path / "report.json").read_text())["checks"]
    (check,) = [c for c in checks if c["kind"] == "latency"]
    return check  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.usefixtures("isolated_git")
@pytest.mark.parametrize(
    ("layers", "outcome", "verdict"), [(32, "failed", "regression"), (2, "passed", "improved")]
)
def test_a_changed_models_verdict_is_measured_again_in_new_worker_processes(
    pytester: pytest.Pytester, latency_suite: Path, layers: int, outcome: str, verdict: str
) -> None:
    blob = commit_model(pytester, **LATENCY_MODEL)
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    # Four times the layers, or a quarter: far beyond the threshold in every process.
    onnx.save(mlp_model(layers=layers, width=LATENCY_MODEL["width"]), pytester.path / "model.onnx")
    result = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(**{outcome: 1})
    check = _check(pytester)
    assert check["path"] == f"side by side vs the recorded model (git {blob[:12]})"
    assert check["verdict"] == verdict
    confirmation = check["confirmation"]
    assert isinstance(confirmation, dict)
    # Never skipped as clear, whatever its margin: the second measurement ran in new processes.
    assert (confirmation["confirmed"], confirmation["processes"], confirmation["disagreement"]) == (
        True,
        NEW_PROCESSES,
        "",
    )
    assert str(check["decided_by"]).endswith(f"; measured again in {NEW_PROCESSES}")
    seconds = check["seconds"]
    assert isinstance(seconds, dict)
    assert seconds["confirming"] > 0
    if outcome == "failed":
        result.stdout.fnmatch_lines([f"  first measurement: +*% (* CI *) (confirmed by a second in {NEW_PROCESSES})"])


SLOW_IN_THIS_PROCESS = '''
import pathlib
import time

import onnxruntime

_run = onnxruntime.InferenceSession.run


def _slower(self, *args, **kwargs):
    """Every session of the work tree's model in this pytest process runs 2 ms slower: a state of
    this process alone (as a session's placement or its threads' can be), which new processes lack."""
    path = getattr(self, "_model_path", None)
    if path and pathlib.Path(str(path)).name == "model.onnx":
        time.sleep(0.002)
    return _run(self, *args, **kwargs)


def pytest_configure(config):
    onnxruntime.InferenceSession.run = _slower


def pytest_unconfigure(config):
    # pytester runs this pytest in the test's own process: leave onnxruntime as it was found.
    onnxruntime.InferenceSession.run = _run
'''


@pytest.mark.slow
@pytest.mark.usefixtures("isolated_git")
def test_a_regression_of_this_process_alone_is_inconclusive_with_both_figures(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    """The same work under other weights, slower only in the pytest process: its first measurement
    says regression, new worker processes do not, and the check passes as inconclusive, naming both."""
    commit_model(pytester, **LATENCY_MODEL)
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    reexport(pytester)  # other weights: another graph, the same work
    pytester.makeconftest(SLOW_IN_THIS_PROCESS)
    result = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(passed=1)
    check = _check(pytester)
    assert check["verdict"] == "inconclusive"
    confirmation = check["confirmation"]
    assert isinstance(confirmation, dict)
    assert confirmation["processes"] == NEW_PROCESSES
    assert confirmation["confirmed"] is False
    assert str(confirmation["disagreement"]).startswith("the first said regression, the second ")
    first = confirmation["first_change"]
    assert isinstance(first, dict)
    assert first["low"] > 1.03  # beyond the threshold: 2 ms on some runs of well under 1 ms, in this process
    change = check["change"]
    assert isinstance(change, dict)
    assert change["ratio"] < first["ratio"]  # the workers measured the same work, without the slowdown
    result.stdout.fnmatch_lines(
        [
            "*processes disagree (the first said regression, the second *): +*% (* CI +*% .. +*%) regression, "
            f"then *% (* CI *) * in {NEW_PROCESSES}*inconclusive",
            "1 check(s) inconclusive because two processes disagreed: *",
        ]
    )
