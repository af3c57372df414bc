"""The state of one gate run: lazily imported ORT, provider probes, sessions, models, baselines,
results, and the end of the run (baseline files, CI files, the summary).

Plain Python; the pytest layer owns one instance per run and hands work to it.
Nothing here touches ONNX Runtime until a test actually asks for a session.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import InputsError, OrtperfError, ProviderUnavailable, UsageError
from pytest_ortperf.gate.references import ABReference, ReferenceChoice
from pytest_ortperf.gate.registry import KindRegistry
from pytest_ortperf.gate.run_config import ABMarker, OrtperfConfig
from pytest_ortperf.gate.runtimes import RuntimeFinder
from pytest_ortperf.gate.runtimes import summary_lines as runtime_lines
from pytest_ortperf.graph.figures import GraphFigures, summarize
from pytest_ortperf.latency.activity import Activity, Listener
from pytest_ortperf.latency.lock_holder import LockOwner
from pytest_ortperf.latency.timing_lock import TimingLock, default_lock_path
from pytest_ortperf.ort.envs import EnvCache, env_root
from pytest_ortperf.ort.git_models import AUTO, GitRevision, RevisionFile, is_shallow, recorded_file
from pytest_ortperf.ort.inputs import (
    Feeds,
    InputOptions,
    InputSpec,
    UnmadeFeeds,
    data_sets,
    feeds_from_data_set,
    load_feeds,
    specs_from_session,
)
from pytest_ortperf.ort.models import ModelResolver, ModelSource
from pytest_ortperf.ort.optimized_graph import optimized_graph
from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.providers import CPU
from pytest_ortperf.ort.runtime import RuntimeInfo, import_onnxruntime, runtime_info
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession, SessionPool
from pytest_ortperf.ort.transformers import Prepared, TransformerOptions, prepare
from pytest_ortperf.ort.variants import Precision, Variant
from pytest_ortperf.ort.watchdog import Watchdog
from pytest_ortperf.ort.workers import WorkerPool
from pytest_ortperf.profiling.book import ProfileBook, operator_profile
from pytest_ortperf.profiling.operators import OpProfile
from pytest_ortperf.profiling.run_profilers import NativeRunProfiler, native_run_profiling
from pytest_ortperf.reports.ci_files import gate_time, not_compared_lines, profile_record, write_reports
from pytest_ortperf.reports.results import RunResults
from pytest_ortperf.reports.terminal import (
    RunSummary,
    UpdateReport,
    check_row,
    inputs_lines,
    latency_rows,
    lock_wait_lines,
    profile_lines,
    repaired_lines,
)
from pytest_ortperf.reports.tradeoffs import tradeoff_tables, worth_showing
from pytest_ortperf.store.baselines import BaselineError, BaselineStore
from pytest_ortperf.store.environment import portable_label
from pytest_ortperf.store.machine import Machine, detect_machine
from pytest_ortperf.store.model_cache import ModelCache
from pytest_ortperf.store.outputs import zoo_expected
from pytest_ortperf.store.unused import Selection, unused_entries
from pytest_ortperf.values import safe_repr
from pytest_ortperf.version import __version__

# Where reference runtimes were kept before the cache moved to the top of the git work tree
# (ort/envs.py: env_root), under rootdir: still searched.
ENV_DIR = Path(".ortperf/envs")

if TYPE_CHECKING:
    from pytest_ortperf.latency.canary import Canary
    from pytest_ortperf.ort.precision import Calibration, PrecisionModel


# Why a recorded model is not found in a shallow clone, and the fix.
SHALLOW = (
    "the recorded one is neither in this clone's history, which is shallow (cut short), nor in the model "
    "cache (--ortperf-model-cache): fetch the history (git fetch --unshallow; on GitHub Actions, "
    "actions/checkout with fetch-depth: 0)"
)


class OrtperfRun:
    def __init__(
        self,
        config: OrtperfConfig,
        on_build: Callable[[BuiltSession], None] | None = None,
        *,
        kinds: KindRegistry | None = None,
        lock_owner: LockOwner | None = None,
        run_id: str = "",
    ) -> None:
        self.config = config
        self.kinds = kinds if kinds is not None else KindRegistry()  # the check kinds of the run
        # One id for the run, shared by its xdist workers: a failed fetch is not tried again in it.
        self.run_id = run_id or uuid.uuid4().hex
        self.announce: Callable[[str], None] | None = None  # a line on the terminal now (plugin layer)
        self.results = RunResults()  # every check result goes through this sink
        self.selection = Selection()  # what pytest collected: unused entries are judged against it
        self.profiles = ProfileBook(
            lambda: self.pool,
            config.profile_dir,
            session_profile=config.session_profile,
            native=self._native_profiler,
            runner=self._profiled_run,
            worker=os.environ.get("PYTEST_XDIST_WORKER", ""),
        )
        # lock_owner: how this process names itself in the timing lock file (its run, command, worker)
        self.timing = TimingLock(None if config.parallel_timing else default_lock_path(), lock_owner)
        self.progress: Listener | None = None  # the terminal's progress line, when shown (plugin/progress.py)
        # Repair only ever happens while updating: a plain run never moves a file.
        self.store = BaselineStore(config.baseline_dir, repair=config.repair and config.policy.update)
        self.update_report: UpdateReport | None = None  # set by finish() under --ortperf-update
        self.finish_error = ""  # errors of the run as a whole: see add_errors
        self._unused: list[str] = []  # found once, by finish()
        self._on_build = on_build
        self._models = ModelResolver(config.rootdir)
        self._pool: SessionPool | None = None
        self._prober: ProviderProber | None = None
        self._runtime: RuntimeInfo | None = None
        self._machine: Machine | None = None
        self._watchdog: Watchdog | None = None
        self._revisions: dict[str, GitRevision] = {}
        self._canaries: dict[SessionSettings, Canary] = {}
        self._revision_references: dict[tuple[str, Path, str], ABReference] = {}
        self._recorded_models: dict[tuple[str, str], ABReference | None] = {}
        self._cached: set[str] = set()  # sha256 of the models this run put into the model cache
        self.model_cache = ModelCache(config.model_cache) if config.model_cache is not None else None
        self._workers: WorkerPool | None = None
        self._runtimes: RuntimeFinder | None = None
        self.handed_runtime_notes: list[str] = []  # the xdist workers' runtime_notes
        self._data_sets: dict[tuple[Path, tuple[str, ...]], tuple[dict[str, Any], dict[str, float]]] = {}
        self._data_set_feeds: dict[tuple[Path, tuple[InputSpec, ...]], Feeds] = {}
        self._prepared: dict[tuple[str, TransformerOptions], Prepared] = {}
        # Precision builds of this run, by (source sha256, precision, calibration digest), and what each
        # built model was made from (its fp32 source and the calibration it used).
        self._precision_builds: dict[tuple[str, Precision, str], PrecisionModel] = {}
        self._made_from: dict[str, tuple[ModelSource, Calibration | None]] = {}
        self._graphs: dict[tuple[str, str, Variant, SessionSettings, str], tuple[GraphFigures, str]] = {}

    @property
    def runtime(self) -> RuntimeInfo:
        if self._runtime is None:
            self._runtime = runtime_info()
        return self._runtime

    @property
    def machine(self) -> Machine:
        if self._machine is None:
            self._machine = detect_machine(self.config.machine)
        return self._machine

    @property
    def pool(self) -> SessionPool:
        if self._pool is None:
            self._pool = SessionPool(import_onnxruntime(), self.prober, self._on_build)
        return self._pool

    @property
    def prober(self) -> ProviderProber:
        if self._prober is None:
            self._prober = ProviderProber(self.runtime.available_providers, self.runtime.describe())
        return self._prober

    @property
    def watchdog(self) -> Watchdog:
        if self._watchdog is None:
            self._watchdog = Watchdog(import_onnxruntime(), self.config.run_timeout_s)
        return self._watchdog

    @property
    def workers(self) -> WorkerPool:
        """The run's measuring workers (A/B across runtimes), started on first use."""
        if self._workers is None:
            self._workers = WorkerPool(self.config.run_timeout_s)
        return self._workers

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
                return self.workers.side(python, "reference", 1)[0].runtime.describe()

            rootdir = Path(self.config.rootdir)
            # The first is where a fetch creates; the second, where runs looked before env_root.
            roots = dict.fromkeys([env_root(rootdir), rootdir / ENV_DIR])
            self._runtimes = RuntimeFinder(
                caches=[EnvCache(root) for root in roots],
                imports=imports,
                ab_python=self.config.ab_python,
                fetch=self.config.fetch_runtime,
                run_id=self.run_id,
                hold=self.timing.held,
                say=self.announce,
            )
        return self._runtimes

    def require_available(self, variant: Variant) -> Variant:
        """Raise :class:`ProviderUnavailable` before any model work if the EP cannot run."""
        result = self.prober.probe(variant.provider_spec)
        if not result.available:
            raise ProviderUnavailable(variant.provider, result.reason)
        return variant

    def model(self, spec: Any, *, test_dir: Path, origin: str) -> ModelSource:
        return self._models.resolve(spec, test_dir=test_dir, origin=origin)

    def activity(self, check: str) -> Activity:
        """A new check's activity: timed by phase, and shown on the progress line when there is one."""
        return Activity(check, listener=self.progress)

    def session(self, model: ModelSource, variant: Variant, settings: SessionSettings) -> BuiltSession:
        return self.pool.get(model, variant, settings)

    def prepared(self, model: ModelSource, options: TransformerOptions) -> ModelSource:
        """``model`` after ORT's transformer optimizer with ``options`` (``ort/transformers.py``), once
        per run and cached by content under ``.ortperf/transformers``."""
        key = (model.sha256, options)
        if key not in self._prepared:
            cache = Path(self.config.rootdir) / ".ortperf" / "transformers"
            self._prepared[key] = prepare(model, options, cache_dir=cache, ort_version=self.runtime.version)
        return self._prepared[key].model

    def precision_model(
        self,
        model: ModelSource,
        variant: Variant,
        settings: SessionSettings,
        *,
        options: InputOptions,
        calibration_sets: Sequence[Mapping[str, Any]] | None = None,
        calibration: Calibration | None = None,
    ) -> ModelSource:
        """The model ``variant`` runs: ``model`` itself at fp32, else its fp16 or int8 build
        (``ort/precision.py``), once per run and cached by content under ``.ortperf/precision``.
        Static int8 is calibrated with ``calibration`` when given (a rebuild reuses the current
        model's), else ``calibration_sets`` (the ``ort_calibration_data`` fixture), the model's test
        data sets, or seeded synthetic inputs."""
        if variant.precision is Precision.FP32:
            return model
        from pytest_ortperf.ort.precision import build_precision

        if variant.precision is Precision.INT8_STATIC and calibration is None:
            calibration = self._calibration(model, variant, settings, options, calibration_sets)
        key = (model.sha256, variant.precision, calibration.digest if calibration is not None else "")
        if key not in self._precision_builds:
            self._precision_builds[key] = build_precision(
                model,
                variant.precision,
                cache_dir=Path(self.config.rootdir) / ".ortperf" / "precision",
                ort_version=self.runtime.version,
                calibration=calibration,
            )
        built = self._precision_builds[key].model
        self._made_from[built.sha256] = (model, calibration)
        return built

    def model_facts(self, built: BuiltSession) -> dict[str, Any]:
        """What model ``built`` runs, for the reports: its fp32 model (label, sha256), the precision,
        the size of the file the session loads and, for a static int8 build, its calibration."""
        made = self.made_from(built.model)
        source, calibration = made if made is not None else (built.model, None)
        model = built.model
        size = model.path.stat().st_size if model.path is not None else len(model.data or b"")
        facts: dict[str, Any] = {
            "label": portable_label(source.label),
            "sha256": source.sha256,
            "precision": built.variant.precision.value,
            "bytes": size,
        }
        if calibration is not None:
            facts["calibration"] = {"source": calibration.source, "synthetic": calibration.synthetic}
        return facts

    def made_from(self, model: ModelSource) -> tuple[ModelSource, Calibration | None] | None:
        """The fp32 model (and the calibration) a precision build of this run was made from; None for
        a model this run did not build."""
        return self._made_from.get(model.sha256)

    def _calibration(
        self,
        model: ModelSource,
        variant: Variant,
        settings: SessionSettings,
        options: InputOptions,
        sets: Sequence[Mapping[str, Any]] | None,
    ) -> Calibration:
        from pytest_ortperf.ort.precision import Calibration, synthetic_calibration

        if sets is not None:
            listed = list(sets) if isinstance(sets, Iterable) and not isinstance(sets, (Mapping, str)) else []
            if not listed or not all(isinstance(one, Mapping) for one in listed):
                raise UsageError(
                    "the ort_calibration_data fixture must return a list of input sets (dicts of input "
                    f"name to array), at least one; got {safe_repr(sets)}."
                )
            feeds = tuple(dict(one) for one in listed)
            return Calibration(feeds, f"the ort_calibration_data fixture ({len(feeds)} sets)", False)
        fp32 = self.session(model, variant.fp32, settings)
        found = data_sets(model.directory) if model.directory is not None else []
        if found:
            sets_read = tuple(dict(self.data_set_feeds(data_set, fp32)) for data_set in found)
            names = f"{found[0].name}" if len(found) == 1 else f"{found[0].name} .. {found[-1].name}"
            return Calibration(sets_read, f"the model's {names}", False)
        return synthetic_calibration(specs_from_session(fp32.session), options, model=model)

    def _pre_pass_of(self, model: ModelSource) -> Mapping[str, int]:
        """What the transformer optimizer fused when this run prepared ``model``; {} otherwise."""
        return next((p.fused for p in self._prepared.values() if p.model.sha256 == model.sha256), {})

    def graph(
        self, model: ModelSource, variant: Variant, settings: SessionSettings, *, python: str = ""
    ) -> tuple[GraphFigures, str]:
        """The optimized graph ORT builds of ``model`` for ``variant`` under ``settings`` on this
        machine (``python``: in that interpreter's onnxruntime, in a worker), as figures, with what
        could not be read. Built once per run: it is deterministic."""
        key = (model.sha256, str(model.path), variant, settings, python)
        if key not in self._graphs:
            self.require_available(variant)
            timeout_s = self.config.run_timeout_s
            built = optimized_graph(
                import_onnxruntime(), model, variant, settings, python=python, timeout_s=timeout_s
            )
            figures = summarize(
                built.optimized,
                built.source,
                placement=built.placement,
                requested=variant.provider,
                hardware=self.machine.hardware.as_dict(),
                weights_sha256=built.weights_sha256,
                pre_pass=self._pre_pass_of(model),
            )
            unplaced = "" if built.placed else "this onnxruntime does not report node placement"
            note = built.note or unplaced
            self._graphs[key] = (figures, note)
        return self._graphs[key]

    def canary(self, built: BuiltSession) -> Callable[[], object] | None:
        """The machine-speed canary for a CPU variant (same thread settings); None for accelerators,
        whose speed a CPU workload does not track."""
        if built.variant.provider != CPU:
            return None
        if built.settings not in self._canaries:
            # Imported here: the canary builds its model with onnx, which a run without a CPU latency
            # check never needs.
            from pytest_ortperf.latency.canary import Canary

            self._canaries[built.settings] = Canary.build(import_onnxruntime(), built.variant, built.settings)
        return self._canaries[built.settings].run

    def git_revision(self, rev: str, *, source: str = "--ortperf-ab") -> GitRevision:
        """The revision, checked once per run (usage error: no git, not a repository, unknown revision);
        ``auto``: the pull request's base, found once per run."""
        if rev not in self._revisions:
            root = self.config.rootdir
            revision = (
                GitRevision.pull_request_base(root, source=source)
                if rev == AUTO
                else GitRevision(rev, root, source=source)
            )
            revision.data_dir = self._revision_dir
            self._revisions[rev] = revision
        return self._revisions[rev]

    @property
    def _revision_dir(self) -> Path:
        """Where a model read from git with its external data files is written (``ort/git_models.py``)."""
        return Path(self.config.rootdir) / ".ortperf" / "revisions"

    def ab_reference(
        self, model: ModelSource, marker: ABMarker | None, *, test_dir: Path, origin: str
    ) -> ABReference | None:
        """What ``model`` is compared with in A/B mode: the ``ort_ab`` marker's reference, revision or
        interpreter, else ``--ortperf-ab`` and ``--ortperf-ab-python``; None when A/B mode is off for
        this test."""
        if marker is None:
            marker, origin = ABMarker(rev=self.config.ab_rev, python=self.config.ab_python), "--ortperf-ab"
        found = self._ab_model(model, marker, test_dir=test_dir, origin=origin)
        return replace(found, python=marker.python) if found is not None and marker.python else found

    def _ab_model(
        self, model: ModelSource, marker: ABMarker, *, test_dir: Path, origin: str
    ) -> ABReference | None:
        spec, rev = marker.reference, marker.rev
        if spec is not None:
            source = self.model(spec, test_dir=test_dir, origin=origin)
            return ABReference(source.label, source)
        if not rev:
            # In another runtime, the model itself is the reference.
            return ABReference("the same model", model) if marker.python else None
        revision = self.git_revision(rev, source=origin)
        if model.path is None:
            return ABReference(
                f"{revision.name}:{model.label}",
                None,
                "the model is not a file, so git has no earlier version",
            )
        key = (rev, model.path, model.sha256)
        if key not in self._revision_references:  # read and hashed once per run, not once per check
            self._revision_references[key] = self._reference_at(revision, model, model.path)
        return self._revision_references[key]

    def recorded_model(self, model: ModelSource, blob: str, sha256: str) -> ABReference | None:
        """The model a baseline was recorded with: from git (the object ``blob``, or the commit of the
        model's history that holds it or its Git LFS pointer, with its external data files as they
        were there), else from the model cache by ``sha256``. None when neither keeps it here; without
        a source and with the reason when git holds it but cannot give it (git-lfs missing, the LFS
        object nowhere to be had)."""
        if (blob, sha256) not in self._recorded_models:  # read once
            found: ABReference | None = None
            try:
                kept = recorded_file(
                    self.config.rootdir, model.path, blob, sha256, data_dir=self._revision_dir
                )
            except OrtperfError as exc:
                kept = RevisionFile("the recorded model (git)", None, str(exc))
            if kept is not None:
                found = self._revision_reference(kept)
            if (
                (found is None or found.source is None)
                and self.model_cache is not None
                and sha256
                # a model with external data files: its .onnx bytes alone are not the model
                and not model.has_external_data
            ):
                data = self.model_cache.get(sha256)
                if data is not None:
                    origin = f"model cache {sha256}"
                    source = self.model(data, test_dir=self.config.rootdir, origin=origin)
                    found = ABReference(f"the recorded model (cache {sha256[:12]})", source)
            if found is None and is_shallow(self.config.rootdir):
                found = ABReference("the recorded model", None, SHALLOW)
            self._recorded_models[(blob, sha256)] = found
        return self._recorded_models[(blob, sha256)]

    def _revision_reference(self, found: RevisionFile, *, test_dir: Path | None = None) -> ABReference:
        """A model read from git as a reference: from the folder it was written to with its external
        data files, else from its bytes; without a source and with the reason when there is none."""
        if found.path is not None:
            source = self.model(found.path, test_dir=found.path.parent, origin=found.label)
        elif found.data is not None:
            source = self.model(found.data, test_dir=test_dir or self.config.rootdir, origin=found.label)
        else:
            return ABReference(found.label, None, found.reason)
        return ABReference(found.label, replace(source, label=found.label))

    def keep_model(self, model: ModelSource) -> None:
        """Put a measured model into the model cache (when one is configured), once per run."""
        if self.model_cache is None or model.sha256 in self._cached:
            return
        self._cached.add(model.sha256)
        if model.has_external_data:
            return  # its bytes alone are not the model
        try:
            data = model.data if model.data is not None else model.path.read_bytes() if model.path else None
            if data is not None:
                self.model_cache.put(model.sha256, data)
        except (OSError, ValueError):
            return  # the file changed or vanished since it was hashed: nothing trustworthy to keep

    def _reference_at(self, revision: GitRevision, model: ModelSource, path: Path) -> ABReference:
        """``model``'s file at ``revision`` as an A/B reference, or why there is none."""
        return self._revision_reference(revision.model_at(path), test_dir=path.parent)

    def reference_choice(self, built: BuiltSession) -> ReferenceChoice:
        """The reference variant of ``built``'s check: its session, or why it is not compared."""
        reference = self.config.reference_variant
        made_from = self.made_from(built.model)
        model = built.model
        if made_from is not None:  # a precision variant: compared with its fp32 model
            model = made_from[0]
            reference = (reference or built.variant).fp32
        if reference is None:
            return ReferenceChoice()
        label = f"variant {reference.id}" + (" (fp32)" if made_from is not None else "")
        if reference == built.variant:
            return ReferenceChoice(label, note="this variant is the reference")
        probe = self.prober.probe(reference.provider_spec)
        if not probe.available:
            reason = probe.reason or "the provider probe failed"
            return ReferenceChoice(label, note=f"not available here ({reason})")
        return ReferenceChoice(label, self.pool.get(model, reference, built.settings))

    def _native_profiler(self, built: BuiltSession, directory: Path) -> NativeRunProfiler | None:
        """ORT's own run-level profiling when this onnxruntime's Python API has it."""
        ort = import_onnxruntime()
        shape = native_run_profiling(ort)
        if shape is None:
            return None
        return NativeRunProfiler(ort, built.session, directory, shape=shape, runner=self._profiled_run)

    def _profiled_run(self, session: Any, output_names: Any, feeds: Any, run_options: Any) -> Any:
        """Profiled runs are untimed but still under --ortperf-run-timeout, and fail as RunFailed."""
        return self.watchdog.run(session, output_names, feeds, run_options)

    def op_profile(self, built: BuiltSession, feeds: Mapping[str, Any], *, runs: int = 5) -> OpProfile:
        """Per-run time by op type and node from a short-lived profiling session (never timed)."""
        return operator_profile(self.pool, built, feeds, runner=self._profiled_run, runs=runs)

    def data_set_outputs(
        self, data_set: Path, output_names: Sequence[str]
    ) -> tuple[dict[str, Any], dict[str, float]]:
        """A model-zoo data set's expected outputs and data.json tolerances, read once per run."""
        key = (data_set, tuple(output_names))
        if key not in self._data_sets:
            self._data_sets[key] = zoo_expected(data_set, output_names)
        return self._data_sets[key]

    def data_set_feeds(self, data_set: Path, built: BuiltSession) -> Feeds:
        """A model-zoo data set's inputs for ``built``'s model, read once per run."""
        key = (data_set, specs_from_session(built.session))
        if key not in self._data_set_feeds:
            self._data_set_feeds[key] = feeds_from_data_set(data_set, key[1])
        return self._data_set_feeds[key]

    def feeds(self, built: BuiltSession, options: InputOptions) -> Feeds:
        return load_feeds(built.model, specs_from_session(built.session), options)

    def feeds_or_problem(self, built: BuiltSession, options: InputOptions) -> Feeds:
        """:meth:`feeds`, or :class:`UnmadeFeeds` saying why they cannot be made: the checks that
        would run on them end in that error, while a check given its own feeds runs."""
        try:
            return self.feeds(built, options)
        except InputsError as exc:
            return UnmadeFeeds(str(exc))

    def finish(self) -> None:
        """Find unused entries; under ``--ortperf-update`` prune them if asked and write staged changes."""
        policy = self.config.policy
        variants = {variant.id for variant in self.config.variants}
        unused = unused_entries(self.store, self.selection, variants)
        self._unused = unused  # node ids: an entry serves every machine
        if not policy.update:
            return
        if self.config.prune:
            for nodeid in unused:
                test_file, _, test = nodeid.partition("::")
                self.store.stage(test_file, test, None)
        written = self.store.write()
        self.update_report = UpdateReport.tally(
            self.results.statuses(),
            unused=self._unused,
            written=written,
            noisy=self.results.noisy_recordings(),
            missing_only=self.results.missing_only() if policy.update_missing else None,
        )

    def end(self, lost_workers: Sequence[str]) -> bool:
        """The end of the run in the process that writes (serial, or the xdist controller): close the
        profiles, finish, write the CI files. Nothing raises; every problem becomes a run error.
        True when the run must fail (a run error, or unused entries under --ortperf-strict)."""
        errors = []
        try:  # profiling first, but a failure there must not cost the baselines
            self.profiles.close()
        except (OrtperfError, OSError) as exc:
            errors.append(f"cannot finish profiling: {exc}")
        try:
            self.finish()
        except OrtperfError as exc:
            errors.append(str(exc))
        except OSError as exc:
            errors.append(f"cannot finish the ortperf run: {exc}")
        try:  # also after a failed finish: CI uploads the reports of a failed run
            self.write_ci_files(lost_workers)
        except (OrtperfError, OSError) as exc:
            errors.append(f"cannot write a report: {exc}")
        self.add_errors(*errors)  # after the workers' errors
        return bool(self.finish_error or self.strict_unused)

    def write_ci_files(self, lost_workers: Sequence[str]) -> None:
        config = self.config
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        write_reports(
            self.results.records,
            report_path=config.report_path,
            markdown_path=config.markdown_path,
            step_summary=Path(step_summary) if step_summary else None,
            machine=lambda: self.machine.key,
            runtime=lambda: self.runtime.describe(),
            version=__version__,
            traces=self.traces(),
            unused=self.update_report.unused if self.update_report else self.strict_unused,
            run_errors=[
                *([self.finish_error] if self.finish_error else []),
                *lost_workers,
                *self._repair_warnings(),
            ],
            html_path=config.html_path,
            drawings=self.kinds.drawings(),
            profiles=[*self.profile_records(), *self.results.worker_profiles()],
        )

    def _repair_warnings(self) -> list[str]:
        """For the reports: each repaired file whose damaged copy holds parts the new one lacks, and
        those parts (the terminal shows the same lines)."""
        return [
            "; ".join(line.strip() for line in repaired_lines(repaired)[1:])
            for repaired in self.store.repaired
            if repaired.lost
        ]

    def summary(self, lost_workers: Sequence[str]) -> RunSummary:
        """What the terminal summary shows."""
        records = self.results.records
        rows = latency_rows(records)
        footprint = [
            (kind.row if kind.row is not None else check_row)(record)
            for record in records
            for kind in [self.kinds.get(str(record.get("kind")))]
            if kind is not None and kind.name != "latency" and kind.name != "accuracy"
            and record.get("verdict") != Status.ERROR
        ]
        return RunSummary(
            machine=self.machine.key if rows or footprint else "",
            sessions=self._session_lines(),
            runtimes=runtime_lines([*self.runtime_notes(), *self.handed_runtime_notes]),
            errors=[*([self.finish_error] if self.finish_error else []), *lost_workers],
            repaired=list(self.store.repaired),
            strict_unused=self.strict_unused,
            unused_hint=self._unused_hint(),
            rows=rows,
            footprint_rows=footprint,
            missing=self.results.missing_count(),
            elsewhere=self.machines_with_missing_baselines() if rows else [],
            timing_mode=self.timing.mode,
            gate_time=gate_time(self.results.records),
            not_timed=self.results.not_timed_count(),
            lock_waits=lock_wait_lines(self.results.records),
            inputs=inputs_lines(self.results.records),
            tradeoffs=[table for table in tradeoff_tables(self.results.records) if worth_showing(table)],
            update=self.update_report,
            prune=self.config.prune,
            reported_differences=self.results.reported_differences(),
            not_compared=not_compared_lines(self.results.records),
            profile_lines=[
                line for record in [*self.profile_records(), *self.results.worker_profiles()]
                for line in profile_lines(record)
            ],
        )

    def runtime_notes(self) -> list[str]:
        """What fetching recorded runtimes did in this process (for the summary; a worker hands them
        to the controller, which keeps them in :attr:`handed_runtime_notes`)."""
        return list(self._runtimes.notes) if self._runtimes is not None else []

    def profile_records(self) -> list[dict[str, Any]]:
        """This process's profiled tests, for the reports."""
        return [profile_record(report) for report in self.profiles.reports]

    def traces(self) -> dict[str, list[str]]:
        """Trace paths per marked test, from this process and from xdist workers."""
        local = {r.nodeid: [str(p) for p in r.traces] for r in self.profiles.reports}
        return {**self.results.worker_traces(), **local}

    def add_errors(self, *messages: str) -> None:
        """Errors of the run as a whole (profiling, baselines, reports, workers), in order."""
        self.finish_error = "; ".join(filter(None, [self.finish_error, *messages]))

    @property
    def strict_unused(self) -> list[str]:
        """What --ortperf-strict fails the run on: unused entries left in the files after it."""
        if not self.config.strict or (self.config.policy.update and self.config.prune):
            return []
        return self._unused

    def machines_with_missing_baselines(self) -> list[str]:
        """Machines that do have latency figures for a check that is missing here."""
        machines = self.results.machines_reported_missing
        for test_file, test in self.results.missing_latency():
            try:
                entry = self.store.lookup(test_file, test)
            except BaselineError:
                continue  # reported by the test itself
            machines.update(entry.machines("latency") if entry is not None else [])
        return sorted(machines)

    def _unused_hint(self) -> list[str]:
        """A plain run's one-line pointer at unused entries (none when --ortperf-strict lists them)."""
        if self.config.policy.update or not self._unused or self.strict_unused:
            return []
        count = len(self._unused)
        return [f"{count} unused baseline entries (ortperf update --ortperf-prune removes them)"]

    def _session_lines(self) -> list[str]:
        """Sessions built and reused, providers that could not run."""
        if self._pool is None:
            return []
        pool = self._pool
        lines = [f"sessions: {pool.builds} built in {pool.build_seconds:.2f} s, reused {pool.reuses} time(s)"]
        if self._prober is not None:
            lines += [
                f"{result.provider} unavailable: {result.reason}"
                for result in self._prober.results
                if not result.available
            ]
        return lines

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
        if self._workers is not None:
            self._workers.close()
