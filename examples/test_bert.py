"""A small BERT exported from Hugging Face transformers (models/make_bert.py), run after ONNX Runtime's
transformer optimizer, which fuses its attention and embeddings."""

from __future__ import annotations

import onnxruntime
import pytest

pytestmark = pytest.mark.ort_model(
    "models/bert.onnx",
    int_range={"input_ids": (0, 512), "attention_mask": (1, 2)},
    transformers={"model_type": "bert", "num_heads": 4, "hidden_size": 64},
)


def test_outputs_follow_dims(ort_session, ort_inputs):
    hidden, pooled = ort_session.run(None, ort_inputs)
    assert hidden.shape == (1, 128, 64)  # sequence=128 from pytest.ini
    assert pooled.shape == (1, 64)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2] if part.isdigit())


# What the transformer optimizer fuses in this export depends on onnxruntime's version, so the pins
# say which version they hold for. From 1.31.0 on, it fuses each layer's attention into one Attention
# node and the embeddings into EmbedLayerNormalization. Checked on this model: 1.23.2 (the newest
# release for Python 3.10), 1.24.4, 1.27.0 and 1.30.0 leave both unfused and make the same
# SkipLayerNormalization and BiasGelu nodes; 1.31.0, 1.31.1 and 1.32.0 fuse them.
if _release(onnxruntime.__version__) >= (1, 31):
    FUSIONS = {"Attention": 2, "EmbedLayerNormalization": 1, "SkipLayerNormalization": 4, "BiasGelu": 2}
else:
    FUSIONS = {"SkipLayerNormalization": 4, "BiasGelu": 2}


def test_latency_accuracy_and_graph(ort_perf):
    # What the transformer optimizer fused, at every optimization level, is part of the graph the gate
    # compares; the pins fail whenever a count differs.
    ort_perf.check(expect_fusions=FUSIONS)
