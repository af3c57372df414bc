"""What an ``ort_profile`` test costs, and whether unmarked tests notice it.

For squeezenet and resnet50 (from the onnx wheel), with the plugin's default
session settings on CPU:

1. cost of a marked test: building the extra profiling session, and the time
   of a profiled run vs an unprofiled run (interleaved, medians over runs),
   plus slicing the trace into per-run files at the end, and the operator
   profile a marked latency check stores when it records or fails;
2. unmarked tests: the plugin's latency ``measure()`` on the unprofiled session
   with and without a live profiling session of the same model in the process,
   alternated in pairs (paired ratio, median and IQR).

Run from the repository root: ``python -m benchmarks.profiling_cost``; it prints a
markdown report (``benchmarks/results/profiling_cost.md`` holds the last one).
"""

from __future__ import annotations

import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import onnx

from pytest_ortperf.latency.measure import MeasureSettings, measure
from pytest_ortperf.ort.inputs import InputOptions, load_feeds, specs_from_session
from pytest_ortperf.ort.models import ModelResolver
from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.runtime import import_onnxruntime, runtime_info
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession, SessionPool
from pytest_ortperf.ort.variants import OptLevel, Variant
from pytest_ortperf.profiling.book import operator_profile
from pytest_ortperf.profiling.run_profilers import EmulatedRunProfiler, prepare_directory
from pytest_ortperf.store.machine import cpu_model, usable_cores

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = {"squeezenet": LIGHT / "light_squeezenet.onnx", "resnet50": LIGHT / "light_resnet50.onnx"}
RUNS = 30
PAIRS = 8


def quartiles(values: list[float]) -> str:
    q1, q2, q3 = statistics.quantiles(values, n=4)
    return f"{q2:.3f} [{q1:.3f} .. {q3:.3f}]"


def build(pool: SessionPool, path: Path, root: Path) -> tuple[BuiltSession, dict[str, Any]]:
    model = ModelResolver(root).resolve(path, test_dir=root, origin="benchmark")
    variant = Variant(resolve_provider("cpu", source="benchmark"), OptLevel.ALL)
    built = pool.get(model, variant, SessionSettings())
    feeds = load_feeds(model, specs_from_session(built.session), InputOptions())
    return built, dict(feeds)


def marked_test_cost(pool: SessionPool, built: BuiltSession, feeds: dict[str, Any], work: Path) -> list[str]:
    directory = prepare_directory(work / "runs")
    started = time.perf_counter()
    profiler = EmulatedRunProfiler(
        lambda prefix: pool.build_profiling(built, prefix),
        directory / "session",
        directory,
        events_per_run=200,
    )
    build_s = time.perf_counter() - started
    for _ in range(3):  # warm both
        profiler.run(None, feeds)
        built.session.run(None, feeds)
    plain, profiled = [], []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        built.session.run(None, feeds)
        t1 = time.perf_counter()
        profiler.run(None, feeds)
        t2 = time.perf_counter()
        plain.append((t1 - t0) * 1000)
        profiled.append((t2 - t1) * 1000)
    started = time.perf_counter()
    files = profiler.finish()
    finish_s = time.perf_counter() - started
    sliced = sum(len(paths) for paths in files.values())
    started = time.perf_counter()
    operator_profile(pool, built, feeds)
    op_profile_s = time.perf_counter() - started
    ratio = statistics.median(p / q for p, q in zip(profiled, plain, strict=True))
    return [
        f"profiling session build {build_s * 1000:.1f} ms",
        f"run: unprofiled median {statistics.median(plain):.3f} ms, "
        f"profiled {statistics.median(profiled):.3f} ms (paired ratio {ratio:.3f})",
        f"end_profiling + slicing {sliced} runs into files: {finish_s * 1000:.1f} ms",
        f"operator profile stored with a recorded or failing baseline (another profiling session "
        f"build + 6 runs + slicing): {op_profile_s * 1000:.1f} ms",
    ]


def unmarked_latency(pool: SessionPool, built: BuiltSession, feeds: dict[str, Any], work: Path) -> list[str]:
    settings = MeasureSettings(budget_s=1.0)
    ratios, alone, beside = [], [], []
    for pair in range(PAIRS):
        order = (False, True) if pair % 2 == 0 else (True, False)
        result = {}
        for with_profiler in order:
            profiler = None
            if with_profiler:
                directory = prepare_directory(work / f"p{pair}")
                profiler = EmulatedRunProfiler(
                    lambda prefix: pool.build_profiling(built, prefix),
                    directory / "s",
                    directory,
                    events_per_run=200,
                )
                profiler.run(None, feeds)
            result[with_profiler] = measure(lambda: built.session.run(None, feeds), settings).median_ms
            if profiler is not None:
                profiler.finish()
        alone.append(result[False])
        beside.append(result[True])
        ratios.append(result[True] / result[False])
    return [
        f"median without a profiling session {statistics.median(alone):.3f} ms, with one alive "
        f"{statistics.median(beside):.3f} ms; paired ratio median [IQR] {quartiles(ratios)} "
        f"over {PAIRS} pairs"
    ]


def main() -> int:
    info = runtime_info()
    ort = import_onnxruntime()
    pool = SessionPool(ort, ProviderProber(info.available_providers, info.describe()))
    lines = [
        "# Profiling cost: what an ort_profile test pays, and what unmarked tests pay",
        "",
        f"- date: {dt.datetime.now().isoformat(timespec='seconds')}",
        f"- machine: {cpu_model()}, {usable_cores()} cores; {info.describe()}",
        f"- CPU, ORT_ENABLE_ALL, plugin default settings; {RUNS} interleaved run pairs; "
        f"{PAIRS} measure() pairs",
        "",
    ]
    with tempfile.TemporaryDirectory() as temp:
        for name, path in MODELS.items():
            built, feeds = build(pool, path, Path(temp))
            lines.append(f"## {name}")
            lines += [f"- {line}" for line in marked_test_cost(pool, built, feeds, Path(temp) / name)]
            lines += [
                f"- unmarked: {line}" for line in unmarked_latency(pool, built, feeds, Path(temp) / name)
            ]
            lines.append("")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
