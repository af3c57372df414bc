"""What CI reads: the JSON report, the markdown summary, GitHub's step summary, JUnit, strictness."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def test_json_report_markdown_and_step_summary(
    pytester: pytest.Pytester, suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step_summary = suite / "step-summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    result = pytester.runpytest(
        *QUICK,
        "--ortperf-report=out/report.json",
        "--ortperf-markdown=out/summary.md",
        "--junitxml=junit.xml",
    )
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
    # Nothing changed since the update: latency unchanged (no verdict to get wrong), outputs as recorded.
    assert sorted((c["kind"], c["verdict"]) for c in report["checks"]) == [
        ("accuracy", "ok"),
        ("latency", "unchanged"),
    ]


def _floats(value: Any, *, seconds: bool = False) -> Iterator[tuple[float, bool]]:
    """Every float of a JSON document, with whether it is a time in seconds."""
    if isinstance(value, float):
        yield value, seconds
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _floats(item, seconds=seconds or key == "seconds")
    elif isinstance(value, list):
        for item in value:
            yield from _floats(item, seconds=seconds)


def _significant_digits(value: float) -> int:
    mantissa = repr(abs(value)).split("e")[0].replace(".", "")
    return len(mantissa.strip("0")) or 1


def test_reports_round_their_figures_and_show_the_drift_of_unchanged_checks(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=3)
    same = pytester.runpytest(*QUICK, "--ortperf-report=same.json", "--ortperf-markdown=same.md")
    same.assert_outcomes(passed=3)
    (row,) = [
        line for line in (suite / "same.md").read_text().splitlines() if "test_latency[cpu-all]" in line
    ]
    assert re.search(
        r" \| \d+\.\d\dx (slower|faster) than at recording"
        r"( \(machine \d+\.\d\dx (slower|faster) than at recording, by the canary\))?; nothing changed \| unchanged \| ",
        row,
    ), row
    # Other weights, the same work: the stored figures decide (a change with its interval), outputs differ.
    onnx.save(mlp_model(layers=2, width=8, seed=7), suite / "model.onnx")
    changed = pytester.runpytest(*QUICK, "--ortperf-latency-threshold=500%", "--ortperf-report=changed.json")
    changed.assert_outcomes(passed=2, failed=1)
    documents = [json.loads((suite / name).read_text()) for name in ("same.json", "changed.json")]
    latency = next(c for c in documents[1]["checks"] if c["kind"] == "latency")
    assert isinstance(latency["change"]["ratio"], float)
    assert latency["current"]["median_ms"] > 0
    floats = [pair for document in documents for pair in _floats(document)]
    assert len(floats) > 40
    for value, in_seconds in floats:
        if in_seconds:
            assert round(value, 3) == value, value  # milliseconds
        elif abs(value - 1) < 0.5:
            assert _significant_digits(value) <= 15, value  # 6 digits of the distance from 1
        else:
            assert _significant_digits(value) <= 6, value


def test_strict_fails_the_run_on_unused_baselines(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=3)
    pytester.makepyfile(test_ci=TESTS.replace("def test_accuracy", "def test_outputs"))
    relaxed = pytester.runpytest(*QUICK, "--ortperf-latency-threshold=500%", "-k", "latency")
    assert relaxed.ret == pytest.ExitCode.OK
    strict = pytester.runpytest(
        *QUICK, "--ortperf-latency-threshold=500%", "-k", "latency", "--ortperf-strict"
    )
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(
        ["ERROR: 1 unused baseline entries (--ortperf-strict):", "  test_ci.py::test_accuracy[[]cpu-all[]]"]
    )


def test_unwritable_report_path_is_an_error_not_a_traceback(pytester: pytest.Pytester, suite: Path) -> None:
    (suite / "blocked").write_text("a file, not a directory")
    result = pytester.runpytest(*QUICK, "--ortperf-missing=pass", "--ortperf-report=blocked/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["ERROR: cannot write a report: *blocked*"])
    result.stdout.no_fnmatch_line("*Traceback*")


ERRORING = """
import numpy as np
import pytest

@pytest.mark.ort_model("slow.onnx", dims={"batch": 1024})
def test_timed_out(ort_perf):
    ort_perf.check_accuracy()

@pytest.mark.ort_model("model.onnx")
def test_wrong_feeds(ort_perf):
    ort_perf.check_accuracy({"x": np.ones((2, 8), dtype=np.float64)})

@pytest.mark.ort_model("model.onnx")
def test_fine(ort_perf):
    ort_perf.check_latency()
"""
DAMAGED = """
import pytest

@pytest.mark.ort_model("model.onnx")
def test_damaged(ort_perf):
    ort_perf.check_latency()
"""


def test_checks_that_end_in_an_error_are_failed_checks_in_every_report(pytester: pytest.Pytester) -> None:
    # ~100+ ms per run of the slow model against a 20 ms run limit; a float64 feed for a float32
    # input fails at run time; a truncated baseline file cannot be read.
    onnx.save(mlp_model(layers=48, width=512), pytester.path / "slow.onnx")
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(test_errors=ERRORING, test_damage=DAMAGED)
    (pytester.path / "baselines").mkdir()
    (pytester.path / "baselines" / "test_damage.py.json").write_text('{"schema": 1, "entries": {')
    result = pytester.runpytest(
        *QUICK, "--ortperf-run-timeout=0.02", "--ortperf-missing=pass", "--ortperf-reference-variant=none",
        "--ortperf-report=report.json", "--ortperf-markdown=summary.md", "--junitxml=junit.xml",
    )  # fmt: skip
    result.assert_outcomes(failed=3, passed=1)
    report = json.loads((pytester.path / "report.json").read_text())
    failed_tests = {
        "test_errors.py::test_timed_out[cpu-all]",
        "test_errors.py::test_wrong_feeds[cpu-all]",
        "test_damage.py::test_damaged[cpu-all]",
    }
    assert report["failed"] == len(failed_tests)
    assert report["errors"] == len(failed_tests)
    errors = {c["test"]: c for c in report["checks"] if c["failed"]}
    assert set(errors) == failed_tests
    timed_out = errors["test_errors.py::test_timed_out[cpu-all]"]
    assert {k: timed_out[k] for k in ("kind", "variant", "machine", "verdict")} == {
        "kind": "accuracy",
        "variant": "cpu-all",
        "machine": report["machine"],
        "verdict": "error",
    }
    assert "--ortperf-run-timeout" in timed_out["message"]
    assert "session.run failed" in errors["test_errors.py::test_wrong_feeds[cpu-all]"]["message"]
    damaged = errors["test_damage.py::test_damaged[cpu-all]"]
    assert (damaged["kind"], damaged["verdict"]) == ("latency", "error")
    assert "test_damage.py.json" in damaged["message"]
    markdown = (pytester.path / "summary.md").read_text()
    assert "**3 failed** (3 with an error)" in markdown
    for test in failed_tests:
        assert f"| ❌ | `{test}` |" in markdown
    assert "| ✅ | `test_errors.py::test_fine[cpu-all]` |" in markdown
    junit = (pytester.path / "junit.xml").read_text()
    assert junit.count('name="ortperf_error"') == 3
    assert 'name="ortperf_latency_verdict" value="error"' in junit


def test_reports_are_written_when_every_check_errors_and_when_there_is_none(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(test_damage=DAMAGED)
    (pytester.path / "baselines").mkdir()
    (pytester.path / "baselines" / "test_damage.py.json").write_text("[]")
    reports = ("--ortperf-report=out/report.json", "--ortperf-markdown=out/summary.md")
    result = pytester.runpytest(*QUICK, *reports)
    result.assert_outcomes(failed=1)
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    assert (report["failed"], [c["verdict"] for c in report["checks"]]) == (1, ["error"])
    assert (
        "| ❌ | `test_damage.py::test_damaged[cpu-all]` |"
        in (pytester.path / "out" / "summary.md").read_text()
    )

    pytester.makepyfile(test_damage="def test_plain():\n    pass\n")
    pytester.runpytest(*QUICK, *reports).assert_outcomes(passed=1)
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    assert (report["checks"], report["failed"]) == ([], 0)
    assert "0 checks, **0 failed**." in (pytester.path / "out" / "summary.md").read_text()


@pytest.mark.slow
def test_a_report_that_cannot_be_built_is_an_error_line_not_a_traceback(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORTPERF_MACHINE", "bad name/x")
    pytester.makepyfile("def test_plain(): pass")
    result = pytester.runpytest_subprocess("--ortperf-report=report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*ERROR: cannot write a report: *ORTPERF_MACHINE*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
