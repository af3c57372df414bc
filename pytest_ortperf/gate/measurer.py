"""How the run's checks measure (``gate/services.py: Measuring``): each check's activity, shown on the
progress line; the cross-process timing lock; the machine-speed canary, one per thread settings; and
the measuring workers that run another onnxruntime, started on first use."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.latency.across_processes import first_batch
from pytest_ortperf.latency.activity import Activity, Listener
from pytest_ortperf.latency.timing_lock import TimingLock
from pytest_ortperf.ort.providers import CPU
from pytest_ortperf.ort.runtime import import_onnxruntime
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.workers import WorkerPool, this_python

if TYPE_CHECKING:
    from pytest_ortperf.latency.canary import Canary


class Measurer:
    """The run's measuring: one timing lock, canaries and workers for every check of the run."""

    def __init__(self, timing: TimingLock, *, run_timeout_s: float) -> None:
        self.timing = timing
        self.progress: Listener | None = None  # the terminal's progress line, when shown (plugin/progress.py)
        self._run_timeout_s = run_timeout_s
        self._canaries: dict[SessionSettings, Canary] = {}
        self._workers: WorkerPool | None = None
        self._before: Activity | None = None  # the wait for the untimed hold, before a check began

    def activity(self, check: str) -> Activity:
        """A new check's activity: timed by phase, and shown on the progress line when there is one;
        it carries the wait of its instance's untimed hold (:meth:`untimed`), once."""
        activity = Activity(check, listener=self.progress)
        before, self._before = self._before, None
        if before is not None and before.check == check:
            activity.carry(before)
        return activity

    def held(self, activity: Activity | None = None, *, shared: bool = False) -> AbstractContextManager[None]:
        """The run's timing lock, held inside; the wait for it is told to ``activity``. ``shared``: a
        measurement that only informs, which may overlap others like it but never one that decides.
        Measuring processes started ahead (:meth:`prestart`) finish starting first."""
        if self._workers is not None:
            self._workers.settle()
        return self.timing.held(activity, shared=shared)

    def beside(self, *, shared: bool) -> str:
        """Which other processes of this run a measurement holding the timing lock this way may have
        run beside, in words (``latency/timing_lock.py: TimingLock.beside``); "" when none could."""
        return self.timing.beside(shared=shared)

    def untimed(self, check: str = "") -> AbstractContextManager[None]:
        """The timing lock held shared around untimed work, so that it never runs beside another
        process's decision (``latency/timing_lock.py: TimingLock.untimed``). A wait for it is shown
        on the progress line as ``check``'s and charged to the first activity of ``check``."""
        activity = Activity(check, listener=self.progress)
        if self._before is not None and self._before.check == check:  # the fixture's, then the checks'
            activity.carry(self._before)
        self._before = activity
        return self.timing.untimed(activity)

    def canary(self, built: BuiltSession) -> Callable[[], object] | None:
        """The machine-speed canary for a CPU variant (same thread settings); None for accelerators,
        whose speed a CPU workload does not track."""
        if built.variant.provider != CPU:
            return None
        if built.settings not in self._canaries:
            # Imported here: the canary builds its model with onnx, which a run without a CPU latency
            # check never needs.
            from pytest_ortperf.latency.canary import Canary

            self._canaries[built.settings] = Canary.build(import_onnxruntime(), built.variant, built.settings)
        return self._canaries[built.settings].run

    @property
    def workers(self) -> WorkerPool:
        """The run's measuring processes (every side-by-side comparison, in this runtime or across
        runtimes), started on first use and reused by later checks."""
        if self._workers is None:
            self._workers = WorkerPool(self._run_timeout_s)
        return self._workers

    def prestart(self, policy: CheckPolicy) -> None:
        """Start the first batch of pooled measuring processes of this interpreter, as ``policy``
        measures side by side, without waiting for them (``ort/workers.py: WorkerPool.prestart``):
        a run whose checks will go side by side starts them while pytest collects (under
        ``--ortperf-ab``, or where a model changed since its baseline recorded it:
        ``gate/run.py: OrtperfRun.foresees_side_by_side``)."""
        count = first_batch(policy.ab.budget_s, sequential=policy.sequential)
        self.workers.prestart(this_python(), count)

    def close(self) -> None:
        if self._workers is not None:
            self._workers.close()
