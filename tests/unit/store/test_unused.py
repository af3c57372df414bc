"""Unused baseline entries, judged against what pytest collected."""

from __future__ import annotations

from pathlib import Path

from pytest_ortperf.store.baselines import BaselineStore
from pytest_ortperf.store.unused import Selection, unused_entries, unused_lines
from tests.unit.store.test_baselines import make_entry

FILE = "tests/test_perf.py"


def store_with(tmp_path: Path, *entries: tuple[str, str, str]) -> BaselineStore:
    store = BaselineStore(tmp_path / "baselines")
    for test, machine, variant in entries:
        store.stage(FILE, test, machine, make_entry(variant=variant))
    store.write()
    return BaselineStore(tmp_path / "baselines")


def test_a_renamed_test_is_unused_on_every_machine_and_a_kept_ones_checks_are_not(tmp_path: Path) -> None:
    store = store_with(
        tmp_path,
        ("test_kept[cpu-all]", "box", "cpu-all"),
        ("test_kept[cpu-all]#big", "box", "cpu-all"),
        ("test_old[cpu-all]", "box", "cpu-all"),
        ("test_old[cpu-all]", "other", "cpu-all"),
    )
    selection = Selection()
    selection.add([f"{FILE}::test_kept[cpu-all]"])
    assert unused_entries(store, selection, {"cpu-all"}) == [
        (f"{FILE}::test_old[cpu-all]", "box"),
        (f"{FILE}::test_old[cpu-all]", "other"),
    ]


def test_a_variant_outside_the_matrix_is_unused_only_when_its_test_is_gone(tmp_path: Path) -> None:
    store = store_with(
        tmp_path, ("test_kept[cuda-all]", "gpu", "cuda-all"), ("test_gone[cuda-all]", "gpu", "cuda-all")
    )
    selection = Selection()
    selection.add([f"{FILE}::test_kept[cpu-all]"])
    assert unused_entries(store, selection, {"cpu-all"}) == [(f"{FILE}::test_gone[cuda-all]", "gpu")]


def test_a_file_collected_in_part_has_no_unused_entries(tmp_path: Path) -> None:
    store = store_with(tmp_path, ("test_old[cpu-all]", "box", "cpu-all"))
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


def test_lines_name_this_machines_entry_and_the_other_machines() -> None:
    unused = [
        ("t.py::test_a", "box"),
        ("t.py::test_a", "ci"),
        ("t.py::test_a", "gpu"),
        ("t.py::test_b", "ci"),
    ]
    assert unused_lines(unused, here="box") == [
        "t.py::test_a",
        "t.py::test_a (other machines: ci, gpu)",
        "t.py::test_b (other machines: ci)",
    ]
