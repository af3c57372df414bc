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
4. ``stored figures``: nothing can be rebuilt (the inputs changed, also together with the model,
   settings or runtime: the recorded inputs are not kept, and a reference fed today's would hide
   what the new inputs cost; a model neither in git nor in the cache): this hardware's stored
   figures decide. When this hardware has none, the check is ``missing``, with the reason. When the
   runtime changed and no environment has the recorded one, nothing the other runtime recorded
   decides: the check is ``missing``, naming the runtime.
5. ``missing``: the test x variant was never recorded anywhere, or only path 4 is left and this
   hardware has no figures. ``record``: an update measures and records.

Same-job A/B (``--ortperf-ab``) comes before all of these, outside an update: ``same-job A/B``
against the configured reference model (across runtimes when it runs in another environment),
``no reference`` when there is none, ``identical`` when it is the very model under test (in one
runtime). Each kind climbs the ladder it declares (:class:`Ladder`, handed to :func:`plan_check`):
the graph's reads it a little differently (the optimized graph does not depend on the inputs, and
its stored graphs serve a hardware class), accuracy's rebuilds the recorded model (its stored
outputs serve every hardware), latency's never lets figures recorded short decide.

Plain logic: :func:`plan_check` is the one place every kind of check (latency, memory, start-up,
graph) gets its plan from: it reads the entry once and returns a :class:`Plan`; the check executes
it, rebuilding what a side-by-side plan names and, when it cannot, falling back with
:func:`without_reference`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_ortperf.checks.latency_figures import recorded_short
from pytest_ortperf.ort.git_models import SHALLOW
from pytest_ortperf.store.baselines import BaselineEntry, Figures
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.recipe import CONTROLLED, canonical, data_changed, same_recipe

_RUNTIME = ("ort_version", "ort_flavour")


class Ladder(str, enum.Enum):
    """Which reference serves a part once the recipe changed (:func:`plan_check`), as a kind declares
    it: the ladder is named for what it climbs to, never for a kind."""

    FIGURES = "this hardware's stored figures"  # memory's, start-up's, a registered kind's part
    # The same, where a recording may have been short because its reference was to be rebuilt: such
    # figures only inform, and never decide (the latency check's).
    FIGURES_MAY_BE_SHORT = "this hardware's stored figures, unless recorded short"
    # A stored graph of this hardware class; inputs that changed alone change nothing (the graph's).
    GRAPHS = "a graph stored for this hardware class"
    # Stored reference outputs, which serve every hardware: a rebuild of the recorded model (accuracy's).
    OUTPUTS = "the recorded model rebuilt"

    @property
    def may_be_short(self) -> bool:
        return self is Ladder.FIGURES_MAY_BE_SHORT


class Route(str, enum.Enum):
    UNCHANGED = "unchanged"
    SIDE_BY_SIDE = "side by side"
    STORED = "stored figures"
    MISSING = "missing"
    RECORD = "record"
    SAME_JOB = "same-job A/B"  # against the configured A/B reference model, measured in this run
    NO_REFERENCE = "no reference"  # same-job A/B without a reference model (the reason says why)
    IDENTICAL = "identical to reference"  # same-job A/B against the very model under test


@dataclass(frozen=True)
class SameJob:
    """The same-job A/B reference as plain data (``gate/references.py: ABReference``): its label,
    whether there is a model to compare with, whether it is the very model under test, whether it
    runs in another ONNX Runtime, and why there is none."""

    label: str
    available: bool
    identical: bool = False
    across_runtimes: bool = False
    reason: str = ""


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
    same_job: SameJob | None = None  # the A/B reference of a same-job plan
    note: str = ""  # what the route leaves out and why (a graph whose inputs changed)
    # Side by side although the inputs changed: the reference runs on its recorded inputs, made again
    # (synthetic ones, or files git keeps: gate.references.recorded_feeds); where they cannot be had,
    # the kind falls back to without_reference
    recorded_inputs: bool = False

    @property
    def model_changed(self) -> bool:
        return bool(self.model_sha256)

    @property
    def same_graph_possible(self) -> bool:
        """Only the model changed (not its settings or runtime): when ORT builds the recorded
        reference's very graph from it, the two sides are the same work and need no timed round."""
        return self.model_changed and self.settings is None and self.runtime is None


def plan_check(
    entry: BaselineEntry | None,
    current: Mapping[str, Any],
    machine: str,
    *,
    update: bool,
    part: str,
    ladder: Ladder = Ladder.FIGURES,
    same_job: SameJob | None = None,
) -> Plan:
    """The plan of one check of ``part`` (its kind's part of the entry's figures): same-job A/B when
    there is an A/B reference and the run is not an update, else the recipe's route by the kind's
    ``ladder`` (:func:`choose` for stored figures; the graphs' own; for outputs, which serve every
    hardware, what rebuilding the recorded model takes)."""
    if same_job is not None and not update:
        if not same_job.available:
            return Plan(Route.NO_REFERENCE, reason=same_job.reason, same_job=same_job)
        if same_job.identical and not same_job.across_runtimes:
            reason = f"identical to {same_job.label}, nothing to compare"
            return Plan(Route.IDENTICAL, reason=reason, same_job=same_job)
        return Plan(Route.SAME_JOB, same_job=same_job)
    if ladder is Ladder.GRAPHS:
        return _graph_plan(entry, current, update=update)
    if ladder is Ladder.OUTPUTS:
        # Reference outputs serve every hardware: what the recorded model would give on today's
        # inputs is a rebuild of it, side by side, or the reason there is none.
        if entry is None:
            return Plan(Route.MISSING, reason="never recorded")
        return replace(rebuild_plan(entry.recipe, current), recorded=entry.recipe)
    return choose(entry, current, machine, update=update, part=part, may_be_short=ladder.may_be_short)


def _graph_plan(entry: BaselineEntry | None, current: Mapping[str, Any], *, update: bool) -> Plan:
    """The graph's ladder: recorded on update; missing when never recorded; unchanged when the recipe
    is (also when only the inputs changed: the optimized graph does not depend on them); else side
    by side with the rebuilt reference, or the stored graph of this hardware class (read by the
    graph check, ``checks/graph_verdicts.py: stored_graph``)."""
    if update:
        return Plan(Route.RECORD)
    if entry is None:
        return Plan(Route.MISSING, reason="never recorded")
    if same_recipe(entry.recipe, current):
        return Plan(Route.UNCHANGED, recorded=entry.recipe)
    plan = replace(rebuild_plan(entry.recipe, current), recorded=entry.recipe)
    rebuilds = plan.model_changed or plan.settings is not None or plan.runtime
    if plan.route is Route.SIDE_BY_SIDE and not rebuilds:
        note = "the inputs changed; the optimized graph does not depend on them"
        return replace(plan, route=Route.UNCHANGED, note=note)
    return plan


def choose(
    entry: BaselineEntry | None,
    current: Mapping[str, Any],
    machine: str,
    *,
    update: bool,
    part: str = "latency",
    may_be_short: bool = True,
) -> Plan:
    """The path of the module docstring for ``entry`` (None: never recorded) on machine key ``machine``,
    for the check whose figures are ``part`` (``latency``, ``memory``, ``startup``...);
    ``may_be_short``: its figures may have been recorded short (:func:`without_reference`)."""
    here = entry.figures_for(machine) if entry is not None else None
    figures = here if here is not None and here.holds(part) else None
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
            why = f"{data}, and the recorded ones cannot be rebuilt"
            return without_reference(stored, why, recorded_on=recorded_on, may_be_short=may_be_short)
        return Plan(Route.UNCHANGED, figures=figures, recorded=recorded)
    plan = replace(rebuild_plan(entry.recipe, current), figures=figures, recorded=recorded)
    rebuilds = plan.model_changed or plan.settings is not None or plan.runtime
    if plan.route is Route.SIDE_BY_SIDE and inputs_changed(entry.recipe, current):
        # Each side runs on its own inputs: the reference on its recorded ones, made again where the
        # recipe's were synthetic (in this runtime); never on today's, or a model whose input size
        # changed with it (320 -> 640) would pass against itself resized.
        if plan.runtime is None and remade_inputs_possible(entry.recipe):
            return replace(plan, recorded_inputs=True)
        changed = "the inputs changed" + (" too" if rebuilds else "")
        why = f"{changed}, and the recorded inputs cannot be rebuilt"
        plan = replace(plan, route=Route.STORED, reason=why)
    if plan.route is Route.STORED:
        return without_reference(plan, plan.reason, recorded_on=recorded_on, may_be_short=may_be_short)
    return plan


def remade_inputs_possible(recipe: Mapping[str, Any]) -> bool:
    """Whether the recipe's inputs may be made again: synthetic ones (or a recipe from before the
    source was recorded), or files beside the model that git keeps; their digest decides whether
    they are the recorded ones."""
    source, files = recipe.get("inputs_source"), recipe.get("inputs_files")
    if isinstance(files, Mapping) and files:
        return True  # read from files whose git objects the recipe names
    return source is None or (isinstance(source, str) and source.startswith("synthetic("))


def inputs_changed(recipe: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """The inputs' names, types, shapes or data differ from those the recipe was measured on."""
    keys = ("inputs", "inputs_sha256")
    return any(canonical(recipe.get(key)) != canonical(current.get(key)) for key in keys)


def without_reference(
    plan: Plan, why: str, *, recorded_on: list[str] | None = None, may_be_short: bool = False
) -> Plan:
    """The plan when no reference can be rebuilt (``why``): this hardware's stored figures decide, or,
    when it has none, the check is missing with the reason.

    On a ladder whose figures may be recorded short (``may_be_short``: the latency check's), figures
    recorded short never decide: they were recorded short because a later run was to rebuild their
    reference (``latency.recording.short_reason``: they only inform), so they are neither settled nor
    able to detect the threshold; the check is missing with both reasons and how to record figures
    that decide.

    One rule for every kind (latency, memory, start-up, graph): when the recorded onnxruntime differs
    from this one and could not be had (``plan.runtime``), whatever it recorded is that runtime's
    figure, not a reference for this one: the check is missing, naming the runtime as the cause, and
    what was recorded is shown beside today's, never judged (:func:`across_runtimes`)."""
    if plan.runtime is not None:
        return replace(plan, route=Route.MISSING, reason=f"{why}; {across_runtimes(plan.runtime)}")
    figures = plan.figures
    short = recorded_short(figures) if may_be_short else ""
    if short:
        return replace(
            plan,
            route=Route.MISSING,
            reason=f"{why}; this hardware's figures were recorded short ({short}), so they do not "
            "decide: re-record them (ortperf update) to judge this change on stored figures",
        )
    if figures is not None:
        return replace(plan, route=Route.STORED, reason=why)
    where = f" (figures exist for: {', '.join(recorded_on)})" if recorded_on else ""
    return replace(
        plan,
        route=Route.MISSING,
        reason=f"{why}; this hardware has no figures of its own{where}, and stored figures are only "
        "compared on the hardware that measured them",
    )


def across_runtimes(runtime: tuple[str, str]) -> str:
    """Why a check whose recorded runtime (``(wheel, version)``) cannot be had here is not judged, and
    how to judge it."""
    flavour, version = runtime
    return (
        f"what {flavour} {version} recorded is not this runtime's reference, so it is shown, not judged; "
        f"to judge it, make {flavour} {version} available (ortperf env create {flavour}=={version}, or "
        "--ortperf-ab-python), or re-record with this runtime"
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
        why = f"the providers used changed ({providers[0]} -> {providers[1]})"
        return Plan(Route.STORED, reason=f"{reason} and {why}" if reason else why, runtime=runtime)
    model_changed = recipe["model_sha256"] != current.get("model_sha256")
    settings = recipe["settings"]
    if settings != current.get("settings") and not isinstance(settings, Mapping):
        return Plan(Route.STORED, reason="the recorded session settings are damaged", runtime=runtime)
    blob = recipe.get("model_git_blob")
    return Plan(
        Route.SIDE_BY_SIDE,
        model_blob=blob if model_changed and isinstance(blob, str) else "",
        model_sha256=str(recipe["model_sha256"]) if model_changed else "",
        settings=settings if settings != current.get("settings") else None,
        runtime=runtime,
        reason=reason,
    )


def missing_message(what: str, key: CheckKey, reason: str, measured: str) -> str:
    """The message of a check that found nothing to compare with (``what``: "latency", "memory",
    ...; ``reason``: the plan's why; ``measured``: what this run measured). A changed model whose
    recorded one a shallow clone lacks is not judged, and fetching the history is its fix: no
    command that records is offered, which would accept the change unseen."""
    if SHALLOW in reason:
        return (
            f"{what} of {key.shown} not judged on machine '{key.machine}': {reason.split(SHALLOW)[0]}"
            f"{SHALLOW}. Then it is judged side by side with the recorded model; {measured}."
        )
    return (
        f"no {what} baseline for {key.shown} on machine '{key.machine}' ({reason}); {measured}. "
        f"Record it with:\n    {key.record_command}"
    )
