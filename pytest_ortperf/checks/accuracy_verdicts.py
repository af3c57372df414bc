"""The accuracy check: outputs against up to three references, each reported.

1. The recorded baseline of this test and variant (``.npz`` beside the JSON
   entry), recorded by ``--ortperf-update`` like latency: one set per entry,
   belonging to its recipe and compared on every machine.
2. A reference variant run in the same process on the same inputs (default
   ``cpu-disabled``, the most literal execution): no baseline needed.
3. The model's own expected outputs (``test_data_set_*/output_*.pb``), with
   ``rtol``/``atol`` from ``data.json`` when present.

A reference that was asked for but cannot be compared (its provider cannot run
here, or it is the variant under test) is reported with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pytest_ortperf.accuracy.metrics import Array, OutputComparison, compare_outputs
from pytest_ortperf.accuracy.output_values import OutputValue, flatten
from pytest_ortperf.accuracy.tolerances import Tolerance, ToleranceSpec
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.ort.git_models import SHALLOW
from pytest_ortperf.store.baselines import BaselineEntry
from pytest_ortperf.store.environment import what_changed
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.outputs import (
    AccuracyRecord,
    StoredOutput,
    comparable,
    nonfinite_count,
    summary,
    tensor_sha256,
)
from pytest_ortperf.store.recipe import split
from pytest_ortperf.store.recorded_outputs import RecordedOutputs

NOT_IN_DATA_SET = "not in the data set"
IDENTICAL = "identical (sha256 of the whole tensor)"
# Summaries are stored with 6 significant digits (baselines.render): allow that rounding.
SUMMARY_ROUNDING = 5e-6


@dataclass(frozen=True)
class Reference:
    """Outputs to compare against, with extra tolerance defaults (from data.json)."""

    label: str
    outputs: Mapping[str, OutputValue]
    tolerance_defaults: Mapping[str, float] = field(default_factory=dict)
    note: str = ""  # set: the reference was asked for but cannot be compared, and why

    @classmethod
    def unavailable(cls, label: str, note: str) -> Reference:
        """A configured reference that is reported, not compared (e.g. its provider cannot run here)."""
        return cls(label, {}, {}, note)


@dataclass(frozen=True)
class ReferenceOutcome:
    label: str
    comparisons: tuple[OutputComparison, ...] = ()
    note: str = ""

    @property
    def failed(self) -> bool:
        return any(not c.ok for c in self.comparisons)

    def lines(self, *, named: bool = True) -> list[str]:
        """This reference's lines of a message, named once (``named=False``: the message's first line
        already names it, as when a check compares with one reference only)."""
        head = f"  vs {self.label}: " if named else "  "
        if self.note:
            return [f"{head}{self.note}"]
        if not self.failed:
            plain = ", ".join(
                c.name for c in self.comparisons if not c.note and not c.not_compared and not c.unjudged
            )
            noted = "; ".join(f"{c.name}: {c.note}" for c in self.comparisons if c.note)
            unjudged = "; ".join(
                f"{c.name}: cosine and SQNR not judged ({c.unjudged})"
                for c in self.comparisons
                if c.unjudged and not c.note
            )
            noted = "; ".join(part for part in (noted, unjudged) if part)
            skipped = "; ".join(
                f"{c.name}: not compared ({c.not_compared})" for c in self.comparisons if c.not_compared
            )
            return [f"{head}ok ({'; '.join(part for part in (plain, noted, skipped) if part)})"]
        listed = [c.describe() for c in self.comparisons if not c.ok or c.note or c.not_compared]
        if not named:
            return [f"  {line}" for line in listed]
        return [f"  vs {self.label}:"] + [f"    {line}" for line in listed]


@dataclass(frozen=True)
class AccuracyResult:
    key: CheckKey
    status: Status
    references: tuple[ReferenceOutcome, ...]
    failed: bool = False
    skipped: bool = False
    message: str = ""
    # Why it failed, section by section (title, lines): where the two sides start to diverge.
    explanations: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Not judged for want of the recorded model in a shallow clone: no command accepts it
    unjudged: bool = False


AB_OUTPUTS_REPORT = "--ortperf-ab-outputs=report"


def compare_with(
    actual: Mapping[str, OutputValue],
    reference: Reference,
    *,
    key: CheckKey,
    tolerances: ToleranceSpec,
    provider_short: str,
    fail: bool = True,
    accept: str = "",
) -> AccuracyResult:
    """Outputs against one in-run reference (the A/B reference model): no baseline involved.

    ``fail=False`` (``--ortperf-ab-outputs=report``): a difference is reported, not failed.
    ``accept``: how a failure is accepted (the update that records the current outputs).
    """
    outcome = _Judge(tolerances, provider_short, key.variant).compare(actual, reference)
    assert outcome is not None
    differs = outcome.failed
    status = (Status.FAILED if fail else Status.DIFFERS_REPORTED) if differs else Status.OK
    # "outputs", not "accuracy of": this comparison runs inside latency checks, whose items are
    # named latency[...], and pytest's short summary shows only this line's start: "accuracy of
    # latency[cpu-all]" read as a slowdown.
    lines = [
        f"outputs of {key.shown} against {reference.label}"
        + ((" FAILED" if fail else " differ") if differs else "")
    ]
    lines += outcome.lines(named=False)
    if differs and fail and accept:
        lines.append(f"  to accept the current outputs: {accept}")
        lines.append(f"  (differences made on purpose can be reported, not failed: {AB_OUTPUTS_REPORT})")
    return AccuracyResult(key, status, (outcome,), failed=differs and fail, message="\n".join(lines))


def not_comparable(key: CheckKey, label: str, why: str, *, fail: bool, accept: str) -> AccuracyResult:
    """Outputs that cannot stand beside ``label``'s (the two sides ran inputs of other shapes):
    not compared, a failure where ``fail``, with ``accept``."""
    note = f"outputs not comparable: {why}"
    lines = [
        f"outputs of {key.shown} against {label}" + (" FAILED" if fail else " not compared"),
        f"  {note}",
    ]
    if fail and accept:
        lines.append(f"  to accept the current outputs: {accept}")
    status = Status.FAILED if fail else Status.DIFFERS_REPORTED
    outcome = ReferenceOutcome(label, note=note)
    return AccuracyResult(key, status, (outcome,), failed=fail, message="\n".join(lines))


def check_accuracy(
    actual: Mapping[str, OutputValue],
    *,
    inputs_sha256: str,
    key: CheckKey,
    policy: CheckPolicy,
    tolerances: ToleranceSpec,
    provider_short: str,
    variant_reference: Reference | None,
    model_reference: Reference | None,
    entry: BaselineEntry | None,
    baseline: RecordedOutputs | None,
    environment: Mapping[str, Any],
    more_data_sets: Sequence[tuple[Mapping[str, OutputValue], Reference]] = (),
    rebuilt_reference: Reference | None = None,
    shapes_changed: str = "",
) -> AccuracyResult:
    """Compare ``actual`` with every available reference; under update, say whether the baseline's
    outputs are recorded afresh (status new or updated: the caller stages them) or kept. Nothing is
    read or written here.

    ``baseline`` is the entry's recorded outputs as the store read them (``store/recorded_outputs.py``):
    when the inputs are the recorded ones, those to compare with; under update, those an update may
    keep. ``model_reference`` is the model's data set whose inputs gave ``actual``; ``more_data_sets``
    are its other data sets, each with the outputs its own inputs gave. A data set may ship only
    some outputs: the others are "not in the data set". ``rebuilt_reference``: when the inputs
    changed since the baseline, the recorded model's outputs on today's inputs, which then stand in
    for the recorded outputs (or, without them, why not).
    """
    judge = _Judge(tolerances=tolerances, provider_short=provider_short, variant=key.variant)
    compared = [
        judge.compare(actual, variant_reference),
        judge.compare(actual, model_reference, absent_note=NOT_IN_DATA_SET),
        *(judge.compare(out, reference, absent_note=NOT_IN_DATA_SET) for out, reference in more_data_sets),
    ]
    outcomes = [outcome for outcome in compared if outcome is not None]
    record = entry.accuracy if entry is not None else None
    if policy.update:
        status, baseline_outcome = _recording(actual, record, baseline, judge)
        outcomes.insert(0, baseline_outcome)
        failed = any(o.failed for o in outcomes[1:])  # an update fixes the baseline, not the other references
        return _result(key, status, outcomes, failed=failed, skipped=False)
    if record is not None and record.inputs_sha256 != inputs_sha256 and rebuilt_reference is not None:
        rebuilt = judge.compare(actual, rebuilt_reference)
        if rebuilt is not None and not rebuilt_reference.note:
            outcomes.insert(0, rebuilt)
            failed = any(o.failed for o in outcomes)
            status = Status.FAILED if failed else Status.OK
            return _result(key, status, outcomes, failed=failed, skipped=False)
    if record is not None and record.inputs_sha256 != inputs_sha256 and shapes_changed:
        note = f"outputs not comparable: inputs {shapes_changed}"
        why = rebuilt_reference.note if rebuilt_reference is not None else ""
        if why:
            note += f"; the recorded model on today's inputs: {why}"
        outcomes.insert(0, ReferenceOutcome("baseline", note=note))
        # A shallow clone lacks the recorded model: recording would accept the change unseen (its
        # latency too), so the history is the fix, not a command that records.
        return _result(key, Status.FAILED, outcomes, failed=True, skipped=False, unjudged=SHALLOW in why)
    if record is None or record.inputs_sha256 != inputs_sha256:
        why = (
            "no recorded outputs"
            if record is None
            else "inputs changed since the baseline (not an accuracy failure): re-record"
            + (f"; no recorded model to compare with: {rebuilt_reference.note}" if rebuilt_reference else "")
        )
        outcomes.insert(0, ReferenceOutcome("baseline", note=why))
        failed = any(o.failed for o in outcomes) or policy.missing == "fail"
        skipped = not failed and policy.missing == "skip"
        status = Status.MISSING if record is None else Status.INPUTS_CHANGED
        return _result(key, status, outcomes, failed=failed, skipped=skipped)
    assert baseline is not None, "the store reads the outputs recorded on these inputs"
    label = f"baseline (recorded {entry.recorded if entry else '?'})"
    outcomes.insert(0, judge.against_baseline(actual, baseline, label=label))
    failed = any(o.failed for o in outcomes)
    # Outputs belong to the recipe, valid on every hardware: what changed is read from the recipe.
    changes = what_changed(entry.recipe, split(environment)[0]) if entry is not None and failed else []
    return _result(
        key, Status.FAILED if failed else Status.OK, outcomes, failed=failed, skipped=False, changes=changes
    )


@dataclass(frozen=True)
class _Judge:
    """The tolerances of one check, applied to every reference."""

    tolerances: ToleranceSpec
    provider_short: str
    variant: str

    def compare(
        self, actual: Mapping[str, OutputValue], reference: Reference | None, *, absent_note: str = ""
    ) -> ReferenceOutcome | None:
        if reference is None:
            return None
        if reference.note:
            return ReferenceOutcome(reference.label, note=reference.note)
        spec = ToleranceSpec(dict(reference.tolerance_defaults), {}).merged(self.tolerances)
        comparisons = compare_outputs(
            actual,
            reference.outputs,
            reference=reference.label,
            tolerances=spec,
            provider_short=self.provider_short,
            variant=self.variant,
            absent_note=absent_note,
        )
        return ReferenceOutcome(reference.label, tuple(comparisons))

    def against_baseline(
        self,
        actual: Mapping[str, OutputValue],
        baseline: RecordedOutputs,
        *,
        label: str,
    ) -> ReferenceOutcome:
        """Stored elements compared one by one; a subsampled array also by its whole tensor."""
        record = baseline.record
        outcome = self.compare(comparable(actual, record.outputs), Reference(label, baseline.values))
        assert outcome is not None
        leaves = flatten(actual).leaves
        outcome = _with_recorded_shapes(outcome, leaves, record)
        recorded = {output.name: output for output in record.outputs}
        comparisons = tuple(
            _whole_tensor(comparison, leaves[comparison.name], recorded[comparison.name])
            if comparison.name in leaves
            and comparison.name in recorded
            and recorded[comparison.name].stored == "subsample"
            and not comparison.problem
            else comparison
            for comparison in outcome.comparisons
        )
        if record.structure is None:
            comparisons = tuple(_recorded_before_structures(c, actual, record) for c in comparisons)
        return replace(outcome, comparisons=comparisons)


RECORDED_BEFORE = (
    "not in the recorded outputs, whose entry was recorded by a version that stored tensor outputs "
    "only; record it again with --ortperf-update to compare it"
)


def _recorded_before_structures(
    comparison: OutputComparison, actual: Mapping[str, OutputValue], record: AccuracyRecord
) -> OutputComparison:
    """A sequence or map output that an entry recorded before they were stored does not hold is not a
    new output of the model: it was there, not stored. It is named not compared, with the fix."""
    value = actual.get(comparison.name)
    if (
        value is None
        or isinstance(value, np.ndarray)
        or any(o.name == comparison.name for o in record.outputs)
    ):
        return comparison
    return OutputComparison(
        comparison.name, comparison.reference, comparison.tolerance, not_compared=RECORDED_BEFORE
    )


def _whole_tensor(comparison: OutputComparison, array: Array, stored: StoredOutput) -> OutputComparison:
    """A subsample comparison completed by what the entry keeps of the whole tensor: its sha256,
    NaN/Inf count and summary. The worst element is named by its index in the whole tensor."""
    if tensor_sha256(array) == stored.sha256:
        return OutputComparison(comparison.name, comparison.reference, comparison.tolerance, note=IDENTICAL)
    indices = stored.sampling.indices(array.size)
    worst = (
        tuple(int(i) for i in np.unravel_index(int(indices[comparison.worst_index[0]]), stored.shape))
        if comparison.count and comparison.worst_index
        else comparison.worst_index
    )
    elements = tuple(
        (tuple(int(i) for i in np.unravel_index(int(indices[index[0]]), stored.shape)), actual, expected)
        for index, actual, expected in comparison.worst_elements
    )
    # Class agreement on evenly spaced elements says nothing about the classes.
    comparison = replace(
        comparison,
        worst_index=worst,
        worst_elements=elements,
        top1=None,
        topk=None,
        sampled_from=int(array.size),
    )
    now = nonfinite_count(array)
    if stored.nonfinite is not None and now > stored.nonfinite:
        first = np.unravel_index(int(np.flatnonzero(~np.isfinite(array.ravel()))[0]), array.shape)
        return replace(
            comparison,
            failed_metric=f"nan/inf ({now - stored.nonfinite} new non-finite values in the whole tensor: "
            f"{now} now, {stored.nonfinite} recorded; first at {[int(i) for i in first]})",
        )
    if not comparison.ok:
        return comparison
    exact = comparison.tolerance.atol == comparison.tolerance.rtol == 0.0
    if exact and comparison.tolerance.mismatch == 0.0:  # exact dtypes: any change fails
        return replace(comparison, failed_metric="exact values outside the subsample (whole-tensor sha256)")
    if comparison.tolerance.mismatch == 0.0:  # with a mismatch allowance, outliers may move the summary
        drift = summary_drift(summary(array), stored, comparison.tolerance)
        if drift:
            return replace(comparison, failed_metric=f"whole-tensor summary ({drift})")
    return comparison


def summary_drift(current: Mapping[str, float], stored: StoredOutput, tolerance: Tolerance) -> str:
    """Which of mean/std/min/max moved further than elements within tolerance could move them.

    Every element within ``atol + rtol * |e|`` moves the mean and std by at most ``atol + rtol *
    rms(e)`` and min/max by at most ``atol + rtol * max|e|``, so these limits never fail outputs
    whose every element passes.
    """
    rms = math.hypot(stored.mean, stored.std)
    peak = max(abs(stored.min), abs(stored.max))
    moved = []
    for name, scale in (("mean", rms), ("std", rms), ("min", peak), ("max", peak)):
        recorded = float(getattr(stored, name))
        limit = tolerance.atol + tolerance.rtol * scale + SUMMARY_ROUNDING * abs(recorded)
        if not abs(current[name] - recorded) <= limit:
            moved.append(f"{name} {current[name]:.6g}, recorded {recorded:.6g}, allowed +/-{limit:.3g}")
    return "; ".join(moved)


def _with_recorded_shapes(
    outcome: ReferenceOutcome, actual: Mapping[str, Array], record: AccuracyRecord
) -> ReferenceOutcome:
    """Name the recorded shape/dtype when an output changed (a subsample hides the real shape)."""
    recorded = {output.name: output for output in record.outputs}
    comparisons = []
    for comparison in outcome.comparisons:
        stored, array = recorded.get(comparison.name), actual.get(comparison.name)
        if stored is not None and array is not None:
            if tuple(array.shape) != stored.shape:
                comparison = replace(
                    comparison, problem=f"shape changed: {list(stored.shape)} -> {list(array.shape)}"
                )
            elif array.dtype.name != stored.dtype:
                comparison = replace(comparison, problem=f"dtype changed: {stored.dtype} -> {array.dtype}")
        comparisons.append(comparison)
    return replace(outcome, comparisons=tuple(comparisons))


def _recording(
    actual: Mapping[str, OutputValue],
    record: AccuracyRecord | None,
    previous: RecordedOutputs | None,
    judge: _Judge,
) -> tuple[Status, ReferenceOutcome]:
    """Under update: the recorded outputs are kept when they still match, stored as today's would be;
    else today's are recorded (new, or updated)."""
    if previous is not None:
        same = judge.against_baseline(actual, previous, label="baseline")
        flat = flatten(actual)
        stored_as = previous.record
        kept = [o.name for o in stored_as.outputs] == list(flat.leaves) and (
            stored_as.structure or {}
        ) == flat.structure
        if not same.failed and kept:
            return Status.UNCHANGED, ReferenceOutcome("baseline", note="recorded outputs still match: kept")
    status = Status.NEW if record is None else Status.UPDATED
    return status, ReferenceOutcome("baseline", note=f"outputs recorded ({status})")


def _result(
    key: CheckKey,
    status: Status,
    outcomes: list[ReferenceOutcome],
    *,
    failed: bool,
    skipped: bool,
    changes: list[str] | None = None,
    unjudged: bool = False,
) -> AccuracyResult:
    lines = [f"accuracy of {key.shown} on machine '{key.machine}'" + (" FAILED" if failed else "")]
    for outcome in outcomes:
        lines += outcome.lines()
    if changes:
        lines.append("  changed since the baseline: " + "; ".join(changes))
    if unjudged:
        lines.append(
            "  fetch the history first: then the recorded model is rebuilt and judged beside this one"
        )
    else:
        lines.append(f"  to accept the current outputs as the baseline: {key.record_command}")
    return AccuracyResult(
        key,
        status,
        tuple(outcomes),
        failed=failed,
        skipped=skipped,
        message="\n".join(lines),
        unjudged=unjudged,
    )
