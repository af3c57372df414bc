"""Recording a latency baseline: measure until the figure stored comparisons read has settled.

Stored figures are compared by the fastest quarter of each run's round medians, relative to the
machine-speed canary when it ran (:func:`compared_values`). A recording is the one side of every
later comparison, so its figure should not depend on the few seconds it happened to be measured
in. The spread of the rounds (:func:`decision_cv`) says how much the machine moved; more rounds
cannot lower it, and a recording is never refused for it. What more rounds do lower is the
uncertainty of the figure itself: the median of the fastest quarter estimates a low quantile of
the round medians (the eighth at 40 rounds), and the rank interval of that quantile narrows as
rounds are added. :func:`record_until_settled` measures once and, while that interval is wider
than a target, measures again and reads all rounds together, up to a cap in seconds.

The target and the cap were measured on a 2-core machine shared with other test suites
(``benchmarks/recording.py``, ``benchmarks/results/recording.md``); see :data:`SETTLE_TARGET` and
:data:`CAP_BUDGETS`.

Most recorded figures never decide, though: a later run rebuilds the recorded reference (the model
from git or the model cache) and measures both side by side, and the figures are information (the
drift an unchanged check shows). Those are recorded short (:func:`short_reason`,
:func:`record_short`): one measurement of :data:`SHORT_SHARE` of the budget, with its spread. Only
figures that will decide are measured until settled: a model that nothing keeps (stored figures
then decide), or an unchanged check gated on drift (``--ortperf-drift-threshold``).

Plain logic, no pytest: the caller passes one measurement at the check's settings as
``measure_once`` and, for tests, a clock.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from pytest_ortperf import defaults
from pytest_ortperf.latency.decision import DEFAULT_CONFIDENCE, ratio_interval, widening
from pytest_ortperf.latency.measure import MeasureSettings
from pytest_ortperf.latency.stats import LatencyStats, merged

FASTEST_FRACTION = 0.25
FASTEST_MIN = 3

# Settled: the rank interval of the quantile the recorded figure estimates is at most this wide on
# either side (relative), at SETTLE_CONFIDENCE. Measured in two runs on the shared 2-core machine
# (``benchmarks/results/recording.md``, ``recording_6_measurements.md``): 15 and 19 of 24 first
# measurements met 3%; recordings took 1.38 and 1.12 measurements on average (6.4 s and 6.9 s,
# against 4.5 s and 6.1 s for one). Stricter targets cost more and did not make the figure
# steadier across recordings: at 1% and 16 s, 2.4 measurements, and a figure sd of 2.5 / 1.9 /
# 2.4% (mlp / conv / small-ops) against 2.9 / 1.5 / 3.0% for one measurement.
SETTLE_CONFIDENCE = 0.90
SETTLE_TARGET = 0.03
# The cap, in measurement budgets (--ortperf-budget): 16 s at the default 4 s, so at most three
# measurements of about 5 s. At 3% it settled 23 and 22 of 24 recordings (20 s: 23 and 23; 12 s:
# 23 and 20). In budgets, so that the short budgets of quick runs stay quick.
CAP_BUDGETS = 4.0

# A short recording's share of the measurement budget (1 s at the default 4 s): its figures inform
# (a later run measures the rebuilt reference side by side), so they need rounds enough for a
# median and a spread, not a settled low quantile.
SHORT_SHARE = 0.25


# What --ortperf-max-cv defaults to: the spread beyond which recorded figures are noisy.
DEFAULT_MAX_CV = defaults.MAX_CV


def noise(spread: float | None, *, max_cv: float) -> str:
    """Why recorded latency figures are noisy, or "" when they are not.

    The one definition of "noisy": the update summary, ``ortperf show`` and an update's choice to
    replace noisy figures by quieter ones all call this. Figures are noisy when their round
    medians vary more than ``max_cv`` (``--ortperf-max-cv``): their ``spread`` is what widens a
    later stored comparison. Whether the recording *settled* (its own figure met
    :data:`SETTLE_TARGET` before the cap) is another property with its own word, "not settled":
    a figure of 8% spread may not have settled, one of 17% may have."""
    if spread is None or spread <= max_cv:
        return ""
    return f"spread {spread:.1%} > max-cv {max_cv * 100:g}%"


def record_cap_s(budget_s: float) -> float:
    """The cap of a recording measured at ``budget_s`` a measurement (:data:`CAP_BUDGETS` of them)."""
    return CAP_BUDGETS * budget_s


def fastest_share(values: Sequence[float]) -> list[float]:
    """The fastest quarter of the rounds (at least 3): the machine's fast state, like with like."""
    ordered = sorted(values)
    return ordered[: min(len(ordered), max(FASTEST_MIN, math.ceil(len(ordered) * FASTEST_FRACTION)))]


def compared_values(baseline: LatencyStats, current: LatencyStats) -> tuple[list[float], list[float], bool]:
    """What stored mode compares: each side's fastest quarter of round medians, relative to the canary
    (the third item) when both runs measured it."""
    relative = bool(baseline.canary_round_medians_ms and current.canary_round_medians_ms)
    base = fastest_share(baseline.relative_round_medians if relative else baseline.round_medians_ms)
    curr = fastest_share(current.relative_round_medians if relative else current.round_medians_ms)
    return base, curr, relative


def plain_ratios(baseline: LatencyStats, current: LatencyStats) -> dict[str, float]:
    """Plainer readings of a stored comparison's two runs, current/baseline, by name: the medians of
    all runs, and, when the comparison is relative to the canary, the fastest quarter without it
    (``latency.decision.against_plain`` holds the verdict against them)."""
    ratios: dict[str, float] = {}
    if baseline.median_ms > 0 and current.median_ms > 0:
        ratios["the medians of all runs"] = current.median_ms / baseline.median_ms
    if baseline.canary_round_medians_ms and current.canary_round_medians_ms:
        base = statistics.median(fastest_share(baseline.round_medians_ms))
        curr = statistics.median(fastest_share(current.round_medians_ms))
        if base > 0 and curr > 0:
            ratios["the fastest quarter without the canary"] = curr / base
    return ratios


def decision_cv(stats: LatencyStats) -> float:
    """How much the rounds the comparison reads vary: relative to the canary when it ran."""
    values = stats.relative_round_medians
    if not values:
        return stats.round_cv
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean > 0 else 0.0


def compared_rounds(stats: LatencyStats) -> tuple[float, ...]:
    """The round medians a stored comparison reads from one run: relative to the canary when it ran."""
    return stats.relative_round_medians or stats.round_medians_ms


def recorded_figure(stats: LatencyStats) -> float:
    """The figure a stored comparison locates: the median of the fastest quarter of the compared
    rounds (the "compared" line of a failure message)."""
    return statistics.median(fastest_share(compared_rounds(stats)))


def quantile_ranks(n: int, p: float, confidence: float) -> tuple[int, int] | None:
    """1-based ranks ``(low, high)`` of ``n`` sorted values between which the ``p`` quantile lies
    with at least ``confidence``, whatever the distribution (the binomial order-statistic
    interval, equal tails); None when ``n`` values cannot bound it at that confidence."""
    tail = (1.0 - confidence) / 2.0
    cdf, below = 0.0, []  # below[j] = P(fewer than j+1 values fall under the quantile)
    for j in range(n + 1):
        cdf += _binomial_pmf(n, j, p)
        below.append(cdf)
    # X_(low) lies above the quantile when at most low-1 values fall under it.
    lows = [r for r in range(1, n + 1) if below[r - 1] <= tail]
    # X_(high) lies under it when at least high values do: 1 - P(at most high-1).
    highs = [r for r in range(1, n + 1) if 1.0 - below[r - 1] <= tail]
    if not lows or not highs:
        return None
    return max(lows), min(highs)


def _binomial_pmf(n: int, j: int, p: float) -> float:
    """P(exactly ``j`` of ``n`` values fall under the ``p`` quantile), computed in log space:
    ``math.comb(n, j)`` alone is too large for a float beyond about a thousand rounds."""
    if not 0.0 < p < 1.0:
        return 1.0 if j == (n if p >= 1.0 else 0) else 0.0
    log_comb = math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
    return math.exp(log_comb + j * math.log(p) + (n - j) * math.log1p(-p))


def settle_width(stats: LatencyStats, confidence: float = SETTLE_CONFIDENCE) -> float:
    """How far the recorded figure may be from the quantile it estimates: the half-width, relative
    and symmetric in "x times slower / faster", of the rank interval of that quantile (``inf`` when
    the rounds are too few to bound it). With ``k`` of ``n`` rounds in the fastest share, its
    median estimates the ``k / (2n)`` quantile of the compared rounds."""
    values = sorted(compared_rounds(stats))
    n = len(values)
    k = len(fastest_share(values))
    ranks = quantile_ranks(n, k / (2.0 * n), confidence) if n else None
    if ranks is None:
        return math.inf
    low, high = values[ranks[0] - 1], values[ranks[1] - 1]
    return math.sqrt(high / low) - 1.0 if low > 0 else math.inf


@dataclass(frozen=True)
class Recording:
    """What :func:`record_until_settled` measured: the merged figures to store and how they came.

    ``spread``: :func:`decision_cv` of the merged rounds, what ``--ortperf-max-cv`` warns about and
    what widens a later stored comparison (``latency.decision.widened``). ``settled``: the figure's
    interval met the target; False when the cap came first. ``width``: that half-width at the end."""

    stats: LatencyStats
    spread: float
    settled: bool
    measurements: int
    seconds: float
    width: float
    short: str = ""  # a short recording: why its figures need not settle (:func:`short_reason`)
    # The smallest change a stored comparison against them can call (:func:`detects`), where the
    # recording was asked for it (figures that will decide); None otherwise.
    detectable: float | None = None


def short_reason(kept_in: str, *, drift_gates: bool) -> str:
    """Why a recording may be short, or "" when its figures will decide and must settle.

    ``kept_in``: where a later run finds the recorded model to rebuild it as the reference of a
    side-by-side check ("git", "the model cache"), "" when nothing keeps it (stored figures decide
    then). ``drift_gates``: an unchanged check fails on its drift from these figures
    (``--ortperf-drift-threshold``)."""
    if drift_gates or not kept_in:
        return ""
    return f"the reference is rebuilt from {kept_in}; these figures only inform"


def short_settings(settings: MeasureSettings) -> MeasureSettings:
    """The measurement of a short recording: :data:`SHORT_SHARE` of the budget, the rounds and
    warm-up of the check's settings."""
    return replace(settings, budget_s=settings.budget_s * SHORT_SHARE)


def record_short(
    measure_once: Callable[[], LatencyStats],
    *,
    why: str,
    confidence: float = SETTLE_CONFIDENCE,
    clock: Callable[[], float] = time.monotonic,
) -> Recording:
    """One measurement (``measure_once``, at :func:`short_settings`), stored with its spread and
    width and ``why`` it was enough; ``settled`` says whether it met :data:`SETTLE_TARGET` anyway."""
    started = clock()
    stats = measure_once()
    width = settle_width(stats, confidence)
    return Recording(
        stats=stats,
        spread=decision_cv(stats),
        settled=width <= SETTLE_TARGET,
        measurements=1,
        seconds=clock() - started,
        width=width,
        short=why,
    )


def detects(
    stats: LatencyStats, spread: float | None, *, threshold: float, confidence: float = DEFAULT_CONFIDENCE
) -> float:
    """The smallest slowdown (a fraction, at least ``threshold``) a later stored comparison against
    these figures can call a regression: a run as noisy as this recording, compared with it as
    ``checks.latency_verdicts`` compares (the fastest quarter's interval), the interval widened by
    the recording's ``spread`` (``latency.decision.widening``). ``inf`` with too few rounds, and for
    figures so noisy that the change they could detect is beyond any float (a recorded spread of
    5520, say): such figures cannot detect anything, and every reader says so instead of failing."""
    base = fastest_share(compared_rounds(stats))
    if len(base) < 2 or min(base) <= 0:
        return math.inf
    own = math.log(ratio_interval(base, base, confidence).high)
    extra = widening(spread, rounds=stats.rounds, confidence=confidence)
    try:
        return max(threshold, math.exp(math.hypot(own, extra)) - 1.0)
    except OverflowError:
        return math.inf


def coarse(detectable: float | None, threshold: float) -> str:
    """Why figures that will decide are coarse, or "" when they are not: the one definition the
    update summary, ``ortperf show`` and the JSON record use. Coarse figures cannot detect a change
    of the threshold; a later stored comparison against them says ``inconclusive`` below the size
    they can detect."""
    if detectable is None or detectable <= threshold * (1.0 + 1e-9):
        return ""
    said = (
        "cannot detect any change (too few rounds, or too noisy)"
        if math.isinf(detectable)
        else f"detect >= {detectable * 100:.3g}%"
    )
    return f"{said}, threshold {threshold * 100:.3g}%"


def record_until_settled(
    measure_once: Callable[[], LatencyStats],
    *,
    cap_s: float,
    target: float = SETTLE_TARGET,
    confidence: float = SETTLE_CONFIDENCE,
    clock: Callable[[], float] = time.monotonic,
    threshold: float | None = None,
) -> Recording:
    """Measure with ``measure_once`` (one full measurement at the check's settings) until the
    recorded figure has settled (:func:`settle_width` at most ``target``) and, given the stored
    ``threshold``, until the figures can detect a change of it (:func:`detects`), reading the
    rounds of all measurements as one (:func:`latency.stats.merged`).

    The first measurement is always taken, and on a quiet machine it is the only one. Another
    starts only when the measurements so far, at their mean duration, say it would end within
    ``cap_s`` of the start; so the cap bounds a recording's time however noisy the machine, and a
    recording that hits it is stored all the same, with ``settled`` False. Figures that still
    cannot detect the threshold then are the single measurement that can, when one can (the
    machine calmed down while the others were measured), else the merged ones, named coarse
    (:func:`coarse`) with what they can detect."""
    started = clock()
    parts = [measure_once()]
    while True:
        stats = merged(parts)
        spread = decision_cv(stats)
        width = settle_width(stats, confidence)
        elapsed = clock() - started
        settled = width <= target
        reach = detects(stats, spread, threshold=threshold) if threshold is not None else None
        resolves = reach is None or not coarse(reach, threshold or 0.0)
        if (settled and resolves) or elapsed + elapsed / len(parts) > cap_s:
            break
        parts.append(measure_once())
    if not resolves and threshold is not None and len(parts) > 1:
        calm = [
            part for part in parts
            if not coarse(detects(part, decision_cv(part), threshold=threshold), threshold)
        ]  # fmt: skip
        if calm:
            stats = min(calm, key=decision_cv)
            spread, width = decision_cv(stats), settle_width(stats, confidence)
            settled = width <= target
            reach = detects(stats, spread, threshold=threshold)
    return Recording(
        stats=stats,
        spread=spread,
        settled=settled,
        measurements=len(parts),
        seconds=elapsed,
        width=width,
        detectable=reach,
    )
