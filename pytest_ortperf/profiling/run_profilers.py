"""Run-level profiling: one Chrome trace per ``session.run`` of a marked test.

ONNX Runtime's C/C++ API can profile a single Run (``RunOptions`` with
``enable_profiling`` and a file prefix); ORT 1.31's Python ``RunOptions`` has no
such attribute. Two backends behind one interface:

* native: when this ORT's Python ``RunOptions`` exposes run-level profiling
  (detected, not assumed: a property or a method), each run gets a unique
  prefix and writes its own file;
* emulated: a separate session of the same model, variant and settings with
  session-level profiling. Each run's native thread id and wall window are
  recorded; at the end ``end_profiling()`` is called once and the trace is
  sliced into one file per run by thread id and time window, which is exact
  even with concurrent runs. The session is rebuilt long before ORT's
  1,000,000-event cap.

Latency is never measured here: profiled runs only explain where time goes.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.profiling.trace import (
    TraceEvent,
    load_trace,
    model_runs,
    overlapping_runs,
    slice_run,
)

REBUILD_AT = 500_000  # events: rebuild the emulation session at half of ORT's cap (1,000,000 a trace)


class ProfileDirError(OrtperfError):
    """The profile directory cannot be written."""


def native_run_profiling(ort: Any) -> str | None:
    """How this ORT's Python ``RunOptions`` turns on run-level profiling: 'property', 'method' or None."""
    options = ort.RunOptions()
    attribute = getattr(options, "enable_profiling", None)
    if attribute is None:
        return None
    return "method" if callable(attribute) else "property"


@dataclass(frozen=True)
class RunWindow:
    """One profiled run: where its trace goes (``run-<number>.json`` in ``directory``, or nowhere)."""

    number: int
    directory: Path | None
    tid: int
    start_ns: int
    end_ns: int


@dataclass
class _Generation:
    session: Any
    runs: list[RunWindow] = field(default_factory=list)
    started: int = 0


def prepare_directory(directory: Path) -> Path:
    """Create ``directory`` and clear earlier ``run-*.json``/``summary.json``; a clear error if unwritable."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for old in [*directory.glob("run-*.json"), directory / "summary.json"]:
            old.unlink(missing_ok=True)
        probe = directory / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ProfileDirError(
            f"profile directory '{directory}' is not writable: {exc.strerror or exc}"
        ) from None
    return directory


class _RunNumbers:
    """Run numbers per trace folder (``run-1.json``, ``run-2.json``, ...), safe across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[Path, int] = {}

    def next(self, directory: Path) -> int:
        with self._lock:
            self._counts[directory] = self._counts.get(directory, 0) + 1
            return self._counts[directory]

    def count(self, directory: Path) -> int:
        return self._counts.get(directory, 0)


Runner = Callable[[Any, "Sequence[str] | None", Any, Any], Any]
"""How a profiled run is made: ``runner(session, output_names, feeds, run_options)``."""


def plain_run(session: Any, output_names: Sequence[str] | None, feeds: Any, run_options: Any) -> Any:
    return session.run(output_names, feeds, run_options)


class EmulatedRunProfiler:
    """Profiles runs on a session-level-profiling session, then slices one file per run.

    Runs are routed to a directory (their test's) or to none (only in the
    session-level trace). ``finish`` ends profiling once per session, writes
    every routed run as ``run-<k>.json`` (k counted per directory), and keeps
    the session-level trace if asked (``--ortperf-session-profile``). Each
    generation of the session (a new one every ``rebuild_at`` estimated
    events) gets its own file prefix: ORT names trace files with only
    millisecond resolution, so two generations on one prefix could share a file.
    """

    def __init__(
        self,
        build: Callable[[str], Any],
        prefix: Path,
        directory: Path | None,
        *,
        events_per_run: int,
        rebuild_at: int = REBUILD_AT,
        runner: Runner = plain_run,
    ) -> None:
        self._build = build
        self._prefix = prefix
        self.directory = directory
        self._events_per_run = max(events_per_run, 1)
        self._rebuild_at = rebuild_at
        self._runner = runner
        self._lock = threading.Lock()
        self._generations = [self._new_generation(1)]
        self._numbers = _RunNumbers()
        self.warnings: dict[Path, list[str]] = {}

    def _new_generation(self, ordinal: int) -> _Generation:
        tag = f"{self._prefix.name}-g{ordinal}-{uuid.uuid4().hex[:8]}"
        return _Generation(self._build(str(self._prefix.with_name(tag))))

    @property
    def session(self) -> Any:
        return self._generations[-1].session

    @property
    def generations(self) -> int:
        return len(self._generations)

    def run(
        self,
        output_names: Sequence[str] | None,
        feeds: Any,
        run_options: Any = None,
        *,
        directory: Path | None = None,
    ) -> Any:
        target = directory or self.directory
        number = 0 if target is None else self._numbers.next(target)
        with self._lock:
            generation = self._generations[-1]
            if generation.started and (generation.started + 1) * self._events_per_run > self._rebuild_at:
                generation = self._new_generation(len(self._generations) + 1)
                self._generations.append(generation)
            generation.started += 1
        tid = threading.get_native_id()
        start = time.time_ns()
        try:
            outputs = self._runner(generation.session, output_names, feeds, run_options)
        finally:
            end = time.time_ns()
            with self._lock:
                generation.runs.append(RunWindow(number, target, tid, start, end))
        return outputs

    def runs_in(self, directory: Path) -> int:
        return self._numbers.count(directory)

    def finish(self, keep_session_trace: Path | None = None) -> dict[Path, list[Path]]:
        """Write ``run-<k>.json`` per routed run; returns each directory's files in run order.

        Runs whose slice may hold another run's nodes are listed in ``warnings``.
        """
        written: dict[Path, dict[int, Path]] = {}
        for position, generation in enumerate(self._generations):
            trace_path = Path(generation.session.end_profiling())
            base_ns = generation.session.get_profiling_start_time_ns()
            if not trace_path.name:
                continue
            events = load_trace(trace_path)
            runs = model_runs(events)
            overlapping = {id(runs[i]) for i in overlapping_runs(runs)}
            callers = {window.tid for window in generation.runs}
            for window in generation.runs:
                if window.directory is None:
                    continue
                path, ambiguous = _write_run(window, events, runs, base_ns, callers, overlapping)
                written.setdefault(window.directory, {})[window.number] = path
                if ambiguous:
                    self.warnings.setdefault(window.directory, []).append(
                        f"{path.name}: its nodes ran on inter-op threads while another run overlapped "
                        "it, so the slice may hold that run's nodes too (ambiguous; profile without "
                        "concurrent runs or with execution_mode='sequential' for exact traces)"
                    )
            if keep_session_trace is None:
                trace_path.unlink(missing_ok=True)
            else:
                suffix = f"-{position + 1}" if position else ""
                keep_session_trace.parent.mkdir(parents=True, exist_ok=True)
                trace_path.replace(keep_session_trace.with_name(keep_session_trace.stem + suffix + ".json"))
        return {d: [files[k] for k in sorted(files)] for d, files in written.items()}


def _write_run(
    window: RunWindow,
    events: list[TraceEvent],
    runs: Sequence[TraceEvent],
    base_ns: int,
    callers: set[int],
    overlapping: set[int],
) -> tuple[Path, bool]:
    """Write one run's slice; whether it is ambiguous (pool-thread nodes while runs overlapped).
    ``runs``: the trace's ``model_run`` events, found once for every window."""
    assert window.directory is not None
    run = match_run(runs, window, base_ns)
    selected = slice_run(events, run, callers=callers) if run is not None else []
    ambiguous = run is not None and id(run) in overlapping and any(e.tid != run.tid for e in selected)
    path = window.directory / f"run-{window.number}.json"
    path.write_text(json.dumps([e.as_dict() for e in selected], indent=0) + "\n", encoding="utf-8")
    return path, ambiguous


def run_warnings(name: str, events: Sequence[TraceEvent]) -> list[str]:
    """What is wrong with one per-run trace: no ``model_run``, or no Node events."""
    if not model_runs(events):
        return [
            f"{name}: no model_run event: the run was not found in the profiling session's trace "
            "(events dropped past ORT's cap, or the run failed)"
        ]
    if not any(e.cat == "Node" for e in events):
        return [f"{name}: no Node events: the run's operators were not captured"]
    return []


def match_run(runs: Sequence[TraceEvent], window: RunWindow, base_ns: int) -> TraceEvent | None:
    """The ``model_run`` event (of ``runs``, the trace's) of this thread inside the run's wall window
    (microseconds from base)."""
    start_us = (window.start_ns - base_ns) // 1000 - 1
    end_us = (window.end_ns - base_ns) // 1000 + 1
    inside = [
        run for run in runs if run.tid == window.tid and start_us <= run.ts and run.ts + run.dur <= end_us
    ]
    return inside[0] if len(inside) == 1 else None


class RunProfiler(Protocol):
    """What both backends offer: profiled runs routed to folders, and files at the end."""

    directory: Path | None
    warnings: dict[Path, list[str]]

    def run(
        self,
        output_names: Sequence[str] | None,
        feeds: Any,
        run_options: Any = None,
        *,
        directory: Path | None = None,
    ) -> Any: ...

    def runs_in(self, directory: Path) -> int: ...

    def finish(self, keep_session_trace: Path | None = None) -> dict[Path, list[Path]]: ...


class NativeRunProfiler:
    """ORT's own run-level profiling, for ORT builds whose Python ``RunOptions`` expose it.

    Each run gets a unique file prefix (ORT names files with only millisecond
    resolution) and its file is renamed to ``run-<k>.json`` as soon as the run
    returns. The session itself is the ordinary, unprofiled one. A caller's
    ``RunOptions`` is handed back as it came: profiling is switched off again.
    """

    def __init__(
        self, ort: Any, session: Any, directory: Path | None, *, shape: str, runner: Runner = plain_run
    ) -> None:
        self._ort = ort
        self.session = session
        self.directory = directory
        self._shape = shape
        self._runner = runner
        self._lock = threading.Lock()
        self._numbers = _RunNumbers()
        self._written: dict[Path, list[Path]] = {}
        self.warnings: dict[Path, list[str]] = {}

    def run(
        self,
        output_names: Sequence[str] | None,
        feeds: Any,
        run_options: Any = None,
        *,
        directory: Path | None = None,
    ) -> Any:
        target = directory or self.directory
        if target is None:
            return self._runner(self.session, output_names, feeds, run_options)
        number = self._numbers.next(target)
        options = run_options if run_options is not None else self._ort.RunOptions()
        prefix = target / f".run-{number}-{uuid.uuid4().hex}"
        restore = _switch_on(options, self._shape, str(prefix))
        try:
            outputs = self._runner(self.session, output_names, feeds, options)
        finally:
            if run_options is not None:
                restore()
        produced = sorted(target.glob(f"{prefix.name}*.json"))
        if len(produced) != 1:
            raise OrtperfError(
                f"run-level profiling wrote {len(produced)} files for prefix '{prefix}', expected one"
            )
        final = target / f"run-{number}.json"
        produced[0].replace(final)
        with self._lock:
            self._written.setdefault(target, []).append(final)
        return outputs

    def runs_in(self, directory: Path) -> int:
        return self._numbers.count(directory)

    def finish(self, keep_session_trace: Path | None = None) -> dict[Path, list[Path]]:
        return {
            d: sorted(files, key=lambda p: int(p.stem.split("-")[1])) for d, files in self._written.items()
        }


def _switch_on(options: Any, shape: str, prefix: str) -> Callable[[], None]:
    """Turn run-level profiling on in ``options``; returns what puts them back as they were."""
    if shape == "method":
        options.enable_profiling(prefix)

        def restore_method() -> None:
            disable = getattr(options, "disable_profiling", None)
            if callable(disable):
                disable()

        return restore_method
    saved = (options.enable_profiling, getattr(options, "profile_file_prefix", ""))
    options.enable_profiling = True
    options.profile_file_prefix = prefix

    def restore_property() -> None:
        options.enable_profiling, options.profile_file_prefix = saved

    return restore_property


class ProfilingWarning(UserWarning):
    """A run of a test marked ``ort_profile`` was not profiled."""


_UNPROFILED = ("run_with_iobinding", "run_with_ort_values", "run_async")


class ProfiledSession:
    """An ``InferenceSession`` stand-in: ``run`` goes through a profiler, the rest delegates.

    ``run_with_iobinding``, ``run_with_ort_values`` and ``run_async`` run on the
    unprofiled session (an IOBinding belongs to the session that made it); in a
    marked test each call warns that it writes no trace.
    """

    def __init__(self, session: Any, profiler: RunProfiler, directory: Path | None = None) -> None:
        self._session = session
        self._profiler = profiler
        self._directory = directory

    def run(self, output_names: Sequence[str] | None, input_feed: Any, run_options: Any = None) -> Any:
        return self._profiler.run(output_names, input_feed, run_options, directory=self._directory)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._session, name)
        if name in _UNPROFILED and self._directory is not None:
            warnings.warn(
                f"ort_session.{name} in a test marked ort_profile is not profiled: only "
                "ort_session.run writes per-run traces",
                ProfilingWarning,
                stacklevel=2,
            )
        return attribute
