"""A model file as it was at a git revision: the reference of same-job A/B mode.

``GitRevision`` checks once, up front, that git exists, that the rootdir is in
a work tree and that the revision names a commit; any of those failing is a
usage error naming ``--ortperf-ab``. Then ``model_at(path)`` reads the file at
that commit with ``git show`` - or says why there is none (a model added
since, a file outside the repository), which A/B mode reports instead of
failing.

``--ortperf-ab=auto`` (:meth:`GitRevision.pull_request_base`) is the merge-base
of ``HEAD`` and the pull request's target branch, taken from the CI system's
own variables, else ``origin/HEAD``: what the pull request changed, not what
the base branch gained since.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_ortperf.errors import ModelError, UsageError
from pytest_ortperf.ort.models import is_lfs_pointer

_TIMEOUT_S = 60
AUTO = "auto"
_OBJECT_ID = re.compile(r"[0-9a-f]{40}")
# Where CI systems name a pull request's target: (variable, what it holds), first set wins.
PULL_REQUEST_BASES = (
    ("GITHUB_BASE_REF", "branch"),  # GitHub Actions, pull_request events
    ("CI_MERGE_REQUEST_DIFF_BASE_SHA", "commit"),  # GitLab merge request pipelines
    ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "branch"),
    ("SYSTEM_PULLREQUEST_TARGETBRANCH", "branch"),  # Azure Pipelines (may be refs/heads/NAME)
    ("BITBUCKET_PR_DESTINATION_BRANCH", "branch"),  # Bitbucket Pipelines
    ("BUILDKITE_PULL_REQUEST_BASE_BRANCH", "branch"),  # Buildkite
)


@dataclass(frozen=True)
class RevisionFile:
    """A file at a revision: ``data`` is None when there is none, and ``reason`` says why."""

    label: str
    data: bytes | None
    reason: str = ""


class GitRevision:
    def __init__(
        self, rev: str, cwd: Path, *, source: str = "--ortperf-ab", name: str = "", where: str = ""
    ) -> None:
        self.rev = rev
        self.name = name or rev  # how reports name the revision
        self._where = where or f"{source}={rev}"  # how errors name the option or marker at fault
        if shutil.which("git") is None:
            raise UsageError(f"{self._where}: same-job A/B needs git, and no 'git' is on PATH.")
        top = self._git(["rev-parse", "--show-toplevel"], cwd)
        if top.returncode != 0:
            raise UsageError(f"{self._where}: '{cwd}' is not inside a git work tree ({_first(top.stderr)}).")
        self.toplevel = Path(os.fsdecode(top.stdout).strip()).resolve()
        # Revisions starting with '-' are refused by the option parsers, so none is read as an option.
        commit = self._git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd)
        if commit.returncode != 0:
            raise UsageError(
                f"{self._where}: git does not know this revision in '{self.toplevel}' "
                "(a typo, or a branch this clone has not fetched: try 'git fetch origin')."
            )
        self.commit = commit.stdout.decode().strip()

    @classmethod
    def pull_request_base(
        cls, cwd: Path, *, env: Mapping[str, str] = os.environ, source: str = "--ortperf-ab"
    ) -> GitRevision:
        """The merge-base of HEAD and the pull request's target (see :data:`PULL_REQUEST_BASES`),
        else of HEAD and ``origin/HEAD``; a usage error that says what to set when there is none."""
        where = f"{source}={AUTO}"
        head = cls("HEAD", cwd, where=where)
        found = next(
            ((var, kind, env[var].strip()) for var, kind in PULL_REQUEST_BASES if env.get(var, "").strip()),
            None,
        )
        if found is None:
            given, candidates = "origin/HEAD", ["origin/HEAD"]
        else:
            var, kind, value = found
            given = f"{var}={value}"
            branch = value.removeprefix("refs/heads/")
            candidates = [value] if kind == "commit" else [f"origin/{branch}", branch]
        target = next((c for c in candidates if not c.startswith("-") and head.resolves(c)), None)
        if target is None:
            if found is None:
                variables = ", ".join(var for var, _ in PULL_REQUEST_BASES)
                raise UsageError(
                    f"{where}: no pull request base: none of {variables} is set and origin/HEAD does not "
                    "resolve. Run in a pull request pipeline, set origin/HEAD (git remote set-head origin "
                    "--auto), or name the base: --ortperf-ab=origin/main."
                )
            raise UsageError(
                f"{where}: {given} names {' or '.join(candidates)}, which this clone does not have: fetch "
                "it (git fetch origin; on GitHub Actions, actions/checkout with fetch-depth: 0)."
            )
        base = head.merge_base(target)
        if base is None:
            raise UsageError(
                f"{where}: HEAD and {target} have no common commit in this clone (a shallow clone? "
                "fetch the history: git fetch --unshallow, or fetch-depth: 0 on GitHub Actions)."
            )
        return cls(base, cwd, where=where, name=f"merge-base with {target} ({base[:12]}, from {given})")

    def resolves(self, rev: str) -> bool:
        """Whether ``rev`` names a commit in this repository."""
        done = self._git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], self.toplevel)
        return done.returncode == 0

    def merge_base(self, rev: str) -> str | None:
        """The best common ancestor of this revision and ``rev``; None when they share no history."""
        done = self._git(["merge-base", self.commit, rev], self.toplevel)
        base = done.stdout.decode().strip() if done.returncode == 0 else ""
        return base or None

    def model_at(self, path: Path) -> RevisionFile:
        """The bytes of ``path`` at the revision, or why there are none."""
        try:
            relative = path.resolve().relative_to(self.toplevel)
        except ValueError:
            return RevisionFile(
                f"{self.name}:{path}", None, f"'{path}' is outside the repository {self.toplevel}"
            )
        label = f"{self.name}:{relative.as_posix()}"
        listed = self._git(["ls-tree", "--name-only", self.commit, "--", relative.as_posix()], self.toplevel)
        if listed.returncode == 0 and not listed.stdout.strip():
            return RevisionFile(label, None, f"no file '{relative.as_posix()}' at {self.name} (a new model?)")
        shown = self._git(["show", f"{self.commit}:{relative.as_posix()}"], self.toplevel)
        if listed.returncode != 0 or shown.returncode != 0:
            failed = listed if listed.returncode != 0 else shown
            raise ModelError(f"git could not read {label} ({_first(failed.stderr)}).")
        if is_lfs_pointer(shown.stdout):
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
            raise UsageError(f"{self._where}: running git failed ({exc}).") from None


def read_blob(cwd: Path, oid: str) -> bytes | None:
    """The bytes git keeps under ``oid`` in the repository around ``cwd``; None when there is no git,
    no repository, or no such object (never committed, or not fetched)."""
    if shutil.which("git") is None or not _OBJECT_ID.fullmatch(oid):
        return None
    try:
        done = subprocess.run(
            ["git", "cat-file", "blob", oid], cwd=cwd, capture_output=True, timeout=_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or is_lfs_pointer(done.stdout):
        return None
    return done.stdout


def _first(stderr: bytes) -> str:
    lines = stderr.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else "no message"
