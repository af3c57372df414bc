"""``ortperf bisect --runtimes``: each release measured by the test's own pytest item run in that release.

What a check asks can depend on the onnxruntime that runs the whole test, not only its sessions (the
transformer optimizer that fuses a model is Python code of the onnxruntime package), so a step runs
the test's pytest item in a subprocess of the release's environment (fetched once into
``.ortperf/envs``, the upgrade gate's cache, ``ort/envs.py``). That environment holds onnxruntime and
its dependencies only: the rest (pytest, onnx, this plugin) comes from this interpreter's environment
through a folder of links to its packages, less those the release's environment provides, put on the
child's ``PYTHONPATH``. The step reads the check's record from the item's ``--ortperf-report`` JSON.

Only the graph question is asked this way so far, as the graph check asks it (``graph/diff.py``): a
release is ``bad`` when its graph, compared with the good end's, fails the check's mode (``fusions``:
a lost fusion, nodes off the provider, new copies; ``exact``: any change), ``good`` otherwise; the row
names the change and the fusions gained and lost.
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ortperf import defaults
from pytest_ortperf.checks.graph_verdicts import GRAPH
from pytest_ortperf.checks.record import check_in_report
from pytest_ortperf.errors import OrtperfError, UsageError
from pytest_ortperf.gate.bisect import Judgement
from pytest_ortperf.graph.diff import GraphDiff, failures
from pytest_ortperf.graph.figures import GraphFigures, short

CHECK = GRAPH  # the kind a bisection over onnxruntime releases judges (``ortperf bisect --runtimes --check``)

# Top-level names of this environment's site-packages that a release's environment brings itself
# (lower case prefixes): its onnxruntime and the compiled dependencies that must match it.
PROVIDED_BY_RELEASE = ("onnxruntime", "numpy", "google", "protobuf", "flatbuffers", "packaging")


def overlay(into: Path, site: Path | None = None) -> Path:
    """A folder of links to this environment's packages (``site``) less :data:`PROVIDED_BY_RELEASE`
    and ``.pth`` files (which a ``PYTHONPATH`` folder does not run)."""
    site = Path(sysconfig.get_paths()["purelib"]) if site is None else site
    into.mkdir(parents=True, exist_ok=True)
    for entry in sorted(site.iterdir()):
        name = entry.name.lower()
        if name.startswith(PROVIDED_BY_RELEASE) or name.endswith(".pth") or name.startswith("__"):
            continue
        link = into / entry.name
        if not link.exists():
            link.symlink_to(entry)
    return into


@dataclass(frozen=True)
class GraphState:
    """One release's graph for the test, as the graph check recorded it, with its one-line summary."""

    figures: GraphFigures
    summary: str


def fusions_change(before: GraphFigures, after: GraphFigures) -> str:
    """``gained Attention 2, EmbedLayerNormalization 1; lost LayerNormalization 1``: fused op types and
    the transformer optimizer's counts that changed, by short name."""
    old, new = _fusions(before), _fusions(after)
    gained, lost, moved = [], [], []
    for name in sorted(set(old) | set(new)):
        was, now = old.get(name, 0), new.get(name, 0)
        if was == now:
            continue
        if was == 0:
            gained.append(f"{name} {now}")
        elif now == 0:
            lost.append(f"{name} {was}")
        else:
            moved.append(f"{name} {was} -> {now}")
    parts = [f"gained {', '.join(gained)}"] if gained else []
    parts += [f"lost {', '.join(lost)}"] if lost else []
    parts += [f"changed {', '.join(moved)}"] if moved else []
    return "; ".join(parts) or "same fusions"


def _fusions(figures: GraphFigures) -> dict[str, int]:
    counts: dict[str, int] = {}
    for group in (figures.pre_pass, figures.fused):
        for name, count in group.items():
            counts[short(name)] = counts.get(short(name), 0) + count
    return counts


def graph_state(report: dict[str, Any], nodeid: str, source: str) -> GraphState:
    """The graph record of ``nodeid`` in an ``--ortperf-report`` JSON (``source`` names it in errors)."""
    record = check_in_report(report, nodeid, CHECK)
    if record is None:
        raise OrtperfError(
            f"ortperf bisect: {source} holds no graph check of {nodeid}: does the test run one?"
        )
    try:
        figures = GraphFigures.from_dict(record.get("current"))
    except (KeyError, TypeError, ValueError) as exc:
        raise OrtperfError(
            f"ortperf bisect: {source}: the graph record of {nodeid} is damaged ({exc})"
        ) from exc
    return GraphState(figures, record.summary)


@dataclass
class ItemRunner:
    """Runs a test's pytest item in another environment's interpreter and returns its report."""

    nodeid: str
    cwd: Path
    workdir: Path
    timeout_s: float = 900.0
    pytest_args: Sequence[str] = ()
    timed: bool = False  # False: --ortperf-timing=off (a graph needs no timing)
    overlaid: bool = True  # False: the interpreter is this environment's own, which has every package
    runs: int = field(default=0, init=False)

    def run(self, python: Path, label: str, extra: Sequence[str] = ()) -> dict[str, Any]:
        self.runs += 1
        report = self.workdir / f"report-{self.runs}.json"
        package_root = Path(__file__).resolve().parents[2]
        env = dict(os.environ)
        if self.overlaid:
            links = overlay(self.workdir / "site")
            env["PYTHONPATH"] = os.pathsep.join([str(links), str(package_root)])
        command = [
            str(python),
            "-m",
            "pytest",
            self.nodeid,
            "-q",
            "-p",
            "no:cacheprovider",
            *([] if self.timed else ["--ortperf-timing=off"]),
            "--ortperf-fetch-runtime=never",
            f"--ortperf-report={report}",
            *self.pytest_args,
            *extra,
        ]
        try:
            done = subprocess.run(
                command,
                cwd=self.cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise OrtperfError(
                f"ortperf bisect: {self.nodeid} in {label} ran past {self.timeout_s:.0f} s"
            ) from exc
        if done.returncode in (4, 5):  # usage error, nothing collected
            output = (done.stdout + done.stderr).strip().splitlines()
            raise UsageError(
                f"ortperf bisect: pytest found no test {self.nodeid!r} (in {label}): "
                + " / ".join(output[-3:])
            )
        if not report.is_file():
            output = (done.stdout + done.stderr).strip().splitlines()
            raise OrtperfError(
                f"ortperf bisect: {self.nodeid} in {label} wrote no report (exit {done.returncode}): "
                + " / ".join(output[-5:])
            )
        data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
        return data


@dataclass
class GraphJudge:
    """Judges releases by their graph against the good end's (index 0), one pytest run per release;
    ``pythons(index)`` gives (interpreter, seconds spent fetching it)."""

    releases: Sequence[str]
    pythons: Callable[[int], tuple[Path, float]]
    runner: ItemRunner
    mode: str = defaults.GRAPH_MODE  # what change fails, as --ortperf-graph says
    states: dict[int, GraphState] = field(default_factory=dict)
    fetch_s: float = 0.0
    measure_s: float = 0.0

    def state(self, index: int) -> GraphState:
        if index not in self.states:
            python, fetching = self.pythons(index)
            self.fetch_s += fetching
            started = time.perf_counter()
            label = f"onnxruntime {self.releases[index]}"
            report = self.runner.run(python, label)
            self.measure_s += time.perf_counter() - started
            self.states[index] = graph_state(report, self.runner.nodeid, f"the report of {label}")
        return self.states[index]

    def diff(self, before: int, after: int) -> GraphDiff:
        return GraphDiff(self.state(before).figures, self.state(after).figures)

    def __call__(self, index: int, attempt: int) -> Judgement:
        # A graph is compared exactly: a second attempt would give the same answer, so none is made.
        diff = self.diff(0, index)
        versions = f"{self.releases[0]} vs {self.releases[index]}"
        if diff.same:
            return Judgement("good", f"{versions}: same graph")
        reasons = failures(diff, self.mode)
        change = f"{diff.text()}; {fusions_change(diff.before, diff.after)}"
        if not reasons:
            return Judgement(
                "good", f"{versions}: graph changed, passes --ortperf-graph={self.mode} ({change})"
            )
        return Judgement("bad", f"{versions}: fails --ortperf-graph={self.mode}: {'; '.join(reasons)}")


def temporary_workdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="ortperf-bisect-"))
