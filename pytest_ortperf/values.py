"""User-given values: the one yes/no grammar, thresholds, option text, percentages, safe reprs for
messages and file-name slugs; and a text file written whole or not at all."""

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


MAX_SIZE = float(1 << 60)  # 1 EiB: beyond it a size is a typo, and past a float's range not a number


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
    size = number * _UNITS[unit]
    if not math.isfinite(size) or size >= MAX_SIZE:
        raise UsageError(
            f"{source}: {safe_repr(value)} is more bytes than any machine has (at most 1 EiB); give a "
            "size such as 8GiB, or off."
        )
    return int(size)


# One grammar for every yes/no setting, the words pytest's own boolean ini values take.
_ON = ("on", "true", "yes", "1", "y", "t")
_OFF = ("off", "false", "no", "0", "n", "f")
AUTO = "auto"
SWITCH_WORDS = "on/off, yes/no, true/false or 1/0"


def on_off(text: str) -> bool | None:
    """The switch a word names (on/true/yes/1/y/t, off/false/no/0/n/f, any case and spacing); None
    otherwise."""
    word = text.strip().lower()
    return True if word in _ON else False if word in _OFF else None


def turned_off(text: str) -> bool:
    """Whether an optional setting's text turns it off: empty, ``none``, or an off word of the one
    switch grammar (:func:`on_off`: off, no, false, 0, any case). Every setting that can be turned off
    reads its text through this, so that the words that turn a switch off turn it off too."""
    word = text.strip().lower()
    return word in ("", "none") or on_off(word) is False


def parse_switch(value: Any, *, source: str) -> bool:
    """A yes/no setting: a bool as it is (a command-line flag given), else a word of the one grammar
    (:func:`on_off`); a usage error naming ``source`` otherwise."""
    if isinstance(value, bool):
        return value
    switch = on_off(option_text(value, source=source))
    if switch is None:
        raise UsageError(
            f"{source}: expected on or off, got {safe_repr(value)} (a switch takes {SWITCH_WORDS})."
        )
    return switch


def parse_auto_switch(value: Any, *, source: str) -> bool | None:
    """A yes/no setting that can also be left to the plugin: ``auto`` is None, else :func:`parse_switch`."""
    if isinstance(value, bool):
        return value
    text = option_text(value, source=source)
    if text.strip().lower() == AUTO:
        return None
    switch = on_off(text)
    if switch is None:
        raise UsageError(
            f"{source}: expected auto, on or off, got {safe_repr(value)} (a switch takes {SWITCH_WORDS})."
        )
    return switch


def parse_threshold(value: object, *, source: str) -> float:
    """``"10%"``, ``"0.1"`` or ``0.1`` to the fraction 0.1. Must be > 0; a bare number above 1
    (``5``) is refused with a hint at the percent form (:func:`percent_value`)."""
    fraction = percent_value(value, source=source)
    if fraction is None and not isinstance(value, bool):
        raise UsageError(f"{source}: expected a threshold such as '10%' or 0.1, got {safe_repr(value)}.")
    if fraction is None or not math.isfinite(fraction) or fraction <= 0:
        raise UsageError(f"{source}: a threshold must be a positive finite amount, got {safe_repr(value)}.")
    return fraction


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
