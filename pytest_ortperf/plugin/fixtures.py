"""The fixtures: ``ort_variant``, ``ort_model``, ``ort_session_info``, ``ort_profiler``,
``ort_session``, ``ort_inputs`` and ``ort_perf``. Each body resolves what pytest knows (markers,
node ids, options) and hands the work to the run's state.

Registered as a plugin by ``pytest_configure``, so that importing the entry point stays cheap.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_ortperf.checks.contracts import Contract, default_contracts
from pytest_ortperf.checks.footprint import FootprintResult
from pytest_ortperf.checks.latency import LatencyResult
from pytest_ortperf.errors import OrtperfError, ProviderUnavailable, UsageError
from pytest_ortperf.footprint.startup import StartupFigures
from pytest_ortperf.gate.protocol import CheckContext
from pytest_ortperf.gate.run import OrtperfRun
from pytest_ortperf.ort.inputs import Feeds, InputOptions
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.transformers import parse_options
from pytest_ortperf.ort.variants import Precision, Variant, parse_variant
from pytest_ortperf.plugin import RUN_KEY
from pytest_ortperf.plugin.benchmark import annotate, publish
from pytest_ortperf.plugin.config import (
    ab_marker,
    expect_contracts,
    input_options,
    model_marker_spec,
    settings_for,
    thresholds_for,
)
from pytest_ortperf.plugin.ort_perf import OrtPerf, key_for
from pytest_ortperf.profiling.book import MarkedProfile
from pytest_ortperf.profiling.run_profilers import ProfiledSession
from pytest_ortperf.store.machine import MACHINE_ENV

T = TypeVar("T")

_NO_MODEL = (
    "{test} uses an ortperf fixture but declares no model. Add "
    "@pytest.mark.ort_model('path/to/model.onnx') to the test, its class, or the module "
    "(pytestmark = pytest.mark.ort_model(...)), or define an 'ort_model' fixture that returns "
    "a path or an onnx.ModelProto."
)


@pytest.fixture
def ort_variant(request: pytest.FixtureRequest) -> Variant:
    """The (execution provider, optimization level) this test instance runs; skips if the EP cannot run."""
    variant = _variant_param(request)
    return _guarded(lambda: _run(request).require_available(variant))


@pytest.fixture
def ort_model(request: pytest.FixtureRequest) -> ModelSource:
    """The model from the nearest ``ort_model`` marker. Override this fixture to supply your own."""
    marker = request.node.get_closest_marker("ort_model")
    if marker is None:
        pytest.fail(_NO_MODEL.format(test=request.node.nodeid), pytrace=False)
    origin = f"ort_model marker of {request.node.nodeid}"
    spec = _guarded(lambda: model_marker_spec(marker.args, marker.kwargs, origin=origin))
    run = _run(request)
    model = _guarded(lambda: run.model(spec, test_dir=_test_dir(request), origin=origin))
    if "transformers" not in marker.kwargs:
        return model
    options = _guarded(lambda: parse_options(marker.kwargs["transformers"], source=origin))
    return _guarded(lambda: run.prepared(model, options))


@pytest.fixture
def ort_session_info(request: pytest.FixtureRequest, ort_variant: Variant, ort_model: Any) -> BuiltSession:
    """The session for ort_model x ort_variant with how it was built: providers, node placement, settings."""
    run = _run(request)
    origin = f"ort_settings marker of {request.node.nodeid}"
    markers = [(m.args, m.kwargs) for m in reversed(list(request.node.iter_markers("ort_settings")))]
    model = _guarded(lambda: run.model(ort_model, test_dir=_test_dir(request), origin="ort_model fixture"))
    settings = _guarded(lambda: settings_for(run.config.settings, markers, origin=origin))
    if ort_variant.precision is not Precision.FP32:
        options = _input_options(request, run)
        sets = (
            request.getfixturevalue("ort_calibration_data")
            if ort_variant.precision is Precision.INT8_STATIC
            else None
        )
        model = _guarded(
            lambda: run.precision_model(model, ort_variant, settings, options=options, calibration_sets=sets)
        )
    return _guarded(lambda: run.session(model, ort_variant, settings))


@pytest.fixture
def ort_calibration_data() -> Any:
    """Input sets that calibrate this test's ``int8-static`` variants: override it to return a list of
    ``{input name: array}``. None (this default): the model's test data sets, else seeded synthetic
    inputs, which the report names as a weak stand-in."""
    return None


@pytest.fixture
def ort_profiler(
    request: pytest.FixtureRequest, ort_session_info: BuiltSession
) -> Iterator[MarkedProfile | None]:
    """For tests marked ``ort_profile``: where their per-run traces go (``.directory``); else None."""
    if request.node.get_closest_marker("ort_profile") is None:
        yield None
        return
    book = _run(request).profiles
    marked = _guarded(lambda: book.start(ort_session_info, request.node.nodeid))
    yield marked
    _guarded(lambda: book.end(marked))
    request.node.user_properties.append(("ortperf_profile_summary", str(marked.directory / "summary.json")))
    request.node.user_properties += [("ortperf_trace", str(path)) for path in marked.expected_traces()]


@pytest.fixture
def ort_session(
    request: pytest.FixtureRequest, ort_session_info: BuiltSession, ort_profiler: MarkedProfile | None
) -> Any:
    """An ``onnxruntime.InferenceSession`` for ort_model x ort_variant, built once per run and reused.

    In a test marked ``ort_profile`` every ``run`` also writes its own trace.
    """
    if ort_profiler is not None:
        return ort_profiler.session()
    book = _run(request).profiles
    if book.session_profile:
        return ProfiledSession(ort_session_info.session, _guarded(lambda: book.shared(ort_session_info)))
    return ort_session_info.session


@pytest.fixture
def ort_inputs(request: pytest.FixtureRequest, ort_session_info: BuiltSession) -> Feeds:
    """Deterministic feeds: the model's test_data_set_0, an .npz beside it, or seeded synthetic data."""
    run = _run(request)
    options = _input_options(request, run)
    return _guarded(lambda: run.feeds(ort_session_info, options))


def _input_options(request: pytest.FixtureRequest, run: OrtperfRun) -> InputOptions:
    """The run's input options with the ``ort_model`` markers' ``dims``, ``int_range`` and ``seed``."""
    kwargs: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("ort_model"))):  # closest wins, per keyword
        kwargs.update({k: v for k, v in marker.kwargs.items() if k not in ("path", "transformers")})
    origin = f"ort_model marker of {request.node.nodeid}"
    return _guarded(lambda: input_options(run.config.inputs, kwargs, origin=origin))


@pytest.fixture
def ort_perf(
    request: pytest.FixtureRequest,
    ort_session_info: BuiltSession,
    ort_inputs: Feeds,
    ort_profiler: MarkedProfile | None,
) -> OrtPerf:
    """Checks against this test's baselines: ``check_latency()``, ``check_accuracy()``, ``check()``."""
    run = _run(request)
    origin = f"ort_thresholds marker of {request.node.nodeid}"
    markers = [(m.args, m.kwargs) for m in reversed(list(request.node.iter_markers("ort_thresholds")))]
    policy, tolerances = _guarded(
        lambda: thresholds_for(run.config.policy, run.config.tolerances, markers, origin=origin)
    )
    machine = _guarded(lambda: run.machine)
    carried = _carried_options(request.config.invocation_params.args)
    key = key_for(
        request.node.nodeid,
        _selector(request),
        ort_session_info.variant.id,
        machine.key,
        " ".join(carried),
        environment=_carried_environment(machine.name, carried),
    )
    directory = ort_session_info.model.directory
    ab_mark = request.node.get_closest_marker("ort_ab")
    ab_origin = f"ort_ab marker of {request.node.nodeid}"
    rootdir = run.config.rootdir
    ab_spec = (
        _guarded(lambda: ab_marker(ab_mark.args, ab_mark.kwargs, origin=ab_origin, rootdir=rootdir))
        if ab_mark
        else None
    )
    ab_test_dir = _test_dir(request)
    context = CheckContext(
        run=run,
        built=ort_session_info,
        feeds=ort_inputs,
        key=key,
        policy=policy,
        tolerances=tolerances,
        reference=lambda: run.reference_choice(ort_session_info),
        nodeid=request.node.nodeid,
        add_property=lambda name, value: request.node.user_properties.append((name, value)),
        profiler=ort_profiler,
        ab=lambda: run.ab_reference(ort_session_info.model, ab_spec, test_dir=ab_test_dir, origin=ab_origin),
        data_set=directory / ort_inputs.source
        if directory and ort_inputs.source.startswith("test_data_set_")
        else None,
        other_variant=lambda variant_id: _other_variant(request, run, ort_session_info, variant_id),
    )
    run.results.describe(request.node.nodeid, run.model_facts(ort_session_info))
    expect_origin = f"ort_expect marker of {request.node.nodeid}"
    expect = [(m.args, m.kwargs) for m in reversed(list(request.node.iter_markers("ort_expect")))]
    contracts = _guarded(lambda: expect_contracts(expect, origin=expect_origin))
    defaults = default_contracts(ort_session_info.variant, run.config.variants, run.config.contracts)
    return OrtPerf(
        context,
        contracts=_merged_contracts(defaults, contracts),
        fail=lambda message: pytest.fail(message, pytrace=False),
        skip=pytest.skip,
        on_result=lambda result: _publish_to_pytest_benchmark(request, result),
        on_footprint=lambda result: _footprint_to_pytest_benchmark(request, result),
    )


def _other_variant(
    request: pytest.FixtureRequest, run: OrtperfRun, built: BuiltSession, variant_id: str
) -> BuiltSession:
    """This test's model at another variant, for a contract: its fp32 model at that variant's
    precision, under this test's settings (the static int8 build reuses this variant's calibration,
    when it has one)."""
    variant = parse_variant(variant_id, source=f"contract of {request.node.nodeid}")
    if variant is None:
        raise UsageError(f"contract of {request.node.nodeid}: no variant named {variant_id!r}.")
    run.require_available(variant)
    made = run.made_from(built.model)
    source, calibration = made if made is not None else (built.model, None)
    sets = None
    if variant.precision is Precision.INT8_STATIC and calibration is None:
        sets = request.getfixturevalue("ort_calibration_data")
    model = run.precision_model(
        source,
        variant,
        built.settings,
        options=_input_options(request, run),
        calibration_sets=sets,
        calibration=calibration if variant.precision is Precision.INT8_STATIC else None,
    )
    return run.session(model, variant, built.settings)


def _merged_contracts(*groups: Sequence[Contract]) -> tuple[Contract, ...]:
    """Contracts from defaults, then markers: a later one of the same kind and other variant replaces
    an earlier one."""
    merged: dict[tuple[str, str], Contract] = {}
    for group in groups:
        for contract in group:
            merged[(contract.kind, contract.other)] = contract
    return tuple(merged.values())


def _publish_to_pytest_benchmark(request: pytest.FixtureRequest, result: LatencyResult) -> bool:
    """Show the check in pytest-benchmark's table and JSON too, when that plugin is active (a check
    that timed nothing, one that passed as the same graph, has no rounds to show)."""
    current = result.current
    if not current.rounds:
        return False
    return publish(
        request.config,
        request.node,
        round_medians_ms=current.round_medians_ms,
        runs_per_round=current.count // current.rounds,
        group="ortperf",
        extra_info={
            "variant": result.key.variant,
            "machine": result.key.machine,
            "verdict": str(result.status),
            "baseline_median_ms": result.baseline_median_ms,
            "change": result.change,
            "mode": result.mode,
            "path": result.path,
            "decided_by": result.basis,
            "reference": result.reference_label,
        },
    )


def _footprint_to_pytest_benchmark(request: pytest.FixtureRequest, result: FootprintResult) -> bool:
    """Start-up: one pytest-benchmark entry (``<node id>::startup``, group ``ortperf-startup``), a fresh
    process's session creation per round. Memory has no time to publish: its figures go into the
    ``extra_info`` of the test's other ortperf entries (``ortperf_memory``), when it has any."""
    current = result.current
    info: dict[str, object] = {
        "check": result.kind,
        "variant": result.key.variant,
        "machine": result.key.machine,
        "verdict": str(result.status),
        "path": result.path,
        "change": result.change,
    }
    if isinstance(current, StartupFigures):
        return publish(
            request.config,
            request.node,
            round_medians_ms=current.create_ms,
            runs_per_round=1,
            group="ortperf-startup",
            fullname=f"{request.node.nodeid}::startup",
            name=f"{request.node.nodeid}::startup",
            extra_info={
                **info,
                "first_run_ms": current.median("first_run_ms"),
                "steady_run_ms": current.median("steady_run_ms"),
                **({"engine_cache": current.engine_cache} if current.engine_cache else {}),
            },
        )
    if current is None:
        return False
    return annotate(request.config, request.node, {"ortperf_memory": {**info, **current.as_dict()}})


_NOT_CARRIED = {
    "--ortperf-ab",
    "--ortperf-timing",  # an update needs timing
    "--ortperf-update",
    "--ortperf-prune",
    "--ortperf-missing",
    "--ortperf-fail-on-improvement",
}
_FLAGS = {"--ortperf-update", "--ortperf-prune", "--ortperf-fail-on-improvement"}


def _carried_options(args: Sequence[str]) -> list[str]:
    """The --ort*/--ortperf* options of this run, for the command that records a baseline."""
    carried, position = [], 0
    while position < len(args):
        arg = args[position]
        name = arg.split("=", 1)[0]
        takes_value = name.startswith("--ort") and "=" not in arg and name not in _FLAGS
        if name.startswith("--ort") and name not in _NOT_CARRIED:
            carried.append(shlex.quote(arg))
            if takes_value and position + 1 < len(args):
                carried.append(shlex.quote(args[position + 1]))
        position += 2 if takes_value else 1
    return carried


def _carried_environment(machine_name: str, carried: Sequence[str]) -> str:
    """``ORTPERF_MACHINE=<name>`` when the runner class came from the environment: the command that
    records a baseline must record it for the same runner class, and a shell that copies it may not
    have the variable set."""
    from_flag = any(arg.split("=", 1)[0] == "--ortperf-machine" for arg in carried)
    if from_flag or os.environ.get(MACHINE_ENV) != machine_name:
        return ""
    return f"{MACHINE_ENV}={shlex.quote(machine_name)}"


def _selector(request: pytest.FixtureRequest) -> str:
    """The node id as the user types it from where pytest was invoked."""
    path = Path(request.node.path)
    try:
        shown = path.relative_to(request.config.invocation_params.dir).as_posix()
    except ValueError:
        shown = str(path)
    _, _, rest = request.node.nodeid.partition("::")
    return f"{shown}::{rest}"


def _run(request: pytest.FixtureRequest) -> OrtperfRun:
    return request.config.stash[RUN_KEY]


def _test_dir(request: pytest.FixtureRequest) -> Path:
    return Path(request.node.path).parent


def _variant_param(request: pytest.FixtureRequest) -> Variant:
    param = getattr(request, "param", None)
    if not isinstance(param, Variant):
        pytest.fail(
            f"{request.node.nodeid}: ort_variant is parametrized by pytest-ortperf; request it as a "
            "test argument (or through ort_session/ort_inputs), not via getfixturevalue.",
            pytrace=False,
        )
    return param


def _guarded(action: Callable[[], T]) -> T:
    """Run ``action``; report our errors as a clean failure, or a skip for an unusable provider."""
    __tracebackhide__ = True
    try:
        return action()
    except OrtperfError as exc:
        problem = exc
    # Raised outside the except block, so the report shows our message without a chained traceback.
    if isinstance(problem, ProviderUnavailable):
        pytest.skip(str(problem))
    pytest.fail(str(problem), pytrace=False)
