"""The default of every setting whose value code below the pytest layer also assumes, stated once:
the option table (``plugin/options.py``) shows and parses them as text, and the code that uses them
when nothing is configured reads them here. Why each is what it is: ``benchmarks/README.md``."""

from __future__ import annotations

from typing import Literal, get_args

Missing = Literal["fail", "skip", "pass"]  # what a check without a baseline does (checks/policy.py)
MISSING_CHOICES: tuple[Missing, ...] = get_args(Missing)

LATENCY_THRESHOLD = 0.03  # the one latency threshold of every route (latency/decision.py)
MAX_CV = 0.10  # an update lists figures whose spread exceeds it as noisy (latency/recording.py)
BUDGET_S = 4.0  # seconds of timed rounds a latency measurement spreads over (latency/measure.py)
AB_BUDGET_S = 3.0  # seconds of timed rounds a side-by-side check spreads over (latency/paired.py)
MEMORY_THRESHOLD = 0.01  # exact figures: any change beyond 1% is real (footprint/memory_figures.py)
MEMORY_FLOOR = 4096  # bytes: one page; below it, allocation rounding
STARTUP_THRESHOLD = 0.25  # no unchanged check failed; 2x the nodes caught 25 of 25 (footprint)
GRAPH_MODE = "fusions"  # what of a graph's change fails (graph/diff.py: MODES)
SEED = 0  # of synthetic inputs (ort/inputs.py)
INT_RANGE = (0, 100)  # half-open range of synthetic integer inputs
RUN_TIMEOUT_S = 300.0  # one session.run's limit
PROVIDERS = "cpu"  # the execution providers tested (ort/providers.py names)
MISSING: Missing = "fail"
BASELINE_DIR = "baselines"  # where baseline files are kept, relative to the rootdir
PROFILE_DIR = ".ortperf/profiles"  # where profiled tests' traces go, relative to the rootdir


def percent(fraction: float) -> str:
    """0.03 -> '3%', 0.125 -> '12.5%': a fraction as the options write it."""
    return f"{fraction * 100:g}%"


def size(count: int) -> str:
    """4096 -> '4KiB': a byte count as the options write it (whole units only)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale and count % scale == 0:
            return f"{count // scale}{unit}"
    return f"{count}B"


def seconds(value: float) -> str:
    """4.0 -> '4', 0.5 -> '0.5'."""
    return f"{value:g}"
