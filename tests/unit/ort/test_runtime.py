"""Finding ONNX Runtime: import errors with install advice, and flavour conflicts."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

from pytest_ortperf.errors import OnnxRuntimeMissing
from pytest_ortperf.ort import runtime
from pytest_ortperf.ort.runtime import (
    ORT_DISTRIBUTIONS,
    RuntimeInfo,
    import_onnxruntime,
    installed_distributions,
    runtime_info,
)
from tests.wheels import installed


def test_import_onnxruntime_returns_the_module() -> None:
    module = import_onnxruntime()
    assert module.__name__ == "onnxruntime"
    assert callable(module.InferenceSession)


def test_missing_onnxruntime_gives_install_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(OnnxRuntimeMissing) as info:
        import_onnxruntime()
    message = str(info.value)
    assert "pytest-ortperf[gpu]" in message
    assert "pytest-ortperf[cpu]" in message
    assert "onnxruntime-gpu" in message
    assert "import error:" in message
    assert isinstance(info.value.__cause__, ImportError)


def test_runtime_info_without_onnxruntime_raises_the_same_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(OnnxRuntimeMissing, match=r"pytest-ortperf\[cpu\]"):
        runtime_info()


def _wheel() -> str:
    """The onnxruntime wheel this suite runs with (`.[gpu]` or `.[cpu]`)."""
    (name,) = [d for d in ORT_DISTRIBUTIONS if installed(d)]
    return name


def test_installed_distributions_lists_the_installed_wheel() -> None:
    found = dict(installed_distributions())
    assert found == {_wheel(): importlib.metadata.version(_wheel())}
    assert set(found) <= set(ORT_DISTRIBUTIONS)


def test_installed_distributions_skips_missing_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    versions = {"onnxruntime": "1.20.0", "onnxruntime-openvino": "1.21.0"}

    def fake_version(name: str) -> str:
        if name not in versions:
            raise importlib.metadata.PackageNotFoundError(name)
        return versions[name]

    monkeypatch.setattr(importlib.metadata, "version", fake_version)
    assert installed_distributions() == (("onnxruntime", "1.20.0"), ("onnxruntime-openvino", "1.21.0"))


def test_runtime_info_describes_this_environment() -> None:
    import onnxruntime as ort

    info = runtime_info()
    assert info.version == ort.__version__
    assert info.available_providers == tuple(ort.get_available_providers())
    assert "CPUExecutionProvider" in info.available_providers
    assert info.flavour == _wheel()
    assert info.conflict is None
    assert info.describe() == f"{_wheel()} {ort.__version__}"


def _info(*dists: tuple[str, str]) -> RuntimeInfo:
    return RuntimeInfo("1.31.1", "x", tuple(dists), ("CPUExecutionProvider",))


def test_conflict_is_none_for_one_or_no_distribution() -> None:
    assert _info(("onnxruntime-gpu", "1.31.1")).conflict is None
    assert _info().conflict is None


def test_conflict_names_both_distributions() -> None:
    info = _info(("onnxruntime", "1.30.0"), ("onnxruntime-gpu", "1.31.1"))
    conflict = info.conflict
    assert conflict is not None
    assert "onnxruntime 1.30.0 and onnxruntime-gpu 1.31.1" in conflict
    assert "Uninstall" in conflict
    assert info.describe() == f"x 1.31.1 (WARNING: {conflict})"


@pytest.mark.parametrize(
    ("dists", "flavour"),
    [
        ((), "unknown"),
        ((("onnxruntime", "1.2"),), "onnxruntime"),
        ((("onnxruntime", "1.2"), ("onnxruntime-gpu", "1.3")), "onnxruntime+onnxruntime-gpu"),
    ],
)
def test_runtime_info_flavour(
    monkeypatch: pytest.MonkeyPatch, dists: tuple[tuple[str, str], ...], flavour: str
) -> None:
    monkeypatch.setattr(runtime, "installed_distributions", lambda: dists)
    info = runtime_info()
    assert info.flavour == flavour
    assert info.distributions == dists
    assert (info.conflict is not None) == (len(dists) > 1)
