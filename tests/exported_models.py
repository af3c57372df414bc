"""Models shaped as exporters write them, built at test time with onnx.helper (torch is not installed in
CI): a detector whose input is ``[?, 3, ?, ?]`` (the unnamed dynamic dims of a PyTorch export with
``dynamic_axes`` and of PaddleOCR's text detector), and a stateful voice-activity detector with a state
tensor and an int64 sample-rate scalar (as Silero's VAD takes them)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def detector_model(layers: int = 3, channels: int = 16, *, seed: int = 0) -> onnx.ModelProto:
    """``x[?, 3, ?, ?] -> (Conv 3x3 + Relu) x layers -> Conv 1x1 -> Sigmoid -> heatmap[?, 1, ?, ?]``: a
    text-detector-like fully convolutional net whose every dynamic dim is unnamed. Its cost grows with
    the image area, so an input sized 1x1 would time almost nothing."""
    rng = np.random.default_rng(seed)
    inits, nodes, current, width = [], [], "x", 3
    for i in range(layers):
        weight = (rng.standard_normal((channels, width, 3, 3)) * (1.0 / (3 * width**0.5))).astype(np.float32)
        inits += [
            numpy_helper.from_array(weight, f"w{i}"),
            numpy_helper.from_array(np.zeros(channels, np.float32), f"b{i}"),
        ]
        nodes += [
            helper.make_node("Conv", [current, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"),
        ]  # fmt: skip
        current, width = f"r{i}", channels
    head = (rng.standard_normal((1, width, 1, 1)) * 0.3).astype(np.float32)
    inits += [
        numpy_helper.from_array(head, "head_w"),
        numpy_helper.from_array(np.zeros(1, np.float32), "head_b"),
    ]
    nodes += [
        helper.make_node("Conv", [current, "head_w", "head_b"], ["logits"], name="head"),
        helper.make_node("Sigmoid", ["logits"], ["heatmap"], name="sigmoid"),
    ]
    graph = helper.make_graph(
        nodes,
        f"detector{layers}x{channels}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, None, None])],
        [helper.make_tensor_value_info("heatmap", TensorProto.FLOAT, [None, 1, None, None])],
        inits,
    )
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8)


VAD_HIDDEN = 32
VAD_FILTERS = 8
VAD_KERNEL = 16


def vad_model(*, seed: int = 0, hidden: int = VAD_HIDDEN) -> onnx.ModelProto:
    """A stateful voice-activity detector: ``input[?, ?]`` (batch, samples), ``state[2, ?, hidden]``
    (the LSTM's h and c, batch unnamed at axis 1) and ``sr`` (an int64 scalar, the sample rate) ->
    ``output[?, 1]`` (speech probability) and ``stateN[2, ?, hidden]``, fed back on the next call.

    The audio is padded by reflection (ORT refuses a reflect pad wider than the samples), framed by a
    strided Conv, averaged over frames, scaled by ``sr / 16000`` and run through one LSTM step from the
    given state."""
    rng = np.random.default_rng(seed)
    pad = VAD_KERNEL // 2

    def weight(name: str, *shape: int, scale: float = 0.2) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [
        numpy_helper.from_array(np.array([0, pad, 0, pad], np.int64), "pads"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        numpy_helper.from_array(np.array([0], np.int64), "axis0"),
        numpy_helper.from_array(np.array([1, 1], np.int64), "split"),
        numpy_helper.from_array(np.array(16000.0, np.float32), "reference_rate"),
        weight("frame_w", VAD_FILTERS, 1, VAD_KERNEL),
        weight("W", 1, 4 * hidden, VAD_FILTERS),
        weight("R", 1, 4 * hidden, hidden),
        numpy_helper.from_array(np.zeros((1, 8 * hidden), np.float32), "B"),
        weight("out_w", hidden, 1, scale=0.5),
    ]
    nodes = [
        helper.make_node("Pad", ["input", "pads"], ["padded"], name="reflect_pad", mode="reflect"),
        helper.make_node("Unsqueeze", ["padded", "axis1"], ["audio"], name="channel"),
        helper.make_node("Conv", ["audio", "frame_w"], ["frames"], name="frames", strides=[VAD_KERNEL // 2]),
        helper.make_node("Abs", ["frames"], ["energy"], name="energy"),
        helper.make_node("ReduceMean", ["energy"], ["features"], name="pool", axes=[2], keepdims=0),
        helper.make_node("Cast", ["sr"], ["rate"], name="rate", to=TensorProto.FLOAT),
        helper.make_node("Div", ["rate", "reference_rate"], ["rate_scale"], name="rate_scale"),
        helper.make_node("Mul", ["features", "rate_scale"], ["scaled"], name="scale"),
        helper.make_node("Unsqueeze", ["scaled", "axis0"], ["step"], name="one_step"),
        helper.make_node("Split", ["state", "split"], ["initial_h", "initial_c"], name="split_state", axis=0),
        helper.make_node(
            "LSTM",
            ["step", "W", "R", "B", "", "initial_h", "initial_c"],
            ["", "h", "c"],
            name="lstm",
            hidden_size=hidden,
        ),
        helper.make_node("Concat", ["h", "c"], ["stateN"], name="new_state", axis=0),
        helper.make_node("Squeeze", ["h", "axis0"], ["last"], name="last"),
        helper.make_node("MatMul", ["last", "out_w"], ["logit"], name="decoder"),
        helper.make_node("Sigmoid", ["logit"], ["output"], name="probability"),
    ]
    graph = helper.make_graph(
        nodes,
        "vad",
        [
            helper.make_tensor_value_info("input", TensorProto.FLOAT, [None, None]),
            helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, None, hidden]),
            helper.make_tensor_value_info("sr", TensorProto.INT64, []),
        ],
        [
            helper.make_tensor_value_info("output", TensorProto.FLOAT, [None, 1]),
            helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, None, hidden]),
        ],
        inits,
    )
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8)
