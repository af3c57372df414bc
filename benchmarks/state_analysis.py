"""Replay a ``machine_states`` trace: which stored-mode statistic sees through machine states?

Every simulated check takes the rounds one model made in a window of
``W`` seconds of the trace; a baseline is such a window of the 20-layer model
at one time, the check a window at another time (at least ``--gap`` seconds
later, so a different session and usually a different machine state). For
each statistic the ratio check/baseline is computed for every pair of
windows; a check "fails" when the ratio exceeds ``1 + threshold`` in the
window and again in the next window (the confirmation a real check makes).

Statistics over the window's round medians:
- ``median``: the median (what a plain gate compares);
- ``q25`` / ``q10``: a low quantile (the fast states, like with like);
- ``min``: the fastest round;
- ``canary-median`` / ``canary-q25``: each round divided by the canary
  round measured next to it, then median / low quantile.

    python -m benchmarks.state_analysis benchmarks/results/machine_states.json.gz \
        > benchmarks/results/machine_states.md

The committed trace was recorded on 2026-11-22 (14 minutes, 2-core AMD EPYC,
ORT 1.31.1): ``python -m benchmarks.machine_states --minutes 14 --out states.json``.
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import json
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

CONDITIONS = {"A/A": "20", "+5%": "21", "+10%": "22", "+20%": "24"}
STATISTICS: dict[str, Callable[[np.ndarray], float]] = {
    "median": lambda v: float(np.median(v)),
    "q25": lambda v: float(np.quantile(v, 0.25)),
    "q10": lambda v: float(np.quantile(v, 0.10)),
    "min": lambda v: float(np.min(v)),
}


def load(path: Path) -> tuple[dict[str, list[tuple[float, int, float]]], list[tuple[float, float]]]:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    data = json.loads(raw)
    series: dict[str, list[tuple[float, int, float]]] = defaultdict(list)
    for name, at, session, ms in data["rounds"]:
        series[name].append((at, session, ms))
    canary = [(at, ms) for at, _, ms in series.pop("canary")]
    return series, canary


def normalized(
    rounds: Sequence[tuple[float, int, float]], canary: Sequence[tuple[float, float]]
) -> list[float]:
    times = [t for t, _ in canary]
    out = []
    for at, _, ms in rounds:
        i = min(max(bisect.bisect_left(times, at), 0), len(times) - 1)
        j = i - 1 if i > 0 and abs(times[i - 1] - at) < abs(times[i] - at) else i
        out.append(ms / canary[j][1])
    return out


def window(
    rounds: Sequence[tuple[float, int, float]], start: float, width: float
) -> list[tuple[float, int, float]]:
    times = [r[0] for r in rounds]
    return list(rounds[bisect.bisect_left(times, start) : bisect.bisect_left(times, start + width)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("--windows", default="2,4,8")
    parser.add_argument("--thresholds", default="0.05,0.07,0.10")
    parser.add_argument("--gap", type=float, default=30.0)
    parser.add_argument("--step", type=float, default=5.0)
    args = parser.parse_args()
    series, canary = load(args.trace)
    end = max(r[0] for r in series["20"])

    # CV of absolute vs canary-relative round medians, per model.
    print("| model | rounds | absolute round CV | model/canary round CV |")
    print("| --- | --- | --- | --- |")
    for name in ("20", "21", "22", "24"):
        absolute = np.array([ms for _, _, ms in series[name]])
        relative = np.array(normalized(series[name], canary))
        print(
            f"| {name} layers | {absolute.size} | {absolute.std() / absolute.mean():.3f} "
            f"| {relative.std() / relative.mean():.3f} |"
        )
    print()

    thresholds = [float(t) for t in args.thresholds.split(",")]
    for width in (float(w) for w in args.windows.split(",")):
        starts = np.arange(0.0, end - 2 * width, args.step)
        print(f"## window {width:g} s ({len(starts)} start times, pairs at least {args.gap:g} s apart)\n")
        header = ["statistic", "A/A log-ratio sd", "A/A p2.5..p97.5"]
        for t in thresholds:
            header += [f"t={t:.0%}: A/A", *(f"{c}" for c in list(CONDITIONS)[1:])]
        print("| " + " | ".join(header) + " |")
        print("|" + " --- |" * len(header))
        names = [*STATISTICS, "canary-median", "canary-q25"]
        for stat in names:
            values: dict[str, list[float | None]] = {}
            for cond, model in {"base": "20", **CONDITIONS}.items():
                rounds = series[model]
                vals: list[float | None] = []
                for s in starts:
                    chosen = window(rounds, s, width)
                    if len(chosen) < 3:
                        vals.append(None)
                        continue
                    if stat.startswith("canary-"):
                        v = np.array(normalized(chosen, canary))
                        vals.append(STATISTICS[stat.split("-", 1)[1]](v))
                    else:
                        vals.append(STATISTICS[stat](np.array([ms for _, _, ms in chosen])))
                values[cond] = vals
            step_next = max(1, round(width / args.step))
            rows: dict[str, list[tuple[float, float | None]]] = {}
            for cond in CONDITIONS:
                pairs = []
                for i, b in enumerate(values["base"]):
                    for j, c in enumerate(values[cond]):
                        if b is None or c is None or abs(starts[j] - starts[i]) < args.gap:
                            continue
                        nxt = values[cond][j + step_next] if j + step_next < len(starts) else None
                        pairs.append((c / b, None if nxt is None else nxt / b))
                rows[cond] = pairs
            aa = np.log([r for r, _ in rows["A/A"]])
            cells = [
                stat,
                f"{aa.std():.3f}",
                f"{math.exp(np.percentile(aa, 2.5)):.3f}..{math.exp(np.percentile(aa, 97.5)):.3f}",
            ]
            for t in thresholds:
                for cond in CONDITIONS:
                    pairs = rows[cond]
                    fails = sum(1 for r, n in pairs if r > 1 + t and (n is None or n > 1 + t))
                    cells.append(f"{fails / len(pairs):.0%}")
            print("| " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
