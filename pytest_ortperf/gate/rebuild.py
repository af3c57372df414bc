"""Rebuilding what a baseline's recipe measured, for a side-by-side plan: the recorded model (from
git or the model cache), under the recorded settings, in the recorded runtime."""

from __future__ import annotations

from pytest_ortperf.checks.paths import Plan
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.references import RecordedReference
from pytest_ortperf.gate.run import OrtperfRun
from pytest_ortperf.ort.inputs import InputOptions
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.transformers import parse_options
from pytest_ortperf.ort.variants import Precision
from pytest_ortperf.store.environment import what_changed


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
            what = f"the model changed (sha256 {plan.model_sha256[:12]} -> {built.model.sha256[:12]})"
            if found is not None and found.reason:  # git holds it, and says why it cannot give it
                return None, f"{what} and {found.reason.rstrip('.')}"
            return None, (
                f"{what} and the recorded one is neither in git here nor in the model cache "
                "(--ortperf-model-cache)"
            )
        model = found.source
        options = plan.recorded.get("model_transformers")
        if options and model.sha256 != plan.model_sha256:  # its source, from git: prepared as recorded
            try:
                recorded = parse_options(options, source="the baseline's model_transformers")
                model = run.prepared(model, recorded)
            except OrtperfError as exc:
                return None, f"the recorded model cannot be prepared again ({exc})"
        if built.variant.precision is not Precision.FP32 and model.sha256 != plan.model_sha256:
            # its fp32 source, from git: built at this precision again (a static int8 build with the
            # calibration of the model under test)
            made = run.made_from(built.model)
            calibration = made[1] if made is not None else None
            try:
                model = run.precision_model(
                    model, built.variant, built.settings, options=InputOptions(), calibration=calibration
                )
            except OrtperfError as exc:
                precision = built.variant.precision.value
                return None, f"the recorded model cannot be built at {precision} again ({exc})"
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
