"""pytest-ortperf: a latency, accuracy, memory and start-up regression gate for ONNX Runtime models.

The types a test sees are importable from here (``from pytest_ortperf import
OrtPerf``). They load on first use: pytest imports this package in every run
of an environment that has the plugin, and most of those runs never need them.
The package map is in ``docs/architecture.md``.

PYTEST_DONT_REWRITE: the package's few ``assert`` statements are internal invariants, never what
a test reports, so pytest need not rewrite them; the marker keeps pytest from warning that it could
not (``Module already imported so cannot be rewritten; pytest_ortperf``) where the package was
imported before pytest started: ``ortperf update`` and every in-process pytest run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pytest_ortperf.version import __version__

if TYPE_CHECKING:
    from pytest_ortperf.accuracy.metrics import OutputComparison
    from pytest_ortperf.accuracy.tolerances import Tolerance, ToleranceSpec
    from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult, ReferenceOutcome
    from pytest_ortperf.checks.contract_verdicts import ContractResult
    from pytest_ortperf.checks.footprint_verdicts import FootprintResult
    from pytest_ortperf.checks.kind_result import KindResult
    from pytest_ortperf.checks.latency_verdicts import LatencyResult
    from pytest_ortperf.checks.status import Status
    from pytest_ortperf.errors import OrtperfError
    from pytest_ortperf.footprint.memory_figures import MemoryFigures
    from pytest_ortperf.footprint.startup_figures import StartupFigures
    from pytest_ortperf.gate.protocol import CheckContext, CheckTarget
    from pytest_ortperf.gate.registry import BenchmarkEntry, CheckKind, KindOption, KindRegistry
    from pytest_ortperf.latency.decision import Comparison, Verdict
    from pytest_ortperf.latency.stats import LatencyStats
    from pytest_ortperf.lazy import later
    from pytest_ortperf.ort.inputs import Feeds
    from pytest_ortperf.ort.models import ModelSource
    from pytest_ortperf.ort.session_settings import SessionSettings
    from pytest_ortperf.ort.sessions import BuiltSession
    from pytest_ortperf.ort.variants import OptLevel, Precision, Variant, variant
    from pytest_ortperf.plugin.ort_perf import OrtPerf
    from pytest_ortperf.profiling.book import MarkedProfile
    from pytest_ortperf.store.keys import CheckKey

_PUBLIC = {
    "BenchmarkEntry": "pytest_ortperf.gate.registry",
    "CheckContext": "pytest_ortperf.gate.protocol",
    "CheckKind": "pytest_ortperf.gate.registry",
    "KindOption": "pytest_ortperf.gate.registry",
    "CheckTarget": "pytest_ortperf.gate.protocol",
    "KindRegistry": "pytest_ortperf.gate.registry",
    "KindResult": "pytest_ortperf.checks.kind_result",
    "AccuracyResult": "pytest_ortperf.checks.accuracy_verdicts",
    "BuiltSession": "pytest_ortperf.ort.sessions",
    "CheckKey": "pytest_ortperf.store.keys",
    "Comparison": "pytest_ortperf.latency.decision",
    "Feeds": "pytest_ortperf.ort.inputs",
    "FootprintResult": "pytest_ortperf.checks.footprint_verdicts",
    "LatencyResult": "pytest_ortperf.checks.latency_verdicts",
    "LatencyStats": "pytest_ortperf.latency.stats",
    "MarkedProfile": "pytest_ortperf.profiling.book",
    "MemoryFigures": "pytest_ortperf.footprint.memory_figures",
    "ModelSource": "pytest_ortperf.ort.models",
    "OptLevel": "pytest_ortperf.ort.variants",
    "OrtPerf": "pytest_ortperf.plugin.ort_perf",
    "OrtperfError": "pytest_ortperf.errors",
    "OutputComparison": "pytest_ortperf.accuracy.metrics",
    "ReferenceOutcome": "pytest_ortperf.checks.accuracy_verdicts",
    "SessionSettings": "pytest_ortperf.ort.session_settings",
    "StartupFigures": "pytest_ortperf.footprint.startup_figures",
    "Status": "pytest_ortperf.checks.status",
    "Tolerance": "pytest_ortperf.accuracy.tolerances",
    "ToleranceSpec": "pytest_ortperf.accuracy.tolerances",
    "Variant": "pytest_ortperf.ort.variants",
    "Precision": "pytest_ortperf.ort.variants",
    "ContractResult": "pytest_ortperf.checks.contract_verdicts",
    "variant": "pytest_ortperf.ort.variants",
    "later": "pytest_ortperf.lazy",
    "Verdict": "pytest_ortperf.latency.decision",
}

__all__ = [
    "AccuracyResult",
    "BenchmarkEntry",
    "BuiltSession",
    "CheckContext",
    "CheckKey",
    "CheckKind",
    "CheckTarget",
    "Comparison",
    "ContractResult",
    "Feeds",
    "FootprintResult",
    "KindOption",
    "KindRegistry",
    "KindResult",
    "LatencyResult",
    "LatencyStats",
    "MarkedProfile",
    "MemoryFigures",
    "ModelSource",
    "OptLevel",
    "OrtPerf",
    "OrtperfError",
    "OutputComparison",
    "Precision",
    "ReferenceOutcome",
    "SessionSettings",
    "StartupFigures",
    "Status",
    "Tolerance",
    "ToleranceSpec",
    "Variant",
    "Verdict",
    "__version__",
    "later",
    "variant",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_ortperf' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
