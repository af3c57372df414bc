"""Precision variants built with onnxruntime's own tools (ort/precision.py), and the tensors that lost
the most (ort/quant_debug.py): real small models, real onnxruntime."""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import onnxruntime.quantization
import pytest
from onnx import TensorProto, helper, numpy_helper

from pytest_ortperf.errors import ModelError, UsageError
from pytest_ortperf.ort.inputs import InputOptions, specs_from_session, synthesize
from pytest_ortperf.ort.models import ModelResolver, ModelSource
from pytest_ortperf.ort.precision import (
    Calibration,
    PrecisionModel,
    build_precision,
    recipe_of,
    synthetic_calibration,
)
from pytest_ortperf.ort.quant_debug import worst_tensors
from pytest_ortperf.ort.variants import Precision
from tests.models import mlp_model

ORT_VERSION = ort.__version__
OPTIONS = InputOptions(dims={"batch": 4})
BUILT = (Precision.FP16, Precision.INT8_DYNAMIC, Precision.INT8_STATIC)


def conv_classifier(classes: int = 12, *, seed: int = 0) -> onnx.ModelProto:
    """``x[batch, 3, 16, 16]`` -> Conv, Relu, Conv, GlobalAveragePool, Flatten, Gemm -> ``logits[batch, classes]``."""
    rng = np.random.default_rng(seed)

    def weight(name: str, *shape: int, fan_in: int) -> onnx.TensorProto:
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * (2 / fan_in) ** 0.5).astype(np.float32), name
        )

    inits = [
        weight("w1", 8, 3, 3, 3, fan_in=27),
        numpy_helper.from_array(np.full(8, 0.1, np.float32), "b1"),
        weight("w2", 16, 8, 3, 3, fan_in=72),
        numpy_helper.from_array(np.zeros(16, np.float32), "b2"),
        weight("fc_w", classes, 16, fan_in=16),
        numpy_helper.from_array(np.zeros(classes, np.float32), "fc_b"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["conv1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv1"], ["relu1"], name="relu1"),
        helper.make_node("Conv", ["relu1", "w2", "b2"], ["conv2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["conv2"], ["pooled"], name="pool"),
        helper.make_node("Flatten", ["pooled"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "conv_classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", classes])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def run(model: ModelSource, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.ort_input, options, providers=["CPUExecutionProvider"])
    return list(session.run(None, dict(feeds)))


def specs_of(model: ModelSource) -> Any:
    return specs_from_session(ort.InferenceSession(model.ort_input, providers=["CPUExecutionProvider"]))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    x, y = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def op_types(model: ModelSource) -> set[str]:
    assert model.path is not None
    return {node.op_type for node in onnx.load(str(model.path)).graph.node}


def scaled(calibration: Calibration, factor: float, source: str) -> Calibration:
    feeds = tuple(
        {name: array * np.float32(factor) for name, array in feed.items()} for feed in calibration.feeds
    )
    return Calibration(feeds, source, synthetic=True)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("precision")


@pytest.fixture(scope="module")
def models(workdir: Path) -> dict[str, ModelSource]:
    """The conv net from a file (it has a git blob id), the MLP as bytes."""
    onnx.save(conv_classifier(), workdir / "conv.onnx")
    resolver = ModelResolver(workdir)
    return {
        "conv": resolver.resolve("conv.onnx", test_dir=workdir, origin="test"),
        "mlp": resolver.resolve(
            mlp_model(layers=3, width=32).SerializeToString(), test_dir=workdir, origin="test"
        ),
    }


@pytest.fixture(scope="module")
def calibrations(models: dict[str, ModelSource]) -> dict[str, Calibration]:
    return {name: synthetic_calibration(specs_of(model), OPTIONS) for name, model in models.items()}


@pytest.fixture(scope="module")
def cache(workdir: Path) -> Path:
    return workdir / "cache"


@pytest.fixture(scope="module")
def built(
    models: dict[str, ModelSource], calibrations: dict[str, Calibration], cache: Path
) -> dict[tuple[str, Precision], PrecisionModel]:
    return {
        (name, precision): build_precision(
            model, precision, cache_dir=cache, ort_version=ORT_VERSION, calibration=calibrations[name]
        )
        for name, model in models.items()
        for precision in BUILT
    }


@pytest.mark.parametrize("name", ["conv", "mlp"])
@pytest.mark.parametrize("precision", BUILT, ids=lambda p: p.value)
def test_each_precision_runs_on_the_cpu_like_fp32(
    models: dict[str, ModelSource],
    built: dict[tuple[str, Precision], PrecisionModel],
    name: str,
    precision: Precision,
) -> None:
    model, result = models[name], built[name, precision]
    feeds = synthesize(specs_of(model), OPTIONS)
    expected, actual = run(model, feeds), run(result.model, feeds)
    assert [(a.shape, a.dtype) for a in actual] == [(e.shape, e.dtype) for e in expected]
    assert all(cosine(a, e) > 0.9 for a, e in zip(actual, expected, strict=True))
    assert not all(np.array_equal(a, e) for a, e in zip(actual, expected, strict=True))
    made_of = op_types(result.model)
    if precision is Precision.FP16:
        assert result.recipe["options"] == {"keep_io_types": True}
        assert "Cast" in made_of  # fp32 inputs and outputs kept: cast at the edges
    elif precision is Precision.INT8_DYNAMIC:
        assert "DynamicQuantizeLinear" in made_of
        assert result.recipe["options"]["weight_type"] == "QUInt8"
    else:
        assert {"QuantizeLinear", "DequantizeLinear"} <= made_of
        assert result.recipe["options"]["quant_format"] == "QDQ"
        assert result.recipe["options"]["pre_process"] == "done"


def test_fp32_is_the_model_itself(models: dict[str, ModelSource], cache: Path) -> None:
    result = build_precision(
        models["conv"], Precision.FP32, cache_dir=cache / "unused", ort_version=ORT_VERSION
    )
    assert result.model is models["conv"]
    assert result.cached
    assert dict(result.recipe) == {"precision": "fp32"}
    assert not (cache / "unused").exists()


@pytest.mark.parametrize("name", ["conv", "mlp"])
def test_the_built_source_keeps_the_git_blob_and_carries_the_recipe(
    models: dict[str, ModelSource], built: dict[tuple[str, Precision], PrecisionModel], cache: Path, name: str
) -> None:
    model, result = models[name], built[name, Precision.INT8_STATIC]
    source = result.model
    assert model.git_blob
    assert source.git_blob == model.git_blob
    assert source.label == f"{model.label} (int8-static)"
    assert source.path is not None
    assert source.path.parent == cache
    assert source.data is None
    assert source.sha256 != model.sha256
    assert source.sha256 == ModelResolver(cache).resolve(source.path, test_dir=cache, origin="t").sha256
    assert {source: "a dict key"}[source] == "a dict key"
    assert recipe_of(source) == dict(result.recipe)
    assert json.loads(source.path.with_suffix(".json").read_text(encoding="utf-8")) == dict(result.recipe)
    recipe = result.recipe
    assert recipe["precision"] == "int8-static"
    assert recipe["method"] == "quantize_static"
    assert recipe["source_sha256"] == model.sha256
    assert recipe["ort_version"] == ORT_VERSION
    assert recipe["calibration"] == {
        "source": "synthetic (seeds 1..8)",
        "sha256": recipe["calibration"]["sha256"],
        "synthetic": True,
        "sets": 8,
    }
    assert recipe_of(model) == {}


def test_a_second_build_comes_from_the_cache(
    models: dict[str, ModelSource],
    calibrations: dict[str, Calibration],
    built: dict[tuple[str, Precision], PrecisionModel],
    cache: Path,
) -> None:
    files = sorted(cache.iterdir())
    assert len(files) == 2 * len(built)  # a model and its recipe each, no scratch left
    for (name, precision), first in built.items():
        assert not first.cached
        again = build_precision(
            models[name], precision, cache_dir=cache, ort_version=ORT_VERSION, calibration=calibrations[name]
        )
        assert again.cached
        assert again.model == first.model
        assert dict(again.recipe) == dict(first.recipe)
    assert sorted(cache.iterdir()) == files


def test_other_calibration_data_or_onnxruntime_builds_another_model(
    models: dict[str, ModelSource],
    calibrations: dict[str, Calibration],
    built: dict[tuple[str, Precision], PrecisionModel],
    cache: Path,
) -> None:
    model, first = models["mlp"], built["mlp", Precision.INT8_STATIC]
    other_data = build_precision(
        model,
        Precision.INT8_STATIC,
        cache_dir=cache,
        ort_version=ORT_VERSION,
        calibration=scaled(calibrations["mlp"], 2.0, "doubled"),
    )
    other_ort = build_precision(
        model, Precision.INT8_STATIC, cache_dir=cache, ort_version="0.0.0", calibration=calibrations["mlp"]
    )
    assert not other_data.cached
    assert not other_ort.cached
    paths = {first.model.path, other_data.model.path, other_ort.model.path}
    assert len(paths) == 3
    assert other_data.recipe["calibration"]["source"] == "doubled"
    assert other_ort.recipe["ort_version"] == "0.0.0"
    # The dynamic model takes no calibration data: the same file whatever is passed.
    dynamic = build_precision(
        model,
        Precision.INT8_DYNAMIC,
        cache_dir=cache,
        ort_version=ORT_VERSION,
        calibration=scaled(calibrations["mlp"], 2.0, "doubled"),
    )
    assert dynamic.cached
    assert dynamic.model == built["mlp", Precision.INT8_DYNAMIC].model
    for path in (other_data.model.path, other_ort.model.path):
        assert path is not None
        path.unlink()
        path.with_suffix(".json").unlink()


def test_a_damaged_recipe_is_built_again(models: dict[str, ModelSource], tmp_path: Path) -> None:
    first = build_precision(models["mlp"], Precision.FP16, cache_dir=tmp_path, ort_version=ORT_VERSION)
    assert first.model.path is not None
    first.model.path.with_suffix(".json").write_text("{not json", encoding="utf-8")
    again = build_precision(models["mlp"], Precision.FP16, cache_dir=tmp_path, ort_version=ORT_VERSION)
    assert not again.cached
    assert dict(again.recipe) == dict(first.recipe)
    assert build_precision(models["mlp"], Precision.FP16, cache_dir=tmp_path, ort_version=ORT_VERSION).cached


def test_int8_static_without_calibration_is_a_usage_error(
    models: dict[str, ModelSource], tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match=r"^'conv.onnx': the int8-static model is calibrated on input sets"):
        build_precision(models["conv"], Precision.INT8_STATIC, cache_dir=tmp_path, ort_version=ORT_VERSION)
    assert list(tmp_path.iterdir()) == []


def _undefined_input_model() -> bytes:
    """Parses as ONNX, but a MatMul reads a tensor that nothing makes."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "nowhere"], ["y"])],
        "broken",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return bytes(model.SerializeToString())


@pytest.mark.parametrize(
    ("data", "precision", "method", "error"),
    [
        (b"not a model", Precision.FP16, "convert_float_to_float16", "DecodeError"),
        (b"not a model", Precision.INT8_DYNAMIC, "quantize_dynamic", "ValidationError"),
        (b"not a model", Precision.INT8_STATIC, "quantize_static", "ValidationError"),
        (_undefined_input_model(), Precision.INT8_DYNAMIC, "quantize_dynamic", "RuntimeError"),
        (_undefined_input_model(), Precision.INT8_STATIC, "quantize_static", "InvalidArgument"),
    ],
    ids=["garbage-fp16", "garbage-dynamic", "garbage-static", "undefined-dynamic", "undefined-static"],
)
def test_a_tool_failure_is_a_model_error_and_leaves_nothing(
    workdir: Path, tmp_path: Path, data: bytes, precision: Precision, method: str, error: str
) -> None:
    model = ModelResolver(workdir).resolve(data, test_dir=workdir, origin="test")
    calibration = Calibration(({"x": np.ones((1, 4), np.float32)},), "ones", synthetic=False)
    with pytest.raises(ModelError) as raised:
        build_precision(
            model, precision, cache_dir=tmp_path, ort_version=ORT_VERSION, calibration=calibration
        )
    message = str(raised.value)
    assert message.startswith(
        f"'{model.label}': {method} cannot build the {precision.value} model ({error}: "
    )
    assert "\n" not in message
    assert list(tmp_path.iterdir()) == []  # no model, no recipe, no scratch directory


def test_a_model_with_external_data_is_refused(workdir: Path, tmp_path: Path) -> None:
    proto = mlp_model(layers=1, width=64)
    onnx.save(proto, tmp_path / "external.onnx", save_as_external_data=True, size_threshold=0)
    model = ModelResolver(tmp_path).resolve("external.onnx", test_dir=tmp_path, origin="test")
    with pytest.raises(
        ModelError, match=r"^'external.onnx': building the fp16 model needs a model without external data"
    ):
        build_precision(model, Precision.FP16, cache_dir=tmp_path / "cache", ort_version=ORT_VERSION)


def test_the_tools_are_silent(
    models: dict[str, ModelSource],
    calibrations: dict[str, Calibration],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """quantize_dynamic and quantize_static log advice on the root logger, every call."""
    caplog.set_level(logging.DEBUG)
    for precision in BUILT:
        build_precision(
            models["mlp"],
            precision,
            cache_dir=tmp_path,
            ort_version=ORT_VERSION,
            calibration=calibrations["mlp"],
        )
    assert [record.getMessage() for record in caplog.records if "onnxruntime" in record.pathname] == []
    assert capsys.readouterr().out == ""
    logging.getLogger().warning("still logging")
    assert caplog.records[-1].getMessage() == "still logging"  # the filters went away after the build


def _fake_pre_process(failing: str) -> Any:
    real = onnxruntime.quantization.quant_pre_process

    def pre_process(source: Path, destination: Path, **options: Any) -> None:
        if failing == "always" or (failing == "symbolic" and not options.get("skip_symbolic_shape")):
            raise RuntimeError("Incomplete symbolic shape inference")
        if failing == "output":
            Path(destination).write_bytes(b"not a model")
            return
        real(source, destination, **options)

    return pre_process


@pytest.mark.parametrize(
    ("failing", "recorded"),
    [
        (
            "symbolic",
            "done without symbolic shape inference (RuntimeError: Incomplete symbolic shape inference)",
        ),
        ("always", "failed: RuntimeError: Incomplete symbolic shape inference"),
        ("output", "failed: quantize_static failed on its output (ValidationError: Unable to parse proto"),
    ],
)
def test_pre_processing_is_best_effort_and_recorded(
    models: dict[str, ModelSource],
    calibrations: dict[str, Calibration],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failing: str,
    recorded: str,
) -> None:
    monkeypatch.setattr(onnxruntime.quantization, "quant_pre_process", _fake_pre_process(failing))
    result = build_precision(
        models["mlp"],
        Precision.INT8_STATIC,
        cache_dir=tmp_path,
        ort_version=ORT_VERSION,
        calibration=calibrations["mlp"],
    )
    assert result.recipe["options"]["pre_process"].startswith(recorded)
    assert {"QuantizeLinear", "DequantizeLinear"} <= op_types(result.model)


def test_the_calibration_digest_is_stable_and_follows_the_data() -> None:
    rng = np.random.default_rng(0)
    sets = tuple({"x": rng.standard_normal((2, 3)).astype(np.float32), "ids": np.arange(6)} for _ in range(2))
    digest = Calibration(sets, "a", synthetic=False).digest
    copies = tuple({name: array.copy() for name, array in reversed(feed.items())} for feed in sets)
    assert Calibration(copies, "another source", synthetic=True).digest == digest
    assert len(digest) == 64
    assert int(digest, 16) >= 0

    def changed(**arrays: np.ndarray) -> str:
        return Calibration(({**sets[0], **arrays}, sets[1]), "a", synthetic=False).digest

    assert changed(x=sets[0]["x"] + np.float32(1e-6)) != digest
    assert changed(x=sets[0]["x"].astype(np.float64)) != digest
    assert changed(x=sets[0]["x"].reshape(3, 2)) != digest
    assert changed(ids=np.arange(6, dtype=np.int32)) != digest
    assert Calibration((sets[1], sets[0]), "a", synthetic=False).digest != digest
    assert Calibration(sets[:1], "a", synthetic=False).digest != digest


def test_synthetic_calibration_is_seeded(models: dict[str, ModelSource]) -> None:
    model = models["conv"]
    session = ort.InferenceSession(model.ort_input, providers=["CPUExecutionProvider"])
    first = synthetic_calibration(session, OPTIONS, sets=3)
    again = synthetic_calibration(specs_from_session(session), OPTIONS, sets=3)
    assert (first.source, first.synthetic, len(first.feeds)) == ("synthetic (seeds 1..3)", True, 3)
    assert first.digest == again.digest
    # the checks' own feed (seed 0) is not among them: set i is the feed of seed 1 + i
    test_feed = synthesize(specs_from_session(session), OPTIONS)["x"]
    assert not any(np.array_equal(feeds["x"], test_feed) for feeds in first.feeds)
    one = synthesize(specs_from_session(session), InputOptions(seed=1, dims={"batch": 4}))["x"]
    assert np.array_equal(first.feeds[0]["x"], one)
    assert first.feeds[2]["x"].shape == (4, 3, 16, 16)
    assert not np.array_equal(first.feeds[0]["x"], first.feeds[1]["x"])
    seeded = synthetic_calibration(session, InputOptions(seed=1, dims={"batch": 4}), sets=2)
    assert np.array_equal(seeded.feeds[0]["x"], first.feeds[1]["x"])
    assert seeded.source == "synthetic (seeds 2..3)"
    with pytest.raises(UsageError, match="at least one input set"):
        synthetic_calibration(session, OPTIONS, sets=0)


def _graph_tensors(model: ModelSource) -> set[str]:
    proto = onnx.load(str(model.path)) if model.path else onnx.load_from_string(model.data or b"")
    return {name for node in proto.graph.node for name in node.output} | {i.name for i in proto.graph.input}


def test_worst_tensors_names_where_a_badly_calibrated_model_lost(
    models: dict[str, ModelSource],
    calibrations: dict[str, Calibration],
    built: dict[tuple[str, Precision], PrecisionModel],
    cache: Path,
) -> None:
    model = models["conv"]
    bad = build_precision(
        model,
        Precision.INT8_STATIC,
        cache_dir=cache,
        ort_version=ORT_VERSION,
        calibration=scaled(calibrations["conv"], 0.01, "inputs / 100"),
    )
    feeds = synthesize(specs_of(model), OPTIONS)
    worst = worst_tensors(model, bad.model, feeds)
    assert len(worst) == 3
    assert [loss.sqnr_db for loss in worst] == sorted(loss.sqnr_db for loss in worst)
    assert {loss.name for loss in worst} <= _graph_tensors(model)
    assert any(loss.name not in ("x", "logits") for loss in worst)  # an intermediate tensor
    assert worst[0].sqnr_db < 10
    good = worst_tensors(model, built["conv", Precision.INT8_STATIC].model, feeds, limit=100)
    assert len(good) > 3
    assert [loss.sqnr_db for loss in good] == sorted(loss.sqnr_db for loss in good)
    assert good[0].sqnr_db > worst[0].sqnr_db + 10
    assert bad.model.path is not None
    bad.model.path.unlink()
    bad.model.path.with_suffix(".json").unlink()


@pytest.mark.parametrize("precision", [Precision.FP16, Precision.INT8_DYNAMIC], ids=lambda p: p.value)
@pytest.mark.parametrize("name", ["conv", "mlp"])
def test_worst_tensors_without_qdq_pairs_compares_the_shared_names(
    models: dict[str, ModelSource],
    built: dict[tuple[str, Precision], PrecisionModel],
    name: str,
    precision: Precision,
) -> None:
    model, quantized = models[name], built[name, precision].model
    feeds = synthesize(specs_of(model), OPTIONS)
    losses = worst_tensors(model, quantized, feeds, limit=100)
    names = [loss.name for loss in losses]
    assert set(names) <= _graph_tensors(model) & _graph_tensors(quantized)
    assert len(names) >= 2
    values = [loss.sqnr_db for loss in losses]
    assert values == sorted(values)
    assert 0 < values[0] < 200
    assert worst_tensors(model, quantized, feeds, limit=1) == losses[:1]


def test_worst_tensors_of_an_identical_model_are_lossless(models: dict[str, ModelSource]) -> None:
    model = models["mlp"]
    losses = worst_tensors(model, model, synthesize(specs_of(model), OPTIONS))
    assert losses
    assert all(loss.sqnr_db == float("inf") for loss in losses)


def test_worst_tensors_says_why_it_cannot_and_leaves_no_files(
    models: dict[str, ModelSource],
    built: dict[tuple[str, Precision], PrecisionModel],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    model, quantized = models["conv"], built["conv", Precision.INT8_STATIC].model
    feeds = {"not_an_input": np.zeros((1, 3, 16, 16), np.float32)}
    with pytest.raises(
        ModelError,
        match=r"^'conv.onnx \(int8-static\)': its tensors cannot be compared with the float model's \(\w+: ",
    ):
        worst_tensors(model, quantized, feeds)
    assert list(tmp_path.iterdir()) == []
    worst_tensors(model, quantized, synthesize(specs_of(model), OPTIONS))
    assert list(tmp_path.iterdir()) == []


ENCODER = Path(__file__).parents[2] / "examples" / "models" / "encoder.onnx"


def test_the_tools_leave_no_file_in_the_working_directory(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Symbolic shape inference gives up on the encoder example, and then saves its partial model
    (sym_shape_infer_temp.onnx and a <uuid>.data) into the current directory."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    model = ModelResolver(workdir).resolve(ENCODER, test_dir=workdir, origin="test")
    options = InputOptions(
        dims={"batch": 1, "sequence": 8}, int_ranges={"input_ids": (0, 512), "attention_mask": (1, 2)}
    )
    calibration = synthetic_calibration(specs_of(model), options, sets=2)
    result = build_precision(
        model,
        Precision.INT8_STATIC,
        cache_dir=Path("cache"),
        ort_version=ORT_VERSION,
        calibration=calibration,
    )
    assert result.recipe["options"]["pre_process"] == (
        "done without symbolic shape inference (Exception: Incomplete symbolic shape inference)"
    )
    assert sorted(path.name for path in cwd.iterdir()) == ["cache"]
    assert result.model.path is not None
    assert result.model.path.parent.resolve() == (cwd / "cache").resolve()
    losses = worst_tensors(model, result.model, synthesize(specs_of(model), options))
    assert len(losses) == 3
    assert sorted(path.name for path in cwd.iterdir()) == ["cache"]
    assert len(list((cwd / "cache").iterdir())) == 2
