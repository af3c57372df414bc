"""The cross-process timing lock really serializes timed sections."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("fcntl")

HOLDER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from pytest_ortperf.latency.timing_lock import TimingLock

    lock = TimingLock(Path(sys.argv[1]))
    Path(sys.argv[2]).write_text("ready")
    while not Path(sys.argv[3]).exists():  # both processes start their sections together
        time.sleep(0.001)
    with lock.held():
        start = time.time()
        time.sleep(0.3)
        end = time.time()
    print(json.dumps({"start": start, "end": end, "waited": lock.waited_s}))
    """
)


def test_two_processes_holding_the_lock_never_time_at_the_same_time(tmp_path: Path) -> None:
    go = tmp_path / "go"
    readies = [tmp_path / f"ready{i}" for i in range(2)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(tmp_path / "timing.lock"), str(ready), str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for ready in readies
    ]
    try:
        deadline = time.monotonic() + 30
        while not all(ready.exists() for ready in readies) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.write_text("go")
        outputs = [process.communicate(timeout=30)[0] for process in processes]
    finally:
        for process in processes:
            process.kill()
    first, second = sorted((json.loads(output) for output in outputs), key=lambda s: s["start"])
    assert first["end"] <= second["start"], f"timed sections overlapped: {first} {second}"
    assert second["waited"] >= 0.2  # it waited for the other's section
