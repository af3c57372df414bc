"""A content-addressed model cache: the bytes of every model a run measured, by their sha256.

A baseline names the model it measured by sha256 (and git object id). When the model changes
and git does not keep the recorded bytes (a generated or downloaded model, a shallow clone),
the cache does: a CI job that persists the directory between runs can rebuild the recorded
model and measure it side by side with the current one.

Layout: ``<root>/<first two hex digits>/<sha256>.onnx``. Entries are written atomically and
checked against their name on every read, so a damaged file is never measured.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from pytest_ortperf.errors import UsageError
from pytest_ortperf.store.baselines import write_atomically

_SHA256 = re.compile(r"[0-9a-f]{64}")


class ModelCache:
    def __init__(self, root: Path) -> None:
        if root.exists() and not root.is_dir():
            raise UsageError(f"model cache '{root}' is not a directory.")
        self.root = root

    def path_for(self, sha256: str) -> Path:
        if not _SHA256.fullmatch(sha256):
            raise ValueError(f"not a sha256: {sha256!r}")
        return self.root / sha256[:2] / f"{sha256}.onnx"

    def put(self, sha256: str, data: bytes) -> bool:
        """Keep ``data`` under ``sha256`` unless a good copy is there; whether anything was written."""
        if hashlib.sha256(data).hexdigest() != sha256:
            raise ValueError("the bytes do not match their sha256")
        if self.get(sha256) is not None:
            return False
        try:
            write_atomically(self.path_for(sha256), data)
        except OSError as exc:
            raise UsageError(f"model cache '{self.root}': cannot write {sha256[:12]} ({exc}).") from None
        return True

    def get(self, sha256: str) -> bytes | None:
        """The bytes kept under ``sha256``, or None when absent or damaged (they must hash to it)."""
        try:
            data = self.path_for(sha256).read_bytes()
        except (OSError, ValueError):
            return None
        return data if hashlib.sha256(data).hexdigest() == sha256 else None
