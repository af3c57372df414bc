"""The example CI workflow, copied as-is: its gate never writes baselines and passes on a runner class
with no figures yet; its record job adds that class's figures and keeps them for ``ortperf merge``."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.plugin.conftest import LATENCY_MODEL, LATENCY_TEST_FILE

WORKFLOW = Path(__file__).resolve().parents[2] / "examples" / "ci" / "github-actions.yml"
GATE_STEP = "Latency and accuracy gate against the baselines"
RECORD_STEP = "Record what this runner's hardware lacks"


def _document() -> dict[Any, Any]:
    document: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    return document


def _step(job: str, name: str) -> dict[str, Any]:
    (step,) = [step for step in _document()["jobs"][job]["steps"] if step.get("name") == name]
    return dict(step)


def _command(job: str, name: str) -> list[str]:
    """A step's folded ``run:`` text, split as a shell would, the model cache variable filled in."""
    env = _document()["env"]
    text = _step(job, name)["run"].replace("$ORTPERF_MODEL_CACHE_DIR", env["ORTPERF_MODEL_CACHE_DIR"])
    return shlex.split(text)


def test_the_gate_never_writes_baselines_and_the_record_job_keeps_what_it_records() -> None:
    document = _document()
    triggers = document[True]  # YAML 1.1 reads the key `on` as true
    assert set(triggers) == {"pull_request", "push", "schedule", "workflow_dispatch"}
    gate_runs = [step["run"] for step in document["jobs"]["gate"]["steps"] if "run" in step]
    assert not [run for run in gate_runs if "--ortperf-update" in run]
    gate = _command("gate", GATE_STEP)
    assert gate[0] == "pytest"
    assert "--ortperf-strict" in gate
    record = _command("record", RECORD_STEP)
    assert record[0] == "pytest"
    assert "--ortperf-update=missing" in record
    assert document["jobs"]["record"]["if"] == "github.event_name != 'pull_request'"
    kept = [
        step
        for step in document["jobs"]["record"]["steps"]
        if step.get("uses", "").startswith("actions/upload-artifact")
    ]
    assert [step["with"]["path"] for step in kept] == ["baselines/"]
    installs = [
        step["run"]
        for job in document["jobs"].values()
        for step in job["steps"]
        if step.get("name") == "Install"
    ]
    assert installs == ['python -m pip install "pytest-ortperf[cpu]" pytest-xdist'] * 2  # a CPU-only matrix


@pytest.mark.slow
def test_the_gate_passes_on_a_runner_class_without_figures_and_the_record_job_adds_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, write_model
) -> None:
    (pytester.path / "tests" / "models").mkdir(parents=True)
    write_model("tests/models/model.onnx", **LATENCY_MODEL)
    (pytester.path / "tests" / "models" / "test_gate.py").write_text(LATENCY_TEST_FILE)
    # The noise limit is lifted (as in the latency-gate tests): whether this machine is quiet is not
    # what is tested here.
    quick = ("--ortperf-budget=0.2", "--ortperf-max-cv=1000%")
    gate, record = _command("gate", GATE_STEP)[1:], _command("record", RECORD_STEP)[1:]
    levels = [arg for arg in gate if arg.startswith("--ort-opt-levels")]
    # Committed baselines, recorded by a developer on another runner class.
    monkeypatch.setenv("ORTPERF_MACHINE", "dev-laptop")
    pytester.runpytest("tests/models", *levels, "--ortperf-update", *quick).assert_outcomes(passed=2)
    baseline = pytester.path / "baselines" / "tests" / "models" / "test_gate.py.json"
    committed = baseline.read_bytes()

    machine = _document()["env"]["ORTPERF_MACHINE"]
    monkeypatch.setenv("ORTPERF_MACHINE", machine)
    result = pytester.runpytest(*gate, *quick)
    result.assert_outcomes(passed=2)  # --ort-opt-levels=disabled,all: the recipes decide, unchanged
    assert baseline.read_bytes() == committed, "the gate never writes"

    result = pytester.runpytest(*record, *quick)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["--ortperf-update=missing: 2 check(s) recorded *; 0 judged *"])
    entries = json.loads(baseline.read_text())["entries"]
    for variant in ("cpu-disabled", "cpu-all"):
        keys = sorted(entries[f"test_latency[{variant}]"]["figures"])
        assert [key.split("@")[0] for key in keys] == ["dev-laptop", machine]
    added = baseline.read_bytes()
    pytester.runpytest(*gate, *quick).assert_outcomes(passed=2)
    assert baseline.read_bytes() == added
