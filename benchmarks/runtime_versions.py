"""Two ONNX Runtime versions side by side, and the gate quality of A/B across measuring workers.

Part 1, ``versions``: every example model at all four optimization levels, measured in a worker
of each environment (``--reference`` and ``--current`` interpreters, e.g. two
``ortperf env create`` environments with onnxruntime 1.31.1 and 1.32.0), side by side by the A/B
rule: the latency ratio current / reference with its 99% interval, and the largest output
difference. Each cell is measured twice, with the workers' order of creation swapped.

Part 2, ``gate``: A/B across workers with the same runtime on both sides (two workers of
``--current``): A/A checks of the base model of three workload families, and checks of a model
grown by +5% (``benchmarks/gate_paths.py``'s families), with the A/B confirmation on fresh
sessions; and the same checks in process (the latency check's side-by-side route in this runtime,
``kinds/latency.py: LatencyCheck``, as ``benchmarks/gate_paths.py: side_by_side`` drives
``check_ab``), to compare the cost.

    python benchmarks/runtime_versions.py versions --reference .ortperf/envs/X/bin/python \\
        --current .ortperf/envs/Y/bin/python
    python benchmarks/runtime_versions.py gate --current .ortperf/envs/Y/bin/python --trials 17

Prints markdown (the tables of ``benchmarks/README.md``) and writes the raw trials as JSON beside
``--out``. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.conditions import Sampler, code_state, loadavg  # noqa: E402
from benchmarks.gate_paths import FAMILIES, Models, fresh, side_by_side  # noqa: E402
from benchmarks.two_processes_a_side import WorkerSide, load_pair  # noqa: E402
from pytest_ortperf.checks.latency_verdicts import check_ab  # noqa: E402
from pytest_ortperf.checks.policy import CheckPolicy  # noqa: E402
from pytest_ortperf.latency.paired import INSTANCES, judge_pair, measure_pair  # noqa: E402
from pytest_ortperf.ort.inputs import InputOptions, load_feeds, specs_from_session  # noqa: E402
from pytest_ortperf.ort.models import ModelResolver, ModelSource  # noqa: E402
from pytest_ortperf.ort.providers import resolve_provider  # noqa: E402
from pytest_ortperf.ort.session_settings import SessionSettings  # noqa: E402
from pytest_ortperf.ort.variants import OptLevel, Variant  # noqa: E402
from pytest_ortperf.ort.workers import SideSpec, WorkerPool, WorkerProcess, load  # noqa: E402
from pytest_ortperf.store.keys import CheckKey  # noqa: E402
from pytest_ortperf.store.machine import detect_machine  # noqa: E402

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
EXAMPLES = REPO / "examples" / "models"
# The example suite's models, with the input options its tests use.
MODELS: tuple[tuple[str, Path, InputOptions], ...] = (
    ("ResNet-50", LIGHT / "light_resnet50.onnx", InputOptions()),
    ("SqueezeNet", LIGHT / "light_squeezenet.onnx", InputOptions()),
    ("Inception v1", LIGHT / "light_inception_v1.onnx", InputOptions()),
    (
        "encoder",
        EXAMPLES / "encoder.onnx",
        InputOptions(
            dims={"batch": 3, "sequence": 17}, int_ranges={"input_ids": (0, 512), "attention_mask": (1, 2)}
        ),
    ),
    ("small CNN", EXAMPLES / "small_cnn.onnx", InputOptions()),
    ("torch conv2d", EXAMPLES / "torch_conv2d" / "model.onnx", InputOptions()),
)
LEVELS = (OptLevel.DISABLED, OptLevel.BASIC, OptLevel.EXTENDED, OptLevel.ALL)
CPU = resolve_provider("cpu", source="benchmark")
KEY = CheckKey(test_file="bench.py", test="bench", variant="cpu-all", machine="bench", record_command="")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _feeds(source: ModelSource, options: InputOptions) -> dict[str, Any]:
    import onnxruntime as ort

    session = ort.InferenceSession(source.ort_input, providers=["CPUExecutionProvider"])
    return dict(load_feeds(source, specs_from_session(session), options))


def _max_diff(current: dict[str, Any], reference: dict[str, Any]) -> tuple[float, float]:
    """(largest absolute difference, largest relative one) over every output."""
    worst_abs = worst_rel = 0.0
    for name, value in current.items():
        a, b = np.asarray(value, np.float64), np.asarray(reference[name], np.float64)
        diff = np.abs(a - b)
        worst_abs = max(worst_abs, float(diff.max(initial=0.0)))
        scale = np.maximum(np.abs(b), 1e-6)
        worst_rel = max(worst_rel, float((diff / scale).max(initial=0.0)))
    return worst_abs, worst_rel


def versions(reference: str, current: str, out: Path) -> str:
    policy = CheckPolicy()
    rows: list[dict[str, Any]] = []
    workers = {
        "reference": WorkerProcess(reference, timeout_s=300),
        "current": WorkerProcess(current, timeout_s=300),
    }
    runtimes = {role: w.runtime.describe() for role, w in workers.items()}
    log(f"reference {runtimes['reference']} ({reference}); current {runtimes['current']} ({current})")
    try:
        for name, path, options in MODELS:
            source = ModelResolver(REPO).resolve(str(path), test_dir=REPO, origin="benchmark")
            feeds = _feeds(source, options)
            for level in LEVELS:
                variant = Variant(CPU, level)
                estimates = []
                for repeat in range(2):
                    order = ("reference", "current") if repeat == 0 else ("current", "reference")
                    loaded = {
                        role: load(
                            workers[role], source, variant, SessionSettings(), feeds, instances=INSTANCES
                        )
                        for role in order
                    }
                    try:
                        rounds = measure_pair(loaded["current"], loaded["reference"], policy.ab)
                        estimates.append(judge_pair(rounds, threshold=policy.threshold).estimate)
                        outputs = {role: model.outputs() for role, model in loaded.items()}
                        medians = (rounds.reference.median_ms, rounds.current.median_ms)
                    finally:
                        for model in loaded.values():
                            model.release()
                abs_diff, rel_diff = _max_diff(outputs["current"], outputs["reference"])
                row = {
                    "model": name,
                    "level": level.value,
                    "reference_ms": medians[0],
                    "current_ms": medians[1],
                    "estimates": [e.describe() for e in estimates],
                    "ratios": [e.ratio for e in estimates],
                    "max_abs_diff": abs_diff,
                    "max_rel_diff": rel_diff,
                }
                rows.append(row)
                log(f"{name} {level.value}: {row['estimates']} max abs diff {abs_diff:.3g}")
    finally:
        for worker in workers.values():
            worker.close()
    out.write_text(json.dumps({"runtimes": runtimes, "rows": rows}, indent=1))
    lines = [
        f"reference: {runtimes['reference']}, current: {runtimes['current']}; change = current / reference, "
        "median of paired round ratios with its 99% sign-test interval, measured twice",
        "",
        "| model | level | 1st: median ms ref -> cur | change (1st) | change (2nd) | max abs output diff |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        lines.append(
            f"| {row['model']} | {row['level']} | {row['reference_ms']:.3g} -> {row['current_ms']:.3g} | "
            f"{row['estimates'][0]} | {row['estimates'][1]} | {row['max_abs_diff']:.2g} |"
        )
    return "\n".join(lines)


def _across_workers(models: Models, name: str, policy: CheckPolicy, python: str) -> Any:
    """The same check with each side in measuring workers of ``python``, as the latency check's
    route across runtimes runs it (``kinds/latency.py: LatencyCheck``): ``ort/workers.py: load_pair``
    (``PROCESSES`` workers a side) and ``check_ab``, a regression confirmed in new workers. New
    workers per check, so the cost includes starting them, as a check's first use in a run does."""
    pool = WorkerPool(timeout_s=300)
    try:
        source = {
            n: ModelResolver(models.root).resolve(models.paths[n], test_dir=models.root, origin="b")
            for n in (name, "base")
        }
        _, built = fresh(models, "base")
        inputs = dict(
            load_feeds(
                built.model,
                specs_from_session(built.session),
                InputOptions(dims={"batch": models.family.batch}),
            )
        )
        variant = Variant(CPU, OptLevel.ALL)

        def pair(new: bool = False) -> tuple[WorkerSide, WorkerSide]:
            current = SideSpec(python, source[name], SessionSettings())
            reference = SideSpec(python, source["base"], SessionSettings())
            return load_pair(pool, current, reference, variant, inputs, fresh=new)

        current, other = pair()
        return check_ab(
            current, other, key=KEY, label="base", policy=policy, fresh_pair=lambda: pair(new=True)
        )
    finally:
        pool.close()


def gate(python: str, trials: int, in_process_trials: int, out: Path) -> str:
    policy = CheckPolicy()
    results: list[dict[str, Any]] = []
    root = out.parent / "runtime_versions_models"
    root.mkdir(parents=True, exist_ok=True)
    for family in FAMILIES:
        models = Models(family, root)
        plan = [("workers", "A/A", "base")] * trials + [("workers", "+5%", "+5%")] * trials
        plan += [("in process", "A/A", "base")] * in_process_trials
        plan += [("in process", "+5%", "+5%")] * in_process_trials
        # Interleaved, so a slow spell of the machine touches every condition alike.
        order = sorted(range(len(plan)), key=lambda i: (i % trials, i))
        for index in order:
            where, condition, name = plan[index]
            started = time.perf_counter()
            if where == "workers":
                result = _across_workers(models, name, policy, python)
            else:
                result = side_by_side(models, name, None, policy)  # the side-by-side route, in process
            elapsed = time.perf_counter() - started
            decisive = result.decisive
            results.append(
                {
                    "family": family.name,
                    "where": where,
                    "condition": condition,
                    "failed": result.failed,
                    "status": str(result.status),
                    "ratio": decisive.estimate.ratio if decisive else math.nan,
                    "low": decisive.estimate.low if decisive else math.nan,
                    "high": decisive.estimate.high if decisive else math.nan,
                    "first": result.comparison.estimate.ratio if result.comparison else math.nan,
                    "seconds": elapsed,
                }
            )
            log(
                f"{family.name} {where} {condition}: {result.status} "
                f"{decisive.estimate.describe() if decisive else ''} {elapsed:.1f} s"
            )
        out.write_text(json.dumps(results, indent=1))
    return gate_table(results)


def gate_table(results: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| where | condition | mlp | conv | small-ops | all | s/check, median / p90 (mlp, conv, small-ops) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for where in ("workers", "in process"):
        for condition in ("A/A", "+5%"):
            cells, times, total, hits = [], [], 0, 0
            for family in ("mlp", "conv", "small-ops"):
                cell = (family, where, condition)
                rows = [r for r in results if (r["family"], r["where"], r["condition"]) == cell]
                failed = sum(r["failed"] for r in rows)
                cells.append(f"{failed}/{len(rows)}")
                total, hits = total + len(rows), hits + failed
                spent = [r["seconds"] for r in rows]
                times.append(
                    f"{float(np.median(spent)):.2f} / {float(np.quantile(spent, 0.9, method='higher')):.2f}"
                    if rows
                    else "-"
                )
            lines.append(
                f"| {where} | {condition} | {' | '.join(cells)} | {hits}/{total} failed | "
                f"{', '.join(times)} |"
            )
    return "\n".join(lines)


def bias(python: str, pairs: int, repeats: int, out: Path, *, swap: bool = False, families: str = "") -> str:
    """A/A across worker processes: ``pairs`` pairs of fresh workers, each pair measured ``repeats``
    times (fresh sessions in the same processes each time). A ratio that repeats within a pair and
    differs between pairs is a bias of the process, which fresh sessions cannot remove. ``swap``:
    the reference side's process is started, and its model loaded, first."""
    policy = CheckPolicy()
    root = out.parent / "runtime_versions_models"
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for family in FAMILIES:
        if families and family.name not in families.split(","):
            continue
        models = Models(family, root)
        source = ModelResolver(models.root).resolve(models.paths["base"], test_dir=models.root, origin="b")
        _, built = fresh(models, "base")
        inputs = dict(
            load_feeds(
                built.model,
                specs_from_session(built.session),
                InputOptions(dims={"batch": models.family.batch}),
            )
        )
        variant = Variant(CPU, OptLevel.ALL)
        for pair in range(pairs):
            started = [WorkerProcess(python, timeout_s=300) for _ in range(2)]
            here, there = started[::-1] if swap else started
            ratios = []
            try:
                for _ in range(repeats):
                    if swap:
                        other = load(there, source, variant, SessionSettings(), inputs, instances=INSTANCES)
                    current = load(here, source, variant, SessionSettings(), inputs, instances=INSTANCES)
                    if not swap:
                        other = load(there, source, variant, SessionSettings(), inputs, instances=INSTANCES)
                    estimate = judge_pair(measure_pair(current, other, policy.ab), threshold=0.03).estimate
                    ratios.append(estimate.ratio)
                    current.release()
                    other.release()
            finally:
                here.close()
                there.close()
            rows.append({"family": family.name, "pair": pair, "ratios": ratios})
            log(f"{family.name} pair {pair}: {' '.join(f'{(r - 1) * 100:+.1f}%' for r in ratios)}")
    out.write_text(json.dumps(rows, indent=1))
    lines = [
        "| family | pair | A/A estimates, the same two worker processes (fresh sessions each time) |",
        "| --- | --- | --- |",
    ]
    lines += [
        f"| {r['family']} | {r['pair'] + 1} | {', '.join(f'{(x - 1) * 100:+.1f}%' for x in r['ratios'])} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("versions", "gate", "bias"))
    parser.add_argument("--reference", help="interpreter of the reference runtime (versions)")
    parser.add_argument("--current", required=True, help="interpreter of the current runtime")
    parser.add_argument("--trials", type=int, default=17, help="gate: trials per family and condition")
    parser.add_argument("--in-process-trials", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=6, help="bias: pairs of worker processes per family")
    parser.add_argument("--swap", action="store_true", help="bias: start and load the reference side first")
    parser.add_argument("--families", default="", help="bias: comma-separated families (default: all)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/runtime_versions.json"))
    args = parser.parse_args(argv)
    machine = detect_machine()
    log(f"machine {machine.key} ({machine.cpu}, {machine.cores} cores)")
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    started, load_start, code = time.monotonic(), loadavg(), code_state()
    sampler = Sampler()
    sampler.start()
    if args.part == "versions":
        if not args.reference:
            parser.error("versions needs --reference")
        table = versions(args.reference, args.current, args.out)
    elif args.part == "bias":
        table = bias(args.current, args.pairs, 3, args.out, swap=args.swap, families=args.families)
    else:
        table = gate(args.current, args.trials, args.in_process_trials, args.out)
    header = [
        f"- started {started_at}, took {(time.monotonic() - started) / 60:.1f} min",
        f"- machine: {machine.name} ({machine.cpu}; {machine.hardware.slug}), "
        f"python {sys.version.split()[0]}",
        f"- load average at start: {load_start}; {sampler.stop()}",
        f"- code: {code}",
        "",
    ]
    print("\n".join([*header, table]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
