"""pytest-xdist: updates lose nothing and write only on the controller; timing takes turns."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from tests.models import mlp_model

pytest.importorskip("xdist")

TESTS = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

@pytest.mark.parametrize("case", range(3))
def test_latency(ort_perf, case):
    ort_perf.check()

def test_other(ort_perf):
    ort_perf.check_latency()
"""
QUICK = ("--ortperf-budget=0.05", "--ortperf-max-cv=1000%", "--ort-opt-levels=disabled,all")


def _skeleton(path: Path) -> dict[str, list[str]]:
    """The structure of a baseline file with the numbers taken out."""
    document = json.loads(path.read_text())
    return {
        test: sorted(f"{machine}:{sorted(entry)}" for machine, entry in machines.items())
        for test, machines in document["entries"].items()
    }


@pytest.mark.parametrize("workers", ["2", "4"])
def test_parallel_update_records_what_a_serial_one_does(pytester: pytest.Pytester, workers: str) -> None:
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(test_par=TESTS)
    serial = pytester.runpytest_subprocess("--ortperf-update", *QUICK)
    serial.assert_outcomes(passed=8)
    baseline = pytester.path / "baselines" / "test_par.py.json"
    expected = _skeleton(baseline)
    assert len(expected) == 8
    outputs = sorted((pytester.path / "baselines" / "test_par.py.outputs").iterdir())
    assert len(outputs) == 6
    for path in [baseline, *outputs]:
        path.unlink()

    parallel = pytester.runpytest_subprocess("--ortperf-update", "-n", workers, *QUICK)
    parallel.assert_outcomes(passed=8)
    parallel.stdout.fnmatch_lines(
        ["timing: serialized across processes*", "ortperf update: 0 updated, 14 new, 0 unchanged, 0 unused"]
    )
    assert _skeleton(baseline) == expected
    assert sorted(p.name for p in (pytester.path / "baselines" / "test_par.py.outputs").iterdir()) == [
        p.name for p in outputs
    ]
    compare = pytester.runpytest_subprocess("-n", workers, *QUICK, "--ortperf-latency-threshold=500%")
    compare.assert_outcomes(passed=8)
    compare.stdout.fnmatch_lines(["test_par.py::test_latency[[]*", "timing: serialized across processes*"])


def test_parallel_timing_can_be_allowed(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(test_par=TESTS)
    result = pytester.runpytest_subprocess("-n", "2", "--ortperf-parallel-timing", "--ortperf-missing=pass", *QUICK)
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["timing: parallel (timed sections are not serialized)"])


def test_unused_entries_are_found_from_worker_collections(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(test_par=TESTS)
    pytester.runpytest_subprocess("--ortperf-update", "-n", "2", *QUICK).assert_outcomes(passed=8)
    pytester.makepyfile(test_par=TESTS.replace("def test_other", "def test_renamed"))
    result = pytester.runpytest_subprocess("--ortperf-update", "-n", "2", *QUICK)
    result.stdout.fnmatch_lines(["ortperf update: * 2 unused", "unused baselines (kept; --ortperf-prune deletes them):"])
