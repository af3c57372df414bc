"""The composition root of one gate run: it builds the run's services, the sessions
(``gate/session_factory.py``), the models and inputs (``gate/model_builds.py``), the references
(``gate/reference_builder.py``), the measuring (``gate/measurer.py``), the baselines
(``store/baselines.py``), the results and the profiles, and what ends the run
(``gate/run_end.py``: baseline files, CI files, the summary). Checks never see this object: each
is handed the services it uses (``gate/protocol.py: CheckContext``).

Plain Python; the pytest layer owns one instance per run and hands work to it.
Nothing here touches ONNX Runtime until a test actually asks for a session.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path

from pytest_ortperf.gate.measurer import Measurer
from pytest_ortperf.gate.model_builds import ModelBuilds
from pytest_ortperf.gate.reference_builder import ReferenceBuilder, builtin_stores
from pytest_ortperf.gate.registry import KindRegistry
from pytest_ortperf.gate.run_config import OrtperfConfig
from pytest_ortperf.gate.run_end import RunEnd
from pytest_ortperf.gate.runtimes import RuntimeFinder
from pytest_ortperf.gate.services import CheckSettings
from pytest_ortperf.gate.session_factory import SessionFactory
from pytest_ortperf.latency.lock_holder import LockOwner
from pytest_ortperf.latency.timing_lock import TimingLock, default_lock_path
from pytest_ortperf.ort.envs import EnvCache, env_root
from pytest_ortperf.ort.git_models import changed_since
from pytest_ortperf.ort.model_stores import RecordedModelRecipe, StoredModel
from pytest_ortperf.ort.runtime import RuntimeInfo
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.profiling.book import ProfileBook
from pytest_ortperf.reports.results import RunResults
from pytest_ortperf.store.baselines import BaselineStore
from pytest_ortperf.store.machine import Machine, detect_machine
from pytest_ortperf.store.recorded_outputs import BaselineOutputs
from pytest_ortperf.store.unused import Selection

# Where reference runtimes were kept before the cache moved to the top of the git work tree
# (ort/envs.py: env_root), under rootdir: still searched.
ENV_DIR = Path(".ortperf/envs")


class OrtperfRun:
    """One run: the services checks are handed, built once, and what ends the run."""

    def __init__(
        self,
        config: OrtperfConfig,
        on_build: Callable[[BuiltSession], None] | None = None,
        *,
        kinds: KindRegistry | None = None,
        lock_owner: LockOwner | None = None,
        run_id: str = "",
        stores: Callable[[RecordedModelRecipe], StoredModel | None] = builtin_stores,
    ) -> None:
        # stores: where recorded models are kept (the plugin asks the pytest_ortperf_recorded_model hook)
        self.config = config
        self.settings = CheckSettings.of(config)  # what checks read of the configuration
        self.kinds = kinds if kinds is not None else KindRegistry()  # the check kinds of the run
        # One id for the run, shared by its xdist workers: a failed fetch is not tried again in it.
        self.run_id = run_id or uuid.uuid4().hex
        self.announce: Callable[[str], None] | None = None  # a line on the terminal now (plugin layer)
        self.results = RunResults()  # every check result goes through this sink
        self.selection = Selection()  # what pytest collected: unused entries are judged against it
        self._machine: Machine | None = None
        self.sessions = SessionFactory(
            machine=lambda: self.machine,
            run_timeout_s=config.run_timeout_s,
            on_build=on_build,
            pre_pass=lambda model: self.models.pre_pass_of(model),
        )
        self.models = ModelBuilds(config.rootdir, self.sessions)
        self.references = ReferenceBuilder(
            config,
            self.sessions,
            self.models,
            runtime_python=self.runtime_python,
            workers=lambda: self.measurer.workers,
            stores=stores,
        )
        # lock_owner: how this process names itself in the timing lock file (its run, command, worker)
        timing = TimingLock(None if config.parallel_timing else default_lock_path(), lock_owner)
        self.measurer = Measurer(timing, run_timeout_s=config.run_timeout_s)
        self.profiles = ProfileBook(
            lambda: self.sessions.pool,
            config.profile_dir,
            session_profile=config.session_profile,
            native=self.sessions.native_profiler,
            runner=self.sessions.profiled_run,
            worker=os.environ.get("PYTEST_XDIST_WORKER", ""),
        )
        # Repair only ever happens while updating: a plain run never moves a file.
        # Every kind's part of a machine's figures is validated by its kind's decoder as a file loads.
        self.store = BaselineStore(
            config.baseline_dir,
            repair=config.repair and config.policy.update,
            decoders=self.kinds.part_decoders(),
        )
        self.outputs = BaselineOutputs(self.store)  # the reference outputs stored beside the baselines
        self._runtimes: RuntimeFinder | None = None
        self.ending = RunEnd(
            config,
            store=self.store,
            selection=self.selection,
            results=self.results,
            profiles=self.profiles,
            kinds=self.kinds,
            sessions=self.sessions,
            timing=timing,
            runtime_notes=self.runtime_notes,
        )

    def foresees_side_by_side(self) -> bool:
        """Whether a check of this run will measure side by side against a recorded model: a baseline
        recorded a model (or its DVC pointer) that git holds and its index no longer does (it changed
        since). Read before collection ends, from the baseline files and git alone, so that the
        measuring processes can start while pytest collects."""
        recorded = self.store.recorded_model_blobs()
        return bool(recorded) and bool(changed_since(Path(self.config.rootdir), recorded))

    @property
    def runtime(self) -> RuntimeInfo:
        return self.sessions.runtime

    @property
    def machine(self) -> Machine:
        if self._machine is None:
            self._machine = detect_machine(self.config.machine)
        return self._machine

    def runtime_python(self, flavour: str, version: str) -> tuple[str, str]:
        """An interpreter whose environment has ``flavour`` ``version`` (the configured
        ``--ortperf-ab-python``, an ``ortperf env`` of the repository, or one fetched now under
        ``--ortperf-fetch-runtime=auto``) and where it was found; or ("", why there is none)."""
        return self.runtimes.python(flavour, version)

    @property
    def runtimes(self) -> RuntimeFinder:
        """Where recorded runtimes are found or fetched (``gate/runtimes.py``), made on first use."""
        if self._runtimes is None:

            def imports(python: str) -> str:
                """The runtime a worker of ``python`` really imports (WorkerError when none starts)."""
                return self.measurer.workers.side(python, "reference", 1)[0].runtime.describe()

            rootdir = Path(self.config.rootdir)
            # The first is where a fetch creates; the second, where runs looked before env_root.
            roots = dict.fromkeys([env_root(rootdir), rootdir / ENV_DIR])
            self._runtimes = RuntimeFinder(
                caches=[EnvCache(root) for root in roots],
                imports=imports,
                ab_python=self.config.ab_python,
                fetch=self.config.fetch_runtime,
                run_id=self.run_id,
                hold=self.measurer.timing.held,
                say=self.announce,
            )
        return self._runtimes

    def runtime_notes(self) -> list[str]:
        """What fetching recorded runtimes did in this process (for the summary; a worker hands them
        to the controller, which keeps them in ``RunEnd.handed_runtime_notes``)."""
        return list(self._runtimes.notes) if self._runtimes is not None else []

    def close(self) -> None:
        self.sessions.close()
        self.measurer.close()
