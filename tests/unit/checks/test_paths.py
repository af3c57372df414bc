"""Which path decides a check: chosen once, from an entry's recipe, this hardware's figures and what
this run measures."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ortperf.checks.latency_figures import latency_figures, stored_latency
from pytest_ortperf.checks.paths import Ladder, Route, SameJob, choose, plan_check, without_reference
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.store.baselines import BaselineEntry
from pytest_ortperf.store.recipe import CONTROLLED

RECIPE: dict[str, Any] = {
    "model_sha256": "a" * 64,
    "model_git_blob": "b" * 40,
    "settings": {"intra_op_threads": 1, "inter_op_threads": 1},
    "inputs": {"x": "float32[1, 4]"},
    "inputs_sha256": "c" * 64,
    "ort_version": "1.31.1",
    "ort_flavour": "onnxruntime-gpu",
    "providers_used": ["CPUExecutionProvider"],
    "variant": "cpu-all",
}
HERE, THERE = "linux-x86_64-zen4-avx512-2c-4eda52", "linux-x86_64-zen3-avx2-2c-800bb0"
# Inputs read from the model's test data set: they cannot be made again from the recipe.
FROM_FILES: dict[str, Any] = {**RECIPE, "inputs_source": "test_data_set_0"}


def stats() -> LatencyStats:
    return LatencyStats(
        count=8, rounds=4, min_ms=1.0, median_ms=1.0, mean_ms=1.0, stdev_ms=0.01, iqr_ms=0.01, p90_ms=1.0,
        p95_ms=1.0, p99_ms=1.0, cv=0.01, round_cv=0.01, throughput_per_s=1000.0,
        round_medians_ms=(1.0, 1.01, 0.99, 1.0),
    )  # fmt: skip


def entry(*machines: str, recipe: dict[str, Any] | None = None) -> BaselineEntry:
    figures = {
        m: latency_figures("2026-11-20", stats(), measured_on={"hardware": {"digest": m}}) for m in machines
    }
    return BaselineEntry(variant="cpu-all", recorded="2026-11-20", recipe=recipe or RECIPE, figures=figures)


def now(**changes: Any) -> dict[str, Any]:
    return {**RECIPE, "hardware": {"digest": "here"}, **changes}


def test_an_unchanged_recipe_is_unchanged_on_hardware_that_never_recorded_it() -> None:
    plan = choose(entry(THERE), now(), HERE, update=False)
    assert plan.route is Route.UNCHANGED
    assert plan.figures is None  # no drift to show: "no figures for this hardware yet"


def test_an_unchanged_recipe_shows_the_drift_against_this_hardwares_own_figures() -> None:
    plan = choose(entry(THERE, HERE), now(), HERE, update=False)
    assert plan.route is Route.UNCHANGED
    assert plan.figures is not None
    assert stored_latency(plan.figures) is not None


def test_a_test_never_recorded_anywhere_is_missing() -> None:
    assert choose(None, now(), HERE, update=False).route is Route.MISSING
    accuracy_only = BaselineEntry(variant="cpu-all", recorded="2026-11-20", recipe=RECIPE)
    assert choose(accuracy_only, now(), HERE, update=False).route is Route.MISSING


def test_an_update_records_and_carries_this_hardwares_figures() -> None:
    assert choose(None, now(), HERE, update=True).route is Route.RECORD
    plan = choose(entry(HERE), now(), HERE, update=True)
    assert (plan.route, plan.figures is not None) == (Route.RECORD, True)


def test_a_changed_model_is_rebuilt_from_its_recorded_blob_and_sha256_on_any_hardware() -> None:
    plan = choose(entry(THERE), now(model_sha256="d" * 64, model_git_blob="e" * 40), HERE, update=False)
    assert plan.route is Route.SIDE_BY_SIDE
    assert (plan.model_blob, plan.model_sha256, plan.settings) == ("b" * 40, "a" * 64, None)
    assert plan.model_changed


def test_changed_settings_rebuild_the_recorded_settings_on_the_same_model() -> None:
    plan = choose(
        entry(THERE), now(settings={"intra_op_threads": 2, "inter_op_threads": 1}), HERE, update=False
    )
    assert plan.route is Route.SIDE_BY_SIDE
    assert plan.settings == RECIPE["settings"]
    assert not plan.model_changed


@pytest.mark.parametrize(
    "inputs",
    [{"inputs_sha256": "f" * 64}, {"inputs": {"x": "float32[1, 3, 64, 64]"}}],
    ids=["data", "shape"],
)
def test_a_model_changed_with_its_inputs_is_not_measured_side_by_side_on_todays_inputs(
    inputs: dict[str, Any],
) -> None:
    """Recorded inputs read from files are not kept: a rebuilt reference fed today's inputs would hide
    what the new inputs cost (a detector made 640x640 from 320x320 measured against itself at 640)."""
    changed = now(model_sha256="d" * 64, **inputs)
    plan = choose(entry(THERE, HERE, recipe=FROM_FILES), changed, HERE, update=False)
    assert plan.route is Route.STORED
    assert plan.reason == "the inputs changed too, and the recorded inputs cannot be rebuilt"
    elsewhere = choose(entry(THERE, recipe=FROM_FILES), changed, HERE, update=False)
    assert elsewhere.route is Route.MISSING
    assert elsewhere.reason.startswith("the inputs changed too, and the recorded inputs cannot be rebuilt; ")


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"inputs_sha256": "f" * 64}, "the inputs changed"),
        ({"providers_used": ["CUDAExecutionProvider"]}, "the providers used changed"),
    ],
)
def test_without_a_reference_to_rebuild_this_hardwares_figures_decide_and_say_why(
    changes: dict[str, Any], reason: str
) -> None:
    plan = choose(entry(THERE, HERE, recipe=FROM_FILES), now(**changes), HERE, update=False)
    assert plan.route is Route.STORED
    assert plan.reason.startswith(reason)


def test_without_a_reference_and_without_figures_here_the_check_is_missing_and_says_why() -> None:
    plan = choose(entry(THERE, recipe=FROM_FILES), now(inputs_sha256="f" * 64), HERE, update=False)
    assert plan.route is Route.MISSING
    assert plan.reason.startswith("the inputs changed")
    assert THERE in plan.reason
    assert "only compared on the hardware that measured them" in plan.reason


def test_a_reference_that_cannot_be_rebuilt_falls_back_to_this_hardwares_figures_or_missing() -> None:
    side_by_side = choose(entry(THERE, HERE), now(model_sha256="d" * 64), HERE, update=False)
    assert without_reference(side_by_side, "not in git").route is Route.STORED
    elsewhere = choose(entry(THERE), now(model_sha256="d" * 64), HERE, update=False)
    fallback = without_reference(elsewhere, "not in git", recorded_on=[THERE])
    assert (fallback.route, fallback.reason.startswith("not in git")) == (Route.MISSING, True)


@pytest.mark.parametrize(
    "changes",
    [
        {"ort_version": "1.23.2"},
        {"ort_version": "1.23.2", "model_sha256": "d" * 64},
        {"ort_version": "1.23.2", "providers_used": ["CUDAExecutionProvider"]},
        {"ort_version": "1.23.2", "settings": {"intra_op_threads": 2}},
    ],
    ids=["runtime", "runtime-and-model", "runtime-and-providers", "runtime-and-settings"],
)
@pytest.mark.parametrize(
    ("part", "ladder"),
    [("latency", Ladder.FIGURES_MAY_BE_SHORT), ("graph", Ladder.GRAPHS)],  # memory, start-up: as latency
)
def test_what_a_runtime_that_cannot_be_had_recorded_never_decides_for_any_kind(
    changes: dict[str, Any], part: str, ladder: Ladder
) -> None:
    """This hardware has figures of every part, but the recorded onnxruntime (1.31.1) is not this one
    (1.23.2): without it, the check is missing, naming the runtime, never judged on what it recorded."""
    plan = plan_check(entry(HERE), now(**changes), HERE, update=False, part=part, ladder=ladder)
    assert plan.runtime == ("onnxruntime-gpu", "1.31.1")
    fallback = without_reference(plan, plan.reason or "could not be fetched")
    assert fallback.route is Route.MISSING
    assert "what onnxruntime-gpu 1.31.1 recorded is not this runtime's reference" in fallback.reason
    assert "ortperf env create onnxruntime-gpu==1.31.1" in fallback.reason


@pytest.mark.parametrize(
    ("changes", "model_changed"),
    [
        ({"ort_version": "1.32.0", "ort_flavour": "onnxruntime"}, False),
        ({"ort_version": "1.32.0", "model_sha256": "d" * 64}, True),
    ],
    ids=["runtime", "runtime-and-model"],
)
def test_a_changed_runtime_is_rebuilt_in_the_recorded_one_with_a_reason_for_when_none_exists(
    changes: dict[str, Any], model_changed: bool
) -> None:
    plan = choose(entry(THERE), now(**changes), HERE, update=False)
    assert plan.route is Route.SIDE_BY_SIDE
    assert plan.runtime == ("onnxruntime-gpu", "1.31.1")
    after = f"{changes.get('ort_flavour', 'onnxruntime-gpu')} 1.32.0"
    assert plan.reason == f"onnxruntime changed (onnxruntime-gpu 1.31.1 -> {after})"
    assert plan.model_changed is model_changed


@pytest.mark.parametrize("key", CONTROLLED)
def test_a_recipe_without_one_of_the_controlled_fields_is_never_unchanged(key: str) -> None:
    old = {k: v for k, v in RECIPE.items() if k != key}
    plan = choose(entry(HERE, recipe=old), now(model_sha256="d" * 64), HERE, update=False)
    assert plan.route is Route.STORED
    assert key in plan.reason
    assert "re-record" in plan.reason
    assert choose(entry(HERE, recipe=old), now(), HERE, update=False).route is not Route.UNCHANGED


def test_a_model_whose_external_data_alone_changed_is_never_unchanged() -> None:
    """The same .onnx with other weights beside it: the recorded data is not kept anywhere to rebuild,
    so this hardware's figures decide, or the check is missing, saying why."""
    recorded = {**RECIPE, "model_data_sha256": "d" * 64}
    assert choose(
        entry(THERE, recipe=recorded), now(model_data_sha256="d" * 64), HERE, update=False
    ).route is (Route.UNCHANGED)
    here = choose(entry(THERE, HERE, recipe=recorded), now(model_data_sha256="e" * 64), HERE, update=False)
    assert here.route is Route.STORED
    assert here.reason == (
        f"the model's external data files changed (sha256 {'d' * 12} -> {'e' * 12}), and the recorded ones "
        "cannot be rebuilt"
    )
    elsewhere = choose(entry(THERE, recipe=recorded), now(model_data_sha256="e" * 64), HERE, update=False)
    assert elsewhere.route is Route.MISSING
    assert elsewhere.reason.startswith("the model's external data files changed")
    # An entry recorded before the digest existed has nothing to compare it with.
    assert choose(entry(THERE), now(model_data_sha256="e" * 64), HERE, update=False).route is Route.UNCHANGED


def test_a_changed_external_data_digest_is_named_among_the_recipes_changes() -> None:
    from pytest_ortperf.store.environment import recipe_changes

    recorded = {**RECIPE, "model_data_sha256": "d" * 64}
    assert recipe_changes(recorded, now(model_data_sha256="e" * 64)) == [
        f"the model's external data files changed (sha256 {'d' * 12} -> {'e' * 12})"
    ]
    assert recipe_changes(recorded, now(model_data_sha256="d" * 64)) == []


# plan_check: the one plan of every kind of check, same-job A/B included.
SAME_JOB = SameJob("HEAD:model.onnx", available=True)


# Accuracy's ladder (OUTPUTS) records under an update by its own rule: its check never asks then.
@pytest.mark.parametrize("ladder", [Ladder.FIGURES, Ladder.FIGURES_MAY_BE_SHORT, Ladder.GRAPHS])
@pytest.mark.parametrize("part", ["latency", "memory", "startup", "graph"])
def test_same_job_ab_comes_first_for_every_part_outside_an_update(part: str, ladder: Ladder) -> None:
    plan = plan_check(entry(HERE), now(), HERE, update=False, part=part, ladder=ladder, same_job=SAME_JOB)
    assert plan.route is Route.SAME_JOB
    assert plan.same_job == SAME_JOB
    update = plan_check(entry(HERE), now(), HERE, update=True, part=part, ladder=ladder, same_job=SAME_JOB)
    assert update.route is Route.RECORD


def test_same_job_without_a_reference_says_why_and_the_very_same_model_is_identical_in_one_runtime() -> None:
    none = plan_check(
        None,
        now(),
        HERE,
        update=False,
        part="latency",
        same_job=SameJob("HEAD~1", False, reason="not in git"),
    )
    assert (none.route, none.reason) == (Route.NO_REFERENCE, "not in git")
    same = SameJob("HEAD", available=True, identical=True)
    identical = plan_check(None, now(), HERE, update=False, part="memory", same_job=same)
    assert (identical.route, identical.reason) == (Route.IDENTICAL, "identical to HEAD, nothing to compare")
    # The same bytes in another onnxruntime are still two sides.
    across = SameJob("HEAD", available=True, identical=True, across_runtimes=True)
    assert (
        plan_check(None, now(), HERE, update=False, part="graph", ladder=Ladder.GRAPHS, same_job=across).route
        is Route.SAME_JOB
    )


@pytest.mark.parametrize("part", ["latency", "memory", "startup"])
def test_without_ab_a_measured_part_follows_the_recipe_ladder(part: str) -> None:
    recorded = BaselineEntry(variant="cpu-all", recorded="2026-11-20", recipe=RECIPE, figures={})
    assert plan_check(recorded, now(), HERE, update=False, part=part) == choose(
        recorded, now(), HERE, update=False, part=part
    )
    changed = now(model_sha256="d" * 64)
    plan = plan_check(entry(THERE), changed, HERE, update=False, part="latency")
    assert plan.route is Route.SIDE_BY_SIDE
    assert plan.same_graph_possible
    assert not plan_check(
        entry(THERE), now(settings={"intra_op_threads": 2}), HERE, update=False, part="latency"
    ).same_graph_possible


def test_the_graph_ladder_needs_no_stored_figures_and_ignores_the_inputs() -> None:
    bare = BaselineEntry(variant="cpu-all", recorded="2026-11-20", recipe=RECIPE, figures={})
    assert (
        plan_check(None, now(), HERE, update=False, part="graph", ladder=Ladder.GRAPHS).route is Route.MISSING
    )
    assert (
        plan_check(bare, now(), HERE, update=False, part="graph", ladder=Ladder.GRAPHS).route
        is Route.UNCHANGED
    )
    inputs = plan_check(
        bare, now(inputs_sha256="e" * 64), HERE, update=False, part="graph", ladder=Ladder.GRAPHS
    )
    assert (inputs.route, inputs.note) == (
        Route.UNCHANGED,
        "the inputs changed; the optimized graph does not depend on them",
    )
    model = plan_check(
        bare, now(model_sha256="d" * 64), HERE, update=False, part="graph", ladder=Ladder.GRAPHS
    )
    assert model.route is Route.SIDE_BY_SIDE
    assert model.model_blob == RECIPE["model_git_blob"]
    providers = plan_check(
        bare,
        now(providers_used=["CUDAExecutionProvider"]),
        HERE,
        update=False,
        part="graph",
        ladder=Ladder.GRAPHS,
    )
    assert providers.route is Route.STORED
    assert "the providers used changed" in providers.reason


SHORT = "the reference is rebuilt from git; these figures only inform"


def _recorded_short() -> BaselineEntry:
    """An entry whose latency figures on this hardware were recorded short (``SHORT``)."""
    return BaselineEntry(
        variant="cpu-all",
        recorded="2026-11-20",
        recipe=FROM_FILES,
        figures={HERE: latency_figures("2026-11-20", stats(), short=SHORT, measured_on={})},
    )


@pytest.mark.parametrize("part", ["latency", "memory"])
def test_figures_recorded_short_never_decide_latency_when_no_reference_can_be_rebuilt(part: str) -> None:
    """A seed change on a model git keeps (issue 46): the update recorded short figures because the
    reference was to be rebuilt; the inputs changed, so none can be. They only inform: missing,
    with both reasons and the way to record figures that decide. Other parts are not recorded short."""
    recorded = _recorded_short()
    plan = choose(recorded, now(inputs_sha256="f" * 64), HERE, update=False, part=part)
    if part == "memory":
        assert plan.route is Route.MISSING  # no memory figures here: missing for that reason alone
        assert "recorded short" not in plan.reason
        return
    assert plan.route is Route.MISSING
    assert plan.reason.startswith("the inputs changed, and the recorded inputs cannot be rebuilt; ")
    assert f"this hardware's figures were recorded short ({SHORT}), so they do not decide" in plan.reason
    assert plan.reason.endswith("re-record them (ortperf update) to judge this change on stored figures")
    settled = choose(entry(HERE, recipe=FROM_FILES), now(inputs_sha256="f" * 64), HERE, update=False)
    assert settled.route is Route.STORED


@pytest.mark.parametrize("source", [None, "synthetic(seed=3)"])
def test_changed_synthetic_inputs_are_side_by_side_the_reference_on_its_recorded_ones(
    source: str | None,
) -> None:
    """Issue 47: each side runs on its own inputs. Synthetic recorded inputs (or a recipe from before
    their source was kept) can be made again: the check goes side by side, the reference on them (the
    kind makes them and checks their digest)."""
    recipe = {**RECIPE, **({"inputs_source": source} if source else {})}
    changed = now(model_sha256="d" * 64, inputs={"x": "float32[1, 8]"}, inputs_sha256="f" * 64)
    plan = choose(entry(THERE, HERE, recipe=recipe), changed, HERE, update=False)
    assert (plan.route, plan.recorded_inputs, plan.model_sha256) == (Route.SIDE_BY_SIDE, True, "a" * 64)
    runtime = choose(
        entry(THERE, HERE, recipe=recipe), {**changed, "ort_version": "1.32.0"}, HERE, update=False
    )
    assert runtime.route is not Route.SIDE_BY_SIDE  # in another runtime's workers: not fed yet


def test_only_a_ladder_whose_figures_may_be_recorded_short_lets_short_figures_stand_aside() -> None:
    """A short recording is latency's (its reference was to be rebuilt): on that ladder such figures
    never decide; on the stored figures' ladder of another part the same figures stand."""
    recorded = _recorded_short()
    changed = now(inputs_sha256="f" * 64)
    latency = plan_check(
        recorded, changed, HERE, update=False, part="latency", ladder=Ladder.FIGURES_MAY_BE_SHORT
    )
    assert latency.route is Route.MISSING
    assert "recorded short" in latency.reason
    figures = plan_check(recorded, changed, HERE, update=False, part="latency", ladder=Ladder.FIGURES)
    assert figures.route is Route.STORED
