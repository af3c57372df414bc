"""--ortperf-repair keeps what can still be read of a damaged baseline file and names the rest."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_ortperf.store.baselines import (
    BaselineEntry,
    BaselineError,
    BaselineStore,
    Entries,
    parse,
    render,
)
from pytest_ortperf.store.salvage import readable_parts
from tests.unit.store.test_baselines import TEST_FILE, document, make_entry

NAMES = ("test_a[cpu-all]", "test_b[cpu-all]", "test_c[cpu-all]")


def three() -> Entries:
    return {name: make_entry(10.0 + index) for index, name in enumerate(NAMES)}


def damaged_file(tmp_path: Path, text: str) -> tuple[BaselineStore, Path]:
    store = BaselineStore(tmp_path, repair=True)
    path = store.path_for(TEST_FILE)
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return store, path


def in_entry(text: str, name: str, old: str, new: str) -> str:
    """``text`` with the first ``old`` after entry ``name``'s opening line replaced by ``new``."""
    start = text.index(f'  "{name}": {{')
    at = text.index(old, start)
    return text[:at] + new + text[at + len(old) :]


def test_a_file_that_is_not_json_keeps_every_entry_but_the_damaged_one(tmp_path: Path) -> None:
    text = in_entry(render(three()), "test_b[cpu-all]", '"variant": ', '"variant" ')  # one missing colon
    store, path = damaged_file(tmp_path, text)
    with pytest.raises(BaselineError):
        parse(text, path=path)
    assert store.entries(TEST_FILE) == {
        name: three()[name] for name in ("test_a[cpu-all]", "test_c[cpu-all]")
    }
    store.stage(TEST_FILE, "test_a[cpu-all]", make_entry(20.0))  # a repair narrowed to test_a

    assert store.write() == [path]
    assert parse(path.read_text(encoding="utf-8"), path=path) == {
        "test_a[cpu-all]": make_entry(20.0),
        "test_c[cpu-all]": three()["test_c[cpu-all]"],
    }
    (repaired,) = store.repaired
    assert repaired.backup.read_text(encoding="utf-8") == text
    assert repaired.kept == 2
    line = 1 + next(n for n, text in enumerate(text.split("\n")) if text.endswith('"variant" "cpu-all"'))
    assert repaired.lost == (f"entry 'test_b[cpu-all]' (not JSON at line {line}: Expecting ':' delimiter)",)


def test_a_json_file_with_one_damaged_entry_keeps_the_others_even_with_nothing_staged(tmp_path: Path) -> None:
    raw = {name: entry.as_dict() for name, entry in three().items()}
    raw["test_c[cpu-all]"]["variant"] = 7
    store, path = damaged_file(tmp_path, document(raw))
    assert sorted(store.entries(TEST_FILE)) == ["test_a[cpu-all]", "test_b[cpu-all]"]

    assert store.write() == [path]  # this run recorded nothing in it: what was kept is written all the same
    assert sorted(parse(path.read_text(encoding="utf-8"), path=path)) == [
        "test_a[cpu-all]",
        "test_b[cpu-all]",
    ]
    assert store.repaired[0].lost == ("entry 'test_c[cpu-all]' (variant must be a string)",)


def test_a_damaged_entry_this_run_records_again_is_still_named_with_what_it_lost(tmp_path: Path) -> None:
    """Recorded again on this machine, the entry is written; what the damaged one held besides (other
    machines' figures, its outputs) is only in the damaged copy, and the summary says so."""
    raw = {name: entry.as_dict() for name, entry in three().items()}
    raw["test_c[cpu-all]"]["variant"] = 7
    store, path = damaged_file(tmp_path, document(raw))
    store.stage(TEST_FILE, "test_c[cpu-all]", make_entry(30.0))
    store.write()
    assert parse(path.read_text(encoding="utf-8"), path=path) == three() | {
        "test_c[cpu-all]": make_entry(30.0)
    }
    (lost,) = store.repaired[0].lost
    assert store.repaired[0].kept == 2
    assert lost.startswith("entry 'test_c[cpu-all]'")
    assert lost.endswith("; re-recorded by this run, but what it held before is only in the damaged copy")


def test_one_machines_damaged_figures_cost_only_themselves(tmp_path: Path) -> None:
    entry = replace(make_entry(), figures={**make_entry().figures, **make_entry(machine="box").figures})
    raw = entry.as_dict()
    raw["figures"]["box"]["recorded"] = None
    store, _ = damaged_file(tmp_path, document({"test_a[cpu-all]": raw}))
    assert store.entries(TEST_FILE) == {"test_a[cpu-all]": make_entry()}  # machine 'ci' kept
    store.write()
    (lost,) = store.repaired[0].lost
    assert lost.startswith("entry 'test_a[cpu-all]': the figures of machine 'box' (")

    again, _ = damaged_file(tmp_path / "again", document({"test_a[cpu-all]": raw}))
    again.stage(TEST_FILE, "test_a[cpu-all]", make_entry(12.0, machine="box"))  # box records them afresh
    again.write()
    assert again.repaired[0].lost == ()


def test_both_sides_of_a_merge_conflict_are_named_not_guessed(tmp_path: Path) -> None:
    lines = render(three()).split("\n")
    start = lines.index('  "test_b[cpu-all]": {')
    end = lines.index("  },", start)
    block = lines[start : end + 1]
    theirs = [line.replace('"median_ms": 11', '"median_ms": 99') for line in block]
    conflicted = [
        *lines[:start],
        "<<<<<<< HEAD",
        *block,
        "=======",
        *theirs,
        ">>>>>>> other",
        *lines[end + 1 :],
    ]
    store, _ = damaged_file(tmp_path, "\n".join(conflicted))
    assert sorted(store.entries(TEST_FILE)) == ["test_a[cpu-all]", "test_c[cpu-all]"]
    store.write()
    assert store.repaired[0].lost == ("entry 'test_b[cpu-all]' (it appears more than once)",)


def test_a_damaged_entry_name_and_a_truncated_tail_are_named(tmp_path: Path) -> None:
    text = render(three())
    text = in_entry(text, "test_b[cpu-all]", '  "test_b[cpu-all]": {', '  "test_b[cpu-all]: {')
    cut = text[: text.index('"variant"', text.index('"test_c[cpu-all]"'))]  # the tail was never written
    parts = readable_parts(cut.encode())
    assert sorted(parts.entries) == ["test_a[cpu-all]"]
    assert [what for _, what in parts.unreadable] == [
        f"lines {cut.split(chr(10)).index('  },') + 2}-{_closing_line(cut, 'test_b')} (no entry name can be read there)",
        "entry 'test_c[cpu-all]' (the file ends inside it)",
    ]
    assert [test for test, _ in parts.unreadable] == [None, "test_c[cpu-all]"]


def _closing_line(text: str, name: str) -> int:
    lines = text.split("\n")
    start = next(index for index, line in enumerate(lines) if name in line)
    return lines.index("  },", start) + 1


def test_lines_that_are_not_utf8_cost_only_their_entry(tmp_path: Path) -> None:
    text = render(three()).encode()
    at = text.index(b'"variant"', text.index(b'"test_a[cpu-all]"'))
    store = BaselineStore(tmp_path, repair=True)
    path = store.path_for(TEST_FILE)
    path.parent.mkdir(parents=True)
    path.write_bytes(text[:at] + b"\xff\xfe" + text[at:])
    assert sorted(store.entries(TEST_FILE)) == ["test_b[cpu-all]", "test_c[cpu-all]"]
    store.write()
    assert store.repaired[0].lost == ("entry 'test_a[cpu-all]' (it is not UTF-8 text)",)


def test_schema_1_entries_are_salvaged_one_by_one(tmp_path: Path) -> None:
    good = {
        "ci": {
            "variant": "cpu-all",
            "recorded": "2025-01-02",
            "environment": {"ort_version": "1.31.1"},
            "latency": make_entry().figures["ci"].parts["latency"]["latency"],
        }
    }
    raw = {"test_a[cpu-all]": good, "test_b[cpu-all]": {"ci": {"variant": 1}}}
    store, _ = damaged_file(
        tmp_path, json.dumps({"schema": 1, "kind": "pytest-ortperf baselines", "entries": raw})
    )
    assert sorted(store.entries(TEST_FILE)) == ["test_a[cpu-all]"]
    store.write()
    (lost,) = store.repaired[0].lost
    assert lost.startswith("entry 'test_b[cpu-all]' for machine 'ci' is damaged (")


def test_a_newer_file_is_never_repaired(tmp_path: Path) -> None:
    store, path = damaged_file(tmp_path, document(schema=3))
    with pytest.raises(BaselineError, match="newer pytest-ortperf: upgrade it"):
        store.entries(TEST_FILE)
    with pytest.raises(BaselineError, match="newer pytest-ortperf"):
        store.stage(TEST_FILE, "test_a[cpu-all]", make_entry())
    assert store.write() == []
    assert path.read_text(encoding="utf-8") == document(schema=3)
    assert store.repaired == []


def test_an_entry_that_loads_is_the_same_entry_the_whole_file_would_give() -> None:
    text = render(three())
    parts = readable_parts(text.replace('"kind"', '"kind" ', 1).encode())  # not JSON: read block by block
    assert parts.schema == 2
    assert {name: BaselineEntry.from_dict(raw) for name, raw in parts.entries.items()} == three()


def test_a_whole_lost_entry_is_named_even_when_this_run_records_the_test_again() -> None:
    """A damaged block may have held several machines' figures and its outputs: recording the test
    again on one machine does not bring them back, so the summary still names the loss."""
    from pytest_ortperf.store.baselines import Lost

    whole = Lost("entry 'test_x[cpu-all]' (not JSON at line 9)", test="test_x[cpu-all]")
    staged = make_entry(machine="runner-c")
    assert not whole.recorded_by(staged)
    assert whole.named(None) == whole.what
    assert whole.named(staged) == (
        "entry 'test_x[cpu-all]' (not JSON at line 9); re-recorded by this run, but what it held before "
        "is only in the damaged copy"
    )
    figures = Lost("figures of 'runner-c'", test="test_x[cpu-all]", machine="runner-c")
    assert figures.recorded_by(staged)  # one machine's figures, recorded again on that machine
    assert not figures.recorded_by(make_entry(machine="runner-a"))


def test_two_repairs_in_one_second_keep_both_damaged_copies(tmp_path: Path) -> None:
    from pytest_ortperf.store.baselines import _unused

    backup = tmp_path / "t.py.json.damaged-20250102-101500"
    assert _unused(backup) == backup
    backup.write_text("first")
    assert _unused(backup) == tmp_path / "t.py.json.damaged-20250102-101500-1"
    (tmp_path / "t.py.json.damaged-20250102-101500-1").write_text("second")
    assert _unused(backup) == tmp_path / "t.py.json.damaged-20250102-101500-2"
