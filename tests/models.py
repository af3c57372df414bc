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
