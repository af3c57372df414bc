"""The optimized graph of a variant, built by real sessions: in this process and in a worker of
another (here: the same) environment, with one implementation."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import onnxruntime as ort
import pytest

from pytest_ortperf.errors import SessionBuildError
from pytest_ortperf.graph.figures import summarize
from pytest_ortperf.ort import worker_program
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.optimized_graph import optimized_graph
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import session_recipe
from pytest_ortperf.ort.variants import OptLevel, Variant
from tests.models import conv_stack_model

CPU = resolve_provider("cpu", source="test")


def model_bytes(**kwargs: int) -> ModelSource:
    data = conv_stack_model(**kwargs).SerializeToString()
    return ModelSource(label="conv", sha256="x" * 64, data=data)


@pytest.mark.parametrize(
    ("level", "fused"), [(OptLevel.BASIC, {}), (OptLevel.EXTENDED, {"com.microsoft:FusedConv": 2})]
)
def test_the_levels_graph_is_written_and_read_with_its_placement(
    level: OptLevel, fused: dict[str, int]
) -> None:
    built = optimized_graph(ort, model_bytes(layers=2), Variant(CPU, level), SessionSettings())
    figures = summarize(built.optimized, built.source, placement=built.placement, requested=CPU.providers[0])
    assert figures.fused == fused
    assert built.note == ""
    assert built.placed == hasattr(ort.InferenceSession, "get_provider_graph_assignment_info")
    if built.placed:
        assert set(figures.providers) == {"CPUExecutionProvider"}
        assert figures.off_provider == 0


def test_a_worker_of_another_environment_builds_the_same_graph() -> None:
    variant, settings = Variant(CPU, OptLevel.ALL), SessionSettings()
    here = optimized_graph(ort, model_bytes(layers=2), variant, settings)
    there = optimized_graph(
        ort, model_bytes(layers=2), variant, settings, python=sys.executable, timeout_s=60
    )
    assert there.optimized is not None
    as_figures = [summarize(g.optimized, g.source, placement=g.placement) for g in (here, there)]
    assert as_figures[0] == as_figures[1]
    assert as_figures[0].digest


def test_a_graph_ort_cannot_write_leaves_the_placement_and_says_why(tmp_path: Path) -> None:
    """As with a provider that compiles nodes (TensorRT): the session is built again without the file."""
    recipe = session_recipe(Variant(CPU, OptLevel.EXTENDED), SessionSettings())
    unwritable = tmp_path / "no such directory" / "optimized.onnx"
    answer = worker_program.optimized_graph(ort, model_bytes(layers=1).ort_input, recipe, str(unwritable))
    assert answer["note"].startswith("ORT could not write the optimized graph (")
    assert not unwritable.exists()
    assert answer["placed"] is False or answer["placement"]


def test_a_model_ort_cannot_build_is_a_session_error_naming_it() -> None:
    broken = conv_stack_model(layers=1)
    broken.graph.node[0].op_type = "NoSuchOp"
    source = ModelSource(label="broken.onnx", sha256="y" * 64, data=broken.SerializeToString())
    with pytest.raises(
        SessionBuildError, match=r"^ONNX Runtime could not build a session for 'broken.onnx' \[cpu-basic\]: "
    ):
        optimized_graph(ort, source, Variant(CPU, OptLevel.BASIC), SessionSettings())


def test_the_source_of_a_model_file_is_read_without_its_external_data(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    onnx.save(conv_stack_model(layers=1), path)
    built = optimized_graph(
        ort,
        ModelSource(label="model.onnx", sha256="z" * 64, path=path),
        Variant(CPU, OptLevel.BASIC),
        SessionSettings(),
    )
    assert [node.op_type for node in built.source.graph.node] == ["Conv", "Relu", "Identity"]


def test_weights_written_beside_the_graph_count_in_its_digest() -> None:
    """The optimized graph's weights go to a file of their own; other weights are another graph."""
    variant, settings = Variant(CPU, OptLevel.EXTENDED), SessionSettings()

    def digest(seed: int) -> str:
        built = optimized_graph(ort, model_bytes(layers=2, channels=16, seed=seed), variant, settings)
        assert built.weights_sha256  # 16 x 16 x 3 x 3 floats: over the 1 KiB kept inline
        return summarize(built.optimized, built.source, weights_sha256=built.weights_sha256).digest

    assert digest(0) == digest(0)
    assert digest(0) != digest(1)


def test_a_profiled_run_on_zeros_says_where_each_node_ran() -> None:
    """What an onnxruntime without the placement API (before 1.24) is asked instead."""
    recipe = session_recipe(Variant(CPU, OptLevel.BASIC), SessionSettings())
    placement, why = worker_program.profiled_placement(ort, model_bytes(layers=2).ort_input, recipe)
    assert why == ""
    assert placement is not None
    assert sorted(op for _, op, _ in placement) == ["Conv", "Conv", "Relu", "Relu"]
    assert {provider for _, _, provider in placement} == {"CPUExecutionProvider"}
    assert {name for name, _, _ in placement} >= {"conv0", "relu1"}


def test_an_input_zeros_cannot_stand_for_leaves_the_placement_unknown_with_the_reason() -> None:
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Identity", ["text"], ["out"])],
        "strings",
        [onnx.helper.make_tensor_value_info("text", onnx.TensorProto.STRING, [1])],
        [onnx.helper.make_tensor_value_info("out", onnx.TensorProto.STRING, [1])],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)], ir_version=8)
    recipe = session_recipe(Variant(CPU, OptLevel.BASIC), SessionSettings())
    placement, why = worker_program.profiled_placement(ort, model.SerializeToString(), recipe)
    assert placement is None
    assert why == "input 'text' is a tensor(string), which a run on zeros cannot feed"
