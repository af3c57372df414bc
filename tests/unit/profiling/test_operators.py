"""Operator-level profiles and the explanation of what changed between two."""

from __future__ import annotations

import json

import pytest

from pytest_ortperf.profiling.operators import OpProfile, explain, op_profile
from pytest_ortperf.profiling.trace import OpTime, ProfileSummary


def _summary(runs: int, nodes: list[tuple[str, str, str, int]]) -> ProfileSummary:
    by_node = tuple(OpTime(name, us, runs, op, provider) for name, op, provider, us in nodes)
    ops: dict[str, int] = {}
    for _, op, _, us in nodes:
        ops[op] = ops.get(op, 0) + us
    by_op = tuple(OpTime(op, us, runs) for op, us in ops.items())
    return ProfileSummary(runs, sum(ops.values()), sum(ops.values()), by_op, by_node, ())


def test_op_profile_is_per_run_and_counts_nodes_per_op() -> None:
    profile = op_profile(
        _summary(2, [("a", "Conv", "CPU", 400), ("b", "Conv", "CPU", 200), ("c", "Relu", "CPU", 20)])
    )
    assert profile.ops == {"Conv": (300.0, 2), "Relu": (10.0, 1)}
    assert profile.nodes["a"] == ("Conv", "CPU", 200.0)


def test_round_trip_through_json() -> None:
    profile = OpProfile(3, {"MatMul": (12.5, 4)}, {"mm0": ("MatMul", "CUDAExecutionProvider", 3.25)})
    assert OpProfile.from_dict(json.loads(json.dumps(profile.as_dict()))) == profile


@pytest.mark.parametrize("damage", [[], {"runs": 1}, {"runs": 1, "ops": {"X": {"us": "fast"}}, "nodes": {}}])
def test_damaged_profiles_are_refused(damage: object) -> None:
    with pytest.raises((TypeError, KeyError, ValueError)):
        OpProfile.from_dict(damage)


def test_explain_names_growth_provider_moves_and_lost_fusions() -> None:
    before = OpProfile(
        5,
        {"FusedConv": (900.0, 2), "Relu": (10.0, 1)},
        {
            "c1": ("FusedConv", "CUDAExecutionProvider", 500.0),
            "c2": ("FusedConv", "CUDAExecutionProvider", 400.0),
        },
    )
    after = OpProfile(
        5,
        {"Conv": (1500.0, 2), "Relu": (60.0, 3)},
        {"c1": ("Conv", "CPUExecutionProvider", 900.0), "c2": ("Conv", "CUDAExecutionProvider", 600.0)},
    )
    lines = explain(before, after)
    # Each with its share of the growth: Conv's 1.5 ms and Relu's 0.05 ms of the 1.55 ms that grew.
    assert lines[0] == (
        "op types whose time grew most: Conv 0.000 -> 1.500 ms/run (new, 97% of the change), "
        "Relu 0.010 -> 0.060 ms/run (+500%, 3% of the change)"
    )
    assert lines[1].startswith(
        "nodes whose time grew most: c1 0.500 -> 0.900 ms/run (+80%, 67% of the change), c2 0.400 -> 0.600"
    )
    assert lines[2] == "nodes that changed provider: c1 CUDAExecutionProvider -> CPUExecutionProvider"
    assert (
        lines[3]
        == "node count per op type changed after optimization: Conv 0 -> 2, FusedConv 2 -> 0, Relu 1 -> 3"
    )
    # A lost fusion: the time its op type had moved to the op types that came back in its place.
    assert lines[4] == (
        "time moved from FusedConv (2 -> 0 nodes, -0.900 ms/run) to Conv (0 -> 2 nodes, +1.500 ms/run), "
        "Relu (1 -> 3 nodes, +0.050 ms/run): net +0.650 ms/run"
    )


def test_identical_profiles_explain_nothing() -> None:
    profile = OpProfile(1, {"Add": (5.0, 1)}, {"add": ("Add", "CPUExecutionProvider", 5.0)})
    assert explain(profile, profile) == []


def test_noise_beside_the_real_growth_is_not_listed() -> None:
    from pytest_ortperf.profiling.operators import OpProfile, explain

    before = OpProfile(runs=5, ops={"MatMul": (100.0, 8), "Relu": (10.0, 1)}, nodes={})
    after = OpProfile(runs=5, ops={"MatMul": (900.0, 32), "Relu": (13.0, 1)}, nodes={})
    (grown, counts) = explain(before, after)
    assert grown.startswith("op types whose time grew most: MatMul")
    assert "Relu" not in grown
    assert counts == "node count per op type changed after optimization: MatMul 8 -> 32"


def test_new_nodes_are_listed_even_when_each_is_a_small_share_of_the_growth() -> None:
    old = {f"mm{i}": ("MatMul", "CPUExecutionProvider", 4.0) for i in range(8)}
    new = {f"mm{i}": ("MatMul", "CPUExecutionProvider", 4.0) for i in range(32)}  # 24 new, ~4% of growth each
    before = OpProfile(5, {"MatMul": (32.0, 8)}, {**old, "relu": ("Relu", "CPUExecutionProvider", 1.0)})
    after = OpProfile(5, {"MatMul": (128.0, 32)}, {**new, "relu": ("Relu", "CPUExecutionProvider", 1.1)})
    (nodes,) = [line for line in explain(before, after) if line.startswith("nodes whose time grew most")]
    assert "mm10 0.000 -> 0.004 ms/run (new, " in nodes
    assert "relu" not in nodes


def test_profiles_of_one_side_taken_in_turn_keep_each_op_types_and_nodes_fastest() -> None:
    from pytest_ortperf.profiling.operators import fastest

    slow = OpProfile(
        5, {"MatMul": (90.0, 8), "Relu": (10.0, 8)}, {"mm0": ("MatMul", "CPUExecutionProvider", 12.0)}
    )
    quick = OpProfile(
        5, {"MatMul": (50.0, 8), "Relu": (11.0, 8)}, {"mm0": ("MatMul", "CPUExecutionProvider", 7.0)}
    )
    both = fastest(slow, quick)
    assert both.ops == {"MatMul": (50.0, 8), "Relu": (10.0, 8)}
    assert both.nodes == {"mm0": ("MatMul", "CPUExecutionProvider", 7.0)}
    assert both.runs == 10


def test_one_pre_empted_run_among_five_does_not_make_a_small_op_type_the_one_that_grew() -> None:
    from pytest_ortperf.profiling.operators import explain, typical

    def run(matmul: float, relu: float) -> OpProfile:
        return OpProfile(
            1,
            {"MatMul": (matmul, 8), "Relu": (relu, 1)},
            {
                "mm0": ("MatMul", "CPUExecutionProvider", matmul),
                "relu": ("Relu", "CPUExecutionProvider", relu),
            },
        )

    before = typical(*(run(40.0, 1.0) for _ in range(5)))
    # Four times the MatMul time; one of five runs had its Relu pre-empted for 400 us.
    after = typical(run(160.0, 1.0), run(161.0, 1.0), run(160.0, 401.0), run(159.0, 1.0), run(160.0, 1.0))
    assert after.ops == {"MatMul": (160.0, 8), "Relu": (1.0, 1)}
    assert after.nodes["relu"][2] == 1.0
    assert after.runs == 5
    # A mean over the same runs would list Relu: 80 of some 200 us of growth.
    (grown, *_) = explain(before, after)
    assert "MatMul" in grown
    assert "Relu" not in grown
    # An even number of runs: the middle two's mean.
    assert typical(run(2.0, 1.0), run(4.0, 3.0)).ops == {"MatMul": (3.0, 8), "Relu": (2.0, 1)}
