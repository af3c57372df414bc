"""Reading, slicing and summarizing real ONNX Runtime traces."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from pytest_ortperf.profiling.trace import (
    TraceError,
    load_trace,
    model_runs,
    parse_trace,
    slice_run,
    summarize,
    summary_lines,
)
from tests.models import SQUEEZENET, mlp_model


@pytest.fixture(scope="module")
def concurrent_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two threads x 5 runs of a 4-layer MLP on one profiled session (4 MatMul + 4 Relu + Identity)."""
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path_factory.mktemp("trace") / "mlp")
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        mlp_model(layers=4, width=64).SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    feeds = {"x": np.ones((8, 64), dtype=np.float32)}

    def work() -> None:
        for _ in range(5):
            session.run(None, feeds)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return Path(session.end_profiling())


def test_slicing_by_thread_and_window_is_exact_with_concurrent_runs(concurrent_trace: Path) -> None:
    events = load_trace(concurrent_trace)
    runs = model_runs(events)
    assert len(runs) == 10
    assert len({run.tid for run in runs}) == 2
    nodes_per_run = []
    for run in runs:
        nodes = [e for e in slice_run(events, run) if e.cat == "Node"]
        nodes_per_run.append(len(nodes))
        assert {e.tid for e in nodes} == {run.tid}
    # Optimization fuses nothing in this MLP at the default level except possibly Identity removal,
    # so every run holds the same node set: the slices never mix the two threads.
    assert len(set(nodes_per_run)) == 1
    assert nodes_per_run[0] * 10 == sum(1 for e in events if e.cat == "Node")


def test_summary_of_a_real_cnn(tmp_path: Path) -> None:
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "sq")
    session = ort.InferenceSession(str(SQUEEZENET), options, providers=["CPUExecutionProvider"])
    for _ in range(3):
        session.run(None, {"data_0": np.zeros((1, 3, 224, 224), dtype=np.float32)})
    summary = summarize(load_trace(Path(session.end_profiling())), requested_provider="CUDAExecutionProvider")
    assert summary.runs == 3
    # Conv dominates squeezenet, but on a shared machine one preempted Concat can outlast it: rank, not identity.
    assert [i.us for i in summary.by_op] == sorted((i.us for i in summary.by_op), reverse=True)
    assert "Conv" in [i.name for i in summary.by_op[:3]]
    assert summary.node_us == sum(i.us for i in summary.by_op) == sum(i.us for i in summary.by_provider)
    assert [i.name for i in summary.by_provider] == ["CPUExecutionProvider"]
    assert len(summary.fallback_nodes) == len({i.name for i in summary.by_node})  # all on CPU: all fell back
    text = "\n".join(summary_lines(summary, top=3))
    assert "3 run(s)" in text
    assert "ran on CPU although an accelerator was requested" in text
    assert json.loads(json.dumps(summary.as_dict()))["by_op"][0]["name"] == summary.by_op[0].name


def test_cpu_request_reports_no_fallback(concurrent_trace: Path) -> None:
    summary = summarize(load_trace(concurrent_trace), requested_provider="CPUExecutionProvider")
    assert summary.fallback_nodes == ()
    assert {i.name for i in summary.by_op} >= {"MatMul", "Relu"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty, not an ONNX Runtime trace"),
        ("{not json", "is not JSON"),
        ('{"a": 1}', "holds a JSON dict, not a list of trace events"),
        ("[1]", "event 0 is not an object"),
        ('[{"cat": "Node", "name": "n"}]', "event 0 lacks a valid 'ts' field"),
        ('[{"cat": "Node", "name": "n", "ts": "soon", "dur": 1}]', "event 0 lacks a valid"),
        ('[{"cat": "gpu", "name": "x", "ts": 1, "dur": 1}]', "has no Session, Node or Kernel events"),
    ],
)
def test_not_a_trace(text: str, message: str) -> None:
    with pytest.raises(TraceError, match=r"'my\.json'") as info:
        parse_trace(text, source="my.json")
    assert message in str(info.value)


def test_chrome_object_form_is_accepted() -> None:
    events = parse_trace(
        '{"traceEvents": [{"cat": "Session", "name": "model_run", "ts": 5, "dur": 10, "tid": 1}]}', source="x"
    )
    assert [e.name for e in model_runs(events)] == ["model_run"]


def test_unreadable_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read trace"):
        load_trace(tmp_path / "missing.json")


def _summary_document(concurrent_trace: Path) -> dict[str, object]:
    summary = summarize(load_trace(concurrent_trace))
    return {"test": "t.py::test_x[cpu-all]", "variant": "cpu-all", "traces": ["run-1.json"], "warnings": [],
            **summary.as_dict()}  # fmt: skip


def test_a_summary_json_reads_back_as_it_was_written(concurrent_trace: Path, tmp_path: Path) -> None:
    from pytest_ortperf.profiling.trace import SummaryFile, load_profile

    document = _summary_document(concurrent_trace)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(document))
    found = load_profile(path)
    assert isinstance(found, SummaryFile)
    assert found.as_dict() == document
    assert found.summary == summarize(load_trace(concurrent_trace))
    assert load_profile(concurrent_trace) == load_trace(concurrent_trace)  # a trace stays a trace


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("runs", -1, "summary field runs is negative"),
        ("run_us", "1 ms", "summary field run_us is not a number"),
        ("by_node", {}, "summary field by_node is not a list"),
        ("by_provider", [3], "summary field by_provider[0] is not an object"),
        ("traces", "run-1.json", "summary field traces is not a list"),
        ("test", 7, "summary field test is not text"),
    ],
)
def test_a_damaged_summary_names_the_file_and_the_field(
    concurrent_trace: Path, tmp_path: Path, field: str, value: object, message: str
) -> None:
    from pytest_ortperf.profiling.trace import load_profile

    document = _summary_document(concurrent_trace)
    document[field] = value
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(document))
    with pytest.raises(TraceError, match=re.escape(f"'{path}': {message}")):
        load_profile(path)
