"""The graph check's words: an unchanged check whose graph differs from the one this hardware class
recorded says so in a whole sentence (it was cut off after "this hardware class's")."""

from __future__ import annotations

from pytest_ortperf.checks.graph_verdicts import unchanged
from pytest_ortperf.graph.figures import GraphFigures
from pytest_ortperf.store.keys import CheckKey

KEY = CheckKey(test_file="t.py", test="test_m[cpu-all]", variant="cpu-all", machine="box", record_command="x")


def test_an_unchanged_graph_other_than_the_recorded_one_is_said_in_a_whole_sentence() -> None:
    recorded = GraphFigures(ops={"Conv": 2}, digest="a" * 64)
    rewired = GraphFigures(ops={"Conv": 2}, digest="b" * 64)  # same op counts, other wiring
    change = unchanged(KEY, rewired, recorded).change
    assert change == (
        "nothing changed; same op counts, other weights, attributes or wiring against the graph this "
        "hardware class recorded (shown, not judged)"
    )
    assert unchanged(KEY, recorded, recorded).change == "nothing changed"
