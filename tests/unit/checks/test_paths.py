"""Which path decides a check: plain logic on what a baseline recorded and what this run measures."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ortperf.checks.paths import CONTROLLED, Plan, Route, choose, nothing_changed

RECORDED: dict[str, Any] = {
    "model_sha256": "a" * 64,
    "model_git_blob": "b" * 40,
    "settings": {"intra_op_threads": 1, "inter_op_threads": 1},
    "inputs": {"x": "float32[1, 4]"},
    "inputs_sha256": "c" * 64,
    "ort_version": "1.31.1",
    "ort_flavour": "onnxruntime-gpu",
    "providers_used": ["CPUExecutionProvider"],
    "variant": "cpu-all",
    "hardware": {"digest": "800bb0"},
}


def now(**changes: Any) -> dict[str, Any]:
    return {**RECORDED, **changes}


def test_nothing_changed_on_the_same_hardware_is_unchanged() -> None:
    assert choose(RECORDED, now()) == Plan(Route.UNCHANGED)
    assert nothing_changed(RECORDED, now())


def test_a_changed_model_is_rebuilt_from_its_recorded_blob_and_sha256() -> None:
    plan = choose(RECORDED, now(model_sha256="d" * 64, model_git_blob="e" * 40))
    assert plan == Plan(Route.SIDE_BY_SIDE, model_blob="b" * 40, model_sha256="a" * 64)
    assert plan.model_changed
    assert plan.settings is None


def test_changed_settings_rebuild_the_recorded_settings_on_the_same_model() -> None:
    plan = choose(RECORDED, now(settings={"intra_op_threads": 2, "inter_op_threads": 1}))
    assert plan == Plan(Route.SIDE_BY_SIDE, settings=RECORDED["settings"])
    assert not plan.model_changed


def test_side_by_side_does_not_need_the_same_hardware() -> None:
    """Both sides are measured here and now: the hardware of the recording does not matter."""
    plan = choose(RECORDED, now(model_sha256="d" * 64, hardware={"digest": "other"}))
    assert plan.route is Route.SIDE_BY_SIDE


def test_a_model_changed_with_its_inputs_is_still_measured_side_by_side_on_todays_inputs() -> None:
    plan = choose(RECORDED, now(model_sha256="d" * 64, inputs_sha256="f" * 64))
    assert plan.route is Route.SIDE_BY_SIDE


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"inputs_sha256": "f" * 64}, "the inputs changed"),
        ({"providers_used": ["CUDAExecutionProvider"]}, "the providers used changed"),
        ({"hardware": {"digest": "other"}}, "recorded on other hardware"),
    ],
)
def test_without_a_reference_to_rebuild_the_stored_figures_decide_and_say_why(
    changes: dict[str, Any], reason: str
) -> None:
    plan = choose(RECORDED, now(**changes))
    assert plan.route is Route.STORED
    assert plan.reason.startswith(reason)


@pytest.mark.parametrize(
    ("changes", "model_changed"),
    [({"ort_version": "1.32.0", "ort_flavour": "onnxruntime"}, False), ({"ort_version": "1.32.0", "model_sha256": "d" * 64}, True)],
    ids=["runtime", "runtime-and-model"],
)
def test_a_changed_runtime_is_rebuilt_in_the_recorded_one_with_a_reason_for_when_none_exists(
    changes: dict[str, Any], model_changed: bool
) -> None:
    plan = choose(RECORDED, now(**changes))
    assert plan.route is Route.SIDE_BY_SIDE
    assert plan.runtime == ("onnxruntime-gpu", "1.31.1")
    after = f"{changes.get('ort_flavour', 'onnxruntime-gpu')} 1.32.0"
    assert plan.reason == f"onnxruntime changed (onnxruntime-gpu 1.31.1 -> {after})"
    assert plan.model_changed is model_changed


def test_a_runtime_change_on_other_hardware_is_still_measured_side_by_side() -> None:
    plan = choose(RECORDED, now(ort_version="1.32.0", hardware={"digest": "other"}))
    assert plan.route is Route.SIDE_BY_SIDE
    assert plan.runtime is not None


@pytest.mark.parametrize("key", CONTROLLED)
def test_an_entry_without_one_of_the_controlled_fields_takes_the_stored_figures(key: str) -> None:
    old = {k: v for k, v in RECORDED.items() if k != key}
    plan = choose(old, now(model_sha256="d" * 64))
    assert plan.route is Route.STORED
    assert key in plan.reason
    assert "re-record" in plan.reason
    assert not nothing_changed(old, now())


def test_an_entry_without_a_hardware_identity_is_never_unchanged() -> None:
    old = {k: v for k, v in RECORDED.items() if k != "hardware"}
    assert not nothing_changed(old, now())
    assert choose(old, now()).route is Route.STORED
