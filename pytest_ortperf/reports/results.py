"""The results of one run, published through one sink: this process's checks and what xdist
workers handed over.

Every check result enters here once, by :meth:`RunResults.publish_latency`,
:meth:`RunResults.publish_accuracy` or :meth:`RunResults.publish_error`; the
record the CI files read is made at the same moment. A pytest-xdist controller
runs no test: it folds each worker's :meth:`RunResults.handover` in with
:meth:`RunResults.take_over`. The terminal summary, the CI files and the update
tally read from here and nowhere else.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult
from pytest_ortperf.checks.contract_verdicts import ContractResult
from pytest_ortperf.checks.footprint_verdicts import FootprintResult
from pytest_ortperf.checks.latency_verdicts import LatencyResult
from pytest_ortperf.checks.status import Status
from pytest_ortperf.reports.ci_files import (
    accuracy_record,
    contract_record,
    error_record,
    footprint_record,
    latency_record,
    not_timed_record,
)
from pytest_ortperf.reports.terminal import footprint_rows, latency_rows
from pytest_ortperf.store.keys import CheckKey


@dataclass
class _Handed:
    """What the xdist workers reported, already in the form the summary and reports use."""

    statuses: list[str] = field(default_factory=list)
    rows: list[tuple[str, ...]] = field(default_factory=list)
    footprint_rows: list[tuple[str, ...]] = field(default_factory=list)
    missing: int = 0
    missing_machines: set[str] = field(default_factory=set)
    traces: dict[str, list[str]] = field(default_factory=dict)
    profile_lines: list[str] = field(default_factory=list)
    profiles: list[dict[str, Any]] = field(default_factory=list)


class RunResults:
    """The sink every check result of a run goes through."""

    def __init__(self) -> None:
        self._latency: list[LatencyResult] = []
        self._accuracy: list[AccuracyResult] = []
        self._not_timed: list[LatencyResult] = []  # --ortperf-timing=off: skipped, never measured
        self._footprint: list[FootprintResult] = []  # memory and start-up
        self._records: list[dict[str, Any]] = []
        self._contracts: list[ContractResult] = []
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

    def _add(self, record: dict[str, Any]) -> None:
        record = {**record, **self._noted}
        model = self._models.get(str(record["test"]))
        self._records.append({**record, "model": model} if model else record)

    def publish_latency(self, result: LatencyResult, nodeid: str) -> None:
        self._latency.append(result)
        self._add(latency_record(result, nodeid))

    def publish_accuracy(self, result: AccuracyResult, nodeid: str) -> None:
        self._accuracy.append(result)
        self._add(accuracy_record(result, nodeid))

    def publish_footprint(self, result: FootprintResult, nodeid: str) -> None:
        """A memory or start-up check."""
        self._footprint.append(result)
        self._add(footprint_record(result, nodeid))

    def publish_not_timed(self, result: LatencyResult, nodeid: str) -> None:
        """A latency check of a functional-only run: in the statuses and CI files, not in the table."""
        self._not_timed.append(result)
        self._add(not_timed_record(result, nodeid))

    def publish_contract(self, result: ContractResult, nodeid: str) -> None:
        """A relative contract between two variants of one model."""
        self._contracts.append(result)
        self._add(contract_record(result, nodeid))

    def publish_error(self, key: CheckKey, *, kind: str, nodeid: str, message: str) -> None:
        """A check that ended in an error instead of a verdict: reported like a failed check."""
        self._add(error_record(key, kind=kind, nodeid=nodeid, message=message))

    @property
    def records(self) -> list[dict[str, Any]]:
        """One plain record per check, this process's and the workers', for the CI files."""
        return list(self._records)

    def statuses(self) -> list[str]:
        """The status of every check of the run, latency and accuracy, workers' included."""
        results: list[LatencyResult | AccuracyResult | FootprintResult | ContractResult] = [
            *self._latency,
            *self._accuracy,
            *self._footprint,
            *self._contracts,
        ]
        local = [str(r.status) for r in results]
        return local + [str(r.status) for r in self._not_timed] + self._handed.statuses

    def noisy_recordings(self) -> list[str]:
        """Latency figures an update wrote noisy, with why (``latency.recording.noise``, the rule
        ``ortperf show`` marks them by): "node id (spread 14.2% > max-cv 10%)"."""
        return [
            f"{record['test']} ({record.get('noise') or format(record['recorded_spread'], '.1%')})"
            for record in self._records
            if record.get("kind") == "latency" and record.get("noisy")
        ]

    def missing_only(self) -> list[dict[str, Any]]:
        """Under ``--ortperf-update=missing``, what it did with each check, workers' included: one
        note per test and kind (``test``, ``kind``, ``action``, ``reason``, ``changes``)."""
        notes: dict[tuple[str, str], dict[str, Any]] = {}
        for record in self._records:
            note = record.get("update_missing")
            if isinstance(note, Mapping):
                test, kind = str(record["test"]), str(record.get("kind", ""))
                notes.setdefault((test, kind), {"test": test, "kind": kind, **note})
        return list(notes.values())

    def not_timed_count(self) -> int:
        """Latency checks of the run, workers' included, that --ortperf-timing=off skipped."""
        return sum(r.get("kind") == "latency" and r.get("verdict") == Status.NOT_TIMED for r in self._records)

    def latency_rows(self) -> list[tuple[str, ...]]:
        return latency_rows(self._latency) + self._handed.rows

    def footprint_rows(self) -> list[tuple[str, ...]]:
        """Memory and start-up checks, workers' included, for their table."""
        return footprint_rows(self._footprint) + self._handed.footprint_rows

    def missing_latency(self) -> list[CheckKey]:
        """Keys of this process's latency checks that had no baseline on this machine."""
        return [r.key for r in self._latency if r.status == Status.MISSING]

    def missing_count(self) -> int:
        return len(self.missing_latency()) + self._handed.missing

    @property
    def machines_reported_missing(self) -> set[str]:
        """Machines with baselines for checks missing here, as the workers found them."""
        return set(self._handed.missing_machines)

    def reported_differences(self) -> list[str]:
        """A/B output differences reported, not failed (``--ortperf-ab-outputs=report``)."""
        return [
            f"{r.message} (reported, --ortperf-ab-outputs=report)"
            for r in self._accuracy
            if r.status == Status.DIFFERS_REPORTED
        ]

    def worker_traces(self) -> dict[str, list[str]]:
        return dict(self._handed.traces)

    def worker_profile_lines(self) -> list[str]:
        return list(self._handed.profile_lines)

    def worker_profiles(self) -> list[dict[str, Any]]:
        """The workers' profiled tests, as :func:`~pytest_ortperf.reports.ci_files.profile_record`."""
        return list(self._handed.profiles)

    def handover(
        self,
        *,
        missing_machines: Sequence[str],
        traces: dict[str, list[str]],
        profile_lines: Sequence[str],
        profiles: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """What an xdist worker hands the controller, as JSON-able data."""
        return {
            "statuses": self.statuses(),
            "rows": [list(row) for row in self.latency_rows()],
            "footprint_rows": [list(row) for row in self.footprint_rows()],
            "missing": self.missing_count(),
            "missing_machines": sorted(missing_machines),
            "records": self.records,
            "traces": traces,
            "profile_lines": list(profile_lines),
            "profiles": [dict(profile) for profile in profiles],
        }

    def take_over(self, data: dict[str, Any]) -> None:
        """Fold one worker's :meth:`handover` into this (the controller's) sink."""
        handed = self._handed
        handed.statuses += data["statuses"]
        handed.rows += [tuple(row) for row in data["rows"]]
        handed.footprint_rows += [tuple(row) for row in data.get("footprint_rows", [])]
        handed.missing += data["missing"]
        handed.missing_machines.update(data["missing_machines"])
        handed.traces.update(data["traces"])
        handed.profile_lines += data["profile_lines"]
        handed.profiles += data.get("profiles", [])
        self._records += data["records"]
