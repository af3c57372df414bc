"""Relative contracts as plain logic: parsing, the interval rule, agreement, the default contracts;
and the precision axis they name variants by."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_ortperf.accuracy.metrics import agreement, compare_output, sqnr_db
from pytest_ortperf.accuracy.tolerances import PRECISION_TOLERANCES, ToleranceSpec, parse_tolerance_lines
from pytest_ortperf.checks.contract_verdicts import (
    AGREEMENT,
    FASTER_THAN,
    Contract,
    Speedup,
    default_contracts,
    judge_agreement,
    judge_speedup,
    parse_contracts,
)
from pytest_ortperf.checks.status import Status
from pytest_ortperf.errors import UsageError
from pytest_ortperf.latency.decision import RatioEstimate
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.variants import (
    OptLevel,
    Precision,
    Variant,
    parse_precisions,
    parse_variant,
    split_precision,
    variant,
    variant_matrix,
)
from pytest_ortperf.store.keys import CheckKey

KEY = CheckKey("test_m.py", "test_x[cpu-all]", "cpu-all", "ci", "ortperf update")
CPU = resolve_provider("cpu", source="test")


def contract(bound: float = 1.3, other: str = "cpu-disabled") -> Contract:
    return Contract(FASTER_THAN, other, bound, "ort_expect marker of test_x")


# the precision axis -----------------------------------------------------------


def test_precisions_append_to_ids_and_fp32_keeps_todays_ids() -> None:
    matrix = variant_matrix(
        [CPU], [OptLevel.DISABLED, OptLevel.ALL], parse_precisions("fp32,int8-dynamic", source="t")
    )
    assert [v.id for v in matrix] == [
        "cpu-disabled",
        "cpu-disabled-int8-dynamic",
        "cpu-all",
        "cpu-all-int8-dynamic",
    ]
    assert variant("cpu-all-int8-static").fp32 == variant("cpu-all")
    assert variant("cpu-all-int8-static").precision.quantized
    assert not Precision.FP16.quantized


@pytest.mark.parametrize(
    ("text", "expected"),
    [("cpu-all-int8-dynamic", ("cpu-all", Precision.INT8_DYNAMIC)), ("cpu-all", ("cpu-all", Precision.FP32)),
     ("cuda-extended-fp16", ("cuda-extended", Precision.FP16)), ("fp16", ("fp16", Precision.FP32))],
)  # fmt: skip
def test_split_precision(text: str, expected: tuple[str, Precision]) -> None:
    assert split_precision(text) == expected


def test_bad_precisions_and_variant_ids_are_usage_errors_naming_the_source() -> None:
    with pytest.raises(
        UsageError, match=r"--ort-precisions: unknown precision 'int4'\. Valid precisions: fp32, fp16"
    ):
        parse_precisions("fp32,int4", source="--ort-precisions")
    with pytest.raises(UsageError, match="--ort-precisions: no precision given"):
        parse_precisions(" , ", source="--ort-precisions")
    with pytest.raises(UsageError, match=r"variant\('cpu'\): expected PROVIDER-LEVEL\[-PRECISION\]"):
        variant("cpu")
    with pytest.raises(UsageError, match="unknown graph optimization level 'fastest'"):
        parse_variant("cpu-fastest-int8-static", source="x")


# the interval rule --------------------------------------------------------------


@pytest.mark.parametrize(
    ("low", "high", "status", "failed"),
    [(1.05, 1.25, Status.FAILED, True),  # wholly below 1.3
     (1.30, 1.60, Status.OK, False),  # at or above: holds
     (1.20, 1.45, Status.INCONCLUSIVE, False)],  # straddles: passes, says what it could not resolve
)  # fmt: skip
def test_a_speedup_contract_fails_below_holds_above_and_is_inconclusive_across(
    low: float, high: float, status: Status, failed: bool
) -> None:
    speedup = Speedup((low + high) / 2, low, high, 0.99, 24)
    result = judge_speedup(KEY, contract(1.3), speedup)
    assert (result.status, result.failed) == (status, failed)
    assert "at least 1.3x as fast as cpu-disabled" in result.message
    assert f"CI {low:.2f}x .. {high:.2f}x, 24 rounds" in result.message
    assert result.message.endswith("(ort_expect marker of test_x).")
    if status is Status.INCONCLUSIVE:
        assert "could resolve neither 'below 1.3x' nor 'at least 1.3x'" in result.message


def test_a_speedup_is_the_inverse_of_the_current_over_other_ratio() -> None:
    speedup = Speedup.of(RatioEstimate(ratio=0.5, low=0.4, high=0.625, confidence=0.99), rounds=40)
    assert (speedup.value, speedup.low, speedup.high) == (2.0, 1.6, 2.5)


def test_agreement_is_decided_by_the_least_agreeing_output() -> None:
    agreeing = judge_agreement(
        KEY, Contract(AGREEMENT, "cpu-all", 0.99, "m"), {"logits": 1.0, "boxes": 0.995}
    )
    assert agreeing.status is Status.OK
    assert agreeing.agreement == 0.995
    short = judge_agreement(KEY, Contract(AGREEMENT, "cpu-all", 0.99, "m"), {"logits": 1.0, "boxes": 0.98})
    assert short.failed
    assert "output 'boxes' agrees on 0.98" in short.message


def test_agreement_never_drops_an_output_it_could_not_compare() -> None:
    """An output one variant gives and the other not agrees on nothing; one with no array on either
    side (absent, sparse) is named in the message, never dropped."""
    contract = Contract(AGREEMENT, "cpu-all", 0.99, "m")
    one_sided = judge_agreement(KEY, contract, {"label": 1.0}, one_sided=["probabilities"])
    assert one_sided.failed
    assert "output 'probabilities' agrees on 0 " in one_sided.message
    assert "'probabilities' 0 (given by one variant only)" in one_sided.message
    named = judge_agreement(KEY, contract, {"label": 1.0}, not_compared=["extra"])
    assert named.status is Status.OK
    assert "holds: 'label' 1; not compared: 'extra' (no array on either side)" in named.message
    nothing = judge_agreement(KEY, contract, {}, not_compared=["extra"])
    assert nothing.status is Status.ERROR
    assert "no output to compare; not compared: 'extra'" in nothing.message


def test_agreement_counts_rows_by_arg_max_and_other_outputs_by_tolerance() -> None:
    tolerance = PRECISION_TOLERANCES[Precision.FP16]
    scores = np.array([[0.1, 0.9], [0.8, 0.2], [0.4, 0.6], [0.3, 0.7]], np.float32)
    flipped = scores.copy()
    flipped[2] = [0.6, 0.4]
    assert agreement(flipped, scores, tolerance) == 0.75
    values = np.ones((4, 1), np.float32)  # one value per row: compared element by element
    assert agreement(values + np.array([[0], [0], [0], [1]], np.float32), values, tolerance) == 0.75
    assert agreement(np.arange(4), np.array([0, 1, 2, 4]), tolerance) == 0.75
    assert agreement(values[:3], values, tolerance) == 0.0  # another shape agrees nowhere


# parsing --------------------------------------------------------------------------


def test_contracts_parse_from_the_marker_values() -> None:
    parsed = parse_contracts(
        {"cpu-disabled": 1.3}, {"cpu-all": 0.99}, source="m", check_id=lambda t, source: t
    )
    assert parsed == (
        Contract(FASTER_THAN, "cpu-disabled", 1.3, "m"),
        Contract(AGREEMENT, "cpu-all", 0.99, "m"),
    )


@pytest.mark.parametrize(
    ("faster", "agree", "message"),
    [(1.3, None, r"m: faster_than takes a dict of variant id to speedup"),
     ({"cpu-disabled": 0}, None, r"m: faster_than\['cpu-disabled'\]: a speedup must be a positive number"),
     ({"cpu-disabled": True}, None, "a speedup must be a positive number"),
     ({"cpu-disabled": float("nan")}, None, "a speedup must be a positive number"),
     (None, {"cpu-all": 99}, r"m: agreement\['cpu-all'\]: an agreement must be a share above 0 and at most 1"),
     (None, {3: 0.9}, "a variant id must be text"),
     (None, {}, "agreement takes a dict")],
)  # fmt: skip
def test_bad_contract_values_are_usage_errors_naming_the_marker(
    faster: object, agree: object, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        parse_contracts(faster, agree, source="m")


# default contracts ------------------------------------------------------------------


def test_the_levels_default_holds_each_level_to_the_one_below_among_the_runs_levels() -> None:
    matrix = variant_matrix([CPU], [OptLevel.DISABLED, OptLevel.EXTENDED, OptLevel.ALL])
    assert default_contracts(matrix[0], matrix, ["levels"]) == ()
    (one,) = default_contracts(matrix[2], matrix, ["levels"])
    assert (one.other, one.bound, one.source) == ("cpu-extended", 1.0, "ortperf_contracts = levels")
    # one level in the run: the next lower level there is
    alone = variant_matrix([CPU], [OptLevel.ALL])
    assert [c.other for c in default_contracts(alone[0], alone, ["levels"])] == ["cpu-extended"]


def test_the_quantized_default_holds_int8_to_fp32_at_its_level() -> None:
    v = Variant(CPU, OptLevel.BASIC, Precision.INT8_STATIC)
    assert [c.other for c in default_contracts(v, (v,), ["quantized"])] == ["cpu-basic"]
    assert default_contracts(Variant(CPU, OptLevel.BASIC, Precision.FP16), (v,), ["quantized"]) == ()
    both = default_contracts(
        v, variant_matrix([CPU], [OptLevel.DISABLED, OptLevel.BASIC]), ["levels", "quantized"]
    )
    assert [c.other for c in both] == ["cpu-disabled-int8-static", "cpu-basic"]


# precision tolerances and SQNR ---------------------------------------------------------


def test_sqnr_is_signal_over_noise_in_db() -> None:
    expected = np.array([1.0, -1.0, 1.0, -1.0])
    assert sqnr_db(expected + 0.1, expected) == pytest.approx(20.0)
    assert sqnr_db(expected, expected) == math.inf
    assert sqnr_db(expected, np.zeros(4)) == -math.inf


def test_int8_variants_are_judged_on_the_whole_output_not_element_by_element() -> None:
    tolerance = ToleranceSpec().for_output("y", np.dtype("float32"), "cpu", "cpu-all-int8-static")
    assert (tolerance.cosine, tolerance.sqnr, tolerance.mismatch) == (0.995, 20.0, 1.0)
    rng = np.random.default_rng(0)
    expected = rng.standard_normal(1000).astype(np.float32)
    quantized = expected + rng.uniform(-0.02, 0.02, 1000).astype(np.float32)  # ~35 dB
    ok = compare_output("y", quantized, expected, tolerance, "fp32")
    assert ok.ok
    assert "elements outside tolerance" not in ok.describe()
    assert "SQNR 3" in ok.describe()
    clipped = np.clip(expected, -0.5, 0.5)  # a calibration range far too narrow
    failed = compare_output("y", clipped, expected, tolerance, "fp32")
    assert failed.failed_metric in ("cosine", "sqnr")
    assert not failed.ok


def test_precision_tolerances_follow_the_variant_and_users_override_them_per_precision() -> None:
    spec = ToleranceSpec()
    fp32 = spec.for_output("y", np.dtype("float32"), "cpu", "cpu-all")
    fp16 = spec.for_output("y", np.dtype("float32"), "cpu", "cpu-all-fp16")
    assert (fp32.sqnr, fp16.sqnr, fp16.atol) == (0.0, 40.0, 1e-2)
    tighter = parse_tolerance_lines(
        ["variant:int8-static.sqnr=25", "variant:cpu-all-int8-dynamic.cosine=0.999"], source="ini"
    )
    assert tighter.for_output("y", np.dtype("float32"), "cpu", "cpu-all-int8-static").sqnr == 25
    assert tighter.for_output("y", np.dtype("float32"), "cpu", "cpu-all-int8-dynamic").cosine == 0.999
    assert tighter.for_output("y", np.dtype("float32"), "cpu", "cpu-disabled-int8-dynamic").cosine == 0.995


def test_a_failure_a_second_measurement_does_not_confirm_is_inconclusive_never_a_failure() -> None:
    first = Speedup(1.10, 1.05, 1.20, 0.99, 16)
    unconfirmed = judge_speedup(KEY, contract(1.3), Speedup(1.35, 1.31, 1.40, 0.99, 16), first=first)
    assert unconfirmed.status is Status.NOT_CONFIRMED
    assert not unconfirmed.failed
    assert (
        "a first measurement, 1.10x (99% CI 1.05x .. 1.20x, 16 rounds), lay wholly below 1.3x"
        in unconfirmed.message
    )
    confirmed = judge_speedup(KEY, contract(1.3), Speedup(1.12, 1.08, 1.18, 0.99, 24), first=first)
    assert confirmed.failed
    assert "(confirmed by a second measurement on fresh sessions)" in confirmed.message
