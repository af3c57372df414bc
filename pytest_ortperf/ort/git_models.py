"""A model file as it was at a git revision: the reference of same-job A/B mode.

``GitRevision`` checks once, up front, that git exists, that the rootdir is in
a work tree and that the revision names a commit; any of those failing is a
usage error naming ``--ortperf-ab``. Then ``model_at(path)`` reads the file at
that commit with ``git show`` - or says why there is none (a model added
since, a file outside the repository), which A/B mode reports instead of
failing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pytest_ortperf.errors import ModelError, UsageError

LFS_POINTER = b"version https://git-lfs.github.com/spec/"
_TIMEOUT_S = 60


@dataclass(frozen=True)
class RevisionFile:
    """A file at a revision: ``data`` is None when there is none, and ``reason`` says why."""

    label: str
    data: bytes | None
    reason: str = ""


class GitRevision:
    def __init__(self, rev: str, cwd: Path, *, source: str = "--ortperf-ab") -> None:
        self.rev = rev
        self._source = source
        if shutil.which("git") is None:
            raise UsageError(f"{source}={rev}: same-job A/B needs git, and no 'git' is on PATH.")
        top = self._git(["rev-parse", "--show-toplevel"], cwd)
        if top.returncode != 0:
            raise UsageError(f"{source}={rev}: '{cwd}' is not inside a git work tree ({_first(top.stderr)}).")
        self.toplevel = Path(os.fsdecode(top.stdout).strip()).resolve()
        # Revisions starting with '-' are refused by the option parsers, so none is read as an option.
        commit = self._git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd)
        if commit.returncode != 0:
            raise UsageError(
                f"{source}={rev}: git does not know this revision in '{self.toplevel}' "
                "(a typo, or a branch this clone has not fetched: try 'git fetch origin')."
            )
        self.commit = commit.stdout.decode().strip()

    def model_at(self, path: Path) -> RevisionFile:
        """The bytes of ``path`` at the revision, or why there are none."""
        try:
            relative = path.resolve().relative_to(self.toplevel)
        except ValueError:
            return RevisionFile(
                f"{self.rev}:{path}", None, f"'{path}' is outside the repository {self.toplevel}"
            )
        label = f"{self.rev}:{relative.as_posix()}"
        listed = self._git(["ls-tree", "--name-only", self.commit, "--", relative.as_posix()], self.toplevel)
        if listed.returncode == 0 and not listed.stdout.strip():
            return RevisionFile(label, None, f"no file '{relative.as_posix()}' at {self.rev} (a new model?)")
        shown = self._git(["show", f"{self.commit}:{relative.as_posix()}"], self.toplevel)
        if listed.returncode != 0 or shown.returncode != 0:
            failed = listed if listed.returncode != 0 else shown
            raise ModelError(f"git could not read {label} ({_first(failed.stderr)}).")
        if shown.stdout.startswith(LFS_POINTER):
            raise ModelError(
                f"{label} is a Git LFS pointer, not the model: fetch the LFS objects of {self.rev} "
                "(git lfs fetch origin <branch>) so A/B mode can read the reference model."
            )
        return RevisionFile(label, shown.stdout)

    def _git(self, args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(
                ["git", *args], cwd=cwd, capture_output=True, timeout=_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError(f"{self._source}={self.rev}: running git failed ({exc}).") from None


def _first(stderr: bytes) -> str:
    lines = stderr.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else "no message"
