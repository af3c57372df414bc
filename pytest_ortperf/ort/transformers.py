"""ONNX Runtime's transformer optimizer as a pre-pass: ``ort_model(path, transformers={...})``.

``onnxruntime.transformers.optimizer.optimize_model(..., opt_level=0)`` applies the Python fusions
ORT's graph optimizer does not (Attention, EmbedLayerNormalization, SkipLayerNormalization, Gelu...)
before the sessions are built; the sessions then apply their optimization level on top. Level 0
needs ``sympy`` (the ``transformers`` extra), never torch.

The result is cached by content (``<cache>/<key>.onnx``, the key a digest of the model's bytes, the
options and the onnxruntime version), with the optimizer's fused-operator statistics beside it.
"""

from __future__ import annotations

import gc
import hashlib
import importlib
import json
import os
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_ortperf.errors import ModelError, UsageError
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.values import safe_repr

# What ``ort_model(transformers=...)`` takes, and the type of each value.
OPTIONS: dict[str, type] = {"model_type": str, "num_heads": int, "hidden_size": int}
TransformerOptions = tuple[tuple[str, Any], ...]


def parse_options(value: Any, *, source: str) -> TransformerOptions:
    """``{"model_type": "bert", "num_heads": 4, "hidden_size": 64}``, checked; sorted pairs."""
    if not isinstance(value, Mapping) or "model_type" not in value:
        raise UsageError(
            f"{source}: transformers= takes the optimizer's options as a dict with model_type and "
            f"optionally num_heads and hidden_size, e.g. {{'model_type': 'bert', 'num_heads': 12, "
            f"'hidden_size': 768}}; got {safe_repr(value)}."
        )
    unknown = sorted(str(key) for key in value if key not in OPTIONS)
    if unknown:
        raise UsageError(f"{source}: transformers= has unknown option(s) {', '.join(unknown)}; it takes "
                         f"{', '.join(OPTIONS)}.")  # fmt: skip
    for key, kind in OPTIONS.items():
        if key in value:
            given = value[key]
            if (
                not isinstance(given, kind)
                or isinstance(given, bool)
                or (isinstance(given, int) and given < 0)
            ):
                what = "a string" if kind is str else "an integer >= 0"
                raise UsageError(
                    f"{source}: transformers= option {key} must be {what}, got {safe_repr(given)}."
                )
    return tuple(sorted((str(key), value[key]) for key in value))


@dataclass(frozen=True)
class Prepared:
    """A model after the transformer optimizer: the file sessions load, and what it fused."""

    model: ModelSource
    fused: Mapping[str, int]  # get_fused_operator_statistics(), the counts above 0
    cached: bool  # found in the cache, not optimized in this run


def prepare(
    model: ModelSource, options: TransformerOptions, *, cache_dir: Path, ort_version: str
) -> Prepared:
    """``model`` after ``optimize_model`` with ``options``, from the cache when this model, these options
    and this onnxruntime made it before. The prepared source keeps the model's git object id, so the
    recorded model can be found in git and prepared again."""
    if model.has_external_data:
        raise ModelError(
            f"'{model.label}': the transformer optimizer pre-pass needs a model without external data files."
        )
    key = hashlib.sha256(
        json.dumps([model.sha256, list(options), ort_version], sort_keys=True).encode()
    ).hexdigest()[:24]
    path, stats = cache_dir / f"{key}.onnx", cache_dir / f"{key}.json"
    cached = path.exists() and stats.exists()
    if not cached:
        fused = _optimize(model, dict(options), path)
        stats.write_text(json.dumps(fused, sort_keys=True), encoding="utf-8")
    data = path.read_bytes()
    fused = {str(k): int(v) for k, v in json.loads(stats.read_text(encoding="utf-8")).items()}
    kind = dict(options)["model_type"]
    prepared = replace(
        model,
        label=f"{model.label} (transformer optimizer: {kind})",
        sha256=hashlib.sha256(data).hexdigest(),
        path=path,
        data=None,
        transformers=options,
    )
    return Prepared(prepared, fused, cached)


def _optimize(model: ModelSource, options: dict[str, Any], destination: Path) -> dict[str, int]:
    """Run ``optimize_model`` at level 0 and save to ``destination`` (atomically); its fused counts."""
    try:
        importlib.import_module("sympy")  # the optimizer's symbolic shape inference needs it
        from onnxruntime.transformers.optimizer import optimize_model
    except ImportError as exc:
        raise UsageError(
            f"'{model.label}': the transformer optimizer pre-pass (ort_model(transformers=...)) needs "
            f"{exc.name or 'sympy'}: pip install 'pytest-ortperf[transformers]' (or sympy)."
        ) from None
    destination.parent.mkdir(parents=True, exist_ok=True)
    # Beside the destination, so that the finished file is moved into place on the same file system.
    with tempfile.TemporaryDirectory(prefix=".optimizing-", dir=destination.parent) as scratch:
        source = model.path
        if source is None:
            source = Path(scratch) / "model.onnx"
            source.write_bytes(model.data or b"")
        failure = ""
        with warnings.catch_warnings():
            # A failed optimizer leaves temporary directories of its own to the garbage collector: they
            # are collected here, quietly, not in a later test of a run that turns warnings into errors.
            warnings.simplefilter("ignore", ResourceWarning)
            try:
                optimized = optimize_model(
                    str(source),
                    model_type=options["model_type"],
                    num_heads=options.get("num_heads", 0),
                    hidden_size=options.get("hidden_size", 0),
                    opt_level=0,
                )
                statistics = optimized.get_fused_operator_statistics()
                written = Path(scratch) / "optimized.onnx"
                optimized.save_model_to_file(str(written))
            except Exception as exc:  # the optimizer raises anything from KeyError to RuntimeError
                failure = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            gc.collect()
        if failure:
            raise ModelError(f"'{model.label}': ONNX Runtime's transformer optimizer failed ({failure}).")
        os.replace(written, destination)
    return {str(op): int(n) for op, n in sorted(statistics.items()) if int(n) > 0}
