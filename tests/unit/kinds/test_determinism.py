"""The determinism check's rule, on plain outputs: how far each output strays from the first run."""

from __future__ import annotations

import math

import numpy as np

from pytest_ortperf.accuracy.output_values import KeyedTable
from pytest_ortperf.kinds.determinism_check import spread


def test_identical_runs_spread_nothing_and_a_changed_element_spreads_by_its_difference() -> None:
    first = {"y": np.array([1.0, 2.0], dtype=np.float32)}
    assert spread(first, [first, first]).by_output == {"y": 0.0}
    moved = {"y": np.array([1.0, 2.5], dtype=np.float32)}
    assert spread(first, [first, moved]).beyond(0.1) == {"y": 0.5}
    assert spread(first, [moved]).beyond(0.5) == {}


def test_a_nan_on_one_side_a_new_shape_or_a_missing_output_never_counts_as_stable() -> None:
    first = {"y": np.array([1.0, np.nan]), "z": np.array([1, 2])}
    both_nan = {"y": np.array([1.0, np.nan]), "z": np.array([1, 2])}
    assert spread(first, [both_nan]).worst == 0.0  # NaN where it was NaN: the same output
    assert spread(first, [{"y": np.array([1.0, 3.0]), "z": np.array([1, 2])}]).by_output["y"] == math.inf
    assert spread(first, [{"y": np.array([1.0]), "z": np.array([1, 2])}]).by_output["y"] == math.inf
    assert spread(first, [{"y": np.array([1.0, np.nan])}]).by_output["z"] == math.inf


def test_text_is_equal_or_not_and_a_maps_leaves_are_compared_one_by_one() -> None:
    first = {"label": np.array(["cat", "dog"])}
    assert spread(first, [{"label": np.array(["cat", "dog"])}]).worst == 0.0
    assert spread(first, [{"label": np.array(["cat", "cow"])}]).worst == math.inf
    table = KeyedTable(keys=("a", "b"), values=np.array([[0.25, 0.75]]), rows=True)
    other = KeyedTable(keys=("a", "b"), values=np.array([[0.5, 0.5]]), rows=True)
    by_output = spread({"probabilities": table}, [{"probabilities": other}]).by_output
    assert max(by_output.values()) == 0.25


def test_an_output_that_cannot_be_compared_is_named_and_a_changed_structure_is_never_stable() -> None:
    from pytest_ortperf.accuracy.output_values import ABSENT, NotComparable

    first = {"y": np.array([1.0]), "odd": NotComparable("a map of maps")}
    result = spread(first, [first])
    assert result.by_output == {"y": 0.0}
    assert result.not_compared == {"odd": "a map of maps"}
    optional = {"y": np.array([1.0]), "maybe": np.array([2.0])}
    assert spread(optional, [{"y": np.array([1.0]), "maybe": ABSENT}]).by_output["maybe"] == math.inf
    one = KeyedTable(keys=("a", "b"), values=np.array([[0.5, 0.5]]), rows=True)
    other = KeyedTable(keys=("a", "c"), values=np.array([[0.5, 0.5]]), rows=True)
    assert spread({"p": one}, [{"p": other}]).by_output["p"] == math.inf  # the map's keys changed


def test_a_stable_check_still_names_the_outputs_it_could_not_compare_in_its_result() -> None:
    from types import SimpleNamespace

    from pytest_ortperf.kinds.determinism_check import Spread, _result
    from pytest_ortperf.store.keys import CheckKey

    target = SimpleNamespace(key=CheckKey("t.py", "test_x[cpu-all]", "cpu-all", "ci", "ortperf update x"))
    stable = Spread({"y": 0.0}, {"odd": "a map of maps"})
    result = _result(target, stable, stable, stable, runs=3, tolerance=0.0)  # type: ignore[arg-type]
    assert not result.failed
    assert result.summary.endswith("; 1 not compared")
    assert "output 'odd' not compared: a map of maps" in result.notes
    assert result.figures["not_compared"] == {"odd": "a map of maps"}
