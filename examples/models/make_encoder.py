"""Generate ``encoder.onnx``: a small BERT-style transformer encoder.

This is an example model for the pytest-ortperf suite. It is small enough to
commit (~0.6 MB) and fast to run on CPU, yet it exercises the parts of
ONNX Runtime that perf/accuracy regression tests care about:

* **int64 token ids and a padding mask** as inputs (``input_ids`` and
  ``attention_mask``, both ``int64[batch, sequence]``), like exported
  Hugging Face encoders.
* **Dynamic axes**: ``batch`` and ``sequence`` are symbolic. The learned
  positional table is sliced to the runtime sequence length
  (``Shape -> Gather -> Slice``) and the head split uses
  ``Reshape(x, [0, 0, 4, 16])``, where ``0`` copies the input dimension.
  A ``value_info`` entry declares the sliced table as ``[sequence, 64]``
  (ONNX cannot infer a data-dependent Slice), so every intermediate shape
  is known symbolically; ``validate()`` enforces this.
* **Real multi-head attention** (4 heads, head_dim 16): separate Q/K/V
  projections, ``MatMul(Q, K^T) / sqrt(16)``, an additive mask
  ``(1 - mask) * -10000`` broadcast as ``[batch, 1, 1, sequence]``,
  ``Softmax`` on the last axis and ``MatMul`` with V.
* **Fusion targets**: opset 17 ``LayerNormalization``, bias ``Add`` after
  every ``MatMul``, residual ``Add`` feeding ``LayerNormalization`` (skip
  layer norm) and GELU written as its erf pattern
  ``x * 0.5 * (1 + Erf(x / sqrt(2)))``. The layout follows the post-norm BERT
  graphs that ORT's graph optimizer recognises, so the optimization levels
  produce genuinely different graphs to compare.

Architecture (post-norm, d_model 64, 2 layers, FFN 256, vocab 512)::

    h = LayerNorm(TokenEmb[input_ids] + PosEmb[:sequence])
    for each layer:
        h = LayerNorm(h + OutProj(Attention(h, mask)))
        h = LayerNorm(h + FFN2(GELU(FFN1(h))))
    last_hidden_state = h                      # final LayerNorm = last layer's
    pooled = ReduceMean(h, axis=sequence)

Weights come from ``numpy.random.default_rng(SEED)`` drawn in a fixed order, so
running the script twice yields byte-identical files::

    python examples/models/make_encoder.py [--out PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240617
VOCAB_SIZE = 512
MAX_POSITIONS = 256
D_MODEL = 64
NUM_HEADS = 4
HEAD_DIM = D_MODEL // NUM_HEADS
FFN_DIM = 256
NUM_LAYERS = 2
LN_EPSILON = 1e-5
MASK_FILL = -10000.0

OPSET = 17
IR_VERSION = 8  # the IR version that introduced opset 17
PRODUCER = "pytest-ortperf/make_encoder"
DEFAULT_OUT = Path(__file__).resolve().with_name("encoder.onnx")


class GraphBuilder:
    """Collects nodes and initializers, enforcing unique readable names."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.value_info: list[onnx.ValueInfoProto] = []
        self._node_names: set[str] = set()
        self._tensor_names: set[str] = set()

    def _claim_tensor(self, name: str) -> str:
        if name in self._tensor_names:
            raise ValueError(f"duplicate tensor name: {name}")
        self._tensor_names.add(name)
        return name

    def initializer(self, name: str, value: np.ndarray) -> str:
        """Add ``value`` as an initializer and return its name."""
        self.initializers.append(numpy_helper.from_array(value, self._claim_tensor(name)))
        return name

    def scalar(self, name: str, value: float) -> str:
        """A float32 scalar constant (0-d), as ORT's fusions expect."""
        return self.initializer(name, np.array(value, dtype=np.float32))

    def ints(self, name: str, values: Sequence[int]) -> str:
        """An int64 1-D constant (shapes, axes, indices)."""
        return self.initializer(name, np.array(values, dtype=np.int64))

    def normal(self, name: str, shape: Sequence[int], scale: float, mean: float = 0.0) -> str:
        """A float32 parameter drawn from N(mean, scale^2)."""
        value = mean + scale * self.rng.standard_normal(tuple(shape))
        return self.initializer(name, value.astype(np.float32))

    def annotate(self, tensor: str, shape: Sequence[int | str]) -> None:
        """Declare a float tensor's shape where ONNX inference cannot derive it."""
        self.value_info.append(helper.make_tensor_value_info(tensor, TensorProto.FLOAT, shape))

    def node(
        self,
        op_type: str,
        inputs: Sequence[str],
        name: str,
        output: str | None = None,
        **attrs: Any,
    ) -> str:
        """Add a single-output node; its output defaults to ``<name>:0``."""
        if name in self._node_names:
            raise ValueError(f"duplicate node name: {name}")
        self._node_names.add(name)
        output = self._claim_tensor(output or f"{name}:0")
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], name=name, **attrs))
        return output


def add_shared_constants(b: GraphBuilder) -> None:
    """Constants referenced by name from several places in the graph."""
    b.scalar("const/one", 1.0)
    b.scalar("const/half", 0.5)
    b.scalar("const/sqrt2", math.sqrt(2.0))
    b.scalar("const/sqrt_head_dim", math.sqrt(HEAD_DIM))
    b.scalar("const/mask_fill", MASK_FILL)
    b.ints("const/axes_0", [0])
    b.ints("const/axes_1", [1])
    b.ints("const/axes_2", [2])
    b.ints("const/split_heads", [0, 0, NUM_HEADS, HEAD_DIM])
    b.ints("const/merge_heads", [0, 0, D_MODEL])


def linear(b: GraphBuilder, x: str, prefix: str, fan_in: int, fan_out: int) -> str:
    """``x @ W + bias`` as MatMul + Add (kept separate so ORT can fuse them)."""
    weight = b.normal(f"{prefix}.weight", (fan_in, fan_out), scale=0.8 / math.sqrt(fan_in))
    bias = b.normal(f"{prefix}.bias", (fan_out,), scale=0.02)
    y = b.node("MatMul", [x, weight], f"{prefix}/MatMul")
    return b.node("Add", [y, bias], f"{prefix}/Add")


def layer_norm(b: GraphBuilder, x: str, prefix: str) -> str:
    """Opset-17 LayerNormalization over the hidden axis with learned affine."""
    gamma = b.normal(f"{prefix}.weight", (D_MODEL,), scale=0.05, mean=1.0)
    beta = b.normal(f"{prefix}.bias", (D_MODEL,), scale=0.02)
    return b.node("LayerNormalization", [x, gamma, beta], prefix, axis=-1, epsilon=LN_EPSILON)


def embeddings(b: GraphBuilder) -> str:
    """Token lookup plus learned positions sliced to the dynamic sequence length."""
    tokens = b.normal("embeddings/token.weight", (VOCAB_SIZE, D_MODEL), scale=0.1)
    positions = b.normal("embeddings/position.weight", (MAX_POSITIONS, D_MODEL), scale=0.1)
    token_emb = b.node("Gather", [tokens, "input_ids"], "embeddings/token_lookup", axis=0)
    ids_shape = b.node("Shape", ["input_ids"], "embeddings/ids_shape")
    seq_len = b.node("Gather", [ids_shape, "const/axes_1"], "embeddings/seq_len", axis=0)
    zero = b.ints("embeddings/pos_start", [0])
    pos_emb = b.node(
        "Slice", [positions, zero, seq_len, "const/axes_0"], "embeddings/position_slice"
    )
    # A data-dependent Slice infers as [?, ?]; without this hint the symbolic `sequence`
    # dim would be lost downstream, and ORT's shape-checking fusions (e.g.
    # SkipLayerNormalization) would not match. Valid for sequence <= MAX_POSITIONS.
    b.annotate(pos_emb, ["sequence", D_MODEL])
    summed = b.node("Add", [token_emb, pos_emb], "embeddings/add_positions")
    return layer_norm(b, summed, "embeddings/layer_norm")


def additive_mask(b: GraphBuilder) -> str:
    """``(1 - mask) * -10000`` as float, shaped [batch, 1, 1, sequence]; shared by all layers."""
    m = b.node("Unsqueeze", ["attention_mask", "const/axes_1"], "mask/unsqueeze_heads")
    m = b.node("Unsqueeze", [m, "const/axes_2"], "mask/unsqueeze_query")
    m = b.node("Cast", [m], "mask/to_float", to=TensorProto.FLOAT)
    m = b.node("Sub", ["const/one", m], "mask/invert")
    return b.node("Mul", [m, "const/mask_fill"], "mask/scale")


def split_heads(b: GraphBuilder, x: str, prefix: str, perm: Sequence[int]) -> str:
    """[batch, seq, 64] -> [batch, seq, 4, 16] -> transposed by ``perm``."""
    x = b.node("Reshape", [x, "const/split_heads"], f"{prefix}/split_heads")
    return b.node("Transpose", [x], f"{prefix}/transpose", perm=list(perm))


def self_attention(b: GraphBuilder, x: str, mask: str, prefix: str) -> str:
    """Multi-head scaled dot-product self-attention with output projection."""
    q = linear(b, x, f"{prefix}/q_proj", D_MODEL, D_MODEL)
    k = linear(b, x, f"{prefix}/k_proj", D_MODEL, D_MODEL)
    v = linear(b, x, f"{prefix}/v_proj", D_MODEL, D_MODEL)
    q = split_heads(b, q, f"{prefix}/q", perm=(0, 2, 1, 3))  # [B, H, S, D]
    k = split_heads(b, k, f"{prefix}/k", perm=(0, 2, 3, 1))  # [B, H, D, S] = K^T
    v = split_heads(b, v, f"{prefix}/v", perm=(0, 2, 1, 3))  # [B, H, S, D]
    scores = b.node("MatMul", [q, k], f"{prefix}/scores")
    scores = b.node("Div", [scores, "const/sqrt_head_dim"], f"{prefix}/scale")
    scores = b.node("Add", [scores, mask], f"{prefix}/apply_mask")
    # axis=3 is the last (key) axis; spelled 3, not -1, as ORT's attention matcher expects.
    probs = b.node("Softmax", [scores], f"{prefix}/softmax", axis=3)
    context = b.node("MatMul", [probs, v], f"{prefix}/context")
    context = b.node("Transpose", [context], f"{prefix}/merge_transpose", perm=[0, 2, 1, 3])
    context = b.node("Reshape", [context, "const/merge_heads"], f"{prefix}/merge_heads")
    return linear(b, context, f"{prefix}/out_proj", D_MODEL, D_MODEL)


def gelu_erf(b: GraphBuilder, x: str, prefix: str) -> str:
    """Exact GELU spelled out as ``x * 0.5 * (1 + Erf(x / sqrt(2)))``."""
    scaled = b.node("Div", [x, "const/sqrt2"], f"{prefix}/div_sqrt2")
    erf = b.node("Erf", [scaled], f"{prefix}/erf")
    one_plus = b.node("Add", [erf, "const/one"], f"{prefix}/add_one")
    half_x = b.node("Mul", [x, "const/half"], f"{prefix}/mul_half")
    return b.node("Mul", [half_x, one_plus], f"{prefix}/mul")


def encoder_layer(b: GraphBuilder, x: str, mask: str, prefix: str) -> str:
    """One post-norm block: attention and FFN, each with residual + LayerNorm."""
    attn = self_attention(b, x, mask, f"{prefix}/attn")
    x = b.node("Add", [x, attn], f"{prefix}/attn_residual")
    x = layer_norm(b, x, f"{prefix}/attn_layer_norm")
    hidden = linear(b, x, f"{prefix}/ffn/up_proj", D_MODEL, FFN_DIM)
    hidden = gelu_erf(b, hidden, f"{prefix}/ffn/gelu")
    ffn = linear(b, hidden, f"{prefix}/ffn/down_proj", FFN_DIM, D_MODEL)
    x = b.node("Add", [x, ffn], f"{prefix}/ffn_residual")
    return layer_norm(b, x, f"{prefix}/ffn_layer_norm")


def graph_io() -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Graph inputs and outputs with symbolic ``batch``/``sequence`` dims."""
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in ("input_ids", "attention_mask")
    ]
    outputs = [
        helper.make_tensor_value_info(
            "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", D_MODEL]
        ),
        helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", D_MODEL]),
    ]
    return inputs, outputs


def build_model(seed: int = SEED) -> onnx.ModelProto:
    """Build the encoder; weights depend only on ``seed``."""
    b = GraphBuilder(seed)
    add_shared_constants(b)
    mask = additive_mask(b)
    h = embeddings(b)
    for i in range(NUM_LAYERS):
        h = encoder_layer(b, h, mask, f"layer{i}")
    b.node("Identity", [h], "output/last_hidden_state", output="last_hidden_state")
    b.node("ReduceMean", [h], "output/pooled", output="pooled", axes=[1], keepdims=0)
    inputs, outputs = graph_io()
    graph = helper.make_graph(
        b.nodes,
        "encoder",
        inputs,
        outputs,
        initializer=b.initializers,
        value_info=b.value_info,
        doc_string=f"{NUM_LAYERS}-layer post-norm encoder, d_model={D_MODEL}, seed={seed}",
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name=PRODUCER,
        producer_version="1",
        doc_string="Example encoder for pytest-ortperf; see examples/models/make_encoder.py",
    )
    return model


def validate(model: onnx.ModelProto) -> None:
    """Full ONNX check plus strict shape inference.

    Every intermediate tensor must end up with a fully known shape (only the
    ``batch``/``sequence`` symbols, no anonymous dims), and the tensor feeding
    the outputs must be ``[batch, sequence, D_MODEL]``.
    """
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    shapes = {
        value.name: [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]
        for value in inferred.graph.value_info
    }
    for name, dims in shapes.items():
        if any(dim not in ("batch", "sequence") and not isinstance(dim, int) for dim in dims):
            raise ValueError(f"{name}: shape {dims} has dims that are not batch/sequence")
    final = next(n for n in inferred.graph.node if n.output[0] == "last_hidden_state").input[0]
    if shapes[final] != ["batch", "sequence", D_MODEL]:
        raise ValueError(f"{final}: inferred shape {shapes[final]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output .onnx path")
    parser.add_argument("--seed", type=int, default=SEED, help="weight RNG seed")
    args = parser.parse_args(argv)

    model = build_model(args.seed)
    validate(model)
    data = model.SerializeToString()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    print(f"wrote {args.out} ({len(data)} bytes, {len(model.graph.node)} nodes, sha256 {digest})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
