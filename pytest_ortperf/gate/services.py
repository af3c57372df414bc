"""The narrow services a check is handed (``gate/protocol.py: CheckContext``), instead of the whole
run: what builds sessions, what rebuilds and keeps references, what measures, the reference outputs
stored beside the baselines, where an accuracy failure starts, and the few settings of the run that
checks read. Each is a Protocol here, so a check can be unit-tested with stand-ins; the run's own are
``gate/session_factory.py: SessionFactory``, ``gate/reference_builder.py: ReferenceBuilder``,
``gate/measurer.py: Measurer``, ``store/recorded_outputs.py: BaselineOutputs`` and
``gate/localisation.py: Localiser``, built by ``gate/run.py: OrtperfRun``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_ortperf import defaults
from pytest_ortperf.checks.paths import Plan
from pytest_ortperf.gate.references import RecordedReference
from pytest_ortperf.gate.run_config import OrtperfConfig
from pytest_ortperf.graph.figures import GraphFigures
from pytest_ortperf.latency.activity import Activity
from pytest_ortperf.ort.inputs import Array, Feeds
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.runtime import RuntimeInfo
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.variants import Variant
from pytest_ortperf.ort.watchdog import Watchdog
from pytest_ortperf.ort.workers import WorkerPool
from pytest_ortperf.profiling.operators import OpProfile
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.machine import Machine

if TYPE_CHECKING:
    from pytest_ortperf.accuracy.output_values import OutputValue
    from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult
    from pytest_ortperf.ort.precision import Calibration
    from pytest_ortperf.store.outputs import AccuracyRecord
    from pytest_ortperf.store.recorded_outputs import RecordedOutputs

# What a precision build was made from: its fp32 model, and the calibration of a static int8 build.
FromFp32 = tuple[ModelSource, "Calibration | None"]


@dataclass(frozen=True)
class CheckSettings:
    """The run's configuration values that checks read, and nothing else of it."""

    timing: bool = True  # off (--ortperf-timing=off): nothing is timed
    canary: bool = True  # the machine-speed canary for CPU latency
    ab_outputs_fail: bool = True  # whether differing A/B outputs fail the test
    run_timeout_s: float = defaults.RUN_TIMEOUT_S  # one run's limit (--ortperf-run-timeout)
    checks: tuple[str, ...] = ()  # what ort_perf.check() runs (ortperf_checks, resolved by the configuration)
    # The kinds' own options (CheckKind.options): kind -> option name -> value, as text
    kind_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, config: OrtperfConfig) -> CheckSettings:
        return cls(
            timing=config.timing,
            canary=config.canary,
            ab_outputs_fail=config.ab_outputs_fail,
            run_timeout_s=config.run_timeout_s,
            checks=config.checks,
            kind_options=config.kind_options,
        )

    def option(self, kind: str, name: str) -> Any:
        """The value of ``kind``'s own option ``name`` (``--ortperf-<kind>-<name>``, else the ini key
        ``ortperf_<kind>_<name>``, else its default), as its ``KindOption.parse`` made it (text without
        one); a KeyError naming it when the kind declares none."""
        try:
            return self.kind_options[kind][name]
        except KeyError:
            raise KeyError(f"check kind {kind!r} declares no option {name!r}") from None


class Sessions(Protocol):
    """Sessions and what ORT makes of them on this machine: pooled and fresh sessions, the optimized
    graph of a variant, operator profiles, and runs under the run's watchdog."""

    @property
    def runtime(self) -> RuntimeInfo: ...

    @property
    def machine(self) -> Machine: ...

    @property
    def watchdog(self) -> Watchdog: ...

    def session(self, model: ModelSource, variant: Variant, settings: SessionSettings) -> BuiltSession: ...

    def fresh(self, built: BuiltSession, *, deterministic: bool = False) -> BuiltSession:
        """A new session like ``built``, outside the pool (a side of an interleaved measurement);
        ``deterministic``: built with ONNX Runtime's ``use_deterministic_compute``."""
        ...

    def graph(
        self, model: ModelSource, variant: Variant, settings: SessionSettings, *, python: str = ""
    ) -> tuple[GraphFigures, str]: ...

    def op_profile(self, built: BuiltSession, feeds: Mapping[str, Any], *, runs: int = 5) -> OpProfile: ...

    def op_profiles_in_turn(
        self, sides: Sequence[tuple[BuiltSession, Mapping[str, Any]]], *, runs: int = 5
    ) -> list[OpProfile]: ...


class References(Protocol):
    """What a check compares with and keeps for later: a baseline's recorded reference rebuilt from
    its plan, the model measured now kept in the model cache (and where a later run will find it),
    the fp32 model a precision build was made from, and a model-zoo data set's inputs and expected
    outputs."""

    def rebuild(self, built: BuiltSession, plan: Plan) -> tuple[RecordedReference | None, str]: ...

    def rebuilt_outputs(
        self, rebuilt: RecordedReference, built: BuiltSession, inputs: Mapping[str, Array]
    ) -> dict[str, OutputValue]:
        """The outputs of a rebuilt recorded reference at ``built``'s variant on ``inputs``: in a worker
        of its recorded runtime, else in a session of this one, under its recorded settings."""
        ...

    def keep_model(self, model: ModelSource) -> None: ...

    def kept_in(self, model: ModelSource) -> str:
        """Where a later run finds ``model`` to rebuild it ("git", "the model cache"), "" if nowhere."""
        ...

    def made_from(self, model: ModelSource) -> tuple[ModelSource, Calibration | None] | None: ...

    def data_set_outputs(
        self, data_set: Path, output_names: Sequence[str]
    ) -> tuple[dict[str, Any], dict[str, float]]: ...

    def data_set_feeds(self, data_set: Path, built: BuiltSession) -> Feeds: ...


class Measuring(Protocol):
    """How a check measures: its activity (phases, progress line), the run's timing lock, the
    machine-speed canary, and the measuring workers of other runtimes."""

    def activity(self, check: str) -> Activity: ...

    def held(self, activity: Activity | None = None, *, shared: bool = False) -> AbstractContextManager[None]:
        """The run's timing lock, held inside (timed sections of parallel runs never overlap);
        ``shared``: a measurement that only informs, which overlaps only others like it."""
        ...

    def beside(self, *, shared: bool) -> str:
        """Which other processes of this run (xdist workers) a measurement holding the timing lock
        this way (``shared``: a look that only informs) may have run beside; "" when none could."""
        ...

    def untimed(self, check: str = "") -> AbstractContextManager[None]:
        """The timing lock held shared around untimed work (never beside another process's decision);
        a wait for it is charged to ``check``'s first activity."""
        ...

    def canary(self, built: BuiltSession) -> Callable[[], object] | None: ...

    @property
    def workers(self) -> WorkerPool: ...


class OutputStore(Protocol):
    """The reference outputs stored beside the baselines (``store/recorded_outputs.py``): an entry's
    outputs read and checked against it, those an update may keep, and new ones staged."""

    def recorded(
        self, record: AccuracyRecord | None, *, test_file: str, inputs_sha256: str
    ) -> RecordedOutputs | None:
        """The outputs to compare with: None when none were recorded, or on other inputs; a missing,
        damaged or out-of-step file raises ``BaselineError`` naming it and what to run."""
        ...

    def previous(self, record: AccuracyRecord | None, *, inputs_sha256: str) -> RecordedOutputs | None:
        """The recorded outputs an update may keep (None: recorded afresh); a damaged file fails
        unless ``--ortperf-repair``."""
        ...

    def stage(
        self, key: CheckKey, actual: Mapping[str, OutputValue], *, environment: Mapping[str, Any]
    ) -> None:
        """Stage ``actual``, measured in ``environment`` (with its inputs' digest), as the entry's
        reference outputs, recorded today: the ``.npz`` and the accuracy record."""
        ...


class Localising(Protocol):
    """Where an accuracy failure of one test instance's session starts (``gate/localisation.py``),
    judged by its tolerances: paid by failures only."""

    def precision_lost(
        self, result: AccuracyResult, made: FromFp32, inputs: Mapping[str, Array]
    ) -> AccuracyResult:
        """A failed precision variant's result, with the activations that lost the most against the
        fp32 model it was ``made`` from."""
        ...

    def located(
        self, result: AccuracyResult, reference: ModelSource | None, why: str, inputs: Mapping[str, Array]
    ) -> AccuracyResult:
        """A failed result with the first tensor where the session's model and ``reference`` diverge
        (None: ``why`` it cannot be located)."""
        ...
