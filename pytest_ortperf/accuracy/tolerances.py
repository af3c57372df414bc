"""Accuracy tolerances: the limits that judge outputs, their defaults per dtype and provider,
and the parsers of the tolerance keys users write (options, ini lines, markers)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NoReturn

from pytest_ortperf.errors import UsageError
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.variants import Precision, parse_opt_level, parse_precision, split_precision
from pytest_ortperf.values import percent_value, safe_repr

if TYPE_CHECKING:
    import numpy as np

_TOLERANCE_KEYS = ("atol", "rtol", "cosine", "mismatch", "sqnr")
SELECTOR_DTYPES = ("float16", "float32", "float64")
SCOPES = ("dtype", "variant", "output")


@dataclass(frozen=True)
class Tolerance:
    """Limits for one output: every element within ``atol + rtol * |expected|`` (up to a
    ``mismatch`` fraction of elements), cosine similarity at least ``cosine`` and, when ``sqnr`` is
    above 0, a signal-to-noise ratio of at least ``sqnr`` dB."""

    atol: float
    rtol: float
    cosine: float
    mismatch: float = 0.0
    sqnr: float = 0.0  # dB; 0: not judged

    def describe(self) -> str:
        if self.mismatch >= 1.0:  # elements are not judged one by one (quantized precisions)
            extra = f", sqnr>={self.sqnr:g} dB" if self.sqnr else ""
            return f"cosine>={self.cosine:g}{extra}"
        extra = f", mismatch<={self.mismatch:g}" if self.mismatch else ""
        extra += f", sqnr>={self.sqnr:g} dB" if self.sqnr else ""
        return f"atol={self.atol:g}, rtol={self.rtol:g}, cosine>={self.cosine:g}{extra}"


# Documented defaults per dtype (docs/accuracy.md, "Tolerances"). Reduced-precision providers loosen them.
DTYPE_TOLERANCES: dict[str, Tolerance] = {
    "float64": Tolerance(atol=1e-9, rtol=1e-7, cosine=0.999999),
    "float32": Tolerance(atol=1e-5, rtol=1e-4, cosine=0.99999),
    "float16": Tolerance(atol=1e-3, rtol=1e-2, cosine=0.999),
}
# TensorRT may pick TF32/FP16 kernels; CUDA convolutions may use TF32.
PROVIDER_TOLERANCES: dict[str, Tolerance] = {
    "tensorrt": Tolerance(atol=1e-3, rtol=1e-2, cosine=0.999),
    "trtrtx": Tolerance(atol=1e-3, rtol=1e-2, cosine=0.999),
    "cuda": Tolerance(atol=1e-4, rtol=1e-3, cosine=0.9999),
    "dml": Tolerance(atol=1e-3, rtol=1e-2, cosine=0.999),
    "coreml": Tolerance(atol=1e-3, rtol=1e-2, cosine=0.999),
}
# Precision variants against fp32 (and against their own recorded outputs), from what the example
# models measured (docs/accuracy.md, "Precision variants": fp16 at least 61 dB SQNR and 1-cos at most
# 2e-7; int8 at least 28.8 dB and 1-cos at most 6.5e-4). fp16 keeps element-wise limits, loosened to
# the error of a 10-bit mantissa through a deep graph (0.5% of elements may exceed them); int8 moves
# every element by up to a quantization step of its tensor, 2-3.5% of the output's largest value, so
# it is judged as a whole: cosine and SQNR, each with a margin of about ten times the measured noise.
PRECISION_TOLERANCES: dict[Precision, Tolerance] = {
    Precision.FP16: Tolerance(atol=1e-2, rtol=5e-2, cosine=0.9999, mismatch=0.005, sqnr=40.0),
    Precision.INT8_DYNAMIC: Tolerance(atol=0.0, rtol=0.0, cosine=0.995, mismatch=1.0, sqnr=20.0),
    Precision.INT8_STATIC: Tolerance(atol=0.0, rtol=0.0, cosine=0.995, mismatch=1.0, sqnr=20.0),
}
EXACT = Tolerance(atol=0.0, rtol=0.0, cosine=-1.0)


@dataclass(frozen=True)
class ToleranceSpec:
    """User overrides, most specific first: per output name, per variant (``cuda-all`` before
    ``cuda``), per dtype, then for every output. Each replaces the built-in default for the
    metrics it names; the rest fall through to the next level."""

    overall: Mapping[str, float] = field(default_factory=dict)
    outputs: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    dtypes: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    variants: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def merged(self, other: ToleranceSpec) -> ToleranceSpec:
        return ToleranceSpec(
            {**self.overall, **other.overall},
            _merge(self.outputs, other.outputs),
            _merge(self.dtypes, other.dtypes),
            _merge(self.variants, other.variants),
        )

    def for_output(
        self, name: str, dtype: np.dtype[Any], provider_short: str, variant: str = ""
    ) -> Tolerance:
        if dtype.kind not in "fc":
            return EXACT
        base = DTYPE_TOLERANCES.get(dtype.name, DTYPE_TOLERANCES["float32"])
        looser = PROVIDER_TOLERANCES.get(provider_short)
        if looser is not None and dtype.name != "float64":
            base = Tolerance(
                atol=max(base.atol, looser.atol),
                rtol=max(base.rtol, looser.rtol),
                cosine=min(base.cosine, looser.cosine),
            )
        precision = split_precision(variant)[1] if variant else Precision.FP32
        reduced = PRECISION_TOLERANCES.get(precision)
        if reduced is not None:
            base = Tolerance(
                atol=max(base.atol, reduced.atol),
                rtol=max(base.rtol, reduced.rtol),
                cosine=min(base.cosine, reduced.cosine),
                mismatch=max(base.mismatch, reduced.mismatch),
                sqnr=reduced.sqnr,
            )
        return replace(
            base,
            **{
                **self.overall,
                **self.dtypes.get(dtype.name, {}),
                **self.variants.get(provider_short, {}),
                **(self.variants.get(precision.value, {}) if reduced is not None else {}),
                **(self.variants.get(variant, {}) if variant else {}),
                **self.outputs.get(name, {}),
            },
        )


def _merge(
    first: Mapping[str, Mapping[str, float]], second: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, float]]:
    merged = {name: dict(values) for name, values in first.items()}
    for name, values in second.items():
        merged.setdefault(name, {}).update(values)
    return merged


def parse_tolerance_key(key: str, *, source: str) -> tuple[str, str, str]:
    """``KEY`` of ``KEY=VALUE`` to (scope, selector, metric); scope "" is every output.

    ``atol``; ``dtype:float16.atol``; ``variant:cuda.rtol`` or ``variant:cuda-all.rtol``;
    ``output:NAME.atol``, or ``NAME.atol`` when NAME does not start with a scope prefix. The
    metric follows the last dot, so output names may hold dots.
    """
    text = key.strip()
    selector, dot, metric = text.rpartition(".")
    where = f"{source}: key {text!r}"
    if metric not in _TOLERANCE_KEYS:
        raise UsageError(
            f"{where}: unknown tolerance {metric!r}; use {', '.join(_TOLERANCE_KEYS)}, optionally after "
            "OUTPUT., output:OUTPUT., dtype:DTYPE. or variant:VARIANT. (e.g. dtype:float16.atol)."
        )
    if not dot:
        return "", "", metric
    scope, colon, value = selector.partition(":")
    if not colon or scope not in SCOPES:
        if not selector:
            _bad_key(where, "an empty output name")
        return "output", selector, metric
    return scope, parse_selector(scope, value, where=where), metric


def parse_selector(scope: str, value: str, *, where: str) -> str:
    """What a ``dtype:``/``variant:``/``output:`` tolerance applies to, checked; variants as ids spell
    them (``cuda``, ``cuda-all``)."""
    if not value:
        _bad_key(where, f"an empty {scope}")
    if scope == "dtype" and value not in SELECTOR_DTYPES:
        _bad_key(where, f"unknown dtype {value!r}; use {', '.join(SELECTOR_DTYPES)}")
    return _variant_selector(value, where=where) if scope == "variant" else value


def _variant_selector(text: str, *, where: str) -> str:
    """A provider (``cuda``, ``CUDAExecutionProvider``), a precision (``int8-dynamic``) or a variant id
    (``cuda-all``, ``cpu-all-int8-dynamic``), as ids spell it."""
    try:
        return parse_precision(text, source=where).value
    except UsageError:
        pass
    base, precision = split_precision(text)
    suffix = "" if precision is Precision.FP32 else f"-{precision.value}"
    provider, dash, level = base.rpartition("-")
    try:
        return resolve_provider(base, source=where).short + suffix
    except UsageError:
        if not dash:
            raise
    short = resolve_provider(provider, source=where).short
    return f"{short}-{parse_opt_level(level, source=where).value}{suffix}"


def _bad_key(where: str, why: str) -> NoReturn:
    raise UsageError(f"{where}: {why}.")


def parse_tolerance_values(values: Mapping[str, Any], *, source: str) -> dict[str, float]:
    """Validate ``atol``/``rtol``/``cosine``/``mismatch``/``sqnr`` values: numbers >= 0, cosine <= 1;
    ``sqnr`` in dB.

    ``atol``, ``rtol`` and ``cosine`` are plain numbers, as numpy's ``isclose`` takes them
    (``rtol=0.05`` allows 5% of ``|expected|``; ``rtol=5`` five times it). ``mismatch`` is a share
    of elements: a fraction up to 1 or a percentage (``0.001`` or ``"0.1%"``); a bare number above 1
    is refused with a hint at the percent form, since ``mismatch=5`` would allow every element.
    """
    parsed: dict[str, float] = {}
    for key, value in values.items():
        if key not in _TOLERANCE_KEYS:
            raise UsageError(f"{source}: unknown tolerance {key!r}; use {', '.join(_TOLERANCE_KEYS)}.")
        if key == "mismatch":
            share = percent_value(value, source=f"{source}: mismatch")
            number = float("nan") if share is None else share
        else:
            try:
                number = float(value)
            except (TypeError, ValueError, OverflowError):
                number = float("nan")
        if (
            isinstance(value, bool)
            or not math.isfinite(number)
            or number < 0
            or (key in ("cosine", "mismatch") and number > 1)
        ):
            limit = {
                "cosine": "a number between 0 and 1",
                "mismatch": "a fraction between 0 and 1 or a percentage such as '0.1%'",
            }.get(key, "a number >= 0")
            raise UsageError(f"{source}: {key} must be {limit}, got {safe_repr(value)}.")
        parsed[key] = number
    return parsed


def parse_tolerance_lines(lines: Sequence[str], *, source: str) -> ToleranceSpec:
    """``atol=1e-4`` for every output; ``logits.atol=1e-3`` or ``output:logits.atol=1e-3`` for one
    output; ``dtype:float16.atol=1e-2`` per dtype; ``variant:cuda.rtol=1e-3`` (a provider) or
    ``variant:cuda-all.rtol=1e-3`` (one variant) per variant. See :class:`ToleranceSpec` for which wins.
    """
    scopes: dict[str, dict[str, dict[str, Any]]] = {"": {"": {}}, "output": {}, "dtype": {}, "variant": {}}
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise UsageError(
                f"{source}: expected KEY=VALUE such as atol=1e-4, logits.rtol=1e-3 or "
                f"dtype:float16.atol=1e-2, got {raw!r}."
            )
        scope, selector, metric = parse_tolerance_key(key, source=source)
        scopes[scope].setdefault(selector, {})[metric] = value.strip()

    def parsed(scope: str) -> dict[str, dict[str, float]]:
        return {
            selector: parse_tolerance_values(values, source=f"{source} ({scope}:{selector})")
            for selector, values in scopes[scope].items()
        }

    return ToleranceSpec(
        parse_tolerance_values(scopes[""][""], source=source),
        parsed("output"),
        parsed("dtype"),
        parsed("variant"),
    )
