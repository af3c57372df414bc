"""Provider probing: condensing real ORT logs, reading the child's verdict, caching probes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import onnx
import pytest

from pytest_ortperf.ort import probe
from pytest_ortperf.ort.probe import (
    PROBE_TIMEOUT_S,
    ProbeResult,
    ProviderProber,
    explain_log,
    interpret_child,
    probe_model_bytes,
)
from pytest_ortperf.ort.providers import CPU, CUDA, TENSORRT, resolve_provider

# Captured on a CPU-only machine with onnxruntime-gpu 1.31.1:
#   python -c "import onnxruntime as ort; ort.InferenceSession(SQUEEZENET, providers=[EP])"
CUDA_STDERR = "ort_cuda_missing_stderr.txt"
TRT_STDERR = "ort_tensorrt_missing_stderr.txt"
TRT_STDOUT = "ort_tensorrt_missing_stdout.txt"


def _read(data_dir: Path, name: str) -> str:
    return (data_dir / name).read_text(encoding="utf-8")


def _assert_clean(reason: str) -> None:
    assert "\x1b" not in reason  # no ANSI colour codes
    assert "/onnxruntime_src" not in reason  # no build source paths
    assert ".cc:" not in reason
    assert "site-packages" not in reason  # no install paths
    assert "https://" not in reason
    assert "\n" not in reason


# --- explain_log on real captured logs ----------------------------------------------------------


def test_captured_logs_are_real_ort_output(data_dir: Path) -> None:
    cuda = _read(data_dir, CUDA_STDERR)
    assert "\x1b[" in cuda
    assert "[E:onnxruntime:" in cuda
    assert "libonnxruntime_providers_cuda.so" in cuda
    assert "EP Error" in _read(data_dir, TRT_STDOUT)


def test_explain_log_cuda_names_the_missing_library(data_dir: Path) -> None:
    reason = explain_log(_read(data_dir, CUDA_STDERR))
    _assert_clean(reason)
    assert reason.startswith(
        "libonnxruntime_providers_cuda.so failed to load: libcublasLt.so.13: cannot open shared object file"
    )
    # the warning line is kept too, without its timestamp/prefix or URL
    assert "Failed to create CUDAExecutionProvider. Require cuDNN 9.* and CUDA 13.*" in reason
    assert not re.search(r"\d{4}-\d{2}-\d{2}", reason)  # no timestamps
    assert "W:onnxruntime" not in reason


def test_explain_log_tensorrt_names_the_missing_library(data_dir: Path) -> None:
    reason = explain_log(_read(data_dir, TRT_STDERR))
    _assert_clean(reason)
    assert reason == (
        "libonnxruntime_providers_tensorrt.so failed to load: libcublas.so.13: "
        "cannot open shared object file: No such file or directory"
    )


def test_explain_log_keeps_python_ep_error_block_without_source_location(data_dir: Path) -> None:
    reason = explain_log(_read(data_dir, TRT_STDOUT) + _read(data_dir, TRT_STDERR))
    _assert_clean(reason)
    assert "Please install TensorRT libraries" in reason
    assert "libcublas.so.13" in reason
    assert "RegisterTensorRTPluginsAsCustomOps" not in reason


def test_explain_log_drops_the_ep_error_banner(data_dir: Path) -> None:
    reason = explain_log(_read(data_dir, TRT_STDOUT))
    assert "*" not in reason
    assert reason.startswith("EP Error Please install TensorRT libraries")


def test_explain_log_dedupes_and_keeps_order(data_dir: Path) -> None:
    cuda = _read(data_dir, CUDA_STDERR)
    trt = _read(data_dir, TRT_STDERR)
    reason = explain_log(cuda + cuda + trt)
    parts = reason.split("; ")
    assert len(parts) == 3
    assert "libcublasLt.so.13" in parts[0]
    assert "Failed to create CUDAExecutionProvider" in parts[1]
    assert "libcublas.so.13" in parts[2]


def test_explain_log_ignores_unrelated_lines() -> None:
    assert explain_log("") == ""
    assert explain_log("some python output\n  \nDeprecationWarning: x\n") == ""
    info = "2026-01-01 00:00:00 [I:onnxruntime:Default, x.cc:1 f] informational\n"
    assert explain_log(info) == ""


# --- interpret_child -------------------------------------------------------------------------


def _stdout(providers: Sequence[str], error: str | None = None, stage: str = "done") -> str:
    result = {"providers": list(providers), "error": error, "stage": stage}
    return "some noise\nORTPERF_PROBE " + json.dumps(result) + "\n"


def test_interpret_child_success() -> None:
    result = interpret_child(CUDA, returncode=0, stdout=_stdout([CUDA, CPU]), stderr="")
    assert result == ProbeResult(CUDA, True, "")


def test_interpret_child_fell_back_uses_the_real_log(data_dir: Path) -> None:
    result = interpret_child(
        CUDA, returncode=0, stdout=_stdout([CPU], stage="create"), stderr=_read(data_dir, CUDA_STDERR)
    )
    assert not result.available
    assert result.provider == CUDA
    assert "libcublasLt.so.13" in result.reason
    assert result.reason.endswith("(ORT fell back to CPUExecutionProvider)")
    _assert_clean(result.reason)


def test_interpret_child_fell_back_without_log_says_so() -> None:
    result = interpret_child(CUDA, returncode=0, stdout=_stdout([]), stderr="")
    assert result.reason == "ORT gave no reason (ORT fell back to nothing)"


def test_interpret_child_error_at_creation(data_dir: Path) -> None:
    error = (
        "RuntimeError: /onnxruntime_src/onnxruntime/python/onnxruntime_pybind_state.cc:729 void "
        "onnxruntime::python::RegisterTensorRTPluginsAsCustomOps(PySessionOptions&, const "
        "onnxruntime::ProviderOptions&) Please install TensorRT libraries.\n"
    )
    result = interpret_child(
        TENSORRT,
        returncode=0,
        stdout=_stdout([], error=error, stage="create"),
        stderr=_read(data_dir, TRT_STDERR),
    )
    assert not result.available
    log_part, stage_part = result.reason.split("; ")
    assert "libcublas.so.13" in log_part
    assert stage_part == "session creation failed: RuntimeError: Please install TensorRT libraries."
    _assert_clean(result.reason)


def test_interpret_child_error_at_run_time() -> None:
    result = interpret_child(
        CUDA,
        returncode=0,
        stdout=_stdout([CUDA, CPU], error="Fail: CUDA failure 100: no CUDA-capable device", stage="run"),
        stderr="",
    )
    assert not result.available
    assert result.reason == "failed at run time: Fail: CUDA failure 100: no CUDA-capable device"


def test_interpret_child_died_from_a_signal() -> None:
    result = interpret_child(CUDA, returncode=-11, stdout="", stderr="")
    assert not result.available
    assert result.reason == "probe process died (signal 11): no output"


def test_interpret_child_died_with_exit_status_reports_last_stderr_line() -> None:
    stderr = "Traceback (most recent call last):\n  ...\nImportError: libcudart.so.13: cannot open\n"
    result = interpret_child(CUDA, returncode=1, stdout="partial", stderr=stderr)
    assert result.reason == "probe process died (exit status 1): ImportError: libcudart.so.13: cannot open"


def test_interpret_child_died_prefers_the_ort_log(data_dir: Path) -> None:
    result = interpret_child(CUDA, returncode=-6, stdout="", stderr=_read(data_dir, CUDA_STDERR))
    assert result.reason.startswith("probe process died (signal 6): libonnxruntime_providers_cuda.so")
    assert "libcublasLt.so.13" in result.reason


# --- ProviderProber with a fake runner ---------------------------------------------------------


class FakeRunner:
    def __init__(self, stdout: str = "", returncode: int = 0, raises: BaseException | None = None) -> None:
        self.calls: list[tuple[list[str], bytes]] = []
        self.stdout = stdout
        self.returncode = returncode
        self.raises = raises

    def __call__(self, args: Sequence[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
        self.calls.append((list(args), stdin))
        if self.raises is not None:
            raise self.raises
        return subprocess.CompletedProcess(list(args), self.returncode, self.stdout.encode(), b"")


AVAILABLE = (TENSORRT, CUDA, CPU)


def test_cpu_never_runs_the_runner() -> None:
    runner = FakeRunner()
    prober = ProviderProber(AVAILABLE, "onnxruntime-gpu 1.31.1", runner)
    assert prober.probe(resolve_provider("cpu", source="x")) == ProbeResult(CPU, True)
    assert runner.calls == []


def test_provider_not_built_in_needs_no_subprocess_and_names_the_runtime() -> None:
    runner = FakeRunner()
    prober = ProviderProber(AVAILABLE, "onnxruntime-gpu 1.31.1", runner)
    # DirectML: built for Windows only, and no plugin package brings it (OpenVINO's may be installed).
    result = prober.probe(resolve_provider("dml", source="x"))
    assert runner.calls == []
    assert not result.available
    assert result.provider == "DmlExecutionProvider"
    assert result.reason == (
        "not built into the installed onnxruntime-gpu 1.31.1 (it offers Tensorrt, CUDA, CPU)"
    )


def test_probe_runs_the_child_with_the_provider_chain_and_caches() -> None:
    runner = FakeRunner(stdout=_stdout([TENSORRT, CUDA, CPU]))
    prober = ProviderProber(AVAILABLE, "onnxruntime-gpu", runner)
    trt = resolve_provider("trt", source="x")
    first = prober.probe(trt)
    second = prober.probe(resolve_provider("TensorrtExecutionProvider", source="y"))
    assert first == second == ProbeResult(TENSORRT, True)
    assert len(runner.calls) == 1
    args, stdin = runner.calls[0]
    assert args[:3] == [sys.executable, "-c", probe._CHILD]
    assert json.loads(args[3]) == [TENSORRT, CUDA, CPU]
    assert stdin == probe_model_bytes()
    assert prober.results == (first,)


def test_failed_probe_is_cached_too() -> None:
    runner = FakeRunner(stdout="", returncode=-9)
    prober = ProviderProber(AVAILABLE, "onnxruntime-gpu", runner)
    cuda = resolve_provider("cuda", source="x")
    assert prober.probe(cuda).reason == "probe process died (signal 9): no output"
    prober.probe(cuda)
    assert len(runner.calls) == 1


def test_timeout_is_reported_not_raised() -> None:
    runner = FakeRunner(raises=subprocess.TimeoutExpired(["python"], PROBE_TIMEOUT_S))
    prober = ProviderProber(AVAILABLE, "onnxruntime-gpu", runner)
    result = prober.probe(resolve_provider("cuda", source="x"))
    assert result == ProbeResult(CUDA, False, f"probe did not finish within {PROBE_TIMEOUT_S:.0f} s")


def test_results_keep_probe_order() -> None:
    runner = FakeRunner(stdout=_stdout([CUDA, CPU]))
    prober = ProviderProber(AVAILABLE, "onnxruntime-gpu", runner)
    for name in ("cuda", "cpu", "dml", "cuda"):
        prober.probe(resolve_provider(name, source="x"))
    assert [r.provider for r in prober.results] == [CUDA, CPU, "DmlExecutionProvider"]


# --- the real probe model and child ----------------------------------------------------------


def test_probe_model_is_a_valid_one_node_relu() -> None:
    model = onnx.load_from_string(probe_model_bytes())
    onnx.checker.check_model(model)
    assert [n.op_type for n in model.graph.node] == ["Relu"]
    assert [i.name for i in model.graph.input] == ["x"]


def test_real_child_reports_cpu_available() -> None:
    done = probe._run_child(probe.child_args([CPU]), probe_model_bytes())
    assert done.returncode == 0, done.stderr.decode()
    result = interpret_child(
        CPU,
        returncode=done.returncode,
        stdout=done.stdout.decode(),
        stderr=done.stderr.decode(),
    )
    assert result == ProbeResult(CPU, True)
    assert '"stage": "done"' in done.stdout.decode()


def test_interpret_child_a_plugin_without_a_device_says_so_alone() -> None:
    reason = "onnxruntime-ep-openvino registered OpenVINOExecutionProvider and offers no device here"
    out = "ORTPERF_PROBE " + json.dumps(
        {"providers": [], "error": None, "stage": "create", "unusable": reason}
    )
    result = interpret_child("OpenVINOExecutionProvider", returncode=0, stdout=out, stderr="")
    assert result == ProbeResult("OpenVINOExecutionProvider", False, reason)


def test_a_plugin_provider_cannot_be_combined_with_another_accelerator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ORT takes a plugin's devices from the session options, not from ``providers``: mixing both
    would silently drop one of them."""
    import onnxruntime as ort

    from pytest_ortperf.ort import worker_program

    monkeypatch.setattr(worker_program, "_plugins", {"FooExecutionProvider": ("onnxruntime-ep-foo", "/x.so")})
    providers = ["FooExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    with pytest.raises(
        worker_program.PluginUnusable,
        match=r"^a plugin provider cannot be combined with CUDAExecutionProvider$",
    ):
        worker_program.new_session(ort, b"", ort.SessionOptions(), providers)
