"""The graph check's decisions: plain logic on graphs already built.

The graph check follows the recipe's routes (``checks/paths.py``), exactly:

- ``unchanged``: nothing the repository controls changed; the graph is shown (and, where this
  hardware class recorded one, said to differ if it does: that only informs);
- ``side by side``: the recorded reference is rebuilt and its optimized graph built on this machine
  beside the current one: the comparison is exact and needs no figures of any hardware;
- ``stored figures``: nothing can be rebuilt; a graph recorded on the same hardware class decides;
- ``missing`` and ``record`` as for the other checks.

A graph result is a :class:`FootprintResult` of kind ``graph`` (one table, one record shape, one
handover to the xdist controller for every check measured outside the timed loop), with the
difference in words as its change.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_ortperf.checks.footprint_verdicts import FootprintResult, PartFigures, closing_lines, part_entry
from pytest_ortperf.checks.paths import missing_message
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.graph.diff import GraphDiff, failures, pinned
from pytest_ortperf.graph.figures import GraphFigures
from pytest_ortperf.ort.git_models import SHALLOW
from pytest_ortperf.store.baselines import BaselineEntry, EntryState
from pytest_ortperf.store.keys import CheckKey

GRAPH = "graph"


@dataclass(frozen=True)
class GraphResult(FootprintResult):
    """How a graph check ended: the current graph, what it was compared with, the difference."""

    difference: str = ""  # the change in words ("FusedConv 3 -> 0, Conv +3"), or "same graph"

    @property
    def change(self) -> str:
        if self.path == "record" and self.changes:
            return "; ".join(self.changes)
        if self.path == "unchanged":
            # the whole sentence, never a possessive without its noun (it reads in the terminal and JSON)
            differs = f"; {self.difference} against the graph this hardware class recorded"
            differs += " (shown, not judged)"
            return "nothing changed" + (differs if self.difference else "")
        return self.difference


def stored_graph(
    entry: BaselineEntry | None, machine: str, hardware_class: str
) -> tuple[GraphFigures, str] | None:
    """A graph this entry recorded on ``hardware_class`` (this machine key's first), with when."""
    if entry is None:
        return None
    mine = entry.figures_for(machine)
    candidates = ([mine] if mine is not None else []) + [
        entry.figures[m] for m in sorted(entry.figures) if m != machine
    ]
    for figures in candidates:
        graph = figures.part_as(GRAPH, GraphFigures.from_dict)
        if graph is not None and graph.hardware_class == hardware_class:
            return graph, figures.recorded
    return None


def unchanged(key: CheckKey, current: GraphFigures, stored: GraphFigures | None) -> GraphResult:
    """Nothing the repository controls changed: passes; the difference from a graph this hardware
    class recorded is shown, never judged (the runtime, settings and model are the recipe's)."""
    diff = GraphDiff(stored, current) if stored is not None else None
    return GraphResult(
        key,
        GRAPH,
        Status.UNCHANGED,
        current,
        "unchanged",
        reference=stored,
        reference_label="this hardware class's recorded graph" if stored is not None else "",
        difference="" if diff is None or diff.same else diff.text(),
    )


def compared(
    key: CheckKey,
    current: GraphFigures,
    reference: GraphFigures,
    *,
    path: str,
    label: str,
    mode: str,
    expected: Mapping[str, int],
    recorded: str = "",
    changes: Sequence[str] = (),
    stored_reason: str = "",
    notes: Sequence[str] = (),
    optimized: bool = True,
) -> GraphResult:
    """The current graph against ``reference``, exactly: fails on what :func:`graph.diff.failures`
    names under ``mode``, or on a pinned count it does not have. ``optimized``: False at level
    ``disabled``, where a dropped fused op type is the model's own op change (``GraphDiff.optimized``)."""
    diff = GraphDiff(reference, current, optimized=optimized)
    reasons = failures(diff, mode) + [f"pinned count: {p}" for p in pinned(current, expected)]
    result = GraphResult(
        key,
        GRAPH,
        Status.REGRESSION if reasons else Status.OK,
        current,
        path,
        reference=reference,
        reference_label=label,
        recorded=recorded,
        changes=tuple(changes),
        failed=bool(reasons),
        notes=tuple(notes),
        difference=diff.text(),
    )
    if not reasons:
        return result
    lines = [
        f"graph regression in {key.shown} against {label}" + (f" (recorded {recorded})" if recorded else ""),
        f"  reference: {reference.describe()}",
        f"  current:   {current.describe()}",
        *(f"  {line}" for line in diff.lines()),
        *(f"  fails: {reason}" for reason in reasons),
        *closing_lines(GRAPH, key, changes=changes, stored_reason=stored_reason, notes=notes),
    ]
    return replace(result, message="\n".join(lines))


def alone(
    key: CheckKey,
    current: GraphFigures,
    policy: CheckPolicy,
    *,
    expected: Mapping[str, int],
    status: Status,
    path: str,
    reason: str,
    notes: Sequence[str] = (),
) -> GraphResult:
    """Nothing to compare with (``missing``; same-job A/B without a reference): the graph is shown,
    pinned counts still decide, and a missing baseline fails or skips as ``--ortperf-missing`` says.
    A missing one keeps its ``reason`` (``stored_reason``): a changed model that a shallow clone
    cannot rebuild is not judged, and fetching the history, not recording, is its fix."""
    problems = pinned(current, expected)
    missing = status is Status.MISSING
    if problems:
        message = (
            f"graph of {key.shown}: pinned counts not met: {'; '.join(problems)}; graph {current.describe()}"
        )
        return GraphResult(
            key, GRAPH, Status.REGRESSION, current, path, failed=True, message=message, notes=tuple(notes)
        )
    if missing and SHALLOW in reason:
        message = missing_message(GRAPH, key, reason, f"built {current.describe()}")
    elif missing:
        message = (
            f"no graph baseline for {key.shown} ({reason}); built {current.describe()}. "
            f"Record it with:\n    {key.record_command}"
        )
    else:
        message = f"graph of {key.shown}: {reason}; built {current.describe()}."
    return GraphResult(
        key,
        GRAPH,
        status,
        current,
        path,
        stored_reason=reason if missing else "",
        failed=missing and policy.missing == "fail",
        skipped=missing and policy.missing == "skip",
        message=message,
        notes=tuple(notes),
    )


def shown_not_judged(result: GraphResult, recorded: GraphFigures, when: str, *, runtime: str) -> GraphResult:
    """A missing graph check (the recorded runtime cannot be had) with the graph that runtime recorded
    on this hardware class beside it: the difference, which only the runtime explains, is shown in
    the message and the record, never judged."""
    current = result.current
    assert isinstance(current, GraphFigures)
    diff = GraphDiff(recorded, current)
    difference = "same graph" if diff.same else diff.text()
    head, sep, command = result.message.partition(" Record it with:")
    lines = [
        f"  what the runtime changes, shown, not judged: the graph {runtime} built on this hardware class "
        f"(recorded {when}) against this runtime's",
        f"    reference: {recorded.describe()}",
        f"    current:   {current.describe()}",
        *(f"    {line}" for line in (diff.lines() if not diff.same else ["same graph"])),
    ]
    return replace(
        result,
        reference=recorded,
        reference_label=f"the graph {runtime} built on this hardware class (shown, not judged)",
        recorded=when,
        difference=difference,
        message="\n".join([head, *lines, *([f"Record it with:{command}"] if sep else [])]),
    )


def record(
    key: CheckKey, current: GraphFigures, *, entry: EntryState, environment: Mapping[str, Any]
) -> GraphResult:
    """Record the graph in this machine key's figures under the entry's recipe, keeping the other
    parts (the result's ``staged``, for the gate to stage). A graph equal to the one recorded is
    kept, so an update of a steady model writes nothing."""

    def changes_of(before: PartFigures) -> tuple[str, ...] | None:
        assert isinstance(before, GraphFigures)
        return None if before == current else (f"graph: {GraphDiff(before, current).text()}",)

    today = datetime.date.today().isoformat()
    status, before, changes, staged = part_entry(
        GRAPH, key, current, state=entry, environment=environment, today=today, changes_of=changes_of
    )
    stays = "same graph" if status is Status.UNCHANGED else ""
    return GraphResult(
        key,
        GRAPH,
        status,
        current,
        "record",
        reference=before,
        changes=changes,
        difference=stays,
        staged=staged,
    )
