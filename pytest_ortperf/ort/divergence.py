"""Where two models part: the first tensor, in graph order, on which they diverge beyond tolerance.

An output that fails says that a model computes something else, not where it starts to. Both models
(the one under test and the reference rebuilt for the comparison) are run on the same feeds with
their intermediate tensors made graph outputs, and the tensors are compared in the node order of
the model under test; the first node whose output diverges is where the cause is.

- **What is marked.** Every output of every node of the main graph (not of subgraphs), unless ONNX
  shape inference knows it is not a tensor (a sequence, a map, an optional: counted in the result,
  not compared). An output whose type inference does not know (a contrib op's) is declared by name
  alone and typed by ONNX Runtime. Both sessions run on the CPU without graph optimizations, so
  every tensor of the file exists and none is fused away.
- **How tensors are paired.** By name first. A tensor whose name the other graph does not produce
  is paired by position: the output in the same slot of the k-th node of the same op type, in node
  order, on each side, provided that tensor's name is not produced by the model under test (it then
  has its own pair by name). Pairs whose element types, or, once run, shapes or dtypes, differ are
  skipped and counted: a changed shape is a change of structure, not the numeric divergence looked
  for here.
- **What diverges.** The caller's ``diverges(name, actual, expected)`` judges each pair: "" within
  tolerance, else the error text. The accuracy check builds it from the output's tolerance, so a
  tensor diverges exactly when an output would fail.
- **What it costs.** The marked tensors' bytes are estimated from the inferred shapes (dimensions
  named by the graph inputs take the feeds' sizes; other unknown dimensions count as the largest
  dimension of any feed, a tensor of unknown shape or type as the largest feed). When both sides together
  stay within ``max_bytes``, one run of each model marks every tensor. Otherwise the pairs are cut,
  in order, into chunks of at most ``max_bytes``; each chunk is one run of each model with only its
  tensors as outputs (and the nodes after its last tensor dropped when the graph is topologically
  sorted), and the search stops at the first chunk that holds a divergence. That bounds the marked
  tensors' memory by ``max_bytes`` (a single tensor larger than it is marked alone), at the price
  of one session build and run of each model per chunk. It is a linear scan, not a bisection: a
  divergence need not persist to the outputs (a Relu or an argmax can hide it), so only a scan in
  order finds the first one.

External data is read where it lies: the model's proto is loaded without it, and ONNX Runtime is
told its folder (``session.model_external_initializers_file_folder_path``), so nothing is copied
or written to disk.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_ortperf.errors import ModelError, SessionBuildError
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.runtime import import_onnxruntime

Array = npt.NDArray[Any]
Diverges = Callable[[str, Array, Array], str]
"""``diverges(name, actual, expected)``: "" within tolerance, else the error there, as text."""

CPU_ONLY = ("CPUExecutionProvider",)
DEFAULT_MAX_BYTES = 512 << 20
EXTERNAL_DATA_FOLDER = "session.model_external_initializers_file_folder_path"
_REASON_CHARS = 300
_LISTED = 5  # skipped tensors named in a reason, at most


@dataclass(frozen=True)
class Divergence:
    """The first tensor of the model under test, in its node order, that diverges from its
    counterpart in the reference."""

    tensor: str  # its name in the model under test
    reference_tensor: str  # its counterpart's name (the same when matched by name)
    node: str  # the node that produces it: its name, or "#<index>" when unnamed
    op_type: str
    error: str  # the error there, as ``diverges`` describes it
    matched_by: str  # "name" or "position"
    compared: int  # tensor pairs compared, all within tolerance, before this one

    def describe(self) -> str:
        paired = "" if self.matched_by == "name" else f", paired by position with '{self.reference_tensor}'"
        agreed = f"{self.compared} tensor{'' if self.compared == 1 else 's'} before it agree"
        return (
            f"first diverging tensor '{self.tensor}' ({self.op_type} node '{self.node}'{paired}): "
            f"{self.error}; {agreed}"
        )


@dataclass(frozen=True)
class Localisation:
    """Where two models diverge first, or why that could not be said; and what it took."""

    divergence: Divergence | None
    reason: str  # when ``divergence`` is None: why it could not be located; else ""
    compared: int = 0  # tensor pairs compared in all (the diverging one included)
    skipped: int = 0  # pairs not compared: element types, shapes or dtypes differ, or not tensors
    unpaired: int = 0  # tensors of the model under test with no counterpart in the reference
    not_tensors: int = 0  # node outputs of the model under test left out: sequences, maps, optionals
    runs: int = 0  # runs of each model: 1 when every tensor was marked at once, else the chunks run
    chunked: bool = False  # whether the tensors were marked a chunk at a time to stay under max_bytes
    marked_bytes: int = 0  # the estimated bytes of the tensors marked in the largest run, both sides
    seconds: float = 0.0  # the time it took, loading, inferring, building and running included

    def describe(self) -> str:
        """One line for a failure message: the divergence or why there is none, and the cost."""
        how = f"{self.runs} run{'' if self.runs == 1 else 's'} of each model"
        if self.chunked:
            how += f", the tensors marked a chunk at a time (at most {_mib(self.marked_bytes)} a run)"
        cost = f"({how}, {self.seconds:.2f} s)"
        if self.divergence is None:
            return f"the first diverging tensor cannot be located: {self.reason} {cost}"
        return f"{self.divergence.describe()} {cost}"


@dataclass(frozen=True)
class _Tensor:
    """One output of one node of a main graph."""

    name: str
    index: int  # the node's index in node order
    rank: int  # k: how many nodes of its op type come before its node
    slot: int  # which of its outputs
    node: str
    op_type: str
    elem_type: int  # ONNX TensorProto element type; 0 when not known
    nbytes: int  # estimated


@dataclass(frozen=True)
class _Pair:
    current: _Tensor
    reference: _Tensor
    matched_by: str

    @property
    def nbytes(self) -> int:
        return self.current.nbytes + self.reference.nbytes


class _Side:
    """One model: its proto (external data not loaded), its tensors, and how to run it with some of
    them marked as outputs."""

    def __init__(self, source: ModelSource, feeds: Mapping[str, Array], providers: Sequence[str]) -> None:
        self.source = source
        self.providers = list(providers)
        # The model runs as it was written; shape inference only tells the tensors' types and sizes
        # (a shape it got wrong must not stop a model that ORT runs).
        self.proto = _load(source)
        graph = self.proto.graph
        initializers = {init.name for init in graph.initializer}
        inputs = [value for value in graph.input if value.name not in initializers]
        missing = [value.name for value in inputs if value.name not in feeds]
        if missing:
            raise ModelError(
                f"'{source.label}': needs input{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(name) for name in missing)}, which the feeds do not hold "
                f"(they hold {', '.join(repr(name) for name in feeds) or 'nothing'})"
            )
        self.feeds = {value.name: feeds[value.name] for value in inputs}
        self.tensors, self.not_tensors = _node_tensors(
            self.proto, _typed_values(_infer(self.proto)), _dims(inputs, self.feeds)
        )
        self.names = {name for node in graph.node for name in node.output if name}
        self.sorted = _topologically_sorted(self.proto)

    def run(self, tensors: Sequence[_Tensor], *, truncate: bool) -> dict[str, Array | None]:
        """The values of ``tensors`` on the feeds, from one session whose graph outputs are exactly
        them (``truncate``: without the nodes after the last of them)."""
        import onnx

        ort = import_onnxruntime()
        graph = self.proto.graph
        outputs = [onnx.ValueInfoProto() for _ in graph.output]
        for saved, output in zip(outputs, graph.output, strict=True):
            saved.CopyFrom(output)
        end = max(tensor.index for tensor in tensors) + 1
        tail: list[Any] = []
        if truncate and self.sorted and end < len(graph.node):
            tail = [onnx.NodeProto() for _ in range(end, len(graph.node))]
            for saved_node, node in zip(tail, graph.node[end:], strict=True):
                saved_node.CopyFrom(node)
        try:
            if tail:
                del graph.node[end:]
            del graph.output[:]
            # Declared by element type alone: ORT infers the shapes itself, and an inferred shape that
            # a run does not match would only add warnings.
            # A tensor of a type shape inference does not know (a contrib op's output) is declared by
            # name alone: ORT types it.
            graph.output.extend(
                onnx.helper.make_tensor_value_info(tensor.name, tensor.elem_type, None)
                if tensor.elem_type
                else onnx.ValueInfoProto(name=tensor.name)
                for tensor in tensors
            )
            data = self.proto.SerializeToString()
        finally:
            del graph.output[:]
            graph.output.extend(outputs)
            graph.node.extend(tail)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.log_severity_level = 3  # errors only: initializers the dropped nodes used are no news
        # Without the arena and its planned blocks each tensor is freed when its last reader is done:
        # a chunked search peaked at 110 MiB instead of 162 for 64 MiB of tensors a run, no slower.
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        if self.source.path is not None:  # its external data, if any, lies beside it
            options.add_session_config_entry(EXTERNAL_DATA_FOLDER, str(self.source.path.parent.absolute()))
        try:
            session = ort.InferenceSession(data, options, providers=self.providers)
        except Exception as exc:  # ORT raises Fail, InvalidGraph, RuntimeError, ...
            raise SessionBuildError(
                f"'{self.source.label}': ONNX Runtime could not build a session with its intermediate "
                f"tensors marked as outputs, so the first diverging tensor cannot be located: "
                f"{_first_line(exc)}"
            ) from None
        names = [tensor.name for tensor in tensors]
        try:
            values = session.run(names, self.feeds)
        except Exception as exc:
            raise ModelError(
                f"'{self.source.label}': ONNX Runtime could not run it with its intermediate tensors "
                f"marked as outputs, so the first diverging tensor cannot be located: {_first_line(exc)}"
            ) from None
        # A tensor of unknown type may turn out to be a sequence or a map: not compared.
        return {
            name: value if isinstance(value, np.ndarray) else None
            for name, value in zip(names, values, strict=True)
        }


def first_divergence(
    current: ModelSource,
    reference: ModelSource,
    feeds: Mapping[str, Array],
    *,
    diverges: Diverges,
    max_bytes: int = DEFAULT_MAX_BYTES,
    providers: Sequence[str] = CPU_ONLY,
) -> Localisation:
    """The first tensor of ``current``, in its node order, that diverges from its counterpart in
    ``reference`` on ``feeds``, as ``diverges`` judges (see the module's docstring for the pairing
    and the cost). A ModelError or SessionBuildError names the model that cannot be read, built or
    run; a result without a divergence says why."""
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    started = time.perf_counter()
    current_side = _Side(current, feeds, providers)
    reference_side = _Side(reference, feeds, providers)
    pairs, unpaired, mistyped = _pairs(current_side, reference_side)
    if not pairs:
        return Localisation(
            divergence=None,
            reason=(
                f"the graphs share no tensor to compare: none of the {len(current_side.tensors)} "
                f"tensors of '{current.label}' has a counterpart by name or by position in "
                f"'{reference.label}'"
                + (f" with the same element type ({len(mistyped)} differ)" if mistyped else "")
            ),
            skipped=len(mistyped),
            unpaired=unpaired,
            not_tensors=current_side.not_tensors,
            seconds=time.perf_counter() - started,
        )
    chunks = _chunks(pairs, max_bytes)
    chunked = len(chunks) > 1
    compared, skipped, runs = 0, list(mistyped), 0
    for chunk in chunks:
        runs += 1
        actual = current_side.run([pair.current for pair in chunk], truncate=chunked)
        expected = reference_side.run([pair.reference for pair in chunk], truncate=chunked)
        for pair in chunk:
            left, right = actual[pair.current.name], expected[pair.reference.name]
            if left is None or right is None or left.shape != right.shape or left.dtype != right.dtype:
                skipped.append(pair.current.name)
                continue
            error = diverges(pair.current.name, left, right)
            if error:
                divergence = Divergence(
                    tensor=pair.current.name,
                    reference_tensor=pair.reference.name,
                    node=pair.current.node,
                    op_type=pair.current.op_type,
                    error=error,
                    matched_by=pair.matched_by,
                    compared=compared,
                )
                return Localisation(
                    divergence=divergence,
                    reason="",
                    compared=compared + 1,
                    skipped=len(skipped),
                    unpaired=unpaired,
                    not_tensors=current_side.not_tensors,
                    runs=runs,
                    chunked=chunked,
                    marked_bytes=max(sum(p.nbytes for p in c) for c in chunks[:runs]),
                    seconds=time.perf_counter() - started,
                )
            compared += 1
        del actual, expected  # the next chunk's values replace these, not join them
    return Localisation(
        divergence=None,
        reason=_no_divergence(compared, skipped, unpaired, current_side.not_tensors),
        compared=compared,
        skipped=len(skipped),
        unpaired=unpaired,
        not_tensors=current_side.not_tensors,
        runs=runs,
        chunked=chunked,
        marked_bytes=max(sum(p.nbytes for p in c) for c in chunks),
        seconds=time.perf_counter() - started,
    )


def _no_divergence(compared: int, skipped: Sequence[str], unpaired: int, not_tensors: int) -> str:
    """Why no tensor was named: every pair within tolerance, and what was not compared."""
    text = f"no tensor diverges beyond the tolerance ({compared} compared in graph order"
    if skipped:
        named = ", ".join(repr(name) for name in skipped[:_LISTED])
        more = f" and {len(skipped) - _LISTED} more" if len(skipped) > _LISTED else ""
        text += f"; {len(skipped)} skipped, their types or shapes differ: {named}{more}"
    if unpaired:
        text += f"; {unpaired} without a counterpart in the reference"
    if not_tensors:
        text += f"; {not_tensors} not compared, not tensors (sequences, maps, optionals)"
    return text + ")"


def _pairs(current: _Side, reference: _Side) -> tuple[list[_Pair], int, list[str]]:
    """Each typed tensor of ``current`` with its counterpart, in ``current``'s order: by name, else,
    when the reference produces no tensor of that name, by position (the same output slot of the
    k-th node of the same op type, if the reference's tensor there has a name that ``current`` does
    not produce); the number without one; the names of those whose counterpart has another element
    type."""
    by_name = {tensor.name: tensor for tensor in reference.tensors}
    by_position: dict[tuple[str, int, int], _Tensor] = {}
    for tensor in reference.tensors:
        if tensor.name not in current.names:
            by_position[(tensor.op_type, tensor.rank, tensor.slot)] = tensor
    pairs, unpaired, mistyped = [], 0, []
    for tensor in current.tensors:
        if tensor.name in by_name:
            other, matched_by = by_name[tensor.name], "name"
        elif tensor.name in reference.names:  # there, but not a tensor: not comparable
            unpaired += 1
            continue
        else:
            found = by_position.get((tensor.op_type, tensor.rank, tensor.slot))
            if found is None:
                unpaired += 1
                continue
            other, matched_by = found, "position"
        if tensor.elem_type and other.elem_type and tensor.elem_type != other.elem_type:
            mistyped.append(tensor.name)
            continue
        pairs.append(_Pair(tensor, other, matched_by))
    return pairs, unpaired, mistyped


def _chunks(pairs: Sequence[_Pair], max_bytes: int) -> list[list[_Pair]]:
    """The pairs in order, cut into runs of at most ``max_bytes`` (a larger pair alone): one chunk
    when they all fit."""
    chunks: list[list[_Pair]] = [[]]
    size = 0
    for pair in pairs:
        if chunks[-1] and size + pair.nbytes > max_bytes:
            chunks.append([])
            size = 0
        chunks[-1].append(pair)
        size += pair.nbytes
    return chunks


def _load(source: ModelSource) -> Any:
    """The model's proto without its external data (ONNX Runtime reads that from its folder)."""
    import onnx

    try:
        if source.path is not None:
            return onnx.load(str(source.path), load_external_data=False)
        return onnx.load_from_string(source.data or b"")
    except Exception as exc:  # DecodeError, OSError, ...
        raise ModelError(
            f"'{source.label}': cannot be read as an ONNX model to locate the first diverging tensor: "
            f"{_first_line(exc)}"
        ) from None


def _infer(proto: Any) -> Any:
    """The proto with the types ONNX shape inference finds; as it is when inference fails (custom
    domains, for one): then only the tensors it already typed can be marked."""
    import onnx

    try:
        return onnx.shape_inference.infer_shapes(proto, strict_mode=False, data_prop=True)
    except Exception:  # inference raises on models ORT still runs
        return proto


def _typed_values(proto: Any) -> dict[str, Any]:
    """Every value of the main graph whose type shape inference knows, by name."""
    graph = proto.graph
    found: dict[str, Any] = {}
    for value in [*graph.value_info, *graph.output]:
        if value.type.WhichOneof("value") is not None:
            found[value.name] = value
    return found


@dataclass(frozen=True)
class _Dims:
    """What the feeds say of the sizes the graph leaves unknown."""

    named: Mapping[str, int]  # each named dimension of the graph inputs, as the feeds have it
    largest_dim: int  # the largest dimension of any feed: an unknown dimension's size
    largest_feed: int  # the bytes of the largest feed: a tensor of unknown rank's size


def _node_tensors(proto: Any, typed: Mapping[str, Any], dims: _Dims) -> tuple[list[_Tensor], int]:
    """The outputs of the main graph's nodes that are or may be tensors, in node order, and how many
    are known not to be (sequences, maps, optionals: left out)."""
    import onnx

    tensors, not_tensors = [], 0
    seen: dict[str, int] = {}
    for index, node in enumerate(proto.graph.node):
        label = node.name or f"#{index}"
        rank = seen.get(node.op_type, 0)
        seen[node.op_type] = rank + 1
        for slot, name in enumerate(node.output):
            if not name:
                continue  # an optional output left out
            value = typed.get(name)
            kind = None if value is None else value.type.WhichOneof("value")
            if kind not in (None, "tensor_type"):
                not_tensors += 1
                continue
            if value is None or not value.type.tensor_type.elem_type:  # ORT finds the type when run
                tensors.append(_Tensor(name, index, rank, slot, label, node.op_type, 0, dims.largest_feed))
                continue
            tensor_type = value.type.tensor_type
            elem_type = tensor_type.elem_type
            try:
                itemsize = int(onnx.helper.tensor_dtype_to_np_dtype(elem_type).itemsize)
            except Exception:  # an element type numpy has no dtype for
                itemsize = 8
            if tensor_type.HasField("shape"):
                count = 1
                for dim in tensor_type.shape.dim:
                    if dim.HasField("dim_value") and dim.dim_value >= 0:
                        count *= dim.dim_value
                    else:
                        count *= dims.named.get(dim.dim_param, dims.largest_dim)
                nbytes = count * max(itemsize, 1)
            else:
                nbytes = dims.largest_feed
            tensors.append(_Tensor(name, index, rank, slot, label, node.op_type, elem_type, nbytes))
    return tensors, not_tensors


def _dims(inputs: Sequence[Any], feeds: Mapping[str, Array]) -> _Dims:
    named: dict[str, int] = {}
    largest_dim, largest_feed = 1, 0
    for value in inputs:
        array = np.asarray(feeds[value.name])
        largest_feed = max(largest_feed, int(array.nbytes))
        largest_dim = max([largest_dim, *(int(d) for d in array.shape)])
        shape = value.type.tensor_type.shape.dim if value.type.HasField("tensor_type") else []
        for dim, actual in zip(shape, array.shape, strict=False):
            if dim.dim_param:
                named[dim.dim_param] = int(actual)
    return _Dims(named, largest_dim, largest_feed)


def _topologically_sorted(proto: Any) -> bool:
    """Whether every node of the main graph reads only what the graph's inputs, its initializers and
    the nodes before it produce (then dropping the nodes after a tensor leaves it computable)."""
    graph = proto.graph
    known = {value.name for value in graph.input} | {init.name for init in graph.initializer} | {""}
    for node in graph.node:
        if any(name not in known for name in node.input):
            return False
        known.update(node.output)
    return True


def _first_line(exc: BaseException) -> str:
    """``Type: message`` on one line, the message cut short."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:_REASON_CHARS]}"


def _mib(nbytes: int) -> str:
    return f"{nbytes / (1 << 20):.1f} MiB" if nbytes >= 1 << 20 else f"{nbytes} bytes"
