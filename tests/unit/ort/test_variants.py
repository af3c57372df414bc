"""Optimization level parsing and the provider x level variant matrix."""

from __future__ import annotations

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.ort.providers import parse_providers
from pytest_ortperf.ort.variants import OptLevel, Variant, parse_opt_level, parse_opt_levels, variant_matrix


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("disabled", OptLevel.DISABLED),
        ("basic", OptLevel.BASIC),
        ("extended", OptLevel.EXTENDED),
        ("layout", OptLevel.LAYOUT),
        ("all", OptLevel.ALL),
        ("ALL", OptLevel.ALL),
        (" Extended ", OptLevel.EXTENDED),
        ("ORT_ENABLE_ALL", OptLevel.ALL),
        ("ORT_DISABLE_ALL", OptLevel.DISABLED),
        ("ort_enable_basic", OptLevel.BASIC),
        ("ORT_ENABLE_EXTENDED", OptLevel.EXTENDED),
        ("ORT_ENABLE_LAYOUT", OptLevel.LAYOUT),
        ("none", OptLevel.DISABLED),
        ("disable_all", OptLevel.DISABLED),
        ("enable_all", OptLevel.ALL),
        ("0", OptLevel.DISABLED),
        ("1", OptLevel.BASIC),
        ("2", OptLevel.EXTENDED),
        ("99", OptLevel.ALL),
    ],
)
def test_parse_opt_level_names_and_aliases(text: str, level: OptLevel) -> None:
    assert parse_opt_level(text, source="--ort-opt-levels") is level


def test_numeric_alias_of_layout_level() -> None:
    assert parse_opt_level("3", source="--ort-opt-levels") is OptLevel.LAYOUT


def test_ort_names_match_onnxruntime_enum_members() -> None:
    import onnxruntime as ort

    members = ort.GraphOptimizationLevel.__members__
    for level in OptLevel:
        assert level.ort_name in members, level


def test_unknown_level_error_names_source_and_lists_valid_levels() -> None:
    with pytest.raises(UsageError) as info:
        parse_opt_level("max", source="ini ortperf_opt_levels")
    message = str(info.value)
    assert message.startswith("ini ortperf_opt_levels:")
    assert "'max'" in message
    assert "disabled, basic, extended, layout, all" in message


def test_parse_opt_levels_keeps_order_and_drops_duplicates() -> None:
    levels = parse_opt_levels(["all,disabled", "ORT_ENABLE_ALL", "basic", "0"], source="x")
    assert levels == (OptLevel.ALL, OptLevel.DISABLED, OptLevel.BASIC)


@pytest.mark.parametrize("value", ["", ",", []])
def test_empty_level_list_is_an_error(value: str | list[str]) -> None:
    with pytest.raises(UsageError, match=r"^--ort-opt-levels: no optimization level given\. Valid levels"):
        parse_opt_levels(value, source="--ort-opt-levels")


def test_bad_level_in_a_list_is_reported() -> None:
    with pytest.raises(UsageError, match=r"--ort-opt-levels: unknown graph optimization level 'fast'"):
        parse_opt_levels("all,fast", source="--ort-opt-levels")


def test_variant_ids_and_provider() -> None:
    (cpu, cuda) = parse_providers("cpu,cuda", source="x")
    assert Variant(cpu, OptLevel.ALL).id == "cpu-all"
    assert str(Variant(cuda, OptLevel.EXTENDED)) == "cuda-extended"
    assert Variant(cuda, OptLevel.EXTENDED).provider == "CUDAExecutionProvider"
    trt = parse_providers("TensorrtExecutionProvider", source="x")[0]
    assert Variant(trt, OptLevel.DISABLED).id == "tensorrt-disabled"


def test_variant_matrix_is_provider_major() -> None:
    specs = parse_providers("cuda,cpu", source="x")
    matrix = variant_matrix(specs, (OptLevel.DISABLED, OptLevel.ALL))
    assert [v.id for v in matrix] == ["cuda-disabled", "cuda-all", "cpu-disabled", "cpu-all"]


def test_variant_matrix_accepts_one_shot_iterables() -> None:
    specs = parse_providers("cpu,cuda", source="x")
    matrix = variant_matrix(iter(specs), iter([OptLevel.BASIC, OptLevel.LAYOUT]))
    assert [v.id for v in matrix] == ["cpu-basic", "cpu-layout", "cuda-basic", "cuda-layout"]


def test_variants_are_hashable_and_equal_by_value() -> None:
    a = variant_matrix(parse_providers("cpu", source="x"), [OptLevel.ALL])[0]
    b = Variant(parse_providers("CPUExecutionProvider", source="y")[0], OptLevel.ALL)
    assert a == b
    assert len({a, b}) == 1
