"""Execution provider names: short ids, aliases, canonical names and fallback chains."""

from __future__ import annotations

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.ort.providers import (
    CPU,
    CUDA,
    KNOWN_PROVIDERS,
    TENSORRT,
    ProviderSpec,
    parse_providers,
    resolve_provider,
    valid_provider_names,
)


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("cpu", CPU),
        ("cuda", CUDA),
        ("tensorrt", TENSORRT),
        ("trt", TENSORRT),
        ("directml", "DmlExecutionProvider"),
        ("dml", "DmlExecutionProvider"),
        ("ov", "OpenVINOExecutionProvider"),
        ("openvino", "OpenVINOExecutionProvider"),
        ("onednn", "DnnlExecutionProvider"),
        ("tensorrt_rtx", "NvTensorRTRTXExecutionProvider"),
    ],
)
def test_short_ids_and_aliases_map_to_canonical_names(name: str, canonical: str) -> None:
    assert resolve_provider(name, source="--ort-providers").name == canonical


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("CUDAExecutionProvider", "cuda"),
        ("TensorrtExecutionProvider", "tensorrt"),
        ("CPUExecutionProvider", "cpu"),
        ("OpenVINOExecutionProvider", "openvino"),
    ],
)
def test_canonical_names_resolve_to_their_short_id(name: str, short: str) -> None:
    spec = resolve_provider(name, source="--ort-providers")
    assert (spec.short, spec.name) == (short, name)


@pytest.mark.parametrize("name", ["CUDA", "Cuda", "cudaexecutionprovider", "CUDAEXECUTIONPROVIDER", " cuda "])
def test_names_are_case_insensitive_and_trimmed(name: str) -> None:
    assert resolve_provider(name, source="ini ortperf_providers").name == CUDA


def test_every_known_short_id_and_alias_resolves_to_its_own_spec() -> None:
    for spec in KNOWN_PROVIDERS:
        for key in (spec.short, spec.name, *spec.aliases):
            assert resolve_provider(key.upper(), source="x") is spec, key


def test_custom_execution_provider_class_name_is_accepted() -> None:
    spec = resolve_provider("FooBarExecutionProvider", source="--ort-providers")
    assert spec.name == "FooBarExecutionProvider"
    assert spec.short == "foobar"
    assert spec.providers == ("FooBarExecutionProvider", CPU)
    assert not spec.is_cpu


@pytest.mark.parametrize("name", ["ExecutionProvider", "Foo-BarExecutionProvider", "9xExecutionProvider"])
def test_things_that_only_look_like_ep_class_names_are_refused(name: str) -> None:
    with pytest.raises(UsageError, match="unknown execution provider"):
        resolve_provider(name, source="--ort-providers")


def test_unknown_name_error_names_source_and_lists_valid_names() -> None:
    with pytest.raises(UsageError) as info:
        resolve_provider("gpu", source="--ort-providers")
    message = str(info.value)
    assert message.startswith("--ort-providers:")
    assert "'gpu'" in message
    for expected in ("cpu", "cuda", "tensorrt/trt", "openvino/ov", "dml/directml"):
        assert expected in message
    assert "ExecutionProvider" in message  # says canonical names work too


def test_valid_provider_names_lists_every_short_id_and_alias() -> None:
    listed = {alias for group in valid_provider_names().split(", ") for alias in group.split("/")}
    expected = {key for spec in KNOWN_PROVIDERS for key in (spec.short, *spec.aliases)}
    assert listed == expected


def test_parse_providers_splits_commas_and_keeps_order() -> None:
    specs = parse_providers("tensorrt, cpu,cuda", source="--ort-providers")
    assert [s.name for s in specs] == [TENSORRT, CPU, CUDA]


def test_parse_providers_accepts_a_list_of_comma_separated_strings() -> None:
    specs = parse_providers(["cuda", "cpu,ov"], source="ini ortperf_providers")
    assert [s.short for s in specs] == ["cuda", "cpu", "openvino"]


def test_parse_providers_drops_duplicates_across_spellings_keeping_first_position() -> None:
    specs = parse_providers("cuda,cpu,CUDAExecutionProvider,trt,tensorrt,CPU", source="x")
    assert [s.short for s in specs] == ["cuda", "cpu", "tensorrt"]


@pytest.mark.parametrize("value", ["", " , ,", [], [""]])
def test_empty_provider_list_is_an_error_naming_the_source(value: str | list[str]) -> None:
    with pytest.raises(UsageError, match=r"^ini ortperf_providers: no execution provider given") as info:
        parse_providers(value, source="ini ortperf_providers")
    assert "cuda" in str(info.value)  # lists what would be valid


def test_parse_providers_reports_the_bad_entry_among_good_ones() -> None:
    with pytest.raises(UsageError, match=r"--ort-providers: unknown execution provider 'cdua'"):
        parse_providers("cpu,cdua", source="--ort-providers")


@pytest.mark.parametrize(
    ("name", "chain"),
    [
        ("tensorrt", (TENSORRT, CUDA, CPU)),
        ("trt", (TENSORRT, CUDA, CPU)),
        ("cuda", (CUDA, CPU)),
        ("openvino", ("OpenVINOExecutionProvider", CPU)),
        ("cpu", (CPU,)),
    ],
)
def test_fallback_chains(name: str, chain: tuple[str, ...]) -> None:
    assert resolve_provider(name, source="x").providers == chain


def test_only_cpu_is_cpu() -> None:
    assert [spec.short for spec in KNOWN_PROVIDERS if spec.is_cpu] == ["cpu"]


def test_explicit_chain_overrides_default_chain() -> None:
    spec = ProviderSpec("x", "XExecutionProvider", chain=("XExecutionProvider",))
    assert spec.providers == ("XExecutionProvider",)
