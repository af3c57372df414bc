"""The trade-off view per model: each variant by latency and accuracy error, contracts marked,
beside the trade-off table (``reports/tradeoffs.py``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from html import escape

from pytest_ortperf.reports.html import svg
from pytest_ortperf.reports.html.fields import DAMAGE, checks_of, damaged, figure, guarded
from pytest_ortperf.reports.html.jobs import Job
from pytest_ortperf.reports.tradeoffs import HEADERS, TradeoffTable, cells, tradeoff_tables

SHAPES = ("circle", "square", "triangle", "diamond")  # svg.scatter's shape per series


EXACT = 1e-9  # 1 - cosine below this is the rounding of the cosine's own sums: drawn as exact


def tradeoffs_section(jobs: Sequence[Job], merged: bool) -> str:
    sections = []
    for job in jobs:
        label = job.label if merged else ""
        try:
            tables = tradeoff_tables(checks_of(job.document))
        except DAMAGE as exc:
            sections.append(damaged(f"the trade-offs{' of ' + label if label else ''}", exc))
            continue
        sections += [
            guarded(partial(_tradeoff, table, label), f"the trade-offs of {table.model}") for table in tables
        ]
    body = "".join(sections) or "<p class='muted'>No model ran two or more variants.</p>"
    return (
        '<section id="tradeoffs"><h2>Trade-offs per model</h2><p class="muted">Each variant '
        "(provider &times; level &times; precision) by its median latency and its accuracy error against "
        "fp32 (1 &minus; cosine, least output); a ring marks a contract, green held, red failed. "
        "A speedup is the interval of a contract that measured the pair side by side, else of the two "
        "latency checks' rounds (not interleaved).</p>"
        f"{body}</section>"
    )


def _tradeoff(table: TradeoffTable, job: str) -> str:
    points = []
    precisions: dict[str, int] = {}
    for row in table.rows:
        if row.median_ms is None or not math.isfinite(row.median_ms):
            continue
        error = 1.0 - row.cosine if row.cosine is not None and math.isfinite(row.cosine) else 0.0
        error = error if error >= EXACT else 0.0  # float rounding of a sum, not an accuracy loss
        mark = ""
        if row.contracts:
            mark = "bad" if any(text.endswith(("failed", "regression")) for text in row.contracts) else "ok"
        series = precisions.setdefault(row.precision, len(precisions))
        points.append(svg.Point(label=row.variant, x=row.median_ms, y=error, series=series, mark=mark))
    if any(point.y > 0 for point in points):
        names = sorted({(series, precision) for precision, series in precisions.items()})
        shapes = ", ".join(
            f"{shape} {precision}" for (_, precision), shape in zip(names, SHAPES, strict=False)
        )
        chart = figure(
            svg.scatter(points, x_label="median latency (ms)", y_label="1 - cosine vs fp32", log_y=True),
            f"Shapes: {shapes}. A hollow point is exact (1 - cosine below {EXACT:g}).",
        )
    elif points:  # every variant as exact as fp32: its latency is the whole trade
        bars: list[tuple[str, float | None, float | None]] = [(p.label, None, p.x) for p in points]
        chart = figure(
            svg.paired_bars(bars, sides=("", "median latency"), unit="ms"),
            "Every variant's outputs match fp32's: latency is the whole trade-off.",
        )
    else:
        chart = ""
    head = "".join(f"<th>{escape(h)}</th>" for h in HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in cells(table))
    name = f"{table.model} on {table.provider}, speedups against {table.base}" + (f" · {job}" if job else "")
    return (
        f"<h3>{escape(name)}</h3><div class='charts'>{chart}"
        f"<table style='width:auto'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )
