"""The memory kind, as it is registered: its name, baseline part, terminal table (shared with
start-up), record, JUnit properties and pytest-benchmark information. Its check (``memory_check.py``,
measured in fresh processes) is loaded when a test first runs it."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_ortperf.gate.registry import CheckKind
from pytest_ortperf.lazy import later
from pytest_ortperf.reports.tables import TerminalTable


def _measured_title(rows: Sequence[tuple[str, ...]], machine: str) -> str:
    return (
        f"memory and start-up on machine '{machine}' (measured in fresh worker processes; memory: ORT's "
        "arena peak where kept, else GPU memory or the peak resident set added; start-up: session "
        "creation and first run)"
    )


# The terminal table of the checks measured in fresh processes: memory's and start-up's.
FRESH_PROCESSES_TABLE = TerminalTable("fresh processes", _measured_title)

KIND = CheckKind(
    name="memory",
    make=later("pytest_ortperf.kinds.memory_check", "MemoryCheck"),
    summary="ORT's arena accounting, GPU memory and the peak resident set, in fresh worker processes",
    part="memory",
    record=later("pytest_ortperf.reports.ci_files", "footprint_record"),
    table=FRESH_PROCESSES_TABLE,
    benchmark=later("pytest_ortperf.kinds.memory_check", "memory_benchmark_info"),
    properties=later("pytest_ortperf.kinds.fresh_processes", "figures_property"),
    drawing=later("pytest_ortperf.reports.html.checks", "draw_memory"),
)
