"""Real decoders for the generation kind: a tiny transformers GPT-2 or Llama (random init, seed 0), saved with
``save_pretrained`` and loaded back, exported by ``torch.onnx.export`` (TorchScript, opset 17) with its
past key values as optimum names them. torch and transformers are imported here, when a test or a
benchmark asks for a model (``.ci/run`` installs them for the generation tests)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any


def export_decoder(
    path: Path,
    *,
    family: str = "gpt2",
    layers: int = 2,
    width: int = 256,
    heads: int = 4,
    kv_heads: int | None = None,
    vocab: int = 2000,
    cache: bool = True,
) -> Path:
    """A ``layers``-layer decoder of ``family`` exported to ``path``. With ``cache``: ``input_ids``,
    ``attention_mask`` and ``past_key_values.N.key/value`` ``[batch, kv_heads, past_sequence, head]``
    in, ``logits`` and ``present.N.key/value`` out; without: ``input_ids`` and ``attention_mask`` in,
    ``logits`` out (every step then recomputes the whole sequence). ``kv_heads``: Llama's grouped
    key-value heads (default ``heads``)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    from transformers.cache_utils import DynamicCache

    torch.manual_seed(0)
    kv = kv_heads or heads
    made: Any
    if family == "gpt2":
        made = GPT2LMHeadModel(
            GPT2Config(n_layer=layers, n_embd=width, n_head=heads, vocab_size=vocab, n_positions=512)
        )
    elif family == "llama":
        config = LlamaConfig(
            num_hidden_layers=layers,
            hidden_size=width,
            intermediate_size=width * 2,
            num_attention_heads=heads,
            num_key_value_heads=kv,
            vocab_size=vocab,
            max_position_embeddings=512,
        )
        made = LlamaForCausalLM(config)
    else:
        raise ValueError(f"family: gpt2 or llama, got {family!r}")
    saved = path.parent / f"{path.stem}-pretrained"
    made.save_pretrained(saved)
    model = type(made).from_pretrained(saved).eval()
    head = width // heads

    class WithCache(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, *past: Any) -> Any:
            cached = DynamicCache()
            for i in range(layers):
                cached.update(past[2 * i], past[2 * i + 1], i)
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, past_key_values=cached, use_cache=True
            )
            presents = []
            for layer in out.past_key_values.layers:
                presents += [layer.keys, layer.values]
            return (out.logits, *presents)

    class WithoutCache(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits

    ids = torch.randint(0, vocab, (1, 8))
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total_sequence"}}
    axes["logits"] = {0: "batch", 1: "sequence"}
    module: torch.nn.Module
    if cache:
        past_names = [f"past_key_values.{i}.{part}" for i in range(layers) for part in ("key", "value")]
        present_names = [f"present.{i}.{part}" for i in range(layers) for part in ("key", "value")]
        past = [torch.randn(1, kv, 4, head) for _ in past_names]
        arguments: tuple[Any, ...] = (ids, torch.ones(1, 12, dtype=torch.int64), *past)
        inputs, outputs, module = (
            ["input_ids", "attention_mask", *past_names],
            ["logits", *present_names],
            WithCache(),
        )
        axes |= {name: {0: "batch", 2: "past_sequence"} for name in past_names}
        axes |= {name: {0: "batch", 2: "total_sequence"} for name in present_names}
    else:
        arguments = (ids, torch.ones(1, 8, dtype=torch.int64))
        inputs, outputs, module = ["input_ids", "attention_mask"], ["logits"], WithoutCache()
    # The TorchScript exporter warns that it is the legacy one, and the tracer about Python values it
    # records as constants: the export is the one optimum and the transformers scripts still make.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            arguments,
            str(path),
            input_names=inputs,
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    return path
