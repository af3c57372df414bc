"""A small BERT exported from Hugging Face transformers (models/make_bert.py), run after ONNX Runtime's
transformer optimizer, which fuses its attention and embeddings."""

from __future__ import annotations

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


def test_latency_accuracy_and_graph(ort_perf):
    # One Attention per layer and the embeddings in one node, at every optimization level: what the
    # transformer optimizer fused is part of the graph the gate compares.
    ort_perf.check(expect_fusions={"Attention": 2, "EmbedLayerNormalization": 1})
