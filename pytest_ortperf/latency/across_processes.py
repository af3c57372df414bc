"""Side by side over measuring processes: one verdict estimated from many processes, from its first
measurement on.

A session's speed has a state per process (where its memory landed, how its threads were placed)
that moves two different models differently for as long as the process lives: six fresh processes
timing a BERT at 20 and 22 layers (a true ~+10%) read per-process median round ratios of 1.03,
1.06, 1.09, 1.11, 1.18 and 1.20 under load (2026-12-01, a 2-core AMD EPYC). One process decides
anything from +3% to +20%; a verdict measured in one process and "confirmed" in a second gives up
exactly where a third, fourth and fifth would decide. So, as pyperf does, the process is the unit
of replication:

- A **measuring unit** is one worker process holding both sides' sessions (same environment), or a
  pair of worker processes, one a side (another onnxruntime). Both sides are warmed up in it, then
  timed in interleaved rounds (current or reference first, balanced and shuffled), each round giving
  one paired ratio of round medians.
- Each unit's estimate is the median of its rounds' log ratios: a round spoiled by a machine state
  moves one ratio, not the unit.
- The change is the mean of the units' estimates, with a t interval whose variance is the larger of
  the units' scatter (the between-process spread, and with it everything else that differs from
  process to process) and what their rounds' own noise alone would give (the within-process noise:
  the units may agree by chance more closely than their rounds allow), with ``k - 1`` degrees of
  freedom (:func:`process_interval`).
- Units are added in batches and looked at after each (:data:`LOOKS`: 3, 4, 6, 8, 12 units, up to
  the budget's count); each early look spends a tenth of the error, the last the rest
  (``latency.sequential.look_confidence``). A look stops when the interval lies wholly inside the
  threshold (``ok``) or the A/B rule calls a regression or an improvement
  (``latency.decision.decide``: the estimate beyond the threshold and the whole interval on that
  side of 1). Two units that disagree are two samples; they never end the check.
- Where a look is undecided because the units' own rounds are noisy (:func:`noise_dominated`: a
  machine busy with other work), the loaded units time their rounds again before the next batch.
- Where the last look leaves it undecided, the check is ``inconclusive`` and says how many units it
  measured and about how many more this spread would take (:func:`units_needed`).

Measured on real exports, quiet and beside one busy process per core: ``benchmarks/README.md``,
"Verdicts across measuring processes".

Plain logic, no pytest: ``checks.latency_verdicts.check_across`` runs it on measuring workers
(``ort.workers.load_units``); ``tests/unit/latency/test_across_processes.py`` measures its error
rates by simulation, with process effects.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from statistics import NormalDist
from typing import Protocol

from pytest_ortperf.latency.activity import MEASURING, WARMING, Activity
from pytest_ortperf.latency.decision import Comparison, RatioEstimate, Verdict, decide
from pytest_ortperf.latency.measure import MeasureSettings, gc_paused, plan_rounds
from pytest_ortperf.latency.paired import TimedSide
from pytest_ortperf.latency.sequential import look_confidence
from pytest_ortperf.latency.stats import LatencyStats, summarize

# Units measured by each look (cut to the most a check may measure, the last look at that count).
LOOKS = (3, 4, 6, 8, 12)
# One unit's timed rounds: a few short rounds, since the units replicate, not the rounds. A slow
# model gets fewer, longer rounds, never fewer than ``min_rounds``.
UNIT_SETTINGS = MeasureSettings(budget_s=0.2, rounds=8, min_rounds=6)
# How many times the units of an undecided look whose rounds' noise dominates time their rounds again
# (``measure``): on a machine busy with other work, up to 4x each unit's rounds.
MOST_EXTENSIONS = 3
NOISE_SHARE = 0.5
NOISE_FLOOR = 1.0  # of the threshold (log): rounds noisier than this per unit are worth timing again
# Units a check may measure for each second of ``--ortperf-ab-budget`` (12 at the default 3 s).
UNITS_PER_BUDGET_S = 4
MIN_UNITS = 3
STATISTIC = "mean of per-process median round ratios"
_TINY = 1e-6  # ms
# The standard error of a median is sqrt(pi / 2) times that of a mean, for normal data.
_MEDIAN_SE = math.sqrt(math.pi / 2)
_MAD_SIGMA = 1.4826  # a MAD times this estimates a normal standard deviation


class MeasuringUnit(Protocol):
    """Both sides of a comparison in one measuring process (or one process pair)."""

    @property
    def current(self) -> TimedSide: ...

    @property
    def reference(self) -> TimedSide: ...

    @property
    def name(self) -> str:
        """Which process(es): "pid 4211", or "pids 4211/4215" for a pair."""
        ...


@dataclass(frozen=True)
class UnitRounds:
    """One unit's rounds: every timed run (ns) of both sides, ``runs_per_round`` a round, and which
    side ran first in each round."""

    name: str
    runs_per_round: int
    current_runs: tuple[int, ...]
    reference_runs: tuple[int, ...]
    current_first: tuple[bool, ...]

    @property
    def current_ms(self) -> tuple[float, ...]:
        return _round_medians(self.current_runs, self.runs_per_round)

    @property
    def reference_ms(self) -> tuple[float, ...]:
        return _round_medians(self.reference_runs, self.runs_per_round)

    @property
    def log_ratios(self) -> tuple[float, ...]:
        return tuple(
            math.log(max(c, _TINY) / max(r, _TINY))
            for c, r in zip(self.current_ms, self.reference_ms, strict=True)
        )

    @property
    def estimate(self) -> float:
        """The unit's change: the median of its rounds' log ratios."""
        return statistics.median(self.log_ratios)

    @property
    def ratio(self) -> float:
        return math.exp(self.estimate)


@dataclass(frozen=True)
class ProcessEstimate:
    """The change over ``units`` measuring processes, and what its interval is made of."""

    estimate: RatioEstimate
    units: int
    rounds: int
    between: float  # the units' estimates' standard deviation (log)
    within: float  # what the rounds' noise alone gives one unit's estimate (log, its standard error)
    df: float  # of the interval's t quantile
    half_width: float  # log scale


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``df`` > 0, may be
    fractional): bisection on the CDF from the regularised incomplete beta function."""
    if not 0.0 < p < 1.0:
        raise ValueError("a quantile needs 0 < p < 1")
    if df <= 0:
        raise ValueError("t needs positive degrees of freedom")
    if df > 1e6:
        return NormalDist().inv_cdf(p)
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while _t_cdf(high, df) < p:
        high *= 2.0
        if high > 1e12:
            return high
    for _ in range(200):
        middle = (low + high) / 2
        if _t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2


def _t_cdf(t: float, df: float) -> float:
    x = df / (df + t * t)
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), by its continued fraction (Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    tiny = 1e-300
    f, c, d = 1.0, 1.0, 0.0
    for i in range(400):
        m = i // 2
        if i == 0:
            numerator = 1.0
        elif i % 2 == 0:
            numerator = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            numerator = -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 + numerator * d
        d = tiny if abs(d) < tiny else d
        d = 1.0 / d
        c = 1.0 + numerator / c
        c = tiny if abs(c) < tiny else c
        f *= c * d
        if abs(1.0 - c * d) < 1e-14:
            break
    return front * (f - 1.0) / a


def _unit_se(rounds: UnitRounds) -> float:
    """The standard error of one unit's median log ratio from its own rounds' scatter."""
    values = rounds.log_ratios
    middle = statistics.median(values)
    mad = statistics.median(abs(v - middle) for v in values)
    return _MEDIAN_SE * _MAD_SIGMA * mad / math.sqrt(len(values))


def process_interval(units: Sequence[UnitRounds], confidence: float) -> ProcessEstimate:
    """The mean of the units' median log ratios with a t interval at ``confidence``.

    Variance of the mean: ``max(s_b^2, s_w^2) / k``, where ``s_b`` is the units' scatter (sample
    standard deviation of their estimates) and ``s_w`` the root mean square of each unit's own
    standard error (its rounds' MAD, as a median's): the units' scatter carries the between-process
    spread, and never counts for less than the rounds' noise. Degrees of freedom: ``k - 1``, always.
    Taking the rounds' degrees of freedom where the units happen to agree (Welch and Satterthwaite)
    saved a unit or two a check and called 0.75-3.25% of simulated A/A checks a regression or an
    improvement where process effects were as large as the rounds' noise (three or four units can
    agree by chance); with ``k - 1``, 0.25-1% (``tests/unit/latency/test_across_processes.py``).
    Needs at least two units."""
    k = len(units)
    if k < 2:
        raise ValueError("an interval across processes needs at least two units")
    estimates = [unit.estimate for unit in units]
    mean = statistics.fmean(estimates)
    between = statistics.stdev(estimates)
    within = math.sqrt(statistics.fmean(_unit_se(unit) ** 2 for unit in units))
    rounds = sum(len(unit.current_first) for unit in units)
    variance = max(between, within) ** 2 / k
    df = float(k - 1)
    half = t_quantile(0.5 + confidence / 2, df) * math.sqrt(variance)
    return ProcessEstimate(
        estimate=RatioEstimate(math.exp(mean), math.exp(mean - half), math.exp(mean + half), confidence),
        units=k,
        rounds=rounds,
        between=between,
        within=within,
        df=df,
        half_width=half,
    )


def most_units(budget_s: float) -> int:
    """How many units a check may measure with ``--ortperf-ab-budget`` seconds (12 at 3 s)."""
    return max(MIN_UNITS + 1, round(UNITS_PER_BUDGET_S * budget_s))


def first_batch(budget_s: float, *, sequential: bool = True) -> int:
    """How many units a check loads before its first look."""
    return looks_for(most_units(budget_s))[0] if sequential else most_units(budget_s)


def looks_for(units: int, planned: Sequence[int] = LOOKS) -> tuple[int, ...]:
    """The unit counts looked at when a check may measure ``units``: the planned ones below it, then
    ``units`` itself."""
    if units < MIN_UNITS:
        raise ValueError(f"a measurement across processes has at least {MIN_UNITS} units")
    return (*(n for n in planned if n < units), units)


@dataclass(frozen=True)
class AcrossProcesses:
    """What a measurement across processes measured and how it was judged."""

    units: tuple[UnitRounds, ...]
    comparison: Comparison
    interval: ProcessEstimate
    looks: tuple[int, ...]  # the unit counts it could look at
    current: LatencyStats
    reference: LatencyStats

    @property
    def most(self) -> int:
        return self.looks[-1]

    @property
    def ratios(self) -> tuple[float, ...]:
        """Each unit's change (current / reference), in the order measured."""
        return tuple(unit.ratio for unit in self.units)

    def needed(self) -> int | None:
        """About how many units this spread would need to decide, where it ended undecided."""
        if self.comparison.verdict is not Verdict.INCONCLUSIVE or self.comparison.no_basis:
            return None
        return units_needed(self.interval, self.comparison.threshold)


def units_needed(interval: ProcessEstimate, threshold: float) -> int:
    """About how many units an interval of this spread needs to decide the nearer way: wholly
    inside the threshold, or (beyond it) wholly above 1. Its quantile held as it is, its half-width
    shrinks with the square root of the units."""
    centre = math.log(interval.estimate.ratio)
    limit = math.log1p(threshold)
    margin = abs(centre) if abs(centre) > limit else limit - abs(centre)
    if margin <= 0:
        return interval.units * 100
    return max(interval.units + 1, math.ceil(interval.units * (interval.half_width / margin) ** 2))


def judge_units(
    units: Sequence[UnitRounds], *, threshold: float, confidence: float, look: int, looks: int
) -> tuple[Comparison, ProcessEstimate]:
    """The A/B verdict on the units so far, at look ``look`` (1-based) of ``looks``."""
    adjusted = look_confidence(confidence, look, looks) if looks > 1 else confidence
    interval = process_interval(units, adjusted)
    rounds = interval.rounds
    statistic = (
        f"{STATISTIC} over {interval.units} measuring processes ({rounds} rounds), t interval with the "
        f"between-process spread (processes {_pct(interval.between)}, rounds {_pct(interval.within)})"
    )
    if looks > 1:
        statistic += (
            f", look {look} of {looks} (at {round(adjusted * 100, 2):g}%; {confidence:.0%} over all looks)"
        )
    comparison = Comparison(
        estimate=interval.estimate,
        threshold=threshold,
        verdict=decide(interval.estimate, threshold),
        mode="a/b",
        statistic=statistic,
    )
    return comparison, interval


def _pct(log_sd: float) -> str:
    return f"{(math.exp(log_sd) - 1.0) * 100:.1f}%"


def stops(comparison: Comparison) -> bool:
    """Whether a look decides: the interval lies wholly inside the threshold, or the A/B rule calls
    a regression or an improvement."""
    estimate, slower = comparison.estimate, 1.0 + comparison.threshold
    inside = 1.0 / slower <= estimate.low and estimate.high <= slower
    return inside or comparison.verdict in (Verdict.REGRESSION, Verdict.IMPROVED)


def measure_unit(
    unit: MeasuringUnit,
    costs: tuple[float, float],
    settings: MeasureSettings,
    rng: random.Random,
) -> UnitRounds:
    """One unit's timed rounds, warmed up already (``costs``: the current's and the reference's
    typical run, ns): half of them current first, shuffled."""
    plan = plan_rounds(max(costs[0], 1.0) + max(costs[1], 1.0), settings)
    order = [True] * (plan.rounds // 2) + [False] * (plan.rounds - plan.rounds // 2)
    rng.shuffle(order)
    runs: dict[bool, list[int]] = {True: [], False: []}
    for current_first in order:
        for is_current in (current_first, not current_first):
            side = unit.current if is_current else unit.reference
            runs[is_current] += side.time_runs(plan.runs_per_round, costs[0 if is_current else 1])
    return UnitRounds(unit.name, plan.runs_per_round, tuple(runs[True]), tuple(runs[False]), tuple(order))


def noise_dominated(interval: ProcessEstimate, threshold: float) -> bool:
    """Whether the units' own rounds are what holds the interval wide: their noise makes at least
    :data:`NOISE_SHARE` of the units' scatter's variance, and one unit's standard error from it is at
    least :data:`NOISE_FLOOR` of the threshold. Then more rounds in the units measured so far narrow
    the interval as more units would. On a quiet machine more rounds cost more than they narrow:
    measured with the share alone, a changed BERT took 8.8 s a process where it took 5.8 s; with the
    floor at half the threshold, the quiet units of a BERT (1.7-2.2% a unit from 8 rounds, at the 3%
    threshold) still timed their rounds again in 5 of 8 checks, each time doubling the timed rounds,
    where units beside busy processes give 3-5% (``benchmarks/README.md``)."""
    noisy_rounds = interval.within >= NOISE_FLOOR * math.log1p(threshold)
    return noisy_rounds and interval.within**2 >= NOISE_SHARE * interval.between**2


def extended(rounds: UnitRounds, more: UnitRounds) -> UnitRounds:
    """One unit's rounds with ``more`` of them (measured on the same loaded sessions, at the same
    runs a round) after them."""
    if more.runs_per_round != rounds.runs_per_round:
        raise ValueError("a unit's rounds are extended at the runs a round they were planned with")
    return UnitRounds(
        rounds.name,
        rounds.runs_per_round,
        rounds.current_runs + more.current_runs,
        rounds.reference_runs + more.reference_runs,
        rounds.current_first + more.current_first,
    )


def _round_medians(runs_ns: Sequence[int], per_round: int) -> tuple[float, ...]:
    return tuple(
        statistics.median(runs_ns[start : start + per_round]) / 1e6
        for start in range(0, len(runs_ns), per_round)
    )


def warm_up_units(units: Sequence[MeasuringUnit], settings: MeasureSettings) -> list[tuple[float, float]]:
    """Both sides of every unit warmed up, the units at once (each is its own process, nothing is
    timed yet); each unit's typical run costs (ns), current then reference."""

    def warm(unit: MeasuringUnit) -> tuple[float, float]:
        args = (settings.warmup_runs, settings.warmup_s, settings.warmup_cap_s)
        return unit.current.warm_up(*args), unit.reference.warm_up(*args)

    if len(units) == 1:
        return [warm(units[0])]
    with ThreadPoolExecutor(max_workers=len(units), thread_name_prefix="ortperf-warm") as pool:
        return list(pool.map(warm, units))


def measure(
    load: Callable[[int], Sequence[MeasuringUnit]],
    *,
    threshold: float,
    confidence: float,
    budget_s: float,
    settings: MeasureSettings = UNIT_SETTINGS,
    held: Callable[[], AbstractContextManager[object]] = nullcontext,
    activity: Activity | None = None,
    rng: random.Random | None = None,
    sequential: bool = True,
) -> AcrossProcesses:
    """Measure units, ``load(count)`` giving ``count`` new ones each time (built outside the timing
    lock: loading is not timed), until a look decides or the budget's units are measured.

    Each batch is warmed up and timed holding ``held()``; the rounds of a batch's units are timed
    unit after unit. Where a look is undecided and the rounds' own noise is what keeps it so
    (:func:`noise_dominated`: a machine busy with other work), every unit measured so far, still
    loaded and warm, times as many rounds again before the next batch (at most
    :data:`MOST_EXTENSIONS` times), and the next batch's units as many as they: rounds are cheaper
    than processes, which each cost two session builds and two warm-ups. ``sequential`` False:
    every unit the budget allows, judged once."""
    rng = rng or random.Random()
    activity = activity or Activity()
    looks = looks_for(most_units(budget_s)) if sequential else (most_units(budget_s),)
    measured: list[UnitRounds] = []
    loaded: list[tuple[MeasuringUnit, tuple[float, float]]] = []
    comparison: Comparison | None = None
    interval: ProcessEstimate | None = None
    extensions = 0
    for look, count in enumerate(looks, start=1):
        batch = list(load(count - len(measured)))
        with held():
            if interval is not None and extensions < MOST_EXTENSIONS and noise_dominated(interval, threshold):
                extensions += 1
                with gc_paused(), activity.phase(MEASURING, "more rounds in the measuring processes"):
                    for index, (unit, cost) in enumerate(loaded):
                        measured[index] = extended(measured[index], measure_unit(unit, cost, settings, rng))
            with activity.phase(WARMING, f"measuring processes {len(measured) + 1}-{count}"):
                costs = warm_up_units(batch, settings)
            with gc_paused(), activity.phase(MEASURING, "side by side across processes"):
                for unit, cost in zip(batch, costs, strict=True):
                    loaded.append((unit, cost))
                    measured.append(measure_unit(unit, cost, settings, rng))
                    for _ in range(extensions):
                        measured[-1] = extended(measured[-1], measure_unit(unit, cost, settings, rng))
                    activity.rounds(len(measured), looks[-1])
        comparison, interval = judge_units(
            measured, threshold=threshold, confidence=confidence, look=look, looks=len(looks)
        )
        if stops(comparison):
            break
    assert comparison is not None
    assert interval is not None
    return AcrossProcesses(
        units=tuple(measured),
        comparison=comparison,
        interval=interval,
        looks=looks,
        current=_stats(measured, current=True),
        reference=_stats(measured, current=False),
    )


def _stats(units: Sequence[UnitRounds], *, current: bool) -> LatencyStats:
    """Every unit's runs of one side as one side's statistics, round by round."""
    samples = [run for unit in units for run in (unit.current_runs if current else unit.reference_runs)]
    sizes = [unit.runs_per_round for unit in units for _ in unit.current_first]
    return summarize(samples, sizes)
