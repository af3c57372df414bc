"""Where a check's time goes: phases charged to the outermost one, rounds told to a listener."""

from __future__ import annotations

import random

import pytest

from pytest_ortperf.checks.latency_verdicts import check_ab
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.latency.activity import (
    BUILDING,
    CONFIRMING,
    MEASURING,
    WARMING,
    Activity,
    GateSeconds,
    Progress,
)
from pytest_ortperf.latency.measure import MeasureSettings, measure
from pytest_ortperf.latency.paired import PairedRounds, measure_pair
from pytest_ortperf.latency.stats import summarize
from pytest_ortperf.store.keys import CheckKey


class FakeClock:
    """Seconds that move only when told to."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Heard:
    """A listener that keeps what it was told."""

    def __init__(self) -> None:
        self.updates: list[Progress] = []
        self.cleared = 0

    def update(self, progress: Progress) -> None:
        self.updates.append(progress)

    def clear(self) -> None:
        self.cleared += 1


def test_time_is_charged_to_the_outermost_phase_open() -> None:
    clock = FakeClock()
    activity = Activity("test_a", clock=clock)
    with activity.phase(BUILDING, "reference"):
        clock.now += 0.5
    with activity.phase(WARMING, "current"):
        clock.now += 0.25
    with activity.phase(CONFIRMING):
        clock.now += 1.0
        with activity.phase(WARMING, "current"):  # a confirmation's warm-up is the confirmation's
            clock.now += 2.0
        with activity.phase(MEASURING):
            clock.now += 4.0
    clock.now += 8.0  # between phases: charged to none
    assert activity.seconds() == GateSeconds(building=0.5, warming=0.25, confirming=7.0)
    assert activity.seconds().total == pytest.approx(7.75)


def test_a_phase_still_open_counts_up_to_now() -> None:
    clock = FakeClock()
    activity = Activity(clock=clock)
    with activity.phase(MEASURING):
        clock.now += 3.0
        assert activity.seconds().measuring == pytest.approx(3.0)


def test_a_listener_hears_phases_sides_and_rounds_and_is_cleared_at_the_end() -> None:
    clock, heard = FakeClock(), Heard()
    with Activity("test_b[cpu-all]", listener=heard, clock=clock) as activity, activity.phase(CONFIRMING):
        with activity.phase(WARMING, "reference"):
            clock.now += 1.0
        with activity.phase(MEASURING, "side by side"):
            activity.rounds(3, 40)
    assert heard.cleared == 1
    steps = [(p.phase, p.step, p.rounds, p.planned) for p in heard.updates]
    assert ("confirming", "warming reference", 0, 0) in steps
    assert ("confirming", "measuring side by side", 3, 40) in steps
    assert steps[-1] == ("", "", 0, 0)  # all phases closed
    assert all(p.check == "test_b[cpu-all]" for p in heard.updates)
    assert heard.updates[-1].elapsed_s == pytest.approx(1.0)


def test_gate_seconds_add_up_and_read_back_from_a_report() -> None:
    one = GateSeconds(building=1.0, measuring=2.0)
    two = GateSeconds(warming=0.5, measuring=1.0, waiting=3.0)
    assert one + two == GateSeconds(building=1.0, warming=0.5, measuring=3.0, waiting=3.0)
    assert GateSeconds.from_dict((one + two).as_dict()) == one + two
    # A damaged or foreign report: unknown keys ignored, values that are no seconds read as 0.
    assert GateSeconds.from_dict(
        {"measuring": "soon", "warming": -1, "building": 2, "other": 9}
    ) == GateSeconds(building=2.0)


def _ticking(step_ns: int) -> tuple[list[int], object]:
    now = [0]

    def clock() -> int:
        now[0] += step_ns
        return now[0]

    return now, clock


def test_measure_pair_tells_every_round_and_both_warm_ups() -> None:
    heard = Heard()
    _, clock = _ticking(1000)
    activity = Activity("pair", listener=heard)
    rounds = measure_pair(
        lambda: None,
        lambda: None,
        MeasureSettings(
            budget_s=0.001, rounds=12, min_rounds=12, warmup_runs=3, warmup_s=0.0, warmup_cap_s=0.0
        ),
        rng=random.Random(1),
        clock=clock,  # type: ignore[arg-type]
        activity=activity,
    )
    steps = [p.step for p in heard.updates]
    assert (
        steps.index("warming reference")
        < steps.index("warming current")
        < steps.index("measuring side by side")
    )
    told = [p.rounds for p in heard.updates if p.step == "measuring side by side" and p.planned]
    assert told == list(range(1, len(rounds.current_first) + 1))
    assert activity.seconds().measuring > 0
    assert activity.seconds().warming > 0


def test_measure_tells_its_rounds() -> None:
    heard = Heard()
    _, clock = _ticking(1000)
    stats = measure(
        lambda: None,
        MeasureSettings(
            budget_s=0.001, rounds=8, min_rounds=8, warmup_runs=2, warmup_s=0.0, warmup_cap_s=0.0
        ),
        clock=clock,  # type: ignore[arg-type]
        activity=Activity(listener=heard),
    )
    told = [p.rounds for p in heard.updates if p.step == MEASURING and p.planned]
    assert told == list(range(1, stats.rounds + 1))


def _rounds(ratio: float, n: int = 40) -> PairedRounds:
    reference = [1_000_000] * n
    current = [int(1_000_000 * ratio)] * n
    return PairedRounds(summarize(current, [1] * n), summarize(reference, [1] * n), (True, False) * (n // 2))


@pytest.mark.parametrize(("ratio", "confirmed"), [(1.0, False), (1.5, True)])
def test_check_ab_charges_the_confirmation_and_its_new_pair_to_confirming(
    ratio: float, confirmed: bool
) -> None:
    clock = FakeClock()
    activity = Activity(clock=clock)

    def measured(current: object, reference: object, settings: MeasureSettings) -> PairedRounds:
        clock.now += 1.0
        return _rounds(ratio)

    def fresh_pair() -> tuple[object, object]:
        clock.now += 0.5  # new sessions for the confirmation
        return (lambda: None), (lambda: None)

    key = CheckKey("test_x.py", "test_x", "cpu-all", "m", "ortperf update")
    result = check_ab(
        lambda: None,
        lambda: None,
        key=key,
        label="ref",
        policy=CheckPolicy(sequential=False),
        measure_fn=measured,
        fresh_pair=fresh_pair,  # type: ignore[arg-type]
        activity=activity,
    )
    assert result.failed is confirmed
    assert activity.seconds().confirming == pytest.approx(1.5 if confirmed else 0.0)
