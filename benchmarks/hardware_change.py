"""A runner class whose CPU generation changed: does any check call it a regression or an improvement?

Question: the example suite's baselines are recorded under one runner class name on one CPU
generation, and the next run of the same class lands on another (CI runner classes mix them).
Target: no `regression` and no `improved` verdict; every latency check counts as missing for this
hardware and says what differs. Then, recorded on this hardware too, the class holds both entries
and every check takes the `unchanged` path.

Method: `pytest examples` in subprocesses with a temporary baseline directory and
`ORTPERF_MACHINE=bench-class`: (1) recorded while the run believes it is on the CPU of a fake
`/proc/cpuinfo` (`benchmarks/fake_cpuinfo.py`, default
`tests/unit/data/cpuinfo/zen4_avx512.txt`, AVX-512); (2) a plain run on the real CPU; (3)
`--ortperf-update=missing` on the real CPU; (4) a plain run again. Verdicts come from
`--ortperf-report`.

    python -m benchmarks.hardware_change > benchmarks/results/hardware_change.md
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BAD = ("regression", "improved")


def run(
    label: str, base: Path, report: Path, extra: Sequence[str], cpuinfo: Path | None
) -> tuple[dict[str, int], list[dict], float]:
    env = dict(os.environ, ORTPERF_MACHINE="bench-class")
    env.pop("ORTPERF_BENCH_CPUINFO", None)
    if cpuinfo is not None:
        env["ORTPERF_BENCH_CPUINFO"] = str(cpuinfo)
    command = [
        sys.executable, "-m", "pytest", "examples", "-q",
        "-p", "no:cacheprovider", "-p", "benchmarks.fake_cpuinfo",
        f"--ortperf-baseline-dir={base}", f"--ortperf-report={report}", "--ortperf-missing=pass", *extra,
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(
            f"{label}: pytest exited {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    checks = json.loads(report.read_text())["checks"]
    latency = [c for c in checks if c["kind"] == "latency"]
    return collections.Counter(c["verdict"] for c in latency), latency, seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cpuinfo", type=Path, default=REPO / "tests/unit/data/cpuinfo/zen4_avx512.txt")
    args = parser.parse_args(argv)
    from pytest_ortperf.ort.runtime import runtime_info
    from pytest_ortperf.store.hardware import detect_hardware
    from pytest_ortperf.store.machine import detect_machine, usable_cores

    real = detect_machine()
    fake = detect_hardware(usable_cores(), cpuinfo=args.cpuinfo, arch=real.arch)
    lines = [
        "# A runner class whose CPU generation changed",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- recorded as: {fake.describe()} (`{args.cpuinfo.relative_to(REPO)}`, slug `{fake.slug}`)",
        f"- running on: {real.hardware.describe()} ({real.cpu}, slug `{real.hardware.slug}`)",
        f"- {runtime_info().describe()}; `pytest examples` with `ORTPERF_MACHINE=bench-class`",
        "",
        "| step | CPU the run sees | latency verdicts | paths | seconds |",
        "| --- | --- | --- | --- | --- |",
    ]
    failures: list[str] = []
    example = ""
    with tempfile.TemporaryDirectory(prefix="ortperf-hw-") as tmp:
        base, report = Path(tmp) / "baselines", Path(tmp) / "report.json"
        steps = [
            ("1. record", ["--ortperf-update"], args.cpuinfo),
            ("2. plain run", [], None),
            ("3. --ortperf-update=missing", ["--ortperf-update=missing"], None),
            ("4. plain run", [], None),
        ]
        for label, extra, cpuinfo in steps:
            verdicts, latency, seconds = run(label, base, report, extra, cpuinfo)
            paths = ", ".join(
                f"{p} {n}" for p, n in sorted(collections.Counter(c["path"] for c in latency).items())
            )
            seen = fake.describe() if cpuinfo is not None else real.hardware.describe()
            shown = ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items()))
            lines.append(f"| {label} | {seen} | {shown} | {paths} | {seconds:.1f} |")
            if label == "2. plain run":
                failures += [f"{c['test']}: {c['verdict']}" for c in latency if c["verdict"] in BAD]
                example = next((c.get("message", "") for c in latency if c.get("message")), "")
        stored = json.loads(next(base.glob("*.json")).read_text())["entries"]
        keys = sorted({machine for entry in stored.values() for machine in entry})
    verdict = "target met" if not failures else "; ".join(failures)
    lines += [
        "",
        f"Entries of each check after step 3: {', '.join(f'`{k}`' for k in keys)}.",
        "",
        f"A message of step 2: `{example.splitlines()[0] if example else '-'}`",
        "",
        f"`regression` or `improved` verdicts in step 2: {len(failures)} ({verdict}).",
    ]
    print("\n".join(lines))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
