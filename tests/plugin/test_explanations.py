"""Every failure names its cause (issue 38), without ``ort_profile``: a latency failure says where
the time went at operator level, beside the graph diff when the graph changed too."""

from __future__ import annotations

import json

import onnx
import pytest

from tests.models import layer_norm_model, mlp_model, scaled_weight
from tests.plugin.conftest import LATENCY_TEST_FILE, commit_model

QUICK = ("--ortperf-budget=0.2", "--ortperf-latency-threshold=20%", "--ortperf-max-cv=1000%")


@pytest.mark.slow
def test_a_grown_mlp_fails_latency_with_the_operators_that_grew_without_ort_profile(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    # Wide enough that MatMul, not the profiler's per-node cost, is where the time goes (~1 ms a run).
    pytester.makepyfile(test_gate=LATENCY_TEST_FILE.replace('{"batch": 16}', '{"batch": 32}'))
    commit_model(pytester, layers=8, width=256)  # the recorded model rebuilt from git
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    onnx.save(mlp_model(layers=12, width=256), pytester.path / "model.onnx")
    result = pytester.runpytest(
        "--ortperf-report=report.json", "--ortperf-markdown=summary.md", "--ortperf-html=report.html", *QUICK
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "latency regression in test_latency[[]cpu-all[]] against the recorded model (git *",
            "  at operator level (untimed profiled runs of both sides, after measuring):",
            "    op types whose time grew most: *MatMul * -> * ms/run (+*%, *% of the change)*",
            "    nodes whose time grew most: *(new, *",
            "    node count per op type changed after optimization: MatMul 8 -> 12, Relu 8 -> 12",
            "  graph at cpu-all:",
            "    change:    MatMul +4, Relu +4",
        ]
    )
    (record,) = [
        r for r in json.loads((pytester.path / "report.json").read_text())["checks"] if r["kind"] == "latency"
    ]
    titles = [section["title"] for section in record["explanations"]]
    assert titles == [
        "at operator level (untimed profiled runs of both sides, after measuring)",
        "graph at cpu-all",
    ]
    assert record["operators"]["after"]["ops"]["MatMul"]["nodes"] == 12
    assert record["seconds"]["explaining"] > 0  # what the explanation cost, on its own
    page = (pytester.path / "report.html").read_text()
    assert '<div class="why"><h4>Why</h4>' in page
    assert "op types whose time grew most: MatMul" in page
    summary = (pytester.path / "summary.md").read_text()
    assert "Why they failed:" in summary
    assert (
        "  - at operator level (untimed profiled runs of both sides, after measuring): op types whose time grew most: MatMul"
        in summary
    )


@pytest.mark.slow
def test_a_lost_layer_norm_fusion_names_the_graph_change_and_where_the_time_went(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """An exporter that writes LayerNorm's square as ``Mul(d, d)`` instead of ``Pow(d, 2)``: ONNX
    Runtime's LayerNormFusion no longer matches, and the model runs about twice as slow."""
    pytester.makepyfile(
        test_gate="""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 16, "seq": 128})

def test_latency(ort_perf):
    ort_perf.check_latency()
"""
    )
    commit_model(pytester, layer_norm_model(square="pow"))
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    onnx.save(layer_norm_model(square="mul"), pytester.path / "model.onnx")
    result = pytester.runpytest(*QUICK)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "latency regression in test_latency[[]cpu-all[]] against the recorded model (git *",
            "  at operator level (untimed profiled runs of both sides, after measuring):",
            "    time moved from LayerNormalization (6 -> 0 nodes, -* ms/run) to * (0 -> * nodes, +* ms/run)*: net +* ms/run",
            "  graph at cpu-all:",
            "    change:    LayerNormalization 6 -> 0*",
        ]
    )


ACCURACY_TESTS = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

def test_outputs(ort_perf):
    ort_perf.check_accuracy()
"""


def test_a_changed_middle_layer_fails_accuracy_naming_the_first_diverging_tensor(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """An 8-layer MLP whose layer 3 weights were scaled: the output fails, and the failure says the
    divergence starts at layer 3's MatMul (``mm3``), found by running the recorded model, rebuilt from
    git, beside the changed one with every intermediate tensor kept."""
    pytester.makepyfile(test_outputs=ACCURACY_TESTS)
    commit_model(pytester, layers=8, width=16)
    pytester.runpytest("--ortperf-update").assert_outcomes(passed=1)
    onnx.save(scaled_weight(mlp_model(layers=8, width=16), "w3", 1.5), pytester.path / "model.onnx")
    result = pytester.runpytest("--ortperf-report=report.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "accuracy of test_outputs[[]cpu-all[]]*FAILED*",
            "  where the two sides start to diverge:",
            "    first diverging tensor 'mm3' (MatMul node 'matmul3'): isclose: max |diff| *; 6 tensors before it agree*",
        ]
    )
    (record,) = [
        r
        for r in json.loads((pytester.path / "report.json").read_text())["checks"]
        if r["kind"] == "accuracy"
    ]
    assert record["explanations"][0]["title"] == "where the two sides start to diverge"


def test_against_stored_outputs_alone_the_failure_says_why_the_cause_cannot_be_located(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_outputs=ACCURACY_TESTS)
    onnx.save(mlp_model(layers=8, width=16), pytester.path / "model.onnx")  # no git: nothing to rebuild
    pytester.runpytest("--ortperf-update").assert_outcomes(passed=1)
    onnx.save(scaled_weight(mlp_model(layers=8, width=16), "w3", 1.5), pytester.path / "model.onnx")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  where the two sides start to diverge:",
            "    not located: the recorded model cannot be rebuilt (*",
        ]
    )
