"""The memory and start-up checks' decisions: plain logic on figures already measured.

Both checks follow the latency check's routes (``checks/paths.py``): ``unchanged`` shows the figures
and the drift against this hardware's own; ``side by side`` compares with the recorded reference,
rebuilt and measured in the same job; ``stored figures`` compares with this hardware's; ``missing``
says why there is nothing to compare with; an update records (``record``). What differs between them
is only how two sets of figures compare, which the gate hands in as ``compare``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_ortperf.checks.paths import missing_message
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.footprint.comparison import FigureComparison, worst
from pytest_ortperf.footprint.memory_figures import MemoryFigures
from pytest_ortperf.footprint.startup_figures import StartupFigures
from pytest_ortperf.graph.figures import GraphFigures
from pytest_ortperf.latency.decision import Verdict
from pytest_ortperf.store.baselines import BaselineEntry, EntryState, Figures
from pytest_ortperf.store.environment import what_changed
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.recipe import same_or_identical, split

MEMORY, STARTUP = "memory", "startup"
KIND_TEXT = {MEMORY: "memory", STARTUP: "start-up", "graph": "graph"}
# GraphFigures: checks/graph_verdicts.py's results
PartFigures = MemoryFigures | StartupFigures | GraphFigures
Compare = Callable[[PartFigures, PartFigures], Sequence[FigureComparison]]


@dataclass(frozen=True)
class FootprintResult:
    """How a memory or start-up check ended, with the figures it measured and compared."""

    key: CheckKey
    kind: str  # MEMORY or STARTUP: the part of the baseline's figures it reads and records
    status: Status
    current: PartFigures | None
    path: str  # the route: "unchanged", "side by side vs ...", "stored figures", "missing", "record"
    reference: PartFigures | None = None  # what it was compared with, stored or measured now
    reference_label: str = ""
    comparisons: tuple[FigureComparison, ...] = ()
    recorded: str = ""  # when the stored figures compared with were recorded
    changes: tuple[str, ...] = ()
    # Why the stored figures decided, or why none could (a shallow clone without the recorded model)
    stored_reason: str = ""
    failed: bool = False
    skipped: bool = False
    message: str = ""
    notes: tuple[str, ...] = ()  # what could not be measured here, and why
    # Why it failed, section by section (title, lines): memory's nodes whose planned bytes grew most.
    explanations: tuple[tuple[str, tuple[str, ...]], ...] = ()
    staged: BaselineEntry | None = None  # an update: the entry its verdict asks the gate to stage

    @property
    def change(self) -> str:
        """The decisive change (the figure with the worst verdict); an unchanged check's says so first,
        an update's says what made it record."""
        unchanged = self.path == "unchanged"
        if self.path == "record" and self.changes:  # what made the update record
            return "; ".join(self.changes)
        if self.comparisons:
            verdict = worst(self.comparisons)
            deciding = next((c for c in self.comparisons if c.verdict is verdict), self.comparisons[0])
            text = f"{deciding.figure} {deciding.describe()}"
            return f"nothing changed; {text} against this hardware's figures" if unchanged else text
        return "nothing changed" if unchanged else ""


def _part(figures: Figures | None, kind: str, like: PartFigures) -> PartFigures | None:
    """The ``kind`` part of ``figures``, typed as ``like`` (the figures measured now) is."""
    decode: Callable[[Any], PartFigures] = type(like).from_dict
    return figures.part_as(kind, decode) if figures is not None else None


def unchanged(
    kind: str, key: CheckKey, current: PartFigures, stored: Figures | None, compare: Compare
) -> FootprintResult:
    """Nothing the repository controls changed: passes, compared with this hardware's own figures for
    information when it has some."""
    before = _part(stored, kind, current)
    comparisons = tuple(compare(before, current)) if before is not None else ()
    return FootprintResult(
        key,
        kind,
        Status.UNCHANGED,
        current,
        "unchanged",
        reference=before,
        reference_label="this hardware's figures" if before is not None else "",
        comparisons=comparisons,
        recorded=stored.recorded if stored is not None and before is not None else "",
    )


def judged(
    kind: str,
    key: CheckKey,
    current: PartFigures,
    reference: PartFigures,
    comparisons: Sequence[FigureComparison],
    policy: CheckPolicy,
    *,
    path: str,
    label: str,
    recorded: str = "",
    changes: Sequence[str] = (),
    stored_reason: str = "",
    explain: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> FootprintResult:
    """A comparison's result: fails on a regression (or, with ``--ortperf-fail-on-improvement``, an
    improvement) of any deciding figure, with a message that names the figures and the change."""
    if not comparisons:
        verdict = Verdict.INCONCLUSIVE
        notes = (*notes, "the two sides share no figure to compare")
    else:
        verdict = worst(comparisons)
    failed = verdict is Verdict.REGRESSION or (verdict is Verdict.IMPROVED and policy.fail_on_improvement)
    result = FootprintResult(
        key,
        kind,
        Status.of(verdict),
        current,
        path,
        reference=reference,
        reference_label=label,
        comparisons=tuple(comparisons),
        recorded=recorded,
        changes=tuple(changes),
        stored_reason=stored_reason,
        failed=failed,
        notes=tuple(notes),
    )
    if not failed:
        return result
    what = "regression" if verdict is Verdict.REGRESSION else "improvement"
    width = 10
    lines = [
        f"{KIND_TEXT[kind]} {what} in {key.shown} against {label}"
        + (f" (recorded {recorded})" if recorded else ""),
        *_figure_lines("reference:", reference, width),
        *_figure_lines("current:", current, width),
    ]
    for comparison in comparisons:
        mark = "" if comparison.verdict is Verdict.OK else f" -> {comparison.verdict.value}"
        lines.append(f"  {'change:':<{width}} {comparison.figure} {comparison.describe()}{mark}")
        lines.append(f"  {'':<{width}} limit {comparison.rule}")
    if explain:
        lines.append(f"  {GREW_MOST}: {', '.join(explain)}")
        result = replace(result, explanations=((GREW_MOST, tuple(explain)),))
    lines += closing_lines(kind, key, changes=changes, stored_reason=stored_reason, notes=notes)
    return replace(result, message="\n".join(lines))


GREW_MOST = "nodes whose bytes grew most"


def closing_lines(
    kind: str, key: CheckKey, *, changes: Sequence[str], stored_reason: str, notes: Sequence[str]
) -> list[str]:
    """How a failed memory, start-up or graph check's message ends: what changed since the baseline,
    why stored figures decided, the notes, and the command that accepts the new figures (last)."""
    lines = ["  changed since the baseline: " + "; ".join(changes)] if changes else []
    if stored_reason:
        lines.append(f"  decided by stored figures: {stored_reason}")
    lines += [f"  note: {note}" for note in notes]
    lines.append(f"  to accept the new {KIND_TEXT[kind]}: {key.record_command}")
    return lines


def _figure_lines(title: str, figures: PartFigures, width: int) -> list[str]:
    body = figures.lines()
    return [f"  {title if i == 0 else '':<{width}} {line}" for i, line in enumerate(body)]


def nothing_to_compare(
    kind: str, key: CheckKey, current: PartFigures, label: str, *, identical: bool, reason: str
) -> FootprintResult:
    """Same-job A/B with nothing to compare (a new model, or one identical to the reference): the
    figures are shown, and the check passes."""
    return FootprintResult(
        key,
        kind,
        Status.IDENTICAL_TO_REFERENCE if identical else Status.NO_REFERENCE,
        current,
        f"side by side vs {label}",
        reference_label=label,
        message=f"{KIND_TEXT[kind]} of {key.shown}: {reason}; measured {current.describe()}.",
    )


def not_timed(kind: str, key: CheckKey) -> FootprintResult:
    """A timed check (start-up) of a functional-only run (``--ortperf-timing=off``): skipped, nothing
    measured, reported as 'not timed'."""
    return FootprintResult(
        key,
        kind,
        Status.NOT_TIMED,
        None,
        "not timed",
        skipped=True,
        message=f"{KIND_TEXT[kind]} of {key.shown} not timed: timing is off (--ortperf-timing=off); nothing "
        "is measured.",
    )


def missing(
    kind: str, key: CheckKey, current: PartFigures, policy: CheckPolicy, *, reason: str
) -> FootprintResult:
    message = missing_message(KIND_TEXT[kind], key, reason, f"measured {current.describe()}")
    return FootprintResult(
        key,
        kind,
        Status.MISSING,
        current,
        "missing",
        stored_reason=reason,
        failed=policy.missing == "fail",
        skipped=policy.missing == "skip",
        message=message,
    )


def record(
    kind: str,
    key: CheckKey,
    current: PartFigures,
    *,
    entry: EntryState,
    environment: Mapping[str, Any],
    today: str,
    compare: Compare,
) -> FootprintResult:
    """Record this hardware's ``kind`` figures under the entry's recipe, keeping the other checks'
    parts of its figures (the result's ``staged``, for the gate to stage). Figures that compare as
    unchanged with those recorded are kept, so an update of a steady model leaves the file byte for
    byte."""

    def changes_of(before: PartFigures) -> tuple[str, ...] | None:
        comparisons = compare(before, current)
        # A figure this version measures that the stored ones lack (one added since they were recorded).
        added = tuple(
            f"{name} added" for name in current.as_dict() if name not in before.as_dict() and name != "nodes"
        )
        if not added and comparisons and worst(comparisons) in (Verdict.OK, Verdict.INCONCLUSIVE):
            return None
        return added + tuple(f"{c.figure} {c.describe()}" for c in comparisons if c.verdict is not Verdict.OK)

    status, before, changes, staged = part_entry(
        kind, key, current, state=entry, environment=environment, today=today, changes_of=changes_of
    )
    comparisons = tuple(compare(before, current)) if before is not None else ()
    return FootprintResult(
        key,
        kind,
        status,
        current,
        "record",
        reference=before,
        comparisons=comparisons,
        changes=changes,
        staged=staged,
    )


def part_entry(
    kind: str,
    key: CheckKey,
    current: PartFigures,
    *,
    state: EntryState,
    environment: Mapping[str, Any],
    today: str,
    changes_of: Callable[[PartFigures], tuple[str, ...] | None],
) -> tuple[Status, PartFigures | None, tuple[str, ...], BaselineEntry | None]:
    """The entry with ``current`` as this machine key's ``kind`` part, under the entry's recipe,
    keeping the other checks' parts: (status, the part it replaces, what made it record, the entry
    to stage). ``changes_of(stored part)`` says what changed, or None when the stored part stands
    (nothing to stage: an update of a steady model leaves the file byte for byte)."""
    recipe, measured_on = split(environment)
    existing = state.current
    if existing is None:
        entry = BaselineEntry(variant=key.variant, recorded=today, recipe=recipe)
        figures = Figures(recorded=today, measured_on=measured_on).with_part(kind, current)
        return Status.NEW, None, (), entry.with_figures(key.machine, figures)
    same = same_or_identical(existing.recipe, recipe)
    here = existing.figures_for(key.machine) if same else None
    before = _part(here, kind, current)
    if before is not None:
        found = changes_of(before)
        if found is None:
            return Status.UNCHANGED, before, (), None
        changes = found
    elif same and state.loaded is None:
        changes = ()  # a new entry, written by another check of this run: new with it
    elif same:
        changes = (f"{KIND_TEXT[kind]} figures of this hardware added",)
    else:
        dropped = "figures measured under the old recipe dropped"
        changes = (*what_changed(existing.recipe, recipe), dropped)
    base = here if here is not None else Figures(recorded=today, measured_on=measured_on)
    figures = base.with_part(kind, current)
    entry = existing.with_recipe(recipe, recorded=today).with_figures(key.machine, figures)
    return (Status.NEW if same and before is None else Status.UPDATED), before, changes, entry
