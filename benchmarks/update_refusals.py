"""Does `ortperf update` write every entry on an ordinary noisy machine? Before and after.

Question: `ortperf update` of the example suite into an empty baseline directory, on this shared
2-core machine: how many latency entries does each revision refuse, how many does it write, how
long does the update take? The old revision refused figures whose round medians varied beyond
`--ortperf-max-cv` (10%); the new one measures until the figures settle (at most four budgets) and
writes them with their spread, listing the noisy ones.

Method: for each repetition, the example suite's update runs under REVISION (checked out in a
temporary git worktree) and under the working tree, alternated, each into its own empty baseline
directory; the summary line of each run is kept.

    python -m benchmarks.update_refusals --before afa492e --repeat 3 > benchmarks/results/update_refusals.md
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"^ortperf update: .*$", re.MULTILINE)


def update(root: Path, out: Path) -> tuple[str, float]:
    """One `ortperf update` of `root`'s example suite into `out`; its summary line and seconds."""
    command = [
        sys.executable, "-m", "pytest", "examples", "-q", "-p", "no:cacheprovider", "--ortperf-update",
        f"--ortperf-baseline-dir={out / 'baselines'}", "-o", f"ortperf_profile_dir={out / 'profiles'}",
    ]  # fmt: skip
    started = time.monotonic()
    env = dict(os.environ, PYTHONPATH=str(root))
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    found = SUMMARY.findall(done.stdout)
    return (found[-1] if found else f"no summary (exit {done.returncode})"), seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the revision to compare with")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temp:
        before = Path(temp) / "before"
        add = ["git", "worktree", "add", "-q", "--detach", str(before), args.before]
        subprocess.run(add, cwd=REPO, check=True)
        try:
            print("| run | revision | summary | seconds | load |\n|---|---|---|---|---|")
            for index in range(1, args.repeat + 1):
                for label, root in ((args.before, before), ("working tree", REPO)):
                    line, seconds = update(root, Path(temp) / f"{label[:8]}-{index}")
                    load = os.getloadavg()[0]
                    print(f"| {index} | {label} | `{line}` | {seconds:.0f} | {load:.2f} |", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=REPO, check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
