"""The determinism check: the same inputs run several times on the test's session and on a second,
fresh session of the same model and variant, and every output compared exactly (or within a
tolerance, ``check_determinism(tolerance=...)``). It also says whether ONNX Runtime's
``use_deterministic_compute`` changes anything, from a third session built with it.

Outputs that flap from run to run (nondeterministic kernels, thread scheduling in reductions, a
provider's atomics, an unseeded random op) make an accuracy gate flap in CI; this check names the
outputs and by how much, so a test can pin them, loosen a tolerance knowingly, or fix the model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pytest_ortperf.accuracy.output_values import OutputValue, flatten
from pytest_ortperf.checks.kind_result import KindResult
from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import UsageError
from pytest_ortperf.gate.protocol import CheckContext, CheckTarget, Outcome
from pytest_ortperf.gate.session_outputs import run_outputs
from pytest_ortperf.kinds.determinism import KIND
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.store.baselines import BaselineEntry

DETERMINISM = "determinism"
RUNS = 5  # runs on each session


@dataclass(frozen=True)
class Spread:
    """How far each output strayed from the first run's value: the largest absolute difference (inf
    where a value is NaN on one side only, or a non-numeric value or a structure changed); and the
    outputs that could not be compared at all, with why (named in the result, never dropped)."""

    by_output: Mapping[str, float]
    not_compared: Mapping[str, str] = field(default_factory=dict)

    @property
    def worst(self) -> float:
        return max(self.by_output.values(), default=0.0)

    def beyond(self, tolerance: float) -> dict[str, float]:
        return {name: value for name, value in self.by_output.items() if value > tolerance}


def spread(first: Mapping[str, OutputValue], runs: Sequence[Mapping[str, OutputValue]]) -> Spread:
    """Each output's largest difference from ``first`` over ``runs`` (leaves of a map or sequence
    output named as the accuracy check names them)."""
    flat = flatten(first)
    reference = flat.leaves
    worst = dict.fromkeys(reference, 0.0)
    not_compared = {
        name: str(layout.get("reason", "")) for name, layout in flat.structure.items() if "reason" in layout
    }
    for run in runs:
        again = flatten(run)
        for name in set(reference) | set(again.leaves):
            worst[name] = max(worst.get(name, 0.0), _difference(reference.get(name), again.leaves.get(name)))
        for name in set(flat.structure) | set(again.structure):
            if flat.structure.get(name) != again.structure.get(name):  # a map's keys, a length, absent
                worst[name] = math.inf
    return Spread(worst, {name: why for name, why in not_compared.items() if name not in worst})


def _difference(a: np.ndarray | None, b: np.ndarray | None) -> float:
    if a is None or b is None or a.shape != b.shape or a.dtype != b.dtype:
        return math.inf
    if a.dtype.kind not in "fciub":  # text, objects: equal or not
        return 0.0 if np.array_equal(a, b) else math.inf
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    x, y = a.astype(wide), b.astype(wide)
    nan = np.isnan(x) | np.isnan(y)
    if np.any(np.isnan(x) != np.isnan(y)):
        return math.inf
    if not np.any(~nan):
        return 0.0
    return float(np.max(np.abs(x[~nan] - y[~nan])))


class DeterminismCheck:
    """``check_determinism(runs=5, tolerance=0.0)``."""

    kind = DETERMINISM

    def __init__(self, context: CheckContext, *, runs: int = RUNS, tolerance: float = 0.0) -> None:
        self._context = context
        self._runs = runs
        self._tolerance = tolerance

    def configured(self, *, runs: int | None = None, tolerance: float | None = None) -> DeterminismCheck:
        """This check with the call's ``runs`` (2 or more) and ``tolerance`` (an absolute difference,
        0 or more: 0 compares exactly)."""
        runs = self._runs if runs is None else runs
        tolerance = self._tolerance if tolerance is None else tolerance
        if isinstance(runs, bool) or not isinstance(runs, int) or runs < 2:
            raise UsageError(f"check_determinism(runs={runs!r}): runs is a whole number, 2 or more.")
        number = isinstance(tolerance, (int, float)) and not isinstance(tolerance, bool)
        if not number or not 0 <= tolerance < math.inf:
            raise UsageError(
                f"check_determinism(tolerance={tolerance!r}): a tolerance is a finite number, 0 or more."
            )
        return DeterminismCheck(self._context, runs=runs, tolerance=float(tolerance))

    def recorded(self, entry: BaselineEntry, machine: str) -> bool:
        return False  # it keeps no baseline: every run decides on its own outputs

    def run(self, target: CheckTarget) -> Sequence[Outcome]:
        context = self._context
        sessions, built = context.sessions, context.built

        def runs(session: BuiltSession) -> list[dict[str, OutputValue]]:
            return [run_outputs(session, target.inputs, sessions.watchdog) for _ in range(self._runs)]

        with context.measurer.activity(f"{target.key.shown} (determinism)"):
            outputs = runs(built)
            again = runs(sessions.fresh(built))
            stable = runs(sessions.fresh(built, deterministic=True))
        within = spread(outputs[0], outputs[1:])
        across = spread(outputs[0], again)
        pinned_spread = spread(stable[0], stable[1:])
        result = _result(target, within, across, pinned_spread, runs=self._runs, tolerance=self._tolerance)
        context.publisher.publish(KIND.record(result, context.nodeid))
        return [result]


def _result(
    target: CheckTarget, within: Spread, across: Spread, pinned: Spread, *, runs: int, tolerance: float
) -> KindResult:
    """The verdict: every output within ``tolerance`` on both sessions, or which outputs strayed, where
    and by how much; and what ``use_deterministic_compute`` did."""
    key = target.key
    names = sorted({*within.beyond(tolerance), *across.beyond(tolerance)})
    exactly = "exactly" if tolerance == 0 else f"within {tolerance:g}"
    path = f"{runs} runs on the test's session and {runs} on a fresh one, compared {exactly}"
    figures = {
        "runs": runs,
        "tolerance": tolerance,
        "within_session": dict(within.by_output),
        "fresh_session": dict(across.by_output),
        "deterministic_compute": dict(pinned.by_output),
        **({"not_compared": dict(within.not_compared)} if within.not_compared else {}),
    }
    # What could not be compared is said in the result and every report, pass or fail.
    unjudged = tuple(
        f"output {name!r} not compared: {why}" for name, why in sorted(within.not_compared.items())
    )
    still = pinned.beyond(tolerance)
    if not names:
        note = "use_deterministic_compute: not needed (the outputs are already stable)"
        worst = max(within.worst, across.worst)
        summary = f"{len(within.by_output)} output(s) stable, largest difference {worst:.3g}"
        if unjudged:
            summary += f"; {len(unjudged)} not compared"
        return KindResult(
            key, DETERMINISM, Status.OK, path=path, summary=summary, figures=figures,
            notes=(note, *unjudged),
        )  # fmt: skip
    if still:
        differing = ", ".join(f"{name!r} by up to {value:.3g}" for name, value in sorted(still.items()))
        note = f"use_deterministic_compute=True does not help: {differing} still differ(s) between its runs"
    else:
        note = "use_deterministic_compute=True makes every output stable across its runs"
    lines = []
    for name in names:
        inside, fresh = within.by_output.get(name, 0.0), across.by_output.get(name, 0.0)
        lines.append(
            f"  output {name!r}: differs by up to {max(inside, fresh):.3g} (within the session {inside:.3g}, "
            f"against a fresh session {fresh:.3g}; tolerance {tolerance:g})"
        )
    message = "\n".join(
        [
            f"determinism of {key.shown}: FAILED: {len(names)} output(s) differ between runs on the same "
            f"inputs ({path})",
            *lines,
            f"  {note}",
            *(f"  {line}" for line in unjudged),
        ]
    )
    summary = f"{len(names)} of {len(within.by_output)} output(s) differ"
    return KindResult(
        key, DETERMINISM, Status.FAILED, path=path, summary=summary, figures=figures,
        notes=(note, *unjudged), failed=True, message=message,
    )  # fmt: skip
