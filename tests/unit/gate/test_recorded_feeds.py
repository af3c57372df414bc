"""A reference's recorded inputs made again (issue 47): synthetic inputs from the recipe's
description, seed and integer ranges, taken only when their digest is the recorded one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_ortperf.checks.paths import Plan, Route
from pytest_ortperf.gate.references import recorded_feeds, reference_feeds
from pytest_ortperf.ort.inputs import InputOptions, InputSpec, synthesize
from pytest_ortperf.store.environment import describe_inputs, feeds_digest

SPECS = [
    InputSpec("images", "tensor(float)", (1, 3, 8, 8)),
    InputSpec("ids", "tensor(int64)", (1, 5)),
    InputSpec("mask", "tensor(bool)", (1, 5)),
]


def recipe_of(options: InputOptions, *, source: bool = True) -> dict[str, object]:
    feeds = synthesize(SPECS, options)
    recipe = {"inputs": describe_inputs(feeds), "inputs_sha256": feeds_digest(feeds)}
    return {**recipe, "inputs_source": feeds.source} if source else recipe


@pytest.mark.parametrize("source", [True, False], ids=["seed-recorded", "before-the-seed-was-kept"])
def test_the_recorded_synthetic_inputs_are_made_again_exactly(source: bool) -> None:
    recorded = InputOptions(seed=0, int_range=(0, 30522))
    recipe = recipe_of(recorded, source=source)
    today = InputOptions(seed=0 if not source else 7, int_range=(0, 30522))  # the run's seed moved on
    feeds, why = recorded_feeds(recipe, today)
    assert why == ""
    assert feeds is not None
    assert feeds_digest(feeds) == recipe["inputs_sha256"]
    assert feeds["images"].shape == (1, 3, 8, 8)
    assert feeds["ids"].dtype == np.int64
    assert feeds.source == "synthetic(seed=0), as recorded"


def test_inputs_that_cannot_be_made_again_say_why_and_are_never_guessed() -> None:
    recipe = recipe_of(InputOptions(seed=2, int_range=(0, 30522)))
    feeds, why = recorded_feeds(recipe, InputOptions(int_range=(0, 100)))  # the ranges changed since
    assert feeds is None
    assert why == (
        "synthetic inputs made as described (seed 2, this run's integer ranges) do not have the recorded digest"
    )
    from_files = {**recipe, "inputs_source": "test_data_set_0"}
    assert recorded_feeds(from_files, None) == (None, "they came from test_data_set_0, which is not kept")
    assert recorded_feeds({"inputs": {"x": "complex64[2]"}, "inputs_sha256": "0"}, None)[0] is None
    assert recorded_feeds({}, None) == (None, "the recipe does not describe its inputs")


def test_inputs_read_from_a_file_are_read_again_from_the_git_object_the_recipe_names(tmp_path: Path) -> None:
    import subprocess

    from pytest_ortperf.ort.inputs import feeds_from_files
    from pytest_ortperf.ort.models import git_blob_id

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
                       cwd=tmp_path, check=True, capture_output=True)  # fmt: skip

    git("init", "-q")
    np.savez(tmp_path / "model.npz", x=np.arange(6, dtype=np.float32).reshape(2, 3))
    specs = [InputSpec("x", "tensor(float)", (2, 3))]
    recorded = feeds_from_files(tmp_path, "model.npz", specs)
    blob = git_blob_id((tmp_path / "model.npz").read_bytes())
    recipe = {
        "inputs": describe_inputs(recorded),
        "inputs_sha256": feeds_digest(recorded),
        "inputs_source": "model.npz",
        "inputs_files": {"model.npz": blob},
    }
    assert recorded_feeds(recipe, None, tmp_path) == (
        None,
        "they came from model.npz, and git here does not keep model.npz as recorded",
    )  # never committed
    git("add", "model.npz")
    git("commit", "-q", "-m", "inputs")
    np.savez(tmp_path / "model.npz", x=np.ones((4, 3), dtype=np.float32))  # today's file differs
    feeds, why = recorded_feeds(recipe, None, tmp_path)
    assert why == ""
    assert feeds is not None
    np.testing.assert_array_equal(feeds["x"], recorded["x"])
    assert feeds.source == "model.npz at the recorded version (git)"
    outside = {**recipe, "inputs_files": {"../model.npz": blob}}
    assert recorded_feeds(outside, None, tmp_path)[0] is None  # a path out of the model's folder


def test_what_a_side_by_side_reference_is_fed_is_never_todays_inputs_in_place_of_its_own() -> None:
    """reference_feeds, the one rule latency, memory and start-up follow: today's inputs where they did
    not change; the recorded ones made again where they did; else a reason, and no feeds at all."""
    recorded = InputOptions(seed=0, int_range=(0, 30522))
    recipe = recipe_of(recorded)
    assert reference_feeds(Plan(Route.SIDE_BY_SIDE), recipe, recorded, None) == (None, "")
    changed = Plan(Route.SIDE_BY_SIDE, recorded_inputs=True)
    feeds, why = reference_feeds(changed, recipe, InputOptions(seed=7, int_range=(0, 30522)), None)
    assert why == ""
    assert feeds is not None
    assert feeds_digest(feeds) == recipe["inputs_sha256"]
    assert reference_feeds(changed, None, recorded, None) == (
        None,
        "the inputs changed, and no recipe says what they were",
    )
    other = {**recipe, "inputs_sha256": "0" * 64}  # made as described, but not the recorded bytes
    feeds, why = reference_feeds(changed, other, recorded, None)
    assert feeds is None
    assert why.startswith("the inputs changed, and the recorded inputs cannot be rebuilt (")
