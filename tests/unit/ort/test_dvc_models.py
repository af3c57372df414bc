"""Models kept in DVC, without DVC: the pointer files read, the pointer of a model found in a real git
repository, the recorded model read back from the DVC cache's layouts, and what is said when it is
not there. (Reading it through DVC from a remote: tests/plugin/test_dvc_models.py, with real DVC.)"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from pytest_ortperf.ort.dvc_models import (
    INSTALL,
    DvcPointer,
    outputs,
    recorded_dvc_model,
    tracks_pointer,
)
from pytest_ortperf.ort.model_stores import RecordedModelRecipe
from pytest_ortperf.ort.models import ModelResolver
from tests.models import mlp_model

# As `dvc add models/model.onnx` (DVC 3.67) writes it.
POINTER = """outs:
- md5: 0dc699c4900046d25524823faceeca70
  size: 100000
  hash: md5
  path: model.onnx
"""
# As `dvc repro` writes dvc.lock: a stage's deps are not its outputs.
LOCK = """schema: '2.0'
stages:
  export:
    cmd: python export.py
    deps:
    - path: export.py
      hash: md5
      md5: 11111111111111111111111111111111
      size: 10
    outs:
    - path: models/a.onnx
      hash: md5
      md5: 22222222222222222222222222222222
      size: 20
    - path: "models/b.onnx"  # quoted
      md5: 33333333333333333333333333333333
  quantize:
    cmd: python quantize.py
    outs:
    - path: models/c.onnx
      md5: 44444444444444444444444444444444
"""


def test_the_outputs_of_a_pointer_file_and_of_a_lock_file() -> None:
    assert outputs(POINTER) == [("model.onnx", "0dc699c4900046d25524823faceeca70")]
    assert outputs(LOCK) == [
        ("models/a.onnx", "2" * 32),
        ("models/b.onnx", "3" * 32),
        ("models/c.onnx", "4" * 32),
    ]
    assert outputs("outs:\n- path: x.onnx\n  md5: not-an-md5\n") == []
    assert outputs("") == []


def test_the_outputs_a_pipeline_declares() -> None:
    from pytest_ortperf.ort.dvc_models import declared_outputs

    text = (
        "stages:\n  export:\n    cmd: python export.py\n    deps:\n    - export.py\n    outs:\n"
        "    - models/a.onnx\n    - 'models/b.onnx':\n        cache: false\n  eval:\n    outs:\n"
        "    - metrics.json  # not a model\n"
    )
    assert declared_outputs(text) == ["models/a.onnx", "models/b.onnx", "metrics.json"]


def test_a_recorded_pointer_reads_back_and_a_damaged_one_is_none() -> None:
    pointer = DvcPointer("models/model.onnx.dvc", "b" * 40, "0" * 32, "models/model.onnx")
    assert DvcPointer.from_dict(pointer.as_dict()) == pointer
    assert DvcPointer.from_dict({**pointer.as_dict(), "md5": "zz"}) is None
    assert DvcPointer.from_dict({"file": "x"}) is None
    assert DvcPointer.from_dict(None) is None


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        cwd=cwd, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def _pointer_text(data: bytes, name: str = "model.onnx") -> str:
    return (
        f"outs:\n- md5: {hashlib.md5(data).hexdigest()}\n  size: {len(data)}\n  hash: md5\n  path: {name}\n"
    )


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository whose models/model.onnx DVC tracks: its .dvc file committed, the model
    ignored by git, as `dvc add` leaves it (written by hand: no DVC here)."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    _git(root, "init", "-q")
    model = root / "models" / "model.onnx"
    onnx.save(mlp_model(2, 16), model)
    (root / "models" / ".gitignore").write_text("/model.onnx\n")
    (root / "models" / "model.onnx.dvc").write_text(_pointer_text(model.read_bytes()))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "model in DVC")
    return root


def _pointer(model: Path) -> DvcPointer | None:
    """The pointer of a model file as resolving it finds it (the resolver takes the md5 in its read)."""
    return ModelResolver(model.parent).resolve(model, test_dir=model.parent, origin="test").dvc


def _recipe(root: Path, pointer: DvcPointer) -> RecordedModelRecipe:
    return RecordedModelRecipe(
        {"model_dvc": pointer.as_dict()}, "", path=root / "models/model.onnx", rootdir=root
    )


def test_the_pointer_of_a_model_dvc_tracks_names_its_file_object_and_md5(repo: Path) -> None:
    model = repo / "models" / "model.onnx"
    pointer = _pointer(model)
    assert pointer is not None
    assert pointer.file == "models/model.onnx.dvc"
    assert pointer.path == "models/model.onnx"
    assert pointer.md5 == hashlib.md5(model.read_bytes()).hexdigest()
    assert pointer.blob == _git(repo, "rev-parse", "HEAD:models/model.onnx.dvc")
    assert tracks_pointer(repo, pointer)
    onnx.save(mlp_model(3, 16), model)  # changed, and dvc add not run: the pointer is another version's
    assert _pointer(model) is None


def test_a_stage_output_of_a_lock_file_is_a_pointer_too(repo: Path) -> None:
    model = repo / "models" / "model.onnx"
    (repo / "models" / "model.onnx.dvc").unlink()
    md5 = hashlib.md5(model.read_bytes()).hexdigest()
    (repo / "dvc.lock").write_text(
        f"schema: '2.0'\nstages:\n  export:\n    outs:\n    - path: models/model.onnx\n      md5: {md5}\n"
    )
    pointer = _pointer(model)
    assert pointer is not None
    assert (pointer.file, pointer.md5) == ("dvc.lock", md5)
    assert not tracks_pointer(repo, pointer)  # not committed yet


def test_a_model_no_pointer_names_has_none(tmp_path: Path) -> None:
    onnx.save(mlp_model(2, 16), tmp_path / "m.onnx")
    assert _pointer(tmp_path / "m.onnx") is None


@pytest.mark.parametrize("layout", ["files/md5", "", "elsewhere"])
def test_the_recorded_model_is_read_from_the_dvc_cache_of_either_layout_and_checked(
    repo: Path, layout: str
) -> None:
    model = repo / "models" / "model.onnx"
    data = model.read_bytes()
    pointer = _pointer(model)
    assert pointer is not None
    cache = repo / ".dvc" / "cache"
    if layout == "elsewhere":  # a cache folder the repository configures
        (repo / ".dvc").mkdir(exist_ok=True)
        (repo / ".dvc" / "config").write_text("[cache]\n    dir = ../../shared-cache\n")
        cache, layout = repo.parent / "shared-cache", "files/md5"
    kept = cache / layout / pointer.md5[:2] / pointer.md5[2:]
    kept.parent.mkdir(parents=True)
    kept.write_bytes(data)
    onnx.save(mlp_model(3, 16), model)  # the work tree holds the changed model now
    found = recorded_dvc_model(_recipe(repo, pointer))
    assert found is not None
    assert found.data == data
    assert "from the DVC cache" in found.label
    kept.write_bytes(data + b"damaged")  # an object whose md5 is not its name is not the model
    found = recorded_dvc_model(_recipe(repo, pointer))
    assert found is not None
    assert found.data is None  # and no remote here holds it either: the reason says so
    assert pointer.md5 in found.reason


def test_without_the_object_or_dvc_it_says_which_and_the_command(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pointer = _pointer(repo / "models" / "model.onnx")
    assert pointer is not None
    onnx.save(mlp_model(3, 16), repo / "models" / "model.onnx")  # changed since it was recorded
    monkeypatch.setitem(sys.modules, "dvc", None)  # DVC not installed
    monkeypatch.setitem(sys.modules, "dvc.api", None)
    found = recorded_dvc_model(_recipe(repo, pointer))
    assert found is not None
    assert found.data is None
    assert f"the DVC cache here does not hold md5 {pointer.md5}" in found.reason
    assert INSTALL in found.reason
    elsewhere = DvcPointer(pointer.file, "0" * 40, pointer.md5, pointer.path)  # a pointer no commit holds
    found = recorded_dvc_model(_recipe(repo, elsewhere))
    assert found is not None
    assert "is in no commit here" in found.reason
    assert "fetch-depth: 0" in found.reason


def test_a_recipe_without_a_pointer_is_not_this_stores(repo: Path) -> None:
    assert recorded_dvc_model(RecordedModelRecipe({"model_sha256": "a" * 64}, "a" * 64, rootdir=repo)) is None


def test_a_model_at_a_revision_is_the_work_trees_file_when_its_md5_is(repo: Path) -> None:
    from pytest_ortperf.ort.dvc_models import model_at_revision

    head = _git(repo, "rev-parse", "HEAD")
    found = model_at_revision(repo.resolve(), head, "models/model.onnx", label="HEAD:models/model.onnx")
    assert found is not None
    assert found.data == (repo / "models" / "model.onnx").read_bytes()
    assert "the work tree's file" in found.label


def test_a_model_at_a_revision_is_read_through_its_pointer_there(repo: Path) -> None:
    from pytest_ortperf.ort.git_models import GitRevision

    first = _git(repo, "rev-parse", "HEAD")
    data = (repo / "models" / "model.onnx").read_bytes()
    md5 = hashlib.md5(data).hexdigest()
    kept = repo / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]
    kept.parent.mkdir(parents=True)
    kept.write_bytes(data)
    onnx.save(mlp_model(3, 16), repo / "models" / "model.onnx")
    (repo / "models" / "model.onnx.dvc").write_text(
        _pointer_text((repo / "models" / "model.onnx").read_bytes())
    )
    _git(repo, "commit", "-q", "-am", "one more layer")
    found = GitRevision(first, repo).model_at(repo / "models" / "model.onnx")
    assert found.data == data
    assert f"(DVC md5 {md5[:12]}), from the DVC cache" in found.label
