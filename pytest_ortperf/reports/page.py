"""One self-contained HTML page of a run, rendered from its JSON report (or several runs' reports).

The JSON report (``ci_files.report_document``) is the source: the page only draws what a report
holds, so ``--ortperf-html`` during a run and ``ortperf report JSON... --html PATH`` afterwards
give the same page, and the reports of a matrix of CI jobs merge into one page, each job named.

Layout, top to bottom: the counts and run errors; the summary table of every check, failures and
errors first (sortable, filterable); one section per check with its charts (failed ones open);
the profiled tests; the trade-off view per model. Charts are static SVG (``reports/svg.py``): no
plotting library to inline, a few kilobytes per chart, nothing for a script to lay out on load.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from html import escape
from pathlib import Path
from typing import Any

from pytest_ortperf.accuracy.metrics import TOLERANCE_BIN
from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.graph.diff import GraphDiff
from pytest_ortperf.graph.figures import GraphFigures
from pytest_ortperf.reports import svg
from pytest_ortperf.reports.page_assets import SCRIPT, STYLE
from pytest_ortperf.reports.tradeoffs import HEADERS, TradeoffTable, cells, tradeoff_tables
from pytest_ortperf.values import write_atomically

MAX_BARS = 14  # op types, nodes or providers a bar chart shows; the rest are summed up in words
MAX_NODES_GREW = 10
SHAPES = ("circle", "square", "triangle", "diamond")  # svg.scatter's shape per series
EXACT = 1e-9  # 1 - cosine below this is the rounding of the cosine's own sums: drawn as exact
GREW = 1.10  # a node "grew" by more than this factor (or is new): smaller changes are run-to-run noise
ERROR = str(Status.ERROR)
# Passing verdicts that still ask for a look: drawn amber, not green.
WARNINGS = frozenset(
    str(status)
    for status in (
        Status.MISSING,
        Status.NO_REFERENCE,
        Status.DRIFTED,
        Status.INPUTS_CHANGED,
        Status.DIFFERS_REPORTED,
        Status.INCONCLUSIVE,
        Status.NOT_CONFIRMED,
    )
)


class ReportFileError(OrtperfError):
    """A JSON report that cannot be read or is not one: names the file."""


@dataclass(frozen=True)
class Job:
    """One run's JSON report; ``label`` names it on a page that merges several ("" for one run)."""

    label: str
    document: Mapping[str, Any]


def read_reports(paths: Sequence[Path]) -> tuple[list[Job], list[str]]:
    """The reports that can be read, each named after its file (with its folder where two files
    share a name, as a CI matrix's downloaded artifacts do), and what is wrong with the others."""
    stems = [path.stem for path in paths]
    jobs, problems = [], []
    for path in paths:
        label = path.stem if stems.count(path.stem) == 1 else f"{path.parent.name}/{path.stem}"
        try:
            jobs.append(Job(label=label, document=read_report(path).document))
        except ReportFileError as exc:
            problems.append(str(exc))
    return jobs, problems


def read_report(path: Path) -> Job:
    """A JSON report file as a :class:`Job` named after the file; :class:`ReportFileError` names the
    file and what is wrong with it."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportFileError(f"{path}: cannot read the report ({exc.strerror or exc})") from exc
    except (RecursionError, ValueError) as exc:  # JSONDecodeError, bad UTF-8, numbers past 4300 digits
        raise ReportFileError(f"{path}: not a JSON report ({exc})") from exc
    if not isinstance(document, dict) or not isinstance(document.get("checks"), list):
        raise ReportFileError(
            f"{path}: not a pytest-ortperf JSON report (no list of checks; write one with --ortperf-report)"
        )
    bad = [i for i, check in enumerate(document["checks"]) if not _is_check(check)]
    if bad:
        raise ReportFileError(f"{path}: check {bad[0]} is not a check record (needs test, kind and verdict)")
    return Job(label=path.stem, document=document)


def _listed(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _objects(value: object) -> list[Mapping[str, Any]]:
    """The objects of a list in a report (one read from a file may hold anything there)."""
    return [item for item in _listed(value) if isinstance(item, Mapping)]


def _checks(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [check for check in _listed(document.get("checks")) if _is_check(check)]


def _is_check(check: object) -> bool:
    return isinstance(check, dict) and all(isinstance(check.get(k), str) for k in ("test", "kind", "verdict"))


def job_labels(jobs: Sequence[Job]) -> list[Job]:
    """The jobs with labels that tell them apart: an empty label becomes the job's machine, and a
    label that repeats gets a number."""
    labels = [job.label or str(job.document.get("machine", "run")) for job in jobs]
    seen: dict[str, int] = {}
    labelled = []
    for label, job in zip(labels, jobs, strict=True):
        if labels.count(label) > 1:
            seen[label] = seen.get(label, 0) + 1
            label = f"{label} #{seen[label]}"
        labelled.append(Job(label=label, document=job.document))
    return labelled


def write_page(path: Path, jobs: Sequence[Job], *, problems: Sequence[str] = ()) -> None:
    """Render ``jobs`` to ``path``, written whole or not at all (a page half written is never left);
    ``problems``: reports that could not be read, shown at the top."""
    text = render_page(jobs, problems=problems)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text, mode=0o644)  # a page to share, as a plain write would leave it


@dataclass(frozen=True)
class _Check:
    anchor: str
    job: str
    record: Mapping[str, Any]

    @property
    def state(self) -> str:
        """failed, error, warn or ok: how the page colours it."""
        verdict = str(self.record.get("verdict", ""))
        if verdict == ERROR:
            return ERROR
        if self.record.get("failed"):
            return "failed"
        return "warn" if verdict in WARNINGS else "ok"


def render_page(jobs: Sequence[Job], *, problems: Sequence[str] = ()) -> str:
    """The whole page as one string: styles, script and charts inline."""
    jobs = job_labels(jobs) if len(jobs) > 1 else list(jobs)
    merged = len(jobs) > 1
    checks = [
        _Check(anchor=f"c{n}", job=job.label if merged else "", record=record)
        for n, (job, record) in enumerate((job, record) for job in jobs for record in _checks(job.document))
    ]
    ordered = sorted(checks, key=lambda c: (c.state not in ("failed", ERROR), c.job, str(c.record["test"])))
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
        _details(ordered, jobs),
        _profiles(jobs, checks),
        _tradeoffs(jobs, merged),
        "</main>",
        f"<script>{SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


# --- header and summary ---------------------------------------------------------------------------


def _header(jobs: Sequence[Job], checks: Sequence[_Check], problems: Sequence[str]) -> str:
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
            for e in _listed(doc.get("run_errors"))
        ]
        unused = _listed(doc.get("unused_baselines"))
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


def _summary(checks: Sequence[_Check], merged: bool) -> str:
    heads = [*_COLUMNS, *(["job"] if merged else [])]
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
        test, variant = str(r["test"]), str(r.get("variant", ""))
        cells_ = [
            f'<td data-v="{0 if check.state in ("failed", ERROR) else 2 if check.state == "ok" else 1}" '
            f'class="v-{check.state}">{mark}</td>',
            f'<td class="v-{check.state}">{escape(str(r["verdict"]))}</td>',
            f"<td>{escape(str(r['kind']))}</td>",
            f'<td class="mono t" title="{escape(test)}">'
            f'<a href="#{check.anchor}">{escape(_without(test, variant))}</a></td>',
            f"<td>{escape(variant)}</td>",
            _num_cell(change_text, change_value, "c"),
            _num_cell(*before),
            _num_cell(*after),
            f"<td>{escape(_decided(r))}</td>",
            *([f"<td>{escape(check.job)}</td>"] if merged else []),
        ]
        rows.append(f'<tr class="{check.state}">{"".join(cells_)}</tr>')
    empty = "<p class='muted'>No check ran.</p>" if not checks else ""
    return (
        '<section id="summary"><h2>Summary</h2>'
        '<input id="filter" type="search" placeholder="filter: words in a row, e.g. failed latency" '
        'aria-label="filter the checks">'
        f'<table id="checks-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        f"{empty}</section>"
    )


def _without(test: str, variant: str) -> str:
    """A node id without its variant's parameter, which the variant column shows."""
    suffix = f"[{variant}]"
    return test[: -len(suffix)] if variant and test.endswith(suffix) else test


def _num_cell(text: str, value: float | None, css: str = "") -> str:
    """A cell sorted by ``value``; its whole text in a tooltip, since long cells are cut short."""
    data = f' data-v="{value:.6g}"' if value is not None and math.isfinite(value) else ' data-v="-1e300"'
    return f'<td class="num {css}"{data} title="{escape(text)}">{escape(text)}</td>'


def _number(value: object) -> float | None:
    """A figure of a report (NaN and infinities are written as strings there), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    return None


def _ms(value: object) -> tuple[str, float | None]:
    number = _number(value)
    if number is None or not math.isfinite(number):
        return "-", None
    return f"{number:.4g} ms", number


def _sides(record: Mapping[str, Any]) -> tuple[tuple[str, float | None], tuple[str, float | None]]:
    """The reference and current columns: medians, or a memory or start-up check's own summary."""
    reference = record.get("reference") or record.get("baseline") or {}
    current = record.get("current") or {}
    if "change_text" in record:  # memory, start-up, graph
        label = str(reference.get("label") or "-") if isinstance(reference, Mapping) else "-"
        return (label, None), (str(record.get("summary") or "-"), None)
    before = reference.get("median_ms") if isinstance(reference, Mapping) else None
    after = current.get("median_ms") if isinstance(current, Mapping) else None
    return _ms(before), _ms(after)


def _change(record: Mapping[str, Any]) -> tuple[str, float | None]:
    """The change that decided, or an unchanged check's drift; its ratio for sorting."""
    if "change_text" in record:
        return str(record.get("change_text") or "-"), None
    if record.get("kind") == "accuracy":
        return _accuracy_change(record), None
    change = record.get("change")
    if isinstance(change, Mapping):
        ratio = _number(change.get("ratio"))
        text = change.get("text")
        if isinstance(text, str) and text:
            return text, ratio
        if ratio is not None:
            return f"{ratio - 1:+.1%}", ratio
    speedup = record.get("speedup")
    if isinstance(speedup, Mapping) and _number(speedup.get("value")) is not None:
        value = float(_number(speedup.get("value")) or 0.0)
        return f"{value:.2f}x", value
    drift = record.get("drift")
    if isinstance(drift, Mapping):
        return str(drift.get("text") or "-"), _number(drift.get("ratio"))
    return "-", None


def _accuracy_change(record: Mapping[str, Any]) -> str:
    """The outputs that failed, each with its metric, against which reference: '-' when none did."""
    failed = []
    for reference in record.get("references") or []:
        if not isinstance(reference, Mapping):
            continue
        for output in reference.get("outputs") or []:
            if isinstance(output, Mapping) and not output.get("ok", True):
                why = output.get("failed_metric") or output.get("problem") or "failed"
                failed.append(f"{output.get('name')}: {why} vs {reference.get('reference')}")
    return "; ".join(failed) or "-"


def _decided(record: Mapping[str, Any]) -> str:
    path, basis = str(record.get("path") or ""), str(record.get("decided_by") or "")
    if not path or basis in ("", path, "unchanged"):
        return path or basis
    return f"{path}; {basis}"


# --- one section per check ------------------------------------------------------------------------


def _details(checks: Sequence[_Check], jobs: Sequence[Job]) -> str:
    profiled = {
        (job.label if len(jobs) > 1 else "", str(p.get("test")))
        for job in jobs
        for p in _objects(job.document.get("profiles"))
    }
    sections = []
    for check in checks:
        r = check.record
        body = _guarded(partial(_BODIES.get(str(r["kind"]), _plain), r), "this check's figures")
        facts = _guarded(partial(_facts, check, profiled), "this check's facts")
        message = str(r.get("message") or "").strip()
        shown = f"<pre>{escape(message)}</pre>" if message else ""
        opened = " open" if check.state in ("failed", ERROR) else ""
        change_text = _change_text(r)
        sections.append(
            f'<details class="check {check.state}" id="{check.anchor}"{opened}><summary>'
            f'<span class="v-{check.state}">{escape(str(r["verdict"]))}</span> · '
            f'<span class="mono">{escape(str(r["test"]))}</span> · {escape(str(r["kind"]))}'
            f"{' · ' + escape(change_text) if change_text != '-' else ''}"
            f"{' · ' + escape(check.job) if check.job else ''}</summary>"
            f'<div class="body">{facts}{body}{shown}</div></details>'
        )
    return f'<section id="checks"><h2>Checks</h2>{"".join(sections)}</section>'


DAMAGE = (KeyError, TypeError, ValueError, AttributeError, ArithmeticError)


def _guarded(draw: Callable[[], str], what: str) -> str:
    """``draw()``, or a line saying ``what`` could not be drawn: a report from a file (another
    version's, or edited by hand) may hold anything, and one damaged record costs only its own part."""
    try:
        return draw()
    except DAMAGE as exc:
        return _damaged(what, exc)


def _damaged(what: str, exc: Exception) -> str:
    return f"<p class='runerr'>{escape(what)} could not be drawn from this report ({escape(repr(exc))})</p>"


def _change_text(record: Mapping[str, Any]) -> str:
    try:
        return _change(record)[0]
    except DAMAGE:
        return "-"


def _facts(check: _Check, profiled: set[tuple[str, str]]) -> str:
    r = check.record
    rows: list[tuple[str, str]] = [
        ("variant", str(r.get("variant", ""))),
        ("machine", str(r.get("machine", ""))),
    ]
    model = r.get("model")
    if isinstance(model, Mapping):
        rows.append(("model", f"{model.get('label', '?')} ({model.get('precision', 'fp32')})"))
    decided = _decided(r)
    if decided:
        rows.append(("decided by", decided))
    drift = r.get("drift")
    if isinstance(drift, Mapping) and drift.get("text"):
        rows.append(("machine drift", str(drift["text"])))
    seconds = r.get("seconds")
    if isinstance(seconds, Mapping):
        spent = ", ".join(
            f"{k} {float(v):.2f} s" for k, v in seconds.items() if isinstance(v, (int, float)) and v >= 0.005
        )
        rows.append(("gate time", spent or "-"))
    changed = r.get("changed_since_baseline") or []
    if changed:
        rows.append(("changed since the baseline", "; ".join(map(str, changed))))
    text = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    link = ""
    if (check.job, str(r["test"])) in profiled and r.get("kind") == "latency":
        anchor = _profile_anchor(check.job, str(r["test"]))
        link = f'<dt>profile</dt><dd><a href="#{anchor}">where the time went</a></dd>'
    return f'<dl class="facts">{text}{link}</dl>'


def _figure(chart: str, caption: str) -> str:
    return f"<figure>{chart}<figcaption>{escape(caption)}</figcaption></figure>"


def _floats(values: object) -> list[float]:
    if not isinstance(values, list):
        return []
    numbers = (_number(v) for v in values)
    return [v for v in numbers if v is not None and math.isfinite(v)]


def _latency(record: Mapping[str, Any]) -> str:
    current = record.get("current") or {}
    now = _floats(current.get("round_medians_ms")) if isinstance(current, Mapping) else []
    reference = record.get("reference")
    baseline = record.get("baseline")
    sides: list[tuple[str, Sequence[float]]] = []
    marks: list[tuple[str, float]] = []
    before: list[float] = []
    if isinstance(reference, Mapping):
        before = _floats(reference.get("round_medians_ms"))
        sides.append((str(reference.get("label") or "reference"), before))
    elif isinstance(baseline, Mapping):
        before = _floats(baseline.get("round_medians_ms"))
        sides.append((f"baseline {baseline.get('recorded', '')}".strip(), before))
        median = _number(baseline.get("median_ms"))
        if not before and median is not None and math.isfinite(median):
            marks.append(("baseline median", median))
    sides.append(("current", now))
    charts = []
    if now or before:
        charts.append(
            _figure(
                svg.distributions(sides, unit="ms", marks=marks),
                "Round medians of each side (dots), their quartiles (box) and median.",
            )
        )
    change = record.get("change")
    if isinstance(change, Mapping):
        ratio, low, high = (_number(change.get(k)) for k in ("ratio", "low", "high"))
        threshold = _number(change.get("threshold")) or 0.0
        if ratio is not None and low is not None and high is not None:
            paired = (
                [c / b for c, b in zip(now, before, strict=True) if b > 0]
                if record.get("mode") == "a/b" and len(now) == len(before)
                else []
            )
            confidence = _number(change.get("confidence"))
            charts.append(
                _figure(
                    svg.interval(
                        value=ratio,
                        low=low,
                        high=high,
                        band=(1 / (1 + threshold), 1 + threshold),
                        points=paired,
                        failed=bool(record.get("failed")),
                    ),
                    f"Current / reference: {'paired round ratios (dots), ' if paired else ''}"
                    f"the {confidence:.1%} interval (bar) and estimate; the band is the threshold "
                    f"(±{threshold:.0%})."
                    if confidence is not None
                    else "Current / reference against the threshold band.",
                )
            )
    return f'<div class="charts">{"".join(charts)}</div>' if charts else ""


def _graph(record: Mapping[str, Any]) -> str:
    current, reference = record.get("current"), record.get("reference")
    if not isinstance(current, Mapping):
        return ""
    now = _counts(current.get("ops"))
    before = _counts(reference.get("ops")) if isinstance(reference, Mapping) else {}
    names = sorted(
        set(now) | set(before),
        key=lambda op: (now.get(op) == before.get(op), -max(now.get(op, 0), before.get(op, 0)), op),
    )
    rows: list[tuple[str, float | None, float | None]] = [
        (op, float(before[op]) if op in before else (0.0 if before else None), float(now.get(op, 0)))
        for op in names[:MAX_BARS]
    ]
    side = str(reference.get("label") or "reference") if isinstance(reference, Mapping) else "reference"
    parts = []
    diff = _graph_diff(reference, current)
    if diff is not None:
        lost, gained = diff.lost_fusions(), diff.gained_fusions()
        placement = diff.placement_changes()
        items = [f'<li class="lost">lost fusion: {escape(x)}</li>' for x in lost]
        items += [f'<li class="gained">gained fusion: {escape(x)}</li>' for x in gained]
        items += [f'<li class="lost">{escape(x)}</li>' for x in placement]
        if not items:
            items = [f"<li>{'same graph' if diff.same else escape(diff.text())}</li>"]
        parts.append(f"<ul>{''.join(items)}</ul>")
    more = len(names) - MAX_BARS
    hidden = f"; {more} more op types not shown" if more > 0 else ""
    caption = f"Nodes per op type after optimization, changed ones first{hidden}."
    parts.append(
        '<div class="charts">'
        + _figure(svg.paired_bars(rows, sides=(side, "current"), unit="nodes"), caption)
        + "</div>"
    )
    providers = _counts(current.get("providers"))
    if providers:
        placed = ", ".join(f"{name} {count}" for name, count in sorted(providers.items()))
        parts.append(
            f"<p class='muted'>placement: {escape(placed)}; off the requested provider "
            f"{escape(str(current.get('off_provider', 0)))}, "
            f"copy nodes {escape(str(current.get('copies', 0)))}</p>"
        )
    return "".join(parts)


def _graph_diff(reference: object, current: Mapping[str, Any]) -> GraphDiff | None:
    if not isinstance(reference, Mapping):
        return None
    try:
        before = GraphFigures.from_dict({k: v for k, v in reference.items() if k != "label"})
        after = GraphFigures.from_dict(current)
    except (KeyError, TypeError, ValueError):
        return None
    return GraphDiff(before, after)


def _counts(value: object) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {
        str(k): int(v) for k, v in value.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


def _comparisons(record: Mapping[str, Any]) -> str:
    rows = []
    for c in record.get("comparisons") or []:
        if not isinstance(c, Mapping):
            continue
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
    number = _number(value)
    if number is None:
        return "-"
    if unit == "bytes":
        for size, name in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
            if abs(number) >= size:
                return f"{number / size:.3g} {name}"
        return f"{number:.0f} B"
    return f"{number:.4g} {unit or ''}".strip()


def _memory(record: Mapping[str, Any]) -> str:
    parts = [_comparisons(record)]
    current, reference = record.get("current"), record.get("reference")
    if isinstance(current, Mapping):
        now = _counts(current.get("nodes"))
        before = _counts(reference.get("nodes")) if isinstance(reference, Mapping) else {}
        names = sorted(set(now) | set(before), key=lambda n: -max(now.get(n, 0), before.get(n, 0)))
        if names:
            rows: list[tuple[str, float | None, float | None]] = [
                (n, before[n] / 1024 if n in before else None, now[n] / 1024 if n in now else None)
                for n in names[:MAX_BARS]
            ]
            more = len(names) - MAX_BARS
            parts.append(
                '<div class="charts">'
                + _figure(
                    svg.paired_bars(rows, sides=("reference", "current"), unit="KiB"),
                    f"Memory per node (KiB), largest first{f'; {more} more nodes' if more > 0 else ''}.",
                )
                + "</div>"
            )
    return "".join(parts)


def _startup(record: Mapping[str, Any]) -> str:
    parts = [_comparisons(record)]
    current, reference = record.get("current"), record.get("reference")
    charts = []
    for key, name in (("create_ms", "session creation"), ("first_run_ms", "first run")):
        now = _floats(current.get(key)) if isinstance(current, Mapping) else []
        before = _floats(reference.get(key)) if isinstance(reference, Mapping) else []
        if now or before:
            charts.append(
                _figure(
                    svg.distributions([("reference", before), ("current", now)], unit="ms"),
                    f"{name}: one dot per fresh process",
                )
            )
    if charts:
        parts.append(f'<div class="charts">{"".join(charts)}</div>')
    return "".join(parts)


_BIN_LABELS = ("<1e-4", "1e-4", "1e-3", "0.01", "0.1", "1", "10", "100", "≥1e3")


def _accuracy(record: Mapping[str, Any]) -> str:
    parts = []
    for reference in record.get("references") or []:
        if not isinstance(reference, Mapping):
            continue
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
        tolerance = o.get("tolerance") or {}
        cosine, sqnr = _number(o.get("cosine")), _number(o.get("sqnr_db"))
        count = int(_number(o.get("count")) or 0)
        mismatches = int(_number(o.get("mismatches")) or 0)
        rows.append(
            f"<tr><td class='mono'>{escape(str(o.get('name', '')))}</td>"
            f"<td class='num'>{_g(o.get('max_abs'))}</td><td class='num'>{_g(o.get('mean_abs'))}</td>"
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


def _g(value: object) -> str:
    number = _number(value)
    return "-" if number is None else f"{number:.3g}"


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
    if not counts or (not any(counts[1:]) and not _number(output.get("max_abs"))):
        return ""  # every element exact: nothing to draw
    labels = list(_BIN_LABELS[: len(counts)])
    return _figure(
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
        f"<tr><td class='mono'>{escape(str(w.get('index')))}</td><td class='num'>{_g(w.get('actual'))}</td>"
        f"<td class='num'>{_g(w.get('expected'))}</td></tr>"
        for w in worst
    )
    return (
        f"<p>worst elements of <code>{escape(str(output.get('name')))}</code>:</p>"
        f"<table><thead><tr><th>index</th><th>actual</th><th>expected</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _contract(record: Mapping[str, Any]) -> str:
    contract = record.get("contract") or {}
    speedup = record.get("speedup")
    parts = []
    if isinstance(contract, Mapping):
        parts.append(
            f"<p>{escape(str(contract.get('kind', '')).replace('_', ' '))} "
            f"<b>{escape(str(contract.get('other', '')))}</b>, "
            f"bound {escape(str(contract.get('bound', '')))} ({escape(str(contract.get('source', '')))})</p>"
        )
    if isinstance(speedup, Mapping):
        value, low, high = (_number(speedup.get(k)) for k in ("value", "low", "high"))
        bound = _number(contract.get("bound")) if isinstance(contract, Mapping) else None
        if value is not None and low is not None and high is not None and bound is not None:
            parts.append(
                '<div class="charts">'
                + _figure(
                    svg.interval(
                        value=value,
                        low=low,
                        high=high,
                        band=(bound, math.inf),
                        failed=bool(record.get("failed")),
                        label="speedup over the other variant",
                    ),
                    f"Speedup: interval over {speedup.get('rounds')} paired rounds; the band is what the "
                    f"contract allows (≥ {bound:g}x).",
                )
                + "</div>"
            )
    agreement = _number(record.get("agreement"))
    if agreement is not None:
        parts.append(f"<p>agreement {agreement:.2%}</p>")
    return "".join(parts)


def _plain(record: Mapping[str, Any]) -> str:
    return ""


_BODIES = {
    "latency": _latency,
    "graph": _graph,
    "memory": _memory,
    "startup": _startup,
    "accuracy": _accuracy,
    "contract": _contract,
}


# --- profiled tests -------------------------------------------------------------------------------


def _profile_anchor(job: str, test: str) -> str:
    """A stable anchor for a profiled test: the same on every rendering of the same report."""
    return "p-" + hashlib.sha1(f"{job}\0{test}".encode()).hexdigest()[:12]


def _profiles(jobs: Sequence[Job], checks: Sequence[_Check]) -> str:
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
        for profile in _objects(job.document.get("profiles")):
            if not isinstance(profile, Mapping):
                continue
            test = str(profile.get("test", "?"))
            baseline = baselines.get((label, test))
            drawn = _guarded(partial(_profile, label, test, profile, baseline), f"the profile of {test}")
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
        _figure(svg.paired_bars(rows, sides=(side, "current"), unit="ms/run"), "Time per run by op type."),
        _figure(
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
    per_run = _number(profile.get("run_ms"))
    head = f"{runs} profiled runs" + (f", {per_run:.3f} ms per run" if per_run is not None else "")
    title = f"{test}{' · ' + job if job else ''}"
    return (
        f'<details class="check" id="{_profile_anchor(job, test)}"><summary>'
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


# --- trade-offs -----------------------------------------------------------------------------------


def _tradeoffs(jobs: Sequence[Job], merged: bool) -> str:
    sections = []
    for job in jobs:
        label = job.label if merged else ""
        try:
            tables = tradeoff_tables(_checks(job.document))
        except DAMAGE as exc:
            sections.append(_damaged(f"the trade-offs{' of ' + label if label else ''}", exc))
            continue
        sections += [
            _guarded(partial(_tradeoff, table, label), f"the trade-offs of {table.model}") for table in tables
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
        chart = _figure(
            svg.scatter(points, x_label="median latency (ms)", y_label="1 - cosine vs fp32", log_y=True),
            f"Shapes: {shapes}. A hollow point is exact (1 - cosine below {EXACT:g}).",
        )
    elif points:  # every variant as exact as fp32: its latency is the whole trade
        bars: list[tuple[str, float | None, float | None]] = [(p.label, None, p.x) for p in points]
        chart = _figure(
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
