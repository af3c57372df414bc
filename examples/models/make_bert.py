"""Generate ``bert.onnx`` and ``bert_sdpa.onnx``: a small BERT exported from Hugging Face ``transformers``.

The example suite's real transformer: ``transformers.BertModel`` with random weights (seeded; nothing
is downloaded), 2 layers, hidden size 64, 4 heads, FFN 256, vocabulary 512, up to 128 positions,
exported by ``torch.onnx.export`` (TorchScript exporter, opset 17) with dynamic batch and sequence.
Inputs ``input_ids`` and ``attention_mask`` (``int64[batch, sequence]``); outputs
``last_hidden_state`` and ``pooler_output``.

Two exports of the same model and weights, which differ only in how ``transformers`` writes its
attention:

- ``bert.onnx``: ``attn_implementation="eager"`` (MatMul, scale, mask, Softmax, MatMul): ONNX Runtime's
  transformer optimizer fuses each layer into one ``Attention`` node and the embeddings into
  ``EmbedLayerNormalization``;
- ``bert_sdpa.onnx``: ``attn_implementation="sdpa"`` (the default of recent ``transformers`` releases):
  the same outputs, a pattern the optimizer no longer recognises: no ``Attention``, no
  ``EmbedLayerNormalization``. The graph check's tests use it as the re-export that loses fusions.

Only generating them needs torch and transformers (``pip install torch transformers onnx``); the
tests and the example suite do not. Run from the repository root::

    python examples/models/make_bert.py
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
SEQUENCE = 16  # the traced example's length; both axes are dynamic in the export


def export(attention: str, destination: Path) -> None:
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=512,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=256,
        max_position_embeddings=128,
        attn_implementation=attention,
    )
    bert = BertModel(config).eval()

    class Outputs(torch.nn.Module):
        """BertModel's two tensors as a tuple (the exporter does not take its output class)."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
            return out.last_hidden_state, out.pooler_output

    ids = torch.randint(0, config.vocab_size, (1, SEQUENCE))
    mask = torch.ones(1, SEQUENCE, dtype=torch.int64)
    dynamic = {0: "batch", 1: "sequence"}
    torch.onnx.export(
        Outputs().eval(),
        (ids, mask),
        str(destination),
        input_names=["input_ids", "attention_mask"],
        output_names=["last_hidden_state", "pooler_output"],
        dynamic_axes={"input_ids": dynamic, "attention_mask": dynamic},
        opset_version=17,
        dynamo=False,
    )


if __name__ == "__main__":
    export("eager", HERE / "bert.onnx")
    export("sdpa", HERE / "bert_sdpa.onnx")
    print("wrote", HERE / "bert.onnx", "and", HERE / "bert_sdpa.onnx")
