"""The fp16 and int8 models of a precision variant, built from the fp32 model under test.

Each is made with onnxruntime's own tools, the ones a user would run to ship it:
``onnxruntime.transformers.float16.convert_float_to_float16`` (fp16, inputs and outputs kept fp32 so
the feeds and the output comparison stay those of the model under test),
``onnxruntime.quantization.quantize_dynamic`` (int8-dynamic) and ``quant_pre_process`` then
``quantize_static`` (int8-static, QDQ, calibrated on input sets: :class:`Calibration`).

int8 uses unsigned 8-bit weights and activations (U8U8), per tensor, full range. Signed weights
(the tools' default, U8S8) run on the CPU too, but x86 CPUs without VNNI multiply them with
``vpmaddubsw``, which saturates: on an AVX2 machine, dynamic int8 of the small CNN example kept
51 dB of output SQNR with unsigned weights, 41 dB with signed ones and 19 dB signed per channel.
A default tolerance would have to cover whichever CPU a run lands on; U8U8 does not saturate, so
its integer arithmetic is exact on every CPU (ORT's quantization guide offers it, with
``reduce_range``, as the remedy for U8S8 saturation). Here it ran about as fast as U8S8, fused into
the same int8 kernels; CPUs with VNNI may run U8S8 faster.

The result is cached by content (``<cache>/<key>.onnx``, the key a digest of the model's bytes, the
precision, the build options, the calibration data and the onnxruntime version), with the recipe
beside it (``<key>.json``).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import io
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from pytest_ortperf.errors import ModelError, UsageError
from pytest_ortperf.ort.inputs import InputOptions, InputSpec, specs_from_session, synthesize
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.variants import Precision

Array = npt.NDArray[Any]

# The tool that builds each precision, and the options it is called with (what the recipe records).
METHODS: dict[Precision, str] = {
    Precision.FP16: "convert_float_to_float16",
    Precision.INT8_DYNAMIC: "quantize_dynamic",
    Precision.INT8_STATIC: "quantize_static",
}
OPTIONS: dict[Precision, dict[str, Any]] = {
    Precision.FP16: {"keep_io_types": True},
    Precision.INT8_DYNAMIC: {"weight_type": "QUInt8", "per_channel": False, "reduce_range": False},
    Precision.INT8_STATIC: {
        "quant_format": "QDQ",
        "activation_type": "QUInt8",
        "weight_type": "QUInt8",
        "per_channel": False,
        "reduce_range": False,
        "calibrate_method": "MinMax",
        "pre_process": True,
    },
}
_REASON_CHARS = 300


@dataclass(frozen=True, eq=False)  # arrays have no truth value to compare by: compare digests
class Calibration:
    """Input sets for static quantization and where they came from."""

    feeds: tuple[Mapping[str, Array], ...]  # one mapping input name -> array per set
    source: str  # e.g. "test_data_set_0..2 of the model", "synthetic (seed 0, 8 sets)"
    synthetic: bool

    @cached_property
    def digest(self) -> str:
        """sha256 over every set's arrays (by sorted name: dtype, shape, bytes): part of the cache key,
        so that other calibration data builds another model."""
        digest = hashlib.sha256()
        for number, feed in enumerate(self.feeds):
            digest.update(f"set {number}\0".encode())
            for name in sorted(feed):
                array = np.ascontiguousarray(feed[name])
                digest.update(json.dumps([name, array.dtype.str, list(array.shape)]).encode())
                if array.dtype.hasobject:  # strings: their text, not the addresses of the objects
                    digest.update(json.dumps(array.tolist(), default=str).encode())
                else:
                    digest.update(array.tobytes())
        return digest.hexdigest()


class _HasInputs(Protocol):
    def get_inputs(self) -> Sequence[Any]: ...


def synthetic_calibration(
    session_or_specs: Sequence[InputSpec] | _HasInputs,
    options: InputOptions,
    *,
    sets: int = 8,
    model: ModelSource | None = None,
) -> Calibration:
    """``sets`` input sets made as ``ort/inputs.py`` makes synthetic feeds (``synthesize``), set ``i``
    with seed ``options.seed + 1 + i``: takes the model's :class:`InputSpec` list, or a session to
    read it from. The feed the checks run on (seed ``options.seed``) is left out, so that a model is
    not calibrated on the very inputs its accuracy is judged on."""
    if sets < 1:
        raise UsageError(f"synthetic calibration needs at least one input set, got {sets}.")
    specs = (
        session_or_specs if isinstance(session_or_specs, Sequence) else specs_from_session(session_or_specs)
    )
    first = options.seed + 1
    feeds = tuple(dict(synthesize(specs, replace(options, seed=first + i), model=model)) for i in range(sets))
    return Calibration(feeds, f"synthetic (seeds {first}..{first + sets - 1})", synthetic=True)


@dataclass(frozen=True)
class PrecisionModel:
    """The model a precision variant runs, how it was built, and whether the cache held it."""

    model: ModelSource
    recipe: Mapping[str, Any]  # plain JSON: precision, method, options, source_sha256, ort_version...
    cached: bool  # found in the cache, not built in this run


def build_precision(
    model: ModelSource,
    precision: Precision,
    *,
    cache_dir: Path,
    ort_version: str,
    calibration: Calibration | None = None,
) -> PrecisionModel:
    """``model`` at ``precision``, from the cache when this model, precision, calibration and
    onnxruntime made it before. fp32 is the model itself. The built source keeps the model's git
    object id and carries the recipe, so the recorded model can be found in git and built again."""
    if precision is Precision.FP32:
        return PrecisionModel(model, {"precision": Precision.FP32.value}, cached=True)
    method = METHODS[precision]
    if precision is Precision.INT8_STATIC and calibration is None:
        raise UsageError(
            f"'{model.label}': the {precision.value} model is calibrated on input sets, and none were "
            f"given to {method}."
        )
    if model.has_external_data:
        raise ModelError(
            f"'{model.label}': building the {precision.value} model needs a model without external "
            "data files."
        )
    options = OPTIONS[precision]
    static = calibration if precision is Precision.INT8_STATIC else None
    key = hashlib.sha256(
        json.dumps(
            [model.sha256, precision.value, options, static.digest if static else "", ort_version],
            sort_keys=True,
        ).encode()
    ).hexdigest()[:24]
    path, recipe_path = cache_dir / f"{key}.onnx", cache_dir / f"{key}.json"
    recipe = _cached_recipe(path, recipe_path)
    cached = recipe is not None
    if recipe is None:
        recipe = _build(model, precision, static, path, recipe_path, ort_version)
    data = path.read_bytes()
    built = replace(
        model,
        label=f"{model.label} ({precision.value})",
        sha256=hashlib.sha256(data).hexdigest(),
        path=path,
        data=None,
        precision=recipe_pairs(recipe),
    )
    return PrecisionModel(built, recipe, cached)


def recipe_pairs(recipe: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A recipe as ``ModelSource.precision`` holds it (hashable): sorted (key, value) pairs, its dict
    values (options, calibration) as canonical JSON text."""
    return tuple(
        sorted(
            (str(key), json.dumps(value, sort_keys=True) if isinstance(value, Mapping) else value)
            for key, value in recipe.items()
        )
    )


def recipe_of(model: ModelSource) -> dict[str, Any]:
    """The recipe a built source carries (``{}`` for the model under test): :func:`recipe_pairs`
    undone. The recipe's other values are names, digests and versions: none starts with ``{``."""
    return {
        key: json.loads(value) if isinstance(value, str) and value.startswith("{") else value
        for key, value in model.precision
    }


def _cached_recipe(path: Path, recipe_path: Path) -> dict[str, Any] | None:
    """The recipe of a finished build in the cache; None when there is none, or its recipe cannot be
    read (the build then runs again and replaces both files)."""
    if not (path.exists() and recipe_path.exists()):
        return None
    try:
        recipe = json.loads(recipe_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return recipe if isinstance(recipe, dict) else None


def _build(
    model: ModelSource,
    precision: Precision,
    calibration: Calibration | None,
    destination: Path,
    recipe_path: Path,
    ort_version: str,
) -> dict[str, Any]:
    """Run the precision's tool and move its model, then its recipe, into place (each atomically: a
    reader that finds both finds both whole). Returns the recipe."""
    method = METHODS[precision]
    destination.parent.mkdir(parents=True, exist_ok=True)
    # Beside the destination, so that the finished files are moved into place on the same file system.
    with tempfile.TemporaryDirectory(prefix=".building-", dir=destination.parent) as scratch_dir:
        scratch = Path(scratch_dir).absolute()  # the tools run in it: every path they take is absolute
        source = model.path.absolute() if model.path is not None else scratch / "model.onnx"
        if model.path is None:
            source.write_bytes(model.data or b"")
        written = scratch / "built.onnx"
        failure = ""
        with running_tools(scratch):
            try:
                options = _BUILDERS[precision](source, written, scratch, calibration)
            except Exception as exc:  # the tools raise anything from KeyError to onnx's own errors
                failure = describe_failure(exc)
            gc.collect()  # temporary directories a failed tool left to the collector: collected quietly
        if failure:
            raise ModelError(
                f"'{model.label}': {method} cannot build the {precision.value} model ({failure})"
            )
        recipe: dict[str, Any] = {
            "precision": precision.value,
            "method": method,
            "options": options,
            "source_sha256": model.sha256,
            "ort_version": ort_version,
        }
        if calibration is not None:
            recipe["calibration"] = {
                "source": calibration.source,
                "sha256": calibration.digest,
                "synthetic": calibration.synthetic,
                "sets": len(calibration.feeds),
            }
        written_recipe = scratch / "recipe.json"
        written_recipe.write_text(json.dumps(recipe, sort_keys=True, indent=1), encoding="utf-8")
        os.replace(written, destination)
        os.replace(written_recipe, recipe_path)
    return recipe


def describe_failure(exc: BaseException) -> str:
    """``Type: message`` on one line, the message cut to 300 characters."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:_REASON_CHARS]}"


@contextlib.contextmanager
def running_tools(workdir: Path) -> Iterator[None]:
    """Run onnxruntime's Python tools quietly, in ``workdir``. They log advice and progress through
    ``logging`` (some on the root logger), warn, and print; a run that turns warnings into errors
    must not fail on them, and none of it is the user's business: their failures are exceptions.
    And they write beside them: symbolic shape inference that gives up saves
    ``sym_shape_infer_temp.onnx`` and a ``<uuid>.data`` into the current directory (the user's
    repository), so they run in a scratch directory that is removed after them."""
    import onnxruntime  # the tools' own package: its files are where their log records come from

    muted = _FromPackage(str(Path(onnxruntime.__file__).parent))
    # Records logged on the root logger meet its filters; those of named loggers meet only the
    # handlers they propagate to.
    targets: list[logging.Logger | logging.Handler] = [logging.root, *logging.root.handlers]
    if logging.lastResort is not None:
        targets.append(logging.lastResort)
    for target in targets:
        target.addFilter(muted)
    was_in = os.getcwd()
    os.chdir(workdir)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        os.chdir(was_in)
        for target in targets:
            target.removeFilter(muted)


class _FromPackage(logging.Filter):
    """Drops the log records emitted from one package's files."""

    def __init__(self, directory: str) -> None:
        super().__init__()
        self._prefix = os.path.join(directory, "")

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.pathname.startswith(self._prefix)


class FeedSets:
    """The ``CalibrationDataReader`` the quantization tools read input sets from (they only call
    ``get_next`` and iterate; onnxruntime's base class accepts any class with ``get_next``)."""

    def __init__(self, feeds: Sequence[Mapping[str, Array]]) -> None:
        self._feeds = list(feeds)
        self._next = 0

    def get_next(self) -> dict[str, Array] | None:
        if self._next >= len(self._feeds):
            return None
        self._next += 1
        return dict(self._feeds[self._next - 1])

    def __iter__(self) -> FeedSets:
        return self

    def __next__(self) -> dict[str, Array]:
        feed = self.get_next()
        if feed is None:
            raise StopIteration
        return feed

    def __len__(self) -> int:
        return len(self._feeds)


Builder = Callable[[Path, Path, Path, Calibration | None], dict[str, Any]]


def _float16(source: Path, written: Path, scratch: Path, calibration: Calibration | None) -> dict[str, Any]:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    options = OPTIONS[Precision.FP16]
    converted = convert_float_to_float16(onnx.load(str(source)), keep_io_types=options["keep_io_types"])
    onnx.save(converted, str(written))
    return dict(options)


def _dynamic(source: Path, written: Path, scratch: Path, calibration: Calibration | None) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    options = OPTIONS[Precision.INT8_DYNAMIC]
    quantize_dynamic(
        source,
        written,
        weight_type=QuantType[options["weight_type"]],
        per_channel=options["per_channel"],
        reduce_range=options["reduce_range"],
    )
    return dict(options)


def _static(source: Path, written: Path, scratch: Path, calibration: Calibration | None) -> dict[str, Any]:
    """``quant_pre_process`` (shape inference and ORT's optimizer, as ORT advises), then
    ``quantize_static``. Pre-processing is best effort: without symbolic shape inference when that
    fails (it does on the encoder example, and without sympy), skipped when that fails too or when
    its output cannot be quantized (it leaves an IR 3 model asking for inputs it had folded away)."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    assert calibration is not None
    options = dict(OPTIONS[Precision.INT8_STATIC])

    def quantize(model: Path) -> None:
        quantize_static(
            model,
            written,
            FeedSets(calibration.feeds),
            quant_format=QuantFormat[options["quant_format"]],
            activation_type=QuantType[options["activation_type"]],
            weight_type=QuantType[options["weight_type"]],
            per_channel=options["per_channel"],
            reduce_range=options["reduce_range"],
            calibrate_method=CalibrationMethod[options["calibrate_method"]],
        )

    prepared, options["pre_process"] = _pre_process(source, scratch / "pre_processed.onnx")
    if prepared == source:
        quantize(source)
        return options
    try:
        quantize(prepared)
    except Exception as exc:  # retried on the model as given; its failure is the one reported
        options["pre_process"] = f"failed: quantize_static failed on its output ({describe_failure(exc)})"
        quantize(source)
    return options


def _pre_process(source: Path, destination: Path) -> tuple[Path, str]:
    """The model to quantize and what pre-processing did."""
    from onnxruntime.quantization import quant_pre_process

    try:
        quant_pre_process(source, destination)
        return destination, "done"
    except Exception as exc:
        first = describe_failure(exc)
    try:
        quant_pre_process(source, destination, skip_symbolic_shape=True)
        return destination, f"done without symbolic shape inference ({first})"
    except Exception as exc:
        return source, f"failed: {describe_failure(exc)}"


_BUILDERS: dict[Precision, Builder] = {
    Precision.FP16: _float16,
    Precision.INT8_DYNAMIC: _dynamic,
    Precision.INT8_STATIC: _static,
}
