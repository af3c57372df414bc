"""Reference outputs: what is stored (whole or subsampled), .npz bytes and loading, records, model-zoo data."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnx import numpy_helper

from pytest_ortperf.errors import BaselineError, InputsError
from pytest_ortperf.store import outputs as references
from pytest_ortperf.store.baselines import parse
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.store.outputs import (
    FULL_LIMIT,
    SUBSAMPLE,
    AccuracyRecord,
    Sampling,
    StoredOutput,
    comparable,
    for_storage,
    load_npz,
    npz_bytes,
    outputs_file,
    zoo_expected,
)

SHA = "ab" * 32


def sha256(array: np.ndarray[Any, Any]) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def stored_output(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "y", "dtype": "float32", "shape": [1, 4], "stored": "full", "sha256": SHA,
        "mean": 0.5, "std": 0.25, "min": 0.0, "max": 1.0,
    }  # fmt: skip
    return data | changes


def record_dict(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "inputs_sha256": "cd" * 32,
        "outputs": [stored_output()],
        "file": "tests/perf/test_models.py.outputs/test_a@ci.npz",
    }
    return data | changes


# for_storage ----------------------------------------------------------------


def test_small_outputs_are_stored_whole_with_their_summary() -> None:
    y = np.array([[1.0, -2.0, 0.5], [4.0, 3.0, -0.25]], np.float32)
    ids = np.array([3, 1, 2], np.int64)
    arrays, records = for_storage({"y": y, "ids": ids})
    assert list(arrays) == ["y", "ids"]
    np.testing.assert_array_equal(arrays["y"], y)
    assert arrays["y"].dtype == np.float32
    np.testing.assert_array_equal(arrays["ids"], ids)
    y64 = y.astype(np.float64)
    assert records == (
        StoredOutput(
            name="y", dtype="float32", shape=(2, 3), stored="full", sha256=sha256(y),
            mean=pytest.approx(y64.mean()), std=pytest.approx(y64.std()), min=-2.0, max=4.0, nonfinite=0,
        ),
        StoredOutput(
            name="ids", dtype="int64", shape=(3,), stored="full", sha256=sha256(ids),
            mean=2.0, std=pytest.approx(np.sqrt(2 / 3)), min=1.0, max=3.0, nonfinite=0,
        ),
    )  # fmt: skip


def test_the_digest_is_of_the_logical_tensor_not_its_memory_layout() -> None:
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    transposed = base.T  # a non-contiguous view
    arrays, (record,) = for_storage({"y": transposed})
    assert record.sha256 == hashlib.sha256(np.array([0, 3, 1, 4, 2, 5], np.float32).tobytes()).hexdigest()
    np.testing.assert_array_equal(arrays["y"], transposed)


def test_large_outputs_store_a_subsample_and_the_whole_tensors_summary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(references, "SUBSAMPLE", 7)
    whole = np.arange(50, dtype=np.float32).reshape(5, 10)
    arrays, (record,) = for_storage({"y": whole}, limit=10)
    # 7 evenly spaced elements of 0..49, first and last included: linspace(0, 49, 7) truncated.
    np.testing.assert_array_equal(arrays["y"], np.array([0, 8, 16, 24, 32, 40, 49], np.float32))
    assert arrays["y"].dtype == np.float32
    assert record.stored == "subsample"
    assert record.shape == (5, 10)
    assert record.sha256 == sha256(whole)
    assert (record.mean, record.min, record.max) == (24.5, 0.0, 49.0)
    assert record.std == pytest.approx(np.arange(50).std())
    assert record.sample == Sampling(limit=10, count=7, method="linspace")
    assert record.nonfinite == 0


def test_the_whole_tensors_non_finite_values_are_counted() -> None:
    whole = np.zeros(50, np.float32)
    whole[[3, 7, 11]] = [np.nan, np.inf, -np.inf]  # none of them in the subsample
    _, (record,) = for_storage({"y": whole}, limit=10)
    assert record.nonfinite == 3
    _, (ints,) = for_storage({"ids": np.arange(50)}, limit=10)
    assert ints.nonfinite == 0


def test_the_recorded_sampling_is_used_after_the_constants_change(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = np.arange(50, dtype=np.float32)
    arrays, records = for_storage({"y": whole}, limit=10)  # 50 <= SUBSAMPLE: every element
    monkeypatch.setattr(references, "SUBSAMPLE", 7)
    np.testing.assert_array_equal(comparable({"y": whole}, records)["y"], arrays["y"])
    # An entry from before the sampling was recorded is compared with the current constants.
    old = StoredOutput.from_dict({k: v for k, v in records[0].as_dict().items() if k != "sample"})
    assert comparable({"y": whole}, [old])["y"].size == 7


def test_the_default_limit_stores_up_to_full_limit_elements_whole() -> None:
    at_limit = np.zeros(FULL_LIMIT, np.float32)
    over = np.arange(FULL_LIMIT + 1, dtype=np.float32)
    arrays, records = for_storage({"at": at_limit, "over": over})
    assert [r.stored for r in records] == ["full", "subsample"]
    assert arrays["at"].size == FULL_LIMIT
    assert arrays["over"].size == SUBSAMPLE
    assert (arrays["over"][0], arrays["over"][-1]) == (0.0, float(FULL_LIMIT))
    assert np.all(np.diff(arrays["over"]) > 0)


@pytest.mark.parametrize(
    ("array", "summary"),
    [
        pytest.param(
            np.array([1.0, np.nan, 3.0, np.inf], np.float32), (2.0, 1.0, 1.0, 3.0), id="non-finite-skipped"
        ),
        pytest.param(np.array([np.nan, np.inf], np.float32), (0.0, 0.0, 0.0, 0.0), id="nothing-finite"),
        pytest.param(np.zeros((0, 4), np.float32), (0.0, 0.0, 0.0, 0.0), id="empty"),
        pytest.param(np.array([True, False, True, True]), (0.75, np.sqrt(0.1875), 0.0, 1.0), id="bool"),
        pytest.param(np.array(["a", "b"]), (0.0, 0.0, 0.0, 0.0), id="strings"),
    ],
)
def test_summaries_cover_finite_numbers_only(
    array: np.ndarray[Any, Any], summary: tuple[float, float, float, float]
) -> None:
    _, (record,) = for_storage({"y": array})
    assert (record.mean, record.std, record.min, record.max) == pytest.approx(summary)


# comparable ------------------------------------------------------------------


def test_comparable_reduces_exactly_like_storage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(references, "SUBSAMPLE", 7)
    outputs = {"big": np.arange(50, dtype=np.float32).reshape(5, 10), "small": np.ones(3, np.float32)}
    arrays, records = for_storage(outputs, limit=10)
    reduced = comparable(outputs, records)
    assert list(reduced) == ["big", "small"]
    np.testing.assert_array_equal(reduced["big"], arrays["big"])
    assert reduced["small"] is outputs["small"]


def test_comparable_leaves_reshaped_and_unrecorded_outputs_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(references, "SUBSAMPLE", 7)
    _, records = for_storage({"big": np.zeros((5, 10), np.float32)}, limit=10)
    reshaped = np.zeros((5, 11), np.float32)
    new = np.zeros(3, np.float32)
    reduced = comparable({"big": reshaped, "new": new}, records)
    assert reduced["big"] is reshaped
    assert reduced["new"] is new
    assert comparable({}, records) == {}  # an output that is gone stays gone


# npz_bytes and load_npz --------------------------------------------------------


def arrays_of_every_kind() -> dict[str, np.ndarray[Any, Any]]:
    return {
        "y": np.array([[1.5, -2.0]], np.float32),
        "ids": np.array([7, 8, 9], np.int64),
        "mask": np.array([True, False]),
        "half": np.array([0.25], np.float16),
        "scalar": np.array(3.0, np.float64),
    }


def test_npz_bytes_are_deterministic_and_independent_of_dict_order() -> None:
    arrays = arrays_of_every_kind()
    first = npz_bytes(arrays)
    assert npz_bytes(arrays) == first
    assert npz_bytes(dict(reversed(list(arrays.items())))) == first
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        infos = archive.infolist()
    assert [i.filename for i in infos] == ["half.npy", "ids.npy", "mask.npy", "scalar.npy", "y.npy"]
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}  # no clock in the bytes


def test_load_npz_round_trips_names_dtypes_shapes_and_values(tmp_path: Path) -> None:
    arrays = arrays_of_every_kind()
    path = tmp_path / "outputs.npz"
    path.write_bytes(npz_bytes(arrays))
    loaded = load_npz(path)
    assert sorted(loaded) == sorted(arrays)
    for name, array in arrays.items():
        assert loaded[name].dtype == array.dtype, name
        assert loaded[name].shape == array.shape, name
        np.testing.assert_array_equal(loaded[name], array)


class _Boom:
    """Unpickling it creates ``marker``: proof that pickle ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.mkdir, (self.marker,))


def _object_npz(path: Path, marker: Path) -> None:
    np.savez(path, y=np.array([_Boom(marker)], dtype=object))


def _pickle_file(path: Path, marker: Path) -> None:
    path.write_bytes(pickle.dumps(_Boom(marker)))


def _corrupt(path: Path, marker: Path) -> None:
    path.write_bytes(b"this is not a zip file")


def _truncated(path: Path, marker: Path) -> None:
    path.write_bytes(npz_bytes(arrays_of_every_kind())[:100])


def _plain_npy(path: Path, marker: Path) -> None:
    with path.open("wb") as handle:
        np.save(handle, np.ones(3, np.float32))


@pytest.mark.parametrize("write", [_object_npz, _truncated])
def test_load_npz_refuses_what_it_cannot_read_without_pickle(tmp_path: Path, write: Any) -> None:
    path = tmp_path / "outputs.npz"
    marker = tmp_path / "pickle-ran"
    write(path, marker)
    with pytest.raises(BaselineError) as info:
        load_npz(path)
    assert str(info.value).startswith(f"reference outputs '{path}' cannot be read without pickle: ")
    assert not marker.exists()


@pytest.mark.parametrize("write", [_pickle_file, _corrupt, _plain_npy])
def test_load_npz_calls_a_file_that_is_no_archive_damaged_without_offering_pickle(
    tmp_path: Path, write: Any
) -> None:
    path = tmp_path / "outputs.npz"
    marker = tmp_path / "pickle-ran"
    write(path, marker)
    with pytest.raises(BaselineError) as info:
        load_npz(path)
    assert str(info.value) == f"reference outputs '{path}' are damaged: the file is not a .npz archive."
    assert "allow_pickle" not in str(info.value)
    assert not marker.exists()


def test_load_npz_names_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "gone.npz"
    with pytest.raises(BaselineError) as info:
        load_npz(path)
    assert str(info.value) == f"reference outputs '{path}' are missing (the baseline entry names them)."


# AccuracyRecord and StoredOutput ----------------------------------------------


def test_records_round_trip_through_json() -> None:
    arrays = {"y": np.arange(4, dtype=np.float32).reshape(1, 4), "ids": np.array([1, 2], np.int64)}
    _, outputs = for_storage(arrays)
    record = AccuracyRecord(inputs_sha256=SHA, outputs=outputs, file="t.py.outputs/test_a@ci.npz")
    data = json.loads(json.dumps(record.as_dict()))
    assert data["outputs"][0] == {
        "name": "y", "dtype": "float32", "shape": [1, 4], "stored": "full", "sha256": sha256(arrays["y"]),
        "mean": 1.5, "std": pytest.approx(np.arange(4).std()), "min": 0.0, "max": 3.0, "nonfinite": 0,
    }  # fmt: skip
    assert AccuracyRecord.from_dict(data) == record
    assert StoredOutput.from_dict(data["outputs"][1]) == outputs[1]


def test_subsampled_records_round_trip_with_their_sampling() -> None:
    _, (output,) = for_storage({"y": np.arange(50, dtype=np.float32)}, limit=10)
    data = json.loads(json.dumps(output.as_dict()))
    assert data["sample"] == {"limit": 10, "count": SUBSAMPLE, "method": "linspace"}
    assert StoredOutput.from_dict(data) == output


def test_records_from_before_the_counts_and_sampling_still_load() -> None:
    old = StoredOutput.from_dict(stored_output(stored="subsample"))
    assert (old.nonfinite, old.sample) == (None, None)
    assert old.sampling == Sampling(limit=FULL_LIMIT, count=SUBSAMPLE, method="linspace")
    assert "nonfinite" not in old.as_dict()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"file": "../elsewhere.npz"}, "relative .npz path inside the baseline directory"),
        ({"file": "a/../../elsewhere.npz"}, "relative .npz path inside the baseline directory"),
        ({"file": "tests/x.py.outputs/test_a@ci.json"}, "relative .npz path inside the baseline directory"),
        ({"file": 3}, "relative .npz path inside the baseline directory"),
        ({"file": None}, "relative .npz path inside the baseline directory"),
        ({"outputs": {"y": {}}}, "accuracy must be an object with an 'outputs' list"),
        ({"outputs": [stored_output(stored="partial")]}, "'stored' of full or subsample"),
        ({"outputs": [stored_output(shape="1,4")]}, "shape must be a list of whole numbers"),
        ({"outputs": [stored_output(shape=[1, -4])]}, "shape must be a list of whole numbers"),
        ({"outputs": [stored_output(shape=[1, 4.0])]}, "shape must be a list of whole numbers"),
        ({"outputs": [stored_output(nonfinite=-1)]}, "nonfinite must be a whole number >= 0"),
        ({"outputs": [stored_output(nonfinite=True)]}, "nonfinite must be a whole number >= 0"),
        ({"outputs": [stored_output(nonfinite=1.5)]}, "nonfinite must be a whole number >= 0"),
        ({"outputs": [stored_output(sample={"limit": 10, "count": 7})]}, "method 'linspace'"),
        (
            {"outputs": [stored_output(sample={"limit": 0, "count": 7, "method": "linspace"})]},
            "positive whole",
        ),
        (
            {"outputs": [stored_output(sample={"limit": 10, "count": 10**30, "method": "linspace"})]},
            "positive whole",
        ),
        ({"outputs": [stored_output(sample=[10, 7])]}, "method 'linspace'"),
    ],
)
def test_records_reject_what_they_cannot_use(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        AccuracyRecord.from_dict(record_dict(**changes))


def test_an_output_record_that_is_not_an_object_is_rejected() -> None:
    with pytest.raises(TypeError, match="'stored' of full or subsample"):
        StoredOutput.from_dict(["y"])
    with pytest.raises(TypeError, match="an 'outputs' list"):
        AccuracyRecord.from_dict("accuracy")


def test_an_absolute_file_is_rejected() -> None:
    with pytest.raises(TypeError, match=r"relative \.npz path"):
        AccuracyRecord.from_dict(record_dict(file="/tmp/elsewhere.npz"))


def test_a_baseline_file_with_a_damaged_accuracy_record_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "test_models.py.json"
    entry = {"variant": "cpu-all", "recorded": "2025-01-02", "accuracy": record_dict(file="../x.npz")}
    text = json.dumps({"schema": 1, "kind": "pytest-ortperf baselines", "entries": {"test_a": {"ci": entry}}})
    with pytest.raises(BaselineError) as info:
        parse(text, path=path)
    message = str(info.value)
    assert message.startswith(f"baseline file '{path}': entry 'test_a' for machine 'ci' is damaged (")
    assert "relative .npz path" in message


# outputs_file ----------------------------------------------------------------


def _key(test: str, machine: str = "ci") -> CheckKey:
    return CheckKey("tests/perf/test_models.py", test, "cpu-all", machine, "ortperf update")


def test_one_outputs_file_per_test_and_variant_whatever_machine_records_it() -> None:
    name = outputs_file(_key("test_a[cpu-all]"))
    assert name.startswith("tests/perf/test_models.py.outputs/test_a_cpu-all-")
    assert name.endswith(".npz")
    assert "@" not in name
    assert outputs_file(_key("test_a[cpu-all]", machine="gha@zen3-avx2-2c-1a2b3c")) == name
    names = {
        outputs_file(_key(test)) for test in ("test_a[cpu-all]", "test_a[cpu-basic]", "test_a[cpu-all]#2")
    }
    assert len(names) == 3
    AccuracyRecord.from_dict(record_dict(file=name))  # a name a record accepts


# zoo_expected ----------------------------------------------------------------


def write_pb(path: Path, array: np.ndarray[Any, Any], name: str = "") -> None:
    path.write_bytes(numpy_helper.from_array(array, name).SerializeToString())


@pytest.fixture
def data_set(tmp_path: Path) -> Path:
    folder = tmp_path / "model" / "test_data_set_0"
    folder.mkdir(parents=True)
    write_pb(folder / "input_0.pb", np.zeros((1, 3), np.float32), "x")
    return folder


def test_zoo_outputs_are_mapped_by_tensor_name(data_set: Path) -> None:
    write_pb(data_set / "output_0.pb", np.array([1, 2], np.int64), "label")
    write_pb(data_set / "output_1.pb", np.array([[0.25, 0.75]], np.float32), "prob")
    expected, tolerances = zoo_expected(data_set, ["prob", "label"])
    assert sorted(expected) == ["label", "prob"]
    np.testing.assert_array_equal(expected["prob"], np.array([[0.25, 0.75]], np.float32))
    assert expected["prob"].dtype == np.float32
    np.testing.assert_array_equal(expected["label"], np.array([1, 2], np.int64))
    assert tolerances == {}


def test_zoo_outputs_without_known_names_are_mapped_by_numeric_position(data_set: Path) -> None:
    write_pb(data_set / "output_10.pb", np.array([10.0], np.float32))
    write_pb(data_set / "output_2.pb", np.array([2.0], np.float32), "not_an_output")
    write_pb(data_set / "output_11.pb", np.array([11.0], np.float32))  # more files than outputs
    expected, _ = zoo_expected(data_set, ["first", "second"])
    assert {name: float(array[0]) for name, array in expected.items()} == {"first": 2.0, "second": 10.0}


@pytest.mark.parametrize("where", ["data_set", "model"])
def test_data_json_gives_rtol_atol_and_drops_the_cosine_limit(data_set: Path, where: str) -> None:
    folder = data_set if where == "data_set" else data_set.parent
    (folder / "data.json").write_text(json.dumps({"rtol": 1e-3, "atol": 1, "model": "x"}), encoding="utf-8")
    write_pb(data_set / "output_0.pb", np.array([1.0], np.float32), "y")
    _, tolerances = zoo_expected(data_set, ["y"])
    assert tolerances == {"rtol": 1e-3, "atol": 1.0, "cosine": 0.0}
    assert all(type(v) is float for v in tolerances.values())


def test_data_json_without_tolerances_adds_nothing(data_set: Path) -> None:
    (data_set / "data.json").write_text(json.dumps({"model": "x"}), encoding="utf-8")
    assert zoo_expected(data_set, ["y"]) == ({}, {})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not valid JSON"),
        ("[1e-3, 1e-3]", "must hold a JSON object with rtol/atol."),
        ('{"atol": -1e-3}', "rtol/atol must be finite numbers >= 0."),
        ('{"rtol": "0.01"}', "rtol/atol must be finite numbers >= 0."),
        ('{"atol": true}', "rtol/atol must be finite numbers >= 0."),
        ('{"rtol": NaN}', "rtol/atol must be finite numbers >= 0."),
        pytest.param('{"rtol": 1' + "0" * 400 + "}", "rtol/atol must be finite numbers >= 0.", id="huge-int"),
        pytest.param('{"atol": 1' + "0" * 5000 + "}", "is not valid JSON", id="int-past-str-limit"),
        pytest.param("[" * 200_000 + "]" * 200_000, "nested too deeply", id="deep-list"),
        pytest.param('{"a": ' * 200_000 + "1" + "}" * 200_000, "nested too deeply", id="deep-object"),
    ],
)
def test_a_bad_data_json_is_refused_naming_the_file(data_set: Path, text: str, message: str) -> None:
    path = data_set / "data.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputsError) as info:
        zoo_expected(data_set, ["y"])
    assert str(info.value).startswith(f"'{path}'")
    assert message in str(info.value)


def test_an_infinite_tolerance_in_data_json_is_refused(data_set: Path) -> None:
    (data_set / "data.json").write_text('{"atol": Infinity}', encoding="utf-8")
    with pytest.raises(InputsError, match="rtol/atol must be finite numbers >= 0"):
        zoo_expected(data_set, ["y"])


def test_an_unreadable_output_pb_is_refused_naming_the_file(data_set: Path) -> None:
    path = data_set / "output_0.pb"
    path.write_bytes(b"\xff\xff\xff")
    with pytest.raises(InputsError) as info:
        zoo_expected(data_set, ["y"])
    assert str(info.value).startswith(f"'{path}' is not a readable ONNX TensorProto: ")
