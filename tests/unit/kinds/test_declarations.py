"""The built-in kinds' declarations: light, and every callable they name by reference resolves."""

from __future__ import annotations

import dataclasses
import re

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.kinds import BUILTIN
from pytest_ortperf.lazy import Later, later


def test_every_reference_of_every_built_in_kind_resolves_to_a_callable() -> None:
    references = [
        (kind.name, field.name, value)
        for kind in BUILTIN
        for field in dataclasses.fields(kind)
        if isinstance(value := getattr(kind, field.name), Later)
    ]
    # Each kind declared apart from its check names it by reference (throughput and generation are
    # one light module each); latency names eight things (its part's decoder among them).
    split = {kind.name for kind in BUILTIN} - {"throughput", "generation"}
    assert {name for name, field, _ in references if field == "make"} == split
    assert len([r for r in references if r[0] == "latency"]) == 8
    for name, field, reference in references:
        assert callable(reference.resolve()), (name, field, str(reference))


def test_a_reference_that_does_not_resolve_names_itself() -> None:
    with pytest.raises(
        UsageError, match=re.escape("pytest_ortperf.kinds.latency_check:NoSuchCheck could not be loaded")
    ):
        later("pytest_ortperf.kinds.latency_check", "NoSuchCheck")()
    with pytest.raises(UsageError, match="no_such_module:make could not be loaded: No module named"):
        later("no_such_module", "make")()


def test_a_reference_calls_what_it_names() -> None:
    assert later("os.path", "basename")("/models/bert.onnx") == "bert.onnx"
