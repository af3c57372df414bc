"""Finding ONNX Runtime: which wheel provides it, and a clear message when none does.

``onnxruntime``, ``onnxruntime-gpu`` and the other flavours all install the same
``onnxruntime`` import package. Two of them installed together overwrite each
other's files, so we detect that and say so instead of guessing.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from dataclasses import dataclass
from types import ModuleType

from pytest_ortperf.errors import OnnxRuntimeMissing
from pytest_ortperf.ort.worker_program import FLAVOURS

# Distributions that install the `onnxruntime` import package (the measuring worker, which cannot
# import this package, keeps the list).
ORT_DISTRIBUTIONS = FLAVOURS

MISSING_MESSAGE = (
    "pytest-ortperf needs ONNX Runtime, and neither 'onnxruntime-gpu' nor 'onnxruntime' is "
    "installed. Install one: pip install 'pytest-ortperf[gpu]' (onnxruntime-gpu, also runs on "
    "CPU-only machines) or pip install 'pytest-ortperf[cpu]' (the smaller CPU-only onnxruntime)."
)


def import_onnxruntime() -> ModuleType:
    """Import ``onnxruntime`` or raise :class:`OnnxRuntimeMissing` with install advice."""
    try:
        return importlib.import_module("onnxruntime")
    except ImportError as exc:
        raise OnnxRuntimeMissing(f"{MISSING_MESSAGE} (import error: {exc})") from exc


def installed_distributions() -> tuple[tuple[str, str], ...]:
    """``(distribution, version)`` for every installed ONNX Runtime flavour."""
    found = []
    for name in ORT_DISTRIBUTIONS:
        try:
            found.append((name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            continue
    return tuple(found)


@dataclass(frozen=True)
class RuntimeInfo:
    """What ONNX Runtime this process has: recorded with every baseline later."""

    version: str
    flavour: str
    distributions: tuple[tuple[str, str], ...]
    available_providers: tuple[str, ...]

    @property
    def conflict(self) -> str | None:
        """A warning when several flavours are installed over each other."""
        if len(self.distributions) < 2:
            return None
        names = " and ".join(f"{name} {version}" for name, version in self.distributions)
        return (
            f"{names} are both installed; they share the 'onnxruntime' package and the one "
            "installed last silently wins. Uninstall all of them and install one."
        )

    def describe(self) -> str:
        text = f"{self.flavour} {self.version}"
        return f"{text} (WARNING: {self.conflict})" if self.conflict else text


def runtime_info() -> RuntimeInfo:
    ort = import_onnxruntime()
    dists = installed_distributions()
    flavour = dists[0][0] if len(dists) == 1 else ("unknown" if not dists else "+".join(d for d, _ in dists))
    return RuntimeInfo(
        version=str(ort.__version__),
        flavour=flavour,
        distributions=dists,
        available_providers=tuple(ort.get_available_providers()),
    )
