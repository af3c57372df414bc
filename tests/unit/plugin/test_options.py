"""The option table and the pure parsers behind --ortperf-dims/-int-range/-seed."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.plugin.options import (
    OPTIONS,
    UPDATE_MISSING,
    argparse_help,
    parse_dims,
    parse_int_range,
    parse_seed,
    register,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("batch=1,sequence=128", {"batch": 1, "sequence": 128}),
        (" batch = 2 , seq=3 ,", {"batch": 2, "seq": 3}),
        ("", {}),
        ({"batch": 4, "seq": "16"}, {"batch": 4, "seq": 16}),
        ({}, {}),
    ],
)
def test_parse_dims(value: Any, expected: dict[str, int]) -> None:
    assert parse_dims(value, source="--ortperf-dims") == expected


@pytest.mark.parametrize(
    "value",
    ["batch", "batch=0", "batch=-1", "batch=x", "=3", "batch=1.5", {"batch": 0}, {"batch": True}, {"": 2}],
)
def test_parse_dims_rejects_bad_entries_naming_source(value: Any) -> None:
    with pytest.raises(UsageError, match=r"^--ortperf-dims: expected NAME=N with N >= 1"):
        parse_dims(value, source="--ortperf-dims")


def test_parse_dims_error_shows_the_offending_entry() -> None:
    with pytest.raises(UsageError, match=r"got seq='zero'"):
        parse_dims("batch=1,seq=zero", source="ini ortperf_dims")


@pytest.mark.parametrize("size", ["²", "1²", "٣"])
def test_parse_dims_non_ascii_digits_are_a_usage_error(size: str) -> None:
    # regression: str.isdigit() accepts '²', which int() then refused with a bare ValueError
    with pytest.raises(UsageError, match=r"^--ortperf-dims: expected NAME=N") as info:
        parse_dims(f"batch={size}", source="--ortperf-dims")
    assert repr(size) in str(info.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0:100", (0, 100)),
        ("0,100", (0, 100)),
        (" -5 : 5 ", (-5, 5)),
        ((0, 100), (0, 100)),
        ([1, 2], (1, 2)),
        (("3", "30000"), (3, 30000)),
    ],
)
def test_parse_int_range(value: Any, expected: tuple[int, int]) -> None:
    assert parse_int_range(value, source="--ortperf-int-range") == expected


@pytest.mark.parametrize("value", ["", "5", "a:b", "1:2:3", "0:1.5", None, 5, [1], (1, 2, 3), ":"])
def test_parse_int_range_rejects_garbage_naming_source(value: Any) -> None:
    with pytest.raises(UsageError) as info:
        parse_int_range(value, source="--ortperf-int-range")
    message = str(info.value)
    assert message.startswith("--ortperf-int-range: expected an integer range LOW:HIGH")
    assert repr(value) in message


@pytest.mark.parametrize("value", ["5:5", "10:0", (3, -3)])
def test_parse_int_range_rejects_empty_and_inverted(value: Any) -> None:
    with pytest.raises(UsageError, match=r"^ini ortperf_int_range: integer range .* is empty"):
        parse_int_range(value, source="ini ortperf_int_range")


@pytest.mark.parametrize(("value", "expected"), [("0", 0), ("42", 42), (7, 7), (" -3 ", -3)])
def test_parse_seed(value: Any, expected: int) -> None:
    assert parse_seed(value, source="--ortperf-seed") == expected


@pytest.mark.parametrize("value", ["", "x", "1.5", "-", True, False, None, 2.0])
def test_parse_seed_rejects_non_integers_naming_source(value: Any) -> None:
    with pytest.raises(UsageError) as info:
        parse_seed(value, source="--ortperf-seed")
    message = str(info.value)
    assert message.startswith("--ortperf-seed: seed must be a whole number")
    assert repr(value) in message


@pytest.mark.parametrize("value", ["--3", "-²", "²", "+-3", "- 3"])
def test_parse_seed_malformed_numbers_are_a_usage_error(value: str) -> None:
    # regression: lstrip('-').isdigit() accepted '--3' and '²', which int() then refused
    with pytest.raises(UsageError, match=r"^--ortperf-seed: seed must be a whole number") as info:
        parse_seed(value, source="--ortperf-seed")
    assert repr(value) in str(info.value)


def test_defaults_in_the_table_parse_cleanly() -> None:
    defaults = {o.ini: o.default for o in OPTIONS if isinstance(o.default, str)}
    assert parse_dims(defaults["ortperf_dims"], source="default") == {}
    assert parse_int_range(defaults["ortperf_int_range"], source="default") == (0, 100)
    assert parse_seed(defaults["ortperf_seed"], source="default") == 0


def test_flags_and_ini_keys_are_unique_and_prefixed() -> None:
    flags = [o.flag for o in OPTIONS]
    inis = [o.ini for o in OPTIONS]
    assert len(set(flags)) == len(flags)
    assert len(set(inis)) == len(inis)
    assert all(f.startswith("--ort") for f in flags)
    # ort_precisions is the one ini key the product names without the ortperf_ prefix (PRODUCT.md)
    named = {"ort_precisions"}
    assert all(
        (i.startswith("ortperf_") or i in named) and o.dest == i for i, o in zip(inis, OPTIONS, strict=True)
    )


class _Recorder:
    """Duck-typed stand-in for pytest's parser: records what register() adds."""

    def __init__(self) -> None:
        self.options: list[tuple[str, dict[str, Any]]] = []
        self.inis: list[tuple[str, str, dict[str, Any]]] = []
        self.group_name = ""

    def getgroup(self, name: str, description: str) -> _Recorder:
        self.group_name = name
        return self

    def addoption(self, flag: str, *aliases: str, **kwargs: Any) -> None:
        self.options.append((flag, {**kwargs, "aliases": aliases}))

    def addini(self, name: str, help: str, **kwargs: Any) -> None:
        self.inis.append((name, help, kwargs))


def test_register_adds_every_flag_and_ini_key() -> None:
    parser = _Recorder()
    register(parser)
    assert parser.group_name == "ortperf"
    assert [flag for flag, _ in parser.options] == [*(o.flag for o in OPTIONS), UPDATE_MISSING]
    assert [name for name, _, _ in parser.inis] == [o.ini for o in OPTIONS]
    by_flag = dict(parser.options)
    # CLI defaults are None so "not given" can fall back to the ini value
    assert all(kwargs["default"] is None for kwargs in by_flag.values())
    assert by_flag["--ortperf-session-options"]["action"] == "append"
    assert by_flag["--ortperf-session-options"]["aliases"] == ("--ortperf-session-option",)  # deprecated
    assert by_flag["--ort-providers"]["action"] == "store"
    assert by_flag[UPDATE_MISSING]["action"] == "store_const"  # its own option string: takes no value
    ini_types = {name: kwargs["type"] for name, _, kwargs in parser.inis}
    assert ini_types["ortperf_session_options"] == "linelist"
    assert ini_types["ortperf_providers"] == "string"


class _ArgparseGroup:
    """pytest's parser duck-typed onto a real argparse parser, so help goes through argparse's formatter."""

    def __init__(self) -> None:
        self.parser = argparse.ArgumentParser(prog="pytest", add_help=False)
        self.helps: list[str] = []

    def getgroup(self, name: str, description: str) -> _ArgparseGroup:
        return self

    def addoption(self, flag: str, *aliases: str, **kwargs: Any) -> None:
        self.helps.append(kwargs["help"])
        self.parser.add_argument(flag, *aliases, **kwargs)

    def addini(self, name: str, help: str, **kwargs: Any) -> None:
        pass


def test_no_help_string_reaching_argparse_has_an_unescaped_percent() -> None:
    """argparse %-formats option help: a lone '%' (as in "10%") breaks `pytest --help`."""
    parser = _ArgparseGroup()
    register(parser)
    assert [h for h in parser.helps if "%" in h.replace("%%", "")] == []
    shown = "".join(parser.parser.format_help().split())  # argparse wraps lines, at hyphens too
    assert "(default:10%)" in shown
    assert "10%%" not in shown
    for option in OPTIONS:  # each text shown as written, whatever it holds
        assert "".join(option.help.split()) in shown


def test_every_help_text_survives_argparse_formatting() -> None:
    """Whatever the table's texts hold, register() hands argparse a text it shows as written."""
    for text in ("50% of 10%", "100%)", "%(default)s", "%s %d %%"):
        parser = argparse.ArgumentParser(prog="x", add_help=False)
        parser.add_argument("--flag", help=argparse_help(text))
        assert text in parser.format_help()


def test_every_flag_and_its_ini_key_share_one_name_but_the_variant_matrix() -> None:
    """One grammar: --ortperf-x-y and ortperf_x_y. The variant-matrix flags keep their short --ort-
    names; earlier spellings are deprecated aliases (deprecated_spellings says which to use)."""
    from pytest_ortperf.plugin.options import OPTIONS, deprecated_spellings

    matrix = {"--ort-providers", "--ort-opt-levels", "--ort-precisions"}
    differ = [
        (option.flag, option.ini)
        for option in OPTIONS
        if option.flag not in matrix and option.flag.removeprefix("--").replace("-", "_") != option.ini
    ]
    assert differ == []
    assert deprecated_spellings(["--ortperf-tolerance=atol=1", "-q", "--ortperf-tolerances"]) == [
        "--ortperf-tolerance is deprecated and will be removed in a later release: use --ortperf-tolerances "
        "(the flag and its ini key share one name, ortperf_tolerances)."
    ]


def test_every_row_parses_its_own_default_and_the_defaults_are_the_modules() -> None:  # one statement each
    """The table's typed defaults, as the configuration reads them, are the ones the code below
    the pytest layer assumes when nothing is configured (the same rule, stated in one place each)."""
    from pytest_ortperf.checks.policy import MISSING_CHOICES, CheckPolicy
    from pytest_ortperf.footprint.memory_figures import DEFAULT_FLOOR
    from pytest_ortperf.footprint.memory_figures import DEFAULT_THRESHOLD as MEMORY_THRESHOLD
    from pytest_ortperf.footprint.startup_figures import DEFAULT_THRESHOLD as STARTUP_THRESHOLD
    from pytest_ortperf.graph.diff import DEFAULT_MODE
    from pytest_ortperf.kinds.graph import KIND as graph_kind
    from pytest_ortperf.kinds.memory import KIND as memory_kind
    from pytest_ortperf.kinds.startup import KIND as startup_kind
    from pytest_ortperf.latency.decision import DEFAULT_THRESHOLD
    from pytest_ortperf.latency.measure import MeasureSettings
    from pytest_ortperf.latency.paired import AB_SETTINGS
    from pytest_ortperf.latency.recording import DEFAULT_MAX_CV
    from pytest_ortperf.ort.inputs import InputOptions
    from pytest_ortperf.plugin.options import MISSING

    typed = {o.ini: o.typed_default for o in OPTIONS}
    policy = CheckPolicy()
    assert typed["ortperf_latency_threshold"] == DEFAULT_THRESHOLD == policy.threshold
    # The memory and start-up kinds declare their own options (kinds/memory.py, kinds/startup.py).
    memory = {o.name: o.typed_default("memory") for o in memory_kind.options}
    assert memory["threshold"] == MEMORY_THRESHOLD
    assert memory["floor"] == DEFAULT_FLOOR
    assert {o.name: o.typed_default("startup") for o in startup_kind.options} == {
        "threshold": STARTUP_THRESHOLD
    }
    # The graph kind's mode is its own setting (kinds/graph.py): --ortperf-graph, ini ortperf_graph.
    (mode,) = graph_kind.options
    assert (mode.flag("graph"), mode.ini("graph")) == ("--ortperf-graph", "ortperf_graph")
    assert mode.typed_default("graph") == DEFAULT_MODE
    assert typed["ortperf_max_cv"] == DEFAULT_MAX_CV == policy.max_cv
    assert typed["ortperf_budget"] == MeasureSettings().budget_s == policy.measure.budget_s
    assert typed["ortperf_ab_budget"] == AB_SETTINGS.budget_s == policy.ab.budget_s
    assert typed["ortperf_missing"] == policy.missing
    assert MISSING == MISSING_CHOICES
    inputs = InputOptions()
    assert (typed["ortperf_seed"], typed["ortperf_int_range"], typed["ortperf_dims"]) == (
        inputs.seed,
        inputs.int_range,
        dict(inputs.dims),
    )
    switches = [o for o in OPTIONS if o.switch]
    assert switches
    assert all(typed[o.ini] is False for o in switches)  # every presence flag is off unless given


SWITCH_WORDS = {
    True: ("on", "ON", " yes ", "true", "True", "1", "y", "t"),
    False: ("off", "no", "false", "FALSE", "0", "n", "f"),
}


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.switch], ids=lambda o: o.ini)
def test_every_switch_takes_the_one_grammar_from_the_ini_file_and_a_flag_given(option: Any) -> None:
    for expected, words in SWITCH_WORDS.items():
        for word in words:
            assert option.value(word, f"ini {option.ini}") is expected
    assert option.value(True, option.flag) is True  # the command-line flag, given
    with pytest.raises(
        UsageError, match=rf"^ini {option.ini}: expected on or off, got 'maybe' \(a switch takes "
    ):
        option.value("maybe", f"ini {option.ini}")


@pytest.mark.parametrize(
    "ini", ["ortperf_canary", "ortperf_timing", "ortperf_progress", "ortperf_fetch_runtime"]
)
def test_every_word_switch_takes_the_same_grammar(ini: str) -> None:
    option = next(o for o in OPTIONS if o.ini == ini)
    for expected, words in SWITCH_WORDS.items():
        for word in words:
            assert option.value(word, f"ini {ini}") is expected
    with pytest.raises(UsageError, match=r"^--x: expected .*got 'sometimes'"):
        option.value("sometimes", "--x")


def test_auto_is_left_to_the_plugin_and_never_is_off() -> None:
    progress = next(o for o in OPTIONS if o.ini == "ortperf_progress")
    fetch = next(o for o in OPTIONS if o.ini == "ortperf_fetch_runtime")
    assert progress.value("auto", "--ortperf-progress") is None
    assert fetch.value("auto", "--ortperf-fetch-runtime") is True
    assert fetch.value("never", "--ortperf-fetch-runtime") is False


@pytest.mark.parametrize("word", ["off", "OFF", "no", "False", "0", "none", " Off "])
def test_every_setting_that_can_be_off_takes_the_switch_grammars_off_words(word: str) -> None:
    """The drift threshold (whose help says ``Default: off``), the default contracts, the reference
    variant and the graph check are turned off by the words that turn a switch off."""
    from pytest_ortperf.kinds.graph import KIND as graph_kind
    from pytest_ortperf.ort.variants import parse_variant

    by_ini = {option.ini: option for option in OPTIONS}
    drift, contracts = by_ini["ortperf_drift_threshold"], by_ini["ortperf_contracts"]
    assert drift.value(word, "ini ortperf_drift_threshold") is None
    assert contracts.value(word, "ini ortperf_contracts") == ()
    assert parse_variant(word, source="--ortperf-reference-variant") is None
    (mode,) = graph_kind.options
    assert mode.parse is not None
    assert mode.parse(word, "--ortperf-graph") == "off"


def test_a_setting_that_can_be_off_still_refuses_what_it_cannot_read() -> None:
    by_ini = {option.ini: option for option in OPTIONS}
    drift = by_ini["ortperf_drift_threshold"]
    assert drift.value("20%", "ini ortperf_drift_threshold") == pytest.approx(0.2)
    with pytest.raises(UsageError, match="ini ortperf_drift_threshold"):
        drift.value("maybe", "ini ortperf_drift_threshold")
