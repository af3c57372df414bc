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


def unused_entries(store: BaselineStore, selection: Selection, variants: Collection[str]) -> list[str]:
    """Node ids of the entries, in baseline files of collected test files, whose test was not
    collected: it was renamed or deleted. An entry counts when its variant is in this run's matrix
    (the test would have been collected with it), and, whatever its variant, when no test of its
    name (with any parameters) is left in the file. One entry holds every machine's figures, so
    pruning it (``store.stage(file, test, None)``) removes them all."""
    collected = selection.collected
    files = sorted({nodeid.partition("::")[0] for nodeid in collected} - selection.partially_selected)
    names = {_test_name(nodeid) for nodeid in collected}
    unused = []
    for test_file in files:
        try:
            entries = store.entries(test_file)
        except BaselineError:
            continue  # reported by the tests that use the file
        for test, entry in sorted(entries.items()):
            nodeid = f"{test_file}::{test}"
            # a test's second, third... check (test#2, test#name) belongs to the test
            if split_check_name(nodeid)[0] in collected:
                continue
            if _test_name(nodeid) not in names or entry.variant in variants:
                unused.append(nodeid)
    return unused


def _test_name(nodeid: str) -> str:
    """The test function of a node id or baseline key, without parameters (or check name)."""
    return split_check_name(nodeid)[0].partition("[")[0]
