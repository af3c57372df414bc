"""``ort_perf``: the checks a test runs against its baselines and references.

The pytest face of ``gate/instance_checks.py``: it names each check's baseline key, runs the check objects
and turns their outcomes into one failure or skip of the test.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from itertools import count
from typing import NoReturn

from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult
from pytest_ortperf.checks.contract_verdicts import Contract, ContractResult, parse_contracts
from pytest_ortperf.checks.footprint_verdicts import FootprintResult
from pytest_ortperf.checks.kind_result import KindResult
from pytest_ortperf.checks.latency_verdicts import LatencyResult
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.instance_checks import InstanceChecks
from pytest_ortperf.gate.protocol import Check, CheckContext, Outcome
from pytest_ortperf.gate.registry import KindRegistry
from pytest_ortperf.kinds.contracts import ContractCheck
from pytest_ortperf.ort.inputs import Array
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.plugin.configure import variant_id
from pytest_ortperf.store.keys import CheckKey, check_name, with_check_name

__all__ = ["CheckContext", "OrtPerf", "key_for"]

Abort = Callable[[str], NoReturn]
LATENCY, ACCURACY, MEMORY, STARTUP, GRAPH = "latency", "accuracy", "memory", "startup", "graph"
THREADS, DETERMINISM, THROUGHPUT, GENERATION = "threads", "determinism", "throughput", "generation"


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
    others of the same model, measured side by side in the run. Every other kind
    of the run's registry (``gate/registry.py``: ``determinism``, or one a plugin
    registered) is ``check_<name>(feeds=None, *, name=None, **options)``.

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
        kinds: KindRegistry,
        fail: Abort,
        skip: Abort,
        contracts: Sequence[Contract] = (),
    ) -> None:
        self._context = context
        self._contracts = tuple(contracts)  # ort_expect markers and ortperf_contracts defaults
        self._fail = fail
        self._skip = skip
        self._kinds = kinds
        self._checks = InstanceChecks(context, kinds)
        self._names: dict[str, set[str]] = defaultdict(set)

    @property
    def session(self) -> BuiltSession:
        return self._context.built

    def check_latency(
        self, feeds: Mapping[str, Array] | None = None, *, name: str | None = None
    ) -> LatencyResult:
        """Against the stored baseline or, in A/B mode, against the reference model (and its outputs)."""
        __tracebackhide__ = True
        return self._kind(LATENCY, feeds, name)  # type: ignore[return-value]

    def check_accuracy(
        self, feeds: Mapping[str, Array] | None = None, *, name: str | None = None
    ) -> AccuracyResult:
        __tracebackhide__ = True
        return self._kind(ACCURACY, feeds, name)  # type: ignore[return-value]

    def check_memory(
        self, feeds: Mapping[str, Array] | None = None, *, name: str | None = None
    ) -> FootprintResult:
        """The session's memory in the steady state, in fresh worker processes: ORT's arena
        accounting, the GPU memory of the process (GPU providers), the peak resident set added."""
        __tracebackhide__ = True
        return self._kind(MEMORY, feeds, name)  # type: ignore[return-value]

    def check_startup(
        self, feeds: Mapping[str, Array] | None = None, *, name: str | None = None
    ) -> FootprintResult:
        """Session creation and the first run, in fresh worker processes; skipped under
        ``--ortperf-timing=off``, like ``check_latency()``."""
        __tracebackhide__ = True
        return self._kind(STARTUP, feeds, name)  # type: ignore[return-value]

    def check_threads(
        self,
        feeds: Mapping[str, Array] | None = None,
        *,
        name: str | None = None,
        counts: Sequence[int] | None = None,
        threshold: object = None,
        budget: float | None = None,
        fail_if_beaten: bool | None = None,
    ) -> KindResult:
        """The latency curve over ``intra_op_num_threads`` ``counts`` (default 1 .. the cores, at most
        8), side by side; a configured count another beats is reported ``improved`` (a failure under
        ``fail_if_beaten=True``); the best count's regression against the recorded reference fails.
        ``threshold``: the one latency threshold unless given; ``budget``: timed seconds."""
        __tracebackhide__ = True
        given = {"counts": counts, "threshold": threshold, "budget": budget, "fail_if_beaten": fail_if_beaten}
        options = {key: value for key, value in given.items() if value is not None}
        return self._kind(THREADS, feeds, name, options)  # type: ignore[return-value]

    def check_throughput(
        self,
        feeds: Mapping[str, Array] | None = None,
        *,
        name: str | None = None,
        batch_sizes: Sequence[int] | None = None,
        concurrency: int | None = None,
    ) -> KindResult:
        """Inferences per second at each of ``batch_sizes`` (default 1, 8, 32, where the model's batch
        dim is free) and p50/p95/p99 latency with ``concurrency`` callers (default: one per core) on
        one session; side by side with the recorded reference where the recipe changed."""
        __tracebackhide__ = True
        given = {"batch_sizes": batch_sizes, "concurrency": concurrency}
        options = {key: value for key, value in given.items() if value is not None}
        return self._kind(THROUGHPUT, feeds, name, options)  # type: ignore[return-value]

    def check_generation(
        self,
        feeds: Mapping[str, Array] | None = None,
        *,
        name: str | None = None,
        prompt_length: int | None = None,
        new_tokens: int | None = None,
        names: Mapping[str, str] | None = None,
    ) -> KindResult:
        """A decoder as it is used: a ``prompt_length`` prompt (default 32), then ``new_tokens`` greedy
        tokens (default 16) with the cache fed back: time to first token, per-token latency (median,
        p90), tokens/s and the cache's growth; the prefill and a decode step side by side with the
        recorded reference where the recipe changed. ``names`` maps the model's input and output names
        to the conventional ones (``{"tokens": "input_ids"}``)."""
        __tracebackhide__ = True
        given = {"prompt_length": prompt_length, "new_tokens": new_tokens, "names": names}
        options = {key: value for key, value in given.items() if value is not None}
        return self._kind(GENERATION, feeds, name, options)  # type: ignore[return-value]

    def check_determinism(
        self,
        feeds: Mapping[str, Array] | None = None,
        *,
        name: str | None = None,
        runs: int | None = None,
        tolerance: float | None = None,
    ) -> KindResult:
        """The same inputs run ``runs`` times (default 5) and on a fresh session: outputs that differ
        by more than ``tolerance`` (default 0: exactly) fail."""
        __tracebackhide__ = True
        given = {"runs": runs, "tolerance": tolerance}
        options = {key: value for key, value in given.items() if value is not None}
        return self._kind(DETERMINISM, feeds, name, options)  # type: ignore[return-value]

    def check_graph(
        self, *, name: str | None = None, expect_fusions: Mapping[str, int] | None = None
    ) -> FootprintResult:
        """What ORT will run for this variant (the optimized graph's op types, fusions, nodes per
        provider, copy nodes, digest), compared exactly with the recorded reference's graph, built
        here beside it. ``expect_fusions={"FusedConv": 3}`` pins op type counts the graph must have."""
        __tracebackhide__ = True
        options = {"expect_fusions": expect_fusions} if expect_fusions else {}
        return self._kind(GRAPH, None, name, options)  # type: ignore[return-value]

    def __getattr__(self, attribute: str) -> Callable[..., Outcome]:
        """``check_<kind>()`` of a kind a plugin registered (``gate/registry.py``): its keywords, but
        ``feeds`` and ``name``, go to its check object's ``configured()``."""
        kind = attribute.removeprefix("check_")
        if attribute.startswith("check_") and kind in self._kinds:

            def check(
                feeds: Mapping[str, Array] | None = None, *, name: str | None = None, **options: object
            ) -> Outcome:
                __tracebackhide__ = True
                return self._kind(kind, feeds, name, options)

            return check
        raise AttributeError(
            f"{type(self).__name__!r} has no attribute {attribute!r}"
            + (f" (check kinds: {', '.join(self._kinds.names())})" if attribute.startswith("check_") else "")
        )

    def _kind(
        self,
        kind: str,
        feeds: Mapping[str, Array] | None,
        name: str | None,
        options: Mapping[str, object] | None = None,
    ) -> Outcome:
        """One check of ``kind``, on its own baseline key; a timed kind under ``--ortperf-timing=off``
        skips the test, naming the option."""
        __tracebackhide__ = True
        key = self._key(name, kind)
        if self._kinds[kind].timed and not self._context.settings.timing:
            self._skip(self._checks.not_timed(kind, key).message)
        check = self._configured(kind, options or {})
        return self._one(self._checks.run([check], feeds, key))

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
        checks = [ContractCheck(self._context, [contract])]
        return self._one(self._checks.run(checks, feeds, self._context.key))  # type: ignore[return-value]

    def check_contracts(self, feeds: Mapping[str, Array] | None = None) -> tuple[ContractResult, ...]:
        """The test's contracts (``ort_expect`` markers, ``ortperf_contracts``), each measured in this
        run against its other variant; the test fails once if any failed. () when there are none."""
        __tracebackhide__ = True
        if not self._contracts:
            return ()
        groups = self._checks.run([ContractCheck(self._context, self._contracts)], feeds, self._context.key)
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
        **kinds: bool,
    ) -> tuple[Outcome, ...]:
        """The run's checks (``ortperf_checks``: latency, accuracy and graph by default), ``memory=True``
        and ``startup=True`` adding those (False leaving them out, as ``graph=False`` does the graph;
        a registered kind is added or left out the same way, by its name); the test fails once, with
        every message, if any failed. Returns one result per check, in the order run:
        ``latency, accuracy, graph = ort_perf.check()`` by default."""
        __tracebackhide__ = True
        unknown = [kind for kind in kinds if kind not in self._kinds]
        if unknown:
            known = ", ".join(self._kinds.names())
            self._fail(f"check() got unknown check kind(s) {', '.join(unknown)}; known: {known}.")
        chosen = list(self._context.settings.checks)
        for kind, wanted in {MEMORY: memory, STARTUP: startup, GRAPH: graph, **kinds}.items():
            if wanted and kind not in chosen:
                chosen.append(kind)
            elif wanted is False and kind in chosen:
                chosen.remove(kind)
        key = self._key(name, *chosen)
        checks = self._checks
        untimed: dict[str, Outcome] = {}
        if not self._context.settings.timing:  # the untimed checks run; the test is not skipped
            untimed = {kind: checks.not_timed(kind, key) for kind in chosen if self._kinds[kind].timed}
        options = {GRAPH: {"expect_fusions": expect_fusions}} if expect_fusions else {}
        ran = [self._configured(kind, options.get(kind, {})) for kind in chosen if kind not in untimed]
        contracts = [ContractCheck(self._context, self._contracts)] if self._contracts else []
        groups = checks.run([*ran, *contracts], feeds, key)
        self._finish([outcome for group in groups for outcome in group])
        firsts = iter(group[0] for group in groups[: len(ran)])
        return tuple(untimed[kind] if kind in untimed else next(firsts) for kind in chosen)

    def _configured(self, kind: str, options: Mapping[str, object]) -> Check:
        """The check of ``kind`` with the call's options (``check_graph(expect_fusions=...)``), through
        its ``configured()``; a clear failure when it takes none or not these."""
        __tracebackhide__ = True
        check = self._checks.named(kind)
        if not options:
            return check
        configured = getattr(check, "configured", None)
        if configured is None:
            self._fail(f"check_{kind}() takes no options besides feeds and name; got {', '.join(options)}.")
        try:
            made: Check = configured(**options)
        except TypeError as exc:
            self._fail(f"check_{kind}(): {exc}")
        except OrtperfError as exc:
            self._fail(str(exc))
        return made

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
