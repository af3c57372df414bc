"""The graph check's routes, with stand-in services: what it asks the reference builder to rebuild,
whose graphs it builds, and what it decides and publishes."""

from __future__ import annotations

from pathlib import Path

from pytest_ortperf.checks.paths import Route
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.gate.protocol import CheckTarget
from pytest_ortperf.gate.references import ABReference, RecordedReference
from pytest_ortperf.graph.figures import MS, GraphFigures
from pytest_ortperf.kinds.graph_check import GraphCheck
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.store.baselines import BaselineStore
from tests.unit.gate.standins import CHANGED, Services, entry, environment, key, model

GRAPH = GraphFigures(ops={"Conv": 1, "Relu": 1}, providers={"CPUExecutionProvider": 2}, digest="1" * 64)
FUSED = GraphFigures(
    ops={f"{MS}:FusedConv": 1},
    fused={f"{MS}:FusedConv": 1},
    providers={"CPUExecutionProvider": 1},
    digest="2" * 64,
)
RECORDED = model("a", "the recorded model (git bbbbbbbbbbbb)")


def _services(tmp_path: Path, current: GraphFigures, recorded: GraphFigures) -> Services:
    services = Services(BaselineStore(tmp_path / "baselines"))
    services.sessions.graphs = {"d" * 64: current, "a" * 64: recorded}
    services.references.rebuilt = RecordedReference(RECORDED.label, RECORDED, SessionSettings())
    return services


def _target(policy: CheckPolicy | None = None) -> CheckTarget:
    return CheckTarget(key(), {}, entry(), environment(**CHANGED), policy or CheckPolicy())


def test_a_changed_model_is_compared_with_the_rebuilt_recorded_models_graph(tmp_path: Path) -> None:
    services = _services(tmp_path, GRAPH, GRAPH)
    (result,) = GraphCheck(services.context()).run(_target())
    (plan,) = services.references.plans
    assert (plan.route, plan.model_changed, plan.model_sha256) == (Route.SIDE_BY_SIDE, True, "a" * 64)
    assert services.sessions.asked == ["graph model.onnx", f"graph {RECORDED.label}"]
    assert not result.failed
    assert result.path == f"side by side vs {RECORDED.label}"
    assert services.references.kept == ["model.onnx"], "the model measured is kept for later runs"
    (record,) = services.published.records
    assert (record["kind"], record["path"]) == ("graph", result.path)
    assert services.measurer.activities == ["test_model[cpu-all] (graph)"]
    assert not services.measurer.held_count, "a graph is never timed"


def test_a_graph_that_lost_a_fusion_the_rebuilt_one_has_fails_and_says_which(tmp_path: Path) -> None:
    services = _services(tmp_path, GRAPH, FUSED)
    (result,) = GraphCheck(services.context()).run(_target())
    assert result.failed
    assert "lost fusion: FusedConv 1 -> 0" in result.message
    assert services.published.records[0]["verdict"] == result.status


def test_without_a_rebuilt_reference_or_a_stored_graph_it_is_missing_and_says_why(tmp_path: Path) -> None:
    services = _services(tmp_path, GRAPH, GRAPH)
    services.references.rebuilt, services.references.why = None, "the recorded model is not in git here"
    (result,) = GraphCheck(services.context()).run(_target())
    assert result.status is Status.MISSING
    assert "the recorded model is not in git here" in result.message
    assert services.sessions.asked == ["graph model.onnx"], "only the current graph was built"


def test_an_ab_reference_without_a_model_builds_no_other_graph_and_rebuilds_nothing(tmp_path: Path) -> None:
    services = _services(tmp_path, GRAPH, GRAPH)
    ab = ABReference("main:model.onnx", None, "the model is not a file, so git has no earlier version")
    (result,) = GraphCheck(services.context(ab=ab)).run(_target())
    assert result.status is Status.NO_REFERENCE
    assert services.references.plans == []
    assert services.references.kept == [], "A/B mode keeps no model: nothing is recorded from it"
    assert services.sessions.asked == ["graph model.onnx"]


def test_an_update_records_the_graph_into_the_store_without_rebuilding(tmp_path: Path) -> None:
    services = _services(tmp_path, GRAPH, GRAPH)
    policy = CheckPolicy(update=True)
    (result,) = GraphCheck(services.context(policy=policy)).run(_target(policy))
    assert not result.failed
    assert services.references.plans == []
    assert list(services.store.staged()) == []  # the verdict says what to stage; the gate stages it
    staged = result.staged
    assert staged is not None
    figures = staged.figures_for(key().machine)
    assert figures is not None
    graph = figures.part_as("graph", GraphFigures.from_dict)
    assert graph is not None
    assert graph.digest == GRAPH.digest
