"""Outputs that are not one tensor, end to end on real converters' models: a scikit-learn classifier
converted by skl2onnx with its default ZipMap output (a sequence of maps), a graph whose output is a
sequence (SequenceConstruct), and a near-zero heatmap whose cosine once failed it although every
element was within tolerance. Each is recorded, changed for real, and gated."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

TEST_FILE = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

def test_outputs(ort_perf):
    ort_perf.check_accuracy()
"""
LEVELS = "--ort-opt-levels=all"
IRIS_ROWS = [0, 1, 2, 50, 51, 52, 100, 101, 102]  # each species, where both models below agree


def iris_classifier(regularization: float) -> tuple[onnx.ModelProto, np.ndarray[Any, Any]]:
    """A LogisticRegression on iris, converted by skl2onnx with its default ZipMap output; and the
    rows it is fed. ``regularization`` is scikit-learn's ``C``: a smaller one flattens the
    probabilities while the winning class stays."""
    from skl2onnx import to_onnx
    from sklearn.datasets import load_iris
    from sklearn.linear_model import LogisticRegression

    features, species = load_iris(return_X_y=True)
    features = features.astype(np.float32)
    fitted = LogisticRegression(C=regularization, max_iter=1000).fit(features, species)
    model = to_onnx(fitted, features[:1], target_opset={"": 17, "ai.onnx.ml": 3})
    return model, features[IRIS_ROWS]


def run(model: onnx.ModelProto, rows: np.ndarray[Any, Any]) -> list[Any]:
    import onnxruntime as ort

    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"X": rows})


def report(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    records = json.loads((pytester.path / "report.json").read_text())["checks"]
    return [r for r in records if r["kind"] == "accuracy"]


def outputs_of(record: dict[str, Any], reference: str) -> dict[str, dict[str, Any]]:
    found = [r for r in record["references"] if r["reference"].startswith(reference)]
    return {o["name"]: o for o in found[0]["outputs"]}


@pytest.mark.slow
def test_a_zipmap_classifier_whose_probabilities_move_with_the_label_unchanged_fails(
    pytester: pytest.Pytester,
) -> None:
    recorded, rows = iris_classifier(1.0)
    onnx.save(recorded, pytester.path / "model.onnx")
    np.savez(pytester.path / "model.npz", X=rows)
    pytester.makepyfile(test_zipmap=TEST_FILE)
    first = run(recorded, rows)
    assert isinstance(first[1], list)
    assert isinstance(first[1][0], dict)  # what onnxruntime returns for ZipMap

    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=1)
    baselines = pytester.path / "baselines"
    entry = json.loads((baselines / "test_zipmap.py.json").read_text())["entries"]["test_outputs[cpu-all]"]
    stored = entry["accuracy"]
    assert stored["structure"] == {"output_probability": {"kind": "maps", "keys": [0, 1, 2]}}
    assert [o["name"] for o in stored["outputs"]] == ["output_label", "output_probability"]
    with np.load(baselines / stored["file"], allow_pickle=False) as archive:
        table = archive["output_probability"]
    assert table.dtype == np.float32
    assert table.shape == (len(IRIS_ROWS), 3)
    np.testing.assert_array_equal(table[0], np.float32([first[1][0][k] for k in (0, 1, 2)]))

    unchanged = pytester.runpytest(LEVELS, "--ortperf-report=report.json")
    unchanged.assert_outcomes(passed=1)
    compared = outputs_of(report(pytester)[0], "baseline")
    assert set(compared) == {"output_label", "output_probability"}
    assert compared["output_probability"]["compared"] is True
    assert compared["output_probability"]["count"] == len(IRIS_ROWS) * 3
    assert compared["output_probability"]["keys"] == [0, 1, 2]

    changed, _ = iris_classifier(0.2)
    now = run(changed, rows)
    np.testing.assert_array_equal(now[0], first[0])  # every label the same
    moved = max(abs(now[1][i][k] - first[1][i][k]) for i in range(len(IRIS_ROWS)) for k in (0, 1, 2))
    assert moved > 0.1  # the probabilities really moved (0.245 at most with scikit-learn 1.9)
    onnx.save(changed, pytester.path / "model.onnx")
    result = pytester.runpytest(LEVELS, "--ortperf-report=report.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "accuracy of test_outputs[[]cpu-all[]] on machine '*' FAILED",
            "  vs baseline (recorded *):",
            "    output 'output_probability': FAILED on isclose (max abs *, * of 27 elements outside "
            "tolerance *, top-1 agreement 100%, map keys 0, 1, 2; worst at [[]*, key *[]]: *",
            "  vs variant cpu-disabled: ok (output_label, output_probability)",
        ]
    )
    failed = outputs_of(report(pytester)[0], "baseline")
    assert failed["output_label"]["ok"] is True
    assert failed["output_probability"]["ok"] is False
    assert failed["output_probability"]["top1"] == 1.0


def sequence_model(scale: float) -> onnx.ModelProto:
    """``x -> SequenceConstruct(Relu(x), x * scale)``: an output of type seq(tensor(float))."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Mul", ["x", "s"], ["m"]),
        helper.make_node("SequenceConstruct", ["r", "m"], ["parts"]),
    ]
    graph = helper.make_graph(
        nodes,
        "sequence",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_sequence_value_info("parts", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.float32(scale), "s")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.slow
def test_a_sequence_output_is_compared_element_by_element(pytester: pytest.Pytester) -> None:
    onnx.save(sequence_model(2.0), pytester.path / "model.onnx")
    pytester.makepyfile(test_sequence=TEST_FILE)
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=1)
    baselines = pytester.path / "baselines"
    entry = json.loads((baselines / "test_sequence.py.json").read_text())["entries"]["test_outputs[cpu-all]"]
    assert entry["accuracy"]["structure"] == {
        "parts": {"kind": "sequence", "items": [{"kind": "tensor"}, {"kind": "tensor"}]}
    }
    pytester.runpytest(LEVELS).assert_outcomes(passed=1)

    onnx.save(sequence_model(2.02), pytester.path / "model.onnx")
    result = pytester.runpytest(LEVELS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  vs baseline (recorded *):",
            "    output 'parts[[]1[]]': FAILED on isclose (*",
            "  vs variant cpu-disabled: ok (parts[[]0[]], parts[[]1[]])",
        ]
    )
    result.stdout.no_fnmatch_line("*output 'parts[[]0[]]': FAILED*")


def heatmap_model(weights: np.ndarray[Any, Any]) -> onnx.ModelProto:
    """``x[1, 1, H, W] * weights``: a probability map that is almost all background (values around
    1e-6), as a detector's at 480x480 was."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["heatmap"])],
        "heatmap",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(weights.shape))],
        [helper.make_tensor_value_info("heatmap", TensorProto.FLOAT, list(weights.shape))],
        [numpy_helper.from_array(weights, "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.slow
def test_a_near_zero_heatmap_within_tolerance_passes_and_says_why_cosine_did_not_judge(
    pytester: pytest.Pytester,
) -> None:
    rng = np.random.default_rng(3)
    weights = (np.abs(rng.standard_normal((1, 1, 96, 96))) * 1e-6).astype(np.float32)
    onnx.save(heatmap_model(weights), pytester.path / "model.onnx")
    pytester.makepyfile(test_heatmap=TEST_FILE)
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=1)

    nudged = (weights * (1 + rng.standard_normal(weights.shape) * 0.1)).astype(np.float32)
    onnx.save(heatmap_model(nudged), pytester.path / "model.onnx")
    result = pytester.runpytest(LEVELS, "--ortperf-report=report.json")
    result.assert_outcomes(passed=1)
    heatmap = outputs_of(report(pytester)[0], "baseline")["heatmap"]
    assert heatmap["ok"] is True
    assert heatmap["mismatches"] == 0
    assert heatmap["max_abs"] > 0
    assert heatmap["cosine"] < heatmap["tolerance"]["cosine"]  # what failed it before
    assert heatmap["whole_output_not_judged"] == "every element within tolerance"
    assert heatmap["top1"] is None  # a 1x1xHxW map has no classes

    moved = weights.copy()
    moved[0, 0, :12, :] += 1e-3  # real detections where there were none: outside the tolerance
    onnx.save(heatmap_model(moved), pytester.path / "model.onnx")
    result = pytester.runpytest(LEVELS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["    output 'heatmap': FAILED on isclose (*"])


def optional_model(*, present: bool) -> onnx.ModelProto:
    """``x -> (opt, y)``: ``opt`` an optional output, absent (``Optional`` without input, which
    onnxruntime returns as None) or present (``Optional(x)``); ``y = x``."""
    tensor = helper.make_tensor_type_proto(TensorProto.FLOAT, [2])
    optional = (
        helper.make_node("Optional", ["x"], ["opt"])
        if present
        else helper.make_node("Optional", [], ["opt"], type=tensor)
    )
    graph = helper.make_graph(
        [optional, helper.make_node("Identity", ["x"], ["y"])],
        "optional",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [
            helper.make_value_info("opt", helper.make_optional_type_proto(tensor)),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


@pytest.mark.slow
def test_an_optional_output_absent_when_recorded_and_present_now_fails(pytester: pytest.Pytester) -> None:
    onnx.save(optional_model(present=False), pytester.path / "model.onnx")
    pytester.makepyfile(test_optional=TEST_FILE)
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=1)
    entry = json.loads((pytester.path / "baselines" / "test_optional.py.json").read_text())
    assert entry["entries"]["test_outputs[cpu-all]"]["accuracy"]["structure"] == {"opt": {"kind": "absent"}}
    same = pytester.runpytest(LEVELS, "--ortperf-report=report.json")
    same.assert_outcomes(passed=1)
    opt = outputs_of(report(pytester)[0], "baseline")["opt"]
    assert opt["ok"] is True
    assert opt["compared"] is True

    onnx.save(optional_model(present=True), pytester.path / "model.onnx")
    result = pytester.runpytest(LEVELS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "    output 'opt': present now, absent in the reference (an optional output): absent -> a float32 "
            "tensor [[]2[]]",
        ]
    )


def sparse_model() -> onnx.ModelProto:
    """``x -> (s, y)``: ``s`` a constant sparse tensor (onnxruntime returns a ``SparseTensor`` object,
    which this version does not compare), ``y = x``."""
    values = numpy_helper.from_array(np.float32([1.0, 2.0]), "values")
    indices = numpy_helper.from_array(np.int64([[0, 1], [1, 1]]), "indices")
    sparse = helper.make_sparse_tensor(values, indices, [2, 2])
    graph = helper.make_graph(
        [
            helper.make_node("Constant", [], ["s"], sparse_value=sparse),
            helper.make_node("Identity", ["x"], ["y"]),
        ],
        "sparse",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [
            helper.make_value_info("s", helper.make_sparse_tensor_type_proto(TensorProto.FLOAT, [2, 2])),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.slow
def test_an_output_that_cannot_be_compared_is_named_in_every_report(pytester: pytest.Pytester) -> None:
    onnx.save(sparse_model(), pytester.path / "model.onnx")
    pytester.makepyfile(test_sparse=TEST_FILE)
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=1)
    result = pytester.runpytest(
        LEVELS, "--ortperf-report=report.json", "--ortperf-markdown=summary.md", "--ortperf-html=page.html"
    )
    result.assert_outcomes(passed=1)
    reason = "onnxruntime returned a SparseTensor, which is not compared"
    result.stdout.fnmatch_lines(
        [
            "outputs not compared (2):",
            f"  test_sparse.py::test_outputs[[]cpu-all[]]: output 's' vs baseline (recorded *): {reason}",
            f"  test_sparse.py::test_outputs[[]cpu-all[]]: output 's' vs variant cpu-disabled: {reason}",
        ]
    )
    (record,) = report(pytester)
    assert record["verdict"] == "ok"
    assert [item["output"] for item in record["not_compared"]] == ["s", "s"]
    assert outputs_of(record, "baseline")["s"]["compared"] is False
    assert outputs_of(record, "baseline")["y"]["compared"] is True
    assert "output 's' vs baseline" in (pytester.path / "summary.md").read_text()
    page = (pytester.path / "page.html").read_text()
    assert f"not compared: {reason}" in page  # the output's row
    assert ">not compared: s<" in page  # the check's row of the summary table
