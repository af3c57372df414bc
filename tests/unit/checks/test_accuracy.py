"""check_accuracy with numpy outputs and a real baseline store: records, comparisons, references, messages."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ortperf.accuracy.output_values import NotComparable, from_ort
from pytest_ortperf.accuracy.tolerances import ToleranceSpec
from pytest_ortperf.checks.accuracy_verdicts import (
    AccuracyResult,
    Reference,
    check_accuracy,
    compare_with,
)
from pytest_ortperf.checks.latency_figures import latency_figures, stored_latency
from pytest_ortperf.checks.latency_verdicts import check_latency
from pytest_ortperf.checks.paths import choose
from pytest_ortperf.checks.policy import CheckPolicy, Missing
from pytest_ortperf.checks.status import Status
from pytest_ortperf.latency.stats import NS_PER_MS, LatencyStats, summarize
from pytest_ortperf.reports.ci_files import accuracy_record, markdown, not_compared_lines
from pytest_ortperf.store.baselines import BaselineEntry, BaselineError, BaselineStore, Figures
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.outputs import AccuracyRecord, for_storage, load_npz, npz_bytes, outputs_file
from pytest_ortperf.store.recipe import split
from pytest_ortperf.store.recorded_outputs import previous_outputs, recorded_outputs, stage_outputs

TEST_FILE = "tests/perf/test_models.py"
TEST = "test_squeezenet[cpu-all]"
RECORD = "ortperf update 'tests/perf/test_models.py::test_squeezenet[cpu-all]'"
KEY = CheckKey(test_file=TEST_FILE, test=TEST, variant="cpu-all", machine="ci", record_command=RECORD)
LAPTOP = replace(KEY, machine="laptop")
# Readable name + digest of the exact test name; no machine: one record per entry, for every machine.
NPZ = "tests/perf/test_models.py.outputs/test_squeezenet_cpu-all-7bea7a8e.npz"
INPUTS = "1" * 64
ENV: dict[str, Any] = {"ort_version": "1.31.1", "model_sha256": "a" * 64, "cores": 4}
RECIPE, MEASURED_ON = split(ENV)
OUT = {
    "y": np.array([[1.0, -2.0, 0.5, 4.0]], np.float32),
    "ids": np.array([3, 1], np.int64),
}
HEADER = f"accuracy of {TEST} on machine 'ci'"
ACCEPT = f"  to accept the current outputs as the baseline: {RECORD}"


def scaled(factor: float, outputs: dict[str, np.ndarray[Any, Any]] = OUT) -> dict[str, np.ndarray[Any, Any]]:
    return {n: (a * a.dtype.type(factor)) if a.dtype.kind == "f" else a.copy() for n, a in outputs.items()}


def latency(ms: float = 10.0) -> LatencyStats:
    return summarize([round(ms * NS_PER_MS)] * 15, [3] * 5)


def check(
    store: BaselineStore,
    actual: dict[str, np.ndarray[Any, Any]],
    *,
    inputs: str = INPUTS,
    tolerances: ToleranceSpec | None = None,
    provider: str = "cpu",
    variant: Reference | None = None,
    model: Reference | None = None,
    environment: dict[str, Any] | None = None,
    today: str = "2025-06-01",
    key: CheckKey = KEY,
    **policy: Any,
) -> AccuracyResult:
    """The check as the gate makes it (``kinds/accuracy.py``): the entry read once by the caller, its
    outputs read by the store, judged, and staged by the store when the verdict records them."""
    entry = store.lookup(TEST_FILE, TEST)
    record = entry.accuracy if entry is not None else None
    check_policy = CheckPolicy(**policy)
    environment = ENV if environment is None else environment
    if check_policy.update:
        baseline = previous_outputs(store, record, inputs_sha256=inputs)
    else:
        baseline = recorded_outputs(store, record, test_file=key.test_file, inputs_sha256=inputs)
    result = check_accuracy(
        actual,
        inputs_sha256=inputs,
        key=key,
        entry=entry,
        baseline=baseline,
        policy=check_policy,
        tolerances=ToleranceSpec() if tolerances is None else tolerances,
        provider_short=provider,
        variant_reference=variant,
        model_reference=model,
        environment=environment,
    )
    if result.status in (Status.NEW, Status.UPDATED):
        stage_outputs(store, key, actual, inputs_sha256=inputs, environment=environment, today=today)
    return result


def figures(
    stats: LatencyStats, recorded: str = "2025-01-02", measured_on: dict[str, Any] = MEASURED_ON
) -> Figures:
    return latency_figures(recorded, stats, measured_on=measured_on)


def record(
    root: Path,
    outputs: dict[str, np.ndarray[Any, Any]] = OUT,
    *,
    machine: str = "ci",
    inputs: str = INPUTS,
    stats: LatencyStats | None = None,
) -> None:
    """A recorded entry built by hand (not by check_accuracy), dated 2025-01-02; with ``stats``, the
    latency figures of ``machine`` (which also names the outputs file) beside its outputs."""
    store = BaselineStore(root)
    arrays, stored = for_storage(outputs)
    file = f"{TEST_FILE}.outputs/{machine}-by-hand.npz"
    store.stage_file(file, npz_bytes(arrays))
    accuracy = AccuracyRecord(inputs_sha256=inputs, outputs=stored, file=file)
    measured = {} if stats is None else {machine: figures(stats)}
    store.stage(
        TEST_FILE, TEST, BaselineEntry("cpu-all", "2025-01-02", RECIPE, accuracy=accuracy, figures=measured)
    )
    store.write()


def snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under ``root`` with its bytes, mtime and inode."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def assert_same_outputs(loaded: dict[str, np.ndarray[Any, Any]], outputs: dict[str, Any]) -> None:
    assert sorted(loaded) == sorted(outputs)
    for name, array in outputs.items():
        assert loaded[name].dtype == array.dtype, name
        np.testing.assert_array_equal(loaded[name], array)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "baselines"


@pytest.fixture
def recorded(root: Path) -> Path:
    record(root)
    return root


def lines(result: AccuracyResult) -> list[str]:
    return result.message.splitlines()


# update mode ---------------------------------------------------------------


def test_the_outputs_file_sits_beside_the_baseline_file() -> None:
    assert outputs_file(KEY) == NPZ
    assert outputs_file(LAPTOP) == NPZ  # whatever machine records them


def test_update_records_new_outputs_after_write(root: Path) -> None:
    store = BaselineStore(root)
    result = check(store, OUT, update=True)
    assert (result.status, result.failed, result.skipped) == ("new", False, False)
    assert lines(result) == [HEADER, "  vs baseline: outputs recorded (new)", ACCEPT]
    ((path, test, entry),) = store.staged()
    assert (path, test) == (store.path_for(TEST_FILE), TEST)
    assert entry is not None
    assert (entry.variant, entry.recorded, entry.recipe, entry.figures) == (
        "cpu-all",
        "2025-06-01",
        RECIPE,
        {},
    )
    assert entry.accuracy is not None
    assert (entry.accuracy.inputs_sha256, entry.accuracy.file) == (INPUTS, NPZ)
    assert [(o.name, o.dtype, o.shape, o.stored) for o in entry.accuracy.outputs] == [
        ("y", "float32", (1, 4), "full"),
        ("ids", "int64", (2,), "full"),
    ]
    assert not (root / NPZ).exists()  # nothing on disk before write()
    assert sorted(store.write()) == sorted([root / NPZ, store.path_for(TEST_FILE)])
    assert_same_outputs(load_npz(root / NPZ), OUT)
    reread = BaselineStore(root).lookup(TEST_FILE, TEST)
    assert reread is not None
    assert reread.accuracy is not None
    assert (reread.accuracy.inputs_sha256, reread.accuracy.file) == (INPUTS, NPZ)
    for again, staged in zip(reread.accuracy.outputs, entry.accuracy.outputs, strict=True):
        assert (again.name, again.shape, again.stored, again.sha256) == (
            staged.name,
            staged.shape,
            staged.stored,
            staged.sha256,
        )
        assert again.std == pytest.approx(staged.std, rel=1e-5)  # the JSON keeps 6 significant digits


def test_update_merges_into_a_staged_latency_entry(root: Path) -> None:
    store = BaselineStore(root)
    stats = latency(10.0)
    store.stage(
        TEST_FILE,
        TEST,
        BaselineEntry("cpu-all", "2025-06-01", RECIPE, figures={"ci": figures(stats, "2025-06-01")}),
    )
    result = check(store, OUT, update=True)
    assert result.status == "new"
    ((*_, entry),) = store.staged()
    assert entry is not None
    assert entry.figures == {"ci": figures(stats, "2025-06-01")}
    assert entry.accuracy is not None
    store.write()
    reread = BaselineStore(root).lookup(TEST_FILE, TEST)
    assert reread is not None
    assert reread.machines("latency") == ["ci"]
    (reread_latency,) = [stored_latency(f) for f in reread.figures.values()]
    assert reread_latency is not None
    assert reread_latency.median_ms == pytest.approx(10.0)
    assert reread.accuracy is not None
    assert reread.accuracy.file == NPZ


def test_update_merges_into_a_latency_entry_on_disk(root: Path) -> None:
    seed = BaselineStore(root)
    seed.stage(
        TEST_FILE,
        TEST,
        BaselineEntry("cpu-all", "2025-01-02", RECIPE, figures={"ci": figures(latency(10.0))}),
    )
    seed.write()
    store = BaselineStore(root)
    assert check(store, OUT, update=True).status == "new"
    store.write()
    reread = BaselineStore(root).lookup(TEST_FILE, TEST)
    assert reread is not None
    assert reread.recorded == "2025-06-01"  # outputs recorded today; the same recipe keeps the figures
    ci = reread.figures_for("ci")
    assert ci is not None
    assert stored_latency(ci) is not None
    assert stored_latency(ci).median_ms == pytest.approx(10.0)
    assert reread.accuracy is not None


def test_a_later_latency_update_keeps_the_recorded_outputs(root: Path) -> None:
    store = BaselineStore(root)
    check(store, OUT, update=True)
    policy = CheckPolicy(update=True, record_cap=0.0)
    result = check_latency(
        lambda: None,
        key=KEY,
        plan=choose(store.lookup(TEST_FILE, TEST), ENV, KEY.machine, update=True),
        entry=store.state(TEST_FILE, TEST, store.lookup(TEST_FILE, TEST)),
        policy=policy,
        environment=ENV,
        today="2025-06-01",
        measure_fn=lambda run, settings: latency(12.0),
    )
    assert result.staged is not None
    store.stage(TEST_FILE, TEST, result.staged)  # as the gate stages it
    store.write()
    reread = BaselineStore(root).lookup(TEST_FILE, TEST)
    assert reread is not None
    assert reread.machines("latency") == ["ci"]
    assert reread.accuracy is not None
    assert reread.accuracy.file == NPZ


@pytest.mark.parametrize("drift", [1.0, 1 + 1e-6], ids=["identical", "within-tolerance"])
def test_update_keeps_matching_outputs_byte_for_byte(root: Path, drift: float) -> None:
    first = BaselineStore(root)
    check(first, OUT, update=True, today="2025-01-02")
    first.write()
    before = snapshot(root)
    assert sorted(before) == sorted([NPZ, f"{TEST_FILE}.json"])
    store = BaselineStore(root)
    result = check(store, scaled(drift), update=True)
    assert (result.status, result.failed) == ("unchanged", False)
    assert lines(result) == [HEADER, "  vs baseline: recorded outputs still match: kept", ACCEPT]
    assert list(store.staged()) == []
    assert store.write() == []
    assert snapshot(root) == before
    entry = store.lookup(TEST_FILE, TEST)
    assert entry is not None
    assert entry.recorded == "2025-01-02"


@pytest.mark.parametrize(
    ("actual", "inputs"),
    [
        pytest.param(scaled(1.01), INPUTS, id="outputs-moved"),
        pytest.param(OUT, "2" * 64, id="inputs-changed"),
        pytest.param({"y": OUT["y"]}, INPUTS, id="output-gone"),
        pytest.param({"ids": OUT["ids"], "y": OUT["y"]}, INPUTS, id="outputs-reordered"),
    ],
)
def test_update_rerecords_outputs_that_differ(
    root: Path, actual: dict[str, np.ndarray[Any, Any]], inputs: str
) -> None:
    first = BaselineStore(root)
    check(first, OUT, update=True, today="2025-01-02")
    first.write()
    store = BaselineStore(root)
    result = check(store, actual, inputs=inputs, update=True)
    assert (result.status, result.failed) == ("updated", False)
    assert lines(result) == [HEADER, "  vs baseline: outputs recorded (updated)", ACCEPT]
    ((*_, entry),) = store.staged()
    assert entry is not None
    assert entry.recorded == "2025-06-01"  # the outputs are new: the entry says when they were recorded
    assert entry.accuracy is not None
    assert entry.accuracy.inputs_sha256 == inputs
    assert [o.name for o in entry.accuracy.outputs] == list(actual)
    store.write()
    assert_same_outputs(load_npz(root / NPZ), actual)


def test_an_update_under_a_changed_recipe_dates_the_entry_and_drops_figures_of_the_old_one(
    root: Path,
) -> None:
    first = BaselineStore(root)
    first.stage(
        TEST_FILE,
        TEST,
        BaselineEntry("cpu-all", "2025-01-02", RECIPE, figures={"laptop": figures(latency())}),
    )
    check(first, OUT, update=True, today="2025-01-02")
    first.write()
    newer = ENV | {"ort_version": "1.32.0"}
    store = BaselineStore(root)
    result = check(store, scaled(1.01), update=True, environment=newer)
    assert (result.status, result.failed) == ("updated", False)
    ((*_, entry),) = store.staged()
    assert entry is not None
    assert (entry.recorded, entry.recipe, entry.figures) == ("2025-06-01", split(newer)[0], {})
    store.write()
    reread = BaselineStore(root).lookup(TEST_FILE, TEST)
    assert reread is not None
    assert (reread.recorded, reread.machines()) == ("2025-06-01", [])
    assert reread.accuracy is not None
    assert_same_outputs(load_npz(root / reread.accuracy.file), scaled(1.01))


def test_update_rerecords_a_missing_outputs_file(root: Path) -> None:
    first = BaselineStore(root)
    check(first, OUT, update=True)
    first.write()
    (root / NPZ).unlink()
    store = BaselineStore(root)
    result = check(store, OUT, update=True)
    assert result.status == "updated"
    store.write()
    assert_same_outputs(load_npz(root / NPZ), OUT)


# comparisons ---------------------------------------------------------------


def test_matching_outputs_are_ok(recorded: Path) -> None:
    result = check(BaselineStore(recorded), scaled(1 + 1e-6))
    assert (result.status, result.failed, result.skipped) == ("ok", False, False)
    assert lines(result) == [HEADER, "  vs baseline (recorded 2025-01-02): ok (ids, y)", ACCEPT]
    (outcome,) = result.references
    assert outcome.label == "baseline (recorded 2025-01-02)"
    # The .npz holds its arrays by sorted name, so the baseline lists them in that order.
    assert [c.name for c in outcome.comparisons] == ["ids", "y"]


def test_moved_outputs_fail_naming_the_output_metric_and_record_command(recorded: Path) -> None:
    actual = scaled(1.01)
    result = check(BaselineStore(recorded), actual)
    assert (result.status, result.failed) == ("failed", True)
    text = lines(result)
    assert text[0] == f"{HEADER} FAILED"
    assert text[1] == "  vs baseline (recorded 2025-01-02):"
    max_abs = float(np.abs(actual["y"].astype(np.float64) - OUT["y"].astype(np.float64)).max())
    assert text[2].startswith(f"    output 'y': FAILED on isclose (max abs {max_abs:.3g}, ")
    assert "4 of 4 elements outside tolerance (100.00%)" in text[2]
    assert "worst at [0, 3]: actual 4.04, expected 4" in text[2]
    assert text[3:] == [ACCEPT]  # the unchanged int output is not listed, nothing changed in the environment
    assert not any("'ids'" in line for line in text)
    assert result.message.count("baseline (recorded 2025-01-02)") == 1


LONG_LABEL = (
    "the recorded model (git 1a2b3c4d5e6f) under the recorded settings (inter_op_threads 1 -> 2) in "
    "onnxruntime 1.31.1 on today's inputs"
)


def test_every_output_against_one_reference_names_it_once() -> None:
    """Outputs compared with a reference of a long name (same-job A/B, a rebuilt model): the first line
    names it, the outputs listed under it do not repeat it."""
    actual = {"y": OUT["y"].copy(), "z": OUT["y"] * np.float32(1.01), "w": OUT["y"] * np.float32(1.02)}
    expected = {"y": OUT["y"], "z": OUT["y"], "w": OUT["y"]}
    result = compare_with(
        actual, Reference(LONG_LABEL, expected), key=KEY, tolerances=ToleranceSpec(), provider_short="cpu"
    )
    assert result.failed
    text = lines(result)
    assert text[0] == f"outputs of {TEST} against {LONG_LABEL} FAILED"
    assert [line.split(":")[0] for line in text[1:]] == ["  output 'z'", "  output 'w'"]
    assert result.message.count(LONG_LABEL) == 1
    same = compare_with(
        expected, Reference(LONG_LABEL, expected), key=KEY, tolerances=ToleranceSpec(), provider_short="cpu"
    )
    assert lines(same) == [f"outputs of {TEST} against {LONG_LABEL}", "  ok (y, z, w)"]


def test_several_references_are_each_named_once(recorded: Path) -> None:
    variant = Reference("variant cpu-disabled", scaled(1.02))
    result = check(BaselineStore(recorded), scaled(1.01), variant=variant)
    assert result.failed
    assert result.message.count("baseline (recorded 2025-01-02)") == 1
    assert result.message.count("variant cpu-disabled") == 1


def test_a_failure_names_what_changed_in_the_environment(recorded: Path) -> None:
    result = check(BaselineStore(recorded), scaled(1.01), environment=ENV | {"ort_version": "1.32.0"})
    assert result.failed
    assert lines(result)[-2:] == ["  changed since the baseline: onnxruntime 1.31.1 -> 1.32.0", ACCEPT]
    ok = check(BaselineStore(recorded), OUT, environment=ENV | {"ort_version": "1.32.0"})
    assert not ok.failed
    assert "changed since" not in ok.message


def test_a_changed_integer_output_fails(recorded: Path) -> None:
    result = check(BaselineStore(recorded), {"y": OUT["y"], "ids": np.array([3, 2], np.int64)})
    assert result.failed
    assert "    output 'ids': FAILED on isclose (" in result.message


def test_user_tolerances_and_the_provider_apply_to_the_baseline(recorded: Path) -> None:
    half_percent = scaled(1.005)
    assert check(BaselineStore(recorded), half_percent).failed
    assert not check(BaselineStore(recorded), half_percent, provider="tensorrt").failed
    assert not check(BaselineStore(recorded), half_percent, tolerances=ToleranceSpec({"rtol": 0.01})).failed


@pytest.mark.parametrize(
    ("missing", "failed", "skipped"), [("fail", True, False), ("skip", False, True), ("pass", False, False)]
)
def test_a_missing_baseline_follows_the_policy(
    root: Path, missing: Missing, failed: bool, skipped: bool
) -> None:
    store = BaselineStore(root)
    result = check(store, OUT, missing=missing)
    assert result.status == "missing"
    assert (result.failed, result.skipped) == (failed, skipped)
    assert lines(result) == [
        HEADER + (" FAILED" if failed else ""),
        "  vs baseline: no recorded outputs",
        ACCEPT,
    ]
    assert list(store.staged()) == []
    assert not root.exists()


def test_outputs_recorded_on_another_machine_are_compared_here(root: Path) -> None:
    """Outputs agree within tolerance on any hardware: an entry whose only figures are the laptop's
    still holds the reference outputs, and the check on machine 'ci' compares against them."""
    record(root, machine="laptop", stats=latency())
    entry = BaselineStore(root).lookup(TEST_FILE, TEST)
    assert entry is not None
    assert (entry.machines(), entry.figures_for("ci")) == (["laptop"], None)
    ok = check(BaselineStore(root), scaled(1 + 1e-6))
    assert (ok.status, ok.failed, ok.skipped) == ("ok", False, False)
    assert lines(ok) == [HEADER, "  vs baseline (recorded 2025-01-02): ok (ids, y)", ACCEPT]
    moved = check(BaselineStore(root), scaled(1.01))
    assert (moved.status, moved.failed) == ("failed", True)
    assert lines(moved)[:2] == [f"{HEADER} FAILED", "  vs baseline (recorded 2025-01-02):"]
    assert lines(moved)[2].startswith("    output 'y': FAILED on isclose (")
    assert lines(moved)[-1] == ACCEPT


def test_outputs_an_update_recorded_on_another_machine_are_compared_here(root: Path) -> None:
    laptop = BaselineStore(root)
    assert check(laptop, OUT, update=True, key=LAPTOP, environment=ENV | {"cores": 16}).status == "new"
    laptop.write()
    assert check(BaselineStore(root), OUT).status == "ok"
    assert check(BaselineStore(root), scaled(1.01)).failed
    # ... and an update on 'ci' of the same outputs keeps the laptop's record as it is.
    before = snapshot(root)
    store = BaselineStore(root)
    assert check(store, OUT, update=True).status == "unchanged"
    assert store.write() == []
    assert snapshot(root) == before


def test_a_latency_only_entry_is_not_named_as_an_accuracy_baseline(root: Path) -> None:
    store = BaselineStore(root)
    store.stage(
        TEST_FILE, TEST, BaselineEntry("cpu-all", "2025-01-02", RECIPE, figures={"ci": figures(latency())})
    )
    store.write()
    result = check(BaselineStore(root), OUT)
    assert result.status == "missing"
    assert lines(result)[1] == "  vs baseline: no recorded outputs"


@pytest.mark.parametrize(
    ("missing", "failed", "skipped"), [("fail", True, False), ("skip", False, True), ("pass", False, False)]
)
def test_changed_inputs_are_not_reported_as_an_accuracy_failure(
    recorded: Path, missing: Missing, failed: bool, skipped: bool
) -> None:
    result = check(BaselineStore(recorded), scaled(2.0), inputs="2" * 64, missing=missing)
    assert result.status == "inputs changed"
    assert (result.failed, result.skipped) == (failed, skipped)
    assert lines(result) == [
        HEADER + (" FAILED" if failed else ""),
        "  vs baseline: inputs changed since the baseline (not an accuracy failure): re-record",
        ACCEPT,
    ]
    (outcome,) = result.references
    assert outcome.comparisons == ()
    assert "FAILED on" not in result.message


def test_a_missing_outputs_file_is_reported_naming_it(recorded: Path) -> None:
    path = recorded / f"{TEST_FILE}.outputs/ci-by-hand.npz"
    path.unlink()
    with pytest.raises(BaselineError) as info:
        check(BaselineStore(recorded), OUT)
    assert str(path) in str(info.value)


# large outputs: compared on the recorded subsample ----------------------------


BIG = {"logits": np.linspace(-1.0, 1.0, 100_001, dtype=np.float32).reshape(1, 100_001)}


def test_a_large_output_is_recorded_and_compared_as_a_subsample(root: Path) -> None:
    store = BaselineStore(root)
    check(store, BIG, update=True)
    store.write()
    entry = BaselineStore(root).lookup(TEST_FILE, TEST)
    assert entry is not None
    assert entry.accuracy is not None
    (stored,) = entry.accuracy.outputs
    assert (stored.stored, stored.shape) == ("subsample", (1, 100_001))
    assert load_npz(root / NPZ)["logits"].shape == (10_000,)
    assert not check(BaselineStore(root), BIG).failed
    sampled = BIG["logits"].copy()
    sampled[0, 0] += 1.0  # the first element is always in the subsample
    result = check(BaselineStore(root), {"logits": sampled})
    assert result.failed
    assert "output 'logits': FAILED on isclose" in result.message
    assert "worst at [0, 0]: actual 0, expected -1" in result.message


@pytest.fixture
def big(root: Path) -> Path:
    store = BaselineStore(root)
    check(store, BIG, update=True)
    store.write()
    return root


def with_element(index: int, value: float) -> dict[str, np.ndarray[Any, Any]]:
    changed = BIG["logits"].copy()
    changed[0, index] = value
    return {"logits": changed}


UNSAMPLED = 5  # elements 0, 10, 20, ... are sampled: element 5 is not


def test_a_large_output_identical_to_its_baseline_says_so(big: Path) -> None:
    result = check(BaselineStore(big), BIG)
    assert not result.failed
    assert (
        "  vs baseline (recorded 2025-06-01): ok (logits: identical (sha256 of the whole tensor))"
        in lines(result)
    )


def test_a_nan_outside_the_subsample_fails_on_the_whole_tensors_count(big: Path) -> None:
    result = check(BaselineStore(big), with_element(UNSAMPLED, np.nan))
    assert result.failed
    assert (
        "FAILED on nan/inf (1 new non-finite values in the whole tensor: 1 now, 0 recorded; first at [0, 5])"
        in result.message
    )


def test_a_large_change_outside_the_subsample_fails_on_the_whole_tensors_summary(big: Path) -> None:
    result = check(BaselineStore(big), with_element(UNSAMPLED, float(BIG["logits"][0, UNSAMPLED]) * 1000))
    assert result.failed
    assert "FAILED on whole-tensor summary (mean -0.0099889, recorded 0, allowed +/-" in result.message
    assert "; min -999.9, recorded -1, allowed +/-0.000115)" in result.message
    assert "0 of 10000 sampled (of 100001) elements outside tolerance" in result.message


def test_a_change_within_tolerance_outside_the_subsample_passes(big: Path) -> None:
    value = float(BIG["logits"][0, UNSAMPLED])
    result = check(BaselineStore(big), with_element(UNSAMPLED, value * (1 + 1e-5)))
    assert not result.failed, result.message
    assert "  vs baseline (recorded 2025-06-01): ok (logits)" in lines(result)


def test_every_element_within_tolerance_never_fails_the_summary(big: Path) -> None:
    # Each element moved by almost atol + rtol * |e|: the mean, std, min and max may move as far.
    logits = BIG["logits"].astype(np.float64)
    moved = logits + np.sign(logits) * 0.99 * (1e-5 + 1e-4 * np.abs(logits))
    result = check(BaselineStore(big), {"logits": moved.astype(np.float32)})
    assert not result.failed, result.message


def test_a_subsampled_failure_names_the_element_of_the_whole_tensor(big: Path) -> None:
    result = check(BaselineStore(big), with_element(20, np.nan))  # element 20 is the subsample's [2]
    assert result.failed
    assert "worst at [0, 20]: actual nan, expected" in result.message


def test_class_agreement_is_not_computed_on_a_subsample(big: Path) -> None:
    result = check(BaselineStore(big), with_element(0, 5.0))
    assert result.failed
    assert "top-1" not in result.message
    (comparison,) = result.references[0].comparisons
    assert (comparison.top1, comparison.topk) == (None, None)


def test_an_exact_output_changed_outside_the_subsample_fails(root: Path) -> None:
    ids = {"ids": np.arange(100_001, dtype=np.int64)}
    store = BaselineStore(root)
    check(store, ids, update=True)
    store.write()
    changed = ids["ids"].copy()
    changed[UNSAMPLED] = -1
    result = check(BaselineStore(root), {"ids": changed})
    assert result.failed
    assert "FAILED on exact values outside the subsample (whole-tensor sha256)" in result.message


def test_exact_float_tolerances_with_a_mismatch_allowance_are_judged_by_the_subsample(root: Path) -> None:
    values = {"y": np.linspace(-1, 1, 100_001, dtype=np.float32)}
    store = BaselineStore(root)
    check(store, values, update=True)
    store.write()
    changed = values["y"].copy()
    changed[UNSAMPLED] += 1e-3
    exact = ToleranceSpec(overall={"atol": 0.0, "rtol": 0.0})
    assert check(BaselineStore(root), {"y": changed}, tolerances=exact).failed
    allowance = ToleranceSpec(overall={"atol": 0.0, "rtol": 0.0, "mismatch": 0.01})
    assert not check(BaselineStore(root), {"y": changed}, tolerances=allowance).failed


def test_an_entry_without_counts_or_sampling_compares_what_it_stored(big: Path) -> None:
    path = big / f"{TEST_FILE}.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    (output,) = document["entries"][TEST]["accuracy"]["outputs"]
    del output["nonfinite"], output["sample"]
    path.write_text(json.dumps(document), encoding="utf-8")
    # The non-finite count is unknown: a NaN outside the subsample is judged by the summary only
    # (its finite values did not move), and one inside the subsample still fails.
    assert not check(BaselineStore(big), with_element(UNSAMPLED, np.nan)).failed
    assert (
        "FAILED on nan/inf (1 new non-finite values)"
        in check(BaselineStore(big), with_element(20, np.nan)).message
    )
    assert check(BaselineStore(big), with_element(UNSAMPLED, 1000.0)).failed


def test_an_update_rerecords_a_change_outside_the_subsample(big: Path) -> None:
    store = BaselineStore(big)
    changed = with_element(UNSAMPLED, 1000.0)
    result = check(store, changed, update=True)
    assert result.status == "updated"
    store.write()
    assert check(BaselineStore(big), changed, update=True).status == "unchanged"
    assert check(BaselineStore(big), BIG).failed  # the change really was recorded


def test_a_reshaped_large_output_names_the_recorded_shape(root: Path) -> None:
    store = BaselineStore(root)
    check(store, BIG, update=True)
    store.write()
    longer = {"logits": np.zeros((1, 100_002), np.float32)}
    result = check(BaselineStore(root), longer)
    assert result.failed
    assert "shape changed: [1, 100001] -> [1, 100002]" in result.message


# the reference variant and the model's own outputs ----------------------------


def variant(outputs: dict[str, np.ndarray[Any, Any]]) -> Reference:
    return Reference("variant cpu-disabled", outputs, {})


def model(outputs: dict[str, np.ndarray[Any, Any]], **defaults: float) -> Reference:
    return Reference("test_data_set_0", outputs, defaults)


def test_every_reference_is_reported_in_order(recorded: Path) -> None:
    result = check(BaselineStore(recorded), OUT, variant=variant(OUT), model=model(OUT))
    assert (result.status, result.failed) == ("ok", False)
    assert [o.label for o in result.references] == [
        "baseline (recorded 2025-01-02)",
        "variant cpu-disabled",
        "test_data_set_0",
    ]
    assert lines(result) == [
        HEADER,
        "  vs baseline (recorded 2025-01-02): ok (ids, y)",
        "  vs variant cpu-disabled: ok (y, ids)",
        "  vs test_data_set_0: ok (y, ids)",
        ACCEPT,
    ]


def test_a_failing_variant_reference_fails_on_its_own(recorded: Path) -> None:
    result = check(BaselineStore(recorded), OUT, variant=variant(scaled(1.01)))
    assert (result.status, result.failed) == ("failed", True)
    text = lines(result)
    assert text[:3] == [
        f"{HEADER} FAILED",
        "  vs baseline (recorded 2025-01-02): ok (ids, y)",
        "  vs variant cpu-disabled:",
    ]
    assert text[3].startswith("    output 'y': FAILED on isclose (")
    assert text[-1] == ACCEPT


@pytest.mark.parametrize("missing", ["pass", "skip"])
def test_a_failing_variant_reference_fails_without_a_baseline(root: Path, missing: Missing) -> None:
    result = check(BaselineStore(root), OUT, variant=variant(scaled(1.01)), missing=missing)
    assert result.status == "missing"
    assert (result.failed, result.skipped) == (True, False)
    assert "    output 'y': FAILED on isclose (" in result.message


def test_a_passing_variant_reference_does_not_rescue_a_missing_baseline(root: Path) -> None:
    result = check(BaselineStore(root), OUT, variant=variant(OUT), missing="fail")
    assert result.failed
    assert "  vs variant cpu-disabled: ok (y, ids)" in lines(result)


def test_the_model_reference_uses_its_data_json_defaults_under_user_tolerances(recorded: Path) -> None:
    # data.json's atol loosens the comparison (and drops cosine); the recorded baseline still holds.
    loose = model(scaled(1.01), atol=0.5, rtol=0.0, cosine=0.0)
    result = check(BaselineStore(recorded), OUT, model=loose)
    assert not result.failed
    assert "  vs test_data_set_0: ok (y, ids)" in lines(result)
    # A user tolerance beats data.json's.
    strict = check(BaselineStore(recorded), OUT, model=loose, tolerances=ToleranceSpec({"atol": 1e-6}))
    assert strict.failed
    assert "    output 'y': FAILED on isclose (" in strict.message
    assert "atol=1e-06, rtol=0, cosine>=0)" in strict.message


def test_a_failing_model_reference_fails_on_its_own(recorded: Path) -> None:
    result = check(BaselineStore(recorded), OUT, model=model({"y": OUT["y"] + np.float32(1.0)}))
    assert (result.status, result.failed) == ("failed", True)
    assert lines(result)[2] == "  vs test_data_set_0:"
    assert lines(result)[3].startswith("    output 'y': FAILED on isclose (")
    # ids is not in the model's data set: reported, not a failure.
    assert "    output 'ids': ok (not in the data set)" in lines(result)


def test_outputs_a_data_set_does_not_ship_are_reported_not_failed(recorded: Path) -> None:
    result = check(BaselineStore(recorded), OUT, model=model({"y": OUT["y"]}))
    assert (result.status, result.failed) == ("ok", False)
    assert "  vs test_data_set_0: ok (y; ids: not in the data set)" in lines(result)
    # A reference variant has every output: one it lacks is still a problem.
    other = check(BaselineStore(recorded), OUT, variant=variant({"y": OUT["y"]}))
    assert other.failed
    assert "    output 'ids': new output, not in the reference" in lines(other)


@pytest.mark.parametrize("which", ["variant", "model"])
def test_under_update_a_failing_reference_still_fails(root: Path, which: str) -> None:
    store = BaselineStore(root)
    reference = {which: (variant if which == "variant" else model)(scaled(1.01))}
    result = check(store, OUT, update=True, **reference)  # type: ignore[arg-type]
    assert (result.status, result.failed) == ("new", True)
    text = lines(result)
    assert text[:2] == [f"{HEADER} FAILED", "  vs baseline: outputs recorded (new)"]
    assert any("FAILED on isclose" in line for line in text)
    assert len(list(store.staged())) == 1  # the baseline is still recorded


def test_under_update_a_passing_reference_does_not_fail(root: Path) -> None:
    result = check(BaselineStore(root), OUT, update=True, variant=variant(OUT), model=model(OUT))
    assert (result.status, result.failed) == ("new", False)


# a comparison never writes ---------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "options"),
    [
        pytest.param(OUT, {}, id="ok"),
        pytest.param(scaled(1.01), {}, id="failed"),
        pytest.param(scaled(1.01), {"inputs": "2" * 64}, id="inputs-changed"),
        pytest.param(OUT, {"variant": variant(scaled(1.01))}, id="variant-failed"),
        pytest.param({"y": OUT["y"]}, {}, id="output-gone"),
    ],
)
def test_a_comparison_never_stages_anything(
    recorded: Path, actual: dict[str, np.ndarray[Any, Any]], options: dict[str, Any]
) -> None:
    before = snapshot(recorded)
    store = BaselineStore(recorded)
    check(store, actual, environment=ENV | {"cores": 16}, **options)
    assert list(store.staged()) == []
    assert store.write() == []
    assert snapshot(recorded) == before


def test_a_comparison_without_a_baseline_writes_nothing(root: Path) -> None:
    store = BaselineStore(root)
    for missing in ("fail", "skip", "pass"):
        check(store, OUT, missing=missing)
    assert list(store.staged()) == []
    assert store.write() == []
    assert not root.exists()


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param("test_model[" + "m" * 120 + "-a]", "test_model[" + "m" * 120 + "-b]", id="long-ids"),
        pytest.param("test_model[a b]", "test_model[a_b]", id="punctuation"),
    ],
)
def test_distinct_tests_get_distinct_outputs_files(first: str, second: str) -> None:
    keys = [CheckKey(TEST_FILE, test, "cpu-all", "ci", RECORD) for test in (first, second)]
    assert outputs_file(keys[0]) != outputs_file(keys[1])


def test_outputs_file_from_another_version_is_detected(recorded: Path) -> None:
    from pytest_ortperf.store.outputs import npz_bytes

    npz = recorded / f"{TEST_FILE}.outputs/ci-by-hand.npz"
    npz.write_bytes(npz_bytes({name: np.asarray(a) + 1 for name, a in OUT.items()}))
    with pytest.raises(
        BaselineError, match=r"do not match their entry in .*test_models\.py\.json.*interrupted update"
    ):
        check(BaselineStore(recorded), OUT)


def test_an_update_rerecords_outputs_out_of_step_with_their_entry(recorded: Path) -> None:
    """What the check above asks for works: the update records afresh, and the check passes."""
    from pytest_ortperf.store.outputs import npz_bytes

    npz = recorded / f"{TEST_FILE}.outputs/ci-by-hand.npz"
    npz.write_bytes(npz_bytes(OUT))  # outputs equal to the actual ones, but not what the entry names
    entry = (recorded / f"{TEST_FILE}.json").read_text()
    document = json.loads(entry)
    for output in document["entries"][TEST]["accuracy"]["outputs"]:
        output["sha256"] = "0" * 64
    (recorded / f"{TEST_FILE}.json").write_text(json.dumps(document))
    store = BaselineStore(recorded)
    assert check(store, OUT, update=True).status == "updated"
    store.write()
    assert not check(BaselineStore(recorded), OUT).failed


# a damaged outputs file is never silently replaced ------------------------------


@pytest.mark.parametrize("damage", [b"garbage", b"PK\x03\x04 truncated zip"], ids=["not-a-zip", "truncated"])
def test_an_update_refuses_to_overwrite_damaged_outputs_naming_the_file(
    recorded: Path, damage: bytes
) -> None:
    npz = recorded / f"{TEST_FILE}.outputs/ci-by-hand.npz"
    npz.write_bytes(damage)
    store = BaselineStore(recorded)
    with pytest.raises(BaselineError) as info:
        check(store, scaled(1.01), update=True)
    message = str(info.value)
    assert f"reference outputs '{npz}'" in message
    assert (
        "It is not overwritten: fix it, or record it afresh with --ortperf-update --ortperf-repair" in message
    )
    assert list(store.staged()) == []
    store.write()
    assert npz.read_bytes() == damage


def test_a_damaged_outputs_file_that_is_no_archive_says_so(recorded: Path) -> None:
    npz = recorded / f"{TEST_FILE}.outputs/ci-by-hand.npz"
    npz.write_bytes(b"garbage")
    with pytest.raises(BaselineError) as info:
        check(BaselineStore(recorded), OUT)
    assert str(info.value) == (
        f"reference outputs '{npz}' are damaged: the file is not a .npz archive. It is not overwritten: fix "
        "it, or record it afresh with --ortperf-update --ortperf-repair (which keeps the damaged file as "
        "ci-by-hand.npz.damaged-<time>)."
    )


def test_missing_outputs_say_that_an_update_records_them(recorded: Path) -> None:
    npz = recorded / f"{TEST_FILE}.outputs/ci-by-hand.npz"
    npz.unlink()
    with pytest.raises(BaselineError) as info:
        check(BaselineStore(recorded), OUT)
    assert str(info.value) == (
        f"reference outputs '{npz}' are missing (the baseline entry names them). Record them again with "
        "--ortperf-update."
    )


def test_repair_keeps_damaged_outputs_aside_and_records_afresh(recorded: Path) -> None:
    npz = recorded / f"{TEST_FILE}.outputs/ci-by-hand.npz"
    npz.write_bytes(b"garbage")
    store = BaselineStore(recorded, repair=True)
    result = check(store, OUT, update=True)
    assert result.status == "updated"
    store.write()
    (kept,) = [p for p in npz.parent.iterdir() if p.name.startswith("ci-by-hand.npz.damaged-")]
    assert kept.read_bytes() == b"garbage"
    assert [(r.path.name, r.backup.name) for r in store.repaired] == [(npz.name, kept.name)]
    assert_same_outputs(load_npz(recorded / NPZ), OUT)
    assert not check(BaselineStore(recorded), OUT).failed


# a reference that was asked for but cannot be compared ---------------------------


@pytest.mark.parametrize(
    "note",
    [
        "not available here (CUDAExecutionProvider is not in this onnxruntime build)",
        "this variant is the reference",
    ],
)
def test_a_reference_variant_that_cannot_be_compared_is_reported(recorded: Path, note: str) -> None:
    result = check(BaselineStore(recorded), OUT, variant=Reference.unavailable("variant cuda-disabled", note))
    assert (result.status, result.failed) == ("ok", False)
    assert lines(result)[1:3] == [
        "  vs baseline (recorded 2025-01-02): ok (ids, y)",
        f"  vs variant cuda-disabled: {note}",
    ]


# outputs that are not one tensor --------------------------------------------

ZIPMAP = "seq(map(int64,tensor(float)))"


def classifier(*rows: tuple[float, ...]) -> dict[str, Any]:
    """A scikit-learn classifier's outputs as the gate holds them: labels, and ZipMap's probabilities."""
    probabilities = [{k: float(np.float32(p)) for k, p in enumerate(row)} for row in rows]
    return {
        "output_label": np.array([int(np.argmax(row)) for row in rows], np.int64),
        "output_probability": from_ort(probabilities, ZIPMAP),
    }


def test_a_zipmap_is_recorded_kept_and_gated(root: Path) -> None:
    first = BaselineStore(root)
    recorded = classifier((0.75, 0.2, 0.05), (0.1, 0.3, 0.6))
    assert check(first, recorded, update=True).status == "new"
    first.write()
    entry = BaselineStore(root).lookup(TEST_FILE, TEST)
    assert entry is not None
    assert entry.accuracy is not None
    assert entry.accuracy.structure == {"output_probability": {"kind": "maps", "keys": [0, 1, 2]}}
    before = snapshot(root)
    again = check(BaselineStore(root), classifier((0.75, 0.2, 0.05), (0.1, 0.3, 0.6)), update=True)
    assert again.status == "unchanged"
    assert snapshot(root) == before
    same = check(BaselineStore(root), classifier((0.75, 0.2, 0.05), (0.1, 0.3, 0.6)))
    assert lines(same)[1] == "  vs baseline (recorded 2025-06-01): ok (output_label, output_probability)"
    moved = check(BaselineStore(root), classifier((0.667, 0.333, 0.0), (0.1, 0.3, 0.6)))
    assert moved.failed
    assert lines(moved)[2].startswith("    output 'output_probability': FAILED on isclose (")
    assert "worst at [0, key 1]: actual 0.333, expected 0.2" in lines(moved)[2]


def test_an_entry_recorded_before_maps_were_stored_says_the_zipmap_was_not_compared(root: Path) -> None:
    outputs = classifier((0.75, 0.2, 0.05))
    record(root, {"output_label": outputs["output_label"]})  # what an older version stored
    result = check(BaselineStore(root), outputs)
    assert (result.status, result.failed) == ("ok", False)
    assert lines(result)[1] == (
        "  vs baseline (recorded 2025-01-02): ok (output_label; output_probability: not compared (not in "
        "the recorded outputs, whose entry was recorded by a version that stored tensor outputs only; "
        "record it again with --ortperf-update to compare it))"
    )
    store = BaselineStore(root)
    assert check(store, outputs, update=True).status == "updated"  # recorded now, with its structure


def test_a_map_output_new_since_a_recording_of_this_version_fails(root: Path) -> None:
    first = BaselineStore(root)
    outputs = classifier((0.75, 0.2, 0.05))
    check(first, {"output_label": outputs["output_label"]}, update=True)
    first.write()
    result = check(BaselineStore(root), outputs)
    assert result.failed
    assert (
        "    output 'output_probability': new output (a sequence of 1 maps with 3 keys), not in the reference"
        in (lines(result))
    )


def test_an_output_that_cannot_be_compared_is_named_in_the_message_and_the_record(root: Path) -> None:
    first = BaselineStore(root)
    odd = {
        "y": OUT["y"],
        "sparse": NotComparable("onnxruntime returned a SparseTensor, which is not compared"),
    }
    check(first, odd, update=True)
    first.write()
    result = check(BaselineStore(root), odd)
    assert not result.failed
    assert lines(result)[1] == (
        "  vs baseline (recorded 2025-06-01): ok (y; sparse: not compared (onnxruntime returned a "
        "SparseTensor, which is not compared))"
    )
    json_record = accuracy_record(result, "t.py::test")
    assert json_record["not_compared"] == [
        {
            "output": "sparse",
            "reference": "baseline (recorded 2025-06-01)",
            "reason": "onnxruntime returned a SparseTensor, which is not compared",
        }
    ]
    assert not_compared_lines([json_record]) == [
        "t.py::test: output 'sparse' vs baseline (recorded 2025-06-01): onnxruntime returned a SparseTensor, "
        "which is not compared"
    ]
    assert "Outputs not compared (1):" in markdown([json_record], machine="ci", unused=[])


def test_a_passing_output_whose_cosine_did_not_judge_says_why_in_its_line() -> None:
    """A near-zero map whose every element is within tolerance: cosine is below its limit but does not
    judge, and the passing line says so instead of a plain 'ok (heatmap)'."""
    rng = np.random.default_rng(3)
    expected = (np.abs(rng.standard_normal((1, 1, 48, 48))) * 1e-6).astype(np.float32)
    actual = (expected * (1 + rng.standard_normal(expected.shape) * 0.1)).astype(np.float32)
    result = compare_with(
        {"heatmap": actual, "y": OUT["y"]},
        Reference(LONG_LABEL, {"heatmap": expected, "y": OUT["y"]}),
        key=KEY,
        tolerances=ToleranceSpec(),
        provider_short="cpu",
    )
    assert not result.failed
    assert lines(result)[1] == (
        "  ok (y; heatmap: cosine and SQNR not judged (every element within tolerance))"
    )
