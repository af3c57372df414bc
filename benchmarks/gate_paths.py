"""Gate quality by decision path, across workload families: the defaults of the path a check takes.

Question: a plain run decides each latency check by one of three paths (``docs/latency.md``):
``unchanged`` (nothing the repository controls changed: a short look, passes),
``side by side`` (the model or its settings changed and the recorded reference can be
rebuilt: both measured in interleaved rounds, the A/B rule decides) and ``stored figures``
(nothing to rebuild: today's figures against the baseline's). At the defaults, does each
stay quiet when nothing that matters changed, and catch a real +5% (side by side) or +20%
(stored figures)? Which stored-figures rule, if any, keeps A/A false alarms at <= 2% in
every family? And how does pytest-benchmark's ``median:10%`` gate do on the same runs?

Targets: 0 false alarms in every family on A/A, on a re-export (same graph, other bytes)
and on a settings change that does not change latency; +5% caught in >= 95% side by side.

Method:

1. Families (``tests.models``), each a base model and one grown by a known amount of work:
   ``mlp`` (20 x MatMul+Relu, 1024 wide, batch 16; +5%: 21 layers, +20%: 24),
   ``conv`` (20 x Conv3x3+Relu, 32 channels, 32x32; 21 and 24 layers),
   ``small-ops`` (600 Mul/Add/Tanh on [1, 64]; 630 and 720 operators),
   ``int8`` (``mlp_model(20, 512)`` dynamic-quantized by ``onnxruntime.quantization.quantize_dynamic``:
   DynamicQuantizeLinear + MatMulInteger per layer, batch 16; 21, 22 and 24 layers),
   ``recurrent`` (two stacked LSTMs, hidden 128, batch 2, over the first 40 of 48 input steps;
   42, 44 and 48 steps, the same feeds). +10% is 22 layers, 660 operators, 44 steps.
   Sessions are built as the plugin builds them (``SessionPool``, default settings).
   The work the grown variants add is measured at the start and the end of the run (fastest run
   against fastest run of the base model, in shuffled interleaved blocks on one session each).
2. Per campaign, per family: the base model's baseline is recorded by the plugin's record
   path (``check_latency`` under update, a real ``BaselineStore``) and pytest-benchmark
   saves its own. Then every trial of every family and condition runs in one shuffled
   order, each with fresh sessions, as a new CI run builds them:

   - ``unchanged``: the base model, its recorded environment intact: path 1.
   - ``re-export``, ``settings``, ``+5%``: path 2, ``check_ab`` (``checks/latency_verdicts.py``:
     the plugin's side-by-side engine at its defaults, two sessions a side, a regression confirmed
     on fresh sessions, as the latency check's side-by-side route calls it, ``kinds/latency.py:
     LatencyCheck``) of the re-exported model / the base model under
     ``inter_op_threads=2`` (sequential execution: no effect expected) / the grown model,
     against the base model under the recorded settings.
   - ``stored A/A``, ``stored +20%``: path 4, ``check_latency`` with the inputs' digest
     changed in the environment (nothing to rebuild), so this machine's stored figures judge
     (its first measurement and, after a first regression, its confirmation are kept for the
     offline rule table).
   - ``bench A/A``, ``bench +5%``: a real ``pytest`` subprocess under pytest-benchmark
     with ``--benchmark-compare-fail=median:10%`` against the campaign's saved run.

3. Counts are pooled per family over campaigns; the stored-figures rule table re-judges the
   same stored measurements at wider thresholds (first and confirmation both regressions).
4. ``--beside-worker locked|unlocked``: every trial runs beside a process doing another xdist
   worker's untimed work without pause (:data:`BESIDE_WORKER`: sessions built, run for outputs,
   optimized graphs built). ``locked``: as the plugin runs it, the untimed work holds the timing lock
   shared (``TimingLock.untimed``) and the side-by-side check exclusively, so they take turns;
   ``unlocked``: neither holds a lock, the check measures while the other worker builds.

Run from the repository root, on a machine doing nothing else (about 35 minutes for the first
three families with the defaults; every family is chosen unless ``--families`` names some)::

    python -m benchmarks.gate_paths --out benchmarks/results/gate_paths.md
    python -m benchmarks.gate_paths --families int8,recurrent \
        --conditions "unchanged,A/A,re-export,settings,+5%,+10%,+20%" \
        --out benchmarks/results/gate_paths_new_families.md
    python -m benchmarks.gate_paths --beside-worker locked --families mlp,conv,small-ops --campaigns 1 \
        --conditions "A/A,re-export,+5%" --no-work --out benchmarks/results/gate_paths_beside_worker.md
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import onnx

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.conditions import Sampler, code_state, loadavg, other_pytest_processes  # noqa: E402
from benchmarks.gate_quality import BENCH_TEST, log, wilson  # noqa: E402
from benchmarks.gate_quality import run_pytest_benchmark as _run_bench  # noqa: E402
from pytest_ortperf.checks.latency_verdicts import check_ab, check_across, check_latency, stored_comparison  # noqa: E402
from pytest_ortperf.checks.paths import choose, without_reference  # noqa: E402
from pytest_ortperf.checks.policy import CheckPolicy  # noqa: E402
from pytest_ortperf.latency.canary import Canary  # noqa: E402
from pytest_ortperf.latency.decision import RatioEstimate, Verdict, decide  # noqa: E402
from pytest_ortperf.latency.measure import MeasureSettings, measure  # noqa: E402
from pytest_ortperf.latency.paired import AB_SETTINGS, INSTANCES, RoundsInTurn  # noqa: E402
from pytest_ortperf.latency.stats import LatencyStats  # noqa: E402
from pytest_ortperf.latency.timing_lock import TimingLock  # noqa: E402
from pytest_ortperf.ort.inputs import InputOptions, load_feeds, specs_from_session  # noqa: E402
from pytest_ortperf.ort.models import ModelResolver  # noqa: E402
from pytest_ortperf.ort.probe import ProviderProber  # noqa: E402
from pytest_ortperf.ort.providers import resolve_provider  # noqa: E402
from pytest_ortperf.ort.runtime import import_onnxruntime, runtime_info  # noqa: E402
from pytest_ortperf.ort.session_settings import SessionSettings  # noqa: E402
from pytest_ortperf.ort.sessions import BuiltSession, SessionPool  # noqa: E402
from pytest_ortperf.ort.variants import OptLevel, Variant  # noqa: E402
from pytest_ortperf.ort.workers import ProcessUnit, SideSpec, WorkerPool, load_units, this_python  # noqa: E402
from pytest_ortperf.store.baselines import BaselineStore  # noqa: E402
from pytest_ortperf.store.environment import environment  # noqa: E402
from pytest_ortperf.store.keys import CheckKey  # noqa: E402
from pytest_ortperf.store.machine import detect_machine  # noqa: E402
from tests.models import (  # noqa: E402
    conv_stack_model,
    int8_mlp_model,
    lstm_model,
    mlp_model,
    reexported,
    small_ops_model,
)

CONDITIONS = (
    "unchanged",
    "A/A",
    "re-export",
    "settings",
    "+5%",
    "+10%",
    "+20%",
    "stored A/A",
    "stored +20%",
    "bench A/A",
    "bench +5%",
)
# The same checks as the engine measured them before sequential looks and settled warm-up (commit
# b22db2f): the whole budget in 40 rounds always, a fixed warm-up of 5 runs and 0.2 s (0.05 s for
# the glance).
# Chosen only with --conditions, e.g. "unchanged (before),A/A (before),+5% (before)".
BEFORE = " (before)"
BEFORE_CONDITIONS = tuple(f"{c}{BEFORE}" for c in ("unchanged", "A/A", "+5%", "+10%", "+20%", "stored A/A"))
BEFORE_POLICY = CheckPolicy(
    sequential=False,
    measure=replace(MeasureSettings(), warmup_s=0.2, warmup_cap_s=0.2),
    ab=replace(AB_SETTINGS, rounds=40, warmup_s=0.2, warmup_cap_s=0.2),
)
BEFORE_GLANCE_POLICY = replace(  # the glance's warm-up was 0.05 s, fixed
    BEFORE_POLICY, measure=replace(MeasureSettings(), warmup_s=0.05, warmup_cap_s=0.05)
)
STORED = CheckPolicy().threshold
# Thresholds re-judged offline on the stored trials: a confirmation exists only where the default's
# first measurement was a regression, so only thresholds at or above the default are re-judged.
STORED_RULES = tuple(t for t in (0.06, 0.10, 0.15, 0.20, 0.30) if t >= STORED)
CHANGED_SETTINGS = SessionSettings(inter_op_threads=2)


@dataclass(frozen=True)
class Family:
    name: str
    build: Callable[[int], onnx.ModelProto]
    base: int
    plus5: int
    plus20: int
    batch: int = 1
    plus10: int = 0


# Another xdist worker's untimed work, without pause (the worst case: a real worker also waits for the
# timing lock): build a session, run it for its outputs, build its optimized graph, again and again.
BESIDE_WORKER = textwrap.dedent(
    """
    import contextlib, os, sys, tempfile
    from pathlib import Path
    import numpy as np
    import onnxruntime as ort
    from pytest_ortperf.latency.timing_lock import TimingLock
    from tests.models import mlp_model

    ort.set_default_logger_severity(3)
    lock = TimingLock(Path(sys.argv[1])) if len(sys.argv) > 1 else None
    model = mlp_model(8, 256).SerializeToString()
    feeds = {"x": np.ones((16, 256), np.float32)}
    out = os.path.join(tempfile.mkdtemp(prefix="ortperf-beside-"), "optimized.onnx")
    while True:
        # One item's untimed work, held shared as the plugin holds it (locked), or not (unlocked).
        with lock.untimed() if lock is not None else contextlib.nullcontext():
            session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
            for _ in range(3):
                session.run(None, feeds)
            options = ort.SessionOptions()
            options.optimized_model_filepath = out
            ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    """
)

FAMILIES = (
    Family("mlp", lambda n: mlp_model(n, 1024), 20, 21, 24, batch=16, plus10=22),
    Family("conv", lambda n: conv_stack_model(n, 32, 32), 20, 21, 24, plus10=22),
    Family("small-ops", small_ops_model, 600, 630, 720, plus10=660),
    Family("int8", lambda n: int8_mlp_model(n, 512), 20, 21, 24, batch=16, plus10=22),
    Family("recurrent", lambda n: lstm_model(n, 128, 2, input_steps=48), 40, 42, 48, batch=2, plus10=44),
)


@dataclass(frozen=True)
class Trial:
    campaign: int
    family: str
    condition: str
    failed: bool
    status: str
    ratio: float  # the decisive estimate (current / reference); nan where there is none
    low: float
    high: float
    seconds: float
    first_ratio: float = math.nan  # stored trials: the first measurement, for the rule table
    first_low: float = math.nan
    first_high: float = math.nan
    confirm_ratio: float = math.nan
    confirm_low: float = math.nan
    confirm_high: float = math.nan
    measured: tuple[LatencyStats, ...] = ()  # stored trials: what was measured, for other baselines


@dataclass
class Models:
    """A family's model files: base, re-export, +5%, +20%."""

    family: Family
    root: Path
    paths: dict[str, Path] = field(default_factory=dict)

    def __post_init__(self) -> None:
        base = self.family.build(self.family.base)
        for name, model in (
            ("base", base),
            ("re-export", reexported(base)),
            ("+5%", self.family.build(self.family.plus5)),
            ("+10%", self.family.build(self.family.plus10)),
            ("+20%", self.family.build(self.family.plus20)),
        ):
            self.paths[name] = self.root / f"{self.family.name}-{name.strip('+%')}.onnx".replace("-.", ".")
            onnx.save(model, self.paths[name])


def fresh(
    models: Models, name: str, settings: SessionSettings | None = None
) -> tuple[SessionPool, BuiltSession]:
    runtime = runtime_info()
    pool = SessionPool(import_onnxruntime(), ProviderProber(runtime.available_providers, runtime.describe()))
    source = ModelResolver(models.root).resolve(models.paths[name], test_dir=models.root, origin="gate_paths")
    variant = Variant(resolve_provider("cpu", source="gate_paths"), OptLevel.ALL)
    return pool, pool.get(source, variant, settings or SessionSettings())


def feeds_of(models: Models, built: BuiltSession) -> dict[str, Any]:
    options = InputOptions(dims={"batch": models.family.batch})
    return dict(load_feeds(built.model, specs_from_session(built.session), options))


def key(family: str) -> CheckKey:
    return CheckKey(
        test_file=f"test_{family}.py",
        test="test_latency[cpu-all]",
        variant="cpu-all",
        machine="bench",
        record_command="ortperf update",
    )


def stored_check(
    models: Models, name: str, store: BaselineStore, policy: CheckPolicy, *, stored: bool = False
) -> tuple[Any, list[LatencyStats]]:
    """``ort_perf.check_latency()`` minus pytest: path 1 (or the record); ``stored``: the stored path."""
    pool, built = fresh(models, name)
    canary = Canary.build(import_onnxruntime(), built.variant, built.settings)
    measured: list[LatencyStats] = []

    def measure_fn(run: Callable[[], object], settings: MeasureSettings) -> LatencyStats:
        stats = measure(run, settings, canary=canary.run)
        measured.append(stats)
        return stats

    try:
        inputs = feeds_of(models, built)
        env = environment(built, inputs, machine=detect_machine(), runtime=runtime_info())
        if stored:
            # Nothing to rebuild (the recorded inputs are not kept): this machine's figures decide.
            env = {**env, "inputs_sha256": "stored figures decide"}
        session = built.session
        check = key(models.family.name)
        loaded = store.lookup(check.test_file, check.test)
        plan = choose(loaded, env, check.machine, update=policy.update)
        if stored and not policy.update:
            # Changed synthetic inputs are made again and measured side by side (issue 47): the stored
            # path is what is left when nothing can be rebuilt.
            plan = without_reference(plan, "nothing rebuilt (the benchmark's stored path)", may_be_short=True)
        result = check_latency(
            lambda: session.run(None, inputs),
            key=check,
            plan=plan,
            entry=store.state(check.test_file, check.test, loaded),
            policy=policy,
            environment=env,
            today=dt.date.today().isoformat(),
            measure_fn=measure_fn,
        )
        if result.staged is not None:  # what a recording verdict asks to stage, the gate stages
            store.stage(check.test_file, check.test, result.staged)
        return result, measured
    finally:
        pool.close()


# --beside-worker locked: the timing lock the side-by-side check holds and the other worker's untimed
# work holds shared (None: no lock, as with --beside-worker unlocked or without a worker beside).
BESIDE_LOCK: list[Path | None] = [None]
SESSIONS_A_SIDE = [INSTANCES]  # --instances: to compare other counts with the plugin's
AB_ROUNDS = [AB_SETTINGS.rounds]  # --ab-rounds: side-by-side rounds in the budget (shorter rounds: more)


def side_by_side(models: Models, name: str, settings: SessionSettings | None, policy: CheckPolicy) -> Any:
    """Path 2: ``name`` (under ``settings``) against the recorded base model, default settings, as the
    latency check's side-by-side route measures it (``kinds/side_by_side.py``): across measuring
    processes of a pool of this run's own (each trial a new CI run), units added until a look
    decides (``checks.latency_verdicts.check_across``); the timing lock held for each batch's
    warm-ups and rounds when a worker beside holds its untimed work under it. ``--in-process``: the
    route before issue 57 (two sessions a side in this process, a regression confirmed on fresh
    ones), for comparison."""
    if IN_PROCESS[0]:
        return side_by_side_in_process(models, name, settings, policy)
    pool, built = fresh(models, name, settings)
    ref_pool, reference = fresh(models, "base")
    workers = WorkerPool(timeout_s=300.0)
    units: list[ProcessUnit] = []
    try:
        inputs = feeds_of(models, built)
        here = SideSpec(this_python(), built.model, built.settings)
        there = SideSpec(this_python(), reference.model, reference.settings)

        def load(count: int) -> list[ProcessUnit]:
            batch = load_units(workers, here, there, built.variant, inputs, first=len(units), count=count)
            units.extend(batch)
            return batch

        lock = BESIDE_LOCK[0]
        return check_across(
            load,
            key=key(models.family.name),
            label="the recorded model",
            policy=policy,
            held=(lambda: TimingLock(lock).held()) if lock is not None else contextlib.nullcontext,
        )
    finally:
        for unit in units:
            unit.release()
        workers.close()
        pool.close()
        ref_pool.close()


IN_PROCESS = [False]  # --in-process: the side-by-side route before issue 57


def side_by_side_in_process(
    models: Models, name: str, settings: SessionSettings | None, policy: CheckPolicy
) -> Any:
    """The side-by-side route before issue 57: two sessions a side in this process, a regression
    confirmed on fresh ones (``check_ab``)."""
    instances = SESSIONS_A_SIDE[0]
    pool, built = fresh(models, name, settings)
    ref_pool, reference = fresh(models, "base")
    try:
        inputs = feeds_of(models, built)

        def side(*sessions: BuiltSession) -> RoundsInTurn:
            return RoundsInTurn([functools.partial(b.session.run, None, inputs) for b in sessions])

        def fresh_pair() -> tuple[RoundsInTurn, RoundsInTurn]:
            return (
                side(*(pool.fresh(built) for _ in range(instances))),
                side(*(ref_pool.fresh(reference) for _ in range(instances))),
            )

        lock = BESIDE_LOCK[0]
        with TimingLock(lock).held() if lock is not None else contextlib.nullcontext():
            return check_ab(
                side(built, *(pool.fresh(built) for _ in range(instances - 1))),
                side(reference, *(ref_pool.fresh(reference) for _ in range(instances - 1))),
                key=key(models.family.name),
                label="the recorded model",
                policy=policy,
                fresh_pair=fresh_pair,
            )
    finally:
        pool.close()
        ref_pool.close()


def bench_run(models: Models, name: str, work: Path, extra: Sequence[str]) -> Any:
    """One pytest-benchmark run of ``name`` (reuses gate_quality's runner through a stand-in bench)."""
    stand_in = argparse.Namespace(paths={0: models.paths[name]}, batch=models.family.batch)
    return _run_bench(stand_in, work, 0, extra)  # type: ignore[arg-type]


BASELINES: dict[tuple[int, str], LatencyStats] = {}  # (campaign, family) -> the recorded figures
GROWN = ("+5%", "+10%", "+20%")


@dataclass(frozen=True)
class Cost:
    """One variant's run times in a work measurement: fastest and median run, ms."""

    fastest_ms: float
    median_ms: float


def work_added(
    models: Models, rng: random.Random, blocks: int = 20, block_s: float = 0.05
) -> dict[str, Cost]:
    """The work the grown variants add: base, +5%, +10%, +20% on one session each (default settings),
    feeds of the base model, each run timed alone, in ``blocks`` shuffled interleaved blocks of about
    ``block_s`` per variant. The fastest run is the least noise-sensitive figure of the work."""
    names = ("base", *GROWN)
    built = {name: fresh(models, name) for name in names}
    try:
        inputs = feeds_of(models, built["base"][1])
        runs: dict[str, int] = {}
        for name, (_, b) in built.items():  # warm up, and size a block from the median of the warm-up
            times = []
            for _ in range(20):
                started = time.perf_counter_ns()
                b.session.run(None, inputs)
                times.append(time.perf_counter_ns() - started)
            runs[name] = max(1, round(block_s * 1e9 / statistics.median(times)))
        samples: dict[str, list[int]] = {name: [] for name in names}
        order = list(names)
        for _ in range(blocks):
            rng.shuffle(order)
            for name in order:
                session = built[name][1].session
                for _ in range(runs[name]):
                    started = time.perf_counter_ns()
                    session.run(None, inputs)
                    samples[name].append(time.perf_counter_ns() - started)
        return {name: Cost(min(t) / 1e6, statistics.median(t) / 1e6) for name, t in samples.items()}
    finally:
        for pool, _ in built.values():
            pool.close()


COSTS: dict[tuple[str, str], dict[str, Cost]] = {}  # (when, family) -> variant -> cost


def measure_work(all_models: Sequence[Models], when: str, rng: random.Random) -> None:
    for models in all_models:
        costs = work_added(models, rng)
        COSTS[(when, models.family.name)] = costs
        base = costs["base"].fastest_ms
        log(
            f"work added, {when}, {models.family.name}: base {base:.4g} ms; "
            + ", ".join(f"{name} x{costs[name].fastest_ms / base:.3f}" for name in GROWN)
        )


def run_campaign(
    index: int, all_models: list[Models], root: Path, rng: random.Random, reps: int, conditions: Sequence[str]
) -> list[Trial]:
    log(f"campaign {index}: load {loadavg()}, other pytest processes {other_pytest_processes()}")
    stores: dict[str, Path] = {}
    works: dict[str, Path] = {}
    bench_base: dict[str, float] = {}
    for models in all_models:
        name = models.family.name
        stores[name] = root / f"c{index}" / name / "baselines"
        for attempt in range(1, 6):
            store = BaselineStore(stores[name])
            recorded, _ = stored_check(models, "base", store, CheckPolicy(update=True))
            log(f"  {name}: record attempt {attempt}: {recorded.status}, {recorded.current.median_ms:.4g} ms")
            if not recorded.failed:
                store.write()
                BASELINES[(index, name)] = recorded.current
                break
        else:
            raise RuntimeError(f"{name}: no baseline in 5 attempts (too noisy)")
        works[name] = root / f"c{index}" / name / "bench"
        works[name].mkdir(parents=True)
        (works[name] / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (works[name] / "test_bench.py").write_text(BENCH_TEST, encoding="utf-8")
        bench_base[name] = bench_run(models, "base", works[name], ["--benchmark-save=baseline"]).median_ms
    plan = [(m, c) for m in all_models for c in conditions for _ in range(reps)]
    rng.shuffle(plan)
    trials = []
    compare = ["--benchmark-compare", "--benchmark-compare-fail=median:10%"]
    for number, (models, named) in enumerate(plan, 1):
        name, started = models.family.name, time.monotonic()
        extra: dict[str, Any] = {}
        condition = named.removesuffix(BEFORE)
        if named.endswith(BEFORE):
            policy = BEFORE_GLANCE_POLICY if condition == "unchanged" else BEFORE_POLICY
        else:
            policy = CheckPolicy(ab=replace(AB_SETTINGS, rounds=AB_ROUNDS[0]))
        if condition.startswith("bench"):
            outcome = bench_run(models, "base" if condition == "bench A/A" else "+5%", works[name], compare)
            ratio = outcome.median_ms / bench_base[name]
            failed, status, low, high = (
                outcome.failed,
                "regressed" if outcome.failed else "passed",
                ratio,
                ratio,
            )
        elif condition in ("unchanged", "stored A/A", "stored +20%"):
            model = "+20%" if condition == "stored +20%" else "base"
            result, measured = stored_check(
                models, model, BaselineStore(stores[name]), policy, stored=condition != "unchanged"
            )
            failed, status = result.failed, str(result.status)
            ratio = low = high = result.drift if result.drift is not None else math.nan
            if result.comparison is not None:
                decisive = result.confirmation or result.comparison
                ratio, low, high = decisive.estimate.ratio, decisive.estimate.low, decisive.estimate.high
                first = result.comparison.estimate
                extra = {"first_ratio": first.ratio, "first_low": first.low, "first_high": first.high}
                if result.confirmation is not None:
                    confirm = result.confirmation.estimate
                    extra |= {
                        "confirm_ratio": confirm.ratio,
                        "confirm_low": confirm.low,
                        "confirm_high": confirm.high,
                    }
            extra["measured"] = tuple(measured)  # type: ignore[assignment]
        else:
            model = {"A/A": "base", "re-export": "re-export", "settings": "base"}.get(condition, condition)
            settings = CHANGED_SETTINGS if condition == "settings" else None
            result = side_by_side(models, model, settings, policy)
            decisive = result.confirmation or result.comparison
            assert decisive is not None, result.status
            failed, status = result.failed, str(result.status)
            ratio, low, high = decisive.estimate.ratio, decisive.estimate.low, decisive.estimate.high
        seconds = time.monotonic() - started
        trials.append(Trial(index, name, named, failed, status, ratio, low, high, seconds, **extra))
        log(
            f"  [{number}/{len(plan)}] {name:<9} {named:<11} {status:<16} "
            f"{(ratio - 1) * 100:+.1f}% {'FAILED' if failed else ''} ({seconds:.1f} s)"
        )
    return trials


def stored_rule_fails(trial: Trial, threshold: float) -> bool:
    """Would the stored rule at ``threshold`` have failed this trial? First measurement and its
    confirmation must both be regressions by the gate's rule (``latency/decision.py: decide``; a
    confirmation exists whenever the default rule asked for one, which every wider threshold's
    regression implies)."""

    def regression(ratio: float, low: float, high: float) -> bool:
        estimate = RatioEstimate(ratio, low, high, CheckPolicy().confidence)
        return decide(estimate, threshold) is Verdict.REGRESSION

    if math.isnan(trial.first_ratio) or not regression(trial.first_ratio, trial.first_low, trial.first_high):
        return False
    return not math.isnan(trial.confirm_ratio) and regression(
        trial.confirm_ratio, trial.confirm_low, trial.confirm_high
    )


def pct(values: Sequence[float]) -> str:
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return "-"
    middle, low, high = ((v - 1) * 100 for v in (statistics.median(finite), min(finite), max(finite)))
    return f"{middle:+.1f}% ({low:+.1f} .. {high:+.1f})"


def rate(hits: int, n: int) -> str:
    if n == 0:
        return "-"
    low, high = wilson(hits, n)
    return f"{hits}/{n} ({hits / n:.0%}; {low:.0%}-{high:.0%})"


def seconds(trials: Sequence[Trial]) -> str:
    values = sorted(t.seconds for t in trials)
    if not values:
        return "-"
    p90 = values[min(len(values) - 1, math.ceil(0.9 * len(values)) - 1)]
    return f"{statistics.median(values):.2f} / {p90:.2f}"


def work_table(families: Sequence[str]) -> list[str]:
    """The work the grown variants add, measured at the start and the end of the run."""
    moments = [when for when in ("start", "end") if any((when, f) in COSTS for f in families)]
    if not moments:
        return []
    lines = ["", "## Work added: fastest run against the base model's fastest run", ""]
    lines += [
        "One session per variant, each run timed alone, 20 shuffled interleaved blocks of about "
        "50 ms per variant; in brackets the median runs' ratio.",
        "",
        "| family | base: fastest / median (ms) | "
        + " | ".join(f"{name} {when}" for when in moments for name in GROWN)
        + " |",
        "| --- | --- |" + " --- |" * (len(moments) * len(GROWN)),
    ]
    for family in families:
        cells = []
        for when in moments:
            costs = COSTS.get((when, family))
            for name in GROWN:
                if costs is None:
                    cells.append("-")
                    continue
                fastest = costs[name].fastest_ms / costs["base"].fastest_ms
                median = costs[name].median_ms / costs["base"].median_ms
                cells.append(f"x{fastest:.3f} ({median:.3f})")
        first = COSTS.get((moments[0], family))
        base = f"{first['base'].fastest_ms:.4g} / {first['base'].median_ms:.4g}" if first else "-"
        lines.append(f"| {family} | {base} | " + " | ".join(cells) + " |")
    return lines


def report(trials: list[Trial], header: list[str], families: Sequence[str]) -> str:
    lines = [*header, *work_table(families)]
    lines += ["", "## Fails / trials per family (Wilson 95% interval), pooled over campaigns", ""]
    lines += ["| condition | path | " + " | ".join(families) + " | estimate, all families: median (range) |"]
    lines += ["| --- | --- | " + " | ".join("---" for _ in families) + " | --- |"]
    paths = {
        "unchanged": "1 unchanged",
        "A/A": "2 side by side",
        "re-export": "2 side by side",
        "settings": "2 side by side",
        "+5%": "2 side by side",
        "+10%": "2 side by side",
        "+20%": "2 side by side",
        "stored A/A": f"4 stored figures ({STORED:.0%} rule)",
        "stored +20%": f"4 stored figures ({STORED:.0%} rule)",
        "bench A/A": "pytest-benchmark median:10%",
        "bench +5%": "pytest-benchmark median:10%",
    }
    paths |= {f"{c}{BEFORE}": paths[c] + " (before)" for c in list(paths)}
    ran = [c for c in (*CONDITIONS, *BEFORE_CONDITIONS) if any(t.condition == c for t in trials)]
    for condition in ran:
        cells = []
        for family in families:
            chosen = [t for t in trials if t.family == family and t.condition == condition]
            cells.append(rate(sum(t.failed for t in chosen), len(chosen)))
        every = [t.ratio for t in trials if t.condition == condition]
        lines.append(f"| {condition} | {paths[condition]} | " + " | ".join(cells) + f" | {pct(every)} |")
    lines += ["", "## Stored figures: the same measurements re-judged at wider thresholds", ""]
    lines += ["Failed = first measurement and confirmation both regressions at the threshold.", ""]
    lines += [
        "| threshold | "
        + " | ".join(f"A/A {f}" for f in families)
        + " | A/A all | "
        + " | ".join(f"+20% {f}" for f in families)
        + " |"
    ]
    lines += ["| --- |" + " --- |" * (2 * len(families) + 1)]
    for threshold in STORED_RULES:
        cells = []
        for condition in ("stored A/A", "stored +20%"):
            for family in families:
                chosen = [t for t in trials if t.family == family and t.condition == condition]
                cells.append(rate(sum(stored_rule_fails(t, threshold) for t in chosen), len(chosen)))
            if condition == "stored A/A":
                chosen = [t for t in trials if t.condition == condition]
                cells.append(rate(sum(stored_rule_fails(t, threshold) for t in chosen), len(chosen)))
        lines.append(f"| {threshold:.0%} | " + " | ".join(cells) + " |")
    lines += ["", "## Stored figures against the baselines of the other campaigns", ""]
    lines += [
        "Each stored trial's first measurement judged against the baselines the other campaigns "
        "recorded (figures of another time, 10-40 minutes apart); regressions of the first "
        "measurement only, so an upper bound on what confirmation would let through.",
        "",
    ]
    lines += [
        "| threshold | "
        + " | ".join(f"A/A {f}" for f in families)
        + " | "
        + " | ".join(f"+20% {f}" for f in families)
        + " |"
    ]
    lines += ["| --- |" + " --- |" * (2 * len(families))]
    for threshold in STORED_RULES:
        cells = []
        for condition in ("stored A/A", "stored +20%"):
            for family in families:
                hits = n = 0
                for t in trials:
                    if t.family != family or t.condition != condition or not t.measured:
                        continue
                    for (campaign, name), base in BASELINES.items():
                        if name != family or campaign == t.campaign:
                            continue
                        comparison = stored_comparison(base, t.measured[0], threshold=threshold)
                        n += 1
                        hits += comparison.verdict is Verdict.REGRESSION
                cells.append(rate(hits, n))
        lines.append(f"| {threshold:.0%} | " + " | ".join(cells) + " |")
    lines += ["", "## Seconds per check: median / p90 (session builds included)", ""]
    lines += ["| condition | " + " | ".join(families) + " |", "| --- |" + " --- |" * len(families)]
    for condition in ran:
        cells = [seconds([t for t in trials if t.family == f and t.condition == condition]) for f in families]
        lines.append(f"| {condition} | " + " | ".join(cells) + " |")
    lines += ["", "## Per campaign (fails / trials)", ""]
    campaigns = sorted({t.campaign for t in trials})
    lines += ["| family | condition | " + " | ".join(f"campaign {c}" for c in campaigns) + " |"]
    lines += ["| --- | --- |" + " --- |" * len(campaigns)]
    for family in families:
        for condition in ran:
            cells = []
            for c in campaigns:
                chosen = [
                    t for t in trials if t.family == family and t.condition == condition and t.campaign == c
                ]
                cells.append(f"{sum(t.failed for t in chosen)}/{len(chosen)}")
            lines.append(f"| {family} | {condition} | " + " | ".join(cells) + " |")
    statuses: dict[str, dict[str, int]] = {}
    for t in trials:
        statuses.setdefault(t.condition, {}).setdefault(t.status, 0)
        statuses[t.condition][t.status] += 1
    lines += ["", "## Statuses per condition", ""]
    for condition in ran:
        counted = ", ".join(f"{s} {n}" for s, n in sorted(statuses.get(condition, {}).items()))
        lines.append(f"- {condition}: {counted}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--campaigns", type=int, default=3)
    parser.add_argument("--reps", type=int, default=7, help="trials per condition per family per campaign")
    parser.add_argument("--out", type=Path, help="write the report here (also after every campaign)")
    parser.add_argument("--raw", type=Path, help="write every trial as JSON here")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--families", type=lambda v: v.split(","), default=[f.name for f in FAMILIES])
    parser.add_argument("--conditions", type=lambda v: v.split(","), default=list(CONDITIONS))
    parser.add_argument(
        "--instances", type=int, default=INSTANCES, help="sessions a side (with --in-process)"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="side by side as before issue 57: in this process, a regression confirmed on fresh sessions",
    )
    parser.add_argument(
        "--ab-rounds", type=int, default=AB_SETTINGS.rounds, help="side-by-side rounds planned in the budget"
    )
    parser.add_argument(
        "--no-work", action="store_true", help="skip measuring the work the grown variants add"
    )
    parser.add_argument(
        "--beside-worker",
        choices=("locked", "unlocked"),
        help="run every trial beside a process doing an xdist worker's untimed work without pause, "
        "holding the timing lock shared as the plugin does (locked) or ignoring it (unlocked)",
    )
    args = parser.parse_args(argv)
    unknown = set(args.conditions) - {*CONDITIONS, *BEFORE_CONDITIONS}
    if unknown:
        parser.error(f"unknown conditions: {', '.join(sorted(unknown))}")
    unknown = set(args.families) - {f.name for f in FAMILIES}
    if unknown:
        parser.error(
            f"unknown families: {', '.join(sorted(unknown))} (known: {', '.join(f.name for f in FAMILIES)})"
        )
    SESSIONS_A_SIDE[0] = args.instances
    IN_PROCESS[0] = args.in_process
    AB_ROUNDS[0] = args.ab_rounds
    import onnxruntime as ort

    ort.set_default_logger_severity(3)
    rng = random.Random(args.seed)
    work_rng = random.Random(args.seed + 1)  # its own: the trials' order for a seed stays what it was
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    started, load_start = time.monotonic(), loadavg()
    code = code_state()
    sampler = Sampler()
    sampler.start()
    machine = detect_machine()
    runtime = runtime_info()
    beside = None
    if args.beside_worker:
        lock_dir = Path(tempfile.mkdtemp(prefix="ortperf-beside-lock-"))
        BESIDE_LOCK[0] = lock_dir / "timing.lock" if args.beside_worker == "locked" else None
        lock_arg = [str(BESIDE_LOCK[0])] if BESIDE_LOCK[0] is not None else []
        beside = subprocess.Popen([sys.executable, "-c", BESIDE_WORKER, *lock_arg], cwd=REPO)
    try:
        text = _campaigns(
            args, rng, work_rng, started_at, started, load_start, code, sampler, machine, runtime
        )
    finally:
        if beside is not None:
            beside.kill()
            beside.wait()
    print(text, end="")
    return 0


def _campaigns(
    args: argparse.Namespace,
    rng: random.Random,
    work_rng: random.Random,
    started_at: str,
    started: float,
    load_start: str,
    code: str,
    sampler: Sampler,
    machine: Any,
    runtime: Any,
) -> str:
    """Every campaign, the report rewritten after each; the report's text."""
    trials: list[Trial] = []
    text = ""
    with tempfile.TemporaryDirectory(prefix="ortperf-paths-") as tmp:
        root = Path(tmp)
        all_models = [Models(family, root) for family in FAMILIES if family.name in args.families]
        families = [models.family.name for models in all_models]
        if not args.no_work:
            measure_work(all_models, "start", work_rng)
        for index in range(1, args.campaigns + 1):
            trials += run_campaign(index, all_models, root, rng, args.reps, args.conditions)
            last = index == args.campaigns
            if last and not args.no_work:
                measure_work(all_models, "end", work_rng)
            header = [
                f"# Gate quality by decision path, workload families: {', '.join(families)}",
                "",
                f"- started {started_at}; {'finished' if last else 'partial, after campaign ' + str(index)} "
                f"after {(time.monotonic() - started) / 60:.1f} min",
                f"- machine: {machine.name} ({machine.cpu}; {machine.hardware.slug})",
                f"- {runtime.describe()}, python {sys.version.split()[0]}",
                f"- load average at start: {load_start}; {sampler.stop() if last else 'sampling'}",
                f"- code: {code}",
                f"- {args.campaigns} campaigns x {args.reps} trials per condition per family, "
                f"seed {args.seed}",
                f"- defaults: `CheckPolicy()` (side by side: A/B rule, "
                f"{CheckPolicy().threshold:.0%} threshold, two sessions a side, "
                f"confirmation on fresh sessions; stored: {STORED:.0%}, 4 s, canary); "
                "side by side: "
                + (
                    f"in process (before issue 57), sessions a side: {args.instances}; rounds in the budget: "
                    f"{args.ab_rounds}"
                    if args.in_process
                    else "across measuring processes (check_across)"
                ),
                *(
                    [
                        "- beside a process doing an xdist worker's untimed work without pause "
                        f"(`--beside-worker {args.beside_worker}`: builds a session of an 8-layer "
                        "256-wide MLP, runs it 3 times, builds its optimized graph, again and again; "
                        + (
                            "each round of it holds the timing lock shared, as the plugin's untimed "
                            "work does, and each side-by-side check holds it exclusively)"
                            if args.beside_worker == "locked"
                            else "no timing lock)"
                        )
                    ]
                    if args.beside_worker
                    else []
                ),
                "",
                "Method: see the docstring of `benchmarks/gate_paths.py`.",
            ]
            text = report(trials, header, families)
            if args.out is not None:
                args.out.write_text(text, encoding="utf-8")
            if args.raw is not None:
                rows = [{k: v for k, v in asdict(t).items() if k != "measured"} for t in trials]
                args.raw.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return text


if __name__ == "__main__":
    raise SystemExit(main())
