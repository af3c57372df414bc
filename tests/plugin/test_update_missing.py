"""``--ortperf-update=missing`` never takes in what it has not judged: on a runner class with no figures
yet, a changed model is judged side by side (and its baselines left byte for byte), an unchanged one gets
this hardware's figures added. Real sessions, real models, real slowdowns."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from pytest_ortperf.store.machine import detect_machine
from tests.models import mlp_model
from tests.plugin.conftest import LATENCY_MODEL, LATENCY_TEST_FILE, commit_model, git

QUICK = (
    "--ortperf-budget=0.2",
    "--ortperf-latency-threshold=20%",
    "--ortperf-max-cv=1000%",
)  # the one threshold: a ~50% slowdown side by side is beyond it
HERE = detect_machine().hardware.slug
# Half as many layers again: about 1.5x the work of LATENCY_MODEL (8 x 128), a real ~50% slowdown.
SLOWER = {**LATENCY_MODEL, "layers": 12}


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by relative path, with its bytes."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _update_missing_records(report: Path) -> dict[str, dict[str, object]]:
    """The JSON report's ``update_missing`` note of each check, by kind."""
    return {check["kind"]: check["update_missing"] for check in json.loads(report.read_text())["checks"]}


@pytest.mark.slow
def test_a_new_runner_class_judges_a_slower_model_and_records_only_an_unchanged_one(
    pytester: pytest.Pytester, latency_suite: Path, isolated_git: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_gate=LATENCY_TEST_FILE.replace("ort_perf.check_latency()", "ort_perf.check()"))
    blob = commit_model(pytester, **LATENCY_MODEL)  # the recorded model can be rebuilt from git
    monkeypatch.setenv("ORTPERF_MACHINE", "runner-class-a")
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    baselines = pytester.path / "baselines"
    recorded = _snapshot(baselines)
    before = json.loads(latency_suite.read_text())["entries"]["test_latency[cpu-all]"]

    # A runner class with no figures yet, and a model really ~50% slower in the work tree.
    monkeypatch.setenv("ORTPERF_MACHINE", "runner-class-b")
    onnx.save(mlp_model(**SLOWER), pytester.path / "model.onnx")
    slower = pytester.runpytest("--ortperf-update=missing", "--ortperf-report=report.json", *QUICK)
    slower.assert_outcomes(failed=1)
    assert slower.ret == pytest.ExitCode.TESTS_FAILED
    slower.stdout.fnmatch_lines(
        [
            f"latency regression in test_latency[[]cpu-all[]] against the recorded model (git {blob[:12]}) (same-job A/B)",
            # the accepting command records; it leaves out --ortperf-report (and never carries the update flag)
            "  to accept the new latency: ORTPERF_MACHINE=runner-class-b ortperf update "
            "'test_gate.py::test_latency[[]cpu-all[]]' --ortperf-budget=0.2 --ortperf-latency-threshold=20% "
            "--ortperf-max-cv=1000%",
        ]
    )
    slower.stdout.fnmatch_lines(
        [
            "ortperf update: 0 updated, 0 new, 0 unchanged, 0 unused*",
            "--ortperf-update=missing: 0 check(s) recorded *; 3 judged as in a plain run, nothing written for them",
            "judged, not recorded: their recipe changed since it was recorded *",
            "  test_gate.py::test_latency[[]cpu-all[]] (latency): model sha256 * -> *",
            "  test_gate.py::test_latency[[]cpu-all[]] (graph): model sha256 * -> *",
        ]
    )
    assert _snapshot(baselines) == recorded, "a judged check leaves the baselines byte for byte"
    notes = _update_missing_records(pytester.path / "report.json")
    assert notes["latency"]["action"] == "judged"
    assert str(notes["latency"]["changes"]).startswith("['model sha256 ")
    assert notes["accuracy"] == {
        "action": "judged",
        "reason": "nothing missing for this hardware",
        "changes": [],
    }

    # The recorded model back: the same recipe, so only this hardware's figures are added.
    git(pytester, "checkout", "--", "model.onnx")
    added = pytester.runpytest("--ortperf-update=missing", "--ortperf-report=report.json", *QUICK)
    added.assert_outcomes(passed=1)
    added.stdout.fnmatch_lines(
        [
            "--ortperf-update=missing: 2 check(s) recorded *; 1 judged as in a plain run, nothing written for them"
        ]
    )
    added.stdout.no_fnmatch_line("judged, not recorded*")
    notes = _update_missing_records(pytester.path / "report.json")
    assert notes["latency"]["action"] == notes["graph"]["action"] == "recorded"
    after = json.loads(latency_suite.read_text())["entries"]["test_latency[cpu-all]"]
    assert after["recipe"] == before["recipe"], "the recipe is kept"
    assert sorted(after["figures"]) == sorted([f"runner-class-a@{HERE}", f"runner-class-b@{HERE}"])
    assert after["figures"][f"runner-class-a@{HERE}"] == before["figures"][f"runner-class-a@{HERE}"]
    assert after["figures"][f"runner-class-b@{HERE}"]["latency"]["median_ms"] > 0
    assert after["accuracy"] == before["accuracy"]


def test_changed_inputs_on_a_runner_class_without_figures_are_judged_side_by_side_and_write_nothing(
    pytester: pytest.Pytester, latency_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Synthetic inputs are made again from the recipe (issue 47): with only the seed changed, the
    recorded model runs on its recorded inputs beside today's, so a runner class without figures is
    judged, not missing; --ortperf-update=missing, which used to record the new inputs, judges it as a
    plain run and writes nothing."""
    monkeypatch.setenv("ORTPERF_MACHINE", "runner-class-a")
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    recorded = latency_suite.read_bytes()
    monkeypatch.setenv("ORTPERF_MACHINE", "runner-class-b")
    result = pytester.runpytest(
        "--ortperf-update=missing", "--ortperf-seed=1", *QUICK, "--ortperf-report=report.json"
    )
    result.stdout.fnmatch_lines(
        [
            "--ortperf-update=missing: 0 check(s) recorded *; 1 judged as in a plain run, nothing written for them",
            "  test_gate.py::test_latency[[]cpu-all[]] (latency): input data * -> *",
        ]
    )
    (record,) = [
        r for r in json.loads((pytester.path / "report.json").read_text())["checks"] if r["kind"] == "latency"
    ]
    assert record["path"].startswith("side by side vs "), record
    assert latency_suite.read_bytes() == recorded
