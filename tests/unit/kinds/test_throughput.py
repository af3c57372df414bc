"""The pure parts of ``kinds/throughput.py``: batch sizes parsed, the batch dim found, feeds tiled,
percentiles, concurrent callers, the row and the curve read from a record."""

from __future__ import annotations

import itertools
import threading
import time

import numpy as np
import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.kinds.throughput import (
    BatchDim,
    batch_dim,
    concurrent_latencies,
    drawing,
    parse_batch_sizes,
    percentile,
    row,
    tiled,
)


def test_batch_sizes_parse_sorted_and_unique_and_a_bad_one_names_where_it_came_from() -> None:
    assert parse_batch_sizes("32,1,8,8", "--x") == (1, 8, 32)
    assert parse_batch_sizes(" ", "--x") == ()
    for bad in ("0", "1,x", "-2", ","):
        with pytest.raises(UsageError, match=r"^ini k: batch sizes are whole numbers of 1 or more"):
            parse_batch_sizes(bad, "ini k")


def test_the_batch_dim_is_free_only_where_every_input_names_its_first_dim() -> None:
    feeds = {"x": np.zeros((2, 4)), "m": np.zeros((2,))}
    assert batch_dim([("x", ["batch", 4]), ("m", [None])], feeds) == BatchDim(True, "", 2)
    assert batch_dim([("x", ["batch", 4]), ("m", [2])], feeds) == BatchDim(
        False, "input 'm' has the shape [2]", 2
    )
    assert batch_dim([("s", [])], {"s": np.float32(1)}).free is False  # a scalar has no batch dim


def test_feeds_are_tiled_along_their_first_dim() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = tiled({"x": x}, 5)["x"]
    assert out.shape == (5, 3)
    assert out.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(out[:2], x)
    np.testing.assert_array_equal(out[4], x[0])
    assert tiled({"x": x}, 1)["x"].shape == (1, 3)


def test_percentiles_interpolate_between_ranks() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == pytest.approx(50.5)
    assert percentile(values, 0.99) == pytest.approx(99.01)
    assert percentile([3.0], 0.99) == 3.0


def test_concurrent_callers_run_at_once_until_the_budget_and_the_least_calls() -> None:
    ticks = itertools.count(0, 1_000_000)  # each clock read: one more millisecond
    lock, callers = threading.Lock(), set()

    def clock() -> int:
        with lock:
            return next(ticks)

    def run() -> None:  # a session's run lets the other callers in (onnxruntime releases the GIL)
        with lock:
            callers.add(threading.get_ident())
        time.sleep(0.0002)

    times = concurrent_latencies(run, 3, budget_s=0.01, clock=clock)
    assert len(times) >= 100  # past the 10 ms budget, the calls go on to the least that give a p99
    assert all(t > 0 for t in times)
    assert len(callers) == 3  # each caller its own thread

    def failing() -> None:
        raise RuntimeError("session broke")

    with pytest.raises(RuntimeError, match="session broke"):
        concurrent_latencies(failing, 2, budget_s=0.01, clock=clock)


RECORD = {
    "kind": "throughput",
    "test": "test_serving.py::test_serving[cpu-all]",
    "variant": "cpu-all",
    "verdict": "ok",
    "path": "measured, not compared",
    "figures": {
        "per_second": {"1": 950.0, "8": 5100.0, "32": 12000.0},
        "recorded_per_second": {"1": 1000.0, "8": 5000.0, "32": 11000.0},
        "p99_ms": 2.5,
        "concurrency": 4,
    },
    "notes": ["curve: ..."],
}


def test_the_row_shows_the_curve_the_tail_and_the_verdict() -> None:
    assert row(RECORD) == (
        "test_serving.py::test_serving[cpu-all]",
        "cpu-all",
        "measured, not compared",
        "1: 950/s, 8: 5,100/s, 32: 12k/s",
        "2.5 ms (4)",
        "-",
        "ok",
    )
    assert row({**RECORD, "verdict": "error"}) is None
    assert row({**RECORD, "figures": {}})[3:5] == ("-", "-")


def test_the_drawing_is_today_s_curve_and_the_recorded_one() -> None:
    html = drawing(RECORD)
    assert html.count("<polyline") == 2
    assert 'stroke-dasharray="4 3"' in html
    assert "today (line), recorded (dashed)" in html
    alone = drawing({**RECORD, "figures": {"per_second": {"1": 950.0}}})
    assert alone.count("<polyline") == 1
    assert "recorded" not in alone.split("</svg>")[0]
    assert "throughput-curve" not in drawing({**RECORD, "figures": {"per_second": {"1": "x"}}})


def test_under_timing_off_the_kind_is_not_timed_and_says_so() -> None:
    from pytest_ortperf.checks.status import Status
    from pytest_ortperf.kinds.throughput import not_timed
    from pytest_ortperf.store.keys import CheckKey

    result = not_timed(CheckKey("t.py", "t", "cpu-all", "m", "pytest --ortperf-update t.py"))
    assert result.status is Status.NOT_TIMED
    assert result.skipped
    assert not result.failed
    assert result.message.startswith("throughput of ")
    assert result.message.endswith("not timed: timing is off (--ortperf-timing=off); nothing is measured.")
