"""The model builders of ``tests/models.py`` that the benchmarks' workload families use: each builds a
real model that onnxruntime runs, with the operators its family is about."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest

from pytest_ortperf.ort.runtime import import_onnxruntime
from tests.models import int8_mlp_model, lstm_model, mlp_model, resnet50_model


def _ops(model: onnx.ModelProto) -> collections.Counter[str]:
    return collections.Counter(node.op_type for node in model.graph.node)


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    ort = import_onnxruntime()
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_int8_mlp_is_dynamic_quantized_by_onnxruntime_and_runs() -> None:
    model = int8_mlp_model(layers=3, width=16)
    onnx.checker.check_model(model)
    ops = _ops(model)
    assert ops["MatMulInteger"] == 3
    assert ops["DynamicQuantizeLinear"] == 3
    assert ops["MatMul"] == 0  # every fp32 MatMul was quantized
    weights = {init.name: init for init in model.graph.initializer}
    assert any(w.data_type == onnx.TensorProto.INT8 for w in weights.values())

    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    (y,) = _run(model, {"x": x})
    (reference,) = _run(mlp_model(3, 16), {"x": x})
    assert y.shape == (4, 16)
    # int8 weights and activations: close to the float model, not equal to it
    assert np.abs(y - reference).max() < 0.05 * max(1.0, float(np.abs(reference).max()))


def test_int8_mlp_is_deterministic_and_grows_by_layers() -> None:
    assert int8_mlp_model(2, 16).SerializeToString() == int8_mlp_model(2, 16).SerializeToString()
    assert int8_mlp_model(2, 16, seed=1).SerializeToString() != int8_mlp_model(2, 16).SerializeToString()
    assert _ops(int8_mlp_model(4, 16))["MatMulInteger"] == 4


def test_int8_mlp_leaves_no_advice_on_the_root_logger(caplog: pytest.LogCaptureFixture) -> None:
    int8_mlp_model(1, 8)
    assert not [r for r in caplog.records if "pre-processing" in r.getMessage()]


def test_lstm_runs_the_steps_asked_for_over_one_input() -> None:
    short, long = (lstm_model(steps, hidden=8, layers=2, input_steps=6) for steps in (4, 6))
    for model in (short, long):
        onnx.checker.check_model(model, full_check=True)
        assert _ops(model)["LSTM"] == 2
        assert [d.dim_param or d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [
            6,
            "batch",
            8,
        ]
    x = np.random.default_rng(2).standard_normal((6, 3, 8)).astype(np.float32)
    (y_short,), (y_long,) = _run(short, {"x": x}), _run(long, {"x": x})
    assert y_short.shape == y_long.shape == (1, 3, 8)
    assert not np.allclose(y_short, y_long)  # two more steps: another final state
    # the same steps, run on just those steps: the Slice takes the first `steps` of the input
    (y_alone,) = _run(lstm_model(4, hidden=8, layers=2), {"x": x[:4]})
    np.testing.assert_allclose(y_short, y_alone, rtol=1e-5, atol=1e-6)


def test_lstm_refuses_more_steps_than_its_input_has() -> None:
    with pytest.raises(ValueError, match=r"steps must be in 1\.\.4"):
        lstm_model(5, input_steps=4)


def test_resnet50_has_its_layers_and_runs_finite_at_every_level() -> None:
    model = resnet50_model(width=4, image=32, classes=10)
    onnx.checker.check_model(model, full_check=True)
    ops = _ops(model)
    # stem + 16 bottlenecks of 3 convolutions + 4 projections on the stages' first shortcuts
    assert ops["Conv"] == ops["BatchNormalization"] == 1 + 16 * 3 + 4
    assert ops["Add"] == 16
    assert ops["MaxPool"] == ops["GlobalAveragePool"] == ops["Gemm"] == 1
    assert _ops(resnet50_model(width=4, blocks=(4, 4, 7, 3), image=32))["Add"] == 18

    ort = import_onnxruntime()
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    outputs = []
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        (y,) = session.run(None, {"x": x})
        assert y.shape == (1, 10)
        assert np.isfinite(y).all()
        assert np.abs(y).max() > 0
        outputs.append(y)
    # BatchNormalization folded into the convolutions at `all`: the same numbers, to float rounding
    np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-3, atol=1e-4)


def test_resnet50_is_deterministic_by_seed() -> None:
    small = {"width": 4, "image": 32, "classes": 10}
    assert resnet50_model(**small).SerializeToString() == resnet50_model(**small).SerializeToString()
    assert resnet50_model(**small, seed=1).SerializeToString() != resnet50_model(**small).SerializeToString()
