"""The progress line: what a long latency check is doing, while pytest's own output sits still.

A check that runs past :data:`SHOW_AFTER_S` shows which test it is, what it is doing (building,
warming up which side, measuring side by side, confirming, waiting for the timing lock) and its
rounds so far. On a terminal the line is written after whatever pytest has on the current line
and taken down again before pytest writes its verdict, so nothing is left behind; in a log
(``--ortperf-progress=on`` without a terminal) it is a plain line at most every
:data:`LOG_EVERY_S` seconds per check.

``--ortperf-progress=auto`` (the default) shows it on a terminal, not under ``-q``, not when the
``CI`` environment variable is set, and never in an xdist worker, whose output does not reach the
terminal while a test runs.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from typing import Any, TextIO

from pytest_ortperf.latency.activity import MEASURING, WAITING, Progress
from pytest_ortperf.values import turned_off

SHOW_AFTER_S = 1.0  # a check shorter than this never shows
REDRAW_EVERY_S = 0.25  # on a terminal
LOG_EVERY_S = 5.0  # in a log, per check
MIN_WIDTH = 12  # less room on the line than this: nothing is shown


def progress_text(progress: Progress, width: int = 0) -> str:
    """``test_a[cpu-all]: confirming: measuring side by side, round 10 of at most 40 (6 s)``; at most
    ``width`` characters when given: the test's name gives way first (from its start), then who
    holds the timing lock, then words."""
    step = progress.step
    if progress.phase == WAITING:
        step = "waiting for the timing lock"
    elif not step.startswith(progress.phase):
        step = f"{progress.phase}: {step}"
    if progress.holder is not None:  # waiting for the timing lock, and the lock file names its holder
        step += f", {progress.holder.describe()}"
    rounds = short = ""
    if progress.step.startswith(MEASURING) and progress.planned:
        bound = "at most " if "side by side" in progress.step else ""
        rounds = f", round {progress.rounds} of {bound}{progress.planned}"
        short = f" {progress.rounds}/{progress.planned}"
    doing = f"{step}{rounds} ({progress.elapsed_s:.0f} s)"
    whole = f"{progress.check}: {doing}"
    if not width or len(whole) <= width:
        return whole
    keep = width - len(doing) - 5
    if keep >= 8:  # enough of the name to tell the test: its end, with the parameters (ASCII only)
        return f"...{progress.check[-keep:]}: {doing}"
    if progress.holder is not None:
        return progress_text(replace(progress, holder=None), width)
    for text in (doing, f"{progress.phase}{short}"):
        if len(text) <= width:
            return text
    return ""


def wanted(setting: bool | None, *, tty: bool, verbosity: int, worker: bool, env: dict[str, str]) -> bool:
    """Whether to show progress: ``setting`` on/off, or None for auto (a terminal, not ``-q``, not CI)."""
    if worker:
        return False
    if setting is not None:
        return setting
    return tty and verbosity >= 0 and turned_off(env.get("CI", ""))  # CI=false is not CI


class TerminalProgress:
    """A :class:`latency.activity.Listener` that writes the progress line.

    ``write`` puts text on the terminal as is; ``room`` says how many columns the current line has
    left. With ``transient`` the line is drawn after pytest's current line and erased; otherwise each
    update is a line of its own (``room`` unused)."""

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        transient: bool,
        room: Callable[[], int] = lambda: 80,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._write = write
        self._transient = transient
        self._room = room
        self._clock = clock
        self._shown = 0  # characters now on the line (transient)
        self._last = -1e9  # when last drawn
        self._last_step: tuple[str, bool] = ("", False)

    def update(self, progress: Progress) -> None:
        if progress.elapsed_s < SHOW_AFTER_S or not progress.step:
            return  # a short check, or between two phases: what is shown stays
        now = self._clock()
        every = REDRAW_EVERY_S if self._transient else LOG_EVERY_S
        # A log gets a line at once for a new step, and for a measuring step whose rounds just became
        # known (its first line, written when the step began, could not say them).
        step = (progress.step, bool(progress.planned))
        if now - self._last < every and (self._transient or step == self._last_step):
            return
        self._last, self._last_step = now, step
        if not self._transient:
            self._write(f"ortperf: {progress_text(progress)}\n")
            return
        room = self._room() - 1  # pytest's line, without what is shown here; the last column stays free
        if room < MIN_WIDTH:
            self.clear()
            return
        text = progress_text(progress, room - 3)
        if not text:
            self.clear()
            return
        suffix = f" [{text}]"
        self._write(_erase(self._shown) + suffix)
        self._shown = len(suffix)

    def clear(self) -> None:
        self._last, self._last_step = -1e9, ("", False)
        if self._transient and self._shown:
            self._write(_erase(self._shown))
            self._shown = 0


def _erase(count: int) -> str:
    """Back over ``count`` characters, blank them, and back again."""
    return "\b" * count + " " * count + "\b" * count if count else ""


def terminal_progress(config: Any, setting: bool | None) -> TerminalProgress | None:
    """The progress line for this pytest run, or None when it is not shown.

    The terminal reporter and capture manager are looked up when first written to (they are
    configured after this plugin); output goes out with pytest's capture suspended, between rounds."""
    tty = sys.stdout.isatty()
    worker = hasattr(config, "workerinput")
    verbosity = int(config.getoption("verbose"))
    if not wanted(setting, tty=tty, verbosity=verbosity, worker=worker, env=dict(os.environ)):
        return None

    def write(text: str) -> None:
        capman = config.pluginmanager.get_plugin("capturemanager")
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        with capman.global_and_fixture_disabled() if capman is not None else nullcontext():
            if tty:
                stream: TextIO = sys.stdout
                stream.write(text)
                stream.flush()
            else:
                reporter.ensure_newline()
                reporter.write(text, flush=True)

    def room() -> int:
        if config.pluginmanager.get_plugin("terminalreporter") is None:  # -p no:terminal
            return 0
        writer = config.get_terminal_writer()
        return int(writer.fullwidth - writer.width_of_current_line)

    return TerminalProgress(write, transient=tty, room=room)


def terminal_lines(config: Any, progress: TerminalProgress | None = None) -> Callable[[str], None] | None:
    """A writer of whole lines to the terminal while a test runs (pytest's capture suspended), for
    what the run does once and the user waits for (fetching a recorded runtime); shown under ``-q``
    and in CI too; the progress line, when shown, is taken down first. None in an xdist worker, whose
    output does not reach the terminal."""
    if hasattr(config, "workerinput"):
        return None

    def write(line: str) -> None:
        capman = config.pluginmanager.get_plugin("capturemanager")
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        with capman.global_and_fixture_disabled() if capman is not None else nullcontext():
            if progress is not None:
                progress.clear()
            reporter.ensure_newline()
            reporter.write_line(line)
            reporter.flush()

    return write
