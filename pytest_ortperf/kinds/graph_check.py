"""The graph check: what ORT will run for the variant (``ort/optimized_graph.py`` builds it,
``graph/`` reads and compares it), on the route the recipe chooses (``checks/graph_verdicts.py`` decides).

The graph is deterministic, so a side-by-side comparison is exact and holds on any hardware: the
recorded reference is rebuilt (its model from git or the model cache, its settings) and its graph
built here beside the current one. Stored graphs decide only when nothing can be rebuilt, and only
for the same hardware class (the instruction-set features the optimizer dispatches on).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pytest_ortperf.checks.graph_verdicts import (
    GRAPH,
    GraphResult,
    alone,
    compared,
    record,
    shown_not_judged,
    stored_graph,
    unchanged,
)
from pytest_ortperf.checks.paths import Ladder, Plan, Route, without_reference
from pytest_ortperf.checks.status import Status
from pytest_ortperf.gate.protocol import CheckContext, CheckTarget, Outcome
from pytest_ortperf.gate.references import ABReference, same_job
from pytest_ortperf.graph.diff import GraphLimit, parse_graph_threshold
from pytest_ortperf.graph.figures import GraphFigures, hardware_class
from pytest_ortperf.kinds.graph import KEYWORD, KIND
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.variants import OptLevel
from pytest_ortperf.reports.ci_files import footprint_record
from pytest_ortperf.store.baselines import BaselineEntry
from pytest_ortperf.store.environment import what_changed


class GraphCheck:
    """``check_graph()``: the optimized graph of ``ort_session``'s model and variant against the
    recorded reference's, with pinned counts (``expected``: op type -> count) checked on every route."""

    kind = GRAPH

    def __init__(self, context: CheckContext, *, expected: Mapping[str, int] | None = None) -> None:
        self._context = context
        self._expected = dict(expected or {})

    def expecting(self, expected: Mapping[str, int]) -> GraphCheck:
        """This check with pinned counts added (the call's over the marker's)."""
        return GraphCheck(self._context, expected={**self._expected, **expected})

    def configured(self, *, expect_fusions: Mapping[str, int] | None = None) -> GraphCheck:
        """``check_graph(expect_fusions=...)``: this check with the call's pinned counts, checked like
        the marker's (a UsageError naming ``expect_fusions`` when one is not a count)."""
        if not expect_fusions:
            return self
        _, pins = parse_graph_threshold(dict(expect_fusions), source="expect_fusions")
        return self.expecting(dict(pins))

    def recorded(self, entry: BaselineEntry, machine: str) -> bool:
        figures = entry.figures_for(machine)
        return figures is not None and figures.part(GRAPH) is not None

    def run(self, target: CheckTarget) -> Sequence[Outcome]:
        context = self._context
        with context.measurer.activity(f"{target.key.shown} (graph)"):
            result = self._routes(target)
        context.publisher.publish(footprint_record(result, context.nodeid))
        return [result]

    def _current(self) -> tuple[GraphFigures, list[str]]:
        built = self._context.built
        figures, note = self._context.sessions.graph(built.model, built.variant, built.settings)
        return figures, [note] if note else []

    def _routes(self, target: CheckTarget) -> GraphResult:
        context, key, policy = self._context, target.key, target.policy
        built = context.built
        current, notes = self._current()
        ab = None if policy.update else context.ab()
        plan = target.plan(GRAPH, same_job(ab, built.model), ladder=Ladder.GRAPHS)
        if ab is not None and plan.same_job is not None:
            return self._ab(target, ab, plan, current, notes)
        context.references.keep_model(built.model)
        entry = target.entry
        if plan.route is Route.RECORD:
            return _noted(
                record(
                    key,
                    current,
                    entry=target.recording_on,
                    environment=target.environment,
                ),
                notes,
            )
        if entry is None or plan.route is Route.MISSING:
            return self._alone(target, current, Status.MISSING, "missing", plan.reason, notes)
        here = hardware_class(target.environment.get("hardware"))  # type: ignore[arg-type]
        stored = stored_graph(entry, key.machine, here)
        if plan.route is Route.UNCHANGED:
            return self._unchanged(target, current, stored, [*notes, *([plan.note] if plan.note else [])])
        why = plan.reason
        if plan.route is Route.SIDE_BY_SIDE:
            rebuilt, why = context.references.rebuild(built, plan)
            if rebuilt is not None:
                return self._against(
                    target, current, notes, rebuilt.model, rebuilt.settings, rebuilt.label, rebuilt.python
                )
        if plan.runtime is not None:  # the recorded runtime cannot be had: its graph is shown, not judged
            reason = without_reference(plan, why).reason
            return self._across_runtimes(target, current, stored, reason, " ".join(plan.runtime), notes)
        if stored is None:
            graphs = [f.part_as(GRAPH, GraphFigures.from_dict) for f in entry.figures.values()]
            classes = sorted({graph.hardware_class for graph in graphs if graph is not None})
            where = f" (graphs exist for: {', '.join(classes)})" if classes else ""
            reason = f"{why}; no graph was recorded on this hardware class ({here}){where}"
            return self._alone(target, current, Status.MISSING, "missing", reason, notes)
        graph, recorded = stored
        return compared(
            key,
            current,
            graph,
            path="stored figures",
            label="the graph recorded on this hardware class",
            mode=self._mode(target),
            expected=self._pins(target),
            recorded=recorded,
            changes=what_changed(entry.recipe, target.environment),
            stored_reason=why,
            notes=notes,
            optimized=_optimized(built),
        )

    def _across_runtimes(
        self,
        target: CheckTarget,
        current: GraphFigures,
        stored: tuple[GraphFigures, str] | None,
        reason: str,
        runtime: str,
        notes: list[str],
    ) -> GraphResult:
        """Missing, with the reason (the runtime), and the difference from the graph this hardware
        class recorded in the other runtime shown: what bumping or pinning onnxruntime does to it."""
        result = self._alone(target, current, Status.MISSING, "missing", reason, notes)
        if stored is None or result.status is not Status.MISSING:
            return result
        return shown_not_judged(result, *stored, runtime=runtime)

    def _ab(
        self, target: CheckTarget, ab: ABReference, plan: Plan, current: GraphFigures, notes: list[str]
    ) -> GraphResult:
        """Same-job A/B: the reference model's graph built here beside the current one."""
        path = f"side by side vs {ab.label}"
        if plan.route is Route.NO_REFERENCE or ab.source is None:
            return self._alone(target, current, Status.NO_REFERENCE, path, plan.reason, notes)
        if plan.route is Route.IDENTICAL:
            return self._alone(target, current, Status.IDENTICAL_TO_REFERENCE, path, plan.reason, notes)
        built = self._context.built
        return self._against(target, current, notes, ab.source, built.settings, ab.label, ab.python)

    def _against(
        self,
        target: CheckTarget,
        current: GraphFigures,
        notes: list[str],
        model: ModelSource,
        settings: SessionSettings,
        label: str,
        python: str = "",
    ) -> GraphResult:
        """The current graph against ``model``'s under ``settings``, built here beside it (``python``:
        in that interpreter's onnxruntime, in a worker)."""
        built = self._context.built
        other, note = self._context.sessions.graph(model, built.variant, settings, python=python)
        return compared(
            target.key,
            current,
            other,
            path=f"side by side vs {label}",
            label=label,
            mode=self._mode(target),
            expected=self._pins(target),
            notes=[*notes, *([note] if note and note not in notes else [])],  # said once for both sides
            optimized=_optimized(built),
        )

    def _limit(self, target: CheckTarget) -> GraphLimit:
        """The markers' ``graph=`` (parsed where it entered, merged farthest first), else none."""
        given = target.policy.kind_thresholds.get(KEYWORD)
        return given if isinstance(given, tuple) else ("", ())

    def _mode(self, target: CheckTarget) -> str:
        """What of a graph's change fails: the markers' mode, else ``--ortperf-graph``'s."""
        return self._limit(target)[0] or str(KIND.setting(self._context.settings, ""))

    def _pins(self, target: CheckTarget) -> dict[str, int]:
        """Pinned counts: the markers', then the call's."""
        return {**dict(self._limit(target)[1]), **self._expected}

    def _alone(
        self,
        target: CheckTarget,
        current: GraphFigures,
        status: Status,
        path: str,
        reason: str,
        notes: list[str],
    ) -> GraphResult:
        return alone(
            target.key,
            current,
            target.policy,
            expected=self._pins(target),
            status=status,
            path=path,
            reason=reason,
            notes=notes,
        )

    def _unchanged(
        self,
        target: CheckTarget,
        current: GraphFigures,
        stored: tuple[GraphFigures, str] | None,
        notes: Sequence[str],
    ) -> GraphResult:
        """Nothing that shapes the graph changed: it passes, unless a pinned count is not met."""
        pins = self._alone(target, current, Status.UNCHANGED, "unchanged", "", list(notes))
        return (
            pins
            if pins.failed
            else _noted(unchanged(target.key, current, stored[0] if stored else None), notes)
        )


def _optimized(built: BuiltSession) -> bool:
    """Whether ORT's optimizer ran on the variant's graph (not at level ``disabled``)."""
    return built.variant.opt_level is not OptLevel.DISABLED


def _noted(result: GraphResult, notes: Sequence[str]) -> GraphResult:
    return replace(result, notes=(*result.notes, *notes)) if notes else result
