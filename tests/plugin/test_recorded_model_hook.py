"""``pytest_ortperf_recorded_model``: a team's own store of recorded models (here a folder standing in
for a registry, keyed by sha256) answers the hook from a conftest, and a changed model that neither git
nor the model cache keeps is measured side by side against what it gives; a store that keeps the model
but cannot give it says why, and the check that falls back to this hardware's stored figures says so."""

from __future__ import annotations

import json

import onnx
import pytest

from tests.models import conv_stack_model

SUITE = """
import pytest
pytestmark = pytest.mark.ort_model("conv.onnx")

def test_latency(ort_perf):
    ort_perf.check_latency()
"""
CONFTEST = """
from pathlib import Path

from pytest_ortperf.ort.model_stores import StoredModel

def pytest_ortperf_recorded_model(recipe, config):
    kept = Path(config.rootpath) / "registry" / f"{recipe.sha256}.onnx"
    if (Path(config.rootpath) / "registry-down").exists():
        return StoredModel("the recorded model (registry)", None, "the registry did not answer: ask ops")
    if kept.is_file():
        return StoredModel(f"the recorded model (registry {recipe.sha256[:12]})", kept.read_bytes())
    return None
"""
QUICK = ("--ortperf-budget=0.3", "--ortperf-ab-budget=1", "--ortperf-report=report.json")


def _recorded(pytester: pytest.Pytester) -> str:
    """The suite recorded with 3 conv layers (no git here), the model kept in the team's registry;
    then the file grown to 4 layers. The recorded sha256."""
    onnx.save(conv_stack_model(layers=3, channels=16, size=32), pytester.path / "conv.onnx")
    pytester.makepyfile(test_conv=SUITE)
    pytester.makeconftest(CONFTEST)
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    (entry,) = json.loads((pytester.path / "baselines" / "test_conv.py.json").read_text())["entries"].values()
    sha256 = str(entry["recipe"]["model_sha256"])
    (pytester.path / "registry").mkdir()
    (pytester.path / "registry" / f"{sha256}.onnx").write_bytes((pytester.path / "conv.onnx").read_bytes())
    onnx.save(conv_stack_model(layers=4, channels=16, size=32), pytester.path / "conv.onnx")
    return sha256


def _latency(pytester: pytest.Pytester) -> dict:
    (check,) = json.loads((pytester.path / "report.json").read_text())["checks"]
    return check


def test_a_teams_store_gives_the_recorded_model_and_the_check_goes_side_by_side(
    pytester: pytest.Pytester,
) -> None:
    sha256 = _recorded(pytester)
    result = pytester.runpytest(*QUICK)
    result.assert_outcomes(failed=1)
    check = _latency(pytester)
    assert check["verdict"] == "regression"
    assert check["path"] == f"side by side vs the recorded model (registry {sha256[:12]})"


def test_a_store_that_cannot_give_it_says_why(pytester: pytest.Pytester) -> None:
    _recorded(pytester)
    (pytester.path / "registry-down").touch()
    pytester.runpytest(*QUICK)  # the stored figures' verdict (short ones here: it may be inconclusive)
    check = _latency(pytester)
    assert check["path"] == "stored figures"  # this hardware's recorded figures decide, saying why
    assert "the registry did not answer: ask ops" in check["stored_reason"]
