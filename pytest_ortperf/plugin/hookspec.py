"""Hooks pytest-ortperf calls, for conftest.py files and other plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_ortperf.ort.sessions import BuiltSession


def pytest_ortperf_session_built(built: BuiltSession) -> None:
    """Called once for each ONNX Runtime session built (not for reuses)."""
