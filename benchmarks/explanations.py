"""What saying why costs: a failure's explanation against the check it explains, and a pass's.

Question: every latency result worth explaining (a failure, an inconclusive result, an improvement
beyond the threshold) profiles a few untimed runs of both sides after the verdict, to say where the
time went at operator level (``seconds.explaining`` in the JSON record); every accuracy failure
against a rebuilt reference runs both models once more with every intermediate tensor kept, to
name the first diverging tensor (``gate/localisation.py`` over ``ort/divergence.py``; its cost ends
the message line: ``(1 run of each model, 0.02 s)``). What does that add to a failing check, in
seconds and as a share of the check? And does a passing check pay anything for it?

Method: each workload gets its own temporary git repository holding the model (committed, so a
changed model's check rebuilds the recorded one from git and compares side by side) and one test
file; ``pytest --ortperf-update`` records it once. Then, ``--repeats`` times, the workloads and their
conditions in turn, each a fresh ``python -m pytest`` process with this tree's package first on
``PYTHONPATH``, the model file overwritten before each run (the committed model stays the
reference):

- latency workloads (``--ortperf-budget=0.2 --ortperf-latency-threshold=20% --ortperf-max-cv=1000%``,
  as ``tests/plugin/test_explanations.py`` runs them):

  - ``mlp``: ``mlp_model(8, 128)`` at batch 16, grown to 12 layers (+50% work);
  - ``layernorm``: ``layer_norm_model(square="pow")`` at batch 16 x seq 128, re-exported with the
    square as ``Mul(d, d)``: ORT's LayerNormFusion no longer matches;
  - ``conv``: ``conv_stack_model(16, 32, 80)`` (about 10 ms a run), grown to 20 layers (+25%);

  each under four conditions, three that pass and one that fails: ``unchanged`` (the recorded
  bytes: the check compares stored figures), ``re-export`` (``reexported``: other node names, the
  same optimized graph, so the check finds nothing to measure), ``new weights`` (the same graph
  with other weights, ``seed=7``: the same work, so the check measures both sides side by side)
  and ``changed``;

- accuracy workloads (``check_accuracy()`` at its default tolerances): ``mlp-small``
  (``mlp_model(8, 16)`` at batch 4, ``w3`` scaled by 1.5) and ``conv`` (the conv stack above,
  ``w8`` scaled by 1.5; atol and rtol 1e-3, as its 16 convolutions differ from the cpu-disabled
  variant by up to 6e-5), each ``unchanged`` (passes) and ``scaled`` (fails).

Per run: the JSON report's latency record (verdict, path, ``seconds`` by phase), the test's call
duration (``--durations=0``), the localisation seconds from the failure message, and the pytest
process's wall time. The report gives medians over the repeats: for a latency failure, the check's
seconds without the explanation (every phase but ``explaining``), the explaining seconds (the cost
per failure) and their share of the check; for a pass, its explaining seconds (0 by design). The
``waiting`` phase (for the timing lock, while another process measures: other test suites on a
shared machine) is left out of a check's seconds: it is someone else's measurement.

Run from the repository root (about 3-4 minutes with the defaults on a shared 2-core machine)::

    python -m benchmarks.explanations --out benchmarks/results/explanations.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.conditions import Sampler, code_state, cpu_fields, loadavg  # noqa: E402
from tests.models import (  # noqa: E402
    conv_stack_model,
    layer_norm_model,
    mlp_model,
    reexported,
    scaled_weight,
)

QUICK = ("--ortperf-budget=0.2", "--ortperf-latency-threshold=20%", "--ortperf-max-cv=1000%")
LOCALISATION_COST = re.compile(r"\((\d+ runs? of each model[^()]*?), ([0-9.]+) s\)")
DURATION = re.compile(r"^([0-9.]+)s call\s+(\S+)$", re.MULTILINE)

LATENCY_TEST = """
import pytest
pytestmark = [pytest.mark.ort_model("model.onnx", dims={dims}){marks}]

def test_latency(ort_perf):
    ort_perf.check_latency()
"""
ACCURACY_TEST = """
import pytest
pytestmark = [pytest.mark.ort_model("model.onnx", dims={dims}){marks}]

def test_outputs(ort_perf):
    ort_perf.check_accuracy()
"""


@dataclass(frozen=True)
class Workload:
    """One model, the conditions it runs under (name -> the model file to run), and its test."""

    name: str
    kind: str  # "latency" or "accuracy"
    describe: str
    dims: dict[str, int]
    recorded: Callable[[], onnx.ModelProto]
    conditions: dict[str, Callable[[], onnx.ModelProto]]
    marks: str = ""  # more marks for the test module, e.g. its tolerances


def workloads() -> list[Workload]:
    def mlp8() -> onnx.ModelProto:
        return mlp_model(8, 128)

    def layer_norm() -> onnx.ModelProto:
        return layer_norm_model(square="pow")

    def conv16() -> onnx.ModelProto:
        return conv_stack_model(16, 32, 80)

    def small() -> onnx.ModelProto:
        return mlp_model(8, 16)

    return [
        Workload(
            "mlp", "latency", "MLP 8 -> 12 layers, width 128, batch 16", {"batch": 16}, mlp8,
            {
                "unchanged": mlp8,
                "re-export": lambda: reexported(mlp8()),
                "new weights": lambda: mlp_model(8, 128, seed=7),
                "changed": lambda: mlp_model(12, 128),
            },
        ),
        Workload(
            "layernorm", "latency", "6 LayerNorms, Pow(d, 2) -> Mul(d, d) (fusion lost), [16, 128, 256]",
            {"batch": 16, "seq": 128}, layer_norm,
            {
                "unchanged": layer_norm,
                "re-export": lambda: reexported(layer_norm()),
                "new weights": lambda: layer_norm_model(square="pow", seed=7),
                "changed": lambda: layer_norm_model(square="mul"),
            },
        ),
        Workload(
            "conv", "latency", "conv stack 16 -> 20 layers (+25%), 32 channels, 80x80", {}, conv16,
            {
                "unchanged": conv16,
                "re-export": lambda: reexported(conv16()),
                "new weights": lambda: conv_stack_model(16, 32, 80, seed=7),
                "changed": lambda: conv_stack_model(20, 32, 80),
            },
        ),
        Workload(
            "mlp-small", "accuracy", "MLP 8 layers, width 16, batch 4, w3 x 1.5", {"batch": 4}, small,
            {"unchanged": small, "scaled": lambda: scaled_weight(small(), "w3", 1.5)},
        ),
        Workload(
            "conv", "accuracy", "conv stack 16 layers, 32 channels, 80x80, w8 x 1.5", {}, conv16,
            {"unchanged": conv16, "scaled": lambda: scaled_weight(conv16(), "w8", 1.5)},
            # 16 convolutions drift up to 6e-5 from the cpu-disabled variant: past the default atol 1e-5
            ", pytest.mark.ort_thresholds(atol=1e-3, rtol=1e-3)",
        ),
    ]  # fmt: skip


@dataclass
class Run:
    """One pytest process: what it said and what it cost."""

    outcome: str  # pytest's last line
    wall_s: float
    call_s: float  # the test's call phase (--durations)
    verdict: str = ""
    path: str = ""
    seconds: dict[str, float] = field(default_factory=dict)
    explained: list[str] = field(default_factory=list)  # the explanation sections' titles
    localisation_s: float | None = None
    localisation: str = ""  # the located line, shortened
    median_ms: float | None = None  # the latency check's current median per run

    @property
    def check_s(self) -> float:
        """The check's own seconds: every phase but ``waiting`` (for another process's timing lock:
        someone else's measurement, not this check's work)."""
        return sum(seconds for phase, seconds in self.seconds.items() if phase != "waiting")

    @property
    def without_explaining_s(self) -> float:
        return self.check_s - self.seconds.get("explaining", 0.0)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=git_env())


def git_env() -> dict[str, str]:
    """This environment, with git reading no user or system config; this tree's package first."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "CI"):
        env.pop(name, None)
    return env


def prepare(workload: Workload, root: Path) -> None:
    """A git repository at ``root`` whose HEAD holds the recorded model, its test, and its baseline."""
    root.mkdir(parents=True)
    git(root, "init", "-q")
    git(root, "config", "user.name", "Bench")
    git(root, "config", "user.email", "bench@example.com")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "config", "core.hooksPath", os.devnull)
    onnx.save(workload.recorded(), root / "model.onnx")
    template = LATENCY_TEST if workload.kind == "latency" else ACCURACY_TEST
    (root / "test_bench.py").write_text(template.format(dims=repr(workload.dims), marks=workload.marks))
    git(root, "add", "model.onnx", "test_bench.py")
    git(root, "commit", "-q", "-m", "recorded model")
    recorded = pytest_run(root, ["--ortperf-update", *QUICK])
    if "1 passed" not in recorded.outcome:
        raise RuntimeError(f"recording {workload.name} ({workload.kind}) in {root}: {recorded.outcome}")


def pytest_run(root: Path, args: Sequence[str]) -> Run:
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0",
        "--durations-min=0", "--ortperf-report=report.json", *args,
    ]  # fmt: skip
    report = root / "report.json"
    report.unlink(missing_ok=True)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=git_env(), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    calls = [float(seconds) for seconds, _ in DURATION.findall(done.stdout)]
    run = Run(outcome=lines[-1] if lines else f"exit {done.returncode}", wall_s=wall, call_s=sum(calls))
    found = LOCALISATION_COST.search(done.stdout)
    if found:
        run.localisation_s = float(found.group(2))
    located = re.search(r"first diverging tensor '[^']*' \([^)]*\)", done.stdout)
    run.localisation = located.group(0) if located else ""
    if report.exists():
        for record in json.loads(report.read_text())["checks"]:
            if record["kind"] in ("latency", "accuracy"):
                run.verdict = str(record.get("verdict", ""))
                run.path = str(record.get("path", ""))
                run.seconds = {k: float(v) for k, v in (record.get("seconds") or {}).items()}
                run.explained = [section["title"] for section in record.get("explanations") or []]
                current = record.get("current")
                if isinstance(current, dict) and isinstance(current.get("median_ms"), (int, float)):
                    run.median_ms = float(current["median_ms"])
    return run


def run_condition(workload: Workload, root: Path, condition: str) -> Run:
    onnx.save(workload.conditions[condition](), root / "model.onnx")
    return pytest_run(root, QUICK if workload.kind == "latency" else [])


def med(values: Sequence[float | None]) -> float:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else float("nan")


def spread(values: Sequence[float]) -> str:
    return f"{med(values):.3f} [{min(values):.3f}-{max(values):.3f}]" if values else "n/a"


def counts(values: Sequence[str]) -> str:
    seen: dict[str, int] = {}
    for value in values:
        seen[value or "-"] = seen.get(value or "-", 0) + 1
    return ", ".join(f"{k} x{n}" if n > 1 else k for k, n in seen.items())


def machine_line() -> str:
    fields = cpu_fields()
    flags = fields.get("flags", "").split()
    vector = ", ".join(
        flag for flag in ("avx512f", "avx512_vnni", "avx512_fp16", "amx_tile") if flag in flags
    )
    vector = vector or "AVX2, no avx512f"
    return (
        f"{fields.get('model name', 'unknown CPU')} (family {fields.get('cpu family', '?')} model "
        f"{fields.get('model', '?')}, {vector}), {len(os.sched_getaffinity(0))} usable cores"
    )


FAILING = ("changed", "scaled")  # the conditions that fail; the others pass


def summary(results: dict[tuple[str, str, str], list[Run]]) -> list[str]:
    """Per workload: the failing check without its explanation, the explanation (the cost per
    failure) and its share, medians; and what the passing runs paid for explanations."""
    lines = [
        "## Summary",
        "",
        "Failing check: latency, every phase of the JSON record's `seconds` but `explaining` (and "
        "`waiting`, for another process's timing lock); accuracy, the test call less the localisation. "
        "Passing runs: every run of the other conditions.",
        "",
        "| check | workload | failing check without explanation, s | explanation (added per failure), s "
        "| share of the failing check | passing runs: explanation, s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for kind, name in dict.fromkeys((kind, name) for kind, name, _ in results):
        failing = [
            r for (k, n, c), runs in results.items() if (k, n) == (kind, name) and c in FAILING for r in runs
        ]
        passing = [
            r
            for (k, n, c), runs in results.items()
            if (k, n) == (kind, name) and c not in FAILING
            for r in runs
        ]
        if kind == "latency":
            cost = [r.seconds.get("explaining", 0.0) for r in failing]
            rest = [r.without_explaining_s for r in failing]
            paid = [(r.seconds.get("explaining", 0.0), r.verdict) for r in passing]
        else:
            cost = [r.localisation_s or 0.0 for r in failing]
            rest = [r.call_s - (r.localisation_s or 0.0) for r in failing]
            paid = [(r.localisation_s or 0.0, r.outcome.split(" in ")[0]) for r in passing]
        shares = [c / (c + o) for c, o in zip(cost, rest, strict=True) if c + o > 0]
        zero = sum(1 for seconds, _ in paid if seconds == 0)
        others = "; ".join(f"{seconds:.3f} ({verdict})" for seconds, verdict in paid if seconds)
        lines.append(
            f"| {kind} | {name} | {med(rest):.3f} | {med(cost):.3f} | {med(shares):.1%} | "
            f"0 in {zero} of {len(paid)}" + (f"; {others}" if others else "") + " |"
        )
    return [*lines, ""]


def report(
    results: dict[tuple[str, str, str], list[Run]], started: str, conditions: str, repeats: int
) -> str:
    import onnxruntime

    lines = [
        "# What saying why costs: explanations of failures, and passes",
        "",
        f"- date: {started} to {dt.datetime.now(dt.timezone.utc).strftime('%H:%M UTC')}",
        f"- machine: {machine_line()}; onnxruntime {onnxruntime.__version__} on the CPU provider",
        f"- {repeats} repeats of each run, medians (min-max in brackets); every run a fresh pytest process",
        f"- conditions: {conditions}; load average at the end {loadavg()}",
        f"- code: {code_state()}",
        "",
        *summary(results),
        "## Latency",
        "",
        "Seconds from the JSON record's `seconds` (the check's phases); `check without explaining` is "
        "every phase but `explaining` and `waiting` (for another process's timing lock: someone else's "
        "measurement, listed under every run); `share` is explaining over the check's own seconds. "
        "`ms a run`: the current model's median. Wall: the pytest process, start-up and collection "
        "included.",
        "",
        "| workload | condition | verdicts | ms a run | check without explaining, s | explaining, s "
        "| share | test call, s | wall, s | explanation sections |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (kind, name, condition), runs in results.items():
        if kind != "latency":
            continue
        explaining = [r.seconds.get("explaining", 0.0) for r in runs]
        shares = [r.seconds.get("explaining", 0.0) / r.check_s for r in runs if r.check_s]
        sections = counts(["; ".join(r.explained) for r in runs])
        per_run = f"{med([r.median_ms for r in runs]):.2f}".replace("nan", "-")  # "-": nothing measured
        lines.append(
            f"| {name} | {condition} | {counts([r.verdict for r in runs])} | "
            f"{per_run} | "
            f"{spread([r.without_explaining_s for r in runs])} | {spread(explaining)} | "
            f"{med(shares):.1%} | {spread([r.call_s for r in runs])} | {spread([r.wall_s for r in runs])} | "
            f"{sections} |"
        )
    lines += [
        "",
        "## Accuracy",
        "",
        "The localisation's seconds are the ones its message line gives (two decimals); the test call "
        "is the whole check (session build, runs, comparison, localisation).",
        "",
        "| workload | condition | outcome | localisation, s | share of the test call | test call, s "
        "| wall, s | first diverging tensor |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (kind, name, condition), runs in results.items():
        if kind != "accuracy":
            continue
        localised = [r.localisation_s for r in runs if r.localisation_s is not None]
        shares = [r.localisation_s / r.call_s for r in runs if r.localisation_s is not None and r.call_s]
        lines.append(
            f"| {name} | {condition} | {counts([r.outcome.split(' in ')[0] for r in runs])} | "
            f"{spread(localised) if localised else '0 (not run)'} | "
            f"{f'{med(shares):.1%}' if shares else '-'} | {spread([r.call_s for r in runs])} | "
            f"{spread([r.wall_s for r in runs])} | {counts([r.localisation for r in runs])} |"
        )
    lines += ["", "## Every run", "", "| workload | condition | repeat | outcome | path | seconds |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for (kind, name, condition), runs in results.items():
        for index, r in enumerate(runs, 1):
            phases = ", ".join(f"{k} {v:g}" for k, v in r.seconds.items() if v) or "-"
            extra = f"; localisation {r.localisation_s:g} s" if r.localisation_s is not None else ""
            lines.append(
                f"| {kind} {name} | {condition} | {index} | {r.outcome} | {r.path or '-'} | "
                f"{phases}{extra}; call {r.call_s:.3f}, wall {r.wall_s:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs of each workload and condition")
    parser.add_argument("--only", default="", help="comma-separated workload names (default: all)")
    parser.add_argument("--out", type=Path, help="the markdown report (default: stdout)")
    options = parser.parse_args(argv)
    chosen = [w for w in workloads() if not options.only or w.name in options.only.split(",")]
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sampler = Sampler(period_s=10.0)
    sampler.start()
    results: dict[tuple[str, str, str], list[Run]] = {
        (w.kind, w.name, condition): [] for w in chosen for condition in w.conditions
    }
    with tempfile.TemporaryDirectory(prefix="ortperf-explanations-") as temp:
        roots = {}
        for w in chosen:
            roots[w.kind, w.name] = Path(temp) / f"{w.kind}-{w.name}"
            prepare(w, roots[w.kind, w.name])
        for repeat in range(options.repeats):
            for w in chosen:
                order = list(w.conditions)
                if repeat % 2:
                    order.reverse()  # alternate, so a drift in the machine's speed spreads over both
                for condition in order:
                    run = run_condition(w, roots[w.kind, w.name], condition)
                    results[w.kind, w.name, condition].append(run)
                    print(
                        f"{repeat + 1}/{options.repeats} {w.kind} {w.name} {condition}: {run.outcome}; "
                        f"{run.verdict} {run.seconds or ''} loc={run.localisation_s} wall={run.wall_s:.2f}",
                        file=sys.stderr,
                        flush=True,
                    )
    text = report(results, started, sampler.stop(), options.repeats)
    if options.out:
        options.out.write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
