"""Every output compared: maps key by key, ZipMap as a [N, classes] table, sequences element by
element, absent optional outputs, what cannot be compared named; and whole-output metrics (cosine,
SQNR, top-1) only where they mean something. Pure logic: arrays and the values onnxruntime returns."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ortperf.accuracy.metrics import compare_output, compare_outputs, score_shaped
from pytest_ortperf.accuracy.output_values import (
    ABSENT,
    KeyedTable,
    NotComparable,
    OutputsError,
    ValueSequence,
    check_structure,
    flatten,
    from_ort,
    unflatten,
)
from pytest_ortperf.accuracy.tolerances import DTYPE_TOLERANCES, Tolerance, ToleranceSpec
from pytest_ortperf.errors import BaselineError
from pytest_ortperf.store.outputs import AccuracyRecord, comparable, for_storage, load_npz, npz_bytes

ZIPMAP = "seq(map(int64,tensor(float)))"
F32 = DTYPE_TOLERANCES["float32"]


def zipmap(*rows: tuple[float, ...]) -> list[dict[int, float]]:
    """What onnxruntime returns for skl2onnx's ZipMap output: one dict per row, class -> probability."""
    return [{class_: float(np.float32(p)) for class_, p in enumerate(row)} for row in rows]


def compare(actual: dict[str, Any], expected: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    results = compare_outputs(
        actual, expected, reference="baseline", tolerances=ToleranceSpec(), provider_short="cpu", **kwargs
    )
    return {r.name: r for r in results}


# the case: a near-zero heatmap ------------------------------------------


def near_zero_heatmap(size: int = 480) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A detector's 1x1xHxW probability map that is almost all background (values around 1e-6), and
    the same map from another optimization level, each element off by at most 1.5e-7."""
    rng = np.random.default_rng(5)
    expected = (np.abs(rng.standard_normal((1, 1, size, size))) * 1e-6).astype(np.float32)
    noise = np.clip(rng.standard_normal(expected.shape) * 5e-8, -1.5e-7, 1.5e-7)
    return (expected + noise).astype(np.float32), expected


def test_a_near_zero_heatmap_within_tolerance_passes_whatever_its_cosine() -> None:
    actual, expected = near_zero_heatmap()
    result = compare_output("heatmap", actual, expected, F32, "variant cpu-disabled")
    assert result.mismatches == 0
    assert result.count == 230_400
    assert result.max_abs < 1.6e-7
    assert result.cosine is not None
    assert result.cosine < F32.cosine
    assert result.ok, result.describe()
    assert result.unjudged == "every element within tolerance"
    text = result.describe()
    assert text.startswith("output 'heatmap': ok (")
    assert "0 of 230400 elements outside tolerance" in text
    assert "> 1e-05, not judged: every element within tolerance)" in text
    assert "top-1" not in text  # a heatmap has no classes
    assert result.top1 is None
    assert result.topk is None


def test_cosine_still_fails_a_heatmap_with_elements_outside_tolerance() -> None:
    actual, expected = near_zero_heatmap(64)
    actual = actual.copy()
    actual[0, 0, :8, :] += 1e-3  # a stripe of real detections that were not there
    result = compare_output("heatmap", actual, expected, F32, "ref")
    assert result.failed_metric == "isclose"
    allowing = Tolerance(atol=1e-5, rtol=1e-4, cosine=0.99999, mismatch=0.2)  # the stripe is 12.5%
    result = compare_output("heatmap", actual, expected, allowing, "ref")
    assert result.failed_metric == "cosine", result.describe()


def test_below_the_noise_floor_cosine_and_sqnr_do_not_judge() -> None:
    """With a mismatch allowance some elements may be outside their tolerance; an output whose every
    value is within atol of zero is noise there, and its angle means nothing."""
    expected = np.array([9e-7, -9e-7, 1e-7, 0.0], np.float32)
    actual = np.array([-9e-7, 9e-7, 1e-7, 0.0], np.float32)  # two signs flipped: cosine about -1
    floor = Tolerance(atol=1e-6, rtol=0.0, cosine=0.999, mismatch=0.5, sqnr=20.0)
    result = compare_output("y", actual, expected, floor, "ref")
    assert result.mismatches == 2
    assert result.cosine is not None
    assert result.cosine < 0
    assert result.ok, result.describe()
    assert result.unjudged == "every value below the noise floor (|x| <= atol 1e-06)"
    above = compare_output("y", actual, expected, Tolerance(8e-7, 0.0, 0.999, mismatch=0.5, sqnr=20.0), "ref")
    assert above.failed_metric == "cosine"  # values up to 9e-7: above a floor of 8e-7


def test_sqnr_does_not_fail_an_output_within_tolerance() -> None:
    expected = np.linspace(-1e-6, 1e-6, 100).astype(np.float32)
    actual = expected + np.float32(1e-7)
    tolerance = Tolerance(atol=1e-5, rtol=0.0, cosine=0.0, sqnr=40.0)
    result = compare_output("y", actual, expected, tolerance, "ref")
    assert result.sqnr_db is not None
    assert result.sqnr_db < 40.0
    assert result.ok
    assert result.unjudged == "every element within tolerance"
    assert "(< 40, not judged: every element within tolerance)" in result.describe()


@pytest.mark.parametrize(
    ("shape", "scores"),
    [
        ((1, 1, 480, 480), False),  # a heatmap
        ((1, 1000, 1, 1), False),  # not exactly [N, classes]
        ((1000,), False),
        ((8, 4), False),  # boxes, not classes
        ((1, 1000), True),
        ((16, 10), True),
    ],
)
def test_top1_is_for_score_shaped_tensors_only(shape: tuple[int, ...], scores: bool) -> None:
    expected = np.random.default_rng(0).random(shape).astype(np.float32)
    assert score_shaped(expected) is scores
    result = compare_output("y", expected.copy(), expected, F32, "ref")
    assert (result.top1 is not None) is scores


def test_maps_are_score_shaped_whatever_their_class_count() -> None:
    assert score_shaped(np.zeros((5, 3), np.float32), scores=True)
    assert score_shaped(np.zeros(3, np.float32), scores=True)  # one map: one row
    assert not score_shaped(np.zeros((5, 3), np.int64), scores=True)


# what onnxruntime returns, made comparable --------------------------------------


def test_a_zipmap_becomes_a_float32_table_keyed_by_class() -> None:
    value = from_ort(zipmap((0.75, 0.2, 0.05), (0.1, 0.3, 0.6)), ZIPMAP)
    assert isinstance(value, KeyedTable)
    assert value.rows
    assert value.keys == (0, 1, 2)
    assert value.values.dtype == np.float32
    assert value.values.shape == (2, 3)
    np.testing.assert_array_equal(value.values[0], np.float32([0.75, 0.2, 0.05]))


def test_keys_are_sorted_so_tables_compare_column_by_column() -> None:
    value = from_ort([{"virginica": 0.1, "setosa": 0.9}], "seq(map(string,tensor(float)))")
    assert isinstance(value, KeyedTable)
    assert value.keys == ("setosa", "virginica")
    np.testing.assert_array_equal(value.values, np.float32([[0.9, 0.1]]))


def test_other_values_onnxruntime_returns() -> None:
    assert from_ort(None) is ABSENT
    single = from_ort({3: 1.5, 1: 0.5}, "map(int64,tensor(double))")
    assert isinstance(single, KeyedTable)
    assert not single.rows
    assert single.keys == (1, 3)
    assert single.values.dtype == np.float64
    sequence = from_ort([np.ones(2, np.float32), np.zeros((1, 3), np.int64)], "seq(tensor(float))")
    assert isinstance(sequence, ValueSequence)
    assert len(sequence.items) == 2
    ragged = from_ort([{0: 1.0}, {1: 2.0}], ZIPMAP)  # maps without one key set: compared one by one
    assert isinstance(ragged, ValueSequence)
    assert all(isinstance(i, KeyedTable) for i in ragged.items)
    strange = from_ort(object())
    assert isinstance(strange, NotComparable)
    assert strange.reason == "onnxruntime returned a object, which is not compared"
    texts = from_ort(np.array(["a", "b"], dtype=object))
    assert isinstance(texts, np.ndarray)
    assert texts.dtype.kind == "U"


# comparing ---------------------------------------------------------------------


def test_a_zipmap_whose_probabilities_moved_fails_naming_it_with_the_label_unchanged() -> None:
    expected = {"label": np.array([0]), "probabilities": from_ort(zipmap((0.75, 0.2, 0.05)), ZIPMAP)}
    actual = {"label": np.array([0]), "probabilities": from_ort(zipmap((0.667, 0.333, 0.0)), ZIPMAP)}
    results = compare(actual, expected)
    assert results["label"].ok
    moved = results["probabilities"]
    assert moved.failed_metric == "isclose"
    assert moved.top1 == 1.0
    assert moved.topk is None
    assert moved.keys == (0, 1, 2)
    text = moved.describe()
    assert text.startswith("output 'probabilities': FAILED on isclose (")
    assert "3 of 3 elements outside tolerance" in text
    assert "top-1 agreement 100%, map keys 0, 1, 2" in text
    assert "worst at [0, key 1]: actual 0.333, expected 0.2" in text
    assert compare(expected, expected)["probabilities"].ok


def test_a_missing_or_new_key_is_a_failure_naming_it() -> None:
    expected = {"p": from_ort(zipmap((0.5, 0.3, 0.2)), ZIPMAP)}
    fewer = {"p": from_ort([{0: 0.5, 2: 0.5}], ZIPMAP)}
    result = compare(fewer, expected)["p"]
    assert not result.ok
    assert result.describe() == "output 'p': keys differ: missing key 1"
    other = {"p": from_ort([{0: 0.5, 1: 0.3, 7: 0.1, 9: 0.1}], ZIPMAP)}
    assert compare(other, expected)["p"].problem == "keys differ: missing key 2; new keys 7, 9"


def test_a_map_against_a_sequence_of_maps_is_a_change_of_kind() -> None:
    result = compare({"p": from_ort({0: 0.5, 1: 0.5})}, {"p": from_ort(zipmap((0.5, 0.5)), ZIPMAP)})["p"]
    assert result.problem == "kind changed: a sequence of 1 maps with 2 keys -> a map with 2 keys"


def test_sequences_compare_element_by_element() -> None:
    first = [np.float32([1.0, 2.0]), np.float32([[3.0]])]
    expected = {"seq": from_ort(first, "seq(tensor(float))")}
    same = compare({"seq": from_ort([a.copy() for a in first], "seq(tensor(float))")}, expected)
    assert set(same) == {"seq[0]", "seq[1]"}
    assert all(r.ok for r in same.values())
    moved = compare({"seq": from_ort([first[0], np.float32([[3.5]])], "seq(tensor(float))")}, expected)
    assert moved["seq[0]"].ok
    assert moved["seq[1]"].failed_metric == "isclose"
    shorter = compare({"seq": from_ort(first[:1], "seq(tensor(float))")}, expected)
    assert shorter["seq"].problem == "sequence length changed: 2 -> 1"


def test_optional_outputs_are_compared_too() -> None:
    present = {"opt": np.float32([1.0])}
    both = compare({"opt": ABSENT}, {"opt": ABSENT})["opt"]
    assert both.ok
    assert both.note == "absent on both sides (an optional output)"
    gone = compare({"opt": ABSENT}, present)["opt"]
    assert gone.problem == (
        "absent now, present in the reference (an optional output): a float32 tensor [1] -> absent"
    )
    came = compare(present, {"opt": ABSENT})["opt"]
    assert came.problem.startswith("present now, absent in the reference")


def test_what_cannot_be_compared_passes_but_says_so() -> None:
    reason = "onnxruntime returned a SparseTensor, which is not compared"
    result = compare({"s": NotComparable(reason)}, {"s": NotComparable(reason)})["s"]
    assert result.ok
    assert result.not_compared == reason
    assert result.describe() == f"output 's': not compared ({reason})"
    became = compare({"s": NotComparable(reason)}, {"s": np.float32([1.0])})["s"]
    assert became.problem == f"kind changed: a float32 tensor [1] -> a value not compared ({reason})"


def test_tolerances_apply_by_the_output_name_to_its_elements() -> None:
    expected = {"seq": from_ort([np.float32([1.0])], "seq(tensor(float))")}
    actual = {"seq": from_ort([np.float32([1.01])], "seq(tensor(float))")}
    assert not compare(actual, expected)["seq[0]"].ok
    loose = ToleranceSpec(outputs={"seq": {"atol": 0.1}})
    results = compare_outputs(actual, expected, reference="r", tolerances=loose, provider_short="cpu")
    assert results[0].ok


# storing: plain arrays and a JSON structure, read back without pickle --------------


def test_structured_outputs_round_trip_through_an_npz_read_without_pickle(tmp_path: Path) -> None:
    outputs = {
        "label": np.array([0, 2]),
        "probabilities": from_ort(zipmap((0.75, 0.2, 0.05), (0.1, 0.3, 0.6)), ZIPMAP),
        "names": from_ort([{"b": 1.0, "a": 2.0}], "seq(map(string,tensor(float)))"),
        "seq": from_ort([np.float32([1.0]), np.array([3])], "seq(tensor(float))"),
        "opt": ABSENT,
        "odd": NotComparable("onnxruntime returned a SparseTensor, which is not compared"),
    }
    arrays, records = for_storage(outputs)
    structure = flatten(outputs).structure
    assert sorted(arrays) == ["label", "names", "probabilities", "seq[0]", "seq[1]"]
    assert structure["probabilities"] == {"kind": "maps", "keys": [0, 1, 2]}
    assert structure["names"] == {"kind": "maps", "keys": ["a", "b"]}
    assert structure["opt"] == {"kind": "absent"}
    assert structure["odd"]["kind"] == "not compared"
    path = tmp_path / "outputs.npz"
    path.write_bytes(npz_bytes(arrays))
    record = AccuracyRecord("cd" * 32, records, "t.npz", structure=structure)
    again = AccuracyRecord.from_dict(json.loads(json.dumps(record.as_dict())))
    assert again == record
    loaded = again.values(load_npz(path))
    assert all(r.ok for r in compare(outputs, loaded).values())
    assert compare(outputs, loaded)["odd"].not_compared


def test_entries_say_whether_they_were_recorded_with_structures() -> None:
    """An entry from before sequence and map outputs were stored has no ``structure``; one recorded now
    has one, empty for a tensor-only model, so the two are told apart."""
    _, records = for_storage({"y": np.float32([1.0])})
    older = AccuracyRecord("cd" * 32, records, "t.npz")
    assert "structure" not in older.as_dict()
    assert AccuracyRecord.from_dict(older.as_dict()).structure is None
    now = AccuracyRecord("cd" * 32, records, "t.npz", structure={})
    assert now.as_dict()["structure"] == {}
    assert AccuracyRecord.from_dict(now.as_dict()).structure == {}


@pytest.mark.parametrize(
    "structure",
    [
        {"p": {"kind": "maps", "keys": [0, "a"]}},
        {"p": {"kind": "maps", "keys": "0,1"}},
        {"p": {"kind": "sequence"}},
        {"p": {"kind": "pickle"}},
        {"p": "maps"},
    ],
)
def test_a_structure_this_version_did_not_write_is_refused(structure: dict[str, Any]) -> None:
    data = {"inputs_sha256": "cd" * 32, "outputs": [], "file": "t.npz", "structure": structure}
    with pytest.raises(TypeError):
        AccuracyRecord.from_dict(data)
    with pytest.raises(TypeError):
        check_structure(structure)


def test_a_structure_naming_an_array_the_file_lacks_names_the_file() -> None:
    record = AccuracyRecord("cd" * 32, (), "tests/x.npz", structure={"p": {"kind": "maps", "keys": [0]}})
    with pytest.raises(
        BaselineError, match=r"reference outputs 'tests/x.npz' do not hold .*'p'.*--ortperf-update"
    ):
        record.values({})


def test_subsampled_tables_compare_on_the_same_elements() -> None:
    table = from_ort(zipmap(*[(0.5, 0.25, 0.25)] * 40), ZIPMAP)
    outputs = {"p": table}
    arrays, records = for_storage(outputs, limit=60)
    assert records[0].stored == "subsample"
    reduced = comparable(outputs, records)
    assert isinstance(reduced["p"], KeyedTable)
    np.testing.assert_array_equal(reduced["p"].values, arrays["p"])


def test_flatten_refuses_a_leaf_name_that_is_another_output() -> None:
    with pytest.raises(
        OutputsError, match=r"output 's\[0\]' has the name an element of output 's' is stored"
    ):
        flatten({"s": from_ort([np.float32([1.0])]), "s[0]": np.float32([2.0])})
    # names that merely start alike are no clash
    assert sorted(flatten({"score": np.float32([1.0]), "s": from_ort({0: 1.0})}).leaves) == ["s", "score"]
    assert unflatten(*_flat({"y": np.float32([1.0])}))["y"].shape == (1,)  # type: ignore[union-attr]


def _flat(outputs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    flat = flatten(outputs)
    return flat.leaves, flat.structure


def test_npz_bytes_hold_no_object_arrays() -> None:
    arrays, _ = for_storage({"names": from_ort([{"b": 1.0, "a": 2.0}], "seq(map(string,tensor(float)))")})
    with np.load(io.BytesIO(npz_bytes(arrays)), allow_pickle=False) as archive:
        assert all(archive[name].dtype != object for name in archive.files)
