"""One timed measurement at a time on this machine, across processes.

pytest-xdist workers (and other pytest runs of the same user) share the
machine's cores; two measurements at once distort both. Timed sections take an
exclusive ``flock`` on a per-user lock file; ``--ortperf-parallel-timing``
turns this off. Where ``fcntl`` does not exist (Windows) timing is not
serialized and the summary says so.

A measurement that only informs (an unchanged check's short look) takes the lock
shared: such looks overlap one another, so xdist workers of an unchanged suite
look side by side, but never a measurement that decides, which takes it
exclusively. A turnstile file beside the lock gives a waiting decision priority:
it holds the turnstile while it waits, and every holder passes the turnstile first.

The holder names itself in the lock file (:mod:`latency.lock_holder`); a check
that has to wait reads who holds it, a few times a second from a helper thread
while it blocks, and tells its activity (the progress line) and keeps the waits
per holder for the summary. Taking the lock is the same blocking ``flock`` as
ever: watching never delays it.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from pytest_ortperf.latency.activity import WAITING, Activity
from pytest_ortperf.latency.lock_holder import (
    LockHolder,
    LockOwner,
    LockWait,
    command_line,
    merge_waits,
    read_holder,
)

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

WATCH_EVERY_S = 0.25  # how often a waiting check reads who holds the lock


def default_lock_path() -> Path:
    user = os.getuid() if hasattr(os, "getuid") else os.getlogin()
    return Path(tempfile.gettempdir()) / f"pytest-ortperf-timing-{user}.lock"


def this_process(run: str = "", worker: str = "", argv: list[str] | None = None) -> LockOwner:
    """How this process names itself in the lock file: ``run`` (a new one by default), its command
    line (``argv``, by default this process's) and its xdist worker id, if any."""
    return LockOwner(run or uuid.uuid4().hex, command_line(sys.argv if argv is None else argv), worker)


class TimingLock:
    def __init__(self, path: Path | None, owner: LockOwner | None = None) -> None:
        self.path = path if fcntl is not None else None
        self.owner = owner if owner is not None else this_process()
        self.waited_s = 0.0

    @property
    def mode(self) -> str:
        if self.path is None:
            return "parallel (timed sections are not serialized)"
        return f"serialized across processes (lock {self.path}; looks that only inform share it)"

    @contextmanager
    def held(self, activity: Activity | None = None, *, shared: bool = False) -> Iterator[None]:
        """Hold the lock inside; the wait for it is told to ``activity`` as ``waiting``, with who
        held the lock meanwhile.

        ``shared``: a measurement that only informs (an unchanged check's short look) shares the lock
        with other such measurements, which may overlap, but never with one that decides (held
        exclusively). A decision waiting for the lock goes first: it holds the turnstile while it
        waits, and every new holder, shared or not, passes the turnstile first."""
        if self.path is None or fcntl is None:
            yield
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        turnstile = os.open(_turnstile(self.path), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            started = time.perf_counter()
            waits: list[LockWait] = []
            self._take(turnstile, fcntl.LOCK_EX, activity, waits)
            try:
                if not shared:  # held through the wait for the lock: no new holder goes before
                    self._take(fd, fcntl.LOCK_EX, activity, waits)
            finally:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
            if shared:
                self._take(fd, fcntl.LOCK_SH, activity, waits)
            if waits and activity is not None:
                activity.waited(merge_waits(waits))
            self.waited_s += time.perf_counter() - started
            mine = self.owner.holder_text(pid=os.getpid(), since=time.time()).encode()
            _write(fd, mine)
            try:
                yield
            finally:
                if not shared or _read(fd) == mine:  # a shared holder never clears another's name
                    _write(fd, b"")
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(turnstile)
            os.close(fd)

    def _take(self, fd: int, operation: int, activity: Activity | None, waits: list[LockWait]) -> None:
        """``flock(fd, operation)`` at once or, when it would block, after a watched wait (told to
        ``activity`` as ``waiting``; its waits per holder added to ``waits``)."""
        assert fcntl is not None
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
        except BlockingIOError:
            with activity.phase(WAITING) if activity is not None else nullcontext():
                # timed inside the phase, so the waits never add up to more than the phase
                waits += self._wait(fd, operation, activity, time.perf_counter())

    def _wait(self, fd: int, operation: int, activity: Activity | None, started: float) -> list[LockWait]:
        """Block until ``flock(fd, operation)`` is ours, watching who holds the lock meanwhile; the
        waits per holder."""
        path, run = self.path, self.owner.run
        assert path is not None
        assert fcntl is not None
        watch = _Watch(lambda: read_holder(path, run=run), activity, started)
        watch.look()
        stop = threading.Event()
        thread = threading.Thread(
            target=watch.run, args=(stop,), name="ortperf-timing-lock-watch", daemon=True
        )
        thread.start()
        try:
            fcntl.flock(fd, operation)
        finally:
            stop.set()
            thread.join()
        return watch.finish()


def _turnstile(path: Path) -> Path:
    """The file every holder passes first (``path`` with ``.turnstile`` added)."""
    return path.with_name(path.name + ".turnstile")


class _Watch:
    """Who held the lock while a check waited: each stretch between two readings is charged to the
    holder the first of them read."""

    def __init__(
        self,
        read: Callable[[], LockHolder | None],
        activity: Activity | None,
        started: float,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._read = read
        self._activity = activity
        self._clock = clock
        self._since = started
        self._holder: LockHolder | None = None
        self._waits: list[LockWait] = []
        self._looked = False

    def look(self) -> None:
        holder = self._read()
        if holder is None and self._holder is not None:
            # A holder clears the file just before it lets go: an empty reading after a named one,
            # while this process still waits, is that holder finishing, not another one.
            holder = self._holder
        now = self._clock()
        # the first reading names the holder of the stretch before it too
        self._waits.append(LockWait(now - self._since, holder if not self._looked else self._holder))
        self._holder, self._since, self._looked = holder, now, True
        if self._activity is not None:
            self._activity.waiting_for(holder)

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(WATCH_EVERY_S):
            self.look()

    def finish(self) -> list[LockWait]:
        self._waits.append(LockWait(self._clock() - self._since, self._holder))
        return merge_waits(self._waits)


def _read(fd: int) -> bytes:
    """The lock file's content, b"" when it cannot be read."""
    try:
        return os.pread(fd, 4096, 0)
    except OSError:
        return b""


def _write(fd: int, data: bytes) -> None:
    """The lock file's content: who holds the lock, or nothing. Only information: a failure to
    write it (a full disk) never costs the measurement."""
    try:
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
    except OSError:
        pass
