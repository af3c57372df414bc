"""The profiled tests (``ort_profile``): time by op type and provider against the baseline's profile,
and the nodes that grew."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from functools import partial
from html import escape
from typing import Any

from pytest_ortperf.reports.html.fields import as_number, guarded, objects
from pytest_ortperf.reports.html.jobs import Job, PageCheck
from pytest_ortperf.reports.html.operator_view import operator_comparison


def profile_anchor(job: str, test: str) -> str:
    """A stable anchor for a profiled test: the same on every rendering of the same report."""
    return "p-" + hashlib.sha1(f"{job}\0{test}".encode()).hexdigest()[:12]


def profiles_section(jobs: Sequence[Job], checks: Sequence[PageCheck]) -> str:
    merged = len(jobs) > 1
    baselines: dict[tuple[str, str], Mapping[str, Any]] = {}
    for check in checks:
        baseline = check.record.baseline
        if baseline is not None and isinstance(
            baseline.get("profile"), Mapping
        ):  # a timed check's, as recorded
            baselines[(check.job, check.record.test)] = baseline["profile"]
    sections = []
    for job in jobs:
        label = job.label if merged else ""
        for profile in objects(job.document.get("profiles")):
            if not isinstance(profile, Mapping):
                continue
            test = str(profile.get("test", "?"))
            baseline = baselines.get((label, test))
            drawn = guarded(partial(_profile, label, test, profile, baseline), f"the profile of {test}")
            sections.append(drawn)
    body = (
        "".join(sections) or "<p class='muted'>No profiled test (mark one with <code>ort_profile</code>).</p>"
    )
    return f'<section id="profiles"><h2>Profiled tests</h2>{body}</section>'


def _profile(job: str, test: str, profile: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> str:
    now = profile.get("profile")
    providers = profile.get("providers")
    exact = (
        {str(k): float(v) for k, v in providers.items() if isinstance(v, (int, float))}
        if isinstance(providers, Mapping)
        else None
    )
    drawn = operator_comparison(
        baseline,
        now if isinstance(now, Mapping) else {},
        sides=("baseline" if baseline else "no baseline profile", "current"),
        after_providers=exact,
    )
    fallback = profile.get("fallback_nodes") or []
    notes = (
        f"<p class='lost'>nodes that fell back to another provider: "
        f"{escape(', '.join(map(str, fallback)))}</p>"
        if fallback
        else ""
    )
    runs = profile.get("runs")
    per_run = as_number(profile.get("run_ms"))
    head = f"{runs} profiled runs" + (f", {per_run:.3f} ms per run" if per_run is not None else "")
    title = f"{test}{' · ' + job if job else ''}"
    return (
        f'<details class="check" id="{profile_anchor(job, test)}"><summary>'
        f'<span class="mono">{escape(title)}</span> · {escape(head)}</summary><div class="body">'
        f"{drawn}{notes}</div></details>"
    )
