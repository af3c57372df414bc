"""Baselines on disk: one reviewable JSON file per test file, written atomically.

Layout: ``<baseline dir>/<test file path relative to rootdir>.json``::

    {"schema": 2, "kind": "pytest-ortperf baselines",
     "entries": {"<test name>[<variant>]": {
         "variant": ..., "recorded": ..., "recipe": {...}, "accuracy": {...},
         "figures": {"<machine>": {"recorded": ..., "latency": {...}, "profile": {...},
                                   "measured_on": {...}, "spread": 0.03,
                                   "memory": {...}, "startup": {...}, "graph": {...},
                                   "parts": {"<kind's part>": {...}}}}}}}

One entry per test x variant holds the *recipe* of its reference once (what the
repository controls: model, settings, inputs, runtime, providers; see
:mod:`pytest_ortperf.store.recipe`), the reference outputs of that recipe, and
the *figures* each machine key measured of it. The recipe decides a check's
route on every machine; figures decide only on the machine key that measured them.
Of the figures, latency's are typed here; every other kind's part is kept as the
JSON its kind wrote (:attr:`Figures.parts`) and validated by its kind's decoder
(``decoders``, from the kinds) as a file loads.

Keys are sorted, floats rounded to 6 significant digits and the file ends with
a newline, so re-recording the same numbers gives the same bytes and a pull
request diff shows only what moved. A damaged file is reported with its path
and never overwritten.

Schema 1 (``entries[test][machine] = {variant, recorded, environment, latency?,
accuracy?, profile?}``) still loads: :func:`parse` migrates it (see
:func:`_migrated`), and :meth:`BaselineStore.write` always writes schema 2, so
the next update that writes a file migrates it. A plain run never writes.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pytest_ortperf.errors import BaselineError
from pytest_ortperf.store.outputs import AccuracyRecord
from pytest_ortperf.store.parts import TOP_LEVEL_PARTS
from pytest_ortperf.store.recipe import canonical, same_or_identical, split
from pytest_ortperf.store.salvage import readable_parts

SCHEMA = 2
KIND = "pytest-ortperf baselines"
MIGRATED_SCHEMAS = (1,)  # older schemas parse() still reads, migrating them to SCHEMA

T = TypeVar("T")
# A kind's part decoder (CheckKind.part_decoder): the part's JSON to its typed figures, raising
# KeyError, TypeError or ValueError where it is damaged.
PartDecoder = Callable[[Any], Any]
Decoders = Mapping[str, PartDecoder]  # part name -> decoder: what a load validates each part with


class PartValue(Protocol):
    """A kind's typed part: written as its JSON form."""

    def as_dict(self) -> dict[str, Any]: ...


__all__ = [
    "BaselineEntry",
    "BaselineError",
    "BaselineStore",
    "Figures",
    "parse",
    "parse_with_outputs",
    "render",
    "write_atomically",
]

# What a damaged entry's from_dict raises (and parse() turns into a BaselineError naming the file).
ENTRY_ERRORS = (KeyError, TypeError, ValueError, OverflowError, AttributeError)


class NewerBaselineError(BaselineError):
    """A baseline file written by a newer pytest-ortperf: to upgrade for, not to repair."""


class FiguresError(ValueError):
    """One machine's figures in an entry are damaged: :func:`parse` names the machine."""

    def __init__(self, machine: str, reason: BaseException) -> None:
        super().__init__(f"figures of machine {machine!r}: {reason}")
        self.machine = machine
        self.reason = reason


def repair_hint(path: Path) -> str:
    """What a damaged file's message ends with: it is kept, and the command that records it afresh."""
    return (
        "It is not overwritten: fix it, or record it afresh with --ortperf-update --ortperf-repair "
        f"(which keeps the damaged file as {path.name}.damaged-<time>)."
    )


@dataclass(frozen=True)
class Figures:
    """What one machine key measured of an entry's recipe.

    Every kind's part by its name in :attr:`parts` (``latency``, ``memory``, ``startup``, ``graph``,
    ``threads``...): each check replaces its own part and keeps the others. ``measured_on`` keeps
    the measured-on keys of the environment (CPU, cores, GPU, hardware identity, measurement
    settings): they explain these figures, not the recipe.
    """

    recorded: str
    measured_on: Mapping[str, Any] = field(default_factory=dict)
    # Every kind's part (its CheckKind.part), as the JSON object it wrote: this store keeps them and
    # never interprets one, so re-recording one part keeps every other. A kind reads its own typed
    # (part_as, with its decoder); a load validates those whose decoders it was given.
    parts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def holds(self, part: str) -> bool:
        """Whether these figures hold a kind's ``part``."""
        return part in self.parts

    def part(self, name: str) -> Mapping[str, Any] | None:
        """A kind's own part (:attr:`parts`) as written, or None when these figures hold none."""
        return self.parts.get(name)

    def part_as(self, name: str, decode: Callable[[Any], T]) -> T | None:
        """A kind's own part, typed by its decoder (``MemoryFigures.from_dict``), or None when these
        figures hold none."""
        data = self.parts.get(name)
        return None if data is None else decode(data)

    def with_part(self, name: str, data: Mapping[str, Any] | PartValue | None) -> Figures:
        """These figures with a kind's own part replaced (None: removed), the other parts kept; a
        typed part is kept as its JSON form."""
        parts = {key: value for key, value in self.parts.items() if key != name}
        if data is not None:
            parts[name] = dict(data) if isinstance(data, Mapping) else data.as_dict()
        return replace(self, parts=dict(sorted(parts.items())))

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"recorded": self.recorded, "measured_on": dict(self.measured_on)}
        nested: dict[str, Any] = {}
        for name, value in sorted(self.parts.items()):
            keys = TOP_LEVEL_PARTS.get(name)
            if keys is None:
                nested[name] = dict(value)
            elif keys == (name,):
                data[name] = dict(value)
            else:  # a part whose keys sit at the top level (the latency kind's)
                data.update({key: value[key] for key in keys if key in value})
        if nested:
            data["parts"] = nested
        return data

    @classmethod
    def from_dict(cls, data: Any, decoders: Decoders | None = None) -> Figures:
        """Rebuild from :meth:`as_dict` output; ``KeyError``/``TypeError``/``ValueError`` if damaged,
        a part among them where its kind's decoder (``decoders``: part name -> decoder) refuses it."""
        if not isinstance(data, Mapping):
            raise TypeError(f"figures must be an object, got {type(data).__name__}")
        if not isinstance(data.get("recorded"), str):
            raise TypeError("recorded must be a string")
        measured_on = data.get("measured_on", {})
        if not isinstance(measured_on, Mapping):
            raise TypeError("measured_on must be an object")
        nested = data.get("parts", {})
        if not isinstance(nested, Mapping) or not all(
            isinstance(name, str) and isinstance(value, Mapping) for name, value in nested.items()
        ):
            raise TypeError("parts must be an object of named objects (the parts of registered kinds)")
        parts: dict[str, Any] = {}
        for name, keys in TOP_LEVEL_PARTS.items():
            if keys == (name,):
                if name in data:
                    parts[name] = data[name]
            elif any(key in data for key in keys):
                parts[name] = {key: data[key] for key in keys if key in data}
        parts.update(nested)
        for name, value in parts.items():
            decode = (decoders or {}).get(name)
            if decode is not None:
                decode(value)  # its kind's own validation, with its own words
            if not isinstance(value, Mapping):
                raise TypeError(f"{name} figures must be an object, got {type(value).__name__}")
        if not parts:
            raise KeyError("latency")  # figures hold latency or another kind's part
        figures = cls(
            recorded=data["recorded"],
            measured_on=dict(measured_on),
            parts={str(name): dict(value) for name, value in sorted(parts.items())},
        )
        for key, value in figures.as_dict().items():  # what loads must also be writable again
            _check_writable(value, where=key, depth=3)
        return figures


@dataclass(frozen=True)
class BaselineEntry:
    """One test x variant: the recipe of its reference, its reference outputs, and figures per machine key.

    The accuracy record belongs to the recipe, not to a machine: outputs agree within the
    tolerances on any hardware, so one reference serves them all.
    """

    variant: str
    recorded: str  # when the recipe was (last) recorded
    recipe: Mapping[str, Any] = field(default_factory=dict)
    accuracy: AccuracyRecord | None = None  # reference outputs of the recipe: one per entry, any hardware
    figures: Mapping[str, Figures] = field(default_factory=dict)

    def figures_for(self, machine: str) -> Figures | None:
        return self.figures.get(machine)

    def environment_for(self, machine: str) -> dict[str, Any]:
        """The recipe with that machine's measured_on keys (what store.environment.what_changed compares)."""
        figures = self.figures.get(machine)
        return {**self.recipe, **(figures.measured_on if figures is not None else {})}

    def machines(self, part: str | None = None) -> list[str]:
        """Sorted machine keys with figures; ``part`` ("latency", "memory", a kind's part): only those
        whose figures hold it (:meth:`Figures.holds`)."""
        if part is None:
            return sorted(self.figures)
        return sorted(m for m, f in self.figures.items() if f.holds(part))

    def with_figures(self, machine: str, figures: Figures | None) -> BaselineEntry:
        """Same recipe, that machine's figures replaced (None: removed)."""
        kept = {m: f for m, f in self.figures.items() if m != machine}
        if figures is not None:
            kept[machine] = figures
        return replace(self, figures=kept)

    def with_recipe(self, recipe: Mapping[str, Any], *, recorded: str) -> BaselineEntry:
        """``recipe`` becomes the entry's. When it is not the same recipe as the old one, every
        machine's figures are dropped (they measured the old recipe); the accuracy record is kept
        (the accuracy check judges and re-records it itself). When it is the same recipe: recipe
        replaced (e.g. a newer plugin_version or model label), figures and ``recorded`` kept."""
        if same_or_identical(self.recipe, recipe):
            return replace(self, recipe=dict(recipe))
        return replace(self, recipe=dict(recipe), recorded=recorded, figures={})

    @property
    def empty(self) -> bool:
        """Neither figures nor reference outputs: nothing worth a line in the file (render drops it)."""
        return not self.figures and self.accuracy is None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "variant": self.variant,
            "recorded": self.recorded,
            "recipe": dict(self.recipe),
            "figures": {machine: self.figures[machine].as_dict() for machine in sorted(self.figures)},
        }
        if self.accuracy is not None:
            data["accuracy"] = self.accuracy.as_dict()
        return data

    @classmethod
    def from_dict(cls, data: Any, decoders: Decoders | None = None) -> BaselineEntry:
        """Rebuild from :meth:`as_dict` output; ``KeyError``/``TypeError``/``ValueError`` if damaged,
        :class:`FiguresError` (a ``ValueError``) naming the machine when one machine's figures are
        (their parts validated by ``decoders``: :meth:`Figures.from_dict`)."""
        if not isinstance(data, Mapping):
            raise TypeError(f"an entry must be an object, got {type(data).__name__}")
        for key in ("variant", "recorded"):
            if not isinstance(data.get(key), str):
                raise TypeError(f"{key} must be a string")
        recipe = data.get("recipe")
        if not isinstance(recipe, Mapping):
            raise TypeError("recipe must be an object")
        raw_figures = data.get("figures", {})
        if not isinstance(raw_figures, Mapping):
            raise TypeError("figures must map machines to figures")
        entry = cls(
            variant=data["variant"],
            recorded=data["recorded"],
            recipe=dict(recipe),
            accuracy=AccuracyRecord.from_dict(data["accuracy"]) if "accuracy" in data else None,
        )
        for key, value in entry.as_dict().items():  # what loads must also be writable again
            _check_writable(value, where=key, depth=1)
        figures = {}
        for machine, item in raw_figures.items():
            try:
                figures[str(machine)] = Figures.from_dict(item, decoders)
            except ENTRY_ERRORS as exc:
                raise FiguresError(str(machine), exc) from None
        return replace(entry, figures=figures)


Entries = dict[str, BaselineEntry]  # test name -> entry

# Far deeper than anything the plugin records, far shallower than what exhausts the recursion
# limit in render(): a file that loads must also be writable again.
MAX_DEPTH = 32


def _check_writable(value: Any, *, where: str, depth: int = 0) -> None:
    """Raise ValueError for what render() could not write back: NaN, infinities, deep nesting."""
    if depth > MAX_DEPTH:
        raise ValueError(f"{where} is nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where} must hold finite numbers, got {value}")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_writable(item, where=f"{where}.{key}", depth=depth + 1)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_writable(item, where=f"{where}[{index}]", depth=depth + 1)


def render(entries: Entries) -> str:
    """The file's exact text for ``entries``: deterministic, sorted, rounded. An entry that holds
    neither figures nor reference outputs is left out (like a test whose last entry was removed)."""
    body = {test: entry.as_dict() for test, entry in entries.items() if not entry.empty}
    document = {"schema": SCHEMA, "kind": KIND, "entries": canonical(body)}
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def parse(text: str, *, path: Path, decoders: Decoders | None = None) -> Entries:
    """Parse a baseline file (schema 2, or schema 1 migrated); every problem becomes a
    :class:`BaselineError` naming ``path``. ``decoders``: the kinds' part decoders each machine's
    parts are validated with (a part without one is kept as read)."""
    return parse_with_outputs(text, path=path, decoders=decoders)[0]


def parse_with_outputs(
    text: str, *, path: Path, decoders: Decoders | None = None
) -> tuple[Entries, frozenset[str]]:
    """:func:`parse`, and every reference outputs file (relative to the baseline directory) the
    document names, also those of schema-1 entries its migration drops: a write that no longer
    names one deletes it, so a migrated file leaves no stray ``.npz`` behind."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, huge integers, deep nesting
        raise BaselineError(f"baseline file '{path}' is not valid JSON ({str(exc)[:200]}).") from None
    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise BaselineError(f"baseline file '{path}' is not a pytest-ortperf baseline file.")
    schema = document.get("schema")
    whole = isinstance(schema, int) and not isinstance(schema, bool)
    if not whole or (schema != SCHEMA and schema not in MIGRATED_SCHEMAS):
        if isinstance(schema, int) and whole and schema > SCHEMA:
            raise NewerBaselineError(
                f"baseline file '{path}' has schema {schema!r}; this version reads {SCHEMA} (written by a "
                "newer pytest-ortperf: upgrade it)."
            )
        raise BaselineError(
            f"baseline file '{path}' has schema {schema!r}; this version reads {SCHEMA} "
            f"(and {', '.join(map(str, MIGRATED_SCHEMAS))}, which it migrates)."
        )
    raw = document.get("entries")
    if not isinstance(raw, dict):
        raise BaselineError(f"baseline file '{path}': 'entries' must be an object.")
    if schema == 1:
        return _migrated(raw, path, decoders)
    entries: Entries = {}
    for test, data in raw.items():
        try:
            entries[test] = BaselineEntry.from_dict(data, decoders)
        except FiguresError as exc:
            raise BaselineError(
                f"baseline file '{path}': entry {test!r}, figures of machine {exc.machine!r} are damaged "
                f"({exc.reason})."
            ) from None
        except ENTRY_ERRORS as exc:
            raise BaselineError(f"baseline file '{path}': entry {test!r} is damaged ({exc}).") from None
    named = frozenset(entry.accuracy.file for entry in entries.values() if entry.accuracy is not None)
    return entries, named


# Schema 1 --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _MachineEntry:
    """A schema-1 entry: one test x variant x machine, its figures and outputs under its environment."""

    variant: str
    recorded: str
    environment: Mapping[str, Any]
    latency: Mapping[str, Any] | None  # the latency kind's figures as written (its decoder reads them)
    accuracy: AccuracyRecord | None
    profile: Mapping[str, Any] | None

    @classmethod
    def from_dict(cls, data: Any) -> _MachineEntry:
        """Schema 1's entry, validated as schema 1 validated it (writability included)."""
        if not isinstance(data, Mapping):
            raise TypeError(f"an entry must be an object, got {type(data).__name__}")
        environment = data.get("environment", {})
        if not isinstance(environment, Mapping):
            raise TypeError("environment must be an object")
        for key in ("variant", "recorded"):
            if not isinstance(data.get(key), str):
                raise TypeError(f"{key} must be a string")
        if "latency" not in data and "accuracy" not in data:
            raise KeyError("latency")
        for name in ("latency", "profile"):
            if name in data and not isinstance(data[name], Mapping):
                raise TypeError(f"{name} must be an object, got {type(data[name]).__name__}")
        entry = cls(
            variant=data["variant"],
            recorded=data["recorded"],
            environment=dict(environment),
            latency=dict(data["latency"]) if "latency" in data else None,
            accuracy=AccuracyRecord.from_dict(data["accuracy"]) if "accuracy" in data else None,
            profile=dict(data["profile"]) if "profile" in data else None,
        )
        _check_writable(entry.environment, where="environment", depth=1)
        if entry.accuracy is not None:
            _check_writable(entry.accuracy.as_dict(), where="accuracy", depth=1)
        return entry


def _migrated(
    raw: Mapping[str, Any], path: Path, decoders: Decoders | None = None
) -> tuple[Entries, frozenset[str]]:
    """Schema-1 entries as schema 2. Per test, the recipe is that of the machine entry recorded most
    recently (ties: the last machine key in sorted order): it is the one a re-recording made last.
    Figures are kept for every machine that measured the same recipe (the others measured a recipe
    that is no longer the entry's); the accuracy record is the chosen entry's, else that of the
    first same-recipe machine entry holding one (outputs agree within tolerance on any hardware)."""
    entries: Entries = {}
    named: set[str] = set()
    for test, machines in raw.items():
        if not isinstance(machines, dict):
            raise BaselineError(f"baseline file '{path}': entry {test!r} must map machines to entries.")
        old: dict[str, _MachineEntry] = {}
        for machine, data in machines.items():
            try:
                old[machine] = _MachineEntry.from_dict(data)
            except ENTRY_ERRORS as exc:
                raise BaselineError(
                    f"baseline file '{path}': entry {test!r} for machine {machine!r} is damaged ({exc})."
                ) from None
            record = old[machine].accuracy
            if record is not None:
                named.add(record.file)
        if not old:
            continue
        latest = max(old, key=lambda machine: (old[machine].recorded, machine))
        chosen = old[latest]
        recipe = split(chosen.environment)[0]
        accuracy = chosen.accuracy
        figures: dict[str, Figures] = {}
        for machine in sorted(old):
            entry = old[machine]
            theirs, measured_on = split(entry.environment)
            if machine != latest and not same_or_identical(recipe, theirs):
                continue
            if accuracy is None:
                accuracy = entry.accuracy
            if entry.latency is not None or entry.profile is not None:
                kept = {"latency": entry.latency, "profile": entry.profile}
                written = {key: value for key, value in kept.items() if value is not None}
                try:
                    figures[machine] = Figures.from_dict(
                        {"recorded": entry.recorded, "measured_on": measured_on, **written}, decoders
                    )
                except ENTRY_ERRORS as exc:
                    raise BaselineError(
                        f"baseline file '{path}': entry {test!r} for machine {machine!r} is damaged ({exc})."
                    ) from None
        entries[test] = BaselineEntry(
            variant=chosen.variant,
            recorded=chosen.recorded,
            recipe=recipe,
            accuracy=accuracy,
            figures=figures,
        )
    return entries, frozenset(named)


# Salvage -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lost:
    """A part of a damaged file that a repair cannot keep: an entry (``test``), one machine's figures
    in an entry (``machine`` too), or a stretch with no readable name (``test`` None)."""

    what: str
    test: str | None = None
    machine: str | None = None

    def recorded_by(self, staged: BaselineEntry | None) -> bool:
        """Whether ``staged`` (this run's entry for ``test``) records afresh what was lost: one
        machine's figures, recorded again on that machine. A whole entry never is: what it held
        (other machines' figures, its outputs) cannot be known, so its loss is always named."""
        return staged is not None and self.machine is not None and self.machine in staged.figures

    def named(self, staged: BaselineEntry | None) -> str:
        """How the summary names this loss, given this run's entry for its test."""
        if staged is None or self.machine is not None:
            return self.what
        return f"{self.what}; re-recorded by this run, but what it held before is only in the damaged copy"


@dataclass(frozen=True)
class Salvage:
    """What a repair keeps of a damaged baseline file, and what it cannot."""

    entries: Entries
    named: frozenset[str]  # reference outputs files the kept entries name
    lost: tuple[Lost, ...]


def salvaged(data: bytes, path: Path, decoders: Decoders | None = None) -> Salvage:
    """Every entry of a damaged file that still loads on its own (see :mod:`store.salvage`), and
    what does not: one damaged entry, or one machine's damaged figures, costs only itself."""
    parts = readable_parts(data)
    lost = [Lost(what, test=test) for test, what in parts.unreadable]
    entries: Entries = {}
    for test, raw in parts.entries.items():
        entry, dropped = _salvaged_entry(test, raw, schema=parts.schema, path=path, decoders=decoders)
        lost += dropped
        if entry is not None:
            entries[test] = entry
    named = frozenset(entry.accuracy.file for entry in entries.values() if entry.accuracy is not None)
    return Salvage(entries, named, tuple(lost))


def _salvaged_entry(
    test: str, raw: Any, *, schema: int | None, path: Path, decoders: Decoders | None
) -> tuple[BaselineEntry | None, list[Lost]]:
    """One entry as its schema reads it, less the figures of any machine that are damaged."""
    if schema in MIGRATED_SCHEMAS or (schema is None and not _looks_like_schema_2(raw)):
        try:
            return _migrated({test: raw}, path, decoders)[0].get(test), []
        except BaselineError as exc:
            return None, [Lost(str(exc).removeprefix(f"baseline file '{path}': "), test=test)]
    lost: list[Lost] = []
    while True:
        try:
            return BaselineEntry.from_dict(raw, decoders), lost
        except FiguresError as exc:
            figures = {key: value for key, value in raw["figures"].items() if str(key) != exc.machine}
            raw = {**raw, "figures": figures}
            what = f"entry {test!r}: the figures of machine {exc.machine!r} ({exc.reason})"
            lost.append(Lost(what, test=test, machine=exc.machine))
        except ENTRY_ERRORS as exc:
            return None, [Lost(f"entry {test!r} ({exc})", test=test)]


def _looks_like_schema_2(raw: Any) -> bool:
    return isinstance(raw, Mapping) and "recipe" in raw


# Writing -----------------------------------------------------------------------------------------


def merged(on_disk: BaselineEntry | None, staged: BaselineEntry | None) -> BaselineEntry | None:
    """What a write leaves of ``staged`` over ``on_disk`` (another process may have written it since
    this one read it). Under one recipe the figures of every machine add up: the staged entry's
    replace those of its machines, and nothing removes another machine's. A staged entry of
    another recipe replaces the one on disk (its figures measured the old recipe). ``None``
    removes the entry, and so does a result that holds nothing."""
    if staged is None:
        return None
    result = staged
    if on_disk is not None and same_or_identical(on_disk.recipe, staged.recipe):
        result = replace(
            staged,
            accuracy=staged.accuracy if staged.accuracy is not None else on_disk.accuracy,
            figures={**on_disk.figures, **staged.figures},
        )
    return None if result.empty else result


def _utf8(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BaselineError(f"baseline file '{path}' is not UTF-8 text ({exc}).") from None


def write_atomically(path: Path, text: str | bytes) -> None:
    """Write via a temporary file, fsync and rename: readers see the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(text.encode("utf-8") if isinstance(text, str) else text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp, _mode_for(path))  # mkstemp makes 0600; keep what the repository had
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


@contextlib.contextmanager
def writers_take_turns(path: Path) -> Iterator[None]:
    """Processes that write baseline files of one directory take turns: an exclusive lock on the
    directory itself (``flock``, released when the process dies, even by kill -9), so no lock file
    appears among the baselines. POSIX; elsewhere no lock is taken."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    handle = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # releases the lock


STALE_TEMPORARY_S = 600


def remove_stale_temporaries(path: Path, *, older_than_s: float = STALE_TEMPORARY_S) -> None:
    """Delete ``.<name>.*.tmp`` files that a killed writer left beside ``path`` long ago.

    Matched by prefix and suffix, not glob: test names hold '[' and ']'.
    """
    if not path.parent.is_dir():
        return
    prefix, cutoff = f".{path.name}.", time.time() - older_than_s
    for candidate in path.parent.iterdir():
        name = candidate.name
        if name.startswith(prefix) and name.endswith(".tmp"):
            try:
                if candidate.stat().st_mtime < cutoff:
                    candidate.unlink()
            except OSError:
                continue


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@dataclass(frozen=True)
class Repaired:
    """A damaged file that ``--ortperf-repair`` set aside as ``backup`` and wrote afresh: ``kept``
    entries of it were still readable and are in the new file; ``lost`` names each part that is
    only in ``backup`` (this run did not record it afresh). An outputs archive is one part: 0, ()."""

    path: Path
    backup: Path
    kept: int = 0
    lost: tuple[str, ...] = ()


@dataclass(frozen=True)
class EntryState:
    """One test x variant's entry as a recording check builds on it: ``loaded``, as the run read it
    from its file; ``current``, as the next write would leave it (what other checks of this run
    staged, merged in). A verdict function reads it and returns the entry to stage; the gate stages
    it (``gate/instance_checks.py``)."""

    loaded: BaselineEntry | None = None
    current: BaselineEntry | None = None


def with_part(
    state: EntryState,
    *,
    variant: str,
    machine: str,
    name: str,
    data: Mapping[str, Any],
    environment: Mapping[str, Any],
    today: str,
) -> tuple[Mapping[str, Any] | None, BaselineEntry | None]:
    """The entry with ``data`` as machine key ``machine``'s part ``name`` (a registered kind's own
    part, kept as given), under the entry's recipe, every other part kept: (the part it replaces or
    None, the entry to stage or None). An equal part stands and nothing is to be staged; a changed
    recipe replaces the entry's, dropping the figures measured under the old one."""
    _check_writable(dict(data), where=f"part {name!r}")
    recipe, measured_on = split(environment)
    existing = state.current
    if existing is None:
        figures = Figures(recorded=today, measured_on=measured_on).with_part(name, data)
        entry = BaselineEntry(variant=variant, recorded=today, recipe=recipe)
        return None, entry.with_figures(machine, figures)
    same = same_or_identical(existing.recipe, recipe)
    here = existing.figures_for(machine) if same else None
    before = here.part(name) if here is not None else None
    if before is not None and dict(before) == dict(data):
        return before, None
    base = here if here is not None else Figures(recorded=today, measured_on=measured_on)
    entry = existing.with_recipe(recipe, recorded=today)
    return before, entry.with_figures(machine, base.with_part(name, data))


class BaselineStore:
    """Reads baseline files lazily (once each) and stages changes until :meth:`write`.

    Under ``repair``, a damaged baseline file loads as what can still be read of it
    (:func:`salvaged`), so a repair with a narrowed selection keeps the other tests' entries;
    :meth:`write` sets the damaged file aside, writes what was kept with what this run recorded,
    and names in :attr:`repaired` what is only in the damaged copy.

    ``decoders``: the run's kinds' part decoders (``KindRegistry.part_decoders``), which every
    machine's parts are validated with as a file loads; a part without one is kept as read.
    """

    def __init__(self, root: Path, *, repair: bool = False, decoders: Decoders | None = None) -> None:
        self.root = root
        self._repair = repair
        self._decoders = dict(decoders or {})
        self.repaired: list[Repaired] = []
        self._loaded: dict[Path, Entries] = {}
        self._read: dict[Path, bytes | None] = {}  # the bytes each loaded file had (None: no file)
        self._named: dict[Path, frozenset[str]] = {}  # outputs files each loaded file named
        self._errors: dict[Path, BaselineError] = {}
        self._staged: dict[Path, dict[str, BaselineEntry | None]] = {}
        self._arrays: dict[Path, bytes] = {}
        self._writing: Path | None = None
        self._damaged: set[Path] = set()
        self._lost: dict[Path, tuple[Lost, ...]] = {}  # what each salvaged file could not keep

    def path_for(self, test_file: str) -> Path:
        return self.root / f"{test_file}.json"

    def entries(self, test_file: str) -> Entries:
        """All entries of one test file's baseline file ({} when there is none yet)."""
        return self._entries_at(self.path_for(test_file))

    def _entries_at(self, path: Path) -> Entries:
        if path in self._errors:
            raise self._errors[path]
        if path not in self._loaded:
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                data = None
            except OSError as exc:
                self._errors[path] = BaselineError(f"baseline file '{path}' cannot be read ({exc}).")
                raise self._errors[path] from None
            try:
                self._take(path, data)
            except NewerBaselineError as exc:  # to upgrade for, never to repair (or downgrade)
                self._errors[path] = exc
                raise
            except BaselineError as exc:
                if not self._repair:
                    self._errors[path] = BaselineError(f"{exc} {repair_hint(path)}")
                    raise self._errors[path] from None
                # --ortperf-repair: start this file from what can still be read of it. The damaged
                # file is only set aside by write(), so an xdist worker (which never writes)
                # leaves it for the controller.
                salvage = salvaged(data or b"", path, self._decoders)
                self._damaged.add(path)
                self._lost[path] = salvage.lost
                self._loaded[path], self._named[path], self._read[path] = salvage.entries, salvage.named, None
        return self._loaded[path]

    def recorded_model_blobs(self) -> frozenset[str]:
        """The git object ids every readable baseline file under the root recorded for its models: the
        model's (``model_git_blob``) and, for a model DVC keeps, its pointer's (``model_dvc``); each
        file loaded as :meth:`entries` loads it (once; one that cannot be read is left to the test
        that reads it, which reports it)."""
        blobs: set[str] = set()
        for path in sorted(self.root.rglob("*.json")) if self.root.is_dir() else ():
            try:
                entries = self._entries_at(path)
            except BaselineError:
                continue
            for entry in entries.values():
                pointer = entry.recipe.get("model_dvc")
                for blob in (
                    entry.recipe.get("model_git_blob"),
                    isinstance(pointer, Mapping) and pointer.get("blob"),
                ):
                    if isinstance(blob, str) and blob:
                        blobs.add(blob)
        return frozenset(blobs)

    def _take(self, path: Path, data: bytes | None) -> None:
        """Parse ``data`` (the bytes of ``path``, None: no file) and keep it as what ``path`` holds."""
        entries, named = (
            ({}, frozenset())
            if data is None
            else parse_with_outputs(_utf8(data, path), path=path, decoders=self._decoders)
        )
        self._loaded[path], self._named[path], self._read[path] = entries, named, data

    def _on_disk(self, path: Path) -> Entries:
        """What ``path`` holds now, for a write to merge into: another process may have written
        it since it was loaded (re-read only when its bytes changed). Damaged now: an error, and
        nothing is written over it."""
        self._entries_at(path)  # a file damaged when loaded stays refused (or, repairing, empty)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = None
        if data != self._read[path]:
            try:
                self._take(path, data)
            except NewerBaselineError:
                raise
            except BaselineError as exc:
                raise BaselineError(f"{exc} {repair_hint(path)}") from None
        return self._loaded[path]

    @property
    def repair(self) -> bool:
        """--ortperf-repair: damaged files are recorded afresh, the old ones kept aside."""
        return self._repair

    def mark_damaged(self, path: Path) -> None:
        """A damaged file (baseline or outputs) that write() sets aside before it writes."""
        self._damaged.add(path)

    def damaged(self) -> list[Path]:
        """Damaged files this store treats as empty (--ortperf-repair); write() sets them aside."""
        return sorted(self._damaged)

    def recheck(self, path: Path) -> None:
        """Another process found ``path`` damaged: read it here too, so write() repairs it if it is.
        An outputs archive was already judged by the test that loads it: it is set aside."""
        if path.suffix != ".json":
            if self._repair:
                self.mark_damaged(path)
            return
        with contextlib.suppress(BaselineError):  # without --ortperf-repair its tests report it
            self._entries_at(path)

    def _set_aside_damaged(self) -> None:
        for path in sorted(self._damaged):
            backup = _unused(path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}"))
            try:
                path.replace(backup)
            except FileNotFoundError:
                continue  # already gone: nothing left to keep
            staged = self._staged.get(path, {})
            lost = tuple(
                part.named(staged.get(part.test) if part.test is not None else None)
                for part in self._lost.get(path, ())
                if part.test is None or not part.recorded_by(staged.get(part.test))
            )
            kept = len(self._loaded.get(path, {})) if path in self._lost else 0
            self.repaired.append(Repaired(path, backup, kept=kept, lost=lost))
            if kept:  # written even when this run staged nothing in it: what was kept stays
                self._staged.setdefault(path, {})
        self._damaged.clear()

    def lookup(self, test_file: str, test: str) -> BaselineEntry | None:
        """The entry as loaded (what this run compares with)."""
        return self.entries(test_file).get(test)

    def current(self, test_file: str, test: str) -> BaselineEntry | None:
        """The entry as the next :meth:`write` would leave it (staged if staged, merged into the
        loaded one as write() merges it), else as loaded.

        Latency and accuracy of one test are recorded by separate checks, and several machines'
        figures share an entry; each check builds on this entry so none overwrites another's part.
        """
        return self.state(test_file, test, self.lookup(test_file, test)).current

    def state(self, test_file: str, test: str, loaded: BaselineEntry | None) -> EntryState:
        """The entry as a recording builds on it: ``loaded`` (what :meth:`lookup` gave, read once by
        the caller) and, over it, what this run staged for it (merged as write() merges it)."""
        changes = self._staged.get(self.path_for(test_file), {})
        return EntryState(loaded, merged(loaded, changes[test]) if test in changes else loaded)

    def stage_file(self, relative: str, data: bytes) -> Path:
        """Write ``data`` (reference outputs) at ``root/relative`` at the next :meth:`write`."""
        path = self.root / relative
        self._arrays[path] = data
        return path

    def stage(self, test_file: str, test: str, entry: BaselineEntry | None) -> None:
        """Record (or, with ``None``, remove) an entry at the next :meth:`write`, which merges it
        into what the file holds then (see :func:`merged`). A later stage of one test replaces
        an earlier one: build on :meth:`current`."""
        self.stage_at(self.path_for(test_file), test, entry)

    def stage_part(
        self,
        test_file: str,
        test: str,
        *,
        variant: str,
        machine: str,
        name: str,
        data: Mapping[str, Any],
        environment: Mapping[str, Any],
        today: str,
    ) -> tuple[Mapping[str, Any] | None, bool]:
        """Stage ``data`` as machine key ``machine``'s part ``name`` of the entry (:func:`with_part`, on
        the entry as the next write would leave it): (the part it replaces or None, whether anything
        was staged). A kind's check can instead return :func:`with_part`'s entry in its result's
        ``staged``, which the gate stages."""
        state = self.state(test_file, test, self.lookup(test_file, test))
        before, entry = with_part(
            state,
            variant=variant,
            machine=machine,
            name=name,
            data=data,
            environment=environment,
            today=today,
        )
        if entry is not None:
            self.stage(test_file, test, entry)
        return before, entry is not None

    def stage_at(self, path: Path, test: str, entry: BaselineEntry | None) -> None:
        """Stage by file path (a worker's staged change arriving at the controller)."""
        self._entries_at(path)  # refuse to stage into a damaged file
        self._staged.setdefault(path, {})[test] = entry

    def stage_file_at(self, path: Path, data: bytes) -> None:
        self._arrays[path] = data

    def staged_files(self) -> Iterator[tuple[Path, bytes]]:
        yield from self._arrays.items()

    def staged(self) -> Iterator[tuple[Path, str, BaselineEntry | None]]:
        for path, changes in self._staged.items():
            for test, entry in changes.items():
                yield path, test, entry

    def write(self) -> list[Path]:
        """Apply staged changes file by file; only files whose text changes are rewritten.

        A file that cannot be written raises :class:`BaselineError` naming it; files
        already written stay written (each one atomically).
        """
        try:
            return self._write()
        except OSError as exc:
            where = exc.filename or self.root
            raise BaselineError(f"cannot write baseline file '{where}': {exc.strerror or exc}") from None
        except (ValueError, RecursionError) as exc:  # a value render() cannot write as JSON
            where = self._writing or self.root
            raise BaselineError(f"cannot write baseline file '{where}': {str(exc)[:200]}") from None
        finally:
            self._writing = None

    def _write(self) -> list[Path]:
        written = []
        for path in {*self._arrays, *self._staged}:
            remove_stale_temporaries(path)
        self._set_aside_damaged()
        for path, data in sorted(self._arrays.items()):
            if not path.exists() or path.read_bytes() != data:
                write_atomically(path, data)
                written.append(path)
        self._arrays.clear()
        for path, changes in sorted(self._staged.items()):
            self._writing = path
            # Read, merged and written under one lock: two runners recording into one checkout at once
            # both keep their figures (without it, the second writer replaced the file the first one
            # had written after both had read it).
            with writers_take_turns(path):
                # Merge into what is on disk now, even if this process never read it (xdist controller).
                entries = dict(self._on_disk(path))
                named_before = self._named[path]
                for test, entry in changes.items():
                    result = merged(entries.get(test), entry)
                    if result is None:
                        entries.pop(test, None)
                    else:
                        entries[test] = result
                text = render(entries)
                try:  # what is written must load again: checked before the file is replaced
                    after, named_after = parse_with_outputs(text, path=path, decoders=self._decoders)
                except BaselineError as exc:
                    raise BaselineError(
                        f"cannot write baseline file '{path}': it would not load again ({exc})"
                    ) from None
                data = text.encode("utf-8")
                if data != (path.read_bytes() if path.exists() else None):
                    write_atomically(path, text)
                    written.append(path)
            self._loaded[path], self._named[path], self._read[path] = after, named_after, data
            # Only now that no entry names them: a kill before this leaves files, never a dangling name.
            for orphan in sorted(named_before - named_after):
                (self.root / orphan).unlink(missing_ok=True)
        self._staged.clear()
        return written


def _unused(backup: Path) -> Path:
    """``backup``, or the first ``backup-N`` that does not exist: two repairs within one second never
    overwrite the first one's damaged copy."""
    candidate, number = backup, 1
    while candidate.exists() or candidate.is_symlink():
        candidate, number = backup.with_name(f"{backup.name}-{number}"), number + 1
    return candidate
