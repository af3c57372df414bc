"""Per-model settings without Python: ``[tool.ortperf.models."GLOB"]`` tables of ``pyproject.toml`` and
``[models."GLOB"]`` tables of an ``ortperf.toml`` beside the models.

A table applies to the model files (and model-zoo folders) its glob matches, relative to the file
that holds it. Every table that matches a model applies, the least specific first: a table of an
``ortperf.toml`` beats one of ``pyproject.toml``, a nearer ``ortperf.toml`` beats a farther one, and
within one file a glob with more literal characters beats a looser one. A later table's key replaces
an earlier one's.

Unknown keys are found when a file is read, and the tables that hold them fail the models they
match, naming the file, the table and the key; values are checked by the parsers that read them
(the pytest layer), with the same names. A file that is not TOML fails every model it would have
configured. Plain logic: no pytest here.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

# What a model table takes, and what each is read as (docs/models.md).
KEYS = (
    "shapes",  # {"x": [1, 3, 640, 640]}: whole shapes of synthetic inputs, named dims or not
    "dims",  # {"batch": 1}: sizes of symbolic dims of synthetic inputs
    "int_range",  # [0, 1000], or {input: [low, high]}
    "seed",  # synthetic inputs' seed
    "thresholds",  # ort_thresholds(...) keywords
    "settings",  # ort_settings(...) keywords
    "precisions",  # ["fp32", "int8-dynamic"]
    "opt_levels",  # ["disabled", "all"]
    "providers",  # ["cpu", "cuda"]
    "contracts",  # {"faster_than": {...}, "agreement": {...}}, as ort_expect takes them
    "skip",  # true, or the reason
    "checks",  # ["latency", "generation"]: the kinds of check this model is collected with
)
# Besides these, a table takes one key per check kind of the run, named as the kind: the keywords its
# ``ort_perf.check_<kind>()`` call is made with (``generation = {prompt_length = 64}``).
ORTPERF_TOML = "ortperf.toml"


@dataclass(frozen=True)
class ModelTable:
    """One table: its glob, the folder the glob is relative to, where it is written, and its keys."""

    glob: str
    base: Path
    where: str  # 'pyproject.toml [tool.ortperf.models."models/*.onnx"]'
    values: Mapping[str, Any]
    rank: tuple[int, int, int]  # (file rank, folder depth, literal characters): higher is more specific
    problem: str = ""  # an unknown key: the table fails the models it matches

    def matches(self, model: Path) -> bool:
        """Whether the glob matches ``model`` (a file, or a model-zoo folder's ``model.onnx``)."""
        for candidate in (model, model.parent) if model.name == "model.onnx" else (model,):
            try:
                relative = PurePosixPath(candidate.resolve().relative_to(self.base.resolve()).as_posix())
            except ValueError:
                continue
            if fnmatch.fnmatch(str(relative), self.glob) or _path_match(relative, self.glob):
                return True
        return False


@dataclass(frozen=True)
class ModelSettings:
    """The merged settings of one model, with where each key came from."""

    values: Mapping[str, Any] = field(default_factory=dict)
    origins: Mapping[str, str] = field(default_factory=dict)  # key -> 'pyproject.toml [...] key'
    problems: tuple[str, ...] = ()

    def origin(self, key: str) -> str:
        return self.origins.get(key, "")


def read_tables(
    pyproject: Path | None, ortperf_files: Iterable[Path], *, rootdir: Path, kinds: Sequence[str] = ()
) -> list[ModelTable]:
    """Every model table of ``pyproject`` (its ``[tool.ortperf.models]``) and of the ``ortperf.toml``
    files (their ``[models]``); ``kinds``: the run's check kinds, each a key too. A file that cannot
    be read gives one table matching everything beside it, which carries the problem."""
    keys = (*KEYS, *(kind for kind in kinds if kind not in KEYS))
    tables: list[ModelTable] = []
    if pyproject is not None and pyproject.is_file():
        tables += _tables_of(
            pyproject, ("tool", "ortperf", "models"), file_rank=0, rootdir=rootdir, known=keys
        )
    for path in ortperf_files:
        tables += _tables_of(path, ("models",), file_rank=1, rootdir=rootdir, known=keys)
    return tables


def ortperf_files(models: Iterable[Path], *, rootdir: Path) -> list[Path]:
    """The ``ortperf.toml`` files in the folders of ``models`` and their parents up to ``rootdir``."""
    found: set[Path] = set()
    root = rootdir.resolve()
    for model in models:
        folder = model.resolve().parent
        while True:
            candidate = folder / ORTPERF_TOML
            if candidate.is_file():
                found.add(candidate)
            if folder == root or root not in folder.parents:
                break
            folder = folder.parent
    return sorted(found)


def settings_for(model: Path, tables: Sequence[ModelTable]) -> ModelSettings:
    """The settings of ``model``: every matching table, least specific first, later keys winning."""
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    problems: list[str] = []
    for table in sorted((t for t in tables if t.matches(model)), key=lambda t: t.rank):
        if table.problem:
            problems.append(table.problem)
            continue
        for key, value in table.values.items():
            values[key] = value
            origins[key] = f"{table.where} {key}"
    return ModelSettings(values, origins, tuple(problems))


def _tables_of(
    path: Path, keys: tuple[str, ...], *, file_rank: int, rootdir: Path, known: Sequence[str] = KEYS
) -> list[ModelTable]:
    depth = len(path.resolve().relative_to(rootdir.resolve()).parts) if _under(path, rootdir) else 0
    label = _label(path, rootdir)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        problem = f"{label}: not a readable TOML file ({exc})."
        return [ModelTable("**", path.parent, label, {}, (file_rank, depth, 0), problem)]
    section: Any = document
    for key in keys:
        section = section.get(key, {}) if isinstance(section, Mapping) else {}
    dotted = ".".join(keys)
    if not isinstance(section, Mapping):
        problem = f"{label}: [{dotted}] must be a table of model globs, got {type(section).__name__}."
        return [ModelTable("**", path.parent, label, {}, (file_rank, depth, 0), problem)]
    tables = []
    for glob, values in section.items():
        where = f'{label} [{dotted}."{glob}"]'
        rank = (file_rank, depth, sum(1 for c in str(glob) if c not in "*?[]"))
        problem = ""
        if not str(glob).strip():
            problem = f'{where}: the glob is empty; name the models it is for, such as "models/*.onnx".'
            values = {}
        elif not isinstance(values, Mapping):
            problem = f"{where}: must be a table of settings ({', '.join(known)}), got {values!r}."
            values = {}
        else:
            unknown = sorted(str(k) for k in values if k not in known)
            if unknown:
                problem = (
                    f"{where}: unknown key(s) {', '.join(unknown)}; a model table takes {', '.join(known)}."
                )
        # an empty glob matches no model by name: its problem goes to every model the file configures
        pattern = str(glob) if str(glob).strip() else "**"
        tables.append(ModelTable(pattern, path.parent, where, dict(values), rank, problem))
    return tables


def _path_match(relative: PurePosixPath, glob: str) -> bool:
    """pathlib's right-anchored match (``*.onnx`` matches in any folder); a glob it cannot read
    (empty, a lone separator) matches nothing."""
    try:
        return relative.match(glob)
    except ValueError:
        return False


def _under(path: Path, rootdir: Path) -> bool:
    try:
        path.resolve().relative_to(rootdir.resolve())
    except ValueError:
        return False
    return True


def _label(path: Path, rootdir: Path) -> str:
    return path.resolve().relative_to(rootdir.resolve()).as_posix() if _under(path, rootdir) else str(path)
