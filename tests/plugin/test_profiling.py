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


def _marked_and_unmarked(*, runs: int) -> str:
    """A test file: one marked test making ``runs`` runs, one unmarked test making one."""
    return f"""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={{"batch": 2}})

        @pytest.mark.ort_profile
        def test_marked(ort_session, ort_inputs):
            for _ in range({runs}):
                ort_session.run(None, ort_inputs)

        def test_unmarked(ort_session, ort_inputs):
            ort_session.run(None, ort_inputs)
        """


def _traces(directory: Path) -> list[list[dict]]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("run-*.json"))]


def test_each_run_of_a_marked_test_gets_its_own_trace(pytester: pytest.Pytester, model: Path) -> None:
    pytester.makepyfile(_marked_and_unmarked(runs=3))
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


def test_latency_check_in_a_marked_test_adds_untimed_profiled_runs(
    pytester: pytest.Pytester, model: Path
) -> None:
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
    result.stdout.fnmatch_lines(
        [
            "profile *test_idle[[]cpu-all[]]: no run was profiled (the test made no run through ort_session "
            "and no latency check measured); no trace written"
        ]
    )


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
        inits.append(
            numpy_helper.from_array((rng.standard_normal((width, width)) * 0.05).astype(np.float32), f"w{i}")
        )
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
    entry = json.loads(
        (
            pytester.path
            / "baselines"
            / "test_a_profiled_latency_failure_is_explained_at_operator_level.py.json"
        ).read_text()
    )
    (recorded,) = entry["entries"]["test_latency[cpu-all]"]["figures"].values()  # this machine's figures
    assert recorded["profile"]["ops"]["MatMul"]["nodes"] == 8
    onnx.save(_matmul_chain(32), pytester.path / "model.onnx")  # 24 more MatMuls, nothing else changes
    result = pytester.runpytest(*quick)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "latency regression in test_latency[[]cpu-all[]]*",
            "  at operator level (profiled runs vs the baseline's):",
            "    op types whose time grew most: MatMul * ms/run (+*%, *% of the change)*",
            "    nodes whose time grew most: *matmul*",
            "    node count per op type changed after optimization: MatMul 8 -> 32",
            "  to accept the new latency: ortperf update *",
        ]
    )
    # The message shows in the failure and, on a wide terminal, again in the short summary.
    grown = [line for line in result.outlines if "op types whose time grew most" in line]
    assert grown
    assert not any("Relu" in line or "Identity" in line for line in grown), (
        "only the op type that slowed down"
    )
    nodes = [line for line in result.outlines if "nodes whose time grew most" in line]
    assert nodes
    assert not any("relu" in line or "out " in line for line in nodes)


def test_unprofiled_baselines_carry_no_operator_profile(pytester: pytest.Pytester, model: Path) -> None:
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("model.onnx")
        def test_latency(ort_perf):
            ort_perf.check_latency()
        """
    )
    pytester.runpytest("--ortperf-update", "--ortperf-budget=0.1", "--ortperf-max-cv=1000%").assert_outcomes(
        passed=1
    )
    (baseline,) = (pytester.path / "baselines").glob("*.json")
    (recorded,) = json.loads(baseline.read_text())["entries"]["test_latency[cpu-all]"]["figures"].values()
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
        "--ort-opt-levels=disabled",
        "--ortperf-session-profile",
        "--ortperf-missing=pass",
        "--ortperf-budget=0.1",
    )
    result.assert_outcomes(passed=3)
    dirs = _profile_dirs(pytester)
    (session_trace,) = (dirs.pop("session")).glob("*.json")
    (marked,) = dirs.values()
    session_events = json.loads(session_trace.read_text())
    assert sum(e["name"] == "model_run" for e in session_events) == 5, (
        "2 marked + 3 unmarked runs, no timed ones"
    )
    traces = _traces(marked)
    assert len(traces) == 2
    as_keys = {(e["tid"], e["ts"], e["dur"], e["name"]) for e in session_events}
    for events in traces:
        assert sum(e["cat"] == "Node" for e in events) == NODES
        assert {(e["tid"], e["ts"], e["dur"], e["name"]) for e in events} <= as_keys  # a strict subset
    result.stdout.fnmatch_lines(["profile *test_marked[[]cpu-disabled[]]: 2 run(s)*"])


def test_parallel_execution_mode_traces_hold_their_nodes(pytester: pytest.Pytester, model: Path) -> None:
    """ORT_PARALLEL runs nodes on inter-op threads: they still land in their run's trace, and
    concurrent runs whose nodes cannot be told apart are a visible warning, not a silent mix."""
    onnx.save(mlp_model(layers=6, width=384), pytester.path / "slow.onnx")
    pytester.makepyfile(
        """
        import threading
        import pytest

        @pytest.mark.ort_model("model.onnx", dims={"batch": 2})
        @pytest.mark.ort_settings(execution_mode="parallel", inter_op_threads=2)
        @pytest.mark.ort_profile
        def test_parallel(ort_session, ort_inputs):
            for _ in range(3):
                ort_session.run(None, ort_inputs)

        @pytest.mark.ort_model("slow.onnx", dims={"batch": 64})
        @pytest.mark.ort_settings(execution_mode="parallel", inter_op_threads=2)
        @pytest.mark.ort_profile
        def test_overlapping(ort_session, ort_inputs):
            barrier = threading.Barrier(2)

            def work():
                for _ in range(3):
                    barrier.wait()
                    ort_session.run(None, ort_inputs)

            threads = [threading.Thread(target=work) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        """
    )
    result = pytester.runpytest("--ort-opt-levels=disabled")
    result.assert_outcomes(passed=2)
    dirs = _profile_dirs(pytester)
    (parallel,) = [d for name, d in dirs.items() if "py_test_parallel" in name]
    traces = _traces(parallel)
    assert len(traces) == 3
    for events in traces:
        assert sum(e["name"] == "model_run" for e in events) == 1
        assert sum(e["cat"] == "Node" for e in events) == NODES
    summary = json.loads((parallel / "summary.json").read_text())
    assert summary["warnings"] == []
    assert {row["name"] for row in summary["by_op"]} == {"MatMul", "Relu", "Identity"}
    # Whether two parallel-mode runs overlap, and whether ORT puts their nodes on pool threads, is up
    # to the scheduler; what must hold is that no trace holds a wrong set of nodes silently.
    (overlapping,) = [d for name, d in dirs.items() if "py_test_overlapping" in name]
    warnings = json.loads((overlapping / "summary.json").read_text())["warnings"]
    assert all("ambiguous" in w for w in warnings)
    slow_nodes = 6 * 2 + 1
    for path in sorted(overlapping.glob("run-*.json")):
        nodes = sum(e["cat"] == "Node" for e in json.loads(path.read_text()))
        flagged = [w for w in warnings if w.startswith(f"{path.name}: ")]
        assert nodes == slow_nodes or flagged, f"{path.name} holds {nodes} nodes and is not flagged"
        if flagged:
            result.stdout.fnmatch_lines(
                [
                    f"  WARNING: {path.name}: its nodes ran on inter-op threads while another run overlapped it*"
                ]
            )


def test_unmarked_tests_build_no_profiling_session(
    pytester: pytest.Pytester, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ortperf.ort.sessions import SessionPool

    builds: list[str] = []
    real = SessionPool.build_profiling

    def counted(self: SessionPool, built: object, prefix: str) -> object:
        builds.append(prefix)
        return real(self, built, prefix)  # type: ignore[arg-type]

    monkeypatch.setattr(SessionPool, "build_profiling", counted)
    pytester.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

        def test_session(ort_session, ort_inputs):
            ort_session.run(None, ort_inputs)

        def test_latency(ort_perf):
            ort_perf.check_latency()
        """
    )
    pytester.runpytest("--ortperf-update", "--ortperf-budget=0.1", "--ortperf-max-cv=1000%").assert_outcomes(
        passed=2
    )
    assert builds == [], "unmarked tests pay nothing: no profiling session is built"
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("model.onnx", dims={"batch": 2})
        @pytest.mark.ort_profile
        def test_marked(ort_session, ort_inputs):
            ort_session.run(None, ort_inputs)
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)
    assert len(builds) == 1, "the counter does see a marked test's profiling session"


@pytest.mark.slow
def test_marking_a_test_after_its_baseline_stores_its_operator_profile(
    pytester: pytest.Pytester, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ortperf.gate.session_factory import SessionFactory

    profiled: list[str] = []
    real = SessionFactory.op_profile

    def counted(self: SessionFactory, built: object, feeds: object, **kwargs: object) -> object:
        profiled.append("x")
        return real(self, built, feeds, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SessionFactory, "op_profile", counted)
    source = """
        import pytest
        {mark}
        @pytest.mark.ort_model("model.onnx", dims={{"batch": 2}})
        def test_latency(ort_perf):
            ort_perf.check_latency()
        """
    quick = (
        "--ortperf-update",
        "--ortperf-budget=0.1",
        "--ortperf-max-cv=1000%",
        "--ortperf-latency-threshold=500%",
    )
    baseline = (
        pytester.path
        / "baselines"
        / "test_marking_a_test_after_its_baseline_stores_its_operator_profile.py.json"
    )

    def recorded() -> dict:
        """This machine's figures, where the operator profile is stored."""
        (figures,) = json.loads(baseline.read_text())["entries"]["test_latency[cpu-all]"]["figures"].values()
        return figures

    pytester.makepyfile(source.format(mark=""))
    pytester.runpytest(*quick).assert_outcomes(passed=1)
    assert "profile" not in recorded()
    pytester.makepyfile(source.format(mark="@pytest.mark.ort_profile"))
    result = pytester.runpytest(*quick)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["ortperf update: 1 updated, 0 new, 0 unchanged*"])
    assert recorded()["profile"]["ops"]["MatMul"]["nodes"] == 4
    assert len(profiled) == 1
    pytester.runpytest(*quick).stdout.fnmatch_lines(["ortperf update: 0 updated, 0 new, 1 unchanged*"])
    assert len(profiled) == 1, "nothing is stored, so no operator profile is paid for"
    pytester.makepyfile(source.format(mark=""))
    pytester.runpytest(*quick).stdout.fnmatch_lines(["ortperf update: 1 updated, 0 new, 0 unchanged*"])
    assert "profile" not in recorded(), "a stale profile is dropped with the marker"


def test_session_profiles_of_different_settings_are_kept_apart(
    pytester: pytest.Pytester, model: Path
) -> None:
    pytester.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

        @pytest.mark.ort_settings(intra_op_threads=1)
        def test_one(ort_session, ort_inputs):
            for _ in range(3):
                ort_session.run(None, ort_inputs)

        @pytest.mark.ort_settings(intra_op_threads=2)
        def test_two(ort_session, ort_inputs):
            for _ in range(5):
                ort_session.run(None, ort_inputs)
        """
    )
    pytester.runpytest("--ortperf-session-profile").assert_outcomes(passed=2)
    files = sorted((pytester.path / ".ortperf" / "profiles" / "session").glob("*.json"))
    assert len(files) == 2, [f.name for f in files]
    runs = sorted(sum(e["name"] == "model_run" for e in json.loads(f.read_text())) for f in files)
    assert runs == [3, 5]


def test_unwritable_session_profile_dir_is_a_clean_error(pytester: pytest.Pytester, model: Path) -> None:
    (pytester.path / "blocked").write_text("a file where the directory should be")
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("model.onnx")
        def test_unmarked(ort_session):
            pass
        """
    )
    result = pytester.runpytest("--ortperf-profile-dir=blocked/profiles", "--ortperf-session-profile")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*profile directory '*blocked/profiles/session' is not writable: *"])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*NotADirectoryError*")


def test_native_run_profiling_is_used_when_ort_exposes_it(
    pytester: pytest.Pytester, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ORT whose Python RunOptions has run-level profiling (a property, as in the C API's shape):
    each run writes its own file through ORT, renamed to run-<k>.json; no profiling session."""
    import onnxruntime as ort

    from pytest_ortperf.ort.sessions import SessionPool

    class RunOptions(ort.RunOptions):  # type: ignore[misc]
        enable_profiling = False
        profile_file_prefix = ""

    class InferenceSession(ort.InferenceSession):  # type: ignore[misc]
        def run(self, output_names, input_feed, run_options=None):  # type: ignore[no-untyped-def]
            outputs = super().run(output_names, input_feed, run_options)
            if getattr(run_options, "enable_profiling", False) is True:
                events = [
                    {"cat": "Session", "name": "model_run", "ts": 0, "dur": 50, "tid": 1, "pid": 1, "args": {}},
                    {"cat": "Node", "name": "matmul0_kernel_time", "ts": 5, "dur": 20, "tid": 1, "pid": 1,
                     "args": {"op_name": "MatMul", "provider": "CPUExecutionProvider"}},
                ]  # fmt: skip
                Path(f"{run_options.profile_file_prefix}_2026-01-01_00-00-00_000.json").write_text(
                    json.dumps(events)
                )
            return outputs

    def no_profiling_session(*args: object) -> None:
        raise AssertionError("the native backend builds no profiling session")

    monkeypatch.setattr(ort, "RunOptions", RunOptions)
    monkeypatch.setattr(ort, "InferenceSession", InferenceSession)
    monkeypatch.setattr(SessionPool, "build_profiling", no_profiling_session)
    pytester.makepyfile(
        """
        import onnxruntime as ort
        import pytest

        @pytest.mark.ort_model("model.onnx", dims={"batch": 2})
        @pytest.mark.ort_profile
        def test_native(ort_session, ort_inputs):
            mine = ort.RunOptions()
            ort_session.run(None, ort_inputs)
            ort_session.run(None, ort_inputs, mine)
            assert (mine.enable_profiling, mine.profile_file_prefix) == (False, ""), "handed back as it came"
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    (directory,) = _profile_dirs(pytester).values()
    assert sorted(p.name for p in directory.iterdir()) == ["run-1.json", "run-2.json", "summary.json"]
    summary = json.loads((directory / "summary.json").read_text())
    assert summary["runs"] == 2
    assert summary["warnings"] == []
    result.stdout.fnmatch_lines(["profile *test_native[[]cpu-all[]]: 2 run(s)*top ops: MatMul 100%*"])


def test_iobinding_in_a_marked_test_warns_that_it_is_not_profiled(
    pytester: pytest.Pytester, model: Path
) -> None:
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("model.onnx", dims={"batch": 2})
        @pytest.mark.ort_profile
        def test_binding(ort_session, ort_inputs):
            binding = ort_session.io_binding()
            binding.bind_cpu_input("x", ort_inputs["x"])
            binding.bind_output("y")
            ort_session.run_with_iobinding(binding)
        """
    )
    result = pytester.runpytest("-W", "default")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*ProfilingWarning: ort_session.run_with_iobinding in a test marked ort_profile is not profiled*"]
    )


@pytest.mark.skipif(pytest.importorskip("xdist") is None, reason="needs pytest-xdist")
@pytest.mark.slow
def test_xdist_controller_shows_the_profile_section(pytester: pytest.Pytester, model: Path) -> None:
    pytester.makepyfile(_marked_and_unmarked(runs=2))
    result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["profile *test_marked[[]cpu-all[]]: 2 run(s)*", "  top nodes: *"])
