"""Running a session for its outputs, as every check compares them."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pytest_ortperf.errors import InputsError
from pytest_ortperf.ort.inputs import Array
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.watchdog import Watchdog


def run_outputs(built: BuiltSession, inputs: Mapping[str, Array], watchdog: Watchdog) -> dict[str, Array]:
    """Tensor outputs by name; strings as fixed-width text. Sequence and map outputs are not compared."""
    try:
        names = [output.name for output in built.session.get_outputs()]
    except UnicodeDecodeError as exc:
        raise InputsError(f"the model's output names are not valid UTF-8 ({exc}).") from None
    outputs = {}
    for name, value in zip(names, watchdog.run(built.session, names, dict(inputs)), strict=True):
        if isinstance(value, np.ndarray):
            outputs[name] = value.astype(str) if value.dtype == object else value
    return outputs
