"""Rounds in turn: how a side's several sessions (or worker processes) share a side-by-side
measurement, and what that does to the paired round ratios.

Question (issue 48): a side-by-side check runs each side on two sessions (in the pytest process)
or two measuring worker processes (its confirmation), so that no one placement in memory decides.
Until 2026-11-29 the sessions took the runs in turn, run by run, and a worker side split every
round's runs between its two processes. Is a round then noisier than one whose runs stay on one
session (the sessions taking the rounds in turn), and does that cost rounds?

Method: per family of ``benchmarks/real_exports.py`` (real exports, built at run time), the base
model against its +10% model, each side on two sessions or two new worker processes of this
Python. One whole measurement (``latency.paired.measure_pair`` at ``AB_SETTINGS``: 3 s, 80 rounds,
no early stop) per mode and repeat, modes in shuffled order:

- ``runs in turn``: in the pytest process, the sessions alternating run by run (the code before);
- ``rounds in turn``: in the pytest process, each round on one session (``RoundsInTurn``);
- ``workers, rounds split``: in workers, each round's runs split between the two processes (the
  code before, reproduced here by :class:`SplitRounds`);
- ``workers, rounds in turn``: in workers, each round in one process (``WorkerSide`` now).

Reported per mode: the 10th-90th percentile range of the 80 paired ratios, how many fall below
1 + the 3% threshold, and the look of ``latency.sequential`` at which the rounds would have stopped
(11, 16, 24, 40 or 80 rounds: fewer is shorter).

Run from the repository root (the real-export builders' packages installed)::

    python -m benchmarks.rounds_in_turn --families bert,lightgbm,conv1d --repeats 3 \\
        --out benchmarks/results/rounds_in_turn.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

from benchmarks.conditions import code_state, cpu_fields, loadavg  # noqa: E402
from benchmarks.real_exports import FAMILIES, Family  # noqa: E402
from benchmarks.two_processes_a_side import WorkerSide, load_pair  # noqa: E402
from pytest_ortperf.latency import sequential  # noqa: E402
from pytest_ortperf.latency.paired import AB_SETTINGS, PairedRounds, RoundsInTurn, alternating, measure_pair  # noqa: E402
from pytest_ortperf.ort.models import ModelResolver  # noqa: E402
from pytest_ortperf.ort.providers import resolve_provider  # noqa: E402
from pytest_ortperf.ort.session_settings import SessionSettings  # noqa: E402
from pytest_ortperf.ort.variants import OptLevel, Variant  # noqa: E402
from pytest_ortperf.ort.workers import SideSpec, WorkerPool, this_python  # noqa: E402

MODES = ("runs in turn", "rounds in turn", "workers, rounds split", "workers, rounds in turn")
THRESHOLD = 0.03


class SplitRounds(WorkerSide):
    """A worker side as it measured before 2026-11-29: every round's runs split between its processes."""

    def time_runs(self, count: int, expected_ns: float) -> list[int]:
        n, first = len(self.models), self._turn
        self._turn = (first + 1) % n
        durations: list[int] = []
        for step in range(min(n, count)):
            share = count // n + (1 if step < count % n else 0)
            durations += self.models[(first + step) % n].time_runs(share, expected_ns)
        return durations


def feeds_for(family: Family) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    made: dict[str, np.ndarray] = {}
    for name, spec in family.inputs.items():
        if spec.dtype == "float32":
            made[name] = rng.standard_normal(spec.shape).astype(np.float32)
        else:
            made[name] = rng.integers(spec.low, spec.high, size=spec.shape, dtype=spec.dtype)
    return made


def stopped_at(rounds: PairedRounds) -> int:
    """The look at which ``latency.sequential`` would have stopped these rounds."""
    looks = sequential.looks_for(rounds.planned_rounds)
    for number, at in enumerate(looks, start=1):
        comparison = sequential.verdict_at(
            rounds.ratios[:at], threshold=THRESHOLD, confidence=0.99, look=number, looks=len(looks)
        )
        if sequential.stops(comparison):
            return at
    return looks[-1]


def measured(mode: str, grown: Path, base: Path, feeds: dict[str, np.ndarray], where: Path) -> PairedRounds:
    settings = AB_SETTINGS
    if mode in ("runs in turn", "rounds in turn"):
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1

        def runs(path: Path) -> list[Callable[[], object]]:
            sessions = [
                ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]) for _ in range(2)
            ]
            return [lambda s=s: s.run(None, feeds) for s in sessions]

        if mode == "runs in turn":
            return measure_pair(alternating(runs(grown)), alternating(runs(base)), settings)
        return measure_pair(RoundsInTurn(runs(grown)), RoundsInTurn(runs(base)), settings)
    resolver = ModelResolver(where)
    models = [resolver.resolve(onnx.load(str(p)), test_dir=where, origin="benchmark") for p in (grown, base)]
    variant = Variant(resolve_provider("cpu", source="benchmark"), OptLevel.ALL)
    pool = WorkerPool(60.0)
    try:
        here, there = load_pair(
            pool,
            SideSpec(this_python(), models[0], SessionSettings()),
            SideSpec(this_python(), models[1], SessionSettings()),
            variant,
            feeds,
            fresh=True,
        )
        if mode == "workers, rounds split":
            here, there = SplitRounds(here.models), SplitRounds(there.models)
        return measure_pair(here, there, settings)
    finally:
        pool.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--families", default="bert,lightgbm,conv1d")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=48)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="ortperf-rounds-") as tmp:
        where = Path(tmp)
        for name in args.families.split(","):
            family = FAMILIES[name]
            base, grown = where / f"{name}-base.onnx", where / f"{name}-grown.onnx"
            base.write_bytes(family.build(family.base))
            grown.write_bytes(family.build(family.grown["+10%"]))
            feeds = feeds_for(family)
            order = [mode for mode in MODES for _ in range(args.repeats)]
            rng.shuffle(order)
            for mode in order:
                rounds = measured(mode, grown, base, feeds, where)
                ratios = np.asarray(rounds.ratios)
                low, high = np.quantile(ratios, [0.1, 0.9])
                row = {
                    "range": (float(low), float(high)),
                    "median": float(np.median(ratios)),
                    "below": int((ratios < 1 + THRESHOLD).sum()),
                    "rounds": len(ratios),
                    "runs": rounds.current.count // len(ratios),
                    "stops": stopped_at(rounds),
                }
                rows.setdefault((name, mode), []).append(row)
                print(name, mode, row, file=sys.stderr, flush=True)
    out = [
        "# Rounds in turn: a side's sessions or processes, run by run or round by round",
        "",
        f"- {started}; {cpu_fields().get('model name', 'unknown CPU')}, {os.cpu_count()} cores; "
        f"load at the end {loadavg()}; {code_state()}",
        f"- command: `python -m benchmarks.rounds_in_turn {' '.join(sys.argv[1:] if argv is None else argv)}"
        "`",
        "",
        "Base model against its +10% model, two sessions or two new worker processes a side, one whole "
        "measurement (80 rounds, 3 s budget) per repeat. Per repeat: the 10th-90th percentile of the paired "
        "ratios; the median ratio; rounds below 1.03 of 80; the look at which the sequential rule would have "
        "stopped.",
        "",
        "| family | mode | runs a round | 10-90% of the ratios | median | below 1.03 | stops at (rounds) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (name, mode), found in rows.items():
        ranges = "; ".join(f"{r['range'][0]:.3f}-{r['range'][1]:.3f}" for r in found)
        medians = ", ".join(f"{r['median']:.3f}" for r in found)
        below = ", ".join(str(r["below"]) for r in found)
        stops = ", ".join(str(r["stops"]) for r in found)
        runs = statistics.median(r["runs"] for r in found)
        out.append(f"| {name} | {mode} | {runs:g} | {ranges} | {medians} | {below} | {stops} |")
    text = "\n".join(out) + "\n"
    if args.out:
        args.out.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
