"""A real headless Chromium for the HTML report's tests, driven by Playwright.

Chromium is Debian's package (``apt-get install chromium``), never a browser a test tool downloads;
where it or Playwright is absent, the tests skip and say which. Screenshots go to the test's
temporary folder and, when ``ORTPERF_SCREENSHOT_DIR`` is set, also there (CI keeps them as artifacts).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.browser.chromium import FLAGS, VIEWPORT, chromium_path


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    if executable is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium; or set ORTPERF_CHROMIUM)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=list(FLAGS))
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class OpenedPage:
    """A page loaded from a file, with what the browser said while loading and using it."""

    page: Any
    errors: list[str] = field(default_factory=list)
    load_ms: float = 0.0

    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path))
        keep = os.environ.get("ORTPERF_SCREENSHOT_DIR")
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(keep) / path.name)
        return path


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    """``open_page(path)``: the page in a fresh tab of ``VIEWPORT`` size, console errors and page
    exceptions collected, every request that leaves the file refused and counted as an error."""
    pages: list[Any] = []

    def opened(path: Path) -> OpenedPage:
        page = browser.new_page(viewport=VIEWPORT)
        pages.append(page)
        result = OpenedPage(page)
        page.on(
            "console", lambda message: result.errors.append(message.text) if message.type == "error" else None
        )
        page.on("pageerror", lambda error: result.errors.append(f"uncaught: {error}"))

        def refuse(route: Any) -> None:
            result.errors.append(f"the page fetched {route.request.url}")
            route.abort()

        page.route(lambda url: not url.startswith("file:"), refuse)
        page.goto(path.resolve().as_uri(), wait_until="load")
        result.load_ms = float(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
        return result

    yield opened
    for page in pages:
        page.close()
