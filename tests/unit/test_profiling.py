"""Run-level profiling pieces that need no pytest run: API detection, run matching, directories."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import onnxruntime as ort
import pytest

from pytest_ortperf.profiling import (
    ProfileDirError,
    RunWindow,
    match_run,
    native_run_profiling,
    prepare_directory,
)
from pytest_ortperf.trace import TraceEvent


class _PropertyRunOptions:
    enable_profiling = False
    profile_file_prefix = ""


class _MethodRunOptions:
    def enable_profiling(self, prefix: str) -> None:
        self.prefix = prefix


@pytest.mark.parametrize(
    ("run_options", "expected"),
    [(_PropertyRunOptions, "property"), (_MethodRunOptions, "method"), (object, None)],
)
def test_native_api_shape_is_detected(run_options: type, expected: str | None) -> None:
    assert native_run_profiling(SimpleNamespace(RunOptions=run_options)) == expected


def test_installed_onnxruntime_has_no_python_run_profiling() -> None:
    """ORT 1.31: run-level profiling is C/C++ only, so the emulated backend is the one used."""
    if ort.__version__.startswith("1.31"):
        assert native_run_profiling(ort) is None


def _run(ts: int, dur: int, tid: int) -> TraceEvent:
    return TraceEvent(cat="Session", name="model_run", ts=ts, dur=dur, tid=tid)


def test_match_run_uses_thread_and_window() -> None:
    events = [_run(100, 50, tid=1), _run(120, 50, tid=2), _run(300, 40, tid=1)]
    base = 1_000_000_000
    window = RunWindow(number=1, directory=None, tid=2, start_ns=base + 110_000, end_ns=base + 175_000)
    assert match_run(events, window, base) == events[1]
    other = RunWindow(number=2, directory=None, tid=1, start_ns=base + 290_000, end_ns=base + 345_000)
    assert match_run(events, other, base) == events[2]
    nowhere = RunWindow(number=3, directory=None, tid=3, start_ns=base, end_ns=base + 500_000)
    assert match_run(events, nowhere, base) is None


def test_prepare_directory_clears_old_traces_only(tmp_path: Path) -> None:
    directory = tmp_path / "t"
    directory.mkdir()
    (directory / "run-7.json").write_text("[]")
    (directory / "summary.json").write_text("{}")
    (directory / "notes.txt").write_text("mine")
    prepare_directory(directory)
    assert sorted(p.name for p in directory.iterdir()) == ["notes.txt"]


def test_prepare_directory_names_an_unwritable_place(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ProfileDirError, match=r"profile directory '.*file/sub' is not writable"):
        prepare_directory(blocker / "sub")


class _FakeSession:
    """Writes '<prefix>_<timestamp>.json' per profiled run, as ORT's run-level profiling does."""

    def __init__(self) -> None:
        self.calls = 0

    def run(self, names: object, feeds: object, options: object = None) -> list[int]:
        self.calls += 1
        prefix = getattr(options, "profile_file_prefix", None) or getattr(options, "prefix", None)
        if prefix:
            event = {"cat": "Session", "name": "model_run", "ts": 0, "dur": 5, "tid": 1, "pid": 1, "args": {}}
            Path(f"{prefix}_2026-01-01_00-00-00_000.json").write_text(json.dumps([event]))
        return [self.calls]


@pytest.mark.parametrize("run_options", [_PropertyRunOptions, _MethodRunOptions])
def test_native_backend_writes_one_file_per_run(tmp_path: Path, run_options: type) -> None:
    from pytest_ortperf.profiling import NativeRunProfiler

    shape = native_run_profiling(SimpleNamespace(RunOptions=run_options))
    assert shape is not None
    session = _FakeSession()
    profiler = NativeRunProfiler(SimpleNamespace(RunOptions=run_options), session, tmp_path, shape=shape)
    for _ in range(3):
        profiler.run(None, {})
    profiler.run(None, {}, directory=None)  # None: the profiler's own folder
    files = profiler.finish()[tmp_path]
    assert [p.name for p in files] == ["run-1.json", "run-2.json", "run-3.json", "run-4.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-1.json", "run-2.json", "run-3.json", "run-4.json"]
    assert profiler.runs_in(tmp_path) == 4


def test_native_backend_refuses_a_run_that_wrote_no_file(tmp_path: Path) -> None:
    from pytest_ortperf.errors import OrtperfError
    from pytest_ortperf.profiling import NativeRunProfiler

    class Silent(_FakeSession):
        def run(self, names: object, feeds: object, options: object = None) -> list[int]:
            return [0]

    profiler = NativeRunProfiler(SimpleNamespace(RunOptions=_PropertyRunOptions), Silent(), tmp_path, shape="property")
    with pytest.raises(OrtperfError, match="wrote 0 files"):
        profiler.run(None, {})
