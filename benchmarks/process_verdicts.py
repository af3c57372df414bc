"""Verdicts that hold across processes: an int8 model against its fp32 reference, judged side by side
in fresh pytest processes, again and again. Does any run say regression while another says improved?

Question (issue 47, part 2): a session's speed has a state per process, which moves two different
models differently (an int8 BERT against its fp32 reference measured +15% in some processes and +7%
in others, each "significant"), so one process's paired rounds, and a confirmation on fresh
sessions in the same process, can give opposite verdicts from one run to the next. With the
confirmation measured in new measuring worker processes, and two processes that disagree ending
``inconclusive`` with both figures, do the verdicts of repeated runs still contradict each other;
what does the second process add to a check's time?

Method: a temporary git repository holds ``models/model.onnx``, a transformer-like encoder built at
run time (``tests/models.py: transformer_block_model``: pre-norm attention and feed-forward blocks,
``--blocks`` of width ``--hidden`` over ``--seq`` tokens), collected by the ``ortperf_models`` ini
key, the latency check only, at ``disabled`` and ``all`` (two items). The fp32 model is committed,
its baseline recorded (``pytest --ortperf-update``) and committed; then the file is replaced by the
same model quantized with ``onnxruntime.quantization.quantize_dynamic`` (int8 weights), and every
trial is one whole ``python -m pytest`` process that measures it side by side with the recorded fp32
model rebuilt from git, at ``--ortperf-ab-threshold`` (default 10%, the threshold of issue 47). With
``--before DIR`` (a tree of the code before, e.g. ``git archive main | tar -x -C DIR``), trials of
that code alternate with this tree's, in shuffled order, on the same repository and baselines.

Each trial's JSON report gives, per item, the verdict, the change that decided, the first
measurement's interval when it was measured again, whether the second held it (and in which
processes), and the seconds by phase.

Run from the repository root::

    python -m benchmarks.process_verdicts --trials 10 --before /tmp/before \\
        --out benchmarks/results/process_verdicts.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import onnx
from onnxruntime.quantization import QuantType, quantize_dynamic

from benchmarks.conditions import Sampler, cpu_fields, git, loadavg, other_pytest_processes
from benchmarks.conditions import run_pytest as pytest
from tests.models import transformer_block_model

REPO = Path(__file__).resolve().parent.parent
INI = (
    "[pytest]\nortperf_models = models/*.onnx\nortperf_opt_levels = disabled,all\nortperf_checks = latency\n"
)
PHASES = ("building", "waiting", "warming", "measuring", "confirming", "explaining")


@dataclass
class Item:
    """One latency record of one trial."""

    code: str  # "after" (this tree) or "before"
    trial: int
    variant: str
    wall_s: float  # the whole pytest process
    verdict: str
    failed: bool
    change: str
    first: dict[str, float] | None = None  # measured twice: the first interval
    confirmed: bool | None = None
    processes: str = ""
    disagreement: str = ""
    skipped: str = ""
    seconds: dict[str, float] = field(default_factory=dict)


def trial(code: str, tree: Path, repo: Path, number: int, threshold: str) -> list[Item]:
    report = repo.parent / "report.json"
    report.unlink(missing_ok=True)
    wall, done = pytest(tree, repo, [f"--ortperf-report={report}", f"--ortperf-ab-threshold={threshold}"])
    records = [r for r in json.loads(report.read_text()).get("checks", []) if r.get("kind") == "latency"]
    if not records:
        raise RuntimeError(f"no latency record in trial {number} ({code}):\n{done.stdout[-3000:]}")
    items = []
    for record in records:
        confirmation = record.get("confirmation") or {}
        items.append(
            Item(
                code=code,
                trial=number,
                variant=str(record.get("variant")),
                wall_s=wall,
                verdict=str(record.get("verdict")),
                failed=bool(record.get("failed")),
                change=str(record.get("change_summary", "")),
                first=confirmation.get("first_change"),
                confirmed=confirmation.get("confirmed"),
                processes=str(confirmation.get("processes", "")),
                disagreement=str(confirmation.get("disagreement", "")),
                skipped=str(confirmation.get("skipped", "")),
                seconds={k: float(v) for k, v in (record.get("seconds") or {}).items()},
            )
        )
    return items


def contradictions(items: Sequence[Item]) -> str:
    """Whether some run said regression while another said improved, per variant."""
    said = {}
    for variant in sorted({i.variant for i in items}):
        verdicts = {i.verdict for i in items if i.variant == variant}
        said[variant] = "yes" if {"regression", "improved"} <= verdicts else "no"
    return ", ".join(f"{variant}: {answer}" for variant, answer in said.items())


def _median(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})" if values else "-"


def report(items: Sequence[Item], header: Sequence[str]) -> str:
    out = [*header, "", "## Verdicts of repeated runs", ""]
    out += [
        "Per code and variant: how many trials ended in each verdict, and whether any run said "
        "regression while another said improved.",
        "",
        "| code | variant | trials | verdicts | regression in one run, improved in another |",
        "| --- | --- | --- | --- | --- |",
    ]
    for code in dict.fromkeys(i.code for i in items):
        for variant in sorted({i.variant for i in items}):
            mine = [i for i in items if i.code == code and i.variant == variant]
            counts: dict[str, int] = {}
            for i in mine:
                counts[i.verdict] = counts.get(i.verdict, 0) + 1
            verdicts = ", ".join(f"{v} x{n}" for v, n in sorted(counts.items()))
            both = contradictions(mine).split(": ")[1]
            out.append(f"| {code} | {variant} | {len(mine)} | {verdicts} | {both} |")
    out += [
        "",
        "## What a check cost",
        "",
        "Seconds per latency check by phase, median (min-max) over its trials; `process`: the whole "
        "pytest process (two checks). `confirming` holds everything the second measurement costs: "
        "starting and loading the new worker processes (after) or building the fresh sessions (before), "
        "their warm-up and rounds.",
        "",
        "| code | variant | process | " + " | ".join(PHASES) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in PHASES) + " |",
    ]
    for code in dict.fromkeys(i.code for i in items):
        for variant in sorted({i.variant for i in items}):
            mine = [i for i in items if i.code == code and i.variant == variant]
            cells = [_median([i.seconds.get(p, 0.0) for i in mine]) for p in PHASES]
            process = _median([i.wall_s for i in mine])
            out.append(f"| {code} | {variant} | {process} | " + " | ".join(cells) + " |")
    out += [
        "",
        "## Every check",
        "",
        "| code | trial | variant | verdict | change | first measurement (ratio, low-high) | second |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i in sorted(items, key=lambda i: (i.code, i.trial, i.variant)):
        first = f"x{i.first['ratio']:.3f} ({i.first['low']:.3f}-{i.first['high']:.3f})" if i.first else "-"
        if i.skipped:
            second = "skipped: " + i.skipped
        elif i.confirmed is None:
            second = "-"
        else:
            second = ("held" if i.confirmed else "NOT held") + (f" in {i.processes}" if i.processes else "")
            second += f" ({i.disagreement})" if i.disagreement else ""
        out.append(f"| {i.code} | {i.trial} | {i.variant} | {i.verdict} | {i.change} | {first} | {second} |")
    return "\n".join(out) + "\n"


def setup(repo: Path, blocks: int, hidden: int, seq: int) -> None:
    """The repository: the fp32 model and its recorded baseline committed, the int8 model in the tree."""
    (repo / "models").mkdir(parents=True)
    fp32 = repo / "models" / "model.onnx"
    onnx.save(transformer_block_model(blocks, hidden, seq), fp32)
    (repo / "pytest.ini").write_text(INI)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fp32 model")
    _, done = pytest(REPO, repo, ["--ortperf-update"])
    print(done.stdout.strip().splitlines()[-1], file=sys.stderr)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "baselines")
    quantized = repo.parent / "int8.onnx"
    quantize_dynamic(str(fp32), str(quantized), weight_type=QuantType.QInt8)
    quantized.replace(fp32)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=10, help="pytest processes per code")
    parser.add_argument("--before", type=Path, help="a tree of the code before, to alternate with this one")
    parser.add_argument("--threshold", default="10%", help="--ortperf-ab-threshold (default 10%%)")
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--seed", type=int, default=47)
    parser.add_argument("--out", type=Path, help="the markdown report (default: stdout)")
    parser.add_argument("--json", type=Path, help="every check, as JSON")
    args = parser.parse_args(argv)
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    cpu = cpu_fields()
    sampler = Sampler()
    sampler.start()
    began = time.perf_counter()
    trees = {"after": REPO, **({"before": args.before.resolve()} if args.before else {})}
    order = [(code, n) for code in trees for n in range(1, args.trials + 1)]
    random.Random(args.seed).shuffle(order)
    items: list[Item] = []
    with tempfile.TemporaryDirectory(prefix="ortperf-processes-") as tmp:
        repo = Path(tmp) / "repo"
        setup(repo, args.blocks, args.hidden, args.seq)
        for code, number in order:
            got = trial(code, trees[code], repo, number, args.threshold)
            items += got
            for i in got:
                line = f"{code} {number} {i.variant}: {i.verdict} {i.change} ({i.wall_s:.1f} s)"
                print(line, file=sys.stderr, flush=True)
    flags = cpu.get("flags", "").split()
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    command = " ".join(sys.argv[1:] if argv is None else argv)
    header = [
        "# Verdicts that hold across processes: int8 against fp32, repeated in fresh pytest processes",
        "",
        f"- run {started}, {(time.perf_counter() - began) / 60:.1f} min; "
        f"{cpu.get('model name', 'unknown CPU')} "
        f"({vector}), {os.cpu_count()} cores; load average at the start {loadavg()}; {sampler.stop()}; "
        f"other pytest processes at the end {other_pytest_processes()}: the machine was shared with other "
        "engineers' test runs (noisy)",
        f"- model: transformer_block_model({args.blocks}, {args.hidden}, {args.seq}), int8 by "
        f"quantize_dynamic (QInt8 weights) against the recorded fp32, side by side at "
        f"--ortperf-ab-threshold={args.threshold}",
        f"- command: `python -m benchmarks.process_verdicts {command}`",
        f"- regression in one run, improved in another: {contradictions(items)} (all codes together: "
        "per code below)",
    ]
    text = report(items, header)
    if args.json:
        args.json.write_text(json.dumps([asdict(i) for i in items], indent=1))
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
