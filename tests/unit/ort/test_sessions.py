"""What a built session is really given: provider options, pinned settings, fallback off.

The settings tests elsewhere check parsing; these check that the parsed values
reach ``InferenceSession`` (a real one where the value can be read back from it,
a recording stand-in where only the call can show it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort

from pytest_ortperf.ort.models import ModelResolver, ModelSource
from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.providers import CPU, CUDA, TENSORRT, resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings, parse_assignments
from pytest_ortperf.ort.sessions import BuiltSession, SessionPool, provider_arguments
from pytest_ortperf.ort.variants import OptLevel, Variant
from tests.models import mlp_model

# The per-EP examples docs/reference.md gives, written as a user writes them in the ini file.
PROVIDER_OPTION_LINES = (
    "cuda:cudnn_conv_algo_search = DEFAULT",
    "trt:trt_fp16_enable = 1",
    "tensorrt:trt_engine_cache_path = /tmp/trt-cache",
)
# What ORT must be given for a TensorRT variant: each EP in the chain with its own options.
TENSORRT_ARGUMENTS = [
    (TENSORRT, {"trt_engine_cache_path": "/tmp/trt-cache", "trt_fp16_enable": "1"}),
    (CUDA, {"cudnn_conv_algo_search": "DEFAULT"}),
    (CPU, {}),
]


def _settings(lines: Sequence[str]) -> SessionSettings:
    return SessionSettings().with_overrides(parse_assignments(lines, source="test"), source="test")


def _variant(provider: str, level: OptLevel = OptLevel.ALL) -> Variant:
    return Variant(resolve_provider(provider, source="test"), level)


def _model() -> ModelSource:
    return ModelResolver(Path.cwd()).resolve(mlp_model(layers=2, width=8), test_dir=Path.cwd(), origin="test")


def test_provider_arguments_give_each_provider_in_the_chain_its_own_options() -> None:
    settings = _settings(PROVIDER_OPTION_LINES)
    assert provider_arguments(_variant("tensorrt"), settings) == TENSORRT_ARGUMENTS
    assert provider_arguments(_variant("cuda"), settings) == [
        (CUDA, {"cudnn_conv_algo_search": "DEFAULT"}),
        (CPU, {}),
    ]
    assert provider_arguments(_variant("cpu"), settings) == [(CPU, {})]


def test_non_default_settings_reach_the_real_session() -> None:
    settings = _settings(
        [
            "intra_op_threads = 2",
            "inter_op_threads = 2",
            "execution_mode = parallel",
            "cpu_mem_arena = 0",
            "mem_pattern = 0",
            "denormal_as_zero = 1",
            "intra_op_thread_affinities = 1",
        ]
    )
    pool = SessionPool(ort, ProviderProber(ort.get_available_providers(), "onnxruntime"))
    built = pool.get(_model(), _variant("cpu"), settings)

    options = built.session.get_session_options()
    assert options.enable_cpu_mem_arena is False
    assert options.enable_mem_pattern is False
    assert options.execution_mode == ort.ExecutionMode.ORT_PARALLEL
    assert options.get_session_config_entry("session.set_denormal_as_zero") == "1"
    assert options.get_session_config_entry("session.intra_op_thread_affinities") == "1"
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (2, 2)
    (output,) = built.session.run(None, {"x": np.ones((3, 8), dtype=np.float32)})
    assert output.shape == (3, 8)


def test_a_fresh_session_is_another_real_session_with_the_same_settings_never_cached() -> None:
    pool = SessionPool(ort, ProviderProber(ort.get_available_providers(), "onnxruntime"))
    built = pool.get(_model(), _variant("cpu"), _settings(["intra_op_threads = 1"]))
    fresh = pool.fresh(built)
    assert fresh.session is not built.session
    assert (fresh.model, fresh.variant, fresh.settings) == (built.model, built.variant, built.settings)
    assert pool.get(built.model, built.variant, built.settings) is built, "the pool keeps the first"
    assert pool.builds == 2
    feeds = {"x": np.ones((3, 8), dtype=np.float32)}
    np.testing.assert_array_equal(fresh.session.run(None, feeds)[0], built.session.run(None, feeds)[0])


class _AllAvailable:
    """A probe runner whose child reports that every provider in the chain works."""

    def __call__(self, args: Sequence[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
        line = json.dumps({"providers": json.loads(args[3]), "error": None, "stage": "done"})
        return subprocess.CompletedProcess(list(args), 0, f"ORTPERF_PROBE {line}\n".encode(), b"")


def _recording_ort() -> types.SimpleNamespace:
    """The real ``onnxruntime`` options API with an ``InferenceSession`` that only records its calls."""
    calls: list[dict[str, Any]] = []

    class RecordingSession:
        def __init__(self, model: Any, options: Any = None, **kwargs: Any) -> None:
            calls.append({"options": options, **kwargs})
            self._providers = [name for name, _ in kwargs["providers"]]

        def get_providers(self) -> list[str]:
            return self._providers

    return types.SimpleNamespace(
        __version__=ort.__version__,
        SessionOptions=ort.SessionOptions,
        GraphOptimizationLevel=ort.GraphOptimizationLevel,
        ExecutionMode=ort.ExecutionMode,
        InferenceSession=RecordingSession,
        calls=calls,
    )


def test_both_session_builds_pass_provider_options_and_turn_fallback_off(tmp_path: Path) -> None:
    recording_ort = _recording_ort()
    prober = ProviderProber((TENSORRT, CUDA, CPU), "onnxruntime-gpu", _AllAvailable())
    pool = SessionPool(recording_ort, prober)  # type: ignore[arg-type]
    built = pool.get(_model(), _variant("tensorrt"), _settings(PROVIDER_OPTION_LINES))
    assert isinstance(built, BuiltSession)
    pool.build_profiling(built, str(tmp_path / "profile"))

    build, profiling = recording_ort.calls
    for call in (build, profiling):
        assert call["providers"] == TENSORRT_ARGUMENTS
        assert call.get("enable_fallback") == 0
    assert profiling["options"].enable_profiling is True
    assert build["options"].enable_profiling is False


_FAKE_ORT = """
import json, os

class InferenceSession:
    def __init__(self, model, sess_options=None, providers=None, **kwargs):
        with open(os.environ["ORTPERF_FAKE_ORT_RECORD"], "w") as record:
            json.dump({"providers": providers, "kwargs": kwargs, "model_bytes": len(model)}, record)
        self._providers = list(providers)

    def get_providers(self):
        return self._providers

    def run(self, output_names, feeds):
        return [feeds["x"]]
"""


def test_probe_child_creates_its_session_with_fallback_off(tmp_path: Path) -> None:
    fake = tmp_path / "fake" / "onnxruntime"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(textwrap.dedent(_FAKE_ORT))
    record = tmp_path / "record.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(fake.parent), os.environ.get("PYTHONPATH", "")]),
        "ORTPERF_FAKE_ORT_RECORD": str(record),
    }

    def runner(args: Sequence[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
        assert args[0] == sys.executable
        return subprocess.run(list(args), input=stdin, capture_output=True, env=env, timeout=60, check=False)

    result = ProviderProber((CUDA, CPU), "onnxruntime-gpu", runner).probe(
        resolve_provider("cuda", source="x")
    )

    assert result.available, result.reason
    recorded = json.loads(record.read_text())
    assert recorded["providers"] == [CUDA, CPU]
    assert recorded["kwargs"] == {"enable_fallback": 0}
    assert recorded["model_bytes"] > 0
