"""Side by side across measuring processes: the interval over units, its looks, and its error rates
under process effects, measured by simulation on synthetic units (seeded: every run sees the same
numbers). Real processes are measured in tests/plugin/test_verdict_across_processes.py."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from pytest_ortperf.latency.across_processes import (
    LOOKS,
    UNIT_SETTINGS,
    UnitRounds,
    first_batch,
    judge_units,
    looks_for,
    measure,
    most_units,
    process_interval,
    stops,
    t_quantile,
    units_needed,
)
from pytest_ortperf.latency.decision import Verdict

THRESHOLD = 0.03


def unit(log_ratios: np.ndarray | list[float], name: str = "pid 1") -> UnitRounds:
    """A unit whose rounds have these log ratios (one run a round; the reference at 1 ms)."""
    current = tuple(max(1, round(1e6 * math.exp(x))) for x in log_ratios)
    return UnitRounds(name, 1, current, (1_000_000,) * len(current), (True,) * len(current))


def simulate(
    true_ratio: float, *, between: float, within: float, trials: int, seed: int, rounds: int = 10
) -> tuple[dict[Verdict, int], float]:
    """Sequential checks on synthetic units: each unit's own effect drawn from N(0, between), its
    rounds' noise from a heavy-tailed t(3) scaled by ``within``; the verdicts and the mean count of
    units measured."""
    rng = np.random.default_rng(seed)
    looks = looks_for(most_units(3.0))
    verdicts = dict.fromkeys(Verdict, 0)
    used = []
    for _ in range(trials):
        units: list[UnitRounds] = []
        for look, count in enumerate(looks, start=1):
            while len(units) < count:
                effect = rng.normal(0.0, between)
                units.append(unit(math.log(true_ratio) + effect + within * rng.standard_t(3, size=rounds)))
            comparison, _ = judge_units(
                units, threshold=THRESHOLD, confidence=0.99, look=look, looks=len(looks)
            )
            if stops(comparison):
                break
        verdicts[comparison.verdict] += 1
        used.append(len(units))
    return verdicts, float(np.mean(used))


def test_t_quantiles_are_students() -> None:
    assert t_quantile(0.975, 1) == pytest.approx(12.7062, abs=1e-3)
    assert t_quantile(0.995, 3) == pytest.approx(5.8409, abs=1e-3)
    assert t_quantile(0.975, 10) == pytest.approx(2.2281, abs=1e-3)
    assert t_quantile(0.025, 10) == pytest.approx(-2.2281, abs=1e-3)
    assert t_quantile(0.995, 1e7) == pytest.approx(2.5758, abs=1e-3)
    with pytest.raises(ValueError, match="0 < p < 1"):
        t_quantile(1.0, 3)


def test_the_looks_come_after_three_four_six_eight_and_twelve_units_at_the_default_budget() -> None:
    assert most_units(3.0) == 12
    assert looks_for(12) == LOOKS
    assert looks_for(most_units(1.0)) == (3, 4)
    assert looks_for(most_units(6.0)) == (3, 4, 6, 8, 12, 24)
    assert first_batch(3.0) == 3
    assert first_batch(3.0, sequential=False) == 12


def test_the_interval_carries_the_spread_between_processes() -> None:
    quiet = [unit([0.10 + 0.001 * (i % 3) for i in range(10)], f"pid {n}") for n in range(4)]
    apart = [unit([0.10 + offset] * 10, f"pid {n}") for n, offset in enumerate((-0.08, -0.03, 0.03, 0.08))]
    agreeing = process_interval(quiet, 0.99)
    disagreeing = process_interval(apart, 0.99)
    assert agreeing.estimate.ratio == pytest.approx(disagreeing.estimate.ratio, rel=2e-3)
    # The same mean; the units' scatter widens the interval, with k - 1 degrees of freedom.
    assert disagreeing.half_width > 10 * agreeing.half_width
    assert disagreeing.df == agreeing.df == 3
    assert disagreeing.between == pytest.approx(np.std([-0.08, -0.03, 0.03, 0.08], ddof=1), rel=1e-3)


def test_units_that_agree_by_chance_count_for_no_less_than_their_rounds_noise() -> None:
    rng = np.random.default_rng(7)
    noisy = [unit(0.05 + rng.normal(0, 0.2, size=10)) for _ in range(4)]
    # The same four units, their medians moved to one value: no scatter between them, same rounds.
    same = [unit(np.asarray(u.log_ratios) - u.estimate + 0.05) for u in noisy]
    interval = process_interval(same, 0.99)
    assert interval.between == pytest.approx(0.0, abs=1e-6)
    assert interval.within > 0.05
    assert interval.half_width == pytest.approx(
        t_quantile(0.995, 3) * interval.within / math.sqrt(4), rel=1e-6
    )


def test_a_look_stops_inside_the_threshold_or_on_a_verdict_and_goes_on_otherwise() -> None:
    tight = [unit([0.001 * (i % 5) for i in range(10)], f"pid {n}") for n in range(6)]
    comparison, _ = judge_units(tight, threshold=THRESHOLD, confidence=0.99, look=3, looks=5)
    assert comparison.verdict is Verdict.OK
    assert stops(comparison)
    slow = [unit([math.log(1.2) + 0.002 * (i % 5) for i in range(10)], f"pid {n}") for n in range(4)]
    comparison, _ = judge_units(slow, threshold=THRESHOLD, confidence=0.99, look=2, looks=5)
    assert comparison.verdict is Verdict.REGRESSION
    assert stops(comparison)
    assert "over 4 measuring processes (40 rounds)" in comparison.statistic
    assert "look 2 of 5 (at 99.9%; 99% over all looks)" in comparison.statistic
    apart = [unit([x] * 10, f"pid {n}") for n, x in enumerate((-0.05, 0.06, 0.0))]
    comparison, _ = judge_units(apart, threshold=THRESHOLD, confidence=0.99, look=1, looks=5)
    assert comparison.verdict is Verdict.INCONCLUSIVE
    assert not stops(comparison)


def test_an_undecided_interval_says_about_how_many_units_would_decide() -> None:
    apart = [unit([0.02 + x] * 10, f"pid {n}") for n, x in enumerate((-0.03, 0.03, -0.02, 0.02))]
    interval = process_interval(apart, 0.993)
    needed = units_needed(interval, THRESHOLD)
    assert needed > 4
    # That many units of the same spread would put the interval inside the threshold.
    shrunk = interval.half_width * math.sqrt(4 / needed)
    assert abs(math.log(interval.estimate.ratio)) + shrunk <= math.log1p(THRESHOLD) + 1e-9


@pytest.mark.parametrize(("between", "within"), [(0.0, 0.04), (0.03, 0.05), (0.065, 0.1)])
def test_an_unchanged_model_is_rarely_called_slower_or_faster_whatever_the_process_effects(
    between: float, within: float
) -> None:
    verdicts, _ = simulate(1.0, between=between, within=within, trials=400, seed=11)
    # 99% over all looks, two-sided: at most about 1% wrong verdicts, however large the process effects.
    assert verdicts[Verdict.REGRESSION] + verdicts[Verdict.IMPROVED] <= 6


def test_real_changes_are_caught_and_a_clear_one_takes_few_processes() -> None:
    quiet, units = simulate(1.10, between=0.01, within=0.04, trials=200, seed=5)
    assert quiet[Verdict.REGRESSION] == 200
    assert units < 7
    clear, units = simulate(1.20, between=0.01, within=0.04, trials=200, seed=6)
    assert clear[Verdict.REGRESSION] == 200
    assert units < 5
    # Process effects as large as the FACTS.md BERT's (+3% .. +20% for one +10%): more processes
    # decide what two would have called a disagreement.
    loaded, units = simulate(1.10, between=0.065, within=0.10, trials=200, seed=8)
    assert loaded[Verdict.REGRESSION] >= 140
    assert loaded[Verdict.OK] + loaded[Verdict.IMPROVED] == 0


class StandInSide:
    """A side whose runs take ``ms`` times the process's own factor, with a little noise."""

    def __init__(self, ms: float, factor: float, rng: random.Random, noise: float = 0.01) -> None:
        self.ms, self.factor, self.rng, self.noise = ms, factor, rng, noise
        self.warmed = 0

    def warm_up(self, runs: int, seconds: float, cap_s: float) -> float:
        self.warmed += 1
        return self.ms * 1e6

    def time_runs(self, count: int, expected_ns: float) -> list[int]:
        return [
            round(self.ms * self.factor * 1e6 * max(0.1, 1 + self.rng.gauss(0, self.noise)))
            for _ in range(count)
        ]


class StandInUnit:
    def __init__(self, index: int, slower: float, rng: random.Random) -> None:
        factor = 1.0 + 0.01 * ((index % 3) - 1)  # each process its own speed, both sides alike
        self.current = StandInSide(1.0 * slower, factor, rng)
        self.reference = StandInSide(1.0, factor, rng)
        self.name = f"pid {100 + index}"


def test_measure_loads_batches_until_a_look_decides_and_holds_the_lock_only_to_time() -> None:
    rng = random.Random(3)
    loads: list[int] = []
    held: list[int] = []
    made: list[StandInUnit] = []

    def load(count: int) -> list[StandInUnit]:
        loads.append(count)
        batch = [StandInUnit(len(made) + i, 1.25, rng) for i in range(count)]
        made.extend(batch)
        return batch

    class Lock:
        def __enter__(self) -> None:
            held.append(len(made))

        def __exit__(self, *args: object) -> None:
            return None

    measured = measure(load, threshold=THRESHOLD, confidence=0.99, budget_s=3.0, held=Lock, rng=rng)
    assert measured.comparison.verdict is Verdict.REGRESSION
    assert loads[0] == 3
    assert sum(loads) == len(measured.units) == held[-1]
    assert all(u.current.warmed == u.reference.warmed == 1 for u in made)
    assert measured.ratios == pytest.approx([1.25] * len(measured.units), rel=0.02)
    # Each unit's rounds: half of them current first.
    first = measured.units[0].current_first
    assert len(first) == UNIT_SETTINGS.rounds
    assert sum(first) == len(first) // 2
    assert measured.current.rounds == measured.reference.rounds == UNIT_SETTINGS.rounds * len(measured.units)


def test_measure_spends_every_unit_of_the_budget_when_nothing_decides() -> None:
    rng = random.Random(4)
    made: list[StandInUnit] = []

    def load(count: int) -> list[StandInUnit]:
        batch = [StandInUnit(len(made) + i, 1.0, rng) for i in range(count)]
        for index, item in enumerate(batch):  # processes that disagree by +/-4%: undecidable at 3%
            item.current.factor *= 1.04 if (len(made) + index) % 2 else 0.97
        made.extend(batch)
        return batch

    measured = measure(load, threshold=THRESHOLD, confidence=0.99, budget_s=1.0, rng=rng)
    assert len(measured.units) == measured.most == 4
    assert measured.comparison.verdict is Verdict.INCONCLUSIVE
    needed = measured.needed()
    assert needed is not None
    assert needed > 4


def test_units_whose_rounds_are_noisy_time_more_rounds_before_the_next_look() -> None:
    """A machine busy with other work: every run scatters by 20%, the processes agree; an undecided
    look has every unit measured so far time its rounds again, so that later looks see more rounds."""
    rng = random.Random(5)
    made: list[StandInUnit] = []

    def load(count: int) -> list[StandInUnit]:
        batch = [StandInUnit(len(made) + i, 1.06, rng) for i in range(count)]
        for item in batch:
            item.current.factor = item.reference.factor = 1.0  # no process effect
            item.current.noise = item.reference.noise = 0.2
        made.extend(batch)
        return batch

    measured = measure(load, threshold=THRESHOLD, confidence=0.99, budget_s=3.0, rng=rng)
    rounds = [len(u.current_first) for u in measured.units]
    assert max(rounds) > UNIT_SETTINGS.rounds  # measured again in the processes already loaded
    assert len(set(rounds)) == 1  # later units caught up: every unit counts alike
    assert measured.comparison.verdict in (Verdict.REGRESSION, Verdict.INCONCLUSIVE)


def test_units_that_disagree_beyond_their_rounds_noise_are_not_measured_longer() -> None:
    rng = random.Random(6)
    made: list[StandInUnit] = []

    def load(count: int) -> list[StandInUnit]:
        batch = [StandInUnit(len(made) + i, 1.0, rng) for i in range(count)]
        for index, item in enumerate(batch):
            item.current.factor *= 1.05 if (len(made) + index) % 2 else 0.96
        made.extend(batch)
        return batch

    measured = measure(load, threshold=THRESHOLD, confidence=0.99, budget_s=3.0, rng=rng)
    assert {len(u.current_first) for u in measured.units} == {UNIT_SETTINGS.rounds}


def test_an_undecided_check_names_a_budget_or_says_the_machine_is_too_busy_to_tell() -> None:
    from pytest_ortperf.checks.latency_verdicts import undecided

    def measured(offsets: list[float]) -> object:
        units = [unit([x] * 8, f"pid {n}") for n, x in enumerate(offsets)]
        comparison, interval = judge_units(units, threshold=THRESHOLD, confidence=0.99, look=1, looks=1)
        from pytest_ortperf.latency.across_processes import AcrossProcesses
        from pytest_ortperf.latency.stats import summarize

        stats = summarize([1] * 8, [1] * 8)
        return AcrossProcesses(tuple(units), comparison, interval, (len(units),), stats, stats)

    near = measured([x for x in (-0.012, 0.012, -0.008, 0.008)])
    assert "would decide at this spread (--ortperf-ab-budget=" in undecided(near)  # type: ignore[arg-type]
    far = measured([0.02 + x for x in (-0.3, 0.3, -0.2, 0.2)])
    said = undecided(far)  # type: ignore[arg-type]
    assert said.startswith("undecided after 4 measuring processes; at this spread about ")
    assert "measure where fewer processes share the cores" in said
    at_threshold = measured([0.029 + x for x in (-0.002, 0.002, -0.001, 0.001)])
    said = undecided(at_threshold)  # type: ignore[arg-type]
    assert "the change sits at the threshold (+2.9% against +/-3%): about " in said, said


@pytest.mark.parametrize("noise", [0.02, 0.09])
def test_quiet_rounds_are_not_measured_again_even_where_they_make_the_scatter(noise: float) -> None:
    """A quiet machine: each unit's rounds give it less than the threshold (about 0.5% and 2% here,
    the second what a quiet BERT's units give, at 3%); more rounds would cost more than they
    narrow, so the units keep their rounds and more units decide."""
    rng = random.Random(7)
    made: list[StandInUnit] = []

    def load(count: int) -> list[StandInUnit]:
        batch = [StandInUnit(len(made) + i, 1.02, rng) for i in range(count)]
        for item in batch:
            item.current.factor = item.reference.factor = 1.0  # no process effect: the rounds scatter
            item.current.noise = item.reference.noise = noise
        made.extend(batch)
        return batch

    measured = measure(load, threshold=THRESHOLD, confidence=0.99, budget_s=3.0, rng=rng)
    assert len(measured.units) > 3  # undecided at the first look
    assert measured.interval.within < math.log1p(THRESHOLD)
    assert {len(u.current_first) for u in measured.units} == {UNIT_SETTINGS.rounds}
