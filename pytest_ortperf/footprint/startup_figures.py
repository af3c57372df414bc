"""Start-up figures of a session and the rule that compares them.

Each sample is one fresh worker process (``ort/worker_program.py: footprint``): the time to create
the first session of the process (what a service pays at start: ONNX Runtime's one-time set-up,
loading, graph optimization, and for a compiling provider the compilation or the load of what its
cache kept: TensorRT's engines, OpenVINO's ``cache_dir`` blobs; each process says which), the time of its
first run, and of a steady run after it. Over 20 fresh processes on a shared 2-core machine the
creation time varied with a CV of 2-17% by workload and run, a few slow processes stretching its
range to 78%, and the first run with a CV of 4-36% (``benchmarks/README.md``, "Memory and
start-up"), so a comparison
takes several processes a side and judges them as latency judges round medians: the Hodges-Lehmann
ratio with its interval (``latency/decision.py: decide``: a regression when the ratio exceeds the
threshold and the interval lies above 1). At 99% confidence 11 of 25 unchanged checks of 7
processes a side were inconclusive; at 95%, 0-33% of replayed ones, none a false verdict; hence
:data:`CONFIDENCE`: the rule against stored figures, where a regression must also survive a second
measurement (``kinds/fresh_processes.py``). Side by side, :func:`compare_pairs` judges pairs of
processes by the rule of every side-by-side verdict (``latency/across_processes.py``) instead.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_ortperf import defaults
from pytest_ortperf.footprint.comparison import FigureComparison, judge_pairs
from pytest_ortperf.latency.decision import judge

DEFAULT_THRESHOLD = defaults.STARTUP_THRESHOLD
CONFIDENCE = 0.95
PROCESSES = 7  # fresh processes per side of a comparison against stored figures, and per recording
# Side by side: pairs of fresh processes (one a side, next to each other in time), looked at after
# these many pairs, as every side-by-side verdict is (latency/across_processes.py: LOOKS).
PAIR_LOOKS = (3, 4, 6, 8, 10)
GLANCE_PROCESSES = 3  # an unchanged check's look: for the report only
SAMPLES = ("create_ms", "first_run_ms", "steady_run_ms")
DECIDING = ("create_ms", "first_run_ms")
# A process's compile cache: "cold" (given an empty one, it compiled), "hit" (it loaded from the
# configured one), "miss" (it compiled, the configured one notwithstanding), "unused" (given an empty
# one, it wrote nothing there).
CACHE_STATES = ("cold", "hit", "miss", "unused")
NAMES = {"create_ms": "session creation", "first_run_ms": "first run", "steady_run_ms": "steady run"}


@dataclass(frozen=True)
class StartupFigures:
    """Per fresh process: session creation, first run and a steady run (ms); for a provider with a
    compile cache (TensorRT's engine cache, OpenVINO's ``cache_dir``), how each process met it
    (:data:`CACHE_STATES`): the first of a side starts cold, from an empty cache of its own; the
    others use the configured one, warm unless it missed."""

    create_ms: tuple[float, ...]
    first_run_ms: tuple[float, ...]
    steady_run_ms: tuple[float, ...]
    engine_cache: str = ""  # all processes' cache: "hit", "miss", "mixed" or "" (no compile cache)
    cache: tuple[str, ...] = ()  # per process, in the order measured: CACHE_STATES (older records: ())

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

    def warm_misses(self) -> list[int]:
        """The processes (1-based) that compiled although an earlier process had used the configured
        cache (and so filled it): warm starts that missed it (its key moved, or it is not kept),
        each paying the compilation that a service would pay at every start."""
        configured = [n for n, state in enumerate(self.cache, 1) if state in ("hit", "miss")]
        return [n for n in configured[1:] if self.cache[n - 1] == "miss"]

    def cache_text(self) -> str:
        """'compile cache: cold in 1 of 7 processes (compiled into an empty cache), warm in 6 (loaded
        from it)'; '' without a cache."""
        if not self.cache:
            return f"compile cache {self.engine_cache}" if self.engine_cache else ""
        if "unused" in self.cache:
            return "compile cache unused: a process given an empty one wrote nothing there"
        warm, missed = self.cache.count("hit"), self.warm_misses()
        cold = len(self.cache) - warm - len(missed)
        text = (
            f"compile cache: cold in {cold} of {len(self.cache)} processes (compiled), "
            f"warm in {warm} (loaded from it)"
        )
        if missed:
            text += f"; warm start missed its cache in process {', '.join(map(str, missed))}"
        return text

    def describe(self) -> str:
        """'create 8.68 ms, first run 0.329 ms (6.2x steady)'."""
        cache = f", {self.cache_text()}" if self.engine_cache or self.cache else ""
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
        if self.engine_cache or self.cache:
            lines.append(self.cache_text())
        return lines

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {name: list(getattr(self, name)) for name in SAMPLES}
        if self.engine_cache:
            data["engine_cache"] = self.engine_cache
        if self.cache:
            data["cache"] = list(self.cache)
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
        states = data.get("cache", [])
        if not isinstance(states, list) or any(state not in CACHE_STATES for state in states):
            raise ValueError("cache must list 'cold', 'hit', 'miss' or 'unused' per process")
        if states and len(states) != len(samples["create_ms"]):
            raise ValueError("cache must have one state per process")
        return cls(engine_cache=cache, cache=tuple(states), **samples)

    @classmethod
    def of(cls, footprints: Sequence[Any]) -> StartupFigures:
        """From fresh processes' :class:`~pytest_ortperf.ort.workers.Footprint`."""
        if not footprints:
            raise ValueError("start-up figures need at least one process")
        states = tuple(f.engine_cache for f in footprints)
        caches = set(states)
        return cls(
            create_ms=tuple(f.create_s * 1e3 for f in footprints),
            first_run_ms=tuple(f.first_run_s * 1e3 for f in footprints),
            steady_run_ms=tuple(f.steady_run_s * 1e3 for f in footprints),
            engine_cache=caches.pop() if len(caches) == 1 else "mixed",
            cache=states if all(states) else (),
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


def compare_pairs(
    before: StartupFigures,
    after: StartupFigures,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    confidence: float = 0.99,
    look: int = 1,
    looks: int = 1,
) -> list[FigureComparison]:
    """Side by side: session creation and the first run, each judged over pairs of fresh processes by
    the rule of every side-by-side verdict (``footprint/comparison.py: judge_pairs``), at look
    ``look`` of ``looks``."""
    compared = []
    for name in DECIDING:
        then, now = ([round(ms * 1e6) for ms in getattr(side, name)] for side in (before, after))
        verdict, rule = judge_pairs(
            then, now, threshold=threshold, confidence=confidence, look=look, looks=looks
        )
        compared.append(
            FigureComparison(NAMES[name], before.median(name), after.median(name), verdict, rule, unit="ms")
        )
    return compared
