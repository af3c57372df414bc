"""Generate ``small_cnn.onnx``: a small image classifier with real (seeded) weights.

The CNN graphs that ship in the onnx wheel (``light_*.onnx``) build every
weight tensor with ``ConstantOfShape``: each tensor holds one repeated value,
so every class gets the same logit and the softmax output is exactly
``1 / classes`` whatever the input or the optimization level. They are good
for latency and graph-optimization tests, but an accuracy check on them cannot
fail. This model gives the example suite a CNN whose outputs do depend on its
weights and inputs, with the patterns ORT's optimizer rewrites at each level:

* ``Conv -> BatchNormalization -> Relu`` twice (BN folding at *basic*,
  Conv+Relu fusion at *extended*, NCHWc layout at *all* on x86 CPUs);
* ``MaxPool``, ``GlobalAveragePool``, ``Flatten`` and ``Gemm`` to 10 classes,
  then ``Softmax``;
* a dynamic ``batch`` axis: ``input`` is ``float32[batch, 3, 32, 32]``.

Weights come from ``numpy.random.default_rng(SEED)`` in a fixed order, so
running the script twice yields byte-identical files (~25 KB)::

    python examples/models/make_small_cnn.py [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20261122
CHANNELS = (3, 16, 32)
CLASSES = 10
IMAGE = 32
OPSET = 17


def _conv_block(
    rng: np.random.Generator, name: str, source: str, c_in: int, c_out: int
) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto], str]:
    """Conv 3x3 (pad 1) -> BatchNormalization -> Relu, weights drawn from ``rng``."""
    scale = np.sqrt(2.0 / (c_in * 9))
    weight = rng.standard_normal((c_out, c_in, 3, 3)) * scale
    initializers = [
        numpy_helper.from_array(weight.astype(np.float32), f"{name}.w"),
        numpy_helper.from_array((rng.standard_normal(c_out) * 0.1).astype(np.float32), f"{name}.b"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, c_out).astype(np.float32), f"{name}.bn.scale"),
        numpy_helper.from_array((rng.standard_normal(c_out) * 0.1).astype(np.float32), f"{name}.bn.bias"),
        numpy_helper.from_array((rng.standard_normal(c_out) * 0.1).astype(np.float32), f"{name}.bn.mean"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, c_out).astype(np.float32), f"{name}.bn.var"),
    ]
    nodes = [
        helper.make_node(
            "Conv", [source, f"{name}.w", f"{name}.b"], [f"{name}.conv"], name=f"{name}.conv",
            kernel_shape=[3, 3], pads=[1, 1, 1, 1],
        ),
        helper.make_node(
            "BatchNormalization",
            [f"{name}.conv", f"{name}.bn.scale", f"{name}.bn.bias", f"{name}.bn.mean", f"{name}.bn.var"],
            [f"{name}.bn"], name=f"{name}.bn", epsilon=1e-5,
        ),
        helper.make_node("Relu", [f"{name}.bn"], [f"{name}.relu"], name=f"{name}.relu"),
    ]
    return nodes, initializers, f"{name}.relu"


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(SEED)
    nodes: list[onnx.NodeProto] = []
    initializers: list[onnx.TensorProto] = []
    source = "input"
    for index, (c_in, c_out) in enumerate(itertools.pairwise(CHANNELS)):
        block_nodes, block_weights, source = _conv_block(rng, f"block{index}", source, c_in, c_out)
        nodes += block_nodes
        initializers += block_weights
        nodes.append(
            helper.make_node(
                "MaxPool", [source], [f"block{index}.pool"], name=f"block{index}.pool",
                kernel_shape=[2, 2], strides=[2, 2],
            )
        )
        source = f"block{index}.pool"
    width = CHANNELS[-1]
    initializers += [
        numpy_helper.from_array(
            (rng.standard_normal((CLASSES, width)) * np.sqrt(1.0 / width)).astype(np.float32), "head.w"
        ),
        numpy_helper.from_array((rng.standard_normal(CLASSES) * 0.1).astype(np.float32), "head.b"),
    ]
    nodes += [
        helper.make_node("GlobalAveragePool", [source], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["features"], name="flatten", axis=1),
        helper.make_node("Gemm", ["features", "head.w", "head.b"], ["logits"], name="head", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", CHANNELS[0], IMAGE, IMAGE])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", CLASSES])],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="pytest-ortperf examples"
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("small_cnn.onnx"))
    args = parser.parse_args(argv)
    data = build().SerializeToString()
    args.out.write_bytes(data)
    print(f"wrote {args.out} ({len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()[:16]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
