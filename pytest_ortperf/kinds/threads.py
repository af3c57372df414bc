"""The threads kind, as it is registered: its name and baseline part (the curve of this hardware); it
keeps the common record and row. Its check (``threads_check.py``) is loaded when a test first runs it."""

from __future__ import annotations

from pytest_ortperf.gate.registry import CheckKind
from pytest_ortperf.lazy import later

CHECK = "pytest_ortperf.kinds.threads_check"

KIND = CheckKind(
    name="threads",
    make=later(CHECK, "ThreadsCheck"),
    summary="the latency curve over intra_op_num_threads counts, and the best count",
    timed=True,
    not_timed=later(CHECK, "not_timed"),
    part="threads",
)
