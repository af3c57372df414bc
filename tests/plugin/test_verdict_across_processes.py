"""A side-by-side verdict holds across processes: it is estimated over several measuring processes
from its first measurement on, on real sessions."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from tests.models import mlp_model
from tests.plugin.conftest import LATENCY_MODEL, commit_model, reexport

QUICK = (
    "--ortperf-budget=0.2",
    "--ortperf-ab-budget=1",
    "--ortperf-max-cv=1000%",
    "--ortperf-ab-threshold=10%",
)


def _check(pytester: pytest.Pytester) -> dict[str, object]:
    checks = json.loads((pytester.path / "report.json").read_text())["checks"]
    (check,) = [c for c in checks if c["kind"] == "latency"]
    return check  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.usefixtures("isolated_git")
@pytest.mark.parametrize(
    ("layers", "outcome", "verdict"), [(32, "failed", "regression"), (2, "passed", "improved")]
)
def test_a_changed_models_verdict_is_estimated_across_measuring_processes(
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
    assert "confirmation" not in check  # one estimate over every process: nothing to confirm
    processes = check["processes"]
    assert isinstance(processes, dict)
    # Decided at the first look, with at least three processes, each one's change on the same side.
    assert processes["count"] == len(processes["ratios"]) >= 3
    assert processes["count"] <= processes["most"]
    assert all((ratio > 1.0) == (verdict == "regression") for ratio in processes["ratios"])
    assert "measuring processes" in str(check["decided_by"])
    seconds = check["seconds"]
    assert isinstance(seconds, dict)
    assert "confirming" not in seconds or seconds["confirming"] == 0
    if outcome == "failed":
        result.stdout.fnmatch_lines(["  processes: +*%, +*%, +*% (each process's median round ratio)"])


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
def test_a_slowdown_of_the_pytest_process_alone_decides_nothing(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    """The same work under other weights, slower only in the pytest process: every side-by-side
    measurement runs in measuring processes, so it is not a regression (the first measurement in
    this process used to say so, and a second in new processes did not)."""
    commit_model(pytester, **LATENCY_MODEL)
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    reexport(pytester)  # other weights: another graph, the same work
    pytester.makeconftest(SLOW_IN_THIS_PROCESS)
    result = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(passed=1)
    check = _check(pytester)
    assert check["verdict"] in ("ok", "inconclusive")
    change = check["change"]
    assert isinstance(change, dict)
    assert change["low"] < 1.0 < change["high"] or check["verdict"] == "ok"
    processes = check["processes"]
    assert isinstance(processes, dict)
    assert processes["count"] >= 3
    if check["verdict"] == "inconclusive":
        result.stdout.fnmatch_lines(["*undecided after * measuring processes*"])
