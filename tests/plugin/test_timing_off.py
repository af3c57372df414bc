"""A functional-only run, ``--ortperf-timing=off``: sessions run and accuracy is checked, nothing is
timed; real sessions of a small model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tests.models import mlp_model

TEST_FILE = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

def test_latency(ort_perf):
    result = ort_perf.check_latency()
    print("LATENCY", result.status)

def test_both(ort_perf):
    latency, accuracy, graph = ort_perf.check()
    print("BOTH", latency.status, accuracy.status, latency.current.rounds)

def test_accuracy(ort_perf):
    ort_perf.check_accuracy()
"""
RECORD = ("--ortperf-update", "--ortperf-budget=0.2", "--ortperf-max-cv=1000%")
OFF = "--ortperf-timing=off"


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    onnx.save(mlp_model(layers=4, width=32), pytester.path / "model.onnx")
    pytester.makepyfile(test_func=TEST_FILE)
    return pytester.path / "baselines" / "test_func.py.json"


def _nudge_weights(path: Path, factor: float) -> None:
    model = onnx.load(path)
    for init in model.graph.initializer:
        scaled = (numpy_helper.to_array(init) * np.float32(factor)).astype(np.float32)
        init.CopyFrom(numpy_helper.from_array(scaled, init.name))
    onnx.save(model, path)


def test_timing_off_skips_latency_and_still_checks_accuracy(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest(*RECORD).assert_outcomes(passed=3)
    recorded = suite.read_bytes()

    result = pytester.runpytest(
        OFF, "-rs", "-s", "--ortperf-report=report.json", "--ortperf-markdown=summary.md"
    )
    # check_latency() alone: skipped, naming the option; check(): passes on its accuracy half
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "ortperf timing: off (--ortperf-timing=off): latency and start-up checks skipped, accuracy, graph and memory checked",
            "*BOTH not timed ok 0",
            "timing off (--ortperf-timing=off): 2 latency checks not timed; sessions were run and accuracy "
            "checks compared outputs",
            "SKIPPED [[]1[]] test_func.py:*: latency of test_latency[[]cpu-all[]] not timed: timing is off "
            "(--ortperf-timing=off); sessions and accuracy checks run, nothing is measured.",
        ]
    )
    result.stdout.no_fnmatch_line("LATENCY *")
    result.stdout.no_fnmatch_line("latency on machine *")  # no table of timed checks
    result.stdout.no_fnmatch_line("gate time: *")
    checks = json.loads((pytester.path / "report.json").read_text())["checks"]
    verdicts = sorted((c["test"].split("::")[1], c["kind"], c["verdict"], c["failed"]) for c in checks)
    assert verdicts == [
        ("test_accuracy[cpu-all]", "accuracy", "ok", False),
        ("test_both[cpu-all]", "accuracy", "ok", False),
        ("test_both[cpu-all]", "graph", "unchanged", False),
        ("test_both[cpu-all]", "latency", "not timed", False),
        ("test_latency[cpu-all]", "latency", "not timed", False),
    ]
    assert "| latency | - | - | - | not timed |" in (pytester.path / "summary.md").read_text()
    assert suite.read_bytes() == recorded

    # An accuracy regression still fails under the switch, in check() and check_accuracy().
    _nudge_weights(pytester.path / "model.onnx", 1.01)
    moved = pytester.runpytest(OFF)
    moved.assert_outcomes(failed=2, skipped=1)
    moved.stdout.fnmatch_lines(["*accuracy of test_both[[]cpu-all[]] on machine '*' FAILED*"])
    moved.stdout.fnmatch_lines(["*accuracy of test_accuracy[[]cpu-all[]] on machine '*' FAILED*"])
    assert suite.read_bytes() == recorded


def test_the_record_command_of_a_timing_off_run_leaves_the_switch_out(
    pytester: pytest.Pytester, suite: Path
) -> None:
    result = pytester.runpytest(OFF, "--ortperf-budget=0.2")
    result.assert_outcomes(failed=2, skipped=1)  # no accuracy baseline yet
    hints = [line for line in result.stdout.lines if "ortperf update '" in line]
    assert hints
    assert all("--ortperf-budget=0.2" in line and "--ortperf-timing" not in line for line in hints)


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (
            (OFF, "--ortperf-update"),
            "",
            "--ortperf-timing: timing is off, but --ortperf-update records latency baselines, which need "
            "timing; update with --ortperf-timing=on.",
        ),
        (
            ("--ortperf-update=missing",),
            "ortperf_timing = off",
            "ini ortperf_timing: timing is off, but --ortperf-update records latency baselines*",
        ),
        (
            ("--ortperf-timing=fast",),
            "",
            "--ortperf-timing: expected on or off, got 'fast' (a switch takes *).",
        ),
    ],
)
def test_timing_off_with_an_update_or_a_bad_value_is_a_usage_error(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str, message: str
) -> None:
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_timing_on_from_the_command_line_beats_the_ini_key(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.makeini("[pytest]\nortperf_timing = off\n")
    result = pytester.runpytest("--ortperf-timing=on", *RECORD)
    result.assert_outcomes(passed=3)
    assert "test_latency[cpu-all]" in json.loads(suite.read_text())["entries"]
