"""The run's result sink: what goes in once comes out in the summary, the CI records and the
update tally, and an xdist worker's handover survives the trip through JSON to the controller."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_ortperf.checks.accuracy_verdicts import AccuracyResult
from pytest_ortperf.checks.latency_verdicts import LatencyResult
from pytest_ortperf.checks.status import Status
from pytest_ortperf.reports.ci_files import (
    accuracy_record,
    error_record,
    latency_record,
    markdown,
    not_timed_record,
)
from pytest_ortperf.reports.results import RunResults
from pytest_ortperf.reports.terminal import RunSummary, UpdateReport, latency_rows, summary_lines
from pytest_ortperf.store.baselines import Repaired
from pytest_ortperf.store.keys import CheckKey
from tests.unit.reports.test_terminal import result


def _latency_rows(records: Any) -> list[tuple[str, ...]]:
    """The latency table's rows of the latency records among ``records`` (the registry does this)."""
    return latency_rows([r for r in records if r.get("kind") == "latency"])


def accuracy(status: Status, message: str = "accuracy of test_x differs") -> AccuracyResult:
    key = CheckKey("tests/test_perf.py", "test_x[cpu-all]", "cpu-all", "ci", "ortperf update 'x'")
    return AccuracyResult(key, status, (), message=message)


def publish(results: RunResults, checked: LatencyResult | AccuracyResult, nodeid: str) -> None:
    """A check's record into the sink, as the run's publisher adds it."""
    if isinstance(checked, AccuracyResult):
        results.add(accuracy_record(checked, nodeid))
    else:
        results.add(latency_record(checked, nodeid))


def filled() -> RunResults:
    results = RunResults()
    publish(
        results, result("test_a", "cpu-all", Status.OK, 10.0, 10.0), "tests/test_perf.py::test_a[cpu-all]"
    )
    publish(results, result("test_b", "cpu-all", Status.MISSING, 5.0), "tests/test_perf.py::test_b[cpu-all]")
    publish(results, accuracy(Status.DIFFERS_REPORTED), "tests/test_perf.py::test_x[cpu-all]")
    key = CheckKey("tests/test_perf.py", "test_c[cpu-all]", "cpu-all", "ci", "ortperf update 'c'")
    results.add(
        error_record(key, kind="latency", nodeid="tests/test_perf.py::test_c[cpu-all]", message="boom")
    )
    return results


def test_every_published_result_has_one_record_in_publishing_order() -> None:
    records = filled().records
    assert [(r["kind"], r["verdict"]) for r in records] == [
        ("latency", "ok"),
        ("latency", "missing"),
        ("accuracy", "differs (reported)"),
        ("latency", "error"),
    ]
    assert all(type(r["verdict"]) is str for r in records)  # plain text in JSON and JUnit


def test_statuses_missing_and_reported_differences_read_the_published_results() -> None:
    results = filled()
    assert results.statuses() == ["ok", "missing", "differs (reported)", "error"]
    assert results.missing_count() == 1
    assert [r.entry for r in results.missing()] == [("tests/test_perf.py", "test_b[cpu-all]")]
    assert results.reported_differences() == [
        "accuracy of test_x differs (reported, --ortperf-ab-outputs=report)"
    ]


def test_a_workers_handover_survives_json_and_adds_to_the_controllers_results() -> None:
    worker = filled()
    handover = worker.handover(
        missing_machines=["box-b"], traces={"t::x": ["/tmp/a.json"]}, profiles=[{"test": "t::x", "traces": 0}]
    )
    controller = RunResults()
    publish(controller, result("test_z", "cpu-all", Status.NEW, 1.0), "tests/test_perf.py::test_z[cpu-all]")
    controller.take_over(json.loads(json.dumps(handover)))
    assert controller.statuses() == ["new", "ok", "missing", "differs (reported)", "error"]
    assert _latency_rows(controller.records)[1:] == _latency_rows(worker.records)
    assert controller.missing_count() == 1
    assert controller.machines_reported_missing == {"box-b"}
    assert controller.worker_traces() == {"t::x": ["/tmp/a.json"]}
    assert controller.worker_profiles() == [{"test": "t::x", "traces": 0}]
    assert len(controller.records) == 1 + len(worker.records)
    # Only records cross: the controller reads the worker's missing check from its record.
    assert [r.entry for r in controller.missing()] == [("tests/test_perf.py", "test_b[cpu-all]")]


def test_the_update_tally_counts_what_was_written_and_lists_noisy_figures() -> None:
    results = RunResults()
    noisy = dataclasses.replace(
        result("test_n", "cpu-all", Status.NEW, 1.0), recorded_spread=0.142, noise="spread 14.2% > max-cv 10%"
    )
    settled = dataclasses.replace(
        result("test_s", "cpu-all", Status.NEW, 1.0), recorded_spread=0.01, noise=""
    )
    publish(results, noisy, "tests/test_perf.py::test_n[cpu-all]")
    publish(results, settled, "tests/test_perf.py::test_s[cpu-all]")
    statuses = [Status.NEW, Status.NEW, Status.UPDATED, Status.UNCHANGED, Status.OK, "new"]
    report = UpdateReport.tally(
        statuses, unused=["t::gone"], written=[Path("b/t.json")], noisy=results.noisy_recordings()
    )
    assert (report.new, report.updated, report.unchanged) == (3, 1, 1)
    assert report.noisy == ["tests/test_perf.py::test_n[cpu-all] (spread 14.2% > max-cv 10%)"]
    assert report.unused == ["t::gone"]
    assert report.written == [Path("b/t.json")]


def test_the_summary_keeps_its_order_and_is_empty_when_nothing_happened() -> None:
    assert summary_lines(RunSummary(machine="ci")) == []
    results = filled()
    lines = summary_lines(
        RunSummary(
            machine="ci",
            sessions=["sessions: 2 built in 0.10 s, reused 3 time(s)"],
            errors=["cannot write a report: disk full", "worker gw1 went down: ..."],
            repaired=[Repaired(Path("b/t.json"), Path("b/t.json.damaged-1"))],
            strict_unused=["t::gone"],
            rows=_latency_rows(results.records),
            missing=results.missing_count(),
            timing_mode="serialized",
            update=UpdateReport(new=1),
            reported_differences=results.reported_differences(),
            profile_lines=["profile t::x: 3 run(s)"],
        )
    )
    firsts = [
        "sessions:",
        "ERROR: cannot write a report",
        "ERROR: worker gw1",
        "repaired b/t.json",
        "ERROR: 1 unused baseline entries (--ortperf-strict):",
        "  t::gone",
        "latency on machine 'ci'",
    ]
    assert [line[: len(first)] for line, first in zip(lines, firsts, strict=False)] == firsts
    assert lines.index("timing: serialized") < lines.index(
        "ortperf update: 0 updated, 1 new, 0 unchanged, 0 unused"
    )
    assert lines[-2:] == [
        "accuracy of test_x differs (reported, --ortperf-ab-outputs=report)",
        "profile t::x: 3 run(s)",
    ]


@pytest.mark.parametrize(
    ("mode", "label", "path", "decided"),
    [
        ("unchanged", "", "unchanged", "unchanged"),
        ("stored", "", "stored figures", "stored figures; stored"),
        ("a/b", "HEAD:m.onnx", "side by side vs HEAD:m.onnx", "side by side vs HEAD:m.onnx; a/b"),
    ],
)
def test_every_record_names_the_path_that_decided(mode: str, label: str, path: str, decided: str) -> None:
    checked = dataclasses.replace(
        result("test_a", "cpu-all", Status.OK, 1.0), mode=mode, reference_label=label
    )
    record = latency_record(checked, "t.py::test_a[cpu-all]")
    assert record["path"] == path
    row = markdown([record], machine="ci", unused=[]).splitlines()[-1]
    assert row.endswith(f"| {decided} |")


def test_not_timed_checks_are_records_and_statuses_not_table_rows_and_reach_the_controller() -> None:
    """--ortperf-timing=off: a latency check is reported 'not timed', with no figures; an xdist worker's
    count reaches the controller's summary line."""
    from pytest_ortperf.checks.latency_verdicts import not_timed
    from pytest_ortperf.reports.ci_files import gate_time, report_document

    key = CheckKey("tests/test_perf.py", "test_n[cpu-all]", "cpu-all", "ci", "ortperf update 'n'")
    worker = RunResults()
    worker.add(not_timed_record(not_timed(key), "tests/test_perf.py::test_n[cpu-all]"))
    assert _latency_rows(worker.records) == []
    (record,) = worker.records
    assert record == {
        "test": "tests/test_perf.py::test_n[cpu-all]",
        "kind": "latency",
        "variant": "cpu-all",
        "machine": "ci",
        "entry": ["tests/test_perf.py", "test_n[cpu-all]"],
        "verdict": "not timed",
        "failed": False,
        "message": "latency of test_n[cpu-all] not timed: timing is off (--ortperf-timing=off); sessions "
        "and accuracy checks run, nothing is measured.",
    }
    json.dumps(report_document(worker.records, machine="ci", runtime="", version="", traces={}, unused=[]),
               allow_nan=False)  # fmt: skip
    assert gate_time(worker.records) == ""  # nothing was timed
    controller = filled()
    controller.take_over(json.loads(json.dumps(worker.handover(missing_machines=[], traces={}))))
    assert controller.not_timed() == {"latency": 1}
    lines = summary_lines(RunSummary(machine="ci", not_timed=controller.not_timed()))
    assert lines == [
        "timing off (--ortperf-timing=off): 1 latency check not timed; sessions were run and accuracy checks "
        "compared outputs"
    ]


def test_records_published_while_noted_carry_the_note_and_update_missing_reads_them() -> None:
    results = RunResults()
    recorded = {"update_missing": {"action": "recorded", "reason": "never recorded", "changes": []}}
    with results.noted(recorded):
        publish(results, result("test_a", "cpu-all", Status.NEW, 10.0), "tests/test_perf.py::test_a[cpu-all]")
    publish(results, accuracy(Status.OK), "tests/test_perf.py::test_x[cpu-all]")  # outside: no note
    judged = {"update_missing": {"action": "judged", "reason": "changed", "changes": ["model sha256 a -> b"]}}
    with results.noted(judged):
        for _ in range(2):  # one check's two records are one note
            publish(results, accuracy(Status.FAILED), "tests/test_perf.py::test_x[cpu-all]")
    assert [r.get("update_missing", {}).get("action") for r in results.records] == [
        "recorded",
        None,
        "judged",
        "judged",
    ]
    assert results.missing_only() == [
        {"test": "tests/test_perf.py::test_a[cpu-all]", "kind": "latency", **recorded["update_missing"]},
        {"test": "tests/test_perf.py::test_x[cpu-all]", "kind": "accuracy", **judged["update_missing"]},
    ]
    # an xdist worker's notes reach the controller with its records
    controller = RunResults()
    handed = results.handover(missing_machines=[], traces={})
    controller.take_over(json.loads(json.dumps(handed)))
    assert controller.missing_only() == results.missing_only()


def test_figures_added_to_an_existing_entry_are_counted_apart_from_new_tests() -> None:
    results = RunResults()
    added = replace(
        result("test_a", "cpu-all", Status.NEW, 10.0), changes=("figures of this hardware added",)
    )
    publish(results, added, "tests/test_perf.py::test_a[cpu-all]")
    publish(results, result("test_b", "cpu-all", Status.NEW, 5.0), "tests/test_perf.py::test_b[cpu-all]")
    assert results.statuses() == ["new", "new"]
    assert results.added_here() == 1


def test_checks_timing_off_skipped_are_counted_kind_by_kind() -> None:
    results = RunResults()
    for kind, test in (("latency", "a"), ("throughput", "a"), ("latency", "b"), ("accuracy", "a")):
        verdict = "ok" if kind == "accuracy" else "not timed"
        results.add({"test": f"t.py::test_{test}", "kind": kind, "verdict": verdict, "failed": False})
    assert results.not_timed() == {"latency": 2, "throughput": 1}
    assert summary_lines(RunSummary(machine="ci", not_timed=results.not_timed())) == [
        "timing off (--ortperf-timing=off): 2 latency checks and 1 throughput check not timed; sessions were "
        "run and accuracy checks compared outputs"
    ]
