"""Which path decides a latency check, from what its baseline recorded and what this run measures.

1. ``unchanged``: nothing the repository controls changed, on the same hardware: a short look,
   the check passes and shows the drift as information.
2. ``side by side``: the model or its session settings changed, and the recorded reference can
   be rebuilt (the model from git or the model cache, the settings from the baseline): both are
   measured in interleaved rounds and the A/B rule decides.
3. ``side by side`` across runtimes: the onnxruntime version or wheel changed. The reference
   runs in an environment with the recorded runtime (``--ortperf-ab-python`` or an ``ortperf env``),
   both sides in measuring workers; when no such environment exists, the stored figures decide
   and the reason names the command that creates one.
4. ``stored figures``: nothing to rebuild (inputs changed, an entry recorded before these
   fields existed, a model neither in git nor in the cache): today's figures against the
   baseline's, which may not fail a test on their own (``checks.latency``).

Plain logic on the two environment mappings (``store.environment``); the pytest layer
fetches what a :class:`Plan` asks for and falls back to stored figures when it cannot.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# What the repository controls. When none of these changed since the baseline, on the same hardware,
# there is nothing to judge: figures of another time would only measure the machine.
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
_RUNTIME = ("ort_version", "ort_flavour")


class Route(str, enum.Enum):
    UNCHANGED = "unchanged"
    SIDE_BY_SIDE = "side by side"
    STORED = "stored figures"


@dataclass(frozen=True)
class Plan:
    """The path a check takes; for side by side, what the reference is rebuilt from."""

    route: Route
    model_blob: str = ""  # the recorded model's git object id, when the model changed
    model_sha256: str = ""  # the recorded model's sha256 (the model cache's key), when it changed
    settings: Mapping[str, Any] | None = None  # the recorded session settings, when they changed
    runtime: tuple[str, str] | None = None  # the recorded (wheel, version) of onnxruntime, when it changed
    reason: str = ""  # why the stored figures decide (for a runtime change: if no environment has it)

    @property
    def model_changed(self) -> bool:
        return bool(self.model_sha256)


def same_hardware(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Both sides carry a hardware identity, and it is the same."""
    before, after = recorded.get("hardware"), current.get("hardware")
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return False
    return bool(before.get("digest") == after.get("digest"))


def nothing_changed(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Whether everything the repository controls is as recorded, on the same hardware. An entry that
    lacks one of them (recorded by an older version) does not qualify."""
    return same_hardware(recorded, current) and all(
        key in recorded and recorded[key] == current.get(key) for key in CONTROLLED
    )


def rebuild_plan(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> Plan:
    """What rebuilding the recorded reference takes, on any hardware and today's inputs: the recorded
    model when it changed, the recorded settings when they changed (neither: the current model is
    the reference). Stored figures, with the reason, when the recorded runtime or providers would be
    needed, or the entry predates these fields."""
    missing = [key for key in CONTROLLED if key not in recorded]
    if missing:
        return Plan(
            Route.STORED,
            reason=f"the baseline predates what a reference is rebuilt from ({', '.join(missing)}); "
            "re-record it once to gain them",
        )
    runtime, reason = None, ""
    if any(recorded[key] != current.get(key) for key in _RUNTIME):
        runtime = (str(recorded["ort_flavour"]), str(recorded["ort_version"]))
        after = " ".join(str(current.get(k)) for k in ("ort_flavour", "ort_version"))
        reason = f"onnxruntime changed ({' '.join(runtime)} -> {after})"
    providers = recorded["providers_used"], current.get("providers_used")
    if providers[0] != providers[1]:
        return Plan(Route.STORED, reason=f"the providers used changed ({providers[0]} -> {providers[1]})")
    model_changed = recorded["model_sha256"] != current.get("model_sha256")
    settings = recorded["settings"]
    if settings != current.get("settings") and not isinstance(settings, Mapping):
        return Plan(Route.STORED, reason="the recorded session settings are damaged")
    blob = recorded.get("model_git_blob")
    return Plan(
        Route.SIDE_BY_SIDE,
        model_blob=blob if model_changed and isinstance(blob, str) else "",
        model_sha256=str(recorded["model_sha256"]) if model_changed else "",
        settings=settings if settings != current.get("settings") else None,
        runtime=runtime,
        reason=reason,
    )


def choose(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> Plan:
    """The path of the module docstring for a baseline that recorded ``recorded``."""
    if nothing_changed(recorded, current):
        return Plan(Route.UNCHANGED)
    plan = rebuild_plan(recorded, current)
    if plan.route is Route.STORED or plan.model_changed or plan.settings is not None or plan.runtime:
        return plan
    if not same_hardware(recorded, current):
        return Plan(Route.STORED, reason="recorded on other hardware")
    return Plan(Route.STORED, reason="the inputs changed, and the recorded inputs cannot be rebuilt")
