"""A large model: what a check of a light ResNet-50 costs, and whether its verdict comes in bounded time.

Question: on a ResNet-50-shaped model whose run takes about 100 ms at ``disabled`` (``tests/models.py``:
``resnet50_model``, light: 32 channels in the stem instead of 64, a 448 x 448 image), how long does
a whole ``pytest`` process take, and each latency check in it, at ``disabled`` and at ``all``, for

- an unchanged model (the short look: nothing changed, nothing to judge),
- a re-export (``tests/models.py``: ``reexported``: other node names and producer, the same graph),
- the model made about 10% slower (one more bottleneck block in stage 1 and one in stage 3,
  ``blocks=(4, 4, 7, 3)``: +9% at ``disabled``, +10% at ``all`` measured here in interleaved runs),

and which phase of the check (building, warming, measuring, confirming, explaining) the time went to?

Method: a temporary git repository holds ``models/resnet50.onnx``, collected without Python by the
``ortperf_models`` ini key at two levels (``ortperf_opt_levels = disabled,all``): latency, accuracy
and graph items at each level, 6 items. The model is committed, ``pytest --ortperf-update`` records
the baselines (timed), and they are committed, as a repository would. Then ``--trials`` rounds of the
three cases, each round's order shuffled (``--seed``); each case writes its model over the committed
one (not committed, as in a pull request), runs one whole ``python -m pytest -p no:randomly -q``
process with this interpreter and this tree first on ``PYTHONPATH`` (timed by ``time.perf_counter``
around ``subprocess.run``), and restores the committed model. Per process: wall time, pytest's
summary; per latency item, from ``--ortperf-report`` (JSON): verdict, path, the record's
``seconds`` by phase, rounds and runs measured (of the measurement that decided: the confirmation's
when there was one) and what decided; per item, the time JUnit XML gives it (setup, call and
teardown).

With ``--stored`` the model is never committed (a model that git does not keep, and no model cache):
no recorded model can be rebuilt, so the re-export and the slower model are measured alone and
judged by this hardware's stored figures (``--ortperf-budget``, one confirmation, the explanation
against the recorded operator profile when there is one) instead of side by side.

Run from the repository root (about 3 minutes on 2 cores for the light model; wrap it in the shared lock when
others measure on the machine)::

    flock /tmp/ortperf-bench.lock python -m benchmarks.large_model --trials 3 \
        --out benchmarks/results/large_model.md
    flock /tmp/ortperf-bench.lock python -m benchmarks.large_model --trials 3 --stored \
        --out benchmarks/results/large_model_stored.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import onnx  # noqa: E402

from benchmarks.conditions import Sampler, code_state, cpu_fields, git, loadavg, other_pytest_processes  # noqa: E402
from tests.models import reexported, resnet50_model  # noqa: E402

WIDTH, IMAGE = 32, 448
BLOCKS, SLOWER_BLOCKS = (3, 4, 6, 3), (4, 4, 7, 3)
MODEL = "models/resnet50.onnx"
INI = "[pytest]\nortperf_models = models/*.onnx\nortperf_opt_levels = disabled,all\n"
PHASES = ("building", "warming", "measuring", "confirming", "explaining", "waiting")


SIZE = {"width": WIDTH, "image": IMAGE}  # --width and --image change it (a quick try of the script)


def base_model() -> onnx.ModelProto:
    return resnet50_model(SIZE["width"], BLOCKS, SIZE["image"])


CASES: dict[str, Callable[[], onnx.ModelProto]] = {
    "unchanged": base_model,
    "re-export": lambda: reexported(base_model()),
    "+10%": lambda: resnet50_model(SIZE["width"], SLOWER_BLOCKS, SIZE["image"]),
}


@dataclass
class Check:
    """One latency item of one process."""

    level: str
    verdict: str
    path: str
    seconds: dict[str, float]
    rounds: int
    runs: int
    decided_by: str
    change: str
    item_s: float  # JUnit's time of the item
    median_ms: float  # the median run of the measurement that decided (NaN when nothing was timed)

    def seconds_total(self) -> float:
        return sum(self.seconds.get(phase, 0.0) for phase in PHASES)


@dataclass
class Process:
    """One timed pytest process."""

    case: str
    trial: int
    wall_s: float
    summary: str
    checks: list[Check] = field(default_factory=list)
    items_s: dict[str, float] = field(default_factory=dict)  # item name -> JUnit time
    failed: list[str] = field(default_factory=list)  # the items that failed, by name


def junit_times(path: Path) -> dict[str, float]:
    """Item name (``latency[cpu-all]``) -> seconds, from pytest's JUnit XML."""
    if not path.exists():
        return {}
    times: dict[str, float] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        times[case.get("name", "")] = float(case.get("time") or 0.0)
    return times


def level_of(record: dict[str, Any]) -> str:
    variant = str(record.get("variant", ""))
    return variant.rsplit("-", 1)[-1] if "-" in variant else variant


def run_pytest(where: Path, case: str, trial: int, extra: Sequence[str]) -> Process:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CI", None)
    report, junit = where / "report.json", where / "junit.xml"
    report.unlink(missing_ok=True)
    junit.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q"]
    argv += [f"--ortperf-report={report}", f"--junitxml={junit}", *extra]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(argv)} in {where} exited {done.returncode}:\n{done.stdout[-3000:]}")
    summary = lines[-1].strip("= ") if lines else ""
    process = Process(case, trial, wall, summary, items_s=junit_times(junit))
    process.failed = sorted(
        name.split("::")[-1] for name in re.findall(r"^FAILED (\S+)", done.stdout, flags=re.M)
    )
    if report.exists():
        for record in json.loads(report.read_text()).get("checks", []):
            if record.get("kind") != "latency":
                continue
            level = level_of(record)
            current = record.get("current") or {}
            change = record.get("change") or {}
            process.checks.append(
                Check(
                    level=level,
                    verdict=str(record.get("verdict", "")),
                    path=str(record.get("path", "")),
                    seconds={k: float(v) for k, v in (record.get("seconds") or {}).items()},
                    rounds=int(current.get("rounds") or 0),
                    runs=int(current.get("runs") or 0),
                    decided_by=str(record.get("decided_by", "")),
                    change=str(change.get("text", "") or record.get("change_summary", "")),
                    median_ms=float(current.get("median_ms") or math.nan),
                    item_s=next(
                        (
                            t
                            for name, t in process.items_s.items()
                            if name.startswith("latency") and level in name
                        ),
                        float("nan"),
                    ),
                )
            )
    process.checks.sort(key=lambda c: c.level)
    return process


def campaign(
    trials: int, seed: int, log: Callable[[str], None], *, stored: bool = False
) -> tuple[Process, list[Process], dict[str, str]]:
    """The update, then every case's processes. ``stored``: the model is never committed, so no
    recorded model can be rebuilt and every changed model is judged by this hardware's stored figures."""
    sizes: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="ortperf-large-") as tmp:
        where = Path(tmp)
        (where / "models").mkdir()
        (where / "pytest.ini").write_text(INI)
        onnx.save(base_model(), where / MODEL)
        sizes["model"] = f"{(where / MODEL).stat().st_size / 1e6:.1f} MB"
        git(where, "init", "-q")
        git(where, "add", "pytest.ini" if stored else "-A")
        git(where, "commit", "-qm", "ini" if stored else "model")
        update = run_pytest(where, "update", 0, ["--ortperf-update"])
        log(f"update: {update.wall_s:.1f} s, {update.summary}")
        git(where, "add", "baselines" if stored else "-A")
        git(where, "commit", "-qm", "baselines")
        rng = random.Random(seed)
        models = {name: make() for name, make in CASES.items()}
        processes: list[Process] = []
        for trial in range(1, trials + 1):
            order = list(CASES)
            rng.shuffle(order)
            for case in order:
                onnx.save(models[case], where / MODEL)
                process = run_pytest(where, case, trial, [])
                if stored:  # the recorded bytes again (the builder is deterministic)
                    onnx.save(models["unchanged"], where / MODEL)
                else:
                    git(where, "checkout", "--", "models")
                processes.append(process)
                verdicts = ", ".join(
                    f"{c.level} {c.verdict} {c.seconds_total():.1f} s" for c in process.checks
                )
                log(f"trial {trial} {case}: {process.wall_s:.1f} s, {process.summary}; {verdicts}")
    return update, processes, sizes


def fmt_seconds(seconds: dict[str, float]) -> str:
    shown = [(phase, seconds.get(phase, 0.0)) for phase in PHASES if seconds.get(phase, 0.0) >= 0.005]
    return ", ".join(f"{phase} {value:.2f}" for phase, value in shown) or "-"


def spread(values: Sequence[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def report(
    update: Process,
    processes: list[Process],
    sizes: dict[str, str],
    *,
    started: str,
    load_start: str,
    load_end: str,
    sampled: str,
    argv: Sequence[str],
) -> str:
    cpu = cpu_fields()
    out = [
        "# A large model: ResNet-50-shaped, at `disabled` and `all`",
        "",
        f"Run {started}, {cpu.get('model name', 'unknown CPU')}, {os.cpu_count()} cores; load average at "
        f"the start {load_start}, at the end {load_end}; {sampled}. Other engineers' test runs may have "
        f"shared the machine (other pytest processes at the start: {other_pytest_processes()}); "
        f"other benchmarks were kept out by a shared lock. Code: {code_state()}.",
        "",
        f"Command: `python -m benchmarks.large_model {' '.join(argv)}`",
        "",
        f"Model: `resnet50_model(width={SIZE['width']}, blocks={BLOCKS}, image={SIZE['image']})`, "
        f"{sizes.get('model', '?')}; "
        f"+10%: `blocks={SLOWER_BLOCKS}`; re-export: `reexported()` of the model. Default settings "
        "(one intra-op thread, canary on, `--ortperf-budget` 4 s, `--ortperf-ab-budget` 3 s, "
        "A/B threshold 3%). "
        "6 items a process: latency, accuracy, graph at `disabled` and `all`. Wall = a whole "
        "`python -m pytest` process; check s = the latency record's `seconds`, summed; item s = JUnit's time "
        "of the latency item (setup + call + teardown). Rounds x runs are those of the measurement that "
        "decided (a confirmation's when there was one).",
        "",
        *(
            [
                "Route: `--stored`: the model was never committed, so no recorded model could be rebuilt; "
                "a changed model is judged by this hardware's stored figures.",
                "",
            ]
            if "--stored" in argv
            else []
        ),
        "## Per case and level (median, range over trials)",
        "",
        "| case | level | wall s (process) | latency item s | check s | verdicts | "
        "phases (median s) | rounds / runs |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for case in ["update", *CASES]:
        group = [update] if case == "update" else [p for p in processes if p.case == case]
        levels = sorted({c.level for p in group for c in p.checks})
        for level in levels:
            checks = [c for p in group for c in p.checks if c.level == level]
            verdicts: dict[str, int] = {}
            for check in checks:
                verdicts[check.verdict] = verdicts.get(check.verdict, 0) + 1
            phases = {
                phase: statistics.median([c.seconds.get(phase, 0.0) for c in checks]) for phase in PHASES
            }
            shapes = sorted({f"{c.rounds}/{c.runs}" for c in checks})
            out.append(
                f"| {case} | {level} | {spread([p.wall_s for p in group])} | "
                f"{spread([c.item_s for c in checks])} | {spread([c.seconds_total() for c in checks])} | "
                f"{', '.join(f'{v} {n}/{len(checks)}' for v, n in verdicts.items())} | "
                f"{fmt_seconds(phases)} | {', '.join(shapes)} |"
            )
    out += ["", "## Each process", ""]
    out += [
        "| trial | case | wall s | pytest says | level | verdict | item s | phases s | rounds / runs | "
        "median ms | change | decided by |"
    ]
    out += ["| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for process in [update, *processes]:
        for check in process.checks:
            out.append(
                f"| {process.trial or '-'} | {process.case} | {process.wall_s:.1f} | {process.summary}"
                f"{' (' + ', '.join(process.failed) + ')' if process.failed else ''} | "
                f"{check.level} | {check.verdict} | {check.item_s:.1f} | {fmt_seconds(check.seconds)} | "
                f"{check.rounds}/{check.runs} | {check.median_ms:.1f} | {check.change or '-'} | "
                f"{check.decided_by} |"
            )
    out += ["", "## Every item's time (JUnit, s)", ""]
    names = sorted({name for p in [update, *processes] for name in p.items_s})
    out += [
        "| trial | case | " + " | ".join(names) + " |",
        "| --- | --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for process in [update, *processes]:
        out.append(
            f"| {process.trial or '-'} | {process.case} | "
            + " | ".join(f"{process.items_s.get(name, float('nan')):.1f}" for name in names)
            + " |"
        )
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=3, help="rounds of the three cases (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the cases' shuffled order")
    parser.add_argument("--out", type=Path, help="the markdown report (default: stdout)")
    parser.add_argument("--json", type=Path, help="every process's figures, as JSON")
    parser.add_argument(
        "--stored",
        action="store_true",
        help="never commit the model: no recorded model can be rebuilt, so a changed model is judged by "
        "this hardware's stored figures instead of side by side",
    )
    parser.add_argument(
        "--width", type=int, default=WIDTH, help=f"the model's stem channels (default {WIDTH})"
    )
    parser.add_argument("--image", type=int, default=IMAGE, help=f"the input image's side (default {IMAGE})")
    args = parser.parse_args(argv)
    SIZE.update(width=args.width, image=args.image)
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    load_start = loadavg()
    sampler = Sampler()
    sampler.start()
    update, processes, sizes = campaign(
        args.trials, args.seed, lambda line: print(line, file=sys.stderr, flush=True), stored=args.stored
    )
    sampled = sampler.stop()
    text = report(
        update,
        processes,
        sizes,
        started=started,
        load_start=load_start,
        load_end=loadavg(),
        sampled=sampled,
        argv=sys.argv[1:] if argv is None else argv,
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                [{**p.__dict__, "checks": [c.__dict__ for c in p.checks]} for p in [update, *processes]],
                indent=1,
            )
        )
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
