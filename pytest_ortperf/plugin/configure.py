"""Turning pytest's options, ini keys and markers into frozen ortperf values.

Only the pytest layer calls this; everything below sees the frozen
:class:`OrtperfConfig`, never pytest's ``Config``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_ortperf.accuracy.tolerances import (
    ToleranceSpec,
    parse_selector,
    parse_tolerance_values,
)
from pytest_ortperf.checks.contract_verdicts import Contract, parse_contracts
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.errors import UsageError
from pytest_ortperf.gate.registry import KindRegistry
from pytest_ortperf.gate.run_config import ABMarker, OrtperfConfig
from pytest_ortperf.latency.measure import MeasureSettings
from pytest_ortperf.latency.paired import AB_SETTINGS
from pytest_ortperf.ort.inputs import InputOptions
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.variants import (
    parse_variant,
    variant_matrix,
)
from pytest_ortperf.plugin.options import (
    OPTIONS,
    Layer,
    Source,
    parse_dims,
    parse_int_range,
    parse_seed,
    parse_shapes,
    python_path,
)
from pytest_ortperf.values import parse_threshold

MODEL_MARKER_KWARGS = ("path", "shapes", "dims", "int_range", "seed", "transformers")
AB_MARKER_KWARGS = ("reference", "rev", "python")
THRESHOLD_KWARGS = (
    "latency",
    "ab",
    "atol",
    "rtol",
    "cosine",
    "mismatch",
    "outputs",
    "dtypes",
    "variants",
)


_BY_INI = {option.ini: option for option in OPTIONS}


def _value(config: Any, ini: str) -> tuple[Any, Source]:
    """The command-line value if given, else the ini value; with where it came from."""
    option = _BY_INI[ini]
    cli = config.getoption(option.dest)
    if cli is not None:
        return cli, _source(config, option.flag)
    return config.getini(ini), _source(config, f"ini {ini}")


def _source(config: Any, where: str) -> Source:
    """Where a value came from, with the folder a relative path in it means: where pytest ran for
    the command line, the ini file's folder for the ini file (the rootdir without one)."""
    rootdir = Path(config.rootpath)
    inipath = getattr(config, "inipath", None)
    ini_file = Path(inipath) if inipath else None
    if where.startswith("--"):
        params = getattr(config, "invocation_params", None)
        directory = Path(params.dir) if params is not None else rootdir
    else:
        directory = ini_file.parent if ini_file is not None else rootdir
    return Source(where, directory, rootdir, ini_file)


def parsed_option(config: Any, ini: str) -> tuple[Any, Source]:
    """The typed value of an option, parsed once by its row of the table (``OptionDef.parse``) from
    the command line, else the ini file; a layered row's from both (the ini file's lines first), and
    where the value came from (the command line's, where it gave one)."""
    option = _BY_INI[ini]
    if not option.layered:
        given, source = _value(config, ini)
        return option.value(given, source), source
    ini_source = _source(config, f"ini {ini}")
    layers = [Layer(tuple(config.getini(ini) or ()), ini_source)]
    cli = config.getoption(option.dest)
    if cli:
        layers.append(Layer(tuple(cli), _source(config, option.flag)))
    return option.value(tuple(layers), layers[-1].source), layers[-1].source


def _parsed(config: Any, ini: str) -> Any:
    return parsed_option(config, ini)[0]


def build_config(config: Any, *, kinds: KindRegistry | None = None) -> OrtperfConfig:
    registry = kinds if kinds is not None else _builtin_kinds()
    specs = _parsed(config, "ortperf_providers")
    levels = _parsed(config, "ortperf_opt_levels")
    precisions = _parsed(config, "ort_precisions")

    inputs = InputOptions(
        seed=_parsed(config, "ortperf_seed"),
        dims=_parsed(config, "ortperf_dims"),
        int_range=_parsed(config, "ortperf_int_range"),
    )
    policy = _policy(config)
    return OrtperfConfig(
        variants=variant_matrix(specs, levels, precisions),
        settings=_parsed(config, "ortperf_session_options"),
        inputs=inputs,
        rootdir=Path(config.rootpath),
        baseline_dir=_parsed(config, "ortperf_baseline_dir"),
        policy=policy,
        machine=_parsed(config, "ortperf_machine"),
        prune=_parsed(config, "ortperf_prune"),
        tolerances=_parsed(config, "ortperf_tolerances"),
        reference_variant=_parsed(config, "ortperf_reference_variant"),
        profile_dir=_parsed(config, "ortperf_profile_dir"),
        session_profile=_parsed(config, "ortperf_session_profile"),
        parallel_timing=_parsed(config, "ortperf_parallel_timing"),
        report_path=_parsed(config, "ortperf_report"),
        markdown_path=_parsed(config, "ortperf_markdown"),
        html_path=_parsed(config, "ortperf_html"),
        model_cache=_parsed(config, "ortperf_model_cache"),
        strict=_parsed(config, "ortperf_strict"),
        run_timeout_s=_parsed(config, "ortperf_run_timeout"),
        repair=_parsed(config, "ortperf_repair"),
        ab_rev=_parsed(config, "ortperf_ab"),
        ab_python=_parsed(config, "ortperf_ab_python"),
        fetch_runtime=_parsed(config, "ortperf_fetch_runtime"),
        canary=_parsed(config, "ortperf_canary"),
        ab_outputs_fail=_parsed(config, "ortperf_ab_outputs") == "check",
        progress=_parsed(config, "ortperf_progress"),
        timing=_timing(config, update=policy.update),
        checks=_checks(config, registry),
        kind_options=_kind_options(config, registry),
        contracts=_parsed(config, "ortperf_contracts"),
    )


def _kind_options(config: Any, kinds: KindRegistry) -> dict[str, dict[str, Any]]:
    """Each kind's own options (``CheckKind.options``): the command line's value, else the ini
    file's, else the default, parsed by the option's ``parse`` (a UsageError naming where the value
    came from); a built-in key claimed as a kind's threshold key is a usage error."""
    claimed = sorted(set(kinds.threshold_keys()) & set(THRESHOLD_KWARGS))
    if claimed:
        owners = ", ".join(f"{key} (by {kinds.threshold_keys()[key]})" for key in claimed)
        raise UsageError(f"ort_thresholds keyword(s) claimed by a registered kind are built in: {owners}.")
    values: dict[str, dict[str, Any]] = {}
    for kind in kinds:
        for option in kind.options:
            ini = option.ini(kind.name)
            where = option.flag(kind.name)
            try:
                given = config.getoption(ini)
            except ValueError:  # not registered: the kind came too late for pytest's options
                given = None
            if given is None:
                where = f"ini {ini}"
                try:
                    given = config.getini(ini)
                except ValueError:  # not registered
                    given = None
            if given is None or (where.startswith("ini ") and str(given) == option.default):
                given, where = option.default, f"the default of {option.flag(kind.name)}"
            text = str(given)
            try:
                parsed = option.parse(text, where) if option.parse is not None else text
            except (ValueError, TypeError) as exc:  # a parser that does not raise a UsageError itself
                raise UsageError(f"{where}={text!r}: {exc}") from None
            values.setdefault(kind.name, {})[option.name] = parsed
    return values


def _builtin_kinds() -> KindRegistry:
    from pytest_ortperf.kinds import builtin_kinds

    return builtin_kinds()


def _checks(config: Any, kinds: KindRegistry) -> tuple[str, ...]:
    """``ortperf_checks``: what ``ort_perf.check()`` runs, in the order given, from the run's kinds;
    when it is not set, the kinds that declare themselves default (``CheckKind.default``), in the
    order they were registered."""
    value, source = _value(config, "ortperf_checks")
    names = _BY_INI["ortperf_checks"].value(value, source)
    if not names and not str(value or "").strip():
        return tuple(kinds.defaults())
    unknown = [name for name in names if name not in kinds]
    if unknown or not names:
        known = "; ".join(f"{kind.name} ({kind.summary})" if kind.summary else kind.name for kind in kinds)
        raise UsageError(
            f"{source}: expected checks from {', '.join(kinds.names())}, comma separated"
            + (f"; unknown: {', '.join(unknown)}" if unknown else "; got none")
            + f". The kinds: {known}."
        )
    return tuple(names)


def _timing(config: Any, *, update: bool) -> bool:
    """``--ortperf-timing``: off runs sessions and accuracy checks only. An update records latency
    baselines, which need timing: asking for both is a usage error, never a silent half-update."""
    timing: bool = _parsed(config, "ortperf_timing")
    if not timing and update:
        _, where = _value(config, "ortperf_timing")
        raise UsageError(
            f"{where}: timing is off, but --ortperf-update records latency baselines, which need timing; "
            "update with --ortperf-timing=on."
        )
    return timing


def ab_marker(
    args: Sequence[Any], kwargs: Mapping[str, Any], *, origin: str, rootdir: Path = Path(".")
) -> ABMarker:
    """``ort_ab(reference)``, ``ort_ab(rev="origin/main")``, ``ort_ab(python=PATH)``; python= combines
    with either of the others."""
    unknown = sorted(set(kwargs) - set(AB_MARKER_KWARGS))
    reference = args[0] if args else kwargs.get("reference")
    rev = kwargs.get("rev", "")
    python = kwargs.get("python", "")
    named = (reference is not None) + bool(rev)
    malformed = len(args) > 1 or (args and "reference" in kwargs) or named > 1 or not (named or python)
    if unknown or malformed:
        raise UsageError(
            f"{origin}: ort_ab takes one reference model (a path or ModelProto) or rev='REVISION', "
            "and/or python='PATH', e.g. ort_ab('models/resnet50_v1.onnx'), ort_ab(rev='origin/main') "
            "or ort_ab(python='.ortperf/envs/3f2a/bin/python')"
            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            + "."
        )
    if rev and (not isinstance(rev, str) or rev.strip().startswith("-") or not rev.strip()):
        raise UsageError(f"{origin}: ort_ab rev must be a git revision, got {rev!r}.")
    if python and not isinstance(python, (str, os.PathLike)):
        raise UsageError(f"{origin}: ort_ab python must be a path to an interpreter, got {python!r}.")
    where = f"{origin}: python"
    interpreter = python_path(os.fspath(python), source=where, rootdir=rootdir) if python else ""
    return ABMarker(reference, str(rev).strip(), interpreter)


AB_THRESHOLD_DEPRECATED = (
    "{where} is deprecated and will be removed in a later release: one latency threshold decides "
    "every latency route; use --ortperf-latency-threshold (ini ortperf_latency_threshold, marker "
    "ort_thresholds(latency=...))"
)


def _latency_threshold(config: Any) -> float:
    """The one latency threshold: --ortperf-latency-threshold, else a deprecated --ortperf-ab-threshold
    (with a warning), else the ini keys in the same order."""
    threshold, source = parsed_option(config, "ortperf_latency_threshold")
    ab_cli = config.getoption("ortperf_ab_threshold")
    ab_ini = str(config.getini("ortperf_ab_threshold") or "").strip()
    for given, where in ((ab_cli, "--ortperf-ab-threshold"), (ab_ini, "ini ortperf_ab_threshold")):
        if given:
            warning = pytest.PytestDeprecationWarning(AB_THRESHOLD_DEPRECATED.format(where=where))
            config.issue_config_time_warning(warning, stacklevel=2)
    earlier, _ = parsed_option(config, "ortperf_ab_threshold")
    if earlier is None or source.command_line:
        return float(threshold)
    # The deprecated flag beats the ini file; the deprecated ini key beats only a latency key left
    # at its default.
    if ab_cli or config.getini("ortperf_latency_threshold") == _BY_INI["ortperf_latency_threshold"].default:
        return float(earlier)
    return float(threshold)


def _policy(config: Any) -> CheckPolicy:
    update_missing = bool(config.getoption("ortperf_update_missing"))
    return CheckPolicy(
        threshold=_latency_threshold(config),
        missing=_parsed(config, "ortperf_missing"),
        update=_parsed(config, "ortperf_update") or update_missing,
        update_missing=update_missing,
        fail_on_improvement=_parsed(config, "ortperf_fail_on_improvement"),
        max_cv=_parsed(config, "ortperf_max_cv"),
        measure=MeasureSettings(budget_s=_parsed(config, "ortperf_budget")),
        ab=replace(AB_SETTINGS, budget_s=_parsed(config, "ortperf_ab_budget")),
        drift_threshold=_parsed(config, "ortperf_drift_threshold"),
    )


def thresholds_for(
    base: CheckPolicy,
    base_tolerances: ToleranceSpec,
    markers: Sequence[tuple[Sequence[Any], Mapping[str, Any]]],
    *,
    origin: str,
    kind_keys: Mapping[str, str] | None = None,
    kind_parsers: Mapping[str, Callable[[object, str], Any]] | None = None,
    kind_mergers: Mapping[str, Callable[[Any, Any], Any]] | None = None,
) -> tuple[CheckPolicy, ToleranceSpec]:
    """Apply ``ort_thresholds`` markers, farthest first, so the closest one wins.

    ``latency`` sets the latency threshold; ``atol``, ``rtol``, ``cosine`` and
    ``mismatch`` the accuracy tolerances of every output; ``outputs``, ``dtypes``
    and ``variants`` map an output name, a dtype (``float16``) or a variant or
    provider (``cuda-all``, ``cuda``) to their own tolerances. ``kind_keys``: the keywords registered
    kinds own (key -> kind), whose values go to ``policy.kind_thresholds``, parsed by their kind's
    ``kind_parsers`` (key -> parser) where it has one, else as given, and combined with a farther
    marker's value by ``kind_mergers`` (key -> merge) where its kind merges (``graph``), else
    replacing it.
    """
    policy, tolerances = base, base_tolerances
    owned = dict(kind_keys or {})
    for args, kwargs in markers:
        unknown = sorted(set(kwargs) - set(THRESHOLD_KWARGS) - set(owned))
        if args or unknown:
            raise UsageError(
                f"{origin}: ort_thresholds takes keyword arguments {', '.join([*THRESHOLD_KWARGS, *owned])}"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                + ", e.g. ort_thresholds(latency='5%', atol=1e-4)."
            )
        parsers = kind_parsers or {}
        mine = {
            key: parsers[key](value, f"{origin}: {key}") if key in parsers else value
            for key, value in kwargs.items()
            if key in owned
        }
        for key, value in mine.items():
            merge, farther = (kind_mergers or {}).get(key), policy.kind_thresholds.get(key)
            if merge is not None and farther is not None:
                mine[key] = merge(farther, value)
        if mine:
            policy = replace(policy, kind_thresholds={**policy.kind_thresholds, **mine})
        if "latency" in kwargs:
            latency = parse_threshold(kwargs["latency"], source=f"{origin}: latency")
            policy = replace(policy, threshold=latency)
        if "ab" in kwargs:
            warnings.warn(
                pytest.PytestDeprecationWarning(
                    AB_THRESHOLD_DEPRECATED.format(where=f"{origin}: ort_thresholds(ab=...)")
                ),
                stacklevel=2,
            )
            if "latency" not in kwargs:
                policy = replace(policy, threshold=parse_threshold(kwargs["ab"], source=f"{origin}: ab"))
        overall = {k: v for k, v in kwargs.items() if k in ("atol", "rtol", "cosine", "mismatch")}
        scoped = {
            scope: _marker_scope(kwargs.get(scope, {}), scope=scope, origin=origin)
            for scope in ("outputs", "dtypes", "variants")
        }
        tolerances = tolerances.merged(
            ToleranceSpec(
                parse_tolerance_values(overall, source=origin),
                scoped["outputs"],
                scoped["dtypes"],
                scoped["variants"],
            )
        )
    return policy, tolerances


_MARKER_SCOPES = {
    "outputs": ("output", "output names", "{'logits': {'atol': 1e-3}}"),
    "dtypes": ("dtype", "dtypes", "{'float16': {'atol': 1e-2}}"),
    "variants": ("variant", "variants or providers", "{'cuda': {'rtol': 1e-3}}"),
}


def _marker_scope(values: Any, *, scope: str, origin: str) -> dict[str, dict[str, float]]:
    """``ort_thresholds(outputs=/dtypes=/variants={selector: {metric: value}})``, checked."""
    prefix, what, example = _MARKER_SCOPES[scope]
    if not isinstance(values, Mapping) or not all(isinstance(v, Mapping) for v in values.values()):
        raise UsageError(f"{origin}: {scope} must map {what} to tolerances, e.g. {example}.")
    parsed: dict[str, dict[str, float]] = {}
    for name, metrics in values.items():
        where = f"{origin} {scope}[{name!r}]"
        # dtypes and variants are checked like the option's dtype:/variant: keys
        selector = str(name) if scope == "outputs" else parse_selector(prefix, str(name), where=where)
        parsed[selector] = parse_tolerance_values(metrics, source=where)
    return parsed


def variant_id(text: str, *, source: str) -> str:
    """A variant id as ids spell it (``cpu-disabled``, ``cpu-all-int8-dynamic``), checked."""
    variant = parse_variant(text, source=source) if isinstance(text, str) and text.strip() else None
    if variant is None:
        raise UsageError(
            f"{source}: expected a variant id such as cpu-disabled or cpu-all-int8-dynamic, got {text!r}."
        )
    return variant.id


def expect_contracts(
    markers: Sequence[tuple[Sequence[Any], Mapping[str, Any]]], *, origin: str
) -> tuple[Contract, ...]:
    """``ort_expect(faster_than={...}, agreement={...})`` markers, farthest first, as contracts (a
    closer marker's contract with the same variant replaces a farther one's)."""
    merged: dict[tuple[str, str], Contract] = {}
    for args, kwargs in markers:
        unknown = sorted(set(kwargs) - {"faster_than", "agreement"})
        if args or unknown:
            raise UsageError(
                f"{origin}: ort_expect takes faster_than={{variant: speedup}} and "
                "agreement={variant: share} as keywords only"
                + (f"; unknown: {', '.join(unknown)}" if unknown else "")
                + "."
            )
        for contract in parse_contracts(
            kwargs.get("faster_than"), kwargs.get("agreement"), source=origin, check_id=variant_id
        ):
            merged[(contract.kind, contract.other)] = contract
    return tuple(merged.values())


def model_marker_spec(args: Sequence[Any], kwargs: Mapping[str, Any], *, origin: str) -> Any:
    """The model argument of ``@pytest.mark.ort_model(...)``, checked for shape."""
    unknown = sorted(set(kwargs) - set(MODEL_MARKER_KWARGS))
    if unknown:
        raise UsageError(
            f"{origin}: unknown argument(s) {', '.join(unknown)}; "
            f"ort_model takes a model and optionally {', '.join(MODEL_MARKER_KWARGS[1:])}."
        )
    given = list(args) + ([kwargs["path"]] if "path" in kwargs else [])
    if len(given) != 1:
        raise UsageError(
            f"{origin}: ort_model takes exactly one model (a path or an onnx.ModelProto), got {len(given)}."
        )
    return given[0]


def input_options(
    base: InputOptions, kwargs: Mapping[str, Any], *, origin: str, origins: Mapping[str, str] | None = None
) -> InputOptions:
    """Apply ``shapes=``, ``dims=``, ``int_range=`` and ``seed=`` from an ``ort_model`` marker (or a
    model table: ``origins`` then names where each key came from).

    ``int_range`` is one range for every integer input, or a mapping of input
    name to range. The ``dims`` names given here are this model's: each must match a dim of its inputs
    (``ort/inputs.py: check_options``), unlike the run-wide ``--ortperf-dims``.
    """
    options = base
    if "shapes" in kwargs:
        where = (origins or {}).get("shapes", origin)
        options = replace(options, shapes=parse_shapes(kwargs["shapes"], source=where), shapes_origin=where)
    if "dims" in kwargs:
        where = (origins or {}).get("dims", origin)
        dims = parse_dims(kwargs["dims"], source=where)
        options = replace(options, dims={**base.dims, **dims}, model_dims=frozenset(dims), dims_origin=where)
    if "seed" in kwargs:
        options = replace(options, seed=parse_seed(kwargs["seed"], source=origin))
    if "int_range" in kwargs:
        value = kwargs["int_range"]
        if isinstance(value, Mapping):
            ranges = {
                str(k): parse_int_range(v, source=f"{origin} int_range[{k!r}]") for k, v in value.items()
            }
            options = replace(options, int_ranges={**base.int_ranges, **ranges})
        else:
            options = replace(options, int_range=parse_int_range(value, source=origin))
    return options


def settings_for(
    base: SessionSettings, markers: Sequence[tuple[Sequence[Any], Mapping[str, Any]]], *, origin: str
) -> SessionSettings:
    """Apply ``ort_settings`` markers, farthest first, so the closest one wins."""
    settings = base
    for args, kwargs in markers:
        if args:
            raise UsageError(f"{origin}: ort_settings takes keyword arguments only, e.g. intra_op_threads=2.")
        settings = settings.with_overrides(kwargs, source=origin)
    return settings
