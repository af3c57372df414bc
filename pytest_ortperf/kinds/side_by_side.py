"""Side by side across measuring processes, for every kind that compares two recipes' latency
(``latency``, ``threads``): the units one comparison loads from the run's pool of measuring
processes, measured by the one rule (``checks.latency_verdicts.check_across``,
``latency/across_processes.py``), and released after.

The first batch of units loads before the timing lock is taken; their workers name the runtimes of
a comparison across environments. A comparison keeps its last unit loaded until :meth:`close`, so
that its outputs and its operator profiles can be read there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from pytest_ortperf.checks.latency_verdicts import LatencyResult, check_across
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.protocol import CheckContext
from pytest_ortperf.latency.across_processes import first_batch, looks_for, most_units
from pytest_ortperf.latency.activity import BUILDING, Activity
from pytest_ortperf.ort.inputs import Feeds, InputOptions, declared_inputs, feeds_of_its_own
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.workers import ProcessUnit, SideSpec, load_units
from pytest_ortperf.store.keys import CheckKey


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
