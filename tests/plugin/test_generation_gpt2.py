"""``check_generation()`` on a real decoder: a tiny transformers GPT-2 (random init, saved locally) exported by
``torch.onnx.export`` with its past key values, as optimum names them. Recorded and passed unchanged; the
same model with two more layers fails naming the prefill and the decode step; the same model exported
without the cache (every step recomputes the prompt) fails naming the decode step. Needs torch and
transformers (``.ci/run`` installs them for this file: ``pip install torch==2.13.0 transformers``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.decoder_exports import export_decoder
from tests.plugin.conftest import commit_model, git

torch = pytest.importorskip("torch", reason="needs torch (pip install torch==2.13.0; .ci/run installs it)")
transformers = pytest.importorskip("transformers", reason="needs transformers (.ci/run installs it)")

pytestmark = pytest.mark.slow
HEADS, WIDTH, VOCAB = 4, 256, 2000


def gpt2(path: Path, *, layers: int, cache: bool = True) -> Path:
    return export_decoder(
        path, family="gpt2", layers=layers, width=WIDTH, heads=HEADS, vocab=VOCAB, cache=cache
    )


TESTS = """
import pytest
pytestmark = [pytest.mark.ort_model("model.onnx"), pytest.mark.ort_thresholds(generation="20%")]

def test_generate(ort_perf):
    ort_perf.check_generation(prompt_length=48, new_tokens=16)
"""


def _record(pytester: pytest.Pytester) -> dict:
    (record,) = [
        r
        for r in json.loads((pytester.path / "report.json").read_text())["checks"]
        if r["kind"] == "generation"
    ]
    return record


def test_a_transformers_gpt2_is_recorded_passes_unchanged_and_fails_more_layers_and_a_lost_cache(
    pytester: pytest.Pytester, isolated_git: None, tmp_path: Path
) -> None:
    import onnx

    commit_model(pytester, onnx.load(str(gpt2(tmp_path / "two.onnx", layers=2))))
    pytester.makepyfile(test_gen=TESTS)
    pytester.runpytest("--ortperf-update").assert_outcomes(passed=1)
    baseline = json.loads((pytester.path / "baselines" / "test_gen.py.json").read_text())
    (figures,) = baseline["entries"]["test_generate[cpu-all]"]["figures"].values()
    part = figures["parts"]["generation"]
    assert part["cached"] is True
    assert part["cache_bytes_per_token"] == 2 * 2 * WIDTH * 4  # 2 layers x keys and values x width x float32
    git(pytester, "add", "baselines")
    git(pytester, "commit", "-q", "-m", "baselines")

    unchanged = pytester.runpytest("--ortperf-report=report.json")
    unchanged.assert_outcomes(passed=1)
    assert _record(pytester)["verdict"] == "ok"

    (pytester.path / "model.onnx").write_bytes(gpt2(tmp_path / "four.onnx", layers=4).read_bytes())
    deeper = pytester.runpytest("--ortperf-report=report.json")
    deeper.assert_outcomes(failed=1)
    deeper.stdout.fnmatch_lines(
        [
            "*generation of test_generate[[]cpu-all[]]: the prefill and the decode step grew side by side with the*"
        ]
    )

    (pytester.path / "model.onnx").write_bytes(
        gpt2(tmp_path / "nocache.onnx", layers=2, cache=False).read_bytes()
    )
    recomputed = pytester.runpytest("--ortperf-report=report.json")
    recomputed.assert_outcomes(failed=1)
    recomputed.stdout.fnmatch_lines(
        [
            "*generation of test_generate[[]cpu-all[]]: the decode step grew side by side with the recorded reference",
            "*  cache: none (every step recomputes the whole sequence)",
        ]
    )
    assert _record(pytester)["figures"]["against"]["prefill"]["verdict"] != "regression"
