"""Memory figures: what is stored, how two sets compare, which nodes grew."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_ortperf.footprint.comparison import size_text
from pytest_ortperf.footprint.memory_figures import (
    RSS_FLOOR,
    MemoryFigures,
    compare_memory,
    compare_pairs,
    grown_nodes,
)
from pytest_ortperf.latency.decision import Verdict

MIB = 1 << 20


def arena(peak: int, *, rss: int = 12 * MIB, held: int = 3 * MIB) -> MemoryFigures:
    return MemoryFigures(
        processes=2, arena_peak=peak, arena_held=held, peak_rss=rss, peak_rss_range=(rss, rss)
    )


def footprint(peak: int | None, rss: int | None, *, device: int | None = None, nodes: Any = None) -> Any:
    figures = (
        {} if peak is None else {"mem_in_use_peak": peak, "mem_arena_held": 2 * peak, "nodes": nodes or {}}
    )
    return SimpleNamespace(arena=figures, peak_rss_added=rss, device_bytes=device)


def test_figures_are_the_median_over_processes_with_the_resident_sets_range() -> None:
    figures = MemoryFigures.of([footprint(1000, 5 * MIB), footprint(1000, 7 * MIB), footprint(1000, 6 * MIB)])
    assert (figures.arena_peak, figures.arena_held, figures.peak_rss) == (1000, 2000, 6 * MIB)
    assert figures.peak_rss_range == (5 * MIB, 7 * MIB)
    assert figures.processes == 3
    assert figures.decisive == "arena_peak"


def test_the_arena_decides_where_kept_else_gpu_memory_else_the_resident_set() -> None:
    assert MemoryFigures(processes=1, peak_rss=5).decisive == "peak_rss"
    assert MemoryFigures(processes=1, arena_peak=5, peak_rss=5).decisive == "arena_peak"
    assert MemoryFigures(processes=1, arena_peak=5, device=9).decisive == "device"


@pytest.mark.parametrize(
    ("before", "after", "verdict"),
    [
        (1_000_000, 1_000_000, Verdict.OK),
        (1_000_000, 1_009_000, Verdict.OK),  # +0.9%: under 1%
        (1_000_000, 1_011_000, Verdict.REGRESSION),  # +1.1% and 11 KB: over both
        (1_000_000, 989_000, Verdict.IMPROVED),
        (100_000, 103_000, Verdict.OK),  # +3%, but 3 KB: under the 4 KiB floor
        (100_000, 105_000, Verdict.REGRESSION),  # +5% and 5 KB: over both
    ],
)
def test_a_change_of_the_arena_decides_beyond_both_threshold_and_floor(
    before: int, after: int, verdict: Verdict
) -> None:
    (compared,) = compare_memory(arena(before), arena(after))
    assert compared.verdict is verdict
    assert compared.figure == "peak bytes in use in ORT's arena"
    assert compared.rule == "+/-1% and at least 4 KiB"


def test_the_resident_set_decides_with_a_wider_threshold_and_floor() -> None:
    before = MemoryFigures(processes=2, peak_rss=12 * MIB)
    within_noise = MemoryFigures(processes=2, peak_rss=12 * MIB + RSS_FLOOR - 1)
    grown = MemoryFigures(processes=2, peak_rss=15 * MIB)
    (quiet,) = compare_memory(before, within_noise)
    assert quiet.verdict is Verdict.OK
    assert quiet.rule == "+/-10% and at least 1 MiB"
    (loud,) = compare_memory(before, grown)
    assert loud.verdict is Verdict.REGRESSION
    assert loud.describe() == "+25.0% (+3 MiB)"


def test_sides_with_no_figure_in_common_are_not_compared() -> None:
    assert (
        compare_memory(MemoryFigures(processes=1, arena_peak=5), MemoryFigures(processes=1, device=5)) == []
    )


def test_a_users_threshold_and_floor_apply() -> None:
    (compared,) = compare_memory(arena(1_000_000), arena(1_100_000), threshold=0.2, floor=0)
    assert compared.verdict is Verdict.OK


def test_figures_round_trip_and_damaged_ones_are_refused() -> None:
    figures = MemoryFigures(
        processes=2, arena_peak=10, arena_held=20, peak_rss=30, peak_rss_range=(29, 31), nodes={"a": 4}
    )
    assert MemoryFigures.from_dict(figures.as_dict()) == figures
    for damaged in (
        {"processes": 2},  # no figure at all
        {"processes": 0, "arena_peak": 1},
        {"processes": 1, "arena_peak": -1},
        {"processes": 1, "arena_peak": 1.5},
        {"processes": 1, "arena_peak": True},
        {"processes": 1, "peak_rss": 1, "peak_rss_range": [1]},
        {"processes": 1, "peak_rss": 1, "nodes": []},
        [],
    ):
        with pytest.raises((KeyError, TypeError, ValueError)):
            MemoryFigures.from_dict(damaged)


def test_the_nodes_that_grew_most_come_first_new_ones_marked() -> None:
    before = MemoryFigures(processes=1, arena_peak=1, nodes={"a": 1024, "b": 2048})
    after = MemoryFigures(processes=1, arena_peak=1, nodes={"a": 1024, "b": 4096, "dup": 256 * 1024})
    assert grown_nodes(before, after) == ["dup +256 KiB (new)", "b +2 KiB"]


@pytest.mark.parametrize(
    ("value", "text"),
    [(100, "100 B"), (4096, "4 KiB"), (2_109_440, "2.01 MiB"), (3 << 30, "3 GiB"), (-262144, "-256 KiB")],
)
def test_sizes_read_as_people_write_them(value: int, text: str) -> None:
    assert size_text(value) == text


def test_the_weights_decide_beside_the_arena_so_a_weight_the_arena_does_not_hold_is_seen() -> None:
    before = MemoryFigures(processes=2, arena_peak=96 * 1024, weights=722 * 1024, peak_rss=11 * MIB)
    conv_weight_added = MemoryFigures(
        processes=2, arena_peak=96 * 1024, weights=758 * 1024, peak_rss=11 * MIB
    )
    arena, weights = compare_memory(before, conv_weight_added)
    assert (arena.figure, arena.verdict) == ("peak bytes in use in ORT's arena", Verdict.OK)
    assert (weights.figure, weights.verdict) == ("bytes of the model's weights", Verdict.REGRESSION)
    assert before.lines()[1] == "model weights: 722 KiB"
    assert before.describe() == "arena peak 96 KiB, weights 722 KiB"
    assert MemoryFigures.from_dict(before.as_dict()) == before


def test_without_the_arena_the_resident_set_decides_beside_the_weights() -> None:
    before = MemoryFigures(processes=2, weights=MIB, peak_rss=11 * MIB)
    after = MemoryFigures(processes=2, weights=MIB, peak_rss=15 * MIB)
    rss, weights = compare_memory(before, after)
    assert (rss.figure, rss.verdict) == ("peak resident memory added to a fresh process", Verdict.REGRESSION)
    assert weights.verdict is Verdict.OK


def processes(*values: tuple[int | None, int | None]) -> MemoryFigures:
    """Figures of fresh processes, each with its arena peak and resident set."""
    return MemoryFigures.of([footprint(peak, rss) for peak, rss in values])


@pytest.mark.parametrize(
    ("after", "verdict"),
    [
        (1_000_000, Verdict.OK),
        (1_009_000, Verdict.OK),
        (1_011_000, Verdict.REGRESSION),
        (989_000, Verdict.IMPROVED),
    ],
)
def test_side_by_side_an_exact_figure_decides_at_the_first_look_as_its_medians_would(
    after: int, verdict: Verdict
) -> None:
    before = processes((1_000_000, 12 * MIB), (1_000_000, 13 * MIB))
    now = processes((after, 12 * MIB), (after, 13 * MIB))
    (paired,) = compare_pairs(before, now, look=1, looks=3)
    (medians,) = compare_memory(before, now)
    assert paired.verdict is medians.verdict is verdict
    assert "over 2 process pairs, look 1 of 3" in paired.rule


def test_side_by_side_the_floor_is_a_share_of_the_reference_and_the_resident_set_needs_its_interval() -> None:
    # +3% of a 100 KB arena is 3 KB, under the 4 KiB floor: ok, as the medians say.
    (small,) = compare_pairs(
        processes((100_000, None), (100_000, None)), processes((103_000, None), (103_000, None))
    )
    assert small.verdict is Verdict.OK
    # The resident set alone: +20% in every pair decides; +20% in one pair and -20% in the next does not.
    steady = compare_pairs(
        processes((None, 10 * MIB), (None, 10 * MIB), (None, 10 * MIB)),
        processes((None, 12 * MIB), (None, 12 * MIB), (None, 12 * MIB)),
    )
    assert [c.verdict for c in steady] == [Verdict.REGRESSION]
    scattered = compare_pairs(
        processes((None, 10 * MIB), (None, 10 * MIB), (None, 10 * MIB)),
        processes((None, 12 * MIB), (None, 8 * MIB), (None, 12 * MIB)),
        look=3,
        looks=3,
    )
    assert [c.verdict for c in scattered] == [Verdict.INCONCLUSIVE]
    assert scattered[0].rule.endswith(" pairs would decide at this spread")


def test_side_by_side_a_figure_without_two_complete_pairs_is_compared_on_its_medians() -> None:
    (compared,) = compare_pairs(processes((1_000_000, MIB)), processes((1_100_000, MIB)))
    assert compared.verdict is Verdict.REGRESSION
    assert compared.rule == "+/-1% and at least 4 KiB"
