"""The typed record every check's record enters the run as (``checks/record.py``)."""

from __future__ import annotations

import json
from typing import Any

from pytest_ortperf.checks.record import CheckRecord, check_in_report
from pytest_ortperf.reports.results import RunResults


def latency(**extra: Any) -> dict[str, Any]:
    return {
        "test": "tests/test_perf.py::test_n[cpu-all]",
        "kind": "latency",
        "variant": "cpu-all",
        "machine": "ci",
        "entry": ["tests/test_perf.py", "test_n[cpu-all]"],
        "verdict": "regression",
        "failed": True,
        "change_summary": "+12.0% (99.9% CI +8.0% .. +16.0%)",
        "mode": "baseline",
        "path": "side by side",
        "current": {"median_ms": 1.12, "round_medians_ms": [1.1, 1.12]},
        "baseline": {"median_ms": 1.0, "round_medians_ms": [1.0, 1.01]},
        "reference": None,
        "change": {"ratio": 1.12, "low": 1.08, "high": 1.16, "threshold": 0.03},
        "recorded_spread": 0.142,
        "noisy": True,
        "noise": "spread 14.2% > max-cv 10%",
        "message": "slower",
        **extra,
    }


def test_the_common_fields_and_a_latency_checks_medians_are_typed() -> None:
    record = CheckRecord.of(latency())
    assert (record.test, record.kind, record.verdict, record.failed) == (
        "tests/test_perf.py::test_n[cpu-all]",
        "latency",
        "regression",
        True,
    )
    assert record.entry == ("tests/test_perf.py", "test_n[cpu-all]")
    assert record.change == "+12.0% (99.9% CI +8.0% .. +16.0%)"
    assert record.medians is not None
    assert (record.medians.current_ms, record.medians.compared_ms) == (1.12, 1.0)
    assert record.ratio == 1.12
    assert record.recording.noisy
    assert record.recording.noise.startswith("spread")
    assert record.recording.settled  # a recorded spread, not a short recording
    assert record.accept is None  # nothing to accept was noted


def test_the_record_is_its_fields_so_the_json_report_writes_it_unchanged() -> None:
    data = latency()
    record = CheckRecord.of(data)
    assert record == data
    assert dict(record) == data
    assert json.loads(json.dumps(record.as_dict())) == json.loads(json.dumps(data))
    assert CheckRecord.of(record) is record
    assert record.with_fields(accept="").accept == ""  # typed again, the other fields kept
    assert record.with_fields(accept="").change == record.change


def test_a_damaged_record_from_a_file_reads_as_empty_fields_instead_of_raising() -> None:
    record = CheckRecord.of(
        {
            "test": 3,
            "kind": "latency",
            "verdict": None,
            "entry": "x",
            "current": [1],
            "change": "?",
            "noisy": 0,
        }
    )
    assert (record.test, record.verdict, record.entry, record.medians, record.ratio) == (
        "3",
        "",
        None,
        None,
        None,
    )
    assert not record.failed
    assert not record.recording.noisy
    assert record.explanations == ()
    assert record.references == ()
    assert record.damaged == ("change", "current", "entry")  # said, not dropped unsaid
    assert CheckRecord.of(latency()).damaged == ()


def test_a_change_text_of_a_kind_without_a_table_of_its_own_is_the_change() -> None:
    assert CheckRecord.of({"kind": "memory", "change_text": "+3.1 MB"}).change == "+3.1 MB"
    assert CheckRecord.of({"kind": "memory"}).change == "-"


def test_records_cross_from_an_xdist_worker_to_the_controller_typed_and_equal() -> None:
    worker = RunResults()
    kept = worker.add(latency())
    assert isinstance(kept, CheckRecord)
    handed = json.loads(json.dumps(worker.handover(missing_machines=[], traces={})))
    controller = RunResults()
    controller.take_over(handed)
    assert controller.records == worker.records
    assert all(isinstance(record, CheckRecord) for record in controller.records)
    assert controller.noisy_recordings() == [
        "tests/test_perf.py::test_n[cpu-all] (spread 14.2% > max-cv 10%)"
    ]


def test_a_reports_check_is_found_by_its_tests_path_and_kind_and_a_damaged_report_holds_none() -> None:
    """What a bisect reads of the report a run in another directory wrote: the test by its node id's
    path from its last ``/``, the first check of the kind asked for."""
    report = {
        "checks": [
            {"test": "tests/test_m.py::test_a[cpu-all]", "kind": "graph", "verdict": "ok"},
            {"test": "tests/test_m.py::test_a[cpu-all]", "kind": "latency", "verdict": "regression"},
            "not a record",
        ]
    }
    found = check_in_report(report, "/elsewhere/tests/test_m.py::test_a[cpu-all]", "latency")
    assert found is not None
    assert found.verdict == "regression"
    assert check_in_report(report, "tests/test_m.py::test_b[cpu-all]", "latency") is None
    assert check_in_report(report, "tests/test_m.py::test_a[cpu-all]", "memory") is None
    assert check_in_report({"checks": "damaged"}, "tests/test_m.py::test_a[cpu-all]", "latency") is None
