"""The graph ONNX Runtime will run for a variant: built by a session of its own that writes its
optimized model (``SessionOptions.optimized_model_filepath``), with the node placement ORT recorded,
in this process or, for another onnxruntime, in a worker of that environment (one implementation:
``worker_program.optimized_graph``).

A session built in this process is handed back with its graph (``OptimizedGraph.session``): writing
the file happens while the session is built and changes nothing it runs, so the run's session pool
keeps it as a spare and times it instead of building the same session again (``SessionPool.adopt``).
Providers that compile nodes (TensorRT, OpenVINO) make ORT refuse to serialize the graph: then the
session is built again without the file, and only the placement (the op type and provider of each
node) stands for the graph, with a note saying so (``worker_program.COMPILED_NOTE``).
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_ortperf.errors import OrtperfError, SessionBuildError
from pytest_ortperf.ort import worker_program
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import session_recipe
from pytest_ortperf.ort.variants import Variant
from pytest_ortperf.ort.workers import worker_graph


@dataclass(frozen=True)
class OptimizedGraph:
    """The optimized model ORT wrote (None when it could not, with ``note`` saying why), the model as
    given, and where ORT placed each node (node name, ``domain:op``, provider)."""

    optimized: Any | None  # onnx.ModelProto
    source: Any  # onnx.ModelProto, without external data
    placement: tuple[tuple[str, str, str], ...]
    placed: bool  # whether this onnxruntime reports placement at all
    note: str
    seconds: float  # building the session that wrote the graph
    weights_sha256: str = ""  # the optimized graph's weights, written to a file of their own
    session: Any | None = None  # the session that wrote it, when built in this process


def optimized_graph(
    ort: ModuleType,
    model: ModelSource,
    variant: Variant,
    settings: SessionSettings,
    *,
    python: str = "",
    timeout_s: float = 300.0,
) -> OptimizedGraph:
    """Build ``model`` for ``variant`` under ``settings`` in a session that writes its optimized graph:
    in this process, or (``python``) in a worker of that interpreter's onnxruntime."""
    import onnx

    started = time.perf_counter()
    recipe = session_recipe(variant, settings)
    kept: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="ortperf-graph-") as scratch:
        path = Path(scratch) / "optimized.onnx"
        try:
            if python:
                answer = worker_graph(python, model, variant, settings, path, timeout_s=timeout_s)
            else:
                answer = worker_program.optimized_graph(ort, model.ort_input, recipe, str(path), kept)
        except OrtperfError:
            raise
        except Exception as exc:  # ORT raises Fail, InvalidProtobuf, RuntimeError, ...
            raise SessionBuildError(
                f"ONNX Runtime could not build a session for '{model.label}' [{variant.id}]: "
                f"{' '.join(str(exc).split())[:600]}"
            ) from exc
        note = str(answer["note"])
        optimized = None
        if path.exists():
            try:
                optimized = onnx.load(str(path), load_external_data=False)
            except Exception as exc:  # a protobuf ORT wrote that onnx cannot read (over 2 GB, ...)
                note = f"the optimized graph ORT wrote cannot be read back ({type(exc).__name__})"
        weights = path.parent / worker_program.GRAPH_WEIGHTS
        weights_sha256 = _sha256(weights) if optimized is not None and weights.exists() else ""
    if model.path is not None:
        source = onnx.load(str(model.path), load_external_data=False)
    else:
        assert model.data is not None
        source = onnx.load_from_string(model.data)
    placement = tuple((str(name), str(op), str(provider)) for name, op, provider in answer["placement"])
    seconds = time.perf_counter() - started
    session = kept[0] if kept else None
    return OptimizedGraph(
        optimized, source, placement, bool(answer["placed"]), note, seconds, weights_sha256, session
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
