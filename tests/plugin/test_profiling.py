"""The ort_profile marker: one trace per run, summaries, and what unmarked tests pay (nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.models import mlp_model

NODES = 4 * 2 + 1  # mlp_model(layers=4): MatMul + Relu per layer, then Identity (kept at 'disabled')


@pytest.fixture
def model(pytester: pytest.Pytester) -> Path:
    path = pytester.path / "model.onnx"
    onnx.save(mlp_model(layers=4, width=32), path)
    return path


def _profile_dirs(pytester: pytest.Pytester) -> dict[str, Path]:
    root = pytester.path / ".ortperf" / "profiles"
    return {d.name: d for d in root.iterdir()} if root.exists() else {}


def _traces(directory: Path) -> list[list[dict]]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("run-*.json"))]


def test_each_run_of_a_marked_test_gets_its_own_trace(pytester: pytest.Pytester, model: Path) -> None:
    pytester.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

        @pytest.mark.ort_profile
        def test_marked(ort_session, ort_inputs):
            for _ in range(3):
                ort_session.run(None, ort_inputs)

        def test_unmarked(ort_session, ort_inputs):
            ort_session.run(None, ort_inputs)
        """
    )
    result = pytester.runpytest("--ort-opt-levels=disabled", "--junitxml=report.xml")
    result.assert_outcomes(passed=2)
    dirs = _profile_dirs(pytester)
    assert len(dirs) == 1, "an unmarked test writes no trace"
    (directory,) = dirs.values()
    assert "test_marked" in directory.name
    traces = _traces(directory)
    assert len(traces) == 3
    for events in traces:
        assert sum(e["name"] == "model_run" for e in events) == 1
        assert sum(e["cat"] == "Node" for e in events) == NODES
        assert all(e["ph"] == "X" and isinstance(e["ts"], int) for e in events)  # Chrome trace events
    summary = json.loads((directory / "summary.json").read_text())
    assert summary["runs"] == 3
    assert summary["traces"] == ["run-1.json", "run-2.json", "run-3.json"]
    assert {row["name"] for row in summary["by_op"]} == {"MatMul", "Relu", "Identity"}
    assert len(summary["by_node"]) == NODES
    assert {row["op"] for row in summary["by_node"]} == {"MatMul", "Relu", "Identity"}
    assert [row["name"] for row in summary["by_provider"]] == ["CPUExecutionProvider"]
    assert summary["run_us"] >= summary["node_us"] > 0
    assert summary["fallback_nodes"] == []  # CPU was asked for: nothing fell back
    assert summary["warnings"] == []
    result.stdout.fnmatch_lines(
        [
            "profile *test_marked[[]cpu-disabled[]]: 3 run(s), * ms in total, * ms per run; top ops: *; "
            "providers: CPUExecutionProvider 100%",
            "  top nodes: * (*) *%, *",
        ]
    )
    junit = (pytester.path / "report.xml").read_text()
    assert junit.count('name="ortperf_trace"') == 3
    assert 'name="ortperf_profile_summary"' in junit


def test_concurrent_profiled_and_unprofiled_runs(pytester: pytest.Pytester, model: Path) -> None:
    """Upstream scenario 1: threads share a session, some runs profiled, some not."""
    pytester.makepyfile(
        """
        import threading
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

        @pytest.mark.ort_profile
        def test_threads(ort_session, ort_session_info, ort_inputs):
            plain = ort_session_info.session  # the unprofiled session

            def profiled():
                for _ in range(4):
                    ort_session.run(None, ort_inputs)

            def unprofiled():
                for _ in range(6):
                    plain.run(None, ort_inputs)

            threads = [threading.Thread(target=f) for f in (profiled, profiled, unprofiled, unprofiled)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        """
    )
    pytester.runpytest("--ort-opt-levels=disabled").assert_outcomes(passed=1)
    (directory,) = _profile_dirs(pytester).values()
    traces = _traces(directory)
    assert len(traces) == 8
    for events in traces:
        nodes = [e for e in events if e["cat"] == "Node"]
        assert len(nodes) == NODES
        assert len({e["tid"] for e in events}) == 1


def test_latency_check_in_a_marked_test_adds_untimed_profiled_runs(pytester: pytest.Pytester, model: Path) -> None:
    pytester.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

        @pytest.mark.ort_profile
        def test_latency(ort_perf):
            result = ort_perf.check_latency()
            assert result.current.count > 100
        """
    )
    pytester.runpytest("--ortperf-missing=pass", "--ortperf-budget=0.1").assert_outcomes(passed=1)
    (directory,) = _profile_dirs(pytester).values()
    assert len(_traces(directory)) == 3, "timed runs never go through the profiled session"


def test_a_marked_test_without_runs_says_so(pytester: pytest.Pytester, model: Path) -> None:
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("model.onnx")
        @pytest.mark.ort_profile
        def test_idle(ort_session):
            pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["profile *test_idle[[]cpu-all[]]: the test made no run through ort_session; no trace written"])


def test_reruns_replace_old_traces(pytester: pytest.Pytester, model: Path) -> None:
    pytester.makepyfile(
        """
        import os
        import pytest
        @pytest.mark.ort_model("model.onnx")
        @pytest.mark.ort_profile
        def test_runs(ort_session, ort_inputs):
            for _ in range(int(os.environ.get("RUNS", "1"))):
                ort_session.run(None, ort_inputs)
        """
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RUNS", "3")
        pytester.runpytest().assert_outcomes(passed=1)
        patch.setenv("RUNS", "1")
        pytester.runpytest().assert_outcomes(passed=1)
    (directory,) = _profile_dirs(pytester).values()
    assert [p.name for p in sorted(directory.glob("run-*.json"))] == ["run-1.json"]


def test_unwritable_profile_dir_fails_only_marked_tests(pytester: pytest.Pytester, model: Path) -> None:
    (pytester.path / "blocked").write_text("a file where the directory should be")
    pytester.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx")

        @pytest.mark.ort_profile
        def test_marked(ort_session):
            pass

        def test_unmarked(ort_session):
            pass
        """
    )
    result = pytester.runpytest("--ortperf-profile-dir=blocked/profiles")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*profile directory '*blocked/profiles/*' is not writable: *"])


def _matmul_chain(matmuls: int, width: int = 128) -> onnx.ModelProto:
    """``x -> MatMul x matmuls -> Relu -> Identity``: only the MatMul count changes between models."""
    rng = np.random.default_rng(0)
    nodes, inits, current = [], [], "x"
    for i in range(matmuls):
        inits.append(numpy_helper.from_array((rng.standard_normal((width, width)) * 0.05).astype(np.float32), f"w{i}"))
        nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [f"mm{i}"], name=f"matmul{i}"))
        current = f"mm{i}"
    nodes.append(helper.make_node("Relu", [current], ["r"], name="relu"))
    nodes.append(helper.make_node("Identity", ["r"], ["y"], name="out"))
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])],
        inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_profiled_latency_failure_is_explained_at_operator_level(pytester: pytest.Pytester) -> None:
    onnx.save(_matmul_chain(8), pytester.path / "model.onnx")
    pytester.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 16})

        @pytest.mark.ort_profile
        def test_latency(ort_perf):
            ort_perf.check_latency()
        """
    )
    quick = ("--ortperf-budget=0.2", "--ortperf-latency-threshold=50%", "--ortperf-max-cv=1000%")
    pytester.runpytest("--ortperf-update", *quick).assert_outcomes(passed=1)
    entry = json.loads((pytester.path / "baselines" / "test_a_profiled_latency_failure_is_explained_at_operator_level.py.json").read_text())
    (recorded,) = entry["entries"]["test_latency[cpu-all]"].values()
    assert recorded["profile"]["ops"]["MatMul"]["nodes"] == 8
    onnx.save(_matmul_chain(32), pytester.path / "model.onnx")  # 24 more MatMuls, nothing else changes
    result = pytester.runpytest(*quick)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "latency regression in test_latency[[]cpu-all[]]*",
            "  at operator level (profiled runs vs the baseline's):",
            "    op types whose time grew most: MatMul * ms/run (+*%)*",
            "    nodes whose time grew most: *matmul*",
            "    node count per op type changed after optimization: MatMul 8 -> 32",
            "  to accept the new latency: ortperf update *",
        ]
    )
    (grown,) = [line for line in result.outlines if "op types whose time grew most" in line]
    assert "Relu" not in grown, "only the op type that slowed down is named"
    assert "Identity" not in grown
    (nodes,) = [line for line in result.outlines if "nodes whose time grew most" in line]
    assert "relu" not in nodes
    assert "out " not in nodes


def test_unprofiled_baselines_carry_no_operator_profile(pytester: pytest.Pytester, model: Path) -> None:
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("model.onnx")
        def test_latency(ort_perf):
            ort_perf.check_latency()
        """
    )
    pytester.runpytest("--ortperf-update", "--ortperf-budget=0.1", "--ortperf-max-cv=1000%").assert_outcomes(passed=1)
    (baseline,) = (pytester.path / "baselines").glob("*.json")
    (recorded,) = json.loads(baseline.read_text())["entries"]["test_latency[cpu-all]"].values()
    assert "profile" not in recorded


def test_session_level_profile_alongside_run_level_traces(pytester: pytest.Pytester, model: Path) -> None:
    """Upstream scenario 2: session-level and run-level profiling at once give both kinds of file."""
    pytester.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

        @pytest.mark.ort_profile
        def test_marked(ort_session, ort_inputs):
            for _ in range(2):
                ort_session.run(None, ort_inputs)

        def test_unmarked(ort_session, ort_inputs):
            for _ in range(3):
                ort_session.run(None, ort_inputs)

        def test_timed(ort_perf):
            ort_perf.check_latency()
        """
    )
    result = pytester.runpytest(
        "--ort-opt-levels=disabled", "--ortperf-session-profile", "--ortperf-missing=pass", "--ortperf-budget=0.1"
    )
    result.assert_outcomes(passed=3)
    dirs = _profile_dirs(pytester)
    (session_trace,) = (dirs.pop("session")).glob("*.json")
    (marked,) = dirs.values()
    session_events = json.loads(session_trace.read_text())
    assert sum(e["name"] == "model_run" for e in session_events) == 5, "2 marked + 3 unmarked runs, no timed ones"
    traces = _traces(marked)
    assert len(traces) == 2
    as_keys = {(e["tid"], e["ts"], e["dur"], e["name"]) for e in session_events}
    for events in traces:
        assert sum(e["cat"] == "Node" for e in events) == NODES
        assert {(e["tid"], e["ts"], e["dur"], e["name"]) for e in events} <= as_keys  # a strict subset
    result.stdout.fnmatch_lines(["profile *test_marked[[]cpu-disabled[]]: 2 run(s)*"])
