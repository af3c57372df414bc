"""The run watchdog with a stand-in session: deadlines, and no terminate flag left behind."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pytest_ortperf.ort.watchdog import RunTimeout, Watchdog


class FakeRunOptions:
    def __init__(self) -> None:
        self.terminate = False


class FakeOrt:
    RunOptions = FakeRunOptions


class OverrunSession:
    """Like ORT: a run fails if its RunOptions is terminated when it starts; the first run
    overruns until the watcher fires and then returns normally anyway (it was at its last node)."""

    def __init__(self) -> None:
        self.calls = 0

    def get_providers(self) -> list[str]:
        return ["CPUExecutionProvider"]

    def run(self, names: Sequence[str] | None, feeds: Mapping[str, Any], options: Any) -> list[int]:
        self.calls += 1
        if options.terminate:
            raise RuntimeError("Exiting due to terminate flag being set to true.")
        if self.calls == 1:
            give_up = time.monotonic() + 5
            while not options.terminate and time.monotonic() < give_up:
                time.sleep(0.001)
            assert options.terminate, "the watcher never fired"
        return [self.calls]


def test_a_run_that_overran_but_returned_leaves_no_terminate_flag_for_the_next_run() -> None:
    watchdog = Watchdog(FakeOrt(), timeout_s=0.02)
    session = OverrunSession()
    assert watchdog.run(session, None, {}) == [1]
    time.sleep(0.1)  # a few watcher passes: nothing may fire on an idle slot
    assert watchdog.run(session, None, {}) == [2]


def test_a_callers_run_options_come_back_cleared_after_an_overrun() -> None:
    watchdog = Watchdog(FakeOrt(), timeout_s=0.02)
    session = OverrunSession()
    options = FakeRunOptions()
    assert watchdog.run(session, None, {}, options) == [1]
    time.sleep(0.1)
    assert options.terminate is False
    assert watchdog.run(session, None, {}, options) == [2]


class HangingSession(OverrunSession):
    def run(self, names: Sequence[str] | None, feeds: Mapping[str, Any], options: Any) -> list[int]:
        self.calls += 1
        give_up = time.monotonic() + 5
        while time.monotonic() < give_up:
            if options.terminate:
                raise RuntimeError("Exiting due to terminate flag being set to true.")
            time.sleep(0.001)
        return [self.calls]


def test_a_hung_run_is_terminated_and_the_next_run_starts_clean() -> None:
    watchdog = Watchdog(FakeOrt(), timeout_s=0.02)
    with pytest.raises(RunTimeout, match=r"took longer than 0\.02 s"):
        watchdog.run(HangingSession(), None, {})
    assert watchdog.run(OverrunSession(), None, {}) == [1]  # overruns, returns: still no leftover
    session = OverrunSession()
    session.calls = 1  # a quick run
    assert watchdog.run(session, None, {}) == [2]
