"""What a latency check is doing, moment by moment: for the terminal's progress line and for the
account of where the gate's time went.

A check opens one :class:`Activity`; the code that builds sessions, warms up and measures says
which phase it is in (:meth:`Activity.phase`) and how many rounds it has done
(:meth:`Activity.rounds`). Time is charged to the outermost phase open, so everything a
confirmation costs (its new sessions, its warm-up, its rounds) counts as ``confirming``. A
listener (the pytest layer's progress line) sees every change; with none, an activity only keeps
the account.

Plain logic, no pytest: the activity never blocks and never touches the timed runs; the measuring
code calls it between rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Protocol

from pytest_ortperf.latency.lock_holder import LockHolder, LockWait, merge_waits

# The phases a check's time is charged to, in the order a check goes through them.
BUILDING, WARMING, MEASURING = "building", "warming", "measuring"
CONFIRMING, WAITING = "confirming", "waiting"
EXPLAINING = "explaining"  # after the verdict: profiling both sides to say where the time went


@dataclass(frozen=True)
class GateSeconds:
    """Where one check's time went (seconds), or a run's, summed.

    ``waiting``: for the timing lock, while another process (an xdist worker, another run of the
    same user) measured; who it was is in :meth:`Activity.lock_waits`."""

    building: float = 0.0
    warming: float = 0.0
    measuring: float = 0.0
    confirming: float = 0.0
    waiting: float = 0.0
    explaining: float = 0.0  # a failure's (inconclusive result's, improvement's) operator profiles

    @property
    def total(self) -> float:
        return sum((getattr(self, f.name) for f in fields(self)), 0.0)

    def __add__(self, other: GateSeconds) -> GateSeconds:
        return GateSeconds(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def as_dict(self) -> dict[str, float]:
        return {f.name: round(getattr(self, f.name), 4) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> GateSeconds:
        """From :meth:`as_dict`'s form (a JSON report); unknown keys are ignored, bad values read 0."""
        values: dict[str, float] = {}
        for f in fields(cls):
            value = data.get(f.name, 0.0)
            values[f.name] = float(value) if isinstance(value, (int, float)) and value >= 0 else 0.0
        return cls(**values)


@dataclass(frozen=True)
class Progress:
    """A moment of a check, as a listener sees it."""

    check: str  # which check: the test's name with its parameters (and check name, if any)
    phase: str  # the outermost phase open ("" between phases)
    step: str  # the innermost phase open, with its side: "warming reference", "measuring side by side"
    rounds: int  # rounds measured so far in this phase's measurement
    planned: int  # the most rounds it may take (sequential looks can stop it earlier)
    elapsed_s: float  # since the check began
    holder: LockHolder | None = None  # waiting for the timing lock: who holds it, when the lock file names it


class Listener(Protocol):
    def update(self, progress: Progress) -> None: ...

    def clear(self) -> None:
        """The check ended: take down whatever was shown for it."""
        ...


class Activity:
    """The phases and rounds of one check, timed with ``clock`` (seconds)."""

    def __init__(
        self,
        check: str = "",
        *,
        listener: Listener | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.check = check
        self._listener = listener
        self._clock = clock
        self._began = clock()
        self._open: list[tuple[str, str]] = []  # (phase, side) open, outermost first
        self._since = 0.0  # when the outermost phase opened
        self._spent: dict[str, float] = {}
        self._rounds = (0, 0)
        self._holder: LockHolder | None = None  # who holds the timing lock while this check waits
        self._lock_waits: list[LockWait] = []

    @contextmanager
    def phase(self, name: str, side: str = "") -> Iterator[None]:
        """Charge the time inside to ``name`` unless an outer phase is open (then to that one)."""
        outermost = not self._open
        if outermost:
            self._since = self._clock()
        self._open.append((name, side))
        self._rounds = (0, 0)
        self._notify()
        try:
            yield
        finally:
            self._open.pop()
            self._rounds = (0, 0)
            self._holder = None
            if outermost:
                self._spent[name] = self._spent.get(name, 0.0) + self._clock() - self._since
            self._notify()

    def rounds(self, done: int, planned: int) -> None:
        """``done`` rounds of at most ``planned`` measured so far."""
        self._rounds = (done, planned)
        self._notify()

    def waiting_for(self, holder: LockHolder | None) -> None:
        """Who holds the timing lock this check waits for, as the lock file names it (None: it does
        not); told again while the wait goes on."""
        self._holder = holder
        self._notify()

    def waited(self, waits: Sequence[LockWait]) -> None:
        """One wait for the timing lock is over: how long, per holder."""
        self._lock_waits += waits

    def carry(self, earlier: Activity) -> None:
        """Charge to this check what ``earlier`` spent before it began (the wait for the timing lock
        before its instance's checks could start) and the waits it kept."""
        for name, seconds in earlier.seconds().as_dict().items():
            if seconds:
                self._spent[name] = self._spent.get(name, 0.0) + seconds
        self._lock_waits += earlier._lock_waits

    def lock_waits(self) -> tuple[LockWait, ...]:
        """This check's waits for the timing lock, per holder, longest first."""
        return tuple(merge_waits(self._lock_waits))

    def seconds(self) -> GateSeconds:
        """The time charged so far, phases still open included up to now."""
        spent = dict(self._spent)
        if self._open:
            outer = self._open[0][0]
            spent[outer] = spent.get(outer, 0.0) + self._clock() - self._since
        return GateSeconds(**{name: spent.get(name, 0.0) for name in GateSeconds.__dataclass_fields__})

    def close(self) -> None:
        if self._listener is not None:
            self._listener.clear()

    def __enter__(self) -> Activity:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _notify(self) -> None:
        if self._listener is None:
            return
        phase = self._open[0][0] if self._open else ""
        step = " ".join(part for part in self._open[-1] if part) if self._open else ""
        done, planned = self._rounds
        holder = self._holder if self._open and self._open[-1][0] == WAITING else None
        self._listener.update(
            Progress(self.check, phase, step, done, planned, self._clock() - self._began, holder)
        )
