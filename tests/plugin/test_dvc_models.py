"""Models kept in DVC, end to end with real DVC (the ``dvc`` package) and a local directory remote:
recorded, then made 25% slower in a new commit pushed to the remote; on fresh clones with an empty DVC
cache the changed model fails side by side naming both md5s, the unchanged one passes as unchanged, a
clone with no remote names why the recorded model cannot be had, and ``ortperf bisect --commits``
walks the model's DVC history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from tests.models import conv_stack_model

pytest.importorskip("dvc", reason="needs DVC: pip install 'pytest-ortperf[dvc]' (.ci/run installs it)")
pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
SUITE = """
import pytest
pytestmark = pytest.mark.ort_model("models/conv.onnx")

def test_latency(ort_perf):
    ort_perf.check_latency()
"""
QUICK = ("--ortperf-budget=0.3", "--ortperf-ab-budget=2")


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        list(args), cwd=cwd, capture_output=True, text=True, timeout=600, check=False, env=env
    )


def _ok(cwd: Path, *args: str) -> str:
    done = _run(cwd, *args)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout.strip()


def _git(cwd: Path, *args: str) -> str:
    return _ok(cwd, "git", "-c", "user.name=T", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args)


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(
        cwd, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--ortperf-report=report.json", *args
    )


def _md5(path: Path) -> str:
    import hashlib

    return hashlib.md5(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, str]:
    """A repository whose model DVC keeps (a local directory remote): recorded with 4 conv layers, then
    a commit with 5 (25% more work) pushed to the remote. (origin, first commit, md5 before, after)."""
    root = tmp_path_factory.mktemp("dvc")
    origin, remote = root / "origin", root / "remote"
    (origin / "models").mkdir(parents=True)
    remote.mkdir()
    _git(origin, "init", "-q")
    _ok(origin, "dvc", "init", "-q")
    _ok(origin, "dvc", "remote", "add", "-d", "store", str(remote))
    onnx.save(conv_stack_model(layers=4, channels=16, size=32), origin / "models" / "conv.onnx")
    _ok(origin, "dvc", "add", "-q", "models/conv.onnx")
    (origin / "test_conv.py").write_text(SUITE)
    _git(origin, "add", "-A")  # the pointer, as dvc add suggests: a later run can read the model back
    recorded = _run(origin, "ortperf", "update", *QUICK)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    _git(origin, "add", "-A")
    _git(origin, "commit", "-q", "-m", "recorded, model in DVC")
    _ok(origin, "dvc", "push", "-q")
    before = _md5(origin / "models" / "conv.onnx")
    (entry,) = json.loads((origin / "baselines" / "test_conv.py.json").read_text())["entries"].values()
    assert entry["recipe"]["model_dvc"]["md5"] == before
    assert entry["recipe"]["model_dvc"]["file"] == "models/conv.onnx.dvc"
    (figures,) = entry["figures"].values()
    assert figures["short"] == "the reference is rebuilt from DVC; these figures only inform"
    first = _git(origin, "rev-parse", "HEAD")
    onnx.save(conv_stack_model(layers=5, channels=16, size=32), origin / "models" / "conv.onnx")
    _ok(origin, "dvc", "add", "-q", "models/conv.onnx")
    _git(origin, "commit", "-q", "-am", "one more conv layer")
    _ok(origin, "dvc", "push", "-q")
    return origin, first, before, _md5(origin / "models" / "conv.onnx")


def _clone(origin: Path, where: Path, commit: str = "") -> Path:
    """A fresh clone, as CI makes one, with its DVC outputs pulled (the generated workflow's step); its
    DVC cache holds only what the pull fetched."""
    _ok(where.parent, "git", "clone", "-q", str(origin), str(where))
    if commit:
        _git(where, "checkout", "-q", commit)
    _ok(where, "dvc", "pull", "-q")
    return where


def _latency(clone: Path) -> dict:
    (check,) = [
        c for c in json.loads((clone / "report.json").read_text())["checks"] if c["kind"] == "latency"
    ]
    return check


def test_a_changed_model_kept_in_dvc_fails_side_by_side_naming_both_md5s(
    origin: tuple[Path, str, str, str], tmp_path: Path
) -> None:
    repo, _, before, after = origin
    clone = _clone(repo, tmp_path / "clone")
    assert not any((clone / ".dvc" / "cache").rglob(before[2:]))  # the recorded object is not here
    result = _pytest(clone, *QUICK)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"DVC md5 {before[:12]} -> {after[:12]}" in result.stdout
    assert f"the recorded model (DVC md5 {before[:12]}), read by DVC at " in result.stdout
    check = _latency(clone)
    assert check["verdict"] == "regression"
    assert check["path"].startswith("side by side vs the recorded model (DVC md5")


def test_an_unchanged_model_kept_in_dvc_passes_as_unchanged(
    origin: tuple[Path, str, str, str], tmp_path: Path
) -> None:
    repo, first, _, _ = origin
    clone = _clone(repo, tmp_path / "clone", commit=first)
    result = _pytest(clone, *QUICK)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _latency(clone)["verdict"] == "unchanged"


def test_no_remote_and_no_cached_object_is_named_with_what_would_fetch_it(
    origin: tuple[Path, str, str, str], tmp_path: Path
) -> None:
    repo, _, before, _ = origin
    clone = _clone(repo, tmp_path / "clone")
    _ok(clone, "dvc", "remote", "remove", "store")
    result = _pytest(clone, *QUICK)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"DVC could not read md5 {before} of models/conv.onnx at " in result.stdout
    assert "'dvc remote list' shows the remotes" in result.stdout
    assert _latency(clone)["verdict"] == "missing"  # never a silent fallback: nothing stored decides here


def test_bisect_commits_walks_a_dvc_models_history(
    origin: tuple[Path, str, str, str], tmp_path: Path
) -> None:
    repo, first, _, _ = origin
    clone = _clone(repo, tmp_path / "clone")
    done = _run(
        clone, "ortperf", "bisect", "test_conv.py::test_latency[cpu-all]", "--commits", f"{first}..HEAD"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    last = _git(clone, "rev-parse", "HEAD")
    assert f"first changed: {last[:10]}" in done.stdout
    assert _git(clone, "status", "--porcelain") == ""


def test_the_workflow_init_writes_pulls_the_model_and_its_gate_fails_the_change(
    origin: tuple[Path, str, str, str], tmp_path: Path
) -> None:
    """The GitHub workflow `ortperf init` writes for this repository, its steps run as the runner
    would on a fresh clone (the install step aside: this environment has the package): `dvc pull`,
    then the gate, which fails the changed model side by side naming both md5s."""
    import yaml

    repo, _, before, after = origin
    clone = tmp_path / "clone"
    _ok(tmp_path, "git", "clone", "-q", str(repo), str(clone))
    scratch = tmp_path / "init"  # init writes into a copy: the clone stays as CI checks it out
    _ok(tmp_path, "git", "clone", "-q", str(repo), str(scratch))
    _ok(scratch, "ortperf", "init", "--ci", "github")
    workflow = yaml.safe_load((scratch / ".github" / "workflows" / "ortperf.yml").read_text())
    steps = {step.get("name", ""): step.get("run", "") for step in workflow["jobs"]["gate"]["steps"]}
    assert "pytest-ortperf[cpu,dvc]" in steps["Install"]
    assert steps["The models DVC keeps"] == "dvc pull"
    gate = next(run for name, run in steps.items() if name.startswith("The gate"))
    _ok(clone, *steps["The models DVC keeps"].split())
    done = _run(clone, *gate.split(), *QUICK)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"DVC md5 {before[:12]} -> {after[:12]}" in done.stdout
    assert " regression" in done.stdout
