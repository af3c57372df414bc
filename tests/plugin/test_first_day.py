"""What a newcomer reads first (issue 52): which statistic the latency table's columns are, accuracy
checks in the summaries whether they pass or fail, and why a first recording was slow."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.models import mlp_model

TESTS = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

def test_latency(ort_perf):
    ort_perf.check_latency()

def test_accuracy(ort_perf):
    ort_perf.check_accuracy()
"""
QUICK = ("--ortperf-budget=0.05", "--ortperf-max-cv=1000%", "-p", "no:benchmark")


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> Path:
    """The suite, recorded."""
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(test_fd=TESTS)
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=2)
    return pytester.path


def _markdown_row(markdown: str, test: str) -> list[str]:
    row = next(line for line in markdown.splitlines() if f"`{test}`" in line)
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_passing_accuracy_checks_are_in_the_terminal_and_the_markdown(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    result = pytester.runpytest(*QUICK, "--ortperf-markdown=summary.md")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "accuracy (1 ok; outputs against their references, the worst output of each check shown)",
            "test * variant * against * worst output (tolerance) * verdict",
            "test_fd.py::test_accuracy  cpu-all  baseline (recorded *), variant cpu-disabled  "
            "y: max abs 0 (atol 1e-05, rtol 0.0001)  ok",
        ]
    )
    cells = _markdown_row((recorded / "summary.md").read_text(), "test_fd.py::test_accuracy[cpu-all]")
    assert cells[3:8] == [
        "accuracy",
        "baseline (recorded " + cells[4].split("(recorded ")[1],
        "y: max abs 0 (atol 1e-05, rtol 0.0001)",
        "all 2 within tolerance",
        "ok",
    ]


def test_a_changed_model_shows_its_failed_accuracy_figures_and_which_statistic_decided_latency(
    pytester: pytest.Pytester, recorded: Path
) -> None:
    onnx.save(mlp_model(layers=2, width=8, seed=7), recorded / "model.onnx")  # other weights, not in git
    result = pytester.runpytest(*QUICK, "--ortperf-latency-threshold=500%", "--ortperf-markdown=summary.md")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "latency on machine '*' (change: current/reference by the statistic it names, which decided; "
            "the medians beside it can differ)",
            "test * variant * mode * reference * current * change * verdict",
            # The two columns say they are medians; the change names the statistic it was read from.
            "test_fd.py::test_latency  cpu-all  stored  median * ms  median * ms  "
            "*% (99% CI *% .. *%) by fastest round medians*  ok",
            "accuracy (1 failed; *",
            "test_fd.py::test_accuracy  cpu-all  baseline (recorded *), variant cpu-disabled  "
            "y vs baseline (recorded *): FAILED on isclose, max abs * (atol 1e-05, rtol 0.0001)  failed",
        ]
    )
    markdown = (recorded / "summary.md").read_text()
    accuracy = _markdown_row(markdown, "test_fd.py::test_accuracy[cpu-all]")
    assert accuracy[0] == "❌"
    assert re.fullmatch(
        r"y vs baseline \(recorded .*\): FAILED on isclose, max abs [0-9.e-]+ \(atol 1e-05, rtol 0.0001\)",
        accuracy[5],
    )
    assert accuracy[6:8] == ["1 of 2 outside tolerance", "failed"]
    latency = _markdown_row(markdown, "test_fd.py::test_latency[cpu-all]")
    assert re.fullmatch(r"median [0-9.e-]+ ms", latency[4])
    assert re.fullmatch(r"median [0-9.e-]+ ms", latency[5])
    assert "fastest quarter of round medians" in latency[8]


UNKEPT = (
    "1 latency figure recorded until settled (the slow way): git does not keep their model yet, so no "
    "later run can rebuild it and these figures will decide (test_fd.py::test_latency[[]cpu-all[]]). "
    "Commit the models first (git add and git commit; for a model DVC keeps, its .dvc file or dvc.lock, "
    "and dvc push), then run ortperf update: figures of a model git or DVC keeps only inform and are "
    "recorded short."
)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_an_update_says_its_figures_were_recorded_slowly_because_git_does_not_keep_the_model(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(test_fd=TESTS)
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "."], cwd=pytester.path, check=True)
    first = pytester.runpytest("--ortperf-update", *QUICK)
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines(["ortperf update: 0 updated, 2 new, 0 unchanged, 0 unused*", UNKEPT])

    subprocess.run([*git, "add", "model.onnx"], cwd=pytester.path, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "model"], cwd=pytester.path, check=True)
    (pytester.path / "baselines").rename(pytester.path / "old-baselines")
    committed = pytester.runpytest("--ortperf-update", *QUICK)
    committed.assert_outcomes(passed=2)
    committed.stdout.fnmatch_lines(["ortperf update: 0 updated, 2 new, 0 unchanged, 0 unused*"])
    committed.stdout.no_fnmatch_line("*recorded until settled*")


def _dense_model(*, gemm: bool) -> onnx.ModelProto:
    """``y = x W + b`` exported as one Gemm, or as MatMul then Add (as another exporter writes it)."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
    ]
    if gemm:
        nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="dense")]
    else:
        nodes = [
            helper.make_node("MatMul", ["x", "w"], ["xw"], name="dense_matmul"),
            helper.make_node("Add", ["xw", "b"], ["y"], name="dense_add"),
        ]
    graph = helper.make_graph(
        nodes,
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


GRAPH_TEST = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

def test_graph(ort_perf):
    ort_perf.check_graph()
"""


def test_at_level_disabled_a_gemm_gone_from_the_model_is_an_op_change_of_the_model_not_a_lost_fusion(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(_dense_model(gemm=True), pytester.path / "model.onnx")
    pytester.makepyfile(test_graph=GRAPH_TEST)
    pytester.runpytest("--ortperf-update", "--ort-opt-levels=disabled").assert_outcomes(passed=1)
    onnx.save(_dense_model(gemm=False), pytester.path / "model.onnx")  # re-exported as MatMul + Add

    result = pytester.runpytest("--ort-opt-levels=disabled")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  change:    Gemm 1 -> 0, Add +1, MatMul +1",
            "  op changes of the model (level disabled: ORT fused nothing, these ops are the model's own): "
            "Gemm 1 -> 0 (Add +1, MatMul +1)",
            "  fails: an op change of the model (level disabled: ORT fused nothing): Gemm 1 -> 0 (Add +1, MatMul +1)",
        ]
    )
    result.stdout.no_fnmatch_line("*lost fusion*")
