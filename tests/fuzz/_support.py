"""State shared by the fuzz tests and their conftest (no hypothesis import here, so the
conftest loads even where hypothesis is not installed and the fuzz module is skipped)."""

from __future__ import annotations

import os
from collections import Counter

PROFILE_ENV = "HYPOTHESIS_PROFILE"
DEFAULT_PROFILE = "fuzz"
LONG_PROFILE = "fuzz-long"

# Inputs tried per loader in this process (examples and shrinking included); printed at the end.
COUNTS: Counter[str] = Counter()


def profile_name() -> str:
    """The profile chosen by ``$HYPOTHESIS_PROFILE``; any other value means the default."""
    name = os.environ.get(PROFILE_ENV, DEFAULT_PROFILE)
    return name if name in (DEFAULT_PROFILE, LONG_PROFILE) else DEFAULT_PROFILE
