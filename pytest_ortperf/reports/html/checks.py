"""The built-in check kinds' figures on the page: one function a kind, from its record to HTML, named
by the kind's declaration (``CheckKind.drawing``, ``kinds/latency.py``), as a plugin's kind names its
own; a kind without one gets :func:`draw_common`: its common fields, figures and notes. A contract's
record (``check_contracts()``: not a kind) is drawn by :func:`draw_contract`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Any

from pytest_ortperf.accuracy.metrics import TOLERANCE_BIN
from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.graph.diff import MODEL_OP_CHANGED, GraphDiff
from pytest_ortperf.graph.figures import GraphFigures, short
from pytest_ortperf.reports.html import svg
from pytest_ortperf.reports.html.fields import MAX_BARS, as_number, counts, figure, floats, short_number
from pytest_ortperf.reports.html.operator_view import operator_comparison


def draw_latency(fields: Mapping[str, Any]) -> str:
    record = CheckRecord.of(fields)
    current = record.current or {}
    now = floats(current.get("round_medians_ms"))
    reference, baseline = record.reference, record.baseline
    sides: list[tuple[str, Sequence[float]]] = []
    marks: list[tuple[str, float]] = []
    before: list[float] = []
    if reference is not None:
        before = floats(reference.get("round_medians_ms"))
        sides.append((str(reference.get("label") or "reference"), before))
    elif baseline is not None:
        before = floats(baseline.get("round_medians_ms"))
        sides.append((f"baseline {baseline.get('recorded', '')}".strip(), before))
        median = as_number(baseline.get("median_ms"))
        if not before and median is not None and math.isfinite(median):
            marks.append(("baseline median", median))
    sides.append(("current", now))
    charts = []
    if now or before:
        charts.append(
            figure(
                svg.distributions(sides, unit="ms", marks=marks),
                "Round medians of each side (dots), their quartiles (box) and median.",
            )
        )
    change = record.estimate
    if change is not None:
        ratio, low, high = (as_number(change.get(k)) for k in ("ratio", "low", "high"))
        threshold = as_number(change.get("threshold")) or 0.0
        if ratio is not None and low is not None and high is not None:
            paired = (
                [c / b for c, b in zip(now, before, strict=True) if b > 0]
                if record.mode == "a/b" and len(now) == len(before)
                else []
            )
            confidence = as_number(change.get("confidence"))
            charts.append(
                figure(
                    svg.interval(
                        value=ratio,
                        low=low,
                        high=high,
                        band=(1 / (1 + threshold), 1 + threshold),
                        points=paired,
                        failed=record.failed,
                    ),
                    f"Current / reference: {'paired round ratios (dots), ' if paired else ''}"
                    f"the {confidence:.1%} interval (bar) and estimate; the band is the threshold "
                    f"(±{threshold:.0%})."
                    if confidence is not None
                    else "Current / reference against the threshold band.",
                )
            )
    drawn = _inputs(record) + (f'<div class="charts">{"".join(charts)}</div>' if charts else "")
    operators = record.operators
    if operators is not None and isinstance(operators.get("after"), Mapping):
        earlier = operators.get("before")
        source = str(operators.get("source") or "")
        drawn += f"<h3>At operator level ({escape(source)})</h3>" + _profiled_not_timed(record)
        drawn += operator_comparison(
            earlier if isinstance(earlier, Mapping) else None,
            operators["after"],
            sides=("reference", "current"),
        )
    return drawn


def _profiled_not_timed(record: CheckRecord) -> str:
    """Why the profile's totals need not match the verdict's change: they come from other runs."""
    basis = record.decided_by.strip()
    statistic = f" ({escape(basis)})" if basis else ""
    return (
        "<p class='muted profiled-note'>These totals come from profiled runs: each side run again on a "
        "profiling session after the timing, its nodes' times summed per run. They show where the time "
        "went, not how much it changed: the verdict's change was read from the timed runs, which no "
        f"profiler slowed, by the statistic that decided{statistic}; the two can differ, even in "
        "direction.</p>"
    )


def _inputs(record: CheckRecord) -> str:
    """What the check was fed (``inputs`` of its record), so that a reader sees what was measured."""
    shapes = record.inputs
    if not shapes:
        return ""
    fed = ", ".join(f"<code>{escape(f'{name} {shape}')}</code>" for name, shape in shapes.items())
    source = record.inputs_source
    return f"<p>Inputs fed{f' ({escape(source)})' if source else ''}: {fed}</p>"


def draw_graph(fields: Mapping[str, Any]) -> str:
    record = CheckRecord.of(fields)
    current, reference = record.current, record.reference
    if current is None:
        return ""
    now = counts(current.get("ops"))
    before = counts(reference.get("ops")) if isinstance(reference, Mapping) else {}
    names = sorted(
        set(now) | set(before),
        key=lambda op: (now.get(op) == before.get(op), -max(now.get(op, 0), before.get(op, 0)), op),
    )
    label = _op_labels(names)
    rows: list[tuple[str, float | None, float | None]] = [
        (label[op], float(before[op]) if op in before else (0.0 if before else None), float(now.get(op, 0)))
        for op in names[:MAX_BARS]
    ]
    side = str(reference.get("label") or "reference") if isinstance(reference, Mapping) else "reference"
    parts = []
    diff = _graph_diff(reference, current, optimized=not _at_level_disabled(record.variant))
    if diff is not None:
        lost, gained = diff.lost_fusions(), diff.gained_fusions()
        placement = diff.placement_changes()
        items = [f'<li class="lost">lost fusion: {escape(x)}</li>' for x in lost]
        items += [f'<li class="lost">{MODEL_OP_CHANGED}: {escape(x)}</li>' for x in diff.model_op_changes()]
        items += [f'<li class="gained">gained fusion: {escape(x)}</li>' for x in gained]
        items += [
            f'<li class="gained">more fused nodes as the model grew: {escape(x)}</li>'
            for x in diff.grown_fusions()
        ]
        items += [f'<li class="lost">{escape(x)}</li>' for x in placement]
        if not items:
            items = [f"<li>{'same graph' if diff.same else escape(diff.text())}</li>"]
        parts.append(f"<ul>{''.join(items)}</ul>")
    more = len(names) - MAX_BARS
    hidden = f"; {more} more op types not shown" if more > 0 else ""
    caption = f"Nodes per op type after optimization, changed ones first{hidden}."
    parts.append(
        '<div class="charts">'
        + figure(svg.paired_bars(rows, sides=(side, "current"), unit="nodes"), caption)
        + "</div>"
    )
    providers = counts(current.get("providers"))
    if providers:
        placed = ", ".join(f"{name} {count}" for name, count in sorted(providers.items()))
        parts.append(
            f"<p class='muted'>placement: {escape(placed)}; off the requested provider "
            f"{escape(str(current.get('off_provider', 0)))}, "
            f"copy nodes {escape(str(current.get('copies', 0)))}</p>"
        )
    return "".join(parts)


def _op_labels(ops: Sequence[str]) -> dict[str, str]:
    """Each op type as the terminal names it (``nchwc:Conv``, ``FusedConv``, ``Conv``: graph.figures.short),
    so that the three NCHWc ops do not all read ``com.microsoft.nchwc…``; where two would read the
    same (``com.microsoft:Gelu`` beside ``Gelu``), both keep their domain."""
    shortened = {op: short(op) for op in ops}
    seen = Counter(shortened.values())
    return {op: name if seen[name] == 1 else op for op, name in shortened.items()}


def _at_level_disabled(variant: str) -> bool:
    """Whether a variant id (``cpu-disabled``, ``cuda-disabled-int8-dynamic``) names level disabled."""
    return "disabled" in variant.split("-")[1:]


def _graph_diff(reference: object, current: Mapping[str, Any], *, optimized: bool = True) -> GraphDiff | None:
    if not isinstance(reference, Mapping):
        return None
    try:
        before = GraphFigures.from_dict({k: v for k, v in reference.items() if k != "label"})
        after = GraphFigures.from_dict(current)
    except (KeyError, TypeError, ValueError):
        return None
    return GraphDiff(before, after, optimized=optimized)


def _comparisons(record: CheckRecord) -> str:
    rows = []
    for c in record.comparisons:
        verdict = str(c.get("verdict", ""))
        state = "failed" if verdict in ("regression", "failed") else "ok" if verdict == "ok" else "warn"
        rows.append(
            f"<tr><td>{escape(str(c.get('figure', '')))}</td>"
            f"<td class='num'>{escape(_amount(c.get('before'), c.get('unit')))}</td>"
            f"<td class='num'>{escape(_amount(c.get('after'), c.get('unit')))}</td>"
            f"<td>{escape(str(c.get('text', '')))}</td><td>{escape(str(c.get('limit', '')))}</td>"
            f"<td class='v-{state}'>{escape(verdict)}</td></tr>"
        )
    if not rows:
        return ""
    return (
        "<table><thead><tr><th>figure</th><th>reference</th><th>current</th><th>change</th><th>limit</th>"
        f"<th>verdict</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _amount(value: object, unit: object) -> str:
    number = as_number(value)
    if number is None:
        return "-"
    if unit == "bytes":
        for size, name in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
            if abs(number) >= size:
                return f"{number / size:.3g} {name}"
        return f"{number:.0f} B"
    return f"{number:.4g} {unit or ''}".strip()


def draw_memory(fields: Mapping[str, Any]) -> str:
    record = CheckRecord.of(fields)
    parts = [_comparisons(record)]
    current, reference = record.current, record.reference
    if current is not None:
        now = counts(current.get("nodes"))
        before = counts(reference.get("nodes")) if isinstance(reference, Mapping) else {}
        names = sorted(set(now) | set(before), key=lambda n: -max(now.get(n, 0), before.get(n, 0)))
        if names:
            rows: list[tuple[str, float | None, float | None]] = [
                (n, before[n] / 1024 if n in before else None, now[n] / 1024 if n in now else None)
                for n in names[:MAX_BARS]
            ]
            more = len(names) - MAX_BARS
            parts.append(
                '<div class="charts">'
                + figure(
                    svg.paired_bars(rows, sides=("reference", "current"), unit="KiB"),
                    f"Memory per node (KiB), largest first{f'; {more} more nodes' if more > 0 else ''}.",
                )
                + "</div>"
            )
    return "".join(parts)


def draw_startup(fields: Mapping[str, Any]) -> str:
    record = CheckRecord.of(fields)
    parts = [_comparisons(record)]
    current, reference = record.current, record.reference
    charts = []
    for key, name in (("create_ms", "session creation"), ("first_run_ms", "first run")):
        now = floats(current.get(key)) if isinstance(current, Mapping) else []
        before = floats(reference.get(key)) if isinstance(reference, Mapping) else []
        if now or before:
            charts.append(
                figure(
                    svg.distributions([("reference", before), ("current", now)], unit="ms"),
                    f"{name}: one dot per fresh process",
                )
            )
    if charts:
        parts.append(f'<div class="charts">{"".join(charts)}</div>')
    return "".join(parts)


_BIN_LABELS = ("<1e-4", "1e-4", "1e-3", "0.01", "0.1", "1", "10", "100", "≥1e3")


def draw_accuracy(fields: Mapping[str, Any]) -> str:
    parts = []
    for reference in CheckRecord.of(fields).references:
        label = str(reference.get("reference", "reference"))
        note = f" ({reference['note']})" if reference.get("note") else ""
        outputs = [o for o in reference.get("outputs") or [] if isinstance(o, Mapping)]
        parts.append(f"<h3>against {escape(label)}{escape(note)}</h3>")
        if outputs:
            parts.append(_output_table(outputs))
        charts = [chart for chart in (_error_chart(o) for o in outputs) if chart]
        if charts:
            parts.append(f'<div class="charts">{"".join(charts)}</div>')
        worst = [w for w in (_worst_table(o) for o in outputs) if w]
        parts += worst
    return "".join(parts)


def _output_table(outputs: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for o in outputs:
        ok = bool(o.get("ok"))
        state = "ok" if ok else "failed"
        result = "ok" if ok else f"failed: {o.get('failed_metric') or o.get('problem')}"
        if o.get("not_compared"):
            state, result = "warn", f"not compared: {o.get('not_compared')}"
        elif ok and o.get("whole_output_not_judged"):
            result = f"ok (cosine and SQNR not judged: {o.get('whole_output_not_judged')})"
        tolerance = o.get("tolerance") or {}
        cosine, sqnr = as_number(o.get("cosine")), as_number(o.get("sqnr_db"))
        count = int(as_number(o.get("count")) or 0)
        mismatches = int(as_number(o.get("mismatches")) or 0)
        rows.append(
            f"<tr><td class='mono'>{escape(str(o.get('name', '')))}</td>"
            f"<td class='num'>{short_number(o.get('max_abs'))}</td>"
            f"<td class='num'>{short_number(o.get('mean_abs'))}</td>"
            f"<td class='num'>{mismatches} of {count}</td>"
            f"<td class='num'>{'-' if cosine is None else f'{cosine:.6f}'}</td>"
            f"<td class='num'>{'-' if sqnr is None else f'{sqnr:.1f} dB'}</td>"
            f"<td>{escape(_tolerance_text(tolerance))}</td><td class='v-{state}'>{escape(result)}</td></tr>"
        )
    return (
        "<table><thead><tr><th>output</th><th>max abs</th><th>mean abs</th><th>outside tolerance</th>"
        "<th>cosine</th><th>SQNR</th><th>tolerance</th><th>result</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _tolerance_text(tolerance: object) -> str:
    if not isinstance(tolerance, Mapping):
        return ""
    names = ("atol", "rtol", "cosine", "mismatch", "sqnr")
    return ", ".join(
        f"{n} {tolerance[n]:g}"
        for n in names
        if isinstance(tolerance.get(n), (int, float)) and (tolerance[n] or n == "atol")
    )


def _error_chart(output: Mapping[str, Any]) -> str:
    spread = output.get("against_tolerance")
    if not isinstance(spread, Mapping):
        return ""
    counts = [int(c) for c in spread.get("counts", []) if isinstance(c, int)]
    if not counts or (not any(counts[1:]) and not as_number(output.get("max_abs"))):
        return ""  # every element exact: nothing to draw
    labels = list(_BIN_LABELS[: len(counts)])
    return figure(
        svg.histogram(
            counts, labels, marker=float(TOLERANCE_BIN), marker_label="tolerance", bad_from=TOLERANCE_BIN
        ),
        f"{output.get('name')}: elements by error / (atol + rtol·|expected|); right of the line is "
        "outside the tolerance.",
    )


def _worst_table(output: Mapping[str, Any]) -> str:
    worst = [w for w in output.get("worst_elements") or [] if isinstance(w, Mapping)]
    if not worst or output.get("ok"):
        return ""
    rows = "".join(
        f"<tr><td class='mono'>{escape(str(w.get('index')))}</td>"
        f"<td class='num'>{short_number(w.get('actual'))}</td>"
        f"<td class='num'>{short_number(w.get('expected'))}</td></tr>"
        for w in worst
    )
    return (
        f"<p>worst elements of <code>{escape(str(output.get('name')))}</code>:</p>"
        f"<table><thead><tr><th>index</th><th>actual</th><th>expected</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def draw_contract(fields: Mapping[str, Any]) -> str:
    record = CheckRecord.of(fields)
    contract = record.contract or {}
    speedup = record.speedup
    parts = [
        f"<p>{escape(str(contract.get('kind', '')).replace('_', ' '))} "
        f"<b>{escape(str(contract.get('other', '')))}</b>, "
        f"bound {escape(str(contract.get('bound', '')))} ({escape(str(contract.get('source', '')))})</p>"
    ]
    if speedup is not None:
        value, low, high = (as_number(speedup.get(k)) for k in ("value", "low", "high"))
        bound = as_number(contract.get("bound"))
        if value is not None and low is not None and high is not None and bound is not None:
            parts.append(
                '<div class="charts">'
                + figure(
                    svg.interval(
                        value=value,
                        low=low,
                        high=high,
                        band=(bound, math.inf),
                        failed=record.failed,
                        label="speedup over the other variant",
                    ),
                    f"Speedup: interval over {speedup.get('rounds')} paired rounds; the band is what the "
                    f"contract allows (≥ {bound:g}x).",
                )
                + "</div>"
            )
    agreement = record.agreement
    if agreement is not None:
        parts.append(f"<p>agreement {agreement:.2%}</p>")
    return "".join(parts)


def draw_common(record: Mapping[str, Any]) -> str:
    """A kind without a drawing of its own (one a plugin registered): the common fields of its record,
    what it compared with, measured and decided, its figures and its notes."""
    typed = CheckRecord.of(record)
    change = typed.change if typed.get("change_text") else ""
    rows = [
        (label, text)
        for label, text in (("path", typed.path), ("measured", typed.summary), ("change", change))
        if text
    ]
    figures = typed.figures
    if figures is not None:
        rows += [(str(name), _figure_text(value)) for name, value in figures.items()]
    parts = []
    if rows:
        cells = "".join(f"<dt>{escape(name)}</dt><dd>{escape(text)}</dd>" for name, text in rows)
        parts.append(f'<dl class="facts">{cells}</dl>')
    notes = typed.notes
    if notes:
        parts.append("<ul>" + "".join(f"<li>{escape(note)}</li>" for note in notes) + "</ul>")
    return "".join(parts)


def _figure_text(value: object) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{name}: {_figure_text(item)}" for name, item in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_figure_text(item) for item in value)
    return str(value)


Drawing = Callable[[Mapping[str, Any]], str]
