"""Which onnxruntime wheel the suite runs with: `.[gpu]` (onnxruntime-gpu) or `.[cpu]` (onnxruntime)."""

from __future__ import annotations

import importlib.metadata


def installed(distribution: str) -> bool:
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


GPU_WHEEL = installed("onnxruntime-gpu")
