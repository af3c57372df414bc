"""A pytest plugin for benchmarks: the hardware identity is read from ``$ORTPERF_BENCH_CPUINFO``.

Load it with ``-p benchmarks.fake_cpuinfo``: the run then believes it runs on the CPU that file
describes (e.g. ``tests/unit/data/cpuinfo/zen4_avx512.txt``), everything else stays real.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any


def pytest_configure(config: Any) -> None:
    path = os.environ.get("ORTPERF_BENCH_CPUINFO")
    if not path:
        return
    from pytest_ortperf.store import machine

    machine.detect_hardware = functools.partial(machine.detect_hardware, cpuinfo=Path(path))  # type: ignore[assignment]
