"""A/B across ONNX Runtime environments end to end: both sides in real measuring workers.

The suite's own interpreter serves as the "other" environment where a second runtime is not
installed: the same runtime on both sides must pass. Where ``ORTPERF_TEST_OTHER_PYTHON`` names an
interpreter with another onnxruntime (``.ci/run`` sets it for the run on the CPU wheel), a baseline
recorded there is measured here against that runtime for real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest

from pytest_ortperf.latency.across_processes import MIN_UNITS
from tests.models import mlp_model

FAST = {"layers": 4, "width": 256}
SLOW = {"layers": 16, "width": 256}
QUICK = ("--ortperf-ab-budget=0.5", "--ortperf-budget=0.3", "--ortperf-max-cv=1000%")
# Where the stored figures decide, on these tiny budgets: a threshold no noise crosses.
LENIENT_STORED = "--ortperf-latency-threshold=1000%"
OTHER_PYTHON = os.environ.get("ORTPERF_TEST_OTHER_PYTHON", "")

TEST_FILE = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={{"batch": 16}})

{marker}
def test_model(ort_perf):
    ort_perf.check_latency()
"""


def suite(pytester: pytest.Pytester, marker: str = "", **model: int) -> None:
    onnx.save(mlp_model(**(model or FAST)), pytester.path / "model.onnx")
    pytester.makepyfile(test_rt=TEST_FILE.format(marker=marker))


def checks(pytester: pytest.Pytester) -> dict[str, list[dict[str, Any]]]:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for check in json.loads((pytester.path / "report.json").read_text())["checks"]:
        by_kind.setdefault(check["kind"], []).append(check)
    return by_kind


def this_runtime() -> str:
    from pytest_ortperf.ort.runtime import runtime_info

    return runtime_info().describe()


@pytest.mark.slow
def test_the_same_runtime_in_another_worker_passes_and_names_both_runtimes(pytester: pytest.Pytester) -> None:
    suite(pytester)
    result = pytester.runpytest(
        f"--ortperf-ab-python={sys.executable}", "--ortperf-report=report.json", *QUICK
    )
    result.assert_outcomes(passed=1)
    found = checks(pytester)
    (latency,) = found["latency"]
    runtime = this_runtime()
    assert latency["path"] == f"side by side vs the same model in {runtime} ({runtime} -> {runtime})"
    assert latency["reference"]["runtimes"] == f"{runtime} -> {runtime}"
    assert latency["verdict"] in ("ok", "inconclusive", "not confirmed")
    (outputs,) = found["accuracy"]  # the two runtimes' outputs, compared with the tolerances
    assert outputs["verdict"] == "ok"


@pytest.mark.slow
def test_a_slower_model_than_the_reference_in_the_other_environment_fails(pytester: pytest.Pytester) -> None:
    suite(pytester, marker=f"@pytest.mark.ort_ab('fast.onnx', python={sys.executable!r})", **SLOW)
    onnx.save(mlp_model(**FAST), pytester.path / "fast.onnx")
    result = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(failed=1)
    # The outputs come from the last measuring process, still loaded: compared, 4 layers against 16,
    # not an error of a worker.
    (outputs,) = checks(pytester)["accuracy"]
    assert outputs["verdict"] == "failed", outputs
    assert "the measuring worker (" not in result.stdout.str()  # no worker error
    runtime = this_runtime()
    result.stdout.fnmatch_lines(
        [
            "*latency regression in test_model?cpu-*? against fast.onnx in * (same-job A/B)",
            f"*runtimes:  {runtime} -> {runtime} (both in measuring workers)",
            "*processes: *(each process's median round ratio)",
            # the reference's graph built by a worker of its environment, beside the current one
            "  graph at cpu-*:",
            "    change:    MatMul +12, Relu +12",  # 16 layers against the reference's 4
        ]
    )


def test_an_interpreter_that_does_not_exist_is_a_usage_error(pytester: pytest.Pytester) -> None:
    suite(pytester)
    result = pytester.runpytest("--ortperf-ab-python=/no/such/python")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ortperf-ab-python: '/no/such/python' is not a Python interpreter here*"])


def test_a_marker_naming_a_missing_interpreter_fails_its_test_only(pytester: pytest.Pytester) -> None:
    suite(pytester, marker="@pytest.mark.ort_ab(python='envs/none/bin/python')")
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    result = pytester.runpytest(*QUICK)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*ort_ab marker of test_rt.py::test_model*: python: '*envs/none/bin/python' is not*"]
    )


def test_an_environment_without_onnxruntime_fails_each_check_and_the_run_goes_on(
    pytester: pytest.Pytester,
) -> None:
    bare = pytester.path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    suite(pytester)
    pytester.makepyfile(test_two=TEST_FILE.format(marker="").replace("def test_model", "def test_again"))
    result = pytester.runpytest(f"--ortperf-ab-python={bare}/bin/python", *QUICK)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*cannot import onnxruntime and numpy in *bare*No module named*"] * 2)


def _record(pytester: pytest.Pytester, python: str = "") -> Path:
    """Record the suite's baseline, in another interpreter's environment when ``python`` is given."""
    if python:
        done = subprocess.run(
            [python, "-m", "pytest", "-p", "no:cacheprovider", "--ortperf-update", *QUICK],
            cwd=pytester.path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    else:
        pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    return pytester.path / "baselines" / "test_rt.py.json"


def _recorded_runtime(baseline: Path, flavour: str, version: str) -> None:
    data = json.loads(baseline.read_text())
    for entry in data["entries"].values():
        entry["recipe"].update(ort_flavour=flavour, ort_version=version)  # the runtime is part of the recipe
    baseline.write_text(json.dumps(data, indent=1))


@pytest.mark.slow
def test_a_changed_runtime_without_its_environment_is_missing_and_says_which_command_creates_one(
    pytester: pytest.Pytester,
) -> None:
    # --ortperf-fetch-runtime=never: no environment is fetched (tests/plugin/test_fetch_runtime.py fetches)
    suite(pytester)
    _recorded_runtime(_record(pytester), "onnxruntime", "1.19.2")
    never = "--ortperf-fetch-runtime=never"
    # This hardware's own figures were measured by the other runtime: they do not decide.
    result = pytester.runpytest("--ortperf-report=report.json", never, *QUICK)
    result.assert_outcomes(failed=1)
    (latency,) = checks(pytester)["latency"]
    assert (latency["path"], latency["verdict"]) == ("missing", "missing")
    result.stdout.fnmatch_lines(
        [
            "*no latency baseline for test_model[[]cpu-*[]] on machine '*' (onnxruntime changed "
            "(onnxruntime 1.19.2 -> *): no environment here has onnxruntime 1.19.2 (*), and "
            "--ortperf-fetch-runtime=never (ini ortperf_fetch_runtime) does not fetch it; create one with: "
            "ortperf env create onnxruntime==1.19.2 (run anywhere in the repository); what onnxruntime 1.19.2 "
            "recorded is not this runtime's reference, so it is shown, not judged; to judge it, make "
            "onnxruntime 1.19.2 available (ortperf env create onnxruntime==1.19.2, or --ortperf-ab-python), "
            "or re-record with this runtime); measured median *"
        ]
    )
    # Another machine key has no figures at all: the same reason.
    elsewhere = pytester.runpytest("--ortperf-machine=other-class", never, "--ortperf-missing=pass", *QUICK)
    elsewhere.assert_outcomes(passed=1)
    elsewhere.stdout.fnmatch_lines(
        [
            "1 check(s) have no baseline for machine 'other-class@*",
            "1 of them: recorded by onnxruntime 1.19.2, which is not available here; what it measured is not this "
            "runtime's reference, so it was not judged (to judge: ortperf env create onnxruntime==1.19.2; or "
            "re-record them with this runtime).",
        ]
    )


def _env(pytester: pytest.Pytester, python: str, flavour: str, version: str) -> str:
    """An ``ortperf env`` entry of the project that claims ``flavour version``; its interpreter runs
    ``python``. Returns its key."""
    key = "0123456789ab"
    env = pytester.path / ".ortperf" / "envs" / key
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").write_text(f'#!/bin/sh\nexec {python} "$@"\n')
    (env / "bin" / "python").chmod(0o755)
    (env / "ortperf-env.json").write_text(
        json.dumps(
            {
                "key": key,
                "specs": [f"{flavour}=={version}"],
                "python": python,
                "flavour": flavour,
                "version": version,
                "providers": ["CPUExecutionProvider"],
                "python_version": "3",
                "created": "2026-11-24T00:00:00+00:00",
            }
        )
    )
    return key


def test_an_environment_that_claims_another_runtime_is_not_trusted(pytester: pytest.Pytester) -> None:
    suite(pytester)
    _recorded_runtime(_record(pytester), "onnxruntime", "1.19.2")
    _env(pytester, sys.executable, "onnxruntime", "1.19.2")  # really this runtime, whatever it claims
    result = pytester.runpytest("--ortperf-report=report.json", "--ortperf-missing=pass", *QUICK)
    result.assert_outcomes(passed=1)
    (latency,) = checks(pytester)["latency"]
    assert latency["path"] == "missing"
    assert (
        "ortperf env 0123456789ab claims onnxruntime 1.19.2 but its interpreter imports"
        in latency["stored_reason"]
    )


@pytest.mark.skipif(
    not OTHER_PYTHON, reason="set ORTPERF_TEST_OTHER_PYTHON to an interpreter with another onnxruntime"
)
def test_a_baseline_recorded_on_another_runtime_is_measured_side_by_side_in_it(
    pytester: pytest.Pytester,
) -> None:
    suite(pytester)
    baseline = _record(pytester, OTHER_PYTHON)
    entry = next(iter(json.loads(baseline.read_text())["entries"].values()))
    recorded = entry["recipe"]["ort_flavour"], entry["recipe"]["ort_version"]
    key = _env(pytester, OTHER_PYTHON, *recorded)
    result = pytester.runpytest(
        "--ortperf-report=report.json", "--ortperf-ab-threshold=50%", *QUICK
    )  # the route, not a verdict
    result.assert_outcomes(passed=1)
    found = checks(pytester)
    (latency,) = found["latency"]
    other = " ".join(recorded)
    assert latency["path"] == (
        f"side by side vs the recorded runtime (ortperf env {key}) in {other} ({other} -> {this_runtime()})"
    )
    assert other != this_runtime()
    assert any(check["verdict"] == "ok" for check in found["accuracy"])  # the two runtimes agree on it


EVERY_KIND_FILE = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 16})


def test_model(ort_perf):
    ort_perf.check(memory=True, startup=True)
"""


@pytest.mark.slow
@pytest.mark.skipif(
    not OTHER_PYTHON, reason="set ORTPERF_TEST_OTHER_PYTHON to an interpreter with another onnxruntime"
)
def test_what_a_runtime_that_cannot_be_had_recorded_decides_nothing_and_its_graph_is_shown(
    pytester: pytest.Pytester,
) -> None:
    """Recorded for real in another onnxruntime (1.31.1 beside 1.23.2 on Python 3.10, or the other
    wheel), then judged here with no environment of it and no fetch: one rule for latency, graph,
    memory and start-up (missing, the runtime named as the cause), and the graph that runtime built on
    this hardware class is shown beside today's, not judged."""
    onnx.save(mlp_model(**FAST), pytester.path / "model.onnx")
    pytester.makepyfile(test_rt=EVERY_KIND_FILE)
    baseline = _record(pytester, OTHER_PYTHON)
    recipe = next(iter(json.loads(baseline.read_text())["entries"].values()))["recipe"]
    other = f"{recipe['ort_flavour']} {recipe['ort_version']}"
    assert other != this_runtime()
    result = pytester.runpytest("--ortperf-report=report.json", "--ortperf-fetch-runtime=never", *QUICK)
    result.assert_outcomes(failed=1)  # missing fails by default: the gate cannot judge here
    found = checks(pytester)
    for kind in ("latency", "graph", "memory", "startup"):
        (check,) = found[kind]
        assert (kind, check["path"], check["verdict"]) == (kind, "missing", "missing")
    text = result.stdout.str()
    for kind in ("latency", "graph", "memory", "start-up"):
        assert f"no {kind} baseline for test_model[" in text, kind
    assert (
        text.count(f"what {other} recorded is not this runtime's reference, so it is shown, not judged") >= 4
    )
    assert "graph regression" not in text
    assert "lost fusion" not in text.split("shown, not judged: the graph")[0]
    result.stdout.fnmatch_lines(
        [
            f"  what the runtime changes, shown, not judged: the graph {other} built on this hardware class (recorded *) against this runtime's"
        ]
    )
    # Passing as missing where the suite allows it: nothing the other runtime measured was compared.
    allowed = pytester.runpytest("--ortperf-fetch-runtime=never", "--ortperf-missing=pass", *QUICK)
    allowed.assert_outcomes(passed=1)


LINGER_FILE = """
import os, pathlib, signal
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={{"batch": 16}})


def workers():
    \"\"\"Measuring workers whose parent is this pytest process.\"\"\"
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and b"worker_program.py" in command:
            found.append(entry.name)
    return found


def test_model(ort_perf):
    ort_perf.check_latency()
    pathlib.Path("workers.txt").write_text(" ".join(workers()))
    if {kill!r}:
        os.kill(os.getpid(), signal.SIGKILL)  # the pytest process dies, its run unfinished
"""


def _gone(pid: str) -> bool:
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
@pytest.mark.parametrize("kill", [False, True], ids=["run-ends", "pytest-killed"])
@pytest.mark.slow
def test_workers_never_outlive_the_pytest_run(pytester: pytest.Pytester, kill: bool) -> None:
    import time

    onnx.save(mlp_model(**FAST), pytester.path / "model.onnx")
    pytester.makepyfile(test_linger=LINGER_FILE.format(kill=kill))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            f"--ortperf-ab-python={sys.executable}",
            *QUICK,
        ],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == (-9 if kill else 0), done.stdout + done.stderr
    pids = (pytester.path / "workers.txt").read_text().split()
    assert len(pids) >= MIN_UNITS  # the measuring processes of at least the first look
    deadline = time.monotonic() + 10
    while not all(map(_gone, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(map(_gone, pids))
