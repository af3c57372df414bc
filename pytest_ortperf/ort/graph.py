"""The graph ONNX Runtime will run for a variant: built by a session of its own that writes its
optimized model (``SessionOptions.optimized_model_filepath``), with the node placement ORT recorded.

A session that writes its graph is never one that is timed. Providers that compile nodes (TensorRT)
refuse to serialize them: then the session is built again without the file, and only the placement
stands for the graph, with the reason.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_ortperf.errors import SessionBuildError
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.placement import Placement, placement_of
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import provider_arguments, session_options
from pytest_ortperf.ort.variants import Variant

_QUIET = 3  # ORT's error level: at `all` it warns that NCHWc graphs are hardware specific (expected)


@dataclass(frozen=True)
class OptimizedGraph:
    """The optimized model ORT wrote (None when it could not, with ``note`` saying why), the model as
    given, and where ORT placed each node (node name, ``domain:op``, provider)."""

    optimized: Any | None  # onnx.ModelProto
    source: Any  # onnx.ModelProto, without external data
    placement: tuple[tuple[str, str, str], ...]
    note: str
    seconds: float  # building the session that wrote the graph


def optimized_graph(
    ort: ModuleType, model: ModelSource, variant: Variant, settings: SessionSettings
) -> OptimizedGraph:
    """Build ``model`` for ``variant`` under ``settings`` in a session that writes its optimized graph."""
    import onnx

    started = time.perf_counter()
    providers = provider_arguments(variant, settings)
    note = ""
    with tempfile.TemporaryDirectory(prefix="ortperf-graph-") as scratch:
        path = Path(scratch) / "optimized.onnx"
        options = session_options(ort, variant, settings)
        options.optimized_model_filepath = str(path)
        options.log_severity_level = _QUIET
        try:
            session = ort.InferenceSession(model.ort_input, options, providers=providers, enable_fallback=0)
        except Exception as first:  # ORT raises Fail, RuntimeError, ...
            options = session_options(ort, variant, settings)
            options.log_severity_level = _QUIET
            try:
                session = ort.InferenceSession(
                    model.ort_input, options, providers=providers, enable_fallback=0
                )
            except Exception as exc:
                raise SessionBuildError(
                    f"ONNX Runtime could not build a session for '{model.label}' [{variant.id}]: "
                    f"{' '.join(str(exc).split())[:600]}"
                ) from exc
            note = f"ORT could not write the optimized graph ({' '.join(str(first).split())[:300]})"
        optimized = onnx.load(str(path), load_external_data=False) if path.exists() else None
    if model.path is not None:
        source = onnx.load(str(model.path), load_external_data=False)
    else:
        assert model.data is not None
        source = onnx.load_from_string(model.data)
    placed: Placement | None = placement_of(session)
    placement = tuple(
        (
            node.name,
            node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}",
            node.provider,
        )
        for node in (placed.nodes if placed is not None else ())
    )
    del session
    return OptimizedGraph(optimized, source, placement, note, time.perf_counter() - started)
