"""Baselines on disk: one reviewable JSON file per test file, written atomically.

Layout: ``<baseline dir>/<test file path relative to rootdir>.json``::

    {"schema": 1, "kind": "pytest-ortperf baselines",
     "entries": {"<test name>[<variant>]": {"<machine>": {...entry...}}}}

Keys are sorted, floats rounded to 6 significant digits and the file ends with
a newline, so re-recording the same numbers gives the same bytes and a pull
request diff shows only what moved. A damaged file is reported with its path
and never overwritten.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ortperf.errors import BaselineError
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.profiling.operators import OpProfile
from pytest_ortperf.store.outputs import AccuracyRecord

SCHEMA = 1
KIND = "pytest-ortperf baselines"


__all__ = ["BaselineEntry", "BaselineError", "BaselineStore", "parse", "render", "write_atomically"]


class NewerBaselineError(BaselineError):
    """A baseline file written by a newer pytest-ortperf: to upgrade for, not to repair."""


def repair_hint(path: Path) -> str:
    """What a damaged file's message ends with: it is kept, and the command that records it afresh."""
    return (
        "It is not overwritten: fix it, or record it afresh with --ortperf-update --ortperf-repair "
        f"(which keeps the damaged file as {path.name}.damaged-<time>)."
    )


@dataclass(frozen=True)
class BaselineEntry:
    """One test x variant x machine: its latency and/or reference outputs, and what they depended on."""

    variant: str
    recorded: str
    latency: LatencyStats | None = None
    environment: Mapping[str, Any] = field(default_factory=dict)
    accuracy: AccuracyRecord | None = None
    profile: OpProfile | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "variant": self.variant,
            "recorded": self.recorded,
            "environment": dict(self.environment),
        }
        if self.latency is not None:
            data["latency"] = self.latency.as_dict()
        if self.accuracy is not None:
            data["accuracy"] = self.accuracy.as_dict()
        if self.profile is not None:
            data["profile"] = self.profile.as_dict()
        return data

    @classmethod
    def from_dict(cls, data: Any) -> BaselineEntry:
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
        entry = cls(
            variant=data["variant"],
            recorded=data["recorded"],
            latency=LatencyStats.from_dict(data["latency"]) if "latency" in data else None,
            environment=environment,
            accuracy=AccuracyRecord.from_dict(data["accuracy"]) if "accuracy" in data else None,
            profile=OpProfile.from_dict(data["profile"]) if "profile" in data else None,
        )
        for key, value in entry.as_dict().items():  # what loads must also be writable again
            _check_writable(value, where=key, depth=1)
        return entry


Entries = dict[str, dict[str, BaselineEntry]]

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


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, Mapping):
        return {str(k): _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def render(entries: Entries) -> str:
    """The file's exact text for ``entries``: deterministic, sorted, rounded."""
    body = {
        test: {machine: entry.as_dict() for machine, entry in machines.items()}
        for test, machines in entries.items()
        if machines
    }
    document = {"schema": SCHEMA, "kind": KIND, "entries": _rounded(body)}
    return json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def parse(text: str, *, path: Path) -> Entries:
    """Parse a baseline file; every problem becomes a :class:`BaselineError` naming ``path``."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, huge integers, deep nesting
        raise BaselineError(f"baseline file '{path}' is not valid JSON ({str(exc)[:200]}).") from None
    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise BaselineError(f"baseline file '{path}' is not a pytest-ortperf baseline file.")
    schema = document.get("schema")
    if schema != SCHEMA:
        if isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA:
            raise NewerBaselineError(
                f"baseline file '{path}' has schema {schema!r}; this version reads {SCHEMA} (written by a "
                "newer pytest-ortperf: upgrade it)."
            )
        raise BaselineError(f"baseline file '{path}' has schema {schema!r}; this version reads {SCHEMA}.")
    raw = document.get("entries")
    if not isinstance(raw, dict):
        raise BaselineError(f"baseline file '{path}': 'entries' must be an object.")
    entries: Entries = {}
    for test, machines in raw.items():
        if not isinstance(machines, dict):
            raise BaselineError(f"baseline file '{path}': entry {test!r} must map machines to entries.")
        entries[test] = {}
        for machine, data in machines.items():
            try:
                entries[test][machine] = BaselineEntry.from_dict(data)
            except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as exc:
                raise BaselineError(
                    f"baseline file '{path}': entry {test!r} for machine {machine!r} is damaged ({exc})."
                ) from None
    return entries


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


class BaselineStore:
    """Reads baseline files lazily (once each) and stages changes until :meth:`write`."""

    def __init__(self, root: Path, *, repair: bool = False) -> None:
        self.root = root
        self._repair = repair
        self.repaired: list[tuple[Path, Path]] = []
        self._loaded: dict[Path, Entries] = {}
        self._errors: dict[Path, BaselineError] = {}
        self._staged: dict[Path, dict[tuple[str, str], BaselineEntry | None]] = {}
        self._arrays: dict[Path, bytes] = {}
        self._writing: Path | None = None
        self._damaged: set[Path] = set()

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
                self._loaded[path] = {} if data is None else parse(_utf8(data, path), path=path)
            except BaselineError as exc:
                if not self._repair:
                    newer = isinstance(exc, NewerBaselineError)
                    self._errors[path] = exc if newer else BaselineError(f"{exc} {repair_hint(path)}")
                    raise self._errors[path] from None
                # --ortperf-repair: start this file afresh. The damaged file is only set aside by
                # write(), so an xdist worker (which never writes) leaves it for the controller.
                self._damaged.add(path)
                self._loaded[path] = {}
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
            backup = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
            try:
                path.replace(backup)
            except FileNotFoundError:
                continue  # already gone: nothing left to keep
            self.repaired.append((path, backup))
        self._damaged.clear()

    def lookup(self, test_file: str, test: str, machine: str) -> BaselineEntry | None:
        return self.entries(test_file).get(test, {}).get(machine)

    def machines_for(self, test_file: str, test: str, *, part: str | None = None) -> list[str]:
        """Machines with an entry for ``test``; with ``part``, only those whose entry holds that part."""
        machines = self.entries(test_file).get(test, {})
        return sorted(m for m, entry in machines.items() if part is None or getattr(entry, part) is not None)

    def current(self, test_file: str, test: str, machine: str) -> BaselineEntry | None:
        """The entry as the next :meth:`write` would leave it: staged if staged, else as loaded.

        Latency and accuracy of one test are recorded by separate checks; each merges
        its part into this entry so neither overwrites the other.
        """
        changes = self._staged.get(self.path_for(test_file), {})
        if (test, machine) in changes:
            return changes[(test, machine)]
        return self.lookup(test_file, test, machine)

    def stage_file(self, relative: str, data: bytes) -> Path:
        """Write ``data`` (reference outputs) at ``root/relative`` at the next :meth:`write`."""
        path = self.root / relative
        self._arrays[path] = data
        return path

    def stage(self, test_file: str, test: str, machine: str, entry: BaselineEntry | None) -> None:
        """Record (or, with ``None``, remove) an entry at the next :meth:`write`."""
        self.entries(test_file)  # refuse to stage into a damaged file
        self._staged.setdefault(self.path_for(test_file), {})[(test, machine)] = entry

    def stage_at(self, path: Path, test: str, machine: str, entry: BaselineEntry | None) -> None:
        """Stage by file path (a worker's staged change arriving at the controller)."""
        self._entries_at(path)  # refuse to stage into a damaged file
        self._staged.setdefault(path, {})[(test, machine)] = entry

    def stage_file_at(self, path: Path, data: bytes) -> None:
        self._arrays[path] = data

    def staged_files(self) -> Iterator[tuple[Path, bytes]]:
        yield from self._arrays.items()

    def staged(self) -> Iterator[tuple[Path, str, str, BaselineEntry | None]]:
        for path, changes in self._staged.items():
            for (test, machine), entry in changes.items():
                yield path, test, machine, entry

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
            # Merge into what is on disk now, even if this process never read the file (xdist controller).
            entries = {test: dict(machines) for test, machines in self._entries_at(path).items()}
            orphans = []
            for (test, machine), entry in changes.items():
                if entry is None:
                    removed = entries.get(test, {}).pop(machine, None)
                    if removed is not None and removed.accuracy is not None:
                        orphans.append(self.root / removed.accuracy.file)
                else:
                    entries.setdefault(test, {})[machine] = entry
            text = render(entries)
            old = path.read_text(encoding="utf-8") if path.exists() else None
            if text != old:
                write_atomically(path, text)
                written.append(path)
            # Only now that no entry names them: a kill before this leaves files, never a dangling name.
            for orphan in orphans:
                orphan.unlink(missing_ok=True)
            self._loaded[path] = parse(text, path=path)
        self._staged.clear()
        return written
