"""Check kinds: one module per kind of check, each declaring its ``KIND`` (``gate/registry.py:
CheckKind``) beside its check object. The built-in kinds are registered in the order below, the order
``ort_perf.check()`` runs them; plugins add theirs through ``pytest_ortperf_register_kinds``."""

from __future__ import annotations

from pytest_ortperf.gate.registry import KindRegistry


def builtin_kinds() -> KindRegistry:
    """A registry holding the built-in kinds (imported here, on first use: they load numpy and onnx)."""
    from pytest_ortperf.kinds import accuracy, determinism, graph, latency, memory, startup, threads

    modules = (latency, accuracy, graph, memory, startup, determinism, threads)
    return KindRegistry([module.KIND for module in modules])
