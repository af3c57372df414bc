"""ORT's transformer optimizer as a pre-pass: options, the content cache, and what it refuses."""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path
from typing import Any

import onnx
import pytest

from pytest_ortperf.errors import ModelError, UsageError
from pytest_ortperf.ort.models import ModelResolver
from pytest_ortperf.ort.transformers import parse_options, prepare
from tests.models import mlp_model

ENCODER = Path(__file__).resolve().parents[3] / "examples" / "models" / "encoder.onnx"
BERT = parse_options({"model_type": "bert", "num_heads": 4, "hidden_size": 64}, source="m")


def test_options_are_sorted_pairs_and_bad_ones_are_usage_errors() -> None:
    assert BERT == (("hidden_size", 64), ("model_type", "bert"), ("num_heads", 4))
    for bad in ({}, {"num_heads": 4}, {"model_type": 3}, {"model_type": "bert", "num_heads": -1},
                {"model_type": "bert", "hidden_size": True}, ["bert"]):  # fmt: skip
        with pytest.raises(UsageError, match=r"^m: transformers="):
            parse_options(bad, source="m")


def test_the_prepared_model_is_cached_by_content_and_keeps_its_source_blob(tmp_path: Path) -> None:
    model = ModelResolver(tmp_path).resolve(ENCODER, test_dir=tmp_path, origin="test")
    first = prepare(model, BERT, cache_dir=tmp_path / "cache", ort_version="1.31.1")
    assert not first.cached
    assert first.fused["Attention"] == 2
    assert first.model.path is not None
    assert first.model.path.parent == tmp_path / "cache"
    assert first.model.sha256 == hashlib.sha256(first.model.path.read_bytes()).hexdigest()
    assert first.model.git_blob == model.git_blob  # where git keeps the model it was made from
    assert first.model.transformers == BERT
    assert first.model.label.endswith("(transformer optimizer: bert)")
    again = prepare(model, BERT, cache_dir=tmp_path / "cache", ort_version="1.31.1")
    assert again.cached
    assert (again.model.sha256, again.fused) == (first.model.sha256, first.fused)
    other_runtime = prepare(model, BERT, cache_dir=tmp_path / "cache", ort_version="1.32.0")
    assert not other_runtime.cached  # the optimizer's output belongs to its onnxruntime


def test_a_model_with_external_data_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.onnx"
    onnx.save(mlp_model(2, 64), path, save_as_external_data=True, size_threshold=0, location="big.data")
    model = ModelResolver(tmp_path).resolve(path, test_dir=tmp_path, origin="test")
    with pytest.raises(ModelError, match="needs a model without external data files"):
        prepare(model, BERT, cache_dir=tmp_path / "cache", ort_version="x")


def test_without_sympy_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.import_module

    def no_sympy(name: str, *args: Any) -> Any:
        if name == "sympy":
            raise ModuleNotFoundError("No module named 'sympy'", name="sympy")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_sympy)
    model = ModelResolver(tmp_path).resolve(ENCODER, test_dir=tmp_path, origin="test")
    with pytest.raises(UsageError, match=r"needs sympy: pip install 'pytest-ortperf\[transformers\]'"):
        prepare(model, BERT, cache_dir=tmp_path / "cache", ort_version="x")
    assert not list((tmp_path / "cache").glob("*.onnx"))  # nothing half-made is cached


def test_a_model_the_optimizer_cannot_take_is_a_model_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "not_bert.onnx"
    path.write_bytes(b"not a model at all")
    model = ModelResolver(tmp_path).resolve(path, test_dir=tmp_path, origin="test")
    with pytest.raises(ModelError, match=r"^'.*not_bert.onnx': ONNX Runtime's transformer optimizer failed"):
        prepare(model, BERT, cache_dir=tmp_path / "cache", ort_version="x")
