"""A hung run is terminated and fails its test only; provider faults are never silently absorbed."""

from __future__ import annotations

import onnx
import pytest

from tests.models import mlp_model


def test_a_run_past_the_limit_is_terminated_and_only_its_test_fails(pytester: pytest.Pytester) -> None:
    # ~100+ ms per run (48 layers of 512-wide MatMul at batch 1024) against a 20 ms limit: terminated.
    onnx.save(mlp_model(layers=48, width=512), pytester.path / "slow.onnx")
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "fast.onnx")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.ort_model("slow.onnx", dims={"batch": 1024})
        def test_slow(ort_perf):
            ort_perf.check_accuracy()

        @pytest.mark.ort_model("fast.onnx")
        def test_fast(ort_perf):
            ort_perf.check_latency()
        """
    )
    result = pytester.runpytest(
        "--ortperf-run-timeout=0.02", "--ortperf-missing=pass", "--ortperf-budget=0.05",
        "--ortperf-reference-variant=none",
    )  # fmt: skip
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        ["*session.run took longer than 0.02 s and was terminated (--ortperf-run-timeout)*"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_python_level_provider_fallback_is_disabled_for_runs(pytester: pytest.Pytester) -> None:
    """ORT's InferenceSession retries a failed run on CPU unless fallback is off: it must be off."""
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.ort_model("model.onnx")
        def test_no_fallback(ort_session):
            assert ort_session._enable_fallback is False
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_bad_timeout_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--ortperf-run-timeout=never")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ortperf-run-timeout: expected a number of seconds above 0*"])


def test_a_run_time_failure_fails_its_check_clearly(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "model.onnx")
    pytester.makepyfile(
        """
        import numpy as np
        import pytest

        @pytest.mark.ort_model("model.onnx")
        def test_wrong_feeds(ort_perf):
            ort_perf.check_accuracy({"x": np.ones((2, 8), dtype=np.float64)})

        @pytest.mark.ort_model("model.onnx")
        def test_fine(ort_perf):
            ort_perf.check_accuracy()
        """
    )
    result = pytester.runpytest("--ortperf-missing=pass")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*session.run failed on CPUExecutionProvider (no fallback to another provider is attempted): *InvalidArgument*"
        ]
    )


def test_profiled_runs_are_under_the_run_timeout_too(pytester: pytest.Pytester) -> None:
    """A marked test's ort_session runs (and its check's profiled runs) are terminated past the limit."""
    onnx.save(mlp_model(layers=48, width=512), pytester.path / "slow.onnx")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.ort_model("slow.onnx", dims={"batch": 1024})
        @pytest.mark.ort_profile
        def test_slow_profiled(ort_session, ort_inputs):
            ort_session.run(None, ort_inputs)

        @pytest.mark.ort_model("slow.onnx", dims={"batch": 2})
        @pytest.mark.ort_profile
        def test_bad_feeds_profiled(ort_session, ort_inputs):
            ort_session.run(None, {"x": ort_inputs["x"][:, :3]})
        """
    )
    result = pytester.runpytest("--ortperf-run-timeout=0.02")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*RunTimeout: session.run took longer than 0.02 s and was terminated (--ortperf-run-timeout)*",
            "*RunFailed: session.run failed on CPUExecutionProvider*",
        ],
        consecutive=False,
    )
