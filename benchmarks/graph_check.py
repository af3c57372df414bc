"""The graph check: what it costs per variant, and what it saves a latency check on a re-export.

Questions:

1. The graph check builds, per variant, a session of its own that writes ORT's optimized model
   (``pytest_ortperf.ort.optimized_graph.optimized_graph``) and reads it into figures
   (``pytest_ortperf.graph.figures.summarize``: op histogram, fusions, canonical digest). What does
   that cost beside the plain session build the gate makes anyway, per model and optimization level?
2. A latency check whose model changed but whose optimized graph is the recorded one's (a re-export
   that only renames nodes, changes doc strings or metadata) now passes as ``unchanged (same graph)``
   with no timed round (``kinds/latency.py: LatencyCheck``, its same-graph shortcut, decided by
   ``checks/latency_verdicts.py: same_graph``); before (commit 9b74fa4, the parent of the
   graph work) it was measured side by side. How long does the whole ``pytest`` process take, before
   and after, on a re-export?

Method:

1. Cost, in this process: the example models (``examples/models/small_cnn.onnx``, ``encoder.onnx``,
   ``torch_conv2d/model.onnx``) and the onnx wheel's ``light_squeezenet`` and ``light_resnet50``, at
   the levels disabled, basic, extended and all, on the CPU provider with ``SessionSettings()``
   (Variant and SessionPool as ``benchmarks/gate_paths.py`` builds them). Per model x level, after one
   untimed warm-up of each, ``--reps`` pairs in alternating order (a b, b a, ...): (a) a plain,
   uncached session build (``SessionPool.fresh``: what the gate builds for the check anyway), (b)
   ``optimized_graph(...)`` + ``summarize(...)`` (the graph check's extra cost per side), timed
   with ``perf_counter``. Medians; b / a. The graph's digest is checked to be the same every time.
2. Re-export, in fresh ``pytest`` processes: per family (``tests.models``: mlp, conv, small-ops,
   int8) and per tree (before: ``--before`` in a temporary git worktree; after: a copy of this
   working tree's ``pytest_ortperf`` taken at the start), its own temporary git repository with
   ``model.onnx``, one test (``ort_perf.check_latency()`` under ``ort_model("model.onnx")``) and a
   ``pytest.ini`` with ``ortperf_opt_levels = all``, committed; the baseline recorded by that tree
   (``pytest --ortperf-update``) and committed; then ``model.onnx`` overwritten with
   ``reexported(model)`` (the same graph, other bytes). Then ``--runs`` plain runs per tree per
   family (``pytest -p no:cacheprovider -q -rA``, the tree first on ``PYTHONPATH``, ``CI`` unset),
   before and after alternated (b a, a b, ...), families interleaved; wall time of the process, the
   check's mode and verdict and the ``gate time:`` line read from its output.

Run from the repository root, on a machine doing nothing else (about 5 minutes on a 2-core machine
with the defaults)::

    python -m benchmarks.graph_check --out benchmarks/results/graph_check.md
    python -m benchmarks.graph_check --reps 1 --runs 1 --families mlp --models small_cnn  # smoke
"""

from __future__ import annotations

import argparse
import atexit
import datetime as dt
import gc
import hashlib
import os
import re
import shutil
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

from benchmarks.conditions import Sampler, cpu_fields, loadavg, other_pytest_processes  # noqa: E402
from pytest_ortperf.graph.figures import GraphFigures, short, summarize  # noqa: E402
from pytest_ortperf.ort.models import ModelResolver, ModelSource  # noqa: E402
from pytest_ortperf.ort.optimized_graph import optimized_graph  # noqa: E402
from pytest_ortperf.ort.probe import ProviderProber  # noqa: E402
from pytest_ortperf.ort.providers import resolve_provider  # noqa: E402
from pytest_ortperf.ort.runtime import import_onnxruntime, runtime_info  # noqa: E402
from pytest_ortperf.ort.session_settings import SessionSettings  # noqa: E402
from pytest_ortperf.ort.sessions import BuiltSession, SessionPool  # noqa: E402
from pytest_ortperf.ort.variants import OptLevel, Variant  # noqa: E402
from pytest_ortperf.store.machine import detect_machine  # noqa: E402
from tests.models import (  # noqa: E402
    conv_stack_model,
    int8_mlp_model,
    mlp_model,
    reexported,
    small_ops_model,
)

BEFORE = "9b74fa4"  # the parent of the graph work: a re-export is measured side by side
LEVELS = ("disabled", "basic", "extended", "all")
LIGHT = Path(onnx.__file__).parent / "backend/test/data/light"
MODELS: dict[str, Path] = {
    "small_cnn": REPO / "examples/models/small_cnn.onnx",
    "encoder": REPO / "examples/models/encoder.onnx",
    "torch_conv2d": REPO / "examples/models/torch_conv2d/model.onnx",
    "light_squeezenet": LIGHT / "light_squeezenet.onnx",
    "light_resnet50": LIGHT / "light_resnet50.onnx",
}
FAMILIES: dict[str, tuple[str, Callable[[], onnx.ModelProto]]] = {
    "mlp": ("mlp_model(layers=8, width=256)", lambda: mlp_model(layers=8, width=256)),
    "conv": (
        "conv_stack_model(layers=6, channels=32, size=32)",
        lambda: conv_stack_model(layers=6, channels=32, size=32),
    ),
    "small-ops": ("small_ops_model(ops=60, width=64)", lambda: small_ops_model(ops=60, width=64)),
    "int8": ("int8_mlp_model(layers=8, width=256)", lambda: int8_mlp_model(layers=8, width=256)),
}
TEST_FILE = """import pytest

pytestmark = pytest.mark.ort_model("model.onnx")


def test_latency(ort_perf):
    ort_perf.check_latency()
"""
PYTEST_INI = "[pytest]\nortperf_opt_levels = all\n"
GIT_ID = ["-c", "user.name=graph-check", "-c", "user.email=graph-check@example.invalid"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the machine and the code -------------------------------------------------------------------


def cpu_description() -> str:
    """'AMD EPYC (family 25 model 1, stepping 1), avx512f: no' from /proc/cpuinfo."""
    fields = cpu_fields()
    if not fields:
        return "unknown (no /proc/cpuinfo)"
    flags = fields.get("flags", "").split()
    return (
        f"{fields.get('model name', 'unknown')} (cpu family {fields.get('cpu family', '?')}, model "
        f"{fields.get('model', '?')}, stepping {fields.get('stepping', '?')}), "
        f"avx512f: {'yes' if 'avx512f' in flags else 'no'}, avx2: {'yes' if 'avx2' in flags else 'no'}; "
        f"{os.cpu_count()} logical CPUs"
    )


def git(*argv: str, cwd: Path = REPO) -> str:
    done = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, check=False)
    return done.stdout.rstrip()


def package_digest(root: Path) -> str:
    """sha256 (12 hex) over the package's .py files: tells whether the code changed during the run."""
    digest = hashlib.sha256()
    for path in sorted((root / "pytest_ortperf").rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def code_state() -> str:
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = [line[3:] for line in git("status", "--porcelain", "--", "pytest_ortperf").splitlines()]
    return (
        f"commit {commit}; uncommitted changes to pytest_ortperf/: {', '.join(changed) or 'none'}; "
        f"package digest {package_digest(REPO)}"
    )


# --- 1. cost per variant ------------------------------------------------------------------------


@dataclass
class Cost:
    model: str
    level: str
    build_ms: list[float] = field(default_factory=list)  # (a) plain session build
    graph_ms: list[float] = field(default_factory=list)  # (b) optimized_graph + summarize
    writing_ms: list[float] = field(default_factory=list)  # of (b): optimized_graph (build, write, read)
    digests: set[str] = field(default_factory=set)
    figures: GraphFigures | None = None
    source_nodes: int = 0
    error: str = ""


def measure_cost(
    name: str, path: Path, level: str, reps: int, pool: SessionPool, hardware: dict[str, object]
) -> Cost:
    ort = import_onnxruntime()
    cost = Cost(name, level)
    source: ModelSource = ModelResolver(path.parent).resolve(path, test_dir=path.parent, origin="graph_check")
    variant = Variant(resolve_provider("cpu", source="graph_check"), OptLevel(level))
    settings = SessionSettings()

    first: list[BuiltSession] = []  # the pool's cached session: each timed build is a fresh one like it

    def plain() -> None:
        if not first:
            first.append(pool.get(source, variant, settings))
        started = time.perf_counter()
        built = pool.fresh(first[0])
        cost.build_ms.append((time.perf_counter() - started) * 1e3)
        del built

    def graph() -> None:
        started = time.perf_counter()
        built = optimized_graph(ort, source, variant, settings)
        written = time.perf_counter()
        figures = summarize(
            built.optimized,
            built.source,
            placement=built.placement,
            requested=variant.provider,
            hardware=hardware,
        )
        done = time.perf_counter()
        cost.graph_ms.append((done - started) * 1e3)
        cost.writing_ms.append((written - started) * 1e3)
        cost.digests.add(figures.digest)
        cost.figures = figures
        cost.source_nodes = len(built.source.graph.node)

    try:
        plain()  # warm-up, untimed
        graph()
        for samples in (cost.build_ms, cost.graph_ms, cost.writing_ms):
            samples.clear()
        gc.collect()
        for rep in range(reps):
            for step in (plain, graph) if rep % 2 == 0 else (graph, plain):
                step()
                gc.collect()
    except Exception as exc:  # a model this ORT cannot build at this level: said in the report
        cost.error = " ".join(str(exc).split())[:200]
    finally:
        first.clear()
        pool.close()  # the cached session goes: one model x level alive at a time
    return cost


def cost_table(costs: list[Cost]) -> list[str]:
    lines = [
        "| model | level | nodes: model -> optimized | fused | (a) session build, ms | "
        "(b) graph check, ms | of (b): optimized_graph / summarize, ms | b / a | digest |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in costs:
        if c.error or not c.build_ms:
            lines.append(f"| {c.model} | {c.level} | - | - | - | - | - | - | error: {c.error} |")
            continue
        a, b, w = (statistics.median(v) for v in (c.build_ms, c.graph_ms, c.writing_ms))
        fig = c.figures
        assert fig is not None
        fused = ", ".join(f"{short(op)} {n}" for op, n in sorted(fig.fused.items())) or "none"
        digest = (
            f"{fig.digest[:8]}, same in all {len(c.graph_ms)}"
            if len(c.digests) == 1 and fig.digest
            else f"{len(c.digests)} different"
        )
        lines.append(
            f"| {c.model} | {c.level} | {c.source_nodes} -> {fig.nodes} | {fused} | {a:.1f} "
            f"({min(c.build_ms):.1f}..{max(c.build_ms):.1f}) | {b:.1f} ({min(c.graph_ms):.1f}.."
            f"{max(c.graph_ms):.1f}) | {w:.1f} / {b - w:.1f} | {b / a:.2f} | {digest} |"
        )
    return lines


# --- 2. re-export, before and after -------------------------------------------------------------


@dataclass
class Run:
    wall_s: float
    rc: int
    mode: str
    verdict: str
    gate: str
    sessions: str
    last: str


@dataclass
class Side:
    family: str
    tree: str
    root: Path
    record_s: float = 0.0
    error: str = ""
    runs: list[Run] = field(default_factory=list)


def pytest_env(tree: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("CI", None)
    return env


def run_pytest(tree: Path, cwd: Path, extra: Sequence[str]) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *extra],
        cwd=cwd,
        env=pytest_env(tree),
        capture_output=True,
        text=True,
        check=False,
    )
    return time.perf_counter() - started, done.returncode, done.stdout + done.stderr


def parse(wall: float, rc: int, output: str) -> Run:
    lines = output.splitlines()
    row = next((line for line in lines if line.startswith("test_latency.py::test_latency ")), "")
    cells = re.split(r"\s{2,}", row.strip()) if row else []
    mode = cells[2] if len(cells) >= 3 else "?"
    verdict = cells[-1] if cells else "?"
    gate = next((line for line in lines if line.startswith("gate time:")), "")
    sessions = next((line for line in lines if line.startswith("sessions:")), "")
    last = next((line for line in reversed(lines) if line.strip()), "")
    return Run(wall, rc, mode, verdict, gate, sessions, last.strip("= "))


def which_package(tree: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", "import pytest_ortperf; print(pytest_ortperf.__file__)"],
        env=pytest_env(tree),
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),
    )
    return done.stdout.strip() or done.stderr.strip()[-200:]


def prepare(side: Side, tree: Path, model: onnx.ModelProto) -> None:
    """The family's repository for one tree: model, test and ini committed, the baseline recorded by
    the tree and committed, then the model re-exported."""
    root = side.root
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    onnx.save(model, root / "model.onnx")
    (root / "test_latency.py").write_text(TEST_FILE, encoding="utf-8")
    (root / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", *GIT_ID, "commit", "-q", "-m", "model"], cwd=root, check=True)
    wall, rc, output = run_pytest(tree, root, ["--ortperf-update"])
    side.record_s = wall
    if rc != 0:
        side.error = f"recording the baseline exited {rc}: {' | '.join(output.strip().splitlines()[-6:])}"
        return
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", *GIT_ID, "commit", "-q", "-m", "baseline"], cwd=root, check=True)
    onnx.save(reexported(model), root / "model.onnx")


def reexport_rows(sides: dict[tuple[str, str], Side], families: Sequence[str]) -> list[str]:
    lines = [
        "| family | tree | runs, s | median, s | mode -> verdict | gate time (each run) | sessions |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for family in families:
        for tree in ("before", "after"):
            side = sides[(family, tree)]
            if side.error and not side.runs:
                lines.append(f"| {family} | {tree} | - | - | could not run: {side.error} | - | - |")
                continue
            walls = [r.wall_s for r in side.runs]
            modes = sorted({f"{r.mode} -> {r.verdict}" for r in side.runs})
            gates = "; ".join(re.sub(r"^gate time: ", "", r.gate) or f"(none; rc {r.rc})" for r in side.runs)
            sessions = sorted({re.sub(r" in [0-9.]+ s", "", r.sessions) for r in side.runs})
            lines.append(
                f"| {family} | {tree} | {', '.join(f'{w:.2f}' for w in walls)} | "
                f"{statistics.median(walls):.2f} | {'; '.join(modes)} | {gates} | {'; '.join(sessions)} |"
            )
    return lines


def ratio_rows(sides: dict[tuple[str, str], Side], families: Sequence[str]) -> list[str]:
    lines = [
        "| family | model | before, median s | after, median s | after / before | saved per run, s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for family in families:
        before, after = sides[(family, "before")], sides[(family, "after")]
        if not before.runs or not after.runs:
            lines.append(f"| {family} | {FAMILIES[family][0]} | - | - | - (a side could not run) | - |")
            continue
        b = statistics.median(r.wall_s for r in before.runs)
        a = statistics.median(r.wall_s for r in after.runs)
        lines.append(
            f"| {family} | `{FAMILIES[family][0]}` | {b:.2f} | {a:.2f} | {a / b:.2f} | {b - a:.2f} |"
        )
    return lines


# --- main ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, help="write the markdown report here")
    parser.add_argument("--reps", type=int, default=5, help="timed pairs per model x level (cost)")
    parser.add_argument("--runs", type=int, default=3, help="pytest runs per tree per family (re-export)")
    parser.add_argument("--before", default=BEFORE, help="the commit before the graph check")
    parser.add_argument("--models", type=lambda v: v.split(","), default=list(MODELS))
    parser.add_argument("--levels", type=lambda v: v.split(","), default=list(LEVELS))
    parser.add_argument("--families", type=lambda v: v.split(","), default=list(FAMILIES))
    args = parser.parse_args(argv)
    for what, chosen, known in (
        ("models", args.models, MODELS),
        ("levels", args.levels, LEVELS),
        ("families", args.families, FAMILIES),
    ):
        unknown = [name for name in chosen if name and name not in known]
        if unknown:
            parser.error(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    models = [name for name in args.models if name]
    families = [name for name in args.families if name]

    ort = import_onnxruntime()
    ort.set_default_logger_severity(3)
    started_at = dt.datetime.now(dt.timezone.utc)
    started = time.monotonic()
    load_start, others_start = loadavg(), other_pytest_processes()
    # This working tree's package as it is at the start, for the re-export's "after" processes: edits
    # made to the working tree during the run do not leak in (part 1 runs the modules imported now).
    work = Path(tempfile.mkdtemp(prefix="ortperf-graph-check-"))
    atexit.register(shutil.rmtree, work, True)
    after_tree = work / "after"
    shutil.copytree(
        REPO / "pytest_ortperf", after_tree / "pytest_ortperf", ignore=shutil.ignore_patterns("__pycache__")
    )
    after_digest = package_digest(after_tree)
    code_start = code_state()
    machine, runtime = detect_machine(), runtime_info()
    sampler = Sampler(period_s=10.0)
    sampler.start()
    log(f"graph_check: {cpu_description()}; {runtime.describe()}; load {load_start}; {code_start}")

    # 1. cost per variant
    pool = SessionPool(ort, ProviderProber(runtime.available_providers, runtime.describe()))
    hardware = machine.hardware.as_dict()
    costs: list[Cost] = []
    for name in models:
        for level in args.levels:
            cost = measure_cost(name, MODELS[name], level, args.reps, pool, hardware)
            costs.append(cost)
            if cost.error:
                log(f"cost {name} {level}: error {cost.error}")
            else:
                a, b = statistics.median(cost.build_ms), statistics.median(cost.graph_ms)
                log(f"cost {name} {level}: build {a:.1f} ms, graph {b:.1f} ms, b/a {b / a:.2f}")
    pool.close()
    cost_minutes = (time.monotonic() - started) / 60

    # 2. re-export, before and after
    sides: dict[tuple[str, str], Side] = {}
    packages: dict[str, str] = {}
    if families:
        before_tree = work / "before"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(before_tree), args.before],
            cwd=REPO,
            check=True,
        )
        try:
            trees = {"before": before_tree, "after": after_tree}
            packages = {tree: which_package(path) for tree, path in trees.items()}
            log(f"packages: {packages}")
            for family in families:
                model = FAMILIES[family][1]()
                for tree, path in trees.items():
                    side = Side(family, tree, work / "repos" / f"{family}-{tree}")
                    prepare(side, path, model)
                    sides[(family, tree)] = side
                    log(f"{family} {tree}: recorded in {side.record_s:.1f} s {side.error}")
            for index in range(args.runs):
                for number, family in enumerate(families):
                    order = ("before", "after") if (index + number) % 2 == 0 else ("after", "before")
                    for tree in order:
                        side = sides[(family, tree)]
                        if side.error and not side.runs:
                            continue
                        run = parse(*run_pytest(trees[tree], side.root, ["-rA"]))
                        side.runs.append(run)
                        if run.rc != 0:
                            side.error = f"run {index + 1} exited {run.rc}: {run.last}"
                        log(
                            f"{family} {tree} run {index + 1}: {run.wall_s:.2f} s, {run.mode} -> "
                            f"{run.verdict}; {run.gate}; {run.last}"
                        )
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before_tree)], cwd=REPO, check=False)

    finished = time.monotonic()
    code_end = code_state()
    lines = [
        "# The graph check: cost per variant, and a re-export before and after",
        "",
        f"- started {started_at.isoformat(timespec='seconds')}, took {(finished - started) / 60:.1f} min "
        f"(cost {cost_minutes:.1f} min)",
        f"- machine: {cpu_description()}; `{machine.name}`",
        f"- {runtime.describe()}, onnx {onnx.__version__}, python {sys.version.split()[0]}; CPU provider, "
        "`SessionSettings()` (one intra-op thread, no spinning)",
        f"- load average at start {load_start} (other pytest processes: {others_start}), at end {loadavg()}; "
        f"{sampler.stop()}",
        "- code: after = this working tree at the start (part 1: the modules imported then; part 2: a "
        "copy of `pytest_ortperf/` taken then"
        + ("" if after_digest in code_start else f", package digest {after_digest}")
        + f"): {code_start}"
        + (f"; at the end: {code_end}" if code_end != code_start else "; unchanged at the end"),
        f"- before = `{args.before}` ({git('log', '-1', '--format=%s', args.before)[:90]}...)",
        "",
        "Method: see the docstring of `benchmarks/graph_check.py`.",
        "",
        "## 1. Cost of the graph check per variant",
        "",
        f"{args.reps} alternated pairs per model x level after one untimed warm-up of each; medians "
        "(min..max). (a) a plain, uncached session build (`SessionPool.fresh`), (b) `optimized_graph(...)` "
        "(a session build that writes the optimized model, the model read back, the source model "
        "read) + `summarize(...)`. A same-graph latency check pays (b) twice (current and recorded "
        "model), once per run and variant (`SessionFactory.graph` caches it).",
        "",
        *cost_table(costs),
        "",
    ]
    good = [c for c in costs if not c.error and c.build_ms]
    if good:
        graph = [statistics.median(c.graph_ms) for c in good]
        ratio = [statistics.median(c.graph_ms) / statistics.median(c.build_ms) for c in good]
        lines += [
            f"Over {len(good)} model x level cells: (b) {min(graph):.1f}..{max(graph):.1f} ms, "
            f"b / a {min(ratio):.2f}..{max(ratio):.2f} (median {statistics.median(ratio):.2f}).",
            "",
        ]
    if families:
        lines += [
            "## 2. A re-export's latency check, before and after",
            "",
            f"{args.runs} fresh `pytest -p no:cacheprovider -q -rA` processes per tree per family, "
            "alternated; wall time of the process (start-up, collection, session builds, the check).",
            f"Package imported: before `{packages.get('before', '?')}`, "
            f"after `{packages.get('after', '?')}`. `waiting` in a gate time: the check waited for the "
            "timing lock that serializes timing across pytest processes (another process was timing).",
            "",
            *ratio_rows(sides, families),
            "",
            *reexport_rows(sides, families),
            "",
            "Baseline recordings (`pytest --ortperf-update`, one per family and tree), s: "
            + ", ".join(f"{f} {t} {s.record_s:.1f}" for (f, t), s in sides.items()),
            "",
        ]
        failed = [s for s in sides.values() if s.error]
        if failed:
            lines += ["Sides that could not run:", ""]
            lines += [f"- {s.family}, {s.tree}: {s.error}" for s in failed]
            lines.append("")
    text = "\n".join(lines)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
