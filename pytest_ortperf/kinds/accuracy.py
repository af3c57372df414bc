"""The accuracy kind, as it is registered: its name, terminal table, record, row and drawing. Its check
(``accuracy_check.py``) is loaded when a test first runs it."""

from __future__ import annotations

from pytest_ortperf.gate.registry import CheckKind
from pytest_ortperf.lazy import later
from pytest_ortperf.reports.tables import ACCURACY_TABLE

KIND = CheckKind(
    name="accuracy",
    make=later("pytest_ortperf.kinds.accuracy_check", "AccuracyCheck"),
    summary="outputs against the recorded ones, the reference variant and the model's own data sets",
    default=True,
    record=later("pytest_ortperf.reports.ci_files", "accuracy_record"),
    row=later("pytest_ortperf.reports.terminal", "accuracy_check_row"),
    table=ACCURACY_TABLE,
    drawing=later("pytest_ortperf.reports.html.checks", "draw_accuracy"),
    accepted_by_update=True,  # an update records the outputs it compares with
)
