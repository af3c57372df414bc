"""User-given values: on/off words, option text, percentages, safe reprs for messages and file-name
slugs; and a text file written whole or not at all."""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from pytest_ortperf.errors import UsageError


def option_text(value: Any, *, source: str) -> str:
    """``str(value)`` for parsing, with a clear error for values str() refuses (ints of >4300 digits)."""
    try:
        return str(value)
    except ValueError:
        raise UsageError(f"{source}: the value {safe_repr(value)} is far too large.") from None


def percent_value(value: Any, *, source: str) -> float | None:
    """The fraction a user's percentage names: ``"5%"`` is 0.05, and so is a bare ``0.05``; None
    when ``value`` is not a number (the caller says what it expected).

    A bare number (no ``%``) is a fraction, so it is taken only up to 1 (100%). Above that it is
    a usage error that suggests the percent form: ``5`` would silently mean 500% where a user
    almost always meant 5%. Checking the range (positive, at most some limit) is the caller's.
    """
    if isinstance(value, bool):
        return None
    text = option_text(value, source=source).strip()
    percent = text.endswith("%")
    try:
        number = float(text[:-1] if percent else text)
    except (ValueError, OverflowError):
        return None
    if percent:
        return number / 100
    if math.isfinite(number) and number > 1:
        written = text if len(text) <= 20 else f"{number:g}"
        meant = number * 100
        meaning = f"{meant:g}%" if math.isfinite(meant) else "far more than 100%"
        also = f", or '{meaning}' if you meant that" if math.isfinite(meant) else ""
        raise UsageError(
            f"{source}: did you mean {written}%? A bare number is a fraction (0.05 means 5%), "
            f"so {written} would mean {meaning}; write '{written}%'{also}."
        )
    return number


_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B|B)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_UNITS.update({"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40})


def parse_size(value: Any, *, source: str) -> int:
    """A size in bytes: ``"4KiB"``, ``"64 MiB"``, ``"2GB"``, ``"1048576"``; ``"0"`` and ``"off"`` are 0."""
    text = option_text(value, source=source).strip()
    if on_off(text) is False:
        return 0
    match = _SIZE.fullmatch(text)
    if match is None or isinstance(value, bool):
        raise UsageError(
            f"{source}: expected a size such as 4KiB, 512MiB, 8GiB or a number of bytes, "
            f"got {safe_repr(value)}."
        )
    number, unit = float(match.group(1)), (match.group(2) or "").lower()
    return int(number * _UNITS[unit])


_ON = ("on", "true", "yes", "1")
_OFF = ("off", "false", "no", "0")


def on_off(text: str) -> bool | None:
    """The switch a word names (on/true/yes/1, off/false/no/0, any case and spacing); None otherwise."""
    word = text.strip().lower()
    return True if word in _ON else False if word in _OFF else None


def safe_repr(value: Any, limit: int = 60) -> str:
    """``repr`` for error messages: shortened, and never failing (huge ints refuse str())."""
    try:
        text = repr(value)
    except ValueError:
        return f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[:limit] + "..."


def file_slug(text: str, *, length: int = 100) -> str:
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:length]
    return f"{readable}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def write_atomically(path: Path, text: str, *, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it, replaced in one step: a reader
    sees the old file or the new one, never half of one, and a failure leaves no temporary file.
    ``mode``: the new file's permissions (a temporary file is made 0600)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
