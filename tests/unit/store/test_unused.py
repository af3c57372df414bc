"""Unused baseline entries, judged against what pytest collected."""

from __future__ import annotations

from pathlib import Path

from pytest_ortperf.store.baselines import BaselineStore
from pytest_ortperf.store.unused import Selection, unused_entries
from tests.unit.store.test_baselines import make_entry, make_figures

FILE = "tests/test_perf.py"


def store_with(tmp_path: Path, *entries: tuple[str, str]) -> BaselineStore:
    store = BaselineStore(tmp_path / "baselines")
    for test, variant in entries:
        store.stage(
            FILE, test, make_entry(variant=variant, machine="box").with_figures("other", make_figures())
        )
    store.write()
    return BaselineStore(tmp_path / "baselines")


def test_a_renamed_test_is_unused_once_for_every_machine_and_a_kept_ones_checks_are_not(
    tmp_path: Path,
) -> None:
    store = store_with(
        tmp_path,
        ("test_kept[cpu-all]", "cpu-all"),
        ("test_kept[cpu-all]#big", "cpu-all"),
        ("test_old[cpu-all]", "cpu-all"),
    )
    selection = Selection()
    selection.add([f"{FILE}::test_kept[cpu-all]"])
    assert unused_entries(store, selection, {"cpu-all"}) == [f"{FILE}::test_old[cpu-all]"]


def test_a_variant_outside_the_matrix_is_unused_only_when_its_test_is_gone(tmp_path: Path) -> None:
    store = store_with(tmp_path, ("test_kept[cuda-all]", "cuda-all"), ("test_gone[cuda-all]", "cuda-all"))
    selection = Selection()
    selection.add([f"{FILE}::test_kept[cpu-all]"])
    assert unused_entries(store, selection, {"cpu-all"}) == [f"{FILE}::test_gone[cuda-all]"]


def test_a_file_collected_in_part_has_no_unused_entries(tmp_path: Path) -> None:
    store = store_with(tmp_path, ("test_old[cpu-all]", "cpu-all"))
    selection = Selection()
    selection.add([f"{FILE}::test_kept[cpu-all]"], partially_selected=[FILE])
    assert unused_entries(store, selection, {"cpu-all"}) == []


def test_a_damaged_file_is_left_to_the_tests_that_use_it(tmp_path: Path) -> None:
    damaged = tmp_path / "baselines" / f"{FILE}.json"
    damaged.parent.mkdir(parents=True)
    damaged.write_text("{not json", encoding="utf-8")
    selection = Selection()
    selection.add([f"{FILE}::test_kept[cpu-all]"])
    assert unused_entries(BaselineStore(tmp_path / "baselines"), selection, {"cpu-all"}) == []


def test_pruning_an_unused_entry_removes_every_machines_figures(tmp_path: Path) -> None:
    store = store_with(tmp_path, ("test_kept[cpu-all]", "cpu-all"), ("test_old[cpu-all]", "cpu-all"))
    selection = Selection()
    selection.add([f"{FILE}::test_kept[cpu-all]"])
    for nodeid in unused_entries(store, selection, {"cpu-all"}):
        test_file, _, test = nodeid.partition("::")
        store.stage(test_file, test, None)
    store.write()
    assert list(BaselineStore(tmp_path / "baselines").entries(FILE)) == ["test_kept[cpu-all]"]
