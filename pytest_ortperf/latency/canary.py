"""A machine-speed canary: a small fixed ONNX workload that shows how fast this machine is right now.

Built in code (no file to ship or lose), always the same bytes and inputs,
run on the CPU provider with the same thread settings as the checks.
``benchmarks/machine_states.py`` measures it interleaved with real models to
decide whether latency relative to the canary is steadier than absolute
latency on a shared machine (``benchmarks/README.md``, "The machine-speed
canary", has the answer on ours).

Its bytes are written here as protobuf, field by field (:func:`canary_bytes`), not through the
``onnx`` package: ``import onnx`` alone took 1.4 s a process on a 2-core Zen 3 (most of it
ml_dtypes' extension), which every check that looks at the canary would pay.
``tests/unit/latency/test_canary.py`` holds them equal to what ``onnx.helper`` serializes.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import session_options
from pytest_ortperf.ort.variants import OptLevel, Variant

LAYERS = 4
WIDTH = 512
BATCH = 16
_FLOAT = 1  # TensorProto.FLOAT
_IR_VERSION = 8
_OPSET = 17


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int_field(number: int, value: int) -> bytes:
    """A varint protobuf field (wire type 0)."""
    return _varint(number << 3) + _varint(value)


def _node(op_type: str, inputs: list[str], outputs: list[str]) -> bytes:
    # NodeProto: input = 1, output = 2, op_type = 4
    return (
        b"".join(_field(1, name.encode()) for name in inputs)
        + b"".join(_field(2, name.encode()) for name in outputs)
        + _field(4, op_type.encode())
    )


def _tensor(name: str, array: np.ndarray) -> bytes:
    # TensorProto: dims = 1, data_type = 2, name = 8, raw_data = 9 (little-endian float32)
    dims = b"".join(_int_field(1, size) for size in array.shape)
    raw = np.ascontiguousarray(array, dtype="<f4").tobytes()
    return dims + _int_field(2, _FLOAT) + _field(8, name.encode()) + _field(9, raw)


def _value_info(name: str, shape: tuple[int, ...]) -> bytes:
    # ValueInfoProto: name = 1, type = 2; TypeProto: tensor_type = 1; Tensor: elem_type = 1, shape = 2;
    # TensorShapeProto: dim = 1; Dimension: dim_value = 1
    dims = b"".join(_field(1, _int_field(1, size)) for size in shape)
    tensor = _int_field(1, _FLOAT) + _field(2, dims)
    return _field(1, name.encode()) + _field(2, _field(1, tensor))


def canary_bytes() -> bytes:
    """``x[16, 512] -> (MatMul + Relu) x 4``, fixed weights: the same serialized model on every
    machine (ir_version 8, opset 17)."""
    rng = np.random.default_rng(20261122)
    nodes, inits, current = [], [], "x"
    for i in range(LAYERS):
        weight = (rng.standard_normal((WIDTH, WIDTH)) * 0.05).astype(np.float32)
        inits.append(_tensor(f"w{i}", weight))
        nodes.append(_node("MatMul", [current, f"w{i}"], [f"m{i}"]))
        nodes.append(_node("Relu", [f"m{i}"], [f"h{i}"]))
        current = f"h{i}"
    # GraphProto: node = 1, name = 2, initializer = 5, input = 11, output = 12
    graph = (
        b"".join(_field(1, node) for node in nodes)
        + _field(2, b"ortperf_canary")
        + b"".join(_field(5, init) for init in inits)
        + _field(11, _value_info("x", (BATCH, WIDTH)))
        + _field(12, _value_info(current, (BATCH, WIDTH)))
    )
    # ModelProto: ir_version = 1, graph = 7, opset_import = 8 (OperatorSetIdProto: domain = 1, version = 2)
    return _int_field(1, _IR_VERSION) + _field(7, graph) + _field(8, _field(1, b"") + _int_field(2, _OPSET))


@dataclass(frozen=True)
class Canary:
    session: Any
    feeds: dict[str, np.ndarray]

    @classmethod
    def build(cls, ort: ModuleType, cpu_variant: Variant, settings: SessionSettings) -> Canary:
        variant = Variant(cpu_variant.provider_spec, OptLevel.ALL)
        session = ort.InferenceSession(
            canary_bytes(),
            session_options(ort, variant, settings),
            providers=["CPUExecutionProvider"],
        )
        feeds = {"x": np.random.default_rng(1).standard_normal((BATCH, WIDTH)).astype(np.float32)}
        return cls(session, feeds)

    def run(self) -> object:
        return self.session.run(None, self.feeds)
