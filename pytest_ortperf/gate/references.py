"""What a check compares with, besides its stored figures: the A/B reference model, the configured
reference variant, and a baseline's recorded reference rebuilt (its model from git or the model cache,
its settings, its runtime). How each is found or rebuilt: ``gate/reference_builder.py``."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_ortperf.checks.paths import SameJob
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession


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
