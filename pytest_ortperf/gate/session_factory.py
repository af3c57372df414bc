"""The run's sessions (``gate/services.py: Sessions``): onnxruntime imported on first use, providers
probed once, sessions built and pooled, fresh sessions for interleaved measurements, the optimized
graph of a variant (once per run: it is deterministic; the session that wrote it is timed next, not
built again), operator profiles, and every untimed run under the run's watchdog
(``--ortperf-run-timeout``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ortperf.errors import ProviderUnavailable
from pytest_ortperf.graph.figures import GraphFigures, summarize
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.optimized_graph import optimized_graph
from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.runtime import RuntimeInfo, import_onnxruntime, runtime_info
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession, SessionPool
from pytest_ortperf.ort.variants import Variant
from pytest_ortperf.ort.watchdog import Watchdog
from pytest_ortperf.profiling.book import operator_profile, operator_profiles_in_turn
from pytest_ortperf.profiling.operators import OpProfile
from pytest_ortperf.profiling.run_profilers import NativeRunProfiler, native_run_profiling
from pytest_ortperf.store.machine import Machine


class SessionFactory:
    """Sessions of one run, and what ORT makes of them. Nothing touches onnxruntime until asked."""

    def __init__(
        self,
        *,
        machine: Callable[[], Machine],
        run_timeout_s: float,
        on_build: Callable[[BuiltSession], None] | None = None,
        pre_pass: Callable[[ModelSource], Mapping[str, int]] = lambda model: {},
    ) -> None:
        # pre_pass: what the transformer optimizer fused when this run prepared a model, for its graph
        self._machine = machine
        self._run_timeout_s = run_timeout_s
        self._on_build = on_build
        self._pre_pass = pre_pass
        self._runtime: RuntimeInfo | None = None
        self._prober: ProviderProber | None = None
        self._pool: SessionPool | None = None
        self._watchdog: Watchdog | None = None
        self._graphs: dict[tuple[str, str, Variant, SessionSettings, str], tuple[GraphFigures, str]] = {}

    @property
    def runtime(self) -> RuntimeInfo:
        if self._runtime is None:
            self._runtime = runtime_info()
        return self._runtime

    @property
    def machine(self) -> Machine:
        return self._machine()

    @property
    def prober(self) -> ProviderProber:
        if self._prober is None:
            self._prober = ProviderProber(self.runtime.available_providers, self.runtime.describe())
        return self._prober

    @property
    def pool(self) -> SessionPool:
        if self._pool is None:
            self._pool = SessionPool(import_onnxruntime(), self.prober, self._on_build)
        return self._pool

    @property
    def watchdog(self) -> Watchdog:
        if self._watchdog is None:
            self._watchdog = Watchdog(import_onnxruntime(), self._run_timeout_s)
        return self._watchdog

    def require_available(self, variant: Variant) -> Variant:
        """Raise :class:`ProviderUnavailable` before any model work if the EP cannot run."""
        result = self.prober.probe(variant.provider_spec)
        if not result.available:
            raise ProviderUnavailable(variant.provider, result.reason)
        return variant

    def session(self, model: ModelSource, variant: Variant, settings: SessionSettings) -> BuiltSession:
        return self.pool.get(model, variant, settings)

    def fresh(self, built: BuiltSession, *, deterministic: bool = False) -> BuiltSession:
        return self.pool.fresh(built, deterministic=deterministic)

    def graph(
        self, model: ModelSource, variant: Variant, settings: SessionSettings, *, python: str = ""
    ) -> tuple[GraphFigures, str]:
        """The optimized graph ORT builds of ``model`` for ``variant`` under ``settings`` on this
        machine (``python``: in that interpreter's onnxruntime, in a worker), as figures, with what
        could not be read. Built once per run: it is deterministic."""
        key = (model.sha256, str(model.path), variant, settings, python)
        if key not in self._graphs:
            self.require_available(variant)
            built = optimized_graph(
                import_onnxruntime(), model, variant, settings, python=python, timeout_s=self._run_timeout_s
            )
            figures = summarize(
                built.optimized,
                built.source,
                placement=built.placement,
                requested=variant.provider,
                hardware=self.machine.hardware.as_dict(),
                weights_sha256=built.weights_sha256,
                pre_pass=self._pre_pass(model),
            )
            unplaced = "" if built.placed else "this onnxruntime does not report node placement"
            note = built.note or unplaced
            if built.optimized is None and not built.placed:
                note = (
                    f"{built.note.partition(';')[0]}, and this onnxruntime does not report node "
                    "placement: nothing of the graph is compared"
                )
            self._graphs[key] = (figures, note)
            if built.session is not None:
                # The session that wrote the graph is a session like any other of this key: the pool
                # times it next instead of building the same session again.
                self.pool.adopt(built.session, model, variant, settings, seconds=built.seconds)
        return self._graphs[key]

    def native_profiler(self, built: BuiltSession, directory: Path) -> NativeRunProfiler | None:
        """ORT's own run-level profiling when this onnxruntime's Python API has it."""
        ort = import_onnxruntime()
        shape = native_run_profiling(ort)
        if shape is None:
            return None
        return NativeRunProfiler(ort, built.session, directory, shape=shape, runner=self.profiled_run)

    def profiled_run(self, session: Any, output_names: Any, feeds: Any, run_options: Any) -> Any:
        """Profiled runs are untimed but still under --ortperf-run-timeout, and fail as RunFailed."""
        return self.watchdog.run(session, output_names, feeds, run_options)

    def op_profile(self, built: BuiltSession, feeds: Mapping[str, Any], *, runs: int = 5) -> OpProfile:
        """Per-run time by op type and node from a short-lived profiling session (never timed)."""
        return operator_profile(self.pool, built, feeds, runner=self.profiled_run, runs=runs)

    def op_profiles_in_turn(
        self, sides: Sequence[tuple[BuiltSession, Mapping[str, Any]]], *, runs: int = 5
    ) -> list[OpProfile]:
        """Each side's operator profile, the sides profiled in turn on a profiling session each,
        each keeping its fastest turn (never timed)."""
        return operator_profiles_in_turn(self.pool, sides, runner=self.profiled_run, runs=runs)

    def summary_lines(self) -> list[str]:
        """Sessions built and reused, providers that could not run (none before the first session)."""
        if self._pool is None:
            return []
        pool = self._pool
        graphs = f" ({pool.adopted} of them wrote an optimized graph)" if pool.adopted else ""
        built = f"{pool.builds} built in {pool.build_seconds:.2f} s{graphs}"
        lines = [f"sessions: {built}, reused {pool.reuses} time(s)"]
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
