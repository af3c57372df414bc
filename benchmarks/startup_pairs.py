"""Start-up side by side: the rule of every side-by-side verdict over pairs of fresh processes,
against the rule it replaced (7 against 7 processes, Hodges-Lehmann at 95%), on the same processes.

Question: ``check_startup()`` side by side now judges pairs of fresh processes by
``latency/across_processes.py: judge_units`` (each pair a unit, t interval over the pairs' own
spread, looks after 3, 4, 6, 8 and 10 pairs, no second measurement:
``footprint/startup_figures.py: compare_pairs``). Does it stay quiet where nothing changed, catch
what the old rule caught, and with how many processes?

Method: a replay of the processes ``benchmarks/footprint.py`` measured (its ``--trace``): every
start-up check there is 7 fresh processes a side, interleaved (current, reference, reference,
current...), so process ``i`` of each side makes pair ``i``. For every check of the conditions
``A/A`` (the model against itself), ``2x-nodes`` (twice the layers or operators) and ``opt-level``
(``all`` against ``disabled``), the old rule judges the 7 + 7 processes as the first measurement
did (``compare_startup``; the gate then asked a regression to repeat in new processes), and the new
rule looks at the pairs in order, after 3, 4, 6 and 7 pairs (the trace has 7; the gate goes on to
10), stopping where both figures are decided. A check's verdict is its worse figure's. Both rules
at the gate's 25% threshold; the new one at the gate's 99% confidence.

Run from the repository root (a second or two)::

    python -m benchmarks.startup_pairs --trace benchmarks/results/footprint_zen4.json.gz \\
        --out benchmarks/results/startup_pairs.md
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ortperf.footprint.comparison import worst
from pytest_ortperf.footprint.startup_figures import StartupFigures, compare_pairs, compare_startup
from pytest_ortperf.latency.across_processes import looks_for
from pytest_ortperf.latency.decision import Verdict
from pytest_ortperf.ort.workers import Footprint, WorkerRuntime

CONDITIONS = ("A/A", "2x-nodes", "opt-level")
RUNTIME = WorkerRuntime("", "", (), "", "")


def _footprints(samples: Sequence[Mapping[str, Any]]) -> list[Footprint]:
    return [
        Footprint(s["create_s"], s["first_run_s"], s["steady_run_s"], 0, 0, {}, None, "", RUNTIME)
        for s in samples
    ]


def _figures(samples: Sequence[Mapping[str, Any]]) -> StartupFigures:
    return StartupFigures.of(_footprints(samples))


def old_rule(current: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]]) -> Verdict:
    return worst(compare_startup(_figures(reference), _figures(current)))


def new_rule(
    current: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]]
) -> tuple[Verdict, int]:
    """The verdict of the pairs rule and how many pairs it measured."""
    looks = looks_for(min(len(current), len(reference)))
    for look, count in enumerate(looks, 1):
        compared = compare_pairs(
            _figures(reference[:count]), _figures(current[:count]), look=look, looks=len(looks)
        )
        if all(c.verdict is not Verdict.INCONCLUSIVE for c in compared):
            break
    return worst(compared), count


def replay(jobs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for job in jobs:
        if job.get("kind") != "start-up" or job.get("condition") not in CONDITIONS or job.get("error"):
            continue
        current, reference = job["samples"]["current"], job["samples"]["reference"]
        new, pairs = new_rule(current, reference)
        rows.append(
            {
                "family": job["family"],
                "condition": job["condition"],
                "old": str(old_rule(current, reference).value),
                "new": str(new.value),
                "pairs": pairs,
            }
        )
    return rows


def report(rows: Sequence[Mapping[str, Any]], source: str) -> str:
    lines = [
        "# Start-up side by side: pairs of processes by the one rule, against 7 + 7 by Hodges-Lehmann",
        "",
        f"Replayed from `{source}` (benchmarks/startup_pairs.py). Verdicts per check (the worse of",
        "session creation and first run); pairs: how many the new rule measured (of 7 in the trace).",
        "",
        "| family | condition | checks | old rule (7 + 7, 95%) | new rule (pairs, 99%) | pairs, mean |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = collections.defaultdict(list)
    for row in rows:
        grouped[(row["family"], row["condition"])].append(row)
    for (family, condition), group in sorted(
        grouped.items(), key=lambda kv: (CONDITIONS.index(kv[0][1]), kv[0][0])
    ):
        old = collections.Counter(r["old"] for r in group)
        new = collections.Counter(r["new"] for r in group)
        pairs = sum(r["pairs"] for r in group) / len(group)
        lines.append(
            f"| {family} | {condition} | {len(group)} | {_counts(old)} | {_counts(new)} | {pairs:.1f} |"
        )
    for condition in CONDITIONS:
        group = [r for r in rows if r["condition"] == condition]
        old = collections.Counter(r["old"] for r in group)
        new = collections.Counter(r["new"] for r in group)
        lines.append(f"| all | {condition} | {len(group)} | {_counts(old)} | {_counts(new)} | "
                     f"{sum(r['pairs'] for r in group) / max(1, len(group)):.1f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def _counts(counter: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {verdict}" for verdict, n in sorted(counter.items()))


counts = _counts  # for benchmarks/memory_pairs.py


def trace_jobs(trace: str) -> list[dict[str, Any]]:
    """The checks and processes of a ``benchmarks/footprint.py --trace`` file (gzip if it ends .gz)."""
    opener = gzip.open if trace.endswith(".gz") else open
    with opener(trace, "rt") as stream:
        jobs: list[dict[str, Any]] = json.load(stream)["jobs"]
    return jobs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", required=True, help="a benchmarks/footprint.py --trace file")
    parser.add_argument("--out", help="the markdown report (default: print it)")
    args = parser.parse_args(argv)
    text = report(replay(trace_jobs(args.trace)), args.trace)
    if args.out:
        Path(args.out).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
