"""Small real ONNX models for the tests, built with onnx.helper."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SQUEEZENET = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_squeezenet.onnx"


def mlp_model(layers: int = 2, width: int = 16, *, seed: int = 0) -> onnx.ModelProto:
    """``x[batch, width] -> (MatMul + Relu) x layers``: a real model whose cost grows with layers."""
    rng = np.random.default_rng(seed)
    nodes, inits, current = [], [], "x"
    for i in range(layers):
        weight = numpy_helper.from_array(
            (rng.standard_normal((width, width)) * 0.1).astype(np.float32), f"w{i}"
        )
        inits.append(weight)
        nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [f"mm{i}"], name=f"matmul{i}"))
        nodes.append(helper.make_node("Relu", [f"mm{i}"], [f"h{i}"], name=f"relu{i}"))
        current = f"h{i}"
    nodes.append(helper.make_node("Identity", [current], ["y"], name="out"))
    graph = helper.make_graph(
        nodes,
        f"mlp{layers}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def conv_stack_model(layers: int = 2, channels: int = 8, size: int = 16, *, seed: int = 0) -> onnx.ModelProto:
    """``x[1, channels, size, size] -> (Conv 3x3 + Relu) x layers``: compute-bound, cost grows with layers."""
    rng = np.random.default_rng(seed)
    nodes, inits, current = [], [], "x"
    for i in range(layers):
        weight = (rng.standard_normal((channels, channels, 3, 3)) * 0.1).astype(np.float32)
        inits.append(numpy_helper.from_array(weight, f"w{i}"))
        inits.append(numpy_helper.from_array(np.zeros(channels, np.float32), f"b{i}"))
        nodes.append(
            helper.make_node(
                "Conv", [current, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]
            )
        )
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"h{i}"], name=f"relu{i}"))
        current = f"h{i}"
    nodes.append(helper.make_node("Identity", [current], ["y"], name="out"))
    shape = [1, channels, size, size]
    graph = helper.make_graph(
        nodes,
        f"conv{layers}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def small_ops_model(ops: int = 10, width: int = 64) -> onnx.ModelProto:
    """``x[1, width] -> (Mul, Add, Tanh) repeated``: many tiny operators, dominated by per-op overhead."""
    nodes, current = [], "x"
    scale = numpy_helper.from_array(np.full(width, 0.5, np.float32), "scale")
    shift = numpy_helper.from_array(np.full(width, 0.1, np.float32), "shift")
    kinds = ("Mul", "Add", "Tanh")
    for i in range(ops):
        kind = kinds[i % 3]
        inputs = [current] + (["scale"] if kind == "Mul" else ["shift"] if kind == "Add" else [])
        nodes.append(helper.make_node(kind, inputs, [f"t{i}"], name=f"{kind.lower()}{i}"))
        current = f"t{i}"
    nodes.append(helper.make_node("Identity", [current], ["y"], name="out"))
    graph = helper.make_graph(
        nodes,
        f"small_ops{ops}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])],
        [scale, shift],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def reexported(model: onnx.ModelProto) -> onnx.ModelProto:
    """The same graph saved again by another exporter: different bytes, the same computation."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    copy.producer_name, copy.producer_version = "reexport", "2"
    copy.doc_string = "the same graph, exported again"
    for index, node in enumerate(copy.graph.node):
        node.name = f"n{index}_{node.op_type}"
    return copy
