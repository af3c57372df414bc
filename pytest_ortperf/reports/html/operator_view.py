"""Two operator profiles side by side: time per run by op type and by provider as bars, and the nodes
whose time grew. A profiled test's section draws its runs against its baseline's profile; a failed
latency check draws the profiles its explanation compared."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from pytest_ortperf.reports.html import svg
from pytest_ortperf.reports.html.fields import MAX_BARS, figure

MAX_NODES_GREW = 10
GREW = 1.10  # a node "grew" by more than this factor (or is new): smaller changes are run-to-run noise

Bars = list[tuple[str, float | None, float | None]]


def operator_comparison(
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any],
    *,
    sides: tuple[str, str],
    after_providers: Mapping[str, float] | None = None,
) -> str:
    """``before`` and ``after`` as a profile keeps them (``{"ops": {op: {"us", "nodes"}}, "nodes":
    {name: {"op", "provider", "us"}}}``, per run); ``after_providers``: the after side's exact time per
    provider, where known (else summed over the nodes a profile keeps, its slowest)."""
    now_ops, before_ops = _op_us(after.get("ops")), _op_us(before.get("ops")) if before else {}
    names = sorted(
        set(now_ops) | set(before_ops), key=lambda op: -max(now_ops.get(op, 0.0), before_ops.get(op, 0.0))
    )
    by_op: Bars = [
        (op, before_ops[op] / 1000 if op in before_ops else None, now_ops.get(op, 0.0) / 1000)
        for op in names[:MAX_BARS]
    ]
    now_providers = dict(after_providers) if after_providers is not None else _provider_us(after.get("nodes"))
    before_providers = _provider_us(before.get("nodes")) if before else {}
    by_provider: Bars = [
        (
            name,
            before_providers[name] / 1000 if name in before_providers else None,
            now_providers.get(name, 0.0) / 1000,
        )
        for name in sorted(set(now_providers) | set(before_providers))
    ]
    hidden = f"; {len(names) - MAX_BARS} more op types" if len(names) > MAX_BARS else ""
    charts = figure(
        svg.paired_bars(by_op, sides=sides, unit="ms/run"), f"Time per run by op type{hidden}."
    ) + figure(svg.paired_bars(by_provider, sides=sides, unit="ms/run"), "Time per run by provider.")
    grew = _nodes_grew(before.get("nodes") if before else None, after.get("nodes"))
    if grew:
        rows = "".join(
            f"<tr><td class='mono'>{escape(n)}</td><td>{escape(op)}</td><td>{escape(p)}</td>"
            f"<td class='num'>{b / 1000:.3f} ms</td><td class='num'>{a / 1000:.3f} ms</td>"
            f"<td class='num'>{'new' if b <= 0 else f'{a / b - 1:+.0%}'}</td></tr>"
            for n, op, p, b, a in grew
        )
        table = (
            "<p>nodes whose time grew most (by more than 10%; a few percent is run-to-run noise):</p>"
            f"<table><thead><tr><th>node</th><th>op</th><th>provider</th><th>{escape(sides[0])}</th>"
            f"<th>{escape(sides[1])}</th><th>change</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    elif before:
        table = f"<p class='muted'>No node's time grew against the {escape(sides[0])} profile.</p>"
    else:
        table = ""
    return f"<div class='charts'>{charts}</div>{table}"


def _op_us(ops: object) -> dict[str, float]:
    if not isinstance(ops, Mapping):
        return {}
    return {
        str(op): float(v["us"])
        for op, v in ops.items()
        if isinstance(v, Mapping) and isinstance(v.get("us"), (int, float))
    }


def _provider_us(nodes: object) -> dict[str, float]:
    """Time per provider summed over the nodes a profile keeps (its slowest)."""
    totals: dict[str, float] = {}
    if isinstance(nodes, Mapping):
        for node in nodes.values():
            if isinstance(node, Mapping) and isinstance(node.get("us"), (int, float)):
                provider = str(node.get("provider", "?"))
                totals[provider] = totals.get(provider, 0.0) + float(node["us"])
    return totals


def _nodes_grew(before: object, after: object) -> list[tuple[str, str, str, float, float]]:
    """(node, op, provider, before us, after us) of the nodes whose time grew most."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return []
    rows = []
    for name, node in after.items():
        if not isinstance(node, Mapping) or not isinstance(node.get("us"), (int, float)):
            continue
        was = before.get(name)
        was_us = (
            float(was["us"]) if isinstance(was, Mapping) and isinstance(was.get("us"), (int, float)) else 0.0
        )
        if float(node["us"]) > was_us * GREW:
            rows.append(
                (str(name), str(node.get("op", "")), str(node.get("provider", "")), was_us, float(node["us"]))
            )
    rows.sort(key=lambda row: row[3] - row[4])
    return rows[:MAX_NODES_GREW]
