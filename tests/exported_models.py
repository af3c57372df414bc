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


def decoder_model(
    layers: int = 2,
    *,
    width: int = 64,
    heads: int = 4,
    vocab: int = 500,
    cache: bool = True,
    seed: int = 0,
    names: dict[str, str] | None = None,
) -> onnx.ModelProto:
    """A GPT-2-shaped decoder as optimum and torch.onnx write them: ``input_ids[batch, sequence]``,
    ``attention_mask[batch, total_sequence]`` and, with ``cache``, ``past_key_values.N.key/value``
    ``[batch, heads, past_sequence, head]`` in, ``logits[batch, sequence, vocab]`` and
    ``present.N.key/value`` ``[batch, heads, total_sequence, head]`` out (the past concatenated with
    this step's keys and values). Each layer: attention over every cached position (masked by
    ``attention_mask``), then a 4x MLP, both residual. Without ``cache`` it takes the whole sequence
    every step, as an export without past key values does. ``names`` renames inputs or outputs."""
    rng = np.random.default_rng(seed)
    head = width // heads
    rename = names or {}

    def named(name: str) -> str:
        return rename.get(name, name)

    def weight(name: str, *shape: int) -> str:
        inits.append(
            numpy_helper.from_array((rng.standard_normal(shape) / shape[0] ** 0.5).astype(np.float32), name)
        )
        return name

    inits: list[onnx.TensorProto] = [
        numpy_helper.from_array(np.array([0, 0, heads, head], np.int64), "split_heads"),
        numpy_helper.from_array(np.array([0, 0, width], np.int64), "merge_heads"),
        numpy_helper.from_array(np.array([1, 2], np.int64), "mask_axes"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(-10000.0, np.float32), "masked"),
        numpy_helper.from_array(np.array(1.0 / head**0.5, np.float32), "scale"),
    ]
    embedding = weight("wte", vocab, width)
    ids, mask = named("input_ids"), named("attention_mask")
    nodes = [
        helper.make_node("Gather", [embedding, ids], ["h0"], name="embed"),
        helper.make_node("Cast", [mask], ["mask_f"], to=TensorProto.FLOAT, name="mask_cast"),
        helper.make_node("Sub", ["one", "mask_f"], ["mask_off"], name="mask_off"),
        helper.make_node("Mul", ["mask_off", "masked"], ["mask_bias2"], name="mask_bias"),
        helper.make_node("Unsqueeze", ["mask_bias2", "mask_axes"], ["mask_bias4"], name="mask_unsqueeze"),
    ]
    inputs = [
        helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "sequence"]),
        helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "total_sequence"]),
    ]
    outputs = [
        helper.make_tensor_value_info(named("logits"), TensorProto.FLOAT, ["batch", "sequence", vocab])
    ]
    current = "h0"
    for i in range(layers):
        for part in ("q", "k", "v"):
            nodes += [
                helper.make_node("MatMul", [current, weight(f"w{part}{i}", width, width)], [f"{part}{i}"]),
                helper.make_node("Reshape", [f"{part}{i}", "split_heads"], [f"{part}{i}_s"]),
                helper.make_node("Transpose", [f"{part}{i}_s"], [f"{part}{i}_t"], perm=[0, 2, 1, 3]),
            ]
        keys, values = f"k{i}_t", f"v{i}_t"
        if cache:
            past_k, past_v = named(f"past_key_values.{i}.key"), named(f"past_key_values.{i}.value")
            keys, values = named(f"present.{i}.key"), named(f"present.{i}.value")
            nodes += [
                helper.make_node("Concat", [past_k, f"k{i}_t"], [keys], axis=2, name=f"cache_k{i}"),
                helper.make_node("Concat", [past_v, f"v{i}_t"], [values], axis=2, name=f"cache_v{i}"),
            ]
            for name in (past_k, past_v):
                inputs.append(
                    helper.make_tensor_value_info(
                        name, TensorProto.FLOAT, ["batch", heads, "past_sequence", head]
                    )
                )
            for name in (keys, values):
                outputs.append(
                    helper.make_tensor_value_info(
                        name, TensorProto.FLOAT, ["batch", heads, "total_sequence", head]
                    )
                )
        nodes += [
            helper.make_node("Transpose", [keys], [f"kT{i}"], perm=[0, 1, 3, 2]),
            helper.make_node("MatMul", [f"q{i}_t", f"kT{i}"], [f"scores{i}"]),
            helper.make_node("Mul", [f"scores{i}", "scale"], [f"scaled{i}"]),
            helper.make_node("Add", [f"scaled{i}", "mask_bias4"], [f"masked{i}"]),
            helper.make_node("Softmax", [f"masked{i}"], [f"probs{i}"], axis=-1),
            helper.make_node("MatMul", [f"probs{i}", values], [f"att{i}"]),
            helper.make_node("Transpose", [f"att{i}"], [f"att{i}_t"], perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", [f"att{i}_t", "merge_heads"], [f"att{i}_m"]),
            helper.make_node("MatMul", [f"att{i}_m", weight(f"wo{i}", width, width)], [f"proj{i}"]),
            helper.make_node("Add", [current, f"proj{i}"], [f"res{i}"]),
            helper.make_node("MatMul", [f"res{i}", weight(f"w1_{i}", width, 4 * width)], [f"up{i}"]),
            helper.make_node("Relu", [f"up{i}"], [f"act{i}"]),
            helper.make_node("MatMul", [f"act{i}", weight(f"w2_{i}", 4 * width, width)], [f"down{i}"]),
            helper.make_node("Add", [f"res{i}", f"down{i}"], [f"h{i + 1}"]),
        ]
        current = f"h{i + 1}"
    nodes.append(helper.make_node("MatMul", [current, weight("lm_head", width, vocab)], [named("logits")]))
    graph = helper.make_graph(nodes, f"decoder{layers}x{width}", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8)
