"""The results of one run, published through one sink: this process's checks and what xdist
workers handed over.

Every check's result enters here once, as its record (``reports/ci_files.py``), by
:meth:`RunResults.add` (``gate/publisher.py`` calls it), which types it (``checks/record.py``). A
pytest-xdist controller
runs no test: it folds each worker's :meth:`RunResults.handover` (records, and
where traces are) in with :meth:`RunResults.take_over`. The terminal summary, the
CI files, the HTML page and the update tally are all read from the same records.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_ortperf.checks.record import CheckRecord, typed
from pytest_ortperf.checks.status import Status


@dataclass
class _Handed:
    """What the xdist workers reported besides their records: where their traces are, their profiled
    tests (as records) and the machines that hold figures for their missing checks."""

    missing_machines: set[str] = field(default_factory=set)
    traces: dict[str, list[str]] = field(default_factory=dict)
    profiles: list[dict[str, Any]] = field(default_factory=list)


class RunResults:
    """The sink every check's record of a run goes through; every summary is read from the records."""

    def __init__(self) -> None:
        self._records: list[CheckRecord] = []
        self._models: dict[str, dict[str, Any]] = {}  # node id -> what model its variant ran (describe)
        self._handed = _Handed()
        self._noted: dict[str, Any] = {}  # fields every record published now carries (noted)

    @contextlib.contextmanager
    def noted(self, fields: Mapping[str, Any]) -> Iterator[None]:
        """Every record published inside carries ``fields`` (what ``--ortperf-update=missing`` did
        with the check: recorded, or judged and why), for the reports and the update summary."""
        before = self._noted
        self._noted = {**before, **fields}
        try:
            yield
        finally:
            self._noted = before

    def describe(self, nodeid: str, model: Mapping[str, Any]) -> None:
        """What model the test instance ``nodeid`` runs (its fp32 model, precision, size): every record
        of its checks carries it, so that reports can put a model's variants side by side."""
        self._models[nodeid] = dict(model)

    def add(self, record: Mapping[str, Any]) -> CheckRecord:
        """One check's record (``reports/ci_files.py``), with what the run notes on every record and
        the model its test runs; returns it as kept, typed."""
        kept = {**record, **self._noted}
        model = self._models.get(str(kept.get("test", "")))
        typed_record = CheckRecord.of({**kept, "model": model} if model else kept)
        self._records.append(typed_record)
        return typed_record

    @property
    def records(self) -> list[CheckRecord]:
        """One record per check, this process's and the workers', for every report."""
        return list(self._records)

    def checks(self, *kinds: str) -> list[CheckRecord]:
        """The records of ``kinds`` (all: every check's), in the order published."""
        return [r for r in self._records if not kinds or r.kind in kinds]

    def statuses(self) -> list[str]:
        """The verdict of every check of the run, workers' included."""
        return [record.verdict for record in self._records]

    def added_here(self) -> int:
        """Checks an update recorded as ``new`` whose entry existed, with figures of other hardware:
        it added this hardware's figures to it (``figures of this hardware added``), not a new test."""
        return sum(
            record.verdict == "new"
            and any(
                change.endswith("figures of this hardware added")
                for change in [*record.changes, record.change]
            )
            for record in self._records
        )

    def noisy_recordings(self) -> list[str]:
        """Latency figures an update wrote noisy, with why (``latency.recording.noise``, the rule
        ``ortperf show`` marks them by): "node id (spread 14.2% > max-cv 10%)"."""
        return [
            f"{record.test} ({record.recording.noise or format(record.recording.spread or 0.0, '.1%')})"
            for record in self._records
            if record.recording.noisy
        ]

    def kept_recordings(self) -> list[str]:
        """Stored latency figures an update kept because they are quieter than its own, of a recipe
        that did not change: "node id: why"."""
        return [
            f"{record.test}: {record.recording.kept}" for record in self._records if record.recording.kept
        ]

    def settled_recordings(self) -> list[str]:
        """Latency figures an update measured until settled (``latency.recording``: figures that will
        decide), not short: node ids."""
        return [record.test for record in self._records if record.recording.settled]

    def coarse_recordings(self) -> list[str]:
        """Latency figures an update wrote that will decide and cannot detect a change of the
        threshold, with what they can detect (``latency.recording.coarse``, the rule ``ortperf
        show`` marks them by): "node id (detect >= 13.4%, threshold 10%)"."""
        return [
            f"{record.test} ({record.recording.coarse})"
            for record in self._records
            if record.recording.coarse
        ]

    def missing_only(self) -> list[dict[str, Any]]:
        """Under ``--ortperf-update=missing``, what it did with each check, workers' included: one
        note per test and kind (``test``, ``kind``, ``action``, ``reason``, ``changes``)."""
        notes: dict[tuple[str, str], dict[str, Any]] = {}
        for record in self._records:
            note = record.update_missing
            if note is not None:
                notes.setdefault(
                    (record.test, record.kind), {"test": record.test, "kind": record.kind, **note}
                )
        return list(notes.values())

    def not_timed(self) -> dict[str, int]:
        """The checks of the run, workers' included, that --ortperf-timing=off skipped: how many of
        each kind, in the order their kinds first appear."""
        counts: dict[str, int] = {}
        for record in self._records:
            if record.verdict == Status.NOT_TIMED:
                counts[record.kind] = counts.get(record.kind, 0) + 1
        return counts

    def missing(self) -> list[CheckRecord]:
        """The checks with a baseline entry of their own that had no baseline here (an accuracy
        check, whose reference outputs the entry's recipe keeps, has no entry of its own to name)."""
        return [r for r in self._records if r.verdict == Status.MISSING and r.entry is not None]

    def missing_count(self) -> int:
        return len(self.missing())

    def runtimes_unavailable(self) -> dict[str, int]:
        """The recorded runtimes that could not be had here, with how many checks they left missing
        (what those runtimes measured decides nothing here)."""
        found: dict[str, int] = {}
        for record in self._records:
            runtime = record.runtime_unavailable
            if runtime:
                found[runtime] = found.get(runtime, 0) + 1
        return dict(sorted(found.items()))

    @property
    def machines_reported_missing(self) -> set[str]:
        """Machines with baselines for checks missing here, as the workers found them."""
        return set(self._handed.missing_machines)

    def reported_differences(self) -> list[str]:
        """A/B output differences reported, not failed (``--ortperf-ab-outputs=report``)."""
        return [
            f"{record.message} (reported, --ortperf-ab-outputs=report)"
            for record in self._records
            if record.verdict == Status.DIFFERS_REPORTED
        ]

    def worker_traces(self) -> dict[str, list[str]]:
        return dict(self._handed.traces)

    def worker_profiles(self) -> list[dict[str, Any]]:
        """The workers' profiled tests, as :func:`~pytest_ortperf.reports.ci_files.profile_record`."""
        return list(self._handed.profiles)

    def handover(
        self,
        *,
        missing_machines: Sequence[str],
        traces: dict[str, list[str]],
        profiles: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """What an xdist worker hands the controller, as JSON-able data: its records, and where its
        traces and profiles are."""
        return {
            "records": [record.as_dict() for record in self._records],
            "missing_machines": sorted(missing_machines),
            "traces": traces,
            "profiles": [dict(profile) for profile in profiles],
        }

    def take_over(self, data: dict[str, Any]) -> None:
        """Fold one worker's :meth:`handover` into this (the controller's) sink."""
        handed = self._handed
        handed.missing_machines.update(data["missing_machines"])
        handed.traces.update(data["traces"])
        handed.profiles += data.get("profiles", [])
        self._records += typed(data["records"])
