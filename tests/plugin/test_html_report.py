"""--ortperf-html: the run's page, rendered from the same document as its JSON report, workers' checks
and profiles included."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from pytest_ortperf.kinds import builtin_kinds
from pytest_ortperf.reports.html import Job, render_page
from tests.models import mlp_model

TESTS = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

@pytest.mark.ort_profile
def test_latency(ort_perf, ort_session, ort_inputs):
    ort_session.run(None, ort_inputs)
    ort_perf.check_latency()

def test_accuracy(ort_perf):
    ort_perf.check_accuracy()
"""
QUICK = ("--ortperf-budget=0.05", "--ortperf-max-cv=1000%", "--ortperf-latency-threshold=500%")


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(test_page=TESTS)
    return pytester.path


def test_the_page_is_the_json_reports_rendering_with_the_profile_against_its_baseline(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=2)
    result = pytester.runpytest(*QUICK, "--ortperf-html=out/page.html", "--ortperf-report=out/report.json")
    result.assert_outcomes(passed=2)
    document = json.loads((suite / "out" / "report.json").read_text())
    page = (suite / "out" / "page.html").read_text()
    assert page == render_page(
        [Job("", document)], drawings=builtin_kinds().drawings()
    )  # as `ortperf report` draws
    (profile,) = document["profiles"]
    assert profile["test"] == "test_page.py::test_latency[cpu-all]"
    assert profile["profile"]["ops"]
    latency = next(c for c in document["checks"] if c["kind"] == "latency")
    assert set(latency["baseline"]["profile"]["ops"]) == set(profile["profile"]["ops"])
    assert "Time per run by op type." in page
    assert "no baseline profile" not in page
    assert '<span class="pill ok">all passed</span>' in page


def test_an_unwritable_page_is_an_error_line_and_the_json_report_is_still_written(
    pytester: pytest.Pytester, suite: Path
) -> None:
    (suite / "blocked").write_text("a file, not a directory")
    result = pytester.runpytest(*QUICK, "--ortperf-missing=pass", "--ortperf-report=report.json",
                                "--ortperf-html=blocked/page.html")  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["ERROR: cannot write a report: *blocked*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    assert json.loads((suite / "report.json").read_text())["checks"]


@pytest.mark.slow
def test_under_xdist_the_ini_page_holds_every_workers_checks_and_profiles(
    pytester: pytest.Pytester, suite: Path
) -> None:
    (suite / "reports").mkdir()
    pytester.makeini("[pytest]\nortperf_html = reports/page.html\nortperf_missing = pass\n")
    result = pytester.runpytest(*QUICK, "-n", "2", "-p", "xdist", "--ort-opt-levels=disabled,all")
    result.assert_outcomes(passed=4)
    page = (suite / "reports" / "page.html").read_text()
    assert page.count('<tr class="') == 4  # two latency, two accuracy checks, from two workers
    assert page.count("profiled runs") == 2  # each variant's profile came back from its worker
    assert "model.onnx on cpu, speedups against cpu-disabled" in page
