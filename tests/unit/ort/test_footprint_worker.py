"""The footprint command: a session's memory and start-up, measured in a worker started for it alone."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from pytest_ortperf.ort import worker_program
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.variants import OptLevel, Variant
from pytest_ortperf.ort.workers import WorkerError, compile_cache_directory, measure_footprint
from tests.models import mlp_model
from tests.unit.ort.test_workers import _stand_in
from tests.wheels import ARENA_REPORTED

CPU_ALL = Variant(resolve_provider("cpu", source="test"), OptLevel.ALL)
FEEDS = {"x": np.ones((4, 256), np.float32)}


def _model(layers: int = 4, width: int = 256) -> ModelSource:
    data = mlp_model(layers, width).SerializeToString()
    return ModelSource(label=f"mlp{layers}x{width}", sha256=str(layers * width), data=data)


def _measure(model: ModelSource, tmp_path: Path, **kwargs: object) -> worker_program.Any:
    return measure_footprint(
        sys.executable,
        model,
        CPU_ALL,
        SessionSettings(),
        FEEDS,
        timeout_s=60,
        profile_prefix=tmp_path / "p",
        **kwargs,
    )


needs_arena = pytest.mark.skipif(
    not ARENA_REPORTED, reason="this onnxruntime's profile reports no arena figures"
)


@needs_arena
def test_orts_arena_figures_are_exact_across_fresh_processes_and_grow_with_the_weights(
    tmp_path: Path,
) -> None:
    first, second = _measure(_model(4), tmp_path), _measure(_model(4), tmp_path)
    grown = _measure(_model(8), tmp_path)
    weights = 4 * 256 * 256 * 4  # bytes of four more 256x256 float weights
    assert first.arena["mem_in_use_peak"] == second.arena["mem_in_use_peak"]
    assert first.arena["mem_in_use_peak"] >= weights  # the weights live in the arena
    assert grown.arena["mem_in_use_peak"] - first.arena["mem_in_use_peak"] >= weights
    assert first.peak_rss_added is not None
    assert first.peak_rss_added > 0
    assert first.create_s > 0
    assert first.first_run_s > 0
    assert first.steady_run_s > 0
    assert "matmul0" in first.arena["nodes"]
    assert not list(tmp_path.glob("p*.json")), "the trace is read and removed in the worker"


def test_without_the_cpu_arena_the_accounting_is_absent_and_the_resident_set_remains(tmp_path: Path) -> None:
    settings = SessionSettings().with_overrides({"cpu_mem_arena": False}, source="test")
    measured = measure_footprint(
        sys.executable, _model(), CPU_ALL, settings, FEEDS, timeout_s=60, profile_prefix=tmp_path / "p"
    )
    assert measured.arena == {}
    assert measured.peak_rss_added is not None


def test_a_session_past_the_memory_limit_fails_with_the_limit_and_the_figure_reached(tmp_path: Path) -> None:
    big = _model(4, 1024)  # 16 MiB of weights
    feeds = {"x": np.ones((4, 1024), np.float32)}
    with pytest.raises(
        WorkerError,
        match=r"ran out of memory at the worker's limit of 8 MiB \(--ortperf-memory-limit\); "
        r"resident memory reached [0-9.]+ MiB",
    ):
        measure_footprint(
            sys.executable, big, CPU_ALL, SessionSettings(), feeds, timeout_s=60, limit_bytes=8 << 20
        )


def test_a_worker_that_dies_is_an_error_that_says_so(tmp_path: Path) -> None:
    program = _stand_in(tmp_path, "footprint", "os._exit(9)")
    with pytest.raises(
        WorkerError, match=r"'mlp4x256' \[cpu-all\] in a fresh worker .*exited with code 9 during 'footprint'"
    ):
        measure_footprint(
            sys.executable, _model(), CPU_ALL, SessionSettings(), FEEDS, timeout_s=30, program=program
        )


def test_arena_figures_come_from_the_last_run_of_the_profile() -> None:
    def node(name: str, ts: int, peak: int, held: int, output: int) -> dict[str, object]:
        args = {"mem_in_use_peak": str(peak), "mem_arena_held": str(held), "mem_bytes_in_use": str(peak),
                "output_size": str(output), "parameter_size": "0"}  # fmt: skip
        return {"cat": "Node", "name": f"{name}_kernel_time", "ts": ts, "args": args}

    events = [
        {"cat": "Session", "name": "model_run", "ts": 10},
        node("a", 11, 100, 1000, 8),
        {"cat": "Session", "name": "model_run", "ts": 20},
        node("a", 21, 300, 2000, 8),
        node("b", 22, 200, 2000, 64),
        {"cat": "Node", "name": "b_fence_before", "ts": 22, "args": {}},
    ]
    figures = worker_program.arena_figures(events)
    assert figures["mem_in_use_peak"] == 300
    assert figures["mem_arena_held"] == 2000
    assert figures["nodes"] == {"b": 64, "a": 8}
    assert worker_program.arena_figures([node("a", 1, 1, 1, 1) | {"args": {}}]) == {}


def test_proc_status_figures_are_bytes() -> None:
    text = "Name:\tpython\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t3\n"
    assert worker_program.proc_status(text) == {"VmHWM": 2048 * 1024, "VmRSS": 1024 * 1024}


def test_a_tensorrt_compile_cache_directory_is_found_in_the_provider_options() -> None:
    trt = Variant(resolve_provider("tensorrt", source="test"), OptLevel.ALL)
    options = {"tensorrt": {"trt_engine_cache_enable": "True", "trt_engine_cache_path": "/tmp/engines"}}
    settings = SessionSettings().with_overrides({"provider_options": options}, source="test")
    assert compile_cache_directory(trt, settings) == "/tmp/engines"
    assert compile_cache_directory(trt, SessionSettings()) == ""
    assert compile_cache_directory(CPU_ALL, settings) == ""
    # the switch grammar's words, as every other yes/no setting takes them
    for word, found in (("on", "/tmp/engines"), ("yes", "/tmp/engines"), ("1", "/tmp/engines"), ("off", "")):
        spelled = {"tensorrt": {"trt_engine_cache_enable": word, "trt_engine_cache_path": "/tmp/engines"}}
        assert (
            compile_cache_directory(
                trt, SessionSettings().with_overrides({"provider_options": spelled}, source="t")
            )
            == found
        )


def test_an_openvino_model_cache_directory_is_found_in_the_provider_options() -> None:
    openvino = Variant(resolve_provider("openvino", source="test"), OptLevel.ALL)
    settings = SessionSettings().with_overrides(
        {"provider_options": {"openvino": {"cache_dir": "/tmp/ov"}}}, source="test"
    )
    assert compile_cache_directory(openvino, settings) == "/tmp/ov"
    assert compile_cache_directory(openvino, SessionSettings()) == ""


def test_a_model_file_is_sent_as_bytes_so_both_sides_build_alike(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(mlp_model(2, 16), path)
    source = ModelSource(label="m", sha256="x", path=path)
    measured = measure_footprint(
        sys.executable, source, CPU_ALL, SessionSettings(), {"x": np.ones((2, 16), np.float32)}, timeout_s=60
    )
    assert measured.create_s > 0
    path.unlink()
    with pytest.raises(WorkerError, match="cannot read"):
        measure_footprint(
            sys.executable,
            source,
            CPU_ALL,
            SessionSettings(),
            {"x": np.ones((2, 16), np.float32)},
            timeout_s=60,
        )


def test_the_weights_of_a_model_are_counted_from_its_graph_where_the_arena_may_not_hold_them(
    tmp_path: Path,
) -> None:
    from tests.models import conv_stack_model

    feeds = {"x": np.ones((1, 32, 16, 16), np.float32)}

    def measured(layers: int) -> worker_program.Any:
        data = conv_stack_model(layers, 32, 16).SerializeToString()
        return measure_footprint(
            sys.executable, ModelSource(label="conv", sha256=str(layers), data=data), CPU_ALL, SessionSettings(),
            feeds, timeout_s=60, profile_prefix=tmp_path / "p",
        )  # fmt: skip

    four, five = measured(4), measured(5)
    one_layer = 32 * 32 * 3 * 3 * 4 + 32 * 4  # one more Conv's weight and bias, in bytes
    assert five.weights - four.weights == one_layer
    if ARENA_REPORTED:  # Conv weights are prepacked outside ORT's arena (onnxruntime 1.31, 1.32)
        assert five.arena["mem_in_use_peak"] - four.arena["mem_in_use_peak"] < 32 * 32 * 3 * 3 * 4


def test_weight_bytes_count_initializers_constants_and_subgraphs(tmp_path: Path) -> None:
    from onnx import TensorProto, helper, numpy_helper

    from pytest_ortperf.ort.models import weight_bytes

    inner = helper.make_graph(
        [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.zeros(3, np.int64)))],
        "then", [], [helper.make_tensor_value_info("c", TensorProto.INT64, [3])],
    )  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], then_branch=inner, else_branch=inner)],
        "g",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [3])],
        [numpy_helper.from_array(np.zeros((4, 4), np.float16), "w")],
    )
    model = helper.make_model(graph)
    data = model.SerializeToString()
    assert weight_bytes(ModelSource(label="m", sha256="x", data=data)) == 4 * 4 * 2 + 2 * 3 * 8
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    assert weight_bytes(ModelSource(label="m", sha256="x", path=path)) == 4 * 4 * 2 + 2 * 3 * 8
    assert weight_bytes(ModelSource(label="m", sha256="x", data=b"not a model")) is None
