"""Stand-ins for the services a check is handed (``gate/services.py``), for unit tests of the checks'
own logic: which route they take, what they ask the services for, what they publish. Each records
what it was asked; nothing here builds a session or starts a process."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ortperf.accuracy.output_values import OutputValue
from pytest_ortperf.accuracy.tolerances import ToleranceSpec
from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult
from pytest_ortperf.checks.paths import Plan
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.protocol import CheckContext
from pytest_ortperf.gate.references import ABReference, RecordedReference, ReferenceChoice
from pytest_ortperf.gate.services import CheckSettings
from pytest_ortperf.graph.figures import GraphFigures
from pytest_ortperf.latency.activity import Activity
from pytest_ortperf.ort.inputs import Array
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.variants import OptLevel, Variant
from pytest_ortperf.store.baselines import BaselineEntry, BaselineStore
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.outputs import AccuracyRecord
from pytest_ortperf.store.recorded_outputs import RecordedOutputs

CPU_ALL = Variant(resolve_provider("cpu", source="test"), OptLevel.ALL)
MACHINE = "linux-x86_64-test-2c-000000"
RECIPE: dict[str, Any] = {
    "model_sha256": "a" * 64,
    "model_git_blob": "b" * 40,
    "settings": SessionSettings().as_dict(),
    "inputs": {"x": "float32[1, 4]"},
    "inputs_sha256": "c" * 64,
    "ort_version": "1.31.1",
    "ort_flavour": "onnxruntime-gpu",
    "providers_used": ["CPUExecutionProvider"],
    "variant": CPU_ALL.id,
}
# The model of a test whose model changed since RECIPE was recorded.
CHANGED = {"model_sha256": "d" * 64, "model_git_blob": "e" * 40}


def model(sha: str, label: str = "model.onnx") -> ModelSource:
    return ModelSource(label, sha * 64 if len(sha) == 1 else sha, data=b"not parsed here")


def built_session(source: ModelSource, variant: Variant = CPU_ALL) -> BuiltSession:
    return BuiltSession(None, source, variant, SessionSettings(), (variant.provider,), None, 0.0)


def environment(**changes: Any) -> dict[str, Any]:
    """What a check measures in: RECIPE's recipe with ``changes``, on this hardware."""
    return {**RECIPE, "hardware": {"digest": MACHINE}, **changes}


def entry(recipe: Mapping[str, Any] | None = None) -> BaselineEntry:
    """An entry recorded under ``recipe`` with no figures (nothing stored for this hardware)."""
    return BaselineEntry(variant=CPU_ALL.id, recorded="2026-11-20", recipe=dict(recipe or RECIPE))


def key(test: str = "test_model[cpu-all]") -> CheckKey:
    return CheckKey("test_model.py", test, CPU_ALL.id, MACHINE, "pytest --ortperf-update")


@dataclass
class Sessions:
    """Graphs by model sha256; a session asked for raises (a check that must not build one).
    ``running``: the watchdog sessions are run under (None: none in this test)."""

    graphs: dict[str, GraphFigures] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    running: Any = None

    @property
    def runtime(self) -> Any:
        raise OrtperfError("no runtime in this test")

    @property
    def machine(self) -> Any:
        raise OrtperfError("no machine in this test")

    @property
    def watchdog(self) -> Any:
        if self.running is None:
            raise OrtperfError("no watchdog in this test")
        return self.running

    def session(self, model: ModelSource, variant: Variant, settings: SessionSettings) -> BuiltSession:
        self.asked.append(f"session {model.label}")
        raise OrtperfError(f"no session of {model.label} in this test")

    def fresh(self, built: BuiltSession, *, deterministic: bool = False) -> BuiltSession:
        self.asked.append(f"fresh {built.model.label}")
        raise OrtperfError("no fresh session in this test")

    def graph(
        self, model: ModelSource, variant: Variant, settings: SessionSettings, *, python: str = ""
    ) -> tuple[GraphFigures, str]:
        self.asked.append(f"graph {model.label}")
        return self.graphs[model.sha256], ""

    def op_profile(self, built: BuiltSession, feeds: Mapping[str, Any], *, runs: int = 5) -> Any:
        raise OrtperfError("no operator profile in this test")

    def op_profiles_in_turn(
        self, sides: Sequence[tuple[BuiltSession, Mapping[str, Any]]], *, runs: int = 5
    ) -> Any:
        raise OrtperfError("no operator profile in this test")


@dataclass
class References:
    """``rebuilt``: what a side-by-side plan rebuilds to (or None and ``why``)."""

    rebuilt: RecordedReference | None = None
    why: str = "nothing to rebuild in this test"
    plans: list[Plan] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def rebuild(self, built: BuiltSession, plan: Plan) -> tuple[RecordedReference | None, str]:
        self.plans.append(plan)
        return self.rebuilt, "" if self.rebuilt is not None else self.why

    def rebuilt_outputs(
        self, rebuilt: RecordedReference, built: BuiltSession, inputs: Mapping[str, Array]
    ) -> dict[str, OutputValue]:
        raise OrtperfError(f"no session of {rebuilt.model.label} in this test")

    def keep_model(self, model: ModelSource) -> None:
        self.kept.append(model.label)

    def made_from(self, model: ModelSource) -> None:
        return None

    def data_set_outputs(self, data_set: Path, output_names: Sequence[str]) -> Any:
        raise OrtperfError("no data sets in this test")

    def data_set_feeds(self, data_set: Path, built: BuiltSession) -> Any:
        raise OrtperfError("no data sets in this test")


@dataclass
class Measurer:
    """Counts the times the timing lock was held; no canary, no workers."""

    held_count: int = 0
    activities: list[str] = field(default_factory=list)

    def activity(self, check: str) -> Activity:
        self.activities.append(check)
        return Activity(check)

    @contextmanager
    def held(self, activity: Activity | None = None) -> Iterator[None]:
        self.held_count += 1
        yield

    def canary(self, built: BuiltSession) -> Callable[[], object] | None:
        return None

    def beside(self, *, shared: bool) -> str:
        return ""

    @property
    def workers(self) -> Any:
        raise OrtperfError("no measuring workers in this test")


@dataclass
class Outputs:
    """Stored reference outputs: ``kept`` is what an entry's record reads as (None: none recorded);
    what was staged is listed by test."""

    kept: RecordedOutputs | None = None
    asked: list[str] = field(default_factory=list)
    staged: list[str] = field(default_factory=list)

    def recorded(
        self, record: AccuracyRecord | None, *, test_file: str, inputs_sha256: str
    ) -> RecordedOutputs | None:
        self.asked.append(f"recorded {test_file}")
        return self.kept

    def previous(self, record: AccuracyRecord | None, *, inputs_sha256: str) -> RecordedOutputs | None:
        self.asked.append("previous")
        return self.kept

    def stage(
        self, key: CheckKey, actual: Mapping[str, OutputValue], *, environment: Mapping[str, Any]
    ) -> None:
        self.staged.append(key.test)


@dataclass
class Localising:
    """Locates nothing: a result is returned as it is, and what was asked is listed."""

    asked: list[str] = field(default_factory=list)

    def precision_lost(
        self, result: AccuracyResult, made: Any, inputs: Mapping[str, Array]
    ) -> AccuracyResult:
        self.asked.append(f"precision {made[0].label}")
        return result

    def located(
        self, result: AccuracyResult, reference: ModelSource | None, why: str, inputs: Any
    ) -> AccuracyResult:
        self.asked.append(f"located {reference.label if reference is not None else why}")
        return result


@dataclass
class Published:
    records: list[dict[str, Any]] = field(default_factory=list)

    def publish(self, record: Mapping[str, Any], *, verdict_property: str = "") -> None:
        self.records.append(dict(record))


@dataclass
class Services:
    """One test instance's stand-in services, and the context that hands them to a check."""

    store: BaselineStore
    built: BuiltSession = field(default_factory=lambda: built_session(model("d", "model.onnx")))
    sessions: Sessions = field(default_factory=Sessions)
    references: References = field(default_factory=References)
    measurer: Measurer = field(default_factory=Measurer)
    outputs: Outputs = field(default_factory=Outputs)
    localising: Localising = field(default_factory=Localising)
    published: Published = field(default_factory=Published)
    settings: CheckSettings = field(default_factory=CheckSettings)

    def context(self, *, ab: ABReference | None = None, policy: CheckPolicy | None = None) -> CheckContext:
        return CheckContext(
            sessions=self.sessions,
            references=self.references,
            measurer=self.measurer,
            store=self.store,
            outputs=self.outputs,
            localising=self.localising,
            settings=self.settings,
            built=self.built,
            feeds={},
            key=key(),
            policy=policy or CheckPolicy(),
            tolerances=ToleranceSpec(),
            reference=ReferenceChoice,
            nodeid="test_model.py::test_model[cpu-all]",
            ab=lambda: ab,
            publisher=self.published,
        )
