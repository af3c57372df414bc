"""pytest-xdist: workers measure, only the controller writes baseline files.

A worker never writes baselines. At its end it hands the controller what it
staged (entries and reference-output bytes), which tests its files define, the
statuses of its checks and its report rows, through xdist's ``workeroutput``.
The controller merges them and writes once, so ``-n 4`` records exactly what a
serial update would, with no lock on the files and nothing lost. Under
``--ortperf-repair`` a worker treats a damaged file as empty and names it; the
controller sets it aside just before it writes.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.plugin.state import OrtperfRun
from pytest_ortperf.reports.terminal import latency_rows, profile_lines
from pytest_ortperf.store.baselines import BaselineEntry

KEY = "ortperf"


def export(run: OrtperfRun) -> str:
    """Everything the controller needs from one worker, as JSON."""
    return json.dumps(
        {
            "staged": [
                [str(path), test, machine, None if entry is None else entry.as_dict()]
                for path, test, machine, entry in run.store.staged()
            ],
            "files": {str(path): base64.b64encode(data).decode() for path, data in run.store.staged_files()},
            "damaged": [str(path) for path in run.store.damaged()],  # --ortperf-repair: set aside here
            "collected": sorted(run.collected),
            "partially_selected": sorted(run.partially_selected),
            "statuses": [r.status for r in run.results] + [r.status for r in run.accuracy_results],
            "rows": [list(row) for row in latency_rows(run.results)],
            "missing": sum(r.status == "missing" for r in run.results),
            "missing_machines": run.machines_with_missing_baselines(),
            "records": run.records,
            "traces": run.traces(),
            "profile_lines": [line for report in run.profiles.reports for line in profile_lines(report)],
            "error": run.finish_error,
        }
    )


def merge(run: OrtperfRun, payload: str) -> None:
    """Fold one worker's export into the controller's run."""
    data: dict[str, Any] = json.loads(payload)
    errors = [data["error"]] if data.get("error") else []
    for path, test, machine, entry in data["staged"]:
        try:
            staged = None if entry is None else BaselineEntry.from_dict(entry)
        except (OrtperfError, KeyError, TypeError, ValueError) as exc:
            errors.append(f"{path}: the entry measured for {test} on {machine} cannot be stored ({exc})")
            continue
        run.store.stage_at(Path(path), test, machine, staged)
    for path, encoded in data["files"].items():
        run.store.stage_file_at(Path(path), base64.b64decode(encoded))
    for path in data["damaged"]:
        run.store.recheck(Path(path))
    run.collected.update(data["collected"])
    run.partially_selected.update(data["partially_selected"])
    run.remote_statuses += data["statuses"]
    run.remote_rows += [tuple(row) for row in data["rows"]]
    run.remote_missing += data["missing"]
    run.remote_missing_machines.update(data["missing_machines"])
    run.records += data["records"]
    run.remote_traces.update(data["traces"])
    run.remote_profile_lines += data["profile_lines"]
    run.add_errors(*errors)
