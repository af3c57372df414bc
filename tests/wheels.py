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


def arena_reported() -> bool:
    """Whether this onnxruntime's session profile carries its arena accounting (``mem_in_use_peak`` on
    Node events): 1.31 and 1.32 do, 1.23 (the one pip picks for Python 3.10) does not."""
    import json
    import os
    import tempfile

    import numpy as np
    import onnxruntime as ort

    from tests.models import mlp_model

    with tempfile.TemporaryDirectory(prefix="ortperf-arena-") as scratch:
        options = ort.SessionOptions()
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(scratch, "p")
        session = ort.InferenceSession(
            mlp_model(1, 4).SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        session.run(None, {"x": np.ones((1, 4), np.float32)})
        with open(session.end_profiling(), encoding="utf-8") as stream:
            events = json.load(stream)
    return any(e.get("cat") == "Node" and "mem_in_use_peak" in e.get("args", {}) for e in events)


ARENA_REPORTED = arena_reported()
