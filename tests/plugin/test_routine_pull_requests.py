"""Routine pull requests end in verdicts, and the commands they print accept them: a fixed input
size changed with the same weights (a conv stack static 32x32 -> 64x64), in a fresh clone as CI
makes one, plain and under ``--ortperf-ab``; a shallow clone; an update re-run beside busy
processes. Real git, real sessions, the printed commands run exactly as printed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from tests.models import conv_stack_model

SUITE = """
import pytest
pytestmark = pytest.mark.ort_model("conv.onnx")

def test_conv(ort_perf):
    ort_perf.check()

def test_memory(ort_perf):
    ort_perf.check_memory()
"""
LEVELS = ("--ort-opt-levels=disabled,all", "--ortperf-budget=0.2", "--ortperf-ab-budget=0.5")
SIZE_CHANGED = "inputs x float32[1, 16, 32, 32] -> [1, 16, 64, 64]"
BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]  # the checkout: benchmarks.fake_cpuinfo is imported from it
# CPUs of two hardware classes: one of them is not the class of the machine that records here.
CPUINFOS = tuple(
    ROOT / "tests" / "unit" / "data" / "cpuinfo" / name for name in ("zen3_avx2.txt", "zen4_avx512.txt")
)


def _hardware_class(cpuinfo: Path) -> str:
    """The class of hardware (graph/figures.py: hardware_class) a run shown ``cpuinfo`` believes it has."""
    from pytest_ortperf.graph.figures import hardware_class
    from pytest_ortperf.store.hardware import detect_hardware

    return hardware_class(detect_hardware(2, cpuinfo=cpuinfo, gpu="").as_dict())


def _run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **(env or {})}
    return subprocess.run(
        list(args), cwd=cwd, capture_output=True, text=True, timeout=600, check=False, env=environment
    )


def _git(cwd: Path, *args: str) -> str:
    done = _run(cwd, "git", "-c", "user.name=T", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _pytest(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _run(cwd, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, env=env)


def _origin(root: Path) -> Path:
    """A repository recorded at 32x32, then a commit that makes the input 64x64 (same weights)."""
    origin = root / "origin"
    origin.mkdir()
    _git(origin, "init", "-q")
    onnx.save(conv_stack_model(layers=3, channels=16, size=32), origin / "conv.onnx")
    (origin / "test_conv.py").write_text(SUITE)
    recorded = _run(origin, "ortperf", "update", *LEVELS)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    _git(origin, "add", "-A")
    _git(origin, "commit", "-q", "-m", "recorded at 32x32")
    onnx.save(conv_stack_model(layers=3, channels=16, size=64), origin / "conv.onnx")
    _git(origin, "commit", "-q", "-am", "the input is 64x64 now")
    return origin


def _accept_commands(output: str) -> list[str]:
    """Every per-check command the failures printed after 'to accept ...: ', as printed."""
    found = re.findall(r"^\s+to accept [^:]*: (.*ortperf update .*)$", output, flags=re.MULTILINE)
    return list(dict.fromkeys(found))


def _accuracy_rows(output: str) -> list[str]:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("accuracy ("))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("test_conv.py::"):
            break
        rows.append(line)
    return rows


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.mark.slow
@pytest.mark.parametrize("accept", ["each printed command", "the summary's one command"])
def test_an_input_size_change_fails_with_verdicts_and_the_printed_commands_make_the_gate_green(
    isolated: Path, accept: str
) -> None:
    origin = _origin(isolated)
    clone = isolated / "clone"
    _git(isolated, "clone", "-q", str(origin), str(clone))

    gate = _pytest(clone, *LEVELS, "--ortperf-report=r.json")
    out = gate.stdout
    assert gate.returncode == 1, out
    assert "session.run failed" not in out
    assert "Got invalid dimensions" not in out
    assert f"vs baseline: outputs not comparable: {SIZE_CHANGED}" in out
    assert re.search(r"latency regression in test_conv\[cpu-all\] against the recorded model", out), out
    assert re.search(r"memory regression in test_memory\[cpu-all\] against the recorded model", out), out
    records = json.loads((clone / "r.json").read_text())["checks"]
    accuracy = [r for r in records if r["kind"] == "accuracy"]
    assert {r["verdict"] for r in accuracy} == {"failed"}
    assert len(_accuracy_rows(out)) == len(accuracy) == 2  # every accuracy check has a row
    assert all("outputs not comparable" in row for row in _accuracy_rows(out))

    # The A/B step of the generated workflow: each side on inputs it takes, never today's on both.
    ab = _pytest(clone, *LEVELS, "--ortperf-ab=HEAD~1")
    assert ab.returncode == 1
    assert "session.run failed" not in ab.stdout, ab.stdout
    assert "failed 'warm_up'" not in ab.stdout, ab.stdout
    assert f"outputs not comparable: {SIZE_CHANGED}" in ab.stdout
    assert "memory regression in test_memory[cpu-all] against HEAD~1:conv.onnx" in ab.stdout, ab.stdout

    summary = re.search(
        r"^to accept every failing check above at once \([^)]*\): (.*)$", out, flags=re.MULTILINE
    )
    assert summary is not None, out
    commands = _accept_commands(out) if accept == "each printed command" else [summary.group(1)]
    assert commands, out
    for command in commands:
        done = _run(clone, "bash", "-c", command)
        assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
    _git(clone, "add", "baselines")
    _git(clone, "commit", "-q", "-m", "accept the 64x64 input")

    green = _pytest(clone, *LEVELS)
    assert green.returncode == 0, green.stdout


@pytest.mark.slow
def test_a_shallow_clone_names_the_history_as_the_cause_and_offers_no_recording(isolated: Path) -> None:
    origin = _origin(isolated)
    shallow = isolated / "shallow"
    _git(isolated, "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow))
    # Another runner class: no stored figures of its own, so only the recorded model could judge.
    gate = _pytest(
        shallow, "--ort-opt-levels=all", "--ortperf-budget=0.2", env={"ORTPERF_MACHINE": "other-runner"}
    )
    out = gate.stdout
    assert gate.returncode == 1, out
    assert "latency of test_conv[cpu-all] not judged on machine 'other-runner@" in out, out
    assert "the recorded one is not in this clone's history: it is shallow" in out
    assert "fetch-depth: 0" in out
    assert "git fetch --unshallow" in out
    assert (
        "check(s) not judged: their model changed, and the recorded one is not in this clone's history" in out
    )
    assert "Record it with" not in out
    assert "have no baseline for machine" not in out
    assert "to accept every failing check above at once" not in out  # recording would accept it unseen
    assert "to accept the current outputs as the baseline" not in out

    # A runner of another hardware class: no graph is stored for it either, so the graph, too, is a
    # check only the recorded model could judge; it names the history, and no recording is offered.
    recorded = json.loads((shallow / "baselines" / "test_conv.py.json").read_text())["entries"]
    recorded_classes = {
        figures["graph"]["hardware_class"]
        for entry in recorded.values()
        for figures in entry["figures"].values()
        if "graph" in figures
    }
    cpuinfo = next(path for path in CPUINFOS if _hardware_class(path) not in recorded_classes)
    other = _pytest(
        shallow,
        "-p",
        "benchmarks.fake_cpuinfo",
        "--ort-opt-levels=all",
        "--ortperf-budget=0.2",
        env={
            "ORTPERF_MACHINE": "other-runner",
            "ORTPERF_BENCH_CPUINFO": str(cpuinfo),
            "PYTHONPATH": str(ROOT),
        },
    )
    out = other.stdout
    assert other.returncode == 1, out
    assert "graph of test_conv[cpu-all] not judged on machine 'other-runner@" in out, out
    assert "Record it with" not in out
    assert "have no baseline for machine" not in out
    assert "to accept every failing check above at once" not in out


BUSY = "import time\nend = time.time() + 600\nwhile time.time() < end:\n    pass\n"


@pytest.mark.slow
def test_an_update_beside_busy_processes_never_leaves_noisier_figures_of_an_unchanged_recipe(
    isolated: Path,
) -> None:
    """Recorded, then recorded again beside one busy process per core, nothing changed: the stored
    figures' spread never grows; kept figures are named in the update summary, with why."""
    repo = isolated / "repo"
    repo.mkdir()
    onnx.save(conv_stack_model(layers=4, channels=16, size=32), repo / "conv.onnx")
    (repo / "test_conv.py").write_text(SUITE.split("\ndef test_memory")[0])
    args = ("--ort-opt-levels=all", "--ortperf-budget=0.3")
    assert _run(repo, "ortperf", "update", *args).returncode == 0

    def spread() -> float:
        document = json.loads((repo / "baselines" / "test_conv.py.json").read_text())
        (figures,) = document["entries"]["test_conv[cpu-all]"]["figures"].values()
        return float(figures["spread"])

    quiet = spread()
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(os.cpu_count() or 1)]
    try:
        again = _run(repo, "ortperf", "update", *args, "--ortperf-report=r.json")
    finally:
        for process in busy:
            process.kill()
            process.wait()
    assert again.returncode == 0, again.stdout
    assert spread() <= quiet, again.stdout  # never noisier figures for a recipe nothing changed
    # Whichever way it went, the record and the summary say it: replaced by quieter figures, kept
    # over the noisier recording (and why), or unchanged within the threshold.
    (latency,) = [r for r in json.loads((repo / "r.json").read_text())["checks"] if r["kind"] == "latency"]
    if spread() < quiet:
        assert latency["verdict"] == "updated", latency
    elif latency.get("kept"):
        assert latency["verdict"] == "unchanged", latency
        assert "(1 of the unchanged kept over noisier figures)" in again.stdout, again.stdout
        assert f"  test_conv.py::test_conv[cpu-all]: {latency['kept']}" in again.stdout, again.stdout
    else:
        assert latency["verdict"] == "unchanged", latency
