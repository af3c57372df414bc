"""pytest-xdist: updates lose nothing and write only on the controller; timing takes turns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import onnx
import pytest

from pytest_ortperf.store.machine import detect_machine
from tests.models import mlp_model
from tests.plugin.conftest import file_inputs

pytest.importorskip("xdist")

TESTS = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

@pytest.mark.parametrize("case", range(3))
def test_latency(ort_perf, case):
    ort_perf.check()

def test_other(ort_perf):
    ort_perf.check_latency()
"""
QUICK = ("--ortperf-budget=0.05", "--ortperf-max-cv=1000%", "--ort-opt-levels=disabled,all")

HERE = detect_machine().hardware.slug  # a runner class keys its entries <class>@<this hardware>


def _masked(path: Path) -> str:
    """The whole baseline file with its measured numbers and recording dates masked, and what noise
    decides of a recording (it measures until its figures settle, or up to its cap): whether they
    settled, and how many rounds the lists of round medians hold."""
    text = re.sub(r'("recorded": )"[^"]*"', r'\1"<date>"', path.read_text())
    text = re.sub(r'\n *"settled": false,', "", text)
    text = re.sub(r"(?<![\w.\"-])-?\d+(\.\d+)?(e[-+]?\d+)?(?![\w.\"-])", "<n>", text)
    return re.sub(r'("(canary_)?round_medians_ms": )\[[^\]]*\]', r"\1[<n>, ...]", text)


@pytest.mark.parametrize("workers", ["2", "4"])
@pytest.mark.slow
def test_parallel_update_records_what_a_serial_one_does(pytester: pytest.Pytester, workers: str) -> None:
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(test_par=TESTS)
    serial = pytester.runpytest_subprocess("--ortperf-update", *QUICK)
    serial.assert_outcomes(passed=8)
    baseline = pytester.path / "baselines" / "test_par.py.json"
    expected = _masked(baseline)
    assert len(json.loads(baseline.read_text())["entries"]) == 8
    outputs = sorted((pytester.path / "baselines" / "test_par.py.outputs").iterdir())
    assert len(outputs) == 6
    for path in [baseline, *outputs]:
        path.unlink()

    parallel = pytester.runpytest_subprocess("--ortperf-update", "-n", workers, *QUICK)
    parallel.assert_outcomes(passed=8)
    parallel.stdout.fnmatch_lines(
        ["timing: serialized across processes*", "ortperf update: 0 updated, 20 new, 0 unchanged, 0 unused*"]
    )
    assert _masked(baseline) == expected
    assert sorted(p.name for p in (pytester.path / "baselines" / "test_par.py.outputs").iterdir()) == [
        p.name for p in outputs
    ]
    compare = pytester.runpytest_subprocess("-n", workers, *QUICK, "--ortperf-latency-threshold=500%")
    compare.assert_outcomes(passed=8)
    compare.stdout.fnmatch_lines(["test_par.py::test_latency[[]*", "timing: serialized across processes*"])


@pytest.mark.slow
def test_parallel_timing_can_be_allowed(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(test_par=TESTS)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--ortperf-parallel-timing", "--ortperf-missing=pass", *QUICK
    )
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["timing: parallel (timed sections are not serialized)"])


@pytest.mark.slow
def test_unused_entries_are_found_from_worker_collections(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(test_par=TESTS)
    pytester.runpytest_subprocess("--ortperf-update", "-n", "2", *QUICK).assert_outcomes(passed=8)
    pytester.makepyfile(test_par=TESTS.replace("def test_other", "def test_renamed"))
    result = pytester.runpytest_subprocess("--ortperf-update", "-n", "2", *QUICK)
    result.stdout.fnmatch_lines(
        ["ortperf update: * 2 unused*", "unused baselines (kept; --ortperf-prune deletes them):"]
    )


@pytest.mark.slow
def test_last_failed_workers_never_count_the_passing_tests_of_a_file_unused(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    file_inputs(pytester, (4, 16))
    pytester.makepyfile(test_par=TESTS)
    pytester.runpytest_subprocess("--ortperf-update", "-n", "2", *QUICK).assert_outcomes(passed=8)
    baseline = pytester.path / "baselines" / "test_par.py.json"
    recorded = baseline.read_bytes()
    # test_other fails at both levels (other input data from a file, and a machine without figures
    # of its own: missing), so --lf reruns only it, in a file whose other tests pass.
    file_inputs(pytester, (4, 16), seed=7)
    failed = pytester.runpytest_subprocess("test_par.py::test_other", "--ortperf-machine=elsewhere", *QUICK)
    failed.assert_outcomes(failed=2)
    assert baseline.read_bytes() == recorded  # a plain run writes nothing
    file_inputs(pytester, (4, 16))  # the recorded data again: --lf reruns test_other, whose figures match
    result = pytester.runpytest_subprocess("--lf", "--ortperf-update", "--ortperf-prune", "-n", "2", *QUICK)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["ortperf update: * 0 new, * 0 unused*"])
    assert sorted(json.loads(baseline.read_text())["entries"]) == sorted(json.loads(recorded)["entries"])


# Two checks that start together in two workers: one measures while the other waits for the lock.
TOGETHER = """
import os, time
from pathlib import Path
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

@pytest.mark.parametrize("case", range(2))
def test_latency(ort_perf, case):
    Path(f"started-{case}").write_text("")
    deadline = time.monotonic() + 30
    while not all(Path(f"started-{n}").exists() for n in range(2)) and time.monotonic() < deadline:
        time.sleep(0.01)
    ort_perf.check_latency()
"""


@pytest.mark.slow
def test_a_worker_waiting_for_another_of_its_run_names_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(pytester.path))  # this run's own per-user lock file
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(test_par=TOGETHER)
    result = pytester.runpytest_subprocess(
        "-n",
        "2",
        "--ortperf-missing=pass",
        "--ortperf-budget=1.5",
        "--ortperf-max-cv=1000%",
        "--ortperf-report=report.json",
    )
    result.assert_outcomes(passed=2)
    # One worker's decision waits for the other's; the other's untimed work after its own decision
    # may wait in turn (untimed work never runs beside a decision): either is named.
    result.stdout.fnmatch_lines(
        [
            f"timing: serialized across processes (lock {pytester.path}*",
            "waiting * s for the timing lock, held by this run's xdist worker*gw?",
        ]
    )
    waits = [
        w
        for c in json.loads((pytester.path / "report.json").read_text())["checks"]
        for w in c.get("timing_lock", [])
    ]
    holders = {(w["holder"]["worker"], w["holder"]["this_run"]) for w in waits if w["seconds"] > 1}
    assert holders
    assert holders <= {("gw0", True), ("gw1", True)}
    assert all(w["holder"]["command"].startswith("python -m pytest ") for w in waits if w["holder"])


@pytest.mark.slow
def test_repair_under_xdist_is_done_by_the_controller_and_reported(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(test_par=TESTS)
    baseline = pytester.path / "baselines" / "test_par.py.json"
    baseline.parent.mkdir()
    damage = b'{"schema": 1, "kind": "pytest-ortperf baselines", "entries": {'
    baseline.write_bytes(damage)
    # A conftest that fails the run if a worker finds the file moved: only the controller may move it.
    pytester.makeconftest(
        f"""
        import os
        def pytest_sessionfinish(session):
            if hasattr(session.config, "workeroutput"):
                assert os.path.exists({str(baseline)!r}), "a worker moved the damaged file"
        """
    )
    result = pytester.runpytest_subprocess("--ortperf-update", "--ortperf-repair", "-n", "2", *QUICK)
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(
        [
            "repaired *test_par.py.json: the damaged file was kept as test_par.py.json.damaged-*",
            "ortperf update: 0 updated, 20 new, 0 unchanged, 0 unused*",
        ]
    )
    result.stdout.no_fnmatch_line("*a worker moved the damaged file*")
    (backup,) = baseline.parent.glob("test_par.py.json.damaged-*")
    assert backup.read_bytes() == damage
    assert len(json.loads(baseline.read_text())["entries"]) == 8


@pytest.mark.slow
def test_missing_hint_names_machines_with_baselines_from_workers(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    file_inputs(pytester, (4, 16))
    pytester.makepyfile(test_par=TESTS)
    pytester.runpytest_subprocess("--ortperf-update", "--ortperf-machine=ci-box", *QUICK).assert_outcomes(
        passed=8
    )
    # Other input data from a file: nothing can be rebuilt, and the laptop has no figures of its own,
    # so every latency check is missing; the workers tell the controller which machines hold figures.
    file_inputs(pytester, (4, 16), seed=7)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--ortperf-machine=laptop", "--ortperf-missing=pass", *QUICK
    )
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(
        [f"8 check(s) have no baseline for machine 'laptop@{HERE}' (figures exist for: ci-box@{HERE})*"]
    )


@pytest.mark.slow
def test_repair_of_damaged_outputs_under_xdist_is_done_by_the_controller(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_acc="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

        def test_outputs(ort_perf):
            ort_perf.check_accuracy()
        """
    )
    levels = "--ort-opt-levels=disabled,all"
    pytester.runpytest_subprocess("--ortperf-update", levels).assert_outcomes(passed=2)
    baselines = pytester.path / "baselines"
    entry = json.loads((baselines / "test_acc.py.json").read_text())["entries"]["test_outputs[cpu-all]"]
    npz = baselines / entry["accuracy"]["file"]  # one outputs record per entry, on any machine
    npz.write_bytes(b"garbage")
    pytester.makeconftest(
        f"""
        import os
        def pytest_sessionfinish(session):
            if hasattr(session.config, "workeroutput"):
                assert os.path.exists({str(npz)!r}), "a worker moved the damaged outputs"
        """
    )
    result = pytester.runpytest_subprocess("--ortperf-update", "--ortperf-repair", "-n", "2", levels)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"repaired *{npz.name}: the damaged file was kept as {npz.name}.damaged-*"])
    (backup,) = npz.parent.glob(f"{npz.name}.damaged-*")
    assert backup.read_bytes() == b"garbage"
    assert npz.read_bytes()[:2] == b"PK"  # recorded afresh: a zip archive again


@pytest.mark.slow
def test_memory_and_start_up_checks_of_workers_reach_the_controllers_summary_and_report(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_fp="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

        @pytest.mark.parametrize("case", range(2))
        def test_memory(ort_perf, case):
            ort_perf.check_memory()

        def test_startup(ort_perf):
            ort_perf.check_startup()
        """
    )
    result = pytester.runpytest_subprocess(
        "--ortperf-update", "-n", "2", "--ortperf-report=report.json", *QUICK
    )
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(
        ["memory and start-up on machine *", "ortperf update: 0 updated, 6 new, 0 unchanged, 0 unused*"]
    )
    # ortperf's table (pytest-benchmark's, which now holds the workers' start-up entries too, is not counted)
    rows = [
        line
        for line in result.stdout.lines
        if re.match(r"test_fp\.py::test_(memory|startup)\S*\s.*\srecord\s", line)
    ]
    assert len(rows) == 6
    kinds = sorted(c["kind"] for c in json.loads((pytester.path / "report.json").read_text())["checks"])
    assert kinds == ["memory"] * 4 + ["startup"] * 2
    entries = json.loads((pytester.path / "baselines" / "test_fp.py.json").read_text())["entries"]
    assert len(entries) == 6


@pytest.mark.slow
def test_under_xdist_an_unchanged_checks_drift_is_not_said_to_be_the_machines(
    pytester: pytest.Pytester,
) -> None:
    """Under ``-n 2`` an unchanged check's look shares the cores with the other worker's looks and
    untimed work, whatever it measures is partly theirs: it is never reported as the machine's."""
    onnx.save(mlp_model(layers=3, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(test_par=TESTS)
    pytester.runpytest_subprocess("--ortperf-update", *QUICK).assert_outcomes(passed=8)

    def drifts(*args: str) -> list[dict[str, object]]:
        result = pytester.runpytest_subprocess("--ortperf-report=gate.json", *QUICK, *args)
        result.assert_outcomes(passed=8)
        checks = json.loads((pytester.path / "gate.json").read_text())["checks"]
        latency = [c for c in checks if c["kind"] == "latency"]
        assert [c["path"] for c in latency] == ["unchanged"] * 8
        if args:
            result.stdout.no_fnmatch_line("*machine *x * than at recording*")
        else:
            result.stdout.fnmatch_lines(["*unchanged  * ms  * ms  *x * than at recording*; nothing changed*"])
        return [c["drift"] for c in latency]

    assert {d.get("beside", "") for d in drifts()} == {""}
    beside = drifts("-n", "2")
    assert {d["beside"] for d in beside} == {"another xdist worker of this run"}
    for drift in beside:
        assert str(drift["text"]).endswith(
            " than at recording, measured beside another xdist worker of this run: not the machine's drift; "
            "nothing changed"
        )
