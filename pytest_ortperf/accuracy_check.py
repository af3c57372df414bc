"""The accuracy check: outputs against up to three references, each reported.

1. The recorded baseline of this test, variant and machine (``.npz`` beside
   the JSON entry), recorded by ``--ortperf-update`` like latency.
2. A reference variant run in the same process on the same inputs (default
   ``cpu-disabled``, the most literal execution): no baseline needed.
3. The model's own expected outputs (``test_data_set_*/output_*.pb``), with
   ``rtol``/``atol`` from ``data.json`` when present.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from pytest_ortperf.accuracy import Array, OutputComparison, ToleranceSpec, compare_outputs
from pytest_ortperf.baselines import BaselineEntry, BaselineStore
from pytest_ortperf.checks import CheckKey, CheckPolicy
from pytest_ortperf.environment import what_changed
from pytest_ortperf.errors import BaselineError
from pytest_ortperf.naming import file_slug
from pytest_ortperf.references import AccuracyRecord, comparable, for_storage, load_npz, npz_bytes


@dataclass(frozen=True)
class Reference:
    """Outputs to compare against, with extra tolerance defaults (from data.json)."""

    label: str
    outputs: Mapping[str, Array]
    tolerance_defaults: Mapping[str, float]


@dataclass(frozen=True)
class ReferenceOutcome:
    label: str
    comparisons: tuple[OutputComparison, ...] = ()
    note: str = ""

    @property
    def failed(self) -> bool:
        return any(not c.ok for c in self.comparisons)

    def lines(self) -> list[str]:
        if self.note:
            return [f"  vs {self.label}: {self.note}"]
        if not self.failed:
            names = ", ".join(c.name for c in self.comparisons)
            return [f"  vs {self.label}: ok ({names})"]
        return [f"  vs {self.label}:"] + [f"    {c.describe()}" for c in self.comparisons if not c.ok]


@dataclass(frozen=True)
class AccuracyResult:
    key: CheckKey
    status: str
    references: tuple[ReferenceOutcome, ...]
    failed: bool = False
    skipped: bool = False
    message: str = ""


def outputs_file(key: CheckKey) -> str:
    """Where the reference outputs of one entry live, relative to the baseline directory."""
    return f"{key.test_file}.outputs/{file_slug(key.test)}@{key.machine}.npz"


def _compare(
    label: str,
    actual: Mapping[str, Array],
    reference: Reference | None,
    *,
    tolerances: ToleranceSpec,
    provider_short: str,
) -> ReferenceOutcome | None:
    if reference is None:
        return None
    spec = ToleranceSpec(dict(reference.tolerance_defaults), {}).merged(tolerances)
    comparisons = compare_outputs(
        actual, reference.outputs, reference=label, tolerances=spec, provider_short=provider_short
    )
    return ReferenceOutcome(label, tuple(comparisons))


def compare_with(
    actual: Mapping[str, Array],
    reference: Reference,
    *,
    key: CheckKey,
    tolerances: ToleranceSpec,
    provider_short: str,
) -> AccuracyResult:
    """Outputs against one in-run reference (the A/B reference model): no baseline involved."""
    outcome = _compare(
        reference.label, actual, reference, tolerances=tolerances, provider_short=provider_short
    )
    assert outcome is not None
    failed = outcome.failed
    lines = [f"accuracy of {key.test} against {reference.label}" + (" FAILED" if failed else "")]
    lines += outcome.lines()
    return AccuracyResult(
        key, "failed" if failed else "ok", (outcome,), failed=failed, message="\n".join(lines)
    )


def check_accuracy(
    actual: Mapping[str, Array],
    *,
    inputs_sha256: str,
    key: CheckKey,
    store: BaselineStore,
    policy: CheckPolicy,
    tolerances: ToleranceSpec,
    provider_short: str,
    variant_reference: Reference | None,
    model_reference: Reference | None,
    environment: Mapping[str, Any],
    today: str,
) -> AccuracyResult:
    """Compare ``actual`` with every available reference; record the baseline under update."""
    outcomes = [
        outcome
        for outcome in (
            _compare(
                variant_reference.label if variant_reference else "",
                actual,
                variant_reference,
                tolerances=tolerances,
                provider_short=provider_short,
            ),
            _compare(
                model_reference.label if model_reference else "",
                actual,
                model_reference,
                tolerances=tolerances,
                provider_short=provider_short,
            ),
        )
        if outcome is not None
    ]
    entry = store.lookup(key.test_file, key.test, key.machine)
    record = entry.accuracy if entry is not None else None
    if policy.update:
        status, baseline_outcome = _record(
            actual,
            inputs_sha256,
            key,
            store,
            record,
            environment,
            today,
            tolerances=tolerances,
            provider_short=provider_short,
        )
        outcomes.insert(0, baseline_outcome)
        failed = any(o.failed for o in outcomes[1:])  # an update fixes the baseline, not the other references
        return _result(key, status, outcomes, failed=failed, skipped=False)
    if record is None or record.inputs_sha256 != inputs_sha256:
        others = store.machines_for(key.test_file, key.test, part="accuracy")
        why = (
            "no recorded outputs for this machine"
            + (f" (machines with baselines: {', '.join(others)})" if others else "")
            if record is None
            else "inputs changed since the baseline (not an accuracy failure): re-record"
        )
        outcomes.insert(0, ReferenceOutcome("baseline", note=why))
        failed = any(o.failed for o in outcomes) or policy.missing == "fail"
        skipped = not failed and policy.missing == "skip"
        status = "missing" if record is None else "inputs changed"
        return _result(key, status, outcomes, failed=failed, skipped=skipped)
    stored = load_npz(store.root / record.file)
    _verify(stored, record, store.root / record.file, store.path_for(key.test_file))
    baseline = Reference(f"baseline (recorded {entry.recorded if entry else '?'})", stored, {})
    outcome = _compare(
        baseline.label,
        comparable(actual, record.outputs),
        baseline,
        tolerances=tolerances,
        provider_short=provider_short,
    )
    assert outcome is not None
    outcome = _with_recorded_shapes(outcome, actual, record)
    outcomes.insert(0, outcome)
    failed = any(o.failed for o in outcomes)
    changes = what_changed(entry.environment, environment) if entry is not None and failed else []
    return _result(key, "failed" if failed else "ok", outcomes, failed=failed, skipped=False, changes=changes)


def _verify(stored: Mapping[str, Array], record: AccuracyRecord, npz: Path, entry_file: Path) -> None:
    """The .npz and its JSON entry are written one after the other; an interrupted update can leave
    them from different versions. Whole tensors carry their sha256 in the entry: check it."""
    for output in record.outputs:
        array = stored.get(output.name)
        if output.stored != "full" or array is None:
            continue
        if hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest() != output.sha256:
            raise BaselineError(
                f"reference outputs '{npz}' do not match their entry in '{entry_file}' (output "
                f"{output.name!r}; an interrupted update?). Re-record with --ortperf-update."
            )


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


def _record(
    actual: Mapping[str, Array],
    inputs_sha256: str,
    key: CheckKey,
    store: BaselineStore,
    record: AccuracyRecord | None,
    environment: Mapping[str, Any],
    today: str,
    *,
    tolerances: ToleranceSpec,
    provider_short: str,
) -> tuple[str, ReferenceOutcome]:
    arrays, stored = for_storage(actual)
    previous = None
    if record is not None and record.inputs_sha256 == inputs_sha256:
        try:
            previous = load_npz(store.root / record.file)
        except BaselineError:
            previous = None  # missing or damaged outputs: the update records them afresh
    if record is not None and previous is not None:
        same = _compare(
            "baseline",
            comparable(actual, record.outputs),
            Reference("baseline", previous, {}),
            tolerances=tolerances,
            provider_short=provider_short,
        )
        if same is not None and not same.failed and [o.name for o in record.outputs] == list(actual):
            return "unchanged", ReferenceOutcome("baseline", note="recorded outputs still match: kept")
    new_record = AccuracyRecord(inputs_sha256=inputs_sha256, outputs=stored, file=outputs_file(key))
    store.stage_file(new_record.file, npz_bytes(arrays))
    existing = store.current(key.test_file, key.test, key.machine)
    entry = (
        # The entry's environment describes its latency; leave it to the latency check when present.
        replace(existing, accuracy=new_record)
        if existing is not None and existing.latency is not None
        else replace(existing, accuracy=new_record, recorded=today, environment=environment)
        if existing is not None
        else BaselineEntry(variant=key.variant, recorded=today, environment=environment, accuracy=new_record)
    )
    store.stage(key.test_file, key.test, key.machine, entry)
    status = "new" if record is None else "updated"
    return status, ReferenceOutcome("baseline", note=f"outputs recorded ({status})")


def _result(
    key: CheckKey,
    status: str,
    outcomes: list[ReferenceOutcome],
    *,
    failed: bool,
    skipped: bool,
    changes: list[str] | None = None,
) -> AccuracyResult:
    lines = [f"accuracy of {key.test} on machine '{key.machine}'" + (" FAILED" if failed else "")]
    for outcome in outcomes:
        lines += outcome.lines()
    if changes:
        lines.append("  changed since the baseline: " + "; ".join(changes))
    lines.append(f"  to accept the current outputs as the baseline: {key.record_command}")
    return AccuracyResult(
        key, status, tuple(outcomes), failed=failed, skipped=skipped, message="\n".join(lines)
    )
