"""The accuracy check: the outputs of the model under test against every reference there is (the
baseline's recorded outputs, the reference variant, the model's own data sets, the recorded model
rebuilt on today's inputs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ortperf.accuracy.output_values import OutputValue
from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult, Reference, check_accuracy
from pytest_ortperf.checks.paths import Ladder, Route
from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.protocol import CheckContext, CheckTarget, Outcome
from pytest_ortperf.gate.session_outputs import run_outputs
from pytest_ortperf.ort.inputs import data_sets, declared_inputs, fits
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.reports.ci_files import accuracy_record
from pytest_ortperf.store.baselines import BaselineEntry
from pytest_ortperf.store.environment import shapes_changed

ACCURACY = "accuracy"
TODAY = "on today's inputs"  # how a rebuilt recorded model's reference is labelled


class AccuracyCheck:
    """``check_accuracy()``: compares outputs with the recorded baseline (the entry's, recorded on any
    hardware), the reference variant and the model's own test data."""

    kind = ACCURACY

    def __init__(self, context: CheckContext) -> None:
        self._context = context

    def recorded(self, entry: BaselineEntry, machine: str) -> bool:
        return entry.accuracy is not None  # one set of reference outputs per entry, on any hardware

    def run(self, target: CheckTarget) -> Sequence[Outcome]:
        return [self._accuracy(target)]

    def _accuracy(self, target: CheckTarget) -> AccuracyResult:
        context = self._context
        inputs, key, policy = target.inputs, target.key, target.policy
        watchdog = context.sessions.watchdog
        actual = run_outputs(context.built, inputs, watchdog)
        choice = context.reference()
        variant_reference = (
            Reference(choice.label, run_outputs(choice.session, inputs, watchdog), {})
            if choice.session is not None
            else Reference.unavailable(choice.label, choice.note)
            if choice.note
            else None
        )
        model_reference = None
        more_data_sets: list[tuple[dict[str, OutputValue], Reference]] = []
        if context.data_set is not None and target.own_feeds:
            expected, defaults = context.references.data_set_outputs(context.data_set, list(actual))
            if expected:  # a data set may ship inputs only
                model_reference = Reference(context.data_set.name, expected, defaults)
            more_data_sets = self._other_data_sets(context.data_set, list(actual))
        digest = target.inputs_sha256
        record = target.entry.accuracy if target.entry is not None else None
        if policy.update:
            baseline = context.outputs.previous(record, inputs_sha256=digest)
        else:
            baseline = context.outputs.recorded(record, test_file=key.test_file, inputs_sha256=digest)
        result = check_accuracy(
            actual,
            inputs_sha256=digest,
            key=key,
            policy=policy,
            tolerances=context.tolerances,
            provider_short=context.built.variant.provider_spec.short,
            variant_reference=variant_reference,
            model_reference=model_reference,
            entry=target.entry,
            baseline=baseline,
            environment=target.environment,
            more_data_sets=more_data_sets,
            rebuilt_reference=None if policy.update else self._recorded_outputs(target, digest),
            shapes_changed=_shapes_changed(target),
        )
        if result.status in (Status.NEW, Status.UPDATED):
            context.outputs.stage(key, actual, environment=target.environment)
        made = context.references.made_from(context.built.model)
        if made is not None:  # a precision build: where precision went, against its fp32 model
            result = context.localising.precision_lost(result, made, inputs)
        else:
            model, why = self._recorded_model(result, target)
            result = context.localising.located(result, model, why, inputs)
        context.publisher.publish(accuracy_record(result, context.nodeid))
        return result

    def _recorded_model(self, result: AccuracyResult, target: CheckTarget) -> tuple[ModelSource | None, str]:
        """The model to run beside this one to find where a failure starts: the recorded model, rebuilt,
        when it failed against the baseline's outputs (or the recorded model's on today's inputs) and
        the model changed; else None and why the cause cannot be located. Asked on failure only."""
        if not result.failed:
            return None, ""
        context, entry = self._context, target.entry
        failing = [outcome.label for outcome in result.references if outcome.failed]
        recorded = [label for label in failing if label.startswith("baseline") or label.endswith(TODAY)]
        if not recorded:
            return None, (
                f"it failed against {', '.join(failing)}: outputs given, or this model's at another "
                "variant, not a second model whose tensors can be run beside it"
            )
        if entry is None:
            return None, "no baseline entry holds a recorded model"
        plan = target.plan(ACCURACY, ladder=Ladder.OUTPUTS)
        if plan.route is not Route.SIDE_BY_SIDE:
            return None, f"the recorded model cannot be rebuilt ({plan.reason})"
        if not plan.model_changed:
            return None, (
                "the model is the recorded one; what changed is its "
                + ("onnxruntime" if plan.runtime else "session settings" if plan.settings else "inputs")
                + ", not a tensor of the model"
            )
        rebuilt, why = context.references.rebuild(context.built, plan)
        if rebuilt is None:
            return None, f"the recorded model cannot be rebuilt ({why}); the baseline keeps its outputs only"
        return rebuilt.model, ""

    def _recorded_outputs(self, target: CheckTarget, digest: str) -> Reference | None:
        """When today's inputs differ from those the baseline's outputs were recorded on: the outputs
        of the recorded model (rebuilt, under its recorded settings) on today's inputs, or why there
        are none. None when the inputs are the recorded ones, or there is no baseline."""
        context, entry, inputs = self._context, target.entry, target.inputs
        if entry is None or entry.accuracy is None or entry.accuracy.inputs_sha256 == digest:
            return None
        plan = target.plan(ACCURACY, ladder=Ladder.OUTPUTS)
        if plan.route is Route.SIDE_BY_SIDE:
            rebuilt, why = context.references.rebuild(context.built, plan)
        else:
            rebuilt, why = None, plan.reason
        if rebuilt is None:
            return Reference.unavailable(f"the recorded model {TODAY}", why)
        if _shapes_changed(target) and not _takes(rebuilt.model, inputs):
            # A fixed-size model re-exported at another size: the recorded one does not take today's
            # inputs (its graph says so; nothing is run to find out); the shapes, named by the check,
            # say why.
            return Reference.unavailable(
                f"{rebuilt.label} {TODAY}", "it does not take inputs of these shapes"
            )
        outputs = context.references.rebuilt_outputs(rebuilt, context.built, inputs)
        return Reference(f"{rebuilt.label} {TODAY}", outputs, {})

    def _other_data_sets(
        self, first: Path, output_names: list[str]
    ) -> list[tuple[dict[str, OutputValue], Reference]]:
        """Every data set beside the model after the one the test's inputs come from."""
        context = self._context
        found = []
        for data_set in data_sets(first.parent):
            if data_set == first:  # compared with the outputs of the test's own inputs
                continue
            expected, defaults = context.references.data_set_outputs(data_set, output_names)
            if not expected:  # a data set may ship inputs only
                continue
            feeds = context.references.data_set_feeds(data_set, context.built)
            outputs = run_outputs(context.built, feeds, context.sessions.watchdog)
            found.append((outputs, Reference(data_set.name, expected, defaults)))
        return found


def _takes(model: ModelSource, inputs: Mapping[str, Any]) -> bool:
    """Whether ``model``'s graph declares inputs that ``inputs`` fit (True where onnx cannot read
    it: then running it says what it takes)."""
    try:
        return fits(declared_inputs(model), inputs)
    except OrtperfError:
        return True


def _shapes_changed(target: CheckTarget) -> str:
    """How the inputs' shapes changed since the baseline's recipe, "" when they did not."""
    recipe = target.entry.recipe if target.entry is not None else {}
    return shapes_changed(recipe.get("inputs"), target.environment.get("inputs"))
