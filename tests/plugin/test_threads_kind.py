"""``ort_perf.check_threads()``: a built-in kind declared in one module (``kinds/threads.py``), with a
baseline part of its own. Real sessions at each thread count, side by side; a model made much slower
fails against the recorded curve; every report shows the kind through the registry alone."""

from __future__ import annotations

import json
from xml.etree import ElementTree

import onnx
import pytest

from pytest_ortperf.reports.show import show_baselines
from tests.models import mlp_model

TESTS = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 8})

def test_curve(ort_perf):
    ort_perf.check_threads(counts=[1, 2], threshold="50%", budget=0.3)
"""


@pytest.mark.slow
def test_the_thread_curve_is_recorded_and_a_slower_model_fails_against_it(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=2, width=64), pytester.path / "model.onnx")
    pytester.makepyfile(test_threads=TESTS)
    pytester.runpytest("--ortperf-update").assert_outcomes(passed=1)
    baseline = pytester.path / "baselines" / "test_threads.py.json"
    (figures,) = json.loads(baseline.read_text())["entries"]["test_curve[cpu-all]"]["figures"].values()
    part = figures["parts"]["threads"]
    assert part["configured"] == 1  # the plugin's default intra_op_threads
    assert set(part["median_ms"]) == {"1", "2"}
    assert part["best"] in (1, 2)
    assert len(part["best_round_medians_ms"]) == 21

    unchanged = pytester.runpytest("--ortperf-report=report.json", "--ortperf-markdown=summary.md", "--junitxml=junit.xml")
    unchanged.assert_outcomes(passed=1)
    (record,) = [r for r in json.loads((pytester.path / "report.json").read_text())["checks"] if r["kind"] == "threads"]
    assert record["verdict"] in ("ok", "inconclusive")
    assert set(record["figures"]["median_ms"]) == {"1", "2"}
    assert record["path"] == "side by side at each thread count; the best count against this hardware's recorded figures"
    assert "threads" in (pytester.path / "summary.md").read_text()
    unchanged.stdout.fnmatch_lines(["other checks (threads*", "*test_threads.py::test_curve*cpu-all*threads*best * thread(s)*"])
    properties = {
        prop.get("name"): prop.get("value")
        for case in ElementTree.parse(pytester.path / "junit.xml").iter("testcase")
        for prop in case.iter("property")
    }
    assert properties["ortperf_threads_verdict"] == record["verdict"]
    lines, _ = show_baselines(pytester.path / "baselines", as_json=False)
    assert any(f"threads best={part['best']}" in line and "configured=1" in line for line in lines), lines

    # Eight times the work: the best count's latency regressed against the recorded curve.
    onnx.save(mlp_model(layers=16, width=256), pytester.path / "model.onnx")
    slower = pytester.runpytest()
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(
        [
            "*threads of test_curve[[]cpu-all[]]: best * thread(s)*",
            "*the best setting's latency regressed: best count * against the recorded best * threshold +50%",
            "*curve: 1: * ms, 2: * ms",
        ]
    )


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ("counts=[0]", "check_threads(counts=[[]0[]]): counts are whole numbers, 1 or more."),
        ("threshold='fast'", "check_threads(threshold=...)*"),
        ("budget=0", "check_threads(budget=0): a budget is a number of seconds above 0."),
    ],
)
def test_bad_options_fail_the_test_naming_the_option(pytester: pytest.Pytester, options: str, said: str) -> None:
    onnx.save(mlp_model(layers=1, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_threads=f"""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

def test_curve(ort_perf):
    ort_perf.check_threads({options})
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{said}*"])
