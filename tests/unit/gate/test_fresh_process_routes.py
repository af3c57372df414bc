"""The routes of the checks measured in fresh processes (memory, start-up), with stand-in services:
which sides are measured, in what order and how often, whether the timing lock is held, and what the
reference builder is asked. The worker processes are replaced by a recorder of what each would
measure (``ort/workers.py: measure_footprint`` is tested with real workers elsewhere)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.footprint.memory_figures import MemoryFigures
from pytest_ortperf.footprint.startup_figures import StartupFigures
from pytest_ortperf.gate.protocol import CheckTarget
from pytest_ortperf.gate.references import ABReference, RecordedReference
from pytest_ortperf.kinds import fresh_processes
from pytest_ortperf.kinds.memory_check import MemoryCheck
from pytest_ortperf.kinds.startup_check import StartupCheck
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.workers import Footprint, WorkerRuntime
from pytest_ortperf.store.baselines import BaselineStore, Figures
from tests.unit.gate.standins import CHANGED, Services, entry, environment, key, model

RUNTIME = WorkerRuntime("1.31.1", "onnxruntime", ("CPUExecutionProvider",), "3.11", "python")
RECORDED = model("a", "the recorded model (git bbbbbbbbbbbb)")


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The label of each model a fresh process measured, in order; every process adds 1 MiB."""
    labels: list[str] = []

    def measure_footprint(python: str, source: Any, *args: Any, **kwargs: Any) -> Footprint:
        labels.append(source.label)
        return _footprint()

    monkeypatch.setattr(fresh_processes, "measure_footprint", measure_footprint)
    return labels


def _services(tmp_path: Path) -> Services:
    services = Services(BaselineStore(tmp_path / "baselines"))
    services.references.rebuilt = RecordedReference(RECORDED.label, RECORDED, SessionSettings())
    return services


def _footprint() -> Footprint:
    """One fresh process's footprint: 1 MiB of arena and resident set."""
    arena = {"mem_in_use_peak": 1 << 20, "mem_arena_held": 1 << 20}
    return Footprint(0.01, 0.001, 0.0005, 1 << 20, 1 << 20, arena, None, "", RUNTIME)


def _target() -> CheckTarget:
    """The model changed since its entry was recorded, on another machine (so nothing is stored here)."""
    recorded = entry()
    prints = [_footprint()] * 4
    elsewhere = (
        Figures("2026-11-20")
        .with_part("memory", MemoryFigures.of(prints))
        .with_part("startup", StartupFigures.of(prints))
    )
    recorded = replace(recorded, figures={"linux-x86_64-elsewhere-2c-111111": elsewhere})
    return CheckTarget(key(), {}, recorded, environment(**CHANGED), CheckPolicy())


def test_a_changed_model_is_measured_side_by_side_with_the_rebuilt_one_interleaved(
    tmp_path: Path, measured: list[str]
) -> None:
    services = _services(tmp_path)
    (result,) = MemoryCheck(services.context()).run(_target())
    (plan,) = services.references.plans
    assert plan.model_changed
    assert result.status is Status.OK
    assert result.path == f"side by side vs {RECORDED.label}"
    # Two processes a side, interleaved: current, reference, reference, current.
    assert measured == ["model.onnx", RECORDED.label, RECORDED.label, "model.onnx"]
    assert services.references.kept == ["model.onnx"]
    assert services.measurer.held_count == 0, "memory is not timed: it never waits for the timing lock"
    assert [record["kind"] for record in services.published.records] == ["memory"]


def test_the_start_up_check_holds_the_timing_lock_while_it_measures(
    tmp_path: Path, measured: list[str]
) -> None:
    services = _services(tmp_path)
    (result,) = StartupCheck(services.context()).run(_target())
    assert result.path == f"side by side vs {RECORDED.label}"
    assert services.measurer.held_count == 1
    assert set(measured) == {"model.onnx", RECORDED.label}
    assert measured.count("model.onnx") == measured.count(RECORDED.label)


def test_start_up_side_by_side_adds_pairs_of_processes_until_the_rule_of_side_by_side_verdicts_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steady processes decide at the first look (3 pairs: 6 processes); processes whose creation
    scatters 0.5x .. 2x around the same time cannot tell, and pairs are added to the last look
    (10 pairs), where the check reads inconclusive, never a verdict from one unlucky pair."""
    labels: list[str] = []
    scatter = iter([1.0, 2.0, 0.5, 1.0, 2.0, 0.5, 1.0] * 4)

    def steady(python: str, source: Any, *args: Any, **kwargs: Any) -> Footprint:
        labels.append(source.label)
        return _footprint()

    def scattered(python: str, source: Any, *args: Any, **kwargs: Any) -> Footprint:
        labels.append(source.label)
        return replace(_footprint(), create_s=0.01 * next(scatter))

    monkeypatch.setattr(fresh_processes, "measure_footprint", steady)
    (result,) = StartupCheck(_services(tmp_path).context()).run(_target())
    assert (result.status, len(labels)) == (Status.OK, 6)
    assert all("over 3 process pairs, look 1 of 5" in c.rule for c in result.comparisons)
    labels.clear()
    monkeypatch.setattr(fresh_processes, "measure_footprint", scattered)
    (result,) = StartupCheck(_services(tmp_path).context()).run(_target())
    assert (result.status, result.failed, len(labels)) == (Status.INCONCLUSIVE, False, 20)
    assert "over 10 process pairs, look 5 of 5; about " in result.comparisons[0].rule
    assert result.comparisons[0].rule.endswith(" pairs would decide at this spread")


def test_memory_side_by_side_judges_pairs_of_processes_by_the_rule_of_side_by_side_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ORT's arena is exact: a growth decides at the first look (2 pairs: 4 processes, as two a side
    did), with no second measurement asked for. Where only the resident set is kept (the arena off)
    and it scatters 0.8x .. 1.25x around the same size, pairs are added to the last look (6 pairs)
    and the check reads inconclusive, saying what more would decide."""
    labels: list[str] = []

    def grown(python: str, source: Any, *args: Any, **kwargs: Any) -> Footprint:
        labels.append(source.label)
        footprint = _footprint()
        if source.label == "model.onnx":
            footprint = replace(footprint, arena={**footprint.arena, "mem_in_use_peak": 2 << 20})
        return footprint

    monkeypatch.setattr(fresh_processes, "measure_footprint", grown)
    (result,) = MemoryCheck(_services(tmp_path).context()).run(_target())
    assert (result.status, result.failed, len(labels)) == (Status.REGRESSION, True, 4)
    (arena,) = result.comparisons
    assert arena.rule.startswith("+/-1% and at least 4 KiB, ")
    assert "over 2 process pairs, look 1 of 3" in arena.rule
    assert not any("second" in note for note in result.notes), "no confirmation: the pairs decide"

    labels.clear()
    scatter = iter([1.0, 1.25, 0.8] * 8)

    def resident_only(python: str, source: Any, *args: Any, **kwargs: Any) -> Footprint:
        labels.append(source.label)
        return replace(_footprint(), arena={}, peak_rss_added=round((12 << 20) * next(scatter)))

    monkeypatch.setattr(fresh_processes, "measure_footprint", resident_only)
    (result,) = MemoryCheck(_services(tmp_path).context()).run(_target())
    assert (result.status, result.failed, len(labels)) == (Status.INCONCLUSIVE, False, 12)
    (rss,) = result.comparisons
    assert rss.figure == "peak resident memory added to a fresh process"
    assert rss.rule.startswith("+/-10% and at least 1 MiB, ")
    assert "over 6 process pairs, look 3 of 3; about " in rss.rule


def test_without_a_rebuilt_reference_only_the_current_model_is_measured_and_it_is_missing(
    tmp_path: Path, measured: list[str]
) -> None:
    services = _services(tmp_path)
    services.references.rebuilt, services.references.why = None, "the recorded model is not in git here"
    (result,) = MemoryCheck(services.context()).run(_target())
    assert result.status is Status.MISSING
    assert "the recorded model is not in git here" in result.message
    assert measured == ["model.onnx", "model.onnx"]


def test_an_ab_reference_of_the_same_bytes_is_one_glance_and_rebuilds_nothing(
    tmp_path: Path, measured: list[str]
) -> None:
    services = _services(tmp_path)
    ab = ABReference("main:model.onnx", services.built.model)
    (result,) = MemoryCheck(services.context(ab=ab)).run(_target())
    assert result.status is Status.IDENTICAL_TO_REFERENCE
    assert measured == ["model.onnx"], "one process, for the report only"
    assert services.references.plans == []
    assert services.references.kept == []
