"""What a check compares with, besides its stored figures: the A/B reference model, the configured
reference variant, and a baseline's recorded reference rebuilt (its model from git or the model cache,
its settings, its runtime). How each is found or rebuilt: ``gate/reference_builder.py``."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ortperf.checks.paths import Plan, SameJob
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.ort.git_models import read_blob
from pytest_ortperf.ort.inputs import (
    Feeds,
    InputOptions,
    feeds_from_files,
    specs_as_described,
    synthesized_as_described,
)
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.store.environment import feeds_digest


@dataclass(frozen=True)
class ABReference:
    """The reference model of a same-job A/B check; ``source`` None with a ``reason`` when there is none."""

    label: str
    source: ModelSource | None
    reason: str = ""
    python: str = ""  # the interpreter whose ONNX Runtime runs the reference; "": this process's

    @property
    def across_runtimes(self) -> bool:
        return bool(self.python)


@dataclass(frozen=True)
class ReferenceChoice:
    """The configured reference variant of one check: a session to compare with, or the reason
    there is none (``note``). An empty label: no reference variant is configured."""

    label: str = ""
    session: BuiltSession | None = None
    note: str = ""


@dataclass(frozen=True)
class RecordedReference:
    """What a baseline measured, rebuilt: its model under its session settings."""

    label: str
    model: ModelSource
    settings: SessionSettings
    python: str = ""  # an interpreter with the recorded onnxruntime, when it differs from this one's


def same_job(reference: ABReference | None, model: ModelSource) -> SameJob | None:
    """The A/B reference as the plan reads it (``checks/paths.py: plan_check``): None in stored mode."""
    if reference is None:
        return None
    return SameJob(
        reference.label,
        available=reference.source is not None,
        identical=reference.source is not None and reference.source.content == model.content,
        across_runtimes=reference.across_runtimes,
        reason=reference.reason,
    )


_SEED = re.compile(r"^synthetic\(seed=(-?\d+)\)")


def recorded_feeds(
    recipe: Mapping[str, Any], options: InputOptions | None, where: Path | None = None
) -> tuple[Feeds | None, str]:
    """The inputs the recipe was measured on, made again, or None and why they cannot be.

    Synthetic inputs depend on their names, dtypes, shapes (the recipe's ``inputs``), the seed and
    the integer ranges: they are made at the recorded seed (``inputs_source``; a recipe from before
    it was kept: this run's seed, then 0) with this run's ranges. Inputs read from files beside the
    model (a test data set, an ``.npz``) are read again from the git objects the recipe names
    (``inputs_files``), in the repository around ``where`` (the model's folder). Either way, only
    feeds whose digest is the recorded ``inputs_sha256`` are taken for the recorded inputs."""
    described, digest = recipe.get("inputs"), recipe.get("inputs_sha256")
    if not isinstance(described, Mapping) or not isinstance(digest, str):
        return None, "the recipe does not describe its inputs"
    source = recipe.get("inputs_source")
    options = options or InputOptions()
    files = recipe.get("inputs_files")
    if isinstance(source, str) and isinstance(files, Mapping) and files:
        return _from_git(source, files, described, digest, where)
    if isinstance(source, str):
        found = _SEED.match(source)
        if found is None:
            return None, f"they came from {source}, which is not kept"
        seeds = [int(found.group(1))]
    else:
        seeds = list(dict.fromkeys((options.seed, 0)))
    for seed in seeds:
        feeds = synthesized_as_described(described, options, seed=seed)
        if feeds is not None and feeds_digest(feeds) == digest:
            return feeds, ""
    tried = ", ".join(str(seed) for seed in seeds)
    return None, (
        f"synthetic inputs made as described (seed {tried}, this run's integer ranges) do not have the "
        "recorded digest"
    )


def reference_feeds(
    plan: Plan, recipe: Mapping[str, Any] | None, options: InputOptions | None, where: Path | None
) -> tuple[Feeds | None, str]:
    """What the reference of a side-by-side ``plan`` is fed: (None, "") where the inputs did not
    change (both sides run today's, which are the recorded ones); its recorded inputs made again
    (:func:`recorded_feeds`) where they changed; else (None, why the plan cannot be side by side),
    never today's inputs in their place."""
    if not plan.recorded_inputs:
        return None, ""
    if recipe is None:
        return None, "the inputs changed, and no recipe says what they were"
    fed, cannot = recorded_feeds(recipe, options, where)
    if fed is None:
        return None, f"the inputs changed, and the recorded inputs cannot be rebuilt ({cannot})"
    return fed, ""


def _from_git(
    source: str, files: Mapping[str, Any], described: Mapping[str, Any], digest: str, where: Path | None
) -> tuple[Feeds | None, str]:
    """The recorded inputs of ``source`` read from the git objects ``files`` names."""
    specs = specs_as_described(described)
    if where is None or specs is None:
        return None, f"they came from {source}, and this model has no folder to read them from again"
    with tempfile.TemporaryDirectory(prefix="ortperf-inputs-") as scratch:
        for relative, blob in files.items():
            path = Path(str(relative))
            data = None if ".." in path.parts or path.is_absolute() else read_blob(where, str(blob))
            if data is None:
                return None, f"they came from {source}, and git here does not keep {relative} as recorded"
            target = Path(scratch) / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            feeds = feeds_from_files(Path(scratch), source, specs)
        except OrtperfError as exc:
            return None, f"they came from {source}, and the recorded files cannot be read ({exc})"
    if feeds_digest(feeds) != digest:
        return None, f"they came from {source}, and the files git keeps do not have the recorded digest"
    return Feeds(feeds, source=f"{source} at the recorded version (git)"), ""
