"""Fixtures for plugin tests: small real models written into the pytester directory."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from pytest_ortperf.store.hardware import Hardware
from tests.models import mlp_model
from tests.wheels import GPU_WHEEL

# The suite runs with either wheel (`.[gpu]` or `.[cpu]`). The GPU wheel lists CUDA and, on a machine
# without its libraries, cannot load it; the CPU wheel does not list it at all. Tests of what a skip
# says expect the reason of the wheel installed.
CUDA_UNAVAILABLE = "*.so* failed to load*" if GPU_WHEEL else "not built into the installed onnxruntime*"
needs_gpu_wheel = pytest.mark.skipif(
    not GPU_WHEEL, reason="needs the onnxruntime-gpu wheel, whose provider list names CUDA"
)


@pytest.fixture(autouse=True)
def _inner_runs_are_not_xdist_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``pytest -n``, this process is an xdist worker and its environment says so; pytester's
    runs would inherit that and take themselves for workers (pytest-benchmark then disables itself).
    Inner runs are top-level runs of their own, whether or not the outer one is distributed."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def write_model(pytester: pytest.Pytester):
    """Write ``mlp_model(**kwargs)`` to ``pytester.path / name`` and return the path."""

    def write(name: str = "model.onnx", **kwargs: int) -> Path:
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save(mlp_model(**kwargs), path)
        return path

    return write


@pytest.fixture
def count_builds(pytester: pytest.Pytester) -> None:
    """A conftest in the pytester dir that prints one line per session build."""
    pytester.makeconftest(
        """
        def pytest_ortperf_session_built(built):
            print(f"BUILT {built.model.label} {built.variant.id} threads={built.settings.intra_op_threads}")
        """
    )


# One latency check on an 8-layer MLP: the test file of the latency-gate and canary tests.
LATENCY_MODEL = {"layers": 8, "width": 128}
LATENCY_TEST_FILE = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 16})

def test_latency(ort_perf):
    ort_perf.check_latency()
"""


def reexport(pytester: pytest.Pytester) -> None:
    """The latency suite's model saved again with other weights: the same work, other bytes, so a check
    compares it with the stored figures instead of finding nothing changed."""
    onnx.save(mlp_model(**LATENCY_MODEL, seed=7), pytester.path / "model.onnx")


@pytest.fixture
def latency_suite(pytester: pytest.Pytester) -> Path:
    """``test_gate.py`` (:data:`LATENCY_TEST_FILE`) beside its model; returns its baseline file's path."""
    onnx.save(mlp_model(**LATENCY_MODEL), pytester.path / "model.onnx")
    pytester.makepyfile(test_gate=LATENCY_TEST_FILE)
    return pytester.path / "baselines" / "test_gate.py.json"


@pytest.fixture
def isolated_git(monkeypatch: pytest.MonkeyPatch, pytester: pytest.Pytester) -> None:
    """Git that reads no user or system config and never finds a repository above pytester's dir."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(pytester.path.parent / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(pytester.path.parent))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        monkeypatch.delenv(name, raising=False)


def git(pytester: pytest.Pytester, *args: str) -> str:
    """Run git in pytester's directory; its output, stripped."""
    done = subprocess.run(["git", *args], cwd=pytester.path, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit_model(pytester: pytest.Pytester, model: onnx.ModelProto | None = None, **kwargs: int) -> str:
    """A repository in pytester's directory whose HEAD holds model.onnx = ``model`` (default
    ``mlp_model(**kwargs)``); the model's git blob id."""
    git(pytester, "init", "-q")
    git(pytester, "config", "user.name", "Test")
    git(pytester, "config", "user.email", "test@example.com")
    git(pytester, "config", "commit.gpgsign", "false")
    onnx.save(model if model is not None else mlp_model(**kwargs), pytester.path / "model.onnx")
    git(pytester, "add", "model.onnx")
    git(pytester, "commit", "-q", "-m", "model")
    return git(pytester, "rev-parse", "HEAD:model.onnx")


def other_generation(here: dict[str, Any]) -> dict[str, Any]:
    """A hardware identity of another CPU generation than ``here``, with as many cores and other
    instruction-set features (so another graph hardware class too): an AVX2 Zen 3, or, on a machine
    with the same features (any AVX2-only x86 CPU: these machines change generation between sessions),
    an AVX-512 Zen 4."""
    candidates = (
        {"cpu": "25/1/1", "generation": "zen3", "features": ["avx", "avx2", "fma", "f16c"]},
        {"cpu": "25/17/0", "generation": "zen4", "features": ["avx", "avx2", "avx512f", "fma", "f16c"]},
    )
    mine = Hardware.from_dict(here)
    for candidate in candidates:
        other = {"arch": "x86_64", "vendor": "AuthenticAMD", "gpu": "", "cores": here["cores"], **candidate}
        other["digest"] = Hardware.from_dict(other).digest
        theirs = Hardware.from_dict(other)
        if theirs.slug != mine.slug and set(theirs.features) != set(mine.features):
            return other
    raise AssertionError(f"no other CPU generation than {here}")  # pragma: no cover


def move_figures_to_other_hardware(
    baseline_file: Path,
    test: str,
    key: str,
    *,
    edit: Callable[[dict[str, Any]], object] = lambda figures: None,
) -> str:
    """The figures ``test`` recorded under machine key ``key`` moved to the same runner class on another
    CPU generation (:func:`other_generation`), after ``edit`` changed them in place; that key."""
    document = json.loads(baseline_file.read_text())
    figures = document["entries"][test]["figures"]
    moved = figures.pop(key)
    here = moved["measured_on"]["hardware"]
    other = other_generation(here)
    moved["measured_on"]["hardware"] = other
    edit(moved)
    other_key = f"{key.partition('@')[0]}@{Hardware.from_dict(other).slug}"
    figures[other_key] = moved
    baseline_file.write_text(json.dumps(document))
    return other_key


def file_inputs(
    pytester: pytest.Pytester, shape: tuple[int, ...], *, seed: int = 0, name: str = "model"
) -> None:
    """``<name>.npz`` beside the model, input ``x`` of ``shape``: inputs read from a file, which a
    recipe does not keep (synthetic ones it can make again), so a change of them leaves no reference
    to rebuild."""
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    np.savez(pytester.path / f"{name}.npz", x=data)
