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


def test_a_graph_a_shallow_clone_cannot_judge_names_the_history_and_offers_no_recording() -> None:
    """A changed model whose recorded one a shallow clone lacks, on a hardware class with no stored
    graph: not judged, the history named as the fix, no command that would record it unseen; its
    record keeps why, so the run counts it as shallow, not as a baseline to record."""
    from pytest_ortperf.checks.graph_verdicts import alone
    from pytest_ortperf.checks.policy import CheckPolicy
    from pytest_ortperf.checks.status import Status
    from pytest_ortperf.ort.git_models import SHALLOW

    graph = GraphFigures(ops={"Conv": 1}, providers={"CPUExecutionProvider": 1}, digest="1" * 64)
    why = f"the model changed (sha256 1 -> 2) and {SHALLOW}; no graph was recorded on this hardware class"
    shallow = alone(KEY, graph, CheckPolicy(), expected={}, status=Status.MISSING, path="missing", reason=why)
    assert shallow.stored_reason == why
    assert "not judged on machine 'box'" in shallow.message
    assert "Record it with" not in shallow.message
    plain = alone(
        KEY, graph, CheckPolicy(), expected={}, status=Status.MISSING, path="missing", reason="never recorded"
    )
    assert SHALLOW not in plain.stored_reason
    assert "Record it with" in plain.message
