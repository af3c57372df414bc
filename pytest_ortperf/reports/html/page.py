"""The page as a whole: counts and run errors, the summary table, one section per check.

Each section's figures come from the drawing its kind declares (``CheckKind.drawing``, handed in by
the run or by ``ortperf report``), by the check's kind; the profiled tests and the trade-off view
follow the checks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from html import escape
from pathlib import Path
from typing import Any

from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.reports.html.assets import SCRIPT, STYLE
from pytest_ortperf.reports.html.checks import Drawing, draw_common, draw_contract
from pytest_ortperf.reports.html.fields import (
    DAMAGE,
    as_number,
    checks_of,
    damaged,
    guarded,
    listed,
    objects,
)
from pytest_ortperf.reports.html.jobs import ERROR, Job, PageCheck, job_labels
from pytest_ortperf.reports.html.profiles import profile_anchor, profiles_section
from pytest_ortperf.reports.html.tradeoff_view import tradeoffs_section
from pytest_ortperf.values import write_atomically

CONTRACT = "contract"  # a contract's record (check_contracts(): not a kind of its own)


def render_page(
    jobs: Sequence[Job], *, problems: Sequence[str] = (), drawings: Mapping[str, Drawing] | None = None
) -> str:
    """The whole page as one string: styles, script and charts inline (``drawings``: each registered
    kind's drawing, by kind, as its declaration names it; a kind without one, or not among them, is
    drawn by what its run rendered into its record, else by the common drawing)."""
    jobs = job_labels(jobs) if len(jobs) > 1 else list(jobs)
    merged = len(jobs) > 1
    checks = [
        PageCheck(anchor=f"c{n}", job=job.label if merged else "", record=CheckRecord.of(record))
        for n, (job, record) in enumerate((job, record) for job in jobs for record in checks_of(job.document))
    ]
    ordered = sorted(checks, key=lambda c: (c.state not in ("failed", ERROR), c.job, c.record.test))
    failed = sum(c.state in ("failed", ERROR) for c in checks)
    title = f"pytest-ortperf: {failed} failed of {len(checks)} checks" if checks else "pytest-ortperf"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        _header(jobs, checks, problems),
        "<main>",
        _summary(ordered, merged),
        _details(ordered, jobs, {CONTRACT: draw_contract, **(drawings or {})}),
        profiles_section(jobs, checks),
        tradeoffs_section(jobs, merged),
        "</main>",
        f"<script>{SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def write_page(
    path: Path,
    jobs: Sequence[Job],
    *,
    problems: Sequence[str] = (),
    drawings: Mapping[str, Drawing] | None = None,
) -> None:
    """Render ``jobs`` to ``path``, written whole or not at all (a page half written is never left);
    ``problems``: reports that could not be read, shown at the top."""
    text = render_page(jobs, problems=problems, drawings=drawings)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text, mode=0o644)  # a page to share, as a plain write would leave it


def _header(jobs: Sequence[Job], checks: Sequence[PageCheck], problems: Sequence[str]) -> str:
    failed = [c for c in checks if c.state == "failed"]
    errors = [c for c in checks if c.state == ERROR]
    pills = [f'<span class="pill">{len(checks)} checks</span>']
    if failed or errors:
        pills.append(f'<span class="pill bad">{len(failed)} failed</span>')
        if errors:
            pills.append(f'<span class="pill bad">{len(errors)} errors</span>')
    elif checks:
        pills.append('<span class="pill ok">all passed</span>')
    runs = []
    for job in jobs:
        doc = job.document
        facts = (
            f"machine <code>{escape(str(doc.get('machine', '?')))}</code>, "
            f"{escape(str(doc.get('onnxruntime', '?')))}, "
            f"pytest-ortperf {escape(str(doc.get('plugin_version', '?')))}"
        )
        name = f"<b>{escape(job.label)}</b>: " if job.label else ""
        runs.append(f"<div class='muted'>{name}{facts}</div>")
        runs += [
            f"<div class='runerr'>{name}run error: {escape(str(e))}</div>"
            for e in listed(doc.get("run_errors"))
        ]
        unused = listed(doc.get("unused_baselines"))
        if unused:
            runs.append(f"<div class='muted'>{name}{len(unused)} unused baseline entries</div>")
    runs += [f"<div class='runerr'>left out: {escape(problem)}</div>" for problem in problems]
    toc = "".join(
        f'<a href="#{anchor}">{text}</a>'
        for anchor, text in (
            ("summary", "summary"),
            ("checks", "checks"),
            ("profiles", "profiles"),
            ("tradeoffs", "trade-offs"),
        )
    )
    return (
        f"<header><h1>pytest-ortperf report</h1><div class='banner'>{''.join(pills)}</div>"
        f"{''.join(runs)}<nav class='toc'>{toc}</nav></header>"
    )


# What decides a row's reading comes first (verdict, check, test, change), so that it stays in the first
# screen when the long columns are cut short.
_COLUMNS = ("", "verdict", "check", "test", "variant", "change", "reference", "current", "decided by")
# Each column's share of the table's width (percent; the table has a fixed layout): the table is as
# wide as the page at any width (at 1280 px it scrolled sideways and cut "current" off), and a cell
# too long for its share ends in an ellipsis, its whole text in its tooltip.
_WIDTHS = {"": 2, "verdict": 9, "check": 7, "test": 19, "variant": 12, "change": 19, "reference": 10,
           "current": 11, "decided by": 11}  # fmt: skip
_MERGED_WIDTHS = _WIDTHS | {"test": 16, "change": 16, "decided by": 8, "job": 9}


def _summary(checks: Sequence[PageCheck], merged: bool) -> str:
    heads = [*_COLUMNS, *(["job"] if merged else [])]
    widths = _MERGED_WIDTHS if merged else _WIDTHS
    columns = "".join(f'<col style="width:{widths[h]}%">' for h in heads)
    numeric = {"reference", "current", "change"}
    head = "".join(f"<th{' data-num' if h in numeric else ''}>{escape(h)}</th>" for h in heads)
    rows = []
    for check in checks:
        r = check.record
        try:
            before, after = _sides(r)
            change_text, change_value = _change(r)
        except DAMAGE as exc:  # a damaged record still gets its row, saying so
            before, after = ("-", None), ("-", None)
            change_text, change_value = f"could not be read: {exc!r}", None
        mark = {"failed": "✗", ERROR: "✗", "warn": "?", "ok": "✓"}[check.state]
        test, variant = r.test, r.variant
        cells_ = [
            f'<td data-v="{0 if check.state in ("failed", ERROR) else 2 if check.state == "ok" else 1}" '
            f'class="v-{check.state}">{mark}</td>',
            _cell(r.verdict, f"v-{check.state}"),
            _cell(r.kind),
            f'<td class="mono t" title="{escape(test)}">'
            f'<a href="#{check.anchor}">{_test_name(_without(test, variant))}</a></td>',
            _cell(variant),
            _num_cell(change_text, change_value, "c"),
            _num_cell(*before),
            _num_cell(*after),
            _cell(_decided(r)),
            *([_cell(check.job)] if merged else []),
        ]
        rows.append(f'<tr class="{check.state}">{"".join(cells_)}</tr>')
    empty = "<p class='muted'>No check ran.</p>" if not checks else ""
    return (
        '<section id="summary"><h2>Summary</h2>'
        '<input id="filter" type="search" placeholder="filter: words in a row, e.g. failed latency" '
        'aria-label="filter the checks">'
        f'<table id="checks-table"><colgroup>{columns}</colgroup><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        f"{empty}</section>"
    )


def _without(test: str, variant: str) -> str:
    """A node id without its variant's parameter, which the variant column shows."""
    suffix = f"[{variant}]"
    return test[: -len(suffix)] if variant and test.endswith(suffix) else test


def _test_name(test: str) -> str:
    """A node id as two parts: its file's path, which is cut short (from the left, so that the file
    name stays) when the column is too narrow, and the test's own name, which is never cut (it wraps):
    ``…models/bert_tiny.onnx::`` then ``accuracy``."""
    path, sep, name = test.rpartition("::")
    if not sep:
        return f'<span class="tn">{escape(test)}</span>'
    return f'<span class="tp"><bdi>{escape(path + sep)}</bdi></span><span class="tn">{escape(name)}</span>'


def _cell(text: str, css: str = "") -> str:
    """A text cell with its whole text in a tooltip: the fixed-width table cuts long cells short."""
    attribute = f' class="{css}"' if css else ""
    return f'<td{attribute} title="{escape(text)}">{escape(text)}</td>'


def _num_cell(text: str, value: float | None, css: str = "") -> str:
    """A cell sorted by ``value``; its whole text in a tooltip, since long cells are cut short."""
    data = f' data-v="{value:.6g}"' if value is not None and math.isfinite(value) else ' data-v="-1e300"'
    return f'<td class="num {css}"{data} title="{escape(text)}">{escape(text)}</td>'


def _ms(value: object) -> tuple[str, float | None]:
    number = as_number(value)
    if number is None or not math.isfinite(number):
        return "-", None
    return f"{number:.4g} ms", number


def _sides(record: CheckRecord) -> tuple[tuple[str, float | None], tuple[str, float | None]]:
    """The reference and current columns: medians, or a memory or start-up check's own summary."""
    if "change_text" in record:  # memory, start-up, graph
        reference = record.reference or record.baseline
        label = str(reference.get("label") or "-") if isinstance(reference, Mapping) else "-"
        return (label, None), (record.summary or "-", None)
    medians = record.medians
    if medians is None:
        return _ms(None), _ms(None)
    return _ms(medians.compared_ms), _ms(medians.current_ms)


def _change(record: CheckRecord) -> tuple[str, float | None]:
    """The change that decided, or an unchanged check's drift; its ratio for sorting."""
    if "change_text" in record:
        return record.change, None
    if record.compares_outputs:
        return _accuracy_change(record), None
    change = record.estimate
    if change is not None:
        ratio = as_number(change.get("ratio"))
        text = change.get("text")
        if isinstance(text, str) and text:
            return text, ratio
        if ratio is not None:
            return f"{ratio - 1:+.1%}", ratio
    speedup = record.speedup
    if speedup is not None and as_number(speedup.get("value")) is not None:
        value = float(as_number(speedup.get("value")) or 0.0)
        return f"{value:.2f}x", value
    drift = record.drift
    if drift is not None:
        return str(drift.get("text") or "-"), as_number(drift.get("ratio"))
    return "-", None


def _accuracy_change(record: CheckRecord) -> str:
    """The outputs that failed, each with its metric, against which reference, and those not compared:
    '-' when none."""
    failed = []
    for reference in record.references:
        for output in reference.get("outputs") or []:
            if isinstance(output, Mapping) and not output.get("ok", True):
                why = output.get("failed_metric") or output.get("problem") or "failed"
                failed.append(f"{output.get('name')}: {why} vs {reference.get('reference')}")
    skipped = sorted({str(o.get("output")) for o in record.not_compared})
    if skipped:  # passed, but not on everything: the summary row says so too
        failed.append("not compared: " + ", ".join(skipped))
    return "; ".join(failed) or "-"


def _decided(record: CheckRecord) -> str:
    path, basis = record.path, record.decided_by
    if not path or basis in ("", path, "unchanged"):
        return path or basis
    return f"{path}; {basis}"


def _drawn_or_common(record: Mapping[str, Any]) -> str:
    """A kind this page has no drawing for: the drawing its run rendered into the record (a plugin's
    kind, in a page made later by ``ortperf report``), else the common one."""
    drawn = CheckRecord.of(record).drawn
    return drawn or draw_common(record)


def _details(checks: Sequence[PageCheck], jobs: Sequence[Job], drawings: Mapping[str, Drawing]) -> str:
    profiled = {
        (job.label if len(jobs) > 1 else "", str(p.get("test")))
        for job in jobs
        for p in objects(job.document.get("profiles"))
    }
    sections = []
    for check in checks:
        r = check.record
        body = guarded(partial(drawings.get(r.kind, _drawn_or_common), r), "this check's figures")
        if r.damaged:  # read as empty: the page says so rather than drawing less unsaid
            unread = ValueError(f"not as ortperf writes them: {', '.join(r.damaged)}")
            body = damaged("this check's figures", unread) + body
        facts = guarded(partial(_facts, check, profiled), "this check's facts")
        message = r.message.strip()
        why = guarded(partial(_explanations, r), "why it ended so")
        shown = why + (f"<pre>{escape(message)}</pre>" if message else "")
        opened = " open" if check.state in ("failed", ERROR) else ""
        change_text = _change_text(r)
        sections.append(
            f'<details class="check {check.state}" id="{check.anchor}"{opened}><summary>'
            f'<span class="v-{check.state}">{escape(r.verdict)}</span> · '
            f'<span class="mono">{escape(r.test)}</span> · {escape(r.kind)}'
            f"{' · ' + escape(change_text) if change_text != '-' else ''}"
            f"{' · ' + escape(check.job) if check.job else ''}</summary>"
            f'<div class="body">{facts}{body}{shown}</div></details>'
        )
    return f'<section id="checks"><h2>Checks</h2>{"".join(sections)}</section>'


def _explanations(record: CheckRecord) -> str:
    """Why a check ended as it did (a failure's, an inconclusive result's), section by section: where
    the time went, the graph diff, the first diverging tensor, the nodes whose memory grew."""
    sections = record.explanations
    if not sections:
        return ""
    items = "".join(
        f"<li><b>{escape(str(s.get('title', '')))}</b><ul>"
        + "".join(f"<li>{escape(str(line))}</li>" for line in s.get("lines") or [])
        + "</ul></li>"
        for s in sections
    )
    return f'<div class="why"><h4>Why</h4><ul>{items}</ul></div>'


def _change_text(record: CheckRecord) -> str:
    try:
        return _change(record)[0]
    except DAMAGE:
        return "-"


def _facts(check: PageCheck, profiled: set[tuple[str, str]]) -> str:
    r = check.record
    rows: list[tuple[str, str]] = [("variant", r.variant), ("machine", r.machine)]
    model = r.model
    if model is not None:
        rows.append(("model", f"{model.get('label', '?')} ({model.get('precision', 'fp32')})"))
    decided = _decided(r)
    if decided:
        rows.append(("decided by", decided))
    drift = r.drift
    if drift is not None and drift.get("text"):
        # A look beside another xdist worker measured partly that worker, not the machine.
        rows.append(("drift" if drift.get("beside") else "machine drift", str(drift["text"])))
    seconds = r.seconds
    if seconds is not None:
        spent = ", ".join(
            f"{k} {float(v):.2f} s" for k, v in seconds.items() if isinstance(v, (int, float)) and v >= 0.005
        )
        rows.append(("gate time", spent or "-"))
    changed = r.changes
    if changed:
        rows.append(("changed since the baseline", "; ".join(map(str, changed))))
    text = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    link = ""
    if (check.job, r.test) in profiled and r.times_rounds:
        anchor = profile_anchor(check.job, r.test)
        link = f'<dt>profile</dt><dd><a href="#{anchor}">where the time went</a></dd>'
    return f'<dl class="facts">{text}{link}</dl>'
