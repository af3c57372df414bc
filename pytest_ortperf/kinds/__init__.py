"""Check kinds: each declared by one module of its name (``KIND``, a ``gate/registry.py: CheckKind``:
its name, options, thresholds, baseline part, record, rows, table and drawing), light enough to be
read while pytest reads its options; what loads numpy, onnx and onnxruntime (its check, its record)
is named there with ``pytest_ortperf.lazy.later`` and loaded when first used, from the module beside
it (``latency_check.py`` for ``latency.py``). The built-in kinds, in the order below (the order
``ort_perf.check()`` runs them), are registered through ``pytest_ortperf_register_kinds``, the hook a
plugin or a conftest.py registers its kinds with (the plugin's own implementation: ``plugin/__init__.py``)."""

from __future__ import annotations

from pytest_ortperf.gate.registry import CheckKind, KindRegistry
from pytest_ortperf.kinds import (
    accuracy,
    determinism,
    generation,
    graph,
    latency,
    memory,
    startup,
    threads,
    throughput,
)

ORDER = (latency, accuracy, graph, memory, startup, determinism, threads, throughput, generation)
BUILTIN: tuple[CheckKind, ...] = tuple(module.KIND for module in ORDER)


def builtin_kinds() -> KindRegistry:
    """A registry holding the built-in kinds alone (what a run has before plugins add theirs)."""
    return KindRegistry(BUILTIN)
