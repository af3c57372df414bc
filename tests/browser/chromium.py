"""Where Debian's Chromium is and how it is started, for the browser tests and the HTML report's
benchmark (no pytest here, so a benchmark can import it)."""

from __future__ import annotations

import os
import shutil

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# As root on a machine with a closed network: no sandbox (root), and no background connections,
# which would be refused and logged on every start.
FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
VIEWPORT = {"width": 1280, "height": 800}


def chromium_path() -> str | None:
    """``$ORTPERF_CHROMIUM``, else the first Chromium on the PATH, else None."""
    explicit = os.environ.get("ORTPERF_CHROMIUM")
    if explicit:
        return explicit
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)
