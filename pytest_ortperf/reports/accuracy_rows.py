"""Accuracy checks as the terminal summary and the markdown summary show them: what each compared
with, its worst output's figures against the tolerance applied, and the verdict, read from the
record (``reports/ci_files.py: accuracy_record``), passing checks as well as failing ones."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_ortperf.checks.record import CheckRecord


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):  # the JSON report writes NaN and infinities as strings
        try:
            return float(value)
        except ValueError:
            return None
    return None


def against(record: Mapping[str, Any]) -> str:
    """The references the outputs were compared with: ``baseline``, ``variant cpu-disabled``, ..."""
    labels = [
        str(reference.get("reference"))
        for reference in CheckRecord.of(record).references
        if reference.get("reference")
    ]
    return ", ".join(dict.fromkeys(labels)) or "-"


def _outputs(record: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    return [
        (str(reference.get("reference", "")), output)
        for reference in CheckRecord.of(record).references
        for output in reference.get("outputs") or []
        if isinstance(output, Mapping) and output.get("compared", True)
    ]


def _badness(output: Mapping[str, Any]) -> tuple[bool, float]:
    """Failing outputs first; then the largest error relative to the absolute tolerance."""
    tolerance = output.get("tolerance") if isinstance(output.get("tolerance"), Mapping) else {}
    error = _number(output.get("max_abs"))
    atol = _number(tolerance.get("atol")) if isinstance(tolerance, Mapping) else None
    relative = error / atol if error is not None and atol else (error or 0.0)
    return (not output.get("ok", True), relative if not math.isnan(relative) else math.inf)


def worst_output(record: Mapping[str, Any]) -> str:
    """The worst output's figures against its tolerance: ``logits: max abs 1.2e-07 (atol 1e-05,
    rtol 0.0001)``; a failing one says the metric it failed on and the reference. "-" when no
    output was compared (the check recorded, had nothing to compare, or ended in an error, whose
    message is the test's failure). A check that failed without an output outside tolerance says
    why: the reference that could not stand beside it (``baseline: outputs not comparable: ...``)."""
    outputs = _outputs(record)
    failing = any(not output.get("ok", True) for _, output in outputs)
    noted = [
        f"{reference.get('reference')}: {str(reference.get('note')).split('; ')[0]}"
        for reference in CheckRecord.of(record).references
        if reference.get("note")
    ]
    if CheckRecord.of(record).failed and not failing and noted:
        return noted[0]
    if not outputs:
        return "-"
    reference, output = max(outputs, key=lambda pair: _badness(pair[1]))
    name = str(output.get("name", ""))
    if output.get("problem"):
        return f"{name} vs {reference}: {output['problem']}"
    tolerance = output.get("tolerance") if isinstance(output.get("tolerance"), Mapping) else {}
    limits = ", ".join(
        f"{key} {value:g}"
        for key in ("atol", "rtol")
        for value in [_number(tolerance.get(key)) if isinstance(tolerance, Mapping) else None]
        if value is not None
    )
    error = _number(output.get("max_abs"))
    figures = f"max abs {error:.3g}" if error is not None else "max abs -"
    cosine = _number(output.get("cosine"))
    if output.get("failed_metric") in ("cosine", "sqnr") and cosine is not None:
        figures += f", cosine {cosine:.6g}"
    text = f"{name}: {figures}" + (f" ({limits})" if limits else "")
    if not output.get("ok", True):
        text = f"{name} vs {reference}: FAILED on {output.get('failed_metric')}, {figures}" + (
            f" ({limits})" if limits else ""
        )
    more = len({str(item.get("name", "")) for _, item in outputs}) - 1
    return text + (f"; {more} more output{'s' if more > 1 else ''}" if more > 0 else "")


def outside_tolerance(record: Mapping[str, Any]) -> str:
    """How many compared outputs are outside their tolerance: ``all 2 within tolerance``, ``1 of 2
    outside tolerance`` (an output counted once per reference)."""
    outputs = _outputs(record)
    if not outputs:
        return "-"
    failed = sum(not output.get("ok", True) for _, output in outputs)
    if not failed:
        return f"all {len(outputs)} within tolerance"
    return f"{failed} of {len(outputs)} outside tolerance"


def accuracy_row(record: Mapping[str, Any], test: str) -> tuple[str, ...]:
    """One accuracy check's terminal row; ``test`` as the latency table names it."""
    typed = CheckRecord.of(record)
    return (test, typed.variant, against(typed), worst_output(typed), typed.verdict)


def accuracy_title(rows: Sequence[tuple[str, ...]]) -> str:
    """The line above the accuracy table: how many checks passed and failed."""
    verdicts = [row[-1] for row in rows]
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts))
    return f"accuracy ({counts}; outputs against their references, the worst output of each check shown)"
