"""Models kept in DVC: where a ``.dvc`` file (or a ``dvc.lock`` stage output) says a model is, and the
recorded one read back for a side-by-side check.

A DVC-tracked model is not in git: git holds a small pointer (``models/model.onnx.dvc``, or the
``outs`` of a stage in ``dvc.lock``) naming the model's md5, and the bytes live in a DVC cache
(``.dvc/cache/files/md5/ab/cdef...``; ``.dvc/cache/ab/cdef...`` before DVC 3) and a DVC remote.
:func:`dvc_pointer` finds the pointer of a model file as it is now (recorded in the baseline's
recipe as ``model_dvc``: the pointer file, its git object id, the md5 and the model's path).
:func:`recorded_dvc_model` gives the recorded model's bytes again: from the local DVC cache when it
holds the object (no DVC needed), else through DVC's own API at the commit whose pointer was the
recorded one (DVC reads the object from the repository's remote), checked against the recorded
md5 either way; or says which of these failed and the command that would fetch it.

The pointer files are read with a small scanner of the fields DVC writes (``md5:``, ``path:`` in
``outs``), not a YAML library: the plugin reads them on every run that collects a DVC model, where
DVC itself need not be installed.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_ortperf.ort.model_stores import RecordedModelRecipe, StoredModel

POINTER_SUFFIX = ".dvc"
LOCK_FILE = "dvc.lock"
INSTALL = "pip install 'pytest-ortperf[dvc]'"
DVC_LABEL = " (DVC md5 "  # how a label names the object a model DVC keeps: "path (DVC md5 0dc699c49000)"
RECIPE_KEY = "model_dvc"  # where a baseline's recipe keeps the pointer (store/environment.py)
_MD5 = re.compile(r"[0-9a-f]{32}")
_TIMEOUT_S = 60


@dataclass(frozen=True)
class DvcPointer:
    """Where DVC keeps a model: ``file``, the pointer git tracks (a ``.dvc`` file or a ``dvc.lock``),
    and ``blob``, its git object id; ``md5``, the object DVC keeps the model under; ``path``, the
    model. Paths are relative to the git work tree's top, with forward slashes."""

    file: str
    blob: str
    md5: str
    path: str

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "blob": self.blob, "md5": self.md5, "path": self.path}

    @classmethod
    def from_dict(cls, data: Any) -> DvcPointer | None:
        """The pointer a recipe recorded, or None for a recipe without one (or one damaged)."""
        if not isinstance(data, Mapping):
            return None
        fields = [data.get(key) for key in ("file", "blob", "md5", "path")]
        if not all(isinstance(value, str) and value for value in fields):
            return None
        file, blob, md5, path = (str(value) for value in fields)
        return cls(file, blob, md5, path) if _MD5.fullmatch(md5) else None


def pointer_files(model: Path) -> list[tuple[Path, Path]]:
    """(pointer file, the folder its paths are relative to) of each file that may say DVC keeps
    ``model``: its ``<name>.dvc``, and the ``dvc.lock`` files of its folder and those above it, up to
    the git work tree's top; only those that exist (a few ``stat`` calls, no git, nothing read)."""
    return [(pointer, base) for pointer, base in _pointer_candidates(model) if pointer.is_file()]


def dvc_pointer(
    model: Path, md5: str, candidates: list[tuple[Path, Path]] | None = None
) -> DvcPointer | None:
    """The DVC pointer of the model file ``model`` (whose bytes' md5 is ``md5``) as it is now: an output
    of that path in one of its :func:`pointer_files` (``candidates``, when the caller found them);
    None when DVC does not track it, or the pointer names another version of it (``dvc add`` not run
    since the file changed)."""
    candidates = pointer_files(model) if candidates is None else candidates
    top = _toplevel(model.parent) if candidates else None  # git is asked only where DVC may track it
    if top is None:
        return None
    for pointer, base in candidates:
        try:
            text = pointer.read_bytes().decode("utf-8", errors="surrogateescape")
        except OSError:
            continue
        for path, named in outputs(text):
            if (base / path).resolve() != model.resolve():
                continue
            if named != md5:
                return None  # the pointer names another version (dvc add not run since it changed)
            relative = model.resolve().relative_to(top).as_posix()
            # The id git gives the pointer's bytes: what the commit that records it will hold.
            data = text.encode("utf-8", errors="surrogateescape")
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
            return DvcPointer(pointer.resolve().relative_to(top).as_posix(), blob, md5, relative)
    return None


def tracks_pointer(rootdir: Path, pointer: DvcPointer) -> bool:
    """Whether git tracks the pointer file here (committed or staged): a later run can find the
    commit that holds it, and DVC the model it names."""
    top = _toplevel(rootdir)
    return top is not None and bool(_tracked_blob(top, top / pointer.file))


def _file_md5(path: Path) -> str:
    digest = hashlib.md5()
    try:
        with path.open("rb") as stream:
            for chunk in iter(lambda: stream.read(1 << 20), b""):
                digest.update(chunk)
    except OSError:
        return ""
    return digest.hexdigest()


def _pointer_candidates(model: Path) -> Iterator[tuple[Path, Path]]:
    """(pointer file, the folder its paths are relative to): ``model.onnx.dvc``, then ``dvc.lock`` in
    the model's folder and each folder above it, up to the git work tree's top (a folder holding
    ``.git``)."""
    yield model.with_name(model.name + POINTER_SUFFIX), model.parent
    folder = model.resolve().parent
    while True:
        yield folder / LOCK_FILE, folder
        if (folder / ".git").exists() or folder.parent == folder:
            return
        folder = folder.parent


def outputs(text: str) -> list[tuple[str, str]]:
    """(path, md5) of each output a ``.dvc`` file or a ``dvc.lock`` names: the ``- path:`` / ``md5:``
    pairs of its ``outs`` items (a stage's ``deps`` are not outputs). Quotes around values are
    dropped; an item without both is left out."""
    found: list[tuple[str, str]] = []
    item: dict[str, str] = {}
    in_outs, outs_indent = False, -1

    def close() -> None:
        if in_outs and "path" in item and _MD5.fullmatch(item.get("md5", "")):
            found.append((item["path"], item["md5"]))
        item.clear()

    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        if re.fullmatch(r"[A-Za-z_]+:", stripped):  # a block: outs, deps, params, a stage name
            close()
            in_outs, outs_indent = stripped == "outs:", indent
            continue
        if in_outs and indent < outs_indent:
            close()
            in_outs = False
            continue
        if stripped.startswith("- "):
            close()
            stripped = stripped[2:].strip()
        key, sep, value = stripped.partition(":")
        if sep and in_outs:
            item[key.strip()] = value.strip().strip("'\"")
    close()
    return found


def declared_outputs(text: str) -> list[str]:
    """The outputs a ``dvc.yaml`` declares for its stages (``outs:`` items: ``- path`` or ``- path:``
    with options), whether or not the pipeline has run; relative to the file's folder."""
    found: list[str] = []
    in_outs, outs_indent = False, -1
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip():
            continue
        indent, stripped = len(line) - len(line.lstrip()), line.strip()
        if stripped.endswith(":") and not stripped.startswith("- "):
            in_outs, outs_indent = stripped == "outs:", indent
            continue
        if in_outs and indent < outs_indent:
            in_outs = False
        if in_outs and stripped.startswith("- ") and indent >= outs_indent:
            found.append(stripped[2:].strip().rstrip(":").strip().strip("'\""))
    return found


def recorded_dvc_model(recipe: RecordedModelRecipe) -> StoredModel | None:
    """The model the recipe recorded from DVC, checked against its md5: from the local DVC cache, else
    read through DVC at the commit whose pointer was the recorded one; None when the recipe recorded
    no DVC pointer. Without bytes, the reason names what failed and the command that fetches it."""
    pointer = DvcPointer.from_dict(recipe.recorded.get(RECIPE_KEY))
    if pointer is None:
        return None
    top = _toplevel(recipe.rootdir)
    label = f"the recorded model (DVC md5 {pointer.md5[:12]})"
    if top is None:
        return StoredModel(label, None, "DVC keeps it, and no git work tree is here to read its pointer from")
    cached = _from_cache(top, pointer.md5)
    if cached is not None:
        return StoredModel(f"{label}, from the DVC cache", cached)
    # (Not the work tree's file: a recorded model is rebuilt only when the model changed since.)
    commit = _commit_of(top, pointer)
    if commit is None:
        return StoredModel(
            label,
            None,
            f"its DVC pointer {pointer.file} (git object {pointer.blob[:12]}) is in no commit here: fetch "
            "the history (fetch-depth: 0 on GitHub Actions' actions/checkout, or git fetch --unshallow)",
        )
    return _read_by_dvc(top, pointer.path, pointer.md5, commit, label=label)


def model_at_revision(top: Path, commit: str, relative: str, *, label: str) -> StoredModel | None:
    """The model ``relative`` (to the work tree's top) as DVC kept it at ``commit``: its pointer there
    (``relative.dvc``, else a ``dvc.lock`` output in its folder or one above), and the object it
    names; None when DVC did not track it there."""
    md5 = _md5_at(top, commit, relative)
    return (
        None
        if md5 is None
        else read_object(top, relative, md5, commit, label=f"{label} (DVC md5 {md5[:12]})")
    )


def _md5_at(top: Path, commit: str, relative: str) -> str | None:
    model = PurePosixPath(relative)
    candidates = [(f"{relative}{POINTER_SUFFIX}", model.parent)]
    folder = model.parent
    while True:
        candidates.append(((folder / LOCK_FILE).as_posix(), folder))
        if folder == PurePosixPath("."):
            break
        folder = folder.parent
    for pointer, base in candidates:
        try:
            shown = _git(["show", f"{commit}:{pointer}"], top)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if shown.returncode != 0:
            continue
        for path, md5 in outputs(shown.stdout.decode("utf-8", errors="replace")):
            if posixpath.normpath((base / path).as_posix()) == posixpath.normpath(relative):
                return md5
    return None


def read_object(top: Path, relative: str, md5: str, commit: str, *, label: str) -> StoredModel:
    """The object ``md5`` of the model ``relative``, as DVC kept it at ``commit``: from the local DVC
    cache, the work tree's file when it is that object, else read by DVC (the repository's remote);
    checked against ``md5``. Without bytes, why, and the command that would fetch it."""
    cached = _from_cache(top, md5)
    if cached is not None:
        return StoredModel(f"{label}, from the DVC cache", cached)
    workspace = top / relative
    if _file_md5(workspace) == md5:
        return StoredModel(f"{label}, the work tree's file", workspace.read_bytes())
    return _read_by_dvc(top, relative, md5, commit, label=label)


def _read_by_dvc(top: Path, relative: str, md5: str, commit: str, *, label: str) -> StoredModel:
    """The object ``md5`` of ``relative`` as DVC's own API reads it at ``commit`` (from the local
    cache or the repository's DVC remote), checked; without bytes, why and what would fetch it."""
    try:
        import dvc.api
    except ImportError:
        return StoredModel(
            label,
            None,
            f"the DVC cache here does not hold md5 {md5}, and DVC, which would read it from the "
            f"repository's DVC remote, is not installed: {INSTALL}",
        )
    try:
        data = dvc.api.read(relative, repo=str(top), rev=commit, mode="rb")
    except Exception as exc:  # DVC's own errors: no remote, an unreachable one, an object it lacks
        return StoredModel(
            label,
            None,
            f"DVC could not read md5 {md5} of {relative} at {commit[:12]} from the local cache or the "
            f"DVC remote ({_first_line(exc)}); 'dvc remote list' shows the remotes, and 'dvc push' "
            "from where it was recorded puts it there",
        )
    if not isinstance(data, bytes) or hashlib.md5(data).hexdigest() != md5:
        return StoredModel(label, None, f"DVC gave bytes whose md5 is not the recorded {md5}")
    return StoredModel(f"{label}, read by DVC at {commit[:12]}", data)


def dvc_outputs(tree: Path) -> dict[str, list[str]]:
    """Every pointer git tracks in the work tree ``tree`` (``*.dvc`` files and ``dvc.lock`` files),
    relative to its top, with the outputs each names, relative to the top too."""
    try:
        listed = _git(["ls-files", "-z", "--", "*.dvc", f"*{LOCK_FILE}", LOCK_FILE], tree)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[str, list[str]] = {}
    for name in (n for n in listed.stdout.decode(errors="replace").split("\0") if n):
        pointer = PurePosixPath(name)
        if pointer.name != LOCK_FILE and pointer.suffix != POINTER_SUFFIX:
            continue
        try:
            text = (tree / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        found[name] = [posixpath.normpath((pointer.parent / path).as_posix()) for path, _ in outputs(text)]
    return found


def _from_cache(top: Path, md5: str) -> bytes | None:
    """The object ``md5`` from the repository's DVC cache (its configured folder, else ``.dvc/cache``;
    DVC 3's ``files/md5`` layout or the one before), checked; None when it does not hold it."""
    for cache in dict.fromkeys([_cache_dir(top), top / ".dvc" / "cache"]):
        for candidate in (cache / "files" / "md5" / md5[:2] / md5[2:], cache / md5[:2] / md5[2:]):
            try:
                data = candidate.read_bytes()
            except OSError:
                continue
            if hashlib.md5(data).hexdigest() == md5:
                return data
    return None


def _cache_dir(top: Path) -> Path:
    """The cache folder ``.dvc/config`` (or ``.dvc/config.local``) names under ``[cache]`` ``dir``,
    relative to ``.dvc``; ``.dvc/cache`` when neither names one."""
    found = top / ".dvc" / "cache"
    for name in ("config", "config.local"):
        try:
            text = (top / ".dvc" / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        section = ""
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith("["):
                section = stripped.strip("[]").strip().strip("'\"")
            elif section == "cache" and stripped.partition("=")[0].strip() == "dir":
                found = (top / ".dvc" / stripped.partition("=")[2].strip()).resolve()
    return found


def _commit_of(top: Path, pointer: DvcPointer) -> str | None:
    """A commit (of any ref) whose pointer file is the recorded object ``pointer.blob``."""
    try:
        log = _git(["log", "--all", "--format=%H", "--", pointer.file], top)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if log.returncode != 0:
        return None
    for commit in log.stdout.decode().split():
        try:
            found = _git(["rev-parse", "--verify", "--quiet", f"{commit}:{pointer.file}"], top)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if found.returncode == 0 and found.stdout.decode().strip() == pointer.blob:
            return commit
    return None


def _toplevel(cwd: Path) -> Path | None:
    if shutil.which("git") is None:
        return None
    try:
        done = _git(["rev-parse", "--show-toplevel"], cwd)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return Path(os.fsdecode(done.stdout.strip())).resolve() if done.returncode == 0 else None


def _tracked_blob(top: Path, pointer: Path) -> str:
    """The object id git's index holds for ``pointer`` ("" when git does not track it)."""
    try:
        done = _git(["ls-files", "--stage", "-z", "--", pointer.resolve().relative_to(top).as_posix()], top)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return ""
    fields = done.stdout.split(b"\t", 1)[0].decode(errors="replace").split(" ")
    return fields[1] if done.returncode == 0 and len(fields) == 3 else ""


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=_TIMEOUT_S, check=False)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
