"""stats.summarize on hand-made samples, and LatencyStats' dict round trip and validation."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from pytest_ortperf.latency.stats import NS_PER_MS, LatencyStats, summarize

# 1..10 ms, split into a round of 4 runs and a round of 6 runs.
SAMPLES_NS = [ms * NS_PER_MS for ms in range(1, 11)]


def test_summarize_exact_values_on_a_hand_made_sample() -> None:
    stats = summarize(SAMPLES_NS, [4, 6])
    assert (stats.count, stats.rounds) == (10, 2)
    assert stats.min_ms == 1.0
    assert stats.median_ms == pytest.approx(5.5)
    assert stats.mean_ms == pytest.approx(5.5)
    # numpy's linear percentiles of 1..10: 1 + q * 9
    assert stats.p90_ms == pytest.approx(9.1)
    assert stats.p95_ms == pytest.approx(9.55)
    assert stats.p99_ms == pytest.approx(9.91)
    assert stats.iqr_ms == pytest.approx(7.75 - 3.25)
    stdev = math.sqrt(sum((x - 5.5) ** 2 for x in range(1, 11)) / 9)
    assert stats.stdev_ms == pytest.approx(stdev)
    assert stats.cv == pytest.approx(stdev / 5.5)
    assert stats.throughput_per_s == pytest.approx(1000 / 5.5)
    # medians of [1, 2, 3, 4] and [5 .. 10]
    assert stats.round_medians_ms == pytest.approx((2.5, 7.5))
    assert isinstance(stats.round_medians_ms, tuple)
    round_stdev = math.sqrt(((2.5 - 5) ** 2 + (7.5 - 5) ** 2) / 1)
    assert stats.round_cv == pytest.approx(round_stdev / 5.0)


def test_summarize_keeps_run_order_within_rounds() -> None:
    # Same values, different order: round medians follow the order the runs happened in.
    stats = summarize(list(reversed(SAMPLES_NS)), [5, 5])
    assert stats.round_medians_ms == pytest.approx((8.0, 3.0))
    assert stats.median_ms == pytest.approx(5.5)


def test_summarize_of_a_single_sample_has_zero_spread() -> None:
    stats = summarize([2 * NS_PER_MS], [1])
    assert (stats.count, stats.rounds) == (1, 1)
    assert stats.min_ms == stats.median_ms == stats.p99_ms == 2.0
    assert (stats.stdev_ms, stats.cv, stats.round_cv, stats.iqr_ms) == (0.0, 0.0, 0.0, 0.0)
    assert stats.throughput_per_s == pytest.approx(500.0)


def test_summarize_of_equal_samples_has_zero_cv() -> None:
    stats = summarize([3 * NS_PER_MS] * 12, [4, 4, 4])
    assert stats.round_medians_ms == (3.0, 3.0, 3.0)
    assert (stats.cv, stats.round_cv) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("samples", "sizes"),
    [
        (SAMPLES_NS, [4, 5]),  # too few
        (SAMPLES_NS, [5, 6]),  # too many
        (SAMPLES_NS, []),
        (SAMPLES_NS, [0, 10]),  # an empty round
        (SAMPLES_NS, [-1, 11]),  # adds up, but negative
        ([], []),
        ([], [1]),
    ],
)
def test_summarize_rejects_round_sizes_that_do_not_add_up(samples: list[int], sizes: list[int]) -> None:
    with pytest.raises(ValueError, match="round sizes must be >= 1 and add up to the number of samples"):
        summarize(samples, sizes)


# What a stored latency measurement holds, in order (without canary medians, the format of every
# baseline recorded before the canary existed).
STATS_KEYS = [
    "count",
    "rounds",
    "min_ms",
    "median_ms",
    "mean_ms",
    "stdev_ms",
    "iqr_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "cv",
    "round_cv",
    "throughput_per_s",
    "round_medians_ms",
]


def test_as_dict_is_plain_json_and_round_trips() -> None:
    stats = summarize(SAMPLES_NS, [4, 6])
    data = stats.as_dict()
    assert isinstance(data["round_medians_ms"], list)
    assert list(data) == STATS_KEYS
    assert LatencyStats.from_dict(data) == stats
    assert LatencyStats.from_dict(json.loads(json.dumps(data))) == stats


def test_from_dict_accepts_whole_numbers_for_float_fields() -> None:
    data = summarize(SAMPLES_NS, [4, 6]).as_dict() | {"min_ms": 1, "round_medians_ms": [2, 8]}
    stats = LatencyStats.from_dict(data)
    assert stats.min_ms == 1.0
    assert isinstance(stats.min_ms, float)
    assert stats.round_medians_ms == (2.0, 8.0)


def _valid() -> dict[str, Any]:
    return summarize(SAMPLES_NS, [4, 6]).as_dict()


@pytest.mark.parametrize("key", ["count", "median_ms", "round_cv", "round_medians_ms"])
def test_from_dict_rejects_a_missing_key(key: str) -> None:
    data = _valid()
    del data[key]
    with pytest.raises(KeyError, match=key):
        LatencyStats.from_dict(data)


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("median_ms", "5.5", "median_ms must be a finite number, got '5.5'"),
        ("median_ms", None, "median_ms must be a finite number, got None"),
        ("p90_ms", float("nan"), "p90_ms must be a finite number, got nan"),
        ("p99_ms", float("inf"), "p99_ms must be a finite number, got inf"),
        ("min_ms", -math.inf, "min_ms must be a finite number"),
        ("cv", True, "cv must be a finite number, got True"),
        ("count", True, "count must be a whole number >= 0, got True"),
        ("count", -1, "count must be a whole number >= 0, got -1"),
        ("rounds", -3, "rounds must be a whole number >= 0, got -3"),
        ("rounds", 2.0, "rounds must be a whole number >= 0, got 2.0"),
        ("count", "10", "count must be a whole number >= 0, got '10'"),
        ("round_medians_ms", [2.5, "7.5"], "round_medians_ms must be a finite number, got '7.5'"),
        ("round_medians_ms", [2.5, float("nan")], "round_medians_ms must be a finite number, got nan"),
        ("round_medians_ms", [False], "round_medians_ms must be a finite number, got False"),
        ("round_medians_ms", "2.5", "round_medians_ms must be a finite number, got '2'"),
    ],
)
def test_from_dict_rejects_wrong_types_and_values(key: str, value: Any, fragment: str) -> None:
    data = _valid() | {key: value}
    with pytest.raises(TypeError) as info:
        LatencyStats.from_dict(data)
    assert fragment in str(info.value)


def test_from_dict_rejects_empty_round_medians() -> None:
    with pytest.raises(ValueError, match="round_medians_ms must be a non-empty list"):
        LatencyStats.from_dict(_valid() | {"round_medians_ms": []})


def test_from_dict_rejects_round_medians_that_are_not_a_list() -> None:
    with pytest.raises(TypeError):
        LatencyStats.from_dict(_valid() | {"round_medians_ms": None})
