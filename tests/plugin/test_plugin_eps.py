"""A provider from a plugin package (onnxruntime >= 1.23 loads execution providers from libraries of
their own): installed, it is usable by its name, without code; one that offers no device here is a
skip with that reason, never a CPU measurement.

Tested with the real onnxruntime-ep-openvino (``.ci/run``'s OpenVINO leg installs it beside the
onnxruntime CPU wheel, in ``.venvep``): it offers a device on Intel CPUs and none on others, so a
machine runs one of the two tests below and skips the other, saying why.
"""

from __future__ import annotations

import os

import onnx
import pytest

from pytest_ortperf.ort import worker_program
from pytest_ortperf.ort.runtime import import_onnxruntime
from tests.models import mlp_model
from tests.wheels import installed

OPENVINO = "OpenVINOExecutionProvider"
PACKAGE = "onnxruntime-ep-openvino"


def _devices() -> tuple[str, str]:
    """(why the package cannot be tried here, why it offers no device): '' where it does."""
    if not installed(PACKAGE):
        return f"needs {PACKAGE} installed (.ci/run's OpenVINO leg: .venvep)", ""
    ort = import_onnxruntime()
    if not worker_program.is_plugin(ort, OPENVINO):
        return f"{OPENVINO} is built into this onnxruntime ({ort.__version__}): the plugin is not used", ""
    try:
        worker_program._plugin_devices(ort, OPENVINO)
    except worker_program.PluginUnusable as exc:
        return "", str(exc)
    return "", ""


NOT_INSTALLED, NO_DEVICE = _devices()
if NOT_INSTALLED and os.environ.get("ORTPERF_TEST_REQUIRE_PLUGIN_EP"):  # the CI leg made for these tests
    raise RuntimeError(f"ORTPERF_TEST_REQUIRE_PLUGIN_EP is set, and this run {NOT_INSTALLED}")
pytestmark = pytest.mark.skipif(bool(NOT_INSTALLED), reason=NOT_INSTALLED)

# OpenVINO's CPU plugin infers in bf16 where the CPU has AMX unless told otherwise (measured with
# onnxruntime-ep-openvino 1.8.1 on an Intel Xeon with AMX: max abs difference 2e-3 from the CPU
# provider; its `precision=FP32` option did not change that); the built-in EP of onnxruntime-openvino
# 1.24.1 infers in f32.
F32 = '{"CPU": {"INFERENCE_PRECISION_HINT": "f32"}}'


@pytest.mark.skipif(bool(NO_DEVICE), reason=f"{PACKAGE} offers no device here: {NO_DEVICE}")
def test_an_installed_plugin_provider_runs_by_its_name(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(3, 32), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_plugin=f"""
        import pytest

        @pytest.mark.ort_model("model.onnx", dims={{"batch": 4}})
        @pytest.mark.ort_settings(provider_options={{"openvino": {{"load_config": {F32!r}}}}})
        def test_runs(ort_perf, ort_session, ort_session_info, ort_variant):
            assert ort_session.get_providers()[0] == ort_variant.provider
            assert ort_session_info.placement.nodes_not_on(ort_variant.provider) == ()
            ort_perf.check_accuracy()
            ort_perf.check_startup()
        """
    )
    result = pytester.runpytest(
        "--ort-providers=cpu,openvino", "--ortperf-missing=pass", "-p", "no:benchmark"
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_runs*openvino-all*startup*missing*create * ms*"])


@pytest.mark.skipif(not NO_DEVICE, reason=f"{PACKAGE} offers a device here (an Intel CPU)")
def test_a_plugin_that_offers_no_device_is_a_skip_with_the_reason(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(2, 16), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_plugin="""
        import pytest

        @pytest.mark.ort_model("model.onnx")
        def test_runs(ort_session):
            pass
        """
    )
    result = pytester.runpytest("-rs", "--ort-providers=cpu,openvino")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [f"*{OPENVINO} is not usable here: {PACKAGE} registered {OPENVINO} and offers no device here*"]
    )
