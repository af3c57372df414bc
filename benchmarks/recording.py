"""Recording a baseline on a noisy machine: one measurement, or until the figure settles?

Question: ``ortperf update`` used to record one measurement (4 s, 40 rounds, canary) and refuse it
when its round medians varied more than 10%; on a shared 2-core machine that refused half the
entries. Recording now never refuses: ``latency.recording.record_until_settled`` measures again
while the figure stored comparisons read (the median of the fastest quarter of round medians /
canary) is uncertain, up to a cap. How long does that take, how often does it settle, and is the
recorded figure steadier across recordings than one measurement's? And when a noisy recording is
stored anyway, does widening later stored comparisons by its spread (``latency.decision.widened``)
keep A/A comparisons from false verdicts while still catching +20%?

Method:

1. Families (``tests.models``, as ``benchmarks/gate_paths.py`` builds them): ``mlp`` (20 x
   MatMul+Relu, 1024 wide, batch 16), ``conv`` (20 x Conv3x3+Relu, 32 channels, 32x32),
   ``small-ops`` (600 Mul/Add/Tanh on [1, 64]).
2. Recordings, in one shuffled order across families: each builds fresh sessions as the plugin
   does (``SessionPool``, default settings, the canary) and takes ``--measurements`` consecutive
   measurements at the check's defaults (``MeasureSettings()``), each timed.
3. Each recording is then read two ways: today's single measurement (its first) and
   ``record_until_settled`` at its defaults, fed the recording's measurements in order with a
   clock that advances by each one's measured seconds. Because the measurements do not depend on
   when the rule stops, this is what the rule would have recorded live; the measurements it did
   not need were still taken (the machine's time is spent as for the largest cap). Other targets
   and caps are read from the same measurements.
4. Stability: per family, the spread across recordings of the recorded figure (sd of its log,
   and max/min). A/A: every ordered pair of recordings of a family, the first's recorded figures
   as baseline, the second's first measurement as today's (its second as the confirmation of a
   regression), judged as stored figures are (10% threshold, 99%) plain and widened by the
   baseline's spread; +20%: the same with today's rounds scaled by 1.2.
5. Short recordings: before each recording, one measurement at ``short_settings`` (a quarter of
   the budget) on fresh sessions of its own, read as ``record_short`` stores it: the figures an
   update now records where a later run rebuilds the reference (they decide only when the inputs
   change). Read like the others in every table.

Run from the repository root (8-10 minutes with the defaults; 11 with --measurements 6)::

    python -m benchmarks.recording --out benchmarks/results/recording.md
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import gzip
import itertools
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.conditions import Sampler, loadavg, other_pytest_processes  # noqa: E402
from pytest_ortperf.checks.latency_verdicts import stored_comparison  # noqa: E402
from pytest_ortperf.latency.decision import (  # noqa: E402
    Comparison,
    Verdict,
    against_plain,
    widened,
    without_basis,
)
from pytest_ortperf.latency.measure import MeasureSettings  # noqa: E402
from pytest_ortperf.latency.recording import (  # noqa: E402
    CAP_BUDGETS,
    SETTLE_CONFIDENCE,
    SETTLE_TARGET,
    Recording,
    decision_cv,
    plain_ratios,
    record_cap_s,
    record_until_settled,
    recorded_figure,
    settle_width,
)
from pytest_ortperf.latency.stats import LatencyStats  # noqa: E402

THRESHOLD = 0.10  # the stored-figures default (checks/policy.py: CheckPolicy.threshold)
CONFIDENCE = 0.99
MAX_CV = 0.10  # --ortperf-max-cv's default: the old refusal, now the "noisy" warning
FAMILY_NAMES = ("mlp", "conv", "small-ops")
CAP_S = record_cap_s(MeasureSettings().budget_s)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Measured:
    stats: LatencyStats
    seconds: float


@dataclass(frozen=True)
class Trace:
    """One recording's consecutive measurements on one set of fresh sessions."""

    family: str
    index: int
    started: str
    measurements: tuple[Measured, ...]
    # A short recording (``latency.recording.record_short``) on fresh sessions of its own, taken
    # just before; None in traces written before short recordings existed.
    short: Measured | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "family": self.family,
            "index": self.index,
            "started": self.started,
            "measurements": [{"stats": m.stats.as_dict(), "seconds": m.seconds} for m in self.measurements],
        }
        if self.short is not None:
            data["short"] = {"stats": self.short.stats.as_dict(), "seconds": self.short.seconds}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        measured = tuple(
            Measured(LatencyStats.from_dict(m["stats"]), float(m["seconds"])) for m in data["measurements"]
        )
        short = data.get("short")
        kept = Measured(LatencyStats.from_dict(short["stats"]), float(short["seconds"])) if short else None
        return cls(data["family"], int(data["index"]), data["started"], measured, kept)


# Measuring ------------------------------------------------------------------


def record_traces(recordings: int, measurements: int, seed: int) -> list[Trace]:
    """``recordings`` per family in one shuffled order, each ``measurements`` long."""
    from benchmarks.gate_paths import FAMILIES, Models, feeds_of, fresh
    from pytest_ortperf.latency.canary import Canary
    from pytest_ortperf.latency.measure import MeasureSettings, measure
    from pytest_ortperf.ort.runtime import import_onnxruntime

    root = Path(tempfile.mkdtemp(prefix="ortperf-recording-"))
    families = {f.name: Models(f, root) for f in FAMILIES if f.name in FAMILY_NAMES}
    plan = [(name, i) for name in families for i in range(recordings)]
    random.Random(seed).shuffle(plan)
    traces = []
    for number, (name, index) in enumerate(plan, 1):
        short = short_measurement(families[name])
        pool, built = fresh(families[name], "base")
        try:
            canary = Canary.build(import_onnxruntime(), built.variant, built.settings)
            inputs = feeds_of(families[name], built)
            session = built.session

            def run(session: Any = session, inputs: dict[str, Any] = inputs) -> object:
                return session.run(None, inputs)

            started = dt.datetime.now(dt.timezone.utc).strftime("%H:%M:%S")
            measured = []
            for _ in range(measurements):
                t0 = time.monotonic()
                stats = measure(run, MeasureSettings(), canary=canary.run)
                measured.append(Measured(stats, time.monotonic() - t0))
        finally:
            pool.close()
        trace = Trace(name, index, started, tuple(measured), short)
        traces.append(trace)
        first = trace.measurements[0].stats
        log(
            f"[{number}/{len(plan)}] {name:<9} #{index}: load {loadavg()}; first: spread "
            f"{decision_cv(first):.1%}, width {settle_width(first):.2%}, "
            f"figure {recorded_figure(first):.4g}; "
            f"all {len(measured)}: width {settle_width(_merged(trace, len(measured))):.2%}"
        )
    return traces


def short_measurement(models: Any) -> Measured:
    """An update's short recording: one measurement at ``short_settings`` on fresh sessions."""
    from benchmarks.gate_paths import feeds_of, fresh
    from pytest_ortperf.latency.canary import Canary
    from pytest_ortperf.latency.measure import measure
    from pytest_ortperf.latency.recording import short_settings
    from pytest_ortperf.ort.runtime import import_onnxruntime

    pool, built = fresh(models, "base")
    try:
        canary = Canary.build(import_onnxruntime(), built.variant, built.settings)
        inputs = feeds_of(models, built)
        session = built.session
        t0 = time.monotonic()
        settings = short_settings(MeasureSettings())
        stats = measure(lambda: session.run(None, inputs), settings, canary=canary.run)
        return Measured(stats, time.monotonic() - t0)
    finally:
        pool.close()


def _merged(trace: Trace, count: int) -> LatencyStats:
    from pytest_ortperf.latency.stats import merged

    return merged([m.stats for m in trace.measurements[:count]])


# Reading a trace ------------------------------------------------------------


def replay(
    trace: Trace,
    *,
    cap_s: float = CAP_S,
    target: float = SETTLE_TARGET,
    confidence: float = SETTLE_CONFIDENCE,
    threshold: float | None = None,
) -> Recording:
    """``record_until_settled`` on the trace's measurements in order, its clock their seconds;
    ``threshold``: also until the figures can detect it (what an update of figures that will decide
    now does), else settled alone (what it did before issue 46)."""
    taken = iter(trace.measurements)
    now = [0.0]

    def measure_once() -> LatencyStats:
        try:
            measured = next(taken)
        except StopIteration:
            raise RuntimeError(
                f"{trace.family} #{trace.index}: the rule asked for more than the "
                f"{len(trace.measurements)} measurements taken; measure more (--measurements)"
            ) from None
        now[0] += measured.seconds
        return measured.stats

    return record_until_settled(
        measure_once,
        cap_s=cap_s,
        target=target,
        confidence=confidence,
        clock=lambda: now[0],
        threshold=threshold,
    )


def single(trace: Trace) -> Recording:
    """Today's recording: the first measurement alone."""
    first = trace.measurements[0]
    stats = first.stats
    width = settle_width(stats)
    return Recording(stats, decision_cv(stats), width <= SETTLE_TARGET, 1, first.seconds, width)


def shortened(trace: Trace) -> Recording:
    """The short recording an update now takes where its figures only inform."""
    if trace.short is None:
        raise ValueError("this trace has no short recording")
    stats = trace.short.stats
    width = settle_width(stats)
    seconds = trace.short.seconds
    return Recording(stats, decision_cv(stats), width <= SETTLE_TARGET, 1, seconds, width, "short")


def readers_of(traces: Sequence[Trace]) -> dict[str, Callable[[Trace], Recording]]:
    """How a trace can be recorded: the short recording only where every trace took one."""
    readers: dict[str, Callable[[Trace], Recording]] = {
        "one measurement": single,
        "record_until_settled": replay,
        "until it detects the threshold": lambda trace: replay(trace, threshold=THRESHOLD),
    }
    if all(t.short is not None for t in traces):
        readers["short recording"] = shortened
    return readers


def log_sd(values: Sequence[float]) -> float:
    logs = [math.log(v) for v in values]
    return statistics.stdev(logs) if len(logs) > 1 else 0.0


def scaled(stats: LatencyStats, factor: float) -> LatencyStats:
    """The same rounds, ``factor`` times slower (canary rounds as they were): a model grown by it,
    every figure in ms with them (the medians of all runs are read too: ``as_checked``)."""
    times = ("min_ms", "median_ms", "mean_ms", "stdev_ms", "iqr_ms", "p90_ms", "p95_ms", "p99_ms")
    return dataclasses.replace(
        stats,
        round_medians_ms=tuple(m * factor for m in stats.round_medians_ms),
        **{name: getattr(stats, name) * factor for name in times},
    )


def stored(baseline: LatencyStats, current: LatencyStats) -> Comparison:
    """The gate's stored-figures comparison (``checks/latency_verdicts.py: stored_comparison``)."""
    return stored_comparison(baseline, current, threshold=THRESHOLD, confidence=CONFIDENCE)


@dataclass(frozen=True)
class Outcome:
    """A stored check as the plugin decides it: a first comparison, a regression confirmed."""

    verdict: Verdict
    failed: bool


def check(
    baseline: Recording,
    today: Trace,
    factor: float,
    judge_fn: Callable[[LatencyStats, LatencyStats], Comparison],
) -> Outcome:
    first = judge_fn(baseline.stats, scaled(today.measurements[0].stats, factor))
    if first.verdict is not Verdict.REGRESSION:
        return Outcome(first.verdict, first.verdict is Verdict.IMPROVED)
    confirm = judge_fn(baseline.stats, scaled(today.measurements[1].stats, factor))
    if confirm.verdict is not Verdict.REGRESSION:
        return Outcome(Verdict.OK, False)  # not confirmed: passes
    return Outcome(Verdict.REGRESSION, True)


def plain(baseline: LatencyStats, current: LatencyStats) -> Comparison:
    return stored(baseline, current)


def widening(baseline: LatencyStats, current: LatencyStats) -> Comparison:
    """Widened by the baseline's own spread, over its rounds (the check before issue 46)."""
    return widened(stored(baseline, current), decision_cv(baseline), rounds=baseline.rounds)


def as_checked(baseline: LatencyStats, current: LatencyStats) -> Comparison:
    """As the integrated check decides now (``checks/latency_verdicts.py: _judge``): widened, held
    against the plain readings of the same two runs (``latency.decision.against_plain``: no basis
    when they point the other way), and no verdict against noisy figures (spread above max-cv)."""
    held = against_plain(widening(baseline, current), plain_ratios(baseline, current))
    return without_basis(held, "noisy figures") if decision_cv(baseline) > MAX_CV else held


def pairs(traces: Sequence[Trace]) -> Iterator[tuple[Trace, Trace]]:
    for family in FAMILY_NAMES:
        mine = [t for t in traces if t.family == family]
        yield from itertools.permutations(mine, 2)


# Report ---------------------------------------------------------------------


def rng_text(values: Sequence[float], fmt: str = "{:.1%}") -> str:
    if not values:
        return "-"
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))} .. {fmt.format(max(values))})"


def cpu() -> str:
    done = subprocess.run(["lscpu"], capture_output=True, text=True, check=False)
    model = next(
        (line.split(":", 1)[1].strip() for line in done.stdout.splitlines() if line.startswith("Model name")),
        "?",
    )
    flags = next((line for line in done.stdout.splitlines() if line.startswith("Flags")), "")
    cores = next(
        (line.split(":", 1)[1].strip() for line in done.stdout.splitlines() if line.startswith("CPU(s)")), "?"
    )
    return f"{model}, {cores} CPUs, avx512f: {'yes' if ' avx512f' in flags else 'no'}"


def family_rows(traces: Sequence[Trace], reader: Callable[[Trace], Recording], label: str) -> list[str]:
    rows = []
    for family in FAMILY_NAMES:
        recs = [reader(t) for t in traces if t.family == family]
        figures = [recorded_figure(r.stats) for r in recs]
        rows.append(
            f"| {family} | {label} | {statistics.median(r.measurements for r in recs):g} "
            f"(max {max(r.measurements for r in recs)}) | "
            f"{statistics.median(r.seconds for r in recs):.1f} (max {max(r.seconds for r in recs):.1f}) | "
            f"{sum(r.settled for r in recs)}/{len(recs)} | {rng_text([r.spread for r in recs])} | "
            f"{sum(r.spread > MAX_CV for r in recs)}/{len(recs)} | "
            f"{rng_text([r.width for r in recs], '{:.2%}')} | "
            f"{log_sd(figures):.2%} | {max(figures) / min(figures) - 1:.1%} |"
        )
    return rows


def alternatives(traces: Sequence[Trace], targets: Sequence[float], caps: Sequence[float]) -> list[str]:
    longest = min(sum(m.seconds for m in t.measurements) for t in traces)
    lines = [
        "| target | cap (s) | measurements: mean (max) | seconds: mean | settled | "
        "figure sd across recordings: mlp / conv / small-ops |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for target, cap in itertools.product(targets, caps):
        try:
            recs = {t: replay(t, cap_s=cap, target=target) for t in traces}
        except RuntimeError:
            continue
        sds = []
        for family in FAMILY_NAMES:
            sds.append(log_sd([recorded_figure(recs[t].stats) for t in traces if t.family == family]))
        values = list(recs.values())
        lines.append(
            f"| {target:.1%} | {cap:g} | {statistics.fmean(r.measurements for r in values):.2f} "
            f"({max(r.measurements for r in values)}) | {statistics.fmean(r.seconds for r in values):.1f} | "
            f"{sum(r.settled for r in values)}/{len(values)} | {' / '.join(f'{sd:.2%}' for sd in sds)} |"
        )
    lines.append("")
    lines.append(
        f"(caps whose recordings would need more than the measurements taken are left out; "
        f"the shortest trace covers {longest:.0f} s)"
    )
    return lines


def aa_table(traces: Sequence[Trace]) -> list[str]:
    lines = [
        "| baseline recorded by | baseline spread | judged | pairs | A/A: false verdicts | "
        "A/A: false alarms | A/A: inconclusive | +12%: failed | +12%: inconclusive | +20%: failed | "
        "+20%: inconclusive |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    readers = readers_of(traces)
    for (label, reader), (how, judge_fn) in itertools.product(
        readers.items(), (("plain", plain), ("widened", widening), ("as checked", as_checked))
    ):
        recorded = {t: reader(t) for t in traces}
        for quiet in (True, False):
            selected = [(a, b) for a, b in pairs(traces) if (recorded[a].spread <= MAX_CV) == quiet]
            if not selected:
                continue
            aa = [check(recorded[a], b, 1.0, judge_fn) for a, b in selected]
            near = [check(recorded[a], b, 1.12, judge_fn) for a, b in selected]
            big = [check(recorded[a], b, 1.2, judge_fn) for a, b in selected]

            def failed(outcomes: list[Outcome]) -> int:
                return sum(o.failed and o.verdict is Verdict.REGRESSION for o in outcomes)

            def unsure(outcomes: list[Outcome]) -> int:
                return sum(o.verdict is Verdict.INCONCLUSIVE for o in outcomes)

            lines.append(
                f"| {label} | {'<=' if quiet else '>'} {MAX_CV:.0%} | {how} | {len(aa)} | "
                f"{sum(o.failed for o in aa)} | {failed(aa)} | {unsure(aa)} | {failed(near)} | "
                f"{unsure(near)} | {failed(big)} | {unsure(big)} |"
            )
    return lines


def recordings_table(traces: Sequence[Trace]) -> list[str]:
    """Every recording, measurement by measurement: what the tables above summarise."""
    lines = [
        "| family | # | started (UTC) | measurements: figure vs family median / spread / width | "
        "recorded by `record_until_settled` |",
        "| --- | --- | --- | --- | --- |",
    ]
    for family in FAMILY_NAMES:
        mine = sorted((t for t in traces if t.family == family), key=lambda t: t.index)
        centre = statistics.median(recorded_figure(m.stats) for t in mine for m in t.measurements)
        for t in mine:
            cells = [
                f"{recorded_figure(m.stats) / centre - 1:+.1%} / {decision_cv(m.stats):.0%} / "
                f"{settle_width(m.stats):.1%}"
                for m in t.measurements
            ]
            rec = replay(t)
            lines.append(
                f"| {family} | {t.index} | {t.started} | {'; '.join(cells)} | "
                f"{recorded_figure(rec.stats) / centre - 1:+.1%} after {rec.measurements}, spread "
                f"{rec.spread:.0%}{'' if rec.settled else ', not settled'} |"
            )
    return lines


def false_verdicts(traces: Sequence[Trace]) -> list[str]:
    """Every A/A pair that ended in a false verdict under some reading, plain and widened."""
    lines = [
        "| baseline recorded by | family | baseline # (spread) | today # | plain | widened | as checked |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, reader in readers_of(traces).items():
        recorded = {t: reader(t) for t in traces}
        for a, b in pairs(traces):
            outcomes = [check(recorded[a], b, 1.0, judge) for judge in (plain, widening, as_checked)]
            if any(o.failed for o in outcomes):
                lines.append(
                    f"| {label} | {a.family} | {a.index} ({recorded[a].spread:.0%}) | {b.index} | "
                    + " | ".join(o.verdict.value for o in outcomes)
                    + " |"
                )
    if len(lines) == 2:
        lines.append("| (none) | | | | | | |")
    return lines


def error_by_spread(traces: Sequence[Trace]) -> list[str]:
    """Each single measurement's figure against its family's median figure, by its spread."""
    bins = ((0.0, 0.05), (0.05, 0.10), (0.10, 0.15), (0.15, 0.20), (0.20, math.inf))
    rows: dict[tuple[float, float], list[float]] = {b: [] for b in bins}
    for family in FAMILY_NAMES:
        measured = [m.stats for t in traces if t.family == family for m in t.measurements]
        centre = statistics.median(math.log(recorded_figure(s)) for s in measured)
        for s in measured:
            spread = decision_cv(s)
            for b in bins:
                if b[0] <= spread < b[1]:
                    rows[b].append(math.log(recorded_figure(s)) - centre)
    lines = [
        "| measurement spread | measurements | figure vs family median: median abs | p95 abs | max abs "
        "| mean |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for (low, high), errors in rows.items():
        if not errors:
            continue
        sizes = sorted(abs(e) for e in errors)
        p95 = sizes[min(len(sizes) - 1, math.ceil(0.95 * len(sizes)) - 1)]
        upper = f"{high:.0%}" if math.isfinite(high) else ""
        lines.append(
            f"| {low:.0%} .. {upper} | {len(errors)} | {statistics.median(sizes):.2%} | {p95:.2%} | "
            f"{sizes[-1]:.2%} | {statistics.fmean(errors):+.2%} |"
        )
    return lines


def report(traces: Sequence[Trace], header: list[str]) -> str:
    lines = [*header, ""]
    lines += ["## Recordings per family", ""]
    lines += [
        "One measurement: the first of each recording, as `ortperf update` recorded before. "
        "Short recording: one measurement of a quarter of the budget on fresh sessions of its own, taken "
        "just before (`latency.recording.record_short`, what an update records where its figures only "
        "inform). "
        f"`record_until_settled`: target {SETTLE_TARGET:.0%} at {SETTLE_CONFIDENCE:.0%}, cap "
        f"{CAP_S:g} s ({CAP_BUDGETS:g} budgets). Spread: `decision_cv` (the round medians / canary); "
        "noisy: spread above "
        f"{MAX_CV:.0%}, what `--ortperf-max-cv` refused and now lists. Width: the half-width of the "
        "figure's rank interval. Figure sd / range: across the family's recordings, of the median of the "
        "fastest quarter of round medians / canary (what stored comparisons locate).",
        "",
        "| family | recorded by | measurements: median | seconds: median | settled | "
        "spread: median (range) | noisy | width: median (range) | figure sd | figure max/min |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, reader in readers_of(traces).items():
        lines += family_rows(traces, reader, label)
    lines += ["", "## Targets and caps, replayed on the same measurements", ""]
    lines += alternatives(traces, (0.01, 0.02, 0.03, 0.04, 0.05), (8.0, 12.0, 16.0, 20.0, 30.0))
    lines += ["", "## A single measurement's figure error by its spread", ""]
    lines += [
        "Every measurement of the trace, its figure against the median figure of its family's "
        "measurements (log), grouped by its spread:",
        "",
    ]
    lines += error_by_spread(traces)
    lines += ["", "## Stored comparisons against these baselines (A/A, +12%, +20%)", ""]
    lines += [
        "Every ordered pair of a family's recordings: the first as the baseline, the second's first "
        "measurement as today's and its second as the confirmation; +12% and +20%: today's rounds x 1.12 "
        "and x 1.2 (a +12% reads the same as a baseline whose figure came out 12% too fast, so its "
        "failures are right for a real change and wrong for such a baseline: near the threshold, "
        "`inconclusive` is the honest verdict). Widened: `widened(comparison, decision_cv(baseline), "
        "rounds=baseline.rounds)`. "
        f"Threshold {THRESHOLD:.0%}, {CONFIDENCE:.0%}; a false verdict is a confirmed regression or an "
        "improvement. Pairs share recordings, so they are not independent.",
        "",
    ]
    lines += aa_table(traces)
    lines += ["", "### The false verdicts, pair by pair", ""]
    lines += false_verdicts(traces)
    lines += ["", "## Every recording", ""]
    lines += [
        "Per measurement: its figure against the median of the family's measurements, its spread and "
        "its width; then what `record_until_settled` recorded (after how many measurements).",
        "",
    ]
    lines += recordings_table(traces)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recordings", type=int, default=8, help="recordings per family (default 8)")
    parser.add_argument("--measurements", type=int, default=4, help="measurements per recording (default 4)")
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--trace", type=Path, help="write the measurements here (.json.gz)")
    parser.add_argument("--replay", type=Path, help="read the measurements from a --trace file instead")
    parser.add_argument("--out", type=Path, help="write the report here (default: stdout)")
    args = parser.parse_args(argv)
    sampler = Sampler()
    if args.replay:
        data = json.loads(gzip.decompress(args.replay.read_bytes()))
        traces = [Trace.from_dict(t) for t in data["traces"]]
        header = data["header"]
    else:
        from pytest_ortperf.ort.runtime import runtime_info

        sampler.start()
        started = dt.datetime.now(dt.timezone.utc)
        log(f"start: load {loadavg()}, other pytest processes {other_pytest_processes()}")
        traces = record_traces(args.recordings, args.measurements, args.seed)
        sampler.stop()
        took = (dt.datetime.now(dt.timezone.utc) - started).total_seconds()
        loads = [load for load, _ in sampler.samples]
        others = [count for _, count in sampler.samples]
        header = [
            "# Recording a baseline: one measurement vs until settled",
            "",
            f"`benchmarks/recording.py`, {started:%Y-%m-%d} (run {started:%H:%M} UTC, {took / 60:.1f} min), "
            f"{cpu()}; {runtime_info().describe()} on the CPU provider; "
            f"{args.recordings} recordings per family of {args.measurements} measurements each "
            "(4 s, 40 rounds, canary: `MeasureSettings()`), in one shuffled order. Machine shared with other "
            f"sessions' test suites meanwhile: 1-minute load {rng_text(loads, '{:.2f}')}, other pytest "
            f"processes {rng_text(others, '{:.0f}')} (median (range) of samples every 15 s).",
        ]
        if args.trace:
            payload = {"header": header, "traces": [t.as_dict() for t in traces]}
            args.trace.write_bytes(gzip.compress(json.dumps(payload).encode()))
    text = report(traces, header)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
