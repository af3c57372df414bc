"""The memory kind, as it is registered: its name, options (threshold, floor, limit), threshold
keyword, baseline part, terminal table (shared with start-up), record, JUnit properties,
pytest-benchmark information and drawing. Its check (``memory_check.py``, measured in fresh processes)
is loaded when a test first runs it."""

from __future__ import annotations

import os
from collections.abc import Sequence

from pytest_ortperf import defaults
from pytest_ortperf.gate.registry import CheckKind, KindOption
from pytest_ortperf.lazy import later
from pytest_ortperf.reports.tables import TerminalTable
from pytest_ortperf.values import parse_size, parse_threshold


def threshold(value: object, where: str) -> float:
    """A relative threshold ("5%", 0.05), naming ``where`` when it is not one."""
    return parse_threshold(value, source=where)


def _size(text: str, where: str) -> int:
    return parse_size(text, source=where)


def _limit(text: str, where: str) -> int:
    """The bytes a memory check's worker may add: a size, off (0: no cap), or, unset, the machine's
    physical memory (no cap where it cannot be read)."""
    if text.strip():
        return parse_size(text, source=where)
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # not POSIX: no cap
        return 0


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
    part_decoder=later("pytest_ortperf.footprint.memory_figures", "MemoryFigures.from_dict"),
    record=later("pytest_ortperf.reports.ci_files", "footprint_record"),
    table=FRESH_PROCESSES_TABLE,
    benchmark=later("pytest_ortperf.kinds.memory_check", "memory_benchmark_info"),
    properties=later("pytest_ortperf.kinds.fresh_processes", "figures_property"),
    drawing=later("pytest_ortperf.reports.html.checks", "draw_memory"),
    options=(
        KindOption(
            "threshold",
            "Growth of a session's memory that fails a memory check, when it also exceeds "
            f"--ortperf-memory-floor (default: {defaults.percent(defaults.MEMORY_THRESHOLD)}; ORT's own "
            "figures are exact, so any change beyond it is real). Where only the resident set can decide, "
            "at least 10% and 1MiB.",
            defaults.percent(defaults.MEMORY_THRESHOLD),
            parse=threshold,
        ),
        KindOption(
            "floor",
            "Smallest memory growth that fails a memory check, whatever the threshold "
            f"(default: {defaults.size(defaults.MEMORY_FLOOR)}).",
            defaults.size(defaults.MEMORY_FLOOR),
            parse=_size,
        ),
        KindOption(
            "limit",
            "Memory a memory check's worker process may add before the check fails with the figure it "
            "reached (an address-space cap on Linux; not applied to GPU providers). Default: the "
            "machine's physical memory; off: no cap.",
            "",
            parse=_limit,
        ),
    ),
    thresholds=("memory",),
    threshold_parse=threshold,
)
