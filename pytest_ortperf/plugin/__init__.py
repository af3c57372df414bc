"""The pytest layer: options, markers, parametrization and fixtures. Each body hands off."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_ortperf.checks.accuracy import REPORTED_DIFFERENCE
from pytest_ortperf.checks.latency import LatencyResult
from pytest_ortperf.errors import OrtperfError, ProviderUnavailable
from pytest_ortperf.ort.inputs import Feeds
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.runtime import RuntimeInfo, installed_distributions
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.variants import Variant
from pytest_ortperf.plugin import hookspec
from pytest_ortperf.plugin import xdist as xdist_bridge
from pytest_ortperf.plugin.benchmark import publish
from pytest_ortperf.plugin.config import (
    OrtperfConfig,
    ab_marker,
    build_config,
    input_options,
    model_marker_spec,
    settings_for,
    thresholds_for,
)
from pytest_ortperf.plugin.options import register
from pytest_ortperf.plugin.ort_perf import CheckContext, OrtPerf, key_for
from pytest_ortperf.plugin.state import OrtperfRun
from pytest_ortperf.profiling.book import MarkedProfile
from pytest_ortperf.profiling.run_profilers import ProfiledSession
from pytest_ortperf.reports import ci_files as ci_reports
from pytest_ortperf.reports.terminal import (
    latency_rows,
    latency_table,
    lost_worker_line,
    profile_lines,
    update_lines,
)
from pytest_ortperf.version import __version__

RUN_KEY = pytest.StashKey[OrtperfRun]()
LOST_WORKERS_KEY = pytest.StashKey[list[str]]()  # xdist workers that went down without handing over
T = TypeVar("T")

_MARKERS = (
    "ort_model(model, *, dims=None, int_range=None, seed=None): the ONNX model a test, class "
    "or module uses: a path (relative to the test file or rootdir) or an onnx.ModelProto.",
    "ort_settings(**settings): per-test ORT session settings, e.g. intra_op_threads=2 or "
    "provider_options={'cuda': {'cudnn_conv_algo_search': 'DEFAULT'}}.",
    "ort_thresholds(latency='10%', ab='3%', atol=..., rtol=..., cosine=..., outputs={...}): per-test "
    "limits for ort_perf checks.",
    "ort_ab(reference) or ort_ab(rev='origin/main'): same-job A/B for ort_perf latency checks: the "
    "model is measured side by side with this reference model (a path or onnx.ModelProto) or with its "
    "own file at that git revision, and compared by paired ratios instead of the stored baseline.",
    "ort_profile: run-level profiling; every run of ort_session (and a few untimed runs of each "
    "ort_perf latency check) writes its own trace, summarized per operator and provider.",
)
_NO_MODEL = (
    "{test} uses an ortperf fixture but declares no model. Add "
    "@pytest.mark.ort_model('path/to/model.onnx') to the test, its class, or the module "
    "(pytestmark = pytest.mark.ort_model(...)), or define an 'ort_model' fixture that returns "
    "a path or an onnx.ModelProto."
)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser: pytest.Parser) -> None:
    register(parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in _MARKERS:
        config.addinivalue_line("markers", line)
    try:
        ortperf_config = build_config(config)
    except OrtperfError as exc:
        raise pytest.UsageError(str(exc)) from None
    run = OrtperfRun(ortperf_config, on_build=_hook_caller(config))
    if ortperf_config.ab_rev and not ortperf_config.policy.update:
        try:  # no git or an unknown revision stops the run before any test: a usage error
            run.git_revision(ortperf_config.ab_rev)
        except OrtperfError as exc:
            raise pytest.UsageError(str(exc)) from None
    run.partially_selected = _files_selected_by_node_id(config)
    config.stash[RUN_KEY] = run


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(RUN_KEY, None)
    if run is not None:
        run.close()
        del config.stash[RUN_KEY]


def pytest_report_header(config: pytest.Config) -> list[str]:
    ortperf = config.stash[RUN_KEY].config
    return _header_lines(ortperf)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ort_variant" not in metafunc.fixturenames or _user_parametrized(metafunc, "ort_variant"):
        return
    variants = metafunc.config.stash[RUN_KEY].config.variants
    metafunc.parametrize("ort_variant", variants, ids=[v.id for v in variants], indirect=True)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    # Every test a file defines, before node-id or -k selection: what "unused" is judged against.
    run = _run_of(report)
    if run is not None and report.passed:
        run.collected.update(item.nodeid for item in report.result if isinstance(item, pytest.Item))


@pytest.hookimpl(tryfirst=True)  # before xdist sends the worker's output to the controller
def pytest_sessionfinish(session: pytest.Session) -> None:
    run = session.config.stash.get(RUN_KEY, None)
    if run is None:
        return
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller writes
        try:
            run.profiles.close()
        except (OrtperfError, OSError) as exc:
            run.add_errors(f"cannot finish profiling: {exc}")
        workeroutput[xdist_bridge.KEY] = xdist_bridge.export(run)
        return
    errors = []
    try:  # profiling first, but a failure there must not cost the baselines
        run.profiles.close()
    except (OrtperfError, OSError) as exc:
        errors.append(f"cannot finish profiling: {exc}")
    try:
        run.finish()
        if run.strict_unused:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    except OrtperfError as exc:
        errors.append(str(exc))
    except OSError as exc:
        errors.append(f"cannot finish the ortperf run: {exc}")
    try:  # also after a failed finish: CI uploads the reports of a failed run
        _write_ci_reports(run, _lost_workers(session.config))
    except (OrtperfError, OSError) as exc:
        errors.append(f"cannot write a report: {exc}")
    run.add_errors(*errors)  # after the workers' errors
    if run.finish_error:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist: a worker finished; take over what it staged and reported."""
    payload = getattr(node, "workeroutput", {}).get(xdist_bridge.KEY)
    if payload is not None:
        xdist_bridge.merge(node.config.stash[RUN_KEY], payload)
    if error is not None or payload is None:
        run = node.config.stash[RUN_KEY]
        lost = node.config.stash.setdefault(LOST_WORKERS_KEY, [])
        lost.append(lost_worker_line(_worker_id(node), update=run.config.policy.update))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    run = terminalreporter.config.stash.get(RUN_KEY, None)
    if run is None:
        return
    lines = run.summary_lines()
    if run.finish_error:
        lines.append(f"ERROR: {run.finish_error}")
    lines += [f"ERROR: {line}" for line in _lost_workers(terminalreporter.config)]
    for damaged, backup in run.store.repaired:
        lines.append(f"repaired {damaged}: the damaged file was kept as {backup.name}")
    if run.strict_unused:
        lines.append(f"ERROR: {len(run.strict_unused)} unused baseline entries (--ortperf-strict):")
        lines += [f"  {nodeid}" for nodeid in run.strict_unused]
    lines += run.unused_hint_lines()
    rows = latency_rows(run.results) + run.remote_rows
    if rows:
        missing = sum(r.status == "missing" for r in run.results) + run.remote_missing
        elsewhere = run.machines_with_missing_baselines()
        lines += latency_table(rows, run.machine.name, missing=missing, elsewhere=elsewhere)
        lines.append(f"timing: {run.timing.mode}")
    if run.update_report is not None:
        lines += update_lines(run.update_report, prune=run.config.prune)
    for accuracy in run.accuracy_results:
        if accuracy.status == REPORTED_DIFFERENCE:
            lines += [f"{accuracy.message} (reported, --ortperf-ab-outputs=report)"]
    for report in run.profiles.reports:
        lines += profile_lines(report)
    lines += run.remote_profile_lines
    if lines:
        terminalreporter.write_sep("-", "ortperf")
        for line in lines:
            terminalreporter.write_line(line)


# Fixtures ------------------------------------------------------------------


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
    return _guarded(lambda: _run(request).model(spec, test_dir=_test_dir(request), origin=origin))


@pytest.fixture
def ort_session_info(request: pytest.FixtureRequest, ort_variant: Variant, ort_model: Any) -> BuiltSession:
    """The session for ort_model x ort_variant with how it was built: providers, node placement, settings."""
    run = _run(request)
    origin = f"ort_settings marker of {request.node.nodeid}"
    markers = [(m.args, m.kwargs) for m in reversed(list(request.node.iter_markers("ort_settings")))]
    model = _guarded(lambda: run.model(ort_model, test_dir=_test_dir(request), origin="ort_model fixture"))
    settings = _guarded(lambda: settings_for(run.config.settings, markers, origin=origin))
    return _guarded(lambda: run.session(model, ort_variant, settings))


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
    kwargs: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("ort_model"))):  # closest wins, per keyword
        kwargs.update({k: v for k, v in marker.kwargs.items() if k != "path"})
    origin = f"ort_model marker of {request.node.nodeid}"
    options = _guarded(lambda: input_options(run.config.inputs, kwargs, origin=origin))
    return _guarded(lambda: run.feeds(ort_session_info, options))


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
    key = key_for(
        request.node.nodeid,
        _selector(request),
        ort_session_info.variant.id,
        machine.name,
        " ".join(_carried_options(request.config.invocation_params.args)),
    )
    directory = ort_session_info.model.directory
    ab_mark = request.node.get_closest_marker("ort_ab")
    ab_origin = f"ort_ab marker of {request.node.nodeid}"
    ab_spec = _guarded(lambda: ab_marker(ab_mark.args, ab_mark.kwargs, origin=ab_origin)) if ab_mark else None
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
    )
    return OrtPerf(
        context,
        fail=lambda message: pytest.fail(message, pytrace=False),
        skip=pytest.skip,
        on_result=lambda result: _publish_to_pytest_benchmark(request, result),
    )


# Helpers -------------------------------------------------------------------


def _publish_to_pytest_benchmark(request: pytest.FixtureRequest, result: LatencyResult) -> bool:
    """Show the check in pytest-benchmark's table and JSON too, when that plugin is active."""
    current = result.current
    return publish(
        request.config,
        request.node,
        round_medians_ms=current.round_medians_ms,
        runs_per_round=current.count // current.rounds,
        group="ortperf",
        extra_info={
            "variant": result.key.variant,
            "machine": result.key.machine,
            "verdict": result.status,
            "baseline_median_ms": result.baseline_median_ms,
            "change": result.change,
            "mode": result.mode,
            "decided_by": result.basis,
            "reference": result.reference_label,
        },
    )


_NOT_CARRIED = {
    "--ortperf-ab",
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


def _files_selected_by_node_id(config: pytest.Config) -> set[str]:
    """Test files named with '::' on the command line: pytest collects only part of them."""
    files = set()
    for arg in config.args:
        if "::" in arg:
            path = (Path(config.invocation_params.dir) / arg.split("::", 1)[0]).resolve()
            try:
                files.add(path.relative_to(config.rootpath).as_posix())
            except ValueError:
                continue
    return files


def _write_ci_reports(run: OrtperfRun, lost_workers: Sequence[str]) -> None:
    """The JSON report and the markdown summary whenever asked for, even with no check at all;
    GitHub's step summary only when there is something to show (the plugin loads in every suite)."""
    config = run.config
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    run_errors = [*([run.finish_error] if run.finish_error else []), *lost_workers]
    if not (config.report_path or config.markdown_path or (summary_file and (run.records or run_errors))):
        return
    unused = run.update_report.unused if run.update_report else run.strict_unused
    if config.report_path:
        document = ci_reports.report_document(
            run.records,
            machine=run.machine.name,
            runtime=run.runtime.describe(),
            version=__version__,
            traces=run.traces(),
            unused=unused,
            run_errors=run_errors,
        )
        ci_reports.write_json(config.report_path, document)
    text = ci_reports.markdown(run.records, machine=run.machine.name, unused=unused, run_errors=run_errors)
    if config.markdown_path:
        config.markdown_path.parent.mkdir(parents=True, exist_ok=True)
        config.markdown_path.write_text(text, encoding="utf-8")
    if summary_file and (run.records or run_errors):
        ci_reports.append_text(Path(summary_file), text)


def _lost_workers(config: pytest.Config) -> list[str]:
    lost: list[str] = config.stash.get(LOST_WORKERS_KEY, [])
    return lost


def _worker_id(node: Any) -> str:
    gateway = getattr(node, "gateway", None)
    return str(getattr(gateway, "id", None) or "an xdist worker")


def _run_of(report: pytest.CollectReport) -> OrtperfRun | None:
    items = [item for item in report.result if isinstance(item, pytest.Item)]
    return items[0].config.stash.get(RUN_KEY, None) if items else None


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


def _user_parametrized(metafunc: pytest.Metafunc, name: str) -> bool:
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", "")
        listed = names.split(",") if isinstance(names, str) else list(names)
        if name in (n.strip() for n in listed):
            return True
    return False


def _hook_caller(config: pytest.Config) -> Any:
    def on_build(built: BuiltSession) -> None:
        config.hook.pytest_ortperf_session_built(built=built)

    return on_build


def _header_lines(ortperf: OrtperfConfig) -> list[str]:
    dists = installed_distributions()
    if dists:
        runtime = ", ".join(f"{name} {version}" for name, version in dists)
        conflict = RuntimeInfo("", "", dists, ()).conflict
    else:
        runtime, conflict = "onnxruntime NOT INSTALLED (pip install 'pytest-ortperf[gpu]' or '[cpu]')", None
    lines = [
        f"ortperf: {runtime}; variants: {', '.join(v.id for v in ortperf.variants)}",
        f"ortperf settings: {ortperf.settings.describe()}",
    ]
    return lines + ([f"ortperf WARNING: {conflict}"] if conflict else [])
