"""The side-by-side route before issue 57, kept for the benchmarks that measured it
(``rounds_in_turn.py``, ``runtime_versions.py``, ``footprint.py``'s order of fresh processes): each
side of a comparison in two worker processes with one session each, taking the rounds in turn
(:class:`WorkerSide`), started and loaded in :func:`abba` order (:func:`load_pair`). The plugin now
measures every side-by-side verdict across measuring processes, each holding both sides
(``pytest_ortperf/ort/workers.py: load_units``, ``latency/across_processes.py``)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pytest_ortperf.ort.variants import Variant
from pytest_ortperf.ort.workers import (
    LoadedModel,
    SideSpec,
    WorkerError,
    WorkerPool,
    WorkerProcess,
    WorkerRuntime,
    load,
)

PROCESSES = 2  # worker processes per side of a comparison


class WorkerSide:
    """One side of a comparison in several worker processes, one session each: each round's runs
    in one of them, the processes taking the rounds in turn, so no single process decides.

    Two processes of the same runtime and model can differ by a few percent for as long as they
    live, much as two sessions of one process can (``benchmarks/README.md``, "Across ONNX Runtime
    versions"): code and data land at other addresses in each. A round's runs stay in one process,
    as with sessions in one process (``latency/paired.py: RoundsInTurn``): split between processes,
    each share began cold and widened the paired ratios of a cache-bound model."""

    def __init__(self, models: Sequence[LoadedModel]) -> None:
        if not models:
            raise ValueError("a side needs at least one loaded model")
        self.models = tuple(models)
        self._turn = 0

    def warm_up(self, runs: int, seconds: float, cap_s: float) -> float:
        """Every process warmed up at once (each is its own process, nothing is timed yet); the
        median of their typical run costs (ns)."""
        if len(self.models) == 1:
            return self.models[0].warm_up(runs, seconds, cap_s)
        with ThreadPoolExecutor(max_workers=len(self.models), thread_name_prefix="ortperf-warm") as pool:
            costs: list[float] = sorted(pool.map(lambda m: m.warm_up(runs, seconds, cap_s), self.models))
        return costs[len(costs) // 2]

    def time_runs(self, count: int, expected_ns: float) -> list[int]:
        model = self.models[self._turn]
        self._turn = (self._turn + 1) % len(self.models)
        return model.time_runs(count, expected_ns)

    def outputs(self) -> dict[str, Any]:
        return self.models[0].outputs()

    def typed_outputs(self) -> dict[str, tuple[Any, str]]:
        return self.models[0].typed_outputs()

    @property
    def runtime(self) -> WorkerRuntime:
        return self.models[0].worker.runtime

    def release(self) -> list[WorkerProcess]:
        """Free the sessions; the workers that failed to answer (to be discarded)."""
        failed = []
        for model in self.models:
            try:
                model.release()
            except WorkerError:
                failed.append(model.worker)
        return failed


def abba(processes: int) -> list[tuple[str, int]]:
    """The order in which the two sides' workers start and load: current, reference, reference,
    current... The worker started and loaded first ran a memory-bound model about 2% slower than the
    one after it, in every one of twelve pairs, and the sign flipped with the order
    (``benchmarks/README.md``, "Across ONNX Runtime versions"); in this order each side gets as many
    early workers as late ones."""
    order: list[tuple[str, int]] = []
    for index in range(processes):
        roles = ("current", "reference") if index % 2 == 0 else ("reference", "current")
        order += [(role, index) for role in roles]
    return order


def load_pair(
    pool: WorkerPool,
    current: SideSpec,
    reference: SideSpec,
    variant: Variant,
    feeds: Mapping[str, Any],
    *,
    fresh: bool = False,
) -> tuple[WorkerSide, WorkerSide]:
    """Both sides of a comparison, each in :data:`PROCESSES` workers with one session, started and
    loaded in :func:`abba` order; ``fresh``: new processes in place of the run's."""
    specs = {"current": current, "reference": reference}
    order = abba(PROCESSES)
    workers = pool.start([(specs[role].python, f"{role}-{index}") for role, index in order], fresh=fresh)
    loaded: dict[str, list[LoadedModel]] = {"current": [], "reference": []}
    try:
        for (role, _), worker in zip(order, workers, strict=True):
            spec = specs[role]
            own = spec.feeds if spec.feeds is not None else feeds
            loaded[role].append(load(worker, spec.model, variant, spec.settings, own))
    except WorkerError:
        for model in (*loaded["current"], *loaded["reference"]):
            with contextlib.suppress(WorkerError):
                model.release()
        raise
    return WorkerSide(loaded["current"]), WorkerSide(loaded["reference"])
