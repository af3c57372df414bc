"""User-given values: on/off words, option text, safe reprs for messages and file-name slugs."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from pytest_ortperf.errors import UsageError


def option_text(value: Any, *, source: str) -> str:
    """``str(value)`` for parsing, with a clear error for values str() refuses (ints of >4300 digits)."""
    try:
        return str(value)
    except ValueError:
        raise UsageError(f"{source}: the value {safe_repr(value)} is far too large.") from None


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
