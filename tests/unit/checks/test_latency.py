"""check_latency with a fake measurement and a real baseline store: verdicts, records, messages."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ortperf.checks.latency_figures import latency_figures, latency_part, stored_latency
from pytest_ortperf.checks.latency_verdicts import LatencyResult, check_latency, glance
from pytest_ortperf.checks.paths import Route, choose
from pytest_ortperf.checks.policy import CheckPolicy, Missing
from pytest_ortperf.checks.status import Status
from pytest_ortperf.kinds import builtin_kinds
from pytest_ortperf.latency.decision import DEFAULT_THRESHOLD, Verdict
from pytest_ortperf.latency.measure import MeasureSettings
from pytest_ortperf.latency.stats import NS_PER_MS, LatencyStats, summarize
from pytest_ortperf.reports.ci_files import latency_record
from pytest_ortperf.store.baselines import BaselineEntry, BaselineError, BaselineStore, render
from pytest_ortperf.store.hardware import Hardware
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.recipe import split

TEST_FILE = "tests/perf/test_models.py"
TEST = "test_squeezenet[cpu-all]"
RECORD = "ortperf update 'tests/perf/test_models.py::test_squeezenet[cpu-all]'"
KEY = CheckKey(test_file=TEST_FILE, test=TEST, variant="cpu-all", machine="ci", record_command=RECORD)
ENV: dict[str, Any] = {
    "ort_version": "1.31.1",
    "model_sha256": "a" * 64,
    "settings": {"intra_op_threads": 1},
    "cores": 4,
}
MEASURE = MeasureSettings(budget_s=0.01, rounds=15, min_rounds=5)


def stats(
    scale: float, *, seed: int = 0, noise: float = 0.02, rounds: int = 15, runs: int = 3
) -> LatencyStats:
    """Stats of ``rounds`` rounds of ``runs`` equal runs, round medians around ``scale`` ms."""
    medians = scale * np.exp(np.random.default_rng(seed).normal(0.0, noise, rounds))
    samples = [round(float(m) * NS_PER_MS) for m in medians for _ in range(runs)]
    return summarize(samples, [runs] * rounds)


class FakeMeasure:
    """Returns the prepared stats one call at a time and remembers what it was given."""

    def __init__(self, *results: LatencyStats) -> None:
        self._results = list(results)
        self.settings: list[MeasureSettings] = []
        self.runs: list[Callable[[], object]] = []

    def __call__(self, run: Callable[[], object], settings: MeasureSettings) -> LatencyStats:
        self.runs.append(run)
        self.settings.append(settings)
        return self._results.pop(0)

    @property
    def calls(self) -> int:
        return len(self.settings)


def run_model() -> None:
    """Stands in for ``session.run``: the fake measurement never calls it."""


def check(
    store: BaselineStore,
    measure: FakeMeasure,
    environment: dict[str, Any] | None = None,
    beside: str = "",
    **policy: Any,
) -> LatencyResult:
    """The check as the gate makes it: the entry read once, the plan chosen once from it."""
    environment = ENV if environment is None else environment
    policy.setdefault("threshold", 0.10)  # the stored route's rules, at the threshold they were validated at
    rules = CheckPolicy(measure=MEASURE, record_cap=0.0, **policy)
    plan = choose(store.lookup(TEST_FILE, TEST), environment, KEY.machine, update=rules.update)
    result = check_latency(
        run_model,
        key=KEY,
        plan=plan,
        entry=store.state(TEST_FILE, TEST, store.lookup(TEST_FILE, TEST)),
        policy=rules,
        environment=environment,
        today="2025-06-01",
        measure_fn=measure,
        beside=beside,
    )
    if result.staged is not None:  # as the gate stages it
        store.stage(TEST_FILE, TEST, result.staged)
    return result


def entry_of(
    latency: LatencyStats, environment: dict[str, Any], *, machine: str = "ci", **more: Any
) -> BaselineEntry:
    recipe, measured_on = split(environment)
    figures = latency_figures("2025-01-02", latency, measured_on=measured_on, **more)
    return BaselineEntry("cpu-all", "2025-01-02", recipe, figures={machine: figures})


def record(
    root: Path, latency: LatencyStats, *, machine: str = "ci", environment: dict[str, Any] | None = None
) -> Path:
    """Figures of ``machine``; under the recipe already on disk they join the other machines' (the
    store's write merges them), under another recipe they replace the entry."""
    store = BaselineStore(root)
    store.stage(
        TEST_FILE, TEST, entry_of(latency, ENV if environment is None else environment, machine=machine)
    )
    store.write()
    return store.path_for(TEST_FILE)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "baselines"


@pytest.fixture
def with_baseline(root: Path) -> Path:
    """A 10 ms baseline for machine 'ci'; returns the baseline file."""
    return record(root, stats(10.0, seed=1))


# missing baselines ---------------------------------------------------------


@pytest.mark.parametrize(
    ("missing", "failed", "skipped"), [("fail", True, False), ("skip", False, True), ("pass", False, False)]
)
def test_a_missing_baseline_follows_the_policy(
    root: Path, missing: Missing, failed: bool, skipped: bool
) -> None:
    measure = FakeMeasure(stats(12.5, noise=0.0))
    store = BaselineStore(root)
    result = check(store, measure, missing=missing)
    assert result.status == "missing"
    assert (result.failed, result.skipped) == (failed, skipped)
    assert measure.calls == 1
    assert result.baseline is None
    assert result.comparison is None
    assert result.change == ""
    assert result.message == (
        f"no latency baseline for {TEST} on machine 'ci' (no machine has one yet); measured median "
        f"12.5 ms, p90 12.5 ms. Record it with:\n    {RECORD}"
    )
    assert list(store.staged()) == []
    assert not root.exists()


def test_a_missing_baseline_names_the_machines_that_have_one(root: Path) -> None:
    record(root, stats(10.0), machine="laptop")
    record(root, stats(10.0), machine="ci-large")
    result = check(BaselineStore(root), FakeMeasure(stats(10.0)))
    assert result.failed
    assert "this hardware has no figures of its own (figures exist for: ci-large, laptop)" in result.message
    assert RECORD in result.message


def test_a_damaged_baseline_file_is_reported_before_measuring(root: Path) -> None:
    path = BaselineStore(root).path_for(TEST_FILE)
    path.parent.mkdir(parents=True)
    path.write_text("{broken", encoding="utf-8")
    measure = FakeMeasure(stats(10.0))
    with pytest.raises(BaselineError) as info:
        check(BaselineStore(root), measure, update=True)
    assert str(path) in str(info.value)
    assert measure.calls == 0
    assert path.read_text(encoding="utf-8") == "{broken"


def test_the_measurement_gets_the_run_and_the_policy_settings(root: Path) -> None:
    measure = FakeMeasure(stats(10.0))
    check(BaselineStore(root), measure, missing="pass")
    assert measure.runs == [run_model]
    assert measure.settings == [MEASURE]


# update mode ---------------------------------------------------------------


def test_update_records_a_new_entry(root: Path) -> None:
    store = BaselineStore(root)
    current = stats(10.0)
    result = check(store, FakeMeasure(current), update=True)
    assert result.status == "new"
    assert not result.failed
    staged = list(store.staged())
    assert len(staged) == 1
    path, test, entry = staged[0]
    assert (path, test) == (store.path_for(TEST_FILE), TEST)
    assert entry is not None
    assert (entry.variant, entry.recorded, dict(entry.recipe)) == ("cpu-all", "2025-06-01", split(ENV)[0])
    figures = entry.figures_for("ci")
    assert figures is not None
    assert (stored_latency(figures), figures.measured_on) == (current, split(ENV)[1])
    assert latency_part(figures).spread == pytest.approx(current.round_cv)
    assert store.write() == [path]
    written = BaselineStore(root).lookup(TEST_FILE, TEST)
    assert written is not None
    assert written.recorded == "2025-06-01"
    latency = stored_latency(written.figures_for("ci"))
    assert latency.median_ms == pytest.approx(current.median_ms, rel=1e-5)


def test_update_leaves_a_baseline_within_the_threshold_unchanged(root: Path, with_baseline: Path) -> None:
    before = with_baseline.stat()
    store = BaselineStore(root)
    result = check(store, FakeMeasure(stats(10.2, seed=2)), update=True)
    assert result.status == "unchanged"
    assert not result.failed
    assert result.comparison is not None
    assert result.comparison.verdict is Verdict.OK
    assert result.changes == ()
    assert list(store.staged()) == []
    assert store.write() == []
    after = with_baseline.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    stored = store.lookup(TEST_FILE, TEST)
    assert stored is not None
    assert stored.figures_for("ci").recorded == "2025-01-02"


def test_update_records_when_the_environment_changed(root: Path, with_baseline: Path) -> None:
    store = BaselineStore(root)
    new_env = ENV | {"ort_version": "1.32.0"}
    result = check(store, FakeMeasure(stats(10.1, seed=2)), environment=new_env, update=True)
    assert result.status == "updated"
    assert result.changes == ("onnxruntime 1.31.1 -> 1.32.0", "figures measured under the old recipe dropped")
    assert [entry.environment_for("ci") for *_, entry in store.staged() if entry] == [new_env]
    assert store.write() == [with_baseline]
    stored = BaselineStore(root).lookup(TEST_FILE, TEST)
    assert stored is not None
    assert (stored.recorded, stored.recipe["ort_version"]) == ("2025-06-01", "1.32.0")


def test_update_re_records_a_baseline_measured_another_way(root: Path, with_baseline: Path) -> None:
    store = BaselineStore(root)
    new_env = ENV | {"measurement": {"budget_s": 4.0, "rounds": 40, "canary": True}}
    result = check(store, FakeMeasure(stats(10.1, seed=2)), environment=new_env, update=True)
    assert result.status == "updated"
    assert result.changes == ("measurement: budget_s None -> 4.0, canary None -> True, rounds None -> 40",)
    assert store.write() == [with_baseline]


@pytest.mark.parametrize("scale", [13.0, 7.0])
def test_update_records_a_significant_change_in_latency(
    root: Path, with_baseline: Path, scale: float
) -> None:
    store = BaselineStore(root)
    result = check(store, FakeMeasure(stats(scale, seed=2)), update=True)
    assert result.status == "updated"
    assert not result.failed
    assert len(list(store.staged())) == 1


@pytest.mark.parametrize("has_baseline", [False, True])
def test_update_writes_a_noisy_measurement_with_its_spread(root: Path, has_baseline: bool) -> None:
    """Recording never refuses: a noisy machine's figures are written, marked noisy, with their spread."""
    if has_baseline:
        record(root, stats(10.0, seed=1))
    noisy = stats(10.0, seed=3, noise=0.3)
    assert noisy.round_cv > 0.10
    store = BaselineStore(root)
    result = check(store, FakeMeasure(noisy), environment=ENV | {"cores": 8}, update=True, max_cv=0.10)
    assert (result.status, result.failed, result.noisy) == ("updated" if has_baseline else "new", False, True)
    assert result.recorded_spread == pytest.approx(noisy.round_cv)
    store.write()
    figures = BaselineStore(root).lookup(TEST_FILE, TEST).figures_for("ci")
    part = latency_part(figures)
    assert (part.settled, part.spread) == (False, pytest.approx(noisy.round_cv, rel=1e-5))


def test_an_update_replaces_noisy_figures_by_quieter_ones_and_keeps_quiet_ones(root: Path) -> None:
    store = BaselineStore(root)
    store.stage(TEST_FILE, TEST, entry_of(stats(10.0, seed=1), ENV, spread=0.3, settled=False))
    store.write()
    quieter = check(BaselineStore(root), FakeMeasure(stats(10.0, seed=2, noise=0.01)), update=True)
    assert (quieter.status, quieter.changes) == (
        "updated",
        (f"quieter figures (spread 30.0% -> {quieter.recorded_spread:.1%})",),
    )
    store = BaselineStore(root)
    store.stage(TEST_FILE, TEST, entry_of(stats(10.0, seed=1), ENV, spread=0.02))
    store.write()
    kept = check(BaselineStore(root), FakeMeasure(stats(10.0, seed=2, noise=0.01)), update=True)
    assert (kept.status, kept.changes) == ("unchanged", ())


def test_a_noisier_recording_of_an_unchanged_recipe_keeps_the_quieter_stored_figures(root: Path) -> None:
    """A loaded machine's update of a recipe nothing changed: +80% at an 8% spread against figures
    stored at 2% would make every later run read the machine as faster. The stored figures stay, the
    file is not written, and the result says which were kept and why."""
    store = BaselineStore(root)
    store.stage(TEST_FILE, TEST, entry_of(stats(10.0, seed=1), ENV, spread=0.02))
    store.write()
    before = (root / f"{TEST_FILE}.json").read_bytes()
    loaded = stats(18.0, seed=2, noise=0.08)
    store = BaselineStore(root)
    result = check(store, FakeMeasure(loaded), update=True, max_cv=1.0)
    assert result.status == "unchanged"
    assert result.kept.startswith("stored figures kept: quieter (spread 2.0%) than this recording (spread ")
    assert "nothing in the recipe or the hardware changed" in result.kept
    assert store.write() == []
    assert (root / f"{TEST_FILE}.json").read_bytes() == before
    # The same slower figures measured as quietly as the stored ones replace them: a real change.
    steady = check(
        BaselineStore(root), FakeMeasure(stats(18.0, seed=2, noise=0.005)), update=True, max_cv=1.0
    )
    assert (steady.status, steady.kept) == ("updated", "")


def test_at_the_one_default_threshold_stored_figures_call_only_changes_beyond_their_floor(
    root: Path, with_baseline: Path
) -> None:
    """3%, side by side's sensitivity, decides the stored route too; one process against the one
    that recorded cannot tell a 5% change from process state (STORED_FLOOR, 10%): it reads
    inconclusive, never ok, and a +30% change is still a regression."""
    store = BaselineStore(root)
    five = check(store, FakeMeasure(stats(10.5, seed=2), stats(10.5, seed=3)), threshold=DEFAULT_THRESHOLD)
    assert DEFAULT_THRESHOLD == 0.03
    assert (five.status, five.failed) == ("inconclusive", False)
    assert "could detect >= 10%" in five.change
    assert (
        "changes called beyond 10% (one process now against the one that recorded)"
        in five.comparison.statistic
    )
    slower = check(
        BaselineStore(root),
        FakeMeasure(stats(13.0, seed=2), stats(13.0, seed=3)),
        threshold=DEFAULT_THRESHOLD,
    )
    assert (slower.status, slower.failed) == ("regression", True)


def test_noise_below_max_cv_is_not_called_noisy(root: Path) -> None:
    noisy = stats(10.0, seed=3, noise=0.3)
    store = BaselineStore(root)
    result = check(store, FakeMeasure(noisy), update=True, max_cv=1.0)
    assert (result.status, result.noisy) == ("new", False)


def test_a_noisy_recording_widens_the_interval_of_later_stored_comparisons(root: Path) -> None:
    """The same +12% today reads as a regression against quiet figures, and as inconclusive against
    figures recorded with a 40% spread."""
    store = BaselineStore(root)
    store.stage(TEST_FILE, TEST, entry_of(stats(10.0, seed=1), ENV, spread=0.01))
    store.write()
    quiet = check(BaselineStore(root), FakeMeasure(stats(11.5, seed=2), stats(11.5, seed=4)))
    store = BaselineStore(root)
    store.stage(TEST_FILE, TEST, entry_of(stats(10.0, seed=1), ENV, spread=0.4, settled=False))
    store.write()
    noisy = check(BaselineStore(root), FakeMeasure(stats(11.5, seed=2), stats(11.5, seed=4)))
    assert quiet.status == Status.REGRESSION
    assert noisy.status == Status.INCONCLUSIVE
    assert noisy.comparison.estimate.high - noisy.comparison.estimate.low > (
        quiet.comparison.estimate.high - quiet.comparison.estimate.low
    )


# comparisons ---------------------------------------------------------------


def test_within_the_threshold_is_ok(root: Path, with_baseline: Path) -> None:
    measure = FakeMeasure(stats(10.3, seed=2))
    result = check(BaselineStore(root), measure)
    assert result.status == "ok"
    assert not result.failed
    assert result.message == ""
    assert result.confirmation is None
    assert measure.calls == 1
    assert result.change.startswith("+")
    assert "(99% CI" in result.change


def test_a_regression_that_is_not_confirmed_passes(root: Path, with_baseline: Path) -> None:
    second = stats(10.1, seed=3)
    measure = FakeMeasure(stats(13.0, seed=2), second)
    store = BaselineStore(root)
    result = check(store, measure)
    assert measure.calls == 2
    assert result.status == "inconclusive (not confirmed)"
    assert not result.failed
    assert result.message == ""
    assert result.comparison is not None
    assert result.comparison.verdict is Verdict.REGRESSION
    assert result.confirmation is not None
    assert result.confirmation.verdict is Verdict.OK
    assert result.current is second
    assert result.change == result.confirmation.estimate.describe()
    assert list(store.staged()) == []


def test_a_confirmed_regression_fails_with_the_whole_story(root: Path, with_baseline: Path) -> None:
    first, second = stats(13.0, seed=2), stats(12.5, seed=3)
    measure = FakeMeasure(first, second)
    store = BaselineStore(root)
    result = check(store, measure, environment=ENV | {"ort_version": "1.32.0"})
    assert measure.calls == 2
    assert result.status == "regression"
    assert result.failed
    assert result.current is second
    assert result.baseline is not None
    assert result.confirmation is not None
    base = stored_latency(result.baseline)
    lines = result.message.splitlines()
    assert lines[0] == f"latency regression in {TEST} on machine 'ci'"
    assert lines[1] == (
        f"  baseline: median {base.median_ms:.4g} ms, p90 {base.p90_ms:.4g} ms (15 rounds x 3 runs), "
        "recorded 2025-01-02"
    )
    assert (
        lines[2]
        == f"  current:  median {second.median_ms:.4g} ms, p90 {second.p90_ms:.4g} ms (15 rounds x 3 runs)"
    )
    assert re.fullmatch(
        r"  compared: \d+\.?\d* ms -> \d+\.?\d* ms \(the median of each side's fastest quarter of round "
        r"medians\)",
        lines[3],
    )
    assert lines[4] == f"  change:   {result.confirmation.estimate.describe()}, threshold +/-10%"
    assert re.fullmatch(
        r"  change:   \+2\d\.\d% \(99% CI \+\d+\.\d% \.\. \+\d+\.\d%\), threshold \+/-10%", lines[4]
    )
    assert result.comparison is not None
    assert lines[5] == f"  decided by {result.confirmation.basis()}"
    assert lines[5].startswith(
        "  decided by stored: fastest quarter of round medians (4 of 15 rounds vs 4 of 15)"
    )
    assert lines[6] == f"  first measurement: {result.comparison.estimate.describe()} (confirmed by a second)"
    assert lines[7] == "  changed since the baseline: onnxruntime 1.31.1 -> 1.32.0"
    assert lines[8].startswith(
        "  decided by stored figures: the baseline predates what a reference is rebuilt from"
    )
    assert lines[9] == f"  to accept the new latency: {RECORD}"
    assert len(lines) == 10
    assert list(store.staged()) == []


def _rounds(*groups: tuple[int, float], seed: int, canary: float | None = None) -> LatencyStats:
    """Stats of rounds of 3 runs: ``(count, ms)`` groups of round medians, each with 1% noise."""
    rng = np.random.default_rng(seed)
    medians = [ms * float(np.exp(rng.normal(0.0, 0.01))) for count, ms in groups for _ in range(count)]
    samples = [round(m * NS_PER_MS) for m in medians for _ in range(3)]
    canaries = [canary] * len(medians) if canary is not None else []
    return summarize(samples, [3] * len(medians), canaries)


@pytest.mark.parametrize("canary", [None, 2.0], ids=["round-medians", "relative-to-the-canary"])
def test_a_failure_labels_the_figures_that_decided_when_the_medians_say_otherwise(
    root: Path, canary: float | None
) -> None:
    """The baseline run was fast for a quarter of its rounds, the current run never: the fastest
    quarters are +25% apart, the medians of all runs only a few percent. The message shows the figures
    compared, labelled, and says that the medians are shown, not compared."""
    baseline = _rounds((10, 8.0), (30, 10.0), seed=1, canary=canary)
    record(root, baseline)
    current = [_rounds((40, 10.2), seed=s, canary=canary) for s in (2, 3)]
    result = check(BaselineStore(root), FakeMeasure(*current))
    assert result.failed, result.message
    assert result.confirmation is not None
    medians = current[1].median_ms / baseline.median_ms - 1
    assert 0.0 < medians < 0.06
    assert result.confirmation.estimate.ratio > 1.2
    lines = result.message.splitlines()
    if canary is None:
        assert re.fullmatch(
            r"  compared: 8\.\d+ ms -> 10\.\d+ ms \(the median of each side's fastest quarter of round medians\)",
            lines[3],
        ), lines[3]
    else:
        assert re.fullmatch(
            r"  compared: 4\.\d+ -> 5\.\d+ \(round median / canary median, the median of each side's fastest "
            r"quarter\)",
            lines[3],
        ), lines[3]
    assert lines[4].startswith("  change:   +2")
    assert lines[5].startswith("  decided by stored: fastest quarter of round medians")
    assert lines[6] == (
        f"  medians of all runs: {medians * 100:+.1f}%, outside the interval: shown, not compared (they move "
        "with how long the machine was slow during each run; the fastest quarter compares like with like)"
    )


def test_medians_within_the_interval_need_no_word(root: Path, with_baseline: Path) -> None:
    result = check(BaselineStore(root), FakeMeasure(stats(13.0, seed=2), stats(13.0, seed=3)))
    assert result.failed
    assert not any(line.startswith("  medians of all runs") for line in result.message.splitlines())


def test_a_regression_message_says_when_nothing_changed(root: Path, with_baseline: Path) -> None:
    result = check(BaselineStore(root), FakeMeasure(stats(13.0, seed=2), stats(13.0, seed=3)))
    assert result.failed
    assert "  changed since the baseline: nothing recorded" in result.message.splitlines()


def test_the_threshold_comes_from_the_policy(root: Path, with_baseline: Path) -> None:
    result = check(BaselineStore(root), FakeMeasure(stats(13.0, seed=2)), threshold=0.5)
    assert result.status == "ok"
    assert not result.failed


def test_a_noisy_slowdown_is_not_significant(root: Path, with_baseline: Path) -> None:
    # Five rounds whose fastest quarter (3 rounds) spans 0.9x-1.4x of the baseline: the interval reaches 1.
    rounds = [9.0, 12.5, 14.0, 16.0, 18.0]
    measure = FakeMeasure(summarize([round(m * NS_PER_MS) for m in rounds for _ in range(3)], [3] * 5))
    result = check(BaselineStore(root), measure)
    assert result.status == "inconclusive"
    assert not result.failed
    assert measure.calls == 1  # only a regression verdict is re-measured


def test_an_improvement_passes(root: Path, with_baseline: Path) -> None:
    measure = FakeMeasure(stats(7.0, seed=2))
    result = check(BaselineStore(root), measure)
    assert result.status == "improved"
    assert not result.failed
    assert result.message == ""
    assert measure.calls == 1


def test_an_improvement_fails_when_asked(root: Path, with_baseline: Path) -> None:
    result = check(BaselineStore(root), FakeMeasure(stats(7.0, seed=2)), fail_on_improvement=True)
    assert result.status == "improved"
    assert result.failed
    lines = result.message.splitlines()
    assert lines[0] == f"latency improvement in {TEST} on machine 'ci'"
    assert lines[4].startswith("  change:   -3")
    assert "  (faster beyond the threshold: check that the model still does all its work)" in lines
    assert lines[-1] == f"  to accept the new latency: {RECORD}"
    assert not any("first measurement" in line for line in lines)


@pytest.mark.parametrize(
    "measurements",
    [
        pytest.param([10.1], id="ok"),
        pytest.param([13.0, 13.0], id="regression"),
        pytest.param([13.0, 10.0], id="unconfirmed"),
        pytest.param([7.0], id="improved"),
    ],
)
def test_a_comparison_never_stages_anything(
    root: Path, with_baseline: Path, measurements: Sequence[float]
) -> None:
    before = with_baseline.read_bytes()
    store = BaselineStore(root)
    measure = FakeMeasure(*(stats(m, seed=i + 2) for i, m in enumerate(measurements)))
    check(store, measure, environment=ENV | {"cores": 16}, fail_on_improvement=True)
    assert list(store.staged()) == []
    assert store.write() == []
    assert with_baseline.read_bytes() == before


def test_an_unconfirmed_regression_that_turns_into_an_improvement_is_reported_consistently(
    root: Path, with_baseline: Path
) -> None:
    result = check(
        BaselineStore(root), FakeMeasure(stats(13.0, seed=2), stats(7.0, seed=3)), fail_on_improvement=True
    )
    assert result.confirmation is not None
    assert result.confirmation.verdict is Verdict.IMPROVED
    if result.failed:
        assert result.status == "improved"
        assert "confirmed by a second" not in result.message
    else:
        assert result.status == "inconclusive (not confirmed)"


def test_the_failure_message_shows_a_fractional_threshold_exactly(root: Path, with_baseline: Path) -> None:
    result = check(
        BaselineStore(root), FakeMeasure(stats(13.0, seed=2), stats(13.0, seed=3)), threshold=0.025
    )
    assert result.failed
    assert "threshold +/-2.5%" in result.message


@pytest.mark.parametrize(
    "damage",
    [{"rounds": 0, "count": 0}, {"round_medians_ms": (0.0, 10.0, 10.0)}],
    ids=["zero-rounds", "zero-median"],
)
def test_a_baseline_with_impossible_numbers_is_reported_as_damaged(
    root: Path, damage: dict[str, Any]
) -> None:
    damaged = entry_of(dataclasses.replace(stats(10.0, seed=1), **damage), ENV)
    path = root / f"{TEST_FILE}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render({TEST: damaged}))
    decoders = builtin_kinds().part_decoders()  # as the run hands them to its store
    with pytest.raises(BaselineError) as info:
        check(BaselineStore(root, decoders=decoders), FakeMeasure(stats(13.0, seed=2), stats(13.0, seed=3)))
    assert str(path) in str(info.value)


# hardware identities -------------------------------------------------------

ZEN4 = Hardware("x86_64", "AuthenticAMD", "25/17/1", "zen4", ("avx2", "avx512f", "avx512_vnni"), 2).as_dict()
ZEN3 = Hardware("x86_64", "AuthenticAMD", "25/1/1", "zen3", ("avx2",), 2).as_dict()


@pytest.mark.parametrize(("missing", "failed", "skipped"), [("fail", True, False), ("pass", False, False)])
def test_figures_measured_on_other_hardware_never_decide_and_the_check_says_why_it_is_missing(
    root: Path, missing: str, failed: bool, skipped: bool
) -> None:
    """Nothing to rebuild (an entry without the fields a reference is rebuilt from) and no figures of
    this machine key: another machine's figures are not compared."""
    record(root, stats(10.0, seed=1), machine="zen4-runner", environment=ENV | {"hardware": ZEN4})
    store = BaselineStore(root)
    # 40% slower and 40% faster: neither is a verdict on other hardware
    for scale in (14.0, 6.0):
        result = check(store, FakeMeasure(stats(scale, seed=2)), ENV | {"hardware": ZEN3}, missing=missing)
        assert result.status == Status.MISSING
        assert (result.failed, result.skipped, result.comparison) == (failed, skipped, None)
        assert result.message.startswith(
            f"no latency baseline for {TEST} on machine 'ci' (the baseline predates"
        )
        assert "this hardware has no figures of its own (figures exist for: zen4-runner)" in result.message
    assert not list(store.staged())


def test_this_machines_own_figures_decide_beside_other_machines(root: Path) -> None:
    record(root, stats(10.0, seed=1), machine="zen4-runner", environment=ENV | {"hardware": ZEN4})
    record(root, stats(10.0, seed=1), environment=ENV | {"hardware": ZEN3})
    same = check(
        BaselineStore(root), FakeMeasure(stats(14.0, seed=2), stats(14.0, seed=3)), ENV | {"hardware": ZEN3}
    )
    assert same.status == Status.REGRESSION


def test_update_on_new_hardware_adds_its_figures_and_keeps_the_others(root: Path) -> None:
    record(root, stats(10.0, seed=1), machine="zen4-runner", environment=ENV | {"hardware": ZEN4})
    store = BaselineStore(root)
    result = check(store, FakeMeasure(stats(12.0, seed=2)), ENV | {"hardware": ZEN3}, update=True)
    assert result.status == Status.NEW
    assert result.changes == ("figures of this hardware added",)
    store.write()
    entry = BaselineStore(root).lookup(TEST_FILE, TEST)
    assert entry.machines("latency") == ["ci", "zen4-runner"]
    assert entry.figures_for("ci").measured_on["hardware"] == ZEN3
    assert entry.figures_for("zen4-runner").recorded == "2025-01-02"


# nothing changed: unchanged ------------------------------------------------

SAME = ENV | {"hardware": ZEN3, "inputs": {"x": "float32[1, 4]"}, "inputs_sha256": "c" * 64,
              "ort_flavour": "onnxruntime-gpu", "providers_used": ["CPUExecutionProvider"], "variant": "cpu-all"}  # fmt: skip


def test_with_nothing_changed_a_slower_machine_is_unchanged_after_a_short_look(root: Path) -> None:
    record(root, stats(10.0, seed=1), environment=SAME)
    measure = FakeMeasure(stats(28.0, seed=2))
    result = check(BaselineStore(root), measure, SAME | {"measurement": {"budget_s": 9}})  # not controlled
    assert (result.status, result.failed, result.mode) == (Status.UNCHANGED, False, "unchanged")
    assert measure.calls == 1
    assert measure.settings[0].budget_s == 0.01  # min(0.5 s, the policy's budget)
    assert result.drift == pytest.approx(2.8, rel=0.05)
    assert result.change.startswith("2.")
    assert result.change.endswith("x slower than at recording; nothing changed")
    assert result.basis == "unchanged"


@pytest.mark.parametrize("drift_threshold", [None, 0.2])
def test_a_drift_measured_beside_another_xdist_worker_is_not_the_machines(
    root: Path, drift_threshold: float | None
) -> None:
    record(root, stats(10.0, seed=1, noise=0.0), environment=SAME)
    beside = "another xdist worker of this run"
    measure = FakeMeasure(stats(34.2, seed=2, noise=0.0))
    result = check(BaselineStore(root), measure, SAME, beside=beside, drift_threshold=drift_threshold)
    # Shown, with what it was measured beside; never the machine's, never a failure.
    assert (result.status, result.failed, result.drift_beside) == (Status.UNCHANGED, False, beside)
    assert result.drift == pytest.approx(3.42, rel=0.01)
    assert not result.change.startswith("machine")
    assert result.change == (
        "3.42x slower than at recording, measured beside another xdist worker of this run: not the "
        "machine's drift; nothing changed"
    )
    record_ = latency_record(result, "t.py::test")
    assert record_["drift"] == {"ratio": result.drift, "text": result.change, "beside": beside}


def test_a_short_look_is_at_most_half_a_second() -> None:
    assert glance(MeasureSettings(budget_s=4.0)).budget_s == 0.5
    assert glance(MeasureSettings(budget_s=0.2)).budget_s == 0.2
    short = glance(MeasureSettings(budget_s=4.0, rounds=40, warmup_s=0.2))
    assert (short.rounds, short.min_rounds, short.warmup_runs, short.warmup_s) == (40, 1, 1, 0.05)


@pytest.mark.parametrize(
    "change",
    [
        {"model_sha256": "b" * 64},
        {"settings": {"intra_op_threads": 2}},
        {"inputs_sha256": "d" * 64},
        {"ort_version": "1.32.0"},
        {"ort_flavour": "onnxruntime"},
        {"providers_used": ["CUDAExecutionProvider"]},
    ],
)
def test_any_controlled_change_leaves_the_unchanged_path(root: Path, change: dict[str, Any]) -> None:
    record(root, stats(10.0, seed=1), environment=SAME)
    plan = choose(BaselineStore(root).lookup(TEST_FILE, TEST), SAME | change, "ci", update=False)
    assert plan.route in (Route.SIDE_BY_SIDE, Route.STORED)


def test_with_nothing_changed_on_hardware_that_never_recorded_it_the_check_is_unchanged(root: Path) -> None:
    record(root, stats(10.0, seed=1), machine="zen4-runner", environment=SAME | {"hardware": ZEN4})
    result = check(BaselineStore(root), FakeMeasure(stats(28.0, seed=2)), SAME)
    assert (result.status, result.failed, result.drift) == (Status.UNCHANGED, False, None)
    assert result.change == "nothing changed; no figures for this hardware yet"


@pytest.mark.parametrize(("scale", "failed"), [(10.5, False), (13.0, True), (7.5, True)])
def test_the_drift_threshold_gates_an_unchanged_check_both_ways(
    root: Path, scale: float, failed: bool
) -> None:
    record(root, stats(10.0, seed=1, noise=0.0), environment=SAME)
    result = check(
        BaselineStore(root), FakeMeasure(stats(scale, seed=2, noise=0.0)), SAME, drift_threshold=0.2
    )
    assert result.failed is failed
    assert result.status == (Status.DRIFTED if failed else Status.UNCHANGED)
    if failed:
        assert result.message.splitlines()[0].startswith(f"latency of {TEST} on machine 'ci' drifted: 1.3")
        assert "  drift threshold: 20% (--ortperf-drift-threshold)" in result.message
        assert result.message.endswith(RECORD)


def test_a_canary_measured_in_another_machine_state_never_turns_faster_medians_into_a_regression(
    root: Path,
) -> None:
    """The newcomer's LightGBM (issue 46): recorded beside another run, its canary 2.4 times slower
    than today's, its median 0.091 ms; today every run takes about 0.054 ms. Relative to the canary
    that reads +43%, and did so twice; the medians say 41% faster. No basis: inconclusive, never a
    failure, and the change says why."""
    record(root, _rounds((40, 0.0914), seed=1, canary=3.16))
    current = [_rounds((40, 0.0539), seed=s, canary=1.30) for s in (2, 3)]
    result = check(BaselineStore(root), FakeMeasure(*current))
    assert result.comparison is not None
    assert result.comparison.estimate.ratio > 1.3  # what the canary-relative statistic reads
    assert result.status is Status.INCONCLUSIVE
    assert not result.failed
    assert "no basis for a verdict: it read regression, but the medians of all runs -41." in result.change
    assert "the fastest quarter without the canary -41." in result.change


def test_figures_that_agree_with_the_medians_still_fail(root: Path) -> None:
    record(root, _rounds((40, 10.0), seed=1, canary=2.0))
    current = [_rounds((40, 13.0), seed=s, canary=2.0) for s in (2, 3)]
    result = check(BaselineStore(root), FakeMeasure(*current))
    assert result.failed
    assert result.decisive is not None
    assert result.decisive.no_basis == ""


@pytest.mark.parametrize(("max_cv", "fails"), [(0.10, False), (0.50, True)])
def test_noisy_stored_figures_never_carry_a_verdict(root: Path, max_cv: float, fails: bool) -> None:
    """Figures recorded with a spread above max-cv (noisy, the update summary's word) are off by far more
    than their rounds show; a +60% today is inconclusive against them, with why, and fails against the
    same figures where max-cv does not call them noisy."""
    store = BaselineStore(root)
    store.stage(TEST_FILE, TEST, entry_of(stats(10.0, seed=1), ENV, spread=0.2))
    store.write()
    result = check(BaselineStore(root), FakeMeasure(stats(16.0, seed=2), stats(16.0, seed=4)), max_cv=max_cv)
    assert result.failed is fails
    if fails:
        return
    assert result.status is Status.INCONCLUSIVE
    assert result.change.endswith(
        "no basis for a verdict: it read regression, but the stored figures are noisy (spread 20.0% > max-cv 10%); "
        "record them again on a quieter machine"
    )
