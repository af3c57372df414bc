"""The progress line: its text, when it shows, and that a terminal is left as pytest wrote it."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from pytest_ortperf.latency.activity import Progress
from pytest_ortperf.latency.lock_holder import LockHolder
from pytest_ortperf.plugin.progress import LOG_EVERY_S, SHOW_AFTER_S, TerminalProgress, progress_text, wanted


def moment(
    step: str = "measuring side by side", *, phase: str = "", rounds: int = 16, elapsed: float = 2.0
) -> Progress:
    return Progress(
        check="test_resnet[cpu-all]",
        phase=phase or step.split(" ")[0],
        step=step,
        rounds=rounds,
        planned=40,
        elapsed_s=elapsed,
    )


def render(written: str) -> str:
    """What a terminal line shows after ``written``: backspaces move back, characters overwrite."""
    line: list[str] = []
    at = 0
    for char in written:
        if char == "\b":
            at = max(0, at - 1)
            continue
        if at < len(line):
            line[at] = char
        else:
            line.append(char)
        at += 1
    return "".join(line).rstrip()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_text_names_the_test_the_step_and_the_rounds() -> None:
    assert (
        progress_text(moment())
        == "test_resnet[cpu-all]: measuring side by side, round 16 of at most 40 (2 s)"
    )
    assert progress_text(moment("measuring")) == "test_resnet[cpu-all]: measuring, round 16 of 40 (2 s)"
    assert (
        progress_text(moment("warming reference", rounds=0))
        == "test_resnet[cpu-all]: warming reference (2 s)"
    )
    confirming = progress_text(moment("measuring side by side", phase="confirming"))
    assert (
        confirming == "test_resnet[cpu-all]: confirming: measuring side by side, round 16 of at most 40 (2 s)"
    )
    assert progress_text(moment("waiting")).endswith(": waiting for the timing lock (2 s)")


def test_a_wait_names_who_holds_the_timing_lock_until_the_line_is_too_narrow() -> None:
    holder = LockHolder(1234, "pytest tests/ -k mlp", time.time())
    waiting = replace(moment("waiting"), holder=holder)
    text = progress_text(waiting)
    assert text == f"test_resnet[cpu-all]: waiting for the timing lock, {holder.describe()} (2 s)"
    assert "held by pid 1234 (pytest tests/ -k mlp) since " in text
    narrow = progress_text(waiting, len(text) - 5)  # the test's name gives way first
    assert narrow.startswith("...")
    assert narrow.endswith(f"{holder.describe()} (2 s)")
    assert progress_text(waiting, 60) == "test_resnet[cpu-all]: waiting for the timing lock (2 s)"
    # waiting inside a confirmation: the holder is named there too
    confirming = replace(moment("waiting", phase="confirming"), holder=holder)
    assert progress_text(confirming).endswith(f"confirming: waiting, {holder.describe()} (2 s)")


@pytest.mark.parametrize("width", [70, 60, 45, 20, 16, 10])
def test_a_narrow_line_drops_the_name_first_then_words(width: int) -> None:
    text = progress_text(moment(), width)
    assert len(text) <= width
    whole = progress_text(moment())
    if width >= 70:
        assert text.startswith("...")
        assert text.endswith("round 16 of at most 40 (2 s)")
    elif width >= 16:
        assert text in ("measuring side by side, round 16 of at most 40 (2 s)", "measuring 16/40")
    else:
        assert text == ""
    assert whole.startswith("test_resnet")


def test_on_a_terminal_the_line_is_drawn_after_pytests_and_taken_down_again() -> None:
    written: list[str] = []
    clock = Clock()
    progress = TerminalProgress(written.append, transient=True, room=lambda: 60, clock=clock)
    pytests = "tests/test_models.py .."
    progress.update(moment(elapsed=SHOW_AFTER_S / 2))
    assert written == []  # a short check never shows
    for rounds in (10, 16, 24):
        clock.now += 1.0
        progress.update(moment(rounds=rounds))
        shown = render(pytests + "".join(written))
        assert shown.startswith(pytests + " [")
        assert f"round {rounds} of" in shown
        assert len(shown) <= len(pytests) + 59  # never past the line's room: a wrapped line cannot be erased
    progress.clear()
    assert render(pytests + "".join(written)) == pytests


def test_on_a_terminal_redraws_are_throttled() -> None:
    written: list[str] = []
    clock = Clock()
    progress = TerminalProgress(written.append, transient=True, room=lambda: 200, clock=clock)
    for rounds in range(1, 40):
        clock.now += 0.01
        progress.update(moment(rounds=rounds))
    assert len(written) == 2  # 0.39 s of updates at most every 0.25 s


def test_without_room_nothing_is_shown() -> None:
    written: list[str] = []
    progress = TerminalProgress(written.append, transient=True, room=lambda: 5)
    progress.update(moment())
    progress.clear()
    assert "".join(written) == ""


def test_in_a_log_each_update_is_a_line_at_most_every_few_seconds_and_on_each_new_step() -> None:
    written: list[str] = []
    clock = Clock()
    progress = TerminalProgress(written.append, transient=False, clock=clock)
    progress.update(moment("warming reference", rounds=0))
    for rounds in range(1, 30):
        clock.now += 0.5
        progress.update(moment(rounds=rounds))
    assert written[0] == "ortperf: test_resnet[cpu-all]: warming reference (2 s)\n"
    assert written[1].startswith(
        "ortperf: test_resnet[cpu-all]: measuring side by side, round 1 of at most 40"
    )
    assert len(written) == 2 + int(29 * 0.5 / LOG_EVERY_S)  # a new step at once, then every LOG_EVERY_S
    progress.clear()
    assert all(line.endswith("\n") and "\b" not in line for line in written)


def test_in_a_log_a_measuring_step_says_its_rounds_as_soon_as_they_are_planned() -> None:
    # A check that waited for the timing lock past SHOW_AFTER_S writes its measuring step the moment it
    # begins, before its rounds are planned; the plan is a line at once, not LOG_EVERY_S later.
    written: list[str] = []
    clock = Clock()
    progress = TerminalProgress(written.append, transient=False, clock=clock)
    progress.update(replace(moment("measuring", rounds=0), planned=0, elapsed_s=4.0))
    clock.now += 0.1
    progress.update(replace(moment("measuring", rounds=1), elapsed_s=4.1))
    clock.now += 0.1
    progress.update(replace(moment("measuring", rounds=2), elapsed_s=4.2))
    assert written == [
        "ortperf: test_resnet[cpu-all]: measuring (4 s)\n",
        "ortperf: test_resnet[cpu-all]: measuring, round 1 of 40 (4 s)\n",
    ]


@pytest.mark.parametrize(
    ("setting", "tty", "verbosity", "worker", "env", "shown"),
    [
        (None, True, 0, False, {}, True),
        (None, True, 1, False, {}, True),
        (None, True, -1, False, {}, False),  # -q
        (None, False, 0, False, {}, False),  # a log
        (None, True, 0, False, {"CI": "true"}, False),
        (None, True, 0, False, {"CI": "1"}, False),
        (None, True, 0, False, {"CI": "woodpecker"}, False),  # a CI that names itself
        (None, True, 0, False, {"CI": "false"}, True),  # CI=false is not CI
        (None, True, 0, False, {"CI": ""}, True),
        (True, False, -1, False, {"CI": "true"}, True),  # asked for
        (True, True, 0, True, {}, False),  # an xdist worker's output never reaches the terminal
        (False, True, 0, False, {}, False),
    ],
)
def test_when_progress_is_shown(
    setting: bool | None, tty: bool, verbosity: int, worker: bool, env: dict[str, str], shown: bool
) -> None:
    assert wanted(setting, tty=tty, verbosity=verbosity, worker=worker, env=env) is shown


class _Reporter:
    def __init__(self, out: list[str]) -> None:
        self.out = out

    def ensure_newline(self) -> None:
        self.out.append("<newline>")

    def write_line(self, line: str) -> None:
        self.out.append(line)

    def flush(self) -> None:
        pass


class _Plugins:
    def __init__(self, reporter: _Reporter) -> None:
        self.reporter = reporter

    def get_plugin(self, name: str) -> object:
        return self.reporter if name == "terminalreporter" else None


def test_whole_lines_take_the_progress_line_down_first_and_never_come_from_an_xdist_worker() -> None:
    from types import SimpleNamespace

    from pytest_ortperf.plugin.progress import terminal_lines

    written: list[str] = []
    clock = Clock()
    progress = TerminalProgress(written.append, transient=True, room=lambda: 60, clock=clock)
    clock.now += 1.0
    progress.update(moment())
    shown = list(written)
    out: list[str] = []
    write = terminal_lines(SimpleNamespace(pluginmanager=_Plugins(_Reporter(out))), progress)
    assert write is not None
    write("ortperf: fetching onnxruntime-gpu 1.31.1 ...")
    assert render("".join(written)) == ""  # the progress line was taken down
    assert written[: len(shown)] == shown
    assert out == ["<newline>", "ortperf: fetching onnxruntime-gpu 1.31.1 ..."]
    worker = SimpleNamespace(workerinput={}, pluginmanager=_Plugins(_Reporter(out)))
    assert terminal_lines(worker) is None
