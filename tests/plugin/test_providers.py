"""A provider that cannot really run is skipped with the true reason, never measured on CPU."""

from __future__ import annotations

import pytest

from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.runtime import runtime_info
from tests.plugin.conftest import CUDA_UNAVAILABLE, needs_gpu_wheel

TEST_FILE = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

def test_runs(ort_session, ort_variant):
    assert ort_session.get_providers()[0] == ort_variant.provider
"""


def _cuda_usable() -> bool:
    info = runtime_info()
    return (
        ProviderProber(info.available_providers, info.describe())
        .probe(resolve_provider("cuda", source="test"))
        .available
    )


@pytest.mark.skipif(_cuda_usable(), reason="CUDA really runs on this machine")
def test_cuda_variants_are_skipped_with_the_missing_library(pytester: pytest.Pytester, write_model) -> None:
    write_model()
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest("-rs", "-v", "--ort-providers=cpu,cuda", "--ort-opt-levels=basic,all")
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*test_runs[[]cpu-basic[]] PASSED*",
            "*test_runs[[]cuda-basic[]] SKIPPED*",
            "CUDAExecutionProvider unavailable: *",
            f"SKIPPED [[]2[]] *CUDAExecutionProvider is not usable here: {CUDA_UNAVAILABLE}",
        ]
    )
    result.stdout.no_fnmatch_line("*cuda-* PASSED*")


def test_provider_missing_from_the_wheel_is_skipped(pytester: pytest.Pytester, write_model) -> None:
    write_model()
    pytester.makepyfile(TEST_FILE)
    # DirectML: built for Windows only, so missing from every wheel these tests run with (OpenVINO is
    # in onnxruntime-openvino's, which the OpenVINO leg of .ci/run installs).
    result = pytester.runpytest("-rs", "--ort-providers=dml,cpu")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*DmlExecutionProvider is not usable here: not built into the installed onnxruntime*"]
    )


def test_skip_happens_before_the_model_is_touched(pytester: pytest.Pytester) -> None:
    """An unavailable provider skips even when the model is broken: no work is done for it."""
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("missing.onnx")
        def test_runs(ort_session): pass
        """
    )
    result = pytester.runpytest("--ort-providers=dml")
    result.assert_outcomes(skipped=1)


@needs_gpu_wheel  # the CPU wheel refuses to build a CUDA session at all: nothing falls back
def test_fallback_printed_by_onnxruntime_is_never_accepted(pytester: pytest.Pytester, write_model) -> None:
    """A provider ORT drops while building is a skip naming what it would have run on."""
    write_model()
    pytester.makeconftest(
        """
        import pytest
        from pytest_ortperf.plugin import RUN_KEY
        from pytest_ortperf.ort.probe import ProbeResult

        @pytest.hookimpl(trylast=True)
        def pytest_configure(config):
            # Pretend the probe found CUDA usable, so the session build itself must notice.
            prober = config.stash[RUN_KEY].sessions.prober
            for spec in config.stash[RUN_KEY].config.variants:
                prober._cache[spec.provider_spec] = ProbeResult(spec.provider, True)
        """
    )
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest("-rs", "--ort-providers=cuda")
    if result.parseoutcomes().get("passed"):
        pytest.skip("CUDA really runs on this machine")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*CUDAExecutionProvider is not usable here: ORT dropped it while building the session for 'model.onnx' (the session would run on CPUExecutionProvider)*"
        ]
    )
