"""Output metrics and tolerances: compare_output(s), ToleranceSpec and parse_tolerance_values."""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from pytest_ortperf.accuracy.metrics import compare_output, compare_outputs
from pytest_ortperf.accuracy.tolerances import (
    DTYPE_TOLERANCES,
    EXACT,
    PROVIDER_TOLERANCES,
    Tolerance,
    ToleranceSpec,
    parse_tolerance_values,
)
from pytest_ortperf.errors import UsageError

F32 = DTYPE_TOLERANCES["float32"]
LIMITS_F32 = "atol=1e-05, rtol=0.0001, cosine>=0.99999"


def f32(values: Any) -> np.ndarray[Any, Any]:
    return np.asarray(values, dtype=np.float32)


def scores(shape: tuple[int, ...], seed: int = 0) -> np.ndarray[Any, Any]:
    """Class scores with well separated values (no ties), float32."""
    values = np.random.default_rng(seed).permutation(int(np.prod(shape))).astype(np.float32)
    return values.reshape(shape)


# compare_output: metrics --------------------------------------------------


def test_identical_arrays_are_ok_with_zero_errors() -> None:
    expected = f32([[1.0, -2.0, 0.5], [4.0, 3.0, -0.25]])
    result = compare_output("y", expected.copy(), expected, F32, "baseline")
    assert result.ok
    assert (result.problem, result.failed_metric) == ("", "")
    assert result.count == 6
    assert (result.max_abs, result.max_rel, result.mean_abs, result.mismatches) == (0.0, 0.0, 0.0, 0)
    assert result.mismatch_fraction == 0.0
    assert result.cosine == pytest.approx(1.0, abs=1e-12)
    assert (result.top1, result.topk) == (None, None)
    assert result.describe().startswith("output 'y': ok (max abs 0, max rel 0, mean abs 0, ")
    assert "0 of 6 elements outside tolerance (0.00%)" in result.describe()


def test_a_large_change_where_the_reference_is_zero_is_a_failure_not_an_overflow_warning() -> None:
    # After a Relu many reference values are exactly 0; any difference over them divides by ~1e-308.
    expected = f32([0.0, 0.0, 1.0])
    actual = f32([5.0, 0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as under -W error: a RuntimeWarning would crash the check
        result = compare_output("y", actual, expected, F32, "baseline")
    assert not result.ok
    assert result.max_abs == 5.0
    assert result.max_rel == 5.0 / (F32.atol / F32.rtol)  # relative to the floor, not to 0
    assert result.mismatches == 1


# relative error: a floor where the reference is zero or tiny ---------------------------------


def test_relative_error_over_zeros_is_relative_to_atol_over_rtol_not_to_the_smallest_float() -> None:
    """An output that is mostly 0 (after a Relu): a 1e-3 change of a 0 reads as 1% of the floor
    (atol/rtol = 0.1 for float32), not as 4.69e+304."""
    expected = f32([0.0, 0.0, 2.0, 0.0])
    actual = f32([0.0, 1e-3, 2.0, 0.0])
    result = compare_output("y", actual, expected, F32, "baseline")
    assert result.max_rel == pytest.approx(float(np.float32(1e-3)) / 0.1, rel=1e-12)
    assert "max rel 0.01," in result.describe()
    assert "e+" not in result.describe()
    assert result.failed_metric == "isclose"  # 1e-3 > atol: the verdict is isclose's, as before


@pytest.mark.parametrize("tolerance", [F32, DTYPE_TOLERANCES["float16"], Tolerance(1e-3, 1e-1, 0.9)])
def test_with_the_floor_an_element_fails_only_beyond_rtol_and_passes_within_it(tolerance: Tolerance) -> None:
    """rel <= rtol means within atol + rtol*|expected|; outside it, rel > rtol: max rel reads against rtol."""
    rng = np.random.default_rng(3)
    expected = rng.normal(0.0, 1.0, 4000) * (rng.random(4000) < 0.5)  # half exact zeros
    expected = np.concatenate([expected, rng.normal(0.0, tolerance.atol / tolerance.rtol, 4000)])
    actual = (
        expected
        + rng.normal(0.0, tolerance.atol * 2, expected.size)
        + expected * rng.normal(0.0, tolerance.rtol, expected.size)
    )
    for i in range(expected.size):
        one = compare_output("y", actual[i : i + 1], expected[i : i + 1], tolerance, "ref")
        if one.mismatches:
            assert one.max_rel > tolerance.rtol
        if one.max_rel <= tolerance.rtol:
            assert one.mismatches == 0
    whole = compare_output("y", actual, expected, tolerance, "ref")
    assert 0 < whole.mismatches < expected.size  # both kinds of element were tried
    assert tolerance.rtol < whole.max_rel < 50 * tolerance.rtol  # of the order of rtol, zeros included


def test_without_rtol_the_floor_is_the_outputs_resolution() -> None:
    tolerance = Tolerance(atol=1e-3, rtol=0.0, cosine=0.9)
    expected = f32([0.0, 100.0])
    result = compare_output("y", f32([1e-4, 100.0]), expected, tolerance, "ref")
    assert result.ok
    resolution = float(np.finfo(np.float32).eps) * 100.0
    assert result.max_rel == pytest.approx(float(np.float32(1e-4)) / resolution, rel=1e-9)


def test_integers_are_relative_to_at_least_one() -> None:
    result = compare_output("ids", np.array([2, 5]), np.array([0, 5]), EXACT, "ref")
    assert result.failed_metric == "isclose"
    assert result.max_rel == 2.0


def test_with_atol_zero_a_changed_zero_is_infinitely_far_as_the_tolerance_says() -> None:
    tolerance = Tolerance(atol=0.0, rtol=1e-3, cosine=0.9)
    result = compare_output("y", f32([1e-6, 1.0]), f32([0.0, 1.0]), tolerance, "ref")
    assert result.failed_metric == "isclose"
    assert result.max_rel == float("inf")


def test_a_one_percent_scaled_output_fails_on_isclose_with_the_right_numbers() -> None:
    expected = f32([[1.0, -2.0, 0.5], [4.0, 3.0, -0.25]])
    actual = expected * np.float32(1.01)
    # Independently: every element moves by 1% of itself, the largest magnitude the most.
    diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    rel = diff / np.abs(expected.astype(np.float64))
    result = compare_output("y", actual, expected, F32, "baseline (recorded 2025-01-02)")
    assert not result.ok
    assert result.failed_metric == "isclose"
    assert result.problem == ""
    assert result.count == 6
    assert result.mismatches == 6
    assert result.mismatch_fraction == 1.0
    assert result.max_abs == pytest.approx(diff.max(), rel=1e-12)
    assert result.max_abs == pytest.approx(0.04, rel=1e-5)
    assert result.max_rel == pytest.approx(rel.max(), rel=1e-12)
    assert result.max_rel == pytest.approx(0.01, rel=1e-4)
    assert result.mean_abs == pytest.approx(diff.mean(), rel=1e-12)
    assert result.worst_index == (1, 0)
    assert result.worst_actual == float(actual[1, 0])
    assert result.worst_expected == 4.0
    assert result.cosine == pytest.approx(1.0, abs=1e-9)  # scaling keeps the direction: isclose catches it
    text = result.describe()
    assert text.startswith("output 'y': FAILED on isclose (")
    assert f"max abs {diff.max():.3g}, max rel {rel.max():.3g}, mean abs {diff.mean():.3g}" in text
    assert "6 of 6 elements outside tolerance (100.00%)" in text
    assert f"worst at [1, 0]: actual {float(actual[1, 0]):.6g}, expected 4;" in text
    assert text.endswith(f"; {LIMITS_F32})")


@pytest.mark.parametrize(
    ("shift", "tolerance", "ok"),
    [
        pytest.param(5e-4, Tolerance(atol=1e-3, rtol=0.0, cosine=0.9), True, id="within-atol"),
        pytest.param(2e-3, Tolerance(atol=1e-3, rtol=0.0, cosine=0.9), False, id="beyond-atol"),
        pytest.param(5e-3, Tolerance(atol=0.0, rtol=1e-2, cosine=0.9), True, id="within-rtol"),
        pytest.param(5e-3, Tolerance(atol=0.0, rtol=1e-3, cosine=0.9), False, id="beyond-rtol"),
    ],
)
def test_atol_and_rtol_decide(shift: float, tolerance: Tolerance, ok: bool) -> None:
    expected = f32([0.5, 0.75, 0.9, 1.0])  # |expected| <= 1, so a shift below rtol*|e| needs rtol
    if tolerance.rtol:
        actual = (expected.astype(np.float64) * (1 + shift)).astype(np.float32)
    else:
        actual = (expected.astype(np.float64) + shift).astype(np.float32)
    result = compare_output("y", actual, expected, tolerance, "ref")
    assert result.ok is ok, result.describe()
    assert result.mismatches == (0 if ok else 4)
    assert result.failed_metric == ("" if ok else "isclose")


@pytest.mark.parametrize(("mismatch", "ok"), [(0.25, True), (0.2, False)])
def test_a_mismatch_fraction_allows_some_elements_outside(mismatch: float, ok: bool) -> None:
    expected = f32([1.0, 2.0, 3.0, 4.0])
    actual = f32([1.0, 2.0, 3.5, 4.0])
    result = compare_output("y", actual, expected, Tolerance(1e-5, 1e-4, 0.9, mismatch), "ref")
    assert result.mismatches == 1
    assert result.mismatch_fraction == 0.25
    assert result.ok is ok
    assert result.worst_index == (2,)
    assert (result.worst_actual, result.worst_expected) == (3.5, 3.0)
    assert f"cosine>=0.9, mismatch<={mismatch:g})" in result.describe()


def test_cosine_judges_what_a_mismatch_allowance_lets_through() -> None:
    expected = f32([1.0, 0.0, 1.0, 0.0])
    actual = f32([1.0, 0.1, 1.0, -0.1])
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    cosine = float(a @ e / (np.linalg.norm(a) * np.linalg.norm(e)))
    assert cosine < 0.9999
    allowing = Tolerance(atol=0.05, rtol=0.0, cosine=0.9999, mismatch=0.5)
    result = compare_output("emb", actual, expected, allowing, "ref")
    assert result.mismatches == 2  # half the elements outside, as many as the allowance lets through
    assert result.failed_metric == "cosine"
    assert result.cosine == pytest.approx(cosine, rel=1e-9)
    text = result.describe()
    assert text.startswith("output 'emb': FAILED on cosine (")
    assert f"cosine {cosine:.6f}" in text
    assert text.endswith("atol=0.05, rtol=0, cosine>=0.9999, mismatch<=0.5)")
    loose = compare_output("emb", actual, expected, replace(allowing, cosine=0.99), "ref")
    assert loose.ok


def test_cosine_does_not_fail_an_output_whose_every_element_is_within_tolerance() -> None:
    expected = f32([1.0, 0.0, 1.0, 0.0])
    actual = f32([1.0, 0.1, 1.0, -0.1])
    result = compare_output("emb", actual, expected, Tolerance(atol=0.2, rtol=0.0, cosine=0.9999), "ref")
    assert result.mismatches == 0
    assert result.ok, result.describe()
    assert result.unjudged == "every element within tolerance"
    assert "(1-cos 0.00496 > 0.0001, not judged: every element within tolerance)" in result.describe()


def test_new_nan_and_inf_fail_on_their_own_naming_the_count() -> None:
    expected = f32([1.0, 2.0, 3.0, 4.0])
    actual = f32([1.0, np.nan, np.inf, 4.0])
    # Even a tolerance that lets every element mismatch does not excuse new non-finite values.
    result = compare_output("y", actual, expected, Tolerance(1e-5, 1e-4, 0.0, mismatch=1.0), "ref")
    assert result.failed_metric == "nan/inf (2 new non-finite values)"
    assert result.mismatches == 2
    assert result.worst_index == (1,)
    assert np.isnan(result.worst_actual)
    assert result.worst_expected == 2.0
    assert "FAILED on nan/inf (2 new non-finite values)" in result.describe()


def test_nan_in_both_at_the_same_place_is_not_a_mismatch() -> None:
    expected = f32([1.0, np.nan, 3.0])
    result = compare_output("y", expected.copy(), expected, F32, "ref")
    assert result.ok, result.describe()
    assert (result.mismatches, result.max_abs, result.mean_abs) == (0, 0.0, 0.0)


def test_nan_that_moved_is_new_and_a_lost_nan_is_a_mismatch() -> None:
    moved = compare_output("y", f32([1.0, 2.0, np.nan]), f32([1.0, np.nan, 3.0]), F32, "ref")
    assert moved.failed_metric == "nan/inf (1 new non-finite values)"
    lost = compare_output("y", f32([1.0, 2.0, 3.0]), f32([1.0, np.nan, 3.0]), F32, "ref")
    assert lost.failed_metric == "isclose"
    assert lost.mismatches == 1
    assert lost.worst_index == (1,)


@pytest.mark.parametrize(
    "values",
    [pytest.param([1.0, -np.inf, 2.0], id="inf-in-both"), pytest.param([np.nan, np.nan], id="all-nan")],
)
def test_matching_non_finite_values_compare_quietly(values: list[float]) -> None:
    expected = f32(values)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compare_output("logp", expected.copy(), expected, F32, "ref")
    assert result.ok
    assert result.max_abs == 0.0


def test_a_shape_change_is_a_problem_naming_both_shapes() -> None:
    result = compare_output("y", np.zeros((1, 5), np.float32), np.zeros((1, 4), np.float32), F32, "ref")
    assert not result.ok
    assert result.problem == "shape changed: [1, 4] -> [1, 5]"
    assert result.describe() == "output 'y': shape changed: [1, 4] -> [1, 5]"


def test_a_dtype_change_is_a_problem_naming_both_dtypes() -> None:
    result = compare_output("y", np.zeros(4, np.float16), np.zeros(4, np.float32), F32, "ref")
    assert not result.ok
    assert result.problem == "dtype changed: float32 -> float16"
    assert result.describe() == "output 'y': dtype changed: float32 -> float16"


@pytest.mark.parametrize(
    ("dtype", "expected", "actual"),
    [
        (np.int64, [3, 1, 4], [3, 1, 5]),
        (np.int32, [-7, 0, 9], [-7, 1, 9]),
        (np.uint8, [0, 255, 7], [0, 254, 7]),
        (np.bool_, [True, False, True], [True, True, True]),
    ],
)
def test_integer_and_bool_outputs_are_compared_exactly(
    dtype: type[np.generic], expected: list[Any], actual: list[Any]
) -> None:
    e = np.array(expected, dtype)
    tolerance = ToleranceSpec({"atol": 10.0}).for_output("ids", e.dtype, "tensorrt")
    assert tolerance == EXACT  # documented: integers and booleans exact, whatever the overrides
    same = compare_output("ids", e.copy(), e, tolerance, "ref")
    assert same.ok
    assert same.cosine is None
    assert (same.top1, same.topk) == (None, None)
    off_by_one = compare_output("ids", np.array(actual, dtype), e, tolerance, "ref")
    assert off_by_one.failed_metric == "isclose"
    assert off_by_one.mismatches == 1
    assert "1 of 3 elements outside tolerance" in off_by_one.describe()


def test_large_int64_values_are_compared_exactly() -> None:
    expected = np.array([2**53], np.int64)
    result = compare_output("hash", expected + 1, expected, EXACT, "ref")
    assert not result.ok


def test_empty_outputs_are_ok_and_say_so() -> None:
    empty = np.zeros((0, 3), np.float32)
    result = compare_output("boxes", empty.copy(), empty, F32, "ref")
    assert result.ok
    assert result.count == 0
    assert result.cosine is None
    text = result.describe()
    assert "0 of 0 elements outside tolerance (0.00%)" in text
    assert "worst at" not in text


@pytest.mark.parametrize("shape", [(1, 1000), (1, 10)])
def test_class_scores_get_top1_and_top5(shape: tuple[int, ...]) -> None:
    expected = scores(shape)
    same = compare_output("prob", expected.copy(), expected, F32, "ref")
    assert (same.top1, same.topk) == (1.0, 1.0)
    flat = expected.ravel()
    order = np.argsort(-flat)
    swapped = flat.copy()
    swapped[order[0]], swapped[order[1]] = flat[order[1]], flat[order[0]]
    result = compare_output("prob", swapped.reshape(shape), expected, F32, "ref")
    assert result.top1 == 0.0
    assert result.topk == 1.0  # the same five classes, two of them swapped
    assert "top-1 agreement 0%, top-5 overlap 100%" in result.describe()
    dropped = flat.copy()
    dropped[order[0]] = flat.min() - 1  # the best class falls out of the top five
    result = compare_output("prob", dropped.reshape(shape), expected, F32, "ref")
    assert result.top1 == 0.0
    assert result.topk == pytest.approx(0.8)


def test_class_agreement_is_per_row_of_a_batch() -> None:
    expected = scores((4, 20))
    actual = expected.copy()
    row = actual[2]
    order = np.argsort(-row)
    row[order[0]], row[order[1]] = row[order[1]], row[order[0]]
    result = compare_output("prob", actual, expected, F32, "ref")
    assert result.top1 == 0.75
    assert result.topk == 1.0


@pytest.mark.parametrize(
    "expected",
    [
        pytest.param(scores((1, 9)), id="too-few-classes"),
        pytest.param(scores((1, 3, 8, 8)), id="image"),
        pytest.param(np.arange(20, dtype=np.int64).reshape(1, 20), id="integers"),
        pytest.param(scores((1,)), id="scalar-like"),
    ],
)
def test_outputs_that_are_not_class_scores_get_no_agreement(expected: np.ndarray[Any, Any]) -> None:
    result = compare_output("y", expected.copy(), expected, F32, "ref")
    assert (result.top1, result.topk) == (None, None)
    assert "top-1" not in result.describe()


# ToleranceSpec.for_output ----------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        (np.float32, Tolerance(atol=1e-5, rtol=1e-4, cosine=0.99999)),
        (np.float16, Tolerance(atol=1e-3, rtol=1e-2, cosine=0.999)),
        (np.float64, Tolerance(atol=1e-9, rtol=1e-7, cosine=0.999999)),
    ],
)
def test_defaults_follow_the_dtype(dtype: type[np.floating[Any]], expected: Tolerance) -> None:
    assert ToleranceSpec().for_output("y", np.dtype(dtype), "cpu") == expected


def test_reduced_precision_providers_get_looser_floors() -> None:
    spec = ToleranceSpec()
    cpu = spec.for_output("y", np.dtype(np.float32), "cpu")
    trt = spec.for_output("y", np.dtype(np.float32), "tensorrt")
    cuda = spec.for_output("y", np.dtype(np.float32), "cuda")
    assert trt == Tolerance(atol=1e-3, rtol=1e-2, cosine=0.999)
    assert cuda == Tolerance(atol=1e-4, rtol=1e-3, cosine=0.9999)
    assert trt.atol > cuda.atol > cpu.atol
    assert trt.rtol > cuda.rtol > cpu.rtol
    assert trt.cosine < cuda.cosine < cpu.cosine
    for short in ("trtrtx", "dml", "coreml"):
        assert spec.for_output("y", np.dtype(np.float32), short) == PROVIDER_TOLERANCES[short]


def test_a_floor_never_tightens_and_float64_is_not_loosened() -> None:
    spec = ToleranceSpec()
    # float16 defaults are already as loose as CUDA's floor: the looser of the two wins.
    assert spec.for_output("y", np.dtype(np.float16), "cuda") == DTYPE_TOLERANCES["float16"]
    assert spec.for_output("y", np.dtype(np.float64), "tensorrt") == DTYPE_TOLERANCES["float64"]


def test_overall_overrides_replace_the_defaults_after_the_floor() -> None:
    spec = ToleranceSpec({"atol": 1e-6, "mismatch": 0.01})
    assert spec.for_output("y", np.dtype(np.float32), "tensorrt") == Tolerance(
        atol=1e-6, rtol=1e-2, cosine=0.999, mismatch=0.01
    )


def test_per_output_overrides_win_over_overall_ones() -> None:
    spec = ToleranceSpec({"atol": 0.5, "rtol": 0.2}, {"logits": {"atol": 0.01, "cosine": 0.9}})
    dtype = np.dtype(np.float32)
    assert spec.for_output("logits", dtype, "cpu") == Tolerance(atol=0.01, rtol=0.2, cosine=0.9)
    assert spec.for_output("other", dtype, "cpu") == Tolerance(atol=0.5, rtol=0.2, cosine=0.99999)


def test_merged_lets_the_other_spec_win_without_mutating_either() -> None:
    first = ToleranceSpec({"atol": 1.0, "rtol": 2.0}, {"y": {"atol": 3.0, "cosine": 0.5}})
    second = ToleranceSpec({"rtol": 4.0}, {"y": {"atol": 5.0}, "z": {"rtol": 6.0}})
    merged = first.merged(second)
    assert merged == ToleranceSpec(
        {"atol": 1.0, "rtol": 4.0}, {"y": {"atol": 5.0, "cosine": 0.5}, "z": {"rtol": 6.0}}
    )
    assert first == ToleranceSpec({"atol": 1.0, "rtol": 2.0}, {"y": {"atol": 3.0, "cosine": 0.5}})
    assert second == ToleranceSpec({"rtol": 4.0}, {"y": {"atol": 5.0}, "z": {"rtol": 6.0}})
    # A per-output value of the first spec still beats an overall value of the second.
    assert ToleranceSpec({}, {"y": {"atol": 3.0}}).merged(ToleranceSpec({"atol": 9.0})).for_output(
        "y", np.dtype(np.float32), "cpu"
    ).atol == pytest.approx(3.0)


# parse_tolerance_values ------------------------------------------------------


def test_parse_tolerance_values_accepts_numbers_and_numeric_text() -> None:
    parsed = parse_tolerance_values(
        {"atol": 1e-3, "rtol": "0.01", "cosine": 1, "mismatch": 0}, source="--ortperf-tolerances"
    )
    assert parsed == {"atol": 1e-3, "rtol": 0.01, "cosine": 1.0, "mismatch": 0.0}
    assert all(type(v) is float for v in parsed.values())


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"atoll": 1.0},
            "ort_thresholds: unknown tolerance 'atoll'; use atol, rtol, cosine, mismatch, sqnr.",
        ),
        ({"atol": -1e-3}, "ort_thresholds: atol must be a number >= 0, got -0.001."),
        ({"rtol": float("nan")}, "ort_thresholds: rtol must be a number >= 0, got nan."),
        ({"rtol": float("inf")}, "ort_thresholds: rtol must be a number >= 0, got inf."),
        ({"atol": True}, "ort_thresholds: atol must be a number >= 0, got True."),
        ({"atol": "abc"}, "ort_thresholds: atol must be a number >= 0, got 'abc'."),
        ({"atol": None}, "ort_thresholds: atol must be a number >= 0, got None."),
        ({"cosine": 1.5}, "ort_thresholds: cosine must be a number between 0 and 1, got 1.5."),
        ({"cosine": -0.1}, "ort_thresholds: cosine must be a number between 0 and 1, got -0.1."),
    ],
)
def test_parse_tolerance_values_rejects_bad_values_naming_the_source(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError) as info:
        parse_tolerance_values(values, source="ort_thresholds")
    assert str(info.value) == message


@pytest.mark.parametrize(("value", "expected"), [(0.001, 0.001), ("0.1%", 0.001), (1, 1.0), ("100%", 1.0)])
def test_mismatch_is_a_fraction_or_a_percentage(value: Any, expected: float) -> None:
    assert parse_tolerance_values({"mismatch": value}, source="x") == {"mismatch": pytest.approx(expected)}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"mismatch": 5},
            "ort_thresholds: mismatch: did you mean 5%? A bare number is a fraction (0.05 means 5%), so 5 would "
            "mean 500%; write '5%', or '500%' if you meant that.",
        ),
        (
            {"mismatch": "150%"},
            "ort_thresholds: mismatch must be a fraction between 0 and 1 or a percentage such as '0.1%', "
            "got '150%'.",
        ),
        (
            {"mismatch": "-1%"},
            "ort_thresholds: mismatch must be a fraction between 0 and 1 or a percentage such as '0.1%', "
            "got '-1%'.",
        ),
    ],
)
def test_mismatch_refuses_bare_numbers_above_one_and_shares_above_all(
    values: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError) as info:
        parse_tolerance_values(values, source="ort_thresholds")
    assert str(info.value) == message


@pytest.mark.parametrize("key", ["atol", "rtol"])
def test_atol_and_rtol_are_plain_numbers_where_above_one_is_legitimate(key: str) -> None:
    """isclose's atol and rtol are not percentages: rtol=5 allows five times |expected|, as numpy reads it."""
    assert parse_tolerance_values({key: 5}, source="x") == {key: 5.0}
    with pytest.raises(UsageError, match=f"{key} must be a number >= 0, got '5%'"):
        parse_tolerance_values({key: "5%"}, source="x")


# compare_outputs ---------------------------------------------------------------


def test_compare_outputs_compares_every_expected_output_and_flags_missing_and_new_ones() -> None:
    y = f32([[1.0, 2.0, 3.0]])
    expected = {"y": y, "ids": np.array([1, 2], np.int64), "gone": f32([0.0])}
    actual = {"ids": np.array([1, 3], np.int64), "y": y * np.float32(1.005), "extra": f32([1.0])}
    results = compare_outputs(
        actual,
        expected,
        reference="variant cpu-disabled",
        tolerances=ToleranceSpec(),
        provider_short="tensorrt",
    )
    assert [(r.name, r.ok) for r in results] == [
        ("y", True),
        ("ids", False),
        ("gone", False),
        ("extra", False),
    ]
    by_name = {r.name: r for r in results}
    assert all(r.reference == "variant cpu-disabled" for r in results)
    assert by_name["y"].tolerance == PROVIDER_TOLERANCES["tensorrt"]  # 0.5% passes under TensorRT's rtol
    assert by_name["ids"].tolerance == EXACT
    assert by_name["ids"].failed_metric == "isclose"
    assert by_name["gone"].problem == "output missing from the model now"
    assert by_name["gone"].describe() == "output 'gone': output missing from the model now"
    assert by_name["extra"].problem == "new output, not in the reference"
    assert by_name["extra"].describe() == "output 'extra': new output, not in the reference"


def test_compare_outputs_applies_per_output_tolerances() -> None:
    expected = {"a": f32([1.0, 2.0]), "b": f32([1.0, 2.0])}
    actual = {"a": f32([1.05, 2.0]), "b": f32([1.05, 2.0])}
    results = compare_outputs(
        actual,
        expected,
        reference="ref",
        tolerances=ToleranceSpec({}, {"a": {"atol": 0.1, "cosine": 0.99}}),
        provider_short="cpu",
    )
    assert [(r.name, r.ok, r.failed_metric) for r in results] == [("a", True, ""), ("b", False, "isclose")]
    assert results[0].tolerance.atol == pytest.approx(0.1)


# cosine in the message: a failing value is visibly past its limit ---------------


def _with_cosine(cosine: float) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Two unit vectors whose cosine similarity is ``cosine`` (to float64 precision)."""
    angle = np.arccos(cosine)
    return np.array([np.cos(angle), np.sin(angle)]), np.array([1.0, 0.0])


@pytest.mark.parametrize(
    ("cosine", "shown"),
    [
        pytest.param(0.9999899, "cosine 0.999990 (1-cos 1.01e-05 > 1e-05 allowed)", id="just-below"),
        pytest.param(0.99999 - 1e-11, "(1-cos 1.000001e-05 > 1e-05 allowed)", id="a-hair-below"),
    ],
)
def test_a_failing_cosine_prints_visibly_past_its_limit(cosine: float, shown: str) -> None:
    actual, expected = _with_cosine(cosine)
    whole = Tolerance(atol=0.0, rtol=0.0, cosine=0.99999, mismatch=1.0)  # judged as a whole, as int8 is
    result = compare_output("emb", actual, expected, whole, "ref")
    assert result.failed_metric == "cosine"
    assert shown in result.describe()


def test_a_cosine_at_its_limit_passes_and_prints_no_excess() -> None:
    actual, expected = _with_cosine(0.99999 + 1e-12)
    result = compare_output("emb", actual, expected, Tolerance(atol=1.0, rtol=0.0, cosine=0.99999), "ref")
    assert result.ok, result.describe()
    assert "allowed" not in result.describe()
    assert "(1-cos 9.999999e-06)" in result.describe()  # as many digits as tell it from 1e-05


# selectors: per dtype, per variant, per output ----------------------------------


def test_selectors_apply_most_specific_first() -> None:
    spec = ToleranceSpec(
        {"atol": 1.0},
        outputs={"logits": {"atol": 5.0}},
        dtypes={"float16": {"atol": 2.0, "rtol": 0.2}},
        variants={"cuda": {"atol": 3.0}, "cuda-all": {"atol": 4.0}},
    )
    f16, f32_ = np.dtype(np.float16), np.dtype(np.float32)
    assert spec.for_output("y", f32_, "cpu", "cpu-all").atol == 1.0
    assert spec.for_output("y", f16, "cpu", "cpu-all") == Tolerance(atol=2.0, rtol=0.2, cosine=0.999)
    assert spec.for_output("y", f16, "cuda", "cuda-basic").atol == 3.0
    assert spec.for_output("y", f16, "cuda", "cuda-all") == Tolerance(atol=4.0, rtol=0.2, cosine=0.999)
    assert spec.for_output("logits", f16, "cuda", "cuda-all").atol == 5.0
    # Integers stay exact whatever is set.
    assert spec.for_output("y", np.dtype(np.int64), "cuda", "cuda-all") == EXACT


def test_a_variant_selector_does_not_touch_other_variants_floors() -> None:
    spec = ToleranceSpec(variants={"cpu": {"rtol": 1e-6}})
    assert spec.for_output("y", np.dtype(np.float32), "cpu", "cpu-all").rtol == 1e-6
    assert spec.for_output("y", np.dtype(np.float32), "cuda", "cuda-all") == PROVIDER_TOLERANCES["cuda"]


def test_merged_merges_every_scope() -> None:
    first = ToleranceSpec(dtypes={"float16": {"atol": 1.0}}, variants={"cuda": {"rtol": 1.0}})
    second = ToleranceSpec(dtypes={"float16": {"rtol": 2.0}}, variants={"cuda": {"rtol": 3.0}})
    merged = first.merged(second)
    assert merged.dtypes == {"float16": {"atol": 1.0, "rtol": 2.0}}
    assert merged.variants == {"cuda": {"rtol": 3.0}}


def test_tolerance_lines_parse_every_scope() -> None:
    from pytest_ortperf.accuracy.tolerances import parse_tolerance_lines

    spec = parse_tolerance_lines(
        [
            "atol=1e-4",
            "logits.rtol=1e-3",
            "encoder.layer.0.out.atol=0.5",  # output names may hold dots: the metric follows the last
            "output:dtype:odd.atol=0.25",  # an output whose name starts like a scope
            "onnx::Add_3.atol=0.125",  # '::' in output names is not a scope
            "dtype:float16.atol=1e-2",
            "variant:cuda.rtol=1e-3",
            "variant:CUDAExecutionProvider.cosine=0.99",
            "variant:cuda-all.atol=2e-3",
            "variant:tensorrt-extended.mismatch=0.01",
        ],
        source="--ortperf-tolerances",
    )
    assert spec.overall == {"atol": 1e-4}
    assert spec.outputs == {
        "logits": {"rtol": 1e-3},
        "encoder.layer.0.out": {"atol": 0.5},
        "dtype:odd": {"atol": 0.25},
        "onnx::Add_3": {"atol": 0.125},
    }
    assert spec.dtypes == {"float16": {"atol": 1e-2}}
    assert spec.variants == {
        "cuda": {"rtol": 1e-3, "cosine": 0.99},
        "cuda-all": {"atol": 2e-3},
        "tensorrt-extended": {"mismatch": 0.01},
    }


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("dtype:float16.atl=1", "--ortperf-tolerances: key 'dtype:float16.atl': unknown tolerance 'atl'"),
        ("dtype:flaot16.atol=1", "--ortperf-tolerances: key 'dtype:flaot16.atol': unknown dtype 'flaot16'"),
        (
            "dtype:int64.atol=1",
            "key 'dtype:int64.atol': unknown dtype 'int64'; use float16, float32, float64",
        ),
        (
            "variant:cdua.rtol=1",
            "--ortperf-tolerances: key 'variant:cdua.rtol': unknown execution provider 'cdua'",
        ),
        ("variant:cuda-fast.rtol=1", "key 'variant:cuda-fast.rtol': unknown graph optimization level 'fast'"),
        ("variant:.rtol=1", "--ortperf-tolerances: key 'variant:.rtol': an empty variant."),
        (".atol=1", "--ortperf-tolerances: key '.atol': an empty output name."),
        ("dtype:float16=1", "key 'dtype:float16': unknown tolerance 'dtype:float16'"),
        ("dtype:float16.atol=-1", "--ortperf-tolerances (dtype:float16): atol must be a number >= 0"),
        (
            "variant:cuda.cosine=2",
            "--ortperf-tolerances (variant:cuda): cosine must be a number between 0 and 1",
        ),
    ],
)
def test_bad_tolerance_keys_name_the_option_and_the_key(line: str, message: str) -> None:
    from pytest_ortperf.accuracy.tolerances import parse_tolerance_lines

    with pytest.raises(UsageError) as info:
        parse_tolerance_lines([line], source="--ortperf-tolerances")
    assert message in str(info.value)


# ort_thresholds markers -----------------------------------------------------------


def test_marker_tolerances_reach_every_output_and_the_closest_marker_wins() -> None:
    from pytest_ortperf.checks.policy import CheckPolicy
    from pytest_ortperf.plugin.configure import thresholds_for

    base = ToleranceSpec({"atol": 0.5}, {"y": {"rtol": 0.5}})
    farthest: tuple[tuple[Any, ...], dict[str, Any]] = (
        (),
        {"atol": 1e-3, "rtol": 1e-2, "cosine": 0.9, "mismatch": 0.1, "latency": "20%"},
    )
    closest: tuple[tuple[Any, ...], dict[str, Any]] = ((), {"rtol": 0.05, "cosine": 0.99})
    policy, spec = thresholds_for(CheckPolicy(), base, [farthest, closest], origin="ort_thresholds marker")
    assert spec.overall == {"atol": 1e-3, "rtol": 0.05, "cosine": 0.99, "mismatch": 0.1}
    assert policy.threshold == pytest.approx(0.2)
    dtype = np.dtype(np.float32)
    assert spec.for_output("z", dtype, "cpu") == Tolerance(atol=1e-3, rtol=0.05, cosine=0.99, mismatch=0.1)
    # A per-output value from the option still beats a marker's value for every output.
    assert spec.for_output("y", dtype, "cpu").rtol == 0.5


def test_marker_dtypes_and_variants_are_checked_like_the_option() -> None:
    from pytest_ortperf.checks.policy import CheckPolicy
    from pytest_ortperf.plugin.configure import thresholds_for

    marker = (
        (),
        {"dtypes": {"float16": {"atol": 0.01}}, "variants": {"CUDAExecutionProvider": {"rtol": 0.001}}},
    )
    _, spec = thresholds_for(CheckPolicy(), ToleranceSpec(), [marker], origin="m")
    assert spec.dtypes == {"float16": {"atol": 0.01}}
    assert spec.variants == {"cuda": {"rtol": 0.001}}
    with pytest.raises(UsageError, match=r"m dtypes\['bf8'\]: unknown dtype 'bf8'; use float16"):
        thresholds_for(CheckPolicy(), ToleranceSpec(), [((), {"dtypes": {"bf8": {"atol": 1}}})], origin="m")
    with pytest.raises(UsageError, match=r"m: variants must map variants or providers to tolerances"):
        thresholds_for(CheckPolicy(), ToleranceSpec(), [((), {"variants": {"cuda": 1e-3}})], origin="m")


def test_errors_against_the_tolerance_are_counted_by_decade_and_the_worst_elements_kept_in_order() -> None:
    from pytest_ortperf.accuracy.metrics import ERROR_EDGES, TOLERANCE_BIN, WORST_KEPT

    tolerance = Tolerance(atol=1e-3, rtol=0.0, cosine=0.0, mismatch=1.0)
    expected = np.zeros((4, 5), np.float32)
    actual = expected.copy()
    actual[0, 1] = 5e-4  # half its tolerance: inside, bin of 0.1..1
    actual[1, 2] = 2e-3  # twice: outside, bin of 1..10
    actual[2, 3] = 5e-1  # 500 times: bin of 100..1000
    actual[3, 4] = 2e-6  # 0.002 of it: bin of 1e-3..1e-2
    comparison = compare_output("y", actual, expected, tolerance, "baseline")
    assert len(comparison.error_bins) == len(ERROR_EDGES) + 1
    assert sum(comparison.error_bins) == actual.size
    assert comparison.error_bins[0] == actual.size - 4  # exact elements
    assert comparison.error_bins[TOLERANCE_BIN - 1] == 1
    assert comparison.error_bins[TOLERANCE_BIN] == 1
    assert comparison.error_bins[TOLERANCE_BIN + 2] == 1
    assert comparison.error_bins[2] == 1
    # Outside the tolerance first (largest first), then inside by error; never an exact element.
    assert [index for index, _, _ in comparison.worst_elements] == [(2, 3), (1, 2), (0, 1), (3, 4)]
    assert len(comparison.worst_elements) <= WORST_KEPT
    assert compare_output("y", expected, expected, tolerance, "baseline").worst_elements == ()
