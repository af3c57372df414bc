"""The memory check: what a session costs in memory, measured in fresh worker processes, on the
routes of the latency check (``kinds/fresh_processes.py``); the figures and their rule:
``footprint/memory_figures.py``."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_ortperf.checks.footprint_verdicts import MEMORY, PartFigures
from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.footprint import memory_figures as memory
from pytest_ortperf.footprint.comparison import FigureComparison
from pytest_ortperf.footprint.memory_figures import MemoryFigures, compare_memory, grown_nodes
from pytest_ortperf.gate.protocol import CheckTarget
from pytest_ortperf.gate.registry import Record
from pytest_ortperf.kinds.fresh_processes import FootprintCheck, benchmark_info
from pytest_ortperf.kinds.memory import KIND
from pytest_ortperf.ort.providers import CPU
from pytest_ortperf.ort.workers import Footprint

GPU_PROVIDERS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")


class MemoryCheck(FootprintCheck):
    """``check_memory()``: ORT's arena accounting (exact, so one process a side would do; two keep
    the resident set honest), the GPU memory of the process where a GPU provider runs, and the peak
    resident memory the session added to a fresh process. Side by side, over pairs of processes
    (``memory.PAIR_LOOKS``) by the rule of every side-by-side verdict."""

    kind = MEMORY
    declaration = KIND
    processes = 2
    glance_processes = 1
    profiled = True
    pair_looks = memory.PAIR_LOOKS

    def figures(self, footprints: Sequence[Footprint]) -> PartFigures:
        return MemoryFigures.of(footprints)

    def _floor(self) -> int:
        return int(KIND.setting(self._context.settings, "floor"))

    def compare(self, before: PartFigures, after: PartFigures, target: CheckTarget) -> list[FigureComparison]:
        assert isinstance(before, MemoryFigures)
        assert isinstance(after, MemoryFigures)
        return compare_memory(before, after, threshold=self.threshold(target), floor=self._floor())

    def compare_pairs(
        self, before: PartFigures, after: PartFigures, target: CheckTarget, *, look: int, looks: int
    ) -> list[FigureComparison]:
        assert isinstance(before, MemoryFigures)
        assert isinstance(after, MemoryFigures)
        return memory.compare_pairs(
            before,
            after,
            threshold=self.threshold(target),
            floor=self._floor(),
            confidence=target.policy.confidence,
            look=look,
            looks=looks,
        )

    def explain(self, before: PartFigures, after: PartFigures) -> list[str]:
        assert isinstance(before, MemoryFigures)
        assert isinstance(after, MemoryFigures)
        return grown_nodes(before, after)

    def notes(self, footprints: Sequence[Footprint]) -> list[str]:
        variant = self._context.built.variant
        notes = sorted({f"memory limit not applied: {f.limit_note}" for f in footprints if f.limit_note})
        if variant.provider in GPU_PROVIDERS and all(f.device_bytes is None for f in footprints):
            notes.append("GPU memory not measured: nvidia-smi did not report the worker's process")
        if footprints and all(not f.arena for f in footprints) and variant.provider == CPU:
            why = (
                "the CPU arena is off"
                if not self._context.built.settings.cpu_mem_arena
                else "this onnxruntime's profile does not report them; 1.31 and later do"
            )
            notes.append(f"ORT's arena figures absent ({why}): the resident set decides, beside the weights")
        elif footprints and variant.provider not in (CPU, *GPU_PROVIDERS):
            # OpenVINO and the like compile the graph and hold its weights and buffers themselves.
            kept = any(f.arena for f in footprints)
            notes.append(
                f"{variant.provider} allocates outside ORT's arena: ORT's accounting sees only the nodes "
                "left to the CPU provider, not the provider's compiled model, its copy of the weights or "
                "its buffers; the peak resident set added to the process counts them"
                + ("" if kept else " and decides, beside the weights")
            )
        return notes

    def limit_bytes(self) -> int:
        # CUDA maps far more address space than it uses: a cap on it would fail every GPU session.
        if self._context.built.variant.provider in GPU_PROVIDERS:
            return 0
        return int(KIND.setting(self._context.settings, "limit"))


def memory_benchmark_info(record: Record) -> dict[str, object] | None:
    """Memory has no time to publish: its figures go into the ``extra_info`` of the test's other
    pytest-benchmark entries (``ortperf_memory``)."""
    current = CheckRecord.of(record).current
    if current is None:
        return None
    info = benchmark_info(record)
    return {"ortperf_memory": {**info, **current}}
