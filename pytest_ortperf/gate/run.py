"""The state of one gate run and the composition root of its services: the sessions
(``gate/session_factory.py``), the models and inputs (``gate/model_builds.py``), the references
(``gate/reference_builder.py``), the measuring (``gate/measurer.py``), the baselines
(``store/baselines.py``) and the results; and the end of the run (baseline files, CI files, the
summary). Checks never see this object: each is handed the services it uses
(``gate/protocol.py: CheckContext``).

Plain Python; the pytest layer owns one instance per run and hands work to it.
Nothing here touches ONNX Runtime until a test actually asks for a session.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.measurer import Measurer
from pytest_ortperf.gate.model_builds import ModelBuilds
from pytest_ortperf.gate.reference_builder import ReferenceBuilder
from pytest_ortperf.gate.registry import KindRegistry
from pytest_ortperf.gate.run_config import OrtperfConfig
from pytest_ortperf.gate.runtimes import RuntimeFinder
from pytest_ortperf.gate.runtimes import summary_lines as runtime_lines
from pytest_ortperf.gate.services import CheckSettings
from pytest_ortperf.gate.session_factory import SessionFactory
from pytest_ortperf.latency.lock_holder import LockOwner
from pytest_ortperf.latency.timing_lock import TimingLock, default_lock_path
from pytest_ortperf.ort.envs import EnvCache, env_root
from pytest_ortperf.ort.runtime import RuntimeInfo
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.profiling.book import ProfileBook
from pytest_ortperf.reports.ci_files import gate_time, not_compared_lines, profile_record, write_reports
from pytest_ortperf.reports.results import RunResults
from pytest_ortperf.reports.terminal import (
    RunSummary,
    UpdateReport,
    check_row,
    inputs_lines,
    latency_rows,
    lock_wait_lines,
    profile_lines,
    repaired_lines,
)
from pytest_ortperf.reports.tradeoffs import tradeoff_tables, worth_showing
from pytest_ortperf.store.baselines import BaselineError, BaselineStore
from pytest_ortperf.store.machine import Machine, detect_machine
from pytest_ortperf.store.unused import Selection, unused_entries
from pytest_ortperf.version import __version__

# Where reference runtimes were kept before the cache moved to the top of the git work tree
# (ort/envs.py: env_root), under rootdir: still searched.
ENV_DIR = Path(".ortperf/envs")


class OrtperfRun:
    """One run: builds the services checks are handed, and ends the run once."""

    def __init__(
        self,
        config: OrtperfConfig,
        on_build: Callable[[BuiltSession], None] | None = None,
        *,
        kinds: KindRegistry | None = None,
        lock_owner: LockOwner | None = None,
        run_id: str = "",
    ) -> None:
        self.config = config
        self.settings = CheckSettings.of(config)  # what checks read of the configuration
        self.kinds = kinds if kinds is not None else KindRegistry()  # the check kinds of the run
        # One id for the run, shared by its xdist workers: a failed fetch is not tried again in it.
        self.run_id = run_id or uuid.uuid4().hex
        self.announce: Callable[[str], None] | None = None  # a line on the terminal now (plugin layer)
        self.results = RunResults()  # every check result goes through this sink
        self.selection = Selection()  # what pytest collected: unused entries are judged against it
        self._machine: Machine | None = None
        self.sessions = SessionFactory(
            machine=lambda: self.machine,
            run_timeout_s=config.run_timeout_s,
            on_build=on_build,
            pre_pass=lambda model: self.models.pre_pass_of(model),
        )
        self.models = ModelBuilds(config.rootdir, self.sessions)
        self.references = ReferenceBuilder(
            config, self.sessions, self.models, runtime_python=self.runtime_python
        )
        # lock_owner: how this process names itself in the timing lock file (its run, command, worker)
        timing = TimingLock(None if config.parallel_timing else default_lock_path(), lock_owner)
        self.measurer = Measurer(timing, run_timeout_s=config.run_timeout_s)
        self.profiles = ProfileBook(
            lambda: self.sessions.pool,
            config.profile_dir,
            session_profile=config.session_profile,
            native=self.sessions.native_profiler,
            runner=self.sessions.profiled_run,
            worker=os.environ.get("PYTEST_XDIST_WORKER", ""),
        )
        # Repair only ever happens while updating: a plain run never moves a file.
        self.store = BaselineStore(config.baseline_dir, repair=config.repair and config.policy.update)
        self.update_report: UpdateReport | None = None  # set by finish() under --ortperf-update
        self.finish_error = ""  # errors of the run as a whole: see add_errors
        self._unused: list[str] = []  # found once, by finish()
        self._runtimes: RuntimeFinder | None = None
        self.handed_runtime_notes: list[str] = []  # the xdist workers' runtime_notes

    @property
    def runtime(self) -> RuntimeInfo:
        return self.sessions.runtime

    @property
    def machine(self) -> Machine:
        if self._machine is None:
            self._machine = detect_machine(self.config.machine)
        return self._machine

    def runtime_python(self, flavour: str, version: str) -> tuple[str, str]:
        """An interpreter whose environment has ``flavour`` ``version`` (the configured
        ``--ortperf-ab-python``, an ``ortperf env`` of the repository, or one fetched now under
        ``--ortperf-fetch-runtime=auto``) and where it was found; or ("", why there is none)."""
        return self.runtimes.python(flavour, version)

    @property
    def runtimes(self) -> RuntimeFinder:
        """Where recorded runtimes are found or fetched (``gate/runtimes.py``), made on first use."""
        if self._runtimes is None:

            def imports(python: str) -> str:
                """The runtime a worker of ``python`` really imports (WorkerError when none starts)."""
                return self.measurer.workers.side(python, "reference", 1)[0].runtime.describe()

            rootdir = Path(self.config.rootdir)
            # The first is where a fetch creates; the second, where runs looked before env_root.
            roots = dict.fromkeys([env_root(rootdir), rootdir / ENV_DIR])
            self._runtimes = RuntimeFinder(
                caches=[EnvCache(root) for root in roots],
                imports=imports,
                ab_python=self.config.ab_python,
                fetch=self.config.fetch_runtime,
                run_id=self.run_id,
                hold=self.measurer.timing.held,
                say=self.announce,
            )
        return self._runtimes

    def finish(self) -> None:
        """Find unused entries; under ``--ortperf-update`` prune them if asked and write staged changes."""
        policy = self.config.policy
        variants = {variant.id for variant in self.config.variants}
        unused = unused_entries(self.store, self.selection, variants)
        self._unused = unused  # node ids: an entry serves every machine
        if not policy.update:
            return
        if self.config.prune:
            for nodeid in unused:
                test_file, _, test = nodeid.partition("::")
                self.store.stage(test_file, test, None)
        written = self.store.write()
        self.update_report = UpdateReport.tally(
            self.results.statuses(),
            unused=self._unused,
            written=written,
            noisy=self.results.noisy_recordings(),
            missing_only=self.results.missing_only() if policy.update_missing else None,
        )

    def end(self, lost_workers: Sequence[str]) -> bool:
        """The end of the run in the process that writes (serial, or the xdist controller): close the
        profiles, finish, write the CI files. Nothing raises; every problem becomes a run error.
        True when the run must fail (a run error, or unused entries under --ortperf-strict)."""
        errors = []
        try:  # profiling first, but a failure there must not cost the baselines
            self.profiles.close()
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
        config = self.config
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        write_reports(
            self.results.records,
            report_path=config.report_path,
            markdown_path=config.markdown_path,
            step_summary=Path(step_summary) if step_summary else None,
            machine=lambda: self.machine.key,
            runtime=lambda: self.runtime.describe(),
            version=__version__,
            traces=self.traces(),
            unused=self.update_report.unused if self.update_report else self.strict_unused,
            run_errors=[
                *([self.finish_error] if self.finish_error else []),
                *lost_workers,
                *self._repair_warnings(),
            ],
            html_path=config.html_path,
            drawings=self.kinds.drawings(),
            profiles=[*self.profile_records(), *self.results.worker_profiles()],
        )

    def _repair_warnings(self) -> list[str]:
        """For the reports: each repaired file whose damaged copy holds parts the new one lacks, and
        those parts (the terminal shows the same lines)."""
        return [
            "; ".join(line.strip() for line in repaired_lines(repaired)[1:])
            for repaired in self.store.repaired
            if repaired.lost
        ]

    def summary(self, lost_workers: Sequence[str]) -> RunSummary:
        """What the terminal summary shows."""
        records = self.results.records
        rows = latency_rows(records)
        footprint = [
            (kind.row if kind.row is not None else check_row)(record)
            for record in records
            for kind in [self.kinds.get(str(record.get("kind")))]
            if kind is not None and kind.name != "latency" and kind.name != "accuracy"
            and record.get("verdict") != Status.ERROR
        ]
        return RunSummary(
            machine=self.machine.key if rows or footprint else "",
            sessions=self.sessions.summary_lines(),
            runtimes=runtime_lines([*self.runtime_notes(), *self.handed_runtime_notes]),
            errors=[*([self.finish_error] if self.finish_error else []), *lost_workers],
            repaired=list(self.store.repaired),
            strict_unused=self.strict_unused,
            unused_hint=self._unused_hint(),
            rows=rows,
            footprint_rows=footprint,
            missing=self.results.missing_count(),
            elsewhere=self.machines_with_missing_baselines() if rows else [],
            timing_mode=self.measurer.timing.mode,
            gate_time=gate_time(self.results.records),
            not_timed=self.results.not_timed_count(),
            lock_waits=lock_wait_lines(self.results.records),
            inputs=inputs_lines(self.results.records),
            tradeoffs=[table for table in tradeoff_tables(self.results.records) if worth_showing(table)],
            update=self.update_report,
            prune=self.config.prune,
            reported_differences=self.results.reported_differences(),
            not_compared=not_compared_lines(self.results.records),
            profile_lines=[
                line for record in [*self.profile_records(), *self.results.worker_profiles()]
                for line in profile_lines(record)
            ],
        )

    def runtime_notes(self) -> list[str]:
        """What fetching recorded runtimes did in this process (for the summary; a worker hands them
        to the controller, which keeps them in :attr:`handed_runtime_notes`)."""
        return list(self._runtimes.notes) if self._runtimes is not None else []

    def profile_records(self) -> list[dict[str, Any]]:
        """This process's profiled tests, for the reports."""
        return [profile_record(report) for report in self.profiles.reports]

    def traces(self) -> dict[str, list[str]]:
        """Trace paths per marked test, from this process and from xdist workers."""
        local = {r.nodeid: [str(p) for p in r.traces] for r in self.profiles.reports}
        return {**self.results.worker_traces(), **local}

    def add_errors(self, *messages: str) -> None:
        """Errors of the run as a whole (profiling, baselines, reports, workers), in order."""
        self.finish_error = "; ".join(filter(None, [self.finish_error, *messages]))

    @property
    def strict_unused(self) -> list[str]:
        """What --ortperf-strict fails the run on: unused entries left in the files after it."""
        if not self.config.strict or (self.config.policy.update and self.config.prune):
            return []
        return self._unused

    def machines_with_missing_baselines(self) -> list[str]:
        """Machines that do have latency figures for a check that is missing here."""
        machines = self.results.machines_reported_missing
        for test_file, test in self.results.missing_latency():
            try:
                entry = self.store.lookup(test_file, test)
            except BaselineError:
                continue  # reported by the test itself
            machines.update(entry.machines("latency") if entry is not None else [])
        return sorted(machines)

    def _unused_hint(self) -> list[str]:
        """A plain run's one-line pointer at unused entries (none when --ortperf-strict lists them)."""
        if self.config.policy.update or not self._unused or self.strict_unused:
            return []
        count = len(self._unused)
        return [f"{count} unused baseline entries (ortperf update --ortperf-prune removes them)"]

    def close(self) -> None:
        self.sessions.close()
        self.measurer.close()
