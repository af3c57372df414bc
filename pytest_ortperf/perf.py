"""``ort_perf``: the checks a test runs against its baselines."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import NoReturn

from pytest_ortperf.checks import CheckKey, CheckPolicy, LatencyResult, check_latency
from pytest_ortperf.environment import environment
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.inputs import Array
from pytest_ortperf.run import OrtperfRun
from pytest_ortperf.sessions import BuiltSession

Abort = Callable[[str], NoReturn]


class OrtPerf:
    """Latency checks for one test x variant, against the baseline for this machine.

    ``check_latency()`` times ``ort_session`` (never a profiled session) on
    ``ort_inputs`` or the feeds given, compares with the baseline and fails the
    test on a confirmed, significant regression beyond the threshold.
    """

    def __init__(
        self,
        *,
        run: OrtperfRun,
        built: BuiltSession,
        feeds: Mapping[str, Array],
        key: CheckKey,
        policy: CheckPolicy,
        fail: Abort,
        skip: Abort,
        on_result: Callable[[LatencyResult], object] | None = None,
    ) -> None:
        self._run = run
        self._built = built
        self._feeds = feeds
        self._key = key
        self._policy = policy
        self._fail = fail
        self._skip = skip
        self._on_result = on_result

    @property
    def session(self) -> BuiltSession:
        return self._built

    def check_latency(self, feeds: Mapping[str, Array] | None = None) -> LatencyResult:
        __tracebackhide__ = True
        inputs = dict(self._feeds if feeds is None else feeds)
        session = self._built.session
        try:
            result = check_latency(
                lambda: session.run(None, inputs),
                key=self._key,
                store=self._run.store,
                policy=self._policy,
                environment=environment(
                    self._built, inputs, machine=self._run.machine, runtime=self._run.runtime
                ),
                today=datetime.date.today().isoformat(),
            )
        except OrtperfError as exc:
            message = str(exc)
        else:
            self._run.results.append(result)
            if self._on_result is not None:
                self._on_result(result)
            if result.failed:
                self._fail(result.message)
            if result.skipped:
                self._skip(result.message)
            return result
        self._fail(message)  # outside the except block: no chained traceback in the report


def key_for(nodeid: str, selector: str, variant: str, machine: str, extra_args: str) -> CheckKey:
    """Split a node id into baseline file and test name; build the command that records it."""
    test_file, _, test = nodeid.partition("::")
    command = f"ortperf update '{selector}'" + (f" {extra_args}" if extra_args else "")
    return CheckKey(test_file=test_file, test=test, variant=variant, machine=machine, record_command=command)
