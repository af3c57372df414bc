"""Turning options, ini keys and markers into frozen ortperf values."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.ort.inputs import InputOptions
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.plugin.configure import (
    MODEL_MARKER_KWARGS,
    OrtperfConfig,
    build_config,
    input_options,
    model_marker_spec,
    settings_for,
    thresholds_for,
)
from pytest_ortperf.plugin.options import OPTIONS

ORIGIN = "ort_model marker of tests/test_m.py::test_a"


# --- model_marker_spec ---------------------------------------------------------------------------


def test_one_positional_model() -> None:
    assert model_marker_spec(("models/a.onnx",), {"seed": 3}, origin=ORIGIN) == "models/a.onnx"


def test_path_keyword() -> None:
    model = object()
    assert model_marker_spec((), {"path": model, "dims": "batch=1"}, origin=ORIGIN) is model


@pytest.mark.parametrize(
    ("args", "kwargs", "count"),
    [
        ((), {}, 0),
        ((), {"dims": "b=1"}, 0),
        (("a.onnx", "b.onnx"), {}, 2),
        (("a.onnx",), {"path": "b.onnx"}, 2),
    ],
)
def test_zero_or_two_models_is_an_error(args: tuple[Any, ...], kwargs: dict[str, Any], count: int) -> None:
    with pytest.raises(UsageError) as info:
        model_marker_spec(args, kwargs, origin=ORIGIN)
    message = str(info.value)
    assert message.startswith(f"{ORIGIN}: ort_model takes exactly one model")
    assert message.endswith(f"got {count}.")


def test_unknown_kwargs_are_named() -> None:
    with pytest.raises(UsageError) as info:
        model_marker_spec(("a.onnx",), {"provider": "cuda", "batch": 2, "seed": 1}, origin=ORIGIN)
    message = str(info.value)
    assert message.startswith(f"{ORIGIN}: unknown argument(s) batch, provider;")
    assert "shapes, dims, int_range, seed, transformers" in message
    assert set(MODEL_MARKER_KWARGS) == {"path", "shapes", "dims", "int_range", "seed", "transformers"}


# --- input_options -------------------------------------------------------------------------------


BASE = InputOptions(seed=1, dims={"batch": 2, "seq": 8}, int_range=(0, 50), int_ranges={"mask": (0, 2)})


def test_no_kwargs_keeps_the_base() -> None:
    assert input_options(BASE, {"path": "x"}, origin=ORIGIN) == BASE


def test_dims_merge_over_the_base() -> None:
    options = input_options(BASE, {"dims": "seq=128,heads=4"}, origin=ORIGIN)
    assert dict(options.dims) == {"batch": 2, "seq": 128, "heads": 4}
    assert dict(BASE.dims) == {"batch": 2, "seq": 8}  # base untouched
    assert input_options(BASE, {"dims": {"batch": 1}}, origin=ORIGIN).dims == {"batch": 1, "seq": 8}


def test_marker_dims_are_the_model_s_own_and_checked_against_it() -> None:
    options = input_options(BASE, {"dims": {"seq": 16}}, origin=ORIGIN)
    assert options.model_dims == {"seq"}  # the run-wide batch and seq of BASE are not
    assert options.dims_origin == ORIGIN
    assert BASE.model_dims == frozenset()


def test_shapes_are_read_with_where_they_came_from() -> None:
    options = input_options(BASE, {"shapes": {"x": [1, 3, 64, 64], "sr": []}}, origin=ORIGIN)
    assert options.shapes == {"x": (1, 3, 64, 64), "sr": ()}
    assert options.shapes_origin == ORIGIN
    table = input_options(
        BASE, {"shapes": {"x": [2]}}, origin="a / b", origins={"shapes": "pyproject.toml [t] shapes"}
    )
    assert table.shapes_origin == "pyproject.toml [t] shapes"


def test_seed() -> None:
    options = input_options(BASE, {"seed": "9"}, origin=ORIGIN)
    assert options.seed == 9
    assert (options.dims, options.int_range) == (BASE.dims, BASE.int_range)


def test_global_int_range() -> None:
    options = input_options(BASE, {"int_range": (5, 30522)}, origin=ORIGIN)
    assert options.int_range == (5, 30522)
    assert options.int_ranges == {"mask": (0, 2)}
    assert input_options(BASE, {"int_range": "1:3"}, origin=ORIGIN).int_range == (1, 3)


def test_per_input_int_ranges_merge() -> None:
    options = input_options(BASE, {"int_range": {"input_ids": "0:30522", "type_ids": [0, 1]}}, origin=ORIGIN)
    assert options.int_ranges == {"mask": (0, 2), "input_ids": (0, 30522), "type_ids": (0, 1)}
    assert options.int_range == (0, 50)
    overridden = input_options(options, {"int_range": {"mask": (1, 2)}}, origin=ORIGIN)
    assert overridden.int_ranges["mask"] == (1, 2)
    assert overridden.int_ranges["input_ids"] == (0, 30522)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"dims": "batch=0"}, f"{ORIGIN}: expected NAME=N"),
        ({"seed": "x"}, f"{ORIGIN}: seed must be a whole number"),
        ({"int_range": "9:1"}, f"{ORIGIN}: integer range 9:1 is empty"),
        ({"int_range": {"input_ids": "a:b"}}, f"{ORIGIN} int_range['input_ids']: expected an integer range"),
        (
            {"shapes": [1, 3, 64, 64]},
            f"{ORIGIN}: shapes must map input names to shapes, such as shapes={{'x'",
        ),
        ({"shapes": {}}, f"{ORIGIN}: shapes must map input names to shapes"),
        ({"shapes": {"x": [1, 0, 64]}}, f"{ORIGIN}: shapes['x'] must be a list of whole sizes >= 1"),
        ({"shapes": {"x": [1, -3]}}, f"{ORIGIN}: shapes['x'] must be a list of whole sizes >= 1"),
        ({"shapes": {"x": [1, 2.5]}}, f"{ORIGIN}: shapes['x'] must be a list of whole sizes >= 1"),
        ({"shapes": {"x": [True, 3]}}, f"{ORIGIN}: shapes['x'] must be a list of whole sizes >= 1"),
        ({"shapes": {"x": "1x3"}}, f"{ORIGIN}: shapes['x'] must be a list of whole sizes >= 1"),
        ({"shapes": {3: [1]}}, f"{ORIGIN}: shapes[3] must be a list of whole sizes >= 1"),
    ],
)
def test_bad_marker_values_name_the_marker(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        input_options(BASE, kwargs, origin=ORIGIN)
    assert str(info.value).startswith(fragment)


# --- settings_for ------------------------------------------------------------------------------

SETTINGS_ORIGIN = "ort_settings marker of tests/test_m.py::TestX::test_a"


def test_no_markers_keeps_base() -> None:
    base = SessionSettings(intra_op_threads=3)
    assert settings_for(base, [], origin=SETTINGS_ORIGIN) is base


def test_closest_marker_wins_and_entries_merge() -> None:
    markers: list[tuple[tuple[Any, ...], dict[str, Any]]] = [  # farthest (module) first, closest last
        ((), {"intra_op_threads": 2, "config_entries": {"a": "module", "b": "module"}}),
        ((), {"intra_op_threads": 4, "cpu_mem_arena": "off"}),
        ((), {"intra_op_threads": "8", "config_entries": {"b": "function"}}),
    ]
    settings = settings_for(SessionSettings(), markers, origin=SETTINGS_ORIGIN)
    assert settings.intra_op_threads == 8
    assert settings.cpu_mem_arena is False
    assert dict(settings.config_entries) == {"a": "module", "b": "function"}
    reversed_settings = settings_for(SessionSettings(), markers[::-1], origin=SETTINGS_ORIGIN)
    assert reversed_settings.intra_op_threads == 2


def test_positional_args_are_an_error_naming_origin() -> None:
    with pytest.raises(UsageError, match=r"^ort_settings marker of .*test_a: ort_settings takes keyword"):
        settings_for(
            SessionSettings(),
            [((), {"inter_op_threads": 2}), (("intra_op_threads",), {})],
            origin=SETTINGS_ORIGIN,
        )


def test_bad_setting_in_marker_names_origin_and_key() -> None:
    with pytest.raises(UsageError) as info:
        settings_for(SessionSettings(), [((), {"intra_op_spinning": "sometimes"})], origin=SETTINGS_ORIGIN)
    message = str(info.value)
    assert message.startswith(SETTINGS_ORIGIN)
    assert "intra_op_spinning" in message


# --- build_config with a duck-typed pytest Config ---------------------------------------------


class FakeConfig:
    """Just enough of pytest's Config: CLI values (None when not given) and ini values."""

    def __init__(
        self, rootpath: Path, cli: dict[str, Any] | None = None, ini: dict[str, Any] | None = None
    ) -> None:
        self.rootpath = rootpath
        self._cli = cli or {}
        self._ini = {o.ini: o.default for o in OPTIONS} | (ini or {})
        self.warnings: list[Warning] = []

    def issue_config_time_warning(self, warning: Warning, stacklevel: int) -> None:
        self.warnings.append(warning)

    def getoption(self, dest: str) -> Any:
        return self._cli.get(dest)

    def getini(self, name: str) -> Any:
        if name not in self._ini:  # as pytest's: an ini key nobody registered
            raise ValueError(f"unknown configuration value: {name!r}")
        return self._ini[name]


def test_build_config_defaults(tmp_path: Path) -> None:
    built = build_config(FakeConfig(tmp_path))
    assert isinstance(built, OrtperfConfig)
    assert [v.id for v in built.variants] == ["cpu-all"]
    assert built.settings == SessionSettings()
    assert built.inputs == InputOptions()
    assert built.rootdir == tmp_path


def test_build_config_cli_overrides_ini_and_settings_layer(tmp_path: Path) -> None:
    config = FakeConfig(
        tmp_path,
        cli={
            "ortperf_providers": "cuda,cpu",
            "ortperf_seed": "5",
            "ortperf_session_options": ["intra_op_threads=4", "config.b=cli"],
        },
        ini={
            "ortperf_providers": "trt",
            "ortperf_opt_levels": "disabled,all",
            "ortperf_dims": "batch=2",
            "ortperf_int_range": "0,10",
            "ortperf_session_options": [
                "intra_op_threads=2",
                "inter_op_threads=3",
                "config.a=ini",
                "config.b=ini",
            ],
        },
    )
    built = build_config(config)
    assert [v.id for v in built.variants] == ["cuda-disabled", "cuda-all", "cpu-disabled", "cpu-all"]
    assert built.settings.intra_op_threads == 4
    assert built.settings.inter_op_threads == 3
    assert dict(built.settings.config_entries) == {"a": "ini", "b": "cli"}
    assert built.inputs == InputOptions(seed=5, dims={"batch": 2}, int_range=(0, 10))


@pytest.mark.parametrize(
    ("cli", "ini", "prefix"),
    [
        ({"ortperf_providers": "gpu"}, {}, "--ort-providers: unknown execution provider 'gpu'"),
        ({}, {"ortperf_providers": "gpu"}, "ini ortperf_providers: unknown execution provider 'gpu'"),
        ({}, {"ortperf_opt_levels": "fast"}, "ini ortperf_opt_levels: unknown graph optimization level"),
        ({"ortperf_seed": "x"}, {}, "--ortperf-seed: seed must be a whole number"),
        ({}, {"ortperf_int_range": "5"}, "ini ortperf_int_range: expected an integer range"),
        ({}, {"ortperf_dims": "batch"}, "ini ortperf_dims: expected NAME=N"),
        (
            {},
            {"ortperf_session_options": ["threads=2"]},
            "ini ortperf_session_options: unknown session setting",
        ),
        (
            {"ortperf_session_options": ["intra_op_threads"]},
            {},
            "--ortperf-session-options: expected KEY=VALUE",
        ),
    ],
)
def test_build_config_errors_name_flag_or_ini_key(
    tmp_path: Path, cli: dict[str, Any], ini: dict[str, Any], prefix: str
) -> None:
    with pytest.raises(UsageError) as info:
        build_config(FakeConfig(tmp_path, cli=cli, ini=ini))
    assert str(info.value).startswith(prefix)


PERCENT_OPTIONS = [o for o in OPTIONS if o.metavar == "PCT"]


def test_every_percentage_option_is_known() -> None:
    assert {o.ini for o in PERCENT_OPTIONS} == {
        "ortperf_latency_threshold",
        "ortperf_drift_threshold",
        "ortperf_ab_threshold",
        "ortperf_max_cv",
    }


@pytest.mark.parametrize("option", PERCENT_OPTIONS, ids=lambda o: o.ini)
@pytest.mark.parametrize("where", ["cli", "ini"])
def test_a_bare_number_above_one_in_a_percentage_option_is_a_usage_error(
    tmp_path: Path, option: Any, where: str
) -> None:
    given = {option.ini: "5"}
    config = FakeConfig(tmp_path, cli=given) if where == "cli" else FakeConfig(tmp_path, ini=given)
    with pytest.raises(UsageError) as info:
        build_config(config)
    name = option.flag if where == "cli" else f"ini {option.ini}"
    assert str(info.value).startswith(f"{name}: did you mean 5%? A bare number is a fraction (0.05 means 5%)")


@pytest.mark.parametrize("option", PERCENT_OPTIONS, ids=lambda o: o.ini)
def test_percentage_options_keep_percent_and_fractions_up_to_one(tmp_path: Path, option: Any) -> None:
    field = {
        "ortperf_latency_threshold": "threshold",
        "ortperf_drift_threshold": "drift_threshold",
        "ortperf_ab_threshold": "threshold",  # deprecated: it sets the one latency threshold
        "ortperf_max_cv": "max_cv",
    }[option.ini]
    for value, expected in (("5%", 0.05), ("0.05", 0.05), ("1", 1.0), ("250%", 2.5)):
        policy = build_config(FakeConfig(tmp_path, cli={option.ini: value})).policy
        assert getattr(policy, field) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("cli", "ini"),
    [({"ortperf_tolerances": ["mismatch=5"]}, {}), ({}, {"ortperf_tolerances": ["y.mismatch=5"]})],
)
def test_a_bare_mismatch_above_one_in_the_tolerance_option_is_a_usage_error(
    tmp_path: Path, cli: dict[str, Any], ini: dict[str, Any]
) -> None:
    with pytest.raises(UsageError) as info:
        build_config(FakeConfig(tmp_path, cli=cli, ini=ini))
    assert "mismatch: did you mean 5%?" in str(info.value)
    assert str(info.value).startswith("--ortperf-tolerances" if cli else "ini ortperf_tolerances")


@pytest.mark.parametrize(
    ("kwargs", "prefix"),
    [
        ({"latency": 5}, "ort_thresholds marker of t.py::t: latency: did you mean 5%?"),
        ({"ab": "20"}, "ort_thresholds marker of t.py::t: ab: did you mean 20%?"),
        ({"memory": 2}, "ort_thresholds marker of t.py::t: memory: did you mean 2%?"),  # the memory kind's
        ({"startup": "30"}, "ort_thresholds marker of t.py::t: startup: did you mean 30%?"),  # start-up's
        ({"mismatch": 2}, "ort_thresholds marker of t.py::t: mismatch: did you mean 2%?"),
        (
            {"outputs": {"y": {"mismatch": 3}}},
            "ort_thresholds marker of t.py::t outputs['y']: mismatch: did you mean 3%?",
        ),
    ],
)
def test_a_bare_number_above_one_in_a_thresholds_marker_names_the_marker_and_key(
    kwargs: dict[str, Any], prefix: str
) -> None:
    from pytest_ortperf.accuracy.tolerances import ToleranceSpec
    from pytest_ortperf.checks.policy import CheckPolicy

    warnings.simplefilter(
        "ignore", pytest.PytestDeprecationWarning
    )  # ab= is deprecated (pytest restores filters)
    from pytest_ortperf.kinds import builtin_kinds

    kinds = builtin_kinds()
    with pytest.raises(UsageError) as info:
        thresholds_for(
            CheckPolicy(),
            ToleranceSpec(),
            [((), kwargs)],
            origin="ort_thresholds marker of t.py::t",
            kind_keys=kinds.threshold_keys(),
            kind_parsers=kinds.threshold_parsers(),
        )
    assert str(info.value).startswith(prefix)


def test_the_graph_keyword_is_the_graph_kinds_and_a_closer_marker_merges_into_a_farther_ones() -> None:
    """``ort_thresholds(graph=...)`` is owned and parsed by the graph kind; a module's pinned counts
    stand under a test's mode, and a closer marker's pins replace a farther one's."""
    from pytest_ortperf.accuracy.tolerances import ToleranceSpec
    from pytest_ortperf.checks.policy import CheckPolicy
    from pytest_ortperf.kinds import builtin_kinds

    kinds = builtin_kinds()

    def limits(*markers: dict[str, Any]) -> object:
        policy, _ = thresholds_for(
            CheckPolicy(),
            ToleranceSpec(),
            [((), marker) for marker in markers],
            origin="m",
            kind_keys=kinds.threshold_keys(),
            kind_parsers=kinds.threshold_parsers(),
            kind_mergers=kinds.threshold_mergers(),
        )
        return policy.kind_thresholds["graph"]

    assert limits({"graph": {"FusedConv": 3}}, {"graph": "Exact"}) == ("exact", (("FusedConv", 3),))
    assert limits({"graph": "exact"}, {"graph": {"FusedConv": 2}}) == ("exact", (("FusedConv", 2),))
    assert limits({"graph": {"FusedConv": 3}}, {"graph": {"Gemm": 1}}) == ("", (("Gemm", 1),))
    assert limits({"graph": "off"}) == ("off", ())
    with pytest.raises(UsageError, match="m: graph: expected a mode"):
        limits({"graph": 3})


def test_a_thresholds_marker_keeps_fractions_and_percentages() -> None:
    from pytest_ortperf.accuracy.tolerances import ToleranceSpec
    from pytest_ortperf.checks.policy import CheckPolicy

    marker = ((), {"latency": 0.2, "mismatch": "1%", "rtol": 5})
    policy, spec = thresholds_for(CheckPolicy(), ToleranceSpec(), [marker], origin="m")
    assert policy.threshold == 0.2
    assert spec.overall == {"mismatch": 0.01, "rtol": 5.0}


class _RecordingParser:
    """Records what register() hands pytest: the ini defaults a run without options gets."""

    def __init__(self) -> None:
        self.ini: dict[str, Any] = {}

    def getgroup(self, *args: Any) -> _RecordingParser:
        return self

    def addoption(self, *args: Any, **kwargs: Any) -> None:
        assert kwargs["default"] is None  # so an ini value is never hidden by a CLI default

    def addini(self, name: str, help: str, *, type: str, default: Any) -> None:
        self.ini[name] = default


def test_the_plugin_defaults_are_the_library_defaults(tmp_path: Path) -> None:
    """The benchmarks measure CheckPolicy() and MeasureSettings(); a run with no options must use them."""
    from pytest_ortperf.checks.policy import CheckPolicy
    from pytest_ortperf.latency.measure import MeasureSettings
    from pytest_ortperf.latency.paired import AB_SETTINGS
    from pytest_ortperf.plugin.options import register

    parser = _RecordingParser()
    register(parser)
    config = FakeConfig(tmp_path)
    config._ini = parser.ini
    policy = build_config(config).policy
    assert policy == CheckPolicy()
    assert policy.measure == MeasureSettings()
    assert policy.ab == AB_SETTINGS


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("4KiB", 4096),
        ("64 MiB", 64 << 20),
        ("2GB", 2 * 10**9),
        ("1048576", 1 << 20),
        ("0.5GiB", 1 << 29),
        ("off", 0),
    ],
)
def test_sizes_take_binary_and_decimal_units(tmp_path: Path, value: str, expected: int) -> None:
    limit = build_config(FakeConfig(tmp_path, cli={"ortperf_memory_limit": value})).kind_options["memory"]
    assert limit["limit"] == expected
    if expected:
        floor = build_config(FakeConfig(tmp_path, ini={"ortperf_memory_floor": value})).kind_options["memory"]
        assert floor["floor"] == expected


@pytest.mark.parametrize("value", ["9" * 400, "2000000TiB", "1" + "0" * 19])
def test_a_size_beyond_any_machine_is_a_usage_error_naming_the_option(tmp_path: Path, value: str) -> None:
    """Found by the long fuzz profile: 4,290 nines overflowed a float into an OverflowError."""
    with pytest.raises(UsageError) as info:
        build_config(FakeConfig(tmp_path, cli={"ortperf_memory_limit": value}))
    assert str(info.value).startswith("--ortperf-memory-limit: ")
    assert "more bytes than any machine has (at most 1 EiB)" in str(info.value)


def test_the_memory_limit_defaults_to_the_physical_memory(tmp_path: Path) -> None:
    options = build_config(FakeConfig(tmp_path)).kind_options["memory"]
    assert options["limit"] == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


@pytest.mark.parametrize(
    ("cli", "message"),
    [
        ({"ortperf_memory_threshold": "2"}, "--ortperf-memory-threshold: did you mean 2%?"),
        ({"ortperf_startup_threshold": "40"}, "--ortperf-startup-threshold: did you mean 40%?"),
        ({"ortperf_memory_floor": "lots"}, "--ortperf-memory-floor: expected a size such as 4KiB"),
    ],
)
def test_the_memory_and_startup_kinds_options_are_parsed_naming_the_flag(
    tmp_path: Path, cli: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError) as info:
        build_config(FakeConfig(tmp_path, cli=cli))
    assert str(info.value).startswith(message)


def test_the_memory_and_startup_kinds_options_reach_their_checks(tmp_path: Path) -> None:
    cli = {"ortperf_memory_threshold": "5%", "ortperf_startup_threshold": "40%"}
    options = build_config(FakeConfig(tmp_path, cli=cli)).kind_options
    assert options["memory"]["threshold"] == pytest.approx(0.05)
    assert options["startup"]["threshold"] == pytest.approx(0.40)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("latency,accuracy", ("latency", "accuracy")), ("memory, startup,memory", ("memory", "startup"))],
)
def test_the_checks_of_check_come_from_the_option_in_order(
    tmp_path: Path, value: str, expected: tuple[str, ...]
) -> None:
    assert build_config(FakeConfig(tmp_path, ini={"ortperf_checks": value})).checks == expected


def test_unset_checks_are_the_kinds_declared_default(tmp_path: Path) -> None:
    from pytest_ortperf.kinds import builtin_kinds

    assert build_config(FakeConfig(tmp_path)).checks == tuple(builtin_kinds().defaults())
    assert build_config(FakeConfig(tmp_path, ini={"ortperf_checks": ""})).checks == (
        "latency",
        "accuracy",
        "graph",
    )


@pytest.mark.parametrize("value", ["latency,speed", " , "])
def test_unknown_or_no_checks_are_a_usage_error_naming_the_ini_key(tmp_path: Path, value: str) -> None:
    with pytest.raises(
        UsageError,
        match=r"^ini ortperf_checks: expected checks from latency, accuracy, graph, memory, startup",
    ):
        build_config(FakeConfig(tmp_path, ini={"ortperf_checks": value}))


@pytest.mark.parametrize(
    ("ini", "field"),
    [
        ("ortperf_strict", "strict"),
        ("ortperf_prune", "prune"),
        ("ortperf_repair", "repair"),
        ("ortperf_session_profile", "session_profile"),
        ("ortperf_parallel_timing", "parallel_timing"),
    ],
)
def test_a_switch_in_the_ini_file_takes_the_one_grammar_and_a_bad_word_names_its_key(
    tmp_path: Path, ini: str, field: str
) -> None:
    assert getattr(build_config(FakeConfig(tmp_path, ini={ini: "yes"})), field) is True
    assert getattr(build_config(FakeConfig(tmp_path, ini={ini: "off"})), field) is False
    assert getattr(build_config(FakeConfig(tmp_path, cli={ini: True}, ini={ini: "no"})), field) is True
    with pytest.raises(UsageError, match=rf"^ini {ini}: expected on or off, got 'maybe'"):
        build_config(FakeConfig(tmp_path, ini={ini: "maybe"}))


# --- a kind's own options: parsed once, where they enter --------------------------------------


def _sizes(text: str, where: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"{where}: whole numbers, comma separated (got {text!r})") from None
    return sizes


class KindOptionsConfig(FakeConfig):
    """A FakeConfig whose kind options were registered (``ortperf_spread_sizes``)."""

    def getoption(self, dest: str, default: Any = None) -> Any:
        return self._cli.get(dest, default)

    def getini(self, name: str) -> Any:
        return self._ini.get(name, "1,8") if name == "ortperf_spread_sizes" else super().getini(name)


def _spread_kinds() -> Any:
    from pytest_ortperf.gate.registry import CheckKind, KindOption
    from pytest_ortperf.kinds import builtin_kinds

    kinds = builtin_kinds()
    option = KindOption("sizes", "batch sizes", "1,8", parse=_sizes)
    kinds.register(
        CheckKind(name="spread", make=lambda context: None, options=(option,)), origin="conftest.py"
    )  # type: ignore[arg-type,return-value]
    return kinds


@pytest.mark.parametrize(
    ("cli", "ini", "expected"),
    [
        ({}, {}, (1, 8)),
        ({}, {"ortperf_spread_sizes": "2,4"}, (2, 4)),
        ({"ortperf_spread_sizes": "16"}, {"ortperf_spread_sizes": "2"}, (16,)),
    ],
)
def test_a_kind_option_reaches_its_check_parsed(
    tmp_path: Path, cli: dict, ini: dict, expected: tuple
) -> None:
    built = build_config(KindOptionsConfig(tmp_path, cli=cli, ini=ini), kinds=_spread_kinds())
    assert built.kind_options["spread"]["sizes"] == expected


@pytest.mark.parametrize(
    ("cli", "ini", "where"),
    [
        ({"ortperf_spread_sizes": "a"}, {}, "--ortperf-spread-sizes"),
        ({}, {"ortperf_spread_sizes": "1,x"}, "ini ortperf_spread_sizes"),
    ],
)
def test_a_bad_kind_option_is_a_usage_error_naming_where_it_came_from(
    tmp_path: Path, cli: dict, ini: dict, where: str
) -> None:
    with pytest.raises(UsageError, match=f"^{where}: whole numbers"):
        build_config(KindOptionsConfig(tmp_path, cli=cli, ini=ini), kinds=_spread_kinds())


# --- every value through its row of the option table ------------------------------------------


class PlacedConfig(FakeConfig):
    """A FakeConfig with an ini file in its own folder and pytest run from another."""

    def __init__(self, root: Path, cli: dict[str, Any], ini: dict[str, Any]) -> None:
        super().__init__(root, cli, ini)
        (root / "conf").mkdir(exist_ok=True)
        (root / "work").mkdir(exist_ok=True)
        self.inipath = root / "conf" / "pytest.ini"
        self.invocation_params = SimpleNamespace(dir=root / "work")


def test_every_row_of_the_table_parses_its_value_and_its_default() -> None:
    for option in OPTIONS:
        assert callable(option.parse), option.ini
        option.typed_default  # noqa: B018 - a default the row cannot read raises here


@pytest.mark.parametrize(
    "ini", ["ortperf_baseline_dir", "ortperf_report", "ortperf_profile_dir", "ortperf_html"]
)
def test_a_path_is_relative_to_where_it_was_written(tmp_path: Path, ini: str) -> None:
    field = {"ortperf_baseline_dir": "baseline_dir", "ortperf_report": "report_path"}.get(ini, "")
    field = field or {"ortperf_profile_dir": "profile_dir", "ortperf_html": "html_path"}[ini]
    from_ini = build_config(PlacedConfig(tmp_path, {}, {ini: "out/x"}))
    assert getattr(from_ini, field) == (tmp_path / "conf" / "out" / "x").resolve()
    from_cli = build_config(PlacedConfig(tmp_path, {ini: "out/x"}, {ini: "elsewhere"}))
    assert getattr(from_cli, field) == (tmp_path / "work" / "out" / "x").resolve()


def test_paths_left_unset_take_their_defaults_under_the_rootdir_or_stay_off(tmp_path: Path) -> None:
    built = build_config(PlacedConfig(tmp_path, {}, {}))
    assert built.baseline_dir == tmp_path / "baselines"
    assert built.profile_dir == tmp_path / ".ortperf" / "profiles"
    assert (built.report_path, built.markdown_path, built.html_path, built.model_cache) == (None,) * 4


def test_a_path_that_cannot_be_used_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"ini ortperf_report: 'a\\x00b' is not a usable path"):
        build_config(PlacedConfig(tmp_path, {}, {"ortperf_report": "a\x00b"}))


def test_a_layered_option_names_the_layer_a_bad_line_came_from(tmp_path: Path) -> None:
    good = ["atol=1e-3"]
    with pytest.raises(UsageError, match=r"^--ortperf-tolerances: expected KEY=VALUE"):
        build_config(FakeConfig(tmp_path, {"ortperf_tolerances": ["atol"]}, {"ortperf_tolerances": good}))
    with pytest.raises(UsageError, match=r"^ini ortperf_tolerances: expected KEY=VALUE"):
        build_config(FakeConfig(tmp_path, {"ortperf_tolerances": good}, {"ortperf_tolerances": ["atol"]}))
    merged = build_config(
        FakeConfig(
            tmp_path, {"ortperf_tolerances": ["rtol=1e-2"]}, {"ortperf_tolerances": ["atol=1e-3", "rtol=1"]}
        )
    ).tolerances
    assert dict(merged.overall) == {"atol": 1e-3, "rtol": 1e-2}


def test_the_checks_option_is_read_by_its_row_and_judged_by_the_registry(tmp_path: Path) -> None:
    built = build_config(FakeConfig(tmp_path, {"ortperf_checks": "accuracy, latency,accuracy"}, {}))
    assert built.checks == ("accuracy", "latency")
    with pytest.raises(UsageError, match=r"^ini ortperf_checks: expected checks from .*; unknown: speed"):
        build_config(FakeConfig(tmp_path, {}, {"ortperf_checks": "latency,speed"}))


def test_model_globs_are_relative_to_the_command_line_or_the_ini_file(tmp_path: Path) -> None:
    from pytest_ortperf.plugin.options import Source

    models = next(o for o in OPTIONS if o.ini == "ortperf_models")
    ini = Source("ini ortperf_models", tmp_path / "conf", tmp_path, tmp_path / "conf" / "pytest.ini")
    globs = models.value(["models/*.onnx", "# a comment", " zoo/* "], ini)
    assert [(g.pattern, g.base) for g in globs] == [
        ("models/*.onnx", tmp_path / "conf"),
        ("zoo/*", tmp_path / "conf"),
    ]
    assert globs[0].source == f"ortperf_models in {tmp_path / 'conf' / 'pytest.ini'}"
    cli = Source("--ortperf-models", tmp_path / "work", tmp_path)
    assert [(g.base, g.source) for g in models.value(["m.onnx"], cli)] == [
        (tmp_path / "work", "--ortperf-models")
    ]
