"""What a page shows: the jobs (one JSON report each) and their checks, read from report files."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.reports.html.fields import is_check

ERROR = str(Status.ERROR)


# Passing verdicts that still ask for a look: drawn amber, not green.
WARNINGS = frozenset(
    str(status)
    for status in (
        Status.MISSING,
        Status.NO_REFERENCE,
        Status.DRIFTED,
        Status.INPUTS_CHANGED,
        Status.DIFFERS_REPORTED,
        Status.INCONCLUSIVE,
        Status.NOT_CONFIRMED,
    )
)


class ReportFileError(OrtperfError):
    """A JSON report that cannot be read or is not one: names the file."""


@dataclass(frozen=True)
class Job:
    """One run's JSON report; ``label`` names it on a page that merges several ("" for one run)."""

    label: str
    document: Mapping[str, Any]


def read_reports(paths: Sequence[Path]) -> tuple[list[Job], list[str]]:
    """The reports that can be read, each named after its file (with its folder where two files
    share a name, as a CI matrix's downloaded artifacts do), and what is wrong with the others."""
    stems = [path.stem for path in paths]
    jobs, problems = [], []
    for path in paths:
        label = path.stem if stems.count(path.stem) == 1 else f"{path.parent.name}/{path.stem}"
        try:
            jobs.append(Job(label=label, document=read_report(path).document))
        except ReportFileError as exc:
            problems.append(str(exc))
    return jobs, problems


def read_report(path: Path) -> Job:
    """A JSON report file as a :class:`Job` named after the file; :class:`ReportFileError` names the
    file and what is wrong with it."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReportFileError(f"{path}: cannot read the report ({exc.strerror or exc})") from exc
    except (RecursionError, ValueError) as exc:  # JSONDecodeError, bad UTF-8, numbers past 4300 digits
        raise ReportFileError(f"{path}: not a JSON report ({exc})") from exc
    if not isinstance(document, dict) or not isinstance(document.get("checks"), list):
        raise ReportFileError(
            f"{path}: not a pytest-ortperf JSON report (no list of checks; write one with --ortperf-report)"
        )
    bad = [i for i, check in enumerate(document["checks"]) if not is_check(check)]
    if bad:
        raise ReportFileError(f"{path}: check {bad[0]} is not a check record (needs test, kind and verdict)")
    return Job(label=path.stem, document=document)


def job_labels(jobs: Sequence[Job]) -> list[Job]:
    """The jobs with labels that tell them apart: an empty label becomes the job's machine, and a
    label that repeats gets a number."""
    labels = [job.label or str(job.document.get("machine", "run")) for job in jobs]
    seen: dict[str, int] = {}
    labelled = []
    for label, job in zip(labels, jobs, strict=True):
        if labels.count(label) > 1:
            seen[label] = seen.get(label, 0) + 1
            label = f"{label} #{seen[label]}"
        labelled.append(Job(label=label, document=job.document))
    return labelled


@dataclass(frozen=True)
class PageCheck:
    anchor: str
    job: str
    record: CheckRecord

    @property
    def state(self) -> str:
        """failed, error, warn or ok: how the page colours it."""
        verdict = self.record.verdict
        if verdict == ERROR:
            return ERROR
        if self.record.failed:
            return "failed"
        return "warn" if verdict in WARNINGS else "ok"
