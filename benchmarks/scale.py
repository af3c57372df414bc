"""Cost as the work grows: update and gate times against the number of models and their run time.

Question: what does one item (one check of one model at one level) cost when a repository of
models grows, for ``pytest --ortperf-update`` (recording), an unchanged ``pytest`` (the gate),
the same gate under ``pytest -n 2``, and a gate where one model got 25% slower? And does the
per-item cost change with the model's own run time (a ~10 us MLP, ~1 ms, ~10 ms)?

Method: for each point, a temporary git repository holds N MLP models (``tests/models.py``:
``mlp_model``, 4 MatMul + Relu layers, widths and seeds varied so every model differs) in
``models/``, collected without Python by the ``ortperf_models`` ini key at two levels
(``ortperf_opt_levels = disabled,all``): 3 checks (latency, accuracy, graph) x 2 levels = 6 items
a model. The models are committed before recording, and the baselines after it, as a repository
would, so references can be rebuilt from git. The run-time points size the batch with a
``[tool.ortperf.models."models/*.onnx"]`` ``dims`` table. Each step is a whole process,
``python -m pytest -p no:randomly -q`` with this interpreter and this tree first on ``PYTHONPATH``,
timed by ``time.perf_counter`` around ``subprocess.run``:

1. ``pytest --ortperf-update`` (record, from nothing);
2. ``pytest`` unchanged (the gate);
3. ``pytest -n 2`` unchanged (pytest-xdist);
4. one model of N rebuilt with 5 layers instead of 4 (25% more work), ``pytest``: only that
   model's items should fail.

Steps 2-4 run ``--repeats`` times each, interleaved (2, 3, 4, 2, 3, 4, ...); the changed model is
restored between repeats. Step 1 runs once a point (it writes the baselines the others read);
with ``--repeats`` above 1 the record is also rerun from nothing at the end of the point, so it
gets a second figure. Each JSON report's per-check ``seconds`` (latency checks) shows where the
time went: building, warming, measuring, confirming.

Run from the repository root, on a machine doing nothing else::

    python -m benchmarks.scale --models 8,16 --levels small,1ms,10ms --repeats 2 \
        --out benchmarks/results/scale.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import onnx  # noqa: E402

from benchmarks.conditions import code_state, cpu_fields, git, loadavg, other_pytest_processes  # noqa: E402
from tests.models import mlp_model  # noqa: E402

LAYERS = 4
ITEMS_PER_MODEL = 6  # latency, accuracy, graph at disabled and all
# run-time level: (widths cycled over the models, batch). "small" is ~10 us a run, 1ms and 10ms as named
# (measured with one intra-op thread on the 2-core machine the first report ran on).
RUN_LEVELS: dict[str, tuple[tuple[int, ...], int]] = {
    "small": ((32, 48, 64, 96), 1),
    "1ms": ((512,), 64),
    "10ms": ((1024,), 192),
}
INI = "[pytest]\nortperf_models = models/*.onnx\nortperf_opt_levels = disabled,all\n"


@dataclass
class Step:
    """One timed pytest process."""

    name: str
    wall_s: float
    items: int
    summary: str
    gate_line: str
    failed_tests: list[str]
    seconds: dict[str, float] = field(default_factory=dict)  # latency checks' phases, summed
    drifts: list[float] = field(default_factory=list)  # unchanged latency checks' drift (current / recorded)

    @property
    def per_item(self) -> float:
        return self.wall_s / self.items if self.items else float("nan")


def write_models(where: Path, count: int, level: str) -> None:
    widths, batch = RUN_LEVELS[level]
    folder = where / "models"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        onnx.save(mlp_model(LAYERS, widths[i % len(widths)], seed=i), folder / f"mlp{i:03d}.onnx")
    (where / "pytest.ini").write_text(INI)
    if batch != 1:
        (where / "pyproject.toml").write_text(
            f'[tool.ortperf.models."models/*.onnx"]\ndims = {{batch = {batch}}}\n'
        )


def slow_down(where: Path, level: str) -> str:
    """Rebuild the first model with one more layer (25% more work); its name."""
    widths, _ = RUN_LEVELS[level]
    onnx.save(mlp_model(LAYERS + 1, widths[0], seed=0), where / "models" / "mlp000.onnx")
    return "models/mlp000.onnx"


def run_pytest(where: Path, name: str, extra: Sequence[str]) -> Step:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CI", None)
    report = where / f"report-{name}.json"
    report.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q"]
    argv += [f"--ortperf-report={report}", *extra]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    summary = lines[-1].strip("= ") if lines else ""
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)} in {where} exited {done.returncode}:\n{done.stdout[-3000:]}")
    items = sum(int(n) for n, _ in re.findall(r"(\d+) (passed|failed|error|errors|skipped)", summary))
    gate = next((line for line in lines if line.startswith("gate time:")), "")
    failed = sorted(re.findall(r"^FAILED (\S+)", done.stdout, flags=re.M))
    phases: dict[str, float] = {}
    drifts: list[float] = []
    if report.exists():
        for check in json.loads(report.read_text()).get("checks", []):
            for phase, value in (check.get("seconds") or {}).items():
                phases[phase] = phases.get(phase, 0.0) + float(value)
            drift = check.get("drift") or {}
            if isinstance(drift.get("ratio"), (int, float)):
                drifts.append(float(drift["ratio"]))
    return Step(name, wall, items, summary, gate, failed, phases, drifts)


def fmt_drifts(drifts: Sequence[float]) -> str:
    """How far the unchanged checks' shown drift strays from 1: median and largest factor either way."""
    if not drifts:
        return "-"
    factors = sorted(max(d, 1 / d) for d in drifts)
    return f"{factors[len(factors) // 2]:.2f}x / {factors[-1]:.2f}x"


def measure_point(count: int, level: str, repeats: int, log: list[str]) -> list[Step]:
    steps: list[Step] = []

    def note(step: Step) -> None:
        steps.append(step)
        line = f"{count} models {level} {step.name}: {step.wall_s:.1f} s, {step.items} items, {step.summary}"
        log.append(line)
        print(line, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="ortperf-scale-") as tmp:
        where = Path(tmp)
        write_models(where, count, level)
        git(where, "init", "-q")
        git(where, "add", "-A")
        git(where, "commit", "-qm", "models")
        note(run_pytest(where, "update", ["--ortperf-update"]))
        git(where, "add", "-A")
        git(where, "commit", "-qm", "baselines")
        for _ in range(repeats):
            note(run_pytest(where, "gate", []))
            note(run_pytest(where, "gate -n 2", ["-n", "2"]))
            changed = slow_down(where, level)
            step = run_pytest(where, "one model +25%", [])
            step.summary += (
                f"; only its items failed: {', '.join(t.split('::')[-1] for t in step.failed_tests)}"
                if step.failed_tests and all(t.startswith(changed) for t in step.failed_tests)
                else f"; failed: {', '.join(step.failed_tests) or 'none'}"
            )
            note(step)
            git(where, "checkout", "--", "models")
        if repeats > 1:
            shutil.rmtree(where / "baselines")
            note(run_pytest(where, "update", ["--ortperf-update"]))
    return steps


def fmt_phases(phases: dict[str, float]) -> str:
    shown = {k: v for k, v in phases.items() if v >= 0.05}
    return ", ".join(f"{k} {v:.0f} s" for k, v in sorted(shown.items(), key=lambda kv: -kv[1])) or "-"


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def report(points: dict[tuple[int, str], list[Step]], started: str, load: str, argv: Sequence[str]) -> str:
    cpu = cpu_fields()
    flags = cpu.get("flags", "").split()
    avx = "avx512" if any(f.startswith("avx512") for f in flags) else "no avx512"
    out = [
        "# Cost as the work grows",
        "",
        f"Run {started}, {cpu.get('model name', 'unknown CPU')}, {os.cpu_count()} cores ({avx}), "
        f"load average at the start {load}, other pytest processes {other_pytest_processes()}; "
        f"code: {code_state()}.",
        "",
        f"Command: `python -m benchmarks.scale {' '.join(argv)}`",
        "",
        "Every figure is a whole `python -m pytest` process (start-up and collection included). "
        f"{ITEMS_PER_MODEL} items a model (latency, accuracy, graph at `disabled` and `all`). "
        "Per item = wall / items. Each run's figure is listed, separated by `/`.",
        "",
        "| models | run time | items | update s | gate s | gate -n 2 s | one +25% s | "
        "update / item | gate / item | -n 2 / item | update / gate | serial / -n 2 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (count, level), steps in points.items():
        by: dict[str, list[float]] = {}
        for step in steps:
            by.setdefault(step.name, []).append(step.wall_s)
        items = count * ITEMS_PER_MODEL
        update, gate, par, slow = (by.get(k, []) for k in ("update", "gate", "gate -n 2", "one model +25%"))

        def walls(values: list[float]) -> str:
            return " / ".join(f"{v:.1f}" for v in values) or "-"

        out.append(
            f"| {count} | {level} | {items} | {walls(update)} | {walls(gate)} | {walls(par)} | "
            f"{walls(slow)} | "
            f"{mean(update) / items:.2f} | {mean(gate) / items:.3f} | {mean(par) / items:.3f} | "
            f"{mean(update) / mean(gate):.1f} | {mean(gate) / mean(par):.2f} |"
        )
    out += ["", "## Each run", ""]
    out += [
        "Drift shown: the unchanged latency checks' drift from their recorded figures (information "
        "only), as a factor either way: median / largest.",
        "",
    ]
    out += ["| models | run time | step | wall s | pytest says | latency checks' time | drift shown |"]
    out += ["| --- | --- | --- | --- | --- | --- | --- |"]
    for (count, level), steps in points.items():
        for step in steps:
            out.append(
                f"| {count} | {level} | {step.name} | {step.wall_s:.1f} | {step.summary} | "
                f"{fmt_phases(step.seconds)} | {fmt_drifts(step.drifts)} |"
            )
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default="8,16", help="model counts, comma-separated (e.g. 8,32,128)")
    parser.add_argument(
        "--levels",
        default="small",
        help=f"model run times, comma-separated, of {', '.join(RUN_LEVELS)}: every count runs at 'small'; "
        "the others run at the smallest count only",
    )
    parser.add_argument(
        "--repeats", type=int, default=2, help="runs of each gate step (and of update, if > 1)"
    )
    parser.add_argument("--out", type=Path, help="the markdown report (default: stdout)")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.models.split(",") if c.strip()]
    levels = [level.strip() for level in args.levels.split(",") if level.strip()]
    unknown = [level for level in levels if level not in RUN_LEVELS]
    if unknown:
        parser.error(f"--levels: unknown run time(s) {', '.join(unknown)}; use {', '.join(RUN_LEVELS)}")
    plan = [(count, "small") for count in counts] if "small" in levels else []
    plan += [(min(counts), level) for level in levels if level != "small"]
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    load = loadavg()
    points: dict[tuple[int, str], list[Step]] = {}
    log: list[str] = []
    for count, level in plan:
        points[(count, level)] = measure_point(count, level, args.repeats, log)
        text = report(points, started, load, sys.argv[1:] if argv is None else argv)
        if args.out:  # written after every point, so a cut-short run keeps what it measured
            args.out.write_text(text)
    if not args.out:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
