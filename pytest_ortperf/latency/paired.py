"""Same-job A/B: the model under test against a reference model, measured side by side.

On a shared machine whose speed switches state every few seconds, absolute
latencies from different times cannot show a 5% change; the ratio of two
models measured in the same second can. Both callables are warmed up, then
timed in interleaved rounds whose order (current first or reference first) is
drawn at random each round (half of the rounds each way), so a machine state hits both alike and neither
always runs "warm after the other". Each round yields one ratio of round
medians, current / reference; the verdict is on those paired ratios: their
median, with the exact sign-test confidence interval for the median (no
assumption about the noise's shape; a round spoiled by a state switch moves one
ratio, not the verdict).

Plain logic, no pytest: ``checks.check_ab`` and the benchmarks use it.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from pytest_ortperf import defaults
from pytest_ortperf.latency.activity import MEASURING, WARMING, Activity
from pytest_ortperf.latency.decision import DEFAULT_CONFIDENCE, Comparison, RatioEstimate, decide
from pytest_ortperf.latency.measure import Clock, MeasureSettings, gc_paused, plan_rounds, time_runs, warm_up
from pytest_ortperf.latency.stats import LatencyStats, summarize

_TINY = 1e-6  # ms: one nanosecond
AB_STATISTIC = "median of paired round ratios, sign-test interval"


# How long and how finely to measure one A/B check (both models together): more rounds at the
# least than a stored measurement, since every round gives one paired ratio; and short ones (80 in
# the budget), so that the sequential looks, which come after a number of rounds, come early in
# time (``benchmarks/README.md``, "Verdicts in seconds"). A slow model gets fewer, longer rounds.
AB_SETTINGS = MeasureSettings(budget_s=defaults.AB_BUDGET_S, rounds=80, min_rounds=12)


@dataclass(frozen=True)
class PairedRounds:
    """Round medians (ms) of current and reference, round by round, and how each round was run."""

    current: LatencyStats
    reference: LatencyStats
    current_first: tuple[bool, ...]
    planned: int = 0  # the rounds planned; more than measured when a sequential look stopped early

    @property
    def planned_rounds(self) -> int:
        return max(self.planned, len(self.current_first))

    @property
    def current_ms(self) -> tuple[float, ...]:
        return self.current.round_medians_ms

    @property
    def reference_ms(self) -> tuple[float, ...]:
        return self.reference.round_medians_ms

    @property
    def ratios(self) -> tuple[float, ...]:
        # A coarse clock can report 0 for a whole round; the smallest positive value keeps ratios finite.
        return tuple(
            max(c, _TINY) / max(r, _TINY) for c, r in zip(self.current_ms, self.reference_ms, strict=True)
        )


INSTANCES = 2  # sessions per side in side-by-side measurement


def alternating(runs: Sequence[Callable[[], object]]) -> Callable[[], object]:
    """One run of each of ``runs`` in turn, call by call (how :class:`RoundsInTurn` warms up)."""
    if not runs:
        raise ValueError("alternating needs at least one run")
    turn = [0]

    def run() -> object:
        index = turn[0]
        turn[0] = (index + 1) % len(runs)
        return runs[index]()

    return run


class RoundsInTurn:
    """Several sessions of one side measured as one (a :class:`TimedSide`): each round's runs on one
    of them, the sessions taking the rounds in turn.

    Two sessions of the same model can differ by a few percent for as long as they live (where
    their weights landed in memory; ``benchmarks/README.md``, "Gate quality by path"), so no single
    session may decide: each takes as many rounds as the others (within one). Within a round the
    runs stay on one session: switched run by run, every run of a cache-bound model started cold
    and widened the paired ratios (a 20-layer BERT, 10-90% of the ratios: 1.04-1.17 against
    1.07-1.15 in process; 1.01-1.19 against 1.05-1.15 with rounds split between two worker
    processes; ``benchmarks/README.md``, "Rounds in turn"). The warm-up runs them call by call, so
    every session is warm before the first round."""

    def __init__(self, runs: Sequence[Callable[[], object]], clock: Clock = time.perf_counter_ns) -> None:
        if not runs:
            raise ValueError("RoundsInTurn needs at least one run")
        self._runs = tuple(runs)
        self._clock = clock
        self._turn = 0

    def warm_up(self, runs: int, seconds: float, cap_s: float) -> float:
        settings = MeasureSettings(warmup_runs=runs, warmup_s=seconds, warmup_cap_s=cap_s)
        return warm_up(alternating(self._runs), settings, self._clock)

    def time_runs(self, count: int, expected_ns: float) -> list[int]:
        run = self._runs[self._turn]
        self._turn = (self._turn + 1) % len(self._runs)
        return time_runs(run, count, self._clock, [])


@runtime_checkable
class TimedSide(Protocol):
    """One side of a side-by-side measurement that times its own runs: a measuring worker
    (``ort.workers.LoadedModel``), whose runs are timed inside its process."""

    def warm_up(self, runs: int, seconds: float, cap_s: float) -> float:
        """Warm up until run times settle: at least ``runs`` and ``seconds``, at most ``cap_s``
        (``worker_program.warm_up_runs``); the typical run cost (ns)."""
        ...

    def time_runs(self, count: int, expected_ns: float) -> list[int]:
        """``count`` runs, each timed on its own (ns); ``expected_ns`` is the cost seen in warm-up."""
        ...


class LocalSide:
    """A callable timed in this process, as a :class:`TimedSide`."""

    def __init__(self, run: Callable[[], object], clock: Clock = time.perf_counter_ns) -> None:
        self._run = run
        self._clock = clock

    def warm_up(self, runs: int, seconds: float, cap_s: float) -> float:
        settings = MeasureSettings(warmup_runs=runs, warmup_s=seconds, warmup_cap_s=cap_s)
        return warm_up(self._run, settings, self._clock)

    def time_runs(self, count: int, expected_ns: float) -> list[int]:
        return time_runs(self._run, count, self._clock, [])


Side = Callable[[], object] | TimedSide


def as_timed(side: Side, clock: Clock = time.perf_counter_ns) -> TimedSide:
    return side if isinstance(side, TimedSide) else LocalSide(side, clock)


def plan_pair(cost_current_ns: float, cost_reference_ns: float, settings: MeasureSettings) -> tuple[int, int]:
    """(rounds, runs per round per model): a round of pairs planned like any round of runs."""
    plan = plan_rounds(max(cost_current_ns, 1.0) + max(cost_reference_ns, 1.0), settings)
    return plan.rounds, plan.runs_per_round


def measure_pair(
    current: Side,
    reference: Side,
    settings: MeasureSettings = AB_SETTINGS,
    *,
    rng: random.Random | None = None,
    clock: Clock = time.perf_counter_ns,
    looks: Callable[[int], Sequence[int]] | None = None,
    stop: Callable[[PairedRounds], bool] | None = None,
    activity: Activity | None = None,
) -> PairedRounds:
    """Warm both up, then time interleaved rounds, half of them in each order, shuffled.

    Each side is a callable timed here, or a :class:`TimedSide` that times its own runs (a worker
    process): the rounds are planned, ordered and judged the same way. With ``looks`` (the round
    counts to look at, given the rounds planned) and ``stop``, the measurement ends at the first
    look where ``stop`` says the rounds so far decide (``latency.sequential``); the order is
    balanced within each stretch between looks, so every look sees half the rounds each way.
    ``activity`` hears of the warm-ups and of every round (between rounds, never inside one)."""
    rng = rng or random.Random()
    activity = activity or Activity()
    sides = {True: as_timed(current, clock), False: as_timed(reference, clock)}  # keyed by "is current"
    cost: dict[bool, float] = {}
    for is_current in (False, True):
        with activity.phase(WARMING, "current" if is_current else "reference"):
            cost[is_current] = sides[is_current].warm_up(
                settings.warmup_runs, settings.warmup_s, settings.warmup_cap_s
            )
    rounds, runs = plan_pair(cost[True], cost[False], settings)
    points = sorted({n for n in (looks(rounds) if looks is not None else ()) if 0 < n < rounds} | {rounds})
    samples: dict[bool, list[int]] = {True: [], False: []}
    firsts: list[bool] = []
    done = 0
    with gc_paused(), activity.phase(MEASURING, "side by side"):
        for point in points:
            # Balanced: half the stretch's rounds (rounded down) start with the current model, shuffled.
            stretch = [True] * ((point - done) // 2) + [False] * ((point - done) - (point - done) // 2)
            rng.shuffle(stretch)
            for index, current_first in enumerate(stretch, start=done + 1):
                for is_current in (current_first, not current_first):
                    samples[is_current] += sides[is_current].time_runs(runs, cost[is_current])
                activity.rounds(index, rounds)
            firsts += stretch
            done = point
            if stop is not None and point < rounds and stop(_paired(samples, runs, firsts, rounds)):
                break
    return _paired(samples, runs, firsts, rounds)


def _paired(samples: dict[bool, list[int]], runs: int, firsts: list[bool], planned: int) -> PairedRounds:
    sizes = [runs] * len(firsts)
    return PairedRounds(
        summarize(samples[True], sizes), summarize(samples[False], sizes), tuple(firsts), planned=planned
    )


def sign_test_rank(n: int, confidence: float) -> int:
    """0-based rank k: sorted ``[x[k], x[n-1-k]]`` covers the median with probability >= ``confidence``.

    Coverage is ``1 - 2 P(Binomial(n, 1/2) <= k)``; the largest such k gives the
    narrowest interval. Too few values for the confidence: 0 (the whole range).
    """
    alpha = 1.0 - confidence
    best, cdf = 0, 0.0
    for k in range(n // 2):
        cdf += math.comb(n, k) / 2**n
        if 2 * cdf > alpha:
            break
        best = k
    return best


def paired_interval(ratios: Sequence[float], confidence: float = DEFAULT_CONFIDENCE) -> RatioEstimate:
    """Median ratio with the distribution-free sign-test interval for the median.

    With too few rounds for the requested confidence the interval is the whole
    observed range (and so usually decides nothing).
    """
    values = np.sort(np.asarray(ratios, dtype=np.float64))
    if values.size == 0 or not (np.isfinite(values).all() and (values > 0).all()):
        raise ValueError("paired_interval needs positive finite ratios")
    k = sign_test_rank(values.size, confidence)
    return RatioEstimate(
        ratio=float(np.median(values)),
        low=float(values[k]),
        high=float(values[values.size - 1 - k]),
        confidence=confidence,
    )


def judge_pair(
    rounds: PairedRounds, *, threshold: float, confidence: float = DEFAULT_CONFIDENCE
) -> Comparison:
    estimate = paired_interval(rounds.ratios, confidence)
    return Comparison(
        estimate=estimate,
        threshold=threshold,
        verdict=decide(estimate, threshold),
        mode="a/b",
        statistic=f"{AB_STATISTIC} over {len(rounds.ratios)} rounds",
    )
