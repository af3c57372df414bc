"""The tables of the terminal summary as kinds declare them (``CheckKind.table``): a name, a title and
headers, and the common table of checks. Imported when a kind is declared, while pytest reads its
options, so this module imports nothing of the package; the rows are ``reports/terminal.py``'s."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

LATENCY_HEADERS = ("test", "variant", "mode", "reference", "current", "change", "verdict")
ACCURACY_HEADERS = ("test", "variant", "against", "worst output (tolerance)", "verdict")


@dataclass(frozen=True)
class TerminalTable:
    """A table of the terminal summary, declared by the kinds whose rows it shows (``CheckKind.table``;
    several kinds can share one): its name, the line above it (``title(rows, machine)``) and its
    headers. A kind that declares none has its rows in the common table of checks."""

    name: str
    title: Callable[[Sequence[tuple[str, ...]], str], str]
    headers: tuple[str, ...] = ("test", "variant", "check", "path", "current", "change", "verdict")


def _latency_title(rows: Sequence[tuple[str, ...]], machine: str) -> str:
    return (
        f"latency on machine '{machine}' (change: current/reference by the statistic it names, which "
        "decided; the medians beside it can differ)"
    )


def _accuracy_title(rows: Sequence[tuple[str, ...]], machine: str) -> str:
    from pytest_ortperf.reports.accuracy_rows import accuracy_title

    return accuracy_title(rows)


def _other_checks_title(rows: Sequence[tuple[str, ...]], machine: str) -> str:
    kinds = ", ".join(dict.fromkeys(row[2] for row in rows))
    return f"other checks ({kinds}: what each compared with, measured and decided)"


# The latency kind's table: printed first, with what its checks' summary says below it
# (reports/terminal.py: latency_table).
LATENCY_TABLE = TerminalTable("latency", _latency_title, LATENCY_HEADERS)
ACCURACY_TABLE = TerminalTable("accuracy", _accuracy_title, ACCURACY_HEADERS)
COMMON_TABLE = TerminalTable("checks", _other_checks_title)
