"""Runners recording into one checkout at the same moment keep every runner's figures: real pytest
processes under their own ORTPERF_MACHINE names, started together, on a fresh baseline file and on one
that exists (``store/baselines.py: writers_take_turns``; the unit test pins the cause)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import onnx
import pytest

from tests.models import mlp_model

TEST_FILE = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

def test_latency(ort_perf):
    ort_perf.check_latency()
"""
ROUNDS = 8  # for each number of runners: half on a fresh file, half on an existing one


def _round(pytester: pytest.Pytester, names: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    runners = [
        subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_model.py", "--ortperf-update",
             "--ortperf-budget=0.05", "--ortperf-max-cv=1000%"],
            cwd=pytester.path, env={**env, "ORTPERF_MACHINE": name},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for name in names
    ]  # fmt: skip
    for runner in runners:
        out, _ = runner.communicate(timeout=300)
        assert runner.returncode == 0, out


def _kept(pytester: pytest.Pytester) -> set[str]:
    document = json.loads((pytester.path / "baselines" / "test_model.py.json").read_text())
    (entry,) = document["entries"].values()
    return {key.partition("@")[0] for key in entry["figures"]}


@pytest.mark.slow
@pytest.mark.parametrize("runners", [2, 4])
def test_runners_recording_at_once_all_keep_their_figures(pytester: pytest.Pytester, runners: int) -> None:
    onnx.save(mlp_model(layers=2, width=32), pytester.path / "model.onnx")
    pytester.makepyfile(test_model=TEST_FILE)
    lost = []
    for number in range(ROUNDS):
        fresh = number % 2 == 0
        baseline = pytester.path / "baselines" / "test_model.py.json"
        if fresh:
            baseline.unlink(missing_ok=True)
            before: set[str] = set()
        else:
            before = _kept(pytester)
        names = [f"round{number}-runner{index}" for index in range(runners)]
        _round(pytester, names)
        kept = _kept(pytester)
        lost += [
            f"round {number} ({'fresh' if fresh else 'existing'}): {name}"
            for name in names
            if name not in kept
        ]
        assert before <= kept, f"round {number} dropped figures that were there: {sorted(before - kept)}"
    assert lost == []
