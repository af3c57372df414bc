"""Child process of the model fuzz tests: builds ORT sessions from untrusted model files.

A model that crashes ONNX Runtime (a segfault or an abort) must not take the test
process with it, so sessions are built here, through the plugin's real
``ModelResolver`` and ``SessionPool``, and the parent watches this process die.

Protocol, one JSON object per line. Request on stdin::

    {"file": "/tmp/.../model.onnx", "by_path": true, "level": "all", "run": true}

Answer on stdout::

    {"build": "ok" | "<exception type>", "message": "...", "label": "...", "run": "ok" | "<type>" | null}

The first line written is ``{"ready": true}``. The address space is capped at
``argv[1]`` bytes, so a model that asks for a huge tensor fails instead of
exhausting the machine.
"""

from __future__ import annotations

import json
import math
import resource
import sys
from pathlib import Path
from typing import Any

import onnxruntime

from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.ort.inputs import InputOptions, resolve_shape, specs_from_session, synthesize
from pytest_ortperf.ort.models import ModelResolver, ModelSource
from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import SessionPool
from pytest_ortperf.ort.variants import Variant, parse_opt_level

MAX_FEED_ELEMENTS = 1_000_000


def run_once(session: Any) -> str:
    """One run on synthetic feeds, as a test using ort_session and ort_inputs does."""
    try:
        specs = specs_from_session(session)
        # every dim sized, 1 where nothing sizes it, as a user's shapes= would: a mutated model's
        # dims are what is fuzzed, not the error for an unsized one
        shapes = {
            spec.name: tuple(size or 1 for size in resolve_shape(spec, InputOptions())) for spec in specs
        }
        if sum(math.prod(shape) for shape in shapes.values()) > MAX_FEED_ELEMENTS:
            return "skipped: inputs too large"
        feeds = synthesize(specs, InputOptions(shapes=shapes))
    except OrtperfError as exc:
        return f"inputs: {type(exc).__name__}"
    try:
        session.run(None, dict(feeds))
    except Exception as exc:  # a failing run is the user's test failing: allowed; only a crash is not
        return type(exc).__name__
    return "ok"


def main() -> None:
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    protocol = sys.stdout
    sys.stdout = sys.stderr  # nothing else may write to the protocol stream
    onnxruntime.set_default_logger_severity(3)
    prober = ProviderProber(onnxruntime.get_available_providers(), "x")
    cpu = resolve_provider("cpu", source="fuzz")

    def answer(data: dict[str, Any]) -> None:
        protocol.write(json.dumps(data) + "\n")
        protocol.flush()

    answer({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        path = Path(request["file"])
        variant = Variant(cpu, parse_opt_level(request.get("level", "all"), source="fuzz"))
        spec: Path | bytes = path if request["by_path"] else path.read_bytes()
        result: dict[str, Any] = {"build": "ok", "message": "", "label": "", "run": None}
        try:
            model: ModelSource = ModelResolver(path.parent).resolve(spec, test_dir=path.parent, origin="fuzz")
            result["label"] = model.label
            built = SessionPool(onnxruntime, prober).get(model, variant, SessionSettings())
        except Exception as exc:  # the parent decides which types are allowed
            result.update(build=type(exc).__name__, message=str(exc))
            answer(result)
            continue
        if request.get("run"):
            result["run"] = run_once(built.session)
        answer(result)


if __name__ == "__main__":
    main()
