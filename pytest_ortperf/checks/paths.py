"""Which path decides a latency check: chosen once, from its baseline entry and what this run measures.

A baseline entry is a recipe for its reference (what the repository controls: the model's bytes and
git object, settings, inputs, runtime, providers) plus figures per hardware identity. The recipe
decides the path on every machine; figures only inform, and decide only on the hardware that
measured them.

1. ``unchanged``: nothing in the recipe changed, on any hardware: a short look, the check passes
   and shows the drift against this hardware's own figures when it has some.
2. ``side by side``: the model or its session settings changed, and the recorded reference can be
   rebuilt (the model from git or the model cache, the settings from the recipe): both are
   measured in interleaved rounds and the A/B rule decides, whatever hardware recorded the entry.
3. ``side by side`` across runtimes: the onnxruntime version or wheel changed. The reference runs
   in an environment with the recorded runtime (``--ortperf-ab-python`` or an ``ortperf env``).
4. ``stored figures``: nothing can be rebuilt (the inputs changed, a model neither in git nor in
   the cache, no environment with the recorded runtime): this hardware's stored figures decide.
   When this hardware has none, the check is ``missing``, with the reason.
5. ``missing``: the test x variant was never recorded anywhere, or only path 4 is left and this
   hardware has no figures. ``record``: an update measures and records.

Plain logic: :func:`choose` reads the entry once and returns a :class:`Plan`; the gate rebuilds
what a side-by-side plan names and, when it cannot, falls back with :func:`without_reference`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_ortperf.store.baselines import BaselineEntry, Figures
from pytest_ortperf.store.recipe import CONTROLLED, data_changed, same_recipe

_RUNTIME = ("ort_version", "ort_flavour")


class Route(str, enum.Enum):
    UNCHANGED = "unchanged"
    SIDE_BY_SIDE = "side by side"
    STORED = "stored figures"
    MISSING = "missing"
    RECORD = "record"


@dataclass(frozen=True)
class Plan:
    """The path a check takes, and what it needs: for side by side, what the reference is rebuilt
    from; for the other paths, this hardware's figures (the drift shown when unchanged, the figures
    that decide on the stored path, the figures an update compares with)."""

    route: Route
    figures: Figures | None = None  # this hardware's figures of the entry, if they hold the check's part
    model_blob: str = ""  # the recorded model's git object id, when the model changed
    model_sha256: str = ""  # the recorded model's sha256 (the model cache's key), when it changed
    settings: Mapping[str, Any] | None = None  # the recorded session settings, when they changed
    runtime: tuple[str, str] | None = None  # the recorded (wheel, version) of onnxruntime, when it changed
    reason: str = ""  # why stored figures decide, or why the check is missing
    recorded: Mapping[str, Any] = field(default_factory=dict)  # the recipe with this hardware's measured_on

    @property
    def model_changed(self) -> bool:
        return bool(self.model_sha256)


def choose(
    entry: BaselineEntry | None,
    current: Mapping[str, Any],
    machine: str,
    *,
    update: bool,
    part: str = "latency",
) -> Plan:
    """The path of the module docstring for ``entry`` (None: never recorded) on machine key ``machine``,
    for the check whose figures are ``part`` (``latency``, ``memory``, ``startup``)."""
    here = entry.figures_for(machine) if entry is not None else None
    figures = here if here is not None and getattr(here, part) is not None else None
    recorded = entry.environment_for(machine) if entry is not None else {}
    if update:
        return Plan(Route.RECORD, figures=figures, recorded=recorded)
    recorded_on = entry.machines(part) if entry is not None else []
    if entry is None or not recorded_on:
        return Plan(Route.MISSING, reason="no machine has one yet")
    if same_recipe(entry.recipe, current):
        data = data_changed(entry.recipe, current)
        if data:  # the same .onnx with other weights beside it: the recorded data is not kept
            stored = Plan(Route.STORED, figures=figures, recorded=recorded)
            return without_reference(
                stored, f"{data}, and the recorded ones cannot be rebuilt", recorded_on=recorded_on
            )
        return Plan(Route.UNCHANGED, figures=figures, recorded=recorded)
    plan = replace(rebuild_plan(entry.recipe, current), figures=figures, recorded=recorded)
    rebuilds = plan.model_changed or plan.settings is not None or plan.runtime
    if plan.route is Route.SIDE_BY_SIDE and not rebuilds:
        # Only the inputs changed: the recorded inputs are not kept, so nothing can be rebuilt.
        why = "the inputs changed, and the recorded inputs cannot be rebuilt"
        plan = replace(plan, route=Route.STORED, reason=why)
    if plan.route is Route.STORED:
        return without_reference(plan, plan.reason, recorded_on=recorded_on)
    return plan


def without_reference(plan: Plan, why: str, *, recorded_on: list[str] | None = None) -> Plan:
    """The plan when no reference can be rebuilt (``why``): this hardware's stored figures decide, or,
    when it has none, the check is missing with the reason."""
    if plan.figures is not None:
        return replace(plan, route=Route.STORED, reason=why)
    where = f" (figures exist for: {', '.join(recorded_on)})" if recorded_on else ""
    return replace(
        plan,
        route=Route.MISSING,
        reason=f"{why}; this hardware has no figures of its own{where}, and stored figures are only "
        "compared on the hardware that measured them",
    )


def rebuild_plan(recipe: Mapping[str, Any], current: Mapping[str, Any]) -> Plan:
    """What rebuilding the recorded reference takes, on any hardware and today's inputs: the recorded
    model when it changed, the recorded settings when they changed (neither: the current model is
    the reference), the recorded runtime when it changed. Stored figures, with the reason, when the
    recorded providers would be needed, or the entry predates these fields."""
    missing = [key for key in CONTROLLED if key not in recipe]
    if missing:
        return Plan(
            Route.STORED,
            reason=f"the baseline predates what a reference is rebuilt from ({', '.join(missing)}); "
            "re-record it once to gain them",
        )
    runtime, reason = None, ""
    if any(recipe[key] != current.get(key) for key in _RUNTIME):
        runtime = (str(recipe["ort_flavour"]), str(recipe["ort_version"]))
        after = " ".join(str(current.get(k)) for k in ("ort_flavour", "ort_version"))
        reason = f"onnxruntime changed ({' '.join(runtime)} -> {after})"
    providers = recipe["providers_used"], current.get("providers_used")
    if providers[0] != providers[1]:
        return Plan(Route.STORED, reason=f"the providers used changed ({providers[0]} -> {providers[1]})")
    model_changed = recipe["model_sha256"] != current.get("model_sha256")
    settings = recipe["settings"]
    if settings != current.get("settings") and not isinstance(settings, Mapping):
        return Plan(Route.STORED, reason="the recorded session settings are damaged")
    blob = recipe.get("model_git_blob")
    return Plan(
        Route.SIDE_BY_SIDE,
        model_blob=blob if model_changed and isinstance(blob, str) else "",
        model_sha256=str(recipe["model_sha256"]) if model_changed else "",
        settings=settings if settings != current.get("settings") else None,
        runtime=runtime,
        reason=reason,
    )
