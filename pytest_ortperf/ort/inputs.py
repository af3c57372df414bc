"""Deterministic feeds for a model.

In order of preference: the model's own test data in ONNX model-zoo layout
(``test_data_set_<n>/input_<i>.pb`` beside the model), an ``<model stem>.npz``
beside the model, or seeded synthetic data built from the session's input
metadata. The same model and options always give the same arrays.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_ortperf.errors import InputsError
from pytest_ortperf.ort.models import LFS_FETCH, ModelSource, is_lfs_pointer

Array = npt.NDArray[Any]
Dim = int | str | None

_FLOATS = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64}
_INTS = {
    f"tensor({name})": getattr(np, name)
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
}
_DTYPES: dict[str, Any] = {**_FLOATS, **_INTS, "tensor(bool)": np.bool_}
_DATA_SET = re.compile(r"test_data_set_(\d+)$")


@dataclass(frozen=True)
class InputSpec:
    """One model input as ORT describes it (``NodeArg``): name, type string, shape."""

    name: str
    type: str
    shape: tuple[Dim, ...]


@dataclass(frozen=True)
class InputOptions:
    """How synthetic feeds are made. ``int_ranges`` are half-open ``[low, high)`` per input."""

    seed: int = 0
    dims: Mapping[str, int] = field(default_factory=dict)
    int_range: tuple[int, int] = (0, 100)
    int_ranges: Mapping[str, tuple[int, int]] = field(default_factory=dict)


class Feeds(dict[str, Array]):
    """``{input name: array}`` as ``session.run`` takes it, plus where it came from."""

    source: str = ""

    def __init__(self, arrays: Mapping[str, Array], *, source: str) -> None:
        super().__init__(arrays)
        self.source = source


def specs_from_session(session: Any) -> tuple[InputSpec, ...]:
    try:
        return tuple(InputSpec(arg.name, arg.type, tuple(arg.shape)) for arg in session.get_inputs())
    except UnicodeDecodeError as exc:  # ORT hands back names that are not UTF-8 as it found them
        raise InputsError(f"the model's input names or dims are not valid UTF-8 ({exc}).") from None


def data_sets(directory: Path) -> list[Path]:
    """The ``test_data_set_<n>`` folders beside a model, in number order."""
    found = sorted(
        (int(m.group(1)), p) for p in directory.iterdir() if (m := _DATA_SET.match(p.name)) and p.is_dir()
    )
    return [path for _, path in found]


def load_feeds(model: ModelSource, specs: Sequence[InputSpec], options: InputOptions) -> Feeds:
    """Feeds for ``model`` from its first test data set, an ``.npz`` beside it, or synthetic data."""
    directory = model.directory
    if directory is not None and model.path is not None:
        found = data_sets(directory)
        if found:
            return feeds_from_data_set(found[0], specs)
        npz = model.path.with_suffix(".npz")
        if npz.is_file():
            return _from_npz(npz, specs)
    return synthesize(specs, options)


def synthesize(specs: Sequence[InputSpec], options: InputOptions) -> Feeds:
    arrays = {spec.name: _synthetic_array(spec, options) for spec in specs}
    return Feeds(arrays, source=f"synthetic(seed={options.seed})")


def resolve_shape(spec: InputSpec, dims: Mapping[str, int]) -> tuple[int, ...]:
    """Concrete shape: named symbolic dims from ``dims``, other unknown dims 1."""
    shape = []
    for dim in spec.shape:
        if isinstance(dim, int) and dim > 0:
            shape.append(dim)
        elif isinstance(dim, str) and dim in dims:
            shape.append(int(dims[dim]))
        else:
            shape.append(1)
    return tuple(shape)


def _synthetic_array(spec: InputSpec, options: InputOptions) -> Array:
    dtype = _DTYPES.get(spec.type)
    if dtype is None:
        raise InputsError(
            f"input {spec.name!r} has type {spec.type}, which synthetic feeds do not cover; "
            "put the inputs in an .npz beside the model (same name as the model, .npz suffix)."
        )
    shape = resolve_shape(spec, options.dims)
    rng = np.random.default_rng([options.seed & 0xFFFFFFFF, zlib.crc32(spec.name.encode())])
    if spec.type in _FLOATS:
        return rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    if dtype is np.bool_:
        return rng.random(shape) < 0.5
    low, high = options.int_ranges.get(spec.name, options.int_range)
    info = np.iinfo(dtype)
    if not (info.min <= low < high <= info.max + 1):
        raise InputsError(f"integer range [{low}, {high}) for input {spec.name!r} does not fit {spec.type}.")
    return rng.integers(low, high, size=shape, dtype=dtype)


def read_tensors(directory: Path, prefix: str) -> list[tuple[str, Array]]:
    """``(tensor name, array)`` of ``<prefix>_<n>.pb`` files (ONNX TensorProto) in numeric order."""
    from onnx import TensorProto, numpy_helper

    pattern = re.compile(rf"{prefix}_(\d+)\.pb$")
    files = sorted((int(m.group(1)), p) for p in directory.iterdir() if (m := pattern.match(p.name)))
    tensors = []
    for _, path in files:
        tensor = TensorProto()
        try:
            data = path.read_bytes()
            if is_lfs_pointer(data):
                raise InputsError(
                    f"'{path}' is a Git LFS pointer (a small text file that stands for the tensor), not the "
                    f"tensor: this checkout has not fetched its LFS objects; {LFS_FETCH}."
                )
            tensor.ParseFromString(data)
            tensors.append((tensor.name, numpy_helper.to_array(tensor)))
        except InputsError:
            raise
        except Exception as exc:  # protobuf raises its own DecodeError, numpy ValueError
            raise InputsError(f"'{path}' is not a readable ONNX TensorProto: {exc}") from exc
    return tensors


class NotNpzError(ValueError):
    """The file is not a zip archive, so not an .npz at all."""


_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members, an empty zip


def read_npz(path: Path) -> dict[str, Array]:
    """All arrays of an .npz, never unpickling; raises whatever numpy or zipfile raise, and
    :class:`NotNpzError` for a file that is no zip archive (numpy would offer to unpickle it)."""
    # Open the file ourselves: np.load leaks its handle when the archive is corrupt.
    with path.open("rb") as handle:
        if handle.read(4) not in _ZIP_MAGIC:
            raise NotNpzError("not a .npz archive")
        handle.seek(0)
        with np.load(handle, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}


def feeds_from_data_set(directory: Path, specs: Sequence[InputSpec]) -> Feeds:
    tensors = read_tensors(directory, "input")
    if len(tensors) != len(specs):
        raise InputsError(
            f"'{directory}' holds {len(tensors)} input_*.pb file(s) but the model has "
            f"{len(specs)} input(s): {', '.join(s.name for s in specs)}."
        )
    by_name = {spec.name: spec for spec in specs}
    arrays = {
        (name if name in by_name else specs[position].name): array
        for position, (name, array) in enumerate(tensors)
    }
    return Feeds(_checked(arrays, specs, origin=str(directory)), source=directory.name)


def _from_npz(path: Path, specs: Sequence[InputSpec]) -> Feeds:
    try:
        arrays = read_npz(path)
    except NotNpzError:
        raise InputsError(f"'{path}' is not a .npz archive.") from None
    except Exception as exc:  # zipfile, pickle refusal and format errors all land here
        raise InputsError(f"'{path}' cannot be read as a numpy .npz without pickle: {exc}") from exc
    return Feeds(_checked(arrays, specs, origin=str(path)), source=path.name)


def _checked(arrays: dict[str, Array], specs: Sequence[InputSpec], *, origin: str) -> dict[str, Array]:
    wanted = [spec.name for spec in specs]
    missing = [name for name in wanted if name not in arrays]
    extra = [name for name in arrays if name not in wanted]
    if missing or extra:
        raise InputsError(
            f"'{origin}': inputs do not match the model (missing: {', '.join(missing) or 'none'}; "
            f"unexpected: {', '.join(extra) or 'none'})."
        )
    for spec in specs:
        array = arrays[spec.name]
        expected = _DTYPES.get(spec.type)
        if expected is not None and array.dtype != np.dtype(expected):
            raise InputsError(
                f"'{origin}': input {spec.name!r} is {array.dtype} but the model expects {spec.type}."
            )
        fixed = [(i, d) for i, d in enumerate(spec.shape) if isinstance(d, int) and d > 0]
        if array.ndim != len(spec.shape) or any(array.shape[i] != d for i, d in fixed):
            raise InputsError(
                f"'{origin}': input {spec.name!r} has shape {array.shape} but the model expects "
                f"{list(spec.shape)}."
            )
    return {spec.name: arrays[spec.name] for spec in specs}
