"""Memory side by side: the rule of every side-by-side verdict over pairs of fresh processes, against
the rule it replaced (the medians of two processes a side, a regression confirmed by a second
measurement), on the same processes.

Question: ``check_memory()`` side by side now judges pairs of fresh processes by
``latency/across_processes.py: judge_units`` (``footprint/memory_figures.py: compare_pairs``: each
pair a unit, looks after 2, 4 and 6 pairs, the floor a share of the reference's median, no second
measurement). Does it decide what the medians decided where ORT's arena is kept (an exact figure),
and where only the resident set is (the CPU arena off), how often does it stay undecided and how
many processes does it take?

Method: a replay of the processes ``benchmarks/footprint.py`` measured (its ``--trace``). Each
memory check there is 2 fresh processes a side, interleaved, so process ``i`` of each side makes
pair ``i``: the old rule judges the medians (``compare_memory``), the new one the 2 pairs at its
first look (of 3). Then the same checks with ORT's figures taken out, as a session with the CPU
arena off reports them (the resident set and the weights decide). Last, the resident set's A/A over
more pairs: from the trace's ``repeatability`` processes (20 fresh processes of one model per family),
20 checks a family of 6 pairs drawn at random, the looks followed as the gate follows them. Defaults of
the gate: 1% and 4 KiB (the resident set at least 10% and 1 MiB), 99% over all looks.

Run from the repository root (a second)::

    python -m benchmarks.memory_pairs --trace benchmarks/results/footprint_zen4.json.gz \\
        --out benchmarks/results/memory_pairs.md
"""

from __future__ import annotations

import argparse
import collections
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.startup_pairs import counts, trace_jobs
from pytest_ortperf.footprint.comparison import worst
from pytest_ortperf.footprint.memory_figures import PAIR_LOOKS, MemoryFigures, compare_memory, compare_pairs
from pytest_ortperf.latency.decision import Verdict
from pytest_ortperf.ort.workers import Footprint, WorkerRuntime

CONDITIONS = ("A/A", "2x-activations", "dup-weight", "opt-level")
RUNTIME = WorkerRuntime("", "", (), "", "")


def _figures(samples: Sequence[Mapping[str, Any]], *, arena: bool) -> MemoryFigures:
    prints = [
        Footprint(
            s["create_s"],
            s["first_run_s"],
            s["steady_run_s"],
            s["peak_rss_added"],
            s["rss_kept"],
            dict(s["arena"]) if arena else {},
            None,
            "",
            RUNTIME,
            weights=s.get("weights"),
        )
        for s in samples
    ]
    return MemoryFigures.of(prints)


def old_rule(
    current: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]], *, arena: bool
) -> Verdict:
    return worst(compare_memory(_figures(reference, arena=arena), _figures(current, arena=arena)))


def new_rule(
    current: Sequence[Mapping[str, Any]], reference: Sequence[Mapping[str, Any]], *, arena: bool
) -> tuple[Verdict, int]:
    """The pairs rule's verdict, looks followed as far as the processes go, and the pairs it took."""
    taken = 0
    compared = []
    for look, count in enumerate(PAIR_LOOKS, 1):
        if count > min(len(current), len(reference)):
            break
        taken = count
        compared = compare_pairs(
            _figures(reference[:count], arena=arena),
            _figures(current[:count], arena=arena),
            look=look,
            looks=len(PAIR_LOOKS),
        )
        if all(c.verdict is not Verdict.INCONCLUSIVE for c in compared):
            break
    return worst(compared), taken


def replay(jobs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for job in jobs:
        if job.get("kind") != "memory" or job.get("condition") not in CONDITIONS or job.get("error"):
            continue
        current, reference = job["samples"]["current"], job["samples"]["reference"]
        for arena in (True, False):
            new, pairs = new_rule(current, reference, arena=arena)
            rows.append(
                {
                    "family": job["family"],
                    "condition": job["condition"],
                    "figures": "arena kept" if arena else "arena off",
                    "old": str(old_rule(current, reference, arena=arena).value),
                    "new": str(new.value),
                    "pairs": pairs,
                }
            )
    return rows


def resident_aa(
    jobs: Sequence[Mapping[str, Any]], *, pairs: int = PAIR_LOOKS[-1], draws: int = 20, seed: int = 57
) -> list[dict[str, Any]]:
    """A/A checks of the resident set alone from the repeatability processes: ``draws`` checks a
    family, each ``2 * pairs`` processes drawn at random from its 20 (fresh processes of one model are
    exchangeable), alternately reference and current."""
    rng = random.Random(seed)
    by_family: dict[str, list[Mapping[str, Any]]] = collections.defaultdict(list)
    for job in jobs:
        if job.get("kind") == "memory" and job.get("condition") == "repeatability" and not job.get("error"):
            by_family[job["family"]].extend(job["samples"]["current"])
    rows = []
    for family, processes in sorted(by_family.items()):
        for _ in range(draws):
            chunk = rng.sample(processes, 2 * pairs)
            reference, current = chunk[0::2], chunk[1::2]
            new, taken = new_rule(current, reference, arena=False)
            rows.append({"family": family, "new": str(new.value), "pairs": taken})
    return rows


def report(rows: Sequence[Mapping[str, Any]], aa: Sequence[Mapping[str, Any]], source: str) -> str:
    lines = [
        "# Memory side by side: pairs of processes by the one rule, against the medians of 2 + 2",
        "",
        f"Replayed from `{source}` (benchmarks/memory_pairs.py). Verdicts per check (the worse of the",
        "session's figure and the weights); pairs: how many the new rule measured (the trace has 2 a",
        "check, so an undecided first look stops there; the gate would go on to 4 and 6).",
        "",
        "| figures | condition | checks | old rule (medians, 2 + 2) | new rule (pairs) | same verdict "
        "| pairs, mean |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = collections.defaultdict(list)
    for row in rows:
        grouped[(row["figures"], row["condition"])].append(row)
    for (figures, condition), group in sorted(
        grouped.items(), key=lambda kv: (kv[0][0], CONDITIONS.index(kv[0][1]))
    ):
        old = collections.Counter(r["old"] for r in group)
        new = collections.Counter(r["new"] for r in group)
        same = sum(r["old"] == r["new"] for r in group)
        pairs = sum(r["pairs"] for r in group) / len(group)
        lines.append(
            f"| {figures} | {condition} | {len(group)} | {counts(old)} | {counts(new)} "
            f"| {same} of {len(group)} | {pairs:.1f} |"
        )
    lines += [
        "",
        f"The resident set alone, A/A over up to {PAIR_LOOKS[-1]} pairs (20 checks a family, each drawn at "
        "random from its 20 repeatability processes):",
        "",
        "| family | checks | new rule | pairs, mean |",
        "| --- | --- | --- | --- |",
    ]
    families: dict[str, list[Mapping[str, Any]]] = collections.defaultdict(list)
    for row in aa:
        families[row["family"]].append(row)
    for family, group in sorted(families.items()):
        new = collections.Counter(r["new"] for r in group)
        pairs = sum(r["pairs"] for r in group) / len(group)
        lines.append(f"| {family} | {len(group)} | {counts(new)} | {pairs:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", required=True, help="a benchmarks/footprint.py --trace file")
    parser.add_argument("--out", help="the markdown report (default: print it)")
    args = parser.parse_args(argv)
    jobs = trace_jobs(args.trace)
    text = report(replay(jobs), resident_aa(jobs), args.trace)
    if args.out:
        Path(args.out).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
