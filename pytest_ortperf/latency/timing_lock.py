"""One timed measurement at a time on this machine, across processes.

pytest-xdist workers (and other pytest runs of the same user) share the
machine's cores; two measurements at once distort both. Timed sections take an
exclusive ``flock`` on a per-user lock file; ``--ortperf-parallel-timing``
turns this off. Where ``fcntl`` does not exist (Windows) timing is not
serialized and the summary says so.

A measurement that only informs (an unchanged check's short look) takes the lock
shared, and so does the checks' untimed work (building sessions and graphs,
accuracy runs, profiling: :meth:`TimingLock.untimed`): all of it overlaps, so
xdist workers of an unchanged suite work side by side, but never beside a
measurement that decides, which takes the lock exclusively (letting go of its own
process's untimed hold meanwhile). A turnstile file beside the lock gives a waiting
decision priority: it holds the turnstile while it waits, and every holder passes
the turnstile first.

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


def this_process(
    run: str = "", worker: str = "", argv: list[str] | None = None, *, workers: int = 1
) -> LockOwner:
    """How this process names itself in the lock file: ``run`` (a new one by default), its command
    line (``argv``, by default this process's) and its xdist worker id, if any, of ``workers``."""
    return LockOwner(
        run or uuid.uuid4().hex, command_line(sys.argv if argv is None else argv), worker, max(workers, 1)
    )


class TimingLock:
    def __init__(self, path: Path | None, owner: LockOwner | None = None) -> None:
        self.path = path if fcntl is not None else None
        self.owner = owner if owner is not None else this_process()
        self.waited_s = 0.0
        self._untimed: int | None = None  # the descriptor of this process's untimed hold, while held
        self._untimed_name = b""  # what that hold wrote into the lock file

    @property
    def mode(self) -> str:
        if self.path is None:
            return "parallel (timed sections are not serialized)"
        return f"serialized across processes (lock {self.path}; looks that only inform share it)"

    def beside(self, *, shared: bool) -> str:
        """Which other processes of this run a measurement holding the lock this way (``shared``: a
        look that only informs) may have run beside, in words; "" when none could: a serial run, or
        an exclusive hold (it waits for every other holder). Only this run's xdist workers are named:
        they start together and share the machine's cores for the whole run, so what such a look
        measures is partly theirs, not the machine's."""
        others = self.owner.workers - 1
        if others < 1 or not (shared or self.path is None):
            return ""
        if others == 1:
            return "another xdist worker of this run"
        return f"{others} other xdist workers of this run"

    @contextmanager
    def untimed(self, activity: Activity | None = None) -> Iterator[None]:
        """Hold the lock shared around untimed work (building sessions and graphs, accuracy runs,
        profiling, rebuilding references): it overlaps other untimed work and looks, in this run's
        xdist workers and in other runs, but never a measurement that decides, so a decision is
        never measured beside another process's building. Inside, :meth:`held` for a decision lets
        go of it for the measurement and takes it again after. Re-entrant. A wait for it is told to
        ``activity`` as ``waiting``."""
        if self.path is None or fcntl is None or self._untimed is not None:
            yield
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            started = time.perf_counter()
            waits: list[LockWait] = []
            self._pass_turnstile(fd, fcntl.LOCK_SH, activity, waits)
            if waits and activity is not None:
                activity.waited(merge_waits(waits))
            self.waited_s += time.perf_counter() - started
            self._untimed, self._untimed_name = fd, self._name(fd)
            try:
                yield
            finally:
                self._untimed = None
                self._let_go(fd, self._untimed_name, shared=True)
        finally:
            os.close(fd)

    @contextmanager
    def held(self, activity: Activity | None = None, *, shared: bool = False) -> Iterator[None]:
        """Hold the lock inside; the wait for it is told to ``activity`` as ``waiting``, with who
        held the lock meanwhile.

        ``shared``: a measurement that only informs (an unchanged check's short look) shares the lock
        with other such measurements, which may overlap, but never with one that decides (held
        exclusively). A decision waiting for the lock goes first: it holds the turnstile while it
        waits, and every new holder, shared or not, passes the turnstile first. Inside
        :meth:`untimed`, a look needs nothing more, and a decision lets go of the untimed hold while
        it measures."""
        untimed = self._untimed
        if self.path is None or fcntl is None or (shared and untimed is not None):
            yield
            return
        if untimed is not None:  # the decision waits for no hold of this process
            self._let_go(untimed, self._untimed_name, shared=True)
        try:
            with self._hold(activity, shared=shared):
                yield
        finally:
            if untimed is not None:  # untimed again: behind any decision that waits
                waits: list[LockWait] = []
                self._pass_turnstile(untimed, fcntl.LOCK_SH, activity, waits)
                self._untimed_name = self._name(untimed)
                if waits and activity is not None:
                    activity.waited(merge_waits(waits))

    @contextmanager
    def _hold(self, activity: Activity | None, *, shared: bool) -> Iterator[None]:
        """The lock held on a descriptor of its own (``shared`` or exclusively), through the turnstile."""
        assert self.path is not None
        assert fcntl is not None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            started = time.perf_counter()
            waits: list[LockWait] = []
            self._pass_turnstile(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX, activity, waits)
            if waits and activity is not None:
                activity.waited(merge_waits(waits))
            self.waited_s += time.perf_counter() - started
            mine = self._name(fd)
            try:
                yield
            finally:
                self._let_go(fd, mine, shared=shared)
        finally:
            os.close(fd)

    def _pass_turnstile(
        self, fd: int, operation: int, activity: Activity | None, waits: list[LockWait]
    ) -> None:
        """Take the lock on ``fd`` (``operation``) after the turnstile: an exclusive holder keeps the
        turnstile while it waits, so no new holder goes before it; a shared one only passes it."""
        assert self.path is not None
        assert fcntl is not None
        turnstile = os.open(_turnstile(self.path), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            self._take(turnstile, fcntl.LOCK_EX, activity, waits)
            try:
                if operation == fcntl.LOCK_EX:
                    self._take(fd, operation, activity, waits)
            finally:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        finally:
            os.close(turnstile)
        if operation != fcntl.LOCK_EX:
            self._take(fd, operation, activity, waits)

    def _name(self, fd: int) -> bytes:
        """This process named in the lock file while it holds the lock; what it wrote."""
        mine = self.owner.holder_text(pid=os.getpid(), since=time.time()).encode()
        _write(fd, mine)
        return mine

    def _let_go(self, fd: int, mine: bytes, *, shared: bool) -> None:
        """Clear this process's name (a shared holder only its own, never another's) and unlock."""
        assert fcntl is not None
        if not shared or _read(fd) == mine:
            _write(fd, b"")
        fcntl.flock(fd, fcntl.LOCK_UN)

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
