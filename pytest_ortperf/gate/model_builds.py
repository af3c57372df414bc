"""What a session runs, made once per run: models resolved from what a test names, a model after
ORT's transformer optimizer, a precision variant's build (and what it was made from), a model-zoo
data set's inputs and expected outputs, and a session's inputs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ortperf.errors import InputsError, UsageError
from pytest_ortperf.gate.session_factory import SessionFactory
from pytest_ortperf.ort.inputs import (
    Feeds,
    InputOptions,
    InputSpec,
    UnmadeFeeds,
    data_sets,
    feeds_from_data_set,
    load_feeds,
    specs_from_session,
)
from pytest_ortperf.ort.models import ModelResolver, ModelSource
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.transformers import Prepared, TransformerOptions, prepare
from pytest_ortperf.ort.variants import Precision, Variant
from pytest_ortperf.store.environment import portable_label
from pytest_ortperf.store.outputs import zoo_expected
from pytest_ortperf.values import safe_repr

if TYPE_CHECKING:
    from pytest_ortperf.ort.precision import Calibration, PrecisionModel


class ModelBuilds:
    """The run's models and inputs, each made once and cached by content under ``.ortperf/``."""

    def __init__(self, rootdir: Path, sessions: SessionFactory) -> None:
        self._rootdir = Path(rootdir)
        self._sessions = sessions
        self._models = ModelResolver(rootdir)
        self._prepared: dict[tuple[str, TransformerOptions], Prepared] = {}
        # Precision builds of this run, by (source sha256, precision, calibration digest), and what each
        # built model was made from (its fp32 source and the calibration it used).
        self._precision_builds: dict[tuple[str, Precision, str], PrecisionModel] = {}
        self._made_from: dict[str, tuple[ModelSource, Calibration | None]] = {}
        self._data_sets: dict[tuple[Path, tuple[str, ...]], tuple[dict[str, Any], dict[str, float]]] = {}
        self._data_set_feeds: dict[tuple[Path, tuple[InputSpec, ...]], Feeds] = {}

    def model(self, spec: Any, *, test_dir: Path, origin: str) -> ModelSource:
        return self._models.resolve(spec, test_dir=test_dir, origin=origin)

    def prepared(self, model: ModelSource, options: TransformerOptions) -> ModelSource:
        """``model`` after ORT's transformer optimizer with ``options`` (``ort/transformers.py``), once
        per run and cached by content under ``.ortperf/transformers``."""
        key = (model.sha256, options)
        if key not in self._prepared:
            cache = self._rootdir / ".ortperf" / "transformers"
            version = self._sessions.runtime.version
            self._prepared[key] = prepare(model, options, cache_dir=cache, ort_version=version)
        return self._prepared[key].model

    def pre_pass_of(self, model: ModelSource) -> Mapping[str, int]:
        """What the transformer optimizer fused when this run prepared ``model``; {} otherwise."""
        return next((p.fused for p in self._prepared.values() if p.model.sha256 == model.sha256), {})

    def precision_model(
        self,
        model: ModelSource,
        variant: Variant,
        settings: SessionSettings,
        *,
        options: InputOptions,
        calibration_sets: Sequence[Mapping[str, Any]] | None = None,
        calibration: Calibration | None = None,
    ) -> ModelSource:
        """The model ``variant`` runs: ``model`` itself at fp32, else its fp16 or int8 build
        (``ort/precision.py``), once per run and cached by content under ``.ortperf/precision``.
        Static int8 is calibrated with ``calibration`` when given (a rebuild reuses the current
        model's), else ``calibration_sets`` (the ``ort_calibration_data`` fixture), the model's test
        data sets, or seeded synthetic inputs."""
        if variant.precision is Precision.FP32:
            return model
        from pytest_ortperf.ort.precision import build_precision

        if variant.precision is Precision.INT8_STATIC and calibration is None:
            calibration = self._calibration(model, variant, settings, options, calibration_sets)
        key = (model.sha256, variant.precision, calibration.digest if calibration is not None else "")
        if key not in self._precision_builds:
            self._precision_builds[key] = build_precision(
                model,
                variant.precision,
                cache_dir=self._rootdir / ".ortperf" / "precision",
                ort_version=self._sessions.runtime.version,
                calibration=calibration,
            )
        built = self._precision_builds[key].model
        self._made_from[built.sha256] = (model, calibration)
        return built

    def made_from(self, model: ModelSource) -> tuple[ModelSource, Calibration | None] | None:
        """The fp32 model (and the calibration) a precision build of this run was made from; None for
        a model this run did not build."""
        return self._made_from.get(model.sha256)

    def model_facts(self, built: BuiltSession) -> dict[str, Any]:
        """What model ``built`` runs, for the reports: its fp32 model (label, sha256), the precision,
        the size of the file the session loads and, for a static int8 build, its calibration."""
        made = self.made_from(built.model)
        source, calibration = made if made is not None else (built.model, None)
        model = built.model
        size = model.path.stat().st_size if model.path is not None else len(model.data or b"")
        facts: dict[str, Any] = {
            "label": portable_label(source.label),
            "sha256": source.sha256,
            "precision": built.variant.precision.value,
            "bytes": size,
        }
        if calibration is not None:
            facts["calibration"] = {"source": calibration.source, "synthetic": calibration.synthetic}
        return facts

    def _calibration(
        self,
        model: ModelSource,
        variant: Variant,
        settings: SessionSettings,
        options: InputOptions,
        sets: Sequence[Mapping[str, Any]] | None,
    ) -> Calibration:
        from pytest_ortperf.ort.precision import Calibration, synthetic_calibration

        if sets is not None:
            listed = list(sets) if isinstance(sets, Iterable) and not isinstance(sets, (Mapping, str)) else []
            if not listed or not all(isinstance(one, Mapping) for one in listed):
                raise UsageError(
                    "the ort_calibration_data fixture must return a list of input sets (dicts of input "
                    f"name to array), at least one; got {safe_repr(sets)}."
                )
            feeds = tuple(dict(one) for one in listed)
            return Calibration(feeds, f"the ort_calibration_data fixture ({len(feeds)} sets)", False)
        fp32 = self._sessions.session(model, variant.fp32, settings)
        found = data_sets(model.directory) if model.directory is not None else []
        if found:
            sets_read = tuple(dict(self.data_set_feeds(data_set, fp32)) for data_set in found)
            names = f"{found[0].name}" if len(found) == 1 else f"{found[0].name} .. {found[-1].name}"
            return Calibration(sets_read, f"the model's {names}", False)
        return synthetic_calibration(specs_from_session(fp32.session), options, model=model)

    def data_set_outputs(
        self, data_set: Path, output_names: Sequence[str]
    ) -> tuple[dict[str, Any], dict[str, float]]:
        """A model-zoo data set's expected outputs and data.json tolerances, read once per run."""
        key = (data_set, tuple(output_names))
        if key not in self._data_sets:
            self._data_sets[key] = zoo_expected(data_set, output_names)
        return self._data_sets[key]

    def data_set_feeds(self, data_set: Path, built: BuiltSession) -> Feeds:
        """A model-zoo data set's inputs for ``built``'s model, read once per run."""
        key = (data_set, specs_from_session(built.session))
        if key not in self._data_set_feeds:
            self._data_set_feeds[key] = feeds_from_data_set(data_set, key[1])
        return self._data_set_feeds[key]

    def feeds(self, built: BuiltSession, options: InputOptions) -> Feeds:
        return load_feeds(built.model, specs_from_session(built.session), options)

    def feeds_or_problem(self, built: BuiltSession, options: InputOptions) -> Feeds:
        """:meth:`feeds`, or :class:`UnmadeFeeds` saying why they cannot be made: the checks that
        would run on them end in that error, while a check given its own feeds runs."""
        try:
            return self.feeds(built, options)
        except InputsError as exc:
            return UnmadeFeeds(str(exc))
