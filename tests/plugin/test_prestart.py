"""A plain run whose model changed since its baseline starts its measuring processes while pytest
collects (they import onnxruntime meanwhile), as ``--ortperf-ab`` does; an unchanged one starts none.
Real git, a real recording; the run selects no test, so what is seen is what configure started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from tests.models import mlp_model

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="reads /proc for child processes"
)

SUITE = """
import pytest

@pytest.mark.ort_model("model.onnx")
def test_latency(ort_perf):
    ort_perf.check_latency()
"""
# Seen when collection ends: this process's children that run the measuring program.
CONFTEST = """
import os
from pathlib import Path

def pytest_collection_finish(session):
    mine = str(os.getpid())
    found = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        found += fields[1] == mine and b"worker_program" in command
    Path("children.txt").write_text(str(found))
"""


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        cwd=cwd, check=True, capture_output=True, timeout=60,
    )  # fmt: skip


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300, check=False, env=dict(os.environ),
    )  # fmt: skip


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A repository whose model and baseline are committed."""
    _git(tmp_path, "init", "-q")
    onnx.save(mlp_model(layers=2), tmp_path / "model.onnx")
    (tmp_path / "test_model.py").write_text(SUITE)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    done = _pytest(tmp_path, "--ortperf-update", "--ortperf-budget=0.1", "--ortperf-max-cv=1000%")
    assert done.returncode == 0, done.stdout + done.stderr
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "recorded")
    return tmp_path


def test_a_changed_model_starts_the_measuring_processes_while_pytest_collects(recorded: Path) -> None:
    onnx.save(mlp_model(layers=3), recorded / "model.onnx")
    _git(recorded, "commit", "-q", "-am", "one more layer")
    done = _pytest(recorded, "-k", "no_test_has_this_name")
    assert done.returncode == 5, done.stdout + done.stderr  # nothing selected: configure ran, no check
    assert int((recorded / "children.txt").read_text()) >= 2


def test_an_unchanged_model_starts_none(recorded: Path) -> None:
    done = _pytest(recorded, "-k", "no_test_has_this_name")
    assert done.returncode == 5, done.stdout + done.stderr
    assert (recorded / "children.txt").read_text() == "0"


def test_collect_only_starts_none_for_a_changed_model(recorded: Path) -> None:
    onnx.save(mlp_model(layers=3), recorded / "model.onnx")
    _git(recorded, "commit", "-q", "-am", "one more layer")
    done = _pytest(recorded, "--collect-only", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (recorded / "children.txt").read_text() == "0"
