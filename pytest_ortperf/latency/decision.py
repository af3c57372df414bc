"""Is the current latency really different from its reference? The comparison policy.

A change is a ratio current/reference with a distribution-free confidence
interval, however it was estimated (stored baseline or same-job A/B; see
``checks`` and ``ab``). One rule turns it into a verdict:

- regression: the estimate is above ``1 + threshold`` *and* the whole interval lies above 1;
- improved: the mirror image below ``1 / (1 + threshold)``;
- inconclusive: neither, but the interval reaches above ``1 + threshold``, so a slowdown
  of the threshold's size cannot be ruled out: the noise decided nothing, and the
  report says the smallest change this run could have detected instead of passing
  on a coin flip;
- ok: the interval rules out a slowdown beyond the threshold.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from pytest_ortperf import defaults

DEFAULT_CONFIDENCE = 0.99
# The one latency threshold, every route's: the sensitivity side by side across measuring processes
# was measured at (benchmarks/README.md, "Verdicts across measuring processes").
DEFAULT_THRESHOLD = defaults.LATENCY_THRESHOLD
# What stored figures can call: one process today against the one that recorded them, at another
# time. Per-process ratios of one true +10% change spread 1.03 .. 1.20 over six processes of a loaded
# machine (FACTS.md, "process state"), and the stored route was validated at 10% ("Gate quality by
# path"): a change is called regression or improved only beyond this as well as the threshold; a
# smaller one reads inconclusive ("could detect >= 10%"), never ok beyond the threshold.
STORED_FLOOR = 0.10


def stored_called(threshold: float) -> float:
    """The smallest change stored figures call at ``threshold``: what a recording is measured to
    resolve and what makes figures coarse (``latency/recording.py``), never finer than the floor."""
    return max(threshold, STORED_FLOOR)


class Verdict(str, enum.Enum):
    OK = "ok"
    REGRESSION = "regression"
    INCONCLUSIVE = "inconclusive"
    IMPROVED = "improved"


@dataclass(frozen=True)
class RatioEstimate:
    """current / baseline: point estimate and confidence interval."""

    ratio: float
    low: float
    high: float
    confidence: float

    def describe(self) -> str:
        pct = f"{round(self.confidence * 100, 2):g}"  # 99, or 99.9 at an early sequential look
        return f"{_signed_pct(self.ratio)} ({pct}% CI {_signed_pct(self.low)} .. {_signed_pct(self.high)})"


@dataclass(frozen=True)
class Comparison:
    """A verdict with what decided it: the mode (``stored`` or ``a/b``) and the statistic."""

    estimate: RatioEstimate
    threshold: float
    verdict: Verdict
    mode: str = "stored"
    statistic: str = "round medians, Hodges-Lehmann ratio"
    # The smallest change the route calls, whatever the threshold (:data:`STORED_FLOOR`); 0: the
    # threshold alone
    floor: float = 0.0
    # Why a verdict the statistic gave has no basis (:func:`against_plain`), "" when it has one: the
    # verdict is then inconclusive, and every report says why.
    no_basis: str = ""

    @property
    def detectable(self) -> float:
        """The smallest slowdown (fraction) this run could have called: the threshold or the noise."""
        if self.estimate.low <= 0.0:  # an interval widened past a float's range decides nothing
            return math.inf
        return max(self.threshold, self.floor, self.estimate.ratio / self.estimate.low - 1.0)

    def basis(self) -> str:
        """Which mode and statistic decided, for every report line."""
        return f"{self.mode}: {self.statistic}"


def _signed_pct(ratio: float) -> str:
    return f"{(ratio - 1.0) * 100:+.1f}%"


def ratio_interval(
    baseline: Sequence[float], current: Sequence[float], confidence: float = DEFAULT_CONFIDENCE
) -> RatioEstimate:
    """Hodges-Lehmann ratio current/baseline with a Mann-Whitney confidence interval.

    Works on logs, so the estimate is a ratio and the interval is symmetric in
    "x times slower" and "x times faster". Needs positive values.
    """
    base_raw = np.asarray(baseline, dtype=np.float64)
    curr_raw = np.asarray(current, dtype=np.float64)
    for values in (base_raw, curr_raw):
        if values.size == 0 or not (np.isfinite(values).all() and (values > 0).all()):
            raise ValueError("ratio_interval needs positive finite latencies on both sides")
    base, curr = np.log(base_raw), np.log(curr_raw)
    diffs = np.sort(np.subtract.outer(curr, base).ravel())
    m, n = base.size, curr.size
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    k = math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12))
    k = min(max(k, 0), diffs.size - 1)
    return RatioEstimate(
        ratio=float(math.exp(np.median(diffs))),
        low=float(math.exp(diffs[k])),
        high=float(math.exp(diffs[diffs.size - 1 - k])),
        confidence=confidence,
    )


def decide(estimate: RatioEstimate, threshold: float, *, floor: float = 0.0) -> Verdict:
    """The verdict rule of the module docstring; ``floor``: a route that cannot call changes smaller
    than it (:data:`STORED_FLOOR`) calls regression or improved only beyond both, and ok only inside
    the threshold."""
    called = max(threshold, floor)
    slower, faster = 1.0 + called, 1.0 / (1.0 + called)
    if estimate.ratio > slower and estimate.low > 1.0:
        return Verdict.REGRESSION
    if estimate.ratio < faster and estimate.high < 1.0:
        return Verdict.IMPROVED
    if estimate.high > 1.0 + threshold or (floor > threshold and estimate.low < 1.0 / (1.0 + threshold)):
        return Verdict.INCONCLUSIVE
    return Verdict.OK


def judge(
    baseline: Sequence[float],
    current: Sequence[float],
    *,
    threshold: float,
    confidence: float = DEFAULT_CONFIDENCE,
    floor: float = 0.0,
) -> Comparison:
    """Verdict on two independent sets of round medians (stored mode)."""
    estimate = ratio_interval(baseline, current, confidence)
    verdict = decide(estimate, threshold, floor=floor)
    return Comparison(estimate=estimate, threshold=threshold, verdict=verdict, floor=floor)


# A recording whose round medians vary this much or less is compared as it is: the stored-figures
# threshold was validated on such baselines (10% was the limit above which they were refused).
QUIET_SPREAD = 0.10


def widening(
    spread: float | None, *, rounds: int, confidence: float = DEFAULT_CONFIDENCE, quiet: float = QUIET_SPREAD
) -> float:
    """How much (log scale) :func:`widened` adds to each side of a stored comparison's interval
    against a baseline of ``rounds`` round medians that varied by ``spread``; 0 for a quiet one."""
    if spread is None or not math.isfinite(spread) or spread <= quiet or rounds < 1:
        return 0.0
    return NormalDist().inv_cdf(0.5 + confidence / 2) * (spread - quiet) / math.sqrt(rounds)


def widened(
    comparison: Comparison, spread: float | None, *, rounds: int, quiet: float = QUIET_SPREAD
) -> Comparison:
    """A stored comparison against a baseline whose ``rounds`` round medians varied by ``spread``
    (``latency.recording.decision_cv``: relative to the canary when it ran), its interval widened
    by the part of that spread above ``quiet`` and its verdict re-derived by :func:`decide`.

    Why: the interval sees only the scatter of each side's fastest quarter; a noisy recording may
    have read the machine's fast state off by more than it shows. The baseline's spread beyond a
    quiet recording's is taken as uncertainty of its figure at the precision ``rounds`` rounds
    give a mean, ``(spread - quiet) / sqrt(rounds)``; that many standard errors at the interval's
    confidence are added in quadrature to each side of the interval (log scale). A spread at or
    below ``quiet``, or none known, leaves the comparison as it is; a recording measured longer
    (``latency.recording.record_until_settled`` merges its rounds) is widened less.

    Measured in two runs on a 2-core AMD EPYC shared with other test suites (2026-11-25; mlp,
    conv and small-ops; every ordered pair of 8 recordings a family, the 10% threshold, a
    regression confirmed). In ``benchmarks/results/recording.md`` a one-measurement mlp baseline
    with a spread of 67% came out 10% slow: plain, 5 A/A checks against it read ``improved``;
    widened, all 5 ``inconclusive``; against baselines with a spread above 10%, +20% still failed
    in 76 of 84 pairs (78 plain). In ``recording_6_measurements.md`` there was no false verdict
    to prevent: +20% failed in 91 of 91 pairs either way, and A/A checks read ``inconclusive`` in
    50 of 91 (8 plain), the price. The wider rule ``(spread - quiet) / sqrt(rounds / 4)`` (the
    fastest quarter's count) let only 50 of those 91 +20% fail. Neither helps a baseline that is
    wrong yet quiet: a conv session ran 2x slow for about 10 s while the canary did not, a spread
    of 3%.
    """
    extra = widening(spread, rounds=rounds, confidence=comparison.estimate.confidence, quiet=quiet)
    if extra == 0.0:
        return comparison
    estimate = comparison.estimate
    centre = math.log(estimate.ratio)
    low = centre - math.hypot(centre - math.log(estimate.low), extra)
    high = centre + math.hypot(math.log(estimate.high) - centre, extra)
    # A baseline noisy beyond any float (a recorded spread of 5520) widens to 0 .. inf: it decides nothing.
    wider = RatioEstimate(estimate.ratio, _exp(low), _exp(high), estimate.confidence)
    return Comparison(
        estimate=wider,
        threshold=comparison.threshold,
        verdict=decide(wider, comparison.threshold, floor=comparison.floor),
        mode=comparison.mode,
        statistic=f"{comparison.statistic}, widened by the baseline's round spread {spread:.1%}",
        no_basis=comparison.no_basis,
        floor=comparison.floor,
    )


def _exp(value: float) -> float:
    """``math.exp``, infinite (or 0) past a float's range instead of raising."""
    try:
        return math.exp(value)
    except OverflowError:
        return math.inf


def against_plain(comparison: Comparison, plain: Mapping[str, float]) -> Comparison:
    """A stored verdict held against plainer readings of the same two runs (``plain``: what each
    reading is called -> its ratio current/baseline, such as the medians of all runs): a regression
    that one of them calls faster, or an improvement one of them calls slower, has no basis, and
    the verdict is inconclusive with the reason in ``no_basis``.

    Why: the stored statistic compares the fastest quarter of round medians relative to a canary.
    Where the canary was measured in another machine state than the model (a recording beside
    another run), the normalised figures can point the other way from everything measured: a
    LightGBM whose every run was 41% faster than its recording read +43%, confirmed (issue 46).
    Never a regression where the medians improved."""
    if comparison.verdict not in (Verdict.REGRESSION, Verdict.IMPROVED):
        return comparison
    slower = comparison.verdict is Verdict.REGRESSION
    against = [(name, ratio) for name, ratio in plain.items() if (ratio < 1.0 if slower else ratio > 1.0)]
    if not against:
        return comparison
    said = ", ".join(f"{name} {_signed_pct(ratio)}" for name, ratio in against)
    return without_basis(comparison, f"{said}, the other direction")


def without_basis(comparison: Comparison, why: str) -> Comparison:
    """``comparison`` made inconclusive when it read a regression or an improvement: ``why`` (the
    figures it compared cannot carry that verdict) in ``no_basis``; as it was otherwise."""
    if comparison.verdict not in (Verdict.REGRESSION, Verdict.IMPROVED):
        return comparison
    said = f"no basis for a verdict: it read {comparison.verdict.value}, but {why}"
    return replace(comparison, verdict=Verdict.INCONCLUSIVE, no_basis=said)
