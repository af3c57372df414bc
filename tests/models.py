"""Small real ONNX models for the tests, built with onnx.helper."""

from __future__ import annotations

import logging
import tempfile
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


def conv_stack_model(
    layers: int = 2, channels: int = 8, size: int = 16, *, seed: int = 0, exposed: int = 0
) -> onnx.ModelProto:
    """``x[1, channels, size, size] -> (Conv 3x3 + Relu) x layers``: compute-bound, cost grows with layers.
    ``exposed``: the first that many convolutions' outputs are also outputs of the graph, so ORT cannot
    fuse them with their Relu (``FusedConv`` at ``extended``): a re-export that loses fusions."""
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
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
               for name in ["y", *(f"c{i}" for i in range(exposed))]]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        f"conv{layers}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        outputs,
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


def int8_mlp_model(layers: int = 2, width: int = 16, *, seed: int = 0) -> onnx.ModelProto:
    """:func:`mlp_model` dynamically quantized to int8 by onnxruntime's own tool
    (``onnxruntime.quantization.quantize_dynamic``, its defaults: signed int8 weights, per tensor): each
    MatMul becomes ``DynamicQuantizeLinear`` of its input, ``MatMulInteger`` with the int8 weights, and a
    rescale (``Cast``, ``Mul``) back to float; cost grows with layers."""
    return dynamic_int8(mlp_model(layers, width, seed=seed))


def dynamic_int8(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` dynamically quantized to int8 by ``onnxruntime.quantization.quantize_dynamic`` at its
    defaults, as :func:`int8_mlp_model` quantizes its MLP (``benchmarks/footprint.py`` quantizes its
    changed models the same way)."""
    from onnxruntime.quantization import quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="ortperf-int8-") as tmp:
        source, quantized = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        onnx.save(model, source)
        with _QuietQuantizer():
            quantize_dynamic(source, quantized)
        return onnx.load(quantized)


class _QuietQuantizer(logging.Filter):
    """Drop the quantizer's advice to run its pre-processing first, logged on the root logger on every
    call: the models here are plain MatMul chains with nothing for it to do."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()

    def __enter__(self) -> None:
        logging.getLogger().addFilter(self)

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeFilter(self)


def lstm_model(
    steps: int = 8, hidden: int = 16, layers: int = 1, *, input_steps: int | None = None, seed: int = 0
) -> onnx.ModelProto:
    """``x[input_steps, batch, hidden] -> its first `steps` steps (Slice) -> LSTM x layers``: a
    recurrent model whose cost grows with the steps it runs over the same input (``input_steps``,
    default ``steps``), so a family's grown variants take the same feeds, as a side-by-side check
    gives both sides. Output: the last layer's final hidden state ``[1, batch, hidden]``."""
    return _recurrent_model("LSTM", 4, steps, hidden, layers, "batch", input_steps, seed)


def _recurrent_model(
    op: str,
    gates: int,
    steps: int,
    hidden: int,
    layers: int,
    batch: int | str,
    input_steps: int | None,
    seed: int,
    **attributes: int,
) -> onnx.ModelProto:
    """``layers`` of ``op`` (``LSTM``: 4 gates, ``GRU``: 3) over the first ``steps`` of
    ``x[input_steps, batch, hidden]``; the last layer's final hidden state ``[1, batch, hidden]``."""
    input_steps = steps if input_steps is None else input_steps
    if not 0 < steps <= input_steps:
        raise ValueError(f"steps must be in 1..{input_steps}, got {steps}")
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array(np.array([0], np.int64), "starts"),
        numpy_helper.from_array(np.array([steps], np.int64), "ends"),
        numpy_helper.from_array(np.array([0], np.int64), "axes"),
        numpy_helper.from_array(np.array([1], np.int64), "direction_axis"),
    ]
    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["seq"], name="first_steps")]
    current = "seq"
    name = op.lower()
    for i in range(layers):
        for weights in (f"W{i}", f"R{i}"):  # input and recurrence weights: the input is `hidden` wide too
            weight = (rng.standard_normal((1, gates * hidden, hidden)) * 0.1).astype(np.float32)
            inits.append(numpy_helper.from_array(weight, weights))
        inits.append(numpy_helper.from_array(np.zeros((1, 2 * gates * hidden), np.float32), f"B{i}"))
        last = i == layers - 1  # the last layer's sequence output is not asked for: only its final state
        nodes.append(
            helper.make_node(
                op, [current, f"W{i}", f"R{i}", f"B{i}"], ["" if last else f"y{i}", f"h{i}"],
                name=f"{name}{i}", hidden_size=hidden, **attributes,
            )
        )  # fmt: skip
        if not last:  # [steps, 1 direction, batch, hidden] -> the next layer's [steps, batch, hidden]
            nodes.append(
                helper.make_node("Squeeze", [f"y{i}", "direction_axis"], [f"s{i}"], name=f"squeeze{i}")
            )
            current = f"s{i}"
    nodes.append(helper.make_node("Identity", [f"h{layers - 1}"], ["y"], name="out"))
    graph = helper.make_graph(
        nodes,
        f"{name}{layers}x{steps}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [input_steps, batch, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, batch, hidden])],
        inits,
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


def scaled_weight(model: onnx.ModelProto, name: str, factor: float) -> onnx.ModelProto:
    """``model`` with the initializer ``name`` multiplied by ``factor``: one middle layer changed, the
    rest of the graph as it was (``scaled_weight(mlp_model(8), "w3", 1.5)``: ``mm3`` diverges first)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for index, init in enumerate(copy.graph.initializer):
        if init.name == name:
            scaled = numpy_helper.to_array(init) * np.asarray(factor, dtype=numpy_helper.to_array(init).dtype)
            copy.graph.initializer[index].CopyFrom(numpy_helper.from_array(scaled, name))
            return copy
    raise KeyError(f"{model.graph.name} has no initializer {name!r}")


def renamed_tensors(model: onnx.ModelProto, prefix: str = "t") -> onnx.ModelProto:
    """The same computation with every node output renamed ``<prefix><index>`` (graph outputs
    included, the inputs kept), as another exporter names its tensors."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    names: dict[str, str] = {}
    for node in copy.graph.node:
        for slot, output in enumerate(node.output):
            if output:
                names[output] = node.output[slot] = f"{prefix}{len(names)}"
        for slot, given in enumerate(node.input):
            node.input[slot] = names.get(given, given)
    # Node inputs are renamed as they are met: a graph in node order reads only earlier outputs.
    for value in [*copy.graph.output, *copy.graph.value_info]:
        value.name = names.get(value.name, value.name)
    return copy


def normalized_mlp_model(layers: int = 2, width: int = 16, *, node_name: str = "") -> onnx.ModelProto:
    """``mlp_model`` whose output goes through an ``ai.onnx.ml`` Normalizer (L2) named ``node_name``
    (unnamed by default, as converters often leave it): an op OpenVINO does not have, so that node
    falls back to the CPU provider while the rest runs on OpenVINO. Its output keeps the name ``y``."""
    model = mlp_model(layers, width)
    graph = model.graph
    graph.node[-1].output[0] = "unnormalized"
    graph.node.append(
        helper.make_node(
            "Normalizer", ["unnormalized"], ["y"], domain="ai.onnx.ml", norm="L2", name=node_name
        )
    )
    model.opset_import.append(helper.make_opsetid("ai.onnx.ml", 1))
    return model


def structured_outputs_model(classes: int = 3) -> onnx.ModelProto:
    """``x[2, classes]`` -> a ZipMap of it (``probabilities``: a sequence of maps, as skl2onnx writes a
    classifier's), a sequence (``parts``: ``[x, -x]``) and a tensor (``y``): every output kind that
    onnxruntime returns as something else than an array, beside one that it returns as an array."""
    nodes = [
        helper.make_node(
            "ZipMap", ["x"], ["probabilities"], domain="ai.onnx.ml", classlabels_int64s=list(range(classes))
        ),
        helper.make_node("Neg", ["x"], ["negated"]),
        helper.make_node("SequenceConstruct", ["x", "negated"], ["parts"]),
        helper.make_node("Identity", ["x"], ["y"]),
    ]
    zipmap = helper.make_sequence_type_proto(
        helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    )
    graph = helper.make_graph(
        nodes,
        "structured",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, classes])],
        [
            helper.make_value_info("probabilities", zipmap),
            helper.make_tensor_sequence_value_info("parts", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, classes]),
        ],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def layer_norm_model(
    blocks: int = 6, hidden: int = 256, *, square: str = "pow", seed: int = 0
) -> onnx.ModelProto:
    """``blocks`` layer norms over the last axis of ``x`` [batch, seq, hidden] (dims named ``batch`` and
    ``seq``), written out as an exporter writes them: ReduceMean, Sub, the square, ReduceMean, Add
    epsilon, Sqrt, Div, Mul by gamma, Add beta. ``square="pow"`` writes the square as ``Pow(d, 2)``,
    which ONNX Runtime's LayerNormFusion turns into one LayerNormalization per block; ``"mul"``
    writes ``Mul(d, d)``, which it does not match: the same work, several times the kernels."""
    rng = np.random.default_rng(seed)
    nodes, initializers = (
        [],
        [
            numpy_helper.from_array(np.array([-1], dtype=np.int64), "axes"),
            numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two"),
            numpy_helper.from_array(np.array(1e-5, dtype=np.float32), "eps"),
        ],
    )
    h = "x"
    for i in range(blocks):
        gamma = (1.0 + 0.1 * rng.standard_normal(hidden)).astype(np.float32)
        beta = (0.1 * rng.standard_normal(hidden)).astype(np.float32)
        initializers += [
            numpy_helper.from_array(gamma, f"gamma{i}"),
            numpy_helper.from_array(beta, f"beta{i}"),
        ]
        square_node = (
            helper.make_node("Pow", [f"d{i}", "two"], [f"sq{i}"], name=f"pow{i}")
            if square == "pow"
            else helper.make_node("Mul", [f"d{i}", f"d{i}"], [f"sq{i}"], name=f"square{i}")
        )
        nodes += [
            helper.make_node("ReduceMean", [h, "axes"], [f"mean{i}"], name=f"mean{i}", keepdims=1),
            helper.make_node("Sub", [h, f"mean{i}"], [f"d{i}"], name=f"sub{i}"),
            square_node,
            helper.make_node("ReduceMean", [f"sq{i}", "axes"], [f"var{i}"], name=f"var{i}", keepdims=1),
            helper.make_node("Add", [f"var{i}", "eps"], [f"ve{i}"], name=f"addeps{i}"),
            helper.make_node("Sqrt", [f"ve{i}"], [f"std{i}"], name=f"sqrt{i}"),
            helper.make_node("Div", [f"d{i}", f"std{i}"], [f"n{i}"], name=f"div{i}"),
            helper.make_node("Mul", [f"n{i}", f"gamma{i}"], [f"g{i}"], name=f"scale{i}"),
            helper.make_node("Add", [f"g{i}", f"beta{i}"], [f"ln{i}"], name=f"shift{i}"),
        ]
        h = f"ln{i}"
    nodes.append(helper.make_node("Identity", [h], ["y"], name="out"))
    graph = helper.make_graph(
        nodes,
        "layer_norms",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", hidden])],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def resnet50_model(
    width: int = 64,
    blocks: tuple[int, ...] = (3, 4, 6, 3),
    image: int = 224,
    *,
    classes: int = 1000,
    seed: int = 0,
) -> onnx.ModelProto:
    """A ResNet-50-shaped network (v1.5: the stride on each stage's first 3x3 convolution), as an
    exporter writes it before optimization: ``x[1, 3, image, image]`` -> stem Conv 7x7/2 +
    BatchNormalization + Relu, MaxPool 3x3/2 -> bottleneck blocks (Conv 1x1, 3x3, 1x1, each with its
    BatchNormalization, Relu after the first two; a projection Conv + BatchNormalization on the
    shortcut of each stage's first block; residual Add, Relu) -> GlobalAveragePool, Flatten, Gemm
    -> ``y[1, classes]``.

    ``width``: the stem's and the first stage's bottleneck channels (ResNet-50: 64; stage ``i``
    has ``width * 2**i``, expanded four times); ``blocks``: bottleneck blocks per stage (ResNet-50:
    3, 4, 6, 3). At ``disabled`` ONNX Runtime runs every BatchNormalization as its own kernel; from
    ``basic`` on it folds them into the convolutions, and at ``extended`` fuses Conv + Relu and
    Conv + Add + Relu. Weights are random (He-scaled, seeded) and each block's last BatchNormalization
    scales by 0.2, so activations stay finite through any depth."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def conv_bn(
        name: str,
        source: str,
        cin: int,
        cout: int,
        kernel: int,
        stride: int,
        *,
        relu: bool,
        gamma: float = 1.0,
    ) -> str:
        fan_in = cin * kernel * kernel
        weight = (rng.standard_normal((cout, cin, kernel, kernel)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        inits.append(numpy_helper.from_array(weight, f"{name}.w"))
        pad = kernel // 2
        nodes.append(
            helper.make_node(
                "Conv", [source, f"{name}.w"], [f"{name}.conv"], name=f"{name}.conv",
                kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4,
            )
        )  # fmt: skip
        bn = {
            "scale": gamma * (1.0 + 0.1 * rng.standard_normal(cout)),
            "bias": 0.1 * rng.standard_normal(cout),
            "mean": 0.1 * rng.standard_normal(cout),
            "var": 1.0 + 0.1 * np.abs(rng.standard_normal(cout)),
        }
        for part, values in bn.items():
            inits.append(numpy_helper.from_array(values.astype(np.float32), f"{name}.bn.{part}"))
        out = f"{name}.bn"
        nodes.append(
            helper.make_node(
                "BatchNormalization", [f"{name}.conv", *(f"{name}.bn.{p}" for p in bn)], [out], name=out
            )
        )
        if not relu:
            return out
        nodes.append(helper.make_node("Relu", [out], [f"{name}.relu"], name=f"{name}.relu"))
        return f"{name}.relu"

    current = conv_bn("stem", "x", 3, width, 7, 2, relu=True)
    nodes.append(
        helper.make_node(
            "MaxPool", [current], ["pool"], name="pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4
        )
    )
    current, channels = "pool", width
    for stage, count in enumerate(blocks):
        mid = width * 2**stage
        for block in range(count):
            name = f"s{stage}b{block}"
            stride = 2 if stage > 0 and block == 0 else 1
            h = conv_bn(f"{name}.a", current, channels, mid, 1, 1, relu=True)
            h = conv_bn(f"{name}.b", h, mid, mid, 3, stride, relu=True)
            h = conv_bn(f"{name}.c", h, mid, 4 * mid, 1, 1, relu=False, gamma=0.2)
            shortcut = current
            if block == 0:
                shortcut = conv_bn(f"{name}.down", current, channels, 4 * mid, 1, stride, relu=False)
            nodes.append(helper.make_node("Add", [h, shortcut], [f"{name}.add"], name=f"{name}.add"))
            nodes.append(helper.make_node("Relu", [f"{name}.add"], [f"{name}.out"], name=f"{name}.out"))
            current, channels = f"{name}.out", 4 * mid
    fc = (rng.standard_normal((classes, channels)) * np.sqrt(1.0 / channels)).astype(np.float32)
    inits += [
        numpy_helper.from_array(fc, "fc.w"),
        numpy_helper.from_array(np.zeros(classes, np.float32), "fc.b"),
    ]
    nodes += [
        helper.make_node("GlobalAveragePool", [current], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        f"resnet50_w{width}_{'-'.join(map(str, blocks))}_{image}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, image, image])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, classes])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def transformer_block_model(
    blocks: int = 4, hidden: int = 64, seq: int = 32, *, ffn: int = 4, seed: int = 0
) -> onnx.ModelProto:
    """``x[1, seq, hidden] -> blocks x (pre-norm single-head self-attention + residual, pre-norm
    MatMul-Relu-MatMul feed-forward + residual)``, written as an exporter writes them (layer norms as
    ReduceMean..Add, which ORT fuses): a transformer encoder stack whose cost grows with ``blocks``,
    every block the same work, so ``blocks`` 20 -> 21, 22, 25 is +5%, +10%, +25%."""
    rng = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "axes"),
        numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two"),
        numpy_helper.from_array(np.array(1e-5, dtype=np.float32), "eps"),
        numpy_helper.from_array(np.array(1.0 / np.sqrt(hidden), dtype=np.float32), "scale"),
    ]
    nodes: list[onnx.NodeProto] = []

    def weight(name: str, shape: tuple[int, ...], std: float = 0.05) -> str:
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * std).astype(np.float32), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs: object) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=f"{output}_{op.lower()}", **attrs))
        return output

    def layer_norm(h: str, tag: str) -> str:
        mean = node("ReduceMean", [h, "axes"], f"{tag}_mean", keepdims=1)
        d = node("Sub", [h, mean], f"{tag}_d")
        var = node("ReduceMean", [node("Pow", [d, "two"], f"{tag}_sq"), "axes"], f"{tag}_var", keepdims=1)
        std = node("Sqrt", [node("Add", [var, "eps"], f"{tag}_ve")], f"{tag}_std")
        normed = node("Div", [d, std], f"{tag}_n")
        scaled = node("Mul", [normed, weight(f"{tag}_g", (hidden,), 0.1)], f"{tag}_s")
        return node("Add", [scaled, weight(f"{tag}_b", (hidden,), 0.1)], f"{tag}_ln")

    h = "x"
    for i in range(blocks):
        a = layer_norm(h, f"b{i}a")
        q, k, v = (node("MatMul", [a, weight(f"b{i}w{p}", (hidden, hidden))], f"b{i}{p}") for p in "qkv")
        kt = node("Transpose", [k], f"b{i}kt", perm=[0, 2, 1])
        scores = node("Mul", [node("MatMul", [q, kt], f"b{i}qk"), "scale"], f"b{i}scores")
        attended = node("MatMul", [node("Softmax", [scores], f"b{i}p", axis=-1), v], f"b{i}av")
        h = node(
            "Add", [h, node("MatMul", [attended, weight(f"b{i}wo", (hidden, hidden))], f"b{i}o")], f"b{i}r1"
        )
        f = layer_norm(h, f"b{i}f")
        up = node(
            "Relu", [node("MatMul", [f, weight(f"b{i}w1", (hidden, ffn * hidden))], f"b{i}up")], f"b{i}act"
        )
        h = node(
            "Add",
            [h, node("MatMul", [up, weight(f"b{i}w2", (ffn * hidden, hidden))], f"b{i}down")],
            f"b{i}r2",
        )
    nodes.append(helper.make_node("Identity", [h], ["y"], name="out"))
    shape = [1, seq, hidden]
    graph = helper.make_graph(
        nodes,
        f"transformer{blocks}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def gru_model(
    steps: int = 8, hidden: int = 32, layers: int = 2, *, batch: int = 8, input_steps: int | None = None,
    seed: int = 0,
) -> onnx.ModelProto:  # fmt: skip
    """``x[input_steps, batch, hidden] -> its first `steps` steps (Slice) -> GRU x layers``: a GRU stack
    whose cost grows with the steps it runs over the same input (``input_steps``, default ``steps``),
    so the grown variants take the same feeds (``steps`` 20 -> 21, 22, 25 of 25: +5%, +10%, +25%).
    Output: the last layer's final hidden state ``[1, batch, hidden]``."""
    return _recurrent_model("GRU", 3, steps, hidden, layers, batch, input_steps, seed, linear_before_reset=1)


def residual_bn_model(
    blocks: int = 4, channels: int = 16, size: int = 16, *, seed: int = 0
) -> onnx.ModelProto:
    """``x[1, channels, size, size] -> blocks x (Conv 3x3, BatchNormalization, Relu, Conv 3x3,
    BatchNormalization, Add the block's input, Relu)``: ResNet's basic block, which ORT folds (the
    BatchNorms into their convolutions, Relu into FusedConv); cost grows with ``blocks``, every block
    the same work (20 -> 21, 22, 25: +5%, +10%, +25%)."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    h = "x"
    for i in range(blocks):
        block_input = h
        for j in range(2):
            tag = f"b{i}c{j}"
            w = (rng.standard_normal((channels, channels, 3, 3)) * (0.5 / np.sqrt(9 * channels))).astype(
                np.float32
            )
            inits.append(numpy_helper.from_array(w, f"{tag}_w"))
            for part, value in (
                ("scale", 1.0 + 0.1 * rng.standard_normal(channels)),
                ("bias", 0.1 * rng.standard_normal(channels)),
                ("mean", 0.1 * rng.standard_normal(channels)),
                ("var", 1.0 + 0.1 * np.abs(rng.standard_normal(channels))),
            ):
                inits.append(numpy_helper.from_array(np.asarray(value, np.float32), f"{tag}_{part}"))
            nodes.append(
                helper.make_node("Conv", [h, f"{tag}_w"], [f"{tag}_c"], name=f"{tag}_conv", pads=[1, 1, 1, 1])
            )
            nodes.append(
                helper.make_node(
                    "BatchNormalization",
                    [f"{tag}_c", f"{tag}_scale", f"{tag}_bias", f"{tag}_mean", f"{tag}_var"],
                    [f"{tag}_bn"],
                    name=f"{tag}_batchnorm",
                )
            )
            h = f"{tag}_bn"
            if j == 0:
                nodes.append(helper.make_node("Relu", [h], [f"{tag}_r"], name=f"{tag}_relu"))
                h = f"{tag}_r"
        nodes.append(helper.make_node("Add", [h, block_input], [f"b{i}_sum"], name=f"b{i}_add"))
        nodes.append(helper.make_node("Relu", [f"b{i}_sum"], [f"b{i}_out"], name=f"b{i}_relu"))
        h = f"b{i}_out"
    nodes.append(helper.make_node("Identity", [h], ["y"], name="out"))
    shape = [1, channels, size, size]
    graph = helper.make_graph(
        nodes,
        f"residual{blocks}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def yolo_style_model(width: int = 16, size: int = 64, *, seed: int = 0) -> onnx.ModelProto:
    """A YOLO-style detector ``images[1, 3, size, size] -> out0, out1, out2``: SiLU convolutions
    (Conv, Sigmoid, Mul), C2f blocks (Split, two convolutions, Add, Concat), SPPF (three MaxPools,
    Concat), an upsampling neck (Resize, Concat) and three heads. At ``all`` on x86 ORT turns it
    into NCHWc and writes its nodes in an order that varies from one process to the next."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    count = [0]

    def name(prefix: str) -> str:
        count[0] += 1
        return f"{prefix}{count[0]}"

    def node(op: str, inputs: list[str], **attributes: object) -> str:
        out = name(op.lower())
        nodes.append(helper.make_node(op, inputs, [out], **attributes))
        return out

    def constant(value: np.ndarray) -> str:
        tensor = name("k")
        inits.append(numpy_helper.from_array(value, tensor))
        return tensor

    def conv(x: str, cin: int, cout: int, k: int = 3, s: int = 1) -> str:
        w = constant(
            (rng.standard_normal((cout, cin, k, k)) * (0.5 / np.sqrt(k * k * cin))).astype(np.float32)
        )
        b = constant((0.1 * rng.standard_normal(cout)).astype(np.float32))
        c = node("Conv", [x, w, b], pads=[k // 2] * 4, strides=[s, s])
        return node("Mul", [c, node("Sigmoid", [c])])

    def c2f(x: str, ch: int) -> str:
        a = conv(x, ch, ch, 1)
        s1, s2 = name("s"), name("s")
        split = constant(np.array([ch // 2, ch // 2], np.int64))
        nodes.append(helper.make_node("Split", [a, split], [s1, s2], axis=1))
        r = node("Add", [s2, conv(conv(s2, ch // 2, ch // 2), ch // 2, ch // 2)])
        return conv(node("Concat", [s1, s2, r], axis=1), ch // 2 * 3, ch, 1)

    x = conv("images", 3, width, 3, 2)
    p3 = c2f(conv(x, width, width, 3, 2), width)
    p4 = c2f(conv(p3, width, width * 2, 3, 2), width * 2)
    p5 = c2f(conv(p4, width * 2, width * 2, 3, 2), width * 2)
    m1 = node("MaxPool", [p5], kernel_shape=[5, 5], pads=[2] * 4)
    m2 = node("MaxPool", [m1], kernel_shape=[5, 5], pads=[2] * 4)
    m3 = node("MaxPool", [m2], kernel_shape=[5, 5], pads=[2] * 4)
    sppf = conv(node("Concat", [p5, m1, m2, m3], axis=1), width * 8, width * 2, 1)
    scales = constant(np.array([1, 1, 2, 2], np.float32))
    h4 = c2f(node("Concat", [node("Resize", [sppf, "", scales], mode="nearest"), p4], axis=1), width * 4)
    h3 = c2f(node("Concat", [node("Resize", [h4, "", scales], mode="nearest"), p3], axis=1), width * 5)
    outs = []
    for i, (h, ch) in enumerate(((h3, width * 5), (h4, width * 4), (sppf, width * 2))):
        box = conv(conv(h, ch, width), width, 4, 1)
        cls = conv(conv(h, ch, width), width, 8, 1)
        nodes.append(helper.make_node("Concat", [box, cls], [f"out{i}"], axis=1))
        outs.append(f"out{i}")
    graph = helper.make_graph(
        nodes,
        "yolo_style",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [1, 12, None, None]) for o in outs],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model
