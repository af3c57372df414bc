"""One command that accepts every failing test whole, from the per-check commands a run printed."""

from __future__ import annotations

from pytest_ortperf.store.environment import shapes_changed
from pytest_ortperf.store.keys import accept_all, whole_test


def test_the_commands_of_one_run_join_into_one_that_accepts_each_test_whole() -> None:
    commands = [
        "ORTPERF_MACHINE=gha ortperf update 'tests/test_m.py::test_conv[cpu-all]' --ort-opt-levels=disabled,all",
        "ORTPERF_MACHINE=gha ortperf update 'tests/test_m.py::test_conv[cpu-disabled]' --ort-opt-levels=disabled,all",
        "ORTPERF_MACHINE=gha ortperf update 'models/ocr.onnx::latency[cpu-all]' --ort-opt-levels=disabled,all",
    ]
    assert accept_all(commands) == (
        "ORTPERF_MACHINE=gha ortperf update tests/test_m.py::test_conv models/ocr.onnx::latency "
        "--ort-opt-levels=disabled,all"
    )
    assert accept_all([]) == ""
    assert accept_all(["not a command"]) == ""
    assert whole_test("t.py::test_m[a-b][cpu-all]") == "t.py::test_m[a-b]"  # only the last brackets


def test_a_shape_change_reads_as_the_user_sees_it_and_values_alone_are_none() -> None:
    before = {"x": "float32[1, 3, 32, 32]", "n": "int64[1]"}
    assert shapes_changed(before, {"x": "float32[1, 3, 64, 64]", "n": "int64[1]"}) == (
        "x float32[1, 3, 32, 32] -> [1, 3, 64, 64]"
    )
    assert shapes_changed(before, dict(before)) == ""
    assert shapes_changed(None, before) == ""


def test_no_accept_command_is_offered_for_what_no_recording_accepts() -> None:
    """Determinism (a property of the model) keeps no part, and recording cannot fix it; accuracy
    keeps its outputs apart from the figures, and recording does."""
    from pytest_ortperf.kinds import builtin_kinds

    kinds = builtin_kinds()
    accepts = {name: kinds.get(name).accepts_update for name in kinds.names()}
    assert accepts["determinism"] is False
    assert all(accepts[name] for name in ("latency", "accuracy", "graph", "memory", "startup", "threads"))
