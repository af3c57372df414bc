"""Unused baseline entries: entries whose test was renamed or deleted.

Judged against every test a file defines, as its collector made them, before
any selection narrows the run (``-k``, ``-m``, ``--deselect``, ``--lf``), and
only in the files collected whole: a file named with ``::`` on the command line
is collected in part, and a file not collected at all (``--ignore``, a file
``--lf`` skips, a file argument left out) is not judged, so a narrowed run
never counts or prunes the entry of a test that still exists.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from pytest_ortperf.errors import BaselineError
from pytest_ortperf.store.baselines import BaselineStore
from pytest_ortperf.store.keys import split_check_name


@dataclass
class Selection:
    """What pytest collected in this run (every test a file defines, before any selection or other
    plugin narrows it) and the files it collected only in part."""

    collected: set[str] = field(default_factory=set)
    partially_selected: set[str] = field(default_factory=set)

    def add(self, nodeids: Collection[str], *, partially_selected: Collection[str] = ()) -> None:
        self.collected.update(nodeids)
        self.partially_selected.update(partially_selected)


def unused_entries(
    store: BaselineStore, selection: Selection, variants: Collection[str]
) -> list[tuple[str, str]]:
    """(node id, machine) of the entries, in baseline files of collected test files, whose test
    was not collected: it was renamed or deleted. Every machine's entries are judged: one counts
    when its variant is in this run's matrix (the test would have been collected with it), and,
    whatever its variant, when no test of its name (with any parameters) is left in the file."""
    collected = selection.collected
    files = sorted({nodeid.partition("::")[0] for nodeid in collected} - selection.partially_selected)
    names = {_test_name(nodeid) for nodeid in collected}
    unused = []
    for test_file in files:
        try:
            entries = store.entries(test_file)
        except BaselineError:
            continue  # reported by the tests that use the file
        for test, machines in sorted(entries.items()):
            nodeid = f"{test_file}::{test}"
            # a test's second, third... check (test#2, test#name) belongs to the test
            if split_check_name(nodeid)[0] in collected:
                continue
            gone = _test_name(nodeid) not in names
            unused += [
                (nodeid, machine)
                for machine, entry in sorted(machines.items())
                if gone or entry.variant in variants
            ]
    return unused


def unused_lines(unused: list[tuple[str, str]], *, here: str) -> list[str]:
    """Unused entries as reported: the node id for this machine's entry (``here``), and the node id
    with '(other machines: ...)' for entries recorded elsewhere."""
    by_test: dict[str, list[str]] = {}
    for nodeid, machine in unused:
        by_test.setdefault(nodeid, []).append(machine)
    lines = []
    for nodeid, machines in by_test.items():
        if here in machines:
            lines.append(nodeid)
        others = [m for m in machines if m != here]
        if others:
            lines.append(f"{nodeid} (other machines: {', '.join(others)})")
    return lines


def _test_name(nodeid: str) -> str:
    """The test function of a node id or baseline key, without parameters (or check name)."""
    return split_check_name(nodeid)[0].partition("[")[0]
