"""SessionSettings: defaults, coercion of overrides, merging, and KEY=VALUE parsing."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.ort.session_settings import SessionSettings, parse_assignments

SRC = "ini ortperf_session_options"


def test_defaults_pin_one_thread_each_and_no_spinning() -> None:
    s = SessionSettings()
    assert (s.intra_op_threads, s.inter_op_threads) == (1, 1)
    assert s.execution_mode == "sequential"
    assert (s.intra_op_spinning, s.inter_op_spinning) == (False, False)
    assert (s.cpu_mem_arena, s.mem_pattern, s.denormal_as_zero) == (True, True, False)
    assert s.intra_op_thread_affinities == ""
    assert s.config_entries == ()
    assert s.provider_options == ()


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("intra_op_threads", "4", 4),
        ("intra_op_threads", " 2 ", 2),
        ("inter_op_threads", 0, 0),
        ("inter_op_threads", 3, 3),
        ("intra_op_spinning", "1", True),
        ("intra_op_spinning", "true", True),
        ("intra_op_spinning", "Yes", True),
        ("intra_op_spinning", "ON", True),
        ("intra_op_spinning", True, True),
        ("intra_op_spinning", 1, True),
        ("cpu_mem_arena", "0", False),
        ("cpu_mem_arena", "false", False),
        ("cpu_mem_arena", "no", False),
        ("cpu_mem_arena", "off", False),
        ("cpu_mem_arena", False, False),
        ("cpu_mem_arena", 0, False),
        ("execution_mode", "parallel", "parallel"),
        ("execution_mode", " PARALLEL ", "parallel"),
        ("execution_mode", "Sequential", "sequential"),
        ("intra_op_thread_affinities", " 1;2 ", "1;2"),
    ],
)
def test_with_overrides_coerces_text_and_native_values(key: str, value: Any, expected: Any) -> None:
    updated = SessionSettings().with_overrides({key: value}, source=SRC)
    got = getattr(updated, key)
    assert got == expected
    assert type(got) is type(expected)


def test_with_overrides_returns_a_copy_and_leaves_other_fields_alone() -> None:
    base = SessionSettings()
    updated = base.with_overrides({"intra_op_threads": "8"}, source=SRC)
    assert base.intra_op_threads == 1
    assert dataclasses.replace(updated, intra_op_threads=1) == base


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("intra_op_threads", "two", "is not a whole number"),
        ("intra_op_threads", "-1", "is not a whole number"),
        ("intra_op_threads", 2.5, "is not a whole number"),
        ("intra_op_threads", True, "is not a whole number"),
        ("inter_op_threads", "", "is not a whole number"),
        ("intra_op_spinning", "maybe", "is not a boolean"),
        ("cpu_mem_arena", 2, "is not a boolean"),
        ("mem_pattern", "", "is not a boolean"),
        ("execution_mode", "concurrent", "use one of sequential, parallel"),
    ],
)
def test_bad_values_name_the_key_and_source(key: str, value: Any, fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        SessionSettings().with_overrides({key: value}, source="ort_settings marker of test_a")
    message = str(info.value)
    assert message.startswith("ort_settings marker of test_a:")
    assert key in message
    assert fragment in message


def test_unknown_key_names_key_source_and_valid_settings() -> None:
    with pytest.raises(UsageError) as info:
        SessionSettings().with_overrides({"threads": 2}, source="--ortperf-session-options")
    message = str(info.value)
    assert message.startswith("--ortperf-session-options:")
    assert "'threads'" in message
    for valid in ("intra_op_threads", "execution_mode", "config_entries", "provider_options"):
        assert valid in message


def test_config_entries_merge_instead_of_replace() -> None:
    base = SessionSettings().with_overrides(
        {"config_entries": {"session.b": "1", "session.a": 2}}, source=SRC
    )
    assert base.config_entries == (("session.a", "2"), ("session.b", "1"))
    merged = base.with_overrides({"config_entries": {"session.b": "0", "session.c": "x"}}, source=SRC)
    assert dict(merged.config_entries) == {"session.a": "2", "session.b": "0", "session.c": "x"}
    assert [k for k, _ in merged.config_entries] == sorted(k for k, _ in merged.config_entries)


def test_config_entries_must_be_a_mapping() -> None:
    with pytest.raises(UsageError, match=r"^my marker: config_entries must be a mapping"):
        SessionSettings().with_overrides({"config_entries": ["a=1"]}, source="my marker")


def test_provider_options_merge_and_normalise_provider_names() -> None:
    base = SessionSettings().with_overrides(
        {"provider_options": {"cuda": {"cudnn_conv_algo_search": "DEFAULT", "device_id": 0}}},
        source=SRC,
    )
    assert base.options_for("CUDAExecutionProvider") == {
        "cudnn_conv_algo_search": "DEFAULT",
        "device_id": "0",
    }
    merged = base.with_overrides(
        {
            "provider_options": {
                "CUDAExecutionProvider": {"device_id": "1"},
                "trt": {"trt_fp16_enable": True},
            }
        },
        source=SRC,
    )
    assert merged.options_for("CUDAExecutionProvider") == {
        "cudnn_conv_algo_search": "DEFAULT",
        "device_id": "1",
    }
    assert merged.options_for("TensorrtExecutionProvider") == {"trt_fp16_enable": "True"}
    assert merged.options_for("CPUExecutionProvider") == {}
    assert [name for name, _ in merged.provider_options] == [
        "CUDAExecutionProvider",
        "TensorrtExecutionProvider",
    ]


@pytest.mark.parametrize(
    "value",
    [{"cuda": "device_id=0"}, ["cuda"], "cuda:device_id=0"],
)
def test_provider_options_shape_is_checked(value: Any) -> None:
    with pytest.raises(UsageError, match=r"^my marker: provider_options must map a provider"):
        SessionSettings().with_overrides({"provider_options": value}, source="my marker")


def test_provider_options_for_unknown_provider_names_it_and_source() -> None:
    with pytest.raises(UsageError, match=r"^my marker: unknown execution provider 'gpu'"):
        SessionSettings().with_overrides({"provider_options": {"gpu": {"a": 1}}}, source="my marker")


def test_parse_assignments_all_line_kinds() -> None:
    lines = [
        "# pinned for CI",
        "",
        "   ",
        "intra_op_threads = 2",
        "execution_mode=parallel",
        "config.session.use_env_allocators=1",
        "config.ep.context_file_path=a=b",
        "cuda:cudnn_conv_algo_search=DEFAULT",
        "CUDAExecutionProvider: device_id = 1",
        "trt:trt_fp16_enable=1",
    ]
    overrides = parse_assignments(lines, source=SRC)
    assert overrides == {
        "intra_op_threads": "2",
        "execution_mode": "parallel",
        "config_entries": {"session.use_env_allocators": "1", "ep.context_file_path": "a=b"},
        "provider_options": {
            "CUDAExecutionProvider": {"cudnn_conv_algo_search": "DEFAULT", "device_id": "1"},
            "TensorrtExecutionProvider": {"trt_fp16_enable": "1"},
        },
    }
    settings = SessionSettings().with_overrides(overrides, source=SRC)
    assert settings.intra_op_threads == 2
    assert settings.execution_mode == "parallel"
    assert dict(settings.config_entries)["ep.context_file_path"] == "a=b"
    assert settings.options_for("CUDAExecutionProvider")["device_id"] == "1"


@pytest.mark.parametrize("line", ["intra_op_threads", "=2", "  = x"])
def test_parse_assignments_requires_key_equals_value(line: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_assignments(["intra_op_threads=1", line], source="--ortperf-session-options")
    message = str(info.value)
    assert message.startswith("--ortperf-session-options: expected KEY=VALUE")
    assert repr(line) in message


def test_parse_assignments_fails_on_the_offending_line() -> None:
    with pytest.raises(UsageError, match=r"^ini ortperf_session_options: intra_op_threads='x'"):
        parse_assignments(["cpu_mem_arena=0", "intra_op_threads=x"], source=SRC)
    with pytest.raises(UsageError, match=r"unknown session setting 'intra_threads'"):
        parse_assignments(["intra_threads=2"], source=SRC)
    with pytest.raises(UsageError, match=r"^ini ortperf_session_options: unknown execution provider 'cdua'"):
        parse_assignments(["cdua:device_id=0"], source=SRC)


def test_as_dict_is_json_serialisable_and_round_trips_values() -> None:
    settings = SessionSettings().with_overrides(
        parse_assignments(["intra_op_threads=3", "config.session.x=1", "cuda:device_id=0"], source=SRC),
        source=SRC,
    )
    data = json.loads(json.dumps(settings.as_dict()))
    assert data["intra_op_threads"] == 3
    assert data["intra_op_spinning"] is False
    assert data["config_entries"] == {"session.x": "1"}
    assert data["provider_options"] == {"CUDAExecutionProvider": {"device_id": "0"}}
    assert set(data) == {f.name for f in dataclasses.fields(SessionSettings)}


def test_settings_are_hashable_and_equal_when_equal() -> None:
    a = SessionSettings().with_overrides(
        {"config_entries": {"b": "1", "a": "2"}, "provider_options": {"cuda": {"x": "1"}}}, source=SRC
    )
    # same content given in another order and spelling
    b = SessionSettings().with_overrides(
        {"provider_options": {"CUDAExecutionProvider": {"x": 1}}, "config_entries": {"a": 2, "b": 1}},
        source=SRC,
    )
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, SessionSettings()}) == 2
    assert a != a.with_overrides({"config_entries": {"a": "3"}}, source=SRC)


def test_describe_shows_threads_and_only_changed_fields() -> None:
    assert SessionSettings().describe() == "intra_op_threads=1, inter_op_threads=1"
    text = (
        SessionSettings()
        .with_overrides(
            {"intra_op_threads": 4, "cpu_mem_arena": "off", "config_entries": {"k": "v"}}, source=SRC
        )
        .describe()
    )
    assert text.startswith("intra_op_threads=4, inter_op_threads=1")
    assert "cpu_mem_arena=False" in text
    assert "config_entries=(('k', 'v'),)" in text
    assert "mem_pattern" not in text


@pytest.mark.parametrize("value", ["²", "1²", "٣"])
def test_non_ascii_digit_thread_count_is_a_usage_error(value: str) -> None:
    # regression: str.isdigit() accepts '²', which int() then refused with a bare ValueError
    with pytest.raises(UsageError, match=r"^ini ortperf_session_options: intra_op_threads=") as info:
        SessionSettings().with_overrides({"intra_op_threads": value}, source=SRC)
    assert "is not a whole number" in str(info.value)


HUGE = 10**4301  # one digit past CPython's int -> str limit: str() and repr() raise ValueError


@pytest.mark.parametrize(
    ("overrides", "where"),
    [
        ({"config_entries": {"0": HUGE}}, "config value of '0'"),
        ({"config_entries": {HUGE: "1"}}, "config key"),
        ({"provider_options": {"cpu": {"opt": HUGE}}}, "provider_options['cpu']"),
        ({"provider_options": {"cpu": {HUGE: "1"}}}, "provider_options['cpu']"),
        ({"provider_options": {HUGE: {}}}, "provider_options"),
        ({"intra_op_thread_affinities": HUGE}, "intra_op_thread_affinities"),
        ({"execution_mode": HUGE}, "execution_mode"),
        ({"cpu_mem_arena": HUGE}, "cpu_mem_arena"),
    ],
)
def test_values_str_refuses_are_a_usage_error_naming_the_marker(
    overrides: dict[Any, Any], where: str
) -> None:
    """An int of more than 4300 digits raised a raw ValueError from str() instead of naming the marker."""
    with pytest.raises(UsageError) as info:
        SessionSettings().with_overrides(overrides, source="ort_settings marker of t.py::t")
    assert str(info.value) == (
        f"ort_settings marker of t.py::t: {where}: the value <int too large to show> is far too large."
    )


def test_a_long_bad_value_is_shown_shortened() -> None:
    with pytest.raises(UsageError) as info:
        SessionSettings().with_overrides({"execution_mode": "x" * 10_000}, source="--opt")
    assert len(str(info.value)) < 200
    assert "execution_mode='xxxx" in str(info.value)
