"""Shared fixtures for the unit tests: tiny real ONNX models and the real SqueezeNet."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from tests.models import SQUEEZENET

Dim = int | str | None
InputDecl = tuple[str, int, Sequence[Dim]]
ModelFactory = Callable[[Sequence[InputDecl]], onnx.ModelProto]


def _identity_model(inputs: Sequence[InputDecl]) -> onnx.ModelProto:
    """One Identity node per input, declared as ``(name, TensorProto elem type, shape)``."""
    nodes = [helper.make_node("Identity", [n], [f"{n}_out"]) for n, _, _ in inputs]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info(n, t, list(s)) for n, t, s in inputs],
        [helper.make_tensor_value_info(f"{n}_out", t, list(s)) for n, t, s in inputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.fixture
def make_model() -> ModelFactory:
    """Factory for tiny Identity models that onnxruntime loads in milliseconds."""
    return _identity_model


@pytest.fixture
def float_model() -> onnx.ModelProto:
    return _identity_model([("x", TensorProto.FLOAT, [1, 4])])


@pytest.fixture(scope="session")
def squeezenet_path() -> Path:
    """The real (small) SqueezeNet CNN shipped with onnx's backend test data."""
    assert SQUEEZENET.is_file(), f"onnx no longer ships {SQUEEZENET}"
    return SQUEEZENET


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """Captured sample data (real ORT logs) checked in beside the tests."""
    return Path(__file__).parent / "data"


@pytest.fixture
def gc_state() -> Iterator[None]:
    """Put the collector back the way it was, whatever a test did to it."""
    was_enabled = gc.isenabled()
    yield
    if was_enabled:
        gc.enable()
    else:
        gc.disable()
