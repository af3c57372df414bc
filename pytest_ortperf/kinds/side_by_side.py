"""Side by side across measuring processes, for every kind that compares two recipes' latency
(``latency``, ``threads``): the units one comparison loads from the run's pool of measuring
processes, measured by the one rule (``checks.latency_verdicts.check_across``,
``latency/across_processes.py``), and released after.

The first batch of units loads before the timing lock is taken; their workers name the runtimes of
a comparison across environments. A comparison keeps its last unit loaded until :meth:`close`, so
that its outputs and its operator profiles can be read there.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any

from pytest_ortperf.checks.kind_result import KindResult
from pytest_ortperf.checks.latency_verdicts import LatencyResult, check_across
from pytest_ortperf.checks.paths import Route, inputs_changed, rebuild_plan
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.protocol import CheckContext, CheckTarget
from pytest_ortperf.gate.references import RecordedReference
from pytest_ortperf.latency.across_processes import first_batch, looks_for, most_units
from pytest_ortperf.latency.activity import BUILDING, Activity
from pytest_ortperf.ort.inputs import Feeds, InputOptions, declared_inputs, feeds_of_its_own
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.workers import ProcessUnit, SideSpec, load_units
from pytest_ortperf.store.baselines import with_part
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.recipe import same_recipe


def rebuilt_here(
    context: CheckContext, target: CheckTarget, *, recorded: str = "it", inputs_matter: bool = True
) -> tuple[RecordedReference | None, str]:
    """The recorded reference of a kind that keeps a part of its own (``threads``, ``throughput``,
    ``generation``), rebuilt from its recipe (model from git or the model cache, settings) to be
    measured side by side in this onnxruntime; or None and why nothing is compared: never recorded,
    nothing the repository controls changed, it cannot be rebuilt, the inputs changed (where the kind
    runs the test's inputs, ``inputs_matter``; a kind that feeds each side from its own graph does
    not), or it runs in another onnxruntime."""
    entry = target.entry
    if entry is None:
        return None, "never recorded"
    if same_recipe(entry.recipe, target.environment):
        return None, f"nothing the repository controls changed since {recorded} was recorded"
    plan = replace(rebuild_plan(entry.recipe, target.environment), recorded=entry.recipe)
    if plan.route is not Route.SIDE_BY_SIDE:
        return None, f"the recorded reference cannot be rebuilt ({plan.reason})"
    if inputs_matter and inputs_changed(entry.recipe, target.environment):
        return None, "the inputs changed, and the recorded inputs cannot be rebuilt"
    rebuilt, why = context.references.rebuild(context.built, plan)
    if rebuilt is None:
        return None, f"the recorded reference cannot be rebuilt ({why})"
    if rebuilt.python:
        return None, f"the recorded reference runs in another onnxruntime ({rebuilt.label})"
    return rebuilt, ""


def part_recorded(
    target: CheckTarget,
    kind: str,
    data: Mapping[str, Any],
    *,
    summary: str,
    figures: Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
    change: str = "the curve recorded",
) -> KindResult:
    """An update of a kind's own baseline part: ``data`` staged as this hardware's ``kind`` part (new,
    updated, or unchanged where it equals the recorded one); ``change``: what the record says when
    it was staged."""
    key = target.key
    before, entry = with_part(
        target.recording_on,
        variant=key.variant,
        machine=key.machine,
        name=kind,
        data=data,
        environment=target.environment,
        today=datetime.date.today().isoformat(),
    )
    staged = entry is not None
    status = Status.NEW if before is None else Status.UPDATED if staged else Status.UNCHANGED
    return KindResult(
        key,
        kind,
        status,
        path="record",
        summary=summary,
        change=change if staged else "",
        figures=dict(data if figures is None else figures),
        notes=tuple(notes),
        staged=entry,
    )


def of_the_parts(results: Mapping[Any, LatencyResult]) -> Status:
    """One verdict from a kind's parts judged side by side apart (batch sizes, prefill and decode):
    a regression where any part regressed; inconclusive where one could not be decided and none
    regressed; improved where every part improved; else ok (none: ok)."""
    statuses = [result.status for result in results.values()]
    if Status.REGRESSION in statuses:
        return Status.REGRESSION
    if Status.INCONCLUSIVE in statuses:
        return Status.INCONCLUSIVE
    if statuses and all(status is Status.IMPROVED for status in statuses):
        return Status.IMPROVED
    return Status.OK


def part_note(label: str, change: str, result: LatencyResult) -> str:
    """A part's note: "batch 8 against the recorded model (git ...): +1.2% ... over 6 measuring
    processes (ok)"."""
    units = f" over {len(result.processes.units)} measuring processes" if result.processes else ""
    return f"{label} against {result.reference_label}: {change}{units} ({result.status})"


def estimate_figures(result: LatencyResult) -> dict[str, Any]:
    """A part's verdict and, where it was decided, its ratio and interval, for the record."""
    comparison = result.decisive
    figures: dict[str, Any] = {"verdict": str(result.status)}
    if comparison is not None:
        estimate = comparison.estimate
        figures |= {"ratio": estimate.ratio, "low": estimate.low, "high": estimate.high}
    return figures


def ab_feeds(context: CheckContext, source: ModelSource, inputs: Mapping[str, Any]) -> Feeds | None:
    """The A/B reference model's own inputs where today's do not fit it (a fixed size changed, an
    input added or dropped: ``ort/inputs.py: feeds_of_its_own``), read from the inputs its graph
    declares (no session is built for it: it may run in another runtime); None where today's fit it,
    or its graph cannot be read (it is then fed today's, and its runtime says why if they do not fit)."""
    try:
        declared = declared_inputs(source)
    except OrtperfError:
        return None
    return feeds_of_its_own(declared, context.input_options or InputOptions(), inputs)


@dataclass
class ProcessSides:
    """One comparison's measuring processes: ``current`` and ``reference`` (each with its own model,
    settings and, where given, inputs; else ``inputs``) in units of the run's pool."""

    context: CheckContext
    current: SideSpec
    reference: SideSpec
    inputs: Mapping[str, Any]
    activity: Activity
    units: list[ProcessUnit] = field(default_factory=list)
    looks: tuple[int, ...] = ()  # the unit counts the verdict may look at

    def load(self, count: int) -> list[ProcessUnit]:
        """``count`` more units, loaded at once and not timed; the processes of the next look's units
        start meanwhile (``ort/workers.py: load_units``)."""
        workers, variant = self.context.measurer.workers, self.context.built.variant
        reached = len(self.units) + count
        then = next((look - reached for look in self.looks if look > reached), 0)
        with self.activity.phase(BUILDING, "measuring processes"):
            batch = load_units(
                workers,
                self.current,
                self.reference,
                variant,
                self.inputs,
                first=len(self.units),
                count=count,
                then=then,
            )
        self.units.extend(batch)
        return batch

    def judge(
        self,
        *,
        key: CheckKey,
        label: str,
        policy: CheckPolicy,
        accept: str = "",
        changes: Sequence[str] = (),
        runtimes_named: bool = False,
    ) -> LatencyResult:
        """The verdict across processes; ``runtimes_named``: the label and the result name both
        sides' runtimes, as their workers report them."""
        self.looks = looks_for(most_units(policy.ab.budget_s)) if policy.sequential else ()
        pending = [self.load(first_batch(policy.ab.budget_s, sequential=policy.sequential))]
        runtimes = ""
        if runtimes_named:
            there, here = self.units[0].reference.worker.runtime, self.units[0].current.worker.runtime
            runtimes, label = f"{there.describe()} -> {here.describe()}", f"{label} in {there.describe()}"

        def batch(count: int) -> Sequence[ProcessUnit]:
            return pending.pop() if pending else self.load(count)

        return check_across(
            batch,
            key=key,
            label=label,
            policy=policy,
            accept=accept,
            runtimes=runtimes,
            changes=changes,
            activity=self.activity,
            held=lambda: self.context.measurer.held(self.activity),
        )

    @property
    def last(self) -> ProcessUnit | None:
        return self.units[-1] if self.units else None

    def close(self) -> None:
        """Every unit's sessions freed; a worker that fails to answer is discarded from the pool."""
        units, self.units = self.units, []
        for unit in units:
            for failed in unit.release():
                self.context.measurer.workers.discard(failed)

    def __enter__(self) -> ProcessSides:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
