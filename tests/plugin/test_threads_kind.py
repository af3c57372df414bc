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
from tests.plugin.conftest import commit_model

TESTS = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 8})

def test_curve(ort_perf):
    ort_perf.check_threads(counts=[1, 2], threshold="50%", budget=0.3)
"""


@pytest.mark.slow
def test_the_thread_curve_is_recorded_and_a_slower_model_fails_side_by_side_with_the_recorded_one(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    commit_model(pytester, layers=2, width=64)
    pytester.makepyfile(test_threads=TESTS)
    pytester.runpytest("--ortperf-update").assert_outcomes(passed=1)
    baseline = pytester.path / "baselines" / "test_threads.py.json"
    (figures,) = json.loads(baseline.read_text())["entries"]["test_curve[cpu-all]"]["figures"].values()
    part = figures["parts"]["threads"]
    assert part["configured"] == 1  # the plugin's default intra_op_threads
    assert set(part["median_ms"]) == {"1", "2"}
    assert part["best"] in (1, 2)
    assert len(part["best_round_medians_ms"]) == 21

    unchanged = pytester.runpytest(
        "--ortperf-report=report.json", "--ortperf-markdown=summary.md", "--junitxml=junit.xml"
    )
    unchanged.assert_outcomes(passed=1)
    (record,) = [
        r for r in json.loads((pytester.path / "report.json").read_text())["checks"] if r["kind"] == "threads"
    ]
    assert record["verdict"] in ("ok", "inconclusive")
    assert set(record["figures"]["median_ms"]) == {"1", "2"}
    assert record["path"] == "side by side at each thread count"
    assert (
        "the best count is not compared with a recorded reference: nothing the repository controls changed since "
        "the curve was recorded"
    ) in record["notes"]
    assert any(
        note.startswith("recorded curve on this hardware (shown, not judged): 1: ")
        for note in record["notes"]
    )
    assert "threads" in (pytester.path / "summary.md").read_text()
    unchanged.stdout.fnmatch_lines(
        ["other checks (threads*", "*test_threads.py::test_curve*cpu-all*threads*best * thread(s)*"]
    )
    properties = {
        prop.get("name"): prop.get("value")
        for case in ElementTree.parse(pytester.path / "junit.xml").iter("testcase")
        for prop in case.iter("property")
    }
    assert properties["ortperf_threads_verdict"] == record["verdict"]
    lines, _ = show_baselines(pytester.path / "baselines", as_json=False)
    assert any(f"threads best={part['best']}" in line and "configured=1" in line for line in lines), lines

    # Eight times the work: side by side with the recorded model (rebuilt from git) at the best count.
    onnx.save(mlp_model(layers=16, width=64), pytester.path / "model.onnx")
    slower = pytester.runpytest("--ortperf-report=report.json")
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(
        [
            "*threads of test_curve[[]cpu-all[]]: best * thread(s)*",
            "*the best setting's latency regressed: best count * against the recorded model (git *): +*, threshold +50%",
            "*curve: 1: * ms, 2: * ms",
        ]
    )
    (record,) = [
        r for r in json.loads((pytester.path / "report.json").read_text())["checks"] if r["kind"] == "threads"
    ]
    assert record["path"].startswith(
        "side by side at each thread count; the best count side by side with the recorded model (git "
    )


@pytest.mark.slow
def test_an_unchanged_model_passes_whether_or_not_its_configured_count_is_beaten(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """At intra_op_threads=1 on a machine with more cores, a heavier model is often faster at 2: that
    is a setting to report, never a failure of an unchanged model (recorded, then judged twice)."""
    commit_model(pytester, layers=3, width=256)
    pytester.makepyfile(
        test_threads="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 64})

        def test_curve(ort_perf):
            ort_perf.check_threads(budget=0.5)
        """
    )
    pytester.runpytest("--ortperf-update").assert_outcomes(passed=1)
    for _ in range(2):
        again = pytester.runpytest("--ortperf-report=report.json")
        again.assert_outcomes(passed=1)
        (record,) = [
            r
            for r in json.loads((pytester.path / "report.json").read_text())["checks"]
            if r["kind"] == "threads"
        ]
        assert record["verdict"] in ("ok", "improved", "inconclusive")
        beaten = [note for note in record["notes"] if "is beaten by" in note]
        assert bool(beaten) == (record["verdict"] == "improved"), record["notes"]
        assert all(
            note.endswith("reported, not failed (check_threads(fail_if_beaten=True) fails it)")
            for note in beaten
        )


@pytest.mark.slow
def test_a_recorded_model_that_cannot_be_rebuilt_is_not_compared_and_says_why(
    pytester: pytest.Pytester,
) -> None:
    """No git and no model cache: the slower model's best count is not judged against the curve this
    hardware recorded for the old model; the check says so."""
    onnx.save(mlp_model(layers=2, width=64), pytester.path / "model.onnx")
    pytester.makepyfile(test_threads=TESTS)
    pytester.runpytest("--ortperf-update").assert_outcomes(passed=1)
    onnx.save(mlp_model(layers=16, width=64), pytester.path / "model.onnx")
    result = pytester.runpytest("--ortperf-report=report.json")
    assert result.ret in (
        0,
        1,
    )  # the configured count may really be beaten here; the old curve decides nothing
    (record,) = [
        r for r in json.loads((pytester.path / "report.json").read_text())["checks"] if r["kind"] == "threads"
    ]
    assert record["path"] == "side by side at each thread count"
    assert any(
        note.startswith(
            "the best count is not compared with a recorded reference: the recorded reference cannot be rebuilt"
        )
        for note in record["notes"]
    ), record["notes"]
    assert "the best setting's latency regressed" not in result.stdout.str()


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ("counts=[0]", "check_threads(counts=[[]0[]]): counts are whole numbers, 1 or more."),
        ("threshold='fast'", "check_threads(threshold=...)*"),
        ("budget=0", "check_threads(budget=0): a budget is a number of seconds above 0."),
        ("fail_if_beaten='yes'", "check_threads(fail_if_beaten='yes'): True or False."),
    ],
)
def test_bad_options_fail_the_test_naming_the_option(
    pytester: pytest.Pytester, options: str, said: str
) -> None:
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
