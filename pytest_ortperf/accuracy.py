"""Output accuracy: metrics of actual vs reference outputs, and the tolerances that judge them.

Pure numpy. A comparison reports, per output, max absolute and relative error,
mean absolute error, the fraction of elements outside ``np.isclose(atol,
rtol)``, cosine similarity, the worst element with both values, top-1/top-k
agreement for outputs that look like class scores, and new NaN/Inf values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from pytest_ortperf.errors import UsageError
from pytest_ortperf.options import safe_repr
from pytest_ortperf.providers import resolve_provider
from pytest_ortperf.variants import parse_opt_level

Array = npt.NDArray[Any]
TOP_K = 5
_TOLERANCE_KEYS = ("atol", "rtol", "cosine", "mismatch")
SELECTOR_DTYPES = ("float16", "float32", "float64")
SCOPES = ("dtype", "variant", "output")


@dataclass(frozen=True)
class Tolerance:
    """Limits for one output: every element within ``atol + rtol * |expected|`` (up to a
    ``mismatch`` fraction of elements) and cosine similarity at least ``cosine``."""

    atol: float
    rtol: float
    cosine: float
    mismatch: float = 0.0

    def describe(self) -> str:
        extra = f", mismatch<={self.mismatch:g}" if self.mismatch else ""
        return f"atol={self.atol:g}, rtol={self.rtol:g}, cosine>={self.cosine:g}{extra}"


# Documented defaults per dtype (README "Accuracy"). Reduced-precision providers loosen them.
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
        return replace(
            base,
            **{
                **self.overall,
                **self.dtypes.get(dtype.name, {}),
                **self.variants.get(provider_short, {}),
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
    """A provider (``cuda``, ``CUDAExecutionProvider``) or a variant id (``cuda-all``), as ids spell it."""
    provider, dash, level = text.rpartition("-")
    try:
        return resolve_provider(text, source=where).short
    except UsageError:
        if not dash:
            raise
    return f"{resolve_provider(provider, source=where).short}-{parse_opt_level(level, source=where).value}"


def _bad_key(where: str, why: str) -> NoReturn:
    raise UsageError(f"{where}: {why}.")


def parse_tolerance_values(values: Mapping[str, Any], *, source: str) -> dict[str, float]:
    """Validate ``atol``/``rtol``/``cosine``/``mismatch`` values (numbers >= 0; cosine <= 1)."""
    parsed: dict[str, float] = {}
    for key, value in values.items():
        if key not in _TOLERANCE_KEYS:
            raise UsageError(f"{source}: unknown tolerance {key!r}; use {', '.join(_TOLERANCE_KEYS)}.")
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            number = float("nan")
        if (
            isinstance(value, bool)
            or not np.isfinite(number)
            or number < 0
            or (key == "cosine" and number > 1)
        ):
            limit = "between 0 and 1" if key == "cosine" else ">= 0"
            raise UsageError(f"{source}: {key} must be a number {limit}, got {safe_repr(value)}.")
        parsed[key] = number
    return parsed


@dataclass(frozen=True)
class OutputComparison:
    """One output against one reference."""

    name: str
    reference: str
    tolerance: Tolerance
    problem: str = ""
    failed_metric: str = ""
    count: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    mean_abs: float = 0.0
    mismatches: int = 0
    cosine: float | None = None
    worst_index: tuple[int, ...] = ()
    worst_actual: float = 0.0
    worst_expected: float = 0.0
    top1: float | None = None
    topk: float | None = None
    note: str = ""  # why a passing output was not compared element by element ("identical", ...)
    sampled_from: int = 0  # the whole tensor's size when the elements compared are its subsample

    @property
    def ok(self) -> bool:
        return not self.problem and not self.failed_metric

    @property
    def mismatch_fraction(self) -> float:
        return self.mismatches / self.count if self.count else 0.0

    def describe(self) -> str:
        """One line (plus detail) naming the output, metric, value, limit and worst element."""
        head = f"output {self.name!r} vs {self.reference}"
        if self.problem:
            return f"{head}: {self.problem}"
        if self.note and not self.count:
            return f"{head}: {'ok' if self.ok else 'FAILED on ' + self.failed_metric} ({self.note})"
        sampled = f" sampled (of {self.sampled_from})" if self.sampled_from else ""
        numbers = (
            f"max abs {self.max_abs:.3g}, max rel {self.max_rel:.3g}, mean abs {self.mean_abs:.3g}, "
            f"{self.mismatches} of {self.count}{sampled} elements outside tolerance "
            f"({self.mismatch_fraction:.2%})"
        )
        if self.cosine is not None:
            shown, limit = distinct_digits(1.0 - self.cosine, 1.0 - self.tolerance.cosine)
            numbers += f", cosine {self.cosine:.6f} (1-cos {shown}"
            numbers += f" > {limit} allowed)" if self.cosine < self.tolerance.cosine else ")"
        if self.top1 is not None:
            numbers += f", top-1 agreement {self.top1:.0%}, top-{TOP_K} overlap {self.topk:.0%}"
        status = "ok" if self.ok else f"FAILED on {self.failed_metric}"
        worst = (
            f"; worst at {list(self.worst_index)}: actual {self.worst_actual:.6g}, "
            f"expected {self.worst_expected:.6g}"
            if self.count
            else ""
        )
        return f"{head}: {status} ({numbers}{worst}; {self.tolerance.describe()})"


def distinct_digits(value: float, limit: float) -> tuple[str, str]:
    """Both numbers with 3 significant digits, or as many more as it takes to tell them apart."""
    for digits in range(3, 18):
        shown, bound = f"{value:.{digits}g}", f"{limit:.{digits}g}"
        if shown != bound or value == limit:
            return shown, bound
    return repr(value), repr(limit)


def compare_output(
    name: str, actual: Array, expected: Array, tolerance: Tolerance, reference: str
) -> OutputComparison:
    """All metrics of ``actual`` against ``expected`` and the first limit they break, if any."""
    base = OutputComparison(name=name, reference=reference, tolerance=tolerance)
    if actual.shape != expected.shape:
        return replace(base, problem=f"shape changed: {list(expected.shape)} -> {list(actual.shape)}")
    if actual.dtype != expected.dtype:
        return replace(base, problem=f"dtype changed: {expected.dtype} -> {actual.dtype}")
    if actual.size == 0:
        return base
    if actual.dtype.kind in "USO":  # text: exact
        differ = np.flatnonzero(actual.ravel() != expected.ravel())
        if differ.size == 0:
            return replace(base, count=int(actual.size))
        first = differ[0]
        index = [int(i) for i in np.unravel_index(first, actual.shape)]
        return replace(
            base,
            count=int(actual.size),
            mismatches=int(differ.size),
            problem=f"{differ.size} of {actual.size} values differ (first at {index}: "
            f"{actual.ravel()[first].item()!r}, expected {expected.ravel()[first].item()!r})",
        )
    a = actual.astype(np.float64).ravel()
    e = expected.astype(np.float64).ravel()
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # relative error vs 0 is inf
        diff = np.abs(a - e)
        diff[(a == e) | (np.isnan(a) & np.isnan(e))] = 0.0  # equal infinities, matching NaNs
        rel = np.where(diff == 0.0, 0.0, diff / np.maximum(np.abs(e), np.finfo(np.float64).tiny))
    if actual.dtype.kind in "iub":  # exact, on the original values (int64 above 2**53 too)
        close = (actual == expected).ravel()
    else:
        close = np.isclose(a, e, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True)
    excess = np.where(close, -np.inf, np.nan_to_num(diff, nan=np.inf, posinf=np.inf))
    worst = int(np.argmax(excess)) if not close.all() else int(np.argmax(np.nan_to_num(diff)))
    new_nonfinite = int(np.count_nonzero(~np.isfinite(a) & np.isfinite(e)))
    top1, topk = _class_agreement(actual, expected)
    finite_diff = diff[~np.isnan(diff)]
    finite_rel = rel[~np.isnan(rel)]
    comparison = replace(
        base,
        count=int(a.size),
        max_abs=float(finite_diff.max()) if finite_diff.size else float("nan"),
        max_rel=float(finite_rel.max()) if finite_rel.size else float("nan"),
        mean_abs=float(finite_diff.mean()) if finite_diff.size else float("nan"),
        mismatches=int(np.count_nonzero(~close)),
        cosine=_cosine(a, e) if actual.dtype.kind in "fc" else None,
        worst_index=tuple(int(i) for i in np.unravel_index(worst, actual.shape)),
        worst_actual=float(a[worst]),
        worst_expected=float(e[worst]),
        top1=top1,
        topk=topk,
    )
    if new_nonfinite:
        return replace(comparison, failed_metric=f"nan/inf ({new_nonfinite} new non-finite values)")
    if comparison.mismatch_fraction > tolerance.mismatch:
        return replace(comparison, failed_metric="isclose")
    if comparison.cosine is not None and comparison.cosine < tolerance.cosine:
        return replace(comparison, failed_metric="cosine")
    return comparison


def _cosine(a: Array, e: Array) -> float:
    finite = np.isfinite(a) & np.isfinite(e)
    a, e = a[finite], e[finite]
    norm = float(np.linalg.norm(a) * np.linalg.norm(e))
    if norm == 0.0:
        return 1.0 if not a.any() and not e.any() else 0.0
    return float(np.dot(a, e) / norm)


def _class_agreement(actual: Array, expected: Array) -> tuple[float | None, float | None]:
    """Top-1 and top-k agreement when the output looks like class scores ([..., classes >= 10])."""
    squeezed = expected.squeeze()
    if expected.dtype.kind != "f" or squeezed.ndim not in (1, 2) or squeezed.shape[-1] < 2 * TOP_K:
        return None, None
    e = squeezed.reshape(-1, squeezed.shape[-1])
    a = actual.squeeze().reshape(e.shape)
    top1 = float(np.mean(np.argmax(a, axis=1) == np.argmax(e, axis=1)))
    a_top = np.argsort(-a, axis=1)[:, :TOP_K]
    e_top = np.argsort(-e, axis=1)[:, :TOP_K]
    overlap = np.mean([len(set(x) & set(y)) / TOP_K for x, y in zip(a_top, e_top, strict=True)])
    return top1, float(overlap)


def compare_outputs(
    actual: Mapping[str, Array],
    expected: Mapping[str, Array],
    *,
    reference: str,
    tolerances: ToleranceSpec,
    provider_short: str,
    variant: str = "",
    absent_note: str = "",
) -> list[OutputComparison]:
    """Every expected output against the actual one; missing and new outputs are problems, unless
    the reference covers only some outputs (``absent_note``: what to say of the others)."""
    results = []
    for name, reference_array in expected.items():
        tolerance = tolerances.for_output(name, reference_array.dtype, provider_short, variant)
        if name not in actual:
            results.append(
                OutputComparison(name, reference, tolerance, problem="output missing from the model now")
            )
            continue
        results.append(compare_output(name, actual[name], reference_array, tolerance, reference))
    for name in actual:
        if name not in expected:
            tolerance = tolerances.for_output(name, actual[name].dtype, provider_short, variant)
            results.append(
                OutputComparison(name, reference, tolerance, note=absent_note)
                if absent_note
                else OutputComparison(name, reference, tolerance, problem="new output, not in the reference")
            )
    return results
