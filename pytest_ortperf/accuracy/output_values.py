"""Outputs that are not one tensor, made comparable: sequences, maps, a sequence of maps, an
optional output the model did not produce, and what cannot be compared at all.

ONNX Runtime returns a ``seq(tensor)`` output as a list of arrays, a ``map`` as a dict, a
``seq(map)`` (scikit-learn classifiers' ZipMap, through skl2onnx) as a list of dicts and an absent
``optional`` output as None. Each becomes an :data:`OutputValue` here, so the accuracy check
compares every output the model has and none is dropped:

- a map, or a sequence of maps that share one key set (ZipMap), is a :class:`KeyedTable`: its
  values as ``[keys]`` or ``[rows, keys]`` with the keys sorted, so two tables with the same keys
  compare column by column under the output's tolerance and a key missing on either side is named;
- a sequence is a :class:`ValueSequence`, compared element by element;
- an absent optional output is :data:`ABSENT`: present on one side only is a difference;
- anything else (a sparse tensor, a map of tensors) is :class:`NotComparable`, with the reason,
  which every report names as "not compared".

For storage (an ``.npz`` read without pickle) and for the reports, :func:`flatten` turns the
outputs into plain arrays, the *leaves*, named after their output (``probabilities`` for a table's
values, ``states[0]`` for a sequence's first element), and a JSON *structure* per output that is not
one tensor (its kind, its keys, its elements' structures); :func:`unflatten` reverses it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_ortperf.errors import ModelError

Array = npt.NDArray[Any]
Key = int | str
MAX_KEYS_NAMED = 10  # a key-set difference names at most this many keys of each side


@dataclass(frozen=True, eq=False)
class KeyedTable:
    """A map (``rows=False``: values ``[keys]``) or a sequence of maps with one key set (``rows=True``:
    values ``[rows, keys]``, ZipMap's class probabilities), columns in the order of sorted ``keys``."""

    keys: tuple[Key, ...]
    values: Array
    rows: bool


@dataclass(frozen=True, eq=False)
class ValueSequence:
    """A sequence output, compared element by element."""

    items: tuple[OutputValue, ...]


@dataclass(frozen=True)
class Absent:
    """An optional output the model did not produce (onnxruntime returns None)."""


@dataclass(frozen=True)
class NotComparable:
    """A value this version cannot compare, and why: every report names it "not compared"."""

    reason: str


class OutputsError(ModelError):
    """The model's outputs cannot be stored apart (an output named like another's element)."""


ABSENT = Absent()
OutputValue = Array | KeyedTable | ValueSequence | Absent | NotComparable

_VALUE_TYPES = {
    "float": np.float32, "double": np.float64, "float16": np.float16, "int64": np.int64,
    "int32": np.int32, "string": np.str_, "bool": np.bool_,
}  # fmt: skip
_INNER_TENSOR = re.compile(r"tensor\((\w+)\)\)*$")


def from_ort(value: Any, type_text: str = "") -> OutputValue:
    """One output as onnxruntime returned it, made comparable. ``type_text`` is the output's type as
    the session states it (``seq(map(int64,tensor(float)))``): it gives map values their dtype, which
    Python floats have lost."""
    if isinstance(value, np.ndarray):
        return value.astype(str) if value.dtype == object else value
    if value is None:
        return ABSENT
    if isinstance(value, dict):
        return _map(value, type_text)
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(item, dict) for item in value):
            first = set(value[0])
            if all(set(item) == first for item in value):
                table = _table(list(value), type_text)
                if table is not None:
                    return table
        inner = _element_type(type_text)
        return ValueSequence(tuple(from_ort(item, inner) for item in value))
    kind = getattr(value, "type_name", type(value).__name__)  # a worker's OpaqueOutput names the type
    return NotComparable(f"onnxruntime returned a {kind}, which is not compared")


def _element_type(type_text: str) -> str:
    """``seq(X)`` -> ``X``; anything else -> ``""``."""
    return type_text[4:-1] if type_text.startswith("seq(") and type_text.endswith(")") else ""


def _map(value: dict[Any, Any], type_text: str) -> OutputValue:
    table = _table([value], _element_type(f"seq({type_text})") if type_text else "")
    if table is None:
        return NotComparable("a map whose keys or values are not scalars, which is not compared")
    return KeyedTable(table.keys, table.values[0], rows=False)


def _table(rows: list[dict[Any, Any]], type_text: str) -> KeyedTable | None:
    """Maps with one key set as ``[rows, keys]``; None when keys or values are not plain scalars."""
    keys = list(rows[0])
    if not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in keys) and not all(
        isinstance(k, str) for k in keys
    ):
        return None
    ordered = sorted(keys)
    try:
        values = np.asarray([[row[k] for k in ordered] for row in rows])
    except ValueError:
        return None
    if values.dtype == object or values.ndim != 2:
        return None
    match = _INNER_TENSOR.search(type_text)
    dtype = _VALUE_TYPES.get(match.group(1)) if match else None
    if dtype is not None and values.dtype.kind != "U":
        values = values.astype(dtype)
    normal: list[Key] = [k if isinstance(k, str) else int(k) for k in ordered]
    return KeyedTable(tuple(normal), values, rows=True)


def describe(value: OutputValue) -> str:
    """What a value is, in words, for a message that says it changed kind."""
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} tensor {list(value.shape)}"
    if isinstance(value, KeyedTable):
        if value.rows:
            return f"a sequence of {value.values.shape[0]} maps with {len(value.keys)} keys"
        return f"a map with {len(value.keys)} keys"
    if isinstance(value, ValueSequence):
        return f"a sequence of {len(value.items)}" if value.items else "an empty sequence"
    if isinstance(value, Absent):
        return "absent"
    return f"a value not compared ({value.reason})"


def value_dtype(value: OutputValue) -> np.dtype[Any]:
    """The dtype whose tolerance an output is judged with: its tensor's, its table values', its first
    element's; float32 when it holds none."""
    if isinstance(value, np.ndarray):
        return value.dtype
    if isinstance(value, KeyedTable):
        return value.values.dtype
    if isinstance(value, ValueSequence) and value.items:
        return value_dtype(value.items[0])
    return np.dtype(np.float32)


@dataclass(frozen=True)
class Flat:
    """Outputs as plain arrays (``leaves``) and the structure of each output that is not one tensor."""

    leaves: dict[str, Array]
    structure: dict[str, dict[str, Any]]


def flatten(outputs: Mapping[str, OutputValue]) -> Flat:
    """Every output's arrays under their leaf names, and the JSON structure of those not one tensor.
    A leaf name that is also another output's name is refused: the two could not be told apart."""
    leaves: dict[str, Array] = {}
    structure: dict[str, dict[str, Any]] = {}
    for name, value in outputs.items():
        if isinstance(value, np.ndarray):
            leaves[name] = value
            continue
        own: dict[str, Array] = {}
        structure[name] = _layout(name, value, own)
        clash = sorted(leaf for leaf in own if leaf != name and leaf in outputs)
        if clash:
            raise OutputsError(
                f"output {clash[0]!r} has the name an element of output {name!r} is stored under; "
                "the two cannot be told apart in the recorded outputs (rename one in the model)."
            )
        leaves.update(own)
    return Flat(leaves, structure)


def _layout(name: str, value: OutputValue, leaves: dict[str, Array]) -> dict[str, Any]:
    if isinstance(value, np.ndarray):
        leaves[name] = value
        return {"kind": "tensor"}
    if isinstance(value, KeyedTable):
        leaves[name] = value.values
        return {"kind": "maps" if value.rows else "map", "keys": list(value.keys)}
    if isinstance(value, ValueSequence):
        return {
            "kind": "sequence",
            "items": [_layout(f"{name}[{i}]", item, leaves) for i, item in enumerate(value.items)],
        }
    if isinstance(value, Absent):
        return {"kind": "absent"}
    return {"kind": "not compared", "reason": value.reason}


def unflatten(
    leaves: Mapping[str, Array], structure: Mapping[str, Mapping[str, Any]]
) -> dict[str, OutputValue]:
    """The outputs :func:`flatten` was given, from its leaves and structure. Raises ``TypeError`` for a
    structure it did not write, and ``KeyError`` for a leaf it names that is not there."""
    inner = {leaf for name, layout in structure.items() for leaf in _leaf_names(name, layout)}
    values: dict[str, OutputValue] = {
        n: a for n, a in leaves.items() if n not in inner and n not in structure
    }
    for name, layout in structure.items():
        values[name] = _value(name, layout, leaves)
    return values


def check_structure(structure: Mapping[str, Any]) -> None:
    """Raise ``TypeError`` for a structure :func:`flatten` did not write (read from a baseline file)."""
    for name, layout in structure.items():
        _value(str(name), layout, _AnyLeaf())


class _AnyLeaf(Mapping[str, Array]):
    """Every leaf name, each an empty array: a structure checked without its arrays."""

    def __getitem__(self, name: str) -> Array:
        return np.empty(0)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _leaf_names(name: str, layout: Mapping[str, Any]) -> Iterator[str]:
    kind = layout.get("kind")
    if kind in ("tensor", "map", "maps"):
        yield name
    elif kind == "sequence":
        for i, item in enumerate(layout.get("items") or []):
            if isinstance(item, Mapping):
                yield from _leaf_names(f"{name}[{i}]", item)


def _value(name: str, layout: Mapping[str, Any], leaves: Mapping[str, Array]) -> OutputValue:
    if not isinstance(layout, Mapping):
        raise TypeError(f"the structure of output {name!r} must be an object")
    kind = layout.get("kind")
    if kind == "tensor":
        return leaves[name]
    if kind in ("map", "maps"):
        keys = layout.get("keys")
        if not isinstance(keys, list) or not (
            all(isinstance(k, int) and not isinstance(k, bool) for k in keys)
            or all(isinstance(k, str) for k in keys)
        ):
            raise TypeError(f"the keys of output {name!r} must be a list of whole numbers or of strings")
        return KeyedTable(tuple(keys), leaves[name], rows=kind == "maps")
    if kind == "sequence":
        items = layout.get("items")
        if not isinstance(items, list):
            raise TypeError(f"the structure of sequence output {name!r} needs an 'items' list")
        return ValueSequence(tuple(_value(f"{name}[{i}]", item, leaves) for i, item in enumerate(items)))
    if kind == "absent":
        return ABSENT
    if kind == "not compared":
        return NotComparable(str(layout.get("reason", "")))
    raise TypeError(f"output {name!r} has an unknown kind {kind!r}")


@dataclass(frozen=True)
class Leaf:
    """Two arrays to compare element by element: ``name`` is the leaf's, ``output`` the output's whose
    tolerance applies; ``keys``: the columns' keys of a table; ``scores``: class scores, ``[N, classes]``
    (a table of rows, or a map as one row), where top-1 agreement means something."""

    name: str
    output: str
    actual: Array
    expected: Array
    keys: tuple[Key, ...] = ()
    scores: bool | None = None  # None: judged by the shape (a 2-D float tensor)


@dataclass(frozen=True)
class Pairing:
    """Two values of one output, side by side: the arrays to compare, and what differs or was not
    compared in their structure, each as ``(name, words)``."""

    leaves: tuple[Leaf, ...] = ()
    problems: tuple[tuple[str, str], ...] = ()
    not_compared: tuple[tuple[str, str], ...] = ()
    notes: tuple[tuple[str, str], ...] = ()


def pair(name: str, actual: OutputValue, expected: OutputValue, *, output: str = "") -> Pairing:
    """What of two values of output ``name`` is compared, and how their structures differ."""
    output = output or name
    if isinstance(actual, NotComparable) and isinstance(expected, NotComparable):
        return Pairing(not_compared=((name, actual.reason),))
    if isinstance(actual, NotComparable) or isinstance(expected, NotComparable):  # what it was changed
        return Pairing(problems=((name, f"kind changed: {describe(expected)} -> {describe(actual)}"),))
    if isinstance(actual, Absent) and isinstance(expected, Absent):
        return Pairing(notes=((name, "absent on both sides (an optional output)"),))
    if isinstance(actual, Absent) or isinstance(expected, Absent):
        what = (
            "absent now, present in the reference"
            if isinstance(actual, Absent)
            else ("present now, absent in the reference")
        )
        return Pairing(
            problems=((name, f"{what} (an optional output): {describe(expected)} -> {describe(actual)}"),)
        )
    if isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        return Pairing(leaves=(Leaf(name, output, actual, expected),))
    if isinstance(actual, KeyedTable) and isinstance(expected, KeyedTable) and actual.rows == expected.rows:
        return _pair_tables(name, output, actual, expected)
    if isinstance(actual, ValueSequence) and isinstance(expected, ValueSequence):
        if len(actual.items) != len(expected.items):
            return Pairing(
                problems=((name, f"sequence length changed: {len(expected.items)} -> {len(actual.items)}"),)
            )
        parts = [
            pair(f"{name}[{i}]", a, e, output=output)
            for i, (a, e) in enumerate(zip(actual.items, expected.items, strict=True))
        ]
        return Pairing(
            leaves=tuple(leaf for part in parts for leaf in part.leaves),
            problems=tuple(p for part in parts for p in part.problems),
            not_compared=tuple(n for part in parts for n in part.not_compared),
            notes=tuple(n for part in parts for n in part.notes),
        )
    return Pairing(problems=((name, f"kind changed: {describe(expected)} -> {describe(actual)}"),))


def _pair_tables(name: str, output: str, actual: KeyedTable, expected: KeyedTable) -> Pairing:
    if actual.keys != expected.keys:
        now, before = set(actual.keys), set(expected.keys)
        missing = [k for k in expected.keys if k not in now]
        new = [k for k in actual.keys if k not in before]
        words = "; ".join(
            _keys_text(label, keys) for label, keys in (("missing", missing), ("new", new)) if keys
        )
        return Pairing(problems=((name, f"keys differ: {words}"),))
    leaf = Leaf(name, output, actual.values, expected.values, keys=expected.keys, scores=True)
    return Pairing(leaves=(leaf,))


def _keys_text(label: str, keys: Sequence[Key]) -> str:
    """``missing key 2`` or ``new keys 'a', 'b' and 3 more``."""
    shown = ", ".join(repr(k) for k in keys[:MAX_KEYS_NAMED])
    more = f" and {len(keys) - MAX_KEYS_NAMED} more" if len(keys) > MAX_KEYS_NAMED else ""
    return f"{label} key{'' if len(keys) == 1 else 's'} {shown}{more}"
