"""How good is pytest-ortperf's latency gate: false alarms on A/A, detection of real slowdowns.

Question: at its defaults (stored mode: threshold 6%, 4 s budget in 40 rounds with the
machine-speed canary; same-job A/B: 3%, 3 s; 99% intervals;
confirmation by a fresh measurement), does ``check_latency`` stay quiet when
nothing changed and fail when the model really does 5%, 10% or 20% more work,
on a small shared machine whose speed switches between states every few
seconds? And how does pytest-benchmark's gate
(``--benchmark-compare-fail=median:10%``) do on the same conditions?

Targets at the defaults: 0 false alarms in 20 A/A runs, >= 95% detection of
+20%, >= 80% detection of +10%.

Method:

1. Models: ``tests.models.mlp_model`` with width ``--width`` (default 1024),
   fed ``batch x width`` float32 (``--batch``, default 16) from the plugin's
   seeded synthetic feeds: 20 layers (baseline and A/A), 21, 22 and 24 layers
   (+5%, +10%, +20% work). Sessions are built like the plugin builds them
   (``SessionPool``, default ``SessionSettings``: one intra-op thread,
   spinning off; CPU, ``ORT_ENABLE_ALL``).
2. Real work ratio: all four models are timed in shuffled interleaved blocks
   and the fastest run of each is compared with the fastest run of the
   20-layer model (fastest-vs-fastest is the least noise-sensitive estimate).
3. ``--campaigns`` campaigns. Each starts by recording the baseline with the
   plugin's record path (``check_latency`` under ``CheckPolicy(update=True)``,
   written by a real ``BaselineStore`` to a temporary directory; a recording
   refused as too noisy is retried, as a user would) and by saving a
   pytest-benchmark baseline of the 20-layer model
   (``pytest --benchmark-save``). Then every trial of the campaign runs in a
   freshly shuffled order, so drift in machine speed hits every condition
   alike:

   - plugin trial: a fresh session (as a new CI run would build), a fresh
     ``BaselineStore`` reading the file from disk, and ``check_latency`` with
     ``CheckPolicy()`` defaults, exactly the call ``ort_perf.check_latency()``
     makes. Failed = the plugin's decision (confirmed regression). The first
     measurement's verdict is kept too, to show what confirmation buys.
   - pytest-benchmark trial: a real ``pytest`` subprocess running one test
     that benchmarks ``session.run`` with the ``benchmark`` fixture
     (pytest-benchmark 5.3.1 defaults: max_time 1 s, min 5 rounds, median of
     per-round times), with ``--benchmark-compare
     --benchmark-compare-fail=median:10%`` against the campaign's saved
     baseline. Failed = pytest-benchmark reported "Performance has regressed".

4. Rates are pooled over campaigns, with Wilson 95% intervals; per-campaign
   counts and the baseline medians are listed too.

Run from the repository root (about 20 minutes with the defaults on a 2-core
machine; progress on stderr)::

    python -m benchmarks.gate_quality > benchmarks/results/gate_quality.md

Options: ``--campaigns`` (4), ``--reps`` plugin repetitions per condition per
campaign (12), ``--bench-reps`` pytest-benchmark repetitions per condition per
campaign (12), ``--width`` (1024), ``--batch`` (16), ``--budget`` (2.0; the
plugin's default), ``--seed``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import onnx

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.conditions import Sampler, code_state, loadavg, other_pytest_processes  # noqa: E402
from pytest_ortperf.checks.latency_verdicts import LatencyResult, check_ab, check_latency, stored_comparison  # noqa: E402
from pytest_ortperf.checks.paths import choose  # noqa: E402
from pytest_ortperf.checks.policy import CheckPolicy  # noqa: E402
from pytest_ortperf.latency.canary import Canary  # noqa: E402
from pytest_ortperf.latency.decision import Comparison, Verdict  # noqa: E402
from pytest_ortperf.latency.measure import MeasureSettings, measure  # noqa: E402
from pytest_ortperf.latency.stats import LatencyStats  # noqa: E402
from pytest_ortperf.ort.inputs import Feeds, InputOptions, load_feeds, specs_from_session  # noqa: E402
from pytest_ortperf.ort.models import ModelResolver  # noqa: E402
from pytest_ortperf.ort.probe import ProviderProber  # noqa: E402
from pytest_ortperf.ort.providers import resolve_provider  # noqa: E402
from pytest_ortperf.ort.runtime import RuntimeInfo, import_onnxruntime, runtime_info  # noqa: E402
from pytest_ortperf.ort.session_settings import SessionSettings  # noqa: E402
from pytest_ortperf.ort.sessions import BuiltSession, SessionPool  # noqa: E402
from pytest_ortperf.ort.variants import OptLevel, Variant  # noqa: E402
from pytest_ortperf.store.baselines import BaselineStore  # noqa: E402
from pytest_ortperf.store.environment import environment  # noqa: E402
from pytest_ortperf.store.keys import CheckKey  # noqa: E402
from pytest_ortperf.store.machine import Machine, cpu_model, detect_machine, usable_cores  # noqa: E402
from tests.models import mlp_model  # noqa: E402

BASE_LAYERS = 20
CONDITIONS: dict[str, int] = {"A/A": 20, "+5%": 21, "+10%": 22, "+20%": 24}
TEST_FILE = "test_mlp.py"
TEST_NAME = "test_latency[cpu-all]"
MAX_RECORD_ATTEMPTS = 5

BENCH_TEST = '''"""Generated by benchmarks/gate_quality.py: the same model under pytest-benchmark."""
import os
from pathlib import Path

from pytest_ortperf.ort.inputs import InputOptions, load_feeds, specs_from_session  # noqa: E402
from pytest_ortperf.ort.models import ModelResolver  # noqa: E402
from pytest_ortperf.ort.probe import ProviderProber  # noqa: E402
from pytest_ortperf.ort.providers import resolve_provider  # noqa: E402
from pytest_ortperf.ort.runtime import import_onnxruntime, runtime_info  # noqa: E402
from pytest_ortperf.ort.sessions import SessionPool  # noqa: E402
from pytest_ortperf.ort.session_settings import SessionSettings  # noqa: E402
from pytest_ortperf.ort.variants import OptLevel, Variant  # noqa: E402


def test_mlp(benchmark):
    runtime = runtime_info()
    pool = SessionPool(import_onnxruntime(), ProviderProber(runtime.available_providers, runtime.describe()))
    here = Path.cwd()
    source = ModelResolver(here).resolve(os.environ["GQ_MODEL"], test_dir=here, origin="bench")
    variant = Variant(resolve_provider("cpu", source="bench"), OptLevel.ALL)
    built = pool.get(source, variant, SessionSettings())
    options = InputOptions(dims={"batch": int(os.environ["GQ_BATCH"])})
    feeds = dict(load_feeds(built.model, specs_from_session(built.session), options))
    benchmark(built.session.run, None, feeds)
'''


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# Sessions, the plugin's way -------------------------------------------------


def stored_figures_only(recorded: dict[str, object]) -> dict[str, object]:
    """The environment with another inputs digest (nothing to rebuild): an A/A trial (the same model
    again) then takes the stored-figures rule this campaign measures, not the ``unchanged`` path that
    would pass it unjudged."""
    return {**recorded, "inputs_sha256": "stored figures decide"}


@dataclass
class Bench:
    """Everything that stays the same across trials: models on disk, runtime, machine."""

    root: Path
    batch: int
    paths: dict[int, Path]
    runtime: RuntimeInfo
    machine: Machine
    resolver: ModelResolver = field(init=False)

    def __post_init__(self) -> None:
        self.resolver = ModelResolver(self.root)

    def fresh_session(self, layers: int) -> tuple[SessionPool, BuiltSession, Feeds]:
        """A new pool and session, as a new pytest run builds them."""
        ort = import_onnxruntime()
        pool = SessionPool(ort, ProviderProber(self.runtime.available_providers, self.runtime.describe()))
        source = self.resolver.resolve(self.paths[layers], test_dir=self.root, origin="gate_quality")
        variant = Variant(resolve_provider("cpu", source="gate_quality"), OptLevel.ALL)
        built = pool.get(source, variant, SessionSettings())
        options = InputOptions(dims={"batch": self.batch})
        feeds = load_feeds(built.model, specs_from_session(built.session), options)
        return pool, built, feeds

    def key(self) -> CheckKey:
        return CheckKey(
            test_file=TEST_FILE,
            test=TEST_NAME,
            variant="cpu-all",
            machine=self.machine.name,
            record_command=f"ortperf update '{TEST_FILE}::test_latency[cpu-all]'",
        )

    def check(
        self, layers: int, store: BaselineStore, policy: CheckPolicy
    ) -> tuple[LatencyResult, list[LatencyStats]]:
        """One ``ort_perf.check_latency()`` call on the stored-figures route: what the latency check
        (``kinds/latency.py: LatencyCheck``) does, minus pytest (canary included), through the same
        layer functions (``checks/paths.py: choose``, ``checks/latency_verdicts.py: check_latency``).

        Also returns every measurement made, so the same data can be judged without the canary.
        """
        pool, built, feeds = self.fresh_session(layers)
        canary = Canary.build(import_onnxruntime(), built.variant, built.settings)
        measured: list[LatencyStats] = []

        def measure_fn(run: Callable[[], object], settings: MeasureSettings) -> LatencyStats:
            stats = measure(run, settings, canary=canary.run)
            measured.append(stats)
            return stats

        try:
            session, inputs = built.session, dict(feeds)
            env = environment(built, inputs, machine=self.machine, runtime=self.runtime)
            env = env if policy.update else stored_figures_only(env)
            key = self.key()
            loaded = store.lookup(key.test_file, key.test)
            plan = choose(loaded, env, key.machine, update=policy.update)
            result = check_latency(
                lambda: session.run(None, inputs),
                key=key,
                plan=plan,
                entry=store.state(key.test_file, key.test, loaded),
                policy=policy,
                environment=env,
                today=dt.date.today().isoformat(),
                measure_fn=measure_fn,
            )
            if result.staged is not None:  # what a recording verdict asks to stage, the gate stages
                store.stage(key.test_file, key.test, result.staged)
            return result, measured
        finally:
            pool.close()

    def ab(self, layers: int, policy: CheckPolicy) -> LatencyResult:
        """One A/B ``check_latency()``: the N-layer model against a fresh 20-layer reference session."""
        pool, built, feeds = self.fresh_session(layers)
        ref_pool, reference, _ = self.fresh_session(BASE_LAYERS)
        try:
            current, other, inputs = built.session, reference.session, dict(feeds)
            return check_ab(
                lambda: current.run(None, inputs),
                lambda: other.run(None, inputs),
                key=self.key(),
                label=f"mlp{BASE_LAYERS}",
                policy=policy,
            )
        finally:
            pool.close()
            ref_pool.close()


# Work ratio ---------------------------------------------------------------


def work_ratios(bench: Bench, blocks: int, runs: int, rng: random.Random) -> dict[int, tuple[float, float]]:
    """Fastest run and median run (ms) per layer count, shuffled interleaved blocks."""
    built = {layers: bench.fresh_session(layers) for layers in sorted(set(CONDITIONS.values()))}
    samples: dict[int, list[int]] = {layers: [] for layers in built}
    for _, b, feeds in built.values():
        for _ in range(5):
            b.session.run(None, dict(feeds))
    order = list(built)
    for _ in range(blocks):
        rng.shuffle(order)
        for layers in order:
            _, b, feeds = built[layers]
            session, inputs = b.session, dict(feeds)
            for _ in range(runs):
                t0 = time.perf_counter_ns()
                session.run(None, inputs)
                samples[layers].append(time.perf_counter_ns() - t0)
    for pool, _, _ in built.values():
        pool.close()
    return {layers: (min(s) / 1e6, float(np.median(s)) / 1e6) for layers, s in samples.items()}


# pytest-benchmark ----------------------------------------------------------


@dataclass(frozen=True)
class BenchOutcome:
    failed: bool
    median_ms: float
    rounds: int
    iterations: int
    seconds: float


def run_pytest_benchmark(bench: Bench, work: Path, layers: int, extra: Sequence[str]) -> BenchOutcome:
    """One real pytest run of the generated test under pytest-benchmark."""
    out = work / "last.json"
    out.unlink(missing_ok=True)
    env = dict(os.environ, GQ_MODEL=str(bench.paths[layers]), GQ_BATCH=str(bench.batch))
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:ortperf",
        "-p",
        "no:cacheprovider",
        f"--benchmark-storage=file://{work / 'storage'}",
        f"--benchmark-json={out}",
        *extra,
        "test_bench.py",
    ]
    started = time.monotonic()
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    text = done.stdout + done.stderr
    regressed = "Performance has regressed" in text
    if (done.returncode != 0 and not regressed) or not out.exists():
        raise RuntimeError(f"pytest-benchmark run failed (exit {done.returncode}):\n{text[-3000:]}")
    stats = json.loads(out.read_text(encoding="utf-8"))["benchmarks"][0]["stats"]
    return BenchOutcome(
        failed=regressed,
        median_ms=float(stats["median"]) * 1000.0,
        rounds=int(stats["rounds"]),
        iterations=int(stats["iterations"]),
        seconds=seconds,
    )


# Campaigns -----------------------------------------------------------------


@dataclass(frozen=True)
class PluginTrial:
    campaign: int
    condition: str
    failed: bool
    first_regression: bool
    first_ratio: float
    first_low: float
    final_ratio: float
    status: str
    median_ms: float
    round_cv: float
    seconds: float
    absolute_first_regression: bool = False
    absolute_first_ratio: float = math.nan
    absolute_failed: bool = False
    absolute_inconclusive: bool = False


@dataclass(frozen=True)
class ABTrial:
    campaign: int
    condition: str
    failed: bool
    status: str
    ratio: float
    low: float
    high: float
    rounds: int
    seconds: float


@dataclass(frozen=True)
class BenchTrial:
    campaign: int
    condition: str
    failed: bool
    ratio: float
    median_ms: float
    rounds: int
    iterations: int
    seconds: float


@dataclass
class Campaign:
    index: int
    started: str
    load: str
    others: int
    plugin_baseline_ms: float = 0.0
    plugin_baseline_cv: float = 0.0
    record_attempts: int = 0
    bench_baseline_ms: float = 0.0
    bench_baseline_rounds: int = 0
    plugin_baseline_canary_ms: float = 0.0
    plugin: list[PluginTrial] = field(default_factory=list)
    ab: list[ABTrial] = field(default_factory=list)
    bench: list[BenchTrial] = field(default_factory=list)


def record_baseline(bench: Bench, directory: Path, policy: CheckPolicy) -> tuple[LatencyResult, int]:
    """The plugin's record path (``--ortperf-update``), retried while refused as too noisy."""
    for attempt in range(1, MAX_RECORD_ATTEMPTS + 1):
        store = BaselineStore(directory)
        result, _ = bench.check(BASE_LAYERS, store, CheckPolicy(update=True, measure=policy.measure))
        log(
            f"  record attempt {attempt}: {result.status}, median {result.current.median_ms:.4g} ms, "
            f"round cv {result.current.round_cv:.1%}"
        )
        if not result.failed:
            store.write()
            return result, attempt
    raise RuntimeError(f"no baseline could be recorded in {MAX_RECORD_ATTEMPTS} attempts (too noisy)")


def absolute(baseline: LatencyStats, current: LatencyStats, policy: CheckPolicy) -> Comparison:
    """Stored mode's comparison of the same measurements without the canary (absolute round medians)."""
    strip: dict[str, Any] = {"canary_round_medians_ms": ()}
    return stored_comparison(
        dataclasses.replace(baseline, **strip),
        dataclasses.replace(current, **strip),
        threshold=policy.threshold,
        confidence=policy.confidence,
    )


def run_campaign(index: int, bench: Bench, args: argparse.Namespace, rng: random.Random) -> Campaign:
    campaign = Campaign(
        index=index,
        started=dt.datetime.now().isoformat(timespec="seconds"),
        load=loadavg(),
        others=other_pytest_processes(),
    )
    log(f"campaign {index}: load {campaign.load}, other pytest processes {campaign.others}")
    policy = CheckPolicy(measure=MeasureSettings(budget_s=args.budget))
    ab_policy = CheckPolicy()
    base_dir = bench.root / f"campaign{index}" / "baselines"
    work = bench.root / f"campaign{index}" / "bench"
    work.mkdir(parents=True)
    (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (work / "test_bench.py").write_text(BENCH_TEST, encoding="utf-8")

    recorded, campaign.record_attempts = record_baseline(bench, base_dir, policy)
    campaign.plugin_baseline_ms = recorded.current.median_ms
    campaign.plugin_baseline_cv = recorded.current.round_cv
    canary = recorded.current.canary_round_medians_ms
    campaign.plugin_baseline_canary_ms = statistics.median(canary) if canary else math.nan
    saved = run_pytest_benchmark(bench, work, BASE_LAYERS, ["--benchmark-save=baseline"])
    campaign.bench_baseline_ms, campaign.bench_baseline_rounds = saved.median_ms, saved.rounds
    log(f"  pytest-benchmark baseline: median {saved.median_ms:.4g} ms over {saved.rounds} rounds")

    trials = [("plugin", c) for c in CONDITIONS for _ in range(args.reps)]
    trials += [("ab", c) for c in CONDITIONS for _ in range(args.reps)]
    trials += [("bench", c) for c in CONDITIONS for _ in range(args.bench_reps)]
    rng.shuffle(trials)
    compare = ["--benchmark-compare", "--benchmark-compare-fail=median:10%"]
    for number, (tool, condition) in enumerate(trials, 1):
        layers = CONDITIONS[condition]
        started = time.monotonic()
        if tool == "ab":
            result = bench.ab(layers, ab_policy)
            assert result.comparison is not None, result.status
            decisive = result.confirmation or result.comparison
            campaign.ab.append(
                ABTrial(
                    campaign=index,
                    condition=condition,
                    failed=result.failed,
                    status=result.status,
                    ratio=decisive.estimate.ratio,
                    low=decisive.estimate.low,
                    high=decisive.estimate.high,
                    rounds=result.current.rounds,
                    seconds=time.monotonic() - started,
                )
            )
            shown = f"{result.status:<28} {decisive.estimate.describe()}"
        elif tool == "plugin":
            result, measured = bench.check(layers, BaselineStore(base_dir), policy)
            assert result.comparison is not None, result.status
            assert result.baseline is not None
            assert result.baseline.latency is not None
            decisive = result.confirmation or result.comparison
            # The same measurements judged on absolute round medians (no canary), with the same
            # confirmation rule; a confirmation is measured when only this statistic asks for one.
            base = result.baseline.latency
            abs_first = absolute(base, measured[0], policy)
            abs_failed = False
            if abs_first.verdict is Verdict.REGRESSION:
                if len(measured) < 2:
                    _, more = bench.check(layers, BaselineStore(base_dir), policy)
                    measured.append(more[0])
                abs_failed = absolute(base, measured[1], policy).verdict is Verdict.REGRESSION
            trial = PluginTrial(
                campaign=index,
                condition=condition,
                failed=result.failed,
                first_regression=result.comparison.verdict is Verdict.REGRESSION,
                first_ratio=result.comparison.estimate.ratio,
                first_low=result.comparison.estimate.low,
                final_ratio=decisive.estimate.ratio,
                status=result.status,
                median_ms=result.current.median_ms,
                round_cv=result.current.round_cv,
                seconds=time.monotonic() - started,
                absolute_first_regression=abs_first.verdict is Verdict.REGRESSION,
                absolute_first_ratio=abs_first.estimate.ratio,
                absolute_failed=abs_failed,
                absolute_inconclusive=abs_first.verdict is Verdict.INCONCLUSIVE,
            )
            campaign.plugin.append(trial)
            shown = (
                f"{result.status:<28} {result.comparison.estimate.describe()}; no canary "
                f"{(abs_first.estimate.ratio - 1) * 100:+.1f}% {'FAILED' if abs_failed else ''}"
            )
        else:
            outcome = run_pytest_benchmark(bench, work, layers, compare)
            btrial = BenchTrial(
                campaign=index,
                condition=condition,
                failed=outcome.failed,
                ratio=outcome.median_ms / campaign.bench_baseline_ms,
                median_ms=outcome.median_ms,
                rounds=outcome.rounds,
                iterations=outcome.iterations,
                seconds=outcome.seconds,
            )
            campaign.bench.append(btrial)
            shown = f"{'FAILED' if outcome.failed else 'passed':<28} {(btrial.ratio - 1) * 100:+.1f}%"
        log(
            f"  [{number}/{len(trials)}] {tool:<6} {condition:<5} {shown} "
            f"({time.monotonic() - started:.1f} s)"
        )
    return campaign


# Report ---------------------------------------------------------------------


def wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(hits: int, n: int) -> str:
    low, high = wilson(hits, n)
    return f"{hits}/{n} = {hits / n:.0%} [{low:.0%}-{high:.0%}]" if n else "-"


def spread(values: Sequence[float]) -> str:
    if not values:
        return "-"
    pct = [(v - 1) * 100 for v in values]
    return f"{statistics.median(pct):+.1f}% ({min(pct):+.1f} .. {max(pct):+.1f})"


def report(
    args: argparse.Namespace,
    bench: Bench,
    ratios: dict[int, tuple[float, float]],
    ratios_end: dict[int, tuple[float, float]],
    campaigns: list[Campaign],
    load_start: str,
    others_start: int,
    during: str,
    elapsed_s: float,
) -> str:
    import onnxruntime as ort

    plugin = [t for c in campaigns for t in c.plugin]
    btrials = [t for c in campaigns for t in c.bench]
    lines = [
        "# Gate quality: false alarms and detection, pytest-ortperf vs pytest-benchmark",
        "",
        f"- date: {dt.datetime.now().isoformat(timespec='seconds')}",
        f"- machine: {cpu_model()}, nproc {usable_cores()} ({os.uname().sysname} {os.uname().release})",
        f"- onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}, "
        f"python {sys.version.split()[0]}",
        f"- load average (1/5/15 min) at start: {load_start} (other pytest processes: {others_start}); "
        f"at end: {loadavg()}",
        f"- during the run: {during}",
        f"- code at the start: {args.code_at_start}; at the end: {code_state()}",
        f"- model: `tests.models.mlp_model(layers, width={args.width})`, batch {args.batch}, "
        f"plugin default session settings ({SessionSettings().describe()}), CPU, ORT_ENABLE_ALL",
        f"- (b) stored mode: `check_latency` with `CheckPolicy()` defaults (threshold "
        f"{CheckPolicy().threshold:.0%}, fastest quarter of round medians relative to the machine-speed "
        f"canary, 99% interval, confirmation), budget {args.budget:g} s"
        + (" (the default)" if args.budget == MeasureSettings().budget_s else " (NOT the default)"),
        "- (c) A/B mode: `check_ab` with `CheckPolicy()` defaults (threshold "
        f"{CheckPolicy().threshold:.0%}, "
        f"budget {CheckPolicy().ab.budget_s:g} s for both models, paired round ratios, sign-test 99% "
        "interval, confirmation): the N-layer model against a fresh 20-layer session",
        f"- pytest-benchmark {version('pytest-benchmark')}: real `pytest` subprocess per trial, "
        "defaults (max_time 1 s, "
        "min 5 rounds), "
        "`--benchmark-compare --benchmark-compare-fail=median:10%` against a `--benchmark-save`d run",
        f"- {len(campaigns)} campaigns (baselines recorded at each campaign's start); per campaign "
        f"{args.reps} stored-mode, {args.reps} A/B and {args.bench_reps} pytest-benchmark trials per "
        "condition, all in one "
        f"shuffled order (seed {args.seed}); a fresh session per trial",
        f"- total run time {elapsed_s / 60:.1f} min",
        "",
        "Method and how to run: see the docstring of `benchmarks/gate_quality.py`.",
        "",
        "## Real work added (fastest run vs fastest run of the 20-layer model)",
        "",
        "| layers | condition | fastest (ms), start | ratio, start | median (ms), start | "
        "fastest (ms), end | ratio, end |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    base_min, base_min_end = ratios[BASE_LAYERS][0], ratios_end[BASE_LAYERS][0]
    for condition, layers in CONDITIONS.items():
        if condition == "A/A":
            continue
        fast, med = ratios[layers]
        fast_end = ratios_end[layers][0]
        lines.append(
            f"| {layers} | {condition} | {fast:.4g} | {fast / base_min:.3f} | {med:.4g} | "
            f"{fast_end:.4g} | {fast_end / base_min_end:.3f} |"
        )
    lines.append(
        f"| {BASE_LAYERS} | baseline | {base_min:.4g} | 1 | {ratios[BASE_LAYERS][1]:.4g} | "
        f"{base_min_end:.4g} | 1 |"
    )
    abtrials = [t for c in campaigns for t in c.ab]

    def of(trials: Sequence[Any], condition: str) -> list[Any]:
        return [t for t in trials if t.condition == condition]

    lines += [
        "",
        "## Decisions, side by side (pooled over campaigns; fails / trials, Wilson 95% interval)",
        "",
        "| condition | (a) pytest-benchmark `median:10%` | (b) stored mode, defaults (canary) "
        "| (b') stored mode without the canary | (c) A/B mode, defaults |",
        "| --- | --- | --- | --- | --- |",
    ]

    def fails(trials: Sequence[Any], condition: str) -> str:
        sel = of(trials, condition)
        return rate(sum(t.failed for t in sel), len(sel))

    for condition in CONDITIONS:
        lines.append(
            f"| {condition} | {fails(btrials, condition)} | {fails(plugin, condition)} "
            f"| {rate(sum(t.absolute_failed for t in of(plugin, condition)), len(of(plugin, condition)))} "
            f"| {fails(abtrials, condition)} |"
        )
    lines += [
        "",
        "## Estimates and honesty",
        "",
        "Change estimates (median and range over trials) and how often each mode said 'inconclusive' "
        "(the noise could not rule out a slowdown beyond the threshold; the test passes and the report "
        "says so). Stored mode's first measurement is also judged without the canary (absolute round "
        "medians, same data) to show what the canary buys.",
        "",
        "| condition | pytest-benchmark change | stored change, canary | stored change, no canary | "
        "stored inconclusive, canary / no canary | A/B change | A/B inconclusive |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for condition in CONDITIONS:
        p_, a_, b_ = of(plugin, condition), of(abtrials, condition), of(btrials, condition)
        lines.append(
            f"| {condition} | {spread([t.ratio for t in b_])} | {spread([t.first_ratio for t in p_])} | "
            f"{spread([t.absolute_first_ratio for t in p_])} | "
            f"{sum(t.status.startswith('inconclusive') for t in p_)}/{len(p_)} / "
            f"{sum(t.absolute_inconclusive for t in p_)}/{len(p_)} | "
            f"{spread([t.ratio for t in a_])} | "
            f"{sum(t.status.startswith('inconclusive') for t in a_)}/{len(a_)} |"
        )

    def target(trials: Sequence[Any], aa_limit: int, goals: dict[str, float]) -> list[str]:
        aa = of(trials, "A/A")
        alarms = sum(t.failed for t in aa)
        verdict = "met" if alarms == 0 and len(aa) >= aa_limit else "NOT met"
        out = [f"  - 0 false alarms in >= {aa_limit} A/A runs: {alarms} in {len(aa)} -> {verdict}"]
        for condition, goal in goals.items():
            sel = of(trials, condition)
            hit = sum(t.failed for t in sel) / len(sel) if sel else math.nan
            met = "met" if hit >= goal else "NOT met"
            out.append(f"  - >= {goal:.0%} detection of {condition}: {hit:.0%} -> {met}")
        return out

    lines += ["", "## Targets", "", "- stored mode at its defaults (canary):"]
    lines += target(plugin, 50, {"+20%": 0.95, "+10%": 0.80})
    no_canary = [dataclasses.replace(t, failed=t.absolute_failed) for t in plugin]
    lines += ["- stored mode without the canary:"]
    lines += target(no_canary, 50, {"+20%": 0.95, "+10%": 0.80})
    lines += ["- A/B mode at its defaults:"]
    lines += target(abtrials, 50, {"+5%": 0.95})
    lines += [
        "",
        "## Per campaign",
        "",
        "| campaign | started | load at start | stored baseline median (ms), canary (ms), round cv, "
        "attempts | bench baseline median (ms), rounds | stored fails A/A, +5, +10, +20 | "
        "stored first-measurement flags | A/B fails | bench fails |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in campaigns:

        def counts(trials: Sequence[Any], attr: str) -> str:
            parts = []
            for condition in CONDITIONS:
                sel = [t for t in trials if t.condition == condition]
                parts.append(f"{sum(bool(getattr(t, attr)) for t in sel)}/{len(sel)}")
            return ", ".join(parts)

        lines.append(
            f"| {c.index} | {c.started} | {c.load} | {c.plugin_baseline_ms:.4g}, "
            f"{c.plugin_baseline_canary_ms:.4g}, {c.plugin_baseline_cv:.1%}, {c.record_attempts} | "
            f"{c.bench_baseline_ms:.4g}, {c.bench_baseline_rounds} | {counts(c.plugin, 'failed')} | "
            f"{counts(c.plugin, 'first_regression')} | {counts(c.ab, 'failed')} | "
            f"{counts(c.bench, 'failed')} |"
        )
    lines += [
        "",
        "## Every plugin trial that was flagged on its first measurement",
        "",
        "| campaign | condition | first estimate (low) | final estimate | status | current median (ms) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for t in plugin:
        if t.first_regression:
            lines.append(
                f"| {t.campaign} | {t.condition} | {(t.first_ratio - 1) * 100:+.1f}% "
                f"({(t.first_low - 1) * 100:+.1f}%) | {(t.final_ratio - 1) * 100:+.1f}% | {t.status} | "
                f"{t.median_ms:.4g} |"
            )
    ab_secs = [t.seconds for t in abtrials]
    p_secs = [t.seconds for t in plugin]
    b_secs = [t.seconds for t in btrials]
    rounds = [t.rounds for t in btrials]
    lines += [
        "",
        "## Cost",
        "",
        f"- plugin check: median {statistics.median(p_secs):.1f} s per trial (session build, warmup, "
        "measurement, and the confirmation when flagged)"
        if p_secs
        else "- plugin: no trials",
        f"- A/B check: median {statistics.median(ab_secs):.1f} s per trial (two session builds, warmup, "
        "measurement, confirmation when flagged)"
        if ab_secs
        else "- A/B: no trials",
        f"- pytest-benchmark: median {statistics.median(b_secs):.1f} s per pytest subprocess, "
        f"{min(rounds)}-{max(rounds)} rounds of {sorted({t.iterations for t in btrials})} iteration(s)"
        if b_secs
        else "- pytest-benchmark: no trials",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--campaigns", type=int, default=3)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--bench-reps", type=int, default=20)
    parser.add_argument("--out", type=Path, help="also write the report here after every campaign")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--budget", type=float, default=MeasureSettings().budget_s)
    parser.add_argument("--work-blocks", type=int, default=10)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    import onnxruntime as ort

    ort.set_default_logger_severity(3)
    rng = random.Random(args.seed)
    started, load_start, others_start = time.monotonic(), loadavg(), other_pytest_processes()
    args.code_at_start = code_state()  # the modules are imported now: this is the code measured
    sampler = Sampler()
    sampler.start()
    with tempfile.TemporaryDirectory(prefix="ortperf-gate-") as tmp:
        root = Path(tmp)
        paths = {}
        for layers in sorted(set(CONDITIONS.values())):
            paths[layers] = root / f"mlp{layers}.onnx"
            onnx.save(mlp_model(layers, args.width), paths[layers])
        bench = Bench(root, args.batch, paths, runtime_info(), detect_machine())
        log("measuring the real work ratio (fastest vs fastest)")
        ratios = work_ratios(bench, args.work_blocks, 20, rng)
        for layers, (fast, med) in ratios.items():
            log(
                f"  {layers} layers: fastest {fast:.4g} ms "
                f"({fast / ratios[BASE_LAYERS][0]:.3f}), median {med:.4g}"
            )
        campaigns = []
        for index in range(1, args.campaigns + 1):
            campaigns.append(run_campaign(index, bench, args, rng))
            if args.out is not None:  # a partial report survives an interrupted run
                args.out.write_text(
                    report(
                        args,
                        bench,
                        ratios,
                        ratios,
                        campaigns,
                        load_start,
                        others_start,
                        "partial",
                        time.monotonic() - started,
                    )
                )
        log("measuring the real work ratio again")
        ratios_end = work_ratios(bench, args.work_blocks, 20, rng)
        text = report(
            args,
            bench,
            ratios,
            ratios_end,
            campaigns,
            load_start,
            others_start,
            sampler.stop(),
            time.monotonic() - started,
        )
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
