"""The reference outputs a baseline entry names, behind the store: read from their ``.npz`` and checked
against the entry before anything compares with them, and staged beside the entry when recorded.

What is in the file and how it is laid out is ``store/outputs.py``'s; here is what may go wrong with
the file (missing, damaged, out of step with its entry after an interrupted update) and what each
message asks for. The verdict (``checks/accuracy_verdicts.py``) sees outputs, never a file.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_ortperf.accuracy.metrics import Array
from pytest_ortperf.accuracy.output_values import OutputValue, flatten
from pytest_ortperf.errors import BaselineError
from pytest_ortperf.store.baselines import BaselineEntry, BaselineStore, repair_hint
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.outputs import (
    AccuracyRecord,
    for_storage,
    load_npz,
    npz_bytes,
    outputs_file,
    tensor_sha256,
)
from pytest_ortperf.store.recipe import split


@dataclass(frozen=True)
class RecordedOutputs:
    """A baseline entry's outputs, read and checked: its record (how each array was stored, with the
    whole tensor's digest and summary) and the outputs its ``.npz`` holds, as outputs again."""

    record: AccuracyRecord
    values: Mapping[str, OutputValue]


def recorded_outputs(
    store: BaselineStore, record: AccuracyRecord | None, *, test_file: str, inputs_sha256: str
) -> RecordedOutputs | None:
    """The outputs to compare with: None when the entry recorded none, or recorded them on other
    inputs (then nothing is read). A missing or damaged file, or one out of step with its entry,
    raises ``BaselineError`` naming the file and what to run."""
    if record is None or record.inputs_sha256 != inputs_sha256:
        return None
    npz = store.root / record.file
    try:
        stored = load_npz(npz)
    except BaselineError as exc:
        if not npz.exists():
            raise BaselineError(f"{exc} Record them again with --ortperf-update.") from None
        raise BaselineError(f"{exc} {repair_hint(npz)}") from None
    _verify(stored, record, npz, store.path_for(test_file))
    return RecordedOutputs(record, record.values(stored))


def previous_outputs(
    store: BaselineStore, record: AccuracyRecord | None, *, inputs_sha256: str
) -> RecordedOutputs | None:
    """The recorded outputs an update may keep; None when there are none to keep (none recorded, the
    file is gone, it was recorded on other inputs, or it is out of step with its entry: recorded
    afresh, as the check's message asks).

    A damaged file is never silently replaced: like a damaged baseline file it fails the test, and
    only ``--ortperf-repair`` records afresh, keeping the old file aside (when the store writes).
    """
    if record is None:
        return None
    path = store.root / record.file
    if not path.exists():
        return None
    try:
        stored = load_npz(path)
    except BaselineError as exc:
        if not store.repair:
            raise BaselineError(f"{exc} {repair_hint(path)}") from None
        store.mark_damaged(path)
        return None
    try:
        _verify(stored, record, path, path)
    except BaselineError:
        return None
    if record.inputs_sha256 != inputs_sha256:
        return None
    return RecordedOutputs(record, record.values(stored))


def stage_outputs(
    store: BaselineStore,
    key: CheckKey,
    actual: Mapping[str, OutputValue],
    *,
    inputs_sha256: str,
    environment: Mapping[str, Any],
    today: str,
) -> None:
    """Stage ``actual`` as the entry's reference outputs: the ``.npz`` and the entry's accuracy record.

    The outputs belong to the recipe: a changed one replaces it (dropping figures measured for the old
    one); when the latency check of this test recorded first, the recipe is already the same.
    """
    arrays, stored = for_storage(actual)
    new_record = AccuracyRecord(
        inputs_sha256=inputs_sha256,
        outputs=stored,
        file=outputs_file(key),
        structure=flatten(actual).structure,
    )
    store.stage_file(new_record.file, npz_bytes(arrays))
    existing = store.current(key.test_file, key.test)
    recipe = split(environment)[0]
    entry = (
        replace(existing.with_recipe(recipe, recorded=today), accuracy=new_record, recorded=today)
        if existing is not None
        else BaselineEntry(variant=key.variant, recorded=today, recipe=recipe, accuracy=new_record)
    )
    store.stage(key.test_file, key.test, entry)


class BaselineOutputs:
    """The run's reference outputs (``gate/services.py: OutputStore``): the functions above, over the
    run's baseline store."""

    def __init__(self, store: BaselineStore) -> None:
        self._store = store

    def recorded(
        self, record: AccuracyRecord | None, *, test_file: str, inputs_sha256: str
    ) -> RecordedOutputs | None:
        return recorded_outputs(self._store, record, test_file=test_file, inputs_sha256=inputs_sha256)

    def previous(self, record: AccuracyRecord | None, *, inputs_sha256: str) -> RecordedOutputs | None:
        return previous_outputs(self._store, record, inputs_sha256=inputs_sha256)

    def stage(
        self, key: CheckKey, actual: Mapping[str, OutputValue], *, environment: Mapping[str, Any]
    ) -> None:
        """Stage ``actual`` as measured in ``environment`` (which holds its inputs' digest), today."""
        digest, today = str(environment["inputs_sha256"]), datetime.date.today().isoformat()
        stage_outputs(self._store, key, actual, inputs_sha256=digest, environment=environment, today=today)


def _verify(stored: Mapping[str, Array], record: AccuracyRecord, npz: Path, entry_file: Path) -> None:
    """The .npz and its JSON entry are written one after the other; an interrupted update can leave
    them from different versions. Whole tensors carry their sha256 in the entry: check it."""
    for output in record.outputs:
        array = stored.get(output.name)
        if output.stored != "full" or array is None:
            continue
        if tensor_sha256(array) != output.sha256:
            raise BaselineError(
                f"reference outputs '{npz}' do not match their entry in '{entry_file}' (output "
                f"{output.name!r}; an interrupted update?). Re-record with --ortperf-update."
            )
