"""The conditions a benchmark ran under: machine load, other test suites, the code measured.

Shared by the benchmarks that write a report, so every report states them the same way.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

GATE_MODULES = ("measure", "stats", "compare", "checks", "baselines", "ab", "canary")


def git(where: Path, *argv: str) -> None:
    """Run git in ``where`` as a benchmark's throwaway repository needs it (a fixed author, output kept)."""
    subprocess.run(
        ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", *argv],
        cwd=where,
        check=True,
        capture_output=True,
    )


def cpu_fields() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo ({} without it)."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            name = name.strip()
            if name and name not in fields:
                fields[name] = value.strip()
            if not line.strip() and fields:
                break  # the first processor is enough
    except OSError:
        pass
    return fields


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def other_pytest_processes() -> int:
    """Running pytest processes that are not ours (other sessions' test suites)."""
    done = subprocess.run(["ps", "-eo", "pid,ppid,args"], capture_output=True, text=True, check=False)
    count = 0
    for line in done.stdout.splitlines()[1:]:
        parts = line.split(None, 2)
        if len(parts) == 3 and "pytest" in parts[2] and int(parts[1]) != os.getpid():
            count += 1
    return count


def code_state() -> str:
    """The commit measured, and whether the gate's modules differ from it in the working tree."""
    files = [f"pytest_ortperf/{name}.py" for name in GATE_MODULES]
    where = Path(__file__).resolve().parent.parent

    def git(*argv: str) -> str:
        done = subprocess.run(["git", *argv], cwd=where, capture_output=True, text=True, check=False)
        return done.stdout.rstrip()

    dirty = git("status", "--porcelain", "--", *files).splitlines()
    changed = ", ".join(line[3:] for line in dirty) or "none"
    commit = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    return f"commit {commit}; uncommitted changes to gate modules: {changed}"


class Sampler(threading.Thread):
    """Every ``period_s``: 1-minute load average and other pytest processes (someone else's tests)."""

    def __init__(self, period_s: float = 15.0) -> None:
        super().__init__(daemon=True)
        self.period_s = period_s
        self.samples: list[tuple[float, int]] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.period_s):
            load = float(loadavg().split()[0]) if loadavg() != "n/a" else math.nan
            self.samples.append((load, other_pytest_processes()))

    def stop(self) -> str:
        self._stop_event.set()
        if not self.samples:
            return "no samples"
        loads = [load for load, _ in self.samples]
        busy = sum(others > 0 for _, others in self.samples)
        return (
            f"{len(self.samples)} samples every {self.period_s:g} s: 1-min load median "
            f"{statistics.median(loads):.2f}, max {max(loads):.2f}; other pytest processes running in "
            f"{busy}/{len(self.samples)} samples"
        )


def run_pytest(
    tree: Path, where: Path, extra: Sequence[str], prefix: Sequence[str] = (), *, compiled: bool = False
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """One pytest process in ``where`` with the plugin of the checkout ``tree`` (first on PYTHONPATH),
    outside CI's settings: its wall-clock seconds and what it printed (``prefix``: interpreter options
    before ``-m pytest``, e.g. ``-m cProfile -o FILE``). Exit 0 or 1 (tests failed) is a result;
    anything else stops the campaign with what pytest said. ``compiled``: Python may keep compiled
    modules (``__pycache__``), as it does for an installed package, even where this machine's
    environment sets ``PYTHONDONTWRITEBYTECODE`` (then every process compiles the plugin again)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("CI", None)
    if compiled:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [
        sys.executable, *prefix, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q", *extra,
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)} in {where} exited {done.returncode}:\n{done.stdout[-3000:]}")
    return wall, done
