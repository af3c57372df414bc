"""The machine-speed canary: its model and session, interleaved canary rounds in measure(), the canary
medians in LatencyStats and baselines, and comparisons relative to the canary."""

from __future__ import annotations

import gc
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

from pytest_ortperf.checks.latency_figures import latency_figures, stored_latency
from pytest_ortperf.checks.latency_verdicts import LatencyResult, check_latency, stored_comparison
from pytest_ortperf.checks.paths import Plan as RoutePlan
from pytest_ortperf.checks.paths import Route
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.errors import UsageError
from pytest_ortperf.gate.measurer import Measurer
from pytest_ortperf.latency.canary import BATCH, LAYERS, WIDTH, Canary, canary_bytes
from pytest_ortperf.latency.decision import STORED_FLOOR, Verdict, judge
from pytest_ortperf.latency.measure import (
    CANARY_SHARE,
    MIN_CANARY_RUNS,
    MeasureSettings,
    RoundPlan,
    measure,
    plan_rounds,
)
from pytest_ortperf.latency.recording import decision_cv, fastest_share
from pytest_ortperf.latency.stats import NS_PER_MS, LatencyStats, summarize
from pytest_ortperf.latency.timing_lock import TimingLock
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.variants import OptLevel, Variant
from pytest_ortperf.plugin.configure import build_config
from pytest_ortperf.store.baselines import BaselineEntry, EntryState, parse, render
from pytest_ortperf.store.keys import CheckKey
from tests.unit.latency.test_stats import STATS_KEYS
from tests.unit.plugin.test_config import FakeConfig

ort = pytest.importorskip("onnxruntime")

CPU_DISABLED = Variant(resolve_provider("cpu", source="test"), OptLevel.DISABLED)
CUDA_ALL = Variant(resolve_provider("cuda", source="test"), OptLevel.ALL)


# the canary model and session ------------------------------------------------


def _helper_canary() -> onnx.ModelProto:
    """The canary as onnx.helper builds it: the model its hand-written bytes must equal."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(20261122)
    nodes, inits, current = [], [], "x"
    for i in range(LAYERS):
        weight = (rng.standard_normal((WIDTH, WIDTH)) * 0.05).astype(np.float32)
        inits.append(numpy_helper.from_array(weight, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"h{i}"]))
        current = f"h{i}"
    graph = helper.make_graph(
        nodes,
        "ortperf_canary",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, WIDTH])],
        [helper.make_tensor_value_info(current, TensorProto.FLOAT, [BATCH, WIDTH])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_canary_bytes_are_what_onnx_helper_serializes_without_importing_onnx() -> None:
    assert canary_bytes() == _helper_canary().SerializeToString()
    import subprocess
    import sys

    program = "import sys; from pytest_ortperf.latency.canary import canary_bytes; canary_bytes(); "
    program += "print('onnx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_canary_model_is_the_same_bytes_every_time_and_valid() -> None:
    assert canary_bytes() == canary_bytes()
    first = onnx.load_from_string(canary_bytes())
    onnx.checker.check_model(first, full_check=True)
    assert [node.op_type for node in first.graph.node] == ["MatMul", "Relu"] * LAYERS
    assert [tuple(init.dims) for init in first.graph.initializer] == [(WIDTH, WIDTH)] * LAYERS
    weights = [onnx.numpy_helper.to_array(init) for init in first.graph.initializer]
    assert len({w.tobytes() for w in weights}) == LAYERS  # four different layers, not one repeated


def test_canary_runs_on_the_cpu_with_the_checks_thread_settings() -> None:
    settings = SessionSettings(intra_op_threads=1, inter_op_threads=1)
    canary = Canary.build(ort, CPU_DISABLED, settings)
    (output,) = canary.run()
    assert isinstance(output, np.ndarray)
    assert output.shape == (BATCH, WIDTH) == (16, 512)
    assert output.dtype == np.float32
    assert (output >= 0).all()  # after a Relu
    assert (output > 0).any()  # and not all zeros
    assert canary.session.get_providers() == ["CPUExecutionProvider"]
    options = canary.session.get_session_options()
    assert options.intra_op_num_threads == settings.intra_op_threads
    assert options.inter_op_num_threads == settings.inter_op_threads
    # Always fully optimized, whatever level the check's variant runs at: the same work on every check.
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # Fixed inputs: two canaries compute the same thing.
    (again,) = Canary.build(ort, CPU_DISABLED, settings).run()
    np.testing.assert_array_equal(output, again)


def _built(variant: Variant, settings: SessionSettings) -> BuiltSession:
    model = ModelSource("model.onnx", "0" * 64, data=b"")
    return BuiltSession(None, model, variant, settings, (variant.provider,), None, 0.0)


def _canary_of(run: Any) -> Canary:
    """The Canary behind the bound ``run`` method that Measurer.canary hands out."""
    canary = run.__self__
    assert isinstance(canary, Canary)
    return canary


def test_the_measurer_builds_one_canary_per_settings_and_none_for_accelerators() -> None:
    run = Measurer(TimingLock(None), run_timeout_s=300.0)
    one, two = SessionSettings(), SessionSettings(intra_op_threads=2)
    assert run.canary(_built(CUDA_ALL, one)) is None
    first = run.canary(_built(CPU_DISABLED, one))
    again = run.canary(_built(Variant(CPU_DISABLED.provider_spec, OptLevel.BASIC), one))
    other = run.canary(_built(CPU_DISABLED, two))
    assert first is not None
    assert again is not None
    assert other is not None
    assert _canary_of(first) is _canary_of(again)  # cached per settings
    assert _canary_of(other) is not _canary_of(first)
    assert _canary_of(other).session.get_session_options().intra_op_num_threads == 2
    (output,) = first()
    assert output.shape == (BATCH, WIDTH)


# measure() with a canary -----------------------------------------------------


class FakeMachine:
    """One clock shared by the model and the canary: each call moves it by that callable's next cost."""

    def __init__(self, model_ms: Sequence[float], canary_ms: Sequence[float] = ()) -> None:
        self.now = 0
        self.events: list[str] = []
        self.gc_during: list[tuple[str, bool]] = []
        self._model = iter(model_ms)
        self._canary = iter(canary_ms)

    def clock(self) -> int:
        return self.now

    def _step(self, name: str, cost_ms: float | None) -> None:
        if cost_ms is None:
            raise RuntimeError(f"{name}: out of prepared costs")
        self.events.append(name)
        self.gc_during.append((name, gc.isenabled()))
        self.now += round(cost_ms * NS_PER_MS)

    def model(self) -> None:
        self._step("m", next(self._model, None))

    def canary(self) -> None:
        self._step("c", next(self._canary, None))


# 6 warmup runs of 1 ms each (settled: the last three as the three before); a 40 ms budget over 5 rounds. With the canary, 75% of it (30 ms) goes to the
# model: 5 rounds x 6 runs of 1 ms. A round is then 6 ms, so the canary's 25% is 2 ms a round: 4 runs of
# 0.5 ms (the canary's warmup cost).
SETTINGS = MeasureSettings(budget_s=0.04, rounds=5, min_rounds=2, warmup_runs=6, warmup_s=0.0)
WARMUPS = 2 * 6  # model and canary
ROUNDS, MODEL_RUNS, CANARY_RUNS = 5, 6, 4
# Canary round medians out of order on purpose; each round has a faster and a much slower run around its median.
CANARY_ROUND_MS = [0.5, 0.7, 0.4, 0.9, 0.6]


def _canary_costs() -> list[float]:
    warmup = [0.5] * 6
    timed = [ms for median in CANARY_ROUND_MS for ms in (median - 0.1, median, 9.0, median)]
    return warmup + timed


def test_measure_follows_every_round_with_one_canary_round(gc_state: None) -> None:
    machine = FakeMachine([1.0] * 100, _canary_costs())
    gc.enable()
    stats = measure(machine.model, SETTINGS, clock=machine.clock, canary=machine.canary)
    timed_round = "m" * MODEL_RUNS + "c" * CANARY_RUNS
    assert "".join(machine.events) == "m" * 6 + "c" * 6 + timed_round * ROUNDS
    assert (stats.count, stats.rounds) == (ROUNDS * MODEL_RUNS, ROUNDS)
    assert stats.round_medians_ms == pytest.approx((1.0,) * ROUNDS)
    assert stats.canary_round_medians_ms == pytest.approx(tuple(CANARY_ROUND_MS))  # in round order
    assert stats.relative_round_medians == pytest.approx(tuple(1.0 / c for c in CANARY_ROUND_MS))
    # The collector is off for every timed run, model and canary alike, and back on afterwards.
    warmups = machine.gc_during[:WARMUPS]
    timed = machine.gc_during[WARMUPS:]
    assert all(enabled for _, enabled in warmups)
    assert not any(enabled for _, enabled in timed)
    assert gc.isenabled()


def test_measure_gives_the_canary_its_share_of_the_budget(gc_state: None) -> None:
    machine = FakeMachine([1.0] * 100, [0.5] * 100)
    measure(machine.model, SETTINGS, clock=machine.clock, canary=machine.canary)
    timed = machine.events[WARMUPS:]
    model_ms = timed.count("m") * 1.0
    canary_ms = timed.count("c") * 0.5
    assert canary_ms / (model_ms + canary_ms) == pytest.approx(CANARY_SHARE)
    assert model_ms + canary_ms == pytest.approx(SETTINGS.budget_s * 1000)


@pytest.mark.parametrize(("model_ms", "canary_ms"), [(0.2, 0.05), (1.0, 3.0), (0.03, 0.7), (2.5, 0.1)])
def test_canary_share_holds_roughly_for_other_costs(
    gc_state: None, model_ms: float, canary_ms: float
) -> None:
    settings = MeasureSettings(budget_s=0.5, rounds=10, min_rounds=5, warmup_runs=3, warmup_s=0.0)
    machine = FakeMachine([model_ms] * 100_000, [canary_ms] * 100_000)
    stats = measure(machine.model, settings, clock=machine.clock, canary=machine.canary)
    timed = machine.events[12:]  # three runs at least, six to see them settled; model and canary
    spent_model = timed.count("m") * model_ms
    spent_canary = timed.count("c") * canary_ms
    assert len(stats.canary_round_medians_ms) == stats.rounds == 10
    # Whole runs only: within one canary run per round of the planned share.
    slack = stats.rounds * canary_ms / (spent_model + spent_canary)
    assert abs(spent_canary / (spent_model + spent_canary) - CANARY_SHARE) <= slack / 2 + 1e-9
    assert spent_model + spent_canary <= settings.budget_s * 1000 * 1.05


def test_a_canary_slower_than_a_round_still_runs_its_minimum_a_round(gc_state: None) -> None:
    machine = FakeMachine([1.0] * 100, [100.0] * 100)
    stats = measure(machine.model, SETTINGS, clock=machine.clock, canary=machine.canary)
    assert "".join(machine.events[WARMUPS:]) == ("m" * MODEL_RUNS + "c" * MIN_CANARY_RUNS) * ROUNDS
    assert stats.canary_round_medians_ms == (100.0,) * ROUNDS


def test_one_preempted_canary_run_does_not_move_its_round(gc_state: None) -> None:
    """A canary with room for one or two runs a round still runs three: the round's median is then
    a typical run, not the one slowed by another process (which would read as a fast model)."""
    warmup = [100.0] * 6
    timed = [ms for _ in range(ROUNDS) for ms in (100.0, 900.0, 100.0)]  # one preempted run a round
    machine = FakeMachine([1.0] * 100, warmup + timed)
    stats = measure(machine.model, SETTINGS, clock=machine.clock, canary=machine.canary)
    assert stats.canary_round_medians_ms == (100.0,) * ROUNDS


def test_measure_without_a_canary_uses_the_whole_budget_and_records_no_canary(gc_state: None) -> None:
    machine = FakeMachine([1.0] * 100)
    stats = measure(machine.model, SETTINGS, clock=machine.clock)
    assert set(machine.events) == {"m"}
    assert (stats.count, stats.rounds) == (40, 5)  # all 40 ms: 5 rounds x 8 runs
    assert stats.canary_round_medians_ms == ()
    assert "canary_round_medians_ms" not in stats.as_dict()


def test_measure_with_a_canary_restores_the_collector_when_the_canary_raises(gc_state: None) -> None:
    machine = FakeMachine([1.0] * 100, [0.5] * 7)  # runs out inside the first timed canary round
    gc.enable()
    with pytest.raises(RuntimeError, match="c: out of prepared costs"):
        measure(machine.model, SETTINGS, clock=machine.clock, canary=machine.canary)
    assert machine.events[-1] == "c"
    assert machine.events.count("c") == 7
    assert gc.isenabled()


def test_plan_rounds_share_scales_the_runs() -> None:
    settings = MeasureSettings(budget_s=2.0, rounds=10, min_rounds=5)
    assert plan_rounds(1e6, settings) == RoundPlan(10, 200)
    assert plan_rounds(1e6, settings, share=0.5) == RoundPlan(10, 100)
    assert plan_rounds(1e6, settings, share=1.0 - CANARY_SHARE) == RoundPlan(10, 150)
    # A slow model: half the budget fits fewer rounds, down to min_rounds.
    assert plan_rounds(0.2e9, settings) == RoundPlan(10, 1)
    assert plan_rounds(0.2e9, settings, share=0.5) == RoundPlan(5, 1)


# LatencyStats with canary medians ---------------------------------------------

SAMPLES_NS = [ms * NS_PER_MS for ms in range(1, 11)]


def test_stats_with_canary_medians_round_trip_through_json() -> None:
    stats = summarize(SAMPLES_NS, [4, 6], [0.5, 0.25])
    data = json.loads(json.dumps(stats.as_dict()))
    assert data["canary_round_medians_ms"] == [0.5, 0.25]
    assert list(data) == [*STATS_KEYS, "canary_round_medians_ms"]
    again = LatencyStats.from_dict(data)
    assert again == stats
    assert again.canary_round_medians_ms == (0.5, 0.25)
    assert again.relative_round_medians == pytest.approx((2.5 / 0.5, 7.5 / 0.25))


def test_stats_without_canary_medians_keep_the_old_format() -> None:
    stats = summarize(SAMPLES_NS, [4, 6])
    data = stats.as_dict()
    assert list(data) == STATS_KEYS  # no key at all, not an empty list
    again = LatencyStats.from_dict(json.loads(json.dumps(data)))
    assert again == stats
    assert again.canary_round_medians_ms == ()


def test_an_old_baseline_file_renders_back_byte_for_byte(tmp_path: Path) -> None:
    stats = LatencyStats(
        count=6,
        rounds=3,
        min_ms=1.0,
        median_ms=2.0,
        mean_ms=2.0,
        stdev_ms=0.5,
        iqr_ms=0.5,
        p90_ms=2.5,
        p95_ms=2.75,
        p99_ms=2.95,
        cv=0.25,
        round_cv=0.1,
        throughput_per_s=500.0,
        round_medians_ms=(1.5, 2.0, 2.5),
    )

    def entries(stats: LatencyStats) -> dict[str, BaselineEntry]:
        figures = latency_figures("2025-01-02", stats, measured_on={"cores": 2})
        return {"test_a[cpu-all]": BaselineEntry("cpu-all", "2025-01-02", {}, figures={"ci": figures})}

    text = render(entries(stats))
    assert "canary" not in text
    latency = json.loads(text)["entries"]["test_a[cpu-all]"]["figures"]["ci"]["latency"]
    assert sorted(latency) == sorted(STATS_KEYS)  # rendered with sorted keys
    parsed = parse(text, path=tmp_path / "old.json")
    assert render(parsed) == text
    reparsed = parse(render(entries(_with_canary(stats))), path=tmp_path / "new.json")
    assert stored_latency(reparsed["test_a[cpu-all]"].figures["ci"]) == _with_canary(stats)


def _with_canary(stats: LatencyStats) -> LatencyStats:
    return replace(stats, canary_round_medians_ms=(0.5, 0.75, 0.5))


def _data_with_canary(canary: Any) -> dict[str, Any]:
    data = summarize(SAMPLES_NS, [4, 6], [0.5, 0.25]).as_dict()
    data["canary_round_medians_ms"] = canary
    return data


@pytest.mark.parametrize(
    "canary",
    [[0.5], [0.5, 0.25, 0.25], [0.5, 0.0], [-0.5, 0.25], [0.5, -1e-9]],
    ids=["too-few", "too-many", "zero", "negative", "tiny-negative"],
)
def test_from_dict_rejects_canary_medians_of_the_wrong_length_or_not_positive(canary: list[float]) -> None:
    with pytest.raises(ValueError, match="canary_round_medians_ms must hold one positive number per round"):
        LatencyStats.from_dict(_data_with_canary(canary))


@pytest.mark.parametrize("value", ["0.5", None, True, math.nan, math.inf, [0.5]])
def test_from_dict_rejects_canary_medians_that_are_not_finite_numbers(value: Any) -> None:
    with pytest.raises(TypeError, match="canary_round_medians_ms must be a finite number"):
        LatencyStats.from_dict(_data_with_canary([0.5, value]))


def test_from_dict_rejects_a_canary_entry_that_is_not_a_list() -> None:
    with pytest.raises(TypeError):
        LatencyStats.from_dict(_data_with_canary(0.5))


def test_summarize_wants_one_positive_canary_median_per_round() -> None:
    with pytest.raises(ValueError, match="one positive canary median per round"):
        summarize(SAMPLES_NS, [4, 6], [0.5])
    with pytest.raises(ValueError, match="one positive canary median per round"):
        summarize(SAMPLES_NS, [4, 6], [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="one positive canary median per round"):
        summarize(SAMPLES_NS, [4, 6], [0.5, 0.0])  # as_dict would write what from_dict refuses


# fastest_share ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "kept"),
    [
        *[(1, 1), (2, 2), (3, 3), (4, 3), (5, 3), (6, 3), (7, 3), (8, 3), (9, 3), (10, 3), (11, 3), (12, 3)],
        *[(13, 4), (16, 4), (17, 5), (40, 10)],
    ],
)
def test_fastest_share_keeps_the_fastest_quarter_and_at_least_three(n: int, kept: int) -> None:
    values = [float(v) for v in np.random.default_rng(n).permutation(np.arange(1, n + 1)) * 1.5]
    share = fastest_share(values)
    assert len(share) == kept
    assert share == [1.5 * v for v in range(1, kept + 1)]  # the smallest ones, in order


# stored_comparison relative to the canary -------------------------------------


def _machine_stats(
    *, seed: int, speed: float, canary: bool = True, rounds: int = 40, noise: float = 0.01
) -> LatencyStats:
    """40 rounds on a machine that flips between a fast state and one 1.6x slower; model and canary both
    follow the state (times ``speed``), so the model over the canary stays near 5 whatever the state."""
    rng = np.random.default_rng(seed)
    states = np.where(rng.random(rounds) < 0.5, 1.0, 1.6) * speed
    model = 10.0 * states * np.exp(rng.normal(0.0, noise, rounds))
    canary_ms = 2.0 * states * np.exp(rng.normal(0.0, noise, rounds))
    samples = [round(float(m) * NS_PER_MS) for m in model for _ in range(3)]
    return summarize(samples, [3] * rounds, [float(c) for c in canary_ms] if canary else ())


def _divided(stats: LatencyStats) -> list[float]:
    """Each round median over its canary median, by hand."""
    return [m / c for m, c in zip(stats.round_medians_ms, stats.canary_round_medians_ms, strict=True)]


def _without_canary(stats: LatencyStats) -> LatencyStats:
    return replace(stats, canary_round_medians_ms=())


ROUNDS_TEXT = "(10 of 40 rounds vs 10 of 40), Hodges-Lehmann ratio"
RELATIVE = f"fastest quarter of round medians / machine-speed canary {ROUNDS_TEXT}"
ABSOLUTE = f"fastest quarter of round medians {ROUNDS_TEXT}"


def test_a_uniformly_slower_machine_is_no_change_relative_to_the_canary() -> None:
    baseline = _machine_stats(seed=1, speed=1.0)
    slower_machine = _machine_stats(seed=2, speed=1.3)
    relative = stored_comparison(baseline, slower_machine, threshold=0.10)
    assert relative.statistic == RELATIVE
    assert relative.basis() == f"stored: {RELATIVE}"
    assert relative.estimate.ratio == pytest.approx(1.0, abs=0.02)
    assert relative.verdict is Verdict.OK
    # The same model medians without the canary: the machine's slowdown reads as the model's.
    absolute = stored_comparison(_without_canary(baseline), _without_canary(slower_machine), threshold=0.10)
    assert absolute.statistic == ABSOLUTE
    assert absolute.estimate.ratio == pytest.approx(1.3, abs=0.03)
    assert absolute.verdict is Verdict.REGRESSION


def test_a_real_slowdown_shows_relative_to_the_canary() -> None:
    baseline = _machine_stats(seed=1, speed=1.0)
    current = _machine_stats(seed=2, speed=1.0)
    slower_model = replace(current, round_medians_ms=tuple(m * 1.3 for m in current.round_medians_ms))
    comparison = stored_comparison(baseline, slower_model, threshold=0.10)
    assert comparison.statistic == RELATIVE
    assert comparison.estimate.ratio == pytest.approx(1.3, abs=0.03)
    assert comparison.verdict is Verdict.REGRESSION


def test_relative_comparison_reads_the_fastest_quarter_of_model_over_canary() -> None:
    baseline = _machine_stats(seed=3, speed=1.0)
    current = _machine_stats(seed=4, speed=1.3)
    expected = judge(fastest_share(_divided(baseline)), fastest_share(_divided(current)), threshold=0.10)
    assert stored_comparison(baseline, current, threshold=0.10).estimate == expected.estimate


@pytest.mark.parametrize("side", ["baseline", "current"])
def test_with_canary_medians_on_one_side_only_the_comparison_is_absolute(side: str) -> None:
    baseline = _machine_stats(seed=1, speed=1.0)
    current = _machine_stats(seed=2, speed=1.3)
    if side == "baseline":
        current = _without_canary(current)
    else:
        baseline = _without_canary(baseline)
    comparison = stored_comparison(baseline, current, threshold=0.10)
    assert comparison.statistic.startswith("fastest quarter of round medians (")
    assert "canary" not in comparison.statistic
    assert comparison.statistic == ABSOLUTE
    expected = judge(
        fastest_share(baseline.round_medians_ms), fastest_share(current.round_medians_ms), threshold=0.06
    )
    assert comparison.estimate == expected.estimate
    assert comparison.estimate.ratio == pytest.approx(1.3, abs=0.03)


def test_statistic_names_the_round_counts_of_each_side() -> None:
    baseline = _machine_stats(seed=1, speed=1.0, rounds=12)
    current = _machine_stats(seed=2, speed=1.0, rounds=40)
    comparison = stored_comparison(baseline, current, threshold=0.10)
    assert comparison.statistic == (
        "fastest quarter of round medians / machine-speed canary (10 of 40 rounds vs 3 of 12), "
        "Hodges-Lehmann ratio"
    )


# decision_cv and the too-noisy refusal ----------------------------------------


def test_decision_cv_reads_the_rounds_relative_to_the_canary_when_it_ran() -> None:
    stats = _machine_stats(seed=5, speed=1.0)
    relative = _divided(stats)
    assert decision_cv(stats) == pytest.approx(statistics.stdev(relative) / statistics.fmean(relative))
    assert decision_cv(stats) < 0.03
    absolute = decision_cv(_without_canary(stats))
    assert absolute == pytest.approx(stats.round_cv)
    assert absolute > 0.15  # the machine's two speed states


def test_decision_cv_of_one_round_is_zero() -> None:
    assert decision_cv(summarize([2 * NS_PER_MS], [1], [0.5])) == 0.0
    assert decision_cv(summarize([2 * NS_PER_MS], [1])) == 0.0


KEY = CheckKey("test_m.py", "test_m[cpu-all]", "cpu-all", "ci", "ortperf update 'test_m.py::test_m[cpu-all]'")


def _record(stats: LatencyStats) -> LatencyResult:
    return check_latency(
        lambda: None,
        key=KEY,
        plan=RoutePlan(Route.RECORD),
        entry=EntryState(),
        policy=CheckPolicy(update=True, max_cv=0.10, measure=MeasureSettings(budget_s=0.01)),
        environment={"cores": 2},
        today="2026-11-22",
        measure_fn=lambda run, settings: stats,
    )


def test_recording_judges_noise_by_what_the_comparison_will_read_and_never_refuses() -> None:
    stats = _machine_stats(seed=5, speed=1.0)
    assert stats.round_cv > 0.10  # the machine swung, the model relative to it did not
    quiet = _record(stats)
    assert (quiet.status, quiet.noisy) == ("new", False)
    noisy = _record(_without_canary(stats))
    assert (noisy.status, noisy.noisy, noisy.failed) == ("new", True, False)
    assert noisy.recorded_spread == pytest.approx(stats.round_cv, rel=0.05)


def test_the_one_default_latency_threshold_is_three_percent_and_stored_figures_call_beyond_ten() -> None:
    assert (CheckPolicy().threshold, STORED_FLOOR) == (0.03, 0.10)


# --ortperf-canary / ortperf_canary -------------------------------------------


@pytest.mark.parametrize(
    ("cli", "ini", "expected"),
    [
        (None, None, True),  # the default
        ("off", None, False),
        ("on", None, True),
        (None, "false", False),
        (None, "no", False),
        (None, "0", False),
        (None, " OFF ", False),
        (None, "true", True),
        (None, "Yes", True),
        (None, "1", True),
        ("on", "off", True),  # the command line beats the ini file
        ("0", "on", False),
    ],
)
def test_canary_setting_spellings(tmp_path: Path, cli: str | None, ini: str | None, expected: bool) -> None:
    config = FakeConfig(
        tmp_path,
        cli={} if cli is None else {"ortperf_canary": cli},
        ini={} if ini is None else {"ortperf_canary": ini},
    )
    assert build_config(config).canary is expected


@pytest.mark.parametrize(
    ("cli", "ini", "message"),
    [
        (
            "maybe",
            None,
            "--ortperf-canary: expected on or off, got 'maybe' (a switch takes on/off, yes/no, true/false or 1/0).",
        ),
        (
            None,
            "sometimes",
            "ini ortperf_canary: expected on or off, got 'sometimes' (a switch takes on/off, yes/no, true/false or 1/0).",
        ),
        (
            None,
            "",
            "ini ortperf_canary: expected on or off, got '' (a switch takes on/off, yes/no, true/false or 1/0).",
        ),
        (
            "onn",
            "on",
            "--ortperf-canary: expected on or off, got 'onn' (a switch takes on/off, yes/no, true/false or 1/0).",
        ),  # a bad value is never ignored
    ],
)
def test_a_bad_canary_setting_is_a_usage_error_naming_its_source(
    tmp_path: Path, cli: str | None, ini: str | None, message: str
) -> None:
    config = FakeConfig(
        tmp_path,
        cli={} if cli is None else {"ortperf_canary": cli},
        ini={} if ini is None else {"ortperf_canary": ini},
    )
    with pytest.raises(UsageError) as info:
        build_config(config)
    assert str(info.value) == message
