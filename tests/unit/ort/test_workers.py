"""Measuring workers as real child processes: answers, failures, and never outliving the parent.

The crash and hang cases that a real model cannot produce on demand use a stand-in: the real
worker program with one command replaced (a segfault, a sleep, bytes that are not a message).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from pytest_ortperf.latency.measure import MeasureSettings
from pytest_ortperf.latency.paired import judge_pair, measure_pair
from pytest_ortperf.ort import worker_program
from pytest_ortperf.ort.models import ModelResolver, ModelSource
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.variants import OptLevel, Variant
from pytest_ortperf.ort.workers import SideSpec, WorkerError, WorkerPool, WorkerProcess, load, load_units
from tests.models import mlp_model, structured_outputs_model

CPU_ALL = Variant(resolve_provider("cpu", source="test"), OptLevel.ALL)
FEEDS = {"x": np.linspace(-1, 1, 4 * 16, dtype=np.float32).reshape(4, 16)}


def _source(model: onnx.ModelProto, tmp_path: Path) -> ModelSource:
    return ModelResolver(tmp_path).resolve(model, test_dir=tmp_path, origin="test")


@pytest.fixture
def worker() -> WorkerProcess:
    process = WorkerProcess(sys.executable, timeout_s=30)
    yield process
    process.close()


def _stand_in(tmp_path: Path, command: str, behaviour: str) -> Path:
    """The real worker program with ``command`` replaced by ``behaviour`` (Python statements)."""
    program = tmp_path / "stand_in_worker.py"
    lines = [
        "import ctypes, os, sys, time",
        f"sys.path.insert(0, {str(Path(worker_program.__file__).parent)!r})",
        "import worker_program",
        "real = worker_program.Worker.handle",
        "def handle(self, header, arrays):",
        f"    if header.get('cmd') == {command!r}:",
        *(f"        {line}" for line in behaviour.splitlines()),
        "    return real(self, header, arrays)",
        "worker_program.Worker.handle = handle",
        "sys.exit(worker_program.main())",
    ]
    program.write_text("\n".join(lines) + "\n")
    return program


def _gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for its reaper counts as ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def test_hello_reports_the_runtime_of_the_worker_environment(worker: WorkerProcess) -> None:
    assert worker.runtime.version == ort.__version__
    assert "CPUExecutionProvider" in worker.runtime.providers
    assert worker.runtime.describe().endswith(ort.__version__)
    assert worker.pid != os.getpid()


def test_outputs_match_an_in_process_session_bit_for_bit(worker: WorkerProcess, tmp_path: Path) -> None:
    source = _source(mlp_model(3, 16), tmp_path)
    loaded = load(worker, source, CPU_ALL, SessionSettings(), FEEDS, instances=2)
    assert loaded.providers == ("CPUExecutionProvider",)
    session = ort.InferenceSession(source.data, providers=["CPUExecutionProvider"])
    expected = session.run(None, FEEDS)[0]
    np.testing.assert_array_equal(loaded.outputs()["y"], expected)
    loaded.release()


def test_sequence_and_map_outputs_come_back_from_a_worker_as_onnxruntime_returned_them(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    """Nothing a worker runs is dropped: ZipMap's list of dicts, a sequence's list of arrays, with the
    types the session states, so the gate compares them as it compares its own outputs."""
    source = _source(structured_outputs_model(), tmp_path)
    feeds = {"x": np.float32([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])}
    loaded = load(worker, source, CPU_ALL, SessionSettings(), feeds)
    typed = loaded.typed_outputs()
    session = ort.InferenceSession(source.data, providers=["CPUExecutionProvider"])
    probabilities, parts, y = session.run(None, feeds)
    assert typed["probabilities"] == (probabilities, "seq(map(int64,tensor(float)))")
    assert typed["parts"][1] == "seq(tensor(float))"
    assert len(typed["parts"][0]) == 2
    for got, expected in zip(typed["parts"][0], parts, strict=True):
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(typed["y"][0], y)
    assert list(loaded.outputs()) == ["probabilities", "parts", "y"]
    loaded.release()


def test_a_model_file_loads_by_path(worker: WorkerProcess, tmp_path: Path) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(2, 16), path)
    source = ModelResolver(tmp_path).resolve(str(path), test_dir=tmp_path, origin="test")
    loaded = load(worker, source, CPU_ALL, SessionSettings(), FEEDS)
    assert loaded.outputs()["y"].shape == (4, 16)


def test_a_profile_runs_on_a_new_profiling_session_and_leaves_the_timed_ones_alone(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    import json

    source = _source(mlp_model(3, 16), tmp_path)
    loaded = load(worker, source, CPU_ALL, SessionSettings(), FEEDS)
    trace = loaded.profile(4, tmp_path / "traces" / "side")
    assert trace.parent == tmp_path / "traces"
    assert trace.name.startswith("side")
    events = json.loads(trace.read_text())
    assert sum(e["name"] == "model_run" for e in events) == 4
    assert sum(e.get("cat") == "Node" and e["args"].get("op_name") == "MatMul" for e in events) == 4 * 3
    assert loaded.time_runs(3, 1e5)  # the loaded model still runs, on its unprofiled session
    assert list(tmp_path.glob("traces/*.json")) == [trace], "the timed session writes no trace"
    loaded.release()


def test_runs_are_timed_in_the_worker_and_judged_like_in_process_ab(tmp_path: Path) -> None:
    pool = WorkerPool(timeout_s=30)
    try:
        small = load(
            pool.get(sys.executable, "current"),
            _source(mlp_model(2, 64), tmp_path),
            CPU_ALL,
            SessionSettings(),
            {"x": np.ones((8, 64), np.float32)},
        )
        big = load(
            pool.get(sys.executable, "reference"),
            _source(mlp_model(12, 64), tmp_path),
            CPU_ALL,
            SessionSettings(),
            {"x": np.ones((8, 64), np.float32)},
        )
        assert small.worker is not big.worker
        timings = small.time_runs(5, expected_ns=1e5)
        assert len(timings) == 5
        assert all(t > 0 for t in timings)
        rounds = measure_pair(small, big, MeasureSettings(budget_s=0.3, rounds=12, min_rounds=12))
        assert len(rounds.ratios) == 12
        # Six times the layers: far faster than the reference, whatever the machine does.
        assert judge_pair(rounds, threshold=0.03).estimate.ratio < 0.7
    finally:
        pool.close()


def test_a_model_that_cannot_load_fails_with_the_runtime_message_and_the_worker_goes_on(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    broken = ModelResolver(tmp_path).resolve(b"not an onnx model", test_dir=tmp_path, origin="test")
    with pytest.raises(WorkerError, match=r"'<17 bytes>' \[cpu-all\] in onnxruntime.*failed 'load'.*INVALID"):
        load(worker, broken, CPU_ALL, SessionSettings(), FEEDS)
    assert worker.alive
    loaded = load(worker, _source(mlp_model(1, 16), tmp_path), CPU_ALL, SessionSettings(), FEEDS)
    assert loaded.outputs()["y"].shape == (4, 16)


def test_a_run_past_the_run_timeout_is_terminated_and_named(tmp_path: Path) -> None:
    # A real model that takes seconds per run on one thread: 32 x (4096 x 1024 @ 1024 x 1024), about
    # 275 GFLOP (8 layers ran in under 0.5 s on an AVX-512 Xeon, and the run was not cut short).
    process = WorkerProcess(sys.executable, timeout_s=0.5)
    try:
        slow = load(
            process,
            _source(mlp_model(32, 1024), tmp_path),
            CPU_ALL,
            SessionSettings(),
            {"x": np.ones((4096, 1024), np.float32)},
        )
        started = time.monotonic()
        with pytest.raises(WorkerError, match=r"took longer than 0.5 s and was terminated"):
            slow.time_runs(1, expected_ns=1e6)
        assert time.monotonic() - started < 10
        assert process.alive  # a terminated run is an answer: the worker serves the next check
    finally:
        process.close()


def test_an_interpreter_without_onnxruntime_is_a_clear_error(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = bare / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    with pytest.raises(WorkerError, match=r"cannot import onnxruntime and numpy in .*bare.*No module named"):
        WorkerProcess(str(python), timeout_s=30)


def test_an_interpreter_that_does_not_exist_is_named() -> None:
    with pytest.raises(WorkerError, match=r"cannot start a measuring worker with /no/such/python"):
        WorkerProcess("/no/such/python", timeout_s=5)


def test_a_worker_that_crashes_fails_the_command_with_what_it_printed(tmp_path: Path) -> None:
    program = _stand_in(tmp_path, "time", 'print("about to crash", file=sys.stderr)\nctypes.string_at(0)')
    process = WorkerProcess(sys.executable, timeout_s=30, program=program)
    loaded = load(process, _source(mlp_model(1, 16), tmp_path), CPU_ALL, SessionSettings(), FEEDS)
    with pytest.raises(
        WorkerError, match=r"(?s)killed by signal 11 \(SIGSEGV\) during 'time'.*about to crash"
    ):
        loaded.time_runs(3, expected_ns=1e5)
    assert not process.alive


@pytest.mark.slow
def test_a_worker_that_hangs_is_stopped_at_its_deadline(tmp_path: Path) -> None:
    program = _stand_in(tmp_path, "time", 'print("sleeping", file=sys.stderr, flush=True)\ntime.sleep(3600)')
    process = WorkerProcess(sys.executable, timeout_s=1.0, program=program)
    loaded = load(process, _source(mlp_model(1, 16), tmp_path), CPU_ALL, SessionSettings(), FEEDS)
    started = time.monotonic()
    with pytest.raises(WorkerError, match=r"(?s)did not answer 'time' within 4 s.*was stopped.*sleeping"):
        loaded.time_runs(3, expected_ns=1e3)
    assert time.monotonic() - started < 10  # twice the run timeout, and a little
    assert not process.alive
    assert _gone(process.pid)


def test_what_a_worker_prints_never_reaches_the_protocol(tmp_path: Path) -> None:
    # Native libraries print to fd 1; the worker points fd 1 at stderr, so the answer still parses.
    program = _stand_in(tmp_path, "outputs", 'os.write(1, b"garbage on fd 1")\nprint("and on stdout")')
    process = WorkerProcess(sys.executable, timeout_s=30, program=program)
    loaded = load(process, _source(mlp_model(1, 16), tmp_path), CPU_ALL, SessionSettings(), FEEDS)
    assert loaded.outputs()["y"].shape == (4, 16)
    process.close()


def test_closing_the_pool_ends_every_worker() -> None:
    pool = WorkerPool(timeout_s=30)
    workers = [pool.get(sys.executable, "current"), pool.get(sys.executable, "reference")]
    assert pool.get(sys.executable, "current") is workers[0]  # one per role, reused
    pool.close()
    for process in workers:
        assert not process.alive
        assert _gone(process.pid)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
@pytest.mark.parametrize("busy", [False, True], ids=["idle", "in-a-long-command"])
def test_a_worker_never_outlives_a_killed_parent(tmp_path: Path, busy: bool) -> None:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(4, 256), path)
    parent = textwrap.dedent(
        f"""
        import sys, numpy as np
        from pytest_ortperf.ort import worker_program
        from pytest_ortperf.ort.models import ModelResolver
        from pytest_ortperf.ort.providers import resolve_provider
        from pytest_ortperf.ort.session_settings import SessionSettings
        from pytest_ortperf.ort.variants import OptLevel, Variant
        from pytest_ortperf.ort.workers import WorkerProcess, load
        from pathlib import Path

        worker = WorkerProcess(sys.executable, timeout_s=600)
        source = ModelResolver(Path(".")).resolve({str(path)!r}, test_dir=Path("."), origin="t")
        model = load(worker, source, Variant(resolve_provider("cpu", source="t"), OptLevel.ALL),
                     SessionSettings(), {{"x": np.ones((64, 256), np.float32)}})
        if {busy!r}:  # a command that runs for minutes, sent without waiting for its answer
            worker_program.write_message(worker._process.stdin, {{"cmd": "time", "handle": model.handle,
                                                                 "count": 10**8}})
        print(worker.pid, flush=True)
        import time
        time.sleep(600)
        """
    )
    process = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        pid = int(process.stdout.readline())
        assert not _gone(pid)
        time.sleep(0.3)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(pid)


def test_a_unit_in_one_interpreter_is_one_pooled_process_holding_both_sides(tmp_path: Path) -> None:
    pool = WorkerPool(timeout_s=30)
    try:
        small = SideSpec(sys.executable, _source(mlp_model(2, 16), tmp_path), SessionSettings())
        big = SideSpec(sys.executable, _source(mlp_model(6, 16), tmp_path), SessionSettings())
        units = load_units(pool, small, big, CPU_ALL, FEEDS, first=0, count=3, then=1)
        pids = [unit.current.worker.pid for unit in units]
        assert [unit.reference.worker.pid for unit in units] == pids  # both sides in one process
        assert len(set(pids)) == 3  # a process a unit
        assert [unit.name for unit in units] == [f"pid {pid}" for pid in pids]
        assert pool.started == 4  # the next look's process started too, and is ready
        assert units[0].current.handle != units[0].reference.handle
        outputs = units[0].current.outputs()["y"], units[0].reference.outputs()["y"]
        assert not np.array_equal(*outputs)  # each side its own model
        for unit in units:
            assert unit.release() == []
        again = load_units(pool, small, big, CPU_ALL, FEEDS, first=0, count=2)
        assert [unit.current.worker.pid for unit in again] == pids[:2]  # reused by a later check
        more = load_units(pool, small, big, CPU_ALL, FEEDS, first=2, count=2)
        assert more[0].current.worker.pid == pids[2]
        assert more[1].current.worker.pid not in pids  # unit 3: the process started ahead of it
    finally:
        pool.close()


def test_a_unit_across_interpreters_is_a_pair_of_processes(tmp_path: Path) -> None:
    """Another interpreter path (this environment's other name for its Python stands in for another
    environment): a process a side."""
    names = ("python", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}")
    others = [Path(sys.executable).with_name(n) for n in names if Path(sys.executable).with_name(n).exists()]
    other = next((o for o in others if str(o) != sys.executable), None)
    if other is None:
        pytest.skip(f"this environment has no other name for {sys.executable}")
    pool = WorkerPool(timeout_s=30)
    try:
        here = SideSpec(sys.executable, _source(mlp_model(2, 16), tmp_path), SessionSettings())
        there = SideSpec(str(other), _source(mlp_model(2, 16), tmp_path), SessionSettings())
        (unit,) = load_units(pool, here, there, CPU_ALL, FEEDS, first=0, count=1)
        assert unit.current.worker.pid != unit.reference.worker.pid
        assert unit.name == f"pids {unit.current.worker.pid}/{unit.reference.worker.pid}"
    finally:
        pool.close()


def test_a_unit_that_cannot_load_fails_naming_the_model_and_the_pool_goes_on(tmp_path: Path) -> None:
    pool = WorkerPool(timeout_s=30)
    try:
        good = SideSpec(sys.executable, _source(mlp_model(2, 16), tmp_path), SessionSettings())
        broken = SideSpec(
            sys.executable, replace(good.model, data=b"not a model", path=None), SessionSettings()
        )
        with pytest.raises(WorkerError, match=r"\[cpu-all\] in onnxruntime.*failed 'load'"):
            load_units(pool, good, broken, CPU_ALL, FEEDS, first=0, count=2)
        (unit,) = load_units(pool, good, good, CPU_ALL, FEEDS, first=0, count=1)  # the same processes go on
        assert unit.current.outputs()["y"].shape == (4, 16)
    finally:
        pool.close()


def test_settling_waits_for_every_prestarted_worker_and_leaves_a_failed_start_to_its_check(
    tmp_path: Path,
) -> None:
    pool = WorkerPool(timeout_s=30)
    pool.prestart(sys.executable, 2)
    workers = list(pool._workers.values())
    assert len(workers) == 2
    assert any(w.starting for w in workers)
    pool.settle()
    assert all(not w.starting and w.alive for w in workers)
    pool.close()
    failing = tmp_path / "fails.py"
    failing.write_text("import sys\nprint('no onnxruntime here', file=sys.stderr)\nsys.exit(3)\n")
    broken = WorkerPool(timeout_s=30, program=failing)
    broken.prestart(sys.executable, 1)
    broken.settle()  # no error here: the check that asks for the worker is the one told
    with pytest.raises(WorkerError, match="no onnxruntime here"):
        broken.side(sys.executable, "measuring", 1)
    broken.close()
