"""The fixtures: ``ort_variant``, ``ort_model``, ``ort_session_info``, ``ort_profiler``,
``ort_session``, ``ort_inputs`` and ``ort_perf``. Each body resolves what pytest knows (markers,
node ids, options) and hands the work to the run's state.

Registered as a plugin by ``pytest_configure``, so that importing the entry point stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ortperf.gate.run import OrtperfRun
from pytest_ortperf.ort.inputs import Feeds, InputOptions
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.transformers import parse_options
from pytest_ortperf.ort.variants import Precision, Variant
from pytest_ortperf.plugin import RUN_KEY
from pytest_ortperf.plugin.configure import (
    input_options,
    model_marker_spec,
    settings_for,
)
from pytest_ortperf.plugin.instance_context import InstanceSpec, make_ort_perf
from pytest_ortperf.plugin.instance_context import guarded as _guarded
from pytest_ortperf.plugin.ort_perf import OrtPerf
from pytest_ortperf.profiling.book import MarkedProfile
from pytest_ortperf.profiling.run_profilers import ProfiledSession

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
    return _guarded(lambda: _run(request).sessions.require_available(variant))


@pytest.fixture
def ort_model(request: pytest.FixtureRequest) -> ModelSource:
    """The model from the nearest ``ort_model`` marker. Override this fixture to supply your own."""
    marker = request.node.get_closest_marker("ort_model")
    if marker is None:
        pytest.fail(_NO_MODEL.format(test=request.node.nodeid), pytrace=False)
    origin = f"ort_model marker of {request.node.nodeid}"
    spec = _guarded(lambda: model_marker_spec(marker.args, marker.kwargs, origin=origin))
    run = _run(request)
    model = _guarded(lambda: run.models.model(spec, test_dir=_test_dir(request), origin=origin))
    if "transformers" not in marker.kwargs:
        return model
    options = _guarded(lambda: parse_options(marker.kwargs["transformers"], source=origin))
    return _guarded(lambda: run.models.prepared(model, options))


@pytest.fixture
def ort_session_info(request: pytest.FixtureRequest, ort_variant: Variant, ort_model: Any) -> BuiltSession:
    """The session for ort_model x ort_variant with how it was built: providers, node placement, settings."""
    run = _run(request)
    # Building (models, precision builds, the session): never beside another process's decision.
    with run.measurer.untimed(request.node.name):
        origin = f"ort_settings marker of {request.node.nodeid}"
        markers = [(m.args, m.kwargs) for m in reversed(list(request.node.iter_markers("ort_settings")))]
        model = _guarded(
            lambda: run.models.model(ort_model, test_dir=_test_dir(request), origin="ort_model fixture")
        )
        settings = _guarded(lambda: settings_for(run.config.settings, markers, origin=origin))
        if ort_variant.precision is not Precision.FP32:
            options = _input_options(request, run)
            sets = (
                request.getfixturevalue("ort_calibration_data")
                if ort_variant.precision is Precision.INT8_STATIC
                else None
            )
            model = _guarded(
                lambda: run.models.precision_model(
                    model, ort_variant, settings, options=options, calibration_sets=sets
                )
            )
        return _guarded(lambda: run.sessions.session(model, ort_variant, settings))


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
    return _guarded(lambda: run.models.feeds(ort_session_info, options))


def _input_options(request: pytest.FixtureRequest, run: OrtperfRun) -> InputOptions:
    """The run's input options with the ``ort_model`` markers' ``dims``, ``int_range`` and ``seed``."""
    kwargs: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("ort_model"))):  # closest wins, per keyword
        kwargs.update({k: v for k, v in marker.kwargs.items() if k not in ("path", "transformers")})
    origin = f"ort_model marker of {request.node.nodeid}"
    return _guarded(lambda: input_options(run.config.inputs, kwargs, origin=origin))


@pytest.fixture
def ort_perf(
    request: pytest.FixtureRequest, ort_session_info: BuiltSession, ort_profiler: MarkedProfile | None
) -> OrtPerf:
    """Checks against this test's baselines: ``check_latency()``, ``check_accuracy()``, ``check()``."""
    run, node = _run(request), request.node
    # ort_inputs when the test asks for it (an error there is the test's error); else inputs that may
    # not be made (an input nothing sizes) fail only the checks that would run on them
    ort_inputs: Feeds = (
        request.getfixturevalue("ort_inputs")
        if "ort_inputs" in request.fixturenames
        else _guarded(lambda: run.models.feeds_or_problem(ort_session_info, _input_options(request, run)))
    )
    ab = node.get_closest_marker("ort_ab")
    spec = InstanceSpec(
        test_dir=_test_dir(request),
        options=_input_options(request, run),
        thresholds=_marker_args(node, "ort_thresholds"),
        thresholds_origin=f"ort_thresholds marker of {node.nodeid}",
        expect=_marker_args(node, "ort_expect"),
        expect_origin=f"ort_expect marker of {node.nodeid}",
        ab=(ab.args, ab.kwargs) if ab is not None else None,
        ab_origin=f"ort_ab marker of {node.nodeid}",
        calibration=lambda: request.getfixturevalue("ort_calibration_data"),
    )
    return make_ort_perf(node, run, ort_session_info, ort_inputs, ort_profiler, spec)


def _marker_args(node: pytest.Item, name: str) -> list[tuple[Any, Any]]:
    """The arguments of ``node``'s markers called ``name``, farthest first (the closest wins)."""
    return [(m.args, m.kwargs) for m in reversed(list(node.iter_markers(name)))]


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
