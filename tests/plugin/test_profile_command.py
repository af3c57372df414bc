"""``ortperf profile`` on what a run of marked tests leaves: a summary.json, a test's folder, the
profile dir; and on ORT traces in both shapes the Chrome trace format allows."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from pytest_ortperf.cli import main
from tests.models import mlp_model

MARKED = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

@pytest.mark.ort_profile
def test_runs(ort_session, ort_inputs):
    for _ in range(3):
        ort_session.run(None, ort_inputs)

@pytest.mark.ort_profile
def test_latency(ort_perf):
    ort_perf.check_latency()
"""


@pytest.fixture
def marked_run(pytester: pytest.Pytester) -> pytest.RunResult:
    """A real run of two marked tests."""
    onnx.save(mlp_model(layers=4, width=32), pytester.path / "model.onnx")
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest("--ortperf-missing=pass", "--ortperf-budget=0.1")
    result.assert_outcomes(passed=2)
    return result


@pytest.fixture
def profiles(pytester: pytest.Pytester, marked_run: pytest.RunResult) -> Path:
    """The profile dir that run left."""
    return pytester.path / ".ortperf" / "profiles"


def test_the_terminal_names_the_command_that_reads_a_tests_folder(
    marked_run: pytest.RunResult, profiles: Path
) -> None:
    for test in ("test_runs", "test_latency"):
        folder = _folder(profiles, test)
        marked_run.stdout.fnmatch_lines([f"  traces and summary.json in {folder} (ortperf profile {folder})"])


def _folder(root: Path, test: str) -> Path:
    (folder,) = [d for d in root.iterdir() if test in d.name]
    return folder


def ortperf(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["profile", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_summary_the_terminal_points_at_is_read(
    profiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = _folder(profiles, "test_runs") / "summary.json"
    code, out, err = ortperf(capsys, str(summary), "--top", "2")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"profile of test_marked.py::test_runs[cpu-all]: {summary}"
    assert lines[1] == f"3 trace(s) in {summary.parent}: run-1.json, run-2.json, run-3.json"
    assert lines[2].startswith("3 run(s), ")
    assert lines[3] == "top 2 op types:"
    assert lines[4].lstrip().startswith(("MatMul", "Relu", "Identity"))
    assert "top 2 nodes:" in lines
    assert "time per provider:" in lines


def test_a_folder_or_the_profile_dir_reads_every_test(
    profiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = ortperf(capsys, str(_folder(profiles, "test_latency")))
    assert code == 0
    assert out.startswith("profile of test_marked.py::test_latency[cpu-all]: ")
    assert "3 trace(s) in " in out  # the latency check's untimed profiled runs
    code, out, _ = ortperf(capsys, str(profiles))
    assert code == 0
    headers = [line for line in out.splitlines() if line.startswith("profile of ")]
    assert [h.split(": ")[0] for h in headers] == [
        "profile of test_marked.py::test_latency[cpu-all]",
        "profile of test_marked.py::test_runs[cpu-all]",
    ]


def test_json_gives_the_summary_as_written(profiles: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary = _folder(profiles, "test_runs") / "summary.json"
    code, out, _ = ortperf(capsys, str(summary), "--json")
    assert code == 0
    assert json.loads(out) == json.loads(summary.read_text())
    code, out, _ = ortperf(capsys, str(profiles), "--json")
    assert sorted(d["test"] for d in json.loads(out)) == [
        "test_marked.py::test_latency[cpu-all]",
        "test_marked.py::test_runs[cpu-all]",
    ]


def test_provider_lists_the_nodes_of_a_summary_that_ran_on_cpu(
    profiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = _folder(profiles, "test_runs") / "summary.json"
    code, out, _ = ortperf(capsys, str(summary), "--provider", "cuda", "--top", "20")
    assert code == 0
    # 4 x (MatMul, Relu): the Identity at the end is optimized away at level 'all'.
    assert "8 node(s) ran on CPU although an accelerator was requested:" in out
    assert "  relu3" in out.splitlines()


def test_a_trace_in_the_folder_is_still_read_as_a_trace(
    profiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _folder(profiles, "test_runs") / "run-1.json"
    code, out, _ = ortperf(capsys, str(trace))
    assert code == 0
    assert out.startswith("1 run(s), ")
    wrapped = trace.with_name("wrapped.json")  # the Chrome trace format's object form
    wrapped.write_text(json.dumps({"traceEvents": json.loads(trace.read_text()), "displayTimeUnit": "ms"}))
    code, same, _ = ortperf(capsys, str(wrapped))
    assert (code, same) == (0, out)


def test_a_damaged_summary_is_named_and_the_others_are_still_shown(
    profiles: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damaged = _folder(profiles, "test_runs") / "summary.json"
    document = json.loads(damaged.read_text())
    document["by_op"][0]["us"] = "fast"
    damaged.write_text(json.dumps(document))
    code, out, err = ortperf(capsys, str(profiles))
    assert code == 2
    assert f"ortperf: error: '{damaged}': summary field by_op[0].us is not a number." in err
    assert "profile of test_marked.py::test_latency[cpu-all]" in out
    code, out, err = ortperf(capsys, str(damaged))
    assert (code, out) == (2, "")
    assert "by_op[0].us is not a number" in err


def test_a_folder_without_summaries_says_what_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = ortperf(capsys, str(tmp_path))
    assert code == 2
    assert f"ortperf: error: '{tmp_path}' holds no summary.json: give a trace" in err


def test_the_console_script_reads_a_summary(profiles: Path) -> None:
    summary = _folder(profiles, "test_runs") / "summary.json"
    exe = shutil.which("ortperf", path=str(Path(sys.executable).parent))
    command = [exe] if exe else [sys.executable, "-m", "pytest_ortperf.cli"]
    done = subprocess.run(
        [*command, "profile", str(summary)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("profile of test_marked.py::test_runs[cpu-all]: ")
