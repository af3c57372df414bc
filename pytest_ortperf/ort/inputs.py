"""Deterministic feeds for a model.

In order of preference: the model's own test data in ONNX model-zoo layout
(``test_data_set_<n>/input_<i>.pb`` beside the model), an ``<model stem>.npz``
beside the model, or seeded synthetic data built from the session's input
metadata. The same model and options always give the same arrays.

Synthetic data is sized, never guessed: every dim of an input comes from the model (a fixed size),
``shapes`` (the whole input, by name), ``dims`` (a named dim) or, for a leading batch dim only, a
default of 1. A dim that nothing sizes fails the feeds, naming the input and the ways to size it: an
input measured at ``1x3x1x1`` times a degenerate graph.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np
import numpy.typing as npt

from pytest_ortperf import defaults
from pytest_ortperf.errors import InputsError, UsageError
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
    """How synthetic feeds are made. ``int_ranges`` are half-open ``[low, high)`` per input.

    ``shapes`` sizes whole inputs by name. ``model_dims`` are the ``dims`` names given for this model
    (its marker or model table, not the run-wide ``--ortperf-dims``, which serves every model): each
    must name a dim of its inputs. The origins name where each came from, for messages.
    """

    seed: int = defaults.SEED
    dims: Mapping[str, int] = field(default_factory=dict)
    int_range: tuple[int, int] = defaults.INT_RANGE
    int_ranges: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    model_dims: frozenset[str] = frozenset()
    dims_origin: str = ""
    shapes_origin: str = ""


class Feeds(dict[str, Array]):
    """``{input name: array}`` as ``session.run`` takes it, plus where it came from."""

    source: str = ""

    def __init__(self, arrays: Mapping[str, Array], *, source: str) -> None:
        super().__init__(arrays)
        self.source = source


class UnmadeFeeds(Feeds):
    """No feeds: why a test's inputs could not be made (an input that nothing sizes, an unreadable
    ``.npz``), kept for the checks that would run on them, while checks given their own feeds run."""

    def __init__(self, problem: str) -> None:
        super().__init__({}, source="")
        self.problem = problem


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
    """Feeds for ``model`` from its first test data set, an ``.npz`` beside it, or synthetic data.

    ``shapes`` and ``dims`` that do not fit the model are a usage error whichever source feeds it; the
    model's own data is fed as it is, and a ``shapes`` entry it contradicts is an error too (it would
    otherwise be ignored without a word)."""
    check_options(specs, options)
    directory = model.directory
    if directory is not None and model.path is not None:
        found = data_sets(directory)
        if found:
            return _agreeing(feeds_from_data_set(found[0], specs), options, origin=str(found[0]))
        npz = model.path.with_suffix(".npz")
        if npz.is_file():
            return _agreeing(_from_npz(npz, specs), options, origin=str(npz))
    return synthesize(specs, options, model=model)


def synthesize(
    specs: Sequence[InputSpec], options: InputOptions, *, model: ModelSource | None = None
) -> Feeds:
    """Seeded data for every input, each sized by :func:`resolve_shape`; :class:`InputsError` naming
    every input with a dim that nothing sizes, and how to size it."""
    check_options(specs, options)
    shapes = {spec.name: resolve_shape(spec, options) for spec in specs}
    unsized = [spec for spec in specs if None in shapes[spec.name]]
    if unsized:
        raise InputsError(unsized_message(unsized, shapes, model=model))
    arrays = {spec.name: _synthetic_array(spec, options, _sized(shapes[spec.name])) for spec in specs}
    return Feeds(arrays, source=f"synthetic(seed={options.seed})")


def fits(specs: Sequence[InputSpec], feeds: Mapping[str, Array]) -> bool:
    """Whether ``feeds`` are what a model declaring ``specs`` takes: the same names, its dtypes, its
    ranks and its fixed dims."""
    try:
        _checked(dict(feeds), specs, origin="")
    except InputsError:
        return False
    return True


def feeds_of_its_own(
    specs: Sequence[InputSpec], options: InputOptions, feeds: Mapping[str, Array]
) -> Feeds | None:
    """Inputs for another model (an A/B reference) that ``feeds`` do not fit (a fixed size changed,
    an input added or dropped): synthesized from its own declared inputs, sized as ``options``
    size them where that fits it (a ``shapes`` entry it contradicts, or a ``dims`` name it lacks,
    sizes today's model only). None when ``feeds`` fit it: both sides then run the same inputs.
    :class:`InputsError` when nothing sizes one of its inputs."""
    if fits(specs, feeds):
        return None
    by_name = {spec.name: spec for spec in specs}
    shapes = {
        name: shape
        for name, shape in options.shapes.items()
        if name in by_name
        and len(shape) == len(by_name[name].shape)
        and all(not _fixed(dim) or dim == size for dim, size in zip(by_name[name].shape, shape, strict=False))
    }
    own = replace(options, shapes=shapes, model_dims=frozenset())
    return synthesize(specs, own)


_DESCRIBED = re.compile(r"^([a-z0-9_]+)\[([0-9, ]*)\]$")


def specs_as_described(described: Mapping[str, str]) -> list[InputSpec] | None:
    """The inputs a recipe describes (``{"x": "float32[1, 3, 320, 320]"}``) as specs with concrete
    shapes; None when a description is not of a type this module reads."""
    specs = []
    by_dtype = {np.dtype(dtype).name: type_name for type_name, dtype in _DTYPES.items()}
    for name, text in described.items():
        found = _DESCRIBED.match(str(text))
        type_name = by_dtype.get(found.group(1)) if found else None
        if found is None or type_name is None:
            return None
        shape = tuple(int(dim) for dim in found.group(2).replace(" ", "").split(",") if dim)
        specs.append(InputSpec(str(name), type_name, shape))
    return specs


def input_files(directory: Path | None, source: str) -> list[Path]:
    """The files beside a model that feeds of ``source`` were read from (a test data set's
    ``input_*.pb``, an ``.npz``), relative to ``directory``; [] for any other source."""
    if directory is None or not source:
        return []
    if _DATA_SET.match(source) and (directory / source).is_dir():
        return sorted(path.relative_to(directory) for path in (directory / source).glob("input_*.pb"))
    if source.endswith(".npz") and (directory / source).is_file():
        return [Path(source)]
    return []


def feeds_from_files(directory: Path, source: str, specs: Sequence[InputSpec]) -> Feeds:
    """Feeds read as :func:`load_feeds` reads ``source`` (a test data set, an ``.npz``) in ``directory``."""
    if source.endswith(".npz"):
        return _from_npz(directory / source, specs)
    return feeds_from_data_set(directory / source, specs)


def synthesized_as_described(
    described: Mapping[str, str], options: InputOptions, *, seed: int
) -> Feeds | None:
    """The synthetic feeds :func:`synthesize` made for inputs ``described`` as a recipe keeps them
    (``{"x": "float32[1, 3, 320, 320]"}``: numpy dtype and shape), at ``seed`` and ``options``' integer
    ranges; None when a description is not one synthetic feeds could have made. The caller checks
    them against the recorded digest: only equal bytes are the recorded inputs."""
    specs = specs_as_described(described)
    if specs is None:
        return None
    shapes = {spec.name: tuple(int(dim) for dim in spec.shape if isinstance(dim, int)) for spec in specs}
    chosen = replace(options, seed=seed, shapes={}, dims={}, model_dims=frozenset())
    try:
        arrays = {spec.name: _synthetic_array(spec, chosen, shapes[spec.name]) for spec in specs}
    except InputsError:
        return None
    return Feeds(arrays, source=f"synthetic(seed={seed}), as recorded")


def synthetic_hint(feeds: Mapping[str, Array]) -> str:
    """For an error ONNX Runtime raised on ``feeds``: when they were synthesized, which inputs and
    shapes were made up, and how to give the model others; "" for the model's own data."""
    if not isinstance(feeds, Feeds) or not feeds.source.startswith("synthetic"):
        return ""
    made = ", ".join(f"{name} {feeds[name].dtype}{list(feeds[name].shape)}" for name in feeds)
    return (
        f"The inputs were synthesized ({feeds.source}): {made}. A model that needs other sizes or values "
        "takes them from ort_model(..., shapes={'<input>': [...]}) (or dims=, int_range=), or from its "
        "own inputs beside it: <model>.npz or test_data_set_0/input_<i>.pb."
    )


def resolve_shape(spec: InputSpec, options: InputOptions) -> tuple[int | None, ...]:
    """The shape synthetic data takes, None where nothing sizes a dim: the whole shape from
    ``options.shapes``, else per dim its fixed size, its named size from ``options.dims``, or 1 for a
    leading batch dim (axis 0 of an input of rank 2 or more, unnamed or named as a batch:
    :func:`is_batch_dim`)."""
    if spec.name in options.shapes:
        return tuple(options.shapes[spec.name])
    shape: list[int | None] = []
    for axis, dim in enumerate(spec.shape):
        if _fixed(dim):
            shape.append(dim)
        elif isinstance(dim, str) and dim in options.dims:
            shape.append(int(options.dims[dim]))
        elif axis == 0 and len(spec.shape) >= 2 and is_batch_dim(dim):
            shape.append(1)
        else:
            shape.append(None)
    return tuple(shape)


# Names exporters give a batch dim: "batch", "batch_size", "N" (skl2onnx, ONNX docs), "unk__12"
# (tf2onnx's unknown dims), "None" and "?" (a dim without a name as some tools write it).
_BATCH_NAME = re.compile(r"(?i)^(batch\w*|\w*_batch|n|b|bs|none|\?|unk__\d+)$")


def is_batch_dim(dim: Dim) -> bool:
    """Whether a dim at axis 0 is taken for a batch, which may default to 1: it has no name, or a
    batch's name. A named axis 0 such as ``sequence`` or ``num_boxes`` is a length, sized like any
    other dim: defaulting it to 1 would measure a degenerate input."""
    return not isinstance(dim, str) or not dim or bool(_BATCH_NAME.match(dim))


def symbolic(shape: Sequence[Dim]) -> str:
    """A model's declared shape as people read it: ``[?, 3, ?, ?]``, ``[batch, 3, height, width]``."""
    return "[" + ", ".join(str(d) if _fixed(d) or (isinstance(d, str) and d) else "?" for d in shape) + "]"


def check_options(specs: Sequence[InputSpec], options: InputOptions) -> None:
    """:class:`UsageError` for a ``shapes`` entry that names no input or does not fit its input's
    declared shape, and for a model's ``dims`` name that matches no dim of its inputs."""
    by_name = {spec.name: spec for spec in specs}
    listing = "; ".join(f"{spec.name!r} {symbolic(spec.shape)}" for spec in specs) or "none"
    for name, given in options.shapes.items():
        spec = by_name.get(name)
        if spec is None:
            raise UsageError(
                f"{options.shapes_origin}: shapes names input {name!r}, which the model does not have; "
                f"its inputs: {listing}."
            )
        contradicted = [
            f"axis {axis} is fixed at {dim}"
            for axis, (dim, size) in enumerate(zip(spec.shape, given, strict=False))
            if _fixed(dim) and dim != size
        ]
        if len(given) != len(spec.shape) or contradicted:
            why = (
                f"the model's input has rank {len(spec.shape)}, not {len(given)}"
                if len(given) != len(spec.shape)
                else "; ".join(contradicted)
            )
            raise UsageError(
                f"{options.shapes_origin}: shapes gives input {name!r} the shape {list(given)}, but the "
                f"model declares it {symbolic(spec.shape)} ({why})."
            )
    named = sorted({dim for spec in specs for dim in spec.shape if isinstance(dim, str) and dim})
    unknown = sorted(options.model_dims - set(named))
    if unknown:
        exist = f"its named dims are {', '.join(named)}" if named else "its inputs have no named dims"
        match = "match" if len(unknown) > 1 else "matches"
        raise UsageError(
            f"{options.dims_origin}: dims {', '.join(repr(n) for n in unknown)} {match} no dim of the "
            f"model's inputs; {exist} (inputs: {listing}). Unnamed dims (?) are sized with "
            "shapes={'<input name>': [...]}."
        )


_DECLARED: dict[tuple[str, str], tuple[InputSpec, ...]] = {}  # by ModelSource.content: read once a run


def declared_inputs(model: ModelSource) -> tuple[InputSpec, ...]:
    """``model``'s inputs as its graph declares them (:func:`declared_specs`), from its file or its
    bytes, read once per model: what a reference another model's inputs must fit takes, without a
    session (in whichever runtime it runs). :class:`InputsError` when onnx cannot read it."""
    if model.content not in _DECLARED:
        try:
            _DECLARED[model.content] = declared_specs(model.path if model.path is not None else model.data)
        except Exception as exc:  # a model onnx cannot parse (ORT names it when it loads it)
            raise InputsError(f"{model.label}: its declared inputs cannot be read ({exc})") from None
    return _DECLARED[model.content]


def declared_specs(model: Path | bytes | None) -> tuple[InputSpec, ...]:
    """A model's inputs as its graph declares them (initializers excepted), read from its file (without
    its external data) or its bytes, without a session: what ``ortperf init`` looks at before
    anything runs."""
    import onnx  # the session path never needs it: ORT reads the model itself

    if isinstance(model, bytes):
        graph = onnx.load_model_from_string(model).graph
    else:
        graph = onnx.load(str(model), load_external_data=False).graph
    initialized = {tensor.name for tensor in graph.initializer}
    specs = []
    for value in graph.input:
        if value.name in initialized or not value.type.HasField("tensor_type"):
            continue
        tensor = value.type.tensor_type
        element = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type) if tensor.elem_type else None
        type_name = next(
            (t for t, d in _DTYPES.items() if element is not None and np.dtype(d) == element), ""
        )
        dims: list[Dim] = [
            dim.dim_value if dim.HasField("dim_value") else (dim.dim_param or None)
            for dim in tensor.shape.dim
        ]
        specs.append(InputSpec(value.name, type_name, tuple(dims)))
    return tuple(specs)


def unsized_inputs(path: Path) -> str:
    """Why synthetic inputs of the model file at ``path`` cannot be made as nothing but the run's
    defaults size them (:func:`unsized_message`), "" when they can or the model brings its own
    inputs (a test data set, an ``.npz`` beside it)."""
    if data_sets(path.parent) or path.with_suffix(".npz").is_file():
        return ""
    specs = declared_specs(path)
    shapes = {spec.name: resolve_shape(spec, InputOptions()) for spec in specs}
    unsized = [spec for spec in specs if None in shapes[spec.name]]
    return unsized_message(unsized, shapes, model=None) if unsized else ""


def unsized_message(
    unsized: Sequence[InputSpec], shapes: Mapping[str, tuple[int | None, ...]], *, model: ModelSource | None
) -> str:
    """Which inputs have dims that nothing sizes, and the three ways to size them."""
    described = []
    for spec in unsized:
        axes = [axis for axis, size in enumerate(shapes[spec.name]) if size is None]
        names = [spec.shape[axis] for axis in axes if isinstance(spec.shape[axis], str) and spec.shape[axis]]
        described.append(
            f"input {spec.name!r} {symbolic(spec.shape)} ({'axes' if len(axes) > 1 else 'axis'} "
            f"{', '.join(map(str, axes))}" + (f": {', '.join(map(str, names))}" if names else "") + ")"
        )
    example = ", ".join(
        f"{spec.name!r}: [{', '.join(str(s) if s is not None else '<n>' for s in shapes[spec.name])}]"
        for spec in unsized
    )
    named = sorted(
        {
            dim
            for spec in unsized
            for dim, size in zip(spec.shape, shapes[spec.name], strict=False)
            if size is None and isinstance(dim, str) and dim
        }
    )
    npz = (
        model.path.with_suffix(".npz").name if model is not None and model.path is not None else "<model>.npz"
    )
    where = f"model {model.label!r}: " if model is not None else ""
    them = "them" if len(unsized) > 1 else "it"
    return (
        f"{where}nothing sizes {'; '.join(described)}; synthetic data would have to guess these sizes "
        f"(a dim of 1 measures a degenerate input). Size {them} in its model table "
        '([tool.ortperf.models."<glob>"] in pyproject.toml or [models."<glob>"] in an ortperf.toml): '
        f"shapes = {{{_toml_shapes(unsized, shapes)}}}; or in a test: ort_model(..., shapes={{{example}}})"
        + (f", name its dims with dims={{{', '.join(f'{n!r}: <n>' for n in named)}}}" if named else "")
        + f", or give the model its own inputs beside it: {npz}, or test_data_set_0/input_<i>.pb "
        "(ONNX model-zoo layout)."
    )


def _toml_shapes(unsized: Sequence[InputSpec], shapes: Mapping[str, tuple[int | None, ...]]) -> str:
    """The shapes as a model table writes them: ``x = [1, 3, <n>, <n>]`` (a name TOML cannot write
    bare is quoted)."""
    return ", ".join(
        f"{name if re.fullmatch(r'[A-Za-z0-9_-]+', name) else json.dumps(name)} = "
        f"[{', '.join(str(s) if s is not None else '<n>' for s in shapes[name])}]"
        for name in (spec.name for spec in unsized)
    )


def _fixed(dim: Dim) -> TypeGuard[int]:
    return isinstance(dim, int) and not isinstance(dim, bool) and dim > 0


def _sized(shape: tuple[int | None, ...]) -> tuple[int, ...]:
    return tuple(size for size in shape if size is not None)


def _agreeing(feeds: Feeds, options: InputOptions, *, origin: str) -> Feeds:
    """The model's own data, when ``shapes`` agrees with it: test data is fed as it is, so a shape
    given for an input that it holds at another shape would be ignored without a word."""
    for name, given in options.shapes.items():
        held = tuple(feeds[name].shape)
        if held != tuple(given):
            raise UsageError(
                f"{options.shapes_origin}: shapes gives input {name!r} the shape {list(given)}, but the "
                f"model's own inputs ('{origin}') hold it at {list(held)} and are fed as they are; drop "
                "the entry or change the data."
            )
    return feeds


def _synthetic_array(spec: InputSpec, options: InputOptions, shape: tuple[int, ...]) -> Array:
    dtype = _DTYPES.get(spec.type)
    if dtype is None:
        raise InputsError(
            f"input {spec.name!r} has type {spec.type}, which synthetic feeds do not cover; "
            "put the inputs in an .npz beside the model (same name as the model, .npz suffix)."
        )
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
