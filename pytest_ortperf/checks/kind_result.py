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


def kind_not_timed(key: CheckKey, kind: str) -> KindResult:
    """A timed kind's outcome under ``--ortperf-timing=off``: skipped, nothing measured, 'not timed'."""
    return KindResult(
        key,
        kind,
        Status.NOT_TIMED,
        path="not timed",
        skipped=True,
        message=f"{kind} of {key.shown} not timed: timing is off (--ortperf-timing=off); nothing is "
        "measured.",
    )


def kind_error(key: CheckKey, kind: str, why: str) -> KindResult:
    """A kind's check that ended in an error: failed, with ``why`` after the kind and the test."""
    return KindResult(
        key, kind, Status.ERROR, path=kind, failed=True, message=f"{kind} of {key.shown}: {why}"
    )
