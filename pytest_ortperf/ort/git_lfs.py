"""Git LFS objects: the content a pointer at a revision stands for, through git-lfs itself.

Most repositories that ship ``.onnx`` files keep them in Git LFS, so git holds a ~130-byte pointer
(``version ...``, ``oid sha256:...``, ``size ...``) where the model is. ``git lfs smudge``, run in the
repository, turns a pointer into its object: from ``.git/lfs/objects`` when this clone has it, else
fetched from the remote git-lfs is configured for (``origin`` by default). What it gives is checked
against the pointer (sha256 and size) before anything uses it, so a smudge that gave something else
(the pointer itself, as under ``GIT_LFS_SKIP_SMUDGE``) is an error, never a model. Where git-lfs is
missing, or no one has the object, the error says so and names the fix.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pytest_ortperf.errors import ModelError
from pytest_ortperf.ort.models import is_lfs_pointer

LFS_INSTALL = "install git-lfs (Debian and Ubuntu: apt-get install git-lfs; elsewhere: https://git-lfs.com)"
# A smudge may download a large object: far longer than a local git command may take.
_SMUDGE_TIMEOUT_S = 1800
_VERSION_TIMEOUT_S = 60
_SHA256 = re.compile(r"[0-9a-f]{64}")
# Variables that make git-lfs hand back the pointer instead of the object (a CI job may set them to
# skip LFS on checkout): the reference model is wanted here, so they are dropped for the smudge.
_SKIPPING = ("GIT_LFS_SKIP_SMUDGE", "GIT_LFS_SKIP_DOWNLOAD_ERRORS")
_HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class LfsPointer:
    """A Git LFS pointer file: the sha256 and size of the object it stands for, and its own text."""

    oid: str
    size: int
    text: bytes

    @property
    def names(self) -> str:
        """The object, as messages name it."""
        return f"sha256 {self.oid[:12]}, {self.size} bytes"


def parse_pointer(data: bytes) -> LfsPointer | None:
    """The pointer ``data`` is; None when it is not a Git LFS pointer, or one that names no sha256
    object (:func:`is_lfs_pointer` tells those apart)."""
    if not is_lfs_pointer(data):
        return None
    fields: dict[str, str] = {}
    for line in data.decode("utf-8", errors="replace").splitlines():
        key, _, value = line.partition(" ")
        fields[key] = value.strip()
    oid, size = fields.get("oid", ""), fields.get("size", "")
    if not oid.startswith("sha256:") or not _SHA256.fullmatch(oid[7:]) or not size.isdigit():
        return None
    return LfsPointer(oid[7:], int(size), data)


def lfs_available(cwd: Path) -> bool:
    """Whether ``git lfs`` runs here (git finds ``git-lfs`` on PATH)."""
    try:
        done = subprocess.run(
            ["git", "lfs", "version"], cwd=cwd, capture_output=True, timeout=_VERSION_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def smudge(
    toplevel: Path, pointer: LfsPointer, *, name: str, label: str, fetch: str, destination: Path | None = None
) -> bytes:
    """The object ``pointer`` stands for, checked against it: written to ``destination`` when given
    (external data can be large; then b"" is returned), else returned.

    ``name`` is the file's path in the repository (git-lfs names it in its progress), ``label`` how
    messages name the file, ``fetch`` the ``git lfs fetch`` arguments that would bring the object.
    A :class:`ModelError` naming the fix when git-lfs is missing or the object cannot be had."""
    if not lfs_available(toplevel):
        raise ModelError(
            f"{label} is kept in Git LFS (object {pointer.names}) and git-lfs is not installed here, so "
            f"the model cannot be read from its LFS object: {LFS_INSTALL}."
        )
    env = {key: value for key, value in os.environ.items() if key not in _SKIPPING}
    command = ["git", "lfs", "smudge", "--", name]
    try:
        if destination is None:
            done = subprocess.run(
                command,
                cwd=toplevel,
                input=pointer.text,
                capture_output=True,
                env=env,
                timeout=_SMUDGE_TIMEOUT_S,
                check=False,
            )
            data, stderr = done.stdout, done.stderr
        else:
            with destination.open("wb") as out:
                done = subprocess.run(
                    command,
                    cwd=toplevel,
                    input=pointer.text,
                    stdout=out,
                    stderr=subprocess.PIPE,
                    env=env,
                    timeout=_SMUDGE_TIMEOUT_S,
                    check=False,
                )
            data, stderr = b"", done.stderr
    except subprocess.TimeoutExpired:
        raise ModelError(
            f"{label}: git lfs smudge did not give its LFS object ({pointer.names}) within "
            f"{_SMUDGE_TIMEOUT_S} s; fetch it ahead of the run: git lfs fetch {fetch}."
        ) from None
    except OSError as exc:
        raise ModelError(f"{label}: running git lfs smudge failed ({exc}).") from None
    if done.returncode != 0:
        raise ModelError(
            f"{label} is kept in Git LFS and its object ({pointer.names}) is neither in this clone "
            f"(.git/lfs/objects) nor to be had from a remote ({_why(stderr)}): fetch it (git lfs fetch "
            f"{fetch}), or, where no remote has it, push it from the clone that committed it "
            "(git lfs push --all origin)."
        )
    size, digest = _measure(data if destination is None else destination)
    if (size, digest) != (pointer.size, pointer.oid):
        raise ModelError(
            f"{label}: git lfs smudge gave {size} bytes with sha256 {digest[:12]}, not the object its "
            f"pointer names ({pointer.names}); the LFS object store of this clone may be damaged "
            "(git lfs fsck)."
        )
    return data


def _measure(content: bytes | Path) -> tuple[int, str]:
    """(size, sha256) of bytes or of a file's content."""
    if isinstance(content, bytes):
        return len(content), hashlib.sha256(content).hexdigest()
    digest, size = hashlib.sha256(), 0
    with content.open("rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _why(stderr: bytes) -> str:
    """git-lfs's own reason, from its stderr: the last line that reports an error."""
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower() and not line.startswith("Errors logged to")]
    chosen = errors[-1] if errors else (lines[-1] if lines else "git lfs smudge failed without a message")
    chosen = chosen.rpartition("Smudge error: ")[2]  # after git-lfs's own prefix naming the file again
    chosen = _SHA256.sub(lambda match: match.group(0)[:12], chosen)  # the oid is named already
    return chosen if len(chosen) <= 300 else chosen[:297] + "..."
