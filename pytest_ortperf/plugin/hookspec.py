"""Hooks pytest-ortperf calls, for conftest.py files and other plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_ortperf.gate.registry import KindRegistry
    from pytest_ortperf.ort.sessions import BuiltSession


def pytest_ortperf_session_built(built: BuiltSession) -> None:
    """Called once for each ONNX Runtime session built (not for reuses)."""


@pytest.hookspec(historic=True)
def pytest_ortperf_register_kinds(registry: KindRegistry) -> None:
    """Register check kinds of your own: ``registry.register(CheckKind(name=..., make=...))``.

    Called once per run (in each xdist worker too) while pytest reads its options, for every plugin
    and for the conftest.py files pytest loads before that (the rootdir's, and those of directories
    named on the command line), so that a kind's own options (``CheckKind.options``) are on the
    command line and in the ini file. In ``pytest_configure`` the kinds are registered after the
    built-in ones; a kind's ``check_<name>()`` is then on ``ort_perf``, its name is accepted by
    ``ortperf_checks``, and its records appear in the terminal summary, the JSON, markdown and
    HTML reports and the JUnit properties (``docs/check-kinds.md``)."""
