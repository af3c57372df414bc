"""Results in the forms CI systems read: a JSON report, a markdown summary, JUnit properties.

Each check becomes one plain record; the JSON report lists them all, the
markdown summary puts failures first in a table (GitHub Actions shows it when
it is appended to ``$GITHUB_STEP_SUMMARY``), and JUnit XML gets a few key
figures per test as properties.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pytest_ortperf.accuracy.metrics import ERROR_EDGES, OutputComparison
from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult
from pytest_ortperf.checks.contract_verdicts import ContractResult
from pytest_ortperf.checks.footprint_verdicts import FootprintResult
from pytest_ortperf.checks.latency_figures import latency_part
from pytest_ortperf.checks.latency_verdicts import LATENCY, LatencyResult
from pytest_ortperf.checks.record import CheckRecord, typed
from pytest_ortperf.checks.status import Status
from pytest_ortperf.latency.across_processes import AcrossProcesses
from pytest_ortperf.latency.activity import GateSeconds
from pytest_ortperf.profiling.book import ProfileReport
from pytest_ortperf.profiling.operators import op_profile
from pytest_ortperf.reports.accuracy_rows import against, outside_tolerance, worst_output
from pytest_ortperf.reports.html.fields import DRAWN
from pytest_ortperf.reports.tradeoffs import HEADERS, cells, heading, tradeoff_tables
from pytest_ortperf.store.keys import CheckKey

ERROR = str(Status.ERROR)
# The JSON report's figures keep 6 significant digits, as baseline files do; a figure near 1 (a ratio,
# a confidence, a cosine similarity) keeps 6 significant digits of its distance from 1, which is what it
# is read by; seconds keep millisecond resolution.
SIGNIFICANT_DIGITS = 6
NEAR_ONE = 0.5
MAX_DIGITS = 15  # a decimal of up to 15 significant digits reads back as exactly that float
SECONDS_DECIMALS = 3


def _baseline(result: LatencyResult) -> dict[str, Any] | None:
    """The stored figures a latency result was compared with, as the record shows them."""
    part = latency_part(result.baseline)
    if result.baseline is None or part is None or part.latency is None:
        return None
    return {
        "median_ms": part.latency.median_ms,
        "p90_ms": part.latency.p90_ms,
        "recorded": result.baseline.recorded,
        "round_medians_ms": list(part.latency.round_medians_ms),
        # A profiled test's operator profile, as recorded (the HTML report draws it against the
        # run's own profile).
        **({"profile": part.profile.as_dict()} if part.profile else {}),
    }


def latency_record(result: LatencyResult, nodeid: str) -> dict[str, Any]:
    current = result.current
    decisive = result.confirmation or result.comparison
    return {
        "test": nodeid,
        "kind": LATENCY,
        "variant": result.key.variant,
        "machine": result.key.machine,
        "entry": [result.key.test_file, result.key.test],  # the baseline entry: file and test name
        "verdict": str(result.status),
        "failed": result.failed,
        "change_summary": result.change,  # the change as the terminal and JUnit show it
        "mode": result.mode,
        "path": result.path,
        **({"stored_reason": result.stored_reason} if result.stored_reason else {}),
        **({"kept": result.kept} if result.kept else {}),
        **({"runtime_unavailable": result.runtime_unavailable} if result.runtime_unavailable else {}),
        **(
            {
                "recorded_spread": result.recorded_spread,
                "noisy": result.noisy,
                "noise": result.noise,
                "short_recording": result.short,
                # figures that will decide and cannot detect a change of the threshold, and why
                "coarse": result.coarse,
            }
            if result.recorded_spread is not None
            else {}
        ),
        "decided_by": result.basis,
        # what was measured: each input's dtype and shape as fed, and where the data came from
        **({"inputs": dict(result.inputs), "inputs_source": result.inputs_source} if result.inputs else {}),
        "seconds": result.seconds.as_dict(),
        **({"lock": result.lock} if result.lock else {}),
        **({"timing_lock": [wait.as_dict() for wait in result.lock_waits]} if result.lock_waits else {}),
        "reference": (
            {
                "label": result.reference_label,
                "median_ms": result.reference.median_ms if result.reference is not None else None,
                **(
                    {"round_medians_ms": list(result.reference.round_medians_ms)}
                    if result.reference is not None
                    else {}
                ),
                **({"runtimes": result.runtimes} if result.runtimes else {}),
            }
            if result.mode == "a/b"
            else None
        ),
        "current": {
            "median_ms": current.median_ms,
            "p90_ms": current.p90_ms,
            "rounds": current.rounds,
            "runs": current.count,
            "round_cv": current.round_cv,
            "round_medians_ms": list(current.round_medians_ms),
        },
        "baseline": _baseline(result),
        "change": (
            {
                "ratio": decisive.estimate.ratio,
                "low": decisive.estimate.low,
                "high": decisive.estimate.high,
                "confidence": decisive.estimate.confidence,
                "threshold": decisive.threshold,
                "detectable": decisive.detectable,
                "text": result.change,
            }
            if decisive is not None
            else None
        ),
        # A regression measured a second time: the first measurement's change, which the second
        # confirmed or not (``confirmed``); or, not measured again, why (``skipped``).
        **_confirmation(result),
        # Side by side across measuring processes: each process's change and the interval's parts.
        **({"processes": _processes(result.processes)} if result.processes is not None else {}),
        # Unchanged: current / recorded median, for information (the terminal's and JUnit's change).
        # ``beside``: what the look may have run beside (another xdist worker): not the machine's drift.
        **({"drift": _drift(result)} if result.drift is not None else {}),
        "changed_since_baseline": list(result.changes),
        **(
            {
                "operators": {
                    "source": result.operators.source,
                    "before": result.operators.before.as_dict(),
                    "after": result.operators.after.as_dict(),
                }
            }
            if result.operators is not None
            else {}
        ),
        **_explanations(result.explanations),
        "message": result.message,
    }


def _drift(result: LatencyResult) -> dict[str, Any]:
    """An unchanged check's drift: its ratio and text, and what its look ran beside, when anything."""
    beside = {"beside": result.drift_beside} if result.drift_beside else {}
    machine = result.machine_drift
    canary = {"machine_ratio": figure(machine)} if machine is not None else {}
    return {"ratio": result.drift, "text": result.change, **canary, **beside}


def _confirmation(result: LatencyResult) -> dict[str, Any]:
    """A first regression's (or, measured again in new processes, improvement's) record: its
    interval, and whether a second measurement confirmed it or why none was made; {} for a check
    without one."""
    first = result.comparison
    if first is None or (result.confirmation is None and not result.confirmation_skipped):
        return {}
    figures = {
        "first_change": {
            "ratio": first.estimate.ratio,
            "low": first.estimate.low,
            "high": first.estimate.high,
            "threshold": first.threshold,
        }
    }
    if result.confirmation is None:
        return {"confirmation": {"confirmed": None, "skipped": result.confirmation_skipped, **figures}}
    confirmed = result.confirmation.verdict is first.verdict
    return {"confirmation": {"confirmed": confirmed, **figures}}


def _processes(measured: AcrossProcesses) -> dict[str, Any]:
    """A measurement across processes: how many it measured (and could have), each one's change
    (its median round ratio), the spread between them and what their rounds' noise gives one, and
    about how many an undecided one would need."""
    interval = measured.interval
    return {
        "count": len(measured.units),
        "most": measured.most,
        "rounds": interval.rounds,
        "ratios": list(measured.ratios),
        "between_spread": math.expm1(interval.between),
        "within_spread": math.expm1(interval.within),
        "df": interval.df,
        "needed": measured.needed(),
    }


def _explanations(sections: Sequence[tuple[str, Sequence[str]]]) -> dict[str, Any]:
    """Why a check ended as it did, section by section, for every report (``explanations``)."""
    if not sections:
        return {}
    return {"explanations": [{"title": title, "lines": list(lines)} for title, lines in sections]}


def accuracy_record(result: AccuracyResult, nodeid: str) -> dict[str, Any]:
    references = [
        {
            "reference": outcome.label,
            "failed": outcome.failed,
            "note": outcome.note,
            "outputs": [output_record(c) for c in outcome.comparisons],
        }
        for outcome in result.references
    ]
    return {
        "test": nodeid,
        "kind": "accuracy",
        "variant": result.key.variant,
        "machine": result.key.machine,
        "verdict": str(result.status),
        "failed": result.failed,
        "references": references,
        # Outputs the check did not judge, and why: never dropped from what the reports say.
        "not_compared": [
            {"output": c.name, "reference": outcome.label, "reason": c.not_compared}
            for outcome in result.references
            for c in outcome.comparisons
            if c.not_compared
        ],
        **_explanations(result.explanations),
        **({"accept": ""} if result.unjudged else {}),  # the history is its fix, not a command
        "message": result.message,
    }


def not_compared_lines(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per output an accuracy check did not compare, with the reason (workers' included)."""
    lines = []
    for record in typed(records):
        if not record.compares_outputs:
            continue
        for item in record.not_compared:
            if item:
                output, reference = item.get("output"), item.get("reference")
                lines.append(f"{record.test}: output {output!r} vs {reference}: {item.get('reason')}")
    return lines


def footprint_record(result: FootprintResult, nodeid: str) -> dict[str, Any]:
    """A memory or start-up check: its figures, what it compared with, each figure's change."""
    return {
        "test": nodeid,
        "kind": result.kind,
        "variant": result.key.variant,
        "machine": result.key.machine,
        "entry": [result.key.test_file, result.key.test],
        "verdict": str(result.status),
        "failed": result.failed,
        "path": result.path,
        **({"stored_reason": result.stored_reason} if result.stored_reason else {}),
        "current": result.current.as_dict() if result.current is not None else None,
        "reference": (
            {"label": result.reference_label, **result.reference.as_dict(), "recorded": result.recorded}
            if result.reference is not None
            else None
        ),
        "comparisons": [
            {
                "figure": c.figure,
                "before": c.before,
                "after": c.after,
                "ratio": c.ratio,
                "verdict": str(c.verdict.value),
                "limit": c.rule,
                "unit": c.unit,
                "text": c.describe(),
            }
            for c in result.comparisons
        ],
        "change_text": result.change,
        "summary": result.current.describe() if result.current is not None else "",
        "changed_since_baseline": list(result.changes),
        "notes": list(result.notes),
        **_explanations(result.explanations),
        "message": result.message,
    }


def contract_record(result: ContractResult, nodeid: str) -> dict[str, Any]:
    """A relative contract: what was promised of which other variant, and what the run measured."""
    contract, speedup = result.contract, result.speedup
    return {
        "test": nodeid,
        "kind": "contract",
        "variant": result.key.variant,
        "machine": result.key.machine,
        "verdict": str(result.status),
        "failed": result.failed,
        "accept": "",  # a promise between variants: no recording accepts it, the test's contract does
        "contract": {
            "kind": contract.kind,
            "other": contract.other,
            "bound": contract.bound,
            "source": contract.source,
        },
        "speedup": (
            {
                "value": speedup.value,
                "low": speedup.low,
                "high": speedup.high,
                "confidence": speedup.confidence,
                "rounds": speedup.rounds,
            }
            if speedup is not None
            else None
        ),
        "agreement": result.agreement,
        "current": {"median_ms": result.current.median_ms} if result.current is not None else None,
        "reference": (
            {"label": f"variant {contract.other}", "median_ms": result.other.median_ms}
            if result.other is not None
            else None
        ),
        "decided_by": "a/b: median of paired round ratios, sign-test interval" if speedup is not None else "",
        "seconds": result.seconds.as_dict(),
        "message": result.message,
    }


def output_record(comparison: OutputComparison) -> dict[str, Any]:
    """One output against one reference: every metric, the worst element and the limits applied."""
    compared = bool(comparison.count) and not comparison.problem
    return {
        "name": comparison.name,
        "ok": comparison.ok,
        "compared": not comparison.not_compared,
        "not_compared": comparison.not_compared,
        "problem": comparison.problem,
        "failed_metric": comparison.failed_metric,
        "max_abs": _number(comparison.max_abs),
        "max_rel": _number(comparison.max_rel),
        "mean_abs": _number(comparison.mean_abs),
        "mismatches": comparison.mismatches,
        "count": comparison.count,
        "cosine": _number(comparison.cosine),
        "sqnr_db": _number(comparison.sqnr_db),
        "top1": _number(comparison.top1),
        "topk": _number(comparison.topk),
        "worst": (
            {
                "index": list(comparison.worst_index),
                "actual": _number(comparison.worst_actual),
                "expected": _number(comparison.worst_expected),
            }
            if compared
            else None
        ),
        "tolerance": {name: _number(value) for name, value in asdict(comparison.tolerance).items()},
        # Why a cosine or SQNR below its limit did not fail the output ("" when none was below it).
        "whole_output_not_judged": comparison.unjudged,
        **({"keys": list(comparison.keys)} if comparison.keys else {}),
        **(
            {
                "against_tolerance": {"edges": list(ERROR_EDGES), "counts": list(comparison.error_bins)},
                "worst_elements": [
                    {"index": list(index), "actual": _number(actual), "expected": _number(expected)}
                    for index, actual, expected in comparison.worst_elements
                ],
            }
            if comparison.error_bins
            else {}
        ),
    }


def profile_record(report: ProfileReport) -> dict[str, Any]:
    """Where a profiled test's runs spent their time, per run: by op type and node (the form a
    baseline keeps its profile in, so the two compare) and by provider."""
    summary = report.summary
    runs = max(summary.runs, 1)
    return {
        "test": report.nodeid,
        "runs": summary.runs,
        "run_ms": summary.run_us / runs / 1000,
        "profile": op_profile(summary).as_dict(),
        "providers": {row.name: row.us / runs for row in summary.by_provider},
        "fallback_nodes": list(summary.fallback_nodes),
        "warnings": list(report.warnings),
        "traces": len(report.traces),
        "directory": str(report.summary_path.parent),
    }


def check_record(result: Any, nodeid: str) -> dict[str, Any]:
    """The common record of a check (``checks/kind_result.py: KindResult``, or any result with its
    fields): what every report reads from a check kind that declares nothing else."""
    key = result.key
    figures = getattr(result, "figures", {}) or {}
    return {
        "test": nodeid,
        "kind": str(result.kind),
        "variant": key.variant,
        "machine": key.machine,
        "entry": [key.test_file, key.test],
        "verdict": str(result.status),
        "failed": bool(result.failed),
        "path": str(getattr(result, "path", "")),
        "summary": str(getattr(result, "summary", "")),
        "change_text": str(getattr(result, "change", "")),
        "figures": {str(name): rounded(value) for name, value in dict(figures).items()},
        "notes": [str(note) for note in getattr(result, "notes", ())],
        "message": str(result.message),
    }


def _figureless_record(
    key: CheckKey, *, kind: str, nodeid: str, verdict: str, failed: bool, message: str
) -> dict[str, Any]:
    """A check that has a verdict and a message but no figures."""
    return {
        "test": nodeid,
        "kind": kind,
        "variant": key.variant,
        "machine": key.machine,
        "entry": [key.test_file, key.test],
        "verdict": verdict,
        "failed": failed,
        "message": message,
    }


def error_record(key: CheckKey, *, kind: str, nodeid: str, message: str) -> dict[str, Any]:
    """A check that ended in an error (a timeout, a failed run, an unreadable file) rather than a verdict."""
    return _figureless_record(key, kind=kind, nodeid=nodeid, verdict=ERROR, failed=True, message=message)


def not_timed_record(result: LatencyResult, nodeid: str) -> dict[str, Any]:
    """A latency check of a run with ``--ortperf-timing=off``: skipped, nothing measured."""
    return _figureless_record(
        result.key,
        kind="latency",
        nodeid=nodeid,
        verdict=str(result.status),
        failed=False,
        message=result.message,
    )


def _number(value: object) -> object:
    """JSON has no NaN or infinity: those are written as the strings "nan", "inf", "-inf"."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def figure(value: float) -> float:
    """``value`` with :data:`SIGNIFICANT_DIGITS` significant digits, or that many of its distance from
    1 when it lies within :data:`NEAR_ONE` of 1: 0.30934310000000004 -> 0.309343, 1.0234567891 ->
    1.0234568, 0.9999991234567 -> 0.999999123457."""
    if not math.isfinite(value) or value == 0.0:
        return value
    digits = SIGNIFICANT_DIGITS
    distance = abs(value - 1.0)
    if 0.0 < distance < NEAR_ONE:
        digits += max(0, math.floor(math.log10(abs(value))) - math.floor(math.log10(distance)))
    return float(f"{value:.{min(digits, MAX_DIGITS)}g}")


def rounded(value: Any, *, seconds: bool = False) -> Any:
    """A report's values with every float rounded (:func:`figure`; under a ``seconds`` key to the
    millisecond) and NaN and infinities written as strings, which JSON has no numbers for."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return round(value, SECONDS_DECIMALS) if seconds else figure(value)
    if isinstance(value, Mapping):
        return {key: rounded(item, seconds=seconds or key == "seconds") for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(item, seconds=seconds) for item in value]
    return value


def report_document(
    records: Sequence[Mapping[str, Any]],
    *,
    machine: str,
    runtime: str,
    version: str,
    traces: Mapping[str, Sequence[str]],
    unused: Sequence[str],
    run_errors: Sequence[str] = (),
    profiles: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The whole run; ``run_errors`` are problems of the run rather than of one check (a baseline
    that could not be written, an xdist worker that went down); ``profiles``: the profiled tests'
    :func:`profile_record`."""
    kept = typed(records)
    checks = [dict(r, traces=list(traces.get(r.test, []))) for r in kept]
    document = {
        "plugin_version": version,
        "machine": machine,
        "onnxruntime": runtime,
        "checks": checks,
        "failed": sum(r.failed for r in kept),
        "errors": sum(r.verdict == ERROR for r in kept),
        "run_errors": list(run_errors),
        "unused_baselines": list(unused),
        "tradeoffs": [table.as_dict() for table in tradeoff_tables(kept)],
        "profiles": [dict(profile) for profile in profiles],
    }
    rounded_document: dict[str, Any] = rounded(document)
    return rounded_document


def _change(record: CheckRecord) -> str:
    """The change that decided or, for an unchanged check, the machine's drift since recording."""
    if "change_text" in record:  # memory, start-up
        return record.change
    change = record.estimate
    if not change:
        drift = record.drift
        text = drift.get("text") if drift is not None else None
        return text if isinstance(text, str) else "-"
    if isinstance(change.get("text"), str):
        return str(change["text"])
    ratio, low, high = ((change[k] - 1) * 100 for k in ("ratio", "low", "high"))
    return f"{ratio:+.1f}% ({low:+.1f}% .. {high:+.1f}%)"


def markdown(
    records: Sequence[Mapping[str, Any]],
    *,
    machine: str,
    unused: Sequence[str],
    run_errors: Sequence[str] = (),
) -> str:
    """A markdown summary: counts, then one table row per check, failures first; then what errored."""
    checks = typed(records)
    failed = [r for r in checks if r.failed]
    errors = [r for r in failed if r.verdict == ERROR]
    counts = f"Machine `{machine}`: {len(checks)} checks, **{len(failed)} failed**"
    counts += f" ({len(errors)} with an error)." if errors else "."
    lines = ["## pytest-ortperf", ""]
    lines += [f"**ERROR**: {_first_line(error)}" for error in run_errors]
    timed = gate_time(checks)
    lines += [
        counts + (f" The {timed}." if timed else ""),
        "",
        "| | test | variant | check | reference | current | change | verdict | decided by |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for record in sorted(checks, key=lambda r: (not r.failed, r.test)):
        mark = "❌" if record.failed else "✅"
        medians = record.medians
        # Medians of all runs, said to be so: the change beside them is the statistic "decided by" names.
        before = _median(medians.compared_ms if medians is not None else None)
        after = _median(medians.current_ms if medians is not None else None)
        change = _change(record)
        if "change_text" in record:  # memory, start-up: their own figures, not a median
            reference = record.reference or record.baseline
            before = str(reference.get("label") or "-") if isinstance(reference, Mapping) else "-"
            after = record.summary or "-"
        elif record.compares_outputs:  # what it compared with, its worst output, how many failed
            before, after, change = against(record), worst_output(record), outside_tolerance(record)
        lines.append(
            f"| {mark} | `{record.test}` | {record.variant} | {record.kind} | "
            f"{before} | {after} | {change} | {record.verdict} | {_decided(record)} |"
        )
    explained = [r for r in failed if r.explanations]
    if explained:
        lines += ["", "Why they failed:", ""]
        for record in explained:
            lines.append(f"- `{record.test}` ({record.kind}):")
            for section in record.explanations:
                said = "; ".join(map(str, section.get("lines", [])))
                lines.append(f"  - {section.get('title', '')}: {said}")
    if errors:
        lines += ["", "Checks that ended in an error:", ""]
        lines += [f"- `{r.test}` ({r.kind}): {_first_line(r.message)}" for r in errors]
    for table in tradeoff_tables(checks):
        lines += ["", f"**{heading(table)}**", "", "| " + " | ".join(HEADERS) + " |"]
        lines += ["|" + " --- |" * len(HEADERS)]
        lines += ["| " + " | ".join(row) + " |" for row in cells(table)]
    skipped = not_compared_lines(checks)
    if skipped:
        lines += ["", f"Outputs not compared ({len(skipped)}):", ""]
        lines += [f"- {line}" for line in skipped]
    if unused:
        lines += ["", f"{len(unused)} unused baseline entries: " + ", ".join(f"`{u}`" for u in unused)]
    return "\n".join(lines) + "\n"


def gate_time(records: Sequence[Mapping[str, Any]]) -> str:
    """Where the latency checks' time went, summed over the run (workers' checks included), with the
    slowest check; "" without a timed check."""
    timed = [(r, r.seconds) for r in typed(records) if r.times_rounds and r.seconds is not None]
    if not timed:
        return ""
    each = [(GateSeconds.from_dict(seconds), r) for r, seconds in timed]
    total = sum((seconds for seconds, _ in each), GateSeconds())
    parts = [f"{name} {value:.1f} s" for name, value in total.as_dict().items() if value >= 0.05]
    checks = f"{len(timed)} latency check{'s' if len(timed) != 1 else ''}"
    text = f"gate time: {total.total:.1f} s over {checks} ({', '.join(parts) or 'none'})"
    slowest, record = max(each, key=lambda pair: pair[0].total)
    if len(timed) > 1:
        test, variant = record.test, record.variant
        named = test if variant in test else f"{test} [{variant}]"
        text += f"; slowest {named} {slowest.total:.1f} s"
    return text


def _decided(record: CheckRecord) -> str:
    """The path that decided and, where there was a comparison, the statistic."""
    path, basis = record.path, record.decided_by
    if not path or basis in ("", path, "unchanged"):
        return path or basis
    return f"{path}; {basis}"


def _median(value: object) -> str:
    shown = _ms(value)
    return shown if shown == "-" else f"median {shown}"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "(no message)"


def _ms(value: object) -> str:
    """A median in ms, or '-' where nothing was timed (NaN: a check not timed, or the same graph)."""
    return f"{value:.4g} ms" if isinstance(value, (int, float)) and not math.isnan(value) else "-"


def json_text(document: Mapping[str, Any]) -> str:
    """The JSON report's text, as written."""
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def append_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as stream:
        stream.write(text)


def with_drawings(
    records: Sequence[Mapping[str, Any]], drawings: Mapping[str, Callable[[Mapping[str, Any]], str]]
) -> list[Mapping[str, Any]]:
    """Each record of a kind that brings its own drawing, with that drawing rendered into it
    (:data:`DRAWN`), so that a page made later from the JSON report alone (``ortperf report``, which
    knows no plugin's kinds) still draws it; a drawing that raises is left out (the page says so)."""
    drawn: list[Mapping[str, Any]] = []
    for record in typed(records):
        drawing = drawings.get(record.kind)
        if drawing is None:
            drawn.append(record)
            continue
        try:
            drawn.append(record.with_fields(**{DRAWN: drawing(record)}))
        except Exception:
            drawn.append(record)
    return drawn


def write_reports(
    records: Sequence[Mapping[str, Any]],
    *,
    report_path: Path | None,
    markdown_path: Path | None,
    step_summary: Path | None,
    machine: Callable[[], str],
    runtime: Callable[[], str],
    version: str,
    traces: Mapping[str, Sequence[str]],
    unused: Sequence[str],
    run_errors: Sequence[str],
    html_path: Path | None = None,
    profiles: Sequence[Mapping[str, Any]] = (),
    drawings: Mapping[str, Callable[[Mapping[str, Any]], str]] | None = None,
    embedded: Mapping[str, Callable[[Mapping[str, Any]], str]] | None = None,
) -> None:
    """The JSON report, the HTML page (rendered from that report) and the markdown summary
    whenever asked for, even with no check at all; GitHub's step summary (``step_summary``) only
    when there is something to show: the plugin loads in every suite. ``machine`` and ``runtime``
    are asked only when a file is written."""
    if not (report_path or markdown_path or html_path or (step_summary and (records or run_errors))):
        return
    if report_path or html_path:
        if embedded:  # the drawings a page made later from this report alone would not know
            records = with_drawings(records, embedded)
        document = report_document(
            records,
            machine=machine(),
            runtime=runtime(),
            version=version,
            traces=traces,
            unused=unused,
            run_errors=run_errors,
            profiles=profiles,
        )
        written = json_text(document)  # serialized once, for both files
        if report_path:
            report_path.parent.mkdir(parents=True, exist_ok=True)
            report_path.write_text(written, encoding="utf-8")
        if html_path:
            from pytest_ortperf.reports.html import Job, write_page  # only a run that asks for it

            # From the JSON text itself, so that `ortperf report` on the JSON report renders this page.
            write_page(html_path, [Job(label="", document=json.loads(written))], drawings=drawings)
    text = markdown(records, machine=machine(), unused=unused, run_errors=run_errors)
    if markdown_path:
        markdown_path.parent.mkdir(parents=True, exist_ok=True)
        markdown_path.write_text(text, encoding="utf-8")
    if step_summary and (records or run_errors):
        append_text(step_summary, text)
