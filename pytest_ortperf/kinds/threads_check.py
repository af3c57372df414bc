"""The threads check: ``check_threads(counts=None, threshold=None, budget=2.0, fail_if_beaten=False)``
(``threshold``: the one latency threshold unless the call gives its own).

"Start with physical cores / 2 and benchmark up and down from there": the model of the test is
measured at several ``intra_op_num_threads`` counts side by side, in interleaved rounds whose order
is drawn at random every round (a machine state hits every count alike), and the latency curve and
the best count are reported. It fails

- when the best count's latency regressed against the recorded reference: the reference rebuilt
  from its recipe (model from git or the model cache, settings) at the same count, measured side by
  side with it, the A/B rule deciding. Where nothing changed, or the reference cannot be rebuilt (the
  inputs changed, another onnxruntime), it says so and does not compare: this hardware's recorded
  curve is shown, never judged (it was measured in another process, at another time).

A configured count (the session's ``intra_op_threads``) beaten by more than the threshold (the
best count's median round ratio against it below ``1 / (1 + threshold)``, its 99% sign-test
interval wholly below 1, in the curve; then the two counts side by side across measuring processes
by the rule every side-by-side latency verdict takes, ``kinds/side_by_side.py``, calling the best
count ``improved`` against the configured one) is reported
``improved``, naming the count to set: a setting that could be better is not a regression of the
model, and an unchanged model passes. It fails only where the test asks for it
(``check_threads(fail_if_beaten=True)``). Two measurements that disagree end ``inconclusive``.

It keeps its own part of the baseline (``threads``: the curve and the best count's round medians),
recorded by ``--ortperf-update`` and shown by ``ortperf show``. Everything it owns is declared here.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from pytest_ortperf.checks.kind_result import KindResult, kind_error, kind_not_timed
from pytest_ortperf.checks.latency_verdicts import LatencyResult
from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import OrtperfError, UsageError
from pytest_ortperf.gate.protocol import CheckContext, CheckTarget, Outcome
from pytest_ortperf.kinds.side_by_side import ProcessSides, part_recorded, rebuilt_here
from pytest_ortperf.kinds.threads import KIND
from pytest_ortperf.latency.activity import Activity
from pytest_ortperf.latency.decision import RatioEstimate
from pytest_ortperf.latency.measure import gc_paused
from pytest_ortperf.latency.paired import paired_interval
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.workers import SideSpec, this_python
from pytest_ortperf.store.baselines import BaselineEntry
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.machine import usable_cores
from pytest_ortperf.values import parse_threshold

THREADS = "threads"
MAX_DEFAULT_COUNT = 8  # the default curve: 1 .. the machine's cores, at most this many
ROUNDS = 21  # interleaved rounds: enough for a 99% sign-test interval that can decide (k = 3)
BUDGET_S = 2.0  # timed seconds over all counts and rounds, a target
CONFIDENCE = 0.99


def default_counts(cores: int) -> tuple[int, ...]:
    """1 .. ``cores``, at most :data:`MAX_DEFAULT_COUNT`: the curve around physical cores / 2."""
    return tuple(range(1, max(1, min(cores, MAX_DEFAULT_COUNT)) + 1))


class ThreadsCheck:
    """``check_threads()``: the latency curve over ``intra_op_num_threads`` counts."""

    kind = THREADS

    def __init__(
        self,
        context: CheckContext,
        *,
        counts: Sequence[int] = (),
        threshold: float | None = None,
        budget_s: float = BUDGET_S,
        fail_if_beaten: bool = False,
    ) -> None:
        self._context = context
        self._counts = tuple(counts)
        self._threshold = threshold
        self._budget_s = budget_s
        self._fail_if_beaten = fail_if_beaten

    def configured(
        self,
        *,
        counts: Sequence[int] | None = None,
        threshold: object = None,
        budget: float | None = None,
        fail_if_beaten: bool | None = None,
    ) -> ThreadsCheck:
        """This check with the call's ``counts`` (whole numbers, 1 or more), ``threshold`` ("10%" or
        0.1), ``budget`` (timed seconds, more than 0) and ``fail_if_beaten`` (True or False); a
        UsageError naming the option otherwise."""
        if fail_if_beaten is not None and not isinstance(fail_if_beaten, bool):
            raise UsageError(f"check_threads(fail_if_beaten={fail_if_beaten!r}): True or False.")
        strict = self._fail_if_beaten if fail_if_beaten is None else fail_if_beaten
        chosen = self._counts if counts is None else tuple(counts)
        if counts is not None and (
            not chosen or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in chosen)
        ):
            raise UsageError(f"check_threads(counts={counts!r}): counts are whole numbers, 1 or more.")
        limit = self._threshold
        if threshold is not None:
            limit = parse_threshold(threshold, source="check_threads(threshold=...)")
        seconds = self._budget_s if budget is None else budget
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < math.inf:
            raise UsageError(f"check_threads(budget={budget!r}): a budget is a number of seconds above 0.")
        return ThreadsCheck(
            self._context, counts=chosen, threshold=limit, budget_s=float(seconds), fail_if_beaten=strict
        )

    def _limit(self, target: CheckTarget) -> float:
        """The call's ``threshold``, else the one latency threshold (``ort_thresholds(latency=...)``,
        ``--ortperf-latency-threshold``)."""
        return self._threshold if self._threshold is not None else target.policy.threshold

    def recorded(self, entry: BaselineEntry, machine: str) -> bool:
        figures = entry.figures_for(machine)
        return figures is not None and figures.part(THREADS) is not None

    def run(self, target: CheckTarget) -> Sequence[Outcome]:
        context, key = self._context, target.key
        built = context.built
        configured = built.settings.intra_op_threads
        counts = tuple(sorted({*(self._counts or default_counts(usable_cores())), configured}))
        with context.measurer.activity(f"{key.shown} (threads)") as activity:
            try:
                sessions = {n: self._session(n) for n in counts}
                with context.measurer.held(activity):
                    rounds = measure_curve(self._runs(sessions, target), budget_s=self._budget_s)
                curve = Curve(configured, rounds)
                if target.policy.update:
                    result = self._record(target, curve)
                else:
                    beaten = self._confirmed(curve, sessions, target, activity)
                    against, why = self._against_recorded(target, curve, sessions[curve.best], activity)
                    result = judged(
                        key, curve, threshold=self._limit(target), beaten=beaten, against=against,
                        not_compared=why, stored=_stored(target), fail_if_beaten=self._fail_if_beaten,
                    )  # fmt: skip
            except OrtperfError as exc:
                result = _error(key, f"a session at another thread count could not be built or run: {exc}")
        context.publisher.publish(KIND.record(result, context.nodeid))
        return [result]

    def _runs(
        self, sessions: Mapping[int, BuiltSession], target: CheckTarget
    ) -> dict[int, Callable[[], object]]:
        run = self._context.sessions.watchdog.run
        return {n: _runner(run, session, target.inputs) for n, session in sessions.items()}

    def _confirmed(
        self, curve: Curve, sessions: Mapping[int, BuiltSession], target: CheckTarget, activity: Activity
    ) -> LatencyResult | None:
        """When the curve (one process, one session a count: a session's placement can favour it for
        as long as it lives) says the configured count is beaten, the best count against the
        configured one side by side across measuring processes, by the one rule of side-by-side
        latency verdicts; None when there is nothing to confirm."""
        if not beaten_by(curve.against_configured(), self._limit(target)) or curve.best == curve.configured:
            return None
        best, configured = sessions[curve.best], sessions[curve.configured]
        here = SideSpec(this_python(), best.model, best.settings)
        there = SideSpec(this_python(), configured.model, configured.settings)
        label = f"the configured intra_op_threads={curve.configured}"
        with ProcessSides(self._context, here, there, target.inputs, activity) as sides:
            return sides.judge(
                key=target.key, label=label, policy=replace(target.policy, threshold=self._limit(target))
            )

    def _against_recorded(
        self, target: CheckTarget, curve: Curve, best: BuiltSession, activity: Any
    ) -> tuple[LatencyResult | None, str]:
        """The best count's latency against the recorded reference's at the same count, side by side
        (the reference rebuilt from its recipe: model, settings, runtime); or why it is not compared.
        Stored figures of this hardware are shown, never judged: they were measured in another
        process at another time, and the recipe may have changed since."""
        rebuilt, why = rebuilt_here(self._context, target, recorded="the curve")
        if rebuilt is None:
            return None, why
        settings = rebuilt.settings.with_overrides(
            {"intra_op_threads": curve.best}, source="check_threads (the recorded reference)"
        )
        reference = SideSpec(this_python(), rebuilt.model, settings)
        return self._side_by_side(target, best, reference, rebuilt.label, activity), ""

    def _side_by_side(
        self, target: CheckTarget, best: BuiltSession, reference: SideSpec, label: str, activity: Activity
    ) -> LatencyResult:
        """The best count against the recorded reference at that count, across measuring processes by
        the rule every side-by-side latency verdict takes (``kinds/side_by_side.py``), at this check's
        threshold."""
        here = SideSpec(this_python(), best.model, best.settings)
        with ProcessSides(self._context, here, reference, target.inputs, activity) as sides:
            return sides.judge(
                key=target.key, label=label, policy=replace(target.policy, threshold=self._limit(target))
            )

    def _session(self, count: int) -> BuiltSession:
        built = self._context.built
        if count == built.settings.intra_op_threads:
            return built
        settings = built.settings.with_overrides({"intra_op_threads": count}, source="check_threads(counts)")
        return self._context.sessions.session(built.model, built.variant, settings)

    def _record(self, target: CheckTarget, curve: Curve) -> KindResult:
        return part_recorded(target, THREADS, curve.part(), summary=curve.summary(), figures=curve.figures())


def _runner(
    run: Callable[..., object], session: BuiltSession, inputs: Mapping[str, Any]
) -> Callable[[], object]:
    ort_session = session.session
    return lambda: run(ort_session, None, inputs)


def measure_curve(
    runs: Mapping[int, Callable[[], object]],
    *,
    budget_s: float,
    rounds: int = ROUNDS,
    clock: Callable[[], int] = time.perf_counter_ns,
    seed: int = 0,
) -> dict[int, list[float]]:
    """Each count's round medians (ms) over ``rounds`` interleaved rounds: every round runs each
    count the same number of times, in an order drawn at random; the runs per round are planned from
    a warm-up so that all of them take about ``budget_s``."""
    cost: dict[int, float] = {}
    for count, run in runs.items():  # warm-up: a few runs, the last one timed
        for _ in range(3):
            start = clock()
            run()
            cost[count] = max(1.0, float(clock() - start))
    per_round_ns = budget_s * 1e9 / rounds
    repeats = max(1, int(per_round_ns / sum(cost.values())))
    order = list(runs)
    draw = random.Random(seed)
    medians: dict[int, list[float]] = {count: [] for count in runs}
    with gc_paused():
        for _ in range(rounds):
            draw.shuffle(order)
            for count in order:
                run, samples = runs[count], []
                for _ in range(repeats):
                    start = clock()
                    run()
                    samples.append((clock() - start) / 1e6)
                medians[count].append(statistics.median(samples))
    return medians


class Curve:
    """The measured curve: each count's round medians, the configured count and the best one."""

    def __init__(self, configured: int, rounds: Mapping[int, Sequence[float]]) -> None:
        self.configured = configured
        self.rounds = {count: list(values) for count, values in sorted(rounds.items())}
        self.median_ms = {count: statistics.median(values) for count, values in self.rounds.items()}
        self.best = min(self.median_ms, key=lambda count: (self.median_ms[count], count))

    def against_configured(self) -> RatioEstimate:
        """The best count's per-round ratio to the configured count's, with its interval."""
        ratios = [b / c for b, c in zip(self.rounds[self.best], self.rounds[self.configured], strict=True)]
        return paired_interval(ratios, CONFIDENCE)

    def summary(self) -> str:
        best, configured = self.median_ms[self.best], self.median_ms[self.configured]
        if self.best == self.configured:
            return f"best {self.best} thread(s), the configured count: {best:.4g} ms"
        return (
            f"best {self.best} thread(s): {best:.4g} ms against {configured:.4g} ms at the configured "
            f"{self.configured} ({best / configured - 1:+.1%})"
        )

    def curve_text(self) -> str:
        return ", ".join(f"{count}: {ms:.4g} ms" for count, ms in self.median_ms.items())

    def figures(self) -> dict[str, Any]:
        estimate = self.against_configured()
        return {
            "configured": self.configured,
            "best": self.best,
            "median_ms": {str(count): ms for count, ms in self.median_ms.items()},
            "best_vs_configured": {"ratio": estimate.ratio, "low": estimate.low, "high": estimate.high},
            "rounds": len(self.rounds[self.configured]),
        }

    def part(self) -> dict[str, Any]:
        """What the baseline keeps: the curve and the best count's round medians (shown by later runs
        and ``ortperf show``)."""
        return {
            "configured": self.configured,
            "best": self.best,
            "best_ms": round(self.median_ms[self.best], 6),
            "median_ms": {str(count): round(ms, 6) for count, ms in self.median_ms.items()},
            "best_round_medians_ms": [round(ms, 6) for ms in self.rounds[self.best]],
        }


def _stored(target: CheckTarget) -> Mapping[str, Any] | None:
    entry = target.entry
    figures = entry.figures_for(target.key.machine) if entry is not None else None
    return figures.part(THREADS) if figures is not None else None


def beaten_by(estimate: RatioEstimate, threshold: float) -> bool:
    """The best count faster than the configured one beyond ``threshold``: its median ratio below
    ``1 / (1 + threshold)`` and its interval wholly below 1."""
    return estimate.ratio < 1.0 / (1.0 + threshold) and estimate.high < 1.0


def _across(result: LatencyResult) -> str:
    """What the side-by-side rule said of the best count against the configured one: its change and
    over how many measuring processes."""
    count = f" over {len(result.processes.units)} measuring processes" if result.processes else ""
    return f"side by side{count}: {result.change}"


def _pct(estimate: RatioEstimate) -> str:
    return f"{estimate.ratio - 1:+.1%} (99% CI {estimate.low - 1:+.1%} .. {estimate.high - 1:+.1%})"


def judged(
    key: CheckKey,
    curve: Curve,
    *,
    threshold: float,
    beaten: LatencyResult | None = None,
    against: LatencyResult | None = None,
    not_compared: str = "",
    stored: Mapping[str, Any] | None = None,
    fail_if_beaten: bool = False,
) -> KindResult:
    """The verdict of the module docstring: the configured count is beaten when the curve says so and
    its confirmation across measuring processes (``beaten``: the best count against the configured
    one) calls the best count ``improved``; then the check reads ``improved`` (a failure only under
    ``fail_if_beaten``); the best count regressed when, side by side with the recorded reference
    (``against``: the verdict across measuring processes), it is slower beyond the threshold.
    Disagreeing measurements end inconclusive, with both figures."""
    first = curve.against_configured()
    faster = 1.0 / (1.0 + threshold)
    lines: list[str] = []
    notes: list[str] = [f"curve: {curve.curve_text()}"]
    status, change, beaten_note = Status.OK, "", ""
    if curve.best != curve.configured:
        change = f"{curve.best} thread(s) vs the configured {curve.configured}: {_pct(first)}"
    if curve.best != curve.configured and beaten_by(first, threshold):
        if beaten is not None and beaten.status is Status.IMPROVED:
            status = Status.REGRESSION if fail_if_beaten else Status.IMPROVED
            said = (
                f"the configured intra_op_threads={curve.configured} is beaten by {curve.best}: "
                f"{_pct(first)}, again {_across(beaten)}, threshold -{1 - faster:.1%}; set "
                f"intra_op_threads={curve.best} (--ortperf-session-options intra_op_threads={curve.best}, "
                "or ort_session_options)"
            )
            if fail_if_beaten:
                lines.append(f"  {said} (check_threads(fail_if_beaten=True))")
            else:
                beaten_note = f"{said}; reported, not failed (check_threads(fail_if_beaten=True) fails it)"
                notes.append(beaten_note)
        else:
            # Across processes the best count does not beat the configured one: the curve's one
            # process said more than the processes do (inconclusive where they cannot tell).
            undecided = beaten is None or beaten.status is Status.INCONCLUSIVE
            status = Status.INCONCLUSIVE if undecided else Status.OK
            again = _across(beaten) if beaten is not None else "not measured"
            notes.append(
                f"{curve.best} thread(s) beat the configured {curve.configured} by {_pct(first)} in the "
                f"curve, but not across measuring processes ({again})"
            )
    path = "side by side at each thread count"
    if against is not None:
        label = against.reference_label
        path += f"; the best count side by side with {label} at {curve.best} thread(s)"
        count = f" (over {len(against.processes.units)} measuring processes)" if against.processes else ""
        said = f"best count {curve.best} against {label}: {against.change}{count}"
        notes.append(said)
        if against.status is Status.REGRESSION:
            status = Status.REGRESSION
            lines.append(f"  the best setting's latency regressed: {said}, threshold +{threshold:.0%}")
        elif against.status is Status.INCONCLUSIVE and status in (Status.OK, Status.IMPROVED):
            status = Status.INCONCLUSIVE
            notes.append("the comparison with the recorded reference could not rule out a regression")
    else:
        notes.append(f"the best count is not compared with a recorded reference: {not_compared}")
    if stored:
        medians = dict(stored.get("median_ms", {}))
        recorded = ", ".join(f"{count}: {ms:.4g} ms" for count, ms in medians.items())
        notes.append(f"recorded curve on this hardware (shown, not judged): {recorded}")
    failed = status is Status.REGRESSION
    message = ""
    if status is Status.IMPROVED:  # reported where a passing check is: its notes and its row
        message = "\n".join([f"threads of {key.shown}: {curve.summary()}", f"  {beaten_note}"])
    if failed:
        message = "\n".join(
            [f"threads of {key.shown}: {curve.summary()}", *lines, f"  curve: {curve.curve_text()}"]
        )
    return KindResult(
        key,
        THREADS,
        status,
        path=path,
        summary=curve.summary(),
        change=change,
        figures=curve.figures(),
        notes=tuple(notes),
        failed=failed,
        message=message,
    )


def _error(key: CheckKey, why: str) -> KindResult:
    return kind_error(key, THREADS, why)


def not_timed(key: CheckKey) -> KindResult:
    return kind_not_timed(key, THREADS)
