"""The console script, and a clear message when onnxruntime is missing."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from pytest_ortperf import __version__


def _ortperf(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("ortperf", path=str(__import__("pathlib").Path(sys.executable).parent))
    command = [exe] if exe else [sys.executable, "-m", "pytest_ortperf.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120, check=False)


def test_version_names_plugin_and_runtime() -> None:
    done = _ortperf("--version")
    assert done.returncode == 0
    assert done.stdout.startswith(f"pytest-ortperf {__version__} (onnxruntime")


def test_help_lists_commands() -> None:
    done = _ortperf("--help")
    assert done.returncode == 0
    assert "usage: ortperf" in done.stdout
    assert "providers" in done.stdout


def test_providers_command_probes_for_real() -> None:
    done = _ortperf("providers", "cpu,openvino")
    assert done.returncode == 0, done.stderr
    assert "CPUExecutionProvider: usable" in done.stdout
    assert "OpenVINOExecutionProvider: unavailable: not built into the installed" in done.stdout


def test_providers_command_rejects_unknown_names() -> None:
    done = _ortperf("providers", "cpu,warp")
    assert done.returncode == 2
    assert "ortperf providers: unknown execution provider 'warp'" in done.stderr


@pytest.mark.slow
def test_missing_onnxruntime_gives_install_advice(pytester: pytest.Pytester) -> None:
    (pytester.path / "model.onnx").write_bytes(b"")
    pytester.makeconftest(
        """
        import sys
        sys.modules["onnxruntime"] = None  # what an environment without the wheel looks like
        """
    )
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("model.onnx")
        def test_needs_ort(ort_session): pass

        def test_plain(): pass
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*pytest-ortperf needs ONNX Runtime*pip install 'pytest-ortperf[[]gpu[]]'*pip install 'pytest-ortperf[[]cpu[]]'*"
        ]
    )


def test_profile_command_summarizes_a_real_trace(tmp_path) -> None:
    import numpy as np
    import onnxruntime as ort

    from tests.models import SQUEEZENET

    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "sq")
    session = ort.InferenceSession(str(SQUEEZENET), options, providers=["CPUExecutionProvider"])
    session.run(None, {"data_0": np.zeros((1, 3, 224, 224), dtype=np.float32)})
    trace = session.end_profiling()
    done = _ortperf("profile", trace, "--top", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 run(s), ")
    assert "top 3 op types:" in done.stdout
    assert "  Conv " in done.stdout
    as_json = _ortperf("profile", trace, "--json")
    assert __import__("json").loads(as_json.stdout)["runs"] == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "is empty"), (b"[1, 2", "is not JSON"), (b'{"x": 1}', "not a list of trace events")],
)
def test_profile_command_rejects_files_that_are_not_traces(tmp_path, content: bytes, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    done = _ortperf("profile", str(bad))
    assert done.returncode == 2
    assert f"ortperf: error: '{bad}'" in done.stderr
    assert message in done.stderr


def test_ortperf_update_runs_without_an_assertion_rewrite_warning(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 58, item 9: every ``ortperf update`` printed ``PytestAssertRewriteWarning: Module already
    imported so cannot be rewritten; pytest_ortperf``: the console script imports the package, then
    runs pytest in the same process (``cli.py: _update``). Here ``ortperf update`` runs in this
    process too, on a real model, and its whole output is read."""
    import onnx

    from pytest_ortperf.cli import main
    from tests.models import mlp_model

    onnx.save(mlp_model(layers=2, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_gate=(
            "import pytest\n"
            "pytestmark = pytest.mark.ort_model('model.onnx', dims={'batch': 2})\n"
            "def test_latency(ort_perf):\n"
            "    ort_perf.check_latency()\n"
        )
    )
    monkeypatch.chdir(pytester.path)
    status = main(["update", "-p", "no:cacheprovider", "--ortperf-budget=0.1"])
    out, err = capsys.readouterr()
    assert status == 0, out + err
    assert "1 passed" in out
    assert "cannot be rewritten" not in out + err
