"""``ortperf merge``: baseline directories recorded on several runners, merged into one.

CI runners of different machine classes each record their own figures (``ortperf
update`` there, the baseline directory uploaded as an artifact). An entry holds
one recipe per test x variant and the figures each machine key measured of it,
so merging them into the repository's directory combines, per entry, the
figures of every machine under the recipe they share: for each machine key (and
for the reference outputs) the part some source changed is taken, and a source
holding the same part as the target is only an unchanged copy. Two sources that
changed one machine's figures differently are a conflict: reported, never
resolved by picking one, and the target keeps its own.

A recipe is never merged: a source whose entry has another recipe than the
target's (or, for an entry the target lacks, than another source's) is a
conflict naming what differs, and the entry stays as the target has it. Merging
is additive (an entry or a machine missing from a source is not a deletion:
``--ortperf-prune`` removes entries) and deterministic (files are rendered like
every baseline file, whatever the order of the sources).

Every input is read before anything is written: a damaged file, or an entry
whose reference outputs (``.npz``) are missing from its source, stops the merge
naming the file, and nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pytest_ortperf.errors import BaselineError
from pytest_ortperf.store.baselines import (
    BaselineEntry,
    Decoders,
    Entries,
    Figures,
    parse_with_outputs,
    render,
    write_atomically,
)
from pytest_ortperf.store.environment import what_changed
from pytest_ortperf.store.outputs import AccuracyRecord
from pytest_ortperf.store.recipe import CONTROLLED, canonical, same_or_identical

SUFFIX = ".json"
RESOLVE = "merge the one you want alone, or re-record it"


@dataclass
class MergeReport:
    """What a merge did: entries taken, files written, conflicts left for a person to settle."""

    taken: int = 0  # entries new or changed in the target
    unchanged: int = 0  # entries every source that holds them has as the target does
    written: list[Path] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Offer:
    """One source's entry for a test, with where it came from."""

    source: Path
    entry: BaselineEntry


@dataclass
class _Outcome:
    """What merging one entry gave: the target's new entry (None: left as it is), conflicts, and
    the reference outputs to copy: (source directory, file relative to it and to the target)."""

    entry: BaselineEntry | None = None
    conflicts: list[str] = field(default_factory=list)
    copies: list[tuple[Path, str]] = field(default_factory=list)


def merge(sources: Sequence[Path], into: Path, *, decoders: Decoders | None = None) -> MergeReport:
    """Merge the baseline directories ``sources`` into the directory ``into`` (which may not exist);
    ``decoders``: the kinds' part decoders, which every file's parts are validated with as it is read
    (a part without one is merged as stored)."""
    for source in sources:
        if not source.is_dir():
            raise BaselineError(f"ortperf merge: '{source}' is not a directory.")
    names = sorted({path.relative_to(source) for source in sources for path in _baseline_files(source)})
    report = MergeReport()
    planned: dict[Path, str] = {}
    outputs: dict[Path, Path] = {}  # target file -> source file
    stale: set[Path] = set()  # target outputs no entry names once the planned files are written
    for name in names:
        path = into / name
        target, named = _read(path, decoders) if path.is_file() else ({}, frozenset())
        offers: dict[str, list[_Offer]] = {}
        for source in sources:
            if (source / name).is_file():
                for test, entry in _read(source / name, decoders)[0].items():
                    offers.setdefault(test, []).append(_Offer(source, entry))
        merged = dict(target)
        taken = report.taken
        for test, offered in sorted(offers.items()):
            outcome = _merge_entry(path, test, target.get(test), offered)
            report.conflicts += outcome.conflicts
            for source, file in outcome.copies:
                if not (source / file).is_file():
                    raise BaselineError(
                        f"ortperf merge: {source / name}: the entry {test} names reference outputs "
                        f"'{source / file}', which are missing; nothing was written."
                    )
                outputs[into / file] = source / file
            if outcome.entry is not None:
                merged[test] = outcome.entry
                report.taken += 1
            elif not outcome.conflicts:
                report.unchanged += 1
        if report.taken > taken:  # a file nothing was taken into keeps its bytes
            planned[path] = render(merged)
            kept = {entry.accuracy.file for entry in merged.values() if entry.accuracy is not None}
            stale |= {into / file for file in named - kept}
    contents = {target_file: source_file.read_bytes() for target_file, source_file in sorted(outputs.items())}
    for path, data in contents.items():
        if not path.is_file() or path.read_bytes() != data:
            write_atomically(path, data)
            report.written.append(path)
    for path, text in sorted(planned.items()):
        write_atomically(path, text)
        report.written.append(path)
    # Only now that no entry names them (as a baseline write removes the outputs it orphans).
    for path in sorted(stale - set(contents)):
        path.unlink(missing_ok=True)
    return report


def _merge_entry(path: Path, test: str, current: BaselineEntry | None, offers: list[_Offer]) -> _Outcome:
    """One test's entry of the target file ``path``: the target's (``current``, None when it has
    none) and what the sources offer."""
    lead = current if current is not None else _newest(offers).entry
    others = [offer for offer in offers if not same_or_identical(lead.recipe, offer.entry.recipe)]
    if others:
        against = "the target's" if current is not None else f"that of {_newest(offers).source}"
        differences = "; ".join(
            f"{offer.source}: {', '.join(recipe_differences(lead.recipe, offer.entry.recipe))}"
            for offer in sorted(others, key=lambda offer: str(offer.source))
        )
        kept = "the target's entry (settle which recipe is wanted and re-record it)"
        if current is None:
            kept = f"none ({RESOLVE})"
        return _Outcome(
            conflicts=[f"{path}: {test} has another recipe than {against} ({differences}); kept {kept}"]
        )
    outcome = _Outcome()
    accuracy = current.accuracy if current is not None else None
    offered = [(offer, offer.entry.accuracy) for offer in offers if offer.entry.accuracy is not None]
    taken = _changed_part(f"{path}: {test}: reference outputs were", accuracy, offered, outcome)
    if taken is not None:
        source, accuracy = taken
        outcome.copies.append((source, accuracy.file))
    figures = dict(current.figures) if current is not None else {}
    for machine in sorted({machine for offer in offers for machine in offer.entry.figures}):
        what = f"{path}: {test}: figures of machine '{machine}' were"
        mine = [(offer, offer.entry.figures[machine]) for offer in offers if machine in offer.entry.figures]
        changed = _changed_part(what, figures.get(machine), mine, outcome)
        if changed is not None:
            figures[machine] = changed[1]
    if outcome.copies or figures != (current.figures if current is not None else {}):
        outcome.entry = BaselineEntry(
            variant=lead.variant,
            recorded=lead.recorded,
            recipe=lead.recipe,
            accuracy=accuracy,
            figures=figures,
        )
    return outcome


Part = TypeVar("Part", AccuracyRecord, Figures)


def _changed_part(
    what: str, kept: Part | None, offered: Sequence[tuple[_Offer, Part]], outcome: _Outcome
) -> tuple[Path, Part] | None:
    """The one change the sources made to a part of the entry, with the source that made it
    (None: no change, or a conflict, which is added to ``outcome``). Two parts are the same when
    a baseline file writes them alike."""
    before = _text(kept) if kept is not None else None
    changes: dict[str, tuple[Path, Part]] = {}
    for offer, part in offered:
        text = _text(part)
        if text != before:
            changes.setdefault(text, (offer.source, part))
    if len(changes) > 1:
        where = ", ".join(sorted({str(offer.source) for offer, part in offered if _text(part) != before}))
        kept_text = "the target's" if kept is not None else "none"
        outcome.conflicts.append(f"{what} changed differently by {where}; kept {kept_text} ({RESOLVE})")
        return None
    return next(iter(changes.values()), None)


def _text(part: AccuracyRecord | Figures | Mapping[str, Any]) -> str:
    """What a baseline file writes of ``part``: two parts are the same when these are equal."""
    data = part if isinstance(part, Mapping) else part.as_dict()
    return json.dumps(canonical(data), sort_keys=True, ensure_ascii=False)


def _newest(offers: list[_Offer]) -> _Offer:
    """The offer whose recipe leads for an entry the target lacks: the most recently recorded
    (ties broken by content, then source, so the order of the sources never matters)."""
    return max(
        offers,
        key=lambda o: (o.entry.recorded, _text(o.entry.recipe), o.entry.variant, str(o.source)),
    )


def recipe_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two recipes, as reports name it; also what either did not record."""
    changes = what_changed(old, new)
    if old.get("variant") != new.get("variant"):
        changes.append(f"variant {old.get('variant')} -> {new.get('variant')}")
    missing = [key for key in CONTROLLED if key not in old or key not in new]
    if missing:
        changes.append(f"not recorded on both sides: {', '.join(missing)}")
    return changes or ["recipes differ outside the keys reports compare"]


def _baseline_files(directory: Path) -> list[Path]:
    """Baseline files under ``directory``: ``*.json`` outside ``*.outputs`` folders."""
    return sorted(
        path
        for path in directory.rglob(f"*{SUFFIX}")
        if path.is_file() and not any(part.endswith(".outputs") for part in path.relative_to(directory).parts)
    )


def _read(path: Path, decoders: Decoders | None) -> tuple[Entries, frozenset[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"ortperf merge: cannot read '{path}' ({exc}); nothing was written.") from None
    try:
        return parse_with_outputs(text, path=path, decoders=decoders)
    except BaselineError as exc:
        raise BaselineError(f"ortperf merge: {exc} Nothing was written.") from None
