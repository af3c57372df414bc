"""--ortperf-canary end to end: parsing, canary medians in recorded baselines, and which statistic decides
when the baseline and the current run did or did not measure the canary. Real sessions."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.conftest import reexport

# The verdict does not matter here, only what decided it: a threshold no busy machine reaches.
QUICK = ("--ortperf-budget=0.2", "--ortperf-max-cv=1000%")
LENIENT = (*QUICK, "--ortperf-latency-threshold=500%")
PASSING = {"ok", "inconclusive", "inconclusive (not confirmed)", "improved"}
TEST = "test_latency[cpu-all]"


def _latency(baseline_file: Path) -> dict[str, Any]:
    (figures,) = json.loads(baseline_file.read_text())["entries"][TEST]["figures"].values()
    latency: dict[str, Any] = figures["latency"]
    return latency


def _check(pytester: pytest.Pytester, *args: str) -> dict[str, Any]:
    """Compare against the stored baseline; the one latency record of the JSON report."""
    result = pytester.runpytest(*LENIENT, "--ortperf-report=r.json", *args)
    result.assert_outcomes(passed=1)
    (record,) = json.loads((pytester.path / "r.json").read_text())["checks"]
    assert record["test"] == f"test_gate.py::{TEST}"
    assert record["verdict"] in PASSING
    return record


# parsing ---------------------------------------------------------------------


def test_a_bad_canary_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--ortperf-canary=maybe")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ortperf-canary: expected on or off, got 'maybe'*"])


def test_a_bad_canary_ini_value_names_the_ini_key(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nortperf_canary = sometimes\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini ortperf_canary: expected on or off, got 'sometimes'*"])


# recording -------------------------------------------------------------------


@pytest.mark.slow
def test_update_records_one_canary_median_per_round(pytester: pytest.Pytester, latency_suite: Path) -> None:
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    latency = _latency(latency_suite)
    canary = latency["canary_round_medians_ms"]
    assert len(canary) == latency["rounds"] == len(latency["round_medians_ms"])
    # the default: a fast model fills every round of each measurement (an unsettled recording measures again)
    assert latency["rounds"] % 40 == 0
    assert all(isinstance(c, float) and c > 0 for c in canary)
    reexport(pytester)  # other bytes, same work: the stored figures decide

    # Compared with the canary on both sides: relative to it.
    record = _check(pytester)
    assert "machine-speed canary" in record["decided_by"]
    # (a noisy recording's spread widens the interval, and says so after the statistic)
    assert fnmatch.fnmatch(
        record["decided_by"],
        "stored: fastest quarter of round medians / machine-speed canary (10 of 40 rounds vs * of *), "
        "Hodges-Lehmann ratio*",
    )

    # The same baseline compared without the canary: absolute round medians, and it still works.
    record = _check(pytester, "--ortperf-canary=off")
    assert record["decided_by"].startswith("stored: fastest quarter of round medians (")
    assert "canary" not in record["decided_by"]
    assert record["change"]["ratio"] > 0


def test_update_without_the_canary_records_no_canary_medians(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    missing = pytester.runpytest("--ortperf-canary=off", *QUICK)
    missing.assert_outcomes(failed=1)
    # The command that records the baseline measures it the same way.
    missing.stdout.fnmatch_lines(
        ["    ortperf update 'test_gate.py::test_latency[[]cpu-all[]]' --ortperf-canary=off *"]
    )

    pytester.runpytest("--ortperf-update", "--ortperf-canary=off", *QUICK).assert_outcomes(passed=1)
    latency = _latency(latency_suite)
    assert "canary_round_medians_ms" not in latency
    assert "canary_round_medians_ms" not in latency_suite.read_text()
    (figures,) = json.loads(latency_suite.read_text())["entries"]["test_latency[cpu-all]"]["figures"].values()
    assert figures["measured_on"]["measurement"]["canary"] is False  # how it was measured, recorded
    assert len(latency["round_medians_ms"]) == latency["rounds"]
    reexport(pytester)  # other bytes, same work: the stored figures decide

    # A current run with the canary against this baseline falls back to absolute round medians.
    record = _check(pytester)
    assert record["decided_by"].startswith("stored: fastest quarter of round medians (")
    assert "canary" not in record["decided_by"]
