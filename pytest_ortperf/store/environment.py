"""What a measurement depended on, recorded beside every baseline, and what changed since.

A changed model, ORT version or setting never makes a baseline unusable: it is
exactly what a user wants to catch, so a comparison still happens and the
report names the differences.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from pytest_ortperf.ort.dvc_models import RECIPE_KEY as DVC_KEY
from pytest_ortperf.ort.inputs import input_files
from pytest_ortperf.ort.models import git_blob_id
from pytest_ortperf.ort.precision import recipe_of
from pytest_ortperf.ort.runtime import RuntimeInfo
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.store.machine import Machine
from pytest_ortperf.store.recipe import CONTROLLED, MODEL_DATA, canonical, data_changed, same_recipe
from pytest_ortperf.version import __version__

# Keys compared for "what changed", with how they are named in reports.
_EXPLAINED = (
    ("model_sha256", "model sha256"),
    (DVC_KEY, "DVC md5"),
    ("ort_version", "onnxruntime"),
    ("ort_flavour", "onnxruntime wheel"),
    ("providers_used", "providers used"),
    ("settings", "session settings"),
    ("inputs", "inputs"),
    ("inputs_sha256", "input data"),
    ("cpu", "CPU"),
    ("cores", "cores"),
    ("gpu", "GPU"),
    ("measurement", "measurement"),
)


def feeds_digest(feeds: Mapping[str, np.ndarray[Any, Any]]) -> str:
    """sha256 over input names, dtypes, shapes and bytes: stable across runs and machines."""
    digest = hashlib.sha256()
    for name in sorted(feeds):
        array = np.ascontiguousarray(feeds[name])
        digest.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def describe_inputs(feeds: Mapping[str, np.ndarray[Any, Any]]) -> dict[str, str]:
    return {name: f"{feeds[name].dtype}{list(feeds[name].shape)}" for name in sorted(feeds)}


def environment(
    built: BuiltSession,
    feeds: Mapping[str, np.ndarray[Any, Any]],
    *,
    machine: Machine,
    runtime: RuntimeInfo,
    measurement: Mapping[str, Any] | None = None,
    inputs_source: str = "",
) -> dict[str, Any]:
    """Everything that changes latency or explains a change, as plain JSON values. ``inputs_source``:
    how the feeds were made (``Feeds.source``), "" when they were given."""
    return {
        "plugin_version": __version__,
        "ort_version": runtime.version,
        "ort_flavour": runtime.flavour,
        "model": portable_label(built.model.label),
        "model_sha256": built.model.sha256,
        "model_git_blob": built.model.git_blob,
        # Where DVC keeps the model (its pointer, the pointer's git object id, the md5): ort/dvc_models.py
        **({DVC_KEY: built.model.dvc.as_dict()} if built.model.dvc is not None else {}),
        **({MODEL_DATA: built.model.data_sha256} if built.model.data_sha256 else {}),
        **({"model_transformers": dict(built.model.transformers)} if built.model.transformers else {}),
        **({"model_precision": recipe_of(built.model)} if built.model.precision else {}),
        "variant": built.variant.id,
        "providers_requested": list(built.variant.provider_spec.providers),
        "providers_used": list(built.providers),
        "settings": built.settings.as_dict(),
        "inputs": describe_inputs(feeds),
        "inputs_sha256": feeds_digest(feeds),
        # How they were made ("synthetic(seed=0)", "test_data_set_0", ...): a reference's recorded
        # synthetic inputs can be made again (checks.paths: recorded_inputs_remade)
        **({"inputs_source": inputs_source} if inputs_source else {}),
        # The files they were read from, by git object id: a reference is fed them again from git
        **({"inputs_files": inputs_files} if (inputs_files := _input_blobs(built, inputs_source)) else {}),
        "cpu": machine.cpu,
        "cores": machine.cores,
        "gpu": machine.gpu,
        "hardware": machine.hardware.as_dict(),
        "measurement": dict(measurement or {}),
    }


def _input_blobs(built: BuiltSession, source: str) -> dict[str, str]:
    """``{path relative to the model's folder: git object id}`` of the files the feeds were read
    from (``ort.inputs.input_files``); {} for synthetic or given feeds."""
    directory = built.model.directory
    if directory is None:
        return {}
    files = input_files(directory, source)
    return {path.as_posix(): git_blob_id((directory / path).read_bytes()) for path in files}


def portable_label(label: str) -> str:
    """A model's label without a path of the machine that recorded it: paths under the rootdir are
    relative already; an installed package's file is named from ``site-packages/``; any other
    absolute path by its file name."""
    path = PurePosixPath(label)
    if not path.is_absolute():
        return label
    parts = path.parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return "/".join(["<site-packages>", *parts[parts.index(marker) + 1 :]])
    return f"<outside the rootdir>/{path.name}"


def what_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Human-readable differences in the keys that explain a latency change."""
    changes = []
    for key, label in _EXPLAINED:
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        if key in ("settings", "measurement") and before is None and isinstance(after, Mapping):
            before = {}  # recorded before this key existed
        if key in ("settings", "measurement") and isinstance(before, Mapping) and isinstance(after, Mapping):
            diffs = [
                f"{k} {before.get(k)!r} -> {after.get(k)!r}"
                for k in sorted(set(before) | set(after))
                if before.get(k) != after.get(k)
            ]
            changes.append(f"{label}: {', '.join(diffs)}")
        elif key == DVC_KEY:
            md5s = [
                str(side.get("md5", "?"))[:12] if isinstance(side, Mapping) else None
                for side in (before, after)
            ]
            if md5s[0] != md5s[1] and None not in md5s:  # a pointer added or dropped: the sha256 says it
                changes.append(f"{label} {md5s[0]} -> {md5s[1]}")
        elif key == "inputs" and isinstance(before, Mapping) and isinstance(after, Mapping):
            changes.append(f"{label}: {_inputs_changed(before, after)}")
        elif key.endswith("sha256"):
            changes.append(f"{label} {str(before)[:12]} -> {str(after)[:12]}")
        else:
            changes.append(f"{label} {before} -> {after}")
    return changes


def shapes_changed(before: object, after: object) -> str:
    """How inputs' types or shapes changed between two descriptions (a recipe's ``inputs``,
    :func:`describe_inputs`): ``x float32[1, 3, 32, 32] -> [1, 3, 64, 64]``; "" when they did not
    (values alone may have) or either is not a description."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping) or before == after:
        return ""
    return _inputs_changed(before, after)


def _inputs_changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """``x float32[1, 3, 32, 32] -> [1, 3, 64, 64]`` for each input whose type or shape changed (the
    type repeated only when it changed), ``none`` for an input added or dropped."""
    parts = []
    for name in sorted(set(before) | set(after), key=str):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        shown = new
        if isinstance(old, str) and isinstance(new, str):
            old_type, new_type = old.partition("[")[0], new.partition("[")[0]
            if old_type == new_type and new.startswith(new_type + "["):
                shown = new[len(new_type) :]
        before_text, after_text = ("none" if v is None else v for v in (old, shown))
        parts.append(f"{name} {before_text} -> {after_text}")
    return ", ".join(parts)


def recipe_changes(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What the repository changed since ``recorded`` (a baseline entry's recipe) in ``current`` (this
    run's environment): one line per controlled key; empty when the recipe is the same
    (:func:`~pytest_ortperf.store.recipe.same_recipe`). A key the recorded recipe lacks (an entry
    written by an older version) is named too: what was not recorded cannot be shown unchanged."""
    data = data_changed(recorded, current)
    if same_recipe(recorded, current):
        return [data] if data else []
    changes = [data] if data else []
    for key in CONTROLLED:
        if key not in recorded:
            changes.append(f"the recorded recipe has no {key} (recorded by an older version)")
        elif canonical(recorded[key]) != canonical(current.get(key)):
            described = what_changed({key: recorded[key]}, {key: current.get(key)})
            changes += described or [f"{key} {recorded[key]} -> {current.get(key)}"]
            if key == "model_sha256":  # a model DVC keeps: its object ids too, as DVC names them
                changes += what_changed({DVC_KEY: recorded.get(DVC_KEY)}, {DVC_KEY: current.get(DVC_KEY)})
    return changes
