"""The built-in stores of recorded models, as implementations of ``pytest_ortperf_recorded_model``
(``plugin/hookspec.py``): git with Git LFS, and DVC. Registered by the plugin like a conftest's
implementation, last, so that a team's own store is asked first."""

from __future__ import annotations

import pytest

from pytest_ortperf.ort.dvc_models import recorded_dvc_model
from pytest_ortperf.ort.git_models import recorded_git_model
from pytest_ortperf.ort.model_stores import RecordedModelRecipe, StoredModel


class GitStore:
    """The recorded model from git: the object itself, or a commit of its path's history that holds
    it or its Git LFS pointer (``ort/git_models.py: recorded_file``)."""

    @pytest.hookimpl(trylast=True)
    def pytest_ortperf_recorded_model(self, recipe: RecordedModelRecipe) -> StoredModel | None:
        return recorded_git_model(recipe)


class DvcStore:
    """The recorded model from DVC: the local DVC cache, else DVC's own read from the repository's
    DVC remote at the commit that recorded its pointer (``ort/dvc_models.py``)."""

    @pytest.hookimpl(trylast=True)
    def pytest_ortperf_recorded_model(self, recipe: RecordedModelRecipe) -> StoredModel | None:
        return recorded_dvc_model(recipe)


STORES = (("ortperf-git-store", GitStore), ("ortperf-dvc-store", DvcStore))
