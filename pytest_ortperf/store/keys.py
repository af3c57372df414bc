"""Where a check's baseline lives: its key, and the names of several checks in one test."""

from __future__ import annotations

import re
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
