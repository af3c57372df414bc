"""The generation kind's figures against ONNX Runtime's own way of measuring the same decoder (issue 61).

Question: ``check_generation()`` reports time to first token and the time per generated token from
real greedy generations (the cache bound as ORT values and fed back step to step, the argmax on the
logits). ONNX Runtime's transformers benchmark (``onnxruntime/transformers/models/llama/benchmark.py``:
its ``time_fn`` after ``run_ort_inference``) measures a decoder differently: the mean of
``session.run`` over fixed feeds after warm-up runs, once on the prompt (an empty past) and once on
one token over a past of the prompt's length. Do the two read the same model alike, quiet and beside
busy processes?

Method: per model, one session (CPU EP, one intra-op thread, level ``all``); trials interleave the
plugin's measurement (``kinds/generation.py: measure_generation``, its defaults: a warm-up generation,
then repeats for a second) and ORT's method (10 warm-up runs, then the mean of 50 timed runs of
``session.run``; prompt, then one token over a past of ``prompt`` and of ``prompt + new_tokens / 2``
positions, the plugin's side-by-side decode step). ``--binding N``: N interleaved pairs of generations
with the cache bound as ORT values (one IO binding rebound each step) and fed back as the outputs
come, per model. The ORT module itself does not import in the
onnxruntime-gpu 1.31.1 wheel (``models.torch_export_patches`` is missing), so its method is followed
here as written there. ``--busy N`` runs N spinning Python processes beside.

Models: tiny transformers decoders (random init, seed 0), exported by ``tests/decoder_exports.py``:
``gpt2-2x256`` (2 layers, 256 wide, 4 heads, vocab 2000), ``gpt2-6x512`` (6 layers, 512 wide, 8 heads,
vocab 8000), ``llama-4x256-gqa`` (4 layers, 256 wide, 4 heads over 2 key-value heads, vocab 4000).

Run from the repository root (torch 2.13.0 and transformers installed)::

    python -m benchmarks.generation_figures --trials 5 --busy 0,2 --binding 60 \\
        --out benchmarks/results/generation_figures.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import onnxruntime as ort

from benchmarks.conditions import cpu_fields, loadavg
from pytest_ortperf.kinds.generation import (
    Generator,
    decoder_of,
    measure_generation,
    prompt_ids,
    signature_of,
)
from tests.decoder_exports import export_decoder

MODELS: dict[str, dict[str, Any]] = {
    "gpt2-2x256": {"family": "gpt2", "layers": 2, "width": 256, "heads": 4, "vocab": 2000},
    "gpt2-6x512": {"family": "gpt2", "layers": 6, "width": 512, "heads": 8, "vocab": 8000},
    "llama-4x256-gqa": {
        "family": "llama",
        "layers": 4,
        "width": 256,
        "heads": 4,
        "kv_heads": 2,
        "vocab": 4000,
    },
}
WARMUP, RUNS = 10, 50


def ort_method(run: Callable[[], object]) -> float:
    """ORT's transformers benchmark's latency: warm-up runs, then the mean of the timed runs (ms)."""
    for _ in range(WARMUP):
        run()
    began = time.perf_counter()
    for _ in range(RUNS):
        run()
    return (time.perf_counter() - began) / RUNS * 1000


def trial(session: Any, path: Path, prompt_length: int, new_tokens: int) -> dict[str, float]:
    decoder = decoder_of(*signature_of(path), {}, where=str(path))
    prompt = prompt_ids(prompt_length, decoder.vocab)
    plugin = measure_generation(
        Generator(session, decoder, ("cpu", 0)), prompt, new_tokens, cached=True, device="cpu"
    )
    middle = prompt_length + new_tokens // 2
    prefill = decoder.feeds(prompt, 0)
    at_prompt = decoder.feeds(prompt[-1:], prompt_length)
    at_middle = decoder.feeds(prompt[-1:], middle)
    return {
        "plugin_first_token_ms": plugin.first_token_ms,
        "plugin_token_ms": plugin.token_ms,
        "plugin_token_p90_ms": plugin.token_p90_ms,
        "plugin_repeats": plugin.repeats,
        "ort_prompt_ms": ort_method(lambda: session.run(None, prefill)),
        "ort_token_ms": ort_method(lambda: session.run(None, at_prompt)),
        "ort_token_mid_ms": ort_method(lambda: session.run(None, at_middle)),
    }


def binding_cost(
    session: Any, path: Path, prompt_length: int, new_tokens: int, pairs: int
) -> dict[str, float]:
    """Per-token time with the cache bound as ORT values (one IO binding rebound each step, the path a
    device provider takes) over the time with it fed back as the outputs come (the CPU's path):
    ``pairs`` generations of each, interleaved in alternating order; the ratio's quartiles."""
    decoder = decoder_of(*signature_of(path), {}, where=str(path))
    prompt = prompt_ids(prompt_length, decoder.vocab)
    bound = Generator(session, decoder, ("cpu", 0), bound=True)
    fed = Generator(session, decoder, ("cpu", 0), bound=False)

    def per_token(generator: Generator) -> float:
        return statistics.median(generator.generate(prompt, new_tokens).steps_ms)

    for _ in range(3):
        per_token(bound)
        per_token(fed)
    ratios = []
    for k in range(pairs):
        if k % 2:
            a, b = per_token(bound), per_token(fed)
        else:
            b, a = per_token(fed), per_token(bound)
        ratios.append(a / b)
    q1, q2, q3 = statistics.quantiles(ratios, n=4)
    return {"bound_over_fed_q25": q1, "bound_over_fed_median": q2, "bound_over_fed_q75": q3}


def campaign(
    models: Sequence[str], busy: int, trials: int, prompt: int, new: int, folder: Path, binding: int = 0
) -> list[dict]:
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdout=subprocess.DEVNULL)
        for _ in range(busy)
    ]
    rows = []
    try:
        time.sleep(1.0 if busy else 0.0)
        for name in models:
            path = export_decoder(folder / f"{name}.onnx", **MODELS[name])
            options = ort.SessionOptions()
            options.intra_op_num_threads = options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            results = [trial(session, path, prompt, new) for _ in range(trials)]
            row: dict[str, Any] = {"model": name, "busy": busy, "load": loadavg(), "trials": trials}
            if binding:
                row |= binding_cost(session, path, prompt, new, binding)
            for key in results[0]:
                row[key] = statistics.median(r[key] for r in results)
            row["first_token_over_ort_prompt"] = statistics.median(
                r["plugin_first_token_ms"] / r["ort_prompt_ms"] for r in results
            )
            row["token_over_ort_mid"] = statistics.median(
                r["plugin_token_ms"] / r["ort_token_mid_ms"] for r in results
            )
            rows.append(row)
            print(row, flush=True)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    return rows


def report(rows: Sequence[dict], prompt: int, new: int) -> list[str]:
    cpu = cpu_fields()
    lines = [
        f"# generation figures against ONNX Runtime's method ({dt.date.today().isoformat()})",
        "",
        f"CPU: {cpu.get('model name', '?')} (cpu family {cpu.get('cpu family', '?')} model "
        f"{cpu.get('model', '?')}), {cpu.get('cpu cores', '?')} cores; onnxruntime {ort.__version__}; "
        f"prompt {prompt}, {new} new tokens; medians over the trials.",
        "",
        "| model | busy | plugin first token ms | ORT prompt ms | ratio | plugin per token ms (p90) "
        "| ORT token ms (past = prompt) | ORT token ms (past = mid) | ratio to mid | load |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        cells = [
            r["model"],
            str(r["busy"]),
            f"{r['plugin_first_token_ms']:.3f}",
            f"{r['ort_prompt_ms']:.3f}",
            f"{r['first_token_over_ort_prompt']:.2f}",
            f"{r['plugin_token_ms']:.3f} ({r['plugin_token_p90_ms']:.3f})",
            f"{r['ort_token_ms']:.3f}",
            f"{r['ort_token_mid_ms']:.3f}",
            f"{r['token_over_ort_mid']:.2f}",
            str(r["load"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    bound = [r for r in rows if "bound_over_fed_median" in r]
    if bound:
        lines += [
            "",
            "Per token, the cache bound as ORT values (one IO binding rebound each step) over fed back as "
            "the outputs come, interleaved generations:",
            "",
            "| model | busy | median | quartiles |",
            "| --- | --- | --- | --- |",
        ]
        lines += [
            f"| {r['model']} | {r['busy']} | {r['bound_over_fed_median']:.3f} | "
            f"{r['bound_over_fed_q25']:.3f} .. {r['bound_over_fed_q75']:.3f} |"
            for r in bound
        ]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument(
        "--busy", default="0,2", help="spinning processes beside, per campaign (comma separated)"
    )
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument(
        "--binding", type=int, default=0, help="pairs of bound / fed-back generations a model"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(",") if m]
    rows = []
    with tempfile.TemporaryDirectory(prefix="ortperf-generation-") as temp:
        for busy in (int(b) for b in args.busy.split(",")):
            rows += campaign(
                models, busy, args.trials, args.prompt, args.new_tokens, Path(temp), args.binding
            )
    lines = report(rows, args.prompt, args.new_tokens)
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
