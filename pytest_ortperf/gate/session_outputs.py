"""Running a session for its outputs, as every check compares them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pytest_ortperf.accuracy.output_values import OutputValue, from_ort
from pytest_ortperf.errors import InputsError
from pytest_ortperf.ort.inputs import Array
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.watchdog import Watchdog


def run_outputs(
    built: BuiltSession, inputs: Mapping[str, Array], watchdog: Watchdog
) -> dict[str, OutputValue]:
    """Every output by name, none dropped: tensors as arrays (strings as fixed-width text); sequences,
    maps and absent optional outputs made comparable (``accuracy/output_values.py``), each typed by what the
    session says it is; what cannot be compared says why."""
    try:
        described = [(output.name, output.type) for output in built.session.get_outputs()]
    except UnicodeDecodeError as exc:
        raise InputsError(f"the model's output names are not valid UTF-8 ({exc}).") from None
    names = [name for name, _ in described]
    values = watchdog.run(built.session, names, dict(inputs))
    return {
        name: from_ort(value, str(type_text or ""))
        for (name, type_text), value in zip(described, values, strict=True)
    }


def worker_outputs(loaded: WorkerOutputs) -> dict[str, OutputValue]:
    """The outputs of a model loaded in a measuring worker (another runtime), made comparable as
    :func:`run_outputs` makes this process's."""
    return {name: from_ort(value, type_text) for name, (value, type_text) in loaded.typed_outputs().items()}


class WorkerOutputs(Protocol):
    """What gives a worker's outputs: a loaded model, or one side of a pair."""

    def typed_outputs(self) -> dict[str, tuple[Any, str]]: ...
