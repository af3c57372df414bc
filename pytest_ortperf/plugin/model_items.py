"""A folder of models gated without Python: ``ortperf_models`` globs make pytest collect each matching
``*.onnx`` file and model-zoo folder (``model.onnx`` + ``test_data_set_*``) as a file of test items,
one per check and variant: ``models/resnet50.onnx::latency[cpu-all]``, ``::accuracy[cpu-all]``...

Each item builds its session, inputs and ``ort_perf`` object the way the fixtures do
(``plugin/instance_context.py``), from the model's settings in ``pyproject.toml`` or ``ortperf.toml`` tables
(``store/model_tables.py``) instead of markers. Baselines are keyed by the model's path
(``baselines/models/resnet50.onnx.json``), so everything a Python test gets holds for them: routes,
updates, A/B, contracts, reports, ``-k``, ``--deselect``, node ids and xdist.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from pytest_ortperf.errors import OrtperfError, UsageError
from pytest_ortperf.ort.dvc_models import LOCK_FILE, outputs
from pytest_ortperf.ort.providers import parse_providers
from pytest_ortperf.ort.variants import Variant, parse_opt_levels, parse_precisions, variant_matrix
from pytest_ortperf.plugin import RUN_KEY
from pytest_ortperf.plugin.configure import input_options, parsed_option, settings_for
from pytest_ortperf.plugin.instance_context import InstanceSpec, guarded, make_ort_perf
from pytest_ortperf.plugin.options import ModelGlob
from pytest_ortperf.store.model_tables import (
    ModelSettings,
    ModelTable,
    ortperf_files,
    read_tables,
)
from pytest_ortperf.store.model_tables import settings_for as table_settings
from pytest_ortperf.values import safe_repr

CONTRACTS = "contracts"
GENERATION = "generation"  # the kind a model that reads as a decoder is collected with besides the run's
ZOO_MODEL = "model.onnx"
MODELS_KEY = pytest.StashKey["ModelCollection"]()


@dataclass
class ModelCollection:
    """The models a run collects as tests: what the globs found, and their settings tables.
    ``unmatched``: a line per glob that matched no model file, and per model DVC keeps that is not
    pulled (see :meth:`find`)."""

    rootdir: Path
    models: set[Path] = field(default_factory=set)
    pyproject: Path | None = None
    unmatched: list[str] = field(default_factory=list)
    kinds: tuple[str, ...] = ()  # the run's check kinds: each a model-table key of its call's keywords
    defaults: tuple[str, ...] = ()  # the kinds a run whose ortperf_checks is not set runs
    _tables: list[ModelTable] | None = None

    @classmethod
    def find(
        cls,
        globs: Iterable[ModelGlob],
        *,
        rootdir: Path,
        pyproject: Path | None,
        kinds: Sequence[str] = (),
        defaults: Sequence[str] = (),
    ) -> ModelCollection:
        """The ``*.onnx`` files and model-zoo folders the globs match, each glob relative to its base;
        a glob that matches none of them is named in ``unmatched``, with what it did match."""
        found: set[Path] = set()
        unmatched = []
        for glob in globs:
            try:
                matched = sorted(glob.base.glob(glob.pattern))
            except (ValueError, NotImplementedError) as exc:  # absolute, empty or '..' patterns
                raise UsageError(
                    f"ortperf_models: cannot use the glob {glob.pattern!r} ({exc}); write it relative to "
                    "the ini file (or, for --ortperf-models, to where pytest runs), e.g. models/*.onnx."
                ) from None
            models = [model for model in map(_model_of, matched) if model is not None]
            found.update(models)
            unpulled = _unpulled(glob)
            if not models and not unpulled:
                unmatched.append(_unmatched(glob, matched))
            unmatched += unpulled
        return cls(rootdir, found, pyproject, unmatched, tuple(kinds), tuple(defaults))

    def collects(self, path: Path) -> bool:
        return path.resolve() in self.models

    def settings(self, model: Path) -> ModelSettings:
        if self._tables is None:
            files = ortperf_files(self.models, rootdir=self.rootdir)
            self._tables = read_tables(self.pyproject, files, rootdir=self.rootdir, kinds=self.kinds)
        return table_settings(model, self._tables)


def _model_of(path: Path) -> Path | None:
    """The model a matched path stands for: a ``*.onnx`` file, or a model-zoo folder's ``model.onnx``."""
    if path.is_file() and path.suffix == ".onnx":
        return path.resolve()
    if path.is_dir() and (path / ZOO_MODEL).is_file():
        return (path / ZOO_MODEL).resolve()
    return None


def _unpulled(glob: ModelGlob) -> list[str]:
    """A line per model the glob names through a DVC pointer (``model.onnx.dvc``, or an output of the
    ``dvc.lock`` beside the globs) that is not in the work tree: never a model left out in silence."""
    try:
        pointers = sorted(glob.base.glob(glob.pattern + ".dvc"))
    except (ValueError, NotImplementedError):
        return []
    kept = [(pointer.with_suffix(""), pointer.name) for pointer in pointers]
    # A pipeline's outputs (dvc.lock at the base, as dvc repro writes it) that the glob names.
    try:
        lock = (glob.base / LOCK_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        lock = ""
    pattern = PurePosixPath(glob.pattern)
    kept += [
        (glob.base / path, LOCK_FILE)
        for path, _ in outputs(lock)
        if PurePosixPath(path).match(glob.pattern) and len(PurePosixPath(path).parts) == len(pattern.parts)
    ]
    return [
        f"{glob.source}: {model.relative_to(glob.base).as_posix()} is kept in DVC ({pointer}) and is "
        "not in the work tree: run dvc pull (pip install 'pytest-ortperf[dvc]' brings DVC)."
        for model, pointer in kept
        if not model.exists()
    ]


def _unmatched(glob: ModelGlob, matched: Sequence[Path]) -> str:
    what = "nothing"
    if matched:
        what = f"{len(matched)} path(s), none a *.onnx file or a folder holding {ZOO_MODEL}"
        what += f" (e.g. {matched[0].name})"
    return (
        f"{glob.source}: the glob {glob.pattern!r} matches no model file under {glob.base} (it matches "
        f"{what}); fix or remove it."
    )


def model_patterns(config: pytest.Config) -> tuple[tuple[ModelGlob, ...], bool]:
    """The model globs of ``--ortperf-models`` (relative to where pytest runs) or of the ini key
    ``ortperf_models`` (relative to the ini file), parsed by the option table, and whether the
    command line named any."""
    globs, source = parsed_option(config, "ortperf_models")
    return globs, source.command_line


class ModelFile(pytest.File):
    """A model file (or a model-zoo folder's ``model.onnx``) collected as tests."""

    def collect(self) -> Iterator[pytest.Item]:
        run = self.config.stash[RUN_KEY]
        settings = self.config.stash[MODELS_KEY].settings(self.path)
        problem = "\n".join(settings.problems)
        try:
            variants = _variants(run.config.variants, settings)
        except OrtperfError as exc:
            problem = problem or str(exc)
            variants = run.config.variants
        collection = self.config.stash[MODELS_KEY]
        try:
            kinds = _kinds(run.config.checks, settings, collection, self.path)
        except OrtperfError as exc:
            problem = problem or str(exc)
            kinds = list(run.config.checks)
        if CONTRACTS in settings.values or run.config.contracts:
            kinds.append(CONTRACTS)
        skip = settings.values.get("skip")
        reason = skip if isinstance(skip, str) else f"skipped by {settings.origin('skip')}"
        for variant in variants:
            for kind in kinds:
                item = ModelItem.from_parent(
                    self,
                    name=f"{kind}[{variant.id}]",
                    kind=kind,
                    variant=variant,
                    settings=settings,
                    problem=problem,
                )
                if skip:
                    item.add_marker(pytest.mark.skip(reason=reason))
                yield item


class ModelItem(pytest.Item):
    """One check of one model at one variant."""

    def __init__(
        self, *, kind: str, variant: Variant, settings: ModelSettings, problem: str = "", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.kind, self.variant, self.model_settings, self.problem = kind, variant, settings, problem
        self.keywords[variant.id] = True  # -k cpu-all, as for a parametrized test

    def runtest(self) -> None:
        __tracebackhide__ = True
        if self.problem:
            pytest.fail(self.problem, pytrace=False)
        values = self.model_settings.values
        run = self.config.stash[RUN_KEY]
        variant = guarded(lambda: run.sessions.require_available(self.variant))
        path = self.path
        model = guarded(lambda: run.models.model(path, test_dir=path.parent, origin=self.nodeid))
        origin = self.model_settings.origin
        settings = guarded(
            lambda: settings_for(
                run.config.settings, _as_marker(values, "settings", origin), origin=origin("settings")
            )
        )
        input_kwargs = {key: values[key] for key in ("shapes", "dims", "int_range", "seed") if key in values}
        inputs_origin = " / ".join(origin(key) for key in input_kwargs) or self.nodeid
        origins = {key: origin(key) for key in input_kwargs}
        options = guarded(
            lambda: input_options(
                run.config.inputs, _input_values(input_kwargs), origin=inputs_origin, origins=origins
            )
        )
        # the model this variant's precision runs (at fp32, the file itself)
        model = guarded(lambda: run.models.precision_model(model, variant, settings, options=options))
        built = guarded(lambda: run.sessions.session(model, variant, settings))
        # Feeds that cannot be made: its checks fail, reported.
        feeds = guarded(lambda: run.models.feeds_or_problem(built, options))
        spec = InstanceSpec(
            test_dir=path.parent,
            options=options,
            thresholds=guarded(lambda: _as_marker(values, "thresholds", origin)),
            thresholds_origin=origin("thresholds"),
            expect=guarded(lambda: _as_marker(values, CONTRACTS, origin)),
            expect_origin=origin(CONTRACTS),
        )
        perf = make_ort_perf(self, run, built, feeds, None, spec)
        if self.kind == CONTRACTS:
            perf.check_contracts()
        else:  # a check kind of the run's registry: check_latency(), ... check_<registered kind>()
            ((_, keywords),) = guarded(lambda: _as_marker(values, self.kind, origin)) or [((), {})]
            call = getattr(perf, f"check_{self.kind}")
            guarded(lambda: _takes(call, keywords, origin(self.kind)))
            call(**keywords)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


def _as_marker(
    values: Mapping[str, Any], key: str, origin: Callable[[str], str]
) -> list[tuple[Sequence[Any], Mapping[str, Any]]]:
    """A table's value as the keyword arguments of the marker it stands for (none when absent)."""
    if key not in values:
        return []
    value = values[key]
    if not isinstance(value, Mapping):
        raise UsageError(f"{origin(key)}: must be a table of keywords, got {safe_repr(value)}.")
    return [((), dict(value))]


def _takes(call: Callable[..., object], keywords: Mapping[str, Any], where: str) -> None:
    """A UsageError naming ``where`` (the model table's key) when ``call`` takes none of some of
    ``keywords``; a call that takes any keyword (a registered kind's) is left to its check."""
    parameters = inspect.signature(call).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    taken = [
        name for name, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY and name != "name"
    ]
    unknown = sorted(set(keywords) - set(taken))
    if unknown:
        raise UsageError(
            f"{where}: unknown keyword(s) {', '.join(unknown)}; it takes {', '.join(taken) or 'none'}."
        )


def _kinds(
    run_checks: Sequence[str], settings: ModelSettings, collection: ModelCollection, model: Path
) -> list[str]:
    """The kinds a model is collected with: its table's ``checks`` (kinds of the run, by name), else
    the run's checks, and, where those are the default ones (``ortperf_checks`` not set),
    ``generation`` beside them for a model that reads as a decoder."""
    values, where, known = settings.values, settings.origin("checks"), collection.kinds
    if "checks" in values:
        given = values["checks"]
        names = [given] if isinstance(given, str) else given
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise UsageError(
                f'{where}: expected a list of check kinds such as ["latency", "generation"], '
                f"got {safe_repr(given)}."
            )
        unknown = [name for name in names if name not in known]
        if unknown:
            raise UsageError(
                f"{where}: unknown check kind(s) {', '.join(map(repr, unknown))}; the run's "
                f"kinds are {', '.join(known)}."
            )
        return list(dict.fromkeys(names))
    kinds = list(run_checks)
    chosen = tuple(kinds) != collection.defaults  # ortperf_checks names what the run collects
    if GENERATION in known and GENERATION not in kinds and not chosen and _reads_as_decoder(model):
        kinds.append(GENERATION)
    return kinds


def _reads_as_decoder(model: Path) -> bool:
    """Whether ``model`` (a file, or a model-zoo folder's) reads as a decoder (``kinds/generation.py``)."""
    from pytest_ortperf.kinds.generation import reads_as_decoder

    return reads_as_decoder(model / ZOO_MODEL if model.is_dir() else model)


def _input_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """TOML has no tuples: ``int_range = [0, 1000]`` and ``{input = [0, 2]}`` read as ranges."""
    found = dict(values)
    if isinstance(found.get("int_range"), Mapping):
        found["int_range"] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in found["int_range"].items()
        }
    elif isinstance(found.get("int_range"), list):
        found["int_range"] = tuple(found["int_range"])
    return found


def _variants(matrix: Sequence[Variant], settings: ModelSettings) -> tuple[Variant, ...]:
    """The run's matrix, with the providers, levels and precisions a model's table sets instead."""
    values = settings.values
    providers = tuple(dict.fromkeys(v.provider_spec for v in matrix))
    levels = tuple(dict.fromkeys(v.opt_level for v in matrix))
    precisions = tuple(dict.fromkeys(v.precision for v in matrix))
    if "providers" in values:
        providers = parse_providers(
            _names(values, "providers", settings), source=settings.origin("providers")
        )
    if "opt_levels" in values:
        levels = parse_opt_levels(
            _names(values, "opt_levels", settings), source=settings.origin("opt_levels")
        )
    if "precisions" in values:
        precisions = parse_precisions(
            _names(values, "precisions", settings), source=settings.origin("precisions")
        )
    return variant_matrix(providers, levels, precisions)


def _names(values: Mapping[str, Any], key: str, settings: ModelSettings) -> str | list[str]:
    value = values[key]
    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return value
    raise UsageError(
        f'{settings.origin(key)}: expected a list of names such as ["cpu", "cuda"], got {safe_repr(value)}.'
    )
