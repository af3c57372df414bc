"""What CI reads: the JSON report, the markdown summary, GitHub's step summary, JUnit, strictness."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from tests.models import mlp_model

TESTS = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

def test_latency(ort_perf):
    ort_perf.check_latency()

def test_accuracy(ort_perf):
    ort_perf.check_accuracy()

@pytest.mark.ort_profile
def test_profiled(ort_session, ort_inputs):
    ort_session.run(None, ort_inputs)
"""
QUICK = ("--ortperf-budget=0.05", "--ortperf-max-cv=1000%")


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(test_ci=TESTS)
    return pytester.path


def test_json_report_markdown_and_step_summary(pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    step_summary = suite / "step-summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    result = pytester.runpytest(*QUICK, "--ortperf-report=out/report.json", "--ortperf-markdown=out/summary.md", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1, failed=2)  # no baselines: latency and accuracy fail by default
    report = json.loads((suite / "out" / "report.json").read_text())
    assert report["failed"] == 2
    kinds = {(c["test"], c["kind"]): c for c in report["checks"]}
    latency = kinds[("test_ci.py::test_latency[cpu-all]", "latency")]
    assert latency["verdict"] == "missing"
    assert latency["current"]["median_ms"] > 0
    assert latency["machine"] == report["machine"]
    accuracy = kinds[("test_ci.py::test_accuracy[cpu-all]", "accuracy")]
    assert accuracy["references"][0]["reference"] == "baseline"
    markdown = (suite / "out" / "summary.md").read_text()
    assert "**2 failed**" in markdown
    assert "| ❌ | `test_ci.py::test_latency[cpu-all]` | cpu-all | latency |" in markdown
    assert step_summary.read_text() == "earlier step\n" + markdown
    junit = (suite / "junit.xml").read_text()
    assert 'name="ortperf_latency_verdict" value="missing"' in junit
    assert 'name="ortperf_trace"' in junit


def test_report_after_an_update_passes_and_lists_traces(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=3)
    result = pytester.runpytest(*QUICK, "--ortperf-latency-threshold=500%", "--ortperf-report=report.json")
    result.assert_outcomes(passed=3)
    report = json.loads((suite / "report.json").read_text())
    assert report["failed"] == 0
    assert {c["verdict"] for c in report["checks"]} <= {"ok", "inconclusive", "inconclusive (not confirmed)", "improved"}


def test_strict_fails_the_run_on_unused_baselines(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=3)
    pytester.makepyfile(test_ci=TESTS.replace("def test_accuracy", "def test_outputs"))
    relaxed = pytester.runpytest(*QUICK, "--ortperf-latency-threshold=500%", "-k", "latency")
    assert relaxed.ret == pytest.ExitCode.OK
    strict = pytester.runpytest(*QUICK, "--ortperf-latency-threshold=500%", "-k", "latency", "--ortperf-strict")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(["ERROR: 1 unused baseline entries (--ortperf-strict):", "  test_ci.py::test_accuracy[[]cpu-all[]]"])


def test_unwritable_report_path_is_an_error_not_a_traceback(pytester: pytest.Pytester, suite: Path) -> None:
    (suite / "blocked").write_text("a file, not a directory")
    result = pytester.runpytest(*QUICK, "--ortperf-missing=pass", "--ortperf-report=blocked/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["ERROR: cannot write a report: *blocked*"])
    result.stdout.no_fnmatch_line("*Traceback*")
