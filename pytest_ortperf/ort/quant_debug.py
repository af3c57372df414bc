"""Where a reduced-precision model lost accuracy: the tensors furthest from the float model's.

An output that drifts says that a quantized model is off, not where. Both models are run on the
same feeds with every float activation made an output, and each activation of the quantized model
is scored against the float one by its signal-to-quantization-noise ratio (SQNR, in dB: 20 log10
of |float| / |float - quantized|); the lowest are where precision went. For QDQ models (int8-static)
this is onnxruntime's own ``qdq_loss_debug``, which pairs each activation with its value after
quantize-dequantize; fp16 and dynamically quantized models have no such pairs, and are compared by
the tensor names both graphs have (the tools keep the names of the tensors they rebuild).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_ortperf.errors import ModelError
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.precision import FeedSets, describe_failure, running_tools

Array = npt.NDArray[Any]
Activations = dict[str, list[Array]]


@dataclass(frozen=True)
class TensorLoss:
    """One activation of the quantized model against the float model's."""

    name: str
    sqnr_db: float  # signal-to-quantization-noise ratio; higher is better, inf when identical


def worst_tensors(
    float_model: ModelSource,
    quantized_model: ModelSource,
    feeds: Mapping[str, Array],
    *,
    limit: int = 3,
) -> tuple[TensorLoss, ...]:
    """The ``limit`` activations of ``quantized_model`` that lost the most on ``feeds``, lowest SQNR
    first. Runs both models on the CPU without graph optimizations (so every tensor exists), in a
    temporary directory it removes. A ModelError says why when the models cannot be compared."""
    # The tools run in the scratch directory: every path they take is absolute.
    float_model, quantized_model = _absolute(float_model), _absolute(quantized_model)
    try:
        with tempfile.TemporaryDirectory(prefix="ortperf-tensors-") as scratch_dir:
            scratch = Path(scratch_dir).absolute()
            with running_tools(scratch):
                losses = _losses(float_model, quantized_model, feeds, scratch)
    except Exception as exc:  # the debug tools and sessions raise anything
        raise ModelError(
            f"'{quantized_model.label}': its tensors cannot be compared with the float model's "
            f"({describe_failure(exc)})"
        ) from None
    if not losses:
        raise ModelError(
            f"'{quantized_model.label}': it has no float activation that the float model has too"
        )
    ranked = sorted(losses.items(), key=lambda item: (item[1], item[0]))
    return tuple(TensorLoss(name, sqnr) for name, sqnr in ranked[:limit])


def _losses(
    float_model: ModelSource, quantized_model: ModelSource, feeds: Mapping[str, Array], scratch: Path
) -> dict[str, float]:
    """SQNR of each activation the two models share."""
    from onnxruntime.quantization.qdq_loss_debug import create_activation_matching

    float_acts = _activations(
        _on_disk(float_model, scratch / "float.onnx"), scratch / "float-outputs.onnx", feeds
    )
    quantized_acts = _activations(
        _on_disk(quantized_model, scratch / "quantized.onnx"), scratch / "quantized-outputs.onnx", feeds
    )
    pairs: dict[str, tuple[Sequence[Array], Sequence[Array]]] = {}
    matching = create_activation_matching(quantized_acts, float_acts)
    if matching:  # QDQ: each float activation against its value after quantize-dequantize
        for name, match in matching.items():
            if "float" in match:
                pairs[name] = (match["float"], match["post_qdq"])
    else:
        for name in float_acts.keys() & quantized_acts.keys():
            pairs[name] = (float_acts[name], quantized_acts[name])
    return {
        name: _sqnr(reference, actual)
        for name, (reference, actual) in pairs.items()
        if [a.shape for a in reference] == [a.shape for a in actual]
    }


def _on_disk(model: ModelSource, spare: Path) -> Path:
    """The model's file, or its bytes written to ``spare``: the debug tools take paths."""
    if model.path is not None:
        return model.path
    spare.write_bytes(model.data or b"")
    return spare


def _absolute(model: ModelSource) -> ModelSource:
    return model if model.path is None else replace(model, path=model.path.absolute())


def _activations(model: Path, augmented: Path, feeds: Mapping[str, Array]) -> Activations:
    """Every float activation of ``model`` on ``feeds`` (``augmented``: the model with each of them
    made an output): the tensor names and their values."""
    import onnxruntime
    from onnxruntime.quantization.qdq_loss_debug import (
        collect_activations,
        modify_model_output_intermediate_tensors,
    )

    modify_model_output_intermediate_tensors(str(model), str(augmented))
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3  # errors only: unused initializers are no news here
    collected: Activations = collect_activations(str(augmented), FeedSets([feeds]), session_options=options)
    return collected


def _sqnr(reference: Sequence[Array], actual: Sequence[Array]) -> float:
    """onnxruntime's SQNR in dB, in float64; inf for identical tensors (it would give a large finite
    number), -inf where the quantized model made NaNs the float one did not have."""
    from onnxruntime.quantization.qdq_loss_debug import compute_signal_to_quantization_noice_ratio

    left = [np.asarray(a, dtype=np.float64) for a in reference]
    right = [np.asarray(a, dtype=np.float64) for a in actual]
    if all(np.array_equal(a, b, equal_nan=True) for a, b in zip(left, right, strict=True)):
        return math.inf
    value = float(compute_signal_to_quantization_noice_ratio(left, right))
    return -math.inf if math.isnan(value) else value
