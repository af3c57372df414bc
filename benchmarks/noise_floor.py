"""When should the measuring units of a check time their rounds again? (issue 57)

Question: ``latency/across_processes.py: noise_dominated`` has every unit measured so far time its
rounds again before the next look where the units' own rounds make at least half of their scatter's
variance *and* give one unit a standard error of at least ``NOISE_FLOOR`` of the threshold. On a quiet
2-core Zen 4 a changed BERT's units (1.7-2.2% a unit from 8 rounds, at the 3% threshold) did so in 5
of 8 checks with the floor at half the threshold, doubling or tripling its timed rounds. What does the
floor cost and buy, quiet and beside busy processes?

Method: sequential checks replayed by simulation with the plugin's own rule (``judge_units`` at the
looks of the default budget, ``stops``, ``noise_dominated``, up to ``MOST_EXTENSIONS`` extensions):
each unit's process effect drawn from N(0, ``between``), each round's log ratio from a t(4) noise scaled
by ``round_sd / sqrt(2)``, 8 rounds a unit. Cost model, from a changed BERT's profile on that machine:
a unit costs ``--unit-s`` (its two session builds and warm-ups, 0.45 s) and each round ``--round-s``
(0.025 s); an extension times every loaded unit's rounds again. For each floor and condition: the
verdicts of ``--trials`` checks per true change (1.00, 1.05, 1.10, 1.20 at the 3% threshold) and the
mean seconds and units a check spent. Conditions: two quiet ones (units 1.5% and 2% apart, rounds of
6% and 8%) and two beside busy processes (4% / 12%, 6.5% / 20%: what ``benchmarks/README.md``
measured for BERT beside one busy process per core). Run from the repository root::

    python -m benchmarks.noise_floor --trials 400 --out benchmarks/results/noise_floor_simulated.md
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pytest_ortperf.latency import across_processes as rule
from pytest_ortperf.latency.across_processes import UnitRounds, judge_units, looks_for, most_units, stops
from pytest_ortperf.latency.decision import Verdict

THRESHOLD = 0.03
ROUNDS = 8
CONDITIONS = {  # name: (between-process sd, round sd), log scale
    "quiet, units 1.5% apart, rounds 6%": (0.015, 0.06),
    "quiet, units 2% apart, rounds 8%": (0.02, 0.08),
    "busy, units 4% apart, rounds 12%": (0.04, 0.12),
    "busy, units 6.5% apart, rounds 20%": (0.065, 0.20),
}
CHANGES = (1.0, 1.05, 1.10, 1.20)


def _unit(log_ratios: np.ndarray) -> UnitRounds:
    current = tuple(max(1, round(1e6 * math.exp(x))) for x in log_ratios)
    return UnitRounds("simulated", 1, current, (1_000_000,) * len(current), (True,) * len(current))


def simulate(
    ratio: float, between: float, round_sd: float, *, trials: int, seed: int, unit_s: float, round_s: float
) -> tuple[dict[Verdict, int], float, float]:
    """Verdicts, mean seconds and mean units of ``trials`` sequential checks at the rule's floor."""
    rng = np.random.default_rng(seed)
    looks = looks_for(most_units(3.0))
    verdicts = dict.fromkeys(Verdict, 0)
    seconds, units_used = [], []

    def rounds(effect: float, count: int) -> np.ndarray:
        return math.log(ratio) + effect + round_sd / math.sqrt(2) * rng.standard_t(4, size=count)

    for _ in range(trials):
        effects: list[float] = []
        timed: list[np.ndarray] = []
        cost, extensions, interval = 0.0, 0, None
        comparison = None
        for look, count in enumerate(looks, start=1):
            if (
                interval is not None
                and extensions < rule.MOST_EXTENSIONS
                and rule.noise_dominated(interval, THRESHOLD)
            ):
                extensions += 1
                for index, effect in enumerate(effects):
                    timed[index] = np.concatenate([timed[index], rounds(effect, ROUNDS)])
                    cost += ROUNDS * round_s
            while len(timed) < count:
                effects.append(rng.normal(0.0, between))
                timed.append(rounds(effects[-1], ROUNDS * (1 + extensions)))
                cost += unit_s + ROUNDS * (1 + extensions) * round_s
            comparison, interval = judge_units(
                [_unit(t) for t in timed], threshold=THRESHOLD, confidence=0.99, look=look, looks=len(looks)
            )
            if stops(comparison):
                break
        assert comparison is not None
        verdicts[comparison.verdict] += 1
        seconds.append(cost)
        units_used.append(len(timed))
    return verdicts, float(np.mean(seconds)), float(np.mean(units_used))


def report(floors: Sequence[float], trials: int, unit_s: float, round_s: float) -> str:
    lines = [
        "# When units time their rounds again: the noise floor, simulated",
        "",
        f"- {trials} checks per cell, threshold 3%, 99% over all looks, looks {looks_for(most_units(3.0))}; "
        f"cost model: {unit_s:g} s a unit, {round_s:g} s a round",
        f"- command: `python -m benchmarks.noise_floor {' '.join(sys.argv[1:])}`",
        "",
        "Each cell: regression / inconclusive / ok / improved calls, mean seconds and units of a check.",
        "",
    ]
    for condition, (between, round_sd) in CONDITIONS.items():
        lines += [f"## {condition}", "", "| floor | " + " | ".join(f"x{c:.2f}" for c in CHANGES) + " |"]
        lines.append("| --- | " + " | ".join("---" for _ in CHANGES) + " |")
        for floor in floors:
            rule.NOISE_FLOOR = floor
            cells = []
            for change in CHANGES:
                v, cost, units = simulate(
                    change, between, round_sd, trials=trials, seed=11, unit_s=unit_s, round_s=round_s
                )
                calls = "/".join(
                    str(v[k])
                    for k in (Verdict.REGRESSION, Verdict.INCONCLUSIVE, Verdict.OK, Verdict.IMPROVED)
                )
                cells.append(f"{calls}, {cost:.2f} s, {units:.1f} units")
            lines.append(f"| {floor:g} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--floors", default="0.5,0.75,1.0", help="NOISE_FLOOR values, comma separated")
    parser.add_argument("--unit-s", type=float, default=0.45)
    parser.add_argument("--round-s", type=float, default=0.025)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    kept = rule.NOISE_FLOOR
    try:
        text = report([float(f) for f in args.floors.split(",")], args.trials, args.unit_s, args.round_s)
    finally:
        rule.NOISE_FLOOR = kept
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
