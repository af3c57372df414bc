"""Recipes: what an environment holds that the repository controls, and when two are the same."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from pytest_ortperf.store.recipe import (
    CONTROLLED,
    MEASURED_KEYS,
    RECIPE_KEYS,
    same_or_identical,
    same_recipe,
    split,
)

RECIPE: dict[str, Any] = {
    "model": "models/m.onnx",
    "model_sha256": "ab" * 32,
    "model_git_blob": "12" * 20,
    "settings": {"intra_op_threads": 1},
    "inputs": {"x": "float32[1, 4]"},
    "inputs_sha256": "cd" * 32,
    "ort_version": "1.31.1",
    "ort_flavour": "onnxruntime",
    "providers_requested": ["cpu"],
    "providers_used": ["CPUExecutionProvider"],
    "variant": "cpu-all",
    "plugin_version": "0.9.0",
}
MEASURED: dict[str, Any] = {
    "cpu": "AMD EPYC",
    "cores": 2,
    "gpu": "",
    "hardware": {"digest": "4eda52"},
    "measurement": {},
}


def test_split_keeps_measured_keys_apart_and_everything_else_in_the_recipe() -> None:
    recipe, measured_on = split(RECIPE | MEASURED | {"added_later": 1})
    assert recipe == RECIPE | {"added_later": 1}
    assert measured_on == MEASURED
    assert split({}) == ({}, {})
    assert set(CONTROLLED) <= set(RECIPE_KEYS)
    assert not set(RECIPE_KEYS) & set(MEASURED_KEYS)


def test_same_recipe_compares_what_the_repository_controls_only() -> None:
    assert same_recipe(RECIPE, dict(RECIPE))
    assert same_recipe(
        RECIPE, RECIPE | {"plugin_version": "9.9", "model": "moved.onnx", "model_git_blob": "x"}
    )
    assert same_recipe(RECIPE, RECIPE | MEASURED)  # an environment compares as its recipe


@pytest.mark.parametrize("key", CONTROLLED)
def test_any_controlled_key_that_differs_or_is_missing_makes_another_recipe(key: str) -> None:
    assert not same_recipe(RECIPE, RECIPE | {key: "other"})
    lacking = {k: v for k, v in RECIPE.items() if k != key}
    assert not same_recipe(RECIPE, lacking)
    assert not same_recipe(lacking, lacking)  # what was not recorded cannot be shown unchanged
    assert same_or_identical(lacking, dict(lacking))  # but the very same recipe keeps its figures
    assert not same_or_identical(lacking, lacking | {"plugin_version": "9.9"})


def test_values_compare_as_a_file_holds_them() -> None:
    settings: dict[str, Any] = {"intra_op_threads": 1, "ratio": 0.1 + 0.2, "axes": (0, 1)}
    written = {"intra_op_threads": 1, "ratio": 0.3, "axes": [0, 1]}
    assert same_recipe(RECIPE | {"settings": settings}, RECIPE | {"settings": written})


def test_the_module_imports_no_numpy() -> None:
    code = "import sys, pytest_ortperf.store.recipe; print('numpy' in sys.modules)"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        == "False\n"
    )
