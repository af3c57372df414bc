"""Report lines: the latency table and the summary of an update run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pytest_ortperf.accuracy.metrics import compare_output
from pytest_ortperf.accuracy.tolerances import Tolerance
from pytest_ortperf.checks.latency_figures import latency_figures
from pytest_ortperf.checks.latency_verdicts import LatencyResult
from pytest_ortperf.errors import UsageError
from pytest_ortperf.latency.decision import Comparison, RatioEstimate, Verdict
from pytest_ortperf.latency.lock_holder import LockHolder, LockWait, clock_text
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.reports.ci_files import (
    error_record,
    figure,
    gate_time,
    latency_record,
    markdown,
    output_record,
    report_document,
)
from pytest_ortperf.reports.terminal import (
    RunSummary,
    UpdateReport,
    inputs_lines,
    latency_rows,
    latency_table,
    lock_wait_lines,
    lost_worker_line,
    summary_lines,
    update_lines,
)
from pytest_ortperf.store.keys import CheckKey, check_name, split_check_name, with_check_name


def rows_of(results: Sequence[LatencyResult]) -> list[tuple[str, ...]]:
    """The latency table's rows of ``results``, read from their records as the run reads them."""
    return latency_rows([latency_record(r, f"{r.key.test_file}::{r.key.test}") for r in results])


def latency(median: float) -> LatencyStats:
    return LatencyStats(
        count=30,
        rounds=3,
        min_ms=median,
        median_ms=median,
        mean_ms=median,
        stdev_ms=0.0,
        iqr_ms=0.0,
        p90_ms=median,
        p95_ms=median,
        p99_ms=median,
        cv=0.0,
        round_cv=0.0,
        throughput_per_s=1000 / median,
        round_medians_ms=(median, median, median),
    )


def result(
    test: str,
    variant: str,
    status: str,
    current: float,
    baseline: float | None = None,
    estimate: RatioEstimate | None = None,
) -> LatencyResult:
    key = CheckKey("tests/test_perf.py", f"{test}[{variant}]", variant, "ci", f"ortperf update '{test}'")
    figures = None if baseline is None else latency_figures("2025-01-02", latency(baseline))
    comparison = None if estimate is None else Comparison(estimate, 0.1, Verdict.OK)
    return LatencyResult(
        key=key, status=status, current=latency(current), baseline=figures, comparison=comparison
    )


RESULTS = [
    result("test_squeezenet", "cpu-all", "ok", 10.2, 10.0, RatioEstimate(1.02, 0.99, 1.05, 0.99)),
    result("test_resnet", "cuda-extended", "regression", 1.5, 1.0, RatioEstimate(1.5, 1.4, 1.6, 0.99)),
    result("test_new", "cpu-all", "missing", 123.456),
]


def test_latency_rows_strip_the_variant_from_the_test_name() -> None:
    assert rows_of(RESULTS) == [
        (
            "tests/test_perf.py::test_squeezenet",
            "cpu-all",
            "stored",
            "median 10 ms",
            "median 10.2 ms",
            "+2.0% (99% CI -1.0% .. +5.0%)",
            "ok",
        ),
        (
            "tests/test_perf.py::test_resnet",
            "cuda-extended",
            "stored",
            "median 1 ms",
            "median 1.5 ms",
            "+50.0% (99% CI +40.0% .. +60.0%)",
            "regression",
        ),
        ("tests/test_perf.py::test_new", "cpu-all", "stored", "-", "median 123.5 ms", "-", "missing"),
    ]


def _table(results: list, machine: str) -> list[str]:
    missing = sum(r.status == "missing" for r in results)
    return latency_table(rows_of(results), machine, missing=missing)


def test_latency_table_is_aligned_and_names_the_machine() -> None:
    lines = _table(RESULTS, "ci-large")
    assert lines[0] == (
        "latency on machine 'ci-large' (change: current/reference by the statistic it names, which decided; "
        "the medians beside it can differ)"
    )
    header, *rows = lines[1:5]
    assert header.split() == ["test", "variant", "mode", "reference", "current", "change", "verdict"]
    assert rows[0].split("  ")[0] == "tests/test_perf.py::test_squeezenet"
    # every column starts at the same offset on every line
    for column in ("variant", "mode", "reference", "current", "change", "verdict"):
        offset = header.index(column)
        for row in rows:
            assert row[offset - 2 : offset] == "  "
            assert row[offset] != " "
    assert rows[1].index("cuda-extended") == header.index("variant")
    assert rows[2].endswith("missing")
    assert all(line == line.rstrip() for line in lines)


def test_latency_table_tells_how_to_record_missing_baselines() -> None:
    lines = _table(RESULTS, "ci-large")
    assert len(lines) == 6
    assert lines[-1] == (
        "1 check(s) have no baseline for machine 'ci-large'; record them with 'ortperf update' and the "
        "same arguments (or pytest --ortperf-update)."
    )


def test_the_hint_to_record_names_the_runner_class_to_record_for() -> None:
    lines = _table(RESULTS, "gha-x64@zen3-avx2-2c-1a2b3c")
    assert lines[-1].endswith("(or pytest --ortperf-update) and ORTPERF_MACHINE=gha-x64.")


def test_latency_table_without_missing_baselines_has_no_hint() -> None:
    lines = _table(RESULTS[:2], "ci")
    assert len(lines) == 4
    assert not any("no baseline" in line for line in lines)


def test_latency_table_of_nothing_is_empty() -> None:
    assert _table([], "ci") == []


def test_update_lines_count_everything_and_list_written_files() -> None:
    report = UpdateReport(new=2, updated=1, unchanged=5, written=[Path("b/tests/test_a.py.json")])
    assert update_lines(report, prune=False) == [
        "ortperf update: 1 updated, 2 new, 5 unchanged, 0 unused",
        "wrote b/tests/test_a.py.json",
    ]


def test_figures_added_for_this_hardware_are_not_counted_new_and_kept_figures_say_why() -> None:
    """A record job on a new runner CPU adds figures to 24 existing entries and writes one new test;
    it says so, not "25 new"."""
    kept = "tests/test_a.py::test_m[cpu-all]: stored figures kept: quieter (spread 2.0%) than this recording"
    report = UpdateReport(new=25, added_here=24, unchanged=3, kept=[kept])
    lines = update_lines(report, prune=False)
    assert lines[0] == (
        "ortperf update: 0 updated, 1 new, 24 added for this hardware, 3 unchanged, 0 unused "
        "(1 of the unchanged kept over noisier figures)"
    )
    assert lines[1].startswith("stored figures kept (an unchanged recipe never takes noisier figures")
    assert lines[2] == f"  {kept}"


def test_a_zero_code_item_is_named_by_its_model_in_messages() -> None:
    collected = CheckKey("models/ocr.onnx", "accuracy[cpu-all]", "cpu-all", "ci", "ortperf update")
    written = CheckKey("tests/test_m.py", "test_m[cpu-all]", "cpu-all", "ci", "ortperf update")
    assert (collected.shown, written.shown) == ("models/ocr.onnx::accuracy[cpu-all]", "test_m[cpu-all]")


def test_update_lines_say_what_update_missing_recorded_and_what_it_judged() -> None:
    """A figure taken in is never mistaken for a verdict: checks whose recipe changed are named."""
    changed = {
        "action": "judged",
        "reason": "...",
        "changes": ["model sha256 aaa -> bbb", "input data c -> d"],
    }
    notes = [
        {
            "test": "t.py::test_a[cpu-all]",
            "kind": "latency",
            "action": "recorded",
            "reason": "never recorded",
        },
        {"test": "t.py::test_b[cpu-all]", "kind": "accuracy", "action": "judged", "changes": []},
        {"test": "t.py::test_c[cpu-all]", "kind": "latency", **changed},
    ]
    assert update_lines(UpdateReport(new=1, missing_only=notes), prune=False) == [
        "ortperf update: 0 updated, 1 new, 0 unchanged, 0 unused",
        "--ortperf-update=missing: 1 check(s) recorded (never recorded, or figures this hardware lacked "
        "under an unchanged recipe); 2 judged as in a plain run, nothing written for them",
        "judged, not recorded: their recipe changed since it was recorded (a changed model, settings, "
        "inputs or runtime is never taken in; accept it with a plain 'ortperf update'):",
        "  t.py::test_c[cpu-all] (latency): model sha256 aaa -> bbb; input data c -> d",
    ]
    # a plain update says nothing of it
    assert not any("missing" in line for line in update_lines(UpdateReport(new=1), prune=False))


def test_update_lines_count_and_list_noisy_figures() -> None:
    """An update never refuses: figures written although they did not settle are counted and listed."""
    noisy = ["t.py::test_a[cpu-all] (spread 14.2%)", "t.py::test_b[cpu-all] (spread 20.0%)"]
    report = UpdateReport(new=1, noisy=noisy)
    assert update_lines(report, prune=False) == [
        "ortperf update: 0 updated, 1 new, 0 unchanged, 0 unused, 2 noisy",
        "noisy figures (written with their spread; where they decide, the spread widens the interval; "
        "record them again on a quieter machine to sharpen them):",
        "  t.py::test_a[cpu-all] (spread 14.2%)",
        "  t.py::test_b[cpu-all] (spread 20.0%)",
    ]


def test_update_lines_list_unused_baselines_kept_or_pruned() -> None:
    report = UpdateReport(
        unused=["tests/test_a.py::test_old[cpu-all]", "tests/test_b.py::test_gone[cpu-all]"]
    )
    kept = update_lines(report, prune=False)
    assert kept == [
        "ortperf update: 0 updated, 0 new, 0 unchanged, 2 unused",
        "unused baselines (kept; --ortperf-prune deletes them):",
        "  tests/test_a.py::test_old[cpu-all]",
        "  tests/test_b.py::test_gone[cpu-all]",
    ]
    pruned = update_lines(report, prune=True)
    assert pruned[1] == "unused baselines (pruned):"
    assert pruned[2:] == kept[2:]


def test_latency_rows_keep_the_name_of_a_tests_second_check() -> None:
    key = CheckKey("tests/test_perf.py", "test_two[cpu-all]#2", "cpu-all", "ci", "ortperf update 'x'")
    (row,) = rows_of([LatencyResult(key=key, status="ok", current=latency(1.0))])
    assert row[0] == "tests/test_perf.py::test_two#2"


def test_an_unchanged_check_names_the_machine_only_where_the_canary_measured_it_on_both_sides() -> None:
    """A check's drift is its own; the machine's is the canary's, shared by every check."""
    stored = replace(latency(10.0), canary_round_medians_ms=(2.0, 2.0, 2.0))
    now = replace(latency(13.0), canary_round_medians_ms=(2.2, 2.2, 2.2))
    unchanged = replace(
        result("test_squeezenet", "cpu-all", "unchanged", 13.0, 10.0),
        mode="unchanged",
        drift=1.3,
        current=now,
        baseline=latency_figures("2025-01-02", stored),
    )
    assert (
        unchanged.change
        == "1.30x slower than at recording (machine 1.10x slower than at recording, by the canary); nothing changed"
    )
    record = latency_record(unchanged, "tests/test_perf.py::test_squeezenet[cpu-all]")
    assert record["drift"]["machine_ratio"] == pytest.approx(1.1)


@pytest.mark.parametrize(
    ("test", "parts"),
    [
        ("test_a[cpu-all]", ("test_a[cpu-all]", "")),
        ("test_a[cpu-all]#2", ("test_a[cpu-all]", "#2")),
        ("test_a#big", ("test_a", "#big")),
        ("test_a[x#y]", ("test_a[x#y]", "")),  # a '#' in a parameter id is part of the test
        ("test_a[x#y]#big", ("test_a[x#y]", "#big")),
    ],
)
def test_check_names_split_off_the_test(test: str, parts: tuple[str, str]) -> None:
    assert split_check_name(test) == parts
    assert with_check_name(parts[0], parts[1].lstrip("#")) == test


@pytest.mark.parametrize("name", ["", "2", "a b", "a]", "x" * 65, 3, None])
def test_bad_check_names_are_usage_errors(name: object) -> None:
    with pytest.raises(UsageError, match="check name"):
        check_name(name)


def test_lost_worker_lines_say_what_was_lost() -> None:
    assert lost_worker_line("gw1", update=True) == (
        "worker gw1 went down: its staged baselines were not written; rerun the update for the tests it ran"
    )
    assert "missing from this summary and the reports" in lost_worker_line("gw1", update=False)


KEY = CheckKey("tests/test_perf.py", "test_a[cpu-all]#2", "cpu-all", "ci", "ortperf update 'x'")


def test_an_error_is_a_failed_check_in_every_report() -> None:
    error = error_record(
        KEY, kind="latency", nodeid="tests/test_perf.py::test_a[cpu-all]", message="timed out\nmore"
    )
    assert error == {
        "test": "tests/test_perf.py::test_a[cpu-all]",
        "kind": "latency",
        "variant": "cpu-all",
        "machine": "ci",
        "entry": ["tests/test_perf.py", "test_a[cpu-all]#2"],
        "verdict": "error",
        "failed": True,
        "message": "timed out\nmore",
    }
    document = report_document(
        [error], machine="ci", runtime="ort", version="1", traces={}, unused=[], run_errors=["lost gw0"]
    )
    assert (document["failed"], document["errors"], document["run_errors"]) == (1, 1, ["lost gw0"])
    text = markdown([error], machine="ci", unused=[], run_errors=["lost gw0"])
    assert "**ERROR**: lost gw0" in text
    assert "1 checks, **1 failed** (1 with an error)." in text
    assert "| ❌ | `tests/test_perf.py::test_a[cpu-all]` | cpu-all | latency | - | - | - | error |  |" in text
    assert "- `tests/test_perf.py::test_a[cpu-all]` (latency): timed out" in text


def test_an_empty_run_still_has_a_report() -> None:
    document = report_document([], machine="ci", runtime="ort", version="1", traces={}, unused=[])
    assert (document["checks"], document["failed"], document["errors"]) == ([], 0, 0)
    assert "0 checks, **0 failed**." in markdown([], machine="ci", unused=[])


def test_output_records_carry_every_metric_the_worst_element_and_the_tolerance() -> None:
    tolerance = Tolerance(atol=1e-5, rtol=1e-4, cosine=0.99999)
    actual = np.zeros((2, 10), dtype=np.float32)
    actual[1, 3] = 0.5
    expected = np.zeros((2, 10), dtype=np.float32)
    expected[1, 3] = 0.25
    comparison = compare_output("y", actual, expected, tolerance, "baseline")
    record = output_record(comparison)
    assert record["max_abs"] == pytest.approx(0.25)
    assert record["mean_abs"] == pytest.approx(0.25 / 20)
    assert record["worst"] == {"index": [1, 3], "actual": 0.5, "expected": 0.25}
    assert (record["top1"], record["topk"]) == (comparison.top1, comparison.topk)
    assert {k: record["tolerance"][k] for k in ("atol", "rtol", "cosine")} == {
        "atol": 1e-5,
        "rtol": 1e-4,
        "cosine": 0.99999,
    }
    json.dumps(record, allow_nan=False)


def test_output_records_of_a_changed_shape_have_no_worst_element_and_stay_valid_json() -> None:
    tolerance = Tolerance(atol=1e-5, rtol=1e-4, cosine=0.99999)
    changed = output_record(
        compare_output("y", np.zeros(3, np.float32), np.zeros(4, np.float32), tolerance, "baseline")
    )
    assert changed["worst"] is None
    assert changed["problem"].startswith("shape changed")
    nan = output_record(
        compare_output(
            "y", np.array([np.nan, 1.0], np.float32), np.ones(2, np.float32), tolerance, "baseline"
        )
    )
    json.dumps(nan, allow_nan=False)


def _timed(test: str, variant: str, **seconds: float) -> dict[str, object]:
    return {
        "test": test,
        "kind": "latency",
        "variant": variant,
        "failed": False,
        "verdict": "ok",
        "current": {"median_ms": 1.0, "round_medians_ms": [1.0]},  # a check that timed rounds
        "seconds": seconds,
    }


def test_gate_time_sums_the_phases_of_every_latency_check_and_names_the_slowest() -> None:
    records = [
        _timed("t.py::test_a[cpu-all]", "cpu-all", building=0.5, warming=0.25, measuring=2.0),
        _timed("t.py::test_b", "cuda-all", warming=0.25, measuring=3.0, confirming=4.0),
        {
            "test": "t.py::test_a[cpu-all]",
            "kind": "accuracy",
            "variant": "cpu-all",
            "failed": False,
            "verdict": "ok",
        },
        error_record(
            CheckKey("t.py", "test_c", "cpu-all", "m", "u"),
            kind="latency",
            nodeid="t.py::test_c",
            message="x",
        ),
    ]
    assert gate_time(records) == (
        "gate time: 10.0 s over 2 latency checks (building 0.5 s, warming 0.5 s, measuring 5.0 s, "
        "confirming 4.0 s); slowest t.py::test_b [cuda-all] 7.2 s"
    )
    text = markdown(records, machine="m", unused=())
    assert "The gate time: 10.0 s over 2 latency checks" in text
    assert gate_time(records[2:]) == ""  # no timed check: nothing to say
    one = gate_time(records[:1])
    assert one.startswith("gate time: 2.8 s over 1 latency check (")
    assert "slowest" not in one


def test_an_unchanged_check_shows_its_drift_in_the_markdown_change_column_as_in_the_terminal() -> None:
    unchanged = replace(
        result("test_squeezenet", "cpu-all", "unchanged", 10.4, 10.0), mode="unchanged", drift=1.04
    )
    (row,) = rows_of([unchanged])
    assert (
        row[5] == "1.04x slower than at recording; nothing changed"
    )  # this check's drift, not the machine's
    record = latency_record(unchanged, "tests/test_perf.py::test_squeezenet[cpu-all]")
    assert record["change"] is None
    assert record["drift"] == {"ratio": 1.04, "text": row[5]}
    text = markdown([record], machine="ci", unused=())
    assert (
        "| ✅ | `tests/test_perf.py::test_squeezenet[cpu-all]` | cpu-all | latency | median 10 ms | median 10.4 ms | "
        "1.04x slower than at recording; nothing changed | unchanged | unchanged |"
    ) in text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.30934310000000004, 0.309343),  # a median from nanoseconds / 1e6
        (123.456789, 123.457),
        (1e-7 / 3, 3.33333e-08),
        (1.0234567891, 1.0234568),  # a ratio: 6 digits of +2.34567891%
        (0.9999991234567, 0.999999123457),  # a cosine: 6 digits of 1-cos
        (1.0000000000000002, 1.0),
        (0.0, 0.0),
        (-2.0000000000000004, -2.0),
    ],
)
def test_report_figures_keep_six_significant_digits_or_six_of_their_distance_from_one(
    value: float, expected: float
) -> None:
    assert figure(value) == expected


def test_the_report_document_rounds_every_float_in_one_place() -> None:
    record = {
        "test": "t.py::test_a",
        "kind": "latency",
        "variant": "cpu-all",
        "failed": False,
        "verdict": "ok",
        "current": {"median_ms": 0.30934310000000004, "rounds": 40},
        "change": {"ratio": 1.0234567891, "low": float("inf"), "high": float("nan")},
        "seconds": {"measuring": 2.0123456789, "warming": 0.00049},
        "references": [{"outputs": [{"cosine": 0.9999991234567, "count": 3}]}],
    }
    document = report_document([record], machine="m", runtime="r", version="1", traces={}, unused=[])
    (check,) = document["checks"]
    assert check["current"] == {"median_ms": 0.309343, "rounds": 40}
    assert check["change"] == {"ratio": 1.0234568, "low": "inf", "high": "nan"}
    assert check["seconds"] == {"measuring": 2.012, "warming": 0.0}
    assert check["references"][0]["outputs"][0] == {"cosine": 0.999999123457, "count": 3}
    assert record["current"]["median_ms"] == 0.30934310000000004  # the records themselves are kept
    json.dumps(document, allow_nan=False)


def test_who_held_the_timing_lock_is_said_for_checks_that_waited_over_a_second() -> None:
    since = 1_741_000_000.0
    other = LockHolder(1234, "pytest tests/ -k mlp", since)
    later = LockHolder(1234, "pytest tests/ -k mlp", since + 40)
    sibling = LockHolder(77, "pytest -n 2", since, worker="gw1", this_run=True)
    # what a worker hands over: JSON
    records = json.loads(
        json.dumps(
            [
                {
                    **_timed("t.py::test_a", "cpu-all", measuring=1.0, waiting=20.0),
                    "timing_lock": [LockWait(18.0, other).as_dict(), LockWait(2.0, None).as_dict()],
                },
                {
                    **_timed("t.py::test_b", "cpu-all", measuring=1.0, waiting=4.8),
                    "timing_lock": [LockWait(4.8, later).as_dict()],
                },
                {
                    **_timed("t.py::test_c", "cpu-all", measuring=1.0, waiting=3.0),
                    "timing_lock": [LockWait(3.0, sibling).as_dict()],
                },
                # a short wait is not worth a line
                {
                    **_timed("t.py::test_d", "cpu-all", measuring=1.0, waiting=0.9),
                    "timing_lock": [LockWait(0.9, LockHolder(555, "pytest other/", since)).as_dict()],
                },
                # a damaged record says nothing rather than failing the summary
                {**_timed("t.py::test_e", "cpu-all", waiting=5.0), "timing_lock": [{"seconds": "long"}, "x"]},
            ]
        )
    )
    assert lock_wait_lines(records) == [
        f"waiting 22.8 s for the timing lock, held by pid 1234 (pytest tests/ -k mlp) since {clock_text(since)}",
        "waiting 2.0 s for the timing lock, held by a process the lock file does not name"
        " (an older pytest-ortperf, or one that has ended)",
        "waiting 3.0 s for the timing lock, held by this run's xdist worker gw1",
    ]
    assert lock_wait_lines(records[3:]) == []
    waits = lock_wait_lines(records[:1])
    assert len(waits) == 2
    summary = summary_lines(RunSummary(machine="m", gate_time="gate time: 1 s", lock_waits=waits))
    assert summary[-3:] == ["gate time: 1 s", *waits]
    many = [
        {
            **_timed(f"t.py::test_{pid}", "cpu-all", waiting=2.0),
            "timing_lock": [LockWait(2.0, LockHolder(pid, "p", since)).as_dict()],
        }
        for pid in range(10, 15)
    ]
    assert lock_wait_lines(many)[-1] == "waiting 4.0 s for the timing lock, held by 2 other processes"
    assert len(lock_wait_lines(many)) == 4


def test_a_repair_names_what_it_kept_and_each_part_only_in_the_damaged_copy() -> None:
    from pytest_ortperf.reports.terminal import repaired_lines
    from pytest_ortperf.store.baselines import Repaired

    path, backup = Path("b/t.py.json"), Path("b/t.py.json.damaged-20250102-101500")
    assert repaired_lines(Repaired(Path("b/o.npz"), Path("b/o.npz.damaged-1"))) == [
        "repaired b/o.npz: the damaged file was kept as o.npz.damaged-1"
    ]
    assert repaired_lines(Repaired(path, backup, kept=1)) == [
        "repaired b/t.py.json: the damaged file was kept as t.py.json.damaged-20250102-101500; "
        "1 entry still readable in it kept"
    ]
    lines = repaired_lines(Repaired(path, backup, kept=3, lost=("entry 'a' (x)", "lines 4-9 (y)")))
    assert lines[0].endswith("; 3 entries still readable in it kept")
    assert lines[1].startswith(
        "WARNING: 2 damaged parts of b/t.py.json are only in t.py.json.damaged-20250102-101500, not recorded "
        "afresh by this run"
    )
    assert lines[2:] == ["  entry 'a' (x)", "  lines 4-9 (y)"]


def test_the_inputs_fed_are_in_the_latency_record_and_one_line_per_set_under_the_table() -> None:
    fed = {"x": "float32[1, 3, 64, 64]"}
    records = [
        latency_record(
            replace(
                result("test_det", variant, "ok", 1.0, 1.0), inputs=fed, inputs_source="synthetic(seed=0)"
            ),
            f"tests/test_det.py::test_det[{variant}]",
        )
        for variant in ("cpu-all", "cpu-disabled")
    ]
    assert records[0]["inputs"] == fed
    assert records[0]["inputs_source"] == "synthetic(seed=0)"
    zoo = replace(
        result("test_zoo", "cpu-all", "ok", 1.0),
        inputs={"a": "int64[2]", "b": "float32[]"},
        inputs_source="test_data_set_0",
    )
    records.append(latency_record(zoo, "tests/test_zoo.py::test_zoo[cpu-all]"))
    records.append(latency_record(result("test_old", "cpu-all", "ok", 1.0), "t.py::test_old[cpu-all]"))
    assert "inputs" not in records[-1]  # a result that knows nothing of its inputs claims nothing
    records.append({"kind": "accuracy", "test": "t.py::test_acc[cpu-all]", "inputs": fed})
    assert inputs_lines(records) == [
        "inputs: x float32[1, 3, 64, 64] (synthetic(seed=0)) for tests/test_det.py::test_det",
        "inputs: a int64[2], b float32[] (test_data_set_0) for tests/test_zoo.py::test_zoo",
    ]
    many = [
        {
            "kind": "latency",
            "test": f"t.py::test_{i}[cpu-all]",
            "variant": "cpu-all",
            "current": {"median_ms": 1.0, "round_medians_ms": [1.0]},
            "inputs": fed,
        }
        for i in range(5)
    ]
    assert inputs_lines(many) == [
        "inputs: x float32[1, 3, 64, 64] for t.py::test_0, t.py::test_1, t.py::test_2 and 2 more"
    ]
    summary = summary_lines(RunSummary(machine="ci", rows=rows_of(RESULTS), inputs=inputs_lines(records)))
    assert summary.index(inputs_lines(records)[0]) == summary.index("timing: ") - 2


def test_outputs_not_compared_end_the_summary_one_line_each() -> None:
    skipped = [
        "t.py::test[cpu-all]: output 'sparse' vs baseline (recorded 2026-11-27): onnxruntime returned a SparseTensor"
    ]
    assert summary_lines(RunSummary(machine="m", not_compared=skipped)) == [
        "outputs not compared (1):",
        f"  {skipped[0]}",
    ]
    assert summary_lines(RunSummary(machine="m")) == []


def test_what_fetching_recorded_runtimes_did_follows_the_sessions_line() -> None:
    fetched = (
        "fetched onnxruntime-gpu 1.31.1 (the recorded runtime) into .ortperf/envs/f62860e429ae in 15.1 s"
    )
    lines = summary_lines(RunSummary(machine="m", sessions=["sessions: 2 built"], runtimes=[fetched]))
    assert lines[:2] == ["sessions: 2 built", fetched]
