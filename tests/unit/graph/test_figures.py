"""The figures of an optimized graph, read from ONNX protobufs built here (no ONNX Runtime)."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from pytest_ortperf.graph.figures import (
    GraphFigures,
    canonical_digest,
    hardware_class,
    histogram,
    op_key,
    short,
    summarize,
)
from tests.models import conv_stack_model, reexported

CPU = "CPUExecutionProvider"


def fused(conv_layers: int) -> onnx.ModelProto:
    """What ORT writes of conv_stack_model at `extended`: one FusedConv per Conv + Relu."""
    model = conv_stack_model(conv_layers)
    kept = [node for node in model.graph.node if node.op_type != "Relu"]
    for node in kept:
        if node.op_type == "Conv":
            node.domain, node.op_type = "com.microsoft", "FusedConv"
            node.output[0] = node.output[0].replace("c", "h")
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return model


def test_op_keys_name_the_domain_except_the_default_one() -> None:
    assert op_key("", "Conv") == op_key("ai.onnx", "Conv") == "Conv"
    assert op_key("com.microsoft", "FusedConv") == "com.microsoft:FusedConv"
    assert short("com.microsoft:FusedConv") == "FusedConv"
    assert short("com.microsoft.nchwc:Conv") == "nchwc:Conv"
    assert short("Gemm") == "Gemm"


def test_the_fused_op_types_are_those_the_optimizer_made() -> None:
    source = conv_stack_model(3)
    figures = summarize(
        fused(3), source, placement=[("conv0", "com.microsoft:FusedConv", CPU)], requested=CPU
    )
    assert histogram(source) == {"Conv": 3, "Identity": 1, "Relu": 3}
    assert figures.ops == {"Identity": 1, "com.microsoft:FusedConv": 3}
    assert figures.fused == {"com.microsoft:FusedConv": 3}
    assert figures.providers == {CPU: 1}
    assert (figures.off_provider, figures.copies, figures.nodes) == (0, 0, 4)
    assert figures.describe().startswith("4 nodes, fused: FusedConv 3; digest ")


def test_a_fused_op_already_in_the_source_is_not_counted_as_fused_by_the_optimizer() -> None:
    model = fused(2)
    assert summarize(model, model).fused == {}


def test_nodes_off_the_requested_provider_and_copy_nodes_are_counted() -> None:
    model = conv_stack_model(1)
    copy = helper.make_node("MemcpyToHost", ["y"], ["y2"], name="copy", domain="")
    model.graph.node.append(copy)
    placement = [
        ("conv0", "Conv", "CUDAExecutionProvider"),
        ("relu0", "Relu", CPU),
        ("", "ai.onnx.ml:Normalizer", CPU),
    ]
    figures = summarize(model, model, placement=placement, requested="CUDAExecutionProvider")
    assert (figures.off_provider, figures.copies) == (2, 1)
    assert figures.off_nodes == (f"<unnamed> (ai.onnx.ml:Normalizer) on {CPU}", f"relu0 (Relu) on {CPU}")
    assert figures.providers == {"CUDAExecutionProvider": 1, CPU: 2}


def test_without_a_written_graph_the_placed_nodes_stand_for_it() -> None:
    placement = [("trt", "TensorrtExecutionProvider_TRTKernel_graph_0", "TensorrtExecutionProvider")]
    figures = summarize(None, conv_stack_model(1), placement=placement, requested="TensorrtExecutionProvider")
    assert figures.digest == ""
    assert figures.describe().endswith("graph not serialized")
    assert figures.ops == {"TensorrtExecutionProvider_TRTKernel_graph_0": 1}


def test_the_digest_ignores_names_doc_strings_and_metadata_but_not_weights_or_attributes() -> None:
    model = conv_stack_model(2)
    digest = canonical_digest(model)
    renamed = reexported(model)
    for node in renamed.graph.node:  # internal values renamed as another exporter would
        node.output[:] = [f"/{name}/out" if name != "y" else name for name in node.output]
        node.input[:] = [f"/{name}/out" if name.startswith(("c", "h")) else name for name in node.input]
    onnx.helper.set_model_props(renamed, {"exporter": "another"})
    renamed.graph.name = "main_graph"
    assert canonical_digest(renamed) == digest
    other_weights = conv_stack_model(2, seed=1)
    assert canonical_digest(other_weights) != digest
    other_attribute = conv_stack_model(2)
    other_attribute.graph.node[0].attribute[0].ints[:] = [0, 0, 0, 0]
    assert canonical_digest(other_attribute) != digest
    renamed_interface = conv_stack_model(2)
    renamed_interface.graph.output[0].name = "logits"
    renamed_interface.graph.node[-1].output[0] = "logits"
    assert canonical_digest(renamed_interface) != digest


def test_figures_round_trip_and_damaged_ones_are_refused() -> None:
    figures = summarize(fused(2), conv_stack_model(2), placement=[("a", "Conv", CPU)], requested=CPU,
                        hardware={"arch": "x86_64", "features": ["avx2", "avx"]})  # fmt: skip
    assert figures.hardware_class == "x86_64:avx,avx2"
    assert GraphFigures.from_dict(figures.as_dict()) == figures
    for damaged in (
        {"ops": {"Conv": -1}},
        {"ops": []},
        {"ops": {}, "digest": 3},
        {"ops": {}, "copies": True},
        [],
    ):
        with pytest.raises((TypeError, ValueError)):
            GraphFigures.from_dict(damaged)
    with pytest.raises(KeyError):
        GraphFigures.from_dict({"digest": ""})


def test_the_hardware_class_is_the_architecture_and_the_dispatch_features() -> None:
    zen3 = {"arch": "x86_64", "features": ["avx", "avx2", "fma", "f16c"], "cpu": "25/1/1", "cores": 2}
    other_cores = {**zen3, "cpu": "25/1/2", "cores": 16}
    zen4 = {**zen3, "features": [*zen3["features"], "avx512f"]}
    assert hardware_class(zen3) == hardware_class(other_cores) == "x86_64:avx,avx2,f16c,fma"
    assert hardware_class(zen4) != hardware_class(zen3)
    assert hardware_class(None) == ""


def test_value_info_of_an_exporter_does_not_change_the_digest() -> None:
    model = conv_stack_model(1)
    with_shapes = onnx.shape_inference.infer_shapes(model)
    assert len(with_shapes.graph.value_info) > 0
    assert canonical_digest(with_shapes) == canonical_digest(model)
    extra = helper.make_tensor_value_info("unused", TensorProto.FLOAT, [1])
    model.graph.value_info.append(extra)
    assert canonical_digest(model) == canonical_digest(conv_stack_model(1))


def test_nchwc_reorders_are_layout_changes_not_fusions() -> None:
    from pytest_ortperf.graph.figures import is_fusion, parts_of

    assert is_fusion("com.microsoft.nchwc:Conv")
    assert "Conv" in (parts_of("com.microsoft.nchwc:Conv") or ())
    assert not is_fusion("com.microsoft.nchwc:ReorderOutput")
    assert not is_fusion("com.microsoft.nchwc:ReorderInput")
