"""The one shape every check of a test instance has: a :class:`Check` object, run on a
:class:`CheckTarget`, returning outcomes.

A new kind of check is one module of ``kinds/`` with one class that satisfies :class:`Check` and
its ``CheckKind`` declaration (``gate/registry.py``); ``gate/instance_checks.py`` makes it from the
registry, reads its baseline entry once for it, and publishes its errors. A check works only through
the services of its :class:`CheckContext` and publishes records. Errors end a check as a
:class:`CheckError` outcome, never as a bare string.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pytest_ortperf.accuracy.tolerances import ToleranceSpec
from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult
from pytest_ortperf.checks.contract_verdicts import ContractResult
from pytest_ortperf.checks.footprint_verdicts import FootprintResult
from pytest_ortperf.checks.kind_result import KindResult
from pytest_ortperf.checks.latency_verdicts import LatencyResult
from pytest_ortperf.checks.paths import Ladder, Plan, SameJob, plan_check
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.references import ABReference, ReferenceChoice
from pytest_ortperf.gate.services import (
    CheckSettings,
    Localising,
    Measuring,
    OutputStore,
    References,
    Sessions,
)
from pytest_ortperf.ort.inputs import Array, InputOptions
from pytest_ortperf.ort.providers import CPU
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.profiling.book import MarkedProfile
from pytest_ortperf.store.baselines import BaselineEntry, BaselineStore, EntryState
from pytest_ortperf.store.keys import CheckKey


@dataclass(frozen=True)
class CheckError:
    """A check that ended in an error instead of a verdict (a damaged baseline, a model that cannot
    be rebuilt, a run that timed out): reported like a failed check, with its message."""

    key: CheckKey
    kind: str
    message: str
    status: Status = Status.ERROR
    failed: bool = True
    skipped: bool = False


Outcome = LatencyResult | AccuracyResult | FootprintResult | ContractResult | KindResult | CheckError


class Publisher(Protocol):
    """Where a check's results go, once each, as records (``reports/ci_files.py`` makes them): the run's
    results, the test's JUnit properties, pytest-benchmark (``gate/publisher.py`` is the run's)."""

    def publish(self, record: Mapping[str, Any], *, verdict_property: str = "") -> None:
        """Publish one check's record (``verdict_property``: the JUnit property of its verdict, when
        not its kind's ``ortperf_<kind>_verdict``)."""
        ...


class _Unpublished:
    def publish(self, record: Mapping[str, Any], *, verdict_property: str = "") -> None:
        raise OrtperfError("this check context has no publisher.")


def _no_other_variant(variant_id: str) -> BuiltSession:
    raise OrtperfError(f"no other variant can be built for this check (asked for {variant_id}).")


def _nothing_noted(fields: Mapping[str, Any]) -> AbstractContextManager[None]:
    return nullcontext()


@dataclass(frozen=True)
class CheckContext:
    """Everything the checks of one test instance need, resolved by the pytest layer: the services
    they use (``gate/services.py``), never the run itself."""

    sessions: Sessions  # sessions, fresh sessions, optimized graphs, operator profiles, the watchdog
    references: References  # the recorded reference rebuilt, models kept, data sets
    measurer: Measuring  # activities, the timing lock, the canary, the measuring workers
    store: BaselineStore  # the baselines: entries read, and staged under --ortperf-update
    outputs: OutputStore  # the reference outputs stored beside the baselines: read, kept, staged
    localising: Localising  # where an accuracy failure starts (paid by failures only)
    settings: CheckSettings  # the few configuration values checks read
    built: BuiltSession
    feeds: Mapping[str, Array]
    key: CheckKey
    policy: CheckPolicy
    tolerances: ToleranceSpec
    reference: Callable[[], ReferenceChoice]  # the configured reference variant, or why there is none
    data_set: Path | None = None
    profiler: MarkedProfile | None = None
    nodeid: str = ""
    add_property: Callable[[str, object], None] = lambda name, value: None
    ab: Callable[[], ABReference | None] = lambda: None  # the A/B reference; None: stored mode
    # This test's model at another variant (an id such as "cpu-disabled"), for a contract; raises
    # ProviderUnavailable when that variant cannot run here.
    other_variant: Callable[[str], BuiltSession] = _no_other_variant
    publisher: Publisher = field(default_factory=_Unpublished)
    # Every record published inside carries these fields (what --ortperf-update=missing did with it).
    noted: Callable[[Mapping[str, Any]], AbstractContextManager[None]] = _nothing_noted
    # How this instance's synthetic inputs are made: a reference's recorded ones are made again
    # with them (``ort.inputs.synthesized_as_described``); None where nothing says.
    input_options: InputOptions | None = None


@dataclass(frozen=True)
class CheckTarget:
    """One check to make: its key, the inputs it runs, its baseline entry (read once, before any
    check of the call runs) and the environment it is measured in (computed once: it hashes the
    inputs)."""

    key: CheckKey
    inputs: dict[str, Array]
    entry: BaselineEntry | None
    environment: Mapping[str, object]
    policy: CheckPolicy
    own_feeds: bool = True  # the test's own feeds: its model's other data sets are compared too
    # The entry a recording builds on: as read and with what earlier checks of the call staged
    # (None: as read, nothing staged). A recording verdict returns the entry to stage; the gate
    # stages it (``gate/instance_checks.py``).
    state: EntryState | None = None

    @property
    def recording_on(self) -> EntryState:
        """What a recording verdict builds on (``state``, else the entry as read)."""
        return self.state if self.state is not None else EntryState(self.entry, self.entry)

    def plan(self, part: str, same_job: SameJob | None = None, *, ladder: Ladder = Ladder.FIGURES) -> Plan:
        """This check's plan (``checks/paths.py: plan_check``) for its kind's ``part`` by its ``ladder``,
        same-job A/B first when there is an A/B reference."""
        return plan_check(
            self.entry,
            self.environment,
            self.key.machine,
            update=self.policy.update,
            part=part,
            ladder=ladder,
            same_job=same_job,
        )

    @property
    def inputs_sha256(self) -> str:
        """The digest of the inputs, from the environment that already hashed them."""
        return str(self.environment["inputs_sha256"])


class Check(Protocol):
    """One check of a test instance. ``kind`` is its kind's name in the registry: its records' kind,
    its baseline part and its word in every report ("latency", "accuracy", "determinism", ...)."""

    kind: str

    def recorded(self, entry: BaselineEntry, machine: str) -> bool:
        """Whether ``entry`` already holds this check's part for machine key ``machine`` (under
        ``--ortperf-update=missing`` such a check runs as in a plain run)."""
        ...

    def run(self, target: CheckTarget) -> Sequence[Outcome]:
        """Measure, decide and publish each result (``CheckContext.publisher``); an
        OrtperfError raised here becomes a :class:`CheckError`, published by the instance."""
        ...


def canary_on(context: CheckContext) -> bool:
    """Whether latency is measured with the machine-speed canary: when on, for the CPU provider."""
    return context.settings.canary and context.built.variant.provider == CPU
