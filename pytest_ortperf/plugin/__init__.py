"""The pytest entry point of pytest-ortperf: hooks only. Each body hands off.

pytest imports this module in every run of an environment that has the plugin
installed, whether or not a test uses it, so it imports little: the option
table and pytest. ``pytest_configure`` builds the run and registers the rest as
plugins: the fixtures (:mod:`pytest_ortperf.plugin.fixtures`) and the role of
this process (:mod:`pytest_ortperf.plugin.processes`: the controller, which
writes and prints the summary, or an xdist worker, which hands over).
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.plugin import hookspec
from pytest_ortperf.plugin.options import MARKERS, KindsAtOptionTime, deprecated_spellings, register

if TYPE_CHECKING:
    from pytest_ortperf.gate.run import OrtperfRun
    from pytest_ortperf.gate.run_config import OrtperfConfig
    from pytest_ortperf.latency.lock_holder import LockOwner
    from pytest_ortperf.ort.sessions import BuiltSession

RUN_KEY = pytest.StashKey["OrtperfRun"]()
EARLY_KINDS = "ortperf-kinds-at-option-time"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    register(parser)
    # Kinds of plugins and initial conftests, with their own options, while the options are read.
    early = KindsAtOptionTime(parser)
    pluginmanager.register(early, EARLY_KINDS)
    pluginmanager.hook.pytest_ortperf_register_kinds.call_historic(kwargs={"registry": early})


@pytest.hookimpl(tryfirst=True)
def pytest_ortperf_register_kinds(registry: KindsAtOptionTime) -> None:
    """The built-in kinds, through the door every plugin's kinds come through (first: they run
    first). Their declarations import little (``kinds/__init__.py``): this runs in every pytest run."""
    from pytest_ortperf.gate.registry import BUILT_IN
    from pytest_ortperf.kinds import BUILTIN

    for kind in BUILTIN:
        registry.register(kind, origin=BUILT_IN)


def pytest_configure(config: pytest.Config) -> None:
    # The rest of the package loads here, once pytest is configured, not when this module is imported.
    from pytest_ortperf.gate.registry import KindRegistry
    from pytest_ortperf.gate.run import OrtperfRun
    from pytest_ortperf.plugin import fixtures
    from pytest_ortperf.plugin.configure import build_config
    from pytest_ortperf.plugin.processes import Controller, XdistWorker
    from pytest_ortperf.plugin.progress import terminal_lines, terminal_progress

    for line in MARKERS:
        config.addinivalue_line("markers", line)
    for said in deprecated_spellings(_given_args(config)):
        config.issue_config_time_warning(pytest.PytestDeprecationWarning(said), stacklevel=2)
    try:
        # Every kind, the built-in ones too, came through pytest_ortperf_register_kinds while the
        # options were read; a name taken or malformed is an error here, naming its origin.
        early = config.pluginmanager.get_plugin(EARLY_KINDS)
        if not isinstance(early, KindsAtOptionTime):
            raise OrtperfError("pytest-ortperf was configured before its options were read (no addoption)")
        kinds = KindRegistry()
        early.closed = True
        for kind, origin in early.kinds:
            kinds.register(kind, origin=origin)
        if early.problems:
            raise OrtperfError("; ".join(early.problems))
        ortperf_config = build_config(config, kinds=kinds)
        run = OrtperfRun(
            ortperf_config,
            kinds=kinds,
            on_build=_hook_caller(config),
            stores=_stores(config),
            lock_owner=_lock_owner(config),
            run_id=_run_id(config),
        )
    except OrtperfError as exc:
        raise pytest.UsageError(str(exc)) from None
    if ortperf_config.ab_rev and not ortperf_config.policy.update:
        try:  # no git or an unknown revision stops the run before any test: a usage error
            run.references.git_revision(ortperf_config.ab_rev)
        except OrtperfError as exc:
            raise pytest.UsageError(str(exc)) from None
        if _runs_tests_here(config):
            # Every check of the run goes side by side: its measuring processes import onnxruntime
            # while pytest collects.
            run.measurer.prestart(ortperf_config.policy)
    elif not ortperf_config.policy.update and _runs_tests_here(config) and run.foresees_side_by_side():
        run.measurer.prestart(ortperf_config.policy)  # a changed model: its check goes side by side
    _collect_models(config, kinds.names(), kinds.defaults())
    run.measurer.progress = terminal_progress(config, ortperf_config.progress)
    run.announce = terminal_lines(config, run.measurer.progress)
    run.selection.add((), partially_selected=_files_selected_by_node_id(config))
    config.stash[RUN_KEY] = run
    config.pluginmanager.register(fixtures, "ortperf-fixtures")
    role = XdistWorker(run) if hasattr(config, "workerinput") else Controller(run)
    config.pluginmanager.register(role, "ortperf-process")


def _runs_tests_here(config: pytest.Config) -> bool:
    """Whether this process runs tests: an xdist worker, or a run that starts none (and not
    ``--collect-only``)."""
    if config.getoption("collectonly", default=False):
        return False
    if hasattr(config, "workerinput"):
        return True
    numprocesses = config.getoption("numprocesses", default=None)
    return not numprocesses


def _given_args(config: pytest.Config) -> list[str]:
    """Every argument pytest was given: the command line, the ini file's addopts, PYTEST_ADDOPTS."""
    import os
    import shlex

    extra = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    return [*map(str, config.invocation_params.args), *config.getini("addopts"), *extra]


def _collect_models(config: pytest.Config, kinds: Sequence[str], defaults: Sequence[str]) -> None:
    """Find the models ``ortperf_models`` names; add them to what pytest collects when the run names
    no paths of its own (or when ``--ortperf-models`` names them)."""
    from pytest_ortperf.plugin.model_items import MODELS_KEY, ModelCollection, model_patterns

    patterns, from_command_line = model_patterns(config)
    pyproject = Path(config.rootpath) / "pyproject.toml"
    try:
        found = ModelCollection.find(
            patterns, rootdir=Path(config.rootpath), pyproject=pyproject, kinds=kinds, defaults=defaults
        )
    except OrtperfError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[MODELS_KEY] = found
    source_of_tests = from_command_line or config.args_source is not pytest.Config.ArgsSource.ARGS
    if found.unmatched and source_of_tests:
        # The globs are what this run collects: one that matches nothing would gate nothing and pass
        # (pytest's "collected 0 items", or fewer models than written). Only where the run names its
        # own paths is it a warning in the header (pytest_report_header), so that run is not stopped.
        raise pytest.UsageError("\n".join(found.unmatched))
    if found.models and source_of_tests:
        known = {Path(arg).resolve() for arg in config.args if "::" not in arg}
        config.args += [str(path) for path in sorted(found.models) if path not in known]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix != ".onnx":  # every file of every run passes here: decide before importing
        return None
    from pytest_ortperf.plugin.model_items import MODELS_KEY, ModelFile

    found = parent.config.stash.get(MODELS_KEY, None)
    if found is None or not found.collects(file_path):
        return None
    collector: pytest.Collector = ModelFile.from_parent(parent, path=file_path)
    return collector


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(RUN_KEY, None)
    if run is not None:
        run.close()
        del config.stash[RUN_KEY]


def pytest_report_header(config: pytest.Config) -> list[str]:
    ortperf = config.stash[RUN_KEY].config
    from pytest_ortperf.plugin.model_items import MODELS_KEY

    found = config.stash.get(MODELS_KEY, None)
    unmatched = [f"ortperf WARNING: {line}" for line in (found.unmatched if found is not None else ())]
    return _header_lines(ortperf) + unmatched


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ort_variant" not in metafunc.fixturenames or _user_parametrized(metafunc, "ort_variant"):
        return
    variants = metafunc.config.stash[RUN_KEY].config.variants
    metafunc.parametrize("ort_variant", variants, ids=[v.id for v in variants], indirect=True)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    # Every test a file defines, before any selection: what "unused" is judged against. The innermost
    # wrapper sees the collector's own result, before wrappers of other plugins narrow the report
    # (--lf keeps only a file's failed tests in it); -k, -m and --deselect come later still.
    report = yield
    run: OrtperfRun | None = collector.config.stash.get(RUN_KEY, None)
    if run is not None and report.passed:
        run.selection.add([node.nodeid for node in report.result if isinstance(node, pytest.Item)])
    return report


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


def _lock_owner(config: pytest.Config) -> LockOwner:
    """How this process names itself in the timing lock file: an xdist worker by its run's id, the
    command that started the run and its worker id, so that a check waiting in another worker of the
    same run can tell."""
    from pytest_ortperf.latency.timing_lock import this_process

    workerinput = getattr(config, "workerinput", None)
    if not isinstance(workerinput, dict):
        return this_process()
    argv = workerinput.get("mainargv")
    return this_process(
        str(workerinput.get("testrunuid") or ""),
        str(workerinput.get("workerid") or ""),
        [str(arg) for arg in argv] if isinstance(argv, list) else None,
        workers=int(workerinput.get("workercount") or 1),
    )


def _run_id(config: pytest.Config) -> str:
    """The run's id, shared by its xdist workers (xdist's testrunuid); "" in a serial run (a new one)."""
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput.get("testrunuid") or "") if isinstance(workerinput, dict) else ""


def _user_parametrized(metafunc: pytest.Metafunc, name: str) -> bool:
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", "")
        listed = names.split(",") if isinstance(names, str) else list(names)
        if name in (n.strip() for n in listed):
            return True
    return False


def _stores(config: pytest.Config) -> Any:
    """Where recorded models are kept: every ``pytest_ortperf_recorded_model`` implementation, a
    team's first, then the built-in DVC and git stores (``plugin/recorded_models.py``)."""
    from pytest_ortperf.plugin.recorded_models import STORES

    for name, store in STORES:
        if config.pluginmanager.get_plugin(name) is None:
            config.pluginmanager.register(store(), name)

    def recorded_model(recipe: Any) -> Any:
        return config.hook.pytest_ortperf_recorded_model(recipe=recipe, config=config)

    return recorded_model


def _hook_caller(config: pytest.Config) -> Any:
    def on_build(built: BuiltSession) -> None:
        config.hook.pytest_ortperf_session_built(built=built)

    return on_build


def _header_lines(ortperf: OrtperfConfig) -> list[str]:
    from pytest_ortperf.ort.runtime import RuntimeInfo, installed_distributions

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
    if not ortperf.timing:
        lines.append(
            "ortperf timing: off (--ortperf-timing=off): latency and start-up checks skipped, accuracy, "
            "graph and memory checked"
        )
    return lines + ([f"ortperf WARNING: {conflict}"] if conflict else [])
