"""What a check compares with, besides its stored figures: the A/B reference model, the configured
reference variant, and a baseline's recorded reference rebuilt (its model from git or the model cache,
its settings, its runtime)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_ortperf.checks.paths import Plan
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.store.environment import what_changed

if TYPE_CHECKING:
    from pytest_ortperf.gate.run import OrtperfRun


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


def rebuild(run: OrtperfRun, built: BuiltSession, plan: Plan) -> tuple[RecordedReference | None, str]:
    """The reference a side-by-side ``plan`` names, or (None, why it cannot be rebuilt here)."""
    model, labels = built.model, []
    python = ""
    if plan.runtime is not None:
        python, where = run.runtime_python(*plan.runtime)
        if not python:
            return None, f"{plan.reason}: {where}"
        labels.append(f"the recorded runtime ({where})")
    if plan.model_changed:
        found = run.recorded_model(built.model, plan.model_blob, plan.model_sha256)
        if found is None or found.source is None:
            return None, (
                f"the model changed (sha256 {plan.model_sha256[:12]} -> {built.model.sha256[:12]}) and "
                "the recorded one is neither in git here nor in the model cache (--ortperf-model-cache)"
            )
        model = found.source
        labels.append(found.label)
    settings = built.settings
    if plan.settings is not None:
        try:
            settings = SessionSettings().with_overrides(plan.settings, source="the baseline's settings")
        except OrtperfError as exc:
            return None, f"the recorded session settings cannot be rebuilt ({exc})"
        changed = what_changed({"settings": plan.settings}, {"settings": built.settings.as_dict()})
        labels.append(f"the recorded settings ({changed[0].partition(': ')[2]})" if changed else "")
    label = " under ".join(label for label in labels if label) or "the recorded model (the same bytes)"
    return RecordedReference(label, model, settings, python), ""
