"""``ort_perf``: the checks a test runs against its baselines and references."""

from __future__ import annotations

import datetime
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from itertools import count
from pathlib import Path
from typing import NoReturn, TypeVar

import numpy as np

from pytest_ortperf.accuracy.tolerances import ToleranceSpec
from pytest_ortperf.checks.accuracy import AccuracyResult, Reference, check_accuracy, compare_with
from pytest_ortperf.checks.latency import (
    LatencyResult,
    ab_without_reference,
    check_ab,
    check_latency,
    explained,
    glance,
    not_timed,
)
from pytest_ortperf.checks.paths import Plan, Route, choose, rebuild_plan, same_hardware
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import InputsError, OrtperfError
from pytest_ortperf.gate.references import ABReference, RecordedReference, ReferenceChoice
from pytest_ortperf.gate.run import OrtperfRun
from pytest_ortperf.latency.activity import BUILDING, Activity
from pytest_ortperf.latency.measure import MeasureSettings, measure
from pytest_ortperf.latency.paired import INSTANCES, alternating
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.ort.inputs import Array, data_sets
from pytest_ortperf.ort.providers import CPU
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.watchdog import Watchdog
from pytest_ortperf.ort.workers import SideSpec, WorkerSide, load, load_pair, this_python
from pytest_ortperf.profiling.book import MarkedProfile, worker_operator_profile
from pytest_ortperf.reports.ci_files import ERROR
from pytest_ortperf.store.environment import environment, feeds_digest, what_changed
from pytest_ortperf.store.keys import CheckKey, check_name, with_check_name

Abort = Callable[[str], NoReturn]
T = TypeVar("T")
PROFILED_RUNS = 3
BOTH_SIDES = "untimed profiled runs of both sides, after measuring"
LATENCY, ACCURACY = "latency", "accuracy"


@dataclass(frozen=True)
class CheckContext:
    """Everything the checks of one test instance need, resolved by the pytest layer."""

    run: OrtperfRun
    built: BuiltSession
    feeds: Mapping[str, Array]
    key: CheckKey
    policy: CheckPolicy
    tolerances: ToleranceSpec
    reference: Callable[[], ReferenceChoice]  # the configured reference variant, or why there is none
    data_set: Path | None = None
    profiler: MarkedProfile | None = None
    nodeid: str = ""
    add_property: Callable[[str, object], None] = lambda name, value: None
    ab: Callable[[], ABReference | None] = lambda: None  # the A/B reference; None: stored mode


class OrtPerf:
    """Latency and accuracy checks for one test x variant, against this machine's baseline.

    ``check_latency()`` times ``ort_session`` (never a profiled session);
    ``check_accuracy()`` compares outputs with the recorded baseline, the
    reference variant and the model's own test data; ``check()`` does both and
    fails once with every problem.

    With ``--ortperf-timing=off`` nothing is timed: ``check_latency()`` skips the
    test, naming the option, and ``check()`` checks accuracy only; the latency
    half is reported as 'not timed'.

    Each check of a test has its own baseline: the first unnamed one the test's
    own, later unnamed ones ``#2``, ``#3``... in call order, and ``name="big"``
    one of its own (``#big``) whatever the order.
    """

    def __init__(
        self,
        context: CheckContext,
        *,
        fail: Abort,
        skip: Abort,
        on_result: Callable[[LatencyResult], object] | None = None,
    ) -> None:
        self._context = context
        self._fail = fail
        self._skip = skip
        self._on_result = on_result
        self._names: dict[str, set[str]] = {LATENCY: set(), ACCURACY: set()}
        self._activity = Activity()  # the latency check in progress: its phases, rounds and time

    @property
    def session(self) -> BuiltSession:
        return self._context.built

    def check_latency(
        self, feeds: Mapping[str, Array] | None = None, *, name: str | None = None
    ) -> LatencyResult:
        """Against the stored baseline or, in A/B mode, against the reference model (and its outputs)."""
        __tracebackhide__ = True
        key = self._key(name, LATENCY)
        if not self._context.run.config.timing:
            self._skip(self._not_timed(key).message)
        return self._finish(self._latency_checks(feeds, key))[0]  # type: ignore[return-value]

    def check_accuracy(
        self, feeds: Mapping[str, Array] | None = None, *, name: str | None = None
    ) -> AccuracyResult:
        __tracebackhide__ = True
        key = self._key(name, ACCURACY)
        return self._finish([self._guard(lambda: self._accuracy(feeds, key), key, ACCURACY)])[0]  # type: ignore[return-value]

    def check(
        self, feeds: Mapping[str, Array] | None = None, *, name: str | None = None
    ) -> tuple[LatencyResult, AccuracyResult]:
        """Latency and accuracy; the test fails once, with both messages, if either failed."""
        __tracebackhide__ = True
        key = self._key(name, LATENCY, ACCURACY)
        if not self._context.run.config.timing:  # the accuracy half only; the test is not skipped
            untimed = self._not_timed(key)
            (accuracy,) = self._finish([self._guard(lambda: self._accuracy(feeds, key), key, ACCURACY)])
            return untimed, accuracy  # type: ignore[return-value]
        latency = self._latency_checks(feeds, key)
        results = self._finish([*latency, self._guard(lambda: self._accuracy(feeds, key), key, ACCURACY)])
        return results[0], results[-1]  # type: ignore[return-value]

    def _not_timed(self, key: CheckKey) -> LatencyResult:
        """A latency check under ``--ortperf-timing=off``: reported as 'not timed', nothing measured."""
        context = self._context
        result = not_timed(key)
        context.run.results.publish_not_timed(result, context.nodeid)
        context.add_property("ortperf_latency_verdict", str(result.status))
        return result

    def _key(self, name: str | None, *kinds: str) -> CheckKey:
        """This check's baseline key: the test's own, ``#2``, ``#3``... or ``#name``."""
        __tracebackhide__ = True
        taken = set().union(*(self._names[kind] for kind in kinds))
        if name is None:
            suffix = "" if "" not in taken else next(str(n) for n in count(2) if str(n) not in taken)
        else:
            try:
                suffix = check_name(name)
            except OrtperfError as exc:
                self._fail(str(exc))
            if suffix in taken:
                self._fail(f"check name {name!r} is used twice in this test: each check needs its own name.")
        for kind in kinds:
            self._names[kind].add(suffix)
        key = self._context.key
        return replace(key, test=with_check_name(key.test, suffix))

    def _latency_checks(
        self, feeds: Mapping[str, Array] | None, key: CheckKey
    ) -> list[LatencyResult | AccuracyResult | str]:
        """The latency check of this mode, followed by the run's progress line and timed by phase."""
        with self._context.run.activity(key.test) as self._activity:
            return self._latency_paths(feeds, key)

    def _latency_paths(
        self, feeds: Mapping[str, Array] | None, key: CheckKey
    ) -> list[LatencyResult | AccuracyResult | str]:
        """The latency check of this mode: stored baseline, or A/B (latency plus outputs vs the reference)."""
        context = self._context
        policy = self._policy(key, LATENCY)
        # Updates always record stored baselines: no A/B reference then.
        reference = None if policy.update else self._guard(context.ab, key, LATENCY)
        if isinstance(reference, str):
            return [reference]
        if reference is None:
            inputs = self._inputs(feeds)
            measured_in = self._environment(inputs)  # once: it hashes the inputs
            with self._activity.phase(BUILDING):
                found = self._guard(lambda: self._rebuilt_reference(key, measured_in, policy), key, LATENCY)
            if isinstance(found, str):
                return [found]
            rebuilt, why = found
            if rebuilt is not None:
                label = f"latency of {key.test} side by side with {rebuilt.label}: "
                found_checks = self._guard(
                    lambda: self._against_recorded(rebuilt, inputs, key), key, LATENCY, label
                )
                return [found_checks] if isinstance(found_checks, str) else found_checks
            return [
                self._guard(
                    lambda: self._latency(inputs, key, policy, measured_in, stored_reason=why), key, LATENCY
                )
            ]
        # A run failing in A/B mode (a reference whose inputs differ, a timeout) fails the test with
        # a message, as in stored mode, naming the reference.
        label = f"same-job A/B of {key.test} against {reference.label}: "
        checks = self._guard(lambda: self._ab(reference, self._inputs(feeds), key), key, LATENCY, label)
        return [checks] if isinstance(checks, str) else checks

    def _policy(self, key: CheckKey, part: str) -> CheckPolicy:
        """The run's policy for this check: under ``--ortperf-update=missing``, a plain run's for a
        check whose ``part`` this hardware's entry already holds."""
        context = self._context
        if not context.policy.update_missing:
            return context.policy
        try:
            entry = context.run.store.lookup(key.test_file, key.test, key.machine)
        except OrtperfError:
            return context.policy  # reported by the check, which reads the same file
        here = {"hardware": context.run.machine.hardware.as_dict()}
        if entry is None or getattr(entry, part) is None:
            return context.policy
        return context.policy.for_entry(same_hardware(entry.environment, here))

    def _guard(self, action: Callable[[], T], key: CheckKey, kind: str, prefix: str = "") -> T | str:
        """The action's result or, when it ends in an error instead of a verdict, the error's message,
        recorded for the reports like a failed check."""
        try:
            return action()
        except OrtperfError as exc:
            return self._error(key, kind, f"{prefix}{exc}")

    def _error(self, key: CheckKey, kind: str, message: str) -> str:
        context = self._context
        context.run.results.publish_error(key, kind=kind, nodeid=context.nodeid, message=message)
        context.add_property(f"ortperf_{kind}_verdict", ERROR)
        context.add_property("ortperf_error", message)
        return message

    def _finish(
        self, results: list[LatencyResult | AccuracyResult | str]
    ) -> list[LatencyResult | AccuracyResult | str]:
        __tracebackhide__ = True
        failures = [r if isinstance(r, str) else r.message for r in results if isinstance(r, str) or r.failed]
        if failures:
            # Checks that end in the same error (check()'s latency and accuracy reading one damaged
            # baseline file) report it once.
            self._fail("\n\n".join(dict.fromkeys(failures)))
        skips = [r.message for r in results if not isinstance(r, str) and r.skipped]
        if skips:
            self._skip("\n\n".join(skips))
        return results

    def _other_data_sets(
        self, first: Path, output_names: list[str]
    ) -> list[tuple[dict[str, Array], Reference]]:
        """Every data set beside the model after the one the test's inputs come from."""
        context = self._context
        found = []
        for data_set in data_sets(first.parent):
            if data_set == first:  # compared with the outputs of the test's own inputs
                continue
            expected, defaults = context.run.data_set_outputs(data_set, output_names)
            if not expected:  # a data set may ship inputs only
                continue
            feeds = context.run.data_set_feeds(data_set, context.built)
            outputs = _run_outputs(context.built, feeds, context.run.watchdog)
            found.append((outputs, Reference(data_set.name, expected, defaults)))
        return found

    def _inputs(self, feeds: Mapping[str, Array] | None) -> dict[str, Array]:
        return dict(self._context.feeds if feeds is None else feeds)

    def _environment(self, inputs: Mapping[str, Array]) -> dict[str, object]:
        run = self._context.run
        return environment(
            self._context.built,
            inputs,
            machine=run.machine,
            runtime=run.runtime,
            measurement={**self._context.policy.measure.as_dict(), "canary": self._canary_on()},
        )

    def _canary_on(self) -> bool:
        """Whether latency is measured with the machine-speed canary: when on, for the CPU provider."""
        context = self._context
        return context.run.config.canary and context.built.variant.provider == CPU

    def _canary(self) -> Callable[[], object] | None:
        return self._context.run.canary(self._context.built) if self._canary_on() else None

    def _latency(
        self,
        inputs: dict[str, Array],
        key: CheckKey,
        policy: CheckPolicy,
        measured_in: Mapping[str, object],
        *,
        stored_reason: str = "",
    ) -> LatencyResult:
        context = self._context
        session = context.built.session
        profile_fn = (lambda: context.run.op_profile(context.built, inputs)) if context.profiler else None
        timing = context.run.timing

        canary = self._canary()
        activity = self._activity

        def measured(run: Callable[[], object], settings: MeasureSettings) -> LatencyStats:
            with timing.held(activity):
                return measure(run, settings, canary=canary, activity=activity)

        watchdog = context.run.watchdog
        result = check_latency(
            lambda: watchdog.run(session, None, inputs),
            measure_fn=measured,
            profile_fn=profile_fn,
            key=key,
            store=context.run.store,
            policy=policy,
            environment=measured_in,
            today=datetime.date.today().isoformat(),
            stored_reason=stored_reason,
            activity=activity,
        )
        self._traced_runs(inputs)
        result = self._publish(result)
        return result

    def _traced_runs(self, inputs: Mapping[str, Array]) -> None:
        """In a test marked ``ort_profile``: a few untimed runs of the model under test, after the
        check measured, on the test's profiled session, so every route of a latency check leaves
        per-run traces of where the time went. Timed runs never use a profiled session."""
        profiler = self._context.profiler
        if profiler is not None:
            for _ in range(PROFILED_RUNS):
                profiler.run(None, dict(inputs))

    def _explained_side_by_side(
        self, result: LatencyResult, other: BuiltSession, inputs: Mapping[str, Array]
    ) -> LatencyResult:
        """A failed side-by-side check of a marked test, with what changed at operator level: both
        sides profiled now, after measuring, each on a short-lived profiling session of its own."""
        context = self._context
        if context.profiler is None or not result.failed:
            return result
        run, built = context.run, context.built
        return explained(
            result, BOTH_SIDES, lambda: (run.op_profile(other, inputs), run.op_profile(built, inputs))
        )

    def _ab(
        self, reference: ABReference, inputs: dict[str, Array], key: CheckKey
    ) -> list[LatencyResult | AccuracyResult | str]:
        context = self._context
        built, watchdog, timing = context.built, context.run.watchdog, context.run.timing
        if reference.across_runtimes and reference.source is not None:
            return self._across_runtimes(
                RecordedReference(reference.label, reference.source, built.settings, reference.python),
                inputs,
                key,
            )
        if reference.source is None or reference.source.sha256 == built.model.sha256:
            # Nothing to compare: a short measurement, for the report only.
            with timing.held(self._activity):
                stats = measure(
                    lambda: watchdog.run(built.session, None, inputs),
                    glance(context.policy.measure),
                    activity=self._activity,
                )
            identical = reference.source is not None
            result = ab_without_reference(
                stats,
                key=key,
                label=reference.label,
                status=Status.IDENTICAL_TO_REFERENCE if identical else Status.NO_REFERENCE,
                reason=f"identical to {reference.label}, nothing to compare"
                if identical
                else reference.reason,
            )
            self._traced_runs(inputs)
            result = self._publish(result)
            return [result]
        with self._activity.phase(BUILDING, "reference"):
            other = context.run.session(reference.source, built.variant, built.settings)
        result = self._side_by_side(other, reference.label, inputs, key)
        outputs = self._guard(lambda: self._ab_accuracy(other, reference.label, inputs, key), key, ACCURACY)
        return [result, outputs]

    def _rebuilt_reference(
        self, key: CheckKey, measured_in: Mapping[str, object], policy: CheckPolicy
    ) -> tuple[RecordedReference | None, str]:
        """What this check's baseline measured, rebuilt when the model or its settings changed since
        (``checks.paths``): then the two are measured side by side instead of comparing with figures
        of another time. Otherwise (None, why the stored figures decide): "" when they need no reason
        (an update, no baseline, nothing changed)."""
        context = self._context
        context.run.keep_model(context.built.model)  # so that a later change can be measured against it
        if policy.update:
            return None, ""
        try:
            entry = context.run.store.lookup(key.test_file, key.test, key.machine)
        except OrtperfError:
            return None, ""  # reported by the stored check, which reads the same file
        if entry is None or entry.latency is None:
            return None, ""
        plan = choose(entry.environment, measured_in)
        if plan.route is not Route.SIDE_BY_SIDE:
            return None, plan.reason
        return self._rebuild(plan)

    def _rebuild(self, plan: Plan) -> tuple[RecordedReference | None, str]:
        """The reference a side-by-side ``plan`` names, or (None, why it cannot be rebuilt here)."""
        built = self._context.built
        model, labels = built.model, []
        python = ""
        if plan.runtime is not None:
            python, where = self._context.run.runtime_python(*plan.runtime)
            if not python:
                return None, f"{plan.reason}: {where}"
            labels.append(f"the recorded runtime ({where})")
        if plan.model_changed:
            found = self._context.run.recorded_model(built.model, plan.model_blob, plan.model_sha256)
            if found is None or found.source is None:
                return None, (
                    f"the model changed (sha256 {plan.model_sha256[:12]} -> {built.model.sha256[:12]}) and "
                    "the recorded one is neither in git here nor in the model cache (--ortperf-model-cache)"
                )
            model = found.source
            labels.append(found.label)
        settings = built.settings
        if plan.settings is not None:
            try:
                settings = SessionSettings().with_overrides(plan.settings, source="the baseline's settings")
            except OrtperfError as exc:
                return None, f"the recorded session settings cannot be rebuilt ({exc})"
            changed = what_changed({"settings": plan.settings}, {"settings": built.settings.as_dict()})
            labels.append(f"the recorded settings ({changed[0].partition(': ')[2]})" if changed else "")
        label = " under ".join(label for label in labels if label) or "the recorded model (the same bytes)"
        return RecordedReference(label, model, settings, python), ""

    def _against_recorded(
        self, reference: RecordedReference, inputs: dict[str, Array], key: CheckKey
    ) -> list[LatencyResult | AccuracyResult | str]:
        """The current model against what its baseline recorded, rebuilt (in the recorded runtime's
        environment when onnxruntime changed since)."""
        if reference.python:
            return self._across_runtimes(reference, inputs, key, accept=key.record_command)
        built = self._context.built
        with self._activity.phase(BUILDING, "reference"):
            other = self._context.run.session(reference.model, built.variant, reference.settings)
        return [self._side_by_side(other, reference.label, inputs, key, accept=key.record_command)]

    def _across_runtimes(
        self, reference: RecordedReference, inputs: dict[str, Array], key: CheckKey, *, accept: str = ""
    ) -> list[LatencyResult | AccuracyResult | str]:
        """The current model in this environment's ONNX Runtime against ``reference`` in another's,
        both in measuring workers (so neither pays a different process cost), in interleaved rounds
        decided by the A/B rule; then the outputs of the two runtimes, compared with the tolerances."""
        context = self._context
        built, workers = context.built, context.run.workers
        this_side = SideSpec(this_python(), built.model, built.settings)
        other_side = SideSpec(reference.python, reference.model, reference.settings)
        sides: list[WorkerSide] = []

        def pair(fresh: bool = False) -> tuple[WorkerSide, WorkerSide]:
            """Both sides, each in its own worker processes (new ones for a confirmation: a process,
            like a session, can favour its side for as long as it lives)."""
            here, there = load_pair(workers, this_side, other_side, built.variant, inputs, fresh=fresh)
            sides.extend((here, there))
            return here, there

        try:
            with self._activity.phase(BUILDING, "measuring workers"):
                current, other = pair()  # built before the timing lock is taken
            # Named from the workers themselves: what their environments really import.
            runtimes = f"{other.runtime.describe()} -> {current.runtime.describe()}"
            label = f"{reference.label} in {other.runtime.describe()}"
            with context.run.timing.held(self._activity):
                result = check_ab(
                    current,
                    other,
                    key=key,
                    label=label,
                    policy=context.policy,
                    fresh_pair=lambda: pair(fresh=True),
                    accept=accept,
                    runtimes=runtimes,
                    activity=self._activity,
                )
            # From the last pair loaded: a confirmation replaces the first pair's processes.
            last, last_other = sides[-2:]
            if context.profiler is not None and result.failed:
                # Each side profiled in its own runtime, after the timing lock is released.
                provider = built.variant.provider
                result = explained(
                    result,
                    f"{BOTH_SIDES}, each in its own runtime",
                    lambda: (
                        worker_operator_profile(last_other.models[0], provider),
                        worker_operator_profile(last.models[0], provider),
                    ),
                )
            self._traced_runs(inputs)
            result = self._publish(result)
            outputs = self._guard(
                lambda: self._compare_outputs(last.outputs(), last_other.outputs(), label, key), key, ACCURACY
            )
        finally:
            for side in sides:
                for failed in side.release():
                    workers.discard(failed)
        return [result, outputs]

    def _side_by_side(
        self, other: BuiltSession, label: str, inputs: dict[str, Array], key: CheckKey, *, accept: str = ""
    ) -> LatencyResult:
        """The current model against ``other``, in interleaved rounds decided by the A/B rule."""
        context = self._context
        built, watchdog = context.built, context.run.watchdog
        pool = context.run.pool

        def side(*sessions: BuiltSession) -> Callable[[], object]:
            return alternating([functools.partial(watchdog.run, b.session, None, inputs) for b in sessions])

        def fresh_pair() -> tuple[Callable[[], object], Callable[[], object]]:
            return (
                side(*(pool.fresh(built) for _ in range(INSTANCES))),
                side(*(pool.fresh(other) for _ in range(INSTANCES))),
            )

        # Built before the timing lock is taken: other processes time while these build.
        with self._activity.phase(BUILDING, "sessions of both sides"):
            current = side(built, *(pool.fresh(built) for _ in range(INSTANCES - 1)))
            reference = side(other, *(pool.fresh(other) for _ in range(INSTANCES - 1)))
        with context.run.timing.held(self._activity):
            result = check_ab(
                current,
                reference,
                key=key,
                label=label,
                policy=context.policy,
                fresh_pair=fresh_pair,
                accept=accept,
                activity=self._activity,
            )
        # Profiled after the timing lock is released: untimed work, like building sessions.
        result = self._explained_side_by_side(result, other, inputs)
        self._traced_runs(inputs)
        result = self._publish(result)
        return result

    def _ab_accuracy(
        self, other: BuiltSession, label: str, inputs: dict[str, Array], key: CheckKey
    ) -> AccuracyResult:
        """Outputs of the model under test against the A/B reference model's, same inputs and variant."""
        watchdog = self._context.run.watchdog
        actual = _run_outputs(self._context.built, inputs, watchdog)
        return self._compare_outputs(actual, _run_outputs(other, inputs, watchdog), label, key)

    def _compare_outputs(
        self, actual: dict[str, Array], reference: dict[str, Array], label: str, key: CheckKey
    ) -> AccuracyResult:
        """Outputs of the model under test against a reference's (model or runtime), same inputs."""
        context = self._context
        expected = Reference(label, reference, {})
        result = compare_with(
            actual,
            expected,
            key=key,
            tolerances=context.tolerances,
            provider_short=context.built.variant.provider_spec.short,
            fail=context.run.config.ab_outputs_fail,
        )
        context.run.results.publish_accuracy(result, context.nodeid)
        context.add_property("ortperf_ab_accuracy_verdict", str(result.status))
        return result

    def _publish(self, result: LatencyResult) -> LatencyResult:
        """A latency result, with where its time went, into the run's report, the JUnit properties
        and pytest-benchmark."""
        context = self._context
        result = replace(result, seconds=self._activity.seconds(), lock_waits=self._activity.lock_waits())
        context.run.results.publish_latency(result, context.nodeid)
        context.add_property("ortperf_latency_verdict", str(result.status))
        context.add_property("ortperf_latency_mode", result.basis)
        context.add_property("ortperf_latency_path", result.path)
        context.add_property("ortperf_latency_median_ms", round(result.current.median_ms, 6))
        if result.change:
            context.add_property("ortperf_latency_change", result.change)
        if self._on_result is not None:
            self._on_result(result)
        return result

    def _recorded_outputs(self, key: CheckKey, inputs: dict[str, Array], digest: str) -> Reference | None:
        """When today's inputs differ from those the baseline's outputs were recorded on: the outputs
        of the recorded model (rebuilt, under its recorded settings) on today's inputs, or why there
        are none. None when the inputs are the recorded ones, or there is no baseline."""
        context = self._context
        try:
            entry = context.run.store.lookup(key.test_file, key.test, key.machine)
        except OrtperfError:
            return None  # reported by the accuracy check, which reads the same file
        if entry is None or entry.accuracy is None or entry.accuracy.inputs_sha256 == digest:
            return None
        plan = rebuild_plan(entry.environment, self._environment(inputs))
        rebuilt, why = self._rebuild(plan) if plan.route is Route.SIDE_BY_SIDE else (None, plan.reason)
        if rebuilt is None:
            return Reference.unavailable("the recorded model on today's inputs", why)
        if rebuilt.python:
            worker = context.run.workers.side(rebuilt.python, "reference", 1)[0]
            other_model = load(worker, rebuilt.model, context.built.variant, rebuilt.settings, inputs)
            try:
                outputs = other_model.outputs()
            finally:
                other_model.release()
        else:
            other = context.run.session(rebuilt.model, context.built.variant, rebuilt.settings)
            outputs = _run_outputs(other, inputs, context.run.watchdog)
        return Reference(f"{rebuilt.label} on today's inputs", outputs, {})

    def _accuracy(self, feeds: Mapping[str, Array] | None, key: CheckKey) -> AccuracyResult:
        policy = self._policy(key, ACCURACY)
        context, inputs = self._context, self._inputs(feeds)
        watchdog = context.run.watchdog
        actual = _run_outputs(context.built, inputs, watchdog)
        choice = context.reference()
        variant_reference = (
            Reference(choice.label, _run_outputs(choice.session, inputs, watchdog), {})
            if choice.session is not None
            else Reference.unavailable(choice.label, choice.note)
            if choice.note
            else None
        )
        model_reference = None
        more_data_sets: list[tuple[dict[str, Array], Reference]] = []
        if context.data_set is not None and feeds is None:
            expected, defaults = context.run.data_set_outputs(context.data_set, list(actual))
            if expected:  # a data set may ship inputs only
                model_reference = Reference(context.data_set.name, expected, defaults)
            more_data_sets = self._other_data_sets(context.data_set, list(actual))
        digest = feeds_digest(inputs)
        result = check_accuracy(
            actual,
            inputs_sha256=digest,
            key=key,
            store=context.run.store,
            policy=policy,
            tolerances=context.tolerances,
            provider_short=context.built.variant.provider_spec.short,
            variant_reference=variant_reference,
            model_reference=model_reference,
            environment=self._environment(inputs),
            today=datetime.date.today().isoformat(),
            more_data_sets=more_data_sets,
            rebuilt_reference=None if policy.update else self._recorded_outputs(key, inputs, digest),
        )
        context.run.results.publish_accuracy(result, context.nodeid)
        context.add_property("ortperf_accuracy_verdict", str(result.status))
        return result


def _run_outputs(built: BuiltSession, inputs: Mapping[str, Array], watchdog: Watchdog) -> dict[str, Array]:
    """Tensor outputs by name; strings as fixed-width text. Sequence and map outputs are not compared."""
    try:
        names = [output.name for output in built.session.get_outputs()]
    except UnicodeDecodeError as exc:
        raise InputsError(f"the model's output names are not valid UTF-8 ({exc}).") from None
    outputs = {}
    for name, value in zip(names, watchdog.run(built.session, names, dict(inputs)), strict=True):
        if isinstance(value, np.ndarray):
            outputs[name] = value.astype(str) if value.dtype == object else value
    return outputs


def key_for(
    nodeid: str, selector: str, variant: str, machine: str, extra_args: str, *, environment: str = ""
) -> CheckKey:
    """Split a node id into baseline file and test name; build the command that records it
    (``environment``: variable assignments the command needs, e.g. ``ORTPERF_MACHINE=gha-x64``)."""
    test_file, _, test = nodeid.partition("::")
    command = f"ortperf update '{selector}'" + (f" {extra_args}" if extra_args else "")
    command = f"{environment} {command}" if environment else command
    return CheckKey(test_file=test_file, test=test, variant=variant, machine=machine, record_command=command)
