"""The latency check's same-graph shortcut, with stand-in services: when only the model changed and
ORT builds the rebuilt reference's very graph from it, the check passes without a timed round;
otherwise it goes on to measure both sides (here: it asks for the reference's session)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pytest_ortperf.checks.latency_figures import latency_figures
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.gate.protocol import CheckError, CheckTarget
from pytest_ortperf.gate.references import RecordedReference
from pytest_ortperf.graph.figures import GraphFigures
from pytest_ortperf.kinds.latency_check import LatencyCheck
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.store.baselines import BaselineStore
from tests.unit.gate.standins import CHANGED, RECIPE, Services, entry, environment, key, model

GRAPH = GraphFigures(ops={"Conv": 1, "Relu": 1}, providers={"CPUExecutionProvider": 2}, digest="1" * 64)
RECORDED = model("a", "the recorded model (git bbbbbbbbbbbb)")
STATS = LatencyStats(
    count=8, rounds=4, min_ms=1.0, median_ms=1.0, mean_ms=1.0, stdev_ms=0.01, iqr_ms=0.01, p90_ms=1.0,
    p95_ms=1.0, p99_ms=1.0, cv=0.01, round_cv=0.01, throughput_per_s=1000.0,
    round_medians_ms=(1.0, 1.01, 0.99, 1.0),
)  # fmt: skip


def _services(
    tmp_path: Path, recorded_graph: GraphFigures, settings: SessionSettings | None = None
) -> Services:
    services = Services(BaselineStore(tmp_path / "baselines"))
    services.sessions.graphs = {"d" * 64: GRAPH, "a" * 64: recorded_graph}
    services.references.rebuilt = RecordedReference(RECORDED.label, RECORDED, settings or SessionSettings())
    return services


def _target(**changes: object) -> CheckTarget:
    recorded = replace(entry(), figures={"elsewhere": latency_figures("2026-11-20", STATS)})
    return CheckTarget(key(), {}, recorded, environment(**{**CHANGED, **changes}), CheckPolicy())


def test_the_same_graph_from_a_changed_model_passes_without_a_timed_round(tmp_path: Path) -> None:
    services = _services(tmp_path, GRAPH)
    (result,) = LatencyCheck(services.context()).run(_target())
    assert not isinstance(result, CheckError)
    assert result.status is Status.SAME_GRAPH
    assert RECORDED.label in result.message
    assert services.sessions.asked == ["graph model.onnx", f"graph {RECORDED.label}"], "no session was built"
    assert services.measurer.held_count == 0, "nothing timed"
    assert services.references.kept == ["model.onnx"]
    (record,) = services.published.records
    assert record["kind"] == "latency"


def test_another_placement_of_the_same_graph_is_measured_side_by_side(tmp_path: Path) -> None:
    moved = replace(GRAPH, providers={"CPUExecutionProvider": 1, "OtherExecutionProvider": 1}, off_provider=1)
    services = _services(tmp_path, moved)
    (outcome,) = LatencyCheck(services.context()).run(_target())
    assert isinstance(outcome, CheckError)  # the stand-in has no measuring workers: measuring stops there
    assert outcome.message.startswith(f"latency of test_model[cpu-all] side by side with {RECORDED.label}: ")
    assert "no measuring workers in this test" in outcome.message
    assert services.sessions.asked[-1] == f"graph {RECORDED.label}"


def test_changed_settings_are_measured_even_when_the_graph_is_the_same(tmp_path: Path) -> None:
    services = _services(tmp_path, GRAPH, SessionSettings(intra_op_threads=2))
    settings = {**RECIPE["settings"], "intra_op_threads": 3}
    (outcome,) = LatencyCheck(services.context()).run(_target(settings=settings))
    assert isinstance(outcome, CheckError)
    assert "no measuring workers in this test" in outcome.message  # measured side by side
    assert services.sessions.asked == [], "no graph asked: settings shape the work"
