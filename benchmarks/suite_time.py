"""The whole example suite's wall time, before and after a change, measured side by side.

Question: how long does the main job (README command 1, ``pytest examples`` against the committed
baselines) take with this tree, against the same job at an earlier commit, on the same machine in
the same minutes? And, for this tree, where did the gate's time go (``gate time`` in the summary)?

Method: the earlier commit is checked out into a temporary git worktree; both trees run
``python -m pytest examples -p no:cacheprovider`` with this environment's interpreter and the tree's
own package first on ``PYTHONPATH`` (so each run imports its own pytest-ortperf), alternating
before/after in ABBA order, ``--runs`` times each. Every run is a fresh pytest process: start-up,
collection, session builds and every check included.

Run from the repository root, on a machine doing nothing else::

    python -m benchmarks.suite_time --before b22db2f --runs 4 --out benchmarks/results/suite_time.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.conditions import code_state, loadavg  # noqa: E402


def run_suite(tree: Path, extra: Sequence[str] = ()) -> tuple[float, str, str]:
    """(wall seconds, pytest's last line, the gate time line or "") of one run of the example suite."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("CI", None)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "examples", "-p", "no:cacheprovider", "-q", *extra],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0:
        raise RuntimeError(f"pytest examples in {tree} exited {done.returncode}:\n{done.stdout[-3000:]}")
    gate = next((line for line in lines if line.startswith("gate time:")), "")
    return wall, lines[-1] if lines else "", gate


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", required=True, help="the earlier commit")
    parser.add_argument("--runs", type=int, default=4, help="runs of each tree")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--pytest-args",
        default="",
        help="more pytest arguments for both trees, e.g. '--ortperf-session-options=inter_op_threads=2' "
        "(a changed setting: every check measured side by side with the recorded settings)",
    )
    args = parser.parse_args(argv)
    extra = args.pytest_args.split()
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    load = loadavg()
    walls: dict[str, list[float]] = {"before": [], "after": []}
    gates: list[str] = []
    last_lines: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="ortperf-suite-") as tmp:
        before = Path(tmp) / "before"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(before), args.before], cwd=REPO, check=True
        )
        try:
            order = [("before", before), ("after", REPO), ("after", REPO), ("before", before)]
            for index in range(args.runs):
                for name, tree in order if index % 2 == 0 else order[::-1]:
                    if len(walls[name]) >= args.runs:
                        continue
                    wall, last, gate = run_suite(tree, extra)
                    walls[name].append(wall)
                    last_lines[name] = last
                    if name == "after" and gate:
                        gates.append(gate)
                    print(f"{name}: {wall:.1f} s  {last}  {gate}", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=REPO, check=False)
    lines = [
        "# The example suite's wall time, before and after",
        "",
        f"- started {started_at}; load average at start {load}",
        f"- code: after = {code_state()}; before = {args.before}",
        f"- python {sys.version.split()[0]}; {args.runs} runs of each tree, ABBA order; "
        f"`{' '.join(['pytest examples -q', *extra])}`",
        "",
        "| tree | runs (s) | median (s) | pytest |",
        "| --- | --- | --- | --- |",
    ]
    for name in ("before", "after"):
        values = walls[name]
        lines.append(
            f"| {name} | {', '.join(f'{v:.1f}' for v in values)} | {statistics.median(values):.1f} | "
            f"{last_lines.get(name, '')} |"
        )
    ratio = statistics.median(walls["after"]) / statistics.median(walls["before"])
    lines += ["", f"after / before (medians): {ratio:.2f}", ""]
    if gates:
        lines += ["Gate time of the after runs (terminal summary):", ""]
        lines += [f"- {re.sub(r'; slowest .*', '', gate)}" for gate in gates]
    text = "\n".join(lines) + "\n"
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
