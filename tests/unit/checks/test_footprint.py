"""The memory and start-up checks' decisions on figures already measured: record, judge, keep parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ortperf.checks.footprint_verdicts import (
    MEMORY,
    STARTUP,
    FootprintResult,
    judged,
    missing,
    record,
    unchanged,
)
from pytest_ortperf.checks.latency_figures import stored_latency
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.checks.status import Status
from pytest_ortperf.footprint.memory_figures import MemoryFigures, compare_memory
from pytest_ortperf.footprint.startup_figures import StartupFigures, compare_startup
from pytest_ortperf.ort.git_models import SHALLOW
from pytest_ortperf.reports.ci_files import footprint_record
from pytest_ortperf.store.baselines import BaselineStore
from tests.unit.checks.test_latency import ENV, KEY, TEST, TEST_FILE, FakeMeasure, check, stats

MIB = 1 << 20


def memory(peak: int) -> MemoryFigures:
    return MemoryFigures(
        processes=2, arena_peak=peak, arena_held=2 * peak, peak_rss=10 * MIB, nodes={"a": 64}
    )


def compare(before: object, after: object) -> list:
    assert isinstance(before, MemoryFigures)
    assert isinstance(after, MemoryFigures)
    return compare_memory(before, after)


def staged(store: BaselineStore, result: FootprintResult) -> FootprintResult:
    """``result``'s entry staged, as the gate stages it."""
    if result.staged is not None:
        store.stage(KEY.test_file, KEY.test, result.staged)
    return result


def recorded(store: BaselineStore, figures: MemoryFigures, environment: dict = ENV) -> object:
    entry = store.state(KEY.test_file, KEY.test, store.lookup(KEY.test_file, KEY.test))
    return staged(
        store,
        record(
            MEMORY, KEY, figures, entry=entry, environment=environment, today="2025-06-01", compare=compare
        ),
    )


def test_recording_memory_keeps_this_hardwares_latency_and_a_steady_figure_keeps_the_file(
    tmp_path: Path,
) -> None:
    store = BaselineStore(tmp_path)
    check(store, FakeMeasure(stats(10.0)), update=True)  # latency first, as check() runs it
    first = recorded(store, memory(MIB))
    assert first.status is Status.NEW
    store.write()
    written = store.path_for(TEST_FILE).read_bytes()
    figures = BaselineStore(tmp_path).lookup(TEST_FILE, TEST).figures_for("ci")
    assert stored_latency(figures) is not None, "the latency part stays"
    assert figures.part_as(MEMORY, MemoryFigures.from_dict) == memory(MIB)

    again = BaselineStore(tmp_path)
    steady = recorded(again, memory(MIB))
    assert steady.status is Status.UNCHANGED
    assert again.write() == []
    assert again.path_for(TEST_FILE).read_bytes() == written

    grown = BaselineStore(tmp_path)
    updated = recorded(grown, memory(2 * MIB))
    assert updated.status is Status.UPDATED
    assert updated.changes == ("peak bytes in use in ORT's arena +100.0% (+1 MiB)",)
    grown.write()
    figures = BaselineStore(tmp_path).lookup(TEST_FILE, TEST).figures_for("ci")
    assert figures.part_as(MEMORY, MemoryFigures.from_dict).arena_peak == 2 * MIB
    assert stored_latency(figures) is not None


def test_recording_latency_keeps_this_hardwares_memory(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    recorded(store, memory(MIB))
    store.write()
    relatency = BaselineStore(tmp_path)
    result = check(relatency, FakeMeasure(stats(10.0)), update=True)
    assert result.status == "new"
    relatency.write()
    figures = BaselineStore(tmp_path).lookup(TEST_FILE, TEST).figures_for("ci")
    assert stored_latency(figures) is not None
    assert figures.part_as(MEMORY, MemoryFigures.from_dict) == memory(MIB)


def test_a_new_recipe_drops_the_old_figures_of_every_part(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    check(store, FakeMeasure(stats(10.0)), update=True)
    recorded(store, memory(MIB))
    store.write()
    changed = BaselineStore(tmp_path)
    result = recorded(changed, memory(MIB), environment={**ENV, "model_sha256": "b" * 64})
    assert result.status is Status.UPDATED
    assert result.changes[-1] == "figures measured under the old recipe dropped"
    changed.write()
    figures = BaselineStore(tmp_path).lookup(TEST_FILE, TEST).figures_for("ci")
    assert stored_latency(figures) is None
    assert figures.part_as(MEMORY, MemoryFigures.from_dict) == memory(MIB)


def test_a_regression_fails_with_figures_change_limit_nodes_and_the_command() -> None:
    grown = MemoryFigures(
        processes=2, arena_peak=MIB + 256 * 1024, peak_rss=10 * MIB, nodes={"a": 64, "dup": 4096}
    )
    result = judged(
        MEMORY,
        KEY,
        grown,
        memory(MIB),
        compare(memory(MIB), grown),
        CheckPolicy(),
        path="side by side vs the recorded model",
        label="the recorded model (side by side, fresh processes)",
        explain=["dup +4 KiB (new)"],
    )
    assert result.failed
    assert result.status is Status.REGRESSION
    assert result.message.splitlines() == [
        f"memory regression in {TEST} against the recorded model (side by side, fresh processes)",
        "  reference: ORT arena: peak in use 1 MiB, arena held 2 MiB",
        "             peak resident memory added: 10 MiB",
        "  current:   ORT arena: peak in use 1.25 MiB",
        "             peak resident memory added: 10 MiB",
        "  change:    peak bytes in use in ORT's arena +25.0% (+256 KiB) -> regression",
        "             limit +/-1% and at least 4 KiB",
        "  nodes whose bytes grew most: dup +4 KiB (new)",
        f"  to accept the new memory: {KEY.record_command}",
    ]
    assert result.change == "peak bytes in use in ORT's arena +25.0% (+256 KiB)"


@pytest.mark.parametrize("fail_on_improvement", [False, True])
def test_an_improvement_fails_only_when_asked(fail_on_improvement: bool) -> None:
    smaller = memory(MIB // 2)
    result = judged(
        MEMORY, KEY, smaller, memory(MIB), compare(memory(MIB), smaller),
        CheckPolicy(fail_on_improvement=fail_on_improvement), path="stored figures", label="stored",
    )  # fmt: skip
    assert result.status is Status.IMPROVED
    assert result.failed is fail_on_improvement


def test_sides_with_nothing_in_common_are_inconclusive_and_say_why() -> None:
    result = judged(
        MEMORY, KEY, memory(MIB), memory(MIB), [], CheckPolicy(), path="stored figures", label="s"
    )
    assert result.status is Status.INCONCLUSIVE
    assert not result.failed
    assert result.notes == ("the two sides share no figure to compare",)


def test_unchanged_passes_and_shows_the_figures_against_this_hardwares() -> None:
    result = unchanged(MEMORY, KEY, memory(MIB), None, compare)
    assert (result.status, result.failed, result.change) == (Status.UNCHANGED, False, "nothing changed")


@pytest.mark.parametrize(
    ("policy", "failed", "skipped"), [("fail", True, False), ("skip", False, True), ("pass", False, False)]
)
def test_missing_follows_the_policy_and_names_the_command(policy: str, failed: bool, skipped: bool) -> None:
    figures = StartupFigures((8.0,), (0.3,), (0.05,))
    result = missing(STARTUP, KEY, figures, CheckPolicy(missing=policy), reason="no machine has one yet")  # type: ignore[arg-type]
    assert (result.failed, result.skipped, result.status) == (failed, skipped, Status.MISSING)
    assert result.message.startswith(
        f"no start-up baseline for {TEST} on machine 'ci' (no machine has one yet); measured create 8 ms"
    )
    assert result.message.endswith(KEY.record_command)


def test_a_missing_figure_keeps_why_in_its_record_so_the_run_counts_a_shallow_clone_as_the_cause() -> None:
    """A changed model that a shallow clone cannot rebuild is not a baseline to record: the record
    says so in its stored reason, as the latency check's does, so the run's end counts it as
    shallow rather than as a missing baseline."""
    why = f"the model changed (sha256 1 -> 2) and {SHALLOW}"
    result = missing(MEMORY, KEY, memory(MIB), CheckPolicy(), reason=why)
    assert result.stored_reason == why
    typed = CheckRecord.of(footprint_record(result, TEST))
    assert SHALLOW in typed.stored_reason
    plain = missing(MEMORY, KEY, memory(MIB), CheckPolicy(), reason="no machine has one yet")
    assert SHALLOW not in CheckRecord.of(footprint_record(plain, TEST)).stored_reason


def test_start_up_figures_record_beside_memory(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    recorded(store, memory(MIB))
    figures = StartupFigures((8.0, 8.2), (0.3, 0.31), (0.05, 0.05))

    def compare_times(before: object, after: object) -> list:
        assert isinstance(before, StartupFigures)
        assert isinstance(after, StartupFigures)
        return compare_startup(before, after)

    entry = store.state(KEY.test_file, KEY.test, store.lookup(KEY.test_file, KEY.test))
    result = staged(
        store,
        record(
            STARTUP, KEY, figures, entry=entry, environment=ENV, today="2025-06-01", compare=compare_times
        ),
    )
    assert result.status is Status.NEW
    store.write()
    here = BaselineStore(tmp_path).lookup(TEST_FILE, TEST).figures_for("ci")
    assert here.part_as(MEMORY, MemoryFigures.from_dict) == memory(MIB)
    assert here.part_as(STARTUP, StartupFigures.from_dict) == figures


def test_a_regression_fails_only_when_a_second_measurement_in_new_processes_repeats_it() -> None:
    from pytest_ortperf.kinds.fresh_processes import _confirmed

    def judge(peak: int) -> object:
        figures = memory(peak)
        return judged(
            MEMORY,
            KEY,
            figures,
            memory(MIB),
            compare(memory(MIB), figures),
            CheckPolicy(),
            path="p",
            label="l",
        )

    ok = judge(MIB)
    assert _confirmed(ok, lambda: pytest.fail("an ok result is not measured again")) is ok
    confirmed = _confirmed(judge(2 * MIB), lambda: judge(2 * MIB))
    assert confirmed.failed
    assert confirmed.message.splitlines()[-2].startswith(
        "  note: a first measurement said peak bytes in use in ORT's arena +100.0%"
    )
    assert confirmed.message.splitlines()[-1].startswith("  to accept the new memory:")
    dropped = _confirmed(judge(2 * MIB), lambda: judge(MIB))
    assert (dropped.status, dropped.failed, dropped.message) == (Status.NOT_CONFIRMED, False, "")
    assert dropped.notes[-1].endswith("a second in new processes did not confirm it")


def test_an_update_records_again_when_this_version_measures_a_figure_the_stored_ones_lack(
    tmp_path: Path,
) -> None:
    store = BaselineStore(tmp_path)
    recorded(store, MemoryFigures(processes=2, arena_peak=MIB, peak_rss=10 * MIB))
    store.write()
    again = BaselineStore(tmp_path)
    result = recorded(again, MemoryFigures(processes=2, arena_peak=MIB, weights=2 * MIB, peak_rss=10 * MIB))
    assert result.status is Status.UPDATED
    assert result.changes == ("weights added",)
