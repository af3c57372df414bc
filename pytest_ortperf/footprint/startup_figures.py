"""Start-up figures of a session and the rule that compares them.

Each sample is one fresh worker process (``ort/worker_program.py: footprint``): the time to create
the first session of the process (what a service pays at start: ONNX Runtime's one-time set-up,
loading, graph optimization, and for TensorRT the engine build or cache load), the time of its
first run, and of a steady run after it. Over 20 fresh processes on a shared 2-core machine the
creation time varied with a CV of 2-17% by workload and run, a few slow processes stretching its
range to 78%, and the first run with a CV of 4-36% (``benchmarks/README.md``, "Memory and
start-up"), so a comparison
takes several processes a side and judges them as latency judges round medians: the Hodges-Lehmann
ratio with its interval (``latency/decision.py: decide``: a regression when the ratio exceeds the
threshold and the interval lies above 1). At 99% confidence 11 of 25 unchanged checks of 7
processes a side were inconclusive; at 95%, 0-33% of replayed ones, none a false verdict; hence
:data:`CONFIDENCE`. A regression must also survive a second measurement (``kinds/fresh_processes.py``).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_ortperf.footprint.comparison import FigureComparison
from pytest_ortperf.latency.decision import judge

DEFAULT_THRESHOLD = 0.25  # benchmarks/README.md: no unchanged check failed; 2x the nodes caught 25 of 25
CONFIDENCE = 0.95
PROCESSES = 7  # fresh processes per side of a comparison, and per recording
GLANCE_PROCESSES = 3  # an unchanged check's look: for the report only
SAMPLES = ("create_ms", "first_run_ms", "steady_run_ms")
DECIDING = ("create_ms", "first_run_ms")
NAMES = {"create_ms": "session creation", "first_run_ms": "first run", "steady_run_ms": "steady run"}


@dataclass(frozen=True)
class StartupFigures:
    """Per fresh process: session creation, first run and a steady run (ms); for TensorRT whether
    its engine cache was hit."""

    create_ms: tuple[float, ...]
    first_run_ms: tuple[float, ...]
    steady_run_ms: tuple[float, ...]
    engine_cache: str = ""  # "hit", "miss", "mixed" or "" (no TensorRT engine cache)

    @property
    def processes(self) -> int:
        return len(self.create_ms)

    def median(self, name: str) -> float:
        return float(statistics.median(getattr(self, name)))

    @property
    def first_run_factor(self) -> float:
        """How many steady runs the first run costs."""
        steady = self.median("steady_run_ms")
        return self.median("first_run_ms") / steady if steady else float("inf")

    def describe(self) -> str:
        """'create 8.68 ms, first run 0.329 ms (6.2x steady)'."""
        cache = f", engine cache {self.engine_cache}" if self.engine_cache else ""
        return (
            f"create {self.median('create_ms'):.3g} ms, first run {self.median('first_run_ms'):.3g} ms "
            f"({self.first_run_factor:.1f}x steady){cache}"
        )

    def lines(self) -> list[str]:
        lines = [
            f"{NAMES[name]}: median {self.median(name):.4g} ms over {self.processes} fresh processes "
            f"({min(getattr(self, name)):.4g} .. {max(getattr(self, name)):.4g})"
            for name in SAMPLES
        ]
        if self.engine_cache:
            lines.append(f"TensorRT engine cache: {self.engine_cache}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {name: list(getattr(self, name)) for name in SAMPLES}
        if self.engine_cache:
            data["engine_cache"] = self.engine_cache
        return data

    @classmethod
    def from_dict(cls, data: Any) -> StartupFigures:
        """Rebuild from :meth:`as_dict` output; ``KeyError``/``TypeError``/``ValueError`` if damaged."""
        if not isinstance(data, Mapping):
            raise TypeError(f"start-up figures must be an object, got {type(data).__name__}")
        samples = {}
        for name in SAMPLES:
            values = data[name]
            if not isinstance(values, list) or not values:
                raise TypeError(f"{name} must be a non-empty list of milliseconds")
            if any(
                not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v < float("inf")
                for v in values
            ):
                raise ValueError(f"{name} must hold finite milliseconds >= 0")
            samples[name] = tuple(float(v) for v in values)
        if len({len(v) for v in samples.values()}) != 1:
            raise ValueError("create_ms, first_run_ms and steady_run_ms must have one value per process")
        cache = data.get("engine_cache", "")
        if not isinstance(cache, str):
            raise TypeError("engine_cache must be a string")
        return cls(engine_cache=cache, **samples)

    @classmethod
    def of(cls, footprints: Sequence[Any]) -> StartupFigures:
        """From fresh processes' :class:`~pytest_ortperf.ort.workers.Footprint`."""
        if not footprints:
            raise ValueError("start-up figures need at least one process")
        caches = {f.engine_cache for f in footprints}
        return cls(
            create_ms=tuple(f.create_s * 1e3 for f in footprints),
            first_run_ms=tuple(f.first_run_s * 1e3 for f in footprints),
            steady_run_ms=tuple(f.steady_run_s * 1e3 for f in footprints),
            engine_cache=caches.pop() if len(caches) == 1 else "mixed",
        )


def compare_startup(
    before: StartupFigures,
    after: StartupFigures,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    confidence: float = CONFIDENCE,
) -> list[FigureComparison]:
    """Session creation and the first run, each judged over the processes of both sides: a
    regression when the Hodges-Lehmann ratio exceeds ``threshold`` and its interval lies above 1."""
    compared = []
    for name in DECIDING:
        comparison = judge(
            getattr(before, name), getattr(after, name), threshold=threshold, confidence=confidence
        )
        estimate = comparison.estimate
        rule = (
            f"+/-{threshold * 100:.3g}%, {estimate.confidence:.0%} interval "
            f"{(estimate.low - 1) * 100:+.1f}% .. {(estimate.high - 1) * 100:+.1f}% over "
            f"{before.processes} vs {after.processes} processes"
        )
        compared.append(
            FigureComparison(
                NAMES[name],
                before.median(name),
                after.median(name),
                comparison.verdict,
                rule,
                unit="ms",
            )
        )
    return compared
