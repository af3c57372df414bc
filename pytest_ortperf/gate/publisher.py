"""The one way a check's result leaves the check: as a record (``reports/ci_files.py`` makes it) into
the run's results, the test's JUnit properties and, where its kind maps one, pytest-benchmark."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.gate.registry import BenchmarkEntry, KindRegistry
from pytest_ortperf.ort.git_models import SHALLOW
from pytest_ortperf.reports.ci_files import ERROR
from pytest_ortperf.reports.results import RunResults


class RunPublisher:
    """The publisher of one test instance's checks (``gate/protocol.py: Publisher``)."""

    def __init__(
        self,
        results: RunResults,
        kinds: KindRegistry,
        *,
        add_property: Callable[[str, object], None] = lambda name, value: None,
        benchmark: Callable[[BenchmarkEntry | Mapping[str, object]], object] | None = None,
        accept: str = "",
    ) -> None:
        """``accept``: the command that records this test instance's baselines, kept on each of its
        failing records (the run's summary joins them into one command)."""
        self._accept = accept
        self._results = results
        self._kinds = kinds
        self._add_property = add_property
        self._benchmark = benchmark

    def publish(self, record: Mapping[str, Any], *, verdict_property: str = "") -> None:
        # A changed model that a shallow clone cannot judge is fixed by fetching the history, not by
        # recording: no command accepts it.
        # An error is not a verdict to accept (a damaged file, a run that failed): neither is it.
        # A kind whose failure no recording accepts (determinism, a contract) has no command either.
        typed = CheckRecord.of(record)
        kind = self._kinds.get(typed.kind)
        unjudged = (
            SHALLOW in typed.stored_reason
            or SHALLOW in typed.message
            or typed.verdict == ERROR
            or (kind is not None and not kind.accepts_update)
        )
        if typed.failed and self._accept and typed.accept is None:
            typed = typed.with_fields(accept="" if unjudged else self._accept)
        record = self._results.add(typed)
        name = verdict_property or f"ortperf_{typed.kind or 'check'}_verdict"
        self._add_property(name, typed.verdict)
        if verdict_property or kind is None or typed.verdict == ERROR:
            return  # another kind's record (A/B outputs), or an error: its verdict only
        for property_name, value in kind.properties(record).items():
            self._add_property(property_name, value)
        entry = kind.benchmark(record) if kind.benchmark is not None else None
        if entry is not None and self._benchmark is not None:
            self._benchmark(entry)
