"""The determinism kind, as it is registered: its name and summary; it keeps the common record and
row. Its check (``determinism_check.py``) is loaded when a test first runs it."""

from __future__ import annotations

from pytest_ortperf.gate.registry import CheckKind
from pytest_ortperf.lazy import later

KIND = CheckKind(
    name="determinism",
    make=later("pytest_ortperf.kinds.determinism_check", "DeterminismCheck"),
    summary="the same inputs give the same outputs, run after run and on a fresh session",
)
