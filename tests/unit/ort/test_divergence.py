"""first_divergence: the first tensor in graph order where two real models part, on real sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_ortperf.errors import ModelError, SessionBuildError
from pytest_ortperf.ort.divergence import Localisation, first_divergence
from pytest_ortperf.ort.models import ModelResolver, ModelSource
from tests.models import mlp_model, renamed_tensors, scaled_weight, structured_outputs_model

LAYERS, WIDTH, BATCH = 8, 16, 4
# mlp_model names layer i's tensors mm<i> (MatMul) and h<i> (Relu); layers count from 0, so the
# tensors before layer 3's MatMul are mm0, h0, mm1, h1, mm2, h2.
BEFORE_LAYER_3 = ["mm0", "h0", "mm1", "h1", "mm2", "h2"]
PAIR_BYTES = 2 * BATCH * WIDTH * 4  # one float32 [batch, width] tensor on each side


class AllClose:
    """The tolerance a caller passes: np.allclose, remembering which tensors it judged, in order."""

    def __init__(self, atol: float = 1e-5, rtol: float = 1e-4) -> None:
        self.atol, self.rtol = atol, rtol
        self.judged: list[str] = []

    def __call__(self, name: str, actual: np.ndarray[Any, Any], expected: np.ndarray[Any, Any]) -> str:
        self.judged.append(name)
        if np.allclose(actual, expected, atol=self.atol, rtol=self.rtol):
            return ""
        worst = float(np.max(np.abs(actual.astype(np.float64) - expected)))
        return f"max |diff| {worst:.3g} (tolerance atol {self.atol:g}, rtol {self.rtol:g})"


@pytest.fixture
def source(tmp_path: Path) -> Any:
    resolver = ModelResolver(tmp_path)

    def resolve(model: onnx.ModelProto | Path) -> ModelSource:
        return resolver.resolve(model, test_dir=tmp_path, origin="test_divergence")

    return resolve


@pytest.fixture
def feeds() -> dict[str, np.ndarray[Any, Any]]:
    return {"x": np.random.default_rng(0).standard_normal((BATCH, WIDTH)).astype(np.float32)}


def _located(result: Localisation) -> Any:
    assert result.divergence is not None, result.reason
    return result.divergence


def test_a_scaled_middle_layer_diverges_first_at_its_matmul(source: Any, feeds: Any) -> None:
    reference = mlp_model(LAYERS, WIDTH)
    current = scaled_weight(reference, "w3", 1.5)
    judge = AllClose()
    result = first_divergence(source(current), source(reference), feeds, diverges=judge)
    found = _located(result)
    assert (found.tensor, found.reference_tensor, found.node, found.op_type) == (
        "mm3",
        "mm3",
        "matmul3",
        "MatMul",
    )
    assert found.matched_by == "name"
    assert found.error.startswith("max |diff| ")
    assert "atol 1e-05" in found.error
    assert found.compared == 6
    # Judged in graph order, and no further than the first divergence.
    assert judge.judged == [*BEFORE_LAYER_3, "mm3"]
    assert (result.runs, result.chunked, result.compared) == (1, False, 7)
    assert result.marked_bytes == (2 * LAYERS + 1) * PAIR_BYTES  # every node output, both sides
    text = result.describe()
    assert "first diverging tensor 'mm3' (MatMul node 'matmul3')" in text
    assert "6 tensors before it agree" in text
    assert "1 run of each model" in text


def test_identical_models_have_no_divergence_and_say_why(source: Any, feeds: Any) -> None:
    model = mlp_model(LAYERS, WIDTH)
    judge = AllClose()
    result = first_divergence(source(model), source(mlp_model(LAYERS, WIDTH)), feeds, diverges=judge)
    assert result.divergence is None
    assert result.reason == "no tensor diverges beyond the tolerance (17 compared in graph order)"
    assert result.compared == 17
    assert len(judge.judged) == 17
    assert judge.judged[-1] == "y"
    assert result.describe().startswith("the first diverging tensor cannot be located: no tensor diverges")


def test_renamed_tensors_are_paired_by_position(source: Any, feeds: Any) -> None:
    reference = renamed_tensors(mlp_model(LAYERS, WIDTH), prefix="t")
    assert "mm3" not in {name for node in reference.graph.node for name in node.output}
    current = scaled_weight(mlp_model(LAYERS, WIDTH), "w3", 1.5)
    result = first_divergence(source(current), source(reference), feeds, diverges=AllClose())
    found = _located(result)
    # mm3 is the output of the 4th MatMul; the reference's 4th MatMul writes t6 (its 7th node output).
    assert (found.tensor, found.reference_tensor, found.op_type) == ("mm3", "t6", "MatMul")
    assert found.matched_by == "position"
    assert found.compared == 6
    assert "paired by position with 't6'" in result.describe()


def test_renamed_and_identical_compare_every_tensor_by_position(source: Any, feeds: Any) -> None:
    model = mlp_model(LAYERS, WIDTH)
    judge = AllClose()
    result = first_divergence(source(model), source(renamed_tensors(model)), feeds, diverges=judge)
    assert result.divergence is None
    assert result.compared == 17
    assert result.unpaired == 0


def test_one_renamed_tensor_is_paired_by_position_and_the_rest_by_name(source: Any, feeds: Any) -> None:
    reference = mlp_model(2, WIDTH)
    reference.graph.node[2].output[0] = "z"  # the second MatMul's output, read by the second Relu
    reference.graph.node[3].input[0] = "z"
    judge = AllClose()
    current = scaled_weight(mlp_model(2, WIDTH), "w1", 1.5)
    found = _located(first_divergence(source(current), source(reference), feeds, diverges=judge))
    assert (found.tensor, found.reference_tensor, found.matched_by) == ("mm1", "z", "position")
    assert judge.judged == ["mm0", "h0", "mm1"]


@pytest.mark.parametrize(
    ("max_bytes", "runs"),
    [
        (1, 7),  # one pair a run: mm0 ... mm3, stopping at the first divergence
        (3 * PAIR_BYTES, 3),  # three pairs a run: [mm0 h0 mm1] [h1 mm2 h2] [mm3 ...]
    ],
)
def test_bounded_memory_finds_the_same_tensor_a_chunk_at_a_time(
    source: Any, feeds: Any, max_bytes: int, runs: int
) -> None:
    reference = mlp_model(LAYERS, WIDTH)
    current, base = source(scaled_weight(reference, "w3", 1.5)), source(reference)
    unbounded = first_divergence(current, base, feeds, diverges=AllClose())
    judge = AllClose()
    bounded = first_divergence(current, base, feeds, diverges=judge, max_bytes=max_bytes)
    assert bounded.divergence == unbounded.divergence
    assert (bounded.runs, bounded.chunked) == (runs, True)
    assert bounded.marked_bytes == max(PAIR_BYTES, min(max_bytes, 3 * PAIR_BYTES))
    assert judge.judged == [*BEFORE_LAYER_3, "mm3"]
    assert "a chunk at a time" in bounded.describe()


def test_bounded_memory_without_a_divergence_runs_every_chunk(source: Any, feeds: Any) -> None:
    model = source(mlp_model(LAYERS, WIDTH))
    result = first_divergence(model, model, feeds, diverges=AllClose(), max_bytes=4 * PAIR_BYTES)
    assert result.divergence is None
    assert result.compared == 17
    assert (result.runs, result.chunked) == (5, True)  # 17 pairs, 4 a run


def test_models_with_external_data_are_read_where_they_lie(source: Any, feeds: Any, tmp_path: Path) -> None:
    paths = []
    for name, model in [
        ("current", scaled_weight(mlp_model(LAYERS, WIDTH), "w3", 1.5)),
        ("reference", mlp_model(LAYERS, WIDTH)),
    ]:
        folder = tmp_path / name
        folder.mkdir()
        onnx.save(
            model, folder / "model.onnx", save_as_external_data=True, location="model.data", size_threshold=0
        )
        paths.append(folder / "model.onnx")
    current, reference = source(paths[0]), source(paths[1])
    assert current.has_external_data
    assert reference.has_external_data
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for max_bytes in (1 << 20, 1):
        found = _located(
            first_divergence(current, reference, feeds, diverges=AllClose(), max_bytes=max_bytes)
        )
        assert (found.tensor, found.op_type) == ("mm3", "MatMul")
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written beside them


def test_unnamed_nodes_are_named_by_their_index(source: Any, feeds: Any) -> None:
    current = scaled_weight(mlp_model(LAYERS, WIDTH), "w3", 1.5)
    for node in current.graph.node:
        node.name = ""
    found = _located(
        first_divergence(source(current), source(mlp_model(LAYERS, WIDTH)), feeds, diverges=AllClose())
    )
    assert (found.tensor, found.node) == ("mm3", "#6")


def test_tensors_whose_shapes_differ_are_skipped(source: Any, feeds: Any) -> None:
    """The reference's first layer is narrower (mm0, h0: [batch, 8]), so those two pairs cannot be
    compared; its second layer brings the width back, and there the values differ."""
    rng = np.random.default_rng(1)
    weights = [
        numpy_helper.from_array(rng.standard_normal((WIDTH, 8)).astype(np.float32), "w0"),
        numpy_helper.from_array(rng.standard_normal((8, WIDTH)).astype(np.float32), "w1"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w0"], ["mm0"], name="matmul0"),
        helper.make_node("Relu", ["mm0"], ["h0"], name="relu0"),
        helper.make_node("MatMul", ["h0", "w1"], ["mm1"], name="matmul1"),
        helper.make_node("Relu", ["mm1"], ["h1"], name="relu1"),
        helper.make_node("Identity", ["h1"], ["y"], name="out"),
    ]
    graph = helper.make_graph(
        nodes,
        "narrow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", WIDTH])],
        weights,
    )
    reference = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    judge = AllClose()
    result = first_divergence(source(mlp_model(2, WIDTH)), source(reference), feeds, diverges=judge)
    found = _located(result)
    assert (found.tensor, found.compared) == ("mm1", 0)
    assert result.skipped == 2
    assert judge.judged == ["mm1"]


def test_graphs_without_a_common_tensor_say_so(source: Any, feeds: Any) -> None:
    nodes = [helper.make_node("Tanh", ["x"], ["a"]), helper.make_node("Sigmoid", ["a"], ["b"])]
    graph = helper.make_graph(
        nodes,
        "other",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", WIDTH])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", WIDTH])],
    )
    other = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    judge = AllClose()
    result = first_divergence(source(mlp_model(2, WIDTH)), source(other), feeds, diverges=judge)
    assert result.divergence is None
    assert judge.judged == []
    assert result.reason.startswith("the graphs share no tensor to compare: none of the 5 tensors")
    assert result.runs == 0
    assert result.unpaired == 5


def test_an_unreadable_model_is_named(source: Any, feeds: Any) -> None:
    broken = source(b"this is not an onnx model")
    with pytest.raises(ModelError, match=r"'<25 bytes>': cannot be read as an ONNX model"):
        first_divergence(broken, source(mlp_model(2, WIDTH)), feeds, diverges=AllClose())


def test_a_missing_feed_is_named(source: Any) -> None:
    model = source(mlp_model(2, WIDTH))
    with pytest.raises(ModelError, match=r"needs input 'x', which the feeds do not hold \(they hold 'z'\)"):
        first_divergence(model, model, {"z": np.zeros((1, WIDTH), np.float32)}, diverges=AllClose())


def test_a_model_that_cannot_run_is_named(source: Any) -> None:
    model = source(mlp_model(2, WIDTH))
    wrong = {"x": np.zeros((1, WIDTH + 1), np.float32)}  # MatMul cannot take it
    with pytest.raises(ModelError, match=r"'<ModelProto mlp2>': ONNX Runtime could not run it"):
        first_divergence(model, model, wrong, diverges=AllClose())


def test_a_model_ort_cannot_build_is_named(source: Any, feeds: Any) -> None:
    current = mlp_model(2, WIDTH)
    current.graph.node[1].op_type = "NoSuchOperator"
    with pytest.raises(
        SessionBuildError, match=r"'<ModelProto mlp2>': ONNX Runtime could not build a session"
    ):
        first_divergence(source(current), source(mlp_model(2, WIDTH)), feeds, diverges=AllClose())


def test_max_bytes_must_be_positive(source: Any, feeds: Any) -> None:
    model = source(mlp_model(2, WIDTH))
    with pytest.raises(ValueError, match="max_bytes must be positive, got 0"):
        first_divergence(model, model, feeds, diverges=AllClose(), max_bytes=0)


def test_tensors_of_a_type_shape_inference_does_not_know_are_compared_too(source: Any, feeds: Any) -> None:
    """ONNX shape inference does not know onnxruntime's contrib ops; ORT types their outputs."""
    nodes = [
        helper.make_node("Gelu", ["x"], ["g"], domain="com.microsoft", name="gelu"),
        helper.make_node("Relu", ["g"], ["r"], name="relu"),
        helper.make_node("Identity", ["r"], ["y"], name="out"),
    ]
    graph = helper.make_graph(
        nodes,
        "contrib",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", WIDTH])],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    inferred = onnx.shape_inference.infer_shapes(model)
    assert not [v for v in inferred.graph.value_info if v.name in ("g", "r") and v.type.tensor_type.elem_type]
    changed = onnx.ModelProto()
    changed.CopyFrom(model)
    changed.graph.node[1].op_type = "Sigmoid"
    judge = AllClose()
    result = first_divergence(source(changed), source(model), feeds, diverges=judge)
    found = _located(result)
    assert (found.tensor, found.node, found.op_type, found.compared) == ("r", "relu", "Sigmoid", 1)
    assert judge.judged == ["g", "r"]


def test_outputs_that_are_not_tensors_are_left_out_and_said(source: Any) -> None:
    model = source(structured_outputs_model(classes=3))
    judge = AllClose()
    feeds = {"x": np.random.default_rng(0).random((2, 3)).astype(np.float32)}
    result = first_divergence(model, model, feeds, diverges=judge)
    assert judge.judged == ["negated", "y"]  # ZipMap's sequence of maps and the sequence are not
    assert result.not_tensors == 2
    assert result.reason == (
        "no tensor diverges beyond the tolerance (2 compared in graph order; "
        "2 not compared, not tensors (sequences, maps, optionals))"
    )
