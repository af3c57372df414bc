"""How checks decide: thresholds, budgets, what to do without a baseline, update mode."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from pytest_ortperf import defaults
from pytest_ortperf.latency.decision import DEFAULT_CONFIDENCE, DEFAULT_THRESHOLD
from pytest_ortperf.latency.measure import MeasureSettings
from pytest_ortperf.latency.paired import AB_SETTINGS
from pytest_ortperf.latency.recording import record_cap_s

Missing = defaults.Missing
MISSING_CHOICES = defaults.MISSING_CHOICES


@dataclass(frozen=True)
class CheckPolicy:
    """How checks decide: thresholds, what to do without a baseline, update mode."""

    threshold: float = DEFAULT_THRESHOLD  # stored figures (latency.decision)
    missing: Missing = defaults.MISSING
    update: bool = False
    fail_on_improvement: bool = False
    max_cv: float = (
        defaults.MAX_CV
    )  # an update lists figures whose spread exceeds it as noisy (it never refuses)
    record_cap: float | None = None  # an update measures until its figures settle, at most this long (s);
    # None: CAP_BUDGETS measurement budgets (latency.recording)
    confidence: float = DEFAULT_CONFIDENCE
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    ab: MeasureSettings = AB_SETTINGS
    sequential: bool = True  # side by side: stop at the first look that decides (latency.sequential)
    drift_threshold: float | None = None  # off: an unchanged check never fails on the machine's drift
    update_missing: bool = False  # under update: record only what does not exist (missing_only)
    # ort_thresholds keywords that registered kinds own (CheckKind.thresholds): key -> value as given
    kind_thresholds: Mapping[str, object] = field(default_factory=dict)

    @property
    def record_cap_s(self) -> float:
        return record_cap_s(self.measure.budget_s) if self.record_cap is None else self.record_cap

    def judged(self) -> CheckPolicy:
        """This policy for a check that ``--ortperf-update=missing`` judges instead of recording: a
        plain run's, so its entry is left byte for byte whatever the verdict."""
        return replace(self, update=False, update_missing=False)


RECORDED, JUDGED = "recorded", "judged"


@dataclass(frozen=True)
class MissingOnly:
    """What ``--ortperf-update=missing`` does with one check, and why: it records only what does not
    exist; everything else is judged as in a plain run. Shown in the summary and the JSON report, so
    a reader can tell a figure taken in from a verdict."""

    action: str  # RECORDED or JUDGED
    reason: str
    changes: tuple[str, ...] = ()  # judged: what changed in the recipe since it was recorded

    @property
    def records(self) -> bool:
        return self.action == RECORDED

    def as_dict(self) -> dict[str, object]:
        return {"action": self.action, "reason": self.reason, "changes": list(self.changes)}


def missing_only(*, exists: bool, recorded_here: bool, changes: Sequence[str] | None) -> MissingOnly:
    """The rule of ``--ortperf-update=missing`` for one check. ``exists``: the test x variant has an
    entry; ``recorded_here``: the entry holds this check's part for this hardware; ``changes``: what
    changed in the recipe since it was recorded (empty: nothing; None: not asked, the entry is new).

    A new entry is recorded; this hardware's missing part is added only under the recipe the entry
    was recorded with. A changed recipe (model, settings, inputs, runtime, providers) is never taken
    in: it is judged as in a plain run (side by side with the rebuilt reference), and fails or passes,
    whatever hardware this is."""
    if not exists:
        return MissingOnly(RECORDED, "never recorded")
    if recorded_here:
        return MissingOnly(JUDGED, "nothing missing for this hardware")
    if changes:
        return MissingOnly(
            JUDGED,
            "the recipe changed since it was recorded: judged as in a plain run, never recorded",
            tuple(changes),
        )
    return MissingOnly(RECORDED, "this hardware had no figures; the recipe is unchanged")
