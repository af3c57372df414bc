"""What the plugin costs a pytest run that never uses it.

pytest imports the ``pytest_ortperf.plugin`` entry point in every run of an
environment where pytest-ortperf is installed, and calls its
``pytest_configure``. Two figures, for this checkout and, with ``--rev REV``,
for a git revision checked out beside it (``git worktree``), alternated run by
run so that a machine state hits both alike:

1. ``python -X importtime -c "import pytest_ortperf.plugin"``: the cumulative
   import time of the entry point, and of pytest itself within it;
2. the wall time of ``python -m pytest --collect-only`` on a folder with one
   plain test, with the plugin and with ``-p no:ortperf``: what a suite that
   never uses the plugin pays, configure included.

Run from the repository root:
``python -m benchmarks.import_cost --rev 27d2ee0 > benchmarks/results/import_cost.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.conditions import code_state, loadavg
from pytest_ortperf.store.machine import cpu_model, usable_cores

REPO = Path(__file__).resolve().parent.parent


def import_times(source: Path, folder: Path) -> tuple[float, float]:
    """(entry point, pytest) cumulative import time in ms, with ``source`` first on the path (run in
    ``folder``: ``python -c`` puts its working directory before PYTHONPATH)."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import pytest_ortperf.plugin"],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        check=True,
    ).stderr
    found: dict[str, float] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = (part.strip() for part in line.split("|"))
        if name in ("pytest_ortperf.plugin", "pytest") and cumulative.isdigit():
            found[name] = int(cumulative) / 1000
    return found["pytest_ortperf.plugin"], found["pytest"]


def collect_time(source: Path, folder: Path, *, plugin: bool) -> float:
    """Wall seconds of ``pytest --collect-only`` on ``folder``."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    args = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    args += [] if plugin else ["-p", "no:ortperf"]
    start = time.perf_counter()
    subprocess.run(args, cwd=folder, env=env, capture_output=True, check=True)
    return time.perf_counter() - start


def worktree(rev: str, into: Path) -> Path:
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(into), rev], cwd=REPO, check=True, capture_output=True
    )
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="also measure this git revision, alternated with the checkout")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"this checkout": REPO}
        if args.rev:
            sides[f"revision {args.rev}"] = worktree(args.rev, Path(tmp) / "before")
        folder = Path(tmp) / "suite"
        folder.mkdir()
        (folder / "test_plain.py").write_text("def test_plain():\n    assert True\n")
        imports: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        collects: dict[tuple[str, bool], list[float]] = {(n, p): [] for n in sides for p in (True, False)}
        try:
            for _ in range(args.repeat):
                for name, source in sides.items():
                    imports[name].append(import_times(source, folder))
                    for plugin in (True, False):
                        collects[name, plugin].append(collect_time(source, folder, plugin=plugin))
        finally:
            if args.rev:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(sides[f"revision {args.rev}"])], cwd=REPO
                )
    print(f"# Import and start-up cost of the plugin ({dt.date.today().isoformat()})\n")
    python = sys.version.split()[0]
    print(f"Machine: {cpu_model()}, {usable_cores()} usable cores; load {loadavg()}; Python {python}.")
    print(f"Code: {code_state()}. {args.repeat} alternated repeats, medians (min..max).\n")
    print("| code | `import pytest_ortperf.plugin` (ms) | of which pytest (ms) | plugin's own (ms) |")
    print("| --- | --- | --- | --- |")
    for name, samples in imports.items():
        total = [s[0] for s in samples]
        own = [s[0] - s[1] for s in samples]
        pytest_ms = [s[1] for s in samples]
        print(f"| {name} | {_cell(total)} | {_cell(pytest_ms)} | {_cell(own)} |")
    print("\n| code | `pytest --collect-only`, one plain test (s) | with `-p no:ortperf` (s) | plugin (s) |")
    print("| --- | --- | --- | --- |")
    for name in sides:
        with_plugin, without = collects[name, True], collects[name, False]
        paired = [a - b for a, b in zip(with_plugin, without, strict=True)]
        print(f"| {name} | {_cell(with_plugin, 3)} | {_cell(without, 3)} | {_cell(paired, 3)} |")


def _cell(values: list[float], digits: int = 1) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}..{max(values):.{digits}f})"


if __name__ == "__main__":
    main()
