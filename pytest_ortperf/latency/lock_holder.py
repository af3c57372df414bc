"""Who holds the timing lock: what a process writes into the lock file while it holds it, and what
a process waiting for the lock reads from it.

The lock is per user, for all of that user's runs, so a check can wait for a run its user does not
think of (another terminal, an editor's test runner). The holder writes one line of JSON into the
lock file when it takes the lock and empties the file before it lets go; a waiter reads it. What is
read is only ever information: an empty, unreadable or foreign file, or a holder that has ended
(it was killed while holding; the kernel let go of its lock), reads as an unnamed holder and never
stops a check.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMMAND_SHOWN = 60  # characters of a holder's command line in a message
_COMMAND_KEPT = 500  # characters of it kept in the lock file


@dataclass(frozen=True)
class LockOwner:
    """This process, as it names itself in the lock file: its run (an xdist run's workers share
    one), its command line and, in an xdist worker, the worker's id."""

    run: str
    command: str
    worker: str = ""
    workers: int = 1  # the xdist workers of its run (1: a serial run); never written into the file

    def holder_text(self, *, pid: int, since: float) -> str:
        """The lock file's content while this process holds the lock since ``since`` (epoch s)."""
        data = {
            "pid": pid,
            "command": self.command[:_COMMAND_KEPT],
            "since": round(since, 3),
            "run": self.run,
        }
        if self.worker:
            data["worker"] = self.worker
        return json.dumps(data) + "\n"


@dataclass(frozen=True)
class LockHolder:
    """The process that held the lock while a check waited, as the waiter read it.

    ``this_run``: the holder is a process of the waiter's own run (another xdist worker)."""

    pid: int
    command: str
    since: float  # when it took the lock, seconds since the epoch
    worker: str = ""
    this_run: bool = False

    def describe(self) -> str:
        """``held by pid 1234 (pytest tests/ -k mlp) since 12:03:05``."""
        if self.this_run:
            return f"held by this run's xdist worker {self.worker or f'pid {self.pid}'}"
        command = shorten(self.command, COMMAND_SHOWN)
        what = ", ".join(filter(None, [command, f"xdist worker {self.worker}" if self.worker else ""]))
        return f"held by pid {self.pid}{f' ({what})' if what else ''} since {clock_text(self.since)}"

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"pid": self.pid, "command": self.command, "since": round(self.since, 3)}
        if self.worker:
            data["worker"] = self.worker
        if self.this_run:
            data["this_run"] = True
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LockHolder | None:
        """From :meth:`as_dict`'s form (a JSON report, the lock file); None when it is not one."""
        pid, command, since = data.get("pid"), data.get("command", ""), data.get("since")
        worker = data.get("worker", "")
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            return None
        if isinstance(since, bool) or not isinstance(since, (int, float)) or not 0 <= since < 1e11:
            return None
        if not isinstance(command, str) or not isinstance(worker, str):
            return None
        return cls(pid, command, float(since), worker, data.get("this_run") is True)


@dataclass(frozen=True)
class LockWait:
    """Time a check waited for the lock while ``holder`` held it (None: a holder the lock file did
    not name)."""

    seconds: float
    holder: LockHolder | None = None

    def describe(self) -> str:
        """``waiting 22.8 s for the timing lock, held by pid 1234 (pytest tests/) since 12:03:05``."""
        return f"waiting {self.seconds:.1f} s for the timing lock, {describe_holder(self.holder)}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 4),
            "holder": None if self.holder is None else self.holder.as_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LockWait | None:
        seconds, holder = data.get("seconds"), data.get("holder")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0:
            return None
        return cls(float(seconds), LockHolder.from_dict(holder) if isinstance(holder, Mapping) else None)


def describe_holder(holder: LockHolder | None) -> str:
    if holder is None:
        return (
            "held by a process the lock file does not name (an older pytest-ortperf, or one that has ended)"
        )
    return holder.describe()


def read_holder(path: Path, *, run: str) -> LockHolder | None:
    """The holder named in the lock file at ``path``, seen from a process of run ``run``; None when
    the file names none (empty, unreadable, not ours) or names a process that no longer exists."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return parse_holder(text, run=run, alive=process_exists)


def parse_holder(text: str, *, run: str, alive: Callable[[int], bool] | None = None) -> LockHolder | None:
    """:func:`read_holder` on the file's text; ``alive(pid)`` says whether a process still exists."""
    try:
        data = json.loads(text.strip().splitlines()[0]) if text.strip() else None
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    holder = LockHolder.from_dict({key: value for key, value in data.items() if key != "this_run"})
    if holder is None or (alive is not None and not alive(holder.pid)):
        return None
    same = isinstance(data.get("run"), str) and data["run"] == run
    return LockHolder(holder.pid, holder.command, holder.since, holder.worker, this_run=same)


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # it exists (another user's), or this platform cannot tell: keep its name
    return True


def merge_waits(waits: Sequence[LockWait]) -> list[LockWait]:
    """Waits summed per holder (a process, however often it took the lock; this run's workers
    each apart; unnamed holders together), longest first; a holder's ``since`` is the earliest."""
    merged: dict[tuple[int, bool], LockWait] = {}
    for wait in waits:
        key = (0, False) if wait.holder is None else (wait.holder.pid, wait.holder.this_run)
        before = merged.get(key)
        if before is None:
            merged[key] = wait
            continue
        holders = [h for h in (before.holder, wait.holder) if h is not None]
        earliest = min(holders, key=lambda h: h.since) if holders else None
        merged[key] = LockWait(before.seconds + wait.seconds, earliest)
    return sorted(merged.values(), key=lambda w: -w.seconds)


def command_line(argv: Sequence[str]) -> str:
    """A process's command line as a person typed it: ``pytest tests/ -k mlp``, ``python -m pytest``."""
    if not argv:
        return ""
    first = Path(argv[0])
    if first.name == "__main__.py":
        program = f"python -m {first.parent.name}"
    elif argv[0] == "-c":
        program = "python -c"
    else:
        program = first.name
    return " ".join([program, *(shlex.quote(arg) for arg in argv[1:])])


def shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def clock_text(since: float, *, now: float | None = None) -> str:
    """``12:03:05`` (local time) when ``since`` is today, else ``2024-05-01 12:03:05``."""
    moment = time.localtime(since)
    today = time.localtime(time.time() if now is None else now)
    if moment[:3] == today[:3]:
        return time.strftime("%H:%M:%S", moment)
    return time.strftime("%Y-%m-%d %H:%M:%S", moment)
