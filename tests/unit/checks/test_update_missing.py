"""The rule of ``--ortperf-update=missing``: record only what does not exist; judge everything else."""

from __future__ import annotations

from pytest_ortperf.checks.policy import JUDGED, RECORDED, CheckPolicy, missing_only


def test_an_entry_that_does_not_exist_is_recorded() -> None:
    decided = missing_only(exists=False, recorded_here=False, changes=None)
    assert (decided.action, decided.reason, decided.records) == (RECORDED, "never recorded", True)


def test_figures_this_hardware_lacks_under_the_recorded_recipe_are_recorded() -> None:
    decided = missing_only(exists=True, recorded_here=False, changes=[])
    assert decided.records
    assert decided.reason == "this hardware had no figures; the recipe is unchanged"


def test_a_changed_recipe_is_judged_even_where_this_hardware_has_no_figures() -> None:
    changes = ["model sha256 aaaaaaaaaaaa -> bbbbbbbbbbbb"]
    decided = missing_only(exists=True, recorded_here=False, changes=changes)
    assert (decided.action, decided.records) == (JUDGED, False)
    assert decided.as_dict() == {
        "action": "judged",
        "reason": "the recipe changed since it was recorded: judged as in a plain run, never recorded",
        "changes": changes,
    }


def test_a_part_this_hardware_already_has_is_judged_whatever_changed() -> None:
    for changes in ([], ["onnxruntime 1.30.0 -> 1.31.1"]):
        decided = missing_only(exists=True, recorded_here=True, changes=changes)
        assert (decided.action, decided.reason, decided.changes) == (
            JUDGED,
            "nothing missing for this hardware",
            (),
        )


def test_a_judged_check_gets_a_plain_runs_policy() -> None:
    policy = CheckPolicy(update=True, update_missing=True, threshold=0.2)
    judged = policy.judged()
    assert (judged.update, judged.update_missing, judged.threshold) == (False, False, 0.2)
