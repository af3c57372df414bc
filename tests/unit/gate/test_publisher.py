"""What a failing record carries for the one command that accepts a run: the test's command, or
none where no recording accepts the check (an error, determinism, a change a shallow clone cannot
judge)."""

from __future__ import annotations

from pytest_ortperf.gate.publisher import RunPublisher
from pytest_ortperf.kinds import builtin_kinds
from pytest_ortperf.ort.git_models import SHALLOW
from pytest_ortperf.reports.results import RunResults

ACCEPT = "ortperf update 'tests/test_m.py::test_m[cpu-all]'"


def published(*records: dict[str, object]) -> list[dict[str, object]]:
    results = RunResults()
    publisher = RunPublisher(results, builtin_kinds(), accept=ACCEPT)
    for record in records:
        publisher.publish(record)
    return [dict(record) for record in results.records]


def test_a_failing_record_carries_the_command_unless_no_recording_accepts_it() -> None:
    base = {"test": "tests/test_m.py::test_m[cpu-all]", "variant": "cpu-all", "failed": True}
    latency, determinism, error, shallow, passing = published(
        {**base, "kind": "latency", "verdict": "regression"},
        {**base, "kind": "determinism", "verdict": "failed"},
        {**base, "kind": "accuracy", "verdict": "error"},
        {
            **base,
            "kind": "latency",
            "verdict": "missing",
            "stored_reason": f"the model changed and {SHALLOW}",
        },
        {**base, "kind": "latency", "verdict": "ok", "failed": False},
    )
    assert latency["accept"] == ACCEPT
    assert determinism["accept"] == error["accept"] == shallow["accept"] == ""
    assert "accept" not in passing
