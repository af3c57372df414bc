"""What can still be read of a damaged baseline file, entry by entry.

``--ortperf-repair`` records a damaged file afresh. A repair whose selection is narrowed
(``ortperf update --ortperf-repair -k iris``) records only the selected tests, so starting the file
from nothing would drop every other test's entry into the ``.damaged-<time>`` copy without a word.
Instead the repair keeps what it can still read, and names the rest.

Two ways in, from the most structure to the least:

- the file is JSON and its ``entries`` an object: each entry is taken on its own (one entry that
  does not load costs only itself);
- the file is not JSON (a stray character, a half-written tail, merge-conflict markers): the text
  is cut where :func:`pytest_ortperf.store.baselines.render` puts entries, one per block that opens
  with ``  "<test>": {`` and closes with ``  }`` at two spaces of indentation, and each block is read
  on its own. A hand-formatted file that does not follow that layout yields no block: nothing
  is kept, and the repair says so.

This module reads JSON only; what a readable entry means (its schema) is decided by the
caller (``store/baselines.py``), which names every entry it could not load.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# What render() writes: json.dumps(indent=1, sort_keys=True), so an entry opens at two spaces.
_ENTRY_OPENS = re.compile(r'^  ("(?:[^"\\]|\\.)*"): \{$')
_ENTRY_CLOSES = re.compile(r"^  \},?$")
_SCHEMA_LINE = re.compile(r'^ "schema": (\d+),?$')


@dataclass(frozen=True)
class Readable:
    """A damaged file's parts: each entry that is still JSON, and what cannot be read.

    ``schema`` is None when the file does not say it readably; ``unreadable`` holds, for each entry
    that is not JSON, its name (None for a stretch of lines where no name can be read) and a
    description that says why.
    """

    schema: int | None
    entries: dict[str, Any]
    unreadable: tuple[tuple[str | None, str], ...]


def readable_parts(data: bytes) -> Readable:
    """The parts of a damaged baseline file's bytes that can still be read; never raises."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # not UTF-8, not JSON, huge integers, deep nesting
        return _blocks(data)
    if not isinstance(document, dict) or not isinstance(document.get("entries"), dict):
        return Readable(None, {}, ((None, "the whole file (it holds no 'entries' object)"),))
    schema = document.get("schema")
    known = schema if isinstance(schema, int) and not isinstance(schema, bool) else None
    return Readable(known, dict(document["entries"]), ())


def _blocks(data: bytes) -> Readable:
    """Entries read block by block from a file that is not JSON as a whole."""
    lines = [_line(raw) for raw in data.split(b"\n")]
    schema = None
    for line in lines:
        match = _SCHEMA_LINE.match(line or "")
        if match:
            schema = int(match.group(1))
    entries: dict[str, Any] = {}
    unreadable: list[tuple[str | None, str]] = []
    twice: set[str] = set()
    damaged: set[str] = set()

    def lost(name: str, why: str) -> None:
        damaged.add(name)
        unreadable.append((name, f"entry {name!r} ({why})"))

    start: int | None = None  # index of the open entry's first line
    boundary = -1  # index of the last line that opened or closed an entry
    name = ""
    for index, line in enumerate(lines):
        text = line or ""
        opens = _ENTRY_OPENS.match(text)
        if opens:
            if start is not None:  # the open entry never closed: the damage is in it
                lost(name, f"it does not close before line {index + 1}")
            start, boundary, name = index, index, _name(opens.group(1))
            continue
        if not _ENTRY_CLOSES.match(text):
            continue
        if start is None:  # a block whose opening line is damaged: its name cannot be read
            unreadable.append((None, f"lines {boundary + 2}-{index + 1} (no entry name can be read there)"))
            boundary = index
            continue
        boundary = index
        block, first = lines[start + 1 : index], start
        start = None
        if any(part is None for part in block):
            lost(name, "it is not UTF-8 text")
            continue
        try:
            value = json.loads("{" + "\n".join(part or "" for part in block) + "}")
        except json.JSONDecodeError as exc:  # its line in the file: the block's first line is start + 2
            lost(name, f"not JSON at line {first + 1 + exc.lineno}: {exc.msg}")
            continue
        except (ValueError, RecursionError) as exc:
            lost(name, f"not JSON: {str(exc)[:120]}")
            continue
        if name in entries:
            twice.add(name)
        entries[name] = value
    if start is not None:
        lost(name, "the file ends inside it")
    for name in sorted(twice | (damaged & entries.keys())):
        # e.g. both sides of a merge conflict: neither is known to be the right one
        del entries[name]
        unreadable.append((name, f"entry {name!r} (it appears more than once)"))
    if not entries and not unreadable:
        unreadable.append((None, "the whole file (no entry can be read in it)"))
    return Readable(schema, entries, tuple(unreadable))


def _line(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8").removesuffix("\r")
    except UnicodeDecodeError:
        return None


def _name(quoted: str) -> str:
    """An entry's name from its JSON string; a damaged escape leaves it as written."""
    try:
        name = json.loads(quoted)
    except ValueError:
        return quoted[1:-1]
    return name if isinstance(name, str) else quoted[1:-1]
