"""The latency check: measure, compare with the baseline or record it, and explain the verdict.

Plain logic; the pytest layer turns a failed :class:`LatencyResult` into a
test failure with its message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pytest_ortperf.baselines import BaselineEntry, BaselineStore
from pytest_ortperf.compare import DEFAULT_CONFIDENCE, Comparison, Verdict, judge
from pytest_ortperf.environment import what_changed
from pytest_ortperf.measure import MeasureSettings, measure
from pytest_ortperf.opdiff import OpProfile, explain
from pytest_ortperf.stats import LatencyStats

Missing = Literal["fail", "skip", "pass"]
MISSING_CHOICES: tuple[Missing, ...] = ("fail", "skip", "pass")


@dataclass(frozen=True)
class CheckPolicy:
    """How checks decide: thresholds, what to do without a baseline, update mode."""

    threshold: float = 0.10
    missing: Missing = "fail"
    update: bool = False
    fail_on_improvement: bool = False
    max_cv: float = 0.10
    confidence: float = DEFAULT_CONFIDENCE
    measure: MeasureSettings = field(default_factory=MeasureSettings)


@dataclass(frozen=True)
class CheckKey:
    """Where a check's baseline lives and how to tell the user to record it."""

    test_file: str
    test: str
    variant: str
    machine: str
    record_command: str


@dataclass(frozen=True)
class LatencyResult:
    key: CheckKey
    status: str
    current: LatencyStats
    baseline: BaselineEntry | None = None
    comparison: Comparison | None = None
    confirmation: Comparison | None = None
    changes: tuple[str, ...] = ()
    failed: bool = False
    skipped: bool = False
    message: str = ""

    @property
    def baseline_median_ms(self) -> float | None:
        latency = self.baseline.latency if self.baseline is not None else None
        return latency.median_ms if latency is not None else None

    @property
    def change(self) -> str:
        decisive = self.confirmation or self.comparison
        return decisive.estimate.describe() if decisive else ""


def check_latency(
    run: Callable[[], object],
    *,
    key: CheckKey,
    store: BaselineStore,
    policy: CheckPolicy,
    environment: Mapping[str, Any],
    today: str,
    measure_fn: Callable[[Callable[[], object], MeasureSettings], LatencyStats] = measure,
    profile_fn: Callable[[], OpProfile] | None = None,
) -> LatencyResult:
    """Measure ``run`` and decide against the stored baseline (or record one under update)."""
    entry = store.lookup(key.test_file, key.test, key.machine)
    baseline = entry if entry is not None and entry.latency is not None else None
    current = measure_fn(run, policy.measure)
    if policy.update:
        return _record(key, store, policy, environment, today, current, baseline, profile_fn)
    if baseline is None:
        return _missing(key, store, policy, current)
    changes = tuple(what_changed(baseline.environment, environment))
    comparison = _judge(_stats(baseline), current, policy)
    confirmation = None
    if comparison.verdict is Verdict.REGRESSION:
        # A regression must survive a fresh measurement before it fails the test.
        current = measure_fn(run, policy.measure)
        confirmation = _judge(_stats(baseline), current, policy)
    decisive = confirmation or comparison
    status = decisive.verdict.value
    if confirmation is not None and confirmation.verdict is not Verdict.REGRESSION:
        # The slowdown did not survive a fresh measurement: noise, never a failure.
        status = f"{Verdict.NOT_SIGNIFICANT.value} (not confirmed)"
        failed = False
    else:
        failed = decisive.verdict is Verdict.REGRESSION or (
            decisive.verdict is Verdict.IMPROVED and policy.fail_on_improvement
        )
    result = LatencyResult(
        key=key,
        status=status,
        current=current,
        baseline=baseline,
        comparison=comparison,
        confirmation=confirmation,
        changes=changes,
        failed=failed,
    )
    if not failed:
        return result
    message = failure_message(result, policy)
    if baseline.profile is not None and profile_fn is not None and decisive.verdict is Verdict.REGRESSION:
        explanation = ["  at operator level (profiled runs vs the baseline's):"]
        explanation += [f"    {line}" for line in explain(baseline.profile, profile_fn())]
        head, _, accept = message.rpartition("\n")  # keep the command that accepts it last
        message = "\n".join([head, *explanation, accept])
    return _with_message(result, message)


def _stats(entry: BaselineEntry) -> LatencyStats:
    if entry.latency is None:  # callers pass only entries that hold latency
        raise ValueError("baseline entry without latency")
    return entry.latency


def percent(fraction: float) -> str:
    """0.025 -> '2.5%', 0.1 -> '10%': exact enough to match what the user typed."""
    return f"{fraction * 100:.3g}%"


def _judge(baseline: LatencyStats, current: LatencyStats, policy: CheckPolicy) -> Comparison:
    return judge(
        baseline.round_medians_ms,
        current.round_medians_ms,
        threshold=policy.threshold,
        confidence=policy.confidence,
    )


def _with_message(result: LatencyResult, message: str) -> LatencyResult:
    return replace(result, message=message)


def _record(
    key: CheckKey,
    store: BaselineStore,
    policy: CheckPolicy,
    environment: Mapping[str, Any],
    today: str,
    current: LatencyStats,
    baseline: BaselineEntry | None,
    profile_fn: Callable[[], OpProfile] | None = None,
) -> LatencyResult:
    if current.round_cv > policy.max_cv:
        message = (
            f"latency of {key.test} on machine '{key.machine}' is too noisy to record as a baseline: "
            f"round medians vary {current.round_cv:.1%} (limit {percent(policy.max_cv)}; median "
            f"{current.median_ms:.4g} ms over {current.rounds} rounds). Rerun on a quieter machine, "
            "give the check more time (--ortperf-budget) or raise --ortperf-max-cv."
        )
        return LatencyResult(
            key=key, status="too noisy", current=current, baseline=baseline, failed=True, message=message
        )
    existing = store.current(key.test_file, key.test, key.machine)
    entry = (
        replace(existing, variant=key.variant, recorded=today, latency=current, environment=environment)
        if existing is not None
        else BaselineEntry(variant=key.variant, recorded=today, latency=current, environment=environment)
    )
    if profile_fn is not None:
        entry = replace(entry, profile=profile_fn())
    if baseline is None:
        store.stage(key.test_file, key.test, key.machine, entry)
        return LatencyResult(key=key, status="new", current=current)
    changes = tuple(what_changed(baseline.environment, environment))
    comparison = _judge(_stats(baseline), current, policy)
    if not changes and comparison.verdict in (Verdict.OK, Verdict.NOT_SIGNIFICANT):
        return LatencyResult(
            key=key, status="unchanged", current=current, baseline=baseline, comparison=comparison
        )
    store.stage(key.test_file, key.test, key.machine, entry)
    return LatencyResult(
        key=key, status="updated", current=current, baseline=baseline, comparison=comparison, changes=changes
    )


def _missing(
    key: CheckKey, store: BaselineStore, policy: CheckPolicy, current: LatencyStats
) -> LatencyResult:
    others = store.machines_for(key.test_file, key.test, part="latency")
    where = f"baselines exist for: {', '.join(others)}" if others else "no machine has one yet"
    message = (
        f"no latency baseline for {key.test} on machine '{key.machine}' ({where}); measured "
        f"median {current.median_ms:.4g} ms, p90 {current.p90_ms:.4g} ms. Record it with:\n"
        f"    {key.record_command}"
    )
    return LatencyResult(
        key=key,
        status="missing",
        current=current,
        failed=policy.missing == "fail",
        skipped=policy.missing == "skip",
        message=message,
    )


def _ms(stats: LatencyStats) -> str:
    shape = f"{stats.rounds} rounds x {stats.count // stats.rounds} runs"
    return f"median {stats.median_ms:.4g} ms, p90 {stats.p90_ms:.4g} ms ({shape})"


def failure_message(result: LatencyResult, policy: CheckPolicy) -> str:
    """The message of a failed comparison: numbers, change with its interval, threshold, why."""
    assert result.baseline is not None
    assert result.comparison is not None
    decisive = result.confirmation or result.comparison
    kind = "regression" if decisive.verdict is Verdict.REGRESSION else "improvement"
    lines = [
        f"latency {kind} in {result.key.test} on machine '{result.key.machine}'",
        f"  baseline: {_ms(_stats(result.baseline))}, recorded {result.baseline.recorded}",
        f"  current:  {_ms(result.current)}",
        f"  change:   {decisive.estimate.describe()}, threshold +/-{percent(policy.threshold)}",
    ]
    if result.confirmation is not None:
        lines.append(f"  first measurement: {result.comparison.estimate.describe()} (confirmed by a second)")
    if kind == "improvement":
        lines.append("  (faster beyond the threshold: check that the model still does all its work)")
    lines.append(
        "  changed since the baseline: "
        + ("; ".join(result.changes) if result.changes else "nothing recorded")
    )
    lines.append(f"  to accept the new latency: {result.key.record_command}")
    return "\n".join(lines)
