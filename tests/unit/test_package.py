"""The package's face: public types importable from ``pytest_ortperf``, and an entry point that
costs little to import in a suite that never uses it."""

from __future__ import annotations

import subprocess
import sys

import pytest

import pytest_ortperf
from pytest_ortperf.checks.accuracy import AccuracyResult
from pytest_ortperf.checks.latency import LatencyResult
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
