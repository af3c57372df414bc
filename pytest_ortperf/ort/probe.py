"""Provider probing: can a requested execution provider really run here?

``get_available_providers()`` only lists what the wheel was built with: on a
CPU-only machine onnxruntime-gpu lists CUDA and TensorRT, and a session asking
for CUDA then logs an error and silently runs on CPU. A provider counts as
available only if a session created with it (Python-level fallback off)
lists it in ``get_providers()`` and completes one run. A provider that an installed plugin package
brings (``onnxruntime-ep-openvino``...) is probed the same way, registered first; one that offers
no device here is unavailable with that reason.

The probe runs in a child process: ORT reports load failures only in its C++
log on stderr, and a broken provider library can abort the process that loads
it. Results are cached per process.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_ortperf.ort import worker_program
from pytest_ortperf.ort.providers import ProviderSpec

PROBE_TIMEOUT_S = 180.0  # first TensorRT/CUDA initialisation can be slow

# The child builds its session as the run does (worker_program.new_session, loaded by file path: a
# provider from a plugin package is added for the devices it offers).
_CHILD = r"""
import importlib.util, json, sys
import onnxruntime as ort
import numpy as np
providers = json.loads(sys.argv[1])
found = importlib.util.spec_from_file_location("ortperf_worker_program", sys.argv[2])
program = importlib.util.module_from_spec(found)
found.loader.exec_module(program)
model = sys.stdin.buffer.read()
result = {"providers": [], "error": None, "stage": "create"}
try:
    sess = program.new_session(ort, model, None, providers)
    result["providers"] = sess.get_providers()
    if providers[0] in result["providers"]:
        result["stage"] = "run"
        sess.run(None, {"x": np.ones((1, 4), dtype=np.float32)})
        result["stage"] = "done"
except program.PluginUnusable as exc:
    result["unusable"] = str(exc)
except Exception as exc:
    result["error"] = f"{type(exc).__name__}: {exc}"
sys.stdout.write("ORTPERF_PROBE " + json.dumps(result) + "\n")
"""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LOG_LINE = re.compile(r"\[([EWF]):onnxruntime:[^\]]*\]\s*(.*)")
_LOAD_ERROR = re.compile(r"Failed to load library (\S+) with error: (.+)")
# "/onnxruntime_src/x.cc:729 void ns::Func(Args&) " source locations in ORT messages
_SOURCE_LOCATION = re.compile(r"/\S+\.(?:cc|cpp|h):\d+\s+(?:[\w:<>,&*~ ]+\([^)]*\)\s*)?")
_URL = re.compile(r"\s*\(?https?://[^\s)]+\)?")


def _tidy(text: str) -> str:
    return " ".join(_URL.sub("", _SOURCE_LOCATION.sub("", text)).split())


@dataclass(frozen=True)
class ProbeResult:
    """Whether ``provider`` can run here, and if not, the true reason."""

    provider: str
    available: bool
    reason: str = ""


def probe_model_bytes() -> bytes:
    """A one-node float model (Relu) that every provider supports."""
    from onnx import TensorProto, helper

    node = helper.make_node("Relu", ["x"], ["y"], name="probe_relu")
    graph = helper.make_graph(
        [node],
        "ortperf_probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return bytes(model.SerializeToString())


def explain_log(stderr: str) -> str:
    """Condense ORT's stderr log into the reason a provider did not load.

    Library load failures are reduced to ``libX.so: <loader error>`` and other
    error/warning lines kept once each, in order.
    """
    reasons: list[str] = []
    for raw in _ANSI.sub("", stderr).splitlines():
        match = _LOG_LINE.search(raw)
        text = (match.group(2) if match else raw).strip()
        if not text or (match is None and "EP Error" not in text) or text.strip("* ") == "EP Error":
            continue
        load = _LOAD_ERROR.search(text)
        if load:
            library = load.group(1).rsplit("/", 1)[-1]
            text = f"{library} failed to load: {load.group(2).strip()}"
        else:
            text = _tidy(text)
        if text not in reasons:
            reasons.append(text)
    return "; ".join(reasons)


def interpret_child(provider: str, *, returncode: int, stdout: str, stderr: str) -> ProbeResult:
    """Turn the child's output into a :class:`ProbeResult` (pure; unit-tested)."""
    log_reason = explain_log(stderr)
    line = next((ln for ln in stdout.splitlines() if ln.startswith("ORTPERF_PROBE ")), None)
    if line is None:
        how = f"signal {-returncode}" if returncode < 0 else f"exit status {returncode}"
        last_lines = stderr.strip().splitlines()
        detail = log_reason or (_tidy(last_lines[-1]) if last_lines else "no output")
        return ProbeResult(provider, False, f"probe process died ({how}): {detail}")
    result = json.loads(line[len("ORTPERF_PROBE ") :])
    if result.get("unusable"):  # a plugin provider that cannot run here says why itself
        return ProbeResult(provider, False, str(result["unusable"]))
    if result.get("error"):
        stage = "failed at run time" if result.get("stage") == "run" else "session creation failed"
        reason = f"{stage}: {_tidy(result['error'])}"
        return ProbeResult(provider, False, f"{log_reason}; {reason}" if log_reason else reason)
    if provider not in result.get("providers", []):
        used = ", ".join(result.get("providers", [])) or "nothing"
        why = log_reason or "ORT gave no reason"
        return ProbeResult(provider, False, f"{why} (ORT fell back to {used})")
    return ProbeResult(provider, True)


def child_args(providers: Sequence[str]) -> list[str]:
    """The probe child's command line for ``providers`` (its model comes on stdin)."""
    return [sys.executable, "-c", _CHILD, json.dumps(list(providers)), str(worker_program.__file__)]


Runner = Callable[[Sequence[str], bytes], "subprocess.CompletedProcess[bytes]"]


def _run_child(args: Sequence[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(list(args), input=stdin, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)


class ProviderProber:
    """Probes providers once per process and remembers the answers."""

    def __init__(self, available_providers: Sequence[str], runtime: str, runner: Runner = _run_child) -> None:
        self._available = tuple(available_providers)
        self._runtime = runtime
        self._runner = runner
        self._cache: dict[ProviderSpec, ProbeResult] = {}

    def probe(self, spec: ProviderSpec) -> ProbeResult:
        if spec not in self._cache:
            self._cache[spec] = self._probe(spec)
        return self._cache[spec]

    @property
    def results(self) -> tuple[ProbeResult, ...]:
        return tuple(self._cache.values())

    def _probe(self, spec: ProviderSpec) -> ProbeResult:
        if spec.is_cpu:
            return ProbeResult(spec.name, True)
        if spec.name not in self._available and spec.name not in worker_program.plugin_providers():
            offers = ", ".join(p.removesuffix("ExecutionProvider") for p in self._available)
            return ProbeResult(
                spec.name, False, f"not built into the installed {self._runtime} (it offers {offers})"
            )
        try:
            done = self._runner(child_args(spec.providers), probe_model_bytes())
        except subprocess.TimeoutExpired:
            return ProbeResult(spec.name, False, f"probe did not finish within {PROBE_TIMEOUT_S:.0f} s")
        return interpret_child(
            spec.name,
            returncode=done.returncode,
            stdout=done.stdout.decode("utf-8", "replace"),
            stderr=done.stderr.decode("utf-8", "replace"),
        )
