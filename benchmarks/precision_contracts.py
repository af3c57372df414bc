"""Precision variants and relative contracts: the trade-off table, how repeatable a speedup's interval
is, whether a contract set just below the measured speedup stays quiet, and what a contract costs.

Questions:

1. The trade-off table (``--ort-precisions``, docs/precision.md) of each example model on this CPU:
   levels ``disabled,all`` x precisions ``fp32,fp16,int8-dynamic,int8-static``, every non-base
   variant's speedup against ``cpu-disabled`` (fp32) measured side by side by a contract, with its
   interval, beside its accuracy against fp32 and its size.
2. How repeatable is each speedup and its interval over ``--runs`` identical runs: the spread of the
   point estimates and of the bounds, and do the intervals of all runs overlap?
3. A/A: with each variant's contract set at 0.9 x its median measured speedup from 2 (a bound 10%
   below what the variant delivers), do ``--runs`` identical runs stay quiet? Nothing changes
   between runs, so every ``FAILED`` is a false failure (target 0).
4. What does a contract cost: its ``seconds`` by phase (building, warming, measuring, waiting for the
   timing lock) and the rounds it used, and the wall time of a pytest run with contracts against the
   same run without them.

Method: every measurement is a real ``pytest`` process (``python -m pytest -p no:cacheprovider -q
--ortperf-report=r.json``, ``CI`` unset) with the plugin, on a temporary project per model that holds
a copy of the model, a ``pytest.ini`` like ``examples/pytest.ini`` (``ortperf_providers = cpu``,
``ortperf_opt_levels = disabled,all``, ``ort_precisions = fp32,fp16,int8-dynamic,int8-static``,
``ortperf_budget = 1``, ``ortperf_missing = pass``, ``filterwarnings = error``) and one test::

    @pytest.mark.ort_model("<model>.onnx", **marker)
    def test_precision(ort_perf, ort_variant):
        ort_perf.check_latency(); ort_perf.check_accuracy()
        ort_perf.check_speedup(than="cpu-disabled", at_least=BOUNDS[ort_variant.id])  # not on the base

(each check's failure is collected and the test fails once at the end, so every check of every
variant is measured and lands in the JSON report). Which checks run and each variant's bound come
from a ``plan.json`` beside the test, rewritten before each run. The processes import a copy of
``pytest_ortperf/`` taken at the start (first on ``PYTHONPATH``), so edits made to the working tree
during the run do not leak in. Models:

- ``small_cnn``: ``examples/models/small_cnn.onnx``.
- ``encoder``: ``examples/models/encoder.onnx`` at ``dims={"batch": 1, "sequence": 128}``, token
  ids in [0, 512) and an all-ones mask (``examples/test_encoder.py``'s ``int_range``).
- ``light_resnet50``: the onnx wheel's ``backend/test/data/light/light_resnet50.onnx``. Its weights
  are constant fills, so its accuracy figures mean nothing (every class scores about the same); its
  latency is a real ResNet-50's.

Per model, in this order:

0. One run with contracts (``faster_than`` 0.01: a bound that always holds, only so that each
   speedup is measured side by side with an interval); it builds the fp16/int8 models into the
   project's ``.ortperf/precision/`` cache, which every later run reuses. Reported as the first run.
1-2. ``runs`` runs with latency, accuracy and the 0.01 contracts ("full"). After each of the first
   ``--plain-runs`` of them, the same run without contracts (latency and accuracy only, "plain"),
   for 4. The trade-off table shown is the first full run's; the repeatability table is over all.
3. ``runs`` runs of the contracts alone, each non-base variant held to ``faster_than`` 0.9 x its
   median speedup in 1-2 (``contracts``). Counts of ok / inconclusive / FAILED.
4. From every contract record: ``seconds`` and ``speedup.rounds``; wall times of full, plain and
   contracts-only runs.

Run from the repository root, on a machine doing nothing else (about 25 minutes on a 2-core machine
with the defaults; progress on stderr)::

    python benchmarks/precision_contracts.py --runs 10 --out benchmarks/results/precision_contracts.md \\
        --trace benchmarks/results/precision_contracts.json.gz
    python benchmarks/precision_contracts.py --runs 1 --plain-runs 1 --models small_cnn  # smoke
    python benchmarks/precision_contracts.py --from-trace benchmarks/results/precision_contracts.json.gz \
        --out benchmarks/results/precision_contracts.md  # the report again, from the recorded runs

``--models small_cnn,encoder,light_resnet50:5`` (the default) gives a model its own number of runs
(steps 2 and 3).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.conditions import (  # noqa: E402
    Sampler,
    code_state,
    cpu_fields,
    loadavg,
    other_pytest_processes,
)

LIGHT = Path(onnx.__file__).parent / "backend/test/data/light"
ENCODER_MARKER = (
    '{"dims": {"batch": 1, "sequence": 128}, "int_range": {"input_ids": (0, 512), "attention_mask": (1, 2)}}'
)
# name -> (source file, the ort_model marker's keyword arguments as Python source)
MODELS: dict[str, tuple[Path, str]] = {
    "small_cnn": (REPO / "examples/models/small_cnn.onnx", "{}"),
    "encoder": (REPO / "examples/models/encoder.onnx", ENCODER_MARKER),
    "light_resnet50": (LIGHT / "light_resnet50.onnx", "{}"),
}
LEVELS = ("disabled", "all")
PRECISIONS = ("fp32", "fp16", "int8-dynamic", "int8-static")
BASE = "cpu-disabled"
ALWAYS = 0.01  # a speedup bound that always holds: the contract only measures
AA_FRACTION = 0.9  # the A/A contract: 10% below the median measured speedup

PYTEST_INI = f"""[pytest]
ortperf_providers = cpu
ortperf_opt_levels = {",".join(LEVELS)}
ort_precisions = {",".join(PRECISIONS)}
ortperf_budget = 1
ortperf_missing = pass
addopts = -ra
filterwarnings = error
"""

TEST_FILE = '''"""Generated by benchmarks/precision_contracts.py: every check of every variant is measured."""

import json
from pathlib import Path

import pytest

PLAN = json.loads(Path(__file__).with_name("plan.json").read_text())


@pytest.mark.ort_model("{model}", **{marker})
def test_precision(ort_perf, ort_variant):
    checks = []
    if "latency" in PLAN["checks"]:
        checks.append(ort_perf.check_latency)
    if "accuracy" in PLAN["checks"]:
        checks.append(ort_perf.check_accuracy)
    bound = PLAN["bounds"].get(ort_variant.id)
    if bound is not None:
        checks.append(lambda: ort_perf.check_speedup(than="{base}", at_least=bound))
    problems = []
    for check in checks:
        try:
            check()
        except pytest.fail.Exception as exc:
            problems.append(str(exc))
    if problems:
        pytest.fail("\\n".join(problems))
'''


def variants() -> list[str]:
    found = []
    for level in LEVELS:
        for precision in PRECISIONS:
            found.append(f"cpu-{level}" + ("" if precision == "fp32" else f"-{precision}"))
    return found


NON_BASE = [v for v in variants() if v != BASE]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- the machine and the code -------------------------------------------------------------------


def cpu_description() -> str:
    fields = cpu_fields()
    flags = set(fields.get("flags", "").split())
    marks = ", ".join(
        f"{flag} {'yes' if flag in flags else 'no'}" for flag in ("avx2", "avx512f", "avx512_vnni", "avxvnni")
    )
    return (
        f"{fields.get('model name', 'unknown')} (cpu family {fields.get('cpu family', '?')}, model "
        f"{fields.get('model', '?')}, stepping {fields.get('stepping', '?')}); {marks}; "
        f"{os.cpu_count()} logical CPUs ({fields.get('cpu cores', '?')} cores per socket in /proc/cpuinfo)"
    )


def package_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted((root / "pytest_ortperf").rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


# --- one pytest run -----------------------------------------------------------------------------


@dataclass
class Run:
    model: str
    step: str  # first, full, plain, contracts
    index: int
    wall_s: float
    rc: int
    last: str
    gate: str
    clock: str
    report: dict[str, Any] = field(default_factory=dict)

    def contracts(self) -> dict[str, dict[str, Any]]:
        return {str(c["variant"]): c for c in self.report.get("checks", []) if c.get("kind") == "contract"}

    def waiting_s(self) -> float:
        """Seconds this run's checks waited for the timing lock (another process was timing)."""
        return sum(float((c.get("seconds") or {}).get("waiting", 0.0)) for c in self.report.get("checks", []))

    def failed_checks(self) -> list[str]:
        return [
            f"{c.get('kind')} {c.get('variant')}" for c in self.report.get("checks", []) if c.get("failed")
        ]

    def rows(self) -> dict[str, dict[str, Any]]:
        tables = self.report.get("tradeoffs") or []
        return {str(r["variant"]): r for t in tables for r in t.get("rows", [])}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        report = {"machine": data.get("machine"), "checks": data["checks"], "tradeoffs": data["tradeoffs"]}
        return cls(
            data["model"],
            data["step"],
            data["index"],
            data["wall_s"],
            data["rc"],
            data["last"],
            data["gate"],
            data["clock"],
            report,
        )

    def as_dict(self) -> dict[str, Any]:
        checks = [
            {
                k: c.get(k)
                for k in (
                    "kind",
                    "variant",
                    "verdict",
                    "failed",
                    "speedup",
                    "contract",
                    "seconds",
                    "current",
                    "message",
                )
            }
            for c in self.report.get("checks", [])
        ]
        return {
            "model": self.model,
            "step": self.step,
            "index": self.index,
            "wall_s": round(self.wall_s, 3),
            "rc": self.rc,
            "last": self.last,
            "gate": self.gate,
            "clock": self.clock,
            "machine": self.report.get("machine"),
            "checks": checks,
            "tradeoffs": self.report.get("tradeoffs"),
        }


class Project:
    """A temporary project of one model: the model, pytest.ini, the test and its plan."""

    def __init__(self, name: str, root: Path, package: Path) -> None:
        self.name = name
        self.root = root
        self.package = package
        source, marker = MODELS[name]
        root.mkdir(parents=True)
        shutil.copyfile(source, root / source.name)
        (root / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
        (root / "test_precision.py").write_text(
            TEST_FILE.replace("{model}", source.name).replace("{marker}", marker).replace("{base}", BASE),
            encoding="utf-8",
        )
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)

    def run(self, step: str, index: int, checks: Sequence[str], bounds: dict[str, float]) -> Run:
        (self.root / "plan.json").write_text(json.dumps({"checks": list(checks), "bounds": bounds}))
        report = self.root / "r.json"
        report.unlink(missing_ok=True)
        env = {**os.environ, "PYTHONPATH": str(self.package)}
        env.pop("CI", None)
        clock = time.strftime("%H:%M:%S")
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--ortperf-report={report}"],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        lines = (done.stdout + done.stderr).splitlines()
        last = next((line for line in reversed(lines) if line.strip()), "").strip("= ")
        gate = next((line for line in lines if line.startswith("gate time:")), "")
        data = json.loads(report.read_text()) if report.exists() else {}
        run = Run(self.name, step, index, wall, done.returncode, last, gate, clock, data)
        if done.returncode != 0:
            log(f"{self.name} {step} {index}: exited {done.returncode}:\n" + "\n".join(lines[-40:]))
        return run


def which_package(package: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", "import pytest_ortperf; print(pytest_ortperf.__file__)"],
        env={**os.environ, "PYTHONPATH": str(package)},
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),
    )
    return done.stdout.strip() or done.stderr.strip()[-200:]


# --- figures ------------------------------------------------------------------------------------


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def spread(values: Sequence[float], digits: int = 2) -> str:
    """min / median / max."""
    if not values:
        return "-"
    return f"{min(values):.{digits}f} / {statistics.median(values):.{digits}f} / {max(values):.{digits}f}"


def confidence(speedup: dict[str, Any]) -> str:
    value = speedup.get("confidence")
    return "?" if not isinstance(value, (int, float)) else f"{round(value * 100, 2):g}%"


def size(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1024:.1f} KiB" if value < 1024 * 1024 else f"{value / 1024 / 1024:.1f} MiB"


def tradeoff_table(run: Run) -> list[str]:
    lines = [
        "| variant | median | speedup vs cpu-disabled (interval; rounds, confidence) | cosine vs fp32 | "
        "SQNR vs fp32 | accuracy | size |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    contracts = run.contracts()
    for variant, row in run.rows().items():
        sp = row.get("speedup") or {}
        if variant == BASE:
            speedup = "1.00x (base)"
        elif sp.get("low") is not None:
            measured = contracts.get(variant, {}).get("speedup") or {}
            speedup = (
                f"{sp['value']:.2f}x ({sp['low']:.2f}..{sp['high']:.2f}; {measured.get('rounds', '?')}, "
                f"{confidence(measured)})"
            )
        elif sp:
            speedup = f"{sp['value']:.2f}x (medians)"
        else:
            speedup = "-"
        sqnr = row.get("sqnr_db")
        sqnr_text = "-" if sqnr is None else (f"{sqnr}" if isinstance(sqnr, str) else f"{sqnr:.1f} dB")
        calibration = " (synthetic calibration)" if "synthetic" in str(row.get("calibration", "")) else ""
        median = row.get("median_ms")
        lines.append(
            f"| {variant} | {'-' if median is None else f'{median:.4g} ms'} | {speedup} | "
            f"{fmt(row.get('cosine'), 5)} | {sqnr_text} | {row.get('accuracy') or '-'}{calibration} | "
            f"{size(row.get('bytes'))} |"
        )
    return lines


def speedups(runs: Sequence[Run], variant: str) -> list[dict[str, float]]:
    found = []
    for run in runs:
        contract = run.contracts().get(variant)
        if contract and contract.get("speedup"):
            found.append(contract["speedup"])
    return found


def repeatability_table(runs: Sequence[Run]) -> list[str]:
    lines = [
        "| variant | runs | point estimate, min / median / max | low bound, min / median / max | "
        "high bound, min / median / max | width / point, median | all intervals overlap | pairs "
        "overlapping | intervals holding the median point | rounds | latency median ms, min / median / max |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for variant in NON_BASE:
        found = speedups(runs, variant)
        if not found:
            lines.append(f"| {variant} | 0 | - | - | - | - | - | - | - | - | - |")
            continue
        values = [s["value"] for s in found]
        lows = [s["low"] for s in found]
        highs = [s["high"] for s in found]
        widths = [(s["high"] - s["low"]) / s["value"] for s in found]
        overlap = max(lows) <= min(highs)
        pairs = [(a, b) for i, a in enumerate(found) for b in found[i + 1 :]]
        overlapping = sum(max(a["low"], b["low"]) <= min(a["high"], b["high"]) for a, b in pairs)
        middle = statistics.median(values)
        holding = sum(s["low"] <= middle <= s["high"] for s in found)
        rounds = sorted({f"{int(s['rounds'])} at {confidence(s)}" for s in found})
        medians = [
            float(run.rows()[variant]["median_ms"])
            for run in runs
            if run.rows().get(variant, {}).get("median_ms") is not None
        ]
        lines.append(
            f"| {variant} | {len(found)} | {spread(values)} | {spread(lows)} | {spread(highs)} | "
            f"{statistics.median(widths) * 100:.1f}% | {'yes' if overlap else '**no**'} "
            f"(max low {max(lows):.2f}, min high {min(highs):.2f}) | {overlapping}/{len(pairs)} | "
            f"{holding}/{len(found)} | {', '.join(rounds)} | {spread(medians, 4)} |"
        )
    base_medians = [
        float(run.rows()[BASE]["median_ms"]) for run in runs if run.rows().get(BASE, {}).get("median_ms")
    ]
    lines.append(
        f"| {BASE} (base) | {len(base_medians)} | - | - | - | - | - | - | - | - | {spread(base_medians, 4)} |"
    )
    return lines


def aa_table(runs: Sequence[Run], bounds: dict[str, float]) -> tuple[list[str], list[str], dict[str, int]]:
    lines = [
        "| variant | bound (0.9 x median speedup) | ok | inconclusive | FAILED | other | measured point, "
        "min / median / max | low bound, min / median / max | rounds used (count) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    failures: list[str] = []
    totals = {"ok": 0, "inconclusive": 0, "FAILED": 0, "other": 0}
    for variant in NON_BASE:
        verdicts = {"ok": 0, "inconclusive": 0, "FAILED": 0, "other": 0}
        found = []
        for run in runs:
            contract = run.contracts().get(variant)
            if contract is None:
                verdicts["other"] += 1
                continue
            verdict = str(contract.get("verdict"))
            key = verdict if verdict in verdicts else "other"
            verdicts[key] += 1
            if contract.get("speedup"):
                found.append(contract["speedup"])
            if verdict == "FAILED":
                sp = contract.get("speedup") or {}
                failures.append(
                    f"- {run.model} run {run.index} ({run.clock}), {variant}: bound {bounds[variant]:.3f}, "
                    f"measured {sp.get('value', 0):.3f} ({sp.get('low', 0):.3f}..{sp.get('high', 0):.3f}, "
                    f"{sp.get('rounds', '?')} rounds)"
                )
        for key, count in verdicts.items():
            totals[key] += count
        rounds: dict[int, int] = {}
        for s in found:
            rounds[int(s["rounds"])] = rounds.get(int(s["rounds"]), 0) + 1
        lines.append(
            f"| {variant} | {bounds.get(variant, math.nan):.3f} | {verdicts['ok']} | "
            f"{verdicts['inconclusive']} | "
            f"{'**' + str(verdicts['FAILED']) + '**' if verdicts['FAILED'] else 0} | {verdicts['other']} | "
            f"{spread([s['value'] for s in found])} | {spread([s['low'] for s in found])} | "
            f"{', '.join(f'{r} ({n})' for r, n in sorted(rounds.items())) or '-'} |"
        )
    return lines, failures, totals


PHASES = ("building", "warming", "measuring", "waiting")


def contract_costs(runs: Sequence[Run]) -> dict[str, list[float]]:
    costs: dict[str, list[float]] = {"total": [], "rounds": [], **{p: [] for p in PHASES}}
    for run in runs:
        for contract in run.contracts().values():
            seconds = contract.get("seconds") or {}
            costs["total"].append(sum(float(v) for v in seconds.values()))
            for phase in PHASES:
                costs[phase].append(float(seconds.get(phase, 0.0)))
            costs["rounds"].append(float((contract.get("speedup") or {}).get("rounds", 0)))
    return costs


def cost_row(model: str, what: str, runs: Sequence[Run]) -> str:
    costs = contract_costs(runs)
    if not costs["total"]:
        return f"| {model} | {what} | 0 | - | - | - | - | - | - | - |"
    med = {k: statistics.median(v) for k, v in costs.items()}
    return (
        f"| {model} | {what} | {len(costs['total'])} | {med['total']:.2f} | {max(costs['total']):.2f} | "
        f"{med['building']:.3f} | {med['warming']:.2f} | {med['measuring']:.2f} | "
        f"{med['waiting']:.2f} (max {max(costs['waiting']):.2f}) | "
        f"{spread(costs['rounds'], 0)} |"
    )


def derived_table(per_model: dict[str, Any]) -> list[str]:
    lines = [
        "| model | level | fp16 / fp32 | int8-dynamic / fp32 | int8-static / fp32 |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, data in per_model.items():
        medians = {}
        for variant in NON_BASE:
            values = [s["value"] for s in speedups(data["full"], variant)]
            if values:
                medians[variant] = statistics.median(values)
        medians[BASE] = 1.0
        for level in LEVELS:
            fp32 = medians.get(f"cpu-{level}")
            cells = []
            for precision in PRECISIONS[1:]:
                value = medians.get(f"cpu-{level}-{precision}")
                cells.append("-" if value is None or not fp32 else f"{value / fp32:.2f}")
            lines.append(f"| {name} | {level} | {' | '.join(cells)} |")
    return lines


def walls(runs: Sequence[Run], *, waiting: bool = True) -> list[float]:
    """Wall seconds of each run; ``waiting=False``: less what its checks waited for the timing lock."""
    return [r.wall_s - (0.0 if waiting else r.waiting_s()) for r in runs]


# --- main ---------------------------------------------------------------------------------------


def parse_models(text: str, runs: int) -> list[tuple[str, int]]:
    chosen = []
    for item in text.split(","):
        if not item.strip():
            continue
        name, _, count = item.strip().partition(":")
        if name not in MODELS:
            raise SystemExit(f"unknown model {name!r} (known: {', '.join(MODELS)})")
        chosen.append((name, int(count) if count else runs))
    return chosen


def measure(
    args: argparse.Namespace, models: Sequence[tuple[str, int]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every run of every model; the conditions they ran under and each model's runs by step."""
    from pytest_ortperf.ort.runtime import runtime_info
    from pytest_ortperf.store.machine import detect_machine

    runtime, machine = runtime_info(), detect_machine()
    started_at = dt.datetime.now(dt.timezone.utc)
    started = time.monotonic()
    load_start, others_start = loadavg(), other_pytest_processes()
    code_start = code_state()
    work = Path(tempfile.mkdtemp(prefix="ortperf-precision-"))
    package = work / "package"
    shutil.copytree(
        REPO / "pytest_ortperf", package / "pytest_ortperf", ignore=shutil.ignore_patterns("__pycache__")
    )
    digest = package_digest(package)
    imported = which_package(package)
    sampler = Sampler(period_s=10.0)
    sampler.start()
    log(f"precision_contracts: {cpu_description()}; {runtime.describe()}; load {load_start}; {code_start}")
    log(f"package copy {digest} imported from {imported}")

    per_model: dict[str, dict[str, Any]] = {}
    try:
        for name, runs in models:
            project = Project(name, work / name, package)
            always = {v: ALWAYS for v in NON_BASE}
            model_started = time.monotonic()
            first = project.run("first", 0, ["latency", "accuracy"], always)
            log(f"{name} first run: {first.wall_s:.1f} s, {first.last}")
            full: list[Run] = []
            plain: list[Run] = []
            for index in range(1, runs + 1):
                run = project.run("full", index, ["latency", "accuracy"], always)
                full.append(run)
                log(f"{name} full {index}: {run.wall_s:.1f} s, {run.last}")
                if index <= args.plain_runs:
                    run = project.run("plain", index, ["latency", "accuracy"], {})
                    plain.append(run)
                    log(f"{name} plain {index}: {run.wall_s:.1f} s, {run.last}")
            bounds = {}
            for variant in NON_BASE:
                values = [s["value"] for s in speedups(full, variant)]
                if values:
                    bounds[variant] = round(AA_FRACTION * statistics.median(values), 4)
            aa: list[Run] = []
            for index in range(1, runs + 1):
                run = project.run("contracts", index, [], bounds)
                aa.append(run)
                verdicts = [str(c.get("verdict")) for c in run.contracts().values()]
                log(
                    f"{name} A/A {index}: {run.wall_s:.1f} s, {run.last}; "
                    + ", ".join(f"{v} {verdicts.count(v)}" for v in sorted(set(verdicts)))
                )
            per_model[name] = {
                "first": first,
                "full": full,
                "plain": plain,
                "aa": aa,
                "bounds": bounds,
                "minutes": (time.monotonic() - model_started) / 60,
            }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    finished = time.monotonic()
    code_end = code_state()
    fields = cpu_fields()
    meta = {
        "date": args.date,
        "started": started_at.isoformat(timespec="seconds"),
        "minutes": round((finished - started) / 60, 2),
        "model_minutes": {n: round(d["minutes"], 2) for n, d in per_model.items()},
        "cpu": cpu_description(),
        "model_name": fields.get("model name", "?"),
        "machine": machine.name,
        "runtime": runtime.describe(),
        "onnx": onnx.__version__,
        "python": sys.version.split()[0],
        "load_start": load_start,
        "others_start": others_start,
        "load_end": loadavg(),
        "conditions": sampler.stop(),
        "code": f"{code_start}"
        + ("; unchanged at the end" if code_end == code_start else f"; at the end: {code_end}"),
        "digest": digest,
    }
    return meta, per_model


def render(meta: dict[str, Any], per_model: dict[str, Any]) -> str:
    """The markdown report."""
    lines = [
        "# Precision variants and relative contracts: trade-offs, repeatability, A/A, cost",
        "",
        f"- date {meta['date']}; started {meta['started']}, took {meta['minutes']:.1f} min ("
        + ", ".join(f"{n} {m:.1f} min" for n, m in meta["model_minutes"].items())
        + ")",
        f"- machine: {meta['cpu']}; `{meta['machine']}`. A shared 2-core cloud VM "
        f"({meta['model_name']}): its speed switches between states every few seconds.",
        f"- {meta['runtime']}; onnx {meta['onnx']}; python {meta['python']}; CPU provider at "
        "the plugin's default session settings (one intra-op thread, no spinning)",
        f"- load average at start {meta['load_start']} (other pytest processes: {meta['others_start']}), "
        f"at end {meta['load_end']}; {meta['conditions']}",
        f"- code: {meta['code']}; the pytest processes imported a copy of `pytest_ortperf/` taken at the "
        f"start (digest {meta['digest']})",
        "",
        "Method: see the docstring of `benchmarks/precision_contracts.py`. Each row of every table comes "
        "from the JSON report (`--ortperf-report`) of a real pytest run: `tradeoffs` for the tables, the "
        "`checks` of kind `contract` for speedups, verdicts, `seconds` and rounds. A speedup is "
        "`cpu-disabled`'s time over the variant's (above 1: faster), the median of paired round ratios "
        "with its sign-test interval. The interval's confidence is that of the look that stopped the "
        "measurement: 99.9% at an early look (11, 16, 24, 40 rounds), the rest of the 1% at the last "
        "look, which comes when the 3 s side-by-side budget is spent: 99.4% at 80 rounds (small_cnn, "
        "encoder), 99.1% at 12-13 rounds (light_resnet50, whose pair of runs takes ~0.25 s). At 11 "
        "rounds and 99.9% the sign-test interval is the whole range of the 11 paired ratios.",
        "",
        "`light_resnet50`: the onnx wheel's light model, whose weights are constant fills. Its latency "
        "is a real ResNet-50's; its accuracy figures (cosine, SQNR) mean nothing.",
        "",
        "## 1. Trade-off tables",
        "",
        "The first of the repeated full runs (step 2) of each model; every non-base variant held to "
        f"`faster_than={{'{BASE}': {ALWAYS}}}` (always holds: it only measures the pair side by side).",
        "",
    ]
    for name, data in per_model.items():
        shown = data["full"][0] if data["full"] else data["first"]
        lines += [
            f"### {name}",
            "",
            f"Run {shown.index} at {shown.clock}, {shown.wall_s:.1f} s, `{shown.last}`.",
            "",
        ]
        lines += [*tradeoff_table(shown), ""]
    lines += [
        "## 2. Repeatability of each speedup interval",
        "",
        "The same full run repeated; per variant, over the runs: the point estimate and both bounds "
        "(min / median / max), the interval's width relative to its point (median), whether one "
        "speedup lies inside all the intervals (max low <= min high), how many pairs of runs have "
        "overlapping intervals, how many intervals hold the median of the point estimates, and the "
        "rounds the contracts used. `latency median` is each run's latency check of that variant "
        "(1 s budget), not the contract's.",
        "",
    ]
    for name, data in per_model.items():
        lines += [f"### {name} ({len(data['full'])} runs)", "", *repeatability_table(data["full"]), ""]
    lines += [
        "### Derived: each precision against fp32 at its own level",
        "",
        "Ratios of the median speedups of 2 (median speedup of the variant / median speedup of fp32 at "
        "the same level; above 1: faster than fp32 there). Derived from two contracts, each against "
        "`cpu-disabled`; not measured side by side with each other, so no interval.",
        "",
        *derived_table(per_model),
        "",
    ]
    lines += [
        "## 3. A/A: contracts set at 0.9 x the median measured speedup",
        "",
        "Each non-base variant held to `check_speedup(than='cpu-disabled', at_least=0.9 x its median "
        "speedup in 2)`, the contracts alone (no latency or accuracy check), repeated. Nothing changes "
        "between runs: `FAILED` is a false failure. `inconclusive` passes the test.",
        "",
    ]
    grand = {"ok": 0, "inconclusive": 0, "FAILED": 0, "other": 0}
    all_failures: list[str] = []
    for name, data in per_model.items():
        table, failures, totals = aa_table(data["aa"], data["bounds"])
        for key, count in totals.items():
            grand[key] += count
        all_failures += failures
        lines += [
            f"### {name} ({len(data['aa'])} runs, {sum(totals.values())} contracts)",
            "",
            *table,
            "",
            f"Totals: ok {totals['ok']}, inconclusive {totals['inconclusive']}, FAILED {totals['FAILED']}"
            + (f", other {totals['other']}" if totals["other"] else "")
            + ".",
            "",
        ]
    lines += [
        f"All models: {sum(grand.values())} contracts, ok {grand['ok']}, inconclusive "
        f"{grand['inconclusive']}, **FAILED {grand['FAILED']}**"
        + (f", other {grand['other']}" if grand["other"] else "")
        + ".",
        "",
    ]
    if all_failures:
        lines += ["False failures:", "", *all_failures, ""]
    lines += [
        "## 4. Time per contract",
        "",
        "From every contract record's `seconds` (phases of the contract itself: building the other "
        "variant and the extra sessions, warming both, measuring side by side, waiting for the "
        "timing lock that serializes timing across pytest processes) and `speedup.rounds`. Medians "
        "over all contracts of the runs named (7 per run).",
        "",
        "| model | runs | contracts | total s, median | total s, max | building | warming | measuring | "
        "waiting | rounds, min / median / max |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, data in per_model.items():
        lines.append(cost_row(name, f"full, bound {ALWAYS}", data["full"]))
        lines.append(cost_row(name, "A/A, bound 0.9 x", data["aa"]))
    lines += [
        "",
        "Wall time of the pytest process (start-up, collection, 8 variants' session builds, every "
        "check): the first run (builds the fp16 and int8 models into the cache) and, after it, full "
        "runs (latency + accuracy + 7 contracts), plain runs (latency + accuracy, no contract) and "
        "contracts-only runs (step 3). Min / median / max, s; then the same less the seconds the "
        "run's checks waited for the timing lock (another pytest process on the machine was timing).",
        "",
        "| model | first run | full | plain | contracts only | lock waits, s per run (full / plain / "
        "contracts, median) | full, less waits | plain, less waits | (full - plain) / 7, less waits |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, data in per_model.items():
        full_w, plain_w, aa_w = walls(data["full"]), walls(data["plain"]), walls(data["aa"])
        full_n, plain_n = walls(data["full"], waiting=False), walls(data["plain"], waiting=False)
        extra = (
            f"{(statistics.median(full_n) - statistics.median(plain_n)) / len(NON_BASE):.2f}"
            if full_n and plain_n
            else "-"
        )
        waits = " / ".join(
            f"{statistics.median(r.waiting_s() for r in data[k]):.1f}" if data[k] else "-"
            for k in ("full", "plain", "aa")
        )
        lines.append(
            f"| {name} | {data['first'].wall_s:.1f} | {spread(full_w, 1)} ({len(full_w)}) | "
            f"{spread(plain_w, 1)} ({len(plain_w)}) | {spread(aa_w, 1)} ({len(aa_w)}) | {waits} | "
            f"{spread(full_n, 1)} | {spread(plain_n, 1)} | {extra} |"
        )
    everything = [
        run
        for data in per_model.values()
        for run in (data["first"], *data["full"], *data["plain"], *data["aa"])
    ]
    bad = [r for r in everything if r.rc != 0]
    lines += [
        "",
        f"Runs that exited non-zero: {len(bad)} of {len(everything)}"
        + (" (the failed checks of each follow; no contract failed in them unless named)." if bad else "."),
    ]
    lines += [
        f"- {r.model} {r.step} {r.index}: rc {r.rc}, `{r.last}`; "
        f"failed: {', '.join(r.failed_checks()) or '-'}"
        for r in bad
    ]
    lines.append("")
    return "\n".join(lines)


def save_trace(path: Path, meta: dict[str, Any], per_model: dict[str, Any]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(
            {
                "meta": meta,
                "bounds": {n: d["bounds"] for n, d in per_model.items()},
                "runs": [
                    r.as_dict()
                    for d in per_model.values()
                    for r in (d["first"], *d["full"], *d["plain"], *d["aa"])
                ],
            },
            handle,
        )


def load_trace(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A trace written by ``--trace``, back into what :func:`render` takes."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    meta = data["meta"]
    per_model: dict[str, Any] = {}
    for row in data["runs"]:
        run = Run.from_dict(row)
        model = per_model.setdefault(
            run.model,
            {
                "first": None,
                "full": [],
                "plain": [],
                "aa": [],
                "bounds": data["bounds"].get(run.model, {}),
                "minutes": meta["model_minutes"].get(run.model, 0.0),
            },
        )
        if run.step == "first":
            model["first"] = run
        else:
            model[{"full": "full", "plain": "plain", "contracts": "aa"}[run.step]].append(run)
    return meta, per_model


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10, help="runs per model in steps 2 and 3")
    parser.add_argument("--plain-runs", type=int, default=3, help="runs without contracts per model (step 4)")
    parser.add_argument(
        "--models",
        default="small_cnn,encoder,light_resnet50:5",
        help="comma-separated; name:N gives a model N runs in steps 2 and 3",
    )
    parser.add_argument("--out", type=Path, help="write the markdown report here")
    parser.add_argument("--trace", type=Path, help="write every run's figures here (.json.gz)")
    parser.add_argument("--from-trace", type=Path, help="measure nothing: write the report of this trace")
    parser.add_argument("--date", default=dt.date.today().isoformat(), help="the date the report names")
    args = parser.parse_args(argv)
    if args.from_trace is not None:
        meta, per_model = load_trace(args.from_trace)
    else:
        meta, per_model = measure(args, parse_models(args.models, args.runs))
        if args.trace is not None:
            save_trace(args.trace, meta, per_model)
    text = render(meta, per_model)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
