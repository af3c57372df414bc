"""The end of a run, in the process that writes (serial, or the xdist controller): the profiles
closed, unused entries found, baseline files written under ``--ortperf-update``, the CI files (JSON,
markdown, HTML) and the terminal summary; and the errors of the run as a whole, from every process."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.registry import KindRegistry
from pytest_ortperf.gate.run_config import OrtperfConfig
from pytest_ortperf.gate.runtimes import summary_lines as runtime_lines
from pytest_ortperf.gate.session_factory import SessionFactory
from pytest_ortperf.latency.timing_lock import TimingLock
from pytest_ortperf.ort.git_models import SHALLOW
from pytest_ortperf.profiling.book import ProfileBook
from pytest_ortperf.reports.ci_files import gate_time, not_compared_lines, profile_record, write_reports
from pytest_ortperf.reports.results import RunResults
from pytest_ortperf.reports.tables import LATENCY_TABLE
from pytest_ortperf.reports.terminal import (
    RunSummary,
    UpdateReport,
    inputs_lines,
    lock_wait_lines,
    profile_lines,
    repaired_lines,
)
from pytest_ortperf.reports.tradeoffs import tradeoff_tables, worth_showing
from pytest_ortperf.store.baselines import BaselineError, BaselineStore
from pytest_ortperf.store.keys import accept_all, whole_test
from pytest_ortperf.store.unused import Selection, unused_entries
from pytest_ortperf.version import __version__


class RunEnd:
    """What the run leaves behind: baseline files, CI files, the summary, the run's errors."""

    def __init__(
        self,
        config: OrtperfConfig,
        *,
        store: BaselineStore,
        selection: Selection,
        results: RunResults,
        profiles: ProfileBook,
        kinds: KindRegistry,
        sessions: SessionFactory,
        timing: TimingLock,
        runtime_notes: Callable[[], list[str]],
    ) -> None:
        # runtime_notes: what fetching recorded runtimes did in this process (gate/runtimes.py)
        self._config = config
        self._store = store
        self._selection = selection
        self._results = results
        self._profiles = profiles
        self._kinds = kinds
        self._sessions = sessions
        self._timing = timing
        self._runtime_notes = runtime_notes
        self.update_report: UpdateReport | None = None  # set by finish() under --ortperf-update
        self.finish_error = ""  # errors of the run as a whole: see add_errors
        self.handed_runtime_notes: list[str] = []  # the xdist workers' runtime_notes
        self._unused: list[str] = []  # found once, by finish()

    def finish(self) -> None:
        """Find unused entries; under ``--ortperf-update`` prune them if asked and write staged changes."""
        policy = self._config.policy
        variants = {variant.id for variant in self._config.variants}
        unused = unused_entries(self._store, self._selection, variants)
        self._unused = unused  # node ids: an entry serves every machine
        if not policy.update:
            return
        if self._config.prune:
            for nodeid in unused:
                test_file, _, test = nodeid.partition("::")
                self._store.stage(test_file, test, None)
        written = self._store.write()
        self.update_report = UpdateReport.tally(
            self._results.statuses(),
            unused=self._unused,
            written=written,
            noisy=self._results.noisy_recordings(),
            coarse=self._results.coarse_recordings(),
            kept=self._results.kept_recordings(),
            added_here=self._results.added_here(),
            # with drift gating off, a recording settles only because nothing keeps its model
            unkept=self._results.settled_recordings() if policy.drift_threshold is None else [],
            missing_only=self._results.missing_only() if policy.update_missing else None,
        )

    def end(self, lost_workers: Sequence[str]) -> bool:
        """The end of the run in the process that writes (serial, or the xdist controller): close the
        profiles, finish, write the CI files. Nothing raises; every problem becomes a run error.
        True when the run must fail (a run error, or unused entries under --ortperf-strict)."""
        errors = []
        try:  # profiling first, but a failure there must not cost the baselines
            self._profiles.close()
        except (OrtperfError, OSError) as exc:
            errors.append(f"cannot finish profiling: {exc}")
        try:
            self.finish()
        except OrtperfError as exc:
            errors.append(str(exc))
        except OSError as exc:
            errors.append(f"cannot finish the ortperf run: {exc}")
        try:  # also after a failed finish: CI uploads the reports of a failed run
            self.write_ci_files(lost_workers)
        except (OrtperfError, OSError) as exc:
            errors.append(f"cannot write a report: {exc}")
        self.add_errors(*errors)  # after the workers' errors
        return bool(self.finish_error or self.strict_unused)

    def write_ci_files(self, lost_workers: Sequence[str]) -> None:
        config = self._config
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        write_reports(
            self._results.records,
            report_path=config.report_path,
            markdown_path=config.markdown_path,
            step_summary=Path(step_summary) if step_summary else None,
            machine=lambda: self._sessions.machine.key,
            runtime=lambda: self._sessions.runtime.describe(),
            version=__version__,
            traces=self.traces(),
            unused=self.update_report.unused if self.update_report else self.strict_unused,
            run_errors=[
                *([self.finish_error] if self.finish_error else []),
                *lost_workers,
                *self._repair_warnings(),
            ],
            html_path=config.html_path,
            drawings=self._kinds.drawings(),
            embedded=self._kinds.drawings(plugins_only=True),
            profiles=[*self.profile_records(), *self._results.worker_profiles()],
        )

    def _repair_warnings(self) -> list[str]:
        """For the reports: each repaired file whose damaged copy holds parts the new one lacks, and
        those parts (the terminal shows the same lines)."""
        return [
            "; ".join(line.strip() for line in repaired_lines(repaired)[1:])
            for repaired in self._store.repaired
            if repaired.lost
        ]

    def summary(self, lost_workers: Sequence[str]) -> RunSummary:
        """What the terminal summary shows."""
        records = self._results.records
        tables = self._kinds.terminal_tables(records)
        rows = next((rows for table, rows in tables if table is LATENCY_TABLE), [])
        others = [(table, rows) for table, rows in tables if table is not LATENCY_TABLE]
        measured_here = any(rows for _, rows in others)
        return RunSummary(
            machine=self._sessions.machine.key if rows or measured_here else "",
            sessions=self._sessions.summary_lines(),
            runtimes=runtime_lines([*self._runtime_notes(), *self.handed_runtime_notes]),
            errors=[*([self.finish_error] if self.finish_error else []), *lost_workers],
            repaired=list(self._store.repaired),
            strict_unused=self.strict_unused,
            unused_hint=self._unused_hint(),
            rows=rows,
            tables=others,
            accept=self._accept_all(records),
            missing=self._results.missing_count(),
            shallow=sum(SHALLOW in r.stored_reason for r in self._results.missing()),
            elsewhere=self.machines_with_missing_baselines() if rows else [],
            runtimes_unavailable=self._results.runtimes_unavailable(),
            timing_mode=self._timing.mode,
            gate_time=gate_time(self._results.records),
            not_timed=self._results.not_timed(),
            lock_waits=lock_wait_lines(self._results.records),
            inputs=inputs_lines(self._results.records),
            tradeoffs=[table for table in tradeoff_tables(self._results.records) if worth_showing(table)],
            update=self.update_report,
            prune=self._config.prune,
            reported_differences=self._results.reported_differences(),
            not_compared=not_compared_lines(self._results.records),
            profile_lines=[
                line
                for record in [*self.profile_records(), *self._results.worker_profiles()]
                for line in profile_lines(record)
            ],
        )

    @staticmethod
    def _accept_all(records: Sequence[CheckRecord]) -> str:
        """One command accepting every failing test whole; a test with a check that no command
        accepts (an error, a change a shallow clone cannot judge: ``"accept": ""``) is left out, as
        recording it would accept that check unseen."""
        failing = [r for r in records if r.failed and r.accept is not None]
        blocked = {whole_test(r.test) for r in failing if not r.accept}
        return accept_all([str(r.accept) for r in failing if whole_test(r.test) not in blocked])

    def profile_records(self) -> list[dict[str, Any]]:
        """This process's profiled tests, for the reports."""
        return [profile_record(report) for report in self._profiles.reports]

    def traces(self) -> dict[str, list[str]]:
        """Trace paths per marked test, from this process and from xdist workers."""
        local = {r.nodeid: [str(p) for p in r.traces] for r in self._profiles.reports}
        return {**self._results.worker_traces(), **local}

    def add_errors(self, *messages: str) -> None:
        """Errors of the run as a whole (profiling, baselines, reports, workers), in order."""
        self.finish_error = "; ".join(filter(None, [self.finish_error, *messages]))

    @property
    def strict_unused(self) -> list[str]:
        """What --ortperf-strict fails the run on: unused entries left in the files after it."""
        if not self._config.strict or (self._config.policy.update and self._config.prune):
            return []
        return self._unused

    def machines_with_missing_baselines(self) -> list[str]:
        """Machines that do have figures of its kind's part for a check that is missing here."""
        machines = self._results.machines_reported_missing
        for record in self._results.missing():
            kind = self._kinds.get(record.kind)
            if record.entry is None or kind is None or kind.part is None:
                continue
            try:
                entry = self._store.lookup(*record.entry)
            except BaselineError:
                continue  # reported by the test itself
            machines.update(entry.machines(kind.part) if entry is not None else [])
        return sorted(machines)

    def _unused_hint(self) -> list[str]:
        """A plain run's one-line pointer at unused entries (none when --ortperf-strict lists them)."""
        if self._config.policy.update or not self._unused or self.strict_unused:
            return []
        count = len(self._unused)
        return [f"{count} unused baseline entries (ortperf update --ortperf-prune removes them)"]
