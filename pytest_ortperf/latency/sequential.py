"""Sequential side-by-side measurement: stop as soon as the verdict cannot change.

A side-by-side check plans its rounds for its whole budget, but looks at the paired ratios at a
few planned points (:data:`LOOKS`, cut to the rounds planned, the last look at the end). At each
look the ratios so far get the sign-test interval for their median at the look's confidence.
Before the last look the measurement stops only when more rounds could not change the verdict:
the interval lies wholly inside the threshold (``ok``), wholly beyond it (``regression``), or
wholly below its mirror image (``improved``). Otherwise it goes on, and the last look decides by
the A/B rule (``latency.decision.decide``). The budget is a maximum, spent only when the change
sits near the threshold or the rounds disagree.

Why "wholly beyond", not the A/B rule's "median beyond the threshold, interval above 1", for an
early stop: rounds measured within a second of each other share the machine's state, and two
sessions of one model can differ by a few percent while they live. An early look on such rounds
read a memory-bound model +5.0% against itself, confirmed, in one of 21 A/A checks
(``benchmarks/README.md``, "Verdicts in seconds"); the A/B rule on the whole budget had raised
none in 63.

Error under repeated looks: the K looks share ``alpha`` (Bonferroni with unequal shares). Each
early look spends a tenth of it (99.9% for 99% over all looks), the last look the rest (99.4%
with the five looks of 80 rounds, 99.3% with four). The chance that some look calls a
regression that is not there is then at most the sum of the shares, ``alpha``, whatever the noise
and however the looks depend on each other; the same holds for a missed regression called
``ok``. Early looks only have to stop clear cases, so a strict level costs them little; the last
look keeps nearly the power of a single look: its sign-test interval is at most one rank wider
than one 99% look's (the same ranks at 40 rounds; an equal split, 99.75% each, cost a rank at 40
rounds, and with it some +5% regressions of a noisy memory-bound model,
``benchmarks/README.md``). ``tests/unit/latency/test_sequential.py`` measures both rates by
simulation, and shows what the unadjusted looks would cost.

Plain logic, no pytest: ``latency.paired.measure_pair`` calls :func:`verdict_at` at each look.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pytest_ortperf.latency.activity import Activity
from pytest_ortperf.latency.decision import Comparison, decide
from pytest_ortperf.latency.measure import MeasureSettings
from pytest_ortperf.latency.paired import AB_STATISTIC, PairedRounds, Side, measure_pair, paired_interval

# Planned looks (rounds so far). The first is the fewest rounds whose whole range is an interval at
# an early look's confidence (99.9%: 1 - 2 / 2**11).
LOOKS = (11, 16, 24, 40)
# The share of the error each look before the last may spend; the last look spends the rest.
EARLY_SHARE = 0.1


def looks_for(rounds: int, planned: Sequence[int] = LOOKS) -> tuple[int, ...]:
    """The looks of a measurement of ``rounds`` rounds: the planned ones before it, then its end."""
    if rounds < 1:
        raise ValueError("a measurement has at least one round")
    return (*(n for n in planned if n < rounds), rounds)


def look_confidence(confidence: float, look: int, looks: int) -> float:
    """The confidence of look ``look`` (1-based) of ``looks`` that keeps the error of all of them at
    ``1 - confidence``: each early look spends :data:`EARLY_SHARE` of it, the last look the rest
    (99.9% at each of three early looks and 99.3% at the last, for 99% over four)."""
    alpha = 1.0 - confidence
    early = alpha * EARLY_SHARE
    if look < looks:
        return 1.0 - early
    return 1.0 - max(alpha - (looks - 1) * early, early)


def verdict_at(
    ratios: Sequence[float], *, threshold: float, confidence: float, look: int, looks: int
) -> Comparison:
    """The A/B verdict on the ratios so far, at look ``look`` (1-based) of ``looks``."""
    adjusted = look_confidence(confidence, look, looks)
    estimate = paired_interval(ratios, adjusted)
    if looks == 1:
        statistic = f"{AB_STATISTIC} over {len(ratios)} rounds"
    else:
        statistic = (
            f"{AB_STATISTIC} over {len(ratios)} rounds, look {look} of {looks} "
            f"(at {round(adjusted * 100, 2):g}%; {confidence:.0%} over all looks)"
        )
    return Comparison(
        estimate=estimate,
        threshold=threshold,
        verdict=decide(estimate, threshold),
        mode="a/b",
        statistic=statistic,
    )


def stops(comparison: Comparison) -> bool:
    """Whether more rounds could not change the verdict: the interval lies wholly inside the
    threshold, wholly beyond it, or wholly below its mirror image."""
    estimate, slower = comparison.estimate, 1.0 + comparison.threshold
    faster = 1.0 / slower
    inside = faster <= estimate.low and estimate.high <= slower
    return inside or estimate.low > slower or estimate.high < faster


def judge(rounds: PairedRounds, *, threshold: float, confidence: float) -> Comparison:
    """The verdict of a sequential measurement: the first look that stops, else the last look the
    rounds reach. The looks are those of the rounds *planned*, so a measurement that stopped early
    is judged at the confidence it was measured under."""
    ratios = rounds.ratios
    looks = looks_for(rounds.planned_rounds)
    reached = [at for at in looks if at <= len(ratios)] or [len(ratios)]
    comparison = None
    for look, at in enumerate(reached, start=1):
        comparison = verdict_at(
            ratios[:at], threshold=threshold, confidence=confidence, look=look, looks=len(looks)
        )
        if stops(comparison):
            break
    assert comparison is not None
    return comparison


def measure(
    current: Side,
    reference: Side,
    settings: MeasureSettings,
    *,
    threshold: float,
    confidence: float,
    rng: random.Random | None = None,
    activity: Activity | None = None,
) -> PairedRounds:
    """``measure_pair`` that stops at the first look whose verdict more rounds could not change."""
    return measure_pair(
        current,
        reference,
        settings,
        rng=rng,
        activity=activity,
        looks=looks_for,
        stop=lambda rounds: stops(judge(rounds, threshold=threshold, confidence=confidence)),
    )
