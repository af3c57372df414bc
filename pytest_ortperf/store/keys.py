"""Where a check's baseline lives: its key, and the names of several checks in one test."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_ortperf.errors import UsageError

CHECK_SEPARATOR = "#"
_CHECK_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


def check_name(name: object) -> str:
    """A ``name=`` given to a check: letters, digits, '.', '_', '-'; not digits only, which are the
    automatic names of a test's second, third... unnamed check."""
    if not isinstance(name, str) or not _CHECK_NAME.fullmatch(name) or name.isdigit():
        raise UsageError(
            f"check name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-', not digits only "
            "(those name a test's unnamed checks after the first: #2, #3, ...)."
        )
    return name


def with_check_name(test: str, name: str) -> str:
    """The baseline key of a named check in ``test``; the unnamed first check keeps ``test`` itself."""
    return f"{test}{CHECK_SEPARATOR}{name}" if name else test


def split_check_name(test: str) -> tuple[str, str]:
    """``test[param]#name`` -> (``test[param]``, ``#name``); a '#' inside the brackets of a
    parameter id is part of the test, not a check name."""
    head, separator, name = test.rpartition(CHECK_SEPARATOR)
    if not separator or not _CHECK_NAME.fullmatch(name) or not head:
        return test, ""
    return head, f"{CHECK_SEPARATOR}{name}"


@dataclass(frozen=True)
class CheckKey:
    """Where a check's baseline lives and how to tell the user to record it."""

    test_file: str
    test: str
    variant: str
    machine: str
    record_command: str

    @property
    def shown(self) -> str:
        """The check as messages name it: its test (``test_m[cpu-all]``) or, for an item the zero-code
        collection made from a model (its file is the model, not a test module), the model's path with
        it (``models/ocr.onnx::accuracy[cpu-all]``), never ``accuracy of accuracy[cpu-all]``."""
        return self.test if self.test_file.endswith(".py") else f"{self.test_file}::{self.test}"


_PARAMETERS = re.compile(r"\[[^\]]*\]$")


def whole_test(selector: str) -> str:
    """A test's selector without its parameters (``t.py::test_m[cpu-all]`` -> ``t.py::test_m``):
    every variant of it."""
    return _PARAMETERS.sub("", selector)


def accept_all(commands: Sequence[str]) -> str:
    """One ``ortperf update`` that accepts every check of the tests these commands name (each one
    an ``[ENV=...] ortperf update '<test>[<variant>]' [options]`` of this run, so they share their
    environment and options): each test whole, every variant of it; "" for none."""
    selectors: list[str] = []
    head: list[str] = []
    tail: list[str] = []
    for command in commands:
        words = shlex.split(command)
        if "update" not in words or words.index("update") + 1 >= len(words):
            continue
        at = words.index("update")
        head, tail = words[: at + 1], words[at + 2 :]
        selectors.append(whole_test(words[at + 1]))
    if not selectors:
        return ""
    return shlex.join([*head, *dict.fromkeys(selectors), *tail])
