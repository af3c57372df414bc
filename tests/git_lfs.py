"""Real Git LFS repositories for tests: a work tree whose ``*.onnx`` (and ``*.data``) files are tracked
in LFS, and a local bare repository as its ``origin``, which git-lfs serves objects from as it would
from a hosted remote. Tests that need git-lfs skip, with the reason, where it is not installed
(``.ci/run`` installs Debian's package)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_ortperf.ort.git_lfs import lfs_available

requires_git_lfs = pytest.mark.skipif(
    shutil.which("git") is None or not lfs_available(Path.cwd()),
    reason="git-lfs is not installed (Debian: apt-get install git-lfs; .ci/run installs it)",
)


def run_git(cwd: Path, *args: str) -> str:
    """git in ``cwd``; its output, stripped (an error with git's message when it fails)."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)} failed: {done.stderr}"
    return done.stdout.strip()


def lfs_repository(root: Path, remote: Path) -> None:
    """Make ``root`` a repository that tracks ``*.onnx`` and ``*.data`` in Git LFS, with the bare
    repository ``remote`` (made here) as ``origin``. Git LFS is installed into the repository's
    own config only (``git lfs install --local``), so nothing outside the test changes."""
    root.mkdir(parents=True, exist_ok=True)
    run_git(root.parent, "init", "-q", "--bare", "-b", "main", str(remote))
    run_git(root, "init", "-q", "-b", "main")
    for key, value in (
        ("user.name", "Test"),
        ("user.email", "test@example.com"),
        ("commit.gpgsign", "false"),
    ):
        run_git(root, "config", key, value)
    run_git(root, "lfs", "install", "--local")
    run_git(root, "lfs", "track", "*.onnx", "*.data")
    run_git(root, "remote", "add", "origin", str(remote))
    run_git(root, "add", ".gitattributes")
    run_git(root, "commit", "-q", "-m", "track models in Git LFS")


def commit_and_push(root: Path, *paths: str, message: str = "models") -> str:
    """Commit ``paths`` and push the branch, with its LFS objects, to ``origin``; the commit."""
    run_git(root, "add", *paths)
    run_git(root, "commit", "-q", "-m", message)
    run_git(root, "push", "-q", "origin", "HEAD:refs/heads/main")
    return run_git(root, "rev-parse", "HEAD")


def forget_local_objects(root: Path) -> None:
    """Drop this clone's LFS objects, as in a clone made with GIT_LFS_SKIP_SMUDGE=1: git keeps only the
    pointers, and the objects are on the remote alone."""
    shutil.rmtree(root / ".git" / "lfs" / "objects", ignore_errors=True)


def path_without_git_lfs(tmp: Path) -> str:
    """A PATH on which git runs and git-lfs does not exist."""
    bin_dir = tmp / "git-only-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    git = shutil.which("git")
    assert git is not None
    (bin_dir / "git").symlink_to(git)
    return str(bin_dir)
