"""A baseline's recipe: what the repository controls about its reference, kept once per test x variant.

An environment (:func:`pytest_ortperf.store.environment.environment`) mixes two
kinds of keys. The recipe (model content, settings, inputs, runtime, providers,
variant) is the same wherever the test runs, so it decides a check's route on
every machine. What a machine measured with (CPU, cores, GPU, hardware
identity, measurement settings) is kept beside that machine's figures only.

No numpy here: the checks import :data:`CONTROLLED` to route, and reports read recipes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# What the repository controls: equal on both sides => nothing to judge (route `unchanged`).
CONTROLLED = (
    "model_sha256",
    "settings",
    "inputs",
    "inputs_sha256",
    "ort_version",
    "ort_flavour",
    "providers_used",
    "variant",
)
# The digest of a model's external data files (its weights beside the .onnx), when it has any. Not in
# CONTROLLED: an entry recorded before it existed still matches; where both sides have it, a change
# is a changed model (data_changed).
MODEL_DATA = "model_data_sha256"
# Keys of an environment kept in the recipe.
RECIPE_KEYS = (
    *CONTROLLED,
    MODEL_DATA,
    "model",
    "model_git_blob",
    "model_dvc",  # where DVC keeps the model (ort/dvc_models.py)
    "model_transformers",
    "model_precision",
    "providers_requested",
    "plugin_version",
)
# Keys kept per hardware, beside its figures.
MEASURED_KEYS = ("cpu", "cores", "gpu", "hardware", "measurement")


def split(environment: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(recipe, measured_on) of an environment; keys in neither list go to the recipe (a key a
    newer version adds is kept, not lost, and never mistaken for something one machine measured)."""
    recipe = {key: value for key, value in environment.items() if key not in MEASURED_KEYS}
    measured_on = {key: environment[key] for key in MEASURED_KEYS if key in environment}
    return recipe, measured_on


def same_recipe(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Every CONTROLLED key present in both and equal (a recipe lacking one never matches: what it
    did not record cannot be shown unchanged). Values are compared as a baseline file holds them,
    so a recipe read back from a file matches the one it was written from."""
    return all(key in a and key in b and canonical(a[key]) == canonical(b[key]) for key in CONTROLLED)


def data_changed(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> str:
    """Why the model's external data files differ from those ``recorded`` measured, or "": the .onnx
    file can be the same while its weights beside it changed. An entry recorded before the digest
    existed, or a model without external data, has nothing to compare."""
    before, after = recorded.get(MODEL_DATA), current.get(MODEL_DATA)
    if not isinstance(before, str) or not before or before == after:
        return ""
    now = f"{after[:12]}" if isinstance(after, str) and after else "none"
    return f"the model's external data files changed (sha256 {before[:12]} -> {now})"


def same_or_identical(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """:func:`same_recipe`, or the very same recipe (also one recorded before a CONTROLLED key
    existed): what one baseline entry keeps its figures under. An entry whose recipe lacks a key
    still holds the figures measured of it, and a copy of that entry is no other recipe."""
    return same_recipe(a, b) or canonical(a) == canonical(b)


def canonical(value: Any) -> Any:
    """A JSON value as a baseline file writes it: floats to 6 significant digits, tuples as lists,
    keys as text. Rendering uses it, so two values equal here are equal on disk."""
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value
