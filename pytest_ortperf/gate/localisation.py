"""Where an accuracy failure starts: the first tensor, in graph order, where the model under test and
a reference model diverge beyond the failing output's tolerance (``ort/divergence.py`` finds it), as
one more section of the failure. Against stored outputs alone there is no second model to run, and
the section says so and why. For a precision variant, the activations that lost the most against the
fp32 model it was built from (``ort/quant_debug.py``). ``Localiser`` is the run's
``gate/services.py: Localising``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from pytest_ortperf.accuracy.metrics import compare_output
from pytest_ortperf.accuracy.tolerances import Tolerance, ToleranceSpec
from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.ort.inputs import Array
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.sessions import BuiltSession

if TYPE_CHECKING:
    from pytest_ortperf.gate.services import FromFp32

TITLE = "where the two sides start to diverge"


def failing_output(result: AccuracyResult) -> str:
    """The first output that failed, whose tolerance judges the tensors before it ("" when none)."""
    for outcome in result.references:
        for comparison in outcome.comparisons:
            if not comparison.ok:
                return comparison.name
    return ""


def located(
    result: AccuracyResult,
    built: BuiltSession,
    reference: ModelSource | None,
    why: str,
    inputs: Mapping[str, Array],
    tolerances: ToleranceSpec,
) -> AccuracyResult:
    """A failed result with the first diverging tensor against ``reference`` (None: why it cannot be
    located). A result that did not fail is returned as it is: locating costs a run of each model with
    every intermediate tensor kept, paid by failures only."""
    output = failing_output(result)
    if not result.failed or not output:
        return result
    if reference is None:
        return with_section(result, TITLE, [f"not located: {why}"])
    from pytest_ortperf.ort.divergence import first_divergence  # onnx and a second session: on failure only

    provider, variant = built.variant.provider_spec.short, built.variant.id

    def diverges(name: str, actual: Array, expected: Array) -> str:
        tolerance = tolerances.for_output(output, actual.dtype, provider, variant)
        if within(actual, expected, tolerance):
            return ""  # every element within its tolerance: no whole-tensor metric can fail it
        comparison = compare_output(name, actual, expected, tolerance, "reference")
        if comparison.ok:
            return ""
        what = comparison.failed_metric or comparison.problem
        outside = f", {comparison.mismatches} of {comparison.count} outside" if comparison.count else ""
        return f"{what}: max |diff| {comparison.max_abs:.3g}{outside} ({tolerance.describe()}, '{output}''s)"

    try:
        found = first_divergence(built.model, reference, inputs, diverges=diverges)
    except OrtperfError as exc:
        return with_section(result, TITLE, [f"not available ({exc})"])
    return with_section(result, TITLE, [found.describe()])


class Localiser:
    """Where a failure of one test instance's session (``built``) starts, judged by its
    ``tolerances``: the run's ``gate/services.py: Localising``, made with its ``CheckContext``."""

    def __init__(self, built: BuiltSession, tolerances: ToleranceSpec) -> None:
        self._built = built
        self._tolerances = tolerances

    def precision_lost(
        self, result: AccuracyResult, made: FromFp32, inputs: Mapping[str, Array]
    ) -> AccuracyResult:
        """A failed precision variant, with the activations that lost the most against its fp32 model
        on the same inputs (``ort/quant_debug.py``): where to keep a layer in fp32, or calibrate."""
        if not any(outcome.failed for outcome in result.references):
            return result  # passed, or failed for want of a baseline: the outputs did not drift
        from pytest_ortperf.ort.quant_debug import worst_tensors  # onnxruntime's debug tools: on failure only

        built = self._built
        precision = built.variant.precision.value
        title = f"tensors of the {precision} model that lost the most (SQNR against fp32)"
        try:
            losses = worst_tensors(made[0], built.model, inputs)
        except OrtperfError as exc:
            return with_section(result, title, [f"not available ({exc})"])
        listed = [f"{loss.name!r}: {loss.sqnr_db:.1f} dB" for loss in losses]
        calibration = made[1]
        if calibration is not None:
            weak = ", a weak stand-in for real data" if calibration.synthetic else ""
            listed.append(f"(calibrated on {calibration.source}{weak})")
        # One case of locating a failure: against the fp32 model it was built from.
        return with_section(result, title, listed)

    def located(
        self, result: AccuracyResult, reference: ModelSource | None, why: str, inputs: Mapping[str, Array]
    ) -> AccuracyResult:
        """:func:`located`, for this instance's session and tolerances."""
        return located(result, self._built, reference, why, inputs, self._tolerances)


def within(actual: Array, expected: Array, tolerance: Tolerance) -> bool:
    """Whether every element of two same-shaped numeric tensors lies within ``tolerance``'s element
    limits (NaN where NaN): the cheap test that clears most tensors before a divergence, where the
    full comparison (cosine, SQNR, histograms) is paid only for the tensors that fail it."""
    if actual.shape != expected.shape or actual.dtype != expected.dtype or actual.dtype.kind not in "fiu":
        return False
    return bool(np.allclose(actual, expected, atol=tolerance.atol, rtol=tolerance.rtol, equal_nan=True))


def with_section(result: AccuracyResult, title: str, lines: list[str]) -> AccuracyResult:
    """The result with one more explanation, also as a section at the end of its message."""
    section = "\n".join([f"  {title}:", *(f"    {line}" for line in lines)])
    return replace(
        result,
        explanations=(*result.explanations, (title, tuple(lines))),
        message=f"{result.message}\n{section}" if result.message else result.message,
    )
