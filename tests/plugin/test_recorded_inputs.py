"""Each side on its own inputs (issue 47): a model whose input size changed with it is measured side
by side with the recorded model fed its recorded inputs, made again from the recipe, never today's.
Real git, real sessions: a conv stack recorded at 16x16 (dims from the marker), then made static at
32x32 (four times the work) with the dims dropped."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from tests.models import conv_stack_model, mlp_model
from tests.plugin.conftest import commit_model, git

TEST = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx"{dims})

def test_latency(ort_perf):
    ort_perf.check_latency()
"""
QUICK = ("--ortperf-budget=0.3", "--ort-opt-levels=all")


def sized_by_dims(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with its input's and output's height and width named ``H`` and ``W``."""
    for value in (*model.graph.input, *model.graph.output):
        dims = value.type.tensor_type.shape.dim
        dims[2].dim_param, dims[3].dim_param = "H", "W"
    return model


@pytest.mark.slow
def test_a_model_whose_input_grew_with_it_fails_against_the_recorded_model_on_its_recorded_inputs(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    commit_model(pytester, sized_by_dims(conv_stack_model(layers=4, channels=16, size=16)))
    pytester.makepyfile(test_det=TEST.format(dims=', dims={"H": 16, "W": 16}'))
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    recipe = json.loads((pytester.path / "baselines" / "test_det.py.json").read_text())["entries"]
    assert recipe["test_latency[cpu-all]"]["recipe"]["inputs_source"] == "synthetic(seed=0)"

    onnx.save(conv_stack_model(layers=4, channels=16, size=32), pytester.path / "model.onnx")
    pytester.makepyfile(test_det=TEST.format(dims=""))
    result = pytester.runpytest(*QUICK, "--ortperf-report=report.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "latency regression in test_latency[[]cpu-all[]] against the recorded model (git *",
            "  changed since the baseline: model sha256 * -> *; inputs: x float32[[]1, 16, 16, 16[]] -> [[]1, 16, 32, 32[]]*",
            "  at operator level (untimed profiled runs of both sides, after measuring):",
            "    op types whose time grew most: Conv *",
        ]
    )
    (record,) = [
        r for r in json.loads((pytester.path / "report.json").read_text())["checks"] if r["kind"] == "latency"
    ]
    assert record["path"].startswith("side by side vs the recorded model (git ")
    assert record["verdict"] == "regression"
    assert any(
        change.startswith("inputs: x float32[1, 16, 16, 16] -> [1, 16, 32, 32]")
        for change in record["changed_since_baseline"]
    )


@pytest.mark.slow
def test_recorded_inputs_that_cannot_be_made_again_are_never_replaced_by_todays(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """Inputs read from an .npz beside the model that git never kept: when they change, the recorded
    model is not fed today's. The figures git's model was recorded with are short (they only inform),
    so the check is missing, and the record says both why and what to do."""
    commit_model(pytester, sized_by_dims(conv_stack_model(layers=2, channels=8, size=16)))
    rng = np.random.default_rng(0)
    np.savez(pytester.path / "model.npz", x=rng.standard_normal((1, 8, 16, 16)).astype(np.float32))
    pytester.makepyfile(test_det=TEST.format(dims=""))
    pytester.runpytest("--ortperf-update", *QUICK, "--ortperf-latency-threshold=50%").assert_outcomes(
        passed=1
    )
    np.savez(pytester.path / "model.npz", x=rng.standard_normal((1, 8, 16, 8)).astype(np.float32))
    result = pytester.runpytest(*QUICK, "--ortperf-report=report.json", "--ortperf-latency-threshold=50%")
    result.assert_outcomes(failed=1)  # missing fails by default
    (record,) = [
        r for r in json.loads((pytester.path / "report.json").read_text())["checks"] if r["kind"] == "latency"
    ]
    assert record["path"] == "missing", record
    assert record["stored_reason"].startswith(
        "the inputs changed, and the recorded inputs cannot be rebuilt (they came from model.npz, and git "
        "here does not keep model.npz as recorded); this hardware's figures were recorded short (the "
        "reference is rebuilt from git; these figures only inform), so they do not decide"
    )


MEMORY = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={{"batch": {batch}}})

def test_memory(ort_perf):
    ort_perf.check_memory()
"""


@pytest.mark.slow
def test_memory_side_by_side_runs_the_reference_on_its_recorded_inputs(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """The same model fed a batch 256 times larger: its reference (the very model, git keeps it) runs
    in its fresh processes on the recorded batch of 4, so the activations' growth is measured, named
    and fails; fed today's batch it would have compared the model with itself."""
    commit_model(pytester, mlp_model(layers=4, width=256))
    pytester.makepyfile(test_mem=MEMORY.format(batch=4))
    pytester.runpytest("--ortperf-update", "--ortperf-budget=0.2").assert_outcomes(passed=1)
    pytester.makepyfile(test_mem=MEMORY.format(batch=1024))
    result = pytester.runpytest("--ortperf-budget=0.2", "--ortperf-report=report.json")
    (record,) = [
        r for r in json.loads((pytester.path / "report.json").read_text())["checks"] if r["kind"] == "memory"
    ]
    assert record["path"].startswith("side by side vs "), record
    assert any(
        "inputs: x float32[4, 256] -> [1024, 256]" in change for change in record["changed_since_baseline"]
    )
    assert record["verdict"] == "regression", record
    result.assert_outcomes(failed=1)


@pytest.mark.slow
def test_recorded_inputs_read_from_a_file_git_keeps_are_read_again_from_git(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """The .npz beside the model is committed with it: when a pull request replaces it with inputs
    four times larger, the reference is fed the recorded .npz, read from git, and the growth fails
    side by side with the change named."""
    commit_model(pytester, sized_by_dims(conv_stack_model(layers=4, channels=16, size=16)))
    rng = np.random.default_rng(0)
    np.savez(pytester.path / "model.npz", x=rng.standard_normal((1, 16, 16, 16)).astype(np.float32))
    git(pytester, "add", "model.npz")
    git(pytester, "commit", "-q", "-m", "inputs")
    pytester.makepyfile(test_det=TEST.format(dims=""))
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    entry = json.loads((pytester.path / "baselines" / "test_det.py.json").read_text())["entries"]
    recipe = entry["test_latency[cpu-all]"]["recipe"]
    assert recipe["inputs_source"] == "model.npz"
    assert list(recipe["inputs_files"]) == ["model.npz"]

    np.savez(pytester.path / "model.npz", x=rng.standard_normal((1, 16, 32, 32)).astype(np.float32))
    result = pytester.runpytest(*QUICK, "--ortperf-report=report.json")
    result.assert_outcomes(failed=1)
    (record,) = [
        r for r in json.loads((pytester.path / "report.json").read_text())["checks"] if r["kind"] == "latency"
    ]
    assert record["path"].startswith("side by side vs "), record
    assert record["verdict"] == "regression"
    assert any(
        change.startswith("inputs: x float32[1, 16, 16, 16] -> [1, 16, 32, 32]")
        for change in record["changed_since_baseline"]
    )
