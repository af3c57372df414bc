"""Both sides of a comparison profiled in turn (A B A B) on one profiling session a side: what a
side-by-side failure's operator-level explanation is made of."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from pytest_ortperf.ort.models import ModelResolver, ModelSource
from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import SessionPool
from pytest_ortperf.ort.variants import OptLevel, Variant
from pytest_ortperf.profiling.book import _RunIndex, _turns, operator_profiles_in_turn
from pytest_ortperf.profiling.operators import fastest
from pytest_ortperf.profiling.trace import TraceEvent, slice_run
from tests.models import mlp_model


def _source(layers: int) -> ModelSource:
    return ModelResolver(Path.cwd()).resolve(
        mlp_model(layers=layers, width=64), test_dir=Path.cwd(), origin="test"
    )


def test_each_side_is_built_once_and_the_grown_side_shows_its_new_nodes() -> None:
    pool = SessionPool(ort, ProviderProber(ort.get_available_providers(), "onnxruntime"))
    variant = Variant(resolve_provider("cpu", source="test"), OptLevel.ALL)
    settings = SessionSettings()
    before = pool.get(_source(2), variant, settings)
    after = pool.get(_source(6), variant, settings)
    built: list[str] = []
    real = pool.build_profiling

    def counted(side: Any, prefix: str) -> Any:
        built.append(side.model.label)
        return real(side, prefix)

    pool.build_profiling = counted  # type: ignore[method-assign]
    feeds = {"x": np.ones((4, 64), dtype=np.float32)}
    old, new = operator_profiles_in_turn(pool, [(before, feeds), (after, feeds)], runs=3)
    assert built == [before.model.label, after.model.label], "one profiling session a side"
    assert (old.runs, new.runs) == (6, 6), "two turns of three runs each, the first run left out"
    assert old.ops["MatMul"][1] < new.ops["MatMul"][1], "the grown model's extra MatMul nodes"
    assert all(us > 0 for us, _ in new.ops.values())


def _run(ts: int, dur: int, tid: int = 1) -> TraceEvent:
    return TraceEvent(cat="Session", name="model_run", ts=ts, dur=dur, tid=tid)


def _node(name: str, ts: int, dur: int, tid: int = 1) -> TraceEvent:
    return TraceEvent(
        cat="Node",
        name=f"{name}_kernel_time",
        ts=ts,
        dur=dur,
        tid=tid,
        args={"op_name": "MatMul", "provider": "CPU"},
    )


def test_a_run_found_by_bisection_is_the_run_a_full_pass_finds() -> None:
    rng = random.Random(7)
    events: list[TraceEvent] = []
    runs = []
    for number in range(30):
        start = number * 1000 + rng.randrange(0, 50)
        run = _run(start, 600 + rng.randrange(0, 300), tid=1 + number % 2)
        runs.append(run)
        events.append(run)
        for step in range(12):  # nodes on the caller's thread and on a pool thread, some past the run's end
            events.append(
                _node(f"n{step}", start + 40 * step, rng.randrange(5, 120), tid=rng.choice([1, 2, 9]))
            )
    events.sort(key=lambda e: (e.ts, -e.dur))
    index = _RunIndex(events)
    for run in runs:
        assert index.slice(run, {1, 2}) == slice_run(events, run, callers={1, 2})


def test_each_turn_is_its_own_runs_after_the_first_and_the_faster_turn_is_kept() -> None:
    # One warm-up run, then two turns of two runs: the node takes 900 us in the warm-up, 500 in the
    # first turn's runs, 300 in the second's; the fastest turn is the second.
    events = []
    for number, dur in enumerate([900, 500, 500, 300, 300]):
        start = number * 2000
        events += [_run(start, 1000), _node("mm", start + 10, dur)]
    first, second = _turns(events, "CPUExecutionProvider", runs=2, turns=2)
    assert first.nodes["mm"][2] == pytest.approx(500)
    assert second.nodes["mm"][2] == pytest.approx(300)
    assert (first.runs, second.runs) == (2, 2)
    kept = fastest(first, second)
    assert kept.nodes["mm"][2] == pytest.approx(300)
    assert kept.ops["MatMul"][0] == pytest.approx(300)
