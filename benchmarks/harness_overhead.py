"""How much does pytest-ortperf's measurement harness add to the latency it reports?

Question: does the plugin's reported median (``pytest_ortperf.latency.measure.measure``
with the settings ``check_latency`` uses) equal what a bare
``perf_counter_ns`` loop around ``session.run`` sees on the same session, and
how does pytest-benchmark's figure for the same work compare?

Targets: plugin within 2% of the bare loop on resnet50, within 5 us per call
on a one-op model.

Method:

1. Sessions are built the way the plugin builds them: ``SessionPool`` with the
   default ``SessionSettings`` (one intra-op thread, spinning off), CPU
   provider, ``ORT_ENABLE_ALL``; feeds from the plugin's own ``load_feeds``
   (seeded synthetic data). Models: ``tiny`` (one Relu on float32[1, 64]) and
   ``resnet50`` (``onnx/backend/test/data/light/light_resnet50.onnx``).
2. For each model, ``--pairs`` pairs are measured in one process on the same
   session, alternating: the plugin's measurement, exactly as ``check_latency``
   makes it on the CPU provider (``measure(run, MeasureSettings(),
   canary=...)``: 0.2 s warmup, 40 rounds over the 4 s budget with the
   machine-speed canary after every round, every run timed, gc off; ``run`` is
   ``lambda: watchdog.run(session, None, feeds)``, the watchdog-armed call
   the latency check, ``kinds/latency.py``, times) and a bare loop (5 warmup runs, then ``t0 =
   perf_counter_ns(); session.run(None, feeds); t1 = perf_counter_ns()`` for
   the model's share of the budget, 3 s, gc off as well, so only the harness
   differs). The order inside a pair alternates (plugin first in even pairs,
   bare first in odd ones), so a drift in machine speed does not favour
   either side. ``--no-canary`` measures without the canary, as
   ``--ortperf-canary=off`` does.
3. Per model: median of the plugin medians, median of the bare medians, the
   paired ratio plugin/bare (median and IQR over pairs) and the paired
   difference per call in microseconds (median and IQR).
4. pytest-benchmark on the same work: a generated test file is run with
   ``pytest --benchmark-json`` in a subprocess (pytest-benchmark defaults:
   max_time 1 s, min 5 rounds, automatic calibration of iterations per
   round, gc left on; pytest-ortperf disabled with ``-p no:ortperf``). Each of
   its tests times ``session.run`` with the ``benchmark`` fixture and also runs
   the same bare loop (1 s budget) on the same session in the same process,
   in alternating order, so its difference from the bare loop is paired too.

Run from the repository root (about 4 minutes with the defaults)::

    python -m benchmarks.harness_overhead > benchmarks/results/harness_overhead.md

Options: ``--pairs`` (default 16), ``--bench-reps`` (default 6),
``--models tiny,resnet50``. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from benchmarks.conditions import Sampler, code_state, loadavg, other_pytest_processes
from pytest_ortperf.latency.canary import Canary
from pytest_ortperf.latency.measure import CANARY_SHARE, MeasureSettings, measure
from pytest_ortperf.ort.inputs import Feeds, InputOptions, load_feeds, specs_from_session
from pytest_ortperf.ort.models import ModelResolver, ModelSource
from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.runtime import import_onnxruntime, runtime_info
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession, SessionPool
from pytest_ortperf.ort.variants import OptLevel, Variant
from pytest_ortperf.ort.watchdog import Watchdog
from pytest_ortperf.store.machine import cpu_model, usable_cores

RESNET50 = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"
BARE_WARMUP_RUNS = 5
TARGET_RATIO = 0.02  # resnet50: plugin within 2% of the bare loop
TARGET_US = 5.0  # tiny: plugin within 5 us per call of the bare loop


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def tiny_model() -> onnx.ModelProto:
    """One Relu on float32[1, 64]: almost pure per-call overhead."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "tiny_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def bare_loop_ms(session: Any, feeds: dict[str, Any], budget_s: float) -> float:
    """Median (ms) of a bare ``perf_counter_ns`` loop around ``session.run`` for ``budget_s``."""
    for _ in range(BARE_WARMUP_RUNS):
        session.run(None, feeds)
    clock = time.perf_counter_ns
    samples: list[int] = []
    gc.collect()
    gc.disable()
    try:
        deadline = clock() + int(budget_s * 1e9)
        while True:
            t0 = clock()
            session.run(None, feeds)
            t1 = clock()
            samples.append(t1 - t0)
            if t1 >= deadline:
                break
    finally:
        gc.enable()
    return float(np.median(samples)) / 1e6


@dataclass(frozen=True)
class Pair:
    plugin_ms: float
    bare_ms: float
    plugin_runs: int
    plugin_rounds: int

    @property
    def ratio(self) -> float:
        return self.plugin_ms / self.bare_ms

    @property
    def diff_us(self) -> float:
        return (self.plugin_ms - self.bare_ms) * 1000.0


def build(model: Any, rootdir: Path) -> tuple[BuiltSession, Feeds]:
    """A session and feeds exactly as the plugin makes them (defaults, cpu-all)."""
    ort = import_onnxruntime()
    runtime = runtime_info()
    pool = SessionPool(ort, ProviderProber(runtime.available_providers, runtime.describe()))
    source: ModelSource = ModelResolver(rootdir).resolve(model, test_dir=rootdir, origin="benchmark")
    variant = Variant(resolve_provider("cpu", source="benchmark"), OptLevel.ALL)
    built = pool.get(source, variant, SessionSettings())
    feeds = load_feeds(built.model, specs_from_session(built.session), InputOptions())
    return built, feeds


def measure_pairs(built: BuiltSession, feeds: Feeds, pairs: int, name: str, *, canary_on: bool) -> list[Pair]:
    session = built.session
    inputs = dict(feeds)
    settings = MeasureSettings()  # what CheckPolicy() hands to measure
    ort = import_onnxruntime()
    watchdog = Watchdog(ort, 300.0)  # the plugin's default --ortperf-run-timeout
    canary = Canary.build(ort, built.variant, built.settings).run if canary_on else None
    model_share_s = settings.budget_s * ((1.0 - CANARY_SHARE) if canary_on else 1.0)

    def run() -> object:  # what the latency check times: the watchdog-armed session.run
        return watchdog.run(session, None, inputs)

    def plugin() -> tuple[float, int, int]:
        stats = measure(run, settings, canary=canary)
        return stats.median_ms, stats.count, stats.rounds

    def bare() -> float:
        return bare_loop_ms(session, inputs, model_share_s)

    results = []
    for index in range(pairs):
        if index % 2 == 0:
            plugin_ms, count, rounds = plugin()
            bare_ms = bare()
        else:
            bare_ms = bare()
            plugin_ms, count, rounds = plugin()
        pair = Pair(plugin_ms, bare_ms, count, rounds)
        results.append(pair)
        log(
            f"{name} pair {index + 1}/{pairs}: plugin {plugin_ms:.5g} ms, bare {bare_ms:.5g} ms, "
            f"ratio {pair.ratio:.4f}"
        )
    return results


BENCH_TEST = '''"""Generated by benchmarks/harness_overhead.py: pytest-benchmark on the same work."""
import gc
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from pytest_ortperf.ort.inputs import InputOptions, load_feeds, specs_from_session
from pytest_ortperf.ort.models import ModelResolver
from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.runtime import import_onnxruntime, runtime_info
from pytest_ortperf.ort.sessions import SessionPool
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.variants import OptLevel, Variant

MODELS = json.loads(os.environ["HO_MODELS"])
REPS = int(os.environ["HO_REPS"])
BARE_OUT = os.environ["HO_BARE_OUT"]
_built = {}


def _session(name):
    if name not in _built:
        runtime = runtime_info()
        prober = ProviderProber(runtime.available_providers, runtime.describe())
        pool = SessionPool(import_onnxruntime(), prober)
        here = Path.cwd()
        source = ModelResolver(here).resolve(MODELS[name], test_dir=here, origin="bench")
        variant = Variant(resolve_provider("cpu", source="bench"), OptLevel.ALL)
        built = pool.get(source, variant, SessionSettings())
        feeds = dict(load_feeds(built.model, specs_from_session(built.session), InputOptions()))
        _built[name] = (pool, built.session, feeds)
    return _built[name][1], _built[name][2]


def _bare(session, feeds, budget_s):
    """The same bare loop as bare_loop_ms in harness_overhead.py."""
    for _ in range(5):
        session.run(None, feeds)
    clock = time.perf_counter_ns
    samples = []
    gc.collect()
    gc.disable()
    try:
        deadline = clock() + int(budget_s * 1e9)
        while True:
            t0 = clock()
            session.run(None, feeds)
            t1 = clock()
            samples.append(t1 - t0)
            if t1 >= deadline:
                break
    finally:
        gc.enable()
    return float(np.median(samples)) / 1e6


@pytest.mark.parametrize("rep", range(REPS))
@pytest.mark.parametrize("name", sorted(MODELS))
def test_run(benchmark, name, rep):
    session, feeds = _session(name)
    if rep % 2:
        bare_ms = _bare(session, feeds, 1.0)
        benchmark(session.run, None, feeds)
    else:
        benchmark(session.run, None, feeds)
        bare_ms = _bare(session, feeds, 1.0)
    with open(BARE_OUT, "a") as out:
        out.write(json.dumps({"name": name, "rep": rep, "bare_ms": bare_ms}) + "\\n")
'''


@dataclass(frozen=True)
class BenchRow:
    bench_ms: float
    bare_ms: float
    iterations: int
    rounds: int

    @property
    def ratio(self) -> float:
        return self.bench_ms / self.bare_ms

    @property
    def diff_us(self) -> float:
        return (self.bench_ms - self.bare_ms) * 1000.0


def run_pytest_benchmark(models: dict[str, str], reps: int) -> dict[str, list[BenchRow]]:
    """Run the generated test file under pytest-benchmark; pair each figure with its bare loop."""
    with tempfile.TemporaryDirectory(prefix="ortperf-bench-") as tmp:
        work = Path(tmp)
        (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (work / "test_bench.py").write_text(BENCH_TEST, encoding="utf-8")
        bare_out, json_out = work / "bare.jsonl", work / "bench.json"
        env = dict(os.environ, HO_MODELS=json.dumps(models), HO_REPS=str(reps), HO_BARE_OUT=str(bare_out))
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:ortperf",
            "-p",
            "no:cacheprovider",
            f"--benchmark-json={json_out}",
            "test_bench.py",
        ]
        log(f"pytest-benchmark: {' '.join(command[2:])}")
        done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"pytest-benchmark run failed:\n{done.stdout}\n{done.stderr}")
        bare = {}
        for line in bare_out.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            bare[(row["name"], row["rep"])] = float(row["bare_ms"])
        rows: dict[str, list[BenchRow]] = {name: [] for name in models}
        for bench in json.loads(json_out.read_text(encoding="utf-8"))["benchmarks"]:
            name, rep = bench["params"]["name"], bench["params"]["rep"]
            stats = bench["stats"]
            rows[name].append(
                BenchRow(
                    bench_ms=float(stats["median"]) * 1000.0,
                    bare_ms=bare[(name, rep)],
                    iterations=int(stats["iterations"]),
                    rounds=int(stats["rounds"]),
                )
            )
        return rows


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    q1, q2, q3 = np.percentile(np.asarray(values, dtype=np.float64), [25, 50, 75])
    return float(q1), float(q2), float(q3)


def fmt_iqr(values: Sequence[float], spec: str) -> str:
    q1, q2, q3 = quartiles(values)
    return f"{q2:{spec}} [{q1:{spec}} .. {q3:{spec}}]"


def header(title: str, load_start: str, during: str, extra: Sequence[str]) -> list[str]:
    import onnxruntime as ort

    return [
        f"# {title}",
        "",
        f"- date: {dt.datetime.now().isoformat(timespec='seconds')}",
        f"- machine: {cpu_model()}, nproc {usable_cores()} ({os.uname().sysname} {os.uname().release})",
        f"- onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}, "
        f"python {sys.version.split()[0]}",
        f"- load average (1/5/15 min) at start: {load_start}; at end: {loadavg()}",
        f"- during the run: {during}",
        f"- code: {code_state()}",
        *extra,
        "",
    ]


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(
    pairs: dict[str, list[Pair]],
    bench: dict[str, list[BenchRow]],
    args: argparse.Namespace,
    load_start: str,
    during: str,
    elapsed_s: float,
) -> str:
    lines = header(
        "Harness overhead: pytest-ortperf vs a bare loop vs pytest-benchmark",
        load_start,
        during,
        [
            f"- sessions: plugin defaults ({SessionSettings().describe()}), CPU, ORT_ENABLE_ALL; "
            "feeds: the plugin's seeded synthetic feeds",
            f"- {args.pairs} interleaved pairs per model (plugin `measure()` with `MeasureSettings()`, "
            f"{MeasureSettings().budget_s:g} s budget, {MeasureSettings().rounds} rounds, "
            f"canary {'on' if args.canary else 'off'}, around the watchdog-armed run, vs a bare loop "
            "for the model's share of the budget; order alternates within pairs); "
            f"pytest-benchmark: {args.bench_reps} tests per model, each paired with a 1 s bare loop "
            "in the same process",
            f"- total run time {elapsed_s / 60:.1f} min",
            "",
            "Method and how to run: see the docstring of `benchmarks/harness_overhead.py`.",
        ],
    )
    lines += [
        "## pytest-ortperf vs bare loop",
        "",
        "| model | plugin median (ms) | bare median (ms) | paired ratio plugin/bare, median [IQR] | "
        "difference per call (us), median [IQR] | plugin runs x rounds | target | met? |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    verdicts = []
    for name, rows in pairs.items():
        plugin_med = statistics.median(p.plugin_ms for p in rows)
        bare_med = statistics.median(p.bare_ms for p in rows)
        ratios = [p.ratio for p in rows]
        diffs = [p.diff_us for p in rows]
        ratio_med, diff_med = statistics.median(ratios), statistics.median(diffs)
        if name == "tiny":
            target, ok = f"|diff| <= {TARGET_US:g} us", abs(diff_med) <= TARGET_US
        else:
            target, ok = f"|ratio-1| <= {TARGET_RATIO:.0%}", abs(ratio_med - 1) <= TARGET_RATIO
        verdicts.append((name, ok))
        runs = statistics.median(p.plugin_runs for p in rows)
        rounds = statistics.median(p.plugin_rounds for p in rows)
        lines.append(
            f"| {name} | {plugin_med:.5g} | {bare_med:.5g} | {fmt_iqr(ratios, '.4f')} | "
            f"{fmt_iqr(diffs, '+.3f')} | {runs:.0f} x {rounds:.0f} | {target} | {verdict(ok)} |"
        )
    lines += ["", "Every pair (plugin ms / bare ms):", ""]
    for name, rows in pairs.items():
        shown = ", ".join(f"{p.plugin_ms:.4g}/{p.bare_ms:.4g}" for p in rows)
        lines.append(f"- {name}: {shown}")
    lines += [
        "",
        "## pytest-benchmark on the same work",
        "",
        f"pytest-benchmark {version('pytest-benchmark')} defaults (max_time 1 s, min_rounds 5, "
        "calibrated iterations per round, "
        "gc enabled); its figure is the median of per-round times divided by iterations.",
        "",
        "| model | pytest-benchmark median (ms) | bare median, same process (ms) | paired ratio bench/bare, "
        "median [IQR] | difference per call (us), median [IQR] | iterations per round | rounds |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, brows in bench.items():
        bench_med = statistics.median(b.bench_ms for b in brows)
        bare_med = statistics.median(b.bare_ms for b in brows)
        iters = sorted({b.iterations for b in brows})
        bench_rounds = [b.rounds for b in brows]
        lines.append(
            f"| {name} | {bench_med:.5g} | {bare_med:.5g} | {fmt_iqr([b.ratio for b in brows], '.4f')} | "
            f"{fmt_iqr([b.diff_us for b in brows], '+.3f')} | {', '.join(map(str, iters))} | "
            f"{min(bench_rounds)}-{max(bench_rounds)} |"
        )
    lines += ["", "## Targets", ""]
    for name, ok in verdicts:
        lines.append(f"- {name}: {verdict(ok)}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--bench-reps", type=int, default=6)
    parser.add_argument("--models", default="tiny,resnet50")
    parser.add_argument(
        "--no-canary", dest="canary", action="store_false", help="measure as --ortperf-canary=off does"
    )
    args = parser.parse_args(argv)
    import onnxruntime as ort

    ort.set_default_logger_severity(3)  # resnet50 warns about an unused initializer
    started, load_start = (
        time.monotonic(),
        f"{loadavg()} (other pytest processes: {other_pytest_processes()})",
    )
    sampler = Sampler(period_s=10.0)
    sampler.start()
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    with tempfile.TemporaryDirectory(prefix="ortperf-overhead-") as tmp:
        root = Path(tmp)
        tiny_path = root / "tiny_relu.onnx"
        onnx.save(tiny_model(), tiny_path)
        paths = {"tiny": str(tiny_path), "resnet50": str(RESNET50)}
        pairs: dict[str, list[Pair]] = {}
        for name in names:
            built, feeds = build(paths[name], root)
            log(f"{name}: built in {built.build_seconds:.2f} s, feeds {feeds.source}")
            pairs[name] = measure_pairs(built, feeds, args.pairs, name, canary_on=args.canary)
            del built
        bench = run_pytest_benchmark({n: paths[n] for n in names}, args.bench_reps)
    text = report(pairs, bench, args, load_start, sampler.stop(), time.monotonic() - started)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
