"""File names derived from test ids: readable, and unique through a digest of the exact id."""

from __future__ import annotations

import hashlib
import re


def file_slug(text: str, *, length: int = 100) -> str:
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:length]
    return f"{readable}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"
