"""Output accuracy: metrics of actual vs reference outputs, judged by a :class:`Tolerance`.

Pure numpy. A comparison reports, per output, max absolute and relative error,
mean absolute error, the fraction of elements outside ``np.isclose(atol,
rtol)``, cosine similarity, the signal-to-quantization-noise ratio (SQNR, dB),
the worst elements with both values, top-1/top-k agreement for outputs shaped as
class scores (``[N, classes]``, or a map of scores per class), new NaN/Inf values,
and how the elements' errors spread against their tolerance (a histogram of
``|actual - expected| / (atol + rtol * |expected|)`` over fixed decades: an
element above 1 is outside the tolerance).

Cosine and SQNR judge an output as a whole, so they judge only what the element
limits leave open: an output whose every element is within its tolerance, or
whose values all lie below the tolerance's noise floor (``atol``, where the
tolerance is absolute), passes whatever its cosine (on a near-zero output, a
1e-7 difference is a large angle and means nothing).

Outputs that are not one tensor (sequences, maps, ZipMap's sequence of maps,
absent optional outputs) are paired by :mod:`pytest_ortperf.accuracy.output_values` and
their arrays compared here; what cannot be compared is named "not compared".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_ortperf.accuracy.output_values import Key, OutputValue, describe, pair, value_dtype
from pytest_ortperf.accuracy.tolerances import Tolerance, ToleranceSpec

Array = npt.NDArray[Any]
TOP_K = 5
WORST_KEPT = 5  # the worst elements a comparison keeps, worst first
# Edges of the error-against-tolerance histogram: bin 0 holds the exact elements and those below
# 1e-4 of their tolerance, each next bin a decade, the last those at 1000x and more. An element in a
# bin from TOLERANCE_BIN on is outside its tolerance (its error over atol + rtol * |expected| is >= 1).
ERROR_EDGES = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)
TOLERANCE_BIN = ERROR_EDGES.index(1.0) + 1
_EDGES = np.asarray(ERROR_EDGES)


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
    sqnr_db: float | None = None  # 10 log10(|expected|^2 / |actual - expected|^2); inf when equal
    worst_index: tuple[int, ...] = ()
    worst_actual: float = 0.0
    worst_expected: float = 0.0
    top1: float | None = None
    topk: float | None = None
    note: str = ""  # why a passing output was not compared element by element ("identical", ...)
    sampled_from: int = 0  # the whole tensor's size when the elements compared are its subsample
    # Elements per bin of error / (atol + rtol * |expected|), bins split at ERROR_EDGES; NaN errors
    # (a new NaN) count in the last bin.
    error_bins: tuple[int, ...] = ()
    worst_elements: tuple[tuple[tuple[int, ...], float, float], ...] = ()  # (index, actual, expected)
    not_compared: str = ""  # why this output was not compared at all (it passes, and says so)
    keys: tuple[Key, ...] = ()  # a map's keys: the last axis's columns, named in the worst element
    # Why cosine or SQNR, below its limit, did not fail this output (every element within tolerance).
    unjudged: str = ""

    @property
    def ok(self) -> bool:
        return not self.problem and not self.failed_metric

    @property
    def mismatch_fraction(self) -> float:
        return self.mismatches / self.count if self.count else 0.0

    def describe(self) -> str:
        """One line (plus detail) naming the output, metric, value, limit and worst element; the
        reference is named once, by the line the outputs compared with it are listed under."""
        head = f"output {self.name!r}"
        if self.problem:
            return f"{head}: {self.problem}"
        if self.not_compared:
            return f"{head}: not compared ({self.not_compared})"
        if self.note and not self.count:
            return f"{head}: {'ok' if self.ok else 'FAILED on ' + self.failed_metric} ({self.note})"
        sampled = f" sampled (of {self.sampled_from})" if self.sampled_from else ""
        numbers = f"max abs {self.max_abs:.3g}, max rel {self.max_rel:.3g}, mean abs {self.mean_abs:.3g}"
        if self.tolerance.mismatch < 1.0:  # else elements are not judged one by one (int8)
            numbers += (
                f", {self.mismatches} of {self.count}{sampled} elements outside tolerance "
                f"({self.mismatch_fraction:.2%})"
            )
        why = f", not judged: {self.unjudged}" if self.unjudged else ""
        if self.cosine is not None:
            shown, limit = distinct_digits(1.0 - self.cosine, 1.0 - self.tolerance.cosine)
            numbers += f", cosine {self.cosine:.6f} (1-cos {shown}"
            if self.cosine < self.tolerance.cosine:
                numbers += f" > {limit}{why or ' allowed'}"
                why = ", not judged" if why else ""
            numbers += ")"
        if self.sqnr_db is not None and self.tolerance.sqnr:
            numbers += f", SQNR {self.sqnr_db:.1f} dB"
            if self.sqnr_db < self.tolerance.sqnr:
                numbers += f" (< {self.tolerance.sqnr:g}{why or ' allowed'})"
        if self.top1 is not None:
            numbers += f", top-1 agreement {self.top1:.0%}"
            numbers += f", top-{TOP_K} overlap {self.topk:.0%}" if self.topk is not None else ""
        if self.keys:
            numbers += f", {_keys_shown(self.keys)}"
        status = "ok" if self.ok else f"FAILED on {self.failed_metric}"
        worst = (
            f"; worst at {self._where(self.worst_index)}: actual {self.worst_actual:.6g}, "
            f"expected {self.worst_expected:.6g}"
            if self.count
            else ""
        )
        return f"{head}: {status} ({numbers}{worst}; {self.tolerance.describe()})"

    def _where(self, index: tuple[int, ...]) -> str:
        """An element's index; in a map, its last position named by the key (``[3, key 1]``)."""
        if self.keys and index and not self.sampled_from and index[-1] < len(self.keys):
            return "[" + ", ".join([*(str(i) for i in index[:-1]), f"key {self.keys[index[-1]]!r}"]) + "]"
        return str(list(index))


def _keys_shown(keys: tuple[Key, ...], most: int = 10) -> str:
    shown = ", ".join(repr(k) for k in keys[:most])
    return (
        f"map key {shown}" if len(keys) == 1 else f"map keys {shown}" + (" ..." if len(keys) > most else "")
    )


def distinct_digits(value: float, limit: float) -> tuple[str, str]:
    """Both numbers with 3 significant digits, or as many more as it takes to tell them apart."""
    for digits in range(3, 18):
        shown, bound = f"{value:.{digits}g}", f"{limit:.{digits}g}"
        if shown != bound or value == limit:
            return shown, bound
    return repr(value), repr(limit)


def compare_output(
    name: str,
    actual: Array,
    expected: Array,
    tolerance: Tolerance,
    reference: str,
    *,
    scores: bool | None = None,
    keys: tuple[Key, ...] = (),
) -> OutputComparison:
    """All metrics of ``actual`` against ``expected`` and the first limit they break, if any.

    ``scores``: whether the output holds class scores on its last axis (a map of scores); None judges
    by the shape. ``keys``: a map's keys, the last axis's columns."""
    base = OutputComparison(name=name, reference=reference, tolerance=tolerance, keys=keys)
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
    floor = relative_floor(e, expected.dtype, tolerance)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # x / 0 is inf: a floor of 0
        diff = np.abs(a - e)
        diff[(a == e) | (np.isnan(a) & np.isnan(e))] = 0.0  # equal infinities, matching NaNs
        rel = np.where(diff == 0.0, 0.0, diff / np.maximum(np.abs(e), floor))
        # Each element's error over its own tolerance; an exact one is 0, a NaN error (0 / 0 with a
        # zero tolerance, or a new NaN) counts as beyond every edge.
        exact = diff == 0.0
        against = diff / (tolerance.atol + tolerance.rtol * np.abs(e))
        against[exact] = 0.0
        against[np.isnan(against)] = np.inf
    if actual.dtype.kind in "iub":  # exact, on the original values (int64 above 2**53 too)
        close = (actual == expected).ravel()
    else:
        close = np.isclose(a, e, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True)
    excess = np.where(close, -np.inf, np.nan_to_num(diff, nan=np.inf, posinf=np.inf))
    worst = int(np.argmax(excess)) if not close.all() else int(np.argmax(np.nan_to_num(diff)))
    new_nonfinite = int(np.count_nonzero(~np.isfinite(a) & np.isfinite(e)))
    top1, topk = _class_agreement(actual, expected, scores=scores)
    finite_diff = diff[~np.isnan(diff)]
    finite_rel = rel[~np.isnan(rel)]
    bins = np.bincount(np.searchsorted(_EDGES, against, side="right"), minlength=len(ERROR_EDGES) + 1)
    order = _worst_elements(np.nan_to_num(diff, nan=np.inf), close)
    comparison = replace(
        base,
        count=int(a.size),
        max_abs=float(finite_diff.max()) if finite_diff.size else float("nan"),
        max_rel=float(finite_rel.max()) if finite_rel.size else float("nan"),
        mean_abs=float(finite_diff.mean()) if finite_diff.size else float("nan"),
        mismatches=int(np.count_nonzero(~close)),
        cosine=_cosine(a, e) if actual.dtype.kind in "fc" else None,
        sqnr_db=sqnr_db(a, e) if actual.dtype.kind in "fc" else None,
        worst_index=tuple(int(i) for i in np.unravel_index(worst, actual.shape)),
        worst_actual=float(a[worst]),
        worst_expected=float(e[worst]),
        top1=top1,
        topk=topk,
        error_bins=tuple(bins.tolist()),
        worst_elements=tuple(
            (tuple(int(i) for i in np.unravel_index(int(flat), actual.shape)), float(a[flat]), float(e[flat]))
            for flat in order
        ),
    )
    if new_nonfinite:
        return replace(comparison, failed_metric=f"nan/inf ({new_nonfinite} new non-finite values)")
    if comparison.mismatch_fraction > tolerance.mismatch:
        return replace(comparison, failed_metric="isclose")
    low_cosine = comparison.cosine is not None and comparison.cosine < tolerance.cosine
    low_sqnr = comparison.sqnr_db is not None and bool(tolerance.sqnr) and comparison.sqnr_db < tolerance.sqnr
    if not (low_cosine or low_sqnr):
        return comparison
    unjudged = whole_output_exempt(a, e, mismatches=comparison.mismatches, tolerance=tolerance)
    if unjudged:
        return replace(comparison, unjudged=unjudged)
    return replace(comparison, failed_metric="cosine" if low_cosine else "sqnr")


def whole_output_exempt(a: Array, e: Array, *, mismatches: int, tolerance: Tolerance) -> str:
    """Why cosine and SQNR do not judge an output, or "" when they do: every element is within its
    tolerance (the element limits already passed it, and the angle between two near-zero vectors
    is noise), or every value on both sides is within ``atol`` of zero (the tolerance's noise floor,
    where it is absolute). A quantized precision allows a share of elements outside tolerance
    (``mismatch``), so its outputs rarely have none outside; its ``atol`` is at least float32's, so the
    noise floor applies to it as to fp32."""
    if mismatches == 0:
        return "every element within tolerance"
    if tolerance.atol > 0.0:
        with np.errstate(invalid="ignore"):
            peak = max(float(np.nanmax(np.abs(a), initial=0.0)), float(np.nanmax(np.abs(e), initial=0.0)))
        if peak <= tolerance.atol:
            return f"every value below the noise floor (|x| <= atol {tolerance.atol:g})"
    return ""


def _worst_elements(error: Array, close: Array) -> list[int]:
    """Flat indices of the :data:`WORST_KEPT` worst elements: outside the tolerance first, then by
    error, largest first; an exact element is never among them. Partial selection, not a sort: a
    comparison of millions of elements pays milliseconds for it."""
    picked: list[int] = []
    for group in (np.flatnonzero(~close), np.flatnonzero(close & (error > 0.0))):
        wanted = WORST_KEPT - len(picked)
        if wanted <= 0 or group.size == 0:
            continue
        values = error[group]
        top = np.argpartition(-values, wanted - 1)[:wanted] if group.size > wanted else np.arange(group.size)
        top = top[np.argsort(-values[top], kind="stable")]
        picked += [int(group[i]) for i in top if values[i] > 0.0]
    return picked


def relative_floor(expected: Array, dtype: np.dtype[Any], tolerance: Tolerance) -> float:
    """The magnitude below which an element's relative error is taken relative to it, not |expected|.

    ``atol / rtol`` when the tolerance has an ``rtol``: below it the tolerance is absolute (``atol``
    outweighs ``rtol * |expected|``), and with it ``rel <= rtol`` means the element is within
    ``atol + rtol * |expected|``, and an element outside it has ``rel > rtol``. Without an ``rtol``
    (exact dtypes, or ``rtol=0`` set), the output's resolution: one unit in the last place of its
    largest finite value for floats, 1 for integers and booleans. A floor of 0 (``atol=0``, or an
    all-zero float output) leaves the relative error of a changed zero infinite.
    """
    if tolerance.rtol > 0:
        return tolerance.atol / tolerance.rtol
    if dtype.kind not in "fc":
        return 1.0
    finite = np.abs(expected[np.isfinite(expected)])
    return float(np.finfo(dtype).eps * finite.max()) if finite.size else 0.0


def _cosine(a: Array, e: Array) -> float:
    finite = np.isfinite(a) & np.isfinite(e)
    a, e = a[finite], e[finite]
    norm = float(np.linalg.norm(a) * np.linalg.norm(e))
    if norm == 0.0:
        return 1.0 if not a.any() and not e.any() else 0.0
    return float(np.dot(a, e) / norm)


def sqnr_db(actual: Array, expected: Array) -> float:
    """Signal-to-quantization-noise ratio in dB of ``actual`` against ``expected`` (finite elements):
    the power of the expected signal over the power of the difference. inf when they are equal,
    -inf when the expected signal is all zeros and the actual is not."""
    finite = np.isfinite(actual) & np.isfinite(expected)
    a, e = actual[finite].astype(np.float64), expected[finite].astype(np.float64)
    noise = float(np.sum((a - e) ** 2))
    if noise == 0.0:
        return math.inf
    signal = float(np.sum(e**2))
    return 10.0 * math.log10(signal / noise) if signal > 0.0 else -math.inf


def agreement(actual: Array, expected: Array, tolerance: Tolerance) -> float:
    """The share of ``actual`` that agrees with ``expected``: for outputs whose last axis holds scores
    (two or more float values), the share of rows whose arg-max agrees; for other outputs, the share
    of elements within the tolerance."""
    if actual.shape != expected.shape or actual.size == 0:
        return 0.0 if actual.shape != expected.shape else 1.0
    if expected.dtype.kind == "f" and expected.ndim >= 1 and expected.shape[-1] >= 2:
        rows_a = actual.reshape(-1, actual.shape[-1])
        rows_e = expected.reshape(-1, expected.shape[-1])
        return float(np.mean(np.argmax(rows_a, axis=1) == np.argmax(rows_e, axis=1)))
    if expected.dtype.kind not in "fc":
        return float(np.mean(actual == expected))
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    return float(np.mean(np.isclose(a, e, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True)))


def score_shaped(expected: Array, scores: bool | None = None) -> bool:
    """Whether an output holds class scores, where top-1 agreement means something: a float map of
    scores keyed by class (``scores=True``: a map, or ZipMap's sequence of maps, two classes or
    more), or a float tensor shaped exactly ``[N, classes]`` with at least ``2 * TOP_K`` classes (so
    a detector's ``[N, 4]`` boxes are not taken for scores). A heatmap (``1x1xHxW``), an embedding,
    a 1-D vector is not: its "top-1" would be the brightest pixel of a row."""
    if expected.dtype.kind != "f" or expected.size == 0 or scores is False:
        return False
    if scores:
        return expected.ndim in (1, 2) and expected.shape[-1] >= 2
    return expected.ndim == 2 and expected.shape[-1] >= 2 * TOP_K


def _class_agreement(
    actual: Array, expected: Array, *, scores: bool | None = None
) -> tuple[float | None, float | None]:
    """Top-1 agreement for score-shaped outputs (:func:`score_shaped`), and top-k overlap where there
    are more than k classes."""
    if not score_shaped(expected, scores):
        return None, None
    e = expected.reshape(-1, expected.shape[-1])
    a = actual.reshape(e.shape)
    top1 = float(np.mean(np.argmax(a, axis=1) == np.argmax(e, axis=1)))
    if e.shape[-1] <= TOP_K:
        return top1, None
    a_top = np.argsort(-a, axis=1)[:, :TOP_K]
    e_top = np.argsort(-e, axis=1)[:, :TOP_K]
    overlap = np.mean([len(set(x) & set(y)) / TOP_K for x, y in zip(a_top, e_top, strict=True)])
    return top1, float(overlap)


def compare_outputs(
    actual: Mapping[str, OutputValue],
    expected: Mapping[str, OutputValue],
    *,
    reference: str,
    tolerances: ToleranceSpec,
    provider_short: str,
    variant: str = "",
    absent_note: str = "",
) -> list[OutputComparison]:
    """Every expected output against the actual one; missing and new outputs are problems, unless
    the reference covers only some outputs (``absent_note``: what to say of the others). An output
    that is not one tensor gives one comparison per array it holds (a sequence's elements
    ``name[0]``, ``name[1]``...), or one naming what differs in its structure or why it was not
    compared."""
    results = []
    for name, reference_value in expected.items():
        tolerance = tolerances.for_output(name, value_dtype(reference_value), provider_short, variant)
        if name not in actual:
            results.append(
                OutputComparison(name, reference, tolerance, problem="output missing from the model now")
            )
            continue
        current = actual[name]
        if isinstance(current, np.ndarray) and isinstance(reference_value, np.ndarray):
            results.append(compare_output(name, current, reference_value, tolerance, reference))
            continue
        paired = pair(name, current, reference_value)
        for where, problem in paired.problems:
            results.append(OutputComparison(where, reference, tolerance, problem=problem))
        for where, why in paired.not_compared:
            results.append(OutputComparison(where, reference, tolerance, not_compared=why))
        for where, note in paired.notes:
            results.append(OutputComparison(where, reference, tolerance, note=note))
        for leaf in paired.leaves:
            own = tolerances.for_output(leaf.output, leaf.expected.dtype, provider_short, variant)
            results.append(
                compare_output(
                    leaf.name, leaf.actual, leaf.expected, own, reference, scores=leaf.scores, keys=leaf.keys
                )
            )
    for name, value in actual.items():
        if name not in expected:
            tolerance = tolerances.for_output(name, value_dtype(value), provider_short, variant)
            results.append(
                OutputComparison(name, reference, tolerance, note=absent_note)
                if absent_note
                else OutputComparison(
                    name,
                    reference,
                    tolerance,
                    problem="new output, not in the reference"
                    if isinstance(value, np.ndarray)
                    else f"new output ({describe(value)}), not in the reference",
                )
            )
    return results
