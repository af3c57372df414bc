"""Which figure of a measuring unit's runs carries a change through a busy machine? (issue 57)

Question: beside one busy process per core, a true +5% BERT read +1.9% .. +4.7% across 12 measuring
processes (a 2-core Zen 3, 2026-12-02), against +4.3% .. +6.5% on a quiet machine: the load pulls the
estimate towards no change, and an estimate below the 3% threshold cannot be called a regression
however many processes agree. Is that the figure (each round's median of its runs) or the runs
themselves? A run that another process pre-empted is longer by the time it waited, not by the model's
work, so a figure of the faster runs may keep the ratio where the median loses it.

Method: real exports of ``benchmarks/real_exports.py`` (the transformers BERT and the torch Conv1d
stack), base against itself with new weights (A/A), +5% and +10%. For each condition, ``--units``
measuring units, each one worker process of the plugin's pool (``ort/workers.py: load_units``, the
plugin's session settings, level ``all``) holding both sides, warmed up and timed exactly as a check
times a unit (``latency/across_processes.py: measure_unit``), ``--extend`` times over, so that every
timed run is kept. Quiet, then with ``--busy`` spinning Python loops beside (one per core). The
units are then replayed offline: many checks drawn from them (units in a random order, the rule's
looks 3, 4, 6, 8, 12, each look's interval from ``process_interval``), once per figure of a unit:

- ``median``: today's, the median of the rounds' log ratios of round medians;
- ``low``: the same of each round's fastest run (a round is 2-4 runs of each side for BERT);
- ``q25``: the log ratio of the two sides' 25th percentiles over the unit's runs.

For each: how often a check calls regression / ok / improved / inconclusive, its mean estimate, and
the units it used. Run from the repository root::

    python -m benchmarks.unit_statistics --families bert,conv1d --units 20 --busy 0,2 --checks 400 \\
        --out benchmarks/results/unit_statistics_zen5_2026-12-03.md \\
        --json benchmarks/results/unit_statistics_zen5_2026-12-03.json.gz
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import gzip
import hashlib
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import onnx

from benchmarks.conditions import cpu_fields, loadavg
from benchmarks.real_exports import FAMILIES, Family, new_weights
from pytest_ortperf.latency.across_processes import (
    LOOKS,
    MOST_EXTENSIONS,
    UNIT_SETTINGS,
    UnitRounds,
    extended,
    judge_units,
    measure_unit,
    noise_dominated,
    stops,
    warm_up_units,
)
from pytest_ortperf.latency.decision import Verdict
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.variants import parse_variant
from pytest_ortperf.ort.workers import SideSpec, WorkerPool, load_units, this_python

CONDITIONS = ("A/A", "+5%", "+10%")
THRESHOLD, CONFIDENCE = 0.03, 0.95


def _feeds(family: Family) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    made = {}
    for name, spec in family.inputs.items():
        if spec.dtype == "float32":
            made[name] = rng.standard_normal(spec.shape).astype(np.float32)
        else:
            made[name] = rng.integers(spec.low, spec.high, size=spec.shape, dtype=spec.dtype)
    return made


def _source(path: Path) -> ModelSource:
    return ModelSource(path.name, hashlib.sha256(path.read_bytes()).hexdigest(), path=path)


def record_units(
    family: Family, folder: Path, units: int, extend: int, log: list[str]
) -> dict[str, list[dict[str, object]]]:
    """Every condition's units of ``family``, raw, in a random order of conditions unit by unit."""
    base = family.build(family.base)
    models = {"base": base, "A/A": new_weights(onnx.load_from_string(base)).SerializeToString()}
    for condition in ("+5%", "+10%"):
        models[condition] = family.build(family.grown[condition])
    paths = {}
    for name, data in models.items():
        paths[name] = folder / f"{family.name}-{name.replace('/', '').replace('%', 'pct')}.onnx"
        paths[name].write_bytes(data)
    variant = parse_variant("cpu-all", source="benchmark")
    assert variant is not None
    settings = SessionSettings()
    feeds = _feeds(family)
    reference = SideSpec(this_python(), _source(paths["base"]), settings)
    pool = WorkerPool(timeout_s=120.0)
    rng = random.Random(57)
    order = [condition for condition in CONDITIONS for _ in range(units)]
    rng.shuffle(order)
    out: dict[str, list[dict[str, object]]] = {condition: [] for condition in CONDITIONS}
    try:
        for index, condition in enumerate(order):
            current = SideSpec(this_python(), _source(paths[condition]), settings)
            (unit,) = load_units(pool, current, reference, variant, feeds, first=index, count=1)
            try:
                (costs,) = warm_up_units([unit], UNIT_SETTINGS)
                rounds = measure_unit(unit, costs, UNIT_SETTINGS, rng)
                for _ in range(extend):
                    rounds = extended(rounds, measure_unit(unit, costs, UNIT_SETTINGS, rng))
            finally:
                for failed in unit.release():
                    pool.discard(failed)
                pool.close()  # every unit a fresh process, as a check's units are
            out[condition].append(asdict(rounds))
    finally:
        pool.close()
    log.append(f"{family.name}: {units} units a condition, {extend + 1}x a unit's rounds each")
    return out


def _quantile(values: Sequence[int], q: float) -> float:
    return float(np.quantile(np.asarray(values, dtype=float), q))


def figure_rounds(unit: UnitRounds, figure: str) -> UnitRounds:
    """``unit`` with each round's runs replaced so that today's rule (median of round log ratios of
    round medians) reads the figure: ``low`` keeps each round's fastest run; ``q25`` makes every
    round's pair hold the two sides' 25th percentiles over the unit."""
    per = unit.runs_per_round

    def rounds_of(runs: Sequence[int]) -> list[Sequence[int]]:
        return [runs[start : start + per] for start in range(0, len(runs), per)]

    if figure == "median":
        return unit
    if figure == "low":
        current = tuple(min(r) for r in rounds_of(unit.current_runs))
        reference = tuple(min(r) for r in rounds_of(unit.reference_runs))
        return replace(unit, runs_per_round=1, current_runs=current, reference_runs=reference)
    if figure == "q25":
        # Each round's log ratio moved by one constant, so that their median is the log ratio of the
        # two sides' 25th percentiles over the unit and their scatter (the within-unit noise the
        # interval reads) stays the rounds' own.
        shift = math.log(_quantile(unit.current_runs, 0.25) / _quantile(unit.reference_runs, 0.25))
        factor = math.exp(shift - unit.estimate)
        current = tuple(int(ms * 1e6 * factor) for ms in unit.current_ms)
        reference = tuple(int(ms * 1e6) for ms in unit.reference_ms)
        return replace(unit, runs_per_round=1, current_runs=current, reference_runs=reference)
    raise ValueError(figure)


FIGURES = ("median", "low", "q25")


def _first_rounds(unit: UnitRounds, chunks: int, of: int) -> UnitRounds:
    """``unit`` as it was after ``chunks`` of its ``of`` timings (its rounds and then extensions)."""
    rounds = len(unit.current_first) * chunks // of
    runs = rounds * unit.runs_per_round
    return replace(
        unit,
        current_runs=unit.current_runs[:runs],
        reference_runs=unit.reference_runs[:runs],
        current_first=unit.current_first[:rounds],
    )


def replay(
    units: Sequence[UnitRounds],
    figure: str,
    checks: int,
    rng: random.Random,
    *,
    timings: int,
    most: int = 12,
) -> dict[str, object]:
    """``checks`` checks drawn from ``units`` (a random order each), judged by today's looks, with
    today's extensions where the rounds' noise dominates (up to ``timings - 1`` of them: each unit
    was timed ``timings`` times)."""
    looks = [n for n in LOOKS if n <= min(most, len(units))]
    verdicts: dict[str, int] = {}
    estimates, used, extended_checks = [], [], 0
    for _ in range(checks):
        drawn = rng.sample(list(units), len(units))
        chunks, interval = 1, None
        for look, count in enumerate(looks, start=1):
            if (
                interval is not None
                and chunks < min(timings, MOST_EXTENSIONS + 1)
                and noise_dominated(interval, THRESHOLD)
            ):
                chunks += 1
            shown = [figure_rounds(_first_rounds(u, chunks, timings), figure) for u in drawn[:count]]
            comparison, interval = judge_units(
                shown, threshold=THRESHOLD, confidence=CONFIDENCE, look=look, looks=len(looks)
            )
            if stops(comparison):
                break
        extended_checks += chunks > 1
        name = comparison.verdict.value if comparison.verdict is not Verdict.OK else "ok"
        verdicts[name] = verdicts.get(name, 0) + 1
        estimates.append(interval.estimate.ratio)
        used.append(interval.units)
    all_units = [math.exp(figure_rounds(_first_rounds(u, 1, timings), figure).estimate) for u in units]
    return {
        "verdicts": verdicts,
        "mean_estimate": statistics.fmean(estimates),
        "units_median": statistics.median(used),
        "extended": extended_checks / checks,
        "unit_ratio_median": statistics.median(all_units),
        "unit_ratio_spread": statistics.stdev(math.log(r) for r in all_units),
    }


def _with_busy(count: int, work: Callable[[], dict[str, list[dict[str, object]]]]) -> tuple[dict, list]:
    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdout=subprocess.DEVNULL)
        for _ in range(count)
    ]
    loads = []
    try:
        time.sleep(1.0 if count else 0.0)
        loads.append(loadavg())
        result = work()
        loads.append(loadavg())
    finally:
        for process in busy:
            process.kill()
            process.wait()
    return result, loads


def report(recorded: dict, checks: int, seed: int, timings: int) -> list[str]:
    lines = [
        "| family | busy | condition | figure | regression / ok / improved / inconclusive | mean estimate "
        "| units (median) | extended | units' ratio median | units' spread (log sd) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    rng = random.Random(seed)
    for key, conditions in recorded.items():
        family, busy = key.split("@")
        for condition, raw in conditions.items():
            units = [
                UnitRounds(**{k: tuple(v) if isinstance(v, list) else v for k, v in u.items()}) for u in raw
            ]
            for figure in FIGURES:
                got = replay(units, figure, checks, rng, timings=timings)
                v = got["verdicts"]
                counts = " / ".join(
                    str(v.get(n, 0)) for n in ("regression", "ok", "improved", "inconclusive")
                )
                lines.append(
                    f"| {family} | {busy} | {condition} | {figure} | {counts} | {got['mean_estimate']:.3f} "
                    f"| {got['units_median']:g} | {got['extended']:.0%} | {got['unit_ratio_median']:.3f} "
                    f"| {got['unit_ratio_spread']:.4f} |"
                )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", default="bert,conv1d")
    parser.add_argument("--units", type=int, default=16, help="measuring units per condition")
    parser.add_argument("--extend", type=int, default=3, help="times a unit's rounds are timed again")
    parser.add_argument("--busy", default="0,2", help="busy processes beside, per campaign")
    parser.add_argument("--checks", type=int, default=400, help="checks replayed per condition and figure")
    parser.add_argument("--seed", type=int, default=57)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--replay", type=Path, help="a --json of an earlier run: replay it only")
    args = parser.parse_args(argv)
    log: list[str] = []
    if args.replay:
        raw = args.replay.read_bytes()
        saved = json.loads(gzip.decompress(raw) if args.replay.suffix == ".gz" else raw)
        recorded, header, args.extend = saved["units"], saved["header"], saved["extend"]
    else:
        recorded = {}
        cpu = cpu_fields()
        described = (
            f"{cpu.get('model name', '?')}, family {cpu.get('cpu family', '?')} model {cpu.get('model', '?')}"
        )
        header = [f"- {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}; {described}"]
        with tempfile.TemporaryDirectory() as folder:
            for busy in [int(b) for b in args.busy.split(",")]:
                for name in args.families.split(","):
                    started = time.perf_counter()
                    measure = functools.partial(
                        record_units, FAMILIES[name], Path(folder), args.units, args.extend, log
                    )
                    got, loads = _with_busy(busy, measure)
                    recorded[f"{name}@{busy}"] = got
                    header.append(
                        f"- {name}, {busy} busy: {time.perf_counter() - started:.0f} s, load {loads}"
                    )
        if args.json:
            data = json.dumps({"header": header, "units": recorded, "extend": args.extend}).encode()
            args.json.write_bytes(gzip.compress(data) if args.json.suffix == ".gz" else data)
    lines = ["# Which figure of a unit carries a change through a busy machine", "", *header, *log, ""]
    lines += report(recorded, args.checks, args.seed, args.extend + 1)
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
