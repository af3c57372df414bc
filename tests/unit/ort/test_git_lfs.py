"""Models kept in Git LFS, read at a revision through real git-lfs, with a local bare remote as origin;
models with external data files rebuilt as they were at a commit."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from pytest_ortperf.errors import ModelError
from pytest_ortperf.ort.git_lfs import LfsPointer, parse_pointer
from pytest_ortperf.ort.git_models import GitRevision, external_locations, recorded_file
from pytest_ortperf.ort.models import LFS_POINTER
from tests.git_lfs import (
    commit_and_push,
    forget_local_objects,
    lfs_repository,
    path_without_git_lfs,
    requires_git_lfs,
    run_git,
)
from tests.models import mlp_model

OID = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Git that reads no user or system config and never looks above tmp_path for a repository."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_LFS_SKIP_SMUDGE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository tracking models in Git LFS, whose commit (pushed to origin) holds
    models/model.onnx; the work tree's model is changed since."""
    root = tmp_path / "repo"
    lfs_repository(root, tmp_path / "remote.git")
    (root / "models").mkdir()
    onnx.save(mlp_model(2, 16, seed=0), root / "models" / "model.onnx")
    commit_and_push(root, "models/model.onnx")
    onnx.save(mlp_model(4, 16, seed=1), root / "models" / "model.onnx")
    return root


def recorded_bytes() -> bytes:
    return mlp_model(2, 16, seed=0).SerializeToString()


# --- pointers -------------------------------------------------------------------------------------


def test_a_pointer_names_its_object_and_anything_else_is_none() -> None:
    text = LFS_POINTER + b"v1\noid sha256:" + OID.encode() + b"\nsize 12345\n"
    assert parse_pointer(text) == LfsPointer(OID, 12345, text)
    assert parse_pointer(b"not a pointer") is None
    assert parse_pointer(LFS_POINTER + b"v1\noid md5:abc\nsize 1\n") is None  # names no sha256 object
    assert parse_pointer(LFS_POINTER + b"v1\noid sha256:" + OID.encode() + b"\nsize many\n") is None


# --- at a revision (same-job A/B) -----------------------------------------------------------------


@requires_git_lfs
def test_the_model_at_a_revision_is_its_lfs_object_not_the_pointer(repo: Path) -> None:
    pointer = run_git(repo, "show", "HEAD:models/model.onnx")
    assert pointer.startswith(LFS_POINTER.decode())  # git itself holds the pointer
    found = GitRevision("HEAD", repo).model_at(repo / "models" / "model.onnx")
    assert found.data == recorded_bytes()
    assert found.label == "HEAD:models/model.onnx"


@requires_git_lfs
def test_an_object_absent_here_is_fetched_from_the_remote(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forget_local_objects(repo)
    # A job that checked out without LFS objects sets this; the reference is wanted all the same.
    monkeypatch.setenv("GIT_LFS_SKIP_SMUDGE", "1")
    found = GitRevision("HEAD", repo).model_at(repo / "models" / "model.onnx")
    assert found.data == recorded_bytes()
    oid = hashlib.sha256(recorded_bytes()).hexdigest()
    assert (repo / ".git" / "lfs" / "objects" / oid[:2] / oid[2:4] / oid).is_file()  # kept for the next run


@requires_git_lfs
def test_an_object_nowhere_to_be_had_is_an_error_naming_the_fetch_and_the_push(
    repo: Path, tmp_path: Path
) -> None:
    forget_local_objects(repo)
    shutil.rmtree(tmp_path / "remote.git" / "lfs", ignore_errors=True)
    commit = run_git(repo, "rev-parse", "HEAD")
    with pytest.raises(ModelError) as info:
        GitRevision("HEAD", repo).model_at(repo / "models" / "model.onnx")
    message = str(info.value)
    oid = hashlib.sha256(recorded_bytes()).hexdigest()
    assert message.startswith(
        f"HEAD:models/model.onnx is kept in Git LFS and its object (sha256 {oid[:12]}, {len(recorded_bytes())} "
        "bytes) is neither in this clone (.git/lfs/objects) nor to be had from a remote ("
    )
    assert f"fetch it (git lfs fetch origin {commit})" in message
    assert oid not in message  # git-lfs's reason is kept, with the object named once, shortly
    assert "push it from the clone that committed it (git lfs push --all origin)" in message


@requires_git_lfs
def test_without_git_lfs_the_error_says_to_install_it(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", path_without_git_lfs(tmp_path))
    with pytest.raises(ModelError) as info:
        GitRevision("HEAD", repo).model_at(repo / "models" / "model.onnx")
    assert str(info.value) == (
        f"HEAD:models/model.onnx is kept in Git LFS (object sha256 {hashlib.sha256(recorded_bytes()).hexdigest()[:12]}, "
        f"{len(recorded_bytes())} bytes) and git-lfs is not installed here, so the model cannot be read from "
        "its LFS object: install git-lfs (Debian and Ubuntu: apt-get install git-lfs; elsewhere: "
        "https://git-lfs.com)."
    )


@requires_git_lfs
def test_a_damaged_local_object_is_never_taken_for_the_model(repo: Path) -> None:
    oid = hashlib.sha256(recorded_bytes()).hexdigest()
    stored = repo / ".git" / "lfs" / "objects" / oid[:2] / oid[2:4] / oid
    stored.chmod(0o644)
    stored.write_bytes(b"x" * len(recorded_bytes()))
    with pytest.raises(ModelError, match=r"git lfs smudge gave \d+ bytes with sha256 \w+, not the object"):
        GitRevision("HEAD", repo).model_at(repo / "models" / "model.onnx")


# --- the recorded model (side by side) ------------------------------------------------------------


@requires_git_lfs
def test_the_recorded_model_is_found_in_the_history_by_its_sha256(repo: Path) -> None:
    first = run_git(repo, "rev-parse", "HEAD")
    commit_and_push(repo, "models/model.onnx", message="a later model")  # the recorded one is older now
    model = repo / "models" / "model.onnx"
    sha256 = hashlib.sha256(recorded_bytes()).hexdigest()
    found = recorded_file(repo, model, "", sha256, data_dir=repo / ".ortperf" / "revisions")
    assert found is not None
    assert found.label == f"the recorded model (git {first[:12]}:models/model.onnx from Git LFS)"
    assert found.data == recorded_bytes()
    # Content no commit holds: git has nothing to say.
    assert recorded_file(repo, model, "", "0" * 64, data_dir=None) is None


@requires_git_lfs
def test_a_recorded_model_whose_object_is_nowhere_says_why(repo: Path, tmp_path: Path) -> None:
    import shutil

    forget_local_objects(repo)
    shutil.rmtree(tmp_path / "remote.git" / "lfs", ignore_errors=True)
    sha256 = hashlib.sha256(recorded_bytes()).hexdigest()
    found = recorded_file(repo, repo / "models" / "model.onnx", "", sha256, data_dir=None)
    assert found is not None
    assert found.data is None
    assert "is kept in Git LFS and its object" in found.reason
    assert "git lfs fetch origin" in found.reason


# --- external data files --------------------------------------------------------------------------


def save_with_data(model: onnx.ModelProto, path: Path, location: str = "weights.data") -> None:
    onnx.save(model, path, save_as_external_data=True, location=location, size_threshold=0)


def outputs(path: Path) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed = {
        i.name: np.ones([1 if not isinstance(d, int) else d for d in i.shape], np.float32)
        for i in session.get_inputs()
    }
    return np.asarray(session.run(None, feed)[0])


@requires_git_lfs
def test_a_model_with_external_data_is_rebuilt_with_its_data_at_the_revision(
    repo: Path, tmp_path: Path
) -> None:
    model = repo / "models" / "big.onnx"
    save_with_data(mlp_model(2, 32, seed=3), model)
    expected = outputs(model)
    commit_and_push(repo, "models/big.onnx", "models/weights.data")
    assert external_locations(model.read_bytes()) == ["weights.data"]
    save_with_data(mlp_model(2, 32, seed=4), model)  # other weights in the work tree
    forget_local_objects(repo)  # the data file's LFS object comes from the remote

    data_dir = tmp_path / "revisions"
    found = GitRevision("HEAD", repo, data_dir=data_dir).model_at(model)
    assert found.path is not None
    assert found.path.is_relative_to(data_dir)
    assert found.path.name == "big.onnx"
    assert (found.path.parent / "weights.data").is_file()
    np.testing.assert_array_equal(outputs(found.path), expected)
    assert not np.array_equal(outputs(model), expected)
    # Written once: a second read finds the complete folder.
    again = GitRevision("HEAD", repo, data_dir=data_dir).model_at(model)
    assert again.path == found.path
    assert sorted(p.name for p in data_dir.iterdir()) == [found.path.relative_to(data_dir).parts[0]]

    # The recorded route finds the same commit by the .onnx file's sha256.
    sha256 = hashlib.sha256(run_git_bytes(repo, "HEAD:models/big.onnx")).hexdigest()
    recorded = recorded_file(repo, model, "", sha256, data_dir=data_dir)
    assert recorded is not None
    assert recorded.path is not None
    np.testing.assert_array_equal(outputs(recorded.path), expected)


def run_git_bytes(repo: Path, spec: str) -> bytes:
    """The content of ``spec`` through git-lfs (what the work tree held at that commit)."""
    pointer = subprocess.run(["git", "show", spec], cwd=repo, capture_output=True, check=True).stdout
    return subprocess.run(
        ["git", "lfs", "smudge"], cwd=repo, input=pointer, capture_output=True, check=True
    ).stdout


@requires_git_lfs
def test_an_external_data_file_missing_at_the_revision_is_an_error_naming_it(
    repo: Path, tmp_path: Path
) -> None:
    model = repo / "models" / "big.onnx"
    save_with_data(mlp_model(2, 32), model)
    commit_and_push(repo, "models/big.onnx")  # the data file never committed
    with pytest.raises(ModelError) as info:
        GitRevision("HEAD", repo, data_dir=tmp_path / "revisions").model_at(model)
    commit = run_git(repo, "rev-parse", "HEAD")
    assert str(info.value) == (
        f"HEAD:models/big.onnx: its external data file 'weights.data' is not in the commit {commit[:12]} "
        "(no 'models/weights.data' there), so the model cannot be rebuilt as it was."
    )
    assert not any((tmp_path / "revisions").glob("*/models/big.onnx"))  # nothing half-written is left


def test_model_bytes_without_the_external_data_key_are_answered_without_parsing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import onnx

    inline = mlp_model(2, 8, seed=1).SerializeToString()
    model = tmp_path / "big.onnx"
    save_with_data(mlp_model(2, 32, seed=3), model)
    with_data = model.read_bytes()

    parsed: list[int] = []
    load = onnx.load_from_string

    def counted(data: bytes) -> onnx.ModelProto:
        parsed.append(len(data))
        return load(data)

    monkeypatch.setattr(onnx, "load_from_string", counted)
    assert external_locations(inline) == []  # no b"location" in its bytes: not parsed
    assert parsed == []
    assert external_locations(with_data) == ["weights.data"]  # the key is there: parsed
    assert parsed == [len(with_data)]
