"""The figures of one optimized graph, and how they are read from the ONNX protobuf ORT wrote.

- ``ops``: the op-type histogram of the optimized graph, keyed ``domain:op`` (the default ONNX
  domain bare: ``Conv``, ``com.microsoft:FusedConv``, ``com.microsoft.nchwc:Conv``);
- ``fused``: the op types the optimizer created, with how many (the optimized count less the
  source model's, for op types that are fusion results: see :data:`FUSION_PARTS`);
- ``providers``: nodes per execution provider, as ORT assigned them at partitioning
  (``session.record_ep_graph_assignment_info``: before the later fusions), and ``off_provider``, how
  many of them did not land on the requested provider;
- ``copies``: the copy nodes ORT inserted between providers (``MemcpyToHost``, ``MemcpyFromHost``);
- ``digest``: a canonical sha256 of the optimized graph: doc strings, metadata, node names and
  internal value names left out, weights, attributes and the interface's names included, so a
  re-export that only renames or re-documents has the digest of the graph it had.
"""

from __future__ import annotations

import hashlib
import heapq
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_ortperf.values import safe_repr

MS, NCHWC = "com.microsoft", "com.microsoft.nchwc"
COPY_OPS = ("MemcpyToHost", "MemcpyFromHost")

# Op types ORT's graph optimizers (and its transformer optimizer) create by fusing others, with the
# op types they are made of: a lost fusion is a fused op's count dropping while its parts appear.
# A fused op in a Microsoft domain that is not listed here is made of any op type.
FUSION_PARTS: dict[str, frozenset[str]] = {
    "Gemm": frozenset({"MatMul", "Add"}),
    "LayerNormalization": frozenset({"ReduceMean", "Sub", "Pow", "Sqrt", "Div", "Mul", "Add"}),
    f"{MS}:FusedConv": frozenset(
        {"Conv", "Relu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "HardSigmoid", "Add"}
    ),
    f"{MS}:FusedGemm": frozenset({"Gemm", "Relu", "Sigmoid", "Tanh", "LeakyRelu", "MatMul", "Add"}),
    f"{MS}:FusedMatMul": frozenset({"MatMul", "Transpose", "Mul", "Div"}),
    f"{MS}:Gelu": frozenset({"Erf", "Mul", "Add", "Div"}),
    f"{MS}:FastGelu": frozenset({"Tanh", "Mul", "Add", "Pow"}),
    f"{MS}:BiasGelu": frozenset({"Add", f"{MS}:Gelu", "Erf", "Mul", "Div"}),
    f"{MS}:QuickGelu": frozenset({"Sigmoid", "Mul"}),
    f"{MS}:BiasSoftmax": frozenset({"Add", "Softmax"}),
    f"{MS}:SkipLayerNormalization": frozenset(
        {"Add", "LayerNormalization", "ReduceMean", "Sub", "Pow", "Sqrt", "Div", "Mul"}
    ),
    f"{MS}:SimplifiedLayerNormalization": frozenset({"Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul"}),
    f"{MS}:SkipSimplifiedLayerNormalization": frozenset(
        {"Add", f"{MS}:SimplifiedLayerNormalization", "Pow", "ReduceMean", "Sqrt", "Div", "Mul"}
    ),
    f"{MS}:Attention": frozenset({"MatMul", "Add", "Softmax", "Transpose", "Reshape", "Div", "Mul", "Gemm"}),
    f"{MS}:MultiHeadAttention": frozenset({"MatMul", "Add", "Softmax", "Transpose", "Reshape", "Div", "Mul"}),
    f"{MS}:EmbedLayerNormalization": frozenset({"Gather", "Add", "LayerNormalization", "ReduceSum"}),
    f"{MS}:DynamicQuantizeMatMul": frozenset({"DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul"}),
    f"{MS}:MatMulIntegerToFloat": frozenset({"MatMulInteger", "Cast", "Mul", "Add"}),
}


LAYOUT_OPS = (f"{NCHWC}:ReorderInput", f"{NCHWC}:ReorderOutput")  # NCHWc layout changes, not fusions


def is_fusion(op: str) -> bool:
    """Whether op type ``op`` (``domain:op``) is a fusion's result."""
    return op not in LAYOUT_OPS and (op in FUSION_PARTS or op.startswith((f"{MS}:", f"{NCHWC}:")))


def parts_of(op: str) -> frozenset[str] | None:
    """The op types a fused ``op`` is made of; None: any (an unlisted fused op). An NCHWc op is made of
    the op of its name in the default domain, and what it absorbed (an activation, an Add)."""
    if op in FUSION_PARTS:
        return FUSION_PARTS[op]
    if op.startswith(f"{NCHWC}:"):
        name = op.partition(":")[2]
        return frozenset({name, "Relu", "Sigmoid", "Tanh", "Clip", "Add", "Sum"})
    return None


def short(op: str) -> str:
    """An op type as messages name it: ``FusedConv``, ``nchwc:Conv``, ``Conv``."""
    domain, _, name = op.rpartition(":")
    if domain == MS:
        return name
    if domain == NCHWC:
        return f"nchwc:{name}"
    return op


def op_key(domain: str, op_type: str) -> str:
    """``domain:op``, the default domain (``""`` or ``ai.onnx``) bare."""
    return op_type if domain in ("", "ai.onnx") else f"{domain}:{op_type}"


def histogram(model: Any) -> dict[str, int]:
    """The op types of ``model``'s main graph (an ``onnx.ModelProto``), with their counts."""
    return dict(sorted(Counter(op_key(node.domain, node.op_type) for node in model.graph.node).items()))


@dataclass(frozen=True)
class GraphFigures:
    """What ORT will run for one variant (see the module docstring)."""

    ops: Mapping[str, int]
    fused: Mapping[str, int] = field(default_factory=dict)
    providers: Mapping[str, int] = field(default_factory=dict)
    off_provider: int = 0
    copies: int = 0
    digest: str = ""  # "" when ORT could not serialize the graph (a provider that compiles nodes)
    hardware_class: str = ""  # the instruction-set class it was built on (``all`` can depend on it)
    pre_pass: Mapping[str, int] = field(default_factory=dict)  # what ORT's transformer optimizer fused first
    # In memory only (not stored): node name -> op type, for the nodes a side-by-side change names.
    node_ops: Mapping[str, str] = field(default_factory=dict, compare=False)
    # Nodes not on the requested provider, each 'name (op) on provider' (a fallback names where it ran).
    off_nodes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def nodes(self) -> int:
        return sum(self.ops.values())

    def describe(self) -> str:
        """'5 nodes, fused: FusedConv 1, Gemm 1; digest 3f2a9c1b'."""
        fused = ", ".join(f"{short(op)} {n}" for op, n in sorted(self.fused.items())) or "none"
        text = f"{self.nodes} nodes, fused: {fused}"
        if self.pre_pass:
            text += "; transformer optimizer: " + ", ".join(
                f"{op} {n}" for op, n in sorted(self.pre_pass.items())
            )
        if self.off_provider:
            text += f"; {self.off_provider} off the requested provider"
        if self.copies:
            text += f"; {self.copies} copies"
        return text + (f"; digest {self.digest[:8]}" if self.digest else "; graph not serialized")

    def lines(self) -> list[str]:
        ops = ", ".join(f"{short(op)} {n}" for op, n in sorted(self.ops.items()))
        placed = ", ".join(f"{provider} {n}" for provider, n in sorted(self.providers.items()))
        return [self.describe(), f"ops: {ops}"] + ([f"nodes per provider: {placed}"] if placed else [])

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "ops": dict(sorted(self.ops.items())),
            "fused": dict(sorted(self.fused.items())),
            "providers": dict(sorted(self.providers.items())),
            "off_provider": self.off_provider,
            "copies": self.copies,
            "digest": self.digest,
        }
        if self.hardware_class:
            data["hardware_class"] = self.hardware_class
        if self.pre_pass:
            data["pre_pass"] = dict(sorted(self.pre_pass.items()))
        return data

    @classmethod
    def from_dict(cls, data: Any) -> GraphFigures:
        """Rebuild from :meth:`as_dict`; ``KeyError``/``TypeError``/``ValueError`` if damaged."""
        if not isinstance(data, Mapping):
            raise TypeError(f"graph figures must be an object, got {type(data).__name__}")
        counts = {name: _counts(data.get(name, {}), name) for name in ("fused", "providers", "pre_pass")}
        ops = _counts(data["ops"], "ops")
        digest, hardware_class = data.get("digest", ""), data.get("hardware_class", "")
        if not isinstance(digest, str) or not isinstance(hardware_class, str):
            raise TypeError("graph digest and hardware_class must be strings")
        return cls(
            ops=ops,
            fused=counts["fused"],
            providers=counts["providers"],
            off_provider=_count(data.get("off_provider", 0), "off_provider"),
            copies=_count(data.get("copies", 0), "copies"),
            digest=digest,
            hardware_class=hardware_class,
            pre_pass=counts["pre_pass"],
        )


def _count(value: Any, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"graph {name} must be a count (an integer >= 0), got {safe_repr(value)}")
    return value


def _counts(value: Any, name: str) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise TypeError(f"graph {name} must be an object of counts, got {type(value).__name__}")
    return {str(key): _count(count, f"{name}[{safe_repr(key)}]") for key, count in value.items()}


def hardware_class(hardware: Mapping[str, Any] | None) -> str:
    """The class of hardware whose optimizer builds the same graph: the architecture and the
    instruction-set features ORT dispatches on (``x86_64:avx,avx2,fma``). NCHWc blocks by 8 on AVX2
    and 16 with AVX-512F, so a graph at ``all`` can differ between classes."""
    if not hardware:
        return ""
    features = hardware.get("features") or ()
    return f"{hardware.get('arch', '')}:{','.join(sorted(str(f) for f in features))}"


def summarize(
    optimized: Any | None,
    source: Any,
    *,
    placement: Iterable[tuple[str, str, str]] = (),
    requested: str = "",
    hardware: Mapping[str, Any] | None = None,
    weights_sha256: str = "",
    pre_pass: Mapping[str, int] | None = None,
) -> GraphFigures:
    """The figures of ``optimized`` (the ``onnx.ModelProto`` ORT wrote; None when it could not write
    one), against ``source`` (the model as given), with ``placement`` (node name, op key, provider)
    as ORT assigned it and ``requested`` the provider the variant asked for; ``weights_sha256``: the
    digest of the weights ORT wrote to a file of their own, which the graph refers to; ``pre_pass``:
    what ORT's transformer optimizer fused before the session (``get_fused_operator_statistics()``)."""
    before = histogram(source)
    placed = list(placement)
    if optimized is not None:
        ops = histogram(optimized)
        node_ops = {node.name: op_key(node.domain, node.op_type) for node in optimized.graph.node}
        digest = canonical_digest(optimized, weights_sha256=weights_sha256)
    else:  # the graph cannot be read back: the nodes as placed stand for it
        ops = dict(sorted(Counter(op for _, op, _ in placed).items()))
        node_ops = {name: op for name, op, _ in placed}
        digest = ""
    fused = {op: n - before.get(op, 0) for op, n in ops.items() if is_fusion(op) and n > before.get(op, 0)}
    off = tuple(
        sorted(
            f"{name or '<unnamed>'} ({short(op)}) on {provider}"
            for name, op, provider in placed
            if requested and provider != requested
        )
    )
    return GraphFigures(
        ops=ops,
        fused=fused,
        providers=dict(sorted(Counter(provider for _, _, provider in placed).items())),
        off_provider=len(off),
        copies=sum(n for op, n in ops.items() if op in COPY_OPS),
        digest=digest,
        hardware_class=hardware_class(hardware),
        node_ops=node_ops,
        off_nodes=off,
        pre_pass=dict(sorted((pre_pass or {}).items())),
    )


def canonical_digest(model: Any, *, weights_sha256: str = "") -> str:
    """sha256 of ``model`` (an ``onnx.ModelProto``) with doc strings, metadata, producer, node names,
    value infos and the main graph's internal value names left out: internal values are named by
    the position of what makes them (``v0``, ``v1``... initializers and node outputs in order), the
    graph's inputs and outputs keep theirs (they are the interface). Weights and attributes count:
    those stored in ``model`` and, by their digest (``weights_sha256``), those in a file beside it."""
    copy = type(model)()
    copy.CopyFrom(model)
    for name in ("doc_string", "producer_name", "producer_version", "domain", "model_version"):
        copy.ClearField(name)
    del copy.metadata_props[:]
    opsets = sorted((o.domain, o.version) for o in copy.opset_import)
    del copy.opset_import[:]
    for domain, version in opsets:
        copy.opset_import.add(domain=domain, version=version)
    graph = copy.graph
    graph.ClearField("name")
    _strip(graph)
    ordered_nodes = structural_order(graph)
    del graph.node[:]
    graph.node.extend(ordered_nodes)
    kept = {v.name for v in graph.input} | {v.name for v in graph.output} | {""}
    names: dict[str, str] = {}

    def renamed(name: str) -> str:
        if name in kept:
            return name
        return names.setdefault(name, f"v{len(names)}")

    initializers = {t.name: t for t in graph.initializer}
    for node in graph.node:  # initializers named by first use, outputs by the node that makes them
        for name in node.input:
            if name in initializers:
                renamed(name)
        for name in node.output:
            renamed(name)
    for tensor in graph.initializer:
        tensor.name = renamed(tensor.name)
        tensor.ClearField("doc_string")
    ordered = sorted(graph.initializer, key=lambda t: t.name)
    del graph.initializer[:]
    graph.initializer.extend(ordered)
    for node in graph.node:
        node.input[:] = [
            renamed(name) if name in names or name in initializers else name for name in node.input
        ]
        node.output[:] = [renamed(name) for name in node.output]
    digest = hashlib.sha256(copy.SerializeToString(deterministic=True))
    digest.update(weights_sha256.encode())
    return digest.hexdigest()


def structural_order(graph: Any) -> list[Any]:
    """The nodes of ``graph`` (stripped of names: :func:`_strip`) in an order that depends on the
    graph's structure alone: topological, ties broken by each node's structural signature (its
    operator, attributes and, recursively, what feeds it: graph inputs by name, initializers by
    content). ONNX Runtime writes the nodes of one optimized graph in an order that varies from one
    session to the next (a YOLO-style detector at ``all`` gave 5 orders in 10 processes), and a
    digest of the written order moved by itself. A graph whose nodes are not written in a
    topological order (ONNX requires one) keeps its order."""
    initializers = {t.name: t for t in graph.initializer}
    made: dict[str, bytes] = {}  # a node output -> its signature
    signatures: list[bytes] = []

    def value(name: str) -> bytes:
        if not name:
            return b"-"
        if name in made:
            return made[name]
        tensor = initializers.get(name)
        if tensor is not None:
            content = type(tensor)()
            content.CopyFrom(tensor)
            content.ClearField("name")
            return b"i" + hashlib.sha256(content.SerializeToString(deterministic=True)).digest()
        return b"g" + name.encode()  # a graph input, or a name from an outer scope

    produced = {name for node in graph.node for name in node.output if name}
    for node in graph.node:
        if any(name in produced and name not in made for name in node.input):
            return list(graph.node)  # not in a topological order
        attributes = sorted(a.SerializeToString(deterministic=True) for a in node.attribute)
        parts = [node.domain.encode(), node.op_type.encode(), *attributes, *(value(i) for i in node.input)]
        mine = hashlib.sha256(b"\x00".join(parts)).digest()
        signatures.append(mine)
        for index, name in enumerate(node.output):
            if name:
                made[name] = hashlib.sha256(mine + str(index).encode()).digest()
    consumers: dict[str, list[int]] = {}
    waiting = [0] * len(graph.node)
    for position, node in enumerate(graph.node):
        for name in node.input:
            if name in produced:
                consumers.setdefault(name, []).append(position)
                waiting[position] += 1
    ready = [(signatures[p], p) for p in range(len(graph.node)) if not waiting[p]]
    heapq.heapify(ready)
    ordered: list[Any] = []
    while ready:
        _, position = heapq.heappop(ready)
        node = graph.node[position]
        ordered.append(node)
        for name in node.output:
            for consumer in consumers.get(name, ()):
                waiting[consumer] -= 1
                if not waiting[consumer]:
                    heapq.heappush(ready, (signatures[consumer], consumer))
    return ordered


def _strip(graph: Any) -> None:
    """Doc strings, node names and value infos out of ``graph`` and its subgraphs."""
    graph.ClearField("doc_string")
    del graph.value_info[:]
    for node in graph.node:
        node.ClearField("name")
        node.ClearField("doc_string")
        for attribute in node.attribute:
            attribute.ClearField("doc_string")
            if attribute.HasField("g"):
                _strip(attribute.g)
            for subgraph in attribute.graphs:
                _strip(subgraph)
