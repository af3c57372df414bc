"""Two optimized graphs compared exactly: what changed, and what of it fails."""

from __future__ import annotations

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.graph.diff import GraphDiff, failures, parse_graph_mode, parse_graph_threshold, pinned
from pytest_ortperf.graph.figures import GraphFigures

FUSED = GraphFigures(
    ops={"com.microsoft:FusedConv": 3, "Identity": 1},
    fused={"com.microsoft:FusedConv": 3},
    providers={"CPUExecutionProvider": 4},
    digest="a" * 64,
    node_ops={"conv0": "com.microsoft:FusedConv", "conv1": "com.microsoft:FusedConv",
              "conv2": "com.microsoft:FusedConv", "out": "Identity"},
)  # fmt: skip
ONE_LOST = GraphFigures(
    ops={"com.microsoft:FusedConv": 2, "Conv": 1, "Relu": 1, "Identity": 1},
    fused={"com.microsoft:FusedConv": 2},
    providers={"CPUExecutionProvider": 5},
    digest="b" * 64,
    node_ops={"conv0": "Conv", "relu0": "Relu", "conv1": "com.microsoft:FusedConv",
              "conv2": "com.microsoft:FusedConv", "out": "Identity"},
)  # fmt: skip


def test_the_same_digest_is_the_same_graph_and_fails_nothing() -> None:
    diff = GraphDiff(FUSED, FUSED)
    assert diff.same
    assert diff.text() == "same graph"
    assert failures(diff, "exact") == []


def test_a_lost_fusion_fails_and_names_the_op_types_and_nodes() -> None:
    diff = GraphDiff(FUSED, ONE_LOST)
    assert diff.text() == "FusedConv 3 -> 2, Conv +1, Relu +1"
    assert diff.lost_fusions() == ["FusedConv 3 -> 2 (Conv +1, Relu +1)"]
    assert failures(diff) == ["lost fusion: FusedConv 3 -> 2 (Conv +1, Relu +1)"]
    assert failures(diff, "off") == []
    lines = diff.lines()
    assert "nodes new: conv0 (Conv), relu0 (Relu)" in lines
    assert "nodes gone: conv0 (FusedConv)" in lines


def test_at_level_disabled_a_fused_op_type_that_drops_is_the_models_op_change() -> None:
    """ORT fuses nothing at level disabled: a Gemm that became MatMul + Add was the exported model's."""
    before = GraphFigures(ops={"Gemm": 2}, digest="a" * 64)
    after = GraphFigures(ops={"MatMul": 2, "Add": 2}, digest="b" * 64)
    optimized = GraphDiff(before, after)
    assert optimized.lost_fusions() == ["Gemm 2 -> 0 (Add +2, MatMul +2)"]
    assert optimized.model_op_changes() == []
    disabled = GraphDiff(before, after, optimized=False)
    assert disabled.lost_fusions() == []
    assert disabled.model_op_changes() == ["Gemm 2 -> 0 (Add +2, MatMul +2)"]
    assert failures(disabled) == [
        "an op change of the model (level disabled: ORT fused nothing): Gemm 2 -> 0 (Add +2, MatMul +2)"
    ]
    assert not any("lost fusion" in line for line in disabled.lines())


def test_a_gained_fusion_informs_and_fails_only_in_exact_mode() -> None:
    diff = GraphDiff(ONE_LOST, FUSED)
    assert diff.lost_fusions() == []
    assert diff.gained_fusions() == ["FusedConv 2 -> 3 (Conv -1, Relu -1)"]
    assert diff.grown_fusions() == []
    assert failures(diff) == []
    assert failures(diff, "exact") == [
        "the graph changed (FusedConv 2 -> 3, Conv -1, Relu -1) and ort_thresholds(graph='exact') fails any change"
    ]


def test_a_fused_op_that_drops_without_its_parts_appearing_is_no_lost_fusion() -> None:
    """Layers removed: fewer FusedConv, and nothing they are made of appears."""
    fewer = GraphFigures(ops={"com.microsoft:FusedConv": 2, "Identity": 1}, digest="c" * 64)
    assert GraphDiff(FUSED, fewer).lost_fusions() == []
    assert failures(GraphDiff(FUSED, fewer)) == []


def test_an_unlisted_fused_op_is_made_of_any_op() -> None:
    before = GraphFigures(ops={"com.microsoft:NewFusion": 2}, digest="a" * 64)
    after = GraphFigures(ops={"com.microsoft:NewFusion": 1, "Tanh": 4}, digest="b" * 64)
    assert GraphDiff(before, after).lost_fusions() == ["NewFusion 2 -> 1 (Tanh +4)"]


def test_nodes_moving_off_the_provider_and_new_copies_fail() -> None:
    on_gpu = GraphFigures(ops={"Conv": 3}, providers={"CUDAExecutionProvider": 3}, digest="a" * 64)
    fell_back = GraphFigures(
        ops={"Conv": 3, "MemcpyToHost": 1, "MemcpyFromHost": 1},
        providers={"CUDAExecutionProvider": 2, "CPUExecutionProvider": 1},
        off_provider=1,
        copies=2,
        digest="b" * 64,
        off_nodes=("conv1 (Conv) on CPUExecutionProvider",),
    )
    diff = GraphDiff(on_gpu, fell_back)
    assert failures(diff) == [
        "nodes off the requested provider 0 -> 1",
        "copy nodes between providers 0 -> 2",
    ]
    assert "off the requested provider now: conv1 (Conv) on CPUExecutionProvider" in diff.lines()
    assert diff.text().endswith(
        "nodes off the requested provider 0 -> 1, copy nodes between providers 0 -> 2"
    )


def test_a_node_falling_back_as_another_returns_fails_when_both_sides_were_built_here() -> None:
    """The count off the provider is the same; the nodes are not."""
    ops = {"Conv": 2}

    def placed(off: str) -> GraphFigures:
        return GraphFigures(
            ops=ops,
            providers={"OpenVINOExecutionProvider": 1, "CPUExecutionProvider": 1},
            off_provider=1,
            node_ops={"conv0": "Conv", "conv1": "Conv"},
            off_nodes=(f"{off} (Conv) on CPUExecutionProvider",),
        )

    diff = GraphDiff(placed("conv0"), placed("conv1"))
    assert failures(diff) == ["nodes off the requested provider 1 -> 1 (other nodes than before)"]
    assert "off the requested provider now: conv1 (Conv) on CPUExecutionProvider" in diff.lines()
    assert failures(GraphDiff(placed("conv0"), placed("conv0"))) == []


def test_a_fallback_against_stored_figures_without_placement_says_so() -> None:
    before = GraphFigures(ops={"Conv": 1}, digest="a" * 64)
    after = GraphFigures(ops={"Conv": 1}, off_provider=1, digest="b" * 64)
    assert "off the requested provider now: which nodes, this onnxruntime does not report" in (
        GraphDiff(before, after).lines()
    )


def test_graphs_that_could_not_be_serialized_compare_by_their_figures() -> None:
    compiled = GraphFigures(ops={"TRTKernel": 1}, providers={"TensorrtExecutionProvider": 1})
    assert GraphDiff(compiled, compiled).same
    assert not GraphDiff(compiled, GraphFigures(ops={"TRTKernel": 2})).same


def test_pinned_counts_match_a_name_with_or_without_its_domain() -> None:
    assert pinned(FUSED, {"FusedConv": 3, "com.microsoft:FusedConv": 3}) == []
    assert pinned(ONE_LOST, {"FusedConv": 3, "Attention": 0}) == ["FusedConv: expected 3, found 2"]


def test_graph_thresholds_are_a_mode_or_pinned_counts() -> None:
    assert parse_graph_mode(" Exact ", source="x") == "exact"
    assert parse_graph_threshold("off", source="x") == ("off", ())
    assert parse_graph_threshold({"Attention": 12}, source="x") == ("", (("Attention", 12),))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("loose", "marker: graph: expected one of fusions, exact, off, got 'loose'."),
        (
            3,
            "marker: graph: expected a mode (fusions, exact, off) or op type counts such as {'FusedConv': 3}, got 3.",
        ),
        (
            {},
            "marker: graph: expected a mode (fusions, exact, off) or op type counts such as {'FusedConv': 3}, got {}.",
        ),
        (
            {"FusedConv": -1},
            "marker: graph: the count pinned for 'FusedConv' must be an integer >= 0, got -1.",
        ),
        (
            {"FusedConv": True},
            "marker: graph: the count pinned for 'FusedConv' must be an integer >= 0, got True.",
        ),
        ({"": 1}, "marker: graph: op type names must be non-empty strings, got ''."),
        (
            {"X": -(10**5000)},
            "marker: graph: the count pinned for 'X' must be an integer >= 0, got <int too large to show>.",
        ),
    ],
)
def test_bad_graph_thresholds_are_usage_errors_naming_where(value: object, expected: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_graph_threshold(value, source="marker: graph")
    assert str(info.value) == expected


def test_more_fused_nodes_of_a_grown_model_are_not_called_gained_fusions() -> None:
    """Added layers of the same kind (49 -> 65 Gemm, nothing unfused went away): the model grew, ORT
    fused nothing new; the message says that, not "gained fusions"."""
    grown = GraphFigures(
        ops={"com.microsoft:FusedConv": 9, "Identity": 1},
        fused={"com.microsoft:FusedConv": 9},
        providers={"CPUExecutionProvider": 10},
        digest="c" * 64,
    )
    diff = GraphDiff(FUSED, grown)
    assert diff.gained_fusions() == []
    assert diff.grown_fusions() == ["FusedConv 3 -> 9"]
    assert "more fused nodes as the model grew (no unfused part went away): FusedConv 3 -> 9" in diff.lines()
    assert not any(line.startswith("gained fusions") for line in diff.lines())
