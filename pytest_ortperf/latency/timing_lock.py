"""One timed measurement at a time on this machine, across processes.

pytest-xdist workers (and other pytest runs of the same user) share the
machine's cores; two measurements at once distort both. Timed sections take an
exclusive ``flock`` on a per-user lock file; ``--ortperf-parallel-timing``
turns this off. Where ``fcntl`` does not exist (Windows) timing is not
serialized and the summary says so.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from pytest_ortperf.latency.activity import WAITING, Activity

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def default_lock_path() -> Path:
    user = os.getuid() if hasattr(os, "getuid") else os.getlogin()
    return Path(tempfile.gettempdir()) / f"pytest-ortperf-timing-{user}.lock"


class TimingLock:
    def __init__(self, path: Path | None) -> None:
        self.path = path if fcntl is not None else None
        self.waited_s = 0.0

    @property
    def mode(self) -> str:
        if self.path is None:
            return "parallel (timed sections are not serialized)"
        return f"serialized across processes (lock {self.path})"

    @contextmanager
    def held(self, activity: Activity | None = None) -> Iterator[None]:
        """Hold the lock inside; the wait for it is told to ``activity`` as ``waiting``."""
        if self.path is None or fcntl is None:
            yield
            return
        import time

        with self.path.open("a") as handle:
            started = time.perf_counter()
            with activity.phase(WAITING) if activity is not None else nullcontext():
                fcntl.flock(handle, fcntl.LOCK_EX)
            self.waited_s += time.perf_counter() - started
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
