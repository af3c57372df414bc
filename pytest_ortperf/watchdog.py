"""Stop a hung ``session.run``: a watchdog thread sets ``RunOptions.terminate`` past a deadline.

ORT checks the flag between nodes and fails the run; the check then fails
that test with a clear message and the rest of the suite goes on. One daemon
thread serves the whole run and arming costs two attribute writes, so timed
runs pay (almost) nothing for it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_ortperf.errors import OrtperfError

DEFAULT_TIMEOUT_S = 300.0


class RunTimeout(OrtperfError):
    """A session.run took longer than the configured limit and was terminated."""


class RunFailed(OrtperfError):
    """ONNX Runtime raised during a run (a provider failing at run time, bad feeds...)."""


class Watchdog:
    def __init__(self, ort: Any, timeout_s: float) -> None:
        self._ort = ort
        self.timeout_s = timeout_s
        self._options = ort.RunOptions()
        self._deadline = 0.0
        self._watched: Any = None
        self._thread: threading.Thread | None = None
        self._poll_s = min(0.1, timeout_s / 4)

    def run(self, session: Any, output_names: Sequence[str] | None, feeds: Mapping[str, Any]) -> Any:
        """``session.run`` with the deadline armed; :class:`RunTimeout` if it was terminated."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="ortperf-watchdog", daemon=True)
            self._thread.start()
        options = self._options
        self._deadline = time.monotonic() + self.timeout_s
        self._watched = options
        try:
            return session.run(output_names, feeds, options)
        except Exception as exc:
            if options.terminate:
                self._options = self._ort.RunOptions()  # a terminated RunOptions stays terminated
                raise RunTimeout(
                    f"session.run took longer than {self.timeout_s:g} s and was terminated "
                    "(--ortperf-run-timeout); the model may hang or need a longer limit."
                ) from None
            providers = ", ".join(session.get_providers())
            detail = " ".join(str(exc).split())[:600]
            raise RunFailed(
                f"session.run failed on {providers} (no fallback to another provider is attempted): "
                f"{type(exc).__name__}: {detail}"
            ) from exc
        finally:
            self._watched = None

    def _watch(self) -> None:
        while True:
            time.sleep(self._poll_s)
            watched = self._watched
            if watched is not None and time.monotonic() > self._deadline:
                watched.terminate = True
