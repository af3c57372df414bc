"""The latency check: measure, compare with the baseline or record it, and explain the verdict.

Plain logic; the pytest layer turns a failed :class:`LatencyResult` into a
test failure with its message.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from pytest_ortperf.checks.latency_figures import PART as LATENCY_PART
from pytest_ortperf.checks.latency_figures import LatencyFigures, latency_part, stored_latency
from pytest_ortperf.checks.paths import Plan, Route, missing_message
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.latency import across_processes as units_rule
from pytest_ortperf.latency import sequential
from pytest_ortperf.latency.across_processes import AcrossProcesses, MeasuringUnit, most_units
from pytest_ortperf.latency.activity import CONFIRMING, EXPLAINING, Activity, GateSeconds
from pytest_ortperf.latency.decision import (
    DEFAULT_CONFIDENCE,
    STORED_FLOOR,
    Comparison,
    Verdict,
    against_plain,
    judge,
    stored_called,
    widened,
    without_basis,
)
from pytest_ortperf.latency.lock_holder import LockWait
from pytest_ortperf.latency.measure import MeasureSettings, measure
from pytest_ortperf.latency.paired import PairedRounds, Side, judge_pair, measure_pair
from pytest_ortperf.latency.recording import (
    Recording,
    coarse,
    compared_values,
    decision_cv,
    noise,
    plain_ratios,
    record_short,
    record_until_settled,
    short_settings,
)
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.profiling.operators import OpProfile, explain, fastest, reads_the_other_way
from pytest_ortperf.store.baselines import BaselineEntry, EntryState, Figures
from pytest_ortperf.store.environment import what_changed
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.recipe import same_or_identical, split

# A first side-by-side regression whose interval's lower bound lies this far beyond the threshold
# (ratio) fails without a second measurement, when each side ran on several sessions built for the
# run: the largest offset measured between two single sessions of the same model is 5% (a GRU
# stack), two sessions a side average it, and every one of 141 first regressions measured again in
# the campaigns of benchmarks/changed_model.py was confirmed; those the confirmation turned back in
# earlier campaigns were A/A checks near the threshold (benchmarks/README.md, "A changed model in
# pytest-benchmark's time").
# The plugin's side-by-side checks no longer take this route: since issue 57 they are decided across
# measuring processes (``check_across``); ``check_ab`` stays the in-process paired comparison.
LATENCY = "latency"  # the kind these verdicts are of: its records' kind, its part of the figures
CLEAR_MARGIN = 0.05
NOT_CONFIRMED_AGAIN = "not measured a second time"
NO_FIGURES_HERE = "no figures for this hardware yet"  # an unchanged check's change, without drift
# An undecided check across processes whose spread needs more than this many times the processes it
# measured says the machine is too busy to tell, rather than naming a budget (``undecided``).
FAR_BEYOND = 4
GLANCE_S = 0.5  # how long a check measures when its figures only inform (unchanged; A/B with no reference)
SAME_GRAPH_MODE = "same graph"  # a changed model whose optimized graph is the reference's: nothing timed


@dataclass(frozen=True)
class OperatorProfiles:
    """What a failed check's operator-level explanation compared: ``source`` says where the two
    profiles come from ("profiled runs vs the baseline's", both sides profiled side by side)."""

    source: str
    before: OpProfile
    after: OpProfile


@dataclass(frozen=True)
class LatencyResult:
    key: CheckKey
    status: Status
    current: LatencyStats
    baseline: Figures | None = None  # the stored figures compared with (this hardware's)
    comparison: Comparison | None = None
    confirmation: Comparison | None = None
    changes: tuple[str, ...] = ()
    failed: bool = False
    skipped: bool = False
    message: str = ""
    mode: str = "stored"
    reference: LatencyStats | None = None
    reference_label: str = ""
    drift: float | None = None  # unchanged: current / recorded median, for information
    # Unchanged: what its look may have run beside (``gate.services.Measuring.beside``: another
    # xdist worker of this run), "" when nothing: then the drift is not the machine's alone.
    drift_beside: str = ""
    stored_reason: str = ""  # stored figures: why no reference could be rebuilt
    recorded_spread: float | None = None  # an update: how much the recorded figures varied
    noise: str = ""  # an update: why the recorded figures are noisy (latency.recording.noise), "" if not
    # An update of figures that will decide: why they cannot detect a change of the threshold
    # (latency.recording.coarse: "detect >= 13.4%, threshold 10%"), "" when they can
    coarse: str = ""
    short: str = ""  # an update: why a short recording was enough (latency.recording.short_reason)
    runtimes: str = ""  # side by side across runtimes: "onnxruntime 1.31.1 -> onnxruntime 1.32.0"
    # Missing because the recorded onnxruntime ("onnxruntime-gpu 1.31.1") could not be had here
    runtime_unavailable: str = ""
    seconds: GateSeconds = field(default_factory=GateSeconds)  # where its time went (latency.activity)
    lock_waits: tuple[LockWait, ...] = ()  # who held the timing lock while it waited (latency.lock_holder)
    # How its timed rounds held the timing lock: "exclusive"; "shared" for a look that only informs
    # (it may overlap other such looks, never a measurement that decides); "" when nothing was timed.
    lock: str = ""
    operators: OperatorProfiles | None = None  # a failure's operator profiles, when they could be made
    # Why it ended as it did, section by section (title, lines): where the time went at operator
    # level, what changed in the graph; in the message of a failure too.
    explanations: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # What was fed: {input: "float32[1, 3, 640, 640]"}, and where it came from ("synthetic(seed=0)",
    # "test_data_set_0", "the check's feeds"), so that a reader sees what was measured.
    inputs: Mapping[str, str] = field(default_factory=dict)
    inputs_source: str = ""
    staged: BaselineEntry | None = None  # an update: the entry its verdict asks the gate to stage
    # A first regression failed without a second measurement: why it could not change the verdict
    # (clear_regression); in the message, the record and ``basis``, so every report says so.
    confirmation_skipped: str = ""
    # Side by side across measuring processes (latency/across_processes.py): every unit's figures,
    # the interval's parts, and how many units an undecided check would need.
    processes: AcrossProcesses | None = None
    # An update of an unchanged recipe that kept the stored figures, quieter than its own: why
    kept: str = ""

    @property
    def noisy(self) -> bool:
        return bool(self.noise)

    @property
    def decisive(self) -> Comparison | None:
        return self.confirmation or self.comparison

    @property
    def baseline_median_ms(self) -> float | None:
        """The median compared against: the stored baseline's or, in A/B mode, the reference model's."""
        if self.reference is not None:
            return self.reference.median_ms
        latency = stored_latency(self.baseline)
        return latency.median_ms if latency is not None else None

    @property
    def machine_drift(self) -> float | None:
        """How the machine-speed canary moved since the recording (now / then), where both this look
        and the stored figures measured it: the drift of the machine, shared by every check."""
        stored = stored_latency(self.baseline)
        if stored is None or not stored.canary_round_medians_ms or not self.current.canary_round_medians_ms:
            return None
        return float(
            np.median(self.current.canary_round_medians_ms) / np.median(stored.canary_round_medians_ms)
        )

    @property
    def change(self) -> str:
        if self.drift is not None and self.drift_beside:
            beside = f"measured beside {self.drift_beside}: not the machine's drift"
            return f"{drift_text(self.drift)}, {beside}; nothing changed"
        if self.drift is not None:
            # This check's own drift; the machine is named only where the canary, measured on both
            # sides, shows how its speed moved.
            machine = self.machine_drift
            shown = f" (machine {drift_text(machine)}, by the canary)" if machine is not None else ""
            return f"{drift_text(self.drift)}{shown}; nothing changed"
        if self.mode == "unchanged":
            return f"nothing changed; {NO_FIGURES_HERE}"
        if self.mode == SAME_GRAPH_MODE:
            return "the same optimized graph as the reference; not timed"
        decisive = self.decisive
        if decisive is None:
            return ""
        text = decisive.estimate.describe()
        if decisive.no_basis:
            return f"{text}; {decisive.no_basis}"
        if decisive.verdict is Verdict.INCONCLUSIVE:
            text += f"; could detect >= {percent(decisive.detectable)}"
            if self.processes is not None:
                text += f"; {undecided(self.processes)}"
        return text

    @property
    def path(self) -> str:
        """Which path decided: ``unchanged``, ``side by side vs <reference>`` or ``stored figures``; or
        ``missing`` when nothing could (as the other kinds say)."""
        if self.mode == "unchanged":
            return "unchanged"
        if self.mode == SAME_GRAPH_MODE:
            return f"same graph as {self.reference_label}"
        if self.mode == "a/b":
            across = f" ({self.runtimes})" if self.runtimes else ""
            return f"side by side vs {self.reference_label}{across}"
        return "missing" if self.status is Status.MISSING else "stored figures"

    @property
    def basis(self) -> str:
        """Mode and statistic that decided, e.g. ``a/b: median of paired round ratios ...``."""
        decisive = self.decisive
        if decisive is None:
            return self.mode
        skipped = f"; {NOT_CONFIRMED_AGAIN}: {self.confirmation_skipped}" if self.confirmation_skipped else ""
        return decisive.basis() + skipped


def check_latency(
    run: Callable[[], object],
    *,
    key: CheckKey,
    plan: Plan,
    entry: EntryState,
    policy: CheckPolicy,
    environment: Mapping[str, Any],
    today: str,
    measure_fn: Callable[[Callable[[], object], MeasureSettings], LatencyStats] = measure,
    profile_fn: Callable[[], OpProfile] | None = None,
    explain_fn: Callable[[], OpProfile] | None = None,
    activity: Activity | None = None,
    short: str = "",
    beside: str = "",
) -> LatencyResult:
    """Measure ``run`` on the path ``plan`` chose (``checks.paths``; never side by side here): a short
    look when nothing changed, a record under update, this hardware's stored figures, or missing.

    ``entry``: the entry an update builds on; the result's ``staged`` is what it records, for the
    gate to stage (what the entry held for comparison is in ``plan``).
    ``profile_fn``: the operator profile an update records (a test marked ``ort_profile``);
    ``explain_fn``: the current operator profile a stored comparison worth explaining (a failure,
    an inconclusive result, an improvement) is held against the stored one with, after measuring.
    ``activity`` is told when the confirmation measures (``measure_fn`` tells it the rest).
    ``short``: an update records short, and why (``latency.recording.short_reason``); "" measures
    until the figure settles, for figures that will decide. ``beside``: what an unchanged check's look
    may run beside (another xdist worker of this run; "" when nothing): its drift is then not said to
    be the machine's, and never gates."""
    activity = activity or Activity()
    if plan.route is Route.UNCHANGED:
        return _unchanged(key, plan.figures, measure_fn(run, glance(policy.measure)), policy, beside)
    if plan.route is Route.RECORD:
        if short:
            recording = record_short(lambda: measure_fn(run, short_settings(policy.measure)), why=short)
        else:
            recording = record_until_settled(
                lambda: measure_fn(run, policy.measure),
                cap_s=policy.record_cap_s,
                threshold=stored_called(policy.threshold),
            )
        return _record(key, entry, policy, environment, today, recording, plan.figures, profile_fn)
    current = measure_fn(run, policy.measure)
    if plan.route is not Route.STORED or plan.figures is None:
        unavailable = " ".join(plan.runtime) if plan.runtime is not None else ""
        return _missing(key, policy, current, reason=plan.reason, runtime_unavailable=unavailable)
    figures = plan.figures
    changes = tuple(what_changed(plan.recorded, environment))
    comparison = _judge(figures, current, policy)
    confirmation = None
    if comparison.verdict is Verdict.REGRESSION:
        # A regression must survive a fresh measurement before it fails the test.
        with activity.phase(CONFIRMING):
            current = measure_fn(run, policy.measure)
        confirmation = _judge(figures, current, policy)
    status, failed = settle(comparison, confirmation, policy)
    result = LatencyResult(
        key=key,
        status=status,
        current=current,
        baseline=figures,
        comparison=comparison,
        confirmation=confirmation,
        changes=changes,
        failed=failed,
        stored_reason=plan.reason,
    )
    if failed:
        result = _with_message(result, failure_message(result, policy))
    if not worth_explaining(result) or explain_fn is None:
        return result
    part = latency_part(figures)
    if part is None or part.profile is None:
        why = "the stored figures were recorded without an operator profile (a test marked ort_profile "
        return with_section(result, "at operator level", [f"not available: {why}keeps one)"])
    stored, measure_profile = part.profile, explain_fn
    with activity.phase(EXPLAINING):
        return explained(result, "profiled runs vs the baseline's", lambda: (stored, measure_profile()))


ACCEPT_LINE = "  to accept the new latency:"


def worth_explaining(result: LatencyResult) -> bool:
    """Whether a result pays for the profiled runs that say where its time went: a failure, an
    inconclusive result, an improvement beyond the threshold; never a pass (it costs nothing)."""
    return result.decisive is not None and (
        result.failed
        or result.status in (Status.INCONCLUSIVE, Status.NOT_CONFIRMED, Status.IMPROVED, Status.REGRESSION)
    )


def explained(
    result: LatencyResult, source: str, profiles: Callable[[], tuple[OpProfile, OpProfile]]
) -> LatencyResult:
    """A result that says what changed at operator level, from ``profiles()``: the (before, after)
    operator profiles; ``source`` says where they come from. In a failure's message it is put before
    the line that accepts the new latency, which stays last. A profile that cannot be made is said
    in the section and never hides the verdict. A result not worth explaining (a pass) is returned
    as it is, unprofiled."""
    decisive = result.decisive
    if not worth_explaining(result) or decisive is None:
        return result
    try:
        faster = decisive.verdict is Verdict.IMPROVED
        directed = decisive.verdict in (Verdict.REGRESSION, Verdict.IMPROVED)
        before, after = profiles()
        if directed and reads_the_other_way(before, after, grew=not faster):
            # One side's profiled turns read slow: profile both again, each keeping its fastest.
            again_before, again_after = profiles()
            before, after = fastest(before, again_before), fastest(after, again_after)
        lines = explain(before, after, faster=faster)
        lines = lines or ["no op type, node, provider or node count changed beyond run-to-run noise"]
        if directed and reads_the_other_way(before, after, grew=not faster):
            read = "slower" if faster else "faster"
            lines.append(
                f"read with care: the profiled runs, taken twice, still read {read}"
                f" in total than the reference ({_profiled_ms(before):.3f} -> {_profiled_ms(after):.3f}"
                " ms/run) where the measurement decided otherwise; the machine was busier while one side"
                " was profiled"
            )
    except (OrtperfError, OSError) as exc:
        lines = [f"not available: the profiled runs failed ({exc})"]
    else:
        result = replace(result, operators=OperatorProfiles(source, before, after))
    return with_section(result, f"at operator level ({source})", lines)


def _profiled_ms(profile: OpProfile) -> float:
    return sum(us for us, _ in profile.ops.values()) / 1000


def with_section(result: LatencyResult, title: str, lines: Sequence[str]) -> LatencyResult:
    """A result with one more explanation (``title`` and its ``lines``); a failure's message gains it
    as a section (``title:`` and its indented lines) before the line that accepts the new latency,
    which stays last."""
    result = replace(result, explanations=(*result.explanations, (title, tuple(lines))))
    if not result.failed:
        return result
    section = [f"  {title}:", *(f"    {line}" for line in lines)]
    message = result.message.split("\n")
    accepts = [i for i, line in enumerate(message) if line.startswith(ACCEPT_LINE)]
    at = accepts[-1] if accepts else len(message)
    return _with_message(result, "\n".join([*message[:at], *section, *message[at:]]))


def glance(settings: MeasureSettings) -> MeasureSettings:
    """A short measurement: enough to show the figures, not to decide anything."""
    return replace(
        settings,
        budget_s=min(GLANCE_S, settings.budget_s),
        min_rounds=1,
        warmup_runs=1,
        warmup_s=min(settings.warmup_s, 0.05),
        warmup_cap_s=min(settings.warmup_cap_s, 0.1),
    )


def drift_text(ratio: float) -> str:
    """2.8 -> '2.80x slower than at recording'; 0.5 -> '2.00x faster than at recording'."""
    if ratio >= 1:
        return f"{ratio:.2f}x slower than at recording"
    return f"{1 / ratio:.2f}x faster than at recording"


def _unchanged(
    key: CheckKey, figures: Figures | None, current: LatencyStats, policy: CheckPolicy, beside: str = ""
) -> LatencyResult:
    """Nothing the repository controls changed: the check passes, with the drift against this
    hardware's own figures as information (when it has some), unless --ortperf-drift-threshold gates
    on it. A drift measured ``beside`` other processes of this run (xdist workers timing or building
    at the same time on the same cores) is partly theirs: it is shown as such, never as the
    machine's, and never gates (a gating look holds the timing lock alone, unless
    --ortperf-parallel-timing let it share)."""
    recorded = stored_latency(figures)
    if figures is None or recorded is None:
        return LatencyResult(key=key, status=Status.UNCHANGED, current=current, mode="unchanged")
    drift = current.median_ms / recorded.median_ms
    limit = policy.drift_threshold
    drifted = limit is not None and not beside and not (1 / (1 + limit) <= drift <= 1 + limit)
    result = LatencyResult(
        key=key,
        status=Status.DRIFTED if drifted else Status.UNCHANGED,
        current=current,
        baseline=figures,
        failed=drifted,
        mode="unchanged",
        drift=drift,
        drift_beside=beside,
    )
    if not drifted:
        return result
    assert limit is not None
    message = "\n".join(
        [
            f"latency of {key.shown} on machine '{key.machine}' drifted: {drift_text(drift)}, with nothing "
            f"changed since the baseline (model, settings, inputs, onnxruntime, providers)",
            f"  baseline: {_ms(recorded)}, recorded {figures.recorded} on this hardware",
            f"  current:  {_ms(current)}",
            f"  drift threshold: {percent(limit)} (--ortperf-drift-threshold)",
            f"  to accept the new latency: {key.record_command}",
        ]
    )
    return _with_message(result, message)


def settle(
    comparison: Comparison, confirmation: Comparison | None, policy: CheckPolicy
) -> tuple[Status, bool]:
    """Status and failed flag from a first verdict and, after a regression, its confirmation."""
    decisive = confirmation or comparison
    if confirmation is not None and confirmation.verdict is not Verdict.REGRESSION:
        # The slowdown did not survive a fresh measurement: never a failure.
        return Status.NOT_CONFIRMED, False
    return Status.of(decisive.verdict), fails(decisive.verdict, policy)


def fails(verdict: Verdict, policy: CheckPolicy) -> bool:
    """Whether a side-by-side verdict fails its check: a regression, or an improvement under
    ``--ortperf-fail-on-improvement``."""
    return verdict is Verdict.REGRESSION or (verdict is Verdict.IMPROVED and policy.fail_on_improvement)


def check_ab(
    current: Side,
    reference: Side,
    *,
    key: CheckKey,
    label: str,
    policy: CheckPolicy,
    measure_fn: Callable[[Side, Side, MeasureSettings], PairedRounds] | None = None,
    fresh_pair: Callable[[], tuple[Side, Side]] | None = None,
    accept: str = "",
    runtimes: str = "",
    activity: Activity | None = None,
    held: Callable[[], AbstractContextManager[object]] = nullcontext,
    randomised: bool = False,
    changes: Sequence[str] = (),
) -> LatencyResult:
    """Same-job A/B: ``current`` against ``reference`` (named ``label``) in interleaved rounds; each
    side a callable timed here or a measuring worker (``runtimes`` names the two ONNX Runtimes then).

    ``held``: the run's timing lock, taken for each measurement (warm-ups and timed rounds) and only
    for them: the confirmation's new pair is built with the lock released, so that other processes
    time while it builds (``benchmarks/README.md``, "A changed model in pytest-benchmark's time").

    ``randomised``: each side already ran on several sessions placed anew for this check, so that no
    one placement decided; then a first regression far beyond the threshold
    (:func:`clear_regression`) fails without the second measurement, which could not change it, and
    the result says so (``confirmation_skipped``).

    A regression is measured again before it fails the test, on ``fresh_pair()`` when given: new
    sessions of both sides, so that the placement of one pair of sessions in memory, which can
    favour one side by a few percent for as long as they live, cannot decide twice. ``accept``:
    the command that accepts the new latency, when the reference is a recorded baseline's, and
    ``changes`` what changed since that baseline (named in the result and a failure's message).

    With ``policy.sequential`` both measurements stop at the first look whose verdict more rounds
    could not change (``latency.sequential``); the budget is then a maximum. ``activity`` hears
    of the warm-ups, the rounds and the confirmation (with its new pair)."""
    threshold, confidence = policy.threshold, policy.confidence
    activity = activity or Activity()

    def measured(current: Side, reference: Side) -> tuple[PairedRounds, Comparison]:
        with held():
            return timed(current, reference)

    def timed(current: Side, reference: Side) -> tuple[PairedRounds, Comparison]:
        if policy.sequential:
            rounds = (
                measure_fn
                or partial(sequential.measure, threshold=threshold, confidence=confidence, activity=activity)
            )(current, reference, policy.ab)
            return rounds, sequential.judge(rounds, threshold=threshold, confidence=confidence)
        rounds = (measure_fn or partial(measure_pair, activity=activity))(current, reference, policy.ab)
        return rounds, judge_pair(rounds, threshold=threshold, confidence=confidence)

    rounds, comparison = measured(current, reference)
    confirmation = None
    skipped = clear_regression(comparison) if randomised else ""
    if comparison.verdict is Verdict.REGRESSION and not skipped:
        with activity.phase(CONFIRMING):
            if fresh_pair is not None:
                current, reference = fresh_pair()  # outside the timing lock: built, not timed
            rounds, confirmation = measured(current, reference)
    status, failed = settle(comparison, confirmation, policy)
    result = LatencyResult(
        key=key,
        status=status,
        current=rounds.current,
        comparison=comparison,
        confirmation=confirmation,
        failed=failed,
        mode="a/b",
        reference=rounds.reference,
        reference_label=label,
        runtimes=runtimes,
        confirmation_skipped=skipped,
        changes=tuple(changes),
    )
    if not failed:
        return result
    message = ab_message(result, policy)
    return _with_message(result, f"{message}\n{ACCEPT_LINE} {accept}" if accept else message)


def check_across(
    load: Callable[[int], Sequence[MeasuringUnit]],
    *,
    key: CheckKey,
    label: str,
    policy: CheckPolicy,
    accept: str = "",
    runtimes: str = "",
    activity: Activity | None = None,
    held: Callable[[], AbstractContextManager[object]] = nullcontext,
    changes: Sequence[str] = (),
) -> LatencyResult:
    """Side by side across measuring processes (``latency/across_processes.py``): ``load(count)``
    gives ``count`` new units (processes holding both sides, or process pairs where the sides run
    different runtimes: ``runtimes`` names them), measured until a look decides or the budget's
    units are spent. One estimate over all of them decides; no second measurement follows, since
    every unit already is one. ``held``: the run's timing lock, taken for each batch's warm-ups and
    rounds and only for them (units load without it). ``accept``: the command that accepts the new
    latency, ``changes`` what changed since the baseline."""
    threshold = policy.threshold
    measured = units_rule.measure(
        load,
        threshold=threshold,
        confidence=policy.confidence,
        budget_s=policy.ab.budget_s,
        held=held,
        activity=activity,
        sequential=policy.sequential,
    )
    comparison = measured.comparison
    failed = fails(comparison.verdict, policy)
    result = LatencyResult(
        key=key,
        status=Status.of(comparison.verdict),
        current=measured.current,
        comparison=comparison,
        failed=failed,
        mode="a/b",
        reference=measured.reference,
        reference_label=label,
        runtimes=runtimes,
        changes=tuple(changes),
        processes=measured,
    )
    if not failed:
        return result
    message = ab_message(result, policy)
    return _with_message(result, f"{message}\n{ACCEPT_LINE} {accept}" if accept else message)


def undecided(measured: AcrossProcesses) -> str:
    """What an undecided measurement across processes measured, and what more would take: a budget
    that measures about as many processes as this spread needs, or, where that is far beyond what
    the budget measured, that the machine is too busy to tell."""
    count = len(measured.units)
    text = f"undecided after {count} measuring processes"
    needed = measured.needed()
    if needed is None:
        return text
    if needed > FAR_BEYOND * measured.most:
        interval = measured.interval
        if interval.half_width <= math.log1p(measured.comparison.threshold):
            change = measured.comparison.estimate.describe().split(" (")[0]
            return (
                f"{text}; the change sits at the threshold ({change} against "
                f"+/-{percent(measured.comparison.threshold)}): about {needed} would tell which side of it"
            )
        return (
            f"{text}; at this spread about {needed} would decide: the processes scatter far beyond the "
            "threshold (a machine busy with other work); measure where fewer processes share the cores"
        )
    # The budget whose units would reach ``needed`` (latency/across_processes.py: most_units).
    budget = math.ceil(needed / units_rule.UNITS_PER_BUDGET_S)
    more = f"about {needed} would decide at this spread (--ortperf-ab-budget={budget}"
    return f"{text}; {more}, {most_units(budget)} processes at most)"


def clear_regression(comparison: Comparison, margin: float = CLEAR_MARGIN) -> str:
    """Why a first side-by-side regression needs no second measurement, or "" when it does: its
    interval's lower bound lies beyond the threshold by more than ``margin`` (a ratio), further
    than any placement of sessions has moved a ratio, so a new pair could not bring it back."""
    if comparison.verdict is not Verdict.REGRESSION:
        return ""
    low, threshold = comparison.estimate.low, comparison.threshold
    if low - 1.0 < threshold + margin:
        return ""
    return (
        f"the first interval's lower bound +{percent(low - 1.0)} is beyond the threshold "
        f"+{percent(threshold)} by more than {percent(margin)}, on new sessions of both sides: "
        "no pair of sessions has moved a ratio that far"
    )


def ab_without_reference(
    current: LatencyStats, *, key: CheckKey, label: str, status: Status, reason: str
) -> LatencyResult:
    """A/B mode with nothing to compare (a new model, or one identical to the reference): reported, passes."""
    return LatencyResult(
        key=key,
        status=status,
        current=current,
        mode="a/b",
        reference_label=label,
        message=f"latency of {key.shown}: {reason}; measured median {current.median_ms:.4g} ms.",
    )


def ab_message(result: LatencyResult, policy: CheckPolicy) -> str:
    """The message of a failed A/B comparison."""
    assert result.reference is not None
    kind, verdict_lines = _verdict_lines(result, policy.threshold, width=10)
    return "\n".join(
        [
            f"latency {kind} in {result.key.shown} against {result.reference_label} (same-job A/B)",
            *([f"  runtimes:  {result.runtimes} (both in measuring workers)"] if result.runtimes else []),
            f"  reference: {_ms(result.reference)}",
            f"  current:   {_ms(result.current)}",
            *verdict_lines,
            *([f"  changed since the baseline: {'; '.join(result.changes)}"] if result.changes else []),
        ]
    )


def _verdict_lines(result: LatencyResult, threshold: float, *, width: int) -> tuple[str, list[str]]:
    """('regression' or 'improvement', the change/decided-by/confirmation lines) of a failed check."""
    assert result.comparison is not None
    decisive = result.confirmation or result.comparison
    kind = "regression" if decisive.verdict is Verdict.REGRESSION else "improvement"
    lines = [
        f"  {'change:':<{width}} {decisive.estimate.describe()}, threshold +/-{percent(threshold)}",
        f"  decided by {decisive.basis()}",
    ]
    if result.confirmation is not None:
        first = result.comparison.estimate.describe()
        lines.append(f"  first measurement: {first} (confirmed by a second)")
    elif result.confirmation_skipped:
        lines.append(f"  {NOT_CONFIRMED_AGAIN}: {result.confirmation_skipped}")
    if result.processes is not None:
        each = ", ".join(f"{(ratio - 1) * 100:+.1f}%" for ratio in result.processes.ratios)
        lines.append(f"  {'processes:':<{width}} {each} (each process's median round ratio)")
    if kind == "improvement":
        lines.append("  (faster beyond the threshold: check that the model still does all its work)")
    return kind, lines


def _stats(figures: Figures) -> LatencyStats:
    latency = stored_latency(figures)
    if latency is None:  # callers pass only figures that hold latency
        raise ValueError("baseline figures without latency")
    return latency


def percent(fraction: float) -> str:
    """0.025 -> '2.5%', 0.1 -> '10%': exact enough to match what the user typed."""
    return f"{fraction * 100:.3g}%"


def _judge(figures: Figures, current: LatencyStats, policy: CheckPolicy) -> Comparison:
    """Stored figures against today's, the interval widened by how noisy their recording was."""
    baseline = _stats(figures)
    threshold, confidence = policy.threshold, policy.confidence
    comparison = stored_comparison(baseline, current, threshold=threshold, confidence=confidence)
    part = latency_part(figures)
    recorded_spread = part.spread if part is not None else None
    spread = recorded_spread if recorded_spread is not None else decision_cv(baseline)
    held = against_plain(widened(comparison, spread, rounds=baseline.rounds), plain_ratios(baseline, current))
    noisy = noise(spread, max_cv=policy.max_cv)
    if noisy:
        # A noisy recording's figure is off by far more than its rounds show (a single measurement
        # of 10-15% spread: by 31% in the median, benchmarks/results/recording_short.md), and A/A
        # pairs against noisy figures raised 21 false alarms in 42 (recording_short_as_checked.md).
        why = f"the stored figures are noisy ({noisy}); record them again on a quieter machine"
        return without_basis(held, why)
    return held


def stored_comparison(
    baseline: LatencyStats, current: LatencyStats, *, threshold: float, confidence: float = DEFAULT_CONFIDENCE
) -> Comparison:
    """Stored mode: the fastest quarter of each run's round medians, relative to the canary when both
    runs measured it, compared by the Hodges-Lehmann ratio with its Mann-Whitney interval.

    A shared machine's speed switches between states; the fastest well-populated state recurs in
    every run long enough to sample it, so comparing it with the baseline's is comparing like with
    like, whichever state each run mostly saw.
    """
    base, curr, relative = compared_values(baseline, current)
    comparison = judge(base, curr, threshold=threshold, confidence=confidence, floor=STORED_FLOOR)
    what = "round medians / machine-speed canary" if relative else "round medians"
    floor = (
        f"; changes called beyond {percent(STORED_FLOOR)} (one process now against the one that recorded)"
        if threshold < STORED_FLOOR
        else ""
    )
    statistic = (
        f"fastest quarter of {what} ({len(curr)} of {current.rounds} rounds vs {len(base)} of "
        f"{baseline.rounds}), Hodges-Lehmann ratio{floor}"
    )
    return replace(comparison, statistic=statistic)


def _with_message(result: LatencyResult, message: str) -> LatencyResult:
    return replace(result, message=message)


def _record(
    key: CheckKey,
    state: EntryState,
    policy: CheckPolicy,
    environment: Mapping[str, Any],
    today: str,
    recording: Recording,
    before: Figures | None,
    profile_fn: Callable[[], OpProfile] | None = None,
) -> LatencyResult:
    """Record this hardware's figures under the entry's recipe. Never refuses: a noisy machine's
    figures are written with their spread and whether they settled within the cap (``noisy`` in the
    summary, as :func:`latency.recording.noise` defines it), and where they later decide, that spread
    widens the interval. An unchanged recipe keeps every other
    hardware's figures; a changed one replaces the recipe and drops the figures measured for the old."""
    current = recording.stats
    recipe, measured_on = split(environment)
    noisy = noise(recording.spread, max_cv=policy.max_cv)
    mine = LatencyFigures(current, spread=recording.spread, settled=recording.settled, short=recording.short)
    existing = state.current
    extra: dict[str, Any] = {
        "recorded_spread": recording.spread,
        "noise": noisy,
        "short": recording.short,
        "coarse": coarse(recording.detectable, stored_called(policy.threshold)),
    }
    if existing is None:
        entry = BaselineEntry(variant=key.variant, recorded=today, recipe=recipe)
        # Profiled only when the entry is written: the profiling runs cost time.
        mine = replace(mine, profile=profile_fn() if profile_fn is not None else None)
        figures = Figures(recorded=today, measured_on=measured_on).with_part(LATENCY_PART, mine)
        staged = entry.with_figures(key.machine, figures)
        return LatencyResult(key=key, status=Status.NEW, current=current, staged=staged, **extra)
    changes = tuple(what_changed(existing.recipe, recipe))
    same = same_or_identical(existing.recipe, recipe)
    if same and before is not None:
        changes += tuple(what_changed(before.measured_on, measured_on))
        was = latency_part(before) or LatencyFigures()
        has_profile = was.profile is not None
        if profile_fn is not None and not has_profile:
            changes += ("operator profile added (the test is marked ort_profile)",)
        elif profile_fn is None and has_profile:
            changes += ("operator profile dropped (the test is no longer marked ort_profile)",)
        # Noisy figures are replaced by quieter ones; otherwise figures within the threshold are kept,
        # so an update on a steady model leaves the file byte for byte.
        if noise(was.spread, max_cv=policy.max_cv) and not noisy:
            changes += (f"quieter figures (spread {was.spread:.1%} -> {recording.spread:.1%})",)
        if was.short and not recording.short:
            # Kept short figures would decide now (nothing keeps the model, or drift gates).
            changes += ("figures measured until settled, replacing a short recording: they now decide",)
        comparison = _judge(before, current, policy)
        kept = comparison.verdict in (Verdict.OK, Verdict.INCONCLUSIVE)
        if not changes and kept:
            return LatencyResult(
                key=key, status=Status.UNCHANGED, current=current, baseline=before, comparison=comparison
            )
        if not changes and was.spread is not None and recording.spread > was.spread:
            # Nothing in the recipe or the hardware changed, and this recording is the noisier: a
            # loaded machine's figures never replace quieter ones of the same recipe.
            why = (
                f"stored figures kept: quieter (spread {was.spread:.1%}) than this recording "
                f"(spread {recording.spread:.1%}, {comparison.estimate.describe()}), and nothing in the "
                "recipe or the hardware changed"
            )
            return LatencyResult(
                key=key,
                status=Status.UNCHANGED,
                current=current,
                baseline=before,
                comparison=comparison,
                kept=why,
            )
    else:
        comparison = None
        if same and state.loaded is not None:
            changes += ("figures of this hardware added",)
        elif existing.machines("latency"):
            changes += ("figures measured under the old recipe dropped",)
    if environment.get("model_git_blob") and not existing.recipe.get("model_git_blob"):
        changes += ("git object id of the model recorded (its reference can be rebuilt)",)
    mine = replace(mine, profile=profile_fn() if profile_fn is not None else None)
    here = existing.figures_for(key.machine)
    # Only the latency part is replaced where the recipe is the same: every other part stays.
    base = here if same and here is not None else Figures(recorded=today)
    figures = replace(base, recorded=today, measured_on=measured_on).with_part(LATENCY_PART, mine)
    entry = existing.with_recipe(recipe, recorded=today).with_figures(key.machine, figures)
    return LatencyResult(
        key=key,
        staged=entry,
        status=Status.NEW if same and before is None else Status.UPDATED,
        current=current,
        baseline=before,
        comparison=comparison,
        changes=changes,
        **extra,
    )


def _missing(
    key: CheckKey, policy: CheckPolicy, current: LatencyStats, *, reason: str, runtime_unavailable: str = ""
) -> LatencyResult:
    measured = f"measured median {current.median_ms:.4g} ms, p90 {current.p90_ms:.4g} ms"
    message = missing_message("latency", key, reason, measured)
    return LatencyResult(
        key=key,
        status=Status.MISSING,
        current=current,
        stored_reason=reason,
        runtime_unavailable=runtime_unavailable,
        failed=policy.missing == "fail",
        skipped=policy.missing == "skip",
        message=message,
    )


def _ms(stats: LatencyStats) -> str:
    shape = f"{stats.rounds} rounds x {stats.count // stats.rounds} runs"
    return f"median {stats.median_ms:.4g} ms, p90 {stats.p90_ms:.4g} ms ({shape})"


def failure_message(result: LatencyResult, policy: CheckPolicy) -> str:
    """The message of a failed comparison: numbers, change with its interval, threshold, why.

    The medians of all runs are shown, but the stored figures decide on the fastest quarter of each
    side's round medians: the figures compared are shown beside them, labelled, and medians that
    disagree with the decision are said to be shown, not compared."""
    assert result.baseline is not None
    kind, verdict_lines = _verdict_lines(result, policy.threshold, width=9)
    return "\n".join(
        [
            f"latency {kind} in {result.key.shown} on machine '{result.key.machine}'",
            f"  baseline: {_ms(_stats(result.baseline))}, recorded {result.baseline.recorded}",
            f"  current:  {_ms(result.current)}",
            _compared_line(_stats(result.baseline), result.current),
            *verdict_lines[:2],
            *_medians_line(_stats(result.baseline), result.current, result.decisive),
            *verdict_lines[2:],
            "  changed since the baseline: "
            + ("; ".join(result.changes) if result.changes else "nothing recorded"),
            *([f"  decided by stored figures: {result.stored_reason}"] if result.stored_reason else []),
            f"  to accept the new latency: {result.key.record_command}",
        ]
    )


def _compared_line(baseline: LatencyStats, current: LatencyStats) -> str:
    """The figures stored mode compared, labelled: the median of each side's fastest quarter."""
    base, curr, relative = compared_values(baseline, current)
    before, after = statistics.median(base), statistics.median(curr)
    if relative:
        return (
            f"  compared: {before:.4g} -> {after:.4g} (round median / canary median, the median of each "
            "side's fastest quarter)"
        )
    return (
        f"  compared: {before:.4g} ms -> {after:.4g} ms (the median of each side's fastest quarter of round "
        "medians)"
    )


def _medians_line(baseline: LatencyStats, current: LatencyStats, decisive: Comparison | None) -> list[str]:
    """When the medians of all runs fall outside the decisive interval: a line that says they are
    shown, not compared, so that they do not read as contradicting the change."""
    if decisive is None:
        return []
    ratio = current.median_ms / baseline.median_ms
    if decisive.estimate.low <= ratio <= decisive.estimate.high:
        return []
    return [
        f"  medians of all runs: {(ratio - 1) * 100:+.1f}%, outside the interval: shown, not compared (they "
        "move with how long the machine was slow during each run; the fastest quarter compares like with "
        "like)"
    ]


TIMING_OFF = "--ortperf-timing=off"


def same_graph(key: CheckKey, *, label: str, graph: str) -> LatencyResult:
    """The model changed but ORT will run the very graph of the recorded reference (``graph``: the
    graph in words), under the same settings and runtime, on the same inputs: the same work, so it
    passes without a timed round. Its figures are NaN and its rounds 0, as a check not timed."""
    return LatencyResult(
        key=key,
        status=Status.SAME_GRAPH,
        current=_nothing(),
        mode=SAME_GRAPH_MODE,
        reference_label=label,
        message=f"latency of {key.shown}: the optimized graph is the one of {label} ({graph}): the same "
        "work under the same settings and runtime; nothing timed.",
    )


def _nothing() -> LatencyStats:
    nan = math.nan
    return LatencyStats(
        count=0,
        rounds=0,
        min_ms=nan,
        median_ms=nan,
        mean_ms=nan,
        stdev_ms=nan,
        iqr_ms=nan,
        p90_ms=nan,
        p95_ms=nan,
        p99_ms=nan,
        cv=nan,
        round_cv=nan,
        throughput_per_s=nan,
        round_medians_ms=(),
    )


def not_timed(key: CheckKey) -> LatencyResult:
    """A latency check of a functional-only run (``--ortperf-timing=off``): nothing measured, skipped.
    Its figures are NaN and its rounds 0; it is reported as 'not timed', never compared or recorded."""
    return LatencyResult(
        key=key,
        status=Status.NOT_TIMED,
        current=_nothing(),
        skipped=True,
        message=f"latency of {key.shown} not timed: timing is off ({TIMING_OFF}); sessions and accuracy "
        "checks run, nothing is measured.",
    )
