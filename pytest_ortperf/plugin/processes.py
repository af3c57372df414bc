"""The two roles a pytest process plays for ortperf, each a small plugin object registered in
``pytest_configure`` (as pytest-xdist keeps its controller and worker apart).

* :class:`Controller`, in the process that writes: a serial run, or xdist's
  controller, which runs no test itself. It takes over what each worker hands
  over, ends the run once (profiles, unused entries, baseline files, CI files)
  and prints the summary. With ``-n 4`` it records exactly what a serial update
  would, with no lock on the files and nothing lost; a worker that went down
  without handing over is named.
* :class:`XdistWorker`, in an xdist worker, never writes baselines. At its end it
  hands the controller what it staged (entries and reference-output bytes),
  which tests its files define and what its checks reported, through xdist's
  ``workeroutput``.

Under ``--ortperf-repair`` a worker treats a damaged file as empty and names it;
the controller sets it aside just before it writes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.run import OrtperfRun
from pytest_ortperf.plugin.benchmark import handed, publish_handed
from pytest_ortperf.reports.terminal import lost_worker_line, summary_lines
from pytest_ortperf.store.baselines import BaselineEntry

KEY = "ortperf"


class Controller:
    """The process that writes: takes over workers' results, ends the run, prints the summary."""

    def __init__(self, run: OrtperfRun) -> None:
        self._run = run
        self.lost: list[str] = []  # xdist workers that went down without handing over

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """pytest-xdist: a worker finished; take over what it staged and reported."""
        payload = getattr(node, "workeroutput", {}).get(KEY)
        if payload is not None:
            entries = merge(self._run, payload)
            config = getattr(node, "config", None)
            if entries and config is not None:
                publish_handed(config, entries)
        if error is not None or payload is None:
            self.lost.append(lost_worker_line(_worker_id(node), update=self._run.config.policy.update))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._run.ending.end(self.lost):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        lines = summary_lines(self._run.ending.summary(self.lost))
        if lines:
            terminalreporter.write_sep("-", "ortperf")
            for line in lines:
                terminalreporter.write_line(line)


class XdistWorker:
    """An xdist worker: hands everything to the controller at the end of the session."""

    def __init__(self, run: OrtperfRun) -> None:
        self._run = run

    @pytest.hookimpl(tryfirst=True)  # before xdist sends the worker's output to the controller
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        run = self._run
        try:
            run.profiles.close()
        except (OrtperfError, OSError) as exc:
            run.ending.add_errors(f"cannot finish profiling: {exc}")
        session.config.workeroutput[KEY] = export(run, handed(session.config))  # type: ignore[attr-defined]


def export(run: OrtperfRun, benchmarks: Sequence[Mapping[str, Any]] = ()) -> str:
    """Everything the controller needs from one worker, as JSON (``benchmarks``: the entries it kept
    for pytest-benchmark, ``plugin/benchmark.py``)."""
    return json.dumps(
        {
            "benchmarks": list(benchmarks),
            "staged": [
                [str(path), test, None if entry is None else entry.as_dict()]
                for path, test, entry in run.store.staged()
            ],
            "files": {str(path): base64.b64encode(data).decode() for path, data in run.store.staged_files()},
            "damaged": [str(path) for path in run.store.damaged()],  # --ortperf-repair: set aside here
            "collected": sorted(run.selection.collected),
            "partially_selected": sorted(run.selection.partially_selected),
            "results": run.results.handover(
                missing_machines=run.ending.machines_with_missing_baselines(),
                traces=run.ending.traces(),
                profiles=run.ending.profile_records(),
            ),
            "error": run.ending.finish_error,
            "runtime_notes": run.runtime_notes(),
        }
    )


def merge(run: OrtperfRun, payload: str) -> list[dict[str, Any]]:
    """Fold one worker's export into the controller's run; the pytest-benchmark entries it kept."""
    data: dict[str, Any] = json.loads(payload)
    errors = [data["error"]] if data.get("error") else []
    for path, test, entry in data["staged"]:
        try:
            staged = None if entry is None else BaselineEntry.from_dict(entry)
        except (OrtperfError, KeyError, TypeError, ValueError) as exc:
            errors.append(f"{path}: the entry recorded for {test} cannot be stored ({exc})")
            continue
        run.store.stage_at(Path(path), test, staged)
    for path, encoded in data["files"].items():
        run.store.stage_file_at(Path(path), base64.b64decode(encoded))
    for path in data["damaged"]:
        run.store.recheck(Path(path))
    run.selection.add(data["collected"], partially_selected=data["partially_selected"])
    run.results.take_over(data["results"])
    run.ending.handed_runtime_notes += [str(note) for note in data.get("runtime_notes", [])]
    run.ending.add_errors(*errors)
    benchmarks = data.get("benchmarks", [])
    return [entry for entry in benchmarks if isinstance(entry, dict)] if isinstance(benchmarks, list) else []


def _worker_id(node: Any) -> str:
    gateway = getattr(node, "gateway", None)
    return str(getattr(gateway, "id", None) or "an xdist worker")
