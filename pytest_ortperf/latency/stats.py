"""Latency statistics of one measurement, kept as plain numbers for baselines and reports."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from pytest_ortperf.values import safe_repr

NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class LatencyStats:
    """Summary of per-run latencies (milliseconds) and the median of every round.

    ``round_medians_ms`` is what comparisons use: a distribution of round-level
    medians, not one number. ``cv`` is over all runs; ``round_cv`` over the
    round medians (how much the machine drifted during the measurement).
    """

    count: int
    rounds: int
    min_ms: float
    median_ms: float
    mean_ms: float
    stdev_ms: float
    iqr_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    cv: float
    round_cv: float
    throughput_per_s: float
    round_medians_ms: tuple[float, ...]
    canary_round_medians_ms: tuple[float, ...] = ()

    @property
    def relative_round_medians(self) -> tuple[float, ...]:
        """Each round median over the machine-speed canary's median measured right after it (or ())."""
        if not self.canary_round_medians_ms:
            return ()
        return tuple(m / c for m, c in zip(self.round_medians_ms, self.canary_round_medians_ms, strict=True))

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["round_medians_ms"] = list(self.round_medians_ms)
        if self.canary_round_medians_ms:
            data["canary_round_medians_ms"] = list(self.canary_round_medians_ms)
        else:
            del data["canary_round_medians_ms"]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LatencyStats:
        """Rebuild from :meth:`as_dict` output; ``KeyError``/``TypeError``/``ValueError`` if damaged."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "canary_round_medians_ms" and f.name not in data:
                continue  # measured without the canary (an accelerator, or an older baseline)
            raw = data[f.name]
            if f.name in ("round_medians_ms", "canary_round_medians_ms"):
                values[f.name] = tuple(_finite(x, f.name) for x in raw)
            elif f.type == "int":
                values[f.name] = _whole(raw, f.name)
            else:
                values[f.name] = _finite(raw, f.name)
        medians = values["round_medians_ms"]
        if not medians or min(medians) <= 0:
            raise ValueError("round_medians_ms must be a non-empty list of positive numbers")
        if values["rounds"] != len(medians) or values["count"] < values["rounds"]:
            raise ValueError("rounds must equal the number of round medians and not exceed count")
        canary = values.get("canary_round_medians_ms", ())
        if canary and (len(canary) != len(medians) or min(canary) <= 0):
            raise ValueError("canary_round_medians_ms must hold one positive number per round")
        return cls(**values)


def _finite(value: Any, name: str) -> float:
    try:
        number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    except OverflowError:
        number = math.nan
    if not math.isfinite(number):
        raise TypeError(f"{name} must be a finite number, got {safe_repr(value)}")
    return number


def _whole(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"{name} must be a whole number >= 0, got {value!r}")
    return value


def summarize(
    samples_ns: Sequence[int], round_sizes: Sequence[int], canary_medians_ms: Sequence[float] = ()
) -> LatencyStats:
    """Statistics of ``samples_ns`` (one duration per run, in order), split into rounds.

    ``canary_medians_ms``: the canary's median measured right after each round, when it was.
    """
    if not samples_ns or sum(round_sizes) != len(samples_ns) or min(round_sizes, default=0) < 1:
        raise ValueError("round sizes must be >= 1 and add up to the number of samples")
    if canary_medians_ms and (len(canary_medians_ms) != len(round_sizes) or min(canary_medians_ms) <= 0):
        raise ValueError("one positive canary median per round")
    runs = np.asarray(samples_ns, dtype=np.float64) / NS_PER_MS
    bounds = np.cumsum([0, *round_sizes])
    medians = np.array([np.median(runs[a:b]) for a, b in itertools.pairwise(bounds)])
    q25, median, q75, p90, p95, p99 = np.percentile(runs, [25, 50, 75, 90, 95, 99])
    mean = float(runs.mean())
    stdev = float(runs.std(ddof=1)) if runs.size > 1 else 0.0
    round_stdev = float(medians.std(ddof=1)) if medians.size > 1 else 0.0
    return LatencyStats(
        count=int(runs.size),
        rounds=len(round_sizes),
        min_ms=float(runs.min()),
        median_ms=float(median),
        mean_ms=mean,
        stdev_ms=stdev,
        iqr_ms=float(q75 - q25),
        p90_ms=float(p90),
        p95_ms=float(p95),
        p99_ms=float(p99),
        cv=stdev / mean if mean > 0 else 0.0,
        round_cv=round_stdev / float(medians.mean()) if medians.mean() > 0 else 0.0,
        throughput_per_s=1000.0 / float(median) if median > 0 else math.inf,
        round_medians_ms=tuple(float(m) for m in medians),
        canary_round_medians_ms=tuple(float(c) for c in canary_medians_ms),
    )


def merged(parts: Sequence[LatencyStats]) -> LatencyStats:
    """One measurement's figures from several measurements of the same check, in order.

    What the comparisons read is exact: the round medians (and the canary's round medians) of all
    parts, concatenated in the order measured, so every round counts once, as if one long
    measurement had taken them. So are ``count``, ``rounds``, ``min_ms``, ``mean_ms``, ``stdev_ms``
    and ``cv`` (pooled from each part's count, mean and standard deviation) and ``round_cv``
    (recomputed over all round medians).

    The per-run samples are not kept, so the run percentiles cannot be recomputed:
    ``median_ms`` (and ``throughput_per_s`` from it) is the run-weighted mean of the parts'
    medians, which is where the median of all runs lies too (between the parts' medians);
    ``p90_ms``, ``p95_ms``, ``p99_ms`` and ``iqr_ms`` are the largest of the parts', an upper bound
    for the tail percentiles, so a merged tail never reads better than a part showed it.

    The parts must all have run the machine-speed canary or none: relative and absolute rounds
    cannot be read as one series (``ValueError``, as for no parts)."""
    if not parts:
        raise ValueError("nothing to merge")
    if len(parts) == 1:
        return parts[0]
    with_canary = {bool(p.canary_round_medians_ms) for p in parts}
    if len(with_canary) > 1:
        raise ValueError("cannot merge measurements with and without the machine-speed canary")
    count = sum(p.count for p in parts)
    mean = sum(p.mean_ms * p.count for p in parts) / count
    # Sum of squared deviations from the pooled mean: each part's own, plus its mean's offset.
    squares = sum((p.count - 1) * p.stdev_ms**2 + p.count * (p.mean_ms - mean) ** 2 for p in parts)
    stdev = math.sqrt(squares / (count - 1)) if count > 1 else 0.0
    medians = np.array([m for p in parts for m in p.round_medians_ms])
    round_stdev = float(medians.std(ddof=1)) if medians.size > 1 else 0.0
    median = sum(p.median_ms * p.count for p in parts) / count
    return LatencyStats(
        count=count,
        rounds=sum(p.rounds for p in parts),
        min_ms=min(p.min_ms for p in parts),
        median_ms=median,
        mean_ms=mean,
        stdev_ms=stdev,
        iqr_ms=max(p.iqr_ms for p in parts),
        p90_ms=max(p.p90_ms for p in parts),
        p95_ms=max(p.p95_ms for p in parts),
        p99_ms=max(p.p99_ms for p in parts),
        cv=stdev / mean if mean > 0 else 0.0,
        round_cv=round_stdev / float(medians.mean()) if medians.mean() > 0 else 0.0,
        throughput_per_s=1000.0 / median if median > 0 else math.inf,
        round_medians_ms=tuple(float(m) for m in medians),
        canary_round_medians_ms=tuple(c for p in parts for c in p.canary_round_medians_ms),
    )
