"""Prints how many inputs each fuzzed loader was given (this process only: not under xdist)."""

from __future__ import annotations

import pytest

from tests.fuzz._support import COUNTS, profile_name


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not COUNTS:
        return
    terminalreporter.section(f"fuzz inputs tried per loader (profile {profile_name()})")
    for name, count in sorted(COUNTS.items()):
        terminalreporter.write_line(f"{name:<40} {count:>8}")
    terminalreporter.write_line(f"{'total':<40} {sum(COUNTS.values()):>8}")
