"""Stop a hung ``session.run``: a watchdog thread sets ``RunOptions.terminate`` past a deadline.

ORT checks the flag between nodes and fails the run; the check then fails
that test with a clear message and the rest of the suite goes on. One daemon
thread serves the whole run and arming costs two attribute writes, so timed
runs pay (almost) nothing for it.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_ortperf.errors import OrtperfError

RUN_FAILED = "session.run failed on"  # how a RunFailed message starts: callers add what they know


class RunTimeout(OrtperfError):
    """A session.run took longer than the configured limit and was terminated."""


class RunFailed(OrtperfError):
    """ONNX Runtime raised during a run (a provider failing at run time, bad feeds...)."""


class _Slot:
    """One RunOptions the watcher may terminate, and the deadline of the run using it (0: idle)."""

    __slots__ = ("__weakref__", "deadline", "fired", "options")

    def __init__(self, options: Any) -> None:
        self.options = options
        self.deadline = 0.0
        self.fired = False  # the watcher set options.terminate for the current run


class Watchdog:
    """One watcher thread for every run: each calling thread arms its own RunOptions.

    Runs from several threads at once (a marked test's threads, profiled runs)
    each get their deadline; a caller's own RunOptions is watched for the run
    and handed back with ``terminate`` cleared.
    """

    def __init__(self, ort: Any, timeout_s: float) -> None:
        self._ort = ort
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        # Weak: a thread's own slot goes when the thread does.
        self._slots: tuple[weakref.ref[_Slot], ...] = ()
        self._local = threading.local()
        self._thread: threading.Thread | None = None
        self._poll_s = min(0.1, timeout_s / 4)

    def run(
        self,
        session: Any,
        output_names: Sequence[str] | None,
        feeds: Mapping[str, Any],
        run_options: Any = None,
    ) -> Any:
        """``session.run`` with the deadline armed; :class:`RunTimeout` if it was terminated,
        :class:`RunFailed` for any other error ONNX Runtime raised."""
        if self._thread is None:
            self._start()
        borrowed = run_options is not None
        slot = self._register(run_options) if borrowed else self._own_slot()
        options = slot.options
        slot.deadline = time.monotonic() + self.timeout_s
        try:
            result = session.run(output_names, feeds, options)
        except Exception as exc:
            if self._disarm(slot, borrowed=borrowed):
                raise RunTimeout(
                    f"session.run took longer than {self.timeout_s:g} s and was terminated "
                    "(--ortperf-run-timeout); the model may hang or need a longer limit."
                ) from None
            providers = ", ".join(session.get_providers())
            detail = " ".join(str(exc).split())[:600]
            raise RunFailed(
                f"{RUN_FAILED} {providers} (no fallback to another provider is attempted): "
                f"{type(exc).__name__}: {detail}"
            ) from exc
        else:
            # A run that overran by a hair may return normally after the watcher fired: the
            # flag must not stay set, or the next run on these options fails at once.
            self._disarm(slot, borrowed=borrowed)
            return result
        finally:
            if borrowed:
                self._unregister(slot)

    def _disarm(self, slot: _Slot, *, borrowed: bool) -> bool:
        """End the slot's run; True if the watcher had terminated it (the flag is then cleared)."""
        with self._lock:  # the watcher checks the deadline and sets the flag under this lock
            slot.deadline = 0.0
            fired, slot.fired = slot.fired, False
        if fired:
            if borrowed:
                slot.options.terminate = False
            else:
                slot.options = self._ort.RunOptions()  # a terminated RunOptions stays terminated
        return fired

    def _start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="ortperf-watchdog", daemon=True)
                self._thread.start()

    def _own_slot(self) -> _Slot:
        slot: _Slot | None = getattr(self._local, "slot", None)
        if slot is None:
            slot = self._register(self._ort.RunOptions())
            self._local.slot = slot
        return slot

    def _register(self, options: Any) -> _Slot:
        slot = _Slot(options)
        with self._lock:
            self._slots = (*(r for r in self._slots if r() is not None), weakref.ref(slot))
        return slot

    def _unregister(self, slot: _Slot) -> None:
        with self._lock:
            self._slots = tuple(r for r in self._slots if r() not in (None, slot))

    def _watch(self) -> None:
        while True:
            time.sleep(self._poll_s)
            now = time.monotonic()
            for ref in self._slots:
                slot = ref()
                if slot is None or not (slot.deadline and now > slot.deadline):
                    continue
                with self._lock:  # re-checked: the run may have ended (and disarmed) meanwhile
                    if slot.deadline and now > slot.deadline and not slot.fired:
                        slot.options.terminate = True
                        slot.fired = True
