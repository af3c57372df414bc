"""The ``ort_perf`` object of one test instance, built from what pytest knows of it: a test function's
markers and fixtures (``plugin/fixtures.py``), or a collected model file's settings
(``plugin/model_items.py``). It names the instance's baseline key, builds its check context (the
other side of each comparison included) and says where its results go besides the run's reports
(pytest-benchmark, JUnit properties)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_ortperf.checks.contract_verdicts import Contract, default_contracts
from pytest_ortperf.errors import OrtperfError, ProviderUnavailable, UsageError
from pytest_ortperf.gate.localisation import Localiser
from pytest_ortperf.gate.protocol import CheckContext
from pytest_ortperf.gate.publisher import RunPublisher
from pytest_ortperf.gate.registry import BenchmarkEntry
from pytest_ortperf.gate.run import OrtperfRun
from pytest_ortperf.ort.inputs import Feeds, InputOptions
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.variants import Precision, parse_variant
from pytest_ortperf.plugin.benchmark import annotate, publish
from pytest_ortperf.plugin.configure import ab_marker, expect_contracts, thresholds_for
from pytest_ortperf.plugin.ort_perf import OrtPerf, key_for
from pytest_ortperf.profiling.book import MarkedProfile
from pytest_ortperf.store.machine import MACHINE_ENV

T = TypeVar("T")
MarkerArgs = Sequence[tuple[Sequence[Any], Mapping[str, Any]]]  # (args, kwargs) of markers, farthest first


@dataclass(frozen=True)
class InstanceSpec:
    """What a test instance declares about its checks, each as marker arguments with where they came
    from (a marker of the test, or a model table of a configuration file)."""

    test_dir: Path  # where the instance's relative paths start (the test file's, or the model's folder)
    options: InputOptions  # how its synthetic inputs are made
    thresholds: MarkerArgs = ()
    thresholds_origin: str = ""
    expect: MarkerArgs = ()
    expect_origin: str = ""
    ab: tuple[Sequence[Any], Mapping[str, Any]] | None = None
    ab_origin: str = ""
    calibration: Callable[[], Any] = lambda: None  # the ort_calibration_data input sets, asked when needed


def make_ort_perf(
    node: pytest.Item,
    run: OrtperfRun,
    built: BuiltSession,
    feeds: Feeds,
    profiler: MarkedProfile | None,
    spec: InstanceSpec,
) -> OrtPerf:
    """The checks of ``node`` x ``built``'s variant against its baselines and references."""
    policy, tolerances = guarded(
        lambda: thresholds_for(
            run.config.policy,
            run.config.tolerances,
            spec.thresholds,
            origin=spec.thresholds_origin,
            kind_keys=run.kinds.threshold_keys(),
            kind_parsers=run.kinds.threshold_parsers(),
            kind_mergers=run.kinds.threshold_mergers(),
        )
    )
    machine = guarded(lambda: run.machine)
    carried = _carried_options(node.config.invocation_params.args)
    key = key_for(
        node.nodeid,
        _selector(node),
        built.variant.id,
        machine.key,
        " ".join(carried),
        environment=_carried_environment(machine.name, carried),
    )
    directory = built.model.directory
    rootdir = run.config.rootdir
    ab = spec.ab
    ab_spec = guarded(lambda: ab_marker(ab[0], ab[1], origin=spec.ab_origin, rootdir=rootdir)) if ab else None
    references = run.references
    context = CheckContext(
        sessions=run.sessions,
        references=references,
        measurer=run.measurer,
        store=run.store,
        outputs=run.outputs,
        localising=Localiser(built, tolerances),
        settings=run.settings,
        built=built,
        feeds=feeds,
        key=key,
        policy=policy,
        tolerances=tolerances,
        reference=lambda: run.references.reference_choice(built),
        nodeid=node.nodeid,
        add_property=lambda name, value: node.user_properties.append((name, value)),
        profiler=profiler,
        ab=lambda: references.ab_reference(
            built.model, ab_spec, test_dir=spec.test_dir, origin=spec.ab_origin
        ),
        data_set=directory / feeds.source
        if directory and feeds.source.startswith("test_data_set_")
        else None,
        other_variant=lambda variant_id: _other_variant(node, run, built, spec, variant_id),
        publisher=RunPublisher(
            run.results,
            run.kinds,
            add_property=lambda name, value: node.user_properties.append((name, value)),
            benchmark=lambda entry: _to_pytest_benchmark(node, entry),
            accept=key.record_command,
        ),
        noted=run.results.noted,
        input_options=spec.options,
    )
    run.results.describe(node.nodeid, run.models.model_facts(built))
    contracts = guarded(lambda: expect_contracts(spec.expect, origin=spec.expect_origin))
    defaults = default_contracts(built.variant, run.config.variants, run.config.contracts)
    return OrtPerf(
        context,
        kinds=run.kinds,
        contracts=_merged_contracts(defaults, contracts),
        fail=lambda message: pytest.fail(message, pytrace=False),
        skip=pytest.skip,
    )


def _other_variant(
    node: pytest.Item, run: OrtperfRun, built: BuiltSession, spec: InstanceSpec, variant_id: str
) -> BuiltSession:
    """This test's model at another variant, for a contract: its fp32 model at that variant's
    precision, under this test's settings (the static int8 build reuses this variant's calibration,
    when it has one)."""
    variant = parse_variant(variant_id, source=f"contract of {node.nodeid}")
    if variant is None:
        raise UsageError(f"contract of {node.nodeid}: no variant named {variant_id!r}.")
    run.sessions.require_available(variant)
    made = run.models.made_from(built.model)
    source, calibration = made if made is not None else (built.model, None)
    sets = None
    if variant.precision is Precision.INT8_STATIC and calibration is None:
        sets = spec.calibration()
    model = run.models.precision_model(
        source,
        variant,
        built.settings,
        options=spec.options,
        calibration_sets=sets,
        calibration=calibration if variant.precision is Precision.INT8_STATIC else None,
    )
    return run.sessions.session(model, variant, built.settings)


def _merged_contracts(*groups: Sequence[Contract]) -> tuple[Contract, ...]:
    """Contracts from defaults, then markers: a later one of the same kind and other variant replaces
    an earlier one."""
    merged: dict[tuple[str, str], Contract] = {}
    for group in groups:
        for contract in group:
            merged[(contract.kind, contract.other)] = contract
    return tuple(merged.values())


def _to_pytest_benchmark(node: pytest.Item, entry: BenchmarkEntry | Mapping[str, object]) -> bool:
    """A check's pytest-benchmark entry (its kind maps its record to one, ``CheckKind.benchmark``), or
    extra information for the test's other entries (memory: no time to publish)."""
    if not isinstance(entry, BenchmarkEntry):
        return annotate(node.config, node, dict(entry))
    named = {"name": f"{node.nodeid}{entry.suffix}", "fullname": f"{node.nodeid}{entry.suffix}"}
    return publish(
        node.config,
        node,
        round_medians_ms=entry.round_medians_ms,
        runs_per_round=entry.runs_per_round,
        group=entry.group,
        extra_info=entry.extra_info,
        **(named if entry.suffix else {}),
    )


_NOT_CARRIED = {
    "--ortperf-ab",
    "--ortperf-timing",  # an update needs timing
    "--ortperf-update",
    "--ortperf-prune",
    "--ortperf-missing",
    "--ortperf-fail-on-improvement",
    # Reports of the run that failed: accepting its figures need not overwrite them.
    "--ortperf-report",
    "--ortperf-markdown",
    "--ortperf-html",
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


def _selector(node: pytest.Item) -> str:
    """The node id as the user types it from where pytest was invoked."""
    path = Path(node.path)
    try:
        shown = path.relative_to(node.config.invocation_params.dir).as_posix()
    except ValueError:
        shown = str(path)
    _, _, rest = node.nodeid.partition("::")
    return f"{shown}::{rest}"


def guarded(action: Callable[[], T]) -> T:
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
