"""How checks decide: thresholds, budgets, what to do without a baseline, update mode."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from pytest_ortperf.footprint import memory, startup
from pytest_ortperf.graph.diff import DEFAULT_MODE as DEFAULT_GRAPH_MODE
from pytest_ortperf.latency.decision import DEFAULT_CONFIDENCE
from pytest_ortperf.latency.measure import MeasureSettings
from pytest_ortperf.latency.paired import AB_SETTINGS
from pytest_ortperf.latency.recording import record_cap_s

Missing = Literal["fail", "skip", "pass"]
MISSING_CHOICES: tuple[Missing, ...] = ("fail", "skip", "pass")


@dataclass(frozen=True)
class CheckPolicy:
    """How checks decide: thresholds, what to do without a baseline, update mode."""

    threshold: float = 0.10  # stored figures; measured in benchmarks/README.md ("Gate quality by path")
    missing: Missing = "fail"
    update: bool = False
    fail_on_improvement: bool = False
    max_cv: float = 0.10  # an update lists figures whose spread exceeds it as noisy (it never refuses)
    record_cap: float | None = None  # an update measures until its figures settle, at most this long (s);
    # None: CAP_BUDGETS measurement budgets (latency.recording)
    confidence: float = DEFAULT_CONFIDENCE
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    ab_threshold: float = 0.03
    ab: MeasureSettings = AB_SETTINGS
    sequential: bool = True  # side by side: stop at the first look that decides (latency.sequential)
    drift_threshold: float | None = None  # off: an unchanged check never fails on the machine's drift
    update_missing: bool = False  # under update: record only entries this hardware lacks
    memory_threshold: float = memory.DEFAULT_THRESHOLD  # relative; a change must also exceed the floor
    memory_floor: int = memory.DEFAULT_FLOOR  # bytes
    startup_threshold: float = startup.DEFAULT_THRESHOLD
    graph_mode: str = DEFAULT_GRAPH_MODE  # what of a graph's change fails (graph/diff.py: MODES)
    graph_pins: tuple[tuple[str, int], ...] = ()  # (op type, the count it must have)

    @property
    def record_cap_s(self) -> float:
        return record_cap_s(self.measure.budget_s) if self.record_cap is None else self.record_cap

    def for_entry(self, kept: bool) -> CheckPolicy:
        """This policy for one check: under ``--ortperf-update=missing`` a check whose entry this
        hardware already has is checked as in a plain run, and its entry left byte for byte."""
        return replace(self, update=False, update_missing=False) if self.update_missing and kept else self
