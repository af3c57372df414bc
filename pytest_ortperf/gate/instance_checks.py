"""The checks of one test instance: each check's baseline entry is read once, its environment
computed once, and every check object (``gate/protocol.py``) runs on that; an error becomes a
:class:`CheckError` outcome, published like a failed check."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pytest_ortperf.checks.policy import CheckPolicy, MissingOnly, missing_only
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.protocol import Check, CheckContext, CheckError, CheckTarget, Outcome, canary_on
from pytest_ortperf.gate.registry import KindRegistry
from pytest_ortperf.ort.inputs import Array, UnmadeFeeds, synthetic_hint
from pytest_ortperf.ort.watchdog import RUN_FAILED
from pytest_ortperf.reports.ci_files import error_record
from pytest_ortperf.store.baselines import BaselineEntry
from pytest_ortperf.store.environment import environment, recipe_changes
from pytest_ortperf.store.keys import CheckKey


class InstanceChecks:
    """The check objects of one test instance, made from the run's kinds, and the one way they are run."""

    def __init__(self, context: CheckContext, kinds: KindRegistry) -> None:
        self._context = context
        self._kinds = kinds
        self._made: dict[str, Check] = {}

    def named(self, kind: str) -> Check:
        """The check object of ``kind`` for this instance (made once)."""
        if kind not in self._made:
            self._made[kind] = self._kinds[kind].make(self._context)
        return self._made[kind]

    def run(
        self, checks: Sequence[Check], feeds: Mapping[str, Array] | None, key: CheckKey
    ) -> list[list[Outcome]]:
        """Run ``checks`` on one baseline key, in order; ``feeds`` None: the test's own inputs. The
        outcomes of each check, in the checks' order (its own result first: a latency check in A/B
        mode adds the comparison of the two models' outputs after it)."""
        context = self._context
        inputs = dict(context.feeds if feeds is None else feeds)
        unmade = context.feeds if feeds is None and isinstance(context.feeds, UnmadeFeeds) else None
        groups: list[list[Outcome]]
        if unmade is not None and all(not self._kinds[check.kind].test_inputs for check in checks):
            # Kinds that feed the model from its own graph run without the test's inputs.
            with context.measurer.untimed(key.test):
                groups = self._checked(checks, {}, key, own_feeds=False)
        elif unmade is not None:  # the test's inputs could not be made: nothing to run its checks on
            groups = [[CheckError(key, check.kind, unmade.problem)] for check in checks]
        else:
            # Untimed work holds the timing lock shared: never beside another process's decision.
            with context.measurer.untimed(key.test):
                groups = self._checked(checks, inputs, key, own_feeds=feeds is None)
        if feeds is None:
            groups = [[self._pointed(outcome) for outcome in group] for group in groups]
        for outcome in (outcome for group in groups for outcome in group):
            if isinstance(outcome, CheckError):
                self._publish_error(outcome)
        return groups

    def _checked(
        self, checks: Sequence[Check], inputs: dict[str, Array], key: CheckKey, *, own_feeds: bool
    ) -> list[list[Outcome]]:
        """The outcomes of ``checks`` on ``inputs``: the entry read once, the environment computed once."""
        context = self._context
        groups: list[list[Outcome]] = []
        try:
            entry = context.store.lookup(key.test_file, key.test)
        except OrtperfError as exc:  # a damaged or unreadable baseline file: every check says so
            return [[CheckError(key, check.kind, str(exc))] for check in checks]
        source = getattr(context.feeds, "source", "") if own_feeds else ""
        measured_in = self._environment(inputs, source)  # once: it hashes the inputs
        for check in checks:
            policy, missing_only = self._policy(check, entry, key, measured_in)
            state = context.store.state(key.test_file, key.test, entry)  # what earlier checks staged, over it
            target = CheckTarget(key, inputs, entry, measured_in, policy, own_feeds=own_feeds, state=state)
            noted = {"update_missing": missing_only.as_dict()} if missing_only else {}
            try:
                with context.noted(noted):
                    group = list(check.run(target))
            except OrtperfError as exc:
                group = [CheckError(key, check.kind, str(exc))]
            for outcome in group:
                # What a recording verdict asks to stage, staged before the next check builds on it.
                staged = getattr(outcome, "staged", None)
                if staged is not None:
                    context.store.stage(key.test_file, key.test, staged)
            groups.append(group)
        return groups

    def _pointed(self, outcome: Outcome) -> Outcome:
        """A run that ONNX Runtime refused on synthesized inputs (``Pad reflect requires axis length
        >= 2``): its error also names those inputs and how to give the model others, since ORT's own
        words do not say the inputs were made up."""
        hint = synthetic_hint(self._context.feeds)
        if not isinstance(outcome, CheckError) or RUN_FAILED not in outcome.message or not hint:
            return outcome
        return replace(outcome, message=f"{outcome.message}\n{hint}")

    def not_timed(self, kind: str, key: CheckKey) -> Outcome:
        """A timed check under ``--ortperf-timing=off``: reported as 'not timed', nothing measured."""
        declared = self._kinds[kind]
        if declared.not_timed is None:
            raise OrtperfError(f"the {kind} check has no 'not timed' outcome.")
        result = declared.not_timed(key)
        self._context.publisher.publish(declared.record(result, self._context.nodeid))
        return result

    def _policy(
        self, check: Check, entry: BaselineEntry | None, key: CheckKey, measured_in: Mapping[str, object]
    ) -> tuple[CheckPolicy, MissingOnly | None]:
        """The run's policy for this check and, under ``--ortperf-update=missing``, what that does with
        it (``checks/policy.py: missing_only``): a new entry, or this hardware's missing part under the
        recorded recipe, is recorded; anything else gets a plain run's policy, so it is judged and its
        entry left byte for byte."""
        policy = self._context.policy
        if not policy.update_missing:
            return policy, None
        recorded_here = entry is not None and check.recorded(entry, key.machine)
        changes = None if entry is None else recipe_changes(entry.recipe, measured_in)
        decided = missing_only(exists=entry is not None, recorded_here=recorded_here, changes=changes)
        return (policy if decided.records else policy.judged()), decided

    def _environment(self, inputs: Mapping[str, Array], source: str = "") -> dict[str, object]:
        context = self._context
        return environment(
            context.built,
            inputs,
            machine=context.sessions.machine,
            runtime=context.sessions.runtime,
            measurement={**context.policy.measure.as_dict(), "canary": canary_on(context)},
            inputs_source=source,
        )

    def _publish_error(self, error: CheckError) -> None:
        context = self._context
        record = error_record(error.key, kind=error.kind, nodeid=context.nodeid, message=error.message)
        context.publisher.publish(record)
        context.add_property("ortperf_error", error.message)
