"""``ortperf merge``: baseline directories recorded on several runners, merged into one.

CI runners of different machine classes each record their own entries (``ortperf
update`` there, the baseline directory uploaded as an artifact). Merging them
into the repository's directory takes, for every (test file, test, machine),
the entry some source changed: a source holding the same entry as the target is
only an unchanged copy. Two sources that changed the same entry differently are
a conflict: reported, never resolved by picking one, and the target keeps its
entry. Merging is additive (an entry missing from a source is not a deletion:
``--ortperf-prune`` removes entries) and deterministic (the files are rendered
like every baseline file, whatever the order of the sources).

Every input is read before anything is written: a damaged file, or an entry
whose reference outputs (``.npz``) are missing from its source, stops the merge
naming the file, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ortperf.errors import BaselineError
from pytest_ortperf.store.baselines import BaselineEntry, Entries, parse, render, write_atomically

SUFFIX = ".json"


@dataclass
class MergeReport:
    """What a merge did: entries taken, files written, conflicts left for a person to settle."""

    taken: int = 0  # entries new or changed in the target
    unchanged: int = 0  # entries every source that holds them has as the target does
    written: list[Path] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Offer:
    """One source's entry for a key, with where it came from and its canonical text."""

    source: Path
    entry: BaselineEntry
    text: str


def _canonical(entry: BaselineEntry) -> str:
    """The entry as a baseline file writes it: two entries are the same when these are equal."""
    return render({"t": {"m": entry}})


def merge(sources: Sequence[Path], into: Path) -> MergeReport:
    """Merge the baseline directories ``sources`` into the directory ``into`` (which may not exist)."""
    for source in sources:
        if not source.is_dir():
            raise BaselineError(f"ortperf merge: '{source}' is not a directory.")
    names = sorted({path.relative_to(source) for source in sources for path in _baseline_files(source)})
    report = MergeReport()
    planned: dict[Path, str] = {}
    outputs: dict[Path, bytes] = {}
    for name in names:
        target = _read(into / name) if (into / name).is_file() else {}
        merged = {test: dict(machines) for test, machines in target.items()}
        offers: dict[tuple[str, str], list[_Offer]] = {}
        for source in sources:
            if (source / name).is_file():
                for test, machines in _read(source / name).items():
                    for machine, entry in machines.items():
                        offers.setdefault((test, machine), []).append(
                            _Offer(source, entry, _canonical(entry))
                        )
        taken = report.taken
        for (test, machine), offered in sorted(offers.items()):
            current = target.get(test, {}).get(machine)
            kept = _canonical(current) if current is not None else None
            changed = {offer.text: offer for offer in offered if offer.text != kept}
            if not changed:
                report.unchanged += 1
                continue
            if len(changed) > 1:
                where = ", ".join(sorted({str(offer.source) for offer in offered if offer.text != kept}))
                report.conflicts.append(
                    f"{into / name}: {test} on machine '{machine}' was changed differently by {where}; kept "
                    + ("the target's entry" if current is not None else "none")
                    + " (merge the one you want alone, or re-record it)"
                )
                continue
            (offer,) = changed.values()
            merged.setdefault(test, {})[machine] = offer.entry
            report.taken += 1
            if offer.entry.accuracy is not None:
                npz = offer.source / offer.entry.accuracy.file
                if not npz.is_file():
                    raise BaselineError(
                        f"ortperf merge: {offer.source / name}: the entry {test} on machine '{machine}' "
                        f"names reference outputs '{npz}', which are missing; nothing was written."
                    )
                outputs[into / offer.entry.accuracy.file] = npz.read_bytes()
        if report.taken > taken:  # a file nothing was taken into keeps its bytes
            planned[into / name] = render(merged)
    for path, data in sorted(outputs.items()):
        if not path.is_file() or path.read_bytes() != data:
            write_atomically(path, data)
            report.written.append(path)
    for path, text in sorted(planned.items()):
        write_atomically(path, text)
        report.written.append(path)
    return report


def _baseline_files(directory: Path) -> list[Path]:
    """Baseline files under ``directory``: ``*.json`` outside ``*.outputs`` folders."""
    return sorted(
        path
        for path in directory.rglob(f"*{SUFFIX}")
        if path.is_file() and not any(part.endswith(".outputs") for part in path.relative_to(directory).parts)
    )


def _read(path: Path) -> Entries:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"ortperf merge: cannot read '{path}' ({exc}); nothing was written.") from None
    try:
        return parse(text, path=path)
    except BaselineError as exc:
        raise BaselineError(f"ortperf merge: {exc} Nothing was written.") from None
