"""``ortperf merge``: baseline directories from several runners merged into one, on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ortperf.cli import main
from pytest_ortperf.errors import BaselineError
from pytest_ortperf.store.baselines import KIND, BaselineEntry, BaselineStore
from pytest_ortperf.store.merge import merge
from pytest_ortperf.store.outputs import AccuracyRecord
from tests.unit.store.test_baselines import RECIPE, make_entry, make_figures, v1

FILE = "tests/test_models.py"
TEST = "test_model[cpu-all]"


def directory(root: Path, *entries: tuple[str, BaselineEntry]) -> Path:
    """A baseline directory holding ``entries`` as (test, entry), written by the store."""
    store = BaselineStore(root)
    for test, entry in entries:
        store.stage(FILE, test, entry)
    store.write()
    return root


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_sources_of_one_recipe_combine_their_machines_and_the_order_does_not_matter(tmp_path: Path) -> None:
    repo = directory(tmp_path / "repo", (TEST, make_entry(5.0, machine="laptop")))
    a = directory(
        tmp_path / "a", (TEST, make_entry(5.0, machine="laptop").with_figures("ci-x86", make_figures(10.0)))
    )
    b = directory(
        tmp_path / "b",
        (TEST, make_entry(5.0, machine="laptop").with_figures("ci-arm", make_figures(30.0))),
        ("test_other[cpu-all]", make_entry(20.0, machine="ci-arm")),
    )
    first, second = tmp_path / "first", tmp_path / "second"
    for target, sources in ((first, [a, b]), (second, [b, a])):
        directory(target, (TEST, make_entry(5.0, machine="laptop")))
        report = merge(sources, target)
        assert (report.taken, report.unchanged, report.conflicts) == (2, 0, [])
        assert report.written == [target / f"{FILE}.json"]
    assert files(first) == files(second)
    merged = BaselineStore(first).entries(FILE)
    assert merged[TEST].machines() == ["ci-arm", "ci-x86", "laptop"]
    assert merged[TEST].figures["ci-x86"] == make_figures(10.0)
    assert merged[TEST].figures["ci-arm"] == make_figures(30.0)
    assert merged[TEST].recipe == RECIPE
    assert merged["test_other[cpu-all]"] == make_entry(20.0, machine="ci-arm")
    assert files(repo) == files(directory(tmp_path / "untouched", (TEST, make_entry(5.0, machine="laptop"))))


def test_re_recorded_figures_replace_the_targets_and_unchanged_copies_do_not_count(tmp_path: Path) -> None:
    both = make_entry(10.0, machine="ci-x86").with_figures("laptop", make_figures(5.0))
    target = directory(tmp_path / "repo", (TEST, both), ("test_same[cpu-all]", make_entry(1.0)))
    runner = directory(
        tmp_path / "a",
        (TEST, both.with_figures("ci-x86", make_figures(12.0))),
        ("test_same[cpu-all]", make_entry(1.0)),
    )
    report = merge([runner], target)
    assert (report.taken, report.unchanged) == (1, 1)
    merged = BaselineStore(target).entries(FILE)[TEST]
    assert merged.figures == {"ci-x86": make_figures(12.0), "laptop": make_figures(5.0)}


def test_a_machine_missing_from_a_source_is_no_deletion(tmp_path: Path) -> None:
    both = make_entry(10.0, machine="ci-x86").with_figures("laptop", make_figures(5.0))
    target = directory(tmp_path / "repo", (TEST, both))
    before = files(target)
    runner = directory(tmp_path / "a", (TEST, make_entry(10.0, machine="ci-x86")))
    report = merge([runner], target)
    assert (report.taken, report.unchanged, report.written) == (0, 1, [])
    assert files(target) == before


def test_two_sources_that_changed_one_machine_differently_are_a_conflict_and_the_target_keeps_its_own(
    tmp_path: Path,
) -> None:
    target = directory(tmp_path / "repo", (TEST, make_entry(10.0, machine="ci-x86")))
    before = files(target)
    a = directory(tmp_path / "a", (TEST, make_entry(11.0, machine="ci-x86")))
    b = directory(tmp_path / "b", (TEST, make_entry(13.0, machine="ci-x86")))
    same = directory(tmp_path / "c", (TEST, make_entry(11.0, machine="ci-x86")))
    report = merge([b, a, same], target)
    assert report.taken == 0
    assert report.conflicts == [
        f"{target / FILE}.json: {TEST}: figures of machine 'ci-x86' were changed differently by {a}, {b}, {same}; "
        "kept the target's (merge the one you want alone, or re-record it)"
    ]
    assert files(target) == before


def test_a_conflict_on_one_machine_leaves_the_others_taken(tmp_path: Path) -> None:
    a = directory(
        tmp_path / "a", (TEST, make_entry(11.0, machine="ci-x86").with_figures("arm", make_figures(2.0)))
    )
    b = directory(tmp_path / "b", (TEST, make_entry(13.0, machine="ci-x86")))
    target = tmp_path / "repo"
    report = merge([a, b], target)
    assert report.taken == 1
    assert report.conflicts == [
        f"{target / FILE}.json: {TEST}: figures of machine 'ci-x86' were changed differently by {a}, {b}; "
        "kept none (merge the one you want alone, or re-record it)"
    ]
    assert BaselineStore(target).entries(FILE)[TEST].machines() == ["arm"]


def test_a_source_with_another_recipe_than_the_target_is_a_conflict_naming_what_differs(
    tmp_path: Path,
) -> None:
    target = directory(tmp_path / "repo", (TEST, make_entry(10.0, machine="ci-x86")))
    before = files(target)
    newer = directory(
        tmp_path / "a", (TEST, make_entry(10.0, machine="arm", model_sha256="ef" * 32, ort_version="1.32.0"))
    )
    agreeing = directory(
        tmp_path / "b", (TEST, make_entry(10.0, machine="ci-x86").with_figures("gpu", make_figures(1.0)))
    )
    report = merge([newer, agreeing], target)
    assert (report.taken, report.unchanged) == (0, 0)
    assert report.conflicts == [
        f"{target / FILE}.json: {TEST} has another recipe than the target's ({newer}: model sha256 abababababab -> "
        "efefefefefef, onnxruntime 1.31.1 -> 1.32.0); kept the target's entry (settle which recipe is wanted and "
        "re-record it)"
    ]
    assert files(target) == before


def test_sources_with_two_recipes_for_an_entry_the_target_lacks_add_nothing(tmp_path: Path) -> None:
    a = directory(
        tmp_path / "a",
        (TEST, make_entry(10.0, machine="arm", recorded="2025-02-01", inputs_sha256="01" * 32)),
    )
    b = directory(tmp_path / "b", (TEST, make_entry(10.0, machine="ci-x86")))
    target = tmp_path / "repo"
    report = merge([a, b], target)
    assert report.taken == 0
    assert report.conflicts == [
        f"{target / FILE}.json: {TEST} has another recipe than that of {a} ({b}: input data 010101010101 -> "
        "cdcdcdcdcdcd); kept none (merge the one you want alone, or re-record it)"
    ]
    assert not target.exists()


def test_the_same_change_from_two_sources_is_no_conflict(tmp_path: Path) -> None:
    target = tmp_path / "new"
    a = directory(tmp_path / "a", (TEST, make_entry(11.0, machine="ci-x86")))
    b = directory(tmp_path / "b", (TEST, make_entry(11.0, machine="ci-x86")))
    report = merge([a, b], target)
    assert (report.taken, report.conflicts) == (1, [])
    assert files(target) == files(a)


def test_schema_1_files_merge_as_they_load_and_a_written_target_is_schema_2(tmp_path: Path) -> None:
    target = tmp_path / "repo"
    (target / "tests").mkdir(parents=True)
    (target / f"{FILE}.json").write_text(
        json.dumps({"schema": 1, "kind": KIND, "entries": {TEST: {"laptop": v1(5.0)}}}), encoding="utf-8"
    )
    runner = directory(tmp_path / "a", (TEST, make_entry(10.0, machine="ci-x86")))
    report = merge([runner], target)
    assert report.taken == 1
    written = json.loads((target / f"{FILE}.json").read_text(encoding="utf-8"))
    assert written["schema"] == 2
    assert sorted(written["entries"][TEST]["figures"]) == ["ci-x86", "laptop"]


def test_a_damaged_source_stops_the_merge_naming_the_file_before_anything_is_written(tmp_path: Path) -> None:
    target = directory(tmp_path / "repo", (TEST, make_entry(5.0, machine="laptop")))
    before = files(target)
    good = directory(tmp_path / "a", (TEST, make_entry(10.0, machine="ci-x86")))
    bad = tmp_path / "b"
    (bad / "tests").mkdir(parents=True)
    (bad / "tests" / "test_models.py.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(
        BaselineError, match=r"baseline file '.*/b/tests/test_models.py.json' is not valid JSON"
    ):
        merge([good, bad], target)
    assert files(target) == before


def test_reference_outputs_travel_with_their_entry_and_missing_ones_stop_the_merge(tmp_path: Path) -> None:
    npz = f"{FILE}.outputs/{TEST}.npz"
    entry = make_entry(accuracy=AccuracyRecord("cd" * 32, (), npz))
    runner = directory(tmp_path / "a", (TEST, entry))
    (runner / npz).parent.mkdir(parents=True)
    (runner / npz).write_bytes(b"arrays")
    target = tmp_path / "repo"
    report = merge([runner], target)
    assert (target / npz).read_bytes() == b"arrays"
    assert report.written == [target / npz, target / f"{FILE}.json"]
    (runner / npz).unlink()
    other = tmp_path / "other"
    with pytest.raises(BaselineError, match=r"names reference outputs '.*\.npz', which are missing"):
        merge([runner], other)
    assert not other.exists()


def test_outputs_the_merged_target_no_longer_names_are_deleted(tmp_path: Path) -> None:
    old, new = f"{FILE}.outputs/{TEST}@laptop.npz", f"{FILE}.outputs/{TEST}.npz"
    target = directory(tmp_path / "repo", (TEST, make_entry(accuracy=AccuracyRecord("cd" * 32, (), old))))
    (target / old).parent.mkdir(parents=True)
    (target / old).write_bytes(b"old arrays")
    runner = directory(tmp_path / "a", (TEST, make_entry(accuracy=AccuracyRecord("ef" * 32, (), new))))
    (runner / new).parent.mkdir(parents=True)
    (runner / new).write_bytes(b"new arrays")
    report = merge([runner], target)
    assert report.taken == 1
    assert (target / new).read_bytes() == b"new arrays"
    assert not (target / old).exists()


def test_a_missing_source_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match=r"ortperf merge: '.*nowhere' is not a directory"):
        merge([tmp_path / "nowhere"], tmp_path / "repo")


def test_the_command_reports_and_exits_by_outcome(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = directory(tmp_path / "repo", (TEST, make_entry(10.0, machine="ci-x86")))
    a = directory(tmp_path / "a", (TEST, make_entry(11.0, machine="ci-x86")))
    b = directory(
        tmp_path / "b", (TEST, make_entry(13.0, machine="ci-x86").with_figures("ci-arm", make_figures(7.0)))
    )
    assert main(["merge", str(a), str(b), "--into", str(target)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"ortperf merge: 1 entries taken into {target}, 0 unchanged, 1 conflicting",
        f"wrote {target / FILE}.json",
    ]
    assert err.startswith(
        f"ortperf: conflict: {target / FILE}.json: {TEST}: figures of machine 'ci-x86' were changed"
    )
    assert main(["merge", str(a), "--into", str(target)]) == 0
    assert main(["merge", str(tmp_path / "nowhere"), "--into", str(target)]) == 2
    assert "is not a directory" in capsys.readouterr().err
