"""The package's face: public types importable from ``pytest_ortperf``, and an entry point that
costs little to import in a suite that never uses it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import pytest_ortperf
from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult
from pytest_ortperf.checks.latency_verdicts import LatencyResult
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.variants import Variant
from pytest_ortperf.plugin.ort_perf import OrtPerf


def test_the_types_a_test_sees_are_importable_from_the_package() -> None:
    from pytest_ortperf import AccuracyResult as A
    from pytest_ortperf import BuiltSession as B
    from pytest_ortperf import LatencyResult as L
    from pytest_ortperf import OrtPerf as O
    from pytest_ortperf import Variant as V

    assert (OrtPerf, Variant, BuiltSession, LatencyResult, AccuracyResult) == (O, V, B, L, A)


def test_every_public_name_resolves_and_an_unknown_one_is_an_attribute_error() -> None:
    assert set(pytest_ortperf.__all__) == {"__version__", *pytest_ortperf._PUBLIC}
    for name in pytest_ortperf.__all__:
        assert getattr(pytest_ortperf, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        _ = pytest_ortperf.NoSuchThing


def test_importing_the_entry_point_loads_neither_numpy_nor_onnx_nor_onnxruntime() -> None:
    code = (
        "import sys, pytest_ortperf.plugin; "
        "print(sorted(m for m in ('numpy', 'onnx', 'onnxruntime') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_a_suite_that_never_uses_the_plugin_loads_neither_onnx_nor_onnxruntime(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        "import sys\n\n"
        "def pytest_sessionfinish():\n"
        "    print('LOADED', sorted(m for m in ('onnx', 'onnxruntime') if m in sys.modules))\n"
    )
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ortperf: onnxruntime" in run.stdout, run.stdout  # the plugin was active: its header line
    assert "LOADED []" in run.stdout, run.stdout


def test_the_built_in_kinds_come_through_the_hook_while_options_are_read_and_load_no_numpy(
    tmp_path: Path,
) -> None:
    # The rootdir's conftest implements the hook every plugin registers its kinds with: pytest replays
    # the call for it after the plugin's own implementation, which registered the built-in kinds.
    (tmp_path / "conftest.py").write_text(
        "import sys\n\n"
        "def pytest_ortperf_register_kinds(registry):\n"
        "    names = [kind.name for kind, origin in registry.kinds if origin == 'pytest-ortperf']\n"
        "    heavy = sorted(m for m in ('numpy', 'onnx', 'onnxruntime') if m in sys.modules)\n"
        "    print('AT OPTIONS', names, heavy)\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    from pytest_ortperf.kinds import BUILTIN

    assert f"AT OPTIONS {[kind.name for kind in BUILTIN]} []" in run.stdout, run.stdout
    assert {"latency", "accuracy", "throughput"} <= {kind.name for kind in BUILTIN}
