"""Where a baseline's recorded model is kept, as the ``pytest_ortperf_recorded_model`` hook sees it:
what the hook is asked (:class:`RecordedModelRecipe`) and what an implementation answers
(:class:`StoredModel`). Git, Git LFS (``ort/git_models.py``) and DVC (``ort/dvc_models.py``) are the
built-in implementations (``plugin/recorded_models.py``); a team's conftest or plugin adds one for its
own store (an MLflow registry, a bucket, a Hugging Face revision) through the same hook."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RecordedModelRecipe:
    """What a side-by-side check needs rebuilt: the model a baseline recorded.

    - ``recorded``: the baseline entry's recipe, as its file holds it (``model_sha256``,
      ``model_git_blob``, ``model_dvc`` and whatever a store of its own recorded beside them);
    - ``sha256``: the recorded model's sha256 (an implementation that gives bytes checks them
      against it where its store does not check them itself);
    - ``git_blob``: the id git gave the recorded file's bytes ("" when none was recorded);
    - ``path``: the model file under test today (the recorded one was at this path, in git's
      history), None for a model given as bytes;
    - ``rootdir``: the run's rootdir (in the repository's git work tree);
    - ``data_dir``: a folder where a model with external data files may be written with them.
    """

    recorded: Mapping[str, Any]
    sha256: str
    git_blob: str = ""
    path: Path | None = None
    rootdir: Path = field(default_factory=Path)
    data_dir: Path | None = None


@dataclass(frozen=True)
class StoredModel:
    """A store's answer: the recorded model's ``data`` (its bytes), or ``path``, a file ONNX Runtime
    loads with its external data files beside it; ``label`` says where it came from ("the recorded
    model (git 1a2b3c:models/m.onnx)"). Neither: the store keeps it but cannot give it here, and
    ``reason`` says why and what would fetch it (a check then says so, never falls back in silence)."""

    label: str
    data: bytes | None
    reason: str = ""
    path: Path | None = None
