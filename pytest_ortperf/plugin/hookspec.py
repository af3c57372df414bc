"""Hooks pytest-ortperf calls, for conftest.py files and other plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_ortperf.gate.registry import KindRegistry
    from pytest_ortperf.ort.sessions import BuiltSession


def pytest_ortperf_session_built(built: BuiltSession) -> None:
    """Called once for each ONNX Runtime session built (not for reuses)."""


def pytest_ortperf_register_kinds(registry: KindRegistry) -> None:
    """Register check kinds of your own: ``registry.register(CheckKind(name=..., make=...))``.

    Called once per run (in each xdist worker too), in ``pytest_configure``, after the built-in
    kinds; a kind's ``check_<name>()`` is then on ``ort_perf``, its name is accepted by
    ``ortperf_checks``, and its records appear in the terminal summary, the JSON, markdown and
    HTML reports and the JUnit properties (``docs/check-kinds.md``)."""
