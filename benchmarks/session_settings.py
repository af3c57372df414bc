"""Compare ONNX Runtime session settings for stable latency measurement.

Question: which CPU session settings should pytest-ortperf pin by default so that
latency numbers are *stable* (small spread between repeated measurements) on
small, noisy, shared CI machines, without burning CPU that other jobs need?

Configurations (all CPUExecutionProvider, ORT_ENABLE_ALL, ORT_SEQUENTIAL):

    A      intra_op=1, inter_op=1, spinning off
    B      intra_op=1, inter_op=1, spinning on
    C      intra_op=2, inter_op=1, spinning off
    D      intra_op=2, inter_op=1, spinning on
    E      ORT defaults (no thread or spinning settings at all)
    A-arena0   A with enable_cpu_mem_arena=False      (secondary)
    A-mempat0  A with enable_mem_pattern=False        (secondary)
    A-both0    A with both of the above off           (secondary)

Method (robust to a machine whose speed changes every few seconds):

1. For each model, build every session up front and warm each up.
2. Pick a block size N so that one block of config A takes about ``--block-s``
   seconds; every configuration uses the same N.
3. Run R rounds. In each round the configurations are measured in a freshly
   shuffled order, one block of N runs each, timed with ``time.perf_counter_ns``
   while the garbage collector is disabled. ``time.process_time`` around the
   block gives the CPU time (all threads) consumed per run. A short sleep
   between blocks lets spinning worker threads go idle before the next block.
4. Per configuration: median of block medians, min block median, IQR and CV
   (stdev/mean) of block medians, median within-block CV, CPU ms per run, and
   the paired ratio to config A (block median / A's block median of the *same
   round*; median and IQR over rounds). The paired ratio cancels slow drifts of
   machine speed that hit every configuration of a round alike.
5. The whole campaign (sessions rebuilt) is repeated ``--campaigns`` times to
   show whether the conclusion is stable.

Models: the real CNN graphs shipped in the onnx wheel under
``onnx/backend/test/data/light`` (squeezenet: many small ops; resnet50: heavier).
Inputs are random float32 of the shapes reported by ``session.get_inputs()``.

Run (about 4 minutes with the defaults on a 2-core machine)::

    python benchmarks/session_settings.py > benchmarks/results/session_settings.md

Options: ``--rounds``, ``--campaigns``, ``--block-s``, ``--warmup``, ``--seed``,
``--no-secondary``, ``--models``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import gc
import os
import platform
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort

DEFAULT_MODELS = ("light_squeezenet.onnx", "light_resnet50.onnx")
PRIMARY = ("A", "B", "C", "D", "E")
SECONDARY = ("A-arena0", "A-mempat0", "A-both0")
SETTLE_S = 0.05  # > the ~35 ms ORT workers keep spinning after a run (measured)
IDLE_S = 0.05  # idle window after a run in which leftover spinning CPU is measured
IDLE_REPS = 5


@dataclass(frozen=True)
class Config:
    """One set of session options under test."""

    name: str
    intra: int | None  # None: leave ORT's default thread settings alone
    spinning: str | None  # "0"/"1" session config entry, None: ORT default
    mem_arena: bool = True
    mem_pattern: bool = True


CONFIGS: dict[str, Config] = {
    "A": Config("A", 1, "0"),
    "B": Config("B", 1, "1"),
    "C": Config("C", 2, "0"),
    "D": Config("D", 2, "1"),
    "E": Config("E", None, None),
    "A-arena0": Config("A-arena0", 1, "0", mem_arena=False),
    "A-mempat0": Config("A-mempat0", 1, "0", mem_pattern=False),
    "A-both0": Config("A-both0", 1, "0", mem_arena=False, mem_pattern=False),
}


@dataclass
class Block:
    """One timed block: per-run latencies (ns) and CPU seconds per run."""

    times_ns: list[int]
    cpu_s_per_run: float

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times_ns) / 1e6

    @property
    def cv(self) -> float:
        return statistics.stdev(self.times_ns) / statistics.fmean(self.times_ns)


@dataclass
class Campaign:
    """All blocks of one campaign for one model: rounds[r][config] -> Block."""

    model: str
    runs_per_block: int
    rounds: list[dict[str, Block]] = field(default_factory=list)
    idle_cpu_ms: dict[str, float] = field(default_factory=dict)


def make_options(cfg: Config) -> ort.SessionOptions:
    """Translate a Config into SessionOptions."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    if cfg.intra is not None:
        so.intra_op_num_threads = cfg.intra
        so.inter_op_num_threads = 1
    if cfg.spinning is not None:
        so.add_session_config_entry("session.intra_op.allow_spinning", cfg.spinning)
        so.add_session_config_entry("session.inter_op.allow_spinning", cfg.spinning)
    so.enable_cpu_mem_arena = cfg.mem_arena
    so.enable_mem_pattern = cfg.mem_pattern
    return so


def make_feeds(sess: ort.InferenceSession, seed: int) -> dict[str, npt.NDArray[np.float32]]:
    """Random float32 inputs (fixed seed); symbolic dims become 1."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, npt.NDArray[np.float32]] = {}
    for inp in sess.get_inputs():
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in inp.shape]
        feeds[inp.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def time_block(run: Callable[[], Any], n: int) -> Block:
    """Time n calls of run() with gc disabled; also CPU time per run."""
    times = [0] * n
    gc.collect()
    gc.disable()
    try:
        cpu0 = time.process_time()
        for i in range(n):
            t0 = time.perf_counter_ns()
            run()
            times[i] = time.perf_counter_ns() - t0
        cpu = time.process_time() - cpu0
    finally:
        gc.enable()
    return Block(times, cpu / n)


def idle_cpu_ms(run: Callable[[], Any]) -> float:
    """CPU ms the process burns in the IDLE_S right after a run (spinning workers)."""
    deltas = []
    for _ in range(IDLE_REPS):
        run()
        cpu0 = time.process_time()
        time.sleep(IDLE_S)
        deltas.append(time.process_time() - cpu0)
    return 1e3 * statistics.median(deltas)


def build_runners(model: Path, names: Sequence[str], seed: int, warmup: int) -> dict[str, Callable[[], Any]]:
    """Build every session first, then warm each one up."""
    sessions = {
        n: ort.InferenceSession(str(model), make_options(CONFIGS[n]), providers=["CPUExecutionProvider"])
        for n in names
    }
    feeds = make_feeds(next(iter(sessions.values())), seed)
    runners: dict[str, Callable[[], Any]] = {}
    for name, sess in sessions.items():
        runners[name] = functools.partial(sess.run, None, feeds)
        for _ in range(warmup):
            runners[name]()
    return runners


def run_campaign(model: Path, names: Sequence[str], args: argparse.Namespace, rng: random.Random) -> Campaign:
    """R rounds; each round measures every config once, in shuffled order."""
    runners = build_runners(model, names, args.seed, args.warmup)
    probe = time_block(runners["A"], 5)
    n = max(5, round(args.block_s / (probe.median_ms / 1e3)))
    camp = Campaign(model.name, n)
    order = list(names)
    for _ in range(args.rounds):
        rng.shuffle(order)
        blocks: dict[str, Block] = {}
        for name in order:
            time.sleep(SETTLE_S)
            blocks[name] = time_block(runners[name], n)
        camp.rounds.append(blocks)
    camp.idle_cpu_ms = {name: idle_cpu_ms(runners[name]) for name in names}
    return camp


def quantiles(xs: Sequence[float]) -> tuple[float, float]:
    """(q1, q3) with the inclusive method."""
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[2]


def summarize(camp: Campaign, name: str) -> dict[str, float]:
    """Statistics for one configuration in one campaign."""
    blocks = [r[name] for r in camp.rounds]
    meds = [b.median_ms for b in blocks]
    ratios = [r[name].median_ms / r["A"].median_ms for r in camp.rounds]
    q1, q3 = quantiles(meds)
    rq1, rq3 = quantiles(ratios)
    return {
        "median": statistics.median(meds),
        "min": min(meds),
        "max": max(meds),
        "iqr": q3 - q1,
        "iqr_pct": 100 * (q3 - q1) / statistics.median(meds),
        "cv_pct": 100 * statistics.stdev(meds) / statistics.fmean(meds),
        "wcv_pct": 100 * statistics.median(b.cv for b in blocks),
        "cpu_ms": 1e3 * statistics.median(b.cpu_s_per_run for b in blocks),
        "ratio": statistics.median(ratios),
        "ratio_iqr": rq3 - rq1,
        "idle_cpu_ms": camp.idle_cpu_ms[name],
    }


HEADER = (
    "| config | median ms | min..max ms | IQR ms (% of med) | CV blk med % | within-blk CV % "
    f"| CPU ms/run | CPU/wall | idle CPU ms/{int(IDLE_S * 1e3)} ms | ratio vs A (IQR) |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def describe(cfg: Config) -> str:
    """Short human description of a configuration."""
    threads = "ORT default" if cfg.intra is None else f"intra={cfg.intra}, inter=1"
    spin = {"0": "spin off", "1": "spin on", None: "spin default"}[cfg.spinning]
    arena = "on" if cfg.mem_arena else "off"
    pattern = "on" if cfg.mem_pattern else "off"
    return f"{threads}, {spin}, arena={arena}, mem_pattern={pattern}"


def report_campaign(camp: Campaign, names: Sequence[str], idx: int) -> list[str]:
    """Markdown table for one campaign of one model."""
    lines = [
        f"#### {camp.model}, campaign {idx + 1} "
        f"({len(camp.rounds)} rounds x {camp.runs_per_block} runs/block)",
        "",
        HEADER,
    ]
    for name in names:
        s = summarize(camp, name)
        lines.append(
            f"| {name} | {s['median']:.3f} | {s['min']:.3f}..{s['max']:.3f} "
            f"| {s['iqr']:.3f} ({s['iqr_pct']:.1f}%) | {s['cv_pct']:.1f} | {s['wcv_pct']:.1f} "
            f"| {s['cpu_ms']:.3f} | {s['cpu_ms'] / s['median']:.2f} | {s['idle_cpu_ms']:.1f} "
            f"| {s['ratio']:.3f} ({s['ratio_iqr']:.3f}) |"
        )
    lines.append("")
    return lines


def report_stability(camps: Sequence[Campaign], names: Sequence[str]) -> list[str]:
    """One row per model/config: per-campaign median, CV and paired ratio."""
    lines = [
        "## Stability across campaigns",
        "",
        "Per campaign: median ms / CV of block medians % / paired ratio vs A.",
        "",
    ]
    models = list(dict.fromkeys(c.model for c in camps))
    per_model = {m: [c for c in camps if c.model == m] for m in models}
    ncol = max(len(v) for v in per_model.values())
    lines.append("| model | config | " + " | ".join(f"c{i + 1}" for i in range(ncol)) + " |")
    lines.append("|---|---|" + "---:|" * ncol)
    for model, group in per_model.items():
        for name in names:
            cells = []
            for camp in group:
                s = summarize(camp, name)
                cells.append(f"{s['median']:.2f} / {s['cv_pct']:.1f} / {s['ratio']:.3f}")
            lines.append(f"| {model} | {name} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (falls back to platform)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def preamble(args: argparse.Namespace, names: Sequence[str]) -> list[str]:
    """Environment and method header for the report."""
    lines = [
        "# ORT session settings for latency measurement",
        "",
        f"- date: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}",
        f"- onnxruntime {ort.__version__} ({ort.get_device()}), onnx {onnx.__version__}, "
        f"numpy {np.__version__}, Python {platform.python_version()}",
        f"- CPU: {cpu_model()}, nproc={os.cpu_count()} (affinity {len(os.sched_getaffinity(0))})",
        f"- rounds={args.rounds}, campaigns={args.campaigns}, block~{args.block_s}s of config A, "
        f"warmup={args.warmup}, seed={args.seed}",
        "- command: `python benchmarks/session_settings.py` (see module docstring for the method)",
        "",
        "Configurations (CPUExecutionProvider, ORT_ENABLE_ALL, sequential):",
        "",
    ]
    lines += [f"- **{n}**: {describe(CONFIGS[n])}" for n in names]
    lines += [
        "",
        "Columns: statistics over blocks (one block per config per round). "
        "`ratio vs A` is the per-round paired ratio of block medians. "
        "`CPU ms/run` is process CPU time (all threads) per run; CPU/wall > 1 means "
        "more than one core busy. "
        f"`idle CPU` is process CPU burnt in the {int(IDLE_S * 1e3)} ms right after a run "
        "(leftover spinning), median of "
        f"{IDLE_REPS}.",
        "",
    ]
    return lines


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command line options."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--campaigns", type=int, default=3)
    p.add_argument("--block-s", type=float, default=0.25)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-secondary", action="store_true")
    p.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Run all campaigns and print a Markdown report to stdout."""
    args = parse_args(argv)
    names = list(PRIMARY) + ([] if args.no_secondary else list(SECONDARY))
    data_dir = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    rng = random.Random(args.seed)
    print("\n".join(preamble(args, names)), flush=True)
    t_start = time.monotonic()
    camps: list[Campaign] = []
    for c in range(args.campaigns):
        print(f"## Campaign {c + 1}\n", flush=True)
        for model in args.models:
            camp = run_campaign(data_dir / model, names, args, rng)
            camps.append(camp)
            print("\n".join(report_campaign(camp, names, c)), flush=True)
    print("\n".join(report_stability(camps, names)))
    print(f"_total wall time {time.monotonic() - t_start:.0f} s_")


if __name__ == "__main__":
    main()
