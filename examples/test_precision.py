"""Precision variants of the small CNN and the encoder, built from them with ONNX Runtime's own tools
(fp16, dynamic int8, static int8 in QDQ format), each gated like any variant and compared with fp32;
and the contracts a team ships such variants on, measured side by side in the run (no baseline).

The suite's other tests run the matrix of pytest.ini (fp32 at four levels); these choose their
variants themselves. A repository that gates every test at every precision sets
``ort_precisions = fp32,int8-dynamic`` instead.
"""

from __future__ import annotations

import pytest

from pytest_ortperf import variant

ENCODER = pytest.mark.ort_model(
    "models/encoder.onnx", int_range={"input_ids": (0, 512), "attention_mask": (1, 2)}
)
REDUCED = [variant(f"cpu-all-{precision}") for precision in ("fp16", "int8-dynamic", "int8-static")]


def at(*variants):
    """Run a test at these variants instead of the configured matrix."""
    return pytest.mark.parametrize("ort_variant", variants, ids=[v.id for v in variants], indirect=True)


@pytest.mark.ort_model("models/small_cnn.onnx")
@at(*REDUCED)
def test_small_cnn(ort_perf):
    ort_perf.check()  # latency, accuracy (against fp32 in this run, and the recorded outputs), graph


@ENCODER
@at(*REDUCED)
def test_encoder(ort_perf):
    ort_perf.check()


# ORT's optimization levels pay off on this CNN (NCHWc convolutions at `all`): at least 1.2x over
# running the graph as written, whatever CPU runs the suite. Only cpu-all runs; cpu-disabled is
# built for the contract.
@pytest.mark.ort_model("models/small_cnn.onnx")
@pytest.mark.ort_expect(faster_than={"cpu-disabled": 1.2})
@at(variant("cpu-all"))
def test_optimizations_pay_off(ort_perf):
    ort_perf.check_contracts()


# Static int8 must keep the class fp32 predicts.
@pytest.mark.ort_model("models/small_cnn.onnx")
@pytest.mark.ort_expect(agreement={"cpu-all": 1.0})
@at(variant("cpu-all-int8-static"))
def test_int8_predicts_the_fp32_class(ort_perf):
    ort_perf.check_contracts()


# Dynamic int8 must keep the encoder at least 80% as fast as fp32: on the benchmarks' AVX2 Zen 3 without
# VNNI it ran at about 1.06x fp32's speed at level all (benchmarks/results/precision_contracts.md).
@ENCODER
@at(variant("cpu-all-int8-dynamic"))
def test_int8_encoder_keeps_its_speed(ort_perf):
    ort_perf.check_speedup(than="cpu-all", at_least=0.8)
