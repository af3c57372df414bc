"""A model file as it was at a git revision: the reference of same-job A/B mode.

``GitRevision`` checks once, up front, that git exists, that the rootdir is in
a work tree and that the revision names a commit; any of those failing is a
usage error naming ``--ortperf-ab``. Then ``model_at(path)`` reads the file at
that commit - or says why there is none (a model added since, a file outside
the repository), which A/B mode reports instead of failing. A file kept in Git
LFS is read from its LFS object (``ort/git_lfs.py``); a model that keeps its
tensors in external data files is written, with those files as they were at
the commit, into a folder of its own, where ONNX Runtime finds them beside it.

:func:`recorded_file` finds the model a baseline recorded: by its git object
id, else in the history of its path (every ref), as the commit whose file is
that object or a Git LFS pointer to an object with the recorded sha256.

``--ortperf-ab=auto`` (:meth:`GitRevision.pull_request_base`) is the merge-base
of ``HEAD`` and the pull request's target branch, taken from the CI system's
own variables, else ``origin/HEAD``: what the pull request changed, not what
the base branch gained since.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import subprocess
from collections.abc import Collection, Mapping
from dataclasses import replace
from pathlib import Path

from pytest_ortperf.errors import ModelError, OrtperfError, UsageError
from pytest_ortperf.ort.dvc_models import model_at_revision
from pytest_ortperf.ort.git_lfs import parse_pointer, smudge
from pytest_ortperf.ort.model_stores import RecordedModelRecipe, StoredModel
from pytest_ortperf.ort.models import (
    LFS_POINTER_MAX_BYTES,
    bytes_may_name_external_data,
    is_lfs_pointer,
    tensor_locations,
)

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


# A model file at a revision: ``data`` is None when there is none, and ``reason`` says why; ``path`` is
# where it was written with its external data files, when it has any (ONNX Runtime then loads it from
# there). The answer of every store of recorded models (ort/model_stores.py).
RevisionFile = StoredModel


class GitRevision:
    def __init__(
        self,
        rev: str,
        cwd: Path,
        *,
        source: str = "--ortperf-ab",
        name: str = "",
        where: str = "",
        data_dir: Path | None = None,
    ) -> None:
        self.rev = rev
        self.data_dir = data_dir  # where a model with external data files is written; None: not read
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
        listed = self._git(["ls-tree", self.commit, "--", relative.as_posix()], self.toplevel)
        if listed.returncode != 0:
            raise ModelError(f"git could not read {label} ({_first(listed.stderr)}).")
        entry = _tree_entry(listed.stdout)
        if entry is None:
            # Not in git there: a model DVC kept (its pointer in git) is read back through DVC.
            kept = model_at_revision(self.toplevel, self.commit, relative.as_posix(), label=label)
            if kept is not None:
                return kept
            return RevisionFile(label, None, f"no file '{relative.as_posix()}' at {self.name} (a new model?)")
        return model_in_commit(
            self.toplevel, self.commit, relative.as_posix(), entry, label=label, data_dir=self.data_dir
        )

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


def recorded_file(
    cwd: Path, path: Path | None, blob: str, sha256: str, *, data_dir: Path | None
) -> RevisionFile | None:
    """The model a baseline recorded (git object ``blob``, content ``sha256``), from the repository
    around ``cwd``: None when git keeps no such file here; without ``data`` and with the reason when
    git names it but it cannot be read (git-lfs missing, the LFS object nowhere to be had).

    The object itself is read when the clone has it (a model not in LFS); otherwise, and for a model
    with external data files (which are read at the commit), the history of ``path`` (the model's
    file now) is searched over every ref for a commit whose file is that object or an LFS pointer
    to an object with that sha256."""
    if shutil.which("git") is None:
        return None
    data = read_blob(cwd, blob) if blob else None
    if data is not None and not external_locations(data):
        return RevisionFile(f"the recorded model (git {blob[:12]})", data)
    if path is None:
        return None
    try:
        top = _run(["rev-parse", "--show-toplevel"], path.parent)
        if top.returncode != 0:
            return None
        toplevel = Path(os.fsdecode(top.stdout).strip()).resolve()
        relative = path.resolve().relative_to(toplevel).as_posix()
        found = _commit_holding(toplevel, relative, blob, sha256)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    if found is None:
        return None
    commit, entry, lfs = found
    label = f"the recorded model (git {commit[:12]}:{relative})"  # as errors name it
    try:
        kept = model_in_commit(toplevel, commit, relative, entry, label=label, data_dir=data_dir)
    except ModelError as exc:
        return RevisionFile(label, None, str(exc))
    return (
        replace(kept, label=f"the recorded model (git {commit[:12]}:{relative} from Git LFS)")
        if lfs
        else kept
    )


def recorded_git_model(recipe: RecordedModelRecipe) -> StoredModel | None:
    """The built-in git and Git LFS store of recorded models (:func:`recorded_file`): None when git
    does not keep the recorded model here, or the recipe names none of it."""
    if not recipe.git_blob and not recipe.sha256:
        return None
    try:
        return recorded_file(
            recipe.rootdir, recipe.path, recipe.git_blob, recipe.sha256, data_dir=recipe.data_dir
        )
    except OrtperfError as exc:
        return StoredModel("the recorded model (git)", None, str(exc))


def git_keeps(cwd: Path, path: Path | None, blob: str) -> bool:
    """Whether a later run can read a model back from the repository around ``cwd``: git holds the
    object ``blob`` (committed or staged), or tracks ``path`` (a model in Git LFS, whose object is
    its pointer; a changed model, to be committed with its baselines)."""
    if shutil.which("git") is None:
        return False
    try:
        if blob and _run(["cat-file", "-e", blob], cwd).returncode == 0:
            return True
        if path is None:
            return False
        tracked = _run(["ls-files", "--error-unmatch", "--", path.name], path.parent)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return tracked.returncode == 0


def changed_since(cwd: Path, recorded: Collection[str]) -> frozenset[str]:
    """Of the ``recorded`` object ids, those git's object database holds and its index no longer
    does: files that changed since a baseline recorded them (a model outside the repository, whose
    object git never had, is none of them). Two git calls; empty outside a work tree."""
    tracked = tracked_blobs(cwd)
    candidates = sorted(set(recorded) - tracked) if tracked is not None else []
    if not candidates:
        return frozenset()
    try:
        known = _run(["cat-file", "--batch-check"], cwd, stdin="\n".join(candidates).encode() + b"\n")
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    if known.returncode != 0:
        return frozenset()
    return frozenset(
        fields[0]
        for line in known.stdout.decode(errors="replace").splitlines()
        if len(fields := line.split()) == 3
    )  # "<id> <type> <size>" for an object git has; "<id> missing" for one it lacks


def tracked_blobs(cwd: Path) -> frozenset[str] | None:
    """The object ids of every file git tracks in the repository around ``cwd`` (its index: one
    ``git ls-files``, no file read or hashed), or None outside one. A recorded model's object that
    is not among them is a model that changed since it was recorded."""
    if shutil.which("git") is None:
        return None
    try:
        listed = _run(["ls-files", "--stage", "-z", "--", ":/"], cwd)  # ":/": the whole tree, from any folder
    except (OSError, subprocess.TimeoutExpired):
        return None
    if listed.returncode != 0:
        return None
    # Each record: "<mode> <object> <stage>\t<path>".
    return frozenset(
        fields[1]
        for record in listed.stdout.split(b"\0")
        if len(fields := record.split(b"\t", 1)[0].decode(errors="replace").split(" ")) == 3
    )


# Why a recorded model is not found in a shallow clone, and the fix: a changed model is judged
# against the recorded one, so recording it again is never the fix.
SHALLOW = (
    "the recorded one is not in this clone's history: it is shallow (cut short), and the model cache "
    "(--ortperf-model-cache) does not hold it either; fetch the history (fetch-depth: 0 on GitHub "
    "Actions' actions/checkout, or git fetch --unshallow)"
)


def is_shallow(cwd: Path) -> bool:
    """Whether the repository around ``cwd`` is a shallow clone (its history cut short: CI checkouts
    fetch one commit by default), where a recorded model's commit may simply not have been fetched."""
    if shutil.which("git") is None:
        return False
    try:
        done = _run(["rev-parse", "--is-shallow-repository"], cwd)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == b"true"


def model_in_commit(
    toplevel: Path, commit: str, relative: str, oid: str, *, label: str, data_dir: Path | None
) -> RevisionFile:
    """The model file ``relative`` of ``commit``, kept as git object ``oid``: its bytes (from its LFS
    object when git holds a pointer), and, when it keeps tensors in external data files, the model
    written with those files at the commit under ``data_dir``. A :class:`ModelError` when git or
    git-lfs cannot give it."""
    try:
        data = _content(toplevel, oid, name=relative, label=label, commit=commit)
        locations = external_locations(data)
        if not locations:
            return RevisionFile(label, data)
        if data_dir is None:
            why = "the model keeps tensors in external data files, and no folder was given to write them to"
            return RevisionFile(label, None, why)
        directory = data_dir / hashlib.sha256(f"{commit}:{relative}".encode()).hexdigest()[:24]
        target = directory / relative
        if not target.is_file():  # written whole (renamed into place) by an earlier run, else now
            _write_with_data(toplevel, commit, relative, data, locations, directory, label=label)
        return RevisionFile(label, data, path=target)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ModelError(f"git could not read {label} ({exc}).") from None


def external_locations(data: bytes) -> list[str]:
    """The external data files a serialized model names (``location`` of its tensors, relative to the
    model's folder), each once; [] when it has none or cannot be parsed here. Bytes without the key
    every external tensor names its file by are not parsed (``import onnx`` alone is most of a second)."""
    if not bytes_may_name_external_data(data):
        return []
    import onnx  # a dependency; imported here so that reading git stays cheap without it

    try:
        proto = onnx.load_from_string(data)
    except Exception:  # unreadable here: ONNX Runtime says why when it builds the session
        return []
    return tensor_locations(proto)


def _write_with_data(
    toplevel: Path,
    commit: str,
    relative: str,
    data: bytes,
    locations: list[str],
    directory: Path,
    *,
    label: str,
) -> None:
    """Write the model and its external data files as they were at ``commit`` into ``directory``
    (their paths relative to the repository kept), through a temporary folder renamed into place, so
    that a run never finds a half-written one."""
    folder = posixpath.dirname(relative)
    files: list[tuple[str, str]] = []
    for location in locations:
        path = posixpath.normpath(posixpath.join(folder, location.replace("\\", "/")))
        if posixpath.isabs(location) or path == ".." or path.startswith("../"):
            raise ModelError(
                f"{label}: its external data file '{location}' lies outside the repository, so git "
                "cannot give it as it was."
            )
        listed = _run(["ls-tree", commit, "--", path], toplevel)
        oid = _tree_entry(listed.stdout) if listed.returncode == 0 else None
        if oid is None:
            raise ModelError(
                f"{label}: its external data file '{location}' is not in the commit {commit[:12]} "
                f"(no '{path}' there), so the model cannot be rebuilt as it was."
            )
        files.append((path, oid))
    staging = directory.with_name(f"{directory.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        (staging / relative).parent.mkdir(parents=True, exist_ok=True)
        (staging / relative).write_bytes(data)
        for path, oid in files:
            (staging / path).parent.mkdir(parents=True, exist_ok=True)
            _content(
                toplevel,
                oid,
                name=path,
                label=f"{label}: its external data file '{path}'",
                commit=commit,
                destination=staging / path,
            )
        try:
            staging.rename(directory)
        except OSError:
            if not (directory / relative).is_file():  # not another process's complete copy
                raise
    except OSError as exc:
        raise ModelError(
            f"{label}: cannot write the model with its external data to '{directory}': {exc}."
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _content(
    toplevel: Path, oid: str, *, name: str, label: str, commit: str, destination: Path | None = None
) -> bytes:
    """What git keeps as ``oid`` (the file ``name`` of ``commit``): the LFS object when it is a Git LFS
    pointer. Written to ``destination`` when given (then b"" is returned), else returned."""
    size = _run(["cat-file", "-s", oid], toplevel)
    if size.returncode != 0:
        raise ModelError(f"git could not read {label} ({_first(size.stderr)}).")
    small = int(size.stdout.decode().strip() or 0) < LFS_POINTER_MAX_BYTES
    if destination is not None and not small:
        with destination.open("wb") as out:
            done = subprocess.run(
                ["git", "cat-file", "blob", oid],
                cwd=toplevel,
                stdout=out,
                stderr=subprocess.PIPE,
                timeout=_TIMEOUT_S * 30,
                check=False,
            )
        if done.returncode != 0:
            raise ModelError(f"git could not read {label} ({_first(done.stderr)}).")
        return b""
    shown = _run(["cat-file", "blob", oid], toplevel)
    if shown.returncode != 0:
        raise ModelError(f"git could not read {label} ({_first(shown.stderr)}).")
    data = shown.stdout
    if is_lfs_pointer(data):
        pointer = parse_pointer(data)
        if pointer is None:
            raise ModelError(
                f"{label} is a Git LFS pointer that names no sha256 object (a damaged pointer in the "
                f"commit {commit[:12]})."
            )
        return smudge(
            toplevel, pointer, name=name, label=label, fetch=f"origin {commit}", destination=destination
        )
    if destination is not None:
        destination.write_bytes(data)
        return b""
    return data


def _commit_holding(toplevel: Path, relative: str, blob: str, sha256: str) -> tuple[str, str, bool] | None:
    """The newest commit (over every ref) whose file ``relative`` is git object ``blob``, else a Git
    LFS pointer to an object with content ``sha256``: (commit, its object id, whether it is in LFS)."""
    log = _run(
        ["log", "--all", "--no-renames", "--no-abbrev", "--format=commit %H", "--raw", "--", relative],
        toplevel,
    )
    if log.returncode != 0:
        return None
    changes: list[tuple[str, str]] = []  # (commit, the file's object id after it), newest first
    commit = ""
    for line in log.stdout.decode(errors="replace").splitlines():
        if line.startswith("commit "):
            commit = line[7:].strip()
        elif line.startswith(":") and commit:
            fields = line.split("\t", 1)[0].split()
            if len(fields) >= 4 and _OBJECT_ID.fullmatch(fields[3]) and fields[3] != "0" * 40:
                changes.append((commit, fields[3]))
    if blob:
        match = next((change for change in changes if change[1] == blob), None)
        if match is not None:
            return (*match, False)
    if not sha256:
        return None
    oids = list(dict.fromkeys(oid for _, oid in changes))
    sizes = _run(["cat-file", "--batch-check"], toplevel, stdin="".join(f"{oid}\n" for oid in oids).encode())
    small = set()
    for line in sizes.stdout.decode(errors="replace").splitlines():
        fields = line.split()
        if (
            len(fields) == 3
            and fields[1] == "blob"
            and fields[2].isdigit()
            and int(fields[2]) < LFS_POINTER_MAX_BYTES
        ):
            small.add(fields[0])
    for commit, oid in changes:
        if oid in small:
            shown = _run(["cat-file", "blob", oid], toplevel)
            pointer = parse_pointer(shown.stdout) if shown.returncode == 0 else None
            if pointer is not None and pointer.oid == sha256:
                return commit, oid, True
    return None


def _tree_entry(listing: bytes) -> str | None:
    """The object id of the one blob ``git ls-tree COMMIT -- PATH`` lists; None when it lists none."""
    for line in listing.decode(errors="replace").splitlines():
        meta, _, _ = line.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == "blob":
            return fields[2]
    return None


def _run(args: list[str], cwd: Path, *, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """git with ``args`` in ``cwd``, its output captured (OSError, TimeoutExpired raised)."""
    return subprocess.run(
        ["git", *args], cwd=cwd, input=stdin, capture_output=True, timeout=_TIMEOUT_S, check=False
    )


def _first(stderr: bytes) -> str:
    lines = stderr.decode(errors="replace").strip().splitlines()
    return lines[0] if lines else "no message"
