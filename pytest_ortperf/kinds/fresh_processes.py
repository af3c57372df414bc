"""What the memory and start-up checks share: the route their plan chose, followed with figures
measured in fresh worker processes (``ort/workers.py: measure_footprint``), and the result published.

A subclass names its part of a baseline's figures (``kind``), how many processes a measurement takes,
how figures are made of processes' footprints and how two sets compare; ``kinds/memory.py`` and
``kinds/startup.py`` are the two.
"""

from __future__ import annotations

import contextlib
import datetime
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_ortperf.checks.footprint_verdicts import (
    FootprintResult,
    PartFigures,
    judged,
    missing,
    nothing_to_compare,
    record,
    unchanged,
)
from pytest_ortperf.checks.paths import Route, without_reference
from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.checks.status import Status
from pytest_ortperf.footprint.comparison import FigureComparison
from pytest_ortperf.gate.protocol import CheckContext, CheckTarget, Outcome
from pytest_ortperf.gate.references import RecordedReference, reference_feeds, same_job
from pytest_ortperf.gate.registry import CheckKind, Record
from pytest_ortperf.kinds.side_by_side import ab_feeds
from pytest_ortperf.latency.activity import Activity
from pytest_ortperf.latency.decision import Verdict
from pytest_ortperf.ort.models import weight_bytes
from pytest_ortperf.ort.workers import (
    Footprint,
    SideSpec,
    in_memory,
    measure_footprint,
    this_python,
    with_empty_cache,
)
from pytest_ortperf.reports.ci_files import footprint_record
from pytest_ortperf.store.baselines import BaselineEntry, Figures
from pytest_ortperf.store.environment import describe_inputs, recipe_changes, shapes_changed, what_changed


class FootprintCheck:
    """The routes of a check measured in fresh processes; subclasses fill in the figures."""

    kind = ""
    processes = 1  # fresh processes per side of a measurement
    glance_processes = 1  # an unchanged check's look, for the report only
    profiled = False  # whether each process also profiles a session (ORT's memory accounting)
    timed = False  # whether the measurement is timed (then it holds the run's timing lock)
    cold_first = False  # whether each side's first process gets an empty compile cache (a cold start)
    # Side by side, looked at after these many pairs of fresh processes, by the rule of every
    # side-by-side verdict (compare_pairs); () measures ``processes`` a side and confirms a regression.
    pair_looks: tuple[int, ...] = ()
    declaration: CheckKind | None = None  # the kind as registered: its options and threshold keyword

    def __init__(self, context: CheckContext) -> None:
        self._context = context

    def threshold(self, target: CheckTarget) -> float:
        """The test's ``ort_thresholds(<kind>=...)`` (parsed where it entered), else the kind's
        ``--ortperf-<kind>-threshold``."""
        if self.declaration is None:
            raise TypeError(f"{type(self).__name__} names no declaration: its kind's options are unknown")
        given = target.policy.kind_thresholds.get(self.declaration.name)
        if isinstance(given, float):
            return given
        return float(self.declaration.setting(self._context.settings, "threshold"))

    # --- what a subclass decides --------------------------------------------------------------

    def figures(self, footprints: Sequence[Footprint]) -> PartFigures:
        raise NotImplementedError

    def stored(self, figures: Figures | None) -> PartFigures | None:
        """This kind's part of ``figures``, typed by its declared ``part_decoder`` (None: they hold none)."""
        if self.declaration is None or self.declaration.part_decoder is None:
            raise TypeError(f"{type(self).__name__} names no declaration with a part decoder")
        decode: Callable[[Any], PartFigures] = self.declaration.part_decoder
        return figures.part_as(self.kind, decode) if figures is not None else None

    def compare(self, before: PartFigures, after: PartFigures, target: CheckTarget) -> list[FigureComparison]:
        raise NotImplementedError

    def explain(self, before: PartFigures, after: PartFigures) -> list[str]:
        """What a failure's message adds after the figures (memory: the nodes that grew)."""
        return []

    def notes(self, footprints: Sequence[Footprint]) -> list[str]:
        """What could not be measured here, and why."""
        return []

    def limit_bytes(self) -> int:
        return 0

    def compare_pairs(
        self, before: PartFigures, after: PartFigures, target: CheckTarget, *, look: int, looks: int
    ) -> list[FigureComparison]:
        """Side by side over pairs of processes, at look ``look`` of ``looks`` (a kind with
        ``pair_looks``)."""
        raise NotImplementedError

    # --- the protocol -------------------------------------------------------------------------

    def recorded(self, entry: BaselineEntry, machine: str) -> bool:
        figures = entry.figures_for(machine)
        return figures is not None and figures.part(self.kind) is not None

    def run(self, target: CheckTarget) -> Sequence[Outcome]:
        context = self._context
        with context.measurer.activity(f"{target.key.shown} ({self.kind})") as activity:
            result = self._routes(target, activity)
        context.publisher.publish(footprint_record(result, context.nodeid))
        return [result]

    def _routes(self, target: CheckTarget, activity: Activity) -> FootprintResult:
        context, key, policy = self._context, target.key, target.policy
        built = context.built
        here = SideSpec(this_python(), built.model, built.settings)
        compare = lambda before, after: self.compare(before, after, target)  # noqa: E731
        ab = None if policy.update else context.ab()
        plan = target.plan(self.kind, same_job(ab, built.model))
        if ab is not None and plan.route in (Route.NO_REFERENCE, Route.IDENTICAL):
            # Across runtimes the same bytes are still two sides; in one runtime they are one.
            alone = self.figures(self._measure([here], target, activity, self.glance_processes)[0])
            identical = plan.route is Route.IDENTICAL
            reason = plan.reason
            return nothing_to_compare(self.kind, key, alone, ab.label, identical=identical, reason=reason)
        if ab is not None and ab.source is not None and plan.route is Route.SAME_JOB:
            # Each side on its own inputs: the reference's declared ones where today's do not fit it.
            theirs = ab_feeds(context, ab.source, target.inputs)
            changes = []
            if theirs is not None:
                changes = [
                    f"inputs: {shapes_changed(describe_inputs(theirs), describe_inputs(target.inputs))}"
                ]
            other = SideSpec(ab.python or this_python(), ab.source, built.settings, feeds=theirs)
            return self._side_by_side(target, here, other, ab.label, activity, changes=changes)
        context.references.keep_model(built.model)
        if plan.route is Route.SIDE_BY_SIDE:
            entry = target.entry
            # Each side on its own inputs: the reference on its recorded ones, made again.
            recipe = entry.recipe if entry else None
            theirs, why = reference_feeds(plan, recipe, context.input_options, built.model.directory)
            rebuilt = None
            if not why:
                rebuilt, why = context.references.rebuild(built, plan)
            if rebuilt is not None:
                # Every route names what changed since the baseline, this one too.
                changes = recipe_changes(entry.recipe, target.environment) if entry else []
                other = replace(_spec(rebuilt), feeds=theirs)
                return self._side_by_side(target, here, other, rebuilt.label, activity, changes=changes)
            plan = without_reference(plan, why, recorded_on=entry.machines(self.kind) if entry else [])
        count = self.glance_processes if plan.route is Route.UNCHANGED else self.processes
        footprints = self._measure([here], target, activity, count)[0]
        current = self.figures(footprints)
        notes = self.notes(footprints)
        if plan.route is Route.UNCHANGED:
            return _noted(unchanged(self.kind, key, current, plan.figures, compare), notes)
        if plan.route is Route.RECORD:
            today = datetime.date.today().isoformat()
            result = record(
                self.kind,
                key,
                current,
                entry=target.recording_on,
                environment=target.environment,
                today=today,
                compare=compare,
            )
            return _noted(result, notes)
        stored = self.stored(plan.figures)
        if plan.route is not Route.STORED or stored is None or plan.figures is None:
            return _noted(missing(self.kind, key, current, policy, reason=plan.reason), notes)
        figures = plan.figures

        def against_stored(footprints: Sequence[Footprint]) -> FootprintResult:
            current = self.figures(footprints)
            return judged(
                self.kind,
                key,
                current,
                stored,
                self.compare(stored, current, target),
                policy,
                path="stored figures",
                label="this hardware's stored figures",
                recorded=figures.recorded,
                changes=tuple(what_changed(plan.recorded, target.environment)),
                stored_reason=plan.reason,
                explain=self.explain(stored, current),
                notes=self.notes(footprints),
            )

        return _confirmed(
            against_stored(footprints),
            lambda: against_stored(self._measure([here], target, activity, self.processes)[0]),
        )

    def _side_by_side(
        self,
        target: CheckTarget,
        here: SideSpec,
        other: SideSpec,
        label: str,
        activity: Activity,
        *,
        changes: Sequence[str] = (),
    ) -> FootprintResult:
        """Both sides in fresh processes, interleaved (current, reference, reference, current...);
        ``changes``: what changed since the baseline, against a rebuilt recorded reference. A kind
        with ``pair_looks`` is judged over pairs of processes, sequentially, by the rule of every
        side-by-side verdict; the others measure ``processes`` a side and confirm a regression."""
        if self.pair_looks:
            return self._over_pairs(target, here, other, label, activity, changes=changes)

        def measured() -> FootprintResult:
            current_prints, reference_prints = self._measure([here, other], target, activity, self.processes)
            current, reference = self.figures(current_prints), self.figures(reference_prints)
            compared = self.compare(reference, current, target)
            return self._judged_side_by_side(
                target, current_prints, reference_prints, compared, label, changes
            )

        return _confirmed(measured(), measured)

    def _judged_side_by_side(
        self,
        target: CheckTarget,
        current_prints: Sequence[Footprint],
        reference_prints: Sequence[Footprint],
        compared: list[FigureComparison],
        label: str,
        changes: Sequence[str],
    ) -> FootprintResult:
        """The verdict of a side-by-side measurement from both sides' processes and their comparison."""
        current, reference = self.figures(current_prints), self.figures(reference_prints)
        return judged(
            self.kind,
            target.key,
            current,
            reference,
            compared,
            target.policy,
            path=f"side by side vs {label}",
            label=f"{label} (side by side, fresh processes)",
            changes=changes,
            explain=self.explain(reference, current),
            notes=self.notes([*current_prints, *reference_prints]),
        )

    def _over_pairs(
        self,
        target: CheckTarget,
        here: SideSpec,
        other: SideSpec,
        label: str,
        activity: Activity,
        *,
        changes: Sequence[str] = (),
    ) -> FootprintResult:
        """Pairs of fresh processes, one a side, added until every figure is decided (inside the
        threshold, or beyond it with its interval) or the last of ``pair_looks`` is reached: two
        pairs that disagree are two samples, and no second measurement is asked for."""
        current_prints: list[Footprint] = []
        reference_prints: list[Footprint] = []
        looks = self.pair_looks
        for look, count in enumerate(looks, 1):
            more = self._measure([here, other], target, activity, count - len(current_prints), cold=look == 1)
            current_prints += more[0]
            reference_prints += more[1]
            current, reference = self.figures(current_prints), self.figures(reference_prints)
            compared = self.compare_pairs(reference, current, target, look=look, looks=len(looks))
            if all(c.verdict is not Verdict.INCONCLUSIVE for c in compared):
                break
        return self._judged_side_by_side(target, current_prints, reference_prints, compared, label, changes)

    def _measure(
        self,
        sides: Sequence[SideSpec],
        target: CheckTarget,
        activity: Activity,
        count: int,
        *,
        cold: bool = True,
    ) -> list[list[Footprint]]:
        """``count`` fresh processes per side, the sides interleaved so that neither gets all the
        early (or late) processes: for two sides A B B A A B ... ``cold``: each side's first process
        starts from an empty compile cache (a kind with ``cold_first``; a later batch of the same
        measurement finds it warm)."""
        context = self._context
        built, settings = context.built, context.settings
        prints: list[list[Footprint]] = [[] for _ in sides]
        # Each side's model read, and its weights counted, once for all its processes.
        models = [in_memory(spec.model) for spec in sides]
        weights = [weight_bytes(spec.model) for spec in sides]
        order = [i if n % 2 == 0 else len(sides) - 1 - i for n in range(count) for i in range(len(sides))]
        with tempfile.TemporaryDirectory(prefix="ortperf-footprint-") as scratch:
            prefix = Path(scratch) / "profile" if self.profiled else None
            with context.measurer.held(activity) if self.timed else contextlib.nullcontext():
                for side in order:
                    spec = sides[side]
                    session_settings = spec.settings
                    first = self.cold_first and cold and not prints[side]
                    if first:
                        # A compile cache (OpenVINO's cache_dir, TensorRT's engines): each side's first
                        # process starts from an empty one, the others find the configured one warm.
                        empty = Path(scratch) / f"cold-cache-{side}"
                        session_settings = with_empty_cache(built.variant, spec.settings, empty)
                    footprint = measure_footprint(
                        spec.python,
                        models[side],
                        built.variant,
                        session_settings,
                        spec.feeds if spec.feeds is not None else target.inputs,
                        timeout_s=settings.run_timeout_s,
                        profile_prefix=prefix,
                        limit_bytes=self.limit_bytes(),
                        weights=weights[side],
                    )
                    prints[side].append(_cold(footprint) if first else footprint)
        return prints


def _cold(footprint: Footprint) -> Footprint:
    """A process given an empty compile cache: ``cold`` when it compiled and wrote there, ``unused``
    when it wrote nothing (the provider compiled nothing it caches)."""
    if not footprint.engine_cache:
        return footprint
    return replace(footprint, engine_cache="cold" if footprint.engine_cache == "miss" else "unused")


def _confirmed(first: FootprintResult, again: Callable[[], FootprintResult]) -> FootprintResult:
    """A regression must survive a second measurement in new processes before it fails the check
    (as latency's does): the second decides, and one that does not repeat it passes as not confirmed."""
    if first.status is not Status.REGRESSION:
        return first
    second = again()
    said = f"a first measurement said {first.change}"
    if second.status is Status.REGRESSION:
        note = f"{said}; confirmed by a second in new processes"
        lines = second.message.split("\n")
        at = max((i for i, line in enumerate(lines) if line.startswith("  to accept")), default=len(lines))
        message = "\n".join([*lines[:at], f"  note: {note}", *lines[at:]])
        return replace(second, notes=(*second.notes, note), message=message)
    return replace(
        second,
        status=Status.NOT_CONFIRMED,
        failed=False,
        message="",
        notes=(*second.notes, f"{said}; a second in new processes did not confirm it"),
    )


def _spec(rebuilt: RecordedReference) -> SideSpec:
    return SideSpec(rebuilt.python or this_python(), rebuilt.model, rebuilt.settings)


def _noted(result: FootprintResult, notes: Sequence[str]) -> FootprintResult:
    return replace(result, notes=(*result.notes, *notes)) if notes else result


def figures_property(record: Record) -> dict[str, object]:
    """The JUnit property of a check's figures: ``ortperf_memory``, ``ortperf_startup``, ``ortperf_graph``."""
    typed = CheckRecord.of(record)
    return {f"ortperf_{typed.kind}": typed.summary} if typed.summary and typed.current is not None else {}


def benchmark_info(record: Record) -> dict[str, object]:
    """What a memory or start-up check tells pytest-benchmark about itself, beside its figures."""
    typed = CheckRecord.of(record)
    return {
        "check": typed.kind,
        "variant": typed.variant,
        "machine": typed.machine,
        "verdict": typed.verdict,
        "path": typed.path,
        "change": typed.get("change_text", ""),
    }
