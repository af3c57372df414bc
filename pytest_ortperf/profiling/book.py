"""The profiles of one pytest run: per marked test, and session-level for the whole run.

Without ``--ortperf-session-profile`` each marked test gets its own profiling
session, sliced into per-run files at its teardown. With it, every
(model, variant, settings) gets one shared session-level profiling session for
the whole run: unmarked tests' ``ort_session`` runs on it too, marked tests'
runs are additionally routed to their own folders, and at the end of the run
the session-level trace is kept beside the per-run files, which hold a strict
subset of its events (the upstream PR's second scenario). Timed latency runs
never use either.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession, SessionKey, SessionPool
from pytest_ortperf.profiling.operators import OpProfile, fastest, op_profile, typical
from pytest_ortperf.profiling.run_profilers import (
    EmulatedRunProfiler,
    ProfileDirError,
    ProfiledSession,
    Runner,
    RunProfiler,
    plain_run,
    prepare_directory,
    run_warnings,
)
from pytest_ortperf.profiling.trace import (
    ProfileSummary,
    SummaryFile,
    TraceEvent,
    load_trace,
    model_runs,
    slice_run,
    summarize,
)
from pytest_ortperf.values import file_slug

if TYPE_CHECKING:
    from pytest_ortperf.ort.workers import LoadedModel


@dataclass(frozen=True)
class ProfileReport:
    """The traces and summary of one marked test."""

    nodeid: str
    traces: tuple[Path, ...]
    summary: ProfileSummary
    summary_path: Path
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class MarkedProfile:
    """A marked test's profiling: its folder and the profiler its runs go through."""

    nodeid: str
    directory: Path
    built: BuiltSession
    profiler: RunProfiler
    shared: bool

    def session(self) -> ProfiledSession:
        return ProfiledSession(self.built.session, self.profiler, self.directory)

    def run(self, output_names: Sequence[str] | None, feeds: Any) -> Any:
        return self.profiler.run(output_names, feeds, directory=self.directory)

    def expected_traces(self) -> list[Path]:
        return [self.directory / f"run-{k}.json" for k in range(1, self.profiler.runs_in(self.directory) + 1)]


def _events_per_run(built: BuiltSession) -> int:
    return (len(built.placement.nodes) if built.placement is not None else 1000) + 4


def settings_digest(settings: SessionSettings) -> str:
    """A short stable name for a set of session settings, for file names."""
    return hashlib.sha256(repr(settings).encode()).hexdigest()[:8]


class ProfileBook:
    def __init__(
        self,
        pool: Callable[[], SessionPool],
        root: Path,
        *,
        session_profile: bool,
        native: Callable[[BuiltSession, Path], RunProfiler | None] = lambda built, directory: None,
        runner: Runner = plain_run,
        worker: str = "",
    ) -> None:
        self._pool = pool
        self._native = native
        self._runner = runner
        self._worker = worker
        self.root = root
        self.session_profile = session_profile
        self.reports: list[ProfileReport] = []
        self._shared: dict[SessionKey, tuple[Path, EmulatedRunProfiler]] = {}
        self._pending: list[MarkedProfile] = []

    def start(self, built: BuiltSession, nodeid: str) -> MarkedProfile:
        directory = prepare_directory(self.root / file_slug(nodeid))
        if self.session_profile:
            return MarkedProfile(nodeid, directory, built, self.shared(built), shared=True)
        native = self._native(built, directory)
        if native is not None:
            return MarkedProfile(nodeid, directory, built, native, shared=False)
        profiler = EmulatedRunProfiler(
            lambda prefix: self._pool().build_profiling(built, prefix),
            directory / "session",
            directory,
            events_per_run=_events_per_run(built),
            runner=self._runner,
        )
        return MarkedProfile(nodeid, directory, built, profiler, shared=False)

    def end(self, marked: MarkedProfile) -> None:
        """A marked test finished: report now, or at the end of the run for shared sessions."""
        if marked.shared:
            self._pending.append(marked)
        else:
            self._report(marked, marked.profiler.finish().get(marked.directory, []))

    def shared(self, built: BuiltSession) -> EmulatedRunProfiler:
        """The run-wide session-level profiling session for this model, variant and settings.

        Its trace is ``session/<model>-<variant>-<settings digest>[-<xdist worker>].json``, so
        sessions with other settings, and other workers, never write over it.
        """
        key = SessionKey(built.model.sha256, str(built.model.path), built.variant, built.settings)
        if key not in self._shared:
            name = f"{built.model.label}-{built.variant.id}-{settings_digest(built.settings)}"
            prefix = self.root / "session" / file_slug(f"{name}-{self._worker}" if self._worker else name)
            try:
                prefix.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ProfileDirError(
                    f"profile directory '{prefix.parent}' is not writable: {exc.strerror or exc}"
                ) from None
            profiler = EmulatedRunProfiler(
                lambda generation_prefix: self._pool().build_profiling(built, generation_prefix),
                prefix,
                None,
                events_per_run=_events_per_run(built),
                runner=self._runner,
            )
            self._shared[key] = (prefix.with_name(prefix.name + ".json"), profiler)
        return self._shared[key][1]

    def close(self) -> list[Path]:
        """End the shared sessions: keep their session-level traces, write pending tests' runs."""
        kept = []
        for target, profiler in self._shared.values():
            files = profiler.finish(keep_session_trace=target)
            kept.append(target)
            for marked in [m for m in self._pending if m.profiler is profiler]:
                self._report(marked, files.get(marked.directory, []))
        self._shared.clear()
        self._pending.clear()
        return kept

    def _report(self, marked: MarkedProfile, paths: list[Path]) -> None:
        warnings = list(marked.profiler.warnings.get(marked.directory, []))
        events = []
        for path in paths:
            run = load_trace(path)
            warnings += run_warnings(path.name, run)
            events += run
        summary = summarize(events, requested_provider=marked.built.variant.provider)
        summary_path = marked.directory / "summary.json"
        # One definition of the file's fields: `ortperf profile` reads it back with parse_summary.
        document = SummaryFile(
            path=summary_path,
            test=marked.nodeid,
            variant=marked.built.variant.id,
            traces=tuple(p.name for p in paths),
            warnings=tuple(warnings),
            summary=summary,
        ).as_dict()
        summary_path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        report = ProfileReport(marked.nodeid, tuple(paths), summary, summary_path, tuple(warnings))
        self.reports.append(report)


def operator_profile(
    pool: SessionPool,
    built: BuiltSession,
    feeds: Mapping[str, Any],
    *,
    runner: Runner = plain_run,
    runs: int = 5,
) -> OpProfile:
    """Per-run time by op type and node from a short-lived profiling session (never timed).

    The first run of a new session is slow (allocation, kernel choice), so it is left out.
    """
    with tempfile.TemporaryDirectory(prefix="ortperf-profile-") as temp:
        session = pool.build_profiling(built, str(Path(temp) / "profile"))
        for _ in range(runs + 1):
            runner(session, None, dict(feeds), None)
        events = load_trace(Path(session.end_profiling()))
    return _after_first_run(events, built.variant.provider)


def operator_profiles_in_turn(
    pool: SessionPool,
    sides: Sequence[tuple[BuiltSession, Mapping[str, Any]]],
    *,
    runner: Runner = plain_run,
    runs: int = 5,
    turns: int = 2,
) -> list[OpProfile]:
    """Each side's operator profile, the sides profiled in turn (A B A B: ``turns`` turns of
    ``runs`` runs a side), each keeping its fastest turn (:func:`operators.fastest`): a turn taken
    while the machine was slower reads slow, and keeping the fastest keeps that from deciding which
    side grew. One short-lived profiling session a side (never timed) holds all its turns, so each
    side is built and its trace read once; its first run (allocation, kernel choice) is left out."""
    with tempfile.TemporaryDirectory(prefix="ortperf-profile-") as temp:
        sessions = [
            pool.build_profiling(built, str(Path(temp) / f"side-{n}")) for n, (built, _) in enumerate(sides)
        ]
        for turn in range(turns):
            for session, (_, feeds) in zip(sessions, sides, strict=True):
                for _ in range(runs + (1 if turn == 0 else 0)):
                    runner(session, None, dict(feeds), None)
        traces = [load_trace(Path(session.end_profiling())) for session in sessions]
    return [
        fastest(*_turns(events, built.variant.provider, runs=runs, turns=turns))
        for events, (built, _) in zip(traces, sides, strict=True)
    ]


def _turns(events: list[TraceEvent], provider: str, *, runs: int, turns: int) -> list[OpProfile]:
    """The operator profiles of a side's turns: its trace's runs after the first, ``runs`` a turn."""
    made = model_runs(events)
    callers = {run.tid for run in made}  # nodes on other threads: ORT_PARALLEL's inter-op pool
    index = _RunIndex(events)
    profiles = []
    for turn in range(turns):
        chosen = made[1 + turn * runs : 1 + (turn + 1) * runs]
        profiles.append(_typical_run(chosen, index, callers, provider))
    return profiles


def _typical_run(
    chosen: Sequence[TraceEvent], index: _RunIndex, callers: Collection[int], provider: str
) -> OpProfile:
    """The operator profile of ``chosen`` runs: each run summarized on its own, then each op type's and
    node's median over them (:func:`operators.typical`), so one pre-empted run decides nothing."""
    if not chosen:
        return op_profile(summarize([], requested_provider=provider))
    runs = (op_profile(summarize(index.slice(run, callers), requested_provider=provider)) for run in chosen)
    return typical(*runs)


class _RunIndex:
    """:func:`trace.slice_run` over a trace sorted by start time, each run found by bisection
    instead of a pass over every event (one side of a 20-layer BERT: 11 runs, some 8,000 events)."""

    def __init__(self, events: Sequence[TraceEvent]) -> None:
        self._events = events
        self._starts = [event.ts for event in events]

    def slice(self, run: TraceEvent, callers: Collection[int]) -> list[TraceEvent]:
        first = bisect.bisect_left(self._starts, run.ts)
        last = bisect.bisect_right(self._starts, run.ts + run.dur)
        return slice_run(self._events[first:last], run, callers=callers)


def worker_operator_profile(model: LoadedModel, provider: str, *, runs: int = 5) -> OpProfile:
    """:func:`operator_profile` of a model loaded in a measuring worker, in the worker's ONNX
    Runtime: a profiling session of its own there, built and run after measuring (never timed)."""
    with tempfile.TemporaryDirectory(prefix="ortperf-profile-") as temp:
        events = load_trace(model.profile(runs + 1, Path(temp) / "profile"))
    return _after_first_run(events, provider)


def _after_first_run(events: list[TraceEvent], provider: str) -> OpProfile:
    """The operator profile of a session-level trace's runs but its first (allocation, kernel choice)."""
    made = model_runs(events)
    callers = {run.tid for run in made}  # nodes on other threads: ORT_PARALLEL's inter-op pool
    return _typical_run(made[1:], _RunIndex(events), callers, provider)
