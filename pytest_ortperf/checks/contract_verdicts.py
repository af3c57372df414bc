"""Relative contracts between two variants of one model, decided on measurements of the same run.

A contract needs no baseline: ``faster_than={"cpu-disabled": 1.3}`` holds when this variant is at
least 1.3x as fast as ``cpu-disabled`` of the same model, measured side by side in interleaved
rounds (``latency.paired``); ``agreement={"cpu-all": 0.99}`` holds when at least 99% of this
variant's outputs agree with that variant's on the same inputs (``accuracy.metrics.agreement``).

A speedup is decided on its interval, as a threshold would be: the contract fails when the whole
interval lies below the promised speedup, holds when the whole interval lies at or above it, and
is ``inconclusive`` in between, with the smallest and largest speedup the run could not rule out.
Agreement is a count, not a noisy measurement: it holds or fails.

Plain logic, no pytest, no onnxruntime: ``kinds/contracts.py`` measures, this module decides.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import UsageError
from pytest_ortperf.latency.activity import GateSeconds
from pytest_ortperf.latency.decision import RatioEstimate
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.ort.variants import OptLevel, Variant
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.values import safe_repr

FASTER_THAN, AGREEMENT = "faster_than", "agreement"
CONTRACT = "contract"
NOT_AVAILABLE = "not available"


@dataclass(frozen=True)
class Contract:
    """One promise of this variant about another of the same model: ``kind`` (faster_than,
    agreement), the ``other`` variant's id, the ``bound`` (a speedup; a share of outputs) and
    where it was declared."""

    kind: str
    other: str
    bound: float
    source: str

    def describe(self) -> str:
        if self.kind == FASTER_THAN:
            return f"at least {self.bound:g}x as fast as {self.other}"
        return f"agrees with {self.other} on at least {self.bound:.4g} of its outputs"


@dataclass(frozen=True)
class Speedup:
    """How many times faster this variant ran than the other: the median of paired round ratios,
    with its confidence interval (both inverted from the current / other ratios)."""

    value: float
    low: float
    high: float
    confidence: float
    rounds: int

    @classmethod
    def of(cls, estimate: RatioEstimate, rounds: int) -> Speedup:
        """From a current / other ratio estimate: a ratio of 0.5 is a speedup of 2."""
        return cls(1.0 / estimate.ratio, 1.0 / estimate.high, 1.0 / estimate.low, estimate.confidence, rounds)

    def describe(self) -> str:
        pct = f"{round(self.confidence * 100, 2):g}"
        return f"{self.value:.2f}x ({pct}% CI {self.low:.2f}x .. {self.high:.2f}x, {self.rounds} rounds)"


@dataclass(frozen=True)
class ContractResult:
    """A contract's verdict with what decided it."""

    key: CheckKey
    contract: Contract
    status: Status
    speedup: Speedup | None = None
    agreement: float | None = None
    current: LatencyStats | None = None  # this variant's rounds, when a speedup was measured
    other: LatencyStats | None = None  # the other variant's rounds
    failed: bool = False
    skipped: bool = False
    message: str = ""
    kind: str = CONTRACT
    seconds: GateSeconds = field(default_factory=GateSeconds)  # where the contract's time went, by phase


def judge_speedup(
    key: CheckKey,
    contract: Contract,
    speedup: Speedup,
    *,
    first: Speedup | None = None,
    **rounds: LatencyStats,
) -> ContractResult:
    """The interval against the promised speedup: wholly below fails, wholly at or above holds, across
    it is inconclusive. ``first``: a measurement that failed, which ``speedup`` (measured again on
    fresh sessions) had to confirm; a failure it does not confirm is inconclusive, never a failure."""
    if speedup.high < contract.bound:
        status = Status.FAILED
    elif first is not None:
        status = Status.NOT_CONFIRMED
    elif speedup.low >= contract.bound:
        status = Status.OK
    else:
        status = Status.INCONCLUSIVE
    head = f"contract of {key.shown}: {key.variant} {contract.describe()}"
    earlier = f"; first measurement {first.describe()}" if first is not None else ""
    if status is Status.FAILED:
        confirmed = " (confirmed by a second measurement on fresh sessions)" if first is not None else ""
        below = f"wholly below {contract.bound:g}x{confirmed}{earlier}"
        message = f"{head} FAILED: measured {speedup.describe()}, {below}"
    elif status is Status.NOT_CONFIRMED:
        message = (
            f"{head} inconclusive: a first measurement, {first.describe() if first else ''}, lay wholly "
            f"below {contract.bound:g}x, but a second on fresh sessions measured {speedup.describe()}"
        )
    elif status is Status.OK:
        message = f"{head} holds: measured {speedup.describe()}"
    else:
        message = (
            f"{head} inconclusive: measured {speedup.describe()}; this run could resolve neither "
            f"'below {contract.bound:g}x' nor 'at least {contract.bound:g}x' (the interval straddles it)"
        )
    return ContractResult(
        key,
        contract,
        status,
        speedup=speedup,
        current=rounds.get("current"),
        other=rounds.get("other"),
        failed=status is Status.FAILED,
        message=f"{message} ({contract.source}).",
    )


def judge_agreement(
    key: CheckKey,
    contract: Contract,
    shares: Mapping[str, float],
    *,
    one_sided: Sequence[str] = (),
    not_compared: Sequence[str] = (),
) -> ContractResult:
    """Every output's agreeing share against the bound; the least agreeing output decides. An output
    only one of the two variants gives (``one_sided``) agrees on nothing; one that holds no array to
    compare (``not_compared``: absent on both sides, a sparse tensor) is named, never dropped."""
    head = f"contract of {key.shown}: {key.variant} {contract.describe()}"
    shares = {**shares, **{name: 0.0 for name in one_sided}}
    unjudged = (
        f"; not compared: {', '.join(repr(name) for name in not_compared)} (no array on either side)"
        if not_compared
        else ""
    )
    if not shares:
        return ContractResult(
            key,
            contract,
            Status.ERROR,
            failed=True,
            message=f"{head}: no output to compare{unjudged} ({contract.source}).",
        )
    worst_name = min(shares, key=lambda name: shares[name])
    worst = shares[worst_name]
    listed = ", ".join(
        f"{name!r} {share:.4g}{' (given by one variant only)' if name in one_sided else ''}"
        for name, share in shares.items()
    )
    listed += unjudged
    if worst < contract.bound:
        message = f"{head} FAILED: output {worst_name!r} agrees on {worst:.4g} (outputs: {listed})"
        status = Status.FAILED
    else:
        message = f"{head} holds: {listed}"
        status = Status.OK
    return ContractResult(
        key,
        contract,
        status,
        agreement=worst,
        failed=status is Status.FAILED,
        message=f"{message} ({contract.source}).",
    )


def not_available(key: CheckKey, contract: Contract, why: str) -> ContractResult:
    """A contract whose other variant cannot run here (its provider, its build): reported, skipped."""
    message = f"contract of {key.shown}: {key.variant} {contract.describe()}: {NOT_AVAILABLE} ({why})."
    return ContractResult(key, contract, Status.NO_REFERENCE, skipped=True, message=message)


def not_measured(key: CheckKey, contract: Contract, why: str) -> ContractResult:
    """A contract this run does not measure (an update records baselines; contracts have none)."""
    message = f"contract of {key.shown}: {key.variant} {contract.describe()}: not measured ({why})."
    return ContractResult(key, contract, Status.NOT_MEASURED, message=message)


def parse_contracts(
    faster_than: object = None, agreement: object = None, *, source: str, check_id: object = None
) -> tuple[Contract, ...]:
    """``faster_than={"cpu-disabled": 1.3}`` and ``agreement={"cpu-all": 0.99}`` to contracts.

    ``check_id(text, source=...)`` turns a variant id into its canonical spelling (raising a
    UsageError for an unknown one); the pytest layer hands in its variant parser."""
    contracts: list[Contract] = []
    for kind, value in ((FASTER_THAN, faster_than), (AGREEMENT, agreement)):
        if value is None:
            continue
        where = f"{source}: {kind}"
        if not isinstance(value, Mapping) or not value:
            raise UsageError(
                f"{where} takes a dict of variant id to "
                + (
                    "speedup, e.g. {'cpu-disabled': 1.3}"
                    if kind == FASTER_THAN
                    else "share, e.g. {'cpu-all': 0.99}"
                )
                + f"; got {safe_repr(value)}."
            )
        for other, bound in value.items():
            if not isinstance(other, str):
                raise UsageError(
                    f"{where}: a variant id must be text such as 'cpu-disabled', got {safe_repr(other)}."
                )
            other_id = check_id(other, source=where) if callable(check_id) else other.strip()
            contracts.append(
                Contract(kind, str(other_id), _bound(kind, bound, where=f"{where}[{other!r}]"), source)
            )
    return tuple(contracts)


def _bound(kind: str, value: object, *, where: str) -> float:
    number = float("nan")
    if not isinstance(value, bool) and isinstance(value, (int, float)):
        number = float(value)
    if kind == FASTER_THAN:
        if not math.isfinite(number) or number <= 0:
            raise UsageError(
                f"{where}: a speedup must be a positive number (1.3: at least 1.3x as fast; 0.9: at most "
                f"~11% slower), got {safe_repr(value)}."
            )
        return number
    if not math.isfinite(number) or not 0 < number <= 1:
        raise UsageError(
            f"{where}: an agreement must be a share above 0 and at most 1 (0.99), got {safe_repr(value)}."
        )
    return number


def default_contracts(
    variant: Variant, matrix: Sequence[Variant], names: Sequence[str]
) -> tuple[Contract, ...]:
    """The optional default contracts of ``ortperf_contracts`` for one variant of the run's matrix.

    ``levels``: a level is not slower than the level below it (a speedup of at least 1.0 against the
    next lower of the run's levels at the same provider and precision; when the run has one level,
    the next lower level there is). ``quantized``: an int8 variant is at least as fast as fp32 at its
    provider and level."""
    found: list[Contract] = []
    if "levels" in names:
        order = [level for level in OptLevel if level is not OptLevel.LAYOUT]
        run_levels = {v.opt_level for v in matrix if v.provider_spec == variant.provider_spec}
        ladder = [level for level in order if level in run_levels] if len(run_levels) > 1 else order
        if variant.opt_level in ladder and ladder.index(variant.opt_level) > 0:
            lower = Variant(
                variant.provider_spec, ladder[ladder.index(variant.opt_level) - 1], variant.precision
            )
            found.append(Contract(FASTER_THAN, lower.id, 1.0, "ortperf_contracts = levels"))
    if "quantized" in names and variant.precision.quantized:
        found.append(Contract(FASTER_THAN, variant.fp32.id, 1.0, "ortperf_contracts = quantized"))
    return tuple(found)
