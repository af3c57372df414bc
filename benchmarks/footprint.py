"""Memory and start-up checks: how steady are their figures, do they stay quiet, what do they catch?

Question: ``check_memory()`` and ``check_startup()`` measure a session in fresh worker processes
(``ort/workers.py: measure_footprint``) and decide with ``footprint/memory_figures.py: compare_memory``
(on the CPU, ORT's arena peak and the model's weight bytes decide: 1% and at least 4 KiB; the
resident set, where the arena is off: at least 10% and 1 MiB) and ``footprint/startup_figures.py:
compare_startup`` (session creation and first run, Hodges-Lehmann ratio at 95%, 25%). Are those
defaults right on a shared 2-core machine?

Method, on the CPU provider at the default session settings, per workload family (``tests.models``):

- ``mlp``: 20 x (MatMul 128x128 + Relu), batch 16 (1.25 MiB of weights);
- ``conv``: 20 x (Conv 3x3 + Relu), 32 channels, 16x16 (722 KiB);
- ``small-ops``: 300 Mul/Add/Tanh on [1, 12800] (two 50 KiB weights: 100 KiB);
- ``int8``: the mlp (256 wide) dynamically quantized to int8 (1.25 MiB of int8 weights);
- ``recurrent``: 10 stacked LSTMs, hidden 64, 16 steps, batch 4 (1.27 MiB).

1. Repeatability: ``--processes`` (20) fresh processes of the same model, each as a memory check
   measures it (profiled, for the arena figures): median, min, max, (max-min)/median and CV of
   arena peak, arena held, peak RSS added, session creation, first run and steady run.
2. A/A: ``--repeats`` (5) times per family, a memory check (2 vs 2 processes, profiled) and a
   start-up check (7 vs 7, not profiled) of the model against itself, the processes interleaved as
   the fresh-process checks interleave them (``ort/workers.py: abba``: current, reference, reference,
   current...),
   judged by ``compare_memory`` / ``compare_startup`` at the gate's defaults.
3. Detection, each ``--repeats`` times, side by side the same way, the base model as the reference:
   a. ``dup-weight`` (memory): one weight tensor of about 5% of the weights duplicated, a copy
      with noise of 5% of its standard deviation added (so it cannot be deduplicated, and its
      int8 values differ too), used by a clone of the node that used the original, the two
      outputs added. Not for small-ops: its two weights are half of its weights each.
   b. ``2x-activations`` (memory): a Concat of the input with itself along the batch axis, so every
      intermediate tensor is twice as large, and a Split at the end that keeps the first half, so
      inputs and outputs are unchanged (compute doubles too).
   c. ``opt-level`` (memory and start-up): the same model at ``all`` and at ``disabled``; each
      repeat measures both sides once, interleaved, and is judged in both directions (``all`` ->
      ``disabled`` and back) on the same processes; the repeats alternate which side starts.
   d. ``2x-nodes`` (start-up): the family at twice the layers or operators (the weights double
      too, but for small-ops, whose operators share its two weights).
4. Cost per check: the wall seconds of each memory check (2 + 2 profiled processes) and start-up
   check (7 + 7), from the A/A checks.

The report adds A/A checks replayed from the repeatability processes (random disjoint 7 + 7 and
2 + 2 of a family's processes): the gate's rules, and for start-up other processes a side,
confidences and thresholds. ``--replay`` writes the report again from a ``--trace`` file.

All checks and repeatability processes of all families run in one shuffled order, so a change in
the machine's load spreads over them. The memory check's processes get the gate's address-space
limit (the physical memory), as ``--ortperf-memory-limit`` does by default.

Run from the repository root (about 5-6 minutes with the defaults on a shared 2-core machine)::

    python -m benchmarks.footprint --out benchmarks/results/footprint_zen4.md \\
        --trace benchmarks/results/footprint_zen4.json.gz
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.conditions import Sampler, code_state, loadavg, other_pytest_processes  # noqa: E402
from benchmarks.two_processes_a_side import abba  # noqa: E402
from pytest_ortperf.footprint.comparison import worst  # noqa: E402
from pytest_ortperf.footprint.memory_figures import (  # noqa: E402
    DEFAULT_FLOOR,
    DEFAULT_THRESHOLD,
    RSS_FLOOR,
    RSS_THRESHOLD,
    MemoryFigures,
    compare_memory,
    size_text,
)
from pytest_ortperf.footprint.startup_figures import (  # noqa: E402
    CONFIDENCE as STARTUP_CONFIDENCE,
)
from pytest_ortperf.footprint.startup_figures import (  # noqa: E402
    DEFAULT_THRESHOLD as STARTUP_THRESHOLD,
)
from pytest_ortperf.footprint.startup_figures import (  # noqa: E402
    PROCESSES as STARTUP_PROCESSES,
)
from pytest_ortperf.footprint.startup_figures import (  # noqa: E402
    StartupFigures,
    compare_startup,
)
from pytest_ortperf.kinds.memory_check import MemoryCheck  # noqa: E402
from pytest_ortperf.latency.decision import ratio_interval  # noqa: E402
from pytest_ortperf.ort.models import ModelSource  # noqa: E402
from pytest_ortperf.ort.providers import resolve_provider  # noqa: E402
from pytest_ortperf.ort.session_settings import SessionSettings  # noqa: E402
from pytest_ortperf.ort.variants import OptLevel, Variant  # noqa: E402
from pytest_ortperf.ort.workers import Footprint, WorkerError, measure_footprint  # noqa: E402
from tests.models import (  # noqa: E402
    conv_stack_model,
    dynamic_int8,
    lstm_model,
    mlp_model,
    small_ops_model,
)

TIMEOUT_S = 300.0  # the gate's --ortperf-run-timeout default
MEMORY_PROCESSES = MemoryCheck.processes  # a side of a memory check
MEMORY, STARTUP = "memory", "start-up"
FIGURES = (
    "arena_peak",
    "arena_held",
    "weights",
    "peak_rss_added",
    "create_ms",
    "first_run_ms",
    "steady_run_ms",
)
BYTE_FIGURES = ("arena_peak", "arena_held", "weights", "peak_rss_added")
VERDICTS = ("ok", "regression", "improved", "inconclusive", "error")
REPLAY_SPLITS = 500


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- models -------------------------------------------------------------------------------------


def weight_bytes(model: onnx.ModelProto) -> int:
    return sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer)


def duplicated(
    model: onnx.ModelProto, node_name: str, weight_index: int, output_index: int = 0
) -> onnx.ModelProto:
    """``model`` with the weight at input ``weight_index`` of ``node_name`` copied, noise of 5% of its
    standard deviation added, used by a clone of the node; the two outputs are added."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    position = next(i for i, node in enumerate(graph.node) if node.name == node_name)
    node = graph.node[position]
    weight = node.input[weight_index]
    original = next(t for t in graph.initializer if t.name == weight)
    values = numpy_helper.to_array(original)
    noise = np.random.default_rng(7).standard_normal(values.shape) * 0.05 * float(values.std())
    graph.initializer.append(numpy_helper.from_array((values + noise).astype(values.dtype), f"{weight}_dup"))
    out = node.output[output_index]
    clone = onnx.NodeProto()
    clone.CopyFrom(node)
    clone.name = f"{node.name}_dup"
    clone.input[weight_index] = f"{weight}_dup"
    for index in range(len(clone.output)):
        clone.output[index] = f"{out}_dup" if index == output_index else ""
    node.output[output_index] = f"{out}_orig"
    add = helper.make_node("Add", [f"{out}_orig", f"{out}_dup"], [out], name=f"{node.name}_sum")
    nodes = list(graph.node)
    nodes[position + 1 : position + 1] = [clone, add]
    del graph.node[:]
    graph.node.extend(nodes)
    return copy


def doubled(model: onnx.ModelProto, axis: int) -> onnx.ModelProto:
    """``model`` with its input concatenated to itself along ``axis`` (the batch axis), so every
    intermediate tensor doubles, and its output split back to the first half."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    x, y = graph.input[0].name, graph.output[0].name
    for node in graph.node:
        for index, name in enumerate(node.input):
            if name == x:
                node.input[index] = f"{x}_doubled"
        for index, name in enumerate(node.output):
            if name == y:
                node.output[index] = f"{y}_doubled"
    nodes = [
        helper.make_node("Concat", [x, x], [f"{x}_doubled"], name="double_batch", axis=axis),
        *graph.node,
        helper.make_node("Split", [f"{y}_doubled"], [y, f"{y}_copy"], name="first_half", axis=axis),
    ]
    del graph.node[:]
    graph.node.extend(nodes)
    return copy


@dataclass
class Family:
    name: str
    shape: str
    feeds: dict[str, np.ndarray]
    models: dict[str, onnx.ModelProto]  # "base", and the changed ones by condition

    def source(self, which: str) -> ModelSource:
        data = self.models[which].SerializeToString()
        return ModelSource(label=f"{self.name}:{which}", sha256=which, data=data)


def families(names: Sequence[str]) -> list[Family]:
    rng = np.random.default_rng(0)
    built = []
    for name in names:
        if name == "mlp":
            base = mlp_model(20, 128)
            models = {
                "base": base,
                "dup-weight": duplicated(base, "matmul10", 1),
                "2x-activations": doubled(base, 0),
                "2x-nodes": mlp_model(40, 128),
            }
            feeds = {"x": rng.standard_normal((16, 128)).astype(np.float32)}
            shape = "20 x (MatMul 128x128 + Relu), batch 16"
        elif name == "conv":
            base = conv_stack_model(20, 32, 16)
            models = {
                "base": base,
                "dup-weight": duplicated(base, "conv10", 1),
                "2x-activations": doubled(base, 0),
                "2x-nodes": conv_stack_model(40, 32, 16),
            }
            feeds = {"x": rng.standard_normal((1, 32, 16, 16)).astype(np.float32)}
            shape = "20 x (Conv 3x3 + Relu), 32 ch, 16x16"
        elif name == "small-ops":
            base = small_ops_model(300, 12800)
            models = {
                "base": base,
                "2x-activations": doubled(base, 0),
                "2x-nodes": small_ops_model(600, 12800),
            }
            feeds = {"x": rng.standard_normal((1, 12800)).astype(np.float32)}
            shape = "300 Mul/Add/Tanh on [1, 12800]"
        elif name == "int8":
            fp32 = mlp_model(20, 256)
            models = {
                "base": dynamic_int8(fp32),
                "dup-weight": dynamic_int8(duplicated(fp32, "matmul10", 1)),
                "2x-activations": dynamic_int8(doubled(fp32, 0)),
                "2x-nodes": dynamic_int8(mlp_model(40, 256)),
            }
            feeds = {"x": rng.standard_normal((16, 256)).astype(np.float32)}
            shape = "int8 dynamic: 20 x MatMulInteger 256x256, batch 16"
        elif name == "recurrent":
            base = lstm_model(16, 64, 10)
            models = {
                "base": base,
                "dup-weight": duplicated(base, "lstm9", 1, output_index=1),
                "2x-activations": doubled(base, 1),
                "2x-nodes": lstm_model(16, 64, 20),
            }
            feeds = {"x": rng.standard_normal((16, 4, 64)).astype(np.float32)}
            shape = "10 x LSTM hidden 64, 16 steps, batch 4"
        else:
            raise SystemExit(f"unknown family {name!r}")
        for model in models.values():
            onnx.checker.check_model(model)
        built.append(Family(name, shape, feeds, models))
    return built


# --- measuring ----------------------------------------------------------------------------------

CPU = resolve_provider("cpu", source="benchmark")
VARIANTS = {level: Variant(CPU, OptLevel(level)) for level in ("all", "disabled")}
SETTINGS = SessionSettings()


def physical_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 0


def one_process(family: Family, which: str, level: str, *, profiled: bool, scratch: Path) -> dict[str, Any]:
    """One fresh process of ``family``'s ``which`` model at ``level``: its footprint, as a dict."""
    footprint = measure_footprint(
        sys.executable,
        family.source(which),
        VARIANTS[level],
        SETTINGS,
        family.feeds,
        timeout_s=TIMEOUT_S,
        profile_prefix=scratch / "profile" if profiled else None,
        limit_bytes=physical_memory() if profiled else 0,
    )
    return {
        "create_s": footprint.create_s,
        "first_run_s": footprint.first_run_s,
        "steady_run_s": footprint.steady_run_s,
        "peak_rss_added": footprint.peak_rss_added,
        "rss_kept": footprint.rss_kept,
        "arena": {k: v for k, v in footprint.arena.items() if k != "nodes"},
        "engine_cache": footprint.engine_cache,
        "weights": footprint.weights,
    }


def as_footprint(sample: dict[str, Any]) -> Footprint:
    return Footprint(
        create_s=sample["create_s"],
        first_run_s=sample["first_run_s"],
        steady_run_s=sample["steady_run_s"],
        peak_rss_added=sample["peak_rss_added"],
        rss_kept=sample["rss_kept"],
        arena=sample["arena"],
        device_bytes=None,
        engine_cache=sample.get("engine_cache", ""),
        runtime=None,  # type: ignore[arg-type]
        weights=sample.get("weights"),
    )


@dataclass
class Job:
    """One repeatability process, or one check (two sides, interleaved as the gate does)."""

    family: str
    condition: str  # "repeatability", "A/A", "dup-weight", "2x-activations", "opt-level", "2x-nodes"
    kind: str  # MEMORY or STARTUP ("repeatability": MEMORY, one process)
    repeat: int
    current: tuple[str, str]  # (model, opt level)
    reference: tuple[str, str]
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    seconds: float = 0.0
    load: float = float("nan")
    error: str = ""


def run_job(job: Job, family: Family) -> None:
    job.load = float(loadavg().split()[0]) if loadavg() != "n/a" else float("nan")
    started = time.monotonic()
    profiled = job.kind == MEMORY
    with tempfile.TemporaryDirectory(prefix="ortperf-bench-footprint-") as tmp:
        scratch = Path(tmp)
        try:
            if job.condition == "repeatability":
                job.samples = {"current": [one_process(family, *job.current, profiled=True, scratch=scratch)]}
            else:
                count = MEMORY_PROCESSES if job.kind == MEMORY else STARTUP_PROCESSES
                sides = {"current": job.current, "reference": job.reference}
                job.samples = {"current": [], "reference": []}
                for role, _ in abba(count):  # the gate's order for two sides: A B B A A B ...
                    which, level = sides[role]
                    job.samples[role].append(
                        one_process(family, which, level, profiled=profiled, scratch=scratch)
                    )
        except WorkerError as exc:
            job.error = " ".join(str(exc).split())[:300]
    job.seconds = time.monotonic() - started


def plan(names: Sequence[str], processes: int, repeats: int) -> list[Job]:
    jobs = []
    base = ("base", "all")
    for name in names:
        jobs += [Job(name, "repeatability", MEMORY, i, base, base) for i in range(processes)]
        for r in range(repeats):
            jobs.append(Job(name, "A/A", MEMORY, r, base, base))
            jobs.append(Job(name, "A/A", STARTUP, r, base, base))
            if name != "small-ops":
                jobs.append(Job(name, "dup-weight", MEMORY, r, ("dup-weight", "all"), base))
            jobs.append(Job(name, "2x-activations", MEMORY, r, ("2x-activations", "all"), base))
            # Alternate which side starts; each repeat is judged in both directions.
            sides = (("base", "disabled"), base) if r % 2 == 0 else (base, ("base", "disabled"))
            jobs.append(Job(name, "opt-level", MEMORY, r, *sides))
            jobs.append(Job(name, "opt-level", STARTUP, r, *sides))
            jobs.append(Job(name, "2x-nodes", STARTUP, r, ("2x-nodes", "all"), base))
    return jobs


# --- judging ------------------------------------------------------------------------------------


def memory_figures(samples: Sequence[dict[str, Any]], *, arena: bool = True) -> MemoryFigures:
    figures = MemoryFigures.of([as_footprint(s) for s in samples])
    if arena:
        return figures
    # The resident set alone: what decides where the CPU arena is off.
    return MemoryFigures(figures.processes, peak_rss=figures.peak_rss, peak_rss_range=figures.peak_rss_range)


def startup_figures(samples: Sequence[dict[str, Any]]) -> StartupFigures:
    return StartupFigures.of([as_footprint(s) for s in samples])


@dataclass(frozen=True)
class Judged:
    """One check judged one way: ``before`` is the reference side."""

    verdict: str
    arena_change: float | None = None  # after / before - 1 of the arena peak (memory)
    arena_delta: int | None = None
    weights_change: float | None = None  # the same of the model's weights
    weights_delta: int | None = None
    rss_change: float | None = None
    rss_delta: int | None = None
    rss_verdict: str = ""  # the resident set's rule alone (memory)
    create_ratio: float = 1.0  # Hodges-Lehmann ratio and its interval (start-up)
    create_interval: tuple[float, float] = (1.0, 1.0)
    first_ratio: float = 1.0
    first_interval: tuple[float, float] = (1.0, 1.0)
    figure_verdicts: tuple[str, ...] = ()  # creation's and the first run's (start-up)


def judge_job(job: Job, *, before: str = "") -> Judged:
    """The check judged with its reference side as before; ``before`` (an opt level): the side at
    that level as before, whichever role it had."""
    if job.error:
        return Judged("error")
    old_side, new_side = job.samples["reference"], job.samples["current"]
    if before and job.reference[1] != before:
        old_side, new_side = new_side, old_side
    return _judged(job.kind, old_side, new_side)


def _judged(kind: str, before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]) -> Judged:
    if kind == MEMORY:
        old, new = memory_figures(before), memory_figures(after)
        compared = compare_memory(old, new)
        rss = compare_memory(memory_figures(before, arena=False), memory_figures(after, arena=False))
        arena = None if old.arena_peak is None or new.arena_peak is None else (old.arena_peak, new.arena_peak)
        weights = None if old.weights is None or new.weights is None else (old.weights, new.weights)
        return Judged(
            verdict=worst(compared).value if compared else "error",
            arena_change=arena[1] / arena[0] - 1 if arena else None,
            arena_delta=arena[1] - arena[0] if arena else None,
            weights_change=weights[1] / weights[0] - 1 if weights else None,
            weights_delta=weights[1] - weights[0] if weights else None,
            rss_change=new.peak_rss / old.peak_rss - 1 if old.peak_rss and new.peak_rss else None,
            rss_delta=new.peak_rss - old.peak_rss
            if old.peak_rss is not None and new.peak_rss is not None
            else None,
            rss_verdict=worst(rss).value if rss else "error",
        )
    old_s, new_s = startup_figures(before), startup_figures(after)
    startup = compare_startup(old_s, new_s)
    create = ratio_interval(old_s.create_ms, new_s.create_ms, STARTUP_CONFIDENCE)
    first = ratio_interval(old_s.first_run_ms, new_s.first_run_ms, STARTUP_CONFIDENCE)
    return Judged(
        verdict=worst(startup).value,
        create_ratio=create.ratio,
        create_interval=(create.low, create.high),
        first_ratio=first.ratio,
        first_interval=(first.low, first.high),
        figure_verdicts=tuple(c.verdict.value for c in startup),
    )


# --- the report ---------------------------------------------------------------------------------


def cpu_line() -> str:
    model, flags, cores = "?", "", 0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and model == "?":
                model = value.strip()
            elif key == "flags" and not flags:
                flags = value
            elif key == "processor":
                cores += 1
    except OSError:
        pass
    return f"{model}, {cores} CPUs, avx512f: {'yes' if 'avx512f' in flags.split() else 'no'}"


def counts(verdicts: Sequence[str]) -> str:
    tally = collections.Counter(verdicts)
    shown = [f"{tally[v]} {v}" for v in VERDICTS if tally[v]]
    return ", ".join(shown) or "-"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:+.2f}%"


def span(values: Sequence[float], fmt: Callable[[float], str]) -> str:
    if not values:
        return "-"
    return f"{fmt(statistics.median(values))} ({fmt(min(values))} .. {fmt(max(values))})"


def interval_text(ratio: float, interval: tuple[float, float]) -> str:
    return f"{(ratio - 1) * 100:+.0f}% [{(interval[0] - 1) * 100:+.0f}, {(interval[1] - 1) * 100:+.0f}]"


def repeatability_table(jobs: Sequence[Job], fams: Sequence[Family]) -> list[str]:
    lines = [
        "| family | figure | n | median | min | max | (max-min)/median | CV |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for family in fams:
        samples = repeatability_samples(jobs, family.name)
        for figure in FIGURES:
            values = [value for value in (figure_value(s, figure) for s in samples) if value is not None]
            if not values:
                lines.append(f"| {family.name} | {figure} | 0 | - | - | - | - | - |")
                continue
            med = statistics.median(values)
            mean = statistics.fmean(values)
            cv = statistics.stdev(values) / mean if len(values) > 1 and mean else 0.0
            fmt = size_text if figure in BYTE_FIGURES else (lambda v: f"{v:.3f} ms")
            lines.append(
                f"| {family.name} | {figure} | {len(values)} | {fmt(med)} | {fmt(min(values))} | "
                f"{fmt(max(values))} | {(max(values) - min(values)) / med * 100 if med else 0:.2f}% | "
                f"{cv * 100:.2f}% |"
            )
    return lines


def figure_value(sample: dict[str, Any], figure: str) -> float | None:
    if figure == "arena_peak":
        value = sample["arena"].get("mem_in_use_peak")
    elif figure == "arena_held":
        value = sample["arena"].get("mem_arena_held")
    elif figure == "weights":
        value = sample.get("weights")
    elif figure == "peak_rss_added":
        value = sample["peak_rss_added"]
    else:
        value = sample[figure.replace("_ms", "_s")] * 1e3
    return None if value is None else float(value)


def checks_of(jobs: Sequence[Job], family: str, condition: str, kind: str) -> list[Job]:
    return [j for j in jobs if j.family == family and j.condition == condition and j.kind == kind]


def memory_rows(label: str, family: str, judged: Sequence[Judged]) -> str:
    arena = [j.arena_change for j in judged if j.arena_change is not None]
    delta = [j.arena_delta for j in judged if j.arena_delta is not None]
    weights = [j.weights_change for j in judged if j.weights_change is not None]
    weights_delta = [j.weights_delta for j in judged if j.weights_delta is not None]
    rss = [j.rss_change for j in judged if j.rss_change is not None]
    rss_delta = [j.rss_delta for j in judged if j.rss_delta is not None]
    return (
        f"| {family} | {label} | {span(arena, pct)} | {span(delta, size_text)} | "
        f"{span(weights, pct)} | {span(weights_delta, size_text)} | "
        f"{counts([j.verdict for j in judged])} | {span(rss, pct)} | {span(rss_delta, size_text)} | "
        f"{counts([j.rss_verdict for j in judged])} |"
    )


MEMORY_HEADER = [
    "| family | check | arena peak change: median (min .. max) | bytes | weights change | bytes "
    "| verdicts (gate: arena peak and weights decide) | peak RSS change | bytes | verdicts, RSS rule alone |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
]
STARTUP_HEADER = [
    "| family | check | creation: HL ratio - 1, median (min .. max) | its middle repeat [95% interval] "
    "| first run: HL ratio - 1 | its middle repeat | farthest interval end | verdicts (worst of both) "
    "| creation verdicts | first-run verdicts |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
]


def startup_rows(label: str, family: str, judged: Sequence[Judged]) -> str:
    good = [j for j in judged if j.figure_verdicts]
    create = [j.create_ratio for j in good]
    first = [j.first_ratio for j in good]
    bounds = [
        abs(b - 1) for j in good for interval in (j.create_interval, j.first_interval) for b in interval
    ]
    widest = f"{max(bounds) * 100:.0f}%" if bounds else "-"
    middle = sorted(good, key=lambda j: j.create_ratio)[len(good) // 2] if good else None
    example = interval_text(middle.create_ratio, middle.create_interval) if middle else "-"
    example_first = interval_text(middle.first_ratio, middle.first_interval) if middle else "-"
    return (
        f"| {family} | {label} | {span([c - 1 for c in create], pct)} | {example} | "
        f"{span([f - 1 for f in first], pct)} | {example_first} | {widest} | "
        f"{counts([j.verdict for j in judged])} | {counts([j.figure_verdicts[0] for j in good])} | "
        f"{counts([j.figure_verdicts[1] for j in good])} |"
    )


def repeatability_samples(jobs: Sequence[Job], family: str) -> list[dict[str, Any]]:
    return [
        j.samples["current"][0]
        for j in jobs
        if j.family == family and j.condition == "repeatability" and not j.error
    ]


def draws(samples: Sequence[dict[str, Any]], splits: int, seed: int) -> list[list[dict[str, Any]]]:
    """``splits`` random orders of a family's processes: a replayed check of n vs n takes the first
    n as before and the next n as after, so every replay of a family uses the same draws."""
    rng = random.Random(seed)
    return [rng.sample(list(samples), len(samples)) for _ in range(splits)]


def replayed_aa(jobs: Sequence[Job], fams: Sequence[Family], splits: int, seed: int) -> list[str]:
    """A/A checks drawn from the repeatability processes: random disjoint 7 + 7 (start-up) and 2 + 2
    (resident set) of a family's processes, judged by the gate's rules."""
    lines = [
        "| family | start-up 7 vs 7: verdicts | interval end farther than 25% from 1 "
        "| p95 of the farther end | resident set 2 vs 2: RSS rule verdicts "
        "| abs change of the median RSS: p95 | max |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for family in fams:
        samples = repeatability_samples(jobs, family.name)
        orders = draws(samples, splits, seed)
        startup_cells = ["-", "-", "-"]
        if len(samples) >= 2 * STARTUP_PROCESSES:
            verdicts, far = [], []
            for drawn in orders:
                judged = _judged(
                    STARTUP, drawn[:STARTUP_PROCESSES], drawn[STARTUP_PROCESSES : 2 * STARTUP_PROCESSES]
                )
                verdicts.append(judged.verdict)
                far.append(
                    max(abs(b - 1) for i in (judged.create_interval, judged.first_interval) for b in i)
                )
            beyond = sum(f > STARTUP_THRESHOLD for f in far)
            startup_cells = [counts(verdicts), f"{beyond}/{splits}", f"{quantile(far, 0.95) * 100:.0f}%"]
        rss_cells = ["-", "-", "-"]
        if len(samples) >= 2 * MEMORY_PROCESSES:
            verdicts, changes = [], []
            for drawn in orders:
                judged = _judged(
                    MEMORY, drawn[:MEMORY_PROCESSES], drawn[MEMORY_PROCESSES : 2 * MEMORY_PROCESSES]
                )
                verdicts.append(judged.rss_verdict)
                changes.append(abs(judged.rss_delta or 0))
            rss_cells = [counts(verdicts), size_text(quantile(changes, 0.95)), size_text(max(changes))]
        lines.append(f"| {family.name} | {' | '.join(startup_cells)} | {' | '.join(rss_cells)} |")
    return lines


RULE_VARIANTS = ((7, 0.99, 0.25), (7, 0.95, 0.25), (7, 0.99, 0.50), (10, 0.99, 0.25), (10, 0.95, 0.25))


def rule_variants(jobs: Sequence[Job], fams: Sequence[Family], splits: int, seed: int) -> list[str]:
    """Replayed A/A start-up checks under other processes a side, confidences and thresholds: how
    often each is inconclusive (and fails, or says improved)."""
    default = (STARTUP_PROCESSES, STARTUP_CONFIDENCE, STARTUP_THRESHOLD)
    names = [
        f"{n} vs {n}, {conf:.0%}, {thr:.0%}{' (default)' if (n, conf, thr) == default else ''}"
        for n, conf, thr in RULE_VARIANTS
    ]
    lines = [f"| family | {' | '.join(names)} |", f"| --- |{' --- |' * len(names)}"]
    for family in fams:
        samples = repeatability_samples(jobs, family.name)
        orders = draws(samples, splits, seed)
        cells = []
        for n, conf, thr in RULE_VARIANTS:
            if len(samples) < 2 * n:
                cells.append("-")
                continue
            tally: collections.Counter[str] = collections.Counter()
            for drawn in orders:
                before, after = startup_figures(drawn[:n]), startup_figures(drawn[n : 2 * n])
                tally[worst(compare_startup(before, after, threshold=thr, confidence=conf)).value] += 1
            wrong = tally["regression"] + tally["improved"]
            cells.append(f"{tally['inconclusive'] / splits:.0%} inconclusive, {wrong} false")
        lines.append(f"| {family.name} | {' | '.join(cells)} |")
    return lines


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]


def report(jobs: Sequence[Job], fams: Sequence[Family], header: list[str]) -> str:
    names = [f.name for f in fams]
    lines = [*header, ""]
    lines += ["## Models", ""]
    lines += ["| family | shape | model | weights | model bytes |", "| --- | --- | --- | --- | --- |"]
    for family in fams:
        for which, model in family.models.items():
            lines.append(
                f"| {family.name} | {family.shape if which == 'base' else ''} | {which} | "
                f"{size_text(weight_bytes(model))} | {len(model.SerializeToString())} |"
            )
    errors = [j for j in jobs if j.error]
    if errors:
        lines += ["", "## Errors", ""]
        lines += [f"- {j.family} {j.condition} {j.kind} #{j.repeat}: {j.error}" for j in errors]

    lines += ["", "## 1. Repeatability: fresh processes of the same model", ""]
    lines += [
        "Each process built the base model at `all` once (session creation, first run, the median of 20 "
        "steady runs), then profiled a second session for ORT's arena figures, as a memory check does. "
        "CV: sample standard deviation / mean.",
        "",
    ]
    lines += repeatability_table(jobs, fams)

    lines += ["", "## 2. A/A: the model against itself, as the gate compares", ""]
    lines += [
        f"Memory: {MEMORY_PROCESSES} vs {MEMORY_PROCESSES} profiled processes, `compare_memory` at "
        f"{DEFAULT_THRESHOLD:.0%} and {size_text(DEFAULT_FLOOR)} (the arena peak decides); 'RSS rule "
        f"alone': the same processes judged on peak RSS at {RSS_THRESHOLD:.0%} and {size_text(RSS_FLOOR)}, "
        "as when the arena is off. Start-up: "
        f"{STARTUP_PROCESSES} vs {STARTUP_PROCESSES} processes, `compare_startup` at "
        f"{STARTUP_THRESHOLD:.0%}, {STARTUP_CONFIDENCE:.0%} (`latency.decision.decide`): regression "
        "when the Hodges-Lehmann ratio exceeds +25% and its interval's low end exceeds 1; inconclusive "
        "when the interval's high end exceeds +25%; the check's verdict is the worst of creation and "
        "first run. A check fails on `regression` only (`improved` with `--ortperf-fail-on-improvement`); "
        "`inconclusive` passes. 'Farthest interval end': the largest distance from 1 of any interval "
        "end (creation or first run) over the repeats.",
        "",
    ]
    lines += ["### Memory", "", *MEMORY_HEADER]
    for name in names:
        lines.append(memory_rows("A/A", name, [judge_job(j) for j in checks_of(jobs, name, "A/A", MEMORY)]))
    lines += ["", "### Start-up", "", *STARTUP_HEADER]
    for name in names:
        lines.append(startup_rows("A/A", name, [judge_job(j) for j in checks_of(jobs, name, "A/A", STARTUP)]))

    lines += ["", "### Replayed from the repeatability processes", ""]
    lines += [
        f"{REPLAY_SPLITS} random A/A checks per family, each from disjoint processes of section 1 "
        "(which ran spread over the whole benchmark, so farther apart in time than a check's "
        "processes): start-up judged by `compare_startup`, the resident set by the RSS rule. 'Farther "
        "end': the larger distance from 1 of the creation and first-run intervals' ends; a start-up "
        "check is inconclusive when an interval's high end passes +25%.",
        "",
    ]
    lines += replayed_aa(jobs, fams, REPLAY_SPLITS, seed=1)
    lines += ["", "### Start-up rule variants, replayed", ""]
    lines += [
        f"The same replay (the same {REPLAY_SPLITS} random orders of each family's processes of "
        "section 1; n vs n: the first n against the next n), judged by `compare_startup` at "
        "other processes a side, confidences and thresholds: the share that came out inconclusive, "
        "and how many said regression or improved (false).",
        "",
    ]
    lines += rule_variants(jobs, fams, REPLAY_SPLITS, seed=1)

    lines += ["", "## 3. Detection, side by side against the base model", ""]
    lines += [
        "`dup-weight`: one weight of about 5% duplicated with noise, used by a cloned node (expected: "
        "a regression). `2x-activations`: a Concat of the input with itself on the batch axis, a Split "
        "back at the end (every intermediate tensor doubles; expected: a regression where activations "
        "are at least about 1% of the arena peak). `opt-level`: `all` vs `disabled`, both directions on "
        "the same interleaved processes. `2x-nodes`: twice the layers or operators (expected: a "
        "start-up regression where creation or first run grows by more than 25%).",
        "",
    ]
    lines += ["### Memory", "", *MEMORY_HEADER]
    for name in names:
        for condition in ("dup-weight", "2x-activations"):
            checks = checks_of(jobs, name, condition, MEMORY)
            if checks:
                lines.append(memory_rows(condition, name, [judge_job(j) for j in checks]))
        checks = checks_of(jobs, name, "opt-level", MEMORY)
        lines.append(memory_rows("all -> disabled", name, [judge_job(j, before="all") for j in checks]))
        lines.append(memory_rows("disabled -> all", name, [judge_job(j, before="disabled") for j in checks]))
    lines += ["", "### Start-up", "", *STARTUP_HEADER]
    for name in names:
        checks = checks_of(jobs, name, "opt-level", STARTUP)
        lines.append(startup_rows("all -> disabled", name, [judge_job(j, before="all") for j in checks]))
        lines.append(startup_rows("disabled -> all", name, [judge_job(j, before="disabled") for j in checks]))
        checks = checks_of(jobs, name, "2x-nodes", STARTUP)
        lines.append(startup_rows("2x-nodes", name, [judge_job(j) for j in checks]))

    lines += ["", "## 4. Cost per check", ""]
    lines += [
        f"Wall seconds per check, from the A/A checks (memory: {MEMORY_PROCESSES} + {MEMORY_PROCESSES} "
        f"profiled processes; start-up: {STARTUP_PROCESSES} + {STARTUP_PROCESSES}), median (min .. max); "
        "per process: the check's seconds / its processes. The 1-minute load when each check started, "
        "median (min .. max).",
        "",
        "| family | memory check | per process | start-up check | per process | load |",
        "| --- | --- | --- | --- | --- | --- |",
    ]

    def sec(value: float) -> str:
        return f"{value:.2f} s"

    for name in names:
        mem = [j.seconds for j in checks_of(jobs, name, "A/A", MEMORY) if not j.error]
        start = [j.seconds for j in checks_of(jobs, name, "A/A", STARTUP) if not j.error]
        loads = [j.load for j in jobs if j.family == name and j.condition == "A/A"]
        lines.append(
            f"| {name} | {span(mem, sec)} | "
            f"{sec(statistics.median(mem) / (2 * MEMORY_PROCESSES)) if mem else '-'} | {span(start, sec)} | "
            f"{sec(statistics.median(start) / (2 * STARTUP_PROCESSES)) if start else '-'} | "
            f"{span(loads, lambda v: f'{v:.2f}')} |"
        )
    return "\n".join(lines) + "\n"


def job_dict(job: Job) -> dict[str, Any]:
    return {
        "family": job.family,
        "condition": job.condition,
        "kind": job.kind,
        "repeat": job.repeat,
        "current": list(job.current),
        "reference": list(job.reference),
        "samples": job.samples,
        "seconds": job.seconds,
        "load": job.load,
        "error": job.error,
    }


def job_from(data: dict[str, Any]) -> Job:
    job = Job(
        data["family"],
        data["condition"],
        data["kind"],
        data["repeat"],
        (data["current"][0], data["current"][1]),
        (data["reference"][0], data["reference"][1]),
    )
    job.samples, job.seconds, job.load, job.error = (
        data["samples"],
        data["seconds"],
        data["load"],
        data["error"],
    )
    return job


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=20, help="repeatability processes per family (20)")
    parser.add_argument("--repeats", type=int, default=5, help="A/A and detection checks per case (5)")
    parser.add_argument(
        "--families", default="mlp,conv,small-ops,int8,recurrent", help="comma-separated (default: all five)"
    )
    parser.add_argument("--seed", type=int, default=20261125, help="the shuffled order of the checks")
    parser.add_argument("--out", type=Path, help="also write the report here")
    parser.add_argument("--trace", type=Path, help="write every process's figures here (.json.gz)")
    parser.add_argument("--replay", type=Path, help="report from a --trace file instead of measuring")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.families.split(",") if n.strip()]
    logging.getLogger().setLevel(logging.WARNING)
    fams = families(names)
    if args.replay:
        data = json.loads(gzip.decompress(args.replay.read_bytes()))
        header, jobs = data["header"], [job_from(j) for j in data["jobs"]]
    else:
        import onnxruntime

        date = subprocess.run(["date"], capture_output=True, text=True, check=False).stdout.strip()
        load_before, others_before = loadavg(), other_pytest_processes()
        jobs = plan(names, args.processes, args.repeats)
        random.Random(args.seed).shuffle(jobs)
        sampler = Sampler()
        sampler.start()
        started = time.monotonic()
        log(f"start: {len(jobs)} jobs, load {load_before}, other pytest processes {others_before}")
        by_name = {f.name: f for f in fams}
        for number, job in enumerate(jobs, 1):
            run_job(job, by_name[job.family])
            if number % 25 == 0 or job.error:
                log(
                    f"[{number}/{len(jobs)}] {job.family} {job.condition} {job.kind}: {job.seconds:.2f} s, "
                    f"load {loadavg()}{' ERROR ' + job.error if job.error else ''}"
                )
        took = time.monotonic() - started
        conditions = sampler.stop()
        header = [
            "# Memory and start-up checks: repeatability, A/A, detection, cost",
            "",
            f"- date: {date}",
            f"- CPU: {cpu_line()}",
            f"- onnxruntime {onnxruntime.__version__}, CPU provider, default session settings "
            f"(1 intra-op thread, no spinning, arena and memory pattern on); Python "
            f"{sys.version.split()[0]}",
            f"- code: {code_state()}",
            f"- `python -m benchmarks.footprint --processes {args.processes} --repeats {args.repeats} "
            f"--families {','.join(names)} --seed {args.seed}`: {len(jobs)} checks and processes in one "
            f"shuffled order, {took:.0f} s",
            f"- load average (1, 5, 15 min) before: {load_before}; after: {loadavg()}; other pytest "
            f"processes before: {others_before}, after: {other_pytest_processes()}",
            f"- during: {conditions}",
        ]
        if args.trace:
            payload = {"header": header, "jobs": [job_dict(j) for j in jobs]}
            args.trace.write_bytes(gzip.compress(json.dumps(payload).encode(), mtime=0))
    text = report(jobs, fams, header)
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
