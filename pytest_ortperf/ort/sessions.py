"""Building ORT sessions for (model, variant, settings) once per run, and reusing them."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pytest_ortperf.errors import OrtperfError, ProviderUnavailable, SessionBuildError
from pytest_ortperf.ort import worker_program
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.placement import RECORD_PLACEMENT_KEY, Placement, placement_of
from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.variants import Variant

_MAX_MESSAGE = 600
# Sessions that wrote an optimized graph, kept to be timed next (SessionPool.adopt): a side-by-side
# check builds the graphs of its two sides, then times two sessions a side. More are dropped, oldest
# first, so that a run building many graphs (the graph check) holds few sessions it may never time.
SPARES = 2


@dataclass(frozen=True)
class SessionKey:
    """What makes two sessions interchangeable. The path matters for external data."""

    model_sha256: str
    model_path: str | None
    variant: Variant
    settings: SessionSettings


@dataclass(frozen=True)
class BuiltSession:
    """A ready session and the facts about how it was built."""

    session: Any
    model: ModelSource
    variant: Variant
    settings: SessionSettings
    providers: tuple[str, ...]
    placement: Placement | None
    build_seconds: float


def session_recipe(variant: Variant, settings: SessionSettings) -> dict[str, Any]:
    """Everything a session is built from, as plain JSON values: what a measuring worker in another
    Python environment receives, and what this process builds its own sessions from."""
    entries = {
        "session.intra_op.allow_spinning": "1" if settings.intra_op_spinning else "0",
        "session.inter_op.allow_spinning": "1" if settings.inter_op_spinning else "0",
        "session.set_denormal_as_zero": "1" if settings.denormal_as_zero else "0",
        RECORD_PLACEMENT_KEY: "1",
    }
    if settings.intra_op_thread_affinities:
        entries["session.intra_op_thread_affinities"] = settings.intra_op_thread_affinities
    entries.update(settings.config_entries)
    return {
        "opt_level": variant.opt_level.ort_name,
        "intra_op_threads": settings.intra_op_threads,
        "inter_op_threads": settings.inter_op_threads,
        "execution_mode": settings.execution_mode,
        "cpu_mem_arena": settings.cpu_mem_arena,
        "mem_pattern": settings.mem_pattern,
        "config_entries": sorted(entries.items()),
        "providers": [[name, options] for name, options in provider_arguments(variant, settings)],
    }


def session_options(ort: ModuleType, variant: Variant, settings: SessionSettings) -> Any:
    """``SessionOptions`` with every latency-relevant setting pinned explicitly."""
    try:
        return worker_program.session_options(ort, session_recipe(variant, settings))
    except ValueError:
        raise SessionBuildError(
            f"optimization level '{variant.opt_level.value}' needs an onnxruntime with "
            f"GraphOptimizationLevel.{variant.opt_level.ort_name}; this is {ort.__version__}."
        ) from None


def provider_arguments(variant: Variant, settings: SessionSettings) -> list[tuple[str, dict[str, str]]]:
    return [(name, settings.options_for(name)) for name in variant.provider_spec.providers]


def _first_lines(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."


class SessionPool:
    """Builds each distinct session once per run; failures are remembered too."""

    def __init__(
        self,
        ort: ModuleType,
        prober: ProviderProber,
        on_build: Callable[[BuiltSession], None] | None = None,
    ) -> None:
        self._ort = ort
        self._prober = prober
        self._on_build = on_build
        self._sessions: dict[SessionKey, BuiltSession] = {}
        self._failures: dict[SessionKey, OrtperfError] = {}
        self._spares: list[tuple[SessionKey, BuiltSession]] = []  # adopted, not handed out yet
        self.builds = 0  # every session built in the run, adopted ones included
        self.adopted = 0  # of them: sessions that wrote an optimized graph (adopt)
        self.reuses = 0
        self.build_seconds = 0.0

    def get(self, model: ModelSource, variant: Variant, settings: SessionSettings) -> BuiltSession:
        key = _key(model, variant, settings)
        if key in self._sessions:
            self.reuses += 1
            return self._sessions[key]
        if key in self._failures:
            raise self._failures[key]
        built = self._spare(key)
        if built is None:
            try:
                built = self._build(model, variant, settings)
            except OrtperfError as exc:
                self._failures[key] = exc
                raise
        self._sessions[key] = built
        if self._on_build is not None:
            self._on_build(built)
        return built

    def fresh(self, built: BuiltSession, *, deterministic: bool = False) -> BuiltSession:
        """Another, uncached session like ``built``: its own memory, so its own placement of the
        weights. Two sessions of one model can differ by a few percent for as long as they live
        (memory-bound models; ``benchmarks/README.md``), so a side-by-side regression is confirmed
        on fresh sessions of both sides. An adopted session of the same key, never handed out
        before, is such a session: it is taken instead of building one. ``deterministic``: with
        ``use_deterministic_compute`` on (the determinism check asks whether it changes anything)."""
        if not deterministic:
            spare = self._spare(_key(built.model, built.variant, built.settings))
            if spare is not None:
                return spare
        return self._build(built.model, built.variant, built.settings, deterministic=deterministic)

    def adopt(
        self, session: Any, model: ModelSource, variant: Variant, settings: SessionSettings, *, seconds: float
    ) -> None:
        """Keep ``session``, built elsewhere in this run from the same recipe (the session that wrote
        the optimized graph), as a spare: the next :meth:`get` of its key, or :meth:`fresh` of a
        session like it, takes it instead of building the same session again. Counted as a build.
        A session that would not pass :meth:`_build`'s checks (its provider dropped, node names that
        are not UTF-8) is not kept: the next session of its key is then built, and fails as it would."""
        try:
            built = self._described(session, model, variant, settings, seconds)
        except OrtperfError:
            return
        self.builds += 1
        self.adopted += 1
        self.build_seconds += seconds
        self._spares.append((_key(model, variant, settings), built))
        del self._spares[:-SPARES]

    def _spare(self, key: SessionKey) -> BuiltSession | None:
        """An adopted session of ``key``, taken out of the spares (None: there is none)."""
        for index, (spare_key, built) in enumerate(self._spares):
            if spare_key == key:
                del self._spares[index]
                return built
        return None

    def build_profiling(self, built: BuiltSession, prefix: str) -> Any:
        """A fresh, uncached session like ``built`` with session-level profiling (never timed)."""
        options = session_options(self._ort, built.variant, built.settings)
        options.enable_profiling = True
        options.profile_file_prefix = prefix
        return worker_program.new_session(
            self._ort, built.model.ort_input, options, provider_arguments(built.variant, built.settings)
        )

    def close(self) -> None:
        """Release every session (ORT frees a session when its last reference goes)."""
        self._sessions.clear()
        self._failures.clear()
        self._spares.clear()

    def _build(
        self, model: ModelSource, variant: Variant, settings: SessionSettings, *, deterministic: bool = False
    ) -> BuiltSession:
        probe = self._prober.probe(variant.provider_spec)
        if not probe.available:
            raise ProviderUnavailable(variant.provider, probe.reason)
        started = time.perf_counter()
        try:
            options = session_options(self._ort, variant, settings)
            if deterministic:
                options.use_deterministic_compute = True
            session = worker_program.new_session(
                self._ort, model.ort_input, options, provider_arguments(variant, settings)
            )
        except Exception as exc:  # ORT raises Fail, InvalidProtobuf, RuntimeError, ...
            raise SessionBuildError(
                f"ONNX Runtime could not build a session for '{model.label}' [{variant.id}]: "
                f"{_first_lines(exc)}"
            ) from exc
        elapsed = time.perf_counter() - started
        self.builds += 1
        self.build_seconds += elapsed
        return self._described(session, model, variant, settings, elapsed)

    def _described(
        self, session: Any, model: ModelSource, variant: Variant, settings: SessionSettings, elapsed: float
    ) -> BuiltSession:
        """``session`` with the facts of how it was built, once its provider and placement are checked."""
        providers = tuple(session.get_providers())
        if variant.provider not in providers:
            raise ProviderUnavailable(
                variant.provider,
                f"ORT dropped it while building the session for '{model.label}' "
                f"(the session would run on {', '.join(providers)})",
            )
        try:
            placement = placement_of(session)
        except UnicodeDecodeError as exc:
            raise SessionBuildError(
                f"'{model.label}' [{variant.id}]: node names are not valid UTF-8 ({exc})."
            ) from None
        return BuiltSession(
            session=session,
            model=model,
            variant=variant,
            settings=settings,
            providers=providers,
            placement=placement,
            build_seconds=elapsed,
        )


def _key(model: ModelSource, variant: Variant, settings: SessionSettings) -> SessionKey:
    return SessionKey(model.sha256, None if model.path is None else str(model.path), variant, settings)
