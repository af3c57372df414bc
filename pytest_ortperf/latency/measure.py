"""Timing a callable the way a careful engineer would: warm up, calibrate, time every run.

Warmup runs until both a count and a time are reached (first runs are slow:
allocation, kernel selection). The run cost seen in warmup sizes the rounds so
the whole measurement fits a time budget. Every run is timed on its own with
``perf_counter_ns`` and the garbage collector off, so a collection never lands
inside a timed run.

Many short rounds spread over a budget of several seconds sample the machine's
speed states (on shared machines they switch every few seconds) instead of
one burst in one state. With a machine-speed canary (``canary.py``), a short
canary round follows every round, so each round can be read relative to how
fast the machine was at that moment.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from pytest_ortperf import defaults
from pytest_ortperf.latency.activity import MEASURING, WARMING, Activity
from pytest_ortperf.latency.stats import LatencyStats, summarize
from pytest_ortperf.ort.worker_program import warm_up_runs

Clock = Callable[[], int]


@dataclass(frozen=True)
class MeasureSettings:
    """How long and how finely to measure one latency check."""

    budget_s: float = defaults.BUDGET_S
    rounds: int = 40
    min_rounds: int = 5
    warmup_runs: int = 5
    warmup_s: float = 0.1  # the floor; then until run times settle (ort.worker_program.warm_up_runs)
    warmup_cap_s: float = 1.0
    max_runs: int = 1_000_000

    def as_dict(self) -> dict[str, float | int]:
        return {
            "budget_s": self.budget_s,
            "rounds": self.rounds,
            "warmup_runs": self.warmup_runs,
            "warmup_s": self.warmup_s,
            "warmup_cap_s": self.warmup_cap_s,
        }


@dataclass(frozen=True)
class RoundPlan:
    rounds: int
    runs_per_round: int


CANARY_SHARE = 0.25  # of the budget, when a canary runs after every round
CANARY_WARMUP_S = 0.05
# A canary round's median must stand up to one preempted run: with one or two runs it is that run
# (the upper of two), a slow canary reads as a fast model, and picking the fastest rounds picks it.
MIN_CANARY_RUNS = 3


def plan_rounds(run_cost_ns: float, settings: MeasureSettings, *, share: float = 1.0) -> RoundPlan:
    """Rounds x runs filling ``share`` of the budget; fewer rounds (to ``min_rounds``) for slow models."""
    budget_ns = settings.budget_s * 1e9 * share
    per_run = max(run_cost_ns, 1.0)
    total_runs = max(settings.min_rounds, min(settings.max_runs, int(budget_ns / per_run)))
    rounds = max(settings.min_rounds, min(settings.rounds, total_runs))
    return RoundPlan(rounds=rounds, runs_per_round=max(1, total_runs // rounds))


def warm_up(run: Callable[[], object], settings: MeasureSettings, clock: Clock) -> float:
    """Warm up until run times settle: at least ``warmup_runs`` runs and ``warmup_s``, at most
    ``warmup_cap_s`` (the rule the measuring worker uses too); return the typical run cost (ns)."""
    return warm_up_runs(run, settings.warmup_runs, settings.warmup_s, settings.warmup_cap_s, clock)


def measure(
    run: Callable[[], object],
    settings: MeasureSettings | None = None,
    *,
    clock: Clock = time.perf_counter_ns,
    canary: Callable[[], object] | None = None,
    activity: Activity | None = None,
) -> LatencyStats:
    """Warm up, plan rounds from the observed cost, and time every run (and the canary after each round).

    ``activity`` hears of the warm-up and of every round (between rounds, never inside one)."""
    settings = settings or MeasureSettings()
    activity = activity or Activity()
    with activity.phase(WARMING):
        cost = warm_up(run, settings, clock)
    canary_runs = 0
    if canary is not None:
        # The canary is tiny and its session is reused all run long: a short warmup is enough.
        with activity.phase(WARMING, "canary"):
            canary_cost = warm_up(
                canary,
                replace(
                    settings,
                    warmup_s=min(settings.warmup_s, CANARY_WARMUP_S),
                    warmup_cap_s=min(settings.warmup_cap_s, 4 * CANARY_WARMUP_S),
                ),
                clock,
            )
        plan = plan_rounds(cost, settings, share=1.0 - CANARY_SHARE)
        round_ns = plan.runs_per_round * max(cost, 1.0)
        canary_runs = max(
            MIN_CANARY_RUNS, round(round_ns * CANARY_SHARE / (1.0 - CANARY_SHARE) / max(canary_cost, 1.0))
        )
    else:
        plan = plan_rounds(cost, settings)
    samples: list[int] = []
    canary_medians: list[float] = []
    with gc_paused(), activity.phase(MEASURING):
        for done in range(1, plan.rounds + 1):
            time_runs(run, plan.runs_per_round, clock, samples)
            if canary is not None:
                canary_runs_ns = sorted(time_runs(canary, canary_runs, clock, []))
                canary_medians.append(max(canary_runs_ns[len(canary_runs_ns) // 2], 1) / 1e6)
            activity.rounds(done, plan.rounds)
    return summarize(samples, [plan.runs_per_round] * plan.rounds, canary_medians)


def time_runs(run: Callable[[], object], count: int, clock: Clock, into: list[int]) -> list[int]:
    """Time ``count`` runs one by one, appending each duration (ns) to ``into``; returns ``into``."""
    for _ in range(count):
        t0 = clock()
        run()
        into.append(clock() - t0)
    return into


@contextmanager
def gc_paused() -> Iterator[None]:
    """Collect once, then keep the garbage collector out of the timed runs; restore it afterwards."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
