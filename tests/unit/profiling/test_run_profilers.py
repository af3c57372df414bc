"""Run-level profiling pieces that need no pytest run: API detection, run matching, directories."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import onnxruntime as ort
import pytest

from pytest_ortperf.profiling.run_profilers import (
    ProfileDirError,
    RunWindow,
    match_run,
    native_run_profiling,
    prepare_directory,
)
from pytest_ortperf.profiling.trace import TraceEvent


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
    from pytest_ortperf.profiling.run_profilers import NativeRunProfiler

    shape = native_run_profiling(SimpleNamespace(RunOptions=run_options))
    assert shape is not None
    session = _FakeSession()
    profiler = NativeRunProfiler(SimpleNamespace(RunOptions=run_options), session, tmp_path, shape=shape)
    for _ in range(3):
        profiler.run(None, {})
    profiler.run(None, {}, directory=None)  # None: the profiler's own folder
    files = profiler.finish()[tmp_path]
    assert [p.name for p in files] == ["run-1.json", "run-2.json", "run-3.json", "run-4.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "run-1.json",
        "run-2.json",
        "run-3.json",
        "run-4.json",
    ]
    assert profiler.runs_in(tmp_path) == 4


def test_native_backend_refuses_a_run_that_wrote_no_file(tmp_path: Path) -> None:
    from pytest_ortperf.errors import OrtperfError
    from pytest_ortperf.profiling.run_profilers import NativeRunProfiler

    class Silent(_FakeSession):
        def run(self, names: object, feeds: object, options: object = None) -> list[int]:
            return [0]

    profiler = NativeRunProfiler(
        SimpleNamespace(RunOptions=_PropertyRunOptions), Silent(), tmp_path, shape="property"
    )
    with pytest.raises(OrtperfError, match="wrote 0 files"):
        profiler.run(None, {})


# The emulated backend on real ONNX Runtime sessions ------------------------------------------

LAYERS = 6
SLOW_NODES = 2 * LAYERS + 1  # MatMul + Relu per layer, then Identity (kept: optimization disabled)


@pytest.fixture(scope="module")
def slow_model() -> bytes:
    """Milliseconds per run: 6 layers of 384-wide MatMul at batch 64 on one thread."""
    from tests.models import mlp_model

    return mlp_model(layers=LAYERS, width=384).SerializeToString()


def _profiling_session(model: bytes, prefix: str, *, parallel: bool = False) -> object:
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = prefix
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 2 if parallel else 1
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL if parallel else ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _feeds() -> dict[str, object]:
    import numpy as np

    return {"x": np.ones((64, 384), dtype=np.float32)}


def _load(path: Path) -> list[dict]:
    return json.loads(path.read_text())


def _overlap(a: dict, b: dict) -> bool:
    return a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]


def test_concurrent_profiled_and_unprofiled_runs_on_one_profiling_session(
    tmp_path: Path, slow_model: bytes
) -> None:
    """Upstream scenario 1 on the shared session of --ortperf-session-profile: threads run the
    same profiling session at once, two routed to their own folders, two to none."""
    import threading

    from pytest_ortperf.profiling.run_profilers import EmulatedRunProfiler

    (tmp_path / "session").mkdir()
    profiler = EmulatedRunProfiler(
        lambda prefix: _profiling_session(slow_model, prefix),
        tmp_path / "session" / "shared",
        None,
        events_per_run=SLOW_NODES + 4,
    )
    folders = {name: prepare_directory(tmp_path / name) for name in ("a", "b")}
    # Rounds enough that some runs overlap even on a loaded 2-core machine, where three rounds of
    # four threads started together ran one after another now and then.
    rounds = 8
    barrier = threading.Barrier(4)
    tids: dict[str, int] = {}
    feeds = _feeds()

    def work(name: str) -> None:
        tids[name] = threading.get_native_id()
        for _ in range(rounds):
            barrier.wait()
            profiler.run(None, feeds, directory=folders.get(name))

    threads = [threading.Thread(target=work, args=(name,)) for name in ("a", "b", "plain1", "plain2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    keep = tmp_path / "session" / "shared.json"
    files = profiler.finish(keep_session_trace=keep)

    session_runs = [e for e in _load(keep) if e["name"] == "model_run"]
    assert len(session_runs) == 4 * rounds, "every run, profiled or not, is in the session trace"
    crossing = [(a, b) for a in session_runs for b in session_runs if a["tid"] != b["tid"] and _overlap(a, b)]
    assert crossing, "the runs of different threads overlapped in time (the test proves concurrency)"
    assert set(files) == set(folders.values())
    for name, folder in folders.items():
        assert [p.name for p in files[folder]] == [f"run-{k}.json" for k in range(1, rounds + 1)]
        assert sorted(p.name for p in folder.glob("run-*.json")) == [
            f"run-{k}.json" for k in range(1, rounds + 1)
        ]
        for path in files[folder]:
            events = _load(path)
            assert [e["tid"] for e in events if e["name"] == "model_run"] == [tids[name]]
            nodes = [e for e in events if e["cat"] == "Node"]
            assert len(nodes) == SLOW_NODES, "exactly its own run's nodes"
            assert {e["tid"] for e in events} == {tids[name]}, "no other thread's (unprofiled) run leaks in"
    assert profiler.warnings == {}


def test_rebuilds_give_each_generation_its_own_trace(tmp_path: Path, slow_model: bytes) -> None:
    """Rebuilding long before ORT's event cap: a threshold that forces a new session every 2 runs,
    with sequential and concurrent runs; every per-run file and every session trace survives."""
    import threading

    from pytest_ortperf.profiling.run_profilers import EmulatedRunProfiler

    per_run = SLOW_NODES + 4
    (tmp_path / "session").mkdir()
    prefixes: list[str] = []

    def build(prefix: str) -> object:
        prefixes.append(prefix)
        return _profiling_session(slow_model, prefix)

    profiler = EmulatedRunProfiler(
        build,
        tmp_path / "session" / "m",
        None,
        events_per_run=per_run,
        rebuild_at=2 * per_run,
    )
    folder = prepare_directory(tmp_path / "t")
    feeds = _feeds()
    for _ in range(3):  # sequential: the third run starts a second generation
        profiler.run(None, feeds, directory=folder)
    barrier = threading.Barrier(3)

    def work() -> None:
        barrier.wait()
        for _ in range(2):
            profiler.run(None, feeds, directory=folder)
        profiler.run(None, feeds)  # an unrouted run counts towards the cap too

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert profiler.generations >= 2
    # ORT names trace files to the millisecond: generations built within one ms must not share a prefix.
    assert len(set(prefixes)) == len(prefixes) == profiler.generations
    keep = tmp_path / "kept" / "m.json"
    files = profiler.finish(keep_session_trace=keep)[folder]

    assert [p.name for p in files] == [f"run-{k}.json" for k in range(1, 10)]
    for path in files:
        events = _load(path)
        assert sum(e["name"] == "model_run" for e in events) == 1
        assert sum(e["cat"] == "Node" for e in events) == SLOW_NODES
    kept = sorted(p.name for p in keep.parent.iterdir())
    assert kept == sorted(["m.json"] + [f"m-{g}.json" for g in range(2, profiler.generations + 1)])
    assert sum(sum(e["name"] == "model_run" for e in _load(keep.parent / k)) for k in kept) == 12
    assert not list((tmp_path / "session").glob("*.json")), "generation traces are moved, none left behind"


def test_parallel_execution_mode_keeps_the_nodes_of_each_run(tmp_path: Path, slow_model: bytes) -> None:
    """ORT_PARALLEL runs nodes on inter-op threads, not on the caller's: they are still the run's."""
    from pytest_ortperf.profiling.run_profilers import EmulatedRunProfiler

    folder = prepare_directory(tmp_path / "t")
    profiler = EmulatedRunProfiler(
        lambda prefix: _profiling_session(slow_model, prefix, parallel=True),
        folder / "session",
        folder,
        events_per_run=SLOW_NODES + 4,
    )
    for _ in range(3):
        profiler.run(None, _feeds())
    files = profiler.finish()[folder]
    assert len(files) == 3
    for path in files:
        events = _load(path)
        assert sum(e["name"] == "model_run" for e in events) == 1
        assert sum(e["cat"] == "Node" for e in events) == SLOW_NODES
    assert profiler.warnings == {}


def test_overlapping_parallel_runs_are_marked_ambiguous(tmp_path: Path, slow_model: bytes) -> None:
    import threading

    from pytest_ortperf.profiling.run_profilers import EmulatedRunProfiler

    # Whether two runs really overlap is up to the scheduler (2 shared cores): try a few times.
    for attempt in range(5):
        folder = prepare_directory(tmp_path / f"t{attempt}")
        profiler = EmulatedRunProfiler(
            lambda prefix: _profiling_session(slow_model, prefix, parallel=True),
            folder / "session",
            folder,
            events_per_run=SLOW_NODES + 4,
        )
        barrier = threading.Barrier(2)

        def work(barrier: threading.Barrier = barrier, profiler: EmulatedRunProfiler = profiler) -> None:
            for _ in range(3):
                barrier.wait()
                profiler.run(None, _feeds())

        threads = [threading.Thread(target=work) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        files = profiler.finish()[folder]
        runs = [next(e for e in _load(p) if e["name"] == "model_run") for p in files]
        overlapped = {
            p.name
            for p, r in zip(files, runs, strict=True)
            if any(_overlap(r, o) for o in runs if o is not r)
        }
        if overlapped:
            break
        assert profiler.warnings.get(folder, []) == [], "runs that did not overlap are not ambiguous"
    else:
        pytest.skip("the two threads' runs never overlapped in 5 attempts on this machine")
    warned = {w.split(":")[0] for w in profiler.warnings.get(folder, [])}
    assert warned == overlapped
    assert all("ambiguous" in w for w in profiler.warnings[folder])


def test_overlapping_runs_are_found() -> None:
    from pytest_ortperf.profiling.trace import overlapping_runs

    runs = [_run(0, 10, 1), _run(20, 10, 1), _run(25, 30, 2), _run(100, 5, 1), _run(60, 50, 2)]
    assert overlapping_runs(runs) == {1, 2, 3, 4}
    assert overlapping_runs([]) == set()


def test_slicing_with_callers_takes_pool_thread_nodes_only() -> None:
    from pytest_ortperf.profiling.trace import slice_run

    run = _run(100, 50, tid=1)
    node = TraceEvent(cat="Node", name="mm", ts=110, dur=5, tid=9)
    other_caller = TraceEvent(cat="Node", name="other", ts=120, dur=5, tid=2)
    outside = TraceEvent(cat="Node", name="late", ts=160, dur=5, tid=9)
    events = [run, node, other_caller, outside]
    assert slice_run(events, run) == [run]
    assert slice_run(events, run, callers={1, 2}) == [run, node]


def test_run_warnings_name_empty_slices() -> None:
    from pytest_ortperf.profiling.run_profilers import run_warnings

    node = TraceEvent(cat="Node", name="mm", ts=110, dur=5, tid=1)
    assert run_warnings("run-1.json", [_run(100, 50, 1), node]) == []
    assert "no model_run event" in run_warnings("run-2.json", [])[0]
    assert run_warnings("run-3.json", [_run(100, 50, 1)]) == [
        "run-3.json: no Node events: the run's operators were not captured"
    ]


def test_native_backend_hands_the_callers_run_options_back(tmp_path: Path) -> None:
    from pytest_ortperf.profiling.run_profilers import NativeRunProfiler

    options = _PropertyRunOptions()
    profiler = NativeRunProfiler(
        SimpleNamespace(RunOptions=_PropertyRunOptions), _FakeSession(), tmp_path, shape="property"
    )
    profiler.run(None, {}, options)
    assert (tmp_path / "run-1.json").exists()
    assert (options.enable_profiling, options.profile_file_prefix) == (False, "")


def test_unprofiled_run_methods_warn_in_marked_tests(tmp_path: Path) -> None:
    from pytest_ortperf.profiling.run_profilers import ProfiledSession, ProfilingWarning

    class Plain:
        def run_with_iobinding(self, binding: object) -> str:
            return "ran"

    marked = ProfiledSession(Plain(), profiler=None, directory=tmp_path)  # type: ignore[arg-type]
    with pytest.warns(
        ProfilingWarning, match="run_with_iobinding in a test marked ort_profile is not profiled"
    ):
        assert marked.run_with_iobinding(object()) == "ran"
    unmarked = ProfiledSession(Plain(), profiler=None)  # type: ignore[arg-type]
    assert unmarked.run_with_iobinding(object()) == "ran"  # no warning: filterwarnings=error


def test_profile_lines_show_totals_top_nodes_fallbacks_and_warnings(tmp_path: Path) -> None:
    from pytest_ortperf.profiling.book import ProfileReport
    from pytest_ortperf.profiling.trace import summarize
    from pytest_ortperf.reports.ci_files import profile_record
    from pytest_ortperf.reports.terminal import profile_lines

    events = [
        _run(0, 1000, 1),
        TraceEvent(cat="Node", name="conv_kernel_time", ts=10, dur=600, tid=1,
                   args={"op_name": "Conv", "provider": "CUDAExecutionProvider"}),
        TraceEvent(cat="Node", name="relu_kernel_time", ts=700, dur=200, tid=1,
                   args={"op_name": "Relu", "provider": "CPUExecutionProvider"}),
        _run(2000, 1000, 1),
    ]  # fmt: skip
    summary = summarize(events, requested_provider="CUDAExecutionProvider")
    report = ProfileReport(
        "t.py::test_x", (tmp_path / "run-1.json", tmp_path / "run-2.json"), summary, tmp_path / "summary.json",
        ("run-2.json: no Node events: the run's operators were not captured",),
    )  # fmt: skip
    # Read from the profile's record, as the controller reads an xdist worker's.
    assert profile_lines(json.loads(json.dumps(profile_record(report)))) == [
        "profile t.py::test_x: 2 run(s), 2.000 ms in total, 1.000 ms per run; top ops: Conv 75%, Relu 25%; "
        "providers: CUDAExecutionProvider 75%, CPUExecutionProvider 25%",
        "  top nodes: conv (Conv) 75%, relu (Relu) 25%",
        "  1 node(s) fell back to CPU: relu",
        "  WARNING: run-2.json: no Node events: the run's operators were not captured",
        f"  traces and summary.json in {tmp_path} (ortperf profile {tmp_path})",
    ]
