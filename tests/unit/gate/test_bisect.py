"""The search of ``ortperf bisect`` (gate/bisect.py), with judges made of plain lists of outcomes."""

from __future__ import annotations

import pytest
from packaging.version import Version

from pytest_ortperf.errors import UsageError
from pytest_ortperf.gate.bisect import (
    Judgement,
    Outcome,
    bisect,
    max_comparisons,
    parse_index_versions,
    parse_runtime_range,
    releases_in,
)

PIP_OUTPUT = """onnxruntime (1.32.0)
Available versions: 1.32.0, 1.31.1, 1.31.0, 1.30.0, 1.29.0, 1.28.0, 1.27.0, 1.26.0, 1.25.1
"""


def judge_of(outcomes: list[Outcome], calls: list[tuple[int, int]]):  # type: ignore[no-untyped-def]
    def judge(index: int, attempt: int) -> Judgement:
        calls.append((index, attempt))
        return Judgement(outcomes[index], f"row {index}")

    return judge


@pytest.mark.parametrize("culprit", range(1, 9))
def test_names_the_first_bad_candidate_within_the_bound(culprit: int) -> None:
    labels = [f"c{i}" for i in range(9)]
    outcomes: list[Outcome] = ["good" if i < culprit else "bad" for i in range(9)]
    calls: list[tuple[int, int]] = []
    result = bisect(labels, judge_of(outcomes, calls))
    assert result.culprit == f"c{culprit}"
    assert result.range == (f"c{culprit - 1}", f"c{culprit}")
    assert result.comparisons == len(calls) <= max_comparisons(9)
    assert not result.ambiguous


def test_the_seven_releases_of_1_27_to_1_32_take_at_most_four_comparisons() -> None:
    labels = ["1.27.0", "1.28.0", "1.29.0", "1.30.0", "1.31.0", "1.31.1", "1.32.0"]
    outcomes: list[Outcome] = ["good", "good", "good", "good", "bad", "bad", "bad"]
    calls: list[tuple[int, int]] = []
    result = bisect(labels, judge_of(outcomes, calls))
    assert result.culprit == "1.31.0"
    assert max_comparisons(7) == 4
    assert len(calls) <= 4


def test_no_change_between_the_ends_names_no_culprit() -> None:
    calls: list[tuple[int, int]] = []
    result = bisect(["a", "b", "c"], judge_of(["good", "good", "good"], calls))
    assert result.culprit is None
    assert "no change" in result.conclusion
    assert calls == [(2, 0)]


def test_an_inconclusive_step_is_measured_again_then_reported_without_a_culprit() -> None:
    calls: list[tuple[int, int]] = []
    lines: list[str] = []
    outcomes: list[Outcome] = ["good", "good", "inconclusive", "bad", "bad"]
    result = bisect(list("abcde"), judge_of(outcomes, calls), retries=2, progress=lines.append)
    assert result.culprit is None
    assert (2, 0) in calls
    assert (2, 1) in calls
    assert (2, 2) in calls
    assert result.range == ("a", "e")
    assert "inconclusive" in result.conclusion
    assert "no culprit" in result.conclusion
    assert any("again" in line for line in lines)
    assert result.as_dict()["steps"][-1]["attempts"] == 3


def test_a_step_that_becomes_decisive_with_more_budget_counts_its_attempts() -> None:
    seen: list[tuple[int, int]] = []

    def judge(index: int, attempt: int) -> Judgement:
        seen.append((index, attempt))
        if index == 1 and attempt == 0:
            return Judgement("inconclusive")
        return Judgement("good" if index < 2 else "bad")

    result = bisect(list("abcd"), judge)
    assert result.culprit == "c"
    assert result.comparisons == len(seen) == 4


def test_a_non_monotone_history_is_called_ambiguous() -> None:
    calls: list[tuple[int, int]] = []
    outcomes: list[Outcome] = ["good", "bad", "other", "bad", "bad"]
    result = bisect(list("abcde"), judge_of(outcomes, calls))
    assert result.culprit is None
    assert any("non-monotone" in reason for reason in result.ambiguous)


def test_an_inconclusive_bad_end_names_no_culprit() -> None:
    calls: list[tuple[int, int]] = []
    result = bisect(list("abc"), judge_of(["good", "good", "inconclusive"], calls), retries=1)
    assert result.culprit is None
    assert calls == [(2, 0), (2, 1)]


def test_one_candidate_is_refused() -> None:
    with pytest.raises(UsageError, match="needs a good and a bad end"):
        bisect(["a"], judge_of(["good"], []))


def test_runtime_ranges_parse_and_default_the_distribution() -> None:
    span = parse_runtime_range("onnxruntime==1.27.0..1.32.0", "onnxruntime-gpu")
    assert (span.distribution, span.low, span.high) == ("onnxruntime", Version("1.27.0"), Version("1.32.0"))
    assert parse_runtime_range("1.30.0..1.31.0", "onnxruntime-gpu").distribution == "onnxruntime-gpu"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.27.0", "expected"),
        ("numpy==1.0..2.0", "not an ONNX Runtime distribution"),
        ("1.32.0..1.27.0", "must be older"),
        ("1.x..1.y", "Invalid version"),
    ],
)
def test_bad_runtime_ranges_name_the_range(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as error:
        parse_runtime_range(text, "onnxruntime")
    assert text in str(error.value)


def test_releases_in_range_from_the_index_listing() -> None:
    available = parse_index_versions(PIP_OUTPUT)
    span = parse_runtime_range("onnxruntime==1.27.0..1.32.0", "onnxruntime")
    assert releases_in(available, span) == [
        "1.27.0",
        "1.28.0",
        "1.29.0",
        "1.30.0",
        "1.31.0",
        "1.31.1",
        "1.32.0",
    ]


def test_a_range_with_no_releases_is_refused_naming_it() -> None:
    available = parse_index_versions(PIP_OUTPUT)
    with pytest.raises(UsageError, match=r"onnxruntime==2\.0\.0\.\.2\.5\.0.*0 release\(s\)"):
        releases_in(available, parse_runtime_range("2.0.0..2.5.0", "onnxruntime"))
    with pytest.raises(UsageError, match=r"no onnxruntime 1\.31\.5"):
        releases_in(available, parse_runtime_range("1.27.0..1.31.5", "onnxruntime"))


def test_a_report_without_the_tests_graph_record_is_named() -> None:
    from pytest_ortperf.errors import OrtperfError
    from pytest_ortperf.gate.bisect_runtimes import graph_state

    report = {"checks": [{"kind": "latency", "test": "test_x.py::test_y"}]}
    with pytest.raises(OrtperfError, match=r"the report of onnxruntime 1\.30\.0 holds no graph check"):
        graph_state(report, "tests/test_x.py::test_y", "the report of onnxruntime 1.30.0")
