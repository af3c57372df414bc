"""Relative contracts (``ort_expect``, ``check_speedup``): this variant against another variant of
the same model, both built and measured in this run. The decisions are ``checks/contract_verdicts.py``'s.

A speedup contract times both variants' sessions side by side in interleaved rounds, as a
same-job A/B check does (``latency.paired``), and stops at the first planned look whose interval
lies wholly on one side of the promised speedup (the looks share the error, as in
``latency.sequential``). An agreement contract runs both on the test's inputs once.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace

from pytest_ortperf.accuracy.metrics import Array, agreement
from pytest_ortperf.accuracy.output_values import flatten
from pytest_ortperf.accuracy.tolerances import Tolerance
from pytest_ortperf.checks.contract_verdicts import (
    AGREEMENT,
    CONTRACT,
    FASTER_THAN,
    Contract,
    ContractResult,
    Speedup,
    judge_agreement,
    judge_speedup,
    not_available,
    not_measured,
)
from pytest_ortperf.errors import ProviderUnavailable
from pytest_ortperf.gate.protocol import CheckContext, CheckTarget, Outcome
from pytest_ortperf.gate.session_outputs import run_outputs
from pytest_ortperf.latency.activity import BUILDING, CONFIRMING, Activity
from pytest_ortperf.latency.paired import INSTANCES, PairedRounds, RoundsInTurn, measure_pair, paired_interval
from pytest_ortperf.latency.sequential import look_confidence, looks_for
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.reports.ci_files import contract_record
from pytest_ortperf.store.baselines import BaselineEntry


class ContractCheck:
    """The contracts of one test instance, each measured against its other variant in this run."""

    kind = CONTRACT

    def __init__(self, context: CheckContext, contracts: Sequence[Contract]) -> None:
        self._context = context
        self._contracts = tuple(contracts)
        self._activity = Activity()

    def recorded(self, entry: BaselineEntry, machine: str) -> bool:
        return True  # a contract keeps nothing in a baseline

    def run(self, target: CheckTarget) -> Sequence[Outcome]:
        results = []
        for contract in self._contracts:
            with self._context.measurer.activity(f"{target.key.shown} ({contract.other})") as self._activity:
                results.append(self._one(contract, target))
        return results

    def _one(self, contract: Contract, target: CheckTarget) -> ContractResult:
        context, key = self._context, target.key
        if target.policy.update:
            result = not_measured(key, contract, "--ortperf-update records baselines; contracts need none")
            return self._publish(result)
        if contract.kind == FASTER_THAN and not context.settings.timing:
            return self._publish(not_measured(key, contract, "--ortperf-timing=off: nothing is timed"))
        if contract.other == context.built.variant.id:  # a marker on a test that runs that variant too
            return self._publish(not_measured(key, contract, "this is the variant it is compared with"))
        try:
            with self._activity.phase(BUILDING, contract.other):
                other = context.other_variant(contract.other)
        except ProviderUnavailable as exc:
            return self._publish(not_available(key, contract, str(exc)))
        if contract.kind == AGREEMENT:
            watchdog = context.sessions.watchdog
            # Agreement is a share of elements or of class rows: of every array the outputs hold (a
            # map's values, a sequence's elements), under their leaf names.
            mine = run_outputs(context.built, target.inputs, watchdog)
            theirs = run_outputs(other, target.inputs, watchdog)
            actual, expected = flatten(mine).leaves, flatten(theirs).leaves
            shares = {
                name: agreement(actual[name], expected[name], self._tolerance(name, expected[name]))
                for name in expected
                if name in actual
            }
            leaves = {*actual, *expected}
            unjudged = sorted(
                name
                for name in {*mine, *theirs}
                if not any(leaf == name or leaf.startswith(f"{name}[") for leaf in leaves)
            )
            one_sided = sorted(set(actual) ^ set(expected))
            return self._publish(
                judge_agreement(key, contract, shares, one_sided=one_sided, not_compared=unjudged)
            )
        rounds, speedup = self._speedup(other, target, contract.bound)
        first = None
        if speedup.high < contract.bound:  # a failure is measured again before it fails the test
            with self._activity.phase(CONFIRMING):
                first, (rounds, speedup) = speedup, self._speedup(other, target, contract.bound, fresh=True)
        return self._publish(
            judge_speedup(key, contract, speedup, first=first, current=rounds.current, other=rounds.reference)
        )

    def _tolerance(self, name: str, expected: Array) -> Tolerance:
        built = self._context.built
        return self._context.tolerances.for_output(
            name, expected.dtype, built.variant.provider_spec.short, built.variant.id
        )

    def _speedup(
        self, other: BuiltSession, target: CheckTarget, bound: float, *, fresh: bool = False
    ) -> tuple[PairedRounds, Speedup]:
        """Both variants timed side by side (fresh sessions beside the pooled one, taking the rounds
        in turn, so a session's place in memory cannot favour a side), stopping at the first look
        that decides; ``fresh``: only new sessions, for a confirmation."""
        context = self._context
        built, watchdog, sessions = context.built, context.sessions.watchdog, context.sessions
        confidence = target.policy.confidence

        def side(*sessions: BuiltSession) -> RoundsInTurn:
            return RoundsInTurn(
                [functools.partial(watchdog.run, b.session, None, target.inputs) for b in sessions]
            )

        with self._activity.phase(BUILDING, "sessions of both variants"):
            pooled = 0 if fresh else 1
            current = side(*([built] * pooled), *(sessions.fresh(built) for _ in range(INSTANCES - pooled)))
            reference = side(*([other] * pooled), *(sessions.fresh(other) for _ in range(INSTANCES - pooled)))
        with context.measurer.held(self._activity):
            rounds = measure_pair(
                current,
                reference,
                target.policy.ab,
                looks=looks_for,
                stop=lambda so_far: _decides(_speedup_at_looks(so_far, confidence), bound),
                activity=self._activity,
            )
        return rounds, _speedup_at_looks(rounds, confidence)

    def _publish(self, result: ContractResult) -> ContractResult:
        context = self._context
        result = replace(result, seconds=self._activity.seconds())
        contract = result.contract
        context.publisher.publish(
            contract_record(result, context.nodeid),
            verdict_property=f"ortperf_contract_{contract.kind}_{contract.other}",
        )
        return result


def _speedup_at_looks(rounds: PairedRounds, confidence: float) -> Speedup:
    """The speedup at the last planned look the rounds reach, at that look's share of the error (the
    first look that decides, when the measurement stopped early)."""
    ratios = rounds.ratios
    looks = looks_for(rounds.planned_rounds)
    reached = [at for at in looks if at <= len(ratios)] or [len(ratios)]
    look = len(reached)
    at = reached[-1]
    estimate = paired_interval(ratios[:at], look_confidence(confidence, look, len(looks)))
    return Speedup.of(estimate, at)


def _decides(speedup: Speedup, bound: float) -> bool:
    return speedup.high < bound or speedup.low >= bound
