"""``ortperf merge``: baseline directories from several runners merged into one, on real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ortperf.cli import main
from pytest_ortperf.errors import BaselineError
from pytest_ortperf.store.baselines import BaselineEntry, BaselineStore
from pytest_ortperf.store.merge import merge
from pytest_ortperf.store.outputs import AccuracyRecord
from tests.unit.store.test_baselines import make_entry

FILE = "tests/test_models.py"
TEST = "test_model[cpu-all]"


def directory(root: Path, *entries: tuple[str, str, BaselineEntry]) -> Path:
    """A baseline directory holding ``entries`` as (test, machine, entry), written by the store."""
    store = BaselineStore(root)
    for test, machine, entry in entries:
        store.stage(FILE, test, machine, entry)
    store.write()
    return root


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_each_runners_own_entries_are_taken_and_the_result_does_not_depend_on_the_order(
    tmp_path: Path,
) -> None:
    repo = directory(tmp_path / "repo", (TEST, "laptop", make_entry(5.0)))
    a = directory(tmp_path / "a", (TEST, "laptop", make_entry(5.0)), (TEST, "ci-x86", make_entry(10.0)))
    b = directory(
        tmp_path / "b", (TEST, "laptop", make_entry(5.0)), ("test_other[cpu-all]", "ci-arm", make_entry(20.0))
    )
    first, second = tmp_path / "first", tmp_path / "second"
    for target, sources in ((first, [a, b]), (second, [b, a])):
        directory(target, (TEST, "laptop", make_entry(5.0)))
        report = merge(sources, target)
        assert (report.taken, report.unchanged, report.conflicts) == (2, 1, [])  # laptop: a copy in both
        assert report.written == [target / f"{FILE}.json"]
    assert files(first) == files(second)
    merged = BaselineStore(first).entries(FILE)
    assert sorted(merged[TEST]) == ["ci-x86", "laptop"]
    assert merged[TEST]["ci-x86"] == make_entry(10.0)
    assert merged["test_other[cpu-all]"]["ci-arm"] == make_entry(20.0)
    assert files(repo) == files(directory(tmp_path / "untouched", (TEST, "laptop", make_entry(5.0))))


def test_a_re_recorded_entry_replaces_the_targets_and_unchanged_copies_do_not_count(tmp_path: Path) -> None:
    target = directory(
        tmp_path / "repo", (TEST, "ci-x86", make_entry(10.0)), (TEST, "laptop", make_entry(5.0))
    )
    runner = directory(tmp_path / "a", (TEST, "ci-x86", make_entry(12.0)), (TEST, "laptop", make_entry(5.0)))
    report = merge([runner], target)
    assert (report.taken, report.unchanged) == (1, 1)
    assert BaselineStore(target).entries(FILE)[TEST]["ci-x86"] == make_entry(12.0)


def test_two_sources_that_changed_one_entry_differently_are_a_conflict_and_the_target_keeps_its_own(
    tmp_path: Path,
) -> None:
    target = directory(tmp_path / "repo", (TEST, "ci-x86", make_entry(10.0)))
    before = files(target)
    a = directory(tmp_path / "a", (TEST, "ci-x86", make_entry(11.0)))
    b = directory(tmp_path / "b", (TEST, "ci-x86", make_entry(13.0)))
    same = directory(tmp_path / "c", (TEST, "ci-x86", make_entry(11.0)))
    report = merge([b, a, same], target)
    assert report.taken == 0
    assert report.conflicts == [
        f"{target / FILE}.json: {TEST} on machine 'ci-x86' was changed differently by {a}, {b}, {same}; kept the "
        "target's "
        "entry (merge the one you want alone, or re-record it)"
    ]
    assert files(target) == before


def test_the_same_change_from_two_sources_is_no_conflict(tmp_path: Path) -> None:
    target = tmp_path / "new"
    a = directory(tmp_path / "a", (TEST, "ci-x86", make_entry(11.0)))
    b = directory(tmp_path / "b", (TEST, "ci-x86", make_entry(11.0)))
    report = merge([a, b], target)
    assert (report.taken, report.conflicts) == (1, [])
    assert files(target) == files(a)


def test_a_damaged_source_stops_the_merge_naming_the_file_before_anything_is_written(tmp_path: Path) -> None:
    target = directory(tmp_path / "repo", (TEST, "laptop", make_entry(5.0)))
    before = files(target)
    good = directory(tmp_path / "a", (TEST, "ci-x86", make_entry(10.0)))
    bad = tmp_path / "b"
    (bad / "tests").mkdir(parents=True)
    (bad / "tests" / "test_models.py.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(
        BaselineError, match=r"baseline file '.*/b/tests/test_models.py.json' is not valid JSON"
    ):
        merge([good, bad], target)
    assert files(target) == before


def test_reference_outputs_travel_with_their_entry_and_missing_ones_stop_the_merge(tmp_path: Path) -> None:
    npz = f"{FILE}.outputs/{TEST}@ci-x86.npz"
    entry = BaselineEntry("cpu-all", "2025-01-02", accuracy=AccuracyRecord("cd" * 32, (), npz))
    runner = directory(tmp_path / "a", (TEST, "ci-x86", entry))
    (runner / npz).parent.mkdir(parents=True)
    (runner / npz).write_bytes(b"arrays of ci-x86")
    target = tmp_path / "repo"
    report = merge([runner], target)
    assert (target / npz).read_bytes() == b"arrays of ci-x86"
    assert report.written == [target / npz, target / f"{FILE}.json"]
    (runner / npz).unlink()
    other = tmp_path / "other"
    with pytest.raises(BaselineError, match=r"names reference outputs '.*@ci-x86.npz', which are missing"):
        merge([runner], other)
    assert not other.exists()


def test_a_missing_source_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match=r"ortperf merge: '.*nowhere' is not a directory"):
        merge([tmp_path / "nowhere"], tmp_path / "repo")


def test_the_command_reports_and_exits_by_outcome(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = directory(tmp_path / "repo", (TEST, "ci-x86", make_entry(10.0)))
    a = directory(tmp_path / "a", (TEST, "ci-x86", make_entry(11.0)))
    b = directory(tmp_path / "b", (TEST, "ci-x86", make_entry(13.0)), (TEST, "ci-arm", make_entry(7.0)))
    assert main(["merge", str(a), str(b), "--into", str(target)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"ortperf merge: 1 entries taken into {target}, 0 unchanged, 1 conflicting",
        f"wrote {target / FILE}.json",
    ]
    assert err.startswith(f"ortperf: conflict: {target / FILE}.json: {TEST} on machine 'ci-x86' was changed")
    assert main(["merge", str(a), "--into", str(target)]) == 0
    assert main(["merge", str(tmp_path / "nowhere"), "--into", str(target)]) == 2
    assert "is not a directory" in capsys.readouterr().err
