"""The profiled tests (``ort_profile``): time by op type and provider against the baseline's profile,
and the nodes that grew."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from functools import partial
from html import escape
from typing import Any

from pytest_ortperf.reports.html import svg
from pytest_ortperf.reports.html.fields import MAX_BARS, as_number, figure, guarded, objects
from pytest_ortperf.reports.html.jobs import Job, PageCheck

MAX_NODES_GREW = 10


GREW = 1.10  # a node "grew" by more than this factor (or is new): smaller changes are run-to-run noise


def profile_anchor(job: str, test: str) -> str:
    """A stable anchor for a profiled test: the same on every rendering of the same report."""
    return "p-" + hashlib.sha1(f"{job}\0{test}".encode()).hexdigest()[:12]


def profiles_section(jobs: Sequence[Job], checks: Sequence[PageCheck]) -> str:
    merged = len(jobs) > 1
    baselines: dict[tuple[str, str], Mapping[str, Any]] = {}
    for check in checks:
        baseline = check.record.get("baseline")
        if (
            check.record.get("kind") == "latency"
            and isinstance(baseline, Mapping)
            and isinstance(baseline.get("profile"), Mapping)
        ):
            baselines[(check.job, str(check.record["test"]))] = baseline["profile"]
    sections = []
    for job in jobs:
        label = job.label if merged else ""
        for profile in objects(job.document.get("profiles")):
            if not isinstance(profile, Mapping):
                continue
            test = str(profile.get("test", "?"))
            baseline = baselines.get((label, test))
            drawn = guarded(partial(_profile, label, test, profile, baseline), f"the profile of {test}")
            sections.append(drawn)
    body = (
        "".join(sections) or "<p class='muted'>No profiled test (mark one with <code>ort_profile</code>).</p>"
    )
    return f'<section id="profiles"><h2>Profiled tests</h2>{body}</section>'


def _profile(job: str, test: str, profile: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> str:
    now = profile.get("profile") or {}
    now_ops = _op_us(now.get("ops") if isinstance(now, Mapping) else None)
    before_ops = _op_us(baseline.get("ops")) if baseline else {}
    names = sorted(
        set(now_ops) | set(before_ops), key=lambda op: -max(now_ops.get(op, 0.0), before_ops.get(op, 0.0))
    )
    rows: list[tuple[str, float | None, float | None]] = [
        (op, before_ops[op] / 1000 if op in before_ops else None, now_ops.get(op, 0.0) / 1000)
        for op in names[:MAX_BARS]
    ]
    providers_now = {
        str(k): float(v) for k, v in (profile.get("providers") or {}).items() if isinstance(v, (int, float))
    }
    providers_before = _provider_us(baseline.get("nodes")) if baseline else {}
    provider_rows: list[tuple[str, float | None, float | None]] = [
        (
            name,
            providers_before[name] / 1000 if name in providers_before else None,
            providers_now.get(name, 0.0) / 1000,
        )
        for name in sorted(set(providers_now) | set(providers_before))
    ]
    side = "baseline" if baseline else "no baseline profile"
    charts = [
        figure(svg.paired_bars(rows, sides=(side, "current"), unit="ms/run"), "Time per run by op type."),
        figure(
            svg.paired_bars(provider_rows, sides=(side, "current"), unit="ms/run"),
            "Time per run by provider.",
        ),
    ]
    grew = _nodes_grew(
        baseline.get("nodes") if baseline else None, now.get("nodes") if isinstance(now, Mapping) else None
    )
    table = ""
    if grew:
        table = (
            "<p>nodes whose time grew most (by more than 10%; a few percent is run-to-run noise):</p>"
            "<table><thead><tr><th>node</th><th>op</th><th>provider</th>"
            "<th>baseline</th><th>current</th><th>change</th></tr></thead><tbody>"
            + "".join(
                f"<tr><td class='mono'>{escape(n)}</td><td>{escape(op)}</td><td>{escape(p)}</td>"
                f"<td class='num'>{b / 1000:.3f} ms</td><td class='num'>{a / 1000:.3f} ms</td>"
                f"<td class='num'>{'new' if b <= 0 else f'{a / b - 1:+.0%}'}</td></tr>"
                for n, op, p, b, a in grew
            )
            + "</tbody></table>"
        )
    elif baseline:
        table = "<p class='muted'>No node's time grew against the baseline's profile.</p>"
    fallback = profile.get("fallback_nodes") or []
    notes = (
        f"<p class='lost'>nodes that fell back to another provider: "
        f"{escape(', '.join(map(str, fallback)))}</p>"
        if fallback
        else ""
    )
    runs = profile.get("runs")
    per_run = as_number(profile.get("run_ms"))
    head = f"{runs} profiled runs" + (f", {per_run:.3f} ms per run" if per_run is not None else "")
    title = f"{test}{' · ' + job if job else ''}"
    return (
        f'<details class="check" id="{profile_anchor(job, test)}"><summary>'
        f'<span class="mono">{escape(title)}</span> · {escape(head)}</summary><div class="body">'
        f"<div class='charts'>{''.join(charts)}</div>{table}{notes}</div></details>"
    )


def _op_us(ops: object) -> dict[str, float]:
    if not isinstance(ops, Mapping):
        return {}
    return {
        str(op): float(v["us"])
        for op, v in ops.items()
        if isinstance(v, Mapping) and isinstance(v.get("us"), (int, float))
    }


def _provider_us(nodes: object) -> dict[str, float]:
    """A baseline profile's time per provider, summed over the nodes it keeps (its slowest)."""
    totals: dict[str, float] = {}
    if isinstance(nodes, Mapping):
        for node in nodes.values():
            if isinstance(node, Mapping) and isinstance(node.get("us"), (int, float)):
                totals[str(node.get("provider", "?"))] = totals.get(
                    str(node.get("provider", "?")), 0.0
                ) + float(node["us"])
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
