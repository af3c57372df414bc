"""The cross-process timing lock really serializes timed sections, and a wait names its holder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from pytest_ortperf.latency.activity import Activity, Progress
from pytest_ortperf.latency.timing_lock import TimingLock, this_process

pytest.importorskip("fcntl")

HOLDER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from pytest_ortperf.latency.timing_lock import TimingLock

    lock = TimingLock(Path(sys.argv[1]))
    Path(sys.argv[2]).write_text("ready")
    while not Path(sys.argv[3]).exists():  # both processes start their sections together
        time.sleep(0.001)
    with lock.held():
        start = time.time()
        time.sleep(0.3)
        end = time.time()
    print(json.dumps({"start": start, "end": end, "waited": lock.waited_s}))
    """
)


def test_two_processes_holding_the_lock_never_time_at_the_same_time(tmp_path: Path) -> None:
    go = tmp_path / "go"
    readies = [tmp_path / f"ready{i}" for i in range(2)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(tmp_path / "timing.lock"), str(ready), str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for ready in readies
    ]
    try:
        deadline = time.monotonic() + 30
        while not all(ready.exists() for ready in readies) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.write_text("go")
        outputs = [process.communicate(timeout=30)[0] for process in processes]
    finally:
        for process in processes:
            process.kill()
    first, second = sorted((json.loads(output) for output in outputs), key=lambda s: s["start"])
    assert first["end"] <= second["start"], f"timed sections overlapped: {first} {second}"
    assert second["waited"] >= 0.2  # it waited for the other's section


# A second process that holds the lock until told to let go: hold_lock.py RUN WORKER LOCK READY RELEASE
HOLD_LOCK = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from pytest_ortperf.latency.timing_lock import TimingLock, this_process

    run, worker, lock_path, ready, release = sys.argv[1:]
    lock = TimingLock(Path(lock_path), this_process(run, worker))
    with lock.held():
        Path(ready).write_text("held")
        deadline = time.monotonic() + 60
        while not Path(release).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    """
)
# An older holder: the same flock, but it never names itself.
RAW_HOLD = textwrap.dedent(
    """
    import fcntl, sys, time
    from pathlib import Path

    with open(sys.argv[1], "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        Path(sys.argv[2]).write_text("held")
        deadline = time.monotonic() + 60
        while not Path(sys.argv[3]).exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    """
)


class Heard:
    def __init__(self) -> None:
        self.holders: list[object] = []

    def update(self, progress: Progress) -> None:
        self.holders.append(progress.holder)

    def clear(self) -> None:
        pass


def _wait_behind(tmp_path: Path, argv: list[str], lock: TimingLock) -> tuple[Activity, Heard, int, str]:
    """Start ``argv`` (a holder), take ``lock`` behind it, let it go after half a second; the waiting
    activity, what its listener heard, the holder's pid, and the lock file's content while held."""
    ready, release = tmp_path / "ready", tmp_path / "release"
    holder = subprocess.Popen([*argv, str(lock.path), str(ready), str(release)])
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready.exists(), "the holder never took the lock"
        heard = Heard()
        activity = Activity("test_a[cpu-all]", listener=heard)
        timer = threading.Timer(0.5, release.write_text, args=("go",))
        timer.start()
        with lock.held(activity):
            content = Path(str(lock.path)).read_text()
        timer.join()
        holder.wait(timeout=30)
    finally:
        holder.kill()
    return activity, heard, holder.pid, content


def test_a_wait_names_the_process_that_held_the_lock(tmp_path: Path) -> None:
    script = tmp_path / "hold_lock.py"
    script.write_text(HOLD_LOCK)
    lock = TimingLock(tmp_path / "timing.lock", this_process("my-run", argv=["/venv/bin/pytest", "tests/"]))
    before = time.time()
    activity, heard, pid, content = _wait_behind(
        tmp_path, [sys.executable, str(script), "other-run", ""], lock
    )
    (wait,) = activity.lock_waits()
    assert wait.holder is not None
    assert (wait.holder.pid, wait.holder.this_run, wait.holder.worker) == (pid, False, "")
    assert (
        wait.holder.command
        == f"hold_lock.py other-run '' {tmp_path / 'timing.lock'} {tmp_path / 'ready'} {tmp_path / 'release'}"
    )
    assert before - 1 <= wait.holder.since <= time.time()
    assert wait.seconds >= 0.4  # it was let go after half a second
    assert activity.seconds().waiting >= wait.seconds
    assert wait.holder in heard.holders  # the progress line heard who it waited for
    assert heard.holders[-1] is None  # and no longer once the wait was over
    # While held, the file names this process; once let go, nothing.
    assert json.loads(content) == {
        "pid": os.getpid(),
        "command": "pytest tests/",
        "since": json.loads(content)["since"],
        "run": "my-run",
    }
    assert (tmp_path / "timing.lock").read_text() == ""


def test_a_wait_for_a_worker_of_the_same_run_says_so(tmp_path: Path) -> None:
    script = tmp_path / "hold_lock.py"
    script.write_text(HOLD_LOCK)
    lock = TimingLock(tmp_path / "timing.lock", this_process("my-run", "gw0"))
    activity, _, pid, _ = _wait_behind(tmp_path, [sys.executable, str(script), "my-run", "gw1"], lock)
    (wait,) = activity.lock_waits()
    assert wait.holder is not None
    assert (wait.holder.pid, wait.holder.this_run, wait.holder.worker) == (pid, True, "gw1")
    assert wait.describe().endswith("held by this run's xdist worker gw1")


def test_a_stale_holder_is_not_named_and_never_stops_the_lock(tmp_path: Path) -> None:
    lock_path = tmp_path / "timing.lock"
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    stale = this_process("old-run", argv=["pytest", "tests/"]).holder_text(
        pid=ended.pid, since=time.time() - 60
    )
    # A free lock whose file still names a holder that was killed while holding: taken at once.
    lock_path.write_text(stale)
    lock = TimingLock(lock_path)
    activity = Activity()
    with lock.held(activity):
        assert json.loads(lock_path.read_text())["pid"] == os.getpid()
    assert activity.lock_waits() == ()
    assert activity.seconds().waiting < 5
    # A holder that names no one (an older pytest-ortperf), behind the stale name of an ended one.
    lock_path.write_text(stale)
    activity, _, _, _ = _wait_behind(tmp_path, [sys.executable, "-c", RAW_HOLD], TimingLock(lock_path))
    (wait,) = activity.lock_waits()
    assert wait.holder is None
    assert wait.describe().startswith("waiting ")
    assert "held by a process the lock file does not name" in wait.describe()
    # An unreadable file (not text, not ours) is no holder either, and is replaced while held.
    lock_path.write_bytes(b"\xff\xfe\x00garbage")
    with TimingLock(lock_path).held():
        assert json.loads(lock_path.read_text())["pid"] == os.getpid()


def test_an_empty_reading_after_a_named_holder_is_that_holder_letting_go() -> None:
    """The holder clears the lock file just before it unlocks: a look in between reads nothing, and
    that last stretch is still the named holder's, not a second, unnamed one."""
    from pytest_ortperf.latency.lock_holder import parse_holder
    from pytest_ortperf.latency.timing_lock import _Watch

    named = this_process("other-run", argv=["/venv/bin/pytest", "tests/"]).holder_text(pid=4321, since=1.0)
    readings = iter([named, ""])
    ticks = iter([0.5, 1.0, 2.0])
    watch = _Watch(
        lambda: parse_holder(next(readings), run="my-run", alive=lambda pid: True),
        None,
        0.0,
        clock=lambda: next(ticks),
    )
    watch.look()
    watch.look()
    (wait,) = watch.finish()
    assert wait.holder is not None
    assert wait.holder.pid == 4321
    assert wait.seconds == 2.0


class _Holder(threading.Thread):
    """Holds ``lock`` (shared or not) from its own file descriptors until told to let go."""

    def __init__(self, path: Path, *, shared: bool) -> None:
        super().__init__(daemon=True)
        self.lock, self.shared = TimingLock(path, this_process("run")), shared
        self.inside, self.release = threading.Event(), threading.Event()

    def run(self) -> None:
        with self.lock.held(shared=self.shared):
            self.inside.set()
            self.release.wait(30)


def _locked(path: Path) -> bool:
    """Whether someone holds ``path`` (shared or not): an exclusive flock of it would block."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _turnstile_taken(path: Path) -> bool:
    return _locked(path.with_name(path.name + ".turnstile"))


def test_measurements_that_only_inform_share_the_lock_and_one_that_decides_waits_and_goes_first(
    tmp_path: Path,
) -> None:
    path = tmp_path / "timing.lock"
    first, second = _Holder(path, shared=True), _Holder(path, shared=True)
    first.start()
    assert first.inside.wait(10)
    second.start()
    assert second.inside.wait(10), "two informational looks overlap"
    deciding = _Holder(path, shared=False)
    deciding.start()
    deadline = time.monotonic() + 10
    while not _turnstile_taken(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not deciding.inside.is_set(), "a decision never overlaps a look"
    late = _Holder(path, shared=True)  # comes while the decision waits: it waits behind it
    late.start()
    first.release.set()
    second.release.set()
    assert deciding.inside.wait(10)
    assert not late.inside.wait(0.2), "a decision waiting for the lock goes before a later look"
    deciding.release.set()
    assert late.inside.wait(10)
    late.release.set()
    for holder in (first, second, deciding, late):
        holder.join(10)
    assert path.read_text() == ""  # the last holder to leave cleared its name


class _Untimed(threading.Thread):
    """Untimed work of another process: holds ``lock.untimed()`` until told to let go."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.lock = TimingLock(path, this_process("run"))
        self.inside, self.release = threading.Event(), threading.Event()

    def run(self) -> None:
        with self.lock.untimed():
            self.inside.set()
            self.release.wait(30)


def _exclusive_free(path: Path) -> bool:
    return not _locked(path)


def test_untimed_work_overlaps_looks_and_other_untimed_work_but_never_a_decision(tmp_path: Path) -> None:
    path = tmp_path / "timing.lock"
    building = _Untimed(path)
    building.start()
    assert building.inside.wait(10)
    look = _Holder(path, shared=True)
    look.start()
    assert look.inside.wait(10), "a look overlaps another process's untimed work"
    other = _Untimed(path)
    other.start()
    assert other.inside.wait(10), "untimed work overlaps untimed work"
    deciding = _Holder(path, shared=False)
    deciding.start()
    assert not deciding.inside.wait(0.3), "a decision never measures beside untimed work"
    for holder in (building, look, other):
        holder.release.set()
    assert deciding.inside.wait(10)
    deciding.release.set()
    for holder in (building, look, other, deciding):
        holder.join(10)


def test_a_decision_inside_untimed_work_lets_go_of_it_and_takes_it_again(tmp_path: Path) -> None:
    path = tmp_path / "timing.lock"
    lock = TimingLock(path, this_process("run"))
    with lock.untimed():
        assert not _exclusive_free(path), "untimed work holds the lock (shared)"
        with lock.untimed(), lock.held(shared=True):  # nothing more to take: no wait, no deadlock
            assert not _exclusive_free(path)
        with lock.held():  # its own untimed hold never blocks its own decision
            assert not _exclusive_free(path)
        assert not _exclusive_free(path), "untimed again after the decision"
    assert _exclusive_free(path)


def test_a_shared_look_of_an_xdist_worker_runs_beside_the_others_an_exclusive_one_never(
    tmp_path: Path,
) -> None:
    path = tmp_path / "timing.lock"
    serial = TimingLock(path, this_process("run"))
    two = TimingLock(path, this_process("run", "gw0", workers=2))
    four = TimingLock(path, this_process("run", "gw3", workers=4))
    assert (serial.beside(shared=True), serial.beside(shared=False)) == ("", "")
    assert (two.beside(shared=True), two.beside(shared=False)) == ("another xdist worker of this run", "")
    assert four.beside(shared=True) == "3 other xdist workers of this run"
    # --ortperf-parallel-timing: nothing is serialized, so even a decision may run beside the others.
    assert TimingLock(None, this_process("run", "gw1", workers=2)).beside(shared=False) != ""
    # The count is never written into the lock file: only who holds it.
    assert "workers" not in json.loads(two.owner.holder_text(pid=1, since=0.0))
