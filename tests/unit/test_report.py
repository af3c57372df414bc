"""Report lines: the latency table and the summary of an update run."""

from __future__ import annotations

from pathlib import Path

from pytest_ortperf.baselines import BaselineEntry
from pytest_ortperf.checks import CheckKey, LatencyResult
from pytest_ortperf.compare import Comparison, RatioEstimate, Verdict
from pytest_ortperf.report import latency_rows, latency_table, update_lines
from pytest_ortperf.run import UpdateReport
from pytest_ortperf.stats import LatencyStats


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
    entry = None if baseline is None else BaselineEntry(variant, "2025-01-02", latency(baseline))
    comparison = None if estimate is None else Comparison(estimate, 0.1, Verdict.OK)
    return LatencyResult(
        key=key, status=status, current=latency(current), baseline=entry, comparison=comparison
    )


RESULTS = [
    result("test_squeezenet", "cpu-all", "ok", 10.2, 10.0, RatioEstimate(1.02, 0.99, 1.05, 0.99)),
    result("test_resnet", "cuda-extended", "regression", 1.5, 1.0, RatioEstimate(1.5, 1.4, 1.6, 0.99)),
    result("test_new", "cpu-all", "missing", 123.456),
]


def test_latency_rows_strip_the_variant_from_the_test_name() -> None:
    assert latency_rows(RESULTS) == [
        (
            "tests/test_perf.py::test_squeezenet",
            "cpu-all",
            "stored",
            "10 ms",
            "10.2 ms",
            "+2.0% (99% CI -1.0% .. +5.0%)",
            "ok",
        ),
        (
            "tests/test_perf.py::test_resnet",
            "cuda-extended",
            "stored",
            "1 ms",
            "1.5 ms",
            "+50.0% (99% CI +40.0% .. +60.0%)",
            "regression",
        ),
        ("tests/test_perf.py::test_new", "cpu-all", "stored", "-", "123.5 ms", "-", "missing"),
    ]


def _table(results: list, machine: str) -> list[str]:
    missing = sum(r.status == "missing" for r in results)
    return latency_table(latency_rows(results), machine, missing=missing)


def test_latency_table_is_aligned_and_names_the_machine() -> None:
    lines = _table(RESULTS, "ci-large")
    assert lines[0].startswith("latency on machine 'ci-large' (reference and current: medians of all runs; change:")
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


def test_update_lines_mention_refused_checks() -> None:
    report = UpdateReport(new=1, refused=2)
    assert update_lines(report, prune=False) == [
        "ortperf update: 0 updated, 1 new, 0 unchanged, 0 unused, 2 refused (too noisy)"
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
