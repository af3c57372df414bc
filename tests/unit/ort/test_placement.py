"""Node placement as ORT records it, read from a real session."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import onnx
import onnxruntime as ort
import pytest

from pytest_ortperf.ort.placement import RECORD_PLACEMENT_KEY, NodePlacement, Placement, placement_of

CPU = "CPUExecutionProvider"

# onnxruntime releases before the graph-assignment API (1.23.2 is the newest with a
# Python 3.10 wheel) cannot report placement: placement_of says None there, tested below.
needs_placement_api = pytest.mark.skipif(
    not hasattr(ort.InferenceSession, "get_provider_graph_assignment_info"),
    reason=f"onnxruntime {ort.__version__} has no InferenceSession.get_provider_graph_assignment_info",
)


def _session(path: Path, level: ort.GraphOptimizationLevel) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    options.add_session_config_entry(RECORD_PLACEMENT_KEY, "1")
    return ort.InferenceSession(str(path), options, providers=[CPU])


@pytest.fixture(scope="module")
def unoptimised(squeezenet_path: Path) -> ort.InferenceSession:
    return _session(squeezenet_path, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)


@needs_placement_api
def test_real_squeezenet_every_node_on_cpu(squeezenet_path: Path, unoptimised: ort.InferenceSession) -> None:
    placement = placement_of(unoptimised)
    assert placement is not None
    model = onnx.load(squeezenet_path)
    # without optimisation ORT places exactly the model's nodes
    assert Counter(n.op_type for n in placement.nodes) == Counter(n.op_type for n in model.graph.node)
    assert placement.counts() == {CPU: len(model.graph.node)}
    assert placement.nodes_on(CPU) == placement.nodes
    assert placement.nodes_not_on(CPU) == ()
    assert placement.nodes_not_on("CUDAExecutionProvider") == placement.nodes
    assert placement.nodes_on("CUDAExecutionProvider") == ()
    assert placement.describe() == f"{CPU}: {len(model.graph.node)}"
    assert all(isinstance(n, NodePlacement) and n.domain == "" for n in placement.nodes)


@needs_placement_api
def test_real_squeezenet_optimised_placement_sees_fused_graph(
    squeezenet_path: Path, unoptimised: ort.InferenceSession
) -> None:
    optimised = placement_of(_session(squeezenet_path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL))
    baseline = placement_of(unoptimised)
    assert optimised is not None
    assert baseline is not None
    assert set(optimised.counts()) == {CPU}
    # fusions (Conv+Relu) leave fewer nodes than the model has
    assert 0 < len(optimised.nodes) < len(baseline.nodes)


def test_placement_of_without_the_api_is_none() -> None:
    assert placement_of(object()) is None
    assert placement_of(SimpleNamespace(get_providers=lambda: [CPU])) is None


def _fake_session(groups: dict[str, list[tuple[str, str, str]]]) -> SimpleNamespace:
    subgraphs = [
        SimpleNamespace(
            ep_name=ep,
            get_nodes=lambda nodes=nodes: [
                SimpleNamespace(name=n, op_type=op, domain=d) for n, op, d in nodes
            ],
        )
        for ep, nodes in groups.items()
    ]
    return SimpleNamespace(get_provider_graph_assignment_info=lambda: subgraphs)


def test_mixed_placement_counts_and_fallbacks() -> None:
    session = _fake_session(
        {
            "CUDAExecutionProvider": [("conv", "Conv", ""), ("relu", "Relu", "")],
            CPU: [("shape", "Shape", ""), ("gelu", "Gelu", "com.microsoft")],
            "TensorrtExecutionProvider": [("trt_sub", "TRTKernel", "")],
        }
    )
    placement = placement_of(session)
    assert isinstance(placement, Placement)
    assert placement.counts() == {"CUDAExecutionProvider": 2, CPU: 2, "TensorrtExecutionProvider": 1}
    assert [n.name for n in placement.nodes_not_on("CUDAExecutionProvider")] == ["shape", "gelu", "trt_sub"]
    assert placement.nodes_on(CPU)[1] == NodePlacement("gelu", "Gelu", "com.microsoft", CPU)
    assert placement.describe() == (
        "CPUExecutionProvider: 2, CUDAExecutionProvider: 2, TensorrtExecutionProvider: 1"
    )


def test_empty_placement() -> None:
    placement = placement_of(_fake_session({}))
    assert placement == Placement(())
    assert placement.counts() == {}
    assert placement.describe() == ""
