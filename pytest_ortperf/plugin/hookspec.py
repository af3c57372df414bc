"""Hooks pytest-ortperf calls, for conftest.py files and other plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_ortperf.gate.registry import KindRegistry
    from pytest_ortperf.ort.model_stores import RecordedModelRecipe, StoredModel
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


@pytest.hookspec(firstresult=True)
def pytest_ortperf_recorded_model(recipe: RecordedModelRecipe, config: pytest.Config) -> StoredModel | None:
    """The model a baseline recorded, from where the repository keeps it, for a check of a changed
    model to measure side by side: a :class:`~pytest_ortperf.ort.model_stores.StoredModel` with its
    bytes (or a path to it), or with the reason it cannot be had here and the command that would
    fetch it; None when this store does not keep it (the next implementation is asked).

    ``recipe`` (:class:`~pytest_ortperf.ort.model_stores.RecordedModelRecipe`) holds the baseline's
    recorded recipe, its sha256 and git object id, and today's model path. Git, Git LFS and DVC are
    built-in implementations (``plugin/recorded_models.py``), registered like a conftest's: a team's
    implementation (an MLflow registry, a bucket, a Hugging Face revision) is asked first. Called at
    most once per recorded model and run; the bytes are kept in the model cache when one is
    configured (``--ortperf-model-cache``). Where no implementation has it, the model cache is
    asked, and then the check says what was tried (``docs/ab.md``)."""
