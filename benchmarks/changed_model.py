"""A changed model in pytest-benchmark's time: what one ``pytest`` process costs, and decides, when a
model file changes, against pytest-benchmark on the same model files.

Question: when a model is exported again (the same graph) or made slower by +5%, +10% or +25%, how
long does one plain ``pytest`` process of the plugin take to answer, where does its time go
(building, warming, measuring, confirming, explaining), and how does it compare with
pytest-benchmark (``--benchmark-compare --benchmark-compare-fail=median:10%``), in time and in
verdicts? Does the confirmation of a first regression change any verdict?

Method: per family, a temporary git repository holds one model, ``models/model.onnx``, collected
without Python by the ``ortperf_models`` ini key, the latency check only, at ``all``
(``ortperf_checks = latency``): one item. The base model is committed, its baseline recorded by
``pytest --ortperf-update`` and committed, as a repository would. Beside the repository (outside
it, so neither collects the other's tests), a pytest-benchmark test times the same file on an
onnxruntime session (one intra-op thread, ``all``), saved once on the base model
(``--benchmark-save``). Then trials in shuffled order, each a whole ``python -m pytest -p
no:randomly -p no:cacheprovider -q`` process with this tree first on ``PYTHONPATH``, timed by
``time.perf_counter`` around ``subprocess.run``:

- plugin: ``unchanged`` (the committed file), ``re-export`` (``tests/models.py: reexported``: other
  bytes, the same graph), ``retrained`` (every weight matrix scaled by 1.001: another graph digest,
  the same work, so an A/A measured side by side), ``+5%``, ``+10%``, ``+25%`` (the file replaced
  by the grown model; the reference is rebuilt from git and measured side by side);
- pytest-benchmark: ``A/A`` (the base file) and the grown files, compared with the saved run.

The file is restored after every trial. Families (``tests/models.py``; the knob adds whole blocks of
the same work): ``transformer`` (pre-norm encoder blocks, 20 -> 21/22/25), ``gru`` (a 2-layer GRU
stack over 20 -> 21/22/25 of 25 steps), ``residual`` (ResNet basic blocks with BatchNorm, 20 ->
21/22/25), ``mlp10ms`` (4 -> 5 MatMul+Relu layers of width 1024 on a batch of 192, about 10 ms a
run: the +25% of issue 37). Each plugin trial's JSON report (``--ortperf-report``) gives the
latency record's verdict, its ``seconds`` by phase, and for a regression measured twice the first
measurement's interval (``confirmation.first_change``).

Run from the repository root, under the shared benchmark lock, on a machine doing little else::

    flock /tmp/ortperf-bench.lock python -m benchmarks.changed_model --families transformer,gru,residual \
        --conditions unchanged,re-export,+5%,+10%,+25% --trials 3 --out benchmarks/results/changed_model.md

``--json`` keeps every trial (to merge runs split under the lock: ``--merge a.json,b.json``).

``--study N``: what the confirmation catches, measured without pytest's start-up. N in-process
side-by-side checks per family and condition (``retrained``, an A/A measured side by side, and the
grown models), each as the latency check's side-by-side route runs it (two sessions a side,
``check_ab`` with the default policy) but always confirmed on a fresh pair (``randomised=False``),
so every first regression has a second measurement to compare with. The report lists each first
regression's interval and what the second said.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402

from benchmarks.conditions import (  # noqa: E402
    Sampler,
    code_state,
    cpu_fields,
    git,
    loadavg,
    other_pytest_processes,
    run_pytest,
)
from tests.models import (  # noqa: E402
    gru_model,
    mlp_model,
    reexported,
    residual_bn_model,
    transformer_block_model,
)

PLUGIN_CONDITIONS = ("unchanged", "re-export", "retrained", "+5%", "+10%", "+25%")
GROWN = {"+5%": 1.05, "+10%": 1.10, "+25%": 1.25}
PB_FAIL = "median:10%"


@dataclass(frozen=True)
class Family:
    """A model family: the model with ``units`` blocks of work, the base's units, each grown
    condition's units, and the input shapes (with every dimension fixed)."""

    name: str
    build: Callable[[int], onnx.ModelProto]
    base: int
    grown: dict[str, int]
    shapes: dict[str, list[int]]
    dims: dict[str, int] = field(default_factory=dict)  # symbolic dims fixed by a [tool.ortperf.models] table


FAMILIES = {
    "transformer": Family(
        "transformer", lambda n: transformer_block_model(n, 64, 32), 20, {"+5%": 21, "+10%": 22, "+25%": 25},
        {"x": [1, 32, 64]},
    ),
    "gru": Family(
        "gru", lambda n: gru_model(n, 64, 2, batch=16, input_steps=25), 20,
        {"+5%": 21, "+10%": 22, "+25%": 25},
        {"x": [25, 16, 64]},
    ),
    "residual": Family(
        "residual", lambda n: residual_bn_model(n, 16, 16), 20, {"+5%": 21, "+10%": 22, "+25%": 25},
        {"x": [1, 16, 16, 16]},
    ),
    "mlp10ms": Family(
        "mlp10ms", lambda n: mlp_model(n, 1024), 4, {"+25%": 5}, {"x": [192, 1024]}, {"batch": 192}
    ),
}  # fmt: skip

INI = "[pytest]\nortperf_models = models/*.onnx\nortperf_opt_levels = all\nortperf_checks = latency\n"
PB_TEST = '''"""pytest-benchmark on the model file the plugin's repository holds."""
import json
import pathlib

import numpy as np
import onnxruntime as ort

HERE = pathlib.Path(__file__).parent
MODEL = HERE.parent / "repo" / "models" / "model.onnx"
SHAPES = json.loads((HERE / "shapes.json").read_text())


def test_model(benchmark):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(MODEL), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {name: rng.standard_normal(shape).astype(np.float32) for name, shape in SHAPES.items()}
    benchmark(session.run, None, feeds)
'''


@dataclass
class Trial:
    """One timed pytest process."""

    family: str
    tool: str  # plugin | pytest-benchmark
    condition: str
    wall_s: float
    verdict: str  # pass | fail | inconclusive | error
    status: str = ""  # the latency record's verdict
    seconds: dict[str, float] = field(default_factory=dict)
    change: str = ""
    first: dict[str, float] | None = None  # a regression measured twice: the first interval
    confirmed: bool | None = None
    confirmation_skipped: str = ""
    builds: int | None = None


def pytest(where: Path, extra: Sequence[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    return run_pytest(REPO, where, extra)


def plugin_trial(family: Family, repo: Path, condition: str) -> Trial:
    wall, done, record = latency_run(repo, lambda extra: pytest(repo, extra))
    if record is None:
        return Trial(family.name, "plugin", condition, wall, "error", status=done.stdout[-300:])
    return Trial(family.name, "plugin", condition, wall, **trial_fields(record, done.stdout))


Run = Callable[[Sequence[str]], "tuple[float, subprocess.CompletedProcess[str]]"]


def latency_run(
    repo: Path, run: Run
) -> tuple[float, subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """One plugin trial's pytest process with its JSON report: wall seconds, what it printed, and its
    one latency record (None when it has not exactly one)."""
    report = repo.parent / "report.json"
    report.unlink(missing_ok=True)
    wall, done = run([f"--ortperf-report={report}"])
    checks = json.loads(report.read_text()).get("checks", []) if report.exists() else []
    records = [r for r in checks if r.get("kind") == "latency"]
    return wall, done, records[0] if len(records) == 1 else None


def trial_fields(record: dict[str, Any], stdout: str) -> dict[str, Any]:
    """A plugin trial's verdict and figures, read from its latency record and its summary."""
    status = str(record.get("verdict"))
    verdict = "fail" if record.get("failed") else ("inconclusive" if "inconclusive" in status else "pass")
    confirmation = record.get("confirmation") or {}
    return {
        "verdict": verdict,
        "status": status,
        "seconds": {k: float(v) for k, v in (record.get("seconds") or {}).items()},
        "change": str(record.get("change_summary", "")),
        "first": confirmation.get("first_change"),
        "confirmed": confirmation.get("confirmed"),
        "confirmation_skipped": str(confirmation.get("skipped", "")),
        "builds": sessions_built(stdout),
    }


def sessions_built(stdout: str) -> int | None:
    """Sessions built in the run, from the summary's ``sessions: N built`` line."""
    for line in stdout.splitlines():
        if "sessions:" in line and " built in " in line:
            try:
                return int(line.split("sessions:", 1)[1].split()[0])
            except (IndexError, ValueError):
                return None
    return None


def pb_trial(
    family: Family, pb: Path, condition: str, make: type[Trial] = Trial, *, compiled: bool = False
) -> Trial:
    """pytest-benchmark's comparison of the same change, as ``make`` (a Trial or a subclass): in a
    process without this plugin (``-p no:ortperf``), as a pytest-benchmark user runs it
    (``compiled``: see ``conditions.run_pytest``)."""
    wall, done = run_pytest(
        REPO,
        pb,
        ["-p", "no:ortperf", "--benchmark-storage=file://" + str(pb / "store"), "--benchmark-compare=0001",
         f"--benchmark-compare-fail={PB_FAIL}", "test_pb.py"],
        compiled=compiled,
    )  # fmt: skip
    regressed = "Performance has regressed" in done.stdout + done.stderr
    verdict = "fail" if regressed else ("pass" if done.returncode == 0 else "error")
    return make(family.name, "pytest-benchmark", condition, wall, verdict)


def run_family(
    family: Family, conditions: Sequence[str], trials: int, rng: random.Random, log: list[str]
) -> list[Trial]:
    results: list[Trial] = []
    with tempfile.TemporaryDirectory(prefix="ortperf-changed-") as tmp:
        repo, pb = Path(tmp) / "repo", Path(tmp) / "pb"
        (repo / "models").mkdir(parents=True)
        pb.mkdir()
        model_file = repo / "models" / "model.onnx"
        base = family.build(family.base)
        onnx.save(base, model_file)
        (repo / "pytest.ini").write_text(INI)
        if family.dims:
            table = ", ".join(f"{k} = {v}" for k, v in family.dims.items())
            (repo / "pyproject.toml").write_text(
                f'[tool.ortperf.models."models/*.onnx"]\ndims = {{{table}}}\n'
            )
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "model")
        wall, done = pytest(repo, ["--ortperf-update"])
        log.append(f"{family.name}: update {wall:.1f} s: {done.stdout.strip().splitlines()[-1]}")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "baselines")
        (pb / "pytest.ini").write_text("[pytest]\n")
        (pb / "shapes.json").write_text(json.dumps(family.shapes))
        (pb / "test_pb.py").write_text(PB_TEST)
        wall, done = pytest(
            pb, ["--benchmark-storage=file://" + str(pb / "store"), "--benchmark-save=base", "test_pb.py"]
        )
        log.append(f"{family.name}: pytest-benchmark save {wall:.1f} s")
        plan = [
            ("plugin", c)
            for c in conditions
            if c in PLUGIN_CONDITIONS and (c not in GROWN or c in family.grown)
        ]
        plan += [("pytest-benchmark", "A/A")] if "unchanged" in conditions else []
        plan += [("pytest-benchmark", c) for c in conditions if c in family.grown]
        order = [step for step in plan for _ in range(trials)]
        rng.shuffle(order)
        for tool, condition in order:
            if condition in GROWN:
                onnx.save(family.build(family.grown[condition]), model_file)
            elif condition == "re-export":
                onnx.save(reexported(base), model_file)
            elif condition == "retrained":
                onnx.save(retrained(base), model_file)
            trial = (
                plugin_trial(family, repo, condition) if tool == "plugin" else pb_trial(family, pb, condition)
            )
            git(repo, "checkout", "--", "models")
            results.append(trial)
            line = f"{family.name} {tool} {condition}: {trial.wall_s:.2f} s {trial.verdict} {trial.status}"
            line += f" {trial.change}"
            log.append(line)
            print(line, file=sys.stderr, flush=True)
    return results


def retrained(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with every float weight of two or more dimensions scaled by 1.001: the same graph and
    work, other weights, so another optimized graph digest (measured side by side, an A/A)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for index, init in enumerate(copy.graph.initializer):
        values = numpy_helper.to_array(init)
        if values.dtype == np.float32 and values.ndim >= 2:
            scaled = (values * np.float32(1.001)).astype(np.float32)
            copy.graph.initializer[index].CopyFrom(numpy_helper.from_array(scaled, init.name))
    return copy


PHASES = ("building", "waiting", "warming", "measuring", "confirming", "explaining")


def _range(values: Sequence[float], digits: int = 2) -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    return f"{med:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def report(trials: Sequence[Trial], header: Sequence[str]) -> str:
    out = list(header)
    families = list(dict.fromkeys(t.family for t in trials))
    out += [
        "",
        "## Time per pytest run and verdicts",
        "",
        "Wall seconds per whole `python -m pytest` process: median (min-max). Ratio: the plugin's median "
        "over pytest-benchmark's median for the same change (A/A for unchanged and re-export). Verdicts: "
        "pass / fail / inconclusive (`not confirmed` counts as inconclusive; an error is named).",
        "",
        "| family | condition | plugin s | pytest-benchmark s | ratio | plugin verdicts | "
        "pytest-benchmark verdicts | plugin statuses |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for family in families:
        mine = [t for t in trials if t.family == family]
        for condition in PLUGIN_CONDITIONS:
            plugin = [t for t in mine if t.tool == "plugin" and t.condition == condition]
            pb_condition = "A/A" if condition in ("unchanged", "re-export", "retrained") else condition
            pb = [t for t in mine if t.tool == "pytest-benchmark" and t.condition == pb_condition]
            if not plugin and not pb:
                continue
            ratio = (
                f"{statistics.median(t.wall_s for t in plugin) / statistics.median(t.wall_s for t in pb):.2f}"
                if plugin and pb else "-"
            )  # fmt: skip
            statuses = ", ".join(f"{s} x{n}" for s, n in sorted(_count(t.status for t in plugin).items()))
            out.append(
                f"| {family} | {condition} | {_range([t.wall_s for t in plugin])} | "
                f"{_range([t.wall_s for t in pb])} ({pb_condition}) | {ratio} | {_verdicts(plugin)} | "
                f"{_verdicts(pb)} | {statuses} |"
            )
    out += [
        "",
        "## Where the plugin's time went",
        "",
        "The latency record's `seconds` by phase, median over the trials (s); `builds`: sessions built "
        "in the run (the terminal summary's `sessions:` line).",
        "",
        "| family | condition | " + " | ".join(PHASES) + " | builds |",
        "| --- | --- | " + " | ".join("---" for _ in PHASES) + " | --- |",
    ]
    for family in families:
        for condition in PLUGIN_CONDITIONS:
            plugin = [
                t for t in trials if t.family == family and t.tool == "plugin" and t.condition == condition
            ]
            if not plugin:
                continue
            cells = [f"{statistics.median(t.seconds.get(p, 0.0) for t in plugin):.2f}" for p in PHASES]
            builds = [t.builds for t in plugin if t.builds is not None]
            out.append(f"| {family} | {condition} | " + " | ".join(cells) + f" | {_range(builds, 0)} |")
    twice = [t for t in trials if t.first is not None or t.confirmation_skipped]
    out += [
        "",
        "## What the confirmation caught",
        "",
        "Plugin trials whose first side-by-side measurement said regression: confirmed by the second "
        "measurement on fresh sessions, not confirmed (passed as `inconclusive (not confirmed)`), or "
        "not measured again (the first interval clear of the threshold). `low - (1 + threshold)`: how "
        "far the first interval's lower bound lay beyond the threshold (ratio).",
        "",
        "| condition | first regressions | confirmed | not confirmed | skipped | "
        "low - (1 + threshold), confirmed | not confirmed | skipped |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for condition in PLUGIN_CONDITIONS:
        mine = [t for t in twice if t.condition == condition]
        if not mine:
            continue

        def beyond(group: Sequence[Trial]) -> str:
            values = [t.first["low"] - 1 - t.first["threshold"] for t in group if t.first]
            return f"{min(values):+.3f} .. {max(values):+.3f}" if values else "-"

        confirmed = [t for t in mine if t.confirmed]
        refuted = [t for t in mine if t.confirmed is False]
        skipped = [t for t in mine if t.confirmation_skipped]
        out.append(
            f"| {condition} | {len(mine)} | {len(confirmed)} | {len(refuted)} | {len(skipped)} | "
            f"{beyond(confirmed)} | {beyond(refuted)} | {beyond(skipped)} |"
        )
    out += ["", "## Regressions measured twice, or whose second measurement was skipped", ""]
    if not twice:
        out.append("None.")
    else:
        out += [
            "| family | condition | first interval (ratio, low-high) | low beyond threshold | outcome |",
            "| --- | --- | --- | --- | --- |",
        ]
        for t in twice:
            first = t.first or {}
            beyond = first["low"] - (1 + first["threshold"]) if first else float("nan")
            interval = f"x{first['ratio']:.3f} ({first['low']:.3f}-{first['high']:.3f})" if first else "-"
            if t.confirmation_skipped:
                outcome = "skipped: " + t.confirmation_skipped
            else:
                outcome = "confirmed" if t.confirmed else "NOT confirmed"
            out.append(f"| {t.family} | {t.condition} | {interval} | {beyond:+.3f} | {outcome} |")
    return "\n".join(out) + "\n"


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def _verdicts(trials: Sequence[Trial]) -> str:
    if not trials:
        return "-"
    counts = _count(t.verdict for t in trials)
    text = f"{counts.get('pass', 0)} / {counts.get('fail', 0)} / {counts.get('inconclusive', 0)}"
    return text + (f", {counts['error']} error" if counts.get("error") else "")


@dataclass
class StudyCheck:
    """One in-process side-by-side check, always confirmed: the first interval and the second's."""

    family: str
    condition: str
    first: dict[str, float]
    first_verdict: str
    second: dict[str, float] | None
    second_verdict: str
    status: str


def confirmation_study(
    family: Family, conditions: Sequence[str], checks: int, rng: random.Random
) -> list[StudyCheck]:
    """``checks`` side-by-side checks of each condition against the base model, in shuffled order."""
    import functools

    import onnxruntime as ort

    from pytest_ortperf.checks.latency_verdicts import check_ab
    from pytest_ortperf.checks.policy import CheckPolicy
    from pytest_ortperf.latency.paired import INSTANCES, RoundsInTurn
    from pytest_ortperf.ort.providers import resolve_provider
    from pytest_ortperf.ort.session_settings import SessionSettings
    from pytest_ortperf.ort.sessions import provider_arguments, session_options
    from pytest_ortperf.ort.variants import OptLevel, Variant
    from pytest_ortperf.store.keys import CheckKey

    variant, settings = Variant(resolve_provider("cpu", source="study"), OptLevel.ALL), SessionSettings()
    feeds_rng = np.random.default_rng(0)
    feeds = {n: feeds_rng.standard_normal(shape).astype(np.float32) for n, shape in family.shapes.items()}
    base = family.build(family.base)
    models = {"base": base.SerializeToString(), "retrained": retrained(base).SerializeToString()}
    models.update({c: family.build(units).SerializeToString() for c, units in family.grown.items()})

    def session(name: str) -> Callable[[], object]:
        built = ort.InferenceSession(
            models[name], session_options(ort, variant, settings),
            providers=provider_arguments(variant, settings), enable_fallback=0,
        )  # fmt: skip
        return functools.partial(built.run, None, feeds)

    def side(name: str) -> RoundsInTurn:
        return RoundsInTurn([session(name) for _ in range(INSTANCES)])

    def figures(comparison: Any) -> dict[str, float]:
        estimate = comparison.estimate
        return {"ratio": estimate.ratio, "low": estimate.low, "high": estimate.high,
                "threshold": comparison.threshold}  # fmt: skip

    key = CheckKey("study", family.name, "cpu-all", "study", "")
    order = [c for c in conditions if c == "retrained" or c in family.grown for _ in range(checks)]
    rng.shuffle(order)
    found: list[StudyCheck] = []
    for condition in order:
        result = check_ab(
            side(condition), side("base"), key=key, label="base", policy=CheckPolicy(),
            fresh_pair=lambda c=condition: (side(c), side("base")),  # type: ignore[misc]
        )  # fmt: skip
        first, second = result.comparison, result.confirmation
        assert first is not None
        found.append(
            StudyCheck(
                family.name, condition, figures(first), first.verdict.value,
                figures(second) if second is not None else None,
                second.verdict.value if second is not None else "", str(result.status),
            )
        )  # fmt: skip
        print(f"study {family.name} {condition}: {found[-1].status}", file=sys.stderr, flush=True)
    return found


def study_report(checks: Sequence[StudyCheck]) -> str:
    out = [
        "## Every first regression, and what the second measurement said",
        "",
        "In-process side-by-side checks (two sessions a side, default policy, 3% threshold), every first "
        "regression measured again on a fresh pair. `beyond`: the first interval's lower bound minus "
        "(1 + threshold).",
        "",
        "| family | condition | checks | first regressions | second: regression | second: not | "
        "beyond, confirmed | beyond, not confirmed |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def beyond(group: Sequence[StudyCheck]) -> str:
        values = [c.first["low"] - 1 - c.first["threshold"] for c in group]
        return f"{min(values):+.3f} .. {max(values):+.3f}" if values else "-"

    for family in dict.fromkeys(c.family for c in checks):
        for condition in dict.fromkeys(c.condition for c in checks if c.family == family):
            mine = [c for c in checks if c.family == family and c.condition == condition]
            flagged = [c for c in mine if c.first_verdict == "regression"]
            kept = [c for c in flagged if c.second_verdict == "regression"]
            lost = [c for c in flagged if c.second_verdict != "regression"]
            out.append(
                f"| {family} | {condition} | {len(mine)} | {len(flagged)} | {len(kept)} | {len(lost)} | "
                f"{beyond(kept)} | {beyond(lost)} |"
            )
    lost = [c for c in checks if c.first_verdict == "regression" and c.second_verdict != "regression"]
    out += ["", "First regressions the second measurement did not repeat:", ""]
    out += [
        f"- {c.family} {c.condition}: first x{c.first['ratio']:.3f} ({c.first['low']:.3f}-"
        f"{c.first['high']:.3f}), second x{c.second['ratio']:.3f} ({c.second['low']:.3f}-"
        f"{c.second['high']:.3f}) {c.second_verdict}"
        for c in lost
        if c.second is not None
    ] or ["- none"]
    return "\n".join(out) + "\n"


def study_main(
    args: argparse.Namespace,
    families: Sequence[str],
    conditions: Sequence[str],
    started: str,
    cpu: dict[str, str],
    argv: Sequence[str] | None,
) -> int:
    sampler = Sampler()
    sampler.start()
    began = time.perf_counter()
    rng = random.Random(args.seed)
    study = [c for name in families for c in confirmation_study(FAMILIES[name], conditions, args.study, rng)]
    command = sys.argv[1:] if argv is None else argv
    text = "\n".join(
        [
            "# What the confirmation of a side-by-side regression catches",
            "",
            f"- run {started}, {(time.perf_counter() - began) / 60:.1f} min; "
            f"{cpu.get('model name', 'unknown CPU')}, {os.cpu_count()} cores; load average at the start "
            f"{loadavg()}; {sampler.stop()} (other engineers' test runs may have shared the machine)",
            f"- code: {code_state()}",
            f"- command: `python -m benchmarks.changed_model {' '.join(command)}`",
            "",
            study_report(study),
        ]
    )
    if args.json:
        args.json.write_text(json.dumps([asdict(c) for c in study], indent=1))
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--families", default="transformer,gru,residual", help=f"of {', '.join(FAMILIES)}")
    parser.add_argument(
        "--conditions",
        default=",".join(PLUGIN_CONDITIONS),
        help="of " + ", ".join(PLUGIN_CONDITIONS).replace("%", "%%"),  # argparse formats help with %
    )
    parser.add_argument("--trials", type=int, default=3, help="trials per condition and tool")
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--out", type=Path, help="the markdown report (default: stdout)")
    parser.add_argument("--json", type=Path, help="every trial, as JSON (to merge split runs)")
    parser.add_argument(
        "--merge", default="", help="JSON files of earlier runs, comma separated: report them all"
    )
    parser.add_argument("--study", type=int, default=0, help="in-process checks per family and condition")
    args = parser.parse_args(argv)
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    unknown = [f for f in families if f not in FAMILIES] + [
        c for c in conditions if c not in PLUGIN_CONDITIONS
    ]
    if unknown:
        parser.error(f"unknown family or condition: {', '.join(unknown)}")
    trials: list[Trial] = []
    headers: list[str] = []
    for path in [p for p in args.merge.split(",") if p]:
        raw = Path(path).read_bytes()
        saved = json.loads(gzip.decompress(raw) if path.endswith(".gz") else raw)
        trials += [Trial(**t) for t in saved["trials"]]
        headers += saved["header"]
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    cpu = cpu_fields()
    if args.study:
        return study_main(args, families, conditions, started, cpu, argv)
    sampler = Sampler()
    sampler.start()
    log: list[str] = []
    rng = random.Random(args.seed)
    began = time.perf_counter()
    mine: list[Trial] = []
    if not args.merge or args.trials > 0:
        for name in families:
            mine += run_family(FAMILIES[name], conditions, args.trials, rng, log)
    header = [
        f"- run {started}, {(time.perf_counter() - began) / 60:.1f} min; "
        f"{cpu.get('model name', 'unknown CPU')}, "
        f"{os.cpu_count()} cores; load average at the start {loadavg()}; {sampler.stop()}; other pytest "
        f"processes at the end {other_pytest_processes()} "
        "(other engineers' test runs may have shared the machine)",
        f"- code: {code_state()}",
        f"- command: `python -m benchmarks.changed_model {' '.join(sys.argv[1:] if argv is None else argv)}`",
        *[f"- {line}" for line in log if ": update " in line or "save" in line],
    ] if mine else []  # fmt: skip
    headers += header
    trials += mine
    text = report(trials, ["# A changed model in pytest-benchmark's time", "", *headers])
    if args.json:
        args.json.write_text(json.dumps({"header": header, "trials": [asdict(t) for t in mine]}, indent=1))
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
