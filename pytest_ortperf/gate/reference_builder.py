"""What a check compares with, and how it is found or rebuilt (``gate/services.py: References``): the
A/B reference of ``--ortperf-ab`` and ``ort_ab`` (a model, a revision, another runtime), the configured
reference variant, and a baseline's recorded reference rebuilt from its plan (the recorded model from
git or the model cache, the recorded settings, the recorded runtime). Each is read once per run; the
models measured are kept in the model cache for later runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ortperf.accuracy.output_values import OutputValue
from pytest_ortperf.checks.paths import Plan
from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.gate.model_builds import ModelBuilds
from pytest_ortperf.gate.references import ABReference, RecordedReference, ReferenceChoice
from pytest_ortperf.gate.run_config import ABMarker, OrtperfConfig
from pytest_ortperf.gate.session_factory import SessionFactory
from pytest_ortperf.gate.session_outputs import run_outputs, worker_outputs
from pytest_ortperf.ort.dvc_models import recorded_dvc_model, tracks_pointer
from pytest_ortperf.ort.git_models import (
    AUTO,
    SHALLOW,
    GitRevision,
    RevisionFile,
    git_keeps,
    is_shallow,
    recorded_git_model,
)
from pytest_ortperf.ort.inputs import Array, Feeds, InputOptions
from pytest_ortperf.ort.model_stores import RecordedModelRecipe, StoredModel
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.transformers import parse_options
from pytest_ortperf.ort.variants import Precision
from pytest_ortperf.ort.workers import WorkerPool, load
from pytest_ortperf.store.environment import what_changed
from pytest_ortperf.store.model_cache import ModelCache

if TYPE_CHECKING:
    from pytest_ortperf.ort.precision import Calibration


def builtin_stores(recipe: RecordedModelRecipe) -> StoredModel | None:
    """The built-in stores of recorded models, asked in the hook's order (``plugin/recorded_models.py``):
    DVC, then git with Git LFS."""
    return recorded_dvc_model(recipe) or recorded_git_model(recipe)


class ReferenceBuilder:
    """The other side of the run's comparisons, found, read or rebuilt once per run."""

    def __init__(
        self,
        config: OrtperfConfig,
        sessions: SessionFactory,
        builds: ModelBuilds,
        *,
        runtime_python: Callable[[str, str], tuple[str, str]],
        workers: Callable[[], WorkerPool],
        stores: Callable[[RecordedModelRecipe], StoredModel | None] = builtin_stores,
    ) -> None:
        # runtime_python: an interpreter with a recorded runtime, and where it was found (gate/runtimes.py)
        # workers: the run's measuring workers, where a reference of another runtime runs
        # stores: where a recorded model is kept (the pytest_ortperf_recorded_model hook; the built-in
        # git, Git LFS and DVC stores without pytest)
        self._stores = stores
        self._config = config
        self._sessions = sessions
        self._builds = builds
        self._runtime_python = runtime_python
        self._workers = workers
        self._model_cache = ModelCache(config.model_cache) if config.model_cache is not None else None
        self._revisions: dict[str, GitRevision] = {}
        self._revision_references: dict[tuple[str, Path, str], ABReference] = {}
        self._recorded_models: dict[tuple[str, str], ABReference | None] = {}
        self._cached: set[str] = set()  # sha256 of the models this run put into the model cache
        self._kept_in: dict[tuple[str, str], str] = {}  # (sha256, path): where a later run finds it

    def git_revision(self, rev: str, *, source: str = "--ortperf-ab") -> GitRevision:
        """The revision, checked once per run (usage error: no git, not a repository, unknown revision);
        ``auto``: the pull request's base, found once per run."""
        if rev not in self._revisions:
            root = self._config.rootdir
            revision = (
                GitRevision.pull_request_base(root, source=source)
                if rev == AUTO
                else GitRevision(rev, root, source=source)
            )
            revision.data_dir = self._revision_dir
            self._revisions[rev] = revision
        return self._revisions[rev]

    @property
    def _revision_dir(self) -> Path:
        """Where a model read from git with its external data files is written (``ort/git_models.py``)."""
        return Path(self._config.rootdir) / ".ortperf" / "revisions"

    def ab_reference(
        self, model: ModelSource, marker: ABMarker | None, *, test_dir: Path, origin: str
    ) -> ABReference | None:
        """What ``model`` is compared with in A/B mode: the ``ort_ab`` marker's reference, revision or
        interpreter, else ``--ortperf-ab`` and ``--ortperf-ab-python``; None when A/B mode is off for
        this test."""
        if marker is None:
            marker, origin = ABMarker(rev=self._config.ab_rev, python=self._config.ab_python), "--ortperf-ab"
        found = self._ab_model(model, marker, test_dir=test_dir, origin=origin)
        return replace(found, python=marker.python) if found is not None and marker.python else found

    def _ab_model(
        self, model: ModelSource, marker: ABMarker, *, test_dir: Path, origin: str
    ) -> ABReference | None:
        spec, rev = marker.reference, marker.rev
        if spec is not None:
            source = self._builds.model(spec, test_dir=test_dir, origin=origin)
            return ABReference(source.label, source)
        if not rev:
            # In another runtime, the model itself is the reference.
            return ABReference("the same model", model) if marker.python else None
        revision = self.git_revision(rev, source=origin)
        if model.path is None:
            return ABReference(
                f"{revision.name}:{model.label}",
                None,
                "the model is not a file, so git has no earlier version",
            )
        key = (rev, model.path, model.sha256)
        if key not in self._revision_references:  # read and hashed once per run, not once per check
            self._revision_references[key] = self._reference_at(revision, model, model.path)
        return self._revision_references[key]

    def recorded_model(self, model: ModelSource, plan: Plan) -> ABReference | None:
        """The model a baseline was recorded with (``plan.recorded``): from the stores that keep
        recorded models (a team's own, then DVC, git and Git LFS: the ``pytest_ortperf_recorded_model``
        hook), else from the model cache by its sha256. None when nothing keeps it here; without a
        source and with the reason when a store keeps it but cannot give it (git-lfs missing, an LFS
        or DVC object nowhere to be had). What a store gives is kept in the model cache."""
        blob, sha256 = plan.model_blob, plan.model_sha256
        if (blob, sha256) not in self._recorded_models:  # read once
            found: ABReference | None = None
            recipe = RecordedModelRecipe(
                plan.recorded, sha256, blob, model.path, self._config.rootdir, self._revision_dir
            )
            try:
                kept = self._stores(recipe)
            except OrtperfError as exc:
                kept = RevisionFile("the recorded model", None, str(exc))
            if kept is not None:
                found = self._revision_reference(kept)
                if found.source is not None and kept.data is not None and self._model_cache is not None:
                    self._model_cache.put(found.source.sha256, kept.data)
            if (
                (found is None or found.source is None)
                and self._model_cache is not None
                and sha256
                # a model with external data files: its .onnx bytes alone are not the model
                and not model.has_external_data
            ):
                data = self._model_cache.get(sha256)
                if data is not None:
                    origin = f"model cache {sha256}"
                    source = self._builds.model(data, test_dir=self._config.rootdir, origin=origin)
                    found = ABReference(f"the recorded model (cache {sha256[:12]})", source)
            if found is None and is_shallow(self._config.rootdir):
                found = ABReference("the recorded model", None, SHALLOW)
            self._recorded_models[(blob, sha256)] = found
        return self._recorded_models[(blob, sha256)]

    def _revision_reference(self, found: RevisionFile, *, test_dir: Path | None = None) -> ABReference:
        """A model read from git as a reference: from the folder it was written to with its external
        data files, else from its bytes; without a source and with the reason when there is none."""
        if found.path is not None:
            source = self._builds.model(found.path, test_dir=found.path.parent, origin=found.label)
        elif found.data is not None:
            directory = test_dir or self._config.rootdir
            source = self._builds.model(found.data, test_dir=directory, origin=found.label)
        else:
            return ABReference(found.label, None, found.reason)
        return ABReference(found.label, replace(source, label=found.label))

    def keep_model(self, model: ModelSource) -> None:
        """Put a measured model into the model cache (when one is configured), once per run."""
        if self._model_cache is None or model.sha256 in self._cached:
            return
        self._cached.add(model.sha256)
        if model.has_external_data:
            return  # its bytes alone are not the model
        try:
            data = model.data if model.data is not None else model.path.read_bytes() if model.path else None
            if data is not None:
                self._model_cache.put(model.sha256, data)
        except (OSError, ValueError):
            return  # the file changed or vanished since it was hashed: nothing trustworthy to keep

    def kept_in(self, model: ModelSource) -> str:
        """Where a later run finds ``model`` to rebuild it as a recorded reference: "DVC" (git tracks
        its DVC pointer), "git", "the model cache" (``--ortperf-model-cache``), or "" when nothing here
        keeps it. Asked once per model."""
        key = (model.sha256, str(model.path))
        if key not in self._kept_in:
            where = ""
            if model.dvc is not None and tracks_pointer(self._config.rootdir, model.dvc):
                where = "DVC"
            elif git_keeps(self._config.rootdir, model.path, model.git_blob):
                where = "git"
            elif self._model_cache is not None and not model.has_external_data:
                where = "the model cache"
            self._kept_in[key] = where
        return self._kept_in[key]

    def _reference_at(self, revision: GitRevision, model: ModelSource, path: Path) -> ABReference:
        """``model``'s file at ``revision`` as an A/B reference, or why there is none."""
        return self._revision_reference(revision.model_at(path), test_dir=path.parent)

    def reference_choice(self, built: BuiltSession) -> ReferenceChoice:
        """The reference variant of ``built``'s check: its session, or why it is not compared."""
        reference = self._config.reference_variant
        made_from = self._builds.made_from(built.model)
        model = built.model
        if made_from is not None:  # a precision variant: compared with its fp32 model
            model = made_from[0]
            reference = (reference or built.variant).fp32
        if reference is None:
            return ReferenceChoice()
        label = f"variant {reference.id}" + (" (fp32)" if made_from is not None else "")
        if reference == built.variant:
            return ReferenceChoice(label, note="this variant is the reference")
        probe = self._sessions.prober.probe(reference.provider_spec)
        if not probe.available:
            reason = probe.reason or "the provider probe failed"
            return ReferenceChoice(label, note=f"not available here ({reason})")
        return ReferenceChoice(label, self._sessions.session(model, reference, built.settings))

    def rebuild(self, built: BuiltSession, plan: Plan) -> tuple[RecordedReference | None, str]:
        """The reference a side-by-side ``plan`` names, or (None, why it cannot be rebuilt here)."""
        model, labels = built.model, []
        python = ""
        if plan.runtime is not None:
            python, where = self._runtime_python(*plan.runtime)
            if not python:
                return None, f"{plan.reason}: {where}"
            labels.append(f"the recorded runtime ({where})")
        if plan.model_changed:
            found = self.recorded_model(built.model, plan)
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
                    model = self._builds.prepared(model, recorded)
                except OrtperfError as exc:
                    return None, f"the recorded model cannot be prepared again ({exc})"
            if built.variant.precision is not Precision.FP32 and model.sha256 != plan.model_sha256:
                # its fp32 source, from git: built at this precision again (a static int8 build with the
                # calibration of the model under test)
                made = self._builds.made_from(built.model)
                calibration = made[1] if made is not None else None
                try:
                    model = self._builds.precision_model(
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

    def rebuilt_outputs(
        self, rebuilt: RecordedReference, built: BuiltSession, inputs: Mapping[str, Array]
    ) -> dict[str, OutputValue]:
        """The outputs of ``rebuilt`` at ``built``'s variant on ``inputs``: in a worker of its recorded
        runtime, else in a session of this one, under its recorded settings."""
        if rebuilt.python:
            worker = self._workers().side(rebuilt.python, "reference", 1)[0]
            other_model = load(worker, rebuilt.model, built.variant, rebuilt.settings, inputs)
            try:
                return worker_outputs(other_model)
            finally:
                other_model.release()
        other = self._sessions.session(rebuilt.model, built.variant, rebuilt.settings)
        return run_outputs(other, inputs, self._sessions.watchdog)

    def made_from(self, model: ModelSource) -> tuple[ModelSource, Calibration | None] | None:
        return self._builds.made_from(model)

    def data_set_outputs(
        self, data_set: Path, output_names: Sequence[str]
    ) -> tuple[dict[str, Any], dict[str, float]]:
        return self._builds.data_set_outputs(data_set, output_names)

    def data_set_feeds(self, data_set: Path, built: BuiltSession) -> Feeds:
        return self._builds.data_set_feeds(data_set, built)
