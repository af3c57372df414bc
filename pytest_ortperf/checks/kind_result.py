"""The result of a check kind that needs no result type of its own: the common fields every report
reads (``gate/registry.py``: a kind registered with nothing but its check appears in every report)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_ortperf.checks.status import Status
from pytest_ortperf.store.baselines import BaselineEntry
from pytest_ortperf.store.keys import CheckKey


@dataclass(frozen=True)
class KindResult:
    """One check's verdict: ``path`` says what it compared with, ``summary`` what it measured (the
    terminal's "current" column), ``change`` how that compares, ``figures`` the measured values as
    JSON-able data, ``notes`` what it could not judge and why."""

    key: CheckKey
    kind: str
    status: Status
    path: str = ""
    summary: str = ""
    change: str = ""
    figures: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    failed: bool = False
    skipped: bool = False
    message: str = ""
    staged: BaselineEntry | None = (
        None  # a recording: the entry the gate stages (store/baselines.py: with_part)
    )
