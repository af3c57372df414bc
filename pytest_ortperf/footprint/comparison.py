"""One figure of a memory or start-up check compared, the verdict of several, and sizes as text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
