"""``ort_perf``: the checks a test runs against its baselines and references.

The pytest face of ``gate/instance_checks.py``: it names each check's baseline key, runs the check objects
and turns their outcomes into one failure or skip of the test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from itertools import count
from typing import NoReturn

from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult
from pytest_ortperf.checks.contract_verdicts import Contract, ContractResult, parse_contracts
from pytest_ortperf.checks.footprint_verdicts import FootprintResult
from pytest_ortperf.checks.latency_verdicts import LatencyResult
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.instance_checks import InstanceChecks
from pytest_ortperf.gate.protocol import Check, CheckContext, Outcome
from pytest_ortperf.graph.diff import parse_graph_threshold
from pytest_ortperf.ort.inputs import Array
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.plugin.configure import variant_id
from pytest_ortperf.store.keys import CheckKey, check_name, with_check_name

__all__ = ["CheckContext", "OrtPerf", "key_for"]

Abort = Callable[[str], NoReturn]
LATENCY, ACCURACY, MEMORY, STARTUP, GRAPH = "latency", "accuracy", "memory", "startup", "graph"


class OrtPerf:
    """Latency and accuracy checks for one test x variant, against its committed baseline (the recipe
    decides on every machine; stored figures only on the hardware that measured them).

    ``check_latency()`` times ``ort_session`` (never a profiled session);
    ``check_accuracy()`` compares outputs with the recorded baseline, the
    reference variant and the model's own test data; ``check_memory()`` and
    ``check_startup()`` measure the session in fresh worker processes;
    ``check()`` runs the run's checks (``ortperf_checks``: latency, accuracy and
    graph unless configured) and the test's contracts, and fails once with every
    problem. ``check_speedup()`` and ``check_contracts()`` hold this variant to
    others of the same model, measured side by side in the run.

    With ``--ortperf-timing=off`` nothing is timed: ``check_latency()`` skips the
    test, naming the option, and ``check()`` checks accuracy only; the latency
    half is reported as 'not timed'.

    Each check of a test has its own baseline: the first unnamed one the test's
    own, later unnamed ones ``#2``, ``#3``... in call order, and ``name="big"``
    one of its own (``#big``) whatever the order.
    """

    def __init__(
        self,
        context: CheckContext,
        *,
        fail: Abort,
        skip: Abort,
        on_result: Callable[[LatencyResult], object] | None = None,
        on_footprint: Callable[[FootprintResult], object] | None = None,
        contracts: Sequence[Contract] = (),
    ) -> None:
        self._context = context
        self._contracts = tuple(contracts)  # ort_expect markers and ortperf_contracts defaults
        self._fail = fail
        self._skip = skip
        self._checks = InstanceChecks(context, on_result=on_result, on_footprint=on_footprint)
        kinds = (LATENCY, ACCURACY, MEMORY, STARTUP, GRAPH)
        self._names: dict[str, set[str]] = {kind: set() for kind in kinds}

    @property
    def session(self) -> BuiltSession:
        return self._context.built

    def check_latency(
        self, feeds: Mapping[str, Array] | None = None, *, name: str | None = None
    ) -> LatencyResult:
        """Against the stored baseline or, in A/B mode, against the reference model (and its outputs)."""
        __tracebackhide__ = True
        key = self._key(name, LATENCY)
        if not self._context.run.config.timing:
            self._skip(self._checks.not_timed(key).message)
        return self._one(self._checks.run([self._checks.latency], feeds, key))  # type: ignore[return-value]

    def check_accuracy(
        self, feeds: Mapping[str, Array] | None = None, *, name: str | None = None
    ) -> AccuracyResult:
        __tracebackhide__ = True
        key = self._key(name, ACCURACY)
        return self._one(self._checks.run([self._checks.accuracy], feeds, key))  # type: ignore[return-value]

    def check_memory(
        self, feeds: Mapping[str, Array] | None = None, *, name: str | None = None
    ) -> FootprintResult:
        """The session's memory in the steady state, in fresh worker processes: ORT's arena
        accounting, the GPU memory of the process (GPU providers), the peak resident set added."""
        __tracebackhide__ = True
        key = self._key(name, MEMORY)
        return self._one(self._checks.run([self._checks.memory], feeds, key))  # type: ignore[return-value]

    def check_startup(
        self, feeds: Mapping[str, Array] | None = None, *, name: str | None = None
    ) -> FootprintResult:
        """Session creation and the first run, in fresh worker processes; skipped under
        ``--ortperf-timing=off``, like ``check_latency()``."""
        __tracebackhide__ = True
        key = self._key(name, STARTUP)
        if not self._context.run.config.timing:
            self._skip(self._checks.footprint_not_timed(STARTUP, key).message)
        return self._one(self._checks.run([self._checks.startup], feeds, key))  # type: ignore[return-value]

    def check_graph(
        self, *, name: str | None = None, expect_fusions: Mapping[str, int] | None = None
    ) -> FootprintResult:
        """What ORT will run for this variant (the optimized graph's op types, fusions, nodes per
        provider, copy nodes, digest), compared exactly with the recorded reference's graph, built
        here beside it. ``expect_fusions={"FusedConv": 3}`` pins op type counts the graph must have."""
        __tracebackhide__ = True
        key = self._key(name, GRAPH)
        check = self._graph_check(expect_fusions)
        return self._one(self._checks.run([check], None, key))  # type: ignore[return-value]

    def check_speedup(
        self, *, than: str, at_least: float, feeds: Mapping[str, Array] | None = None
    ) -> ContractResult:
        """This variant at least ``at_least`` times as fast as variant ``than`` of the same model, both
        measured side by side in this run (no baseline): fails when the whole interval of the speedup
        lies below ``at_least``, passes when it lies at or above, and is inconclusive in between."""
        __tracebackhide__ = True
        try:
            (contract,) = parse_contracts(
                {than: at_least}, source=f"check_speedup(than={than!r})", check_id=variant_id
            )
        except OrtperfError as exc:
            self._fail(str(exc))
        return self._one(self._checks.run([self._checks.contracts([contract])], feeds, self._context.key))  # type: ignore[return-value]

    def check_contracts(self, feeds: Mapping[str, Array] | None = None) -> tuple[ContractResult, ...]:
        """The test's contracts (``ort_expect`` markers, ``ortperf_contracts``), each measured in this
        run against its other variant; the test fails once if any failed. () when there are none."""
        __tracebackhide__ = True
        if not self._contracts:
            return ()
        groups = self._checks.run([self._checks.contracts(self._contracts)], feeds, self._context.key)
        outcomes = self._finish([outcome for group in groups for outcome in group])
        return tuple(outcome for outcome in outcomes if isinstance(outcome, ContractResult))

    def check(
        self,
        feeds: Mapping[str, Array] | None = None,
        *,
        name: str | None = None,
        memory: bool | None = None,
        startup: bool | None = None,
        graph: bool | None = None,
        expect_fusions: Mapping[str, int] | None = None,
    ) -> tuple[Outcome, ...]:
        """The run's checks (``ortperf_checks``: latency, accuracy and graph by default), ``memory=True``
        and ``startup=True`` adding those (False leaving them out, as ``graph=False`` does the graph);
        the test fails once, with every message, if any failed. Returns one result per check, in the
        order run: ``latency, accuracy, graph = ort_perf.check()`` by default."""
        __tracebackhide__ = True
        kinds = list(self._context.run.config.checks)
        for kind, wanted in ((MEMORY, memory), (STARTUP, startup), (GRAPH, graph)):
            if wanted and kind not in kinds:
                kinds.append(kind)
            elif wanted is False and kind in kinds:
                kinds.remove(kind)
        key = self._key(name, *kinds)
        checks = self._checks
        untimed: dict[str, Outcome] = {}
        if not self._context.run.config.timing:  # the untimed checks run; the test is not skipped
            if LATENCY in kinds:
                untimed[LATENCY] = checks.not_timed(key)
            if STARTUP in kinds:
                untimed[STARTUP] = checks.footprint_not_timed(STARTUP, key)
        named = {GRAPH: self._graph_check(expect_fusions)}
        chosen = [named.get(kind) or checks.named(kind) for kind in kinds if kind not in untimed]
        contracts = [checks.contracts(self._contracts)] if self._contracts else []
        groups = checks.run([*chosen, *contracts], feeds, key)
        self._finish([outcome for group in groups for outcome in group])
        ran = iter(group[0] for group in groups[: len(chosen)])
        return tuple(untimed[kind] if kind in untimed else next(ran) for kind in kinds)

    def _graph_check(self, expect_fusions: Mapping[str, int] | None) -> Check:
        """The graph check, with the call's pinned counts (checked like the marker's)."""
        __tracebackhide__ = True
        if not expect_fusions:
            return self._checks.graph
        try:
            _, pins = parse_graph_threshold(dict(expect_fusions), source="expect_fusions")
        except OrtperfError as exc:
            self._fail(str(exc))
        return self._checks.graph.expecting(dict(pins))

    def _one(self, groups: list[list[Outcome]]) -> Outcome:
        """The result of the one check run (after the test failed or skipped on any outcome)."""
        __tracebackhide__ = True
        self._finish([outcome for group in groups for outcome in group])
        return groups[0][0]

    def _key(self, name: str | None, *kinds: str) -> CheckKey:
        """This check's baseline key: the test's own, ``#2``, ``#3``... or ``#name``."""
        __tracebackhide__ = True
        taken = set().union(*(self._names[kind] for kind in kinds))
        if name is None:
            suffix = "" if "" not in taken else next(str(n) for n in count(2) if str(n) not in taken)
        else:
            try:
                suffix = check_name(name)
            except OrtperfError as exc:
                self._fail(str(exc))
            if suffix in taken:
                self._fail(f"check name {name!r} is used twice in this test: each check needs its own name.")
        for kind in kinds:
            self._names[kind].add(suffix)
        key = self._context.key
        return replace(key, test=with_check_name(key.test, suffix))

    def _finish(self, results: list[Outcome]) -> list[Outcome]:
        """Fail the test once with every failure (an error is one), else skip it with every skip."""
        __tracebackhide__ = True
        failures = [r.message for r in results if r.failed]
        if failures:
            # Checks that end in the same error (check()'s latency and accuracy reading one damaged
            # baseline file) report it once.
            self._fail("\n\n".join(dict.fromkeys(failures)))
        skips = [r.message for r in results if r.skipped]
        if skips:
            self._skip("\n\n".join(skips))
        return results


def key_for(
    nodeid: str, selector: str, variant: str, machine: str, extra_args: str, *, environment: str = ""
) -> CheckKey:
    """Split a node id into baseline file and test name; build the command that records it
    (``environment``: variable assignments the command needs, e.g. ``ORTPERF_MACHINE=gha-x64``)."""
    test_file, _, test = nodeid.partition("::")
    command = f"ortperf update '{selector}'" + (f" {extra_args}" if extra_args else "")
    command = f"{environment} {command}" if environment else command
    return CheckKey(test_file=test_file, test=test, variant=variant, machine=machine, record_command=command)
