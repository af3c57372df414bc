"""A machine-speed canary: a small fixed ONNX workload that shows how fast this machine is right now.

Built in code (no file to ship or lose), always the same bytes and inputs,
run on the CPU provider with the same thread settings as the checks.
``benchmarks/machine_states.py`` measures it interleaved with real models to
decide whether latency relative to the canary is steadier than absolute
latency on a shared machine (``benchmarks/README.md``, "The machine-speed
canary", has the answer on ours).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import session_options
from pytest_ortperf.ort.variants import OptLevel, Variant

LAYERS = 4
WIDTH = 512
BATCH = 16


def canary_model() -> onnx.ModelProto:
    """``x[16, 512] -> (MatMul + Relu) x 4``, fixed weights: the same bytes on every machine."""
    rng = np.random.default_rng(20261122)
    nodes, inits, current = [], [], "x"
    for i in range(LAYERS):
        weight = (rng.standard_normal((WIDTH, WIDTH)) * 0.05).astype(np.float32)
        inits.append(numpy_helper.from_array(weight, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"h{i}"]))
        current = f"h{i}"
    graph = helper.make_graph(
        nodes,
        "ortperf_canary",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, WIDTH])],
        [helper.make_tensor_value_info(current, TensorProto.FLOAT, [BATCH, WIDTH])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@dataclass(frozen=True)
class Canary:
    session: Any
    feeds: dict[str, np.ndarray]

    @classmethod
    def build(cls, ort: ModuleType, cpu_variant: Variant, settings: SessionSettings) -> Canary:
        variant = Variant(cpu_variant.provider_spec, OptLevel.ALL)
        session = ort.InferenceSession(
            canary_model().SerializeToString(),
            session_options(ort, variant, settings),
            providers=["CPUExecutionProvider"],
        )
        feeds = {"x": np.random.default_rng(1).standard_normal((BATCH, WIDTH)).astype(np.float32)}
        return cls(session, feeds)

    def run(self) -> object:
        return self.session.run(None, self.feeds)
