"""The latency check: one object that takes the path its plan chose (``checks/paths.py``) and
measures it: a short look, side by side with the rebuilt reference or the same-job A/B reference
(across measuring processes from the first measurement on, so that no one process decides; across
runtimes each unit a pair of processes), an update's record, or this hardware's stored figures.
"""

from __future__ import annotations

import datetime
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pytest_ortperf.accuracy.output_values import OutputValue
from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult, Reference, compare_with, not_comparable
from pytest_ortperf.checks.latency_figures import stored_latency
from pytest_ortperf.checks.latency_verdicts import (
    LATENCY,
    LatencyResult,
    ab_without_reference,
    check_latency,
    explained,
    glance,
    same_graph,
    with_section,
    worth_explaining,
)
from pytest_ortperf.checks.paths import Ladder, Plan, Route, without_reference
from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.localisation import located
from pytest_ortperf.gate.protocol import CheckContext, CheckError, CheckTarget, Outcome, canary_on
from pytest_ortperf.gate.references import ABReference, RecordedReference, reference_feeds, same_job
from pytest_ortperf.gate.registry import BenchmarkEntry, Record
from pytest_ortperf.gate.session_outputs import run_outputs, worker_outputs
from pytest_ortperf.graph.diff import GraphDiff
from pytest_ortperf.graph.figures import GraphFigures
from pytest_ortperf.kinds.side_by_side import ProcessSides, ab_feeds
from pytest_ortperf.latency.activity import BUILDING, EXPLAINING, Activity
from pytest_ortperf.latency.measure import MeasureSettings, measure
from pytest_ortperf.latency.recording import short_reason
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.ort.inputs import Array, Feeds
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.workers import ProcessUnit, SideSpec, this_python
from pytest_ortperf.profiling.book import worker_operator_profile
from pytest_ortperf.profiling.operators import OpProfile, fastest
from pytest_ortperf.reports.ci_files import accuracy_record, latency_record, not_timed_record
from pytest_ortperf.store.baselines import BaselineEntry
from pytest_ortperf.store.environment import describe_inputs, recipe_changes, shapes_changed
from pytest_ortperf.store.keys import CheckKey

PROFILED_RUNS = 3
BOTH_SIDES = "untimed profiled runs of both sides, after measuring"
ACCURACY = "accuracy"
# Latency's ladder: stored figures decide where nothing can be rebuilt, unless they were recorded short.
LADDER = Ladder.FIGURES_MAY_BE_SHORT


class LatencyCheck:
    """``check_latency()``: times ``ort_session`` (never a profiled session) on the path its plan
    chose, against the stored baseline's recipe or, in A/B mode, against the reference model (and
    its outputs)."""

    kind = LATENCY

    def __init__(self, context: CheckContext):
        self._context = context
        self._activity = Activity()  # the check in progress: its phases, rounds and time
        self._fed: tuple[Mapping[str, str], str] = ({}, "")  # the inputs' shapes and their source
        # Against a rebuilt recorded reference: what changed since the baseline, for every record.
        self._changes: tuple[str, ...] = ()
        # The check's policy, as its target carries it (under --ortperf-update=missing, a plain run's
        # for a check it judges): every route reads its threshold and budgets here, one carrier.
        self._policy = context.policy

    def recorded(self, entry: BaselineEntry, machine: str) -> bool:
        return stored_latency(entry.figures_for(machine)) is not None

    def run(self, target: CheckTarget) -> Sequence[Outcome]:
        """The path of this mode, followed by the run's progress line and timed by phase."""
        shapes = target.environment.get("inputs")
        source = getattr(self._context.feeds, "source", "") if target.own_feeds else "the check's feeds"
        self._fed = (dict(shapes) if isinstance(shapes, Mapping) else {}, source)
        self._changes = ()  # set by the side-by-side route of this check only
        self._policy = target.policy
        with self._context.measurer.activity(target.key.test) as self._activity:
            return self._paths(target)

    def _paths(self, target: CheckTarget) -> list[Outcome]:
        context, key, inputs = self._context, target.key, target.inputs
        policy = target.policy
        # Updates always record stored baselines: no A/B reference then.
        reference = None if policy.update else context.ab()
        plan = target.plan(LATENCY, same_job(reference, context.built.model), ladder=LADDER)
        if reference is not None and plan.same_job is not None:
            # A run failing in A/B mode (a reference whose inputs differ, a timeout) fails the test
            # with a message, as in stored mode, naming the reference.
            label = f"same-job A/B of {key.shown} against {reference.label}: "
            return _labelled(lambda: self._ab(reference, plan, inputs, key), key, label)
        # Kept so that a later change can be measured against it.
        context.references.keep_model(context.built.model)
        if plan.route is Route.SIDE_BY_SIDE:
            entry = target.entry
            recipe, where = entry.recipe if entry else None, context.built.model.directory
            # The reference's own inputs, where they are not today's
            fed, why = reference_feeds(plan, recipe, context.input_options, where)
            rebuilt = None
            if not why:
                with self._activity.phase(BUILDING):
                    rebuilt, why = context.references.rebuild(context.built, plan)
            if rebuilt is not None:
                self._changes = tuple(recipe_changes(entry.recipe, target.environment)) if entry else ()
                label = f"latency of {key.shown} side by side with {rebuilt.label}: "
                # The same graph is the same work only on the same inputs.
                same = [] if plan.recorded_inputs else self._same_graph(rebuilt, plan, key)
                if same:
                    return same
                return _labelled(lambda: self._against_recorded(rebuilt, inputs, key, fed), key, label)
            recorded_on = entry.machines(LATENCY) if entry else []
            plan = without_reference(plan, why, recorded_on=recorded_on, may_be_short=LADDER.may_be_short)
        return [self._stored(inputs, key, target, plan)]

    def _same_graph(self, reference: RecordedReference, plan: Plan, key: CheckKey) -> list[Outcome]:
        """Same graph, same speed: when only the model changed and ORT builds the recorded reference's
        very graph from it (equal canonical digests, the same placement), under the same settings and
        runtime, on the same inputs, the check passes without a timed round. Empty: measure."""
        if reference.python or not plan.same_graph_possible:
            return []
        built, sessions = self._context.built, self._context.sessions
        try:
            with self._activity.phase(BUILDING, "optimized graphs of both sides"):
                current, _ = sessions.graph(built.model, built.variant, built.settings)
                recorded, _ = sessions.graph(reference.model, built.variant, reference.settings)
        except OrtperfError:
            return []  # a graph that cannot be built decides nothing: both sides are measured
        if not current.digest or _placed(current) != _placed(recorded):
            return []
        result = same_graph(key, label=reference.label, graph=f"digest {current.digest[:12]}")
        return [self._publish(result, lock="")]

    def _canary(self) -> Callable[[], object] | None:
        return self._context.measurer.canary(self._context.built) if canary_on(self._context) else None

    def _stored(
        self, inputs: dict[str, Array], key: CheckKey, target: CheckTarget, plan: Plan
    ) -> LatencyResult:
        """Every path that measures the current model alone: unchanged, record, stored figures, missing."""
        context = self._context
        session = context.built.session
        sessions = context.sessions
        profile_fn = (lambda: sessions.op_profile(context.built, inputs)) if context.profiler else None
        explain_fn = lambda: sessions.op_profile(context.built, inputs)  # noqa: E731

        canary = self._canary()
        activity = self._activity
        # An unchanged check's look only informs, unless its drift gates: it shares the timing lock
        # with other such looks (xdist workers look side by side), never with a measurement that decides.
        informs = plan.route is Route.UNCHANGED and target.policy.drift_threshold is None

        def measured(run: Callable[[], object], settings: MeasureSettings) -> LatencyStats:
            with context.measurer.held(activity, shared=informs):
                return measure(run, settings, canary=canary, activity=activity)

        watchdog = context.sessions.watchdog
        short = ""
        if plan.route is Route.RECORD:  # short, unless these figures will decide
            kept_in = context.references.kept_in(context.built.model)
            short = short_reason(kept_in, drift_gates=target.policy.drift_threshold is not None)
        result = check_latency(
            lambda: watchdog.run(session, None, inputs),
            measure_fn=measured,
            profile_fn=profile_fn,
            explain_fn=explain_fn,
            key=key,
            plan=plan,
            entry=target.recording_on,
            policy=target.policy,
            environment=target.environment,
            today=datetime.date.today().isoformat(),
            activity=activity,
            short=short,
            # A shared look may overlap other xdist workers' work: its drift is not the machine's.
            beside=context.measurer.beside(shared=informs),
        )
        self._traced_runs(inputs)
        result = self._publish(result, lock="shared" if informs else "exclusive")
        return result

    def _traced_runs(self, inputs: Mapping[str, Array]) -> None:
        """In a test marked ``ort_profile``: a few untimed runs of the model under test, after the
        check measured, on the test's profiled session, so every route of a latency check leaves
        per-run traces of where the time went. Timed runs never use a profiled session."""
        profiler = self._context.profiler
        if profiler is not None:
            for _ in range(PROFILED_RUNS):
                profiler.run(None, dict(inputs))

    def _graph_explained(
        self, result: LatencyResult, model: ModelSource, settings: SessionSettings, python: str = ""
    ) -> LatencyResult:
        """A failed side-by-side check, with the difference between the two sides' optimized graphs
        of this variant (the reference's ``model`` under ``settings``, in ``python``'s onnxruntime
        when it runs in another), or that they are the same graph: then the graph does not explain it."""
        if not result.failed:
            return result
        built, sessions = self._context.built, self._context.sessions
        try:
            current, _ = sessions.graph(built.model, built.variant, built.settings)
            reference, _ = sessions.graph(model, built.variant, settings, python=python)
        except OrtperfError as exc:
            return with_section(result, f"graph at {built.variant.id}", [f"not available ({exc})"])
        diff = GraphDiff(reference, current)
        lines = ["the same optimized graph on both sides"] if diff.same else diff.lines()
        return with_section(result, f"graph at {built.variant.id}", lines)

    def _ab(
        self, reference: ABReference, plan: Plan, inputs: dict[str, Array], key: CheckKey
    ) -> list[Outcome]:
        """The same-job A/B plan: against the reference model (in its own runtime, when it runs in
        another), or a short look for the report when there is nothing to compare."""
        context = self._context
        built, watchdog = context.built, context.sessions.watchdog
        if plan.route is Route.SAME_JOB and reference.across_runtimes and reference.source is not None:
            with self._activity.phase(BUILDING, "reference"):
                theirs = self._own_inputs(reference.source, inputs)
            return self._across_runtimes(
                RecordedReference(reference.label, reference.source, built.settings, reference.python),
                inputs,
                key,
                accept=ab_accept(key),
                reference_inputs=theirs,
                not_comparable=True,
            )
        if plan.route is not Route.SAME_JOB or reference.source is None:
            # Nothing to compare: a short measurement, for the report only (it shares the lock).
            with context.measurer.held(self._activity, shared=True):
                stats = measure(
                    lambda: watchdog.run(built.session, None, inputs),
                    glance(self._policy.measure),
                    activity=self._activity,
                )
            identical = plan.route is Route.IDENTICAL
            result = ab_without_reference(
                stats,
                key=key,
                label=reference.label,
                status=Status.IDENTICAL_TO_REFERENCE if identical else Status.NO_REFERENCE,
                reason=plan.reason,
            )
            self._traced_runs(inputs)
            result = self._publish(result, lock="shared")
            return [result]
        with self._activity.phase(BUILDING, "reference"):
            other = context.sessions.session(reference.source, built.variant, built.settings)
        theirs = self._own_inputs(reference.source, inputs)
        result = self._side_by_side(
            SideSpec(this_python(), reference.source, built.settings, feeds=theirs),
            reference.label,
            inputs,
            key,
            accept=ab_accept(key),
        )
        if theirs is not None:
            return [
                result,
                _outputs(lambda: ab_not_comparable(context, reference.label, theirs, inputs, key), key),
            ]
        return [result, _outputs(lambda: ab_accuracy(context, other, reference.label, inputs, key), key)]

    def _own_inputs(self, reference: ModelSource, inputs: Mapping[str, Array]) -> Feeds | None:
        """The A/B reference's own inputs where today's do not fit it (``side_by_side.ab_feeds``),
        named among the changes; else None."""
        theirs = ab_feeds(self._context, reference, inputs)
        if theirs is not None:
            changed = shapes_changed(describe_inputs(theirs), describe_inputs(inputs))
            self._changes = (*self._changes, f"inputs: {changed}")
        return theirs

    def _against_recorded(
        self,
        reference: RecordedReference,
        inputs: dict[str, Array],
        key: CheckKey,
        reference_inputs: Mapping[str, Array] | None = None,
    ) -> list[Outcome]:
        """The current model against what its baseline recorded, rebuilt (in the recorded runtime's
        environment when onnxruntime changed since); the reference fed ``reference_inputs`` (its
        recorded inputs, made again) where they are not today's."""
        theirs = dict(reference_inputs) if reference_inputs is not None else None
        if reference.python:
            return self._across_runtimes(
                reference, inputs, key, accept=key.record_command, reference_inputs=theirs
            )
        spec = SideSpec(this_python(), reference.model, reference.settings, feeds=theirs)
        return [self._side_by_side(spec, reference.label, inputs, key, accept=key.record_command)]

    def _across_runtimes(
        self,
        reference: RecordedReference,
        inputs: dict[str, Array],
        key: CheckKey,
        *,
        accept: str = "",
        reference_inputs: Mapping[str, Array] | None = None,
        not_comparable: bool = False,
    ) -> list[Outcome]:
        """The current model in this environment's ONNX Runtime against ``reference`` in another's,
        each unit a pair of measuring workers, one in each environment (so neither pays a different
        process cost), decided across processes; then the outputs of the two runtimes, from the last
        unit, compared with the tolerances where both ran the same inputs. ``reference_inputs``: the
        reference's own, where they are not today's; then the outputs are named not comparable
        (``not_comparable``: the A/B reference, whose inputs changed shape) or left to the accuracy
        check, which compares the recorded model on today's inputs (the recorded reference)."""
        context = self._context
        theirs = dict(reference_inputs) if reference_inputs is not None else None
        other = SideSpec(reference.python, reference.model, reference.settings, feeds=theirs)
        with self._sides(other, inputs) as sides:
            result = self._side_by_side(sides, reference.label, inputs, key, accept=accept, across=True)
            last = sides.last
            if last is None:
                return [result]
            label = result.reference_label
            if theirs is not None and not not_comparable:
                return [result]
            if theirs is not None:
                mine = inputs
                return [result, _outputs(lambda: ab_not_comparable(context, label, theirs, mine, key), key)]
            outputs = _outputs(
                lambda: compare_outputs(
                    context, worker_outputs(last.current), worker_outputs(last.reference), label, key
                ),
                key,
            )
        return [result, outputs]

    def _sides(self, reference: SideSpec, inputs: Mapping[str, Array]) -> ProcessSides:
        built = self._context.built
        here = SideSpec(this_python(), built.model, built.settings)
        return ProcessSides(self._context, here, reference, inputs, self._activity)

    def _side_by_side(
        self,
        sides: ProcessSides | SideSpec,
        label: str,
        inputs: dict[str, Array],
        key: CheckKey,
        *,
        accept: str = "",
        across: bool = False,
    ) -> LatencyResult:
        """The current model against the reference of ``sides`` (its own inputs where its spec names
        them, else ``inputs``) across measuring processes, from the first measurement on
        (``kinds/side_by_side.py``): each unit one pooled worker holding both sides or, ``across``
        runtimes, a worker in each. A result worth explaining is explained at operator level, both
        sides profiled in turn (in this process, or across runtimes in the last unit's workers); a
        failure's graph difference follows. Given a spec, the units are released here; given
        ``sides``, by their owner."""
        if isinstance(sides, SideSpec):
            with self._sides(sides, inputs) as owned:
                return self._side_by_side(owned, label, inputs, key, accept=accept, across=across)
        policy, reference = self._policy, sides.reference
        result = sides.judge(
            key=key, label=label, policy=policy, accept=accept, changes=self._changes, runtimes_named=across
        )
        if worth_explaining(result) and across and sides.last is not None:
            result = self._explained_in(result, sides.last)
        elif worth_explaining(result):
            result = self._explained_here(result, reference, inputs)
        python = reference.python if across else ""
        result = self._graph_explained(result, reference.model, reference.settings, python)
        self._traced_runs(inputs)
        return self._publish(result)

    def _explained_in(self, result: LatencyResult, unit: ProcessUnit) -> LatencyResult:
        """``result`` with what changed at operator level, each side profiled in its own runtime, in
        the last unit's two workers, in turn (reference, current, reference, current), each keeping
        its fastest turn; untimed, after the timing lock is released."""
        provider = self._context.built.variant.provider

        def in_turn() -> tuple[OpProfile, OpProfile]:
            sides = [
                worker_operator_profile(model, provider)
                for _ in range(2)
                for model in (unit.reference, unit.current)
            ]
            return fastest(*sides[0::2]), fastest(*sides[1::2])

        with self._activity.phase(EXPLAINING):
            return explained(result, f"{BOTH_SIDES}, each in its own runtime", in_turn)

    def _explained_here(
        self, result: LatencyResult, reference: SideSpec, inputs: Mapping[str, Array]
    ) -> LatencyResult:
        """``result`` with what changed at operator level: both sides profiled in this process, in turn
        (A B A B) on one profiling session a side, each keeping its fastest turn (untimed, after the
        timing lock is released; two profiling sessions where the last unit's workers would build
        four); the reference fed its own inputs where it has them."""
        context = self._context
        built = context.built

        def in_turn() -> tuple[OpProfile, OpProfile]:
            other = context.sessions.session(reference.model, built.variant, reference.settings)
            theirs = reference.feeds if reference.feeds is not None else inputs
            before, after = context.sessions.op_profiles_in_turn([(other, theirs), (built, inputs)])
            return before, after

        with self._activity.phase(EXPLAINING):
            return explained(result, BOTH_SIDES, in_turn)

    def _publish(self, result: LatencyResult, *, lock: str = "exclusive") -> LatencyResult:
        """A latency result, with where its time went and how it held the timing lock (``lock``:
        "exclusive", "shared" for a look that only informs, "" when nothing was timed), into the
        run's report, the JUnit properties and pytest-benchmark (``KIND``: read from its record)."""
        inputs, source = self._fed
        result = replace(
            result,
            changes=result.changes or self._changes,
            lock=lock,
            seconds=self._activity.seconds(),
            lock_waits=self._activity.lock_waits(),
            inputs=inputs,
            inputs_source=source,
        )
        self._context.publisher.publish(latency_record(result, self._context.nodeid))
        return result


def ab_accept(key: CheckKey) -> str:
    """How a same-job A/B failure is accepted: the reference is a commit or a file, which no command
    changes; the baselines are what the gate reads, and the A/B comparison keeps reporting."""
    return (
        f"{key.record_command}, and commit baselines/: the gate against the baselines then passes "
        "(this comparison keeps reporting the change)"
    )


def ab_outputs_accept(key: CheckKey) -> str:
    """How outputs that differ from the A/B reference's are accepted: the gate compares outputs in
    the test's accuracy checks, so the update records every check of its file (or model)."""
    words = [word.split("::")[0] if "::" in word else word for word in shlex.split(key.record_command)]
    return (
        f"{shlex.join(words)}, and commit baselines/: it records the outputs the gate compares with "
        "(this comparison keeps reporting the change)"
    )


def _labelled(action: Callable[[], list[Outcome]], key: CheckKey, label: str) -> list[Outcome]:
    """The action's outcomes or, when it ends in an error, that error with ``label`` before it."""
    try:
        return action()
    except OrtperfError as exc:
        return [CheckError(key, LATENCY, f"{label}{exc}")]


def ab_accuracy(
    context: CheckContext, other: BuiltSession, label: str, inputs: dict[str, Array], key: CheckKey
) -> AccuracyResult:
    """Outputs of the model under test against the A/B reference model's, same inputs and variant."""
    watchdog = context.sessions.watchdog
    actual = run_outputs(context.built, inputs, watchdog)
    reference = run_outputs(other, inputs, watchdog)
    against = (other.model, inputs)
    accept = ab_outputs_accept(key)
    return compare_outputs(context, actual, reference, label, key, located_against=against, accept=accept)


def ab_not_comparable(
    context: CheckContext,
    label: str,
    theirs: Mapping[str, Array],
    inputs: Mapping[str, Array],
    key: CheckKey,
) -> AccuracyResult:
    """The outputs of two sides fed inputs of other shapes: not compared, and said so (a failure
    under ``--ortperf-ab-outputs=fail``), with the command that records today's."""
    changed = shapes_changed(describe_inputs(theirs), describe_inputs(inputs))
    result = not_comparable(
        key, label, f"inputs {changed}", fail=context.settings.ab_outputs_fail, accept=ab_outputs_accept(key)
    )
    context.publisher.publish(
        accuracy_record(result, context.nodeid), verdict_property="ortperf_ab_accuracy_verdict"
    )
    return result


def compare_outputs(
    context: CheckContext,
    actual: Mapping[str, OutputValue],
    reference: Mapping[str, OutputValue],
    label: str,
    key: CheckKey,
    *,
    located_against: tuple[ModelSource, Mapping[str, Array]] | None = None,
    accept: str = "",
) -> AccuracyResult:
    """Outputs of the model under test against a reference's (model or runtime), same inputs; a
    failure says where the two models start to diverge (``located_against``: the reference model
    and the inputs; None: the two sides run in two onnxruntimes, and tensors are compared in one)."""
    expected = Reference(label, reference, {})
    result = compare_with(
        actual,
        expected,
        key=key,
        tolerances=context.tolerances,
        provider_short=context.built.variant.provider_spec.short,
        fail=context.settings.ab_outputs_fail,
        accept=accept or key.record_command,
    )
    if located_against is not None:
        model, inputs = located_against
        result = located(result, context.built, model, "", inputs, context.tolerances)
    else:
        why = "the two sides run in two onnxruntimes, and intermediate tensors are compared in one"
        result = located(result, context.built, None, why, {}, context.tolerances)
    record = accuracy_record(result, context.nodeid)
    context.publisher.publish(record, verdict_property="ortperf_ab_accuracy_verdict")
    return result


def _outputs(compare: Callable[[], AccuracyResult], key: CheckKey) -> Outcome:
    """The outputs of the two sides compared, or the error that stopped it."""
    try:
        return compare()
    except OrtperfError as exc:
        return CheckError(key, ACCURACY, str(exc))


def _placed(graph: GraphFigures) -> tuple[str, dict[str, int], int, int]:
    """What makes two optimized graphs the same work: the graph itself and where its nodes run."""
    return graph.digest, dict(graph.providers), graph.off_provider, graph.copies


def row_medians(record: Record) -> BenchmarkEntry | None:
    """pytest-benchmark's entry: one round per round median (a check that timed nothing, one that
    passed as the same graph, has no rounds to show)."""
    typed = CheckRecord.of(record)
    current = typed.current or {}
    rounds, runs = int(current.get("rounds") or 0), int(current.get("runs") or 0)
    if not rounds:
        return None
    reference = typed.reference or typed.baseline or {}
    return BenchmarkEntry(
        round_medians_ms=list(current.get("round_medians_ms") or []),
        runs_per_round=max(runs // rounds, 1),
        group="ortperf",
        extra_info={
            "variant": typed.variant,
            "machine": typed.machine,
            "verdict": typed.verdict,
            "baseline_median_ms": reference.get("median_ms"),
            "change": typed.summary_of_change,
            "mode": typed.mode,
            "path": typed.path,
            "decided_by": typed.decided_by,
            "reference": reference.get("label", ""),
        },
    )


def record(result: LatencyResult, nodeid: str) -> dict[str, Any]:
    if result.status == Status.NOT_TIMED:
        return not_timed_record(result, nodeid)
    return latency_record(result, nodeid)


def properties(record: Record) -> dict[str, object]:
    typed = CheckRecord.of(record)
    current = typed.current or {}
    properties: dict[str, object] = {
        "ortperf_latency_mode": typed.decided_by,
        "ortperf_latency_path": typed.path,
    }
    if current.get("rounds"):  # a check that timed nothing (the same graph) has no median
        properties["ortperf_latency_median_ms"] = round(float(current["median_ms"]), 6)
    if typed.summary_of_change:
        properties["ortperf_latency_change"] = typed.summary_of_change
    return properties
