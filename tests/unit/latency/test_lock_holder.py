"""Who holds the timing lock: what the lock file says, what a waiter makes of it, how it is said."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from pytest_ortperf.latency.lock_holder import (
    COMMAND_SHOWN,
    LockHolder,
    LockOwner,
    LockWait,
    clock_text,
    command_line,
    describe_holder,
    merge_waits,
    parse_holder,
    process_exists,
)

SINCE = time.mktime((2025, 3, 4, 12, 3, 5, 0, 0, -1))  # local time


def alive(pid: int) -> bool:
    return True


def test_a_holder_reads_back_what_it_wrote_and_knows_its_own_run() -> None:
    owner = LockOwner("run-1", "pytest tests/ -k mlp")
    text = owner.holder_text(pid=1234, since=SINCE)
    assert text.endswith("\n")
    assert json.loads(text)["run"] == "run-1"
    other = parse_holder(text, run="run-2", alive=alive)
    assert other == LockHolder(1234, "pytest tests/ -k mlp", round(SINCE, 3))
    mine = parse_holder(
        LockOwner("run-1", "pytest -n 2", "gw1").holder_text(pid=99, since=SINCE), run="run-1"
    )
    assert mine is not None
    assert mine.this_run
    assert mine.worker == "gw1"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        '{"pid": 12',  # cut short while being written
        "[1, 2]",
        "not json at all",
        '{"command": "pytest", "since": 1.0}',  # no pid
        '{"pid": "1234", "command": "pytest", "since": 1.0}',
        '{"pid": true, "command": "pytest", "since": 1.0}',
        '{"pid": -5, "command": "pytest", "since": 1.0}',
        '{"pid": 1234, "command": "pytest", "since": "noon"}',
        '{"pid": 1234, "command": "pytest", "since": 1e300}',
        '{"pid": 1234, "command": ["pytest"], "since": 1.0}',
        '{"pid": 1234, "command": "pytest", "since": 1.0, "worker": 3}',
    ],
)
def test_a_lock_file_that_names_no_holder_reads_as_none(text: str) -> None:
    assert parse_holder(text, run="run", alive=alive) is None


def test_a_foreign_run_id_or_a_this_run_claim_in_the_file_never_makes_a_holder_ours() -> None:
    text = json.dumps({"pid": 1234, "command": "pytest", "since": 1.0, "run": 7, "this_run": True})
    holder = parse_holder(text, run="7", alive=alive)
    assert holder is not None
    assert not holder.this_run


def test_a_holder_that_has_ended_is_not_named() -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    assert not process_exists(ended.pid)
    assert process_exists(os.getpid())
    text = LockOwner("run", "pytest tests/").holder_text(pid=ended.pid, since=SINCE)
    assert parse_holder(text, run="other", alive=process_exists) is None
    assert parse_holder(text, run="other", alive=alive) is not None


def test_holders_are_described_with_pid_command_and_since() -> None:
    holder = LockHolder(1234, "pytest tests/ -k mlp", SINCE)
    assert holder.describe() == f"held by pid 1234 (pytest tests/ -k mlp) since {clock_text(SINCE)}"
    assert clock_text(SINCE, now=SINCE + 60) == "12:03:05"
    assert clock_text(SINCE, now=SINCE + 3 * 86400) == "2025-03-04 12:03:05"
    worker = LockHolder(1234, "pytest -n 4 tests/", SINCE, worker="gw2")
    assert worker.describe().startswith("held by pid 1234 (pytest -n 4 tests/, xdist worker gw2) since ")
    assert (
        LockHolder(1234, "", SINCE, worker="gw2", this_run=True).describe()
        == "held by this run's xdist worker gw2"
    )
    long = LockHolder(1, "pytest " + "tests/test_a_very_long_name.py " * 10, SINCE).describe()
    assert "(pytest tests/test_a_very_long_name.py tests/test_a_very_l...) since " in long
    assert len("pytest tests/test_a_very_long_name.py tests/test_a_very_l...") == COMMAND_SHOWN
    assert describe_holder(None).startswith("held by a process the lock file does not name")
    assert LockWait(22.81, holder).describe() == (
        f"waiting 22.8 s for the timing lock, held by pid 1234 (pytest tests/ -k mlp) since {clock_text(SINCE)}"
    )


def test_waits_round_trip_through_a_report_and_bad_ones_are_dropped() -> None:
    wait = LockWait(2.5, LockHolder(1234, "pytest", SINCE, "gw0", this_run=True))
    assert LockWait.from_dict(json.loads(json.dumps(wait.as_dict()))) == LockWait(2.5, wait.holder)
    assert LockWait.from_dict({"seconds": 1.0, "holder": None}) == LockWait(1.0, None)
    assert LockWait.from_dict({"seconds": 1.0, "holder": {"pid": "x"}}) == LockWait(1.0, None)
    assert LockWait.from_dict({"seconds": -1}) is None
    assert LockWait.from_dict({"seconds": float("nan")}) is None
    assert LockWait.from_dict({}) is None


def test_waits_sum_per_process_with_its_earliest_since_longest_first() -> None:
    first, later = LockHolder(10, "pytest a", SINCE), LockHolder(10, "pytest a", SINCE + 30)
    other = LockHolder(11, "pytest b", SINCE + 5)
    merged = merge_waits(
        [
            LockWait(1.0, later),
            LockWait(0.5, None),
            LockWait(2.0, other),
            LockWait(1.5, first),
            LockWait(0.25, None),
        ]
    )
    assert merged == [LockWait(2.5, first), LockWait(2.0, other), LockWait(0.75, None)]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["/venv/bin/pytest", "tests/", "-k", "mlp and not slow"], "pytest tests/ -k 'mlp and not slow'"),
        (["/usr/lib/python3/site-packages/pytest/__main__.py", "-x"], "python -m pytest -x"),
        (["-c"], "python -c"),
        (["/venv/bin/ortperf", "update", "tests/"], "ortperf update tests/"),
        ([], ""),
    ],
)
def test_command_lines_read_as_typed(argv: list[str], expected: str) -> None:
    assert command_line(argv) == expected
