"""One figure of a memory or start-up check compared, the verdict of several, the rule over pairs of
fresh processes that both follow side by side, and sizes as text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_ortperf.latency.across_processes import UnitRounds, judge_units, units_needed
from pytest_ortperf.latency.decision import Verdict


def size_text(value: float) -> str:
    """2_109_440 -> '2.01 MiB'; 4096 -> '4 KiB'; 100 -> '100 B' (signed when negative)."""
    sign, size = ("-" if value < 0 else ""), abs(value)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{sign}{size / scale:.3g} {unit}"
    return f"{sign}{size:.0f} B"


@dataclass(frozen=True)
class FigureComparison:
    """One figure of a memory or start-up check, before and after, and what that decided."""

    figure: str  # what it measures, in words
    before: float
    after: float
    verdict: Verdict
    rule: str  # the limit it was held to, in words
    unit: str = "bytes"  # "bytes" or "ms"

    @property
    def ratio(self) -> float:
        return (
            self.after / self.before if self.before else (1.0 if self.after == self.before else float("inf"))
        )

    def describe(self) -> str:
        """'+12.4% (+256 KiB)' or '+31.0% (4.1 ms -> 5.4 ms)'."""
        pct = f"{(self.ratio - 1) * 100:+.1f}%" if self.before else "new"
        if self.unit == "bytes":
            return f"{pct} ({'+' if self.after >= self.before else ''}{size_text(self.after - self.before)})"
        return f"{pct} ({self.before:.4g} ms -> {self.after:.4g} ms)"


def worst(comparisons: Sequence[FigureComparison]) -> Verdict:
    """The verdict of several figures: a regression if any regressed, else an improvement if any
    improved, else inconclusive if any was, else ok."""
    verdicts = {c.verdict for c in comparisons}
    for verdict in (Verdict.REGRESSION, Verdict.IMPROVED, Verdict.INCONCLUSIVE):
        if verdict in verdicts:
            return verdict
    return Verdict.OK


def judge_pairs(
    before: Sequence[int],
    after: Sequence[int],
    *,
    threshold: float,
    confidence: float,
    look: int,
    looks: int,
    limit: str = "",
) -> tuple[Verdict, str]:
    """One figure side by side over pairs of fresh processes, ``before[i]`` beside ``after[i]``, by the
    rule of every side-by-side verdict (``latency/across_processes.py: judge_units``): each pair one
    unit, its change the log ratio of the two, the mean of the pairs' changes with a t interval whose
    spread is the pairs' own (the between-process spread), at look ``look`` of ``looks`` (its share of
    ``confidence``). A figure that is the same in every process (ORT's arena accounting, the weights)
    has no spread: its change is what it is, and any beyond the threshold decides at the first look.

    Values are whole numbers (bytes, or nanoseconds); ``limit`` says the threshold in words where it is
    more than a percentage. Returns the verdict and the rule it was held to, in words."""
    pairs = [
        UnitRounds(f"pair {i + 1}", 1, (now,), (then,), (i % 2 == 0,))
        for i, (then, now) in enumerate(zip(before, after, strict=True))
    ]
    comparison, interval = judge_units(
        pairs, threshold=threshold, confidence=confidence, look=look, looks=looks
    )
    estimate = comparison.estimate
    rule = (
        f"{limit or f'+/-{threshold * 100:.3g}%'}, {round(estimate.confidence * 100, 2):g}% t interval "
        f"{(estimate.low - 1) * 100:+.1f}% .. {(estimate.high - 1) * 100:+.1f}% over {interval.units} "
        f"process pairs, look {look} of {looks}"
    )
    if comparison.verdict is Verdict.INCONCLUSIVE and look == looks:
        # what more would decide it, as an undecided latency check says (units_needed)
        rule += f"; about {units_needed(interval, threshold)} pairs would decide at this spread"
    return comparison.verdict, rule
