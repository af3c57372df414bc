"""The example CI workflow, copied as-is, passes its first run on a runner class with no entries yet."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.plugin.conftest import LATENCY_MODEL, LATENCY_TEST_FILE

WORKFLOW = Path(__file__).resolve().parents[2] / "examples" / "ci" / "github-actions.yml"
GATE_STEP = "- name: Latency and accuracy gate against the baselines"


def _env(text: str) -> dict[str, str]:
    """The job's ``env:`` block: ``NAME: value`` lines under it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "env:")
    env = {}
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if stripped.startswith("steps:"):
            break
        if stripped and not stripped.startswith("#"):
            name, _, value = stripped.partition(":")
            env[name] = value.strip()
    return env


def _gate_command(text: str) -> list[str]:
    """The gate step's folded ``run: >`` block, joined as YAML folds it, split as a shell would."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == GATE_STEP)
    run = next(i for i in range(start, len(lines)) if lines[i].strip() == "run: >")
    indent = len(lines[run]) - len(lines[run].lstrip())
    folded = []
    for line in lines[run + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        folded.append(line.strip())
    return shlex.split(" ".join(folded))


def test_the_gate_step_is_found_and_runs_pytest() -> None:
    command = _gate_command(WORKFLOW.read_text())
    assert command[0] == "pytest"
    assert "--ortperf-strict" in command


@pytest.mark.slow
def test_the_gate_step_passes_on_a_runner_class_that_has_no_entry_yet_and_records_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, write_model
) -> None:
    text = WORKFLOW.read_text()
    env = _env(text)
    machine = env["ORTPERF_MACHINE"]
    monkeypatch.setenv("ORTPERF_MACHINE", machine)
    (pytester.path / "tests" / "models").mkdir(parents=True)
    write_model("tests/models/model.onnx", **LATENCY_MODEL)
    (pytester.path / "tests" / "models" / "test_gate.py").write_text(LATENCY_TEST_FILE)
    args = [arg.replace("$ORTPERF_MODEL_CACHE_DIR", env["ORTPERF_MODEL_CACHE_DIR"]) for arg in _gate_command(text)[1:]]
    # The noise limit is lifted (as in the latency-gate tests): whether this machine is quiet is not what
    # is tested here.
    result = pytester.runpytest(*args, "--ortperf-budget=0.2", "--ortperf-max-cv=1000%")
    result.assert_outcomes(passed=2)  # --ort-opt-levels=disabled,all
    assert result.ret == 0
    recorded = json.loads((pytester.path / "baselines" / "tests" / "models" / "test_gate.py.json").read_text())
    for variant in ("cpu-disabled", "cpu-all"):
        (key,) = recorded["entries"][f"test_latency[{variant}]"]["figures"]
        assert key.startswith(f"{machine}@")
    # The second run on the same hardware judges against what the first recorded, and writes nothing.
    before = (pytester.path / "baselines" / "tests" / "models" / "test_gate.py.json").read_bytes()
    result = pytester.runpytest(*args, "--ortperf-budget=0.2")
    assert result.ret == 0
    assert (pytester.path / "baselines" / "tests" / "models" / "test_gate.py.json").read_bytes() == before
