"""Operator-level profiles stored with latency baselines, and what changed between two of them.

When a profiled test's latency is recorded, its per-run time by op type and by
node, each node's provider and the node count per op type are stored with the
entry. When that test's latency later fails, the message names the op types
and nodes whose time grew most (fell most, for a failure on an improvement),
nodes that moved to another provider, and op types whose node count changed
after optimization (a lost fusion shows as a fused op disappearing and its parts
coming back). Against stored figures, the current profile is compared with the
stored one; side by side, with the reference's, both profiled in the same job.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_ortperf.profiling.trace import ProfileSummary

MAX_NODES = 200  # the slowest nodes kept in a baseline entry
MIN_SHARE = 0.05  # of the total growth: an op type or node growing less is not listed


@dataclass(frozen=True)
class OpProfile:
    """Per-run averages: op type -> (us, nodes); node -> (op type, provider, us)."""

    runs: int
    ops: Mapping[str, tuple[float, int]]
    nodes: Mapping[str, tuple[str, str, float]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "ops": {op: {"us": us, "nodes": count} for op, (us, count) in sorted(self.ops.items())},
            "nodes": {
                name: {"op": op, "provider": provider, "us": us}
                for name, (op, provider, us) in sorted(self.nodes.items())
            },
        }

    @classmethod
    def from_dict(cls, data: Any) -> OpProfile:
        if not isinstance(data, Mapping):
            raise TypeError("profile must be an object")
        ops = {str(op): (float(v["us"]), int(v["nodes"])) for op, v in data["ops"].items()}
        nodes = {str(n): (str(v["op"]), str(v["provider"]), float(v["us"])) for n, v in data["nodes"].items()}
        return cls(int(data["runs"]), ops, nodes)


def op_profile(summary: ProfileSummary) -> OpProfile:
    runs = max(summary.runs, 1)
    node_counts: dict[str, int] = {}
    for node in summary.by_node:
        node_counts[node.op] = node_counts.get(node.op, 0) + 1
    ops = {op.name: (op.us / runs, node_counts.get(op.name, 0)) for op in summary.by_op}
    nodes = {n.name: (n.op, n.provider, n.us / runs) for n in summary.by_node[:MAX_NODES]}
    return OpProfile(runs=summary.runs, ops=ops, nodes=nodes)


def fastest(*profiles: OpProfile) -> OpProfile:
    """Several profiles of one side as one: each op type's and node's least time per run. A profile
    taken first in a process, or while a neighbour ran, reads slow; profiling the two sides of a
    comparison in turn (A B A B) and keeping each side's fastest keeps that from deciding which side
    grew."""
    first = profiles[0]
    ops = {
        op: (min(p.ops[op][0] for p in profiles if op in p.ops), count)
        for op, (_, count) in first.ops.items()
    }
    nodes = {
        name: (op, provider, min(p.nodes[name][2] for p in profiles if name in p.nodes))
        for name, (op, provider, _) in first.nodes.items()
    }
    return OpProfile(runs=sum(p.runs for p in profiles), ops=ops, nodes=nodes)


def reads_the_other_way(before: OpProfile, after: OpProfile, *, grew: bool) -> bool:
    """Whether the profiled runs contradict a measured direction (``grew``: the measurement found the
    current side slower): the sum of every op type's time per run moved the other way. Profiled runs
    are short and untimed; a neighbour that ran through one side's turns makes that side read slow,
    and an explanation built on them would say the time went where it did not."""
    total_before = sum(us for us, _ in before.ops.values())
    total_after = sum(us for us, _ in after.ops.values())
    return total_after < total_before if grew else total_after > total_before


def typical(*runs: OpProfile) -> OpProfile:
    """Single-run profiles of one session as one: each op type's and node's median time over the runs.
    A mean lets one run that a neighbour pre-empted put microseconds into a node that took one, and on
    a small op that reads as the op type that grew; a median of five runs is moved by none."""
    first = runs[0]

    def middle(values: list[float]) -> float:
        ordered = sorted(values)
        half = len(ordered) // 2
        return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2

    ops = {
        op: (middle([r.ops.get(op, (0.0, 0))[0] for r in runs]), count)
        for op, (_, count) in first.ops.items()
    }
    nodes = {
        name: (op, provider, middle([r.nodes[name][2] if name in r.nodes else 0.0 for r in runs]))
        for name, (op, provider, _) in first.nodes.items()
    }
    return OpProfile(runs=sum(r.runs for r in runs), ops=ops, nodes=nodes)


def explain(baseline: OpProfile, current: OpProfile, *, top: int = 5, faster: bool = False) -> list[str]:
    """Lines that say what changed at operator level between two profiles: the op types and nodes
    whose time grew most or, with ``faster`` (a failure for an improvement), fell most."""
    lines = []
    recounted = {
        op for op in set(baseline.ops) | set(current.ops)
        if baseline.ops.get(op, (0.0, 0))[1] != current.ops.get(op, (0.0, 0))[1]
    }  # fmt: skip
    direction = "fell" if faster else "grew"
    op_growth = _growth(
        {op: v[0] for op, v in baseline.ops.items()},
        {op: v[0] for op, v in current.ops.items()},
        faster=faster,
    )
    node_growth = _growth(
        {n: v[2] for n, v in baseline.nodes.items()},
        {n: v[2] for n, v in current.nodes.items()},
        faster=faster,
    )
    grown = _changed(
        {op: us for op, (us, _) in baseline.ops.items()},
        {op: us for op, (us, _) in current.ops.items()},
        keep=recounted,
        faster=faster,
    )
    if grown:
        shown = ", ".join(_delta(*g, growth=op_growth) for g in grown[:top])
        lines.append(f"op types whose time {direction} most: {shown}")
    node_grown = _changed(
        {n: v[2] for n, v in baseline.nodes.items()},
        {n: v[2] for n, v in current.nodes.items()},
        # A new (or, for an improvement, a gone) node is news however small its share.
        keep=set(baseline.nodes) - set(current.nodes) if faster else set(current.nodes) - set(baseline.nodes),
        faster=faster,
    )
    if node_grown:
        shown = ", ".join(_delta(*g, growth=node_growth) for g in node_grown[:top])
        lines.append(f"nodes whose time {direction} most: {shown}")
    moved = [
        f"{name} {baseline.nodes[name][1]} -> {current.nodes[name][1]}"
        for name in sorted(set(baseline.nodes) & set(current.nodes))
        if baseline.nodes[name][1] != current.nodes[name][1]
    ]
    if moved:
        lines.append("nodes that changed provider: " + ", ".join(moved[:top]))
    counts = [
        f"{op} {baseline.ops.get(op, (0.0, 0))[1]} -> {current.ops.get(op, (0.0, 0))[1]}"
        for op in sorted(set(baseline.ops) | set(current.ops))
        if baseline.ops.get(op, (0.0, 0))[1] != current.ops.get(op, (0.0, 0))[1]
    ]
    if counts:
        lines.append("node count per op type changed after optimization: " + ", ".join(counts[: top * 2]))
    moved_line = time_moved(baseline, current, top=top)
    if moved_line:
        lines.append(moved_line)
    return lines


def time_moved(baseline: OpProfile, current: OpProfile, *, top: int = 5) -> str:
    """Where a lost (or a new) fusion moved the time: from the op types that lost nodes to those that
    gained them, with the net change, e.g. 'time moved from LayerNormalization (6 -> 0 nodes,
    -0.300 ms/run) to ReduceMean (0 -> 12 nodes, +0.250 ms/run), Div (...): net +0.400 ms/run'.
    Empty when no op type both lost and another gained nodes."""

    def count(profile: OpProfile, op: str) -> int:
        return profile.ops.get(op, (0.0, 0))[1]

    def us(profile: OpProfile, op: str) -> float:
        return profile.ops.get(op, (0.0, 0))[0]

    ops = sorted(set(baseline.ops) | set(current.ops))
    lost = [op for op in ops if count(current, op) < count(baseline, op)]
    gained = [op for op in ops if count(current, op) > count(baseline, op)]
    if not lost or not gained:
        return ""

    def side(names: list[str]) -> str:
        ranked = sorted(names, key=lambda op: (-abs(us(current, op) - us(baseline, op)), op))
        return ", ".join(
            f"{op} ({count(baseline, op)} -> {count(current, op)} nodes, "
            f"{(us(current, op) - us(baseline, op)) / 1000:+.3f} ms/run)"
            for op in ranked[:top]
        )

    net = sum(us(current, op) - us(baseline, op) for op in [*lost, *gained]) / 1000
    return f"time moved from {side(lost)} to {side(gained)}: net {net:+.3f} ms/run"


def _growth(before: Mapping[str, float], after: Mapping[str, float], *, faster: bool) -> float:
    """The sum of every increase (every fall, for an improvement), in microseconds: what each op type
    or node's share of the change is a share of."""
    deltas = [after.get(name, 0.0) - before.get(name, 0.0) for name in set(before) | set(after)]
    return sum(-d for d in deltas if d < 0) if faster else sum(d for d in deltas if d > 0)


def _changed(
    before: Mapping[str, float], after: Mapping[str, float], *, keep: Collection[str] = (), faster: bool
) -> list[tuple[str, float, float]]:
    """``(name, before, after)`` of what grew most or, ``faster``, fell most, largest change first."""
    if not faster:
        return _grown(before, after, keep=keep)
    return [(name, was, now) for name, now, was in _grown(after, before, keep=keep)]


def _grown(
    before: Mapping[str, float], after: Mapping[str, float], *, keep: Collection[str] = ()
) -> list[tuple[str, float, float]]:
    rows = [(name, before.get(name, 0.0), after.get(name, 0.0)) for name in set(before) | set(after)]
    rows = [row for row in rows if row[2] > row[1]]
    total = sum(after - before for _, before, after in rows)
    # Growth that is a sliver of the whole is run-to-run noise, not what explains the regression,
    # unless the op type's node count changed too (a lost fusion).
    rows = [row for row in rows if row[2] - row[1] >= MIN_SHARE * total or row[0] in keep]
    return sorted(rows, key=lambda row: (row[1] - row[2], row[0]))


def _delta(name: str, before: float, after: float, *, growth: float = 0.0) -> str:
    """One op type or node's time before and after, and its share of the ``growth`` (us: the sum of
    every increase, or every fall for an improvement)."""
    text = f"{(after / before - 1):+.0%}" if before > 0 else "new"
    text = "gone" if after == 0 and before > 0 else text
    share = f", {abs(after - before) / growth:.0%} of the change" if growth > 0 else ""
    return f"{name} {before / 1000:.3f} -> {after / 1000:.3f} ms/run ({text}{share})"
