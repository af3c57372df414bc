"""``ort_perf.check_throughput()``: a built-in kind declared whole in ``kinds/throughput.py`` (its option,
threshold keyword, baseline part, terminal table and HTML curve). Real sessions at each batch size; the
same model with 50% more work fails side by side with the recorded one, rebuilt from git; a model
whose batch dim is fixed says so."""

from __future__ import annotations

import json

import onnx
import pytest

from tests.models import conv_stack_model, mlp_model
from tests.plugin.conftest import commit_model

TESTS = """
import pytest
pytestmark = [pytest.mark.ort_model("model.onnx", dims={"batch": 1}), pytest.mark.ort_thresholds(throughput="20%")]

def test_serving(ort_perf):
    ort_perf.check_throughput(batch_sizes=[1, 8], concurrency=2)
"""


def _record(pytester: pytest.Pytester) -> dict:
    (record,) = [
        r
        for r in json.loads((pytester.path / "report.json").read_text())["checks"]
        if r["kind"] == "throughput"
    ]
    return record


@pytest.mark.slow
def test_throughput_is_recorded_passes_unchanged_and_fails_the_model_with_half_again_the_work(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    commit_model(pytester, layers=4, width=512)
    pytester.makepyfile(test_serving=TESTS)
    pytester.runpytest("--ortperf-update").assert_outcomes(passed=1)
    baseline = pytester.path / "baselines" / "test_serving.py.json"
    (figures,) = json.loads(baseline.read_text())["entries"]["test_serving[cpu-all]"]["figures"].values()
    part = figures["parts"]["throughput"]
    assert part["batch_sizes"] == [1, 8]
    assert set(part["per_second"]) == {"1", "8"}
    assert part["per_second"]["8"] > part["per_second"]["1"] > 0  # batching pays on a 512-wide MatMul
    assert part["concurrency"] == 2
    assert part["p50_ms"] <= part["p95_ms"] <= part["p99_ms"]
    assert part["calls"] >= 100
    assert part["free_batch"] is True

    unchanged = pytester.runpytest("--ortperf-report=report.json", "--ortperf-html=report.html")
    unchanged.assert_outcomes(passed=1)
    record = _record(pytester)
    assert record["verdict"] == "ok"
    assert record["path"] == "measured, not compared"
    assert (
        "not compared with a recorded reference: nothing the repository controls changed since it was recorded"
        in record["notes"]
    )
    assert any(
        note.startswith("recorded on this hardware (shown, not judged): batch 1: ")
        for note in record["notes"]
    )
    unchanged.stdout.fnmatch_lines(
        ["throughput on machine *", "*test_serving.py::test_serving*cpu-all*1: *8: *ms (2)*ok*"]
    )
    html = (pytester.path / "report.html").read_text()
    assert 'class="throughput-curve"' in html
    assert "today (line), recorded (dashed)" in html

    # Half again the work (6 layers where 4 were): side by side with the recorded model, rebuilt from git.
    onnx.save(mlp_model(layers=6, width=512), pytester.path / "model.onnx")
    slower = pytester.runpytest("--ortperf-report=report.json")
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(
        [
            "*throughput of test_serving[[]cpu-all[]]: batch 1: */s, batch 8: */s",
            "*inferences per second fell side by side with the recorded reference at batch size(s) *: batch *"
            "inferences/s (time per inference +*threshold +20% time per inference",
        ]
    )
    record = _record(pytester)
    assert record["verdict"] == "regression"
    assert record["path"] == "side by side with the recorded reference at each batch size"
    against = record["figures"]["against"]
    assert set(against) == {"1", "8"}
    assert any(value["verdict"] == "regression" for value in against.values())
    assert all(value["ratio"] > 1.2 for value in against.values()), against


def test_a_model_with_a_fixed_batch_dim_is_measured_at_its_own_size_and_says_so(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(conv_stack_model(layers=2, channels=4, size=8), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_serving="""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

def test_default(ort_perf):
    ort_perf.check_throughput(concurrency=1)

def test_asked(ort_perf):
    ort_perf.check_throughput(batch_sizes=[1, 8])
"""
    )
    result = pytester.runpytest("--ortperf-report=report.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*throughput of test_asked[[]cpu-all[]]: check_throughput(batch_sizes=...) asks for batch sizes 1, 8, "
            "but the model has no free batch dim: input 'x' has the shape [[]1, 4, 8, 8[]]; measured nothing"
        ]
    )
    records = {
        r["test"].split("::")[-1]: r
        for r in json.loads((pytester.path / "report.json").read_text())["checks"]
        if r["kind"] == "throughput"
    }
    passed = records["test_default[cpu-all]"]
    assert passed["figures"]["batch_sizes"] == [1]
    assert passed["figures"]["free_batch"] is False
    assert (
        "the model has no free batch dim (input 'x' has the shape [1, 4, 8, 8]): measured at its own batch of 1 only"
        in passed["notes"]
    )
    assert "not compared with a recorded reference: never recorded" in passed["notes"]


@pytest.mark.parametrize(
    ("call", "marker", "said"),
    [
        ("batch_sizes=[0]", "", "check_throughput(batch_sizes=[[]0[]]): a list of whole numbers, 1 or more."),
        ("concurrency=0", "", "check_throughput(concurrency=0): a whole number, 1 or more."),
    ],
)
def test_bad_arguments_fail_the_test_naming_the_argument(
    pytester: pytest.Pytester, call: str, marker: str, said: str
) -> None:
    onnx.save(mlp_model(layers=1, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_serving=f"""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

{marker}
def test_serving(ort_perf):
    ort_perf.check_throughput({call})
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{said}*"])


def test_a_bad_threshold_keyword_is_an_error_of_the_test_naming_the_marker(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=1, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_serving="""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

@pytest.mark.ort_thresholds(throughput="fast")
def test_serving(ort_perf):
    ort_perf.check_throughput()
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ort_thresholds marker of *test_serving*: throughput: *fast*"])


def test_a_bad_batch_sizes_option_stops_the_run_naming_the_flag(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=1, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(test_serving=TESTS)
    result = pytester.runpytest("--ortperf-throughput-batch-sizes=8,x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--ortperf-throughput-batch-sizes: batch sizes are whole numbers of 1 or more, comma separated (got '8,x')."
        ]
    )


def test_a_model_with_a_scalar_input_is_measured_as_its_feeds_are(pytester: pytest.Pytester) -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "scale"], ["y"])],
        "scaled",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 16]),
            helper.make_tensor_value_info("scale", TensorProto.FLOAT, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 16])],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
        pytester.path / "model.onnx",
    )
    pytester.makepyfile(
        test_serving="""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"n": 2})

def test_serving(ort_perf):
    ort_perf.check_throughput(concurrency=1)
"""
    )
    result = pytester.runpytest("--ortperf-report=report.json")
    result.assert_outcomes(passed=1)
    record = _record(pytester)
    assert record["figures"]["batch_sizes"] == [2]
    assert (
        "the model has no free batch dim (input 'scale' has the shape []): measured at its own batch of 2 only"
        in record["notes"]
    )
