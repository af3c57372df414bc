"""Feeds: seeded synthetic data, model-zoo test_data_set_N, and <stem>.npz beside the model."""

from __future__ import annotations

import gc
import hashlib
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, numpy_helper

from pytest_ortperf.errors import InputsError, UsageError
from pytest_ortperf.ort.inputs import (
    Feeds,
    InputOptions,
    InputSpec,
    load_feeds,
    resolve_shape,
    specs_from_session,
    symbolic,
    synthesize,
    synthetic_hint,
)
from pytest_ortperf.ort.models import LFS_POINTER, ModelSource

ModelFactory = Callable[[Sequence[tuple[str, int, Sequence[Any]]]], onnx.ModelProto]

ALL_TYPES = [
    ("f32", TensorProto.FLOAT, np.float32),
    ("f16", TensorProto.FLOAT16, np.float16),
    ("f64", TensorProto.DOUBLE, np.float64),
    ("i32", TensorProto.INT32, np.int32),
    ("i64", TensorProto.INT64, np.int64),
    ("u8", TensorProto.UINT8, np.uint8),
    ("flag", TensorProto.BOOL, np.bool_),
]


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _on_disk(model: onnx.ModelProto, path: Path) -> ModelSource:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = model.SerializeToString()
    path.write_bytes(data)
    return ModelSource(label=path.name, sha256=hashlib.sha256(data).hexdigest(), path=path)


# --- synthetic feeds ------------------------------------------------------------------------


def test_synthetic_feeds_cover_every_supported_dtype_and_run_in_ort(make_model: ModelFactory) -> None:
    model = make_model([(name, elem, ["batch", 3]) for name, elem, _ in ALL_TYPES])
    session = _session(model)
    specs = specs_from_session(session)
    assert [s.name for s in specs] == [name for name, _, _ in ALL_TYPES]
    assert specs[0] == InputSpec("f32", "tensor(float)", ("batch", 3))

    feeds = synthesize(specs, InputOptions(dims={"batch": 2}))
    for name, _, dtype in ALL_TYPES:
        assert feeds[name].dtype == np.dtype(dtype), name
        assert feeds[name].shape == (2, 3), name
    outputs = session.run(None, dict(feeds))  # ORT accepts every array as is
    for (name, _, _), out in zip(ALL_TYPES, outputs, strict=True):
        np.testing.assert_array_equal(out, feeds[name])


def test_synthetic_feeds_are_deterministic_per_seed() -> None:
    specs = [InputSpec("x", "tensor(float)", (2, 8)), InputSpec("ids", "tensor(int64)", (2, 8))]
    first = synthesize(specs, InputOptions(seed=7))
    again = synthesize(specs, InputOptions(seed=7))
    other = synthesize(specs, InputOptions(seed=8))
    for name in ("x", "ids"):
        np.testing.assert_array_equal(first[name], again[name])
        assert not np.array_equal(first[name], other[name]), name


def test_each_input_gets_its_own_stream() -> None:
    specs = [InputSpec("a", "tensor(float)", (16,)), InputSpec("b", "tensor(float)", (16,))]
    feeds = synthesize(specs, InputOptions())
    assert not np.array_equal(feeds["a"], feeds["b"])
    # and an input's data does not depend on which other inputs exist
    alone = synthesize(specs[1:], InputOptions())
    np.testing.assert_array_equal(alone["b"], feeds["b"])


def test_synthetic_values_look_random_not_constant() -> None:
    feeds = synthesize(
        [InputSpec("x", "tensor(float)", (1000,)), InputSpec("m", "tensor(bool)", (1000,))],
        InputOptions(),
    )
    assert 0.5 < float(feeds["x"].std()) < 1.5
    assert 300 < int(feeds["m"].sum()) < 700


def test_feeds_source_for_synthetic_names_the_seed() -> None:
    feeds = synthesize([InputSpec("x", "tensor(float)", (1,))], InputOptions(seed=12))
    assert isinstance(feeds, Feeds)
    assert isinstance(feeds, dict)
    assert feeds.source == "synthetic(seed=12)"


@pytest.mark.parametrize(
    ("shape", "dims", "expected"),
    [
        (("batch", "seq", 3), {"batch": 4, "seq": 128}, (4, 128, 3)),
        (("batch", "seq"), {"batch": 4}, (4, None)),  # a named dim that nothing sizes
        ((None, 5), {}, (1, 5)),  # a leading batch dim defaults to 1, unnamed or named as a batch
        (("batch", 5), {}, (1, 5)),
        (("batch_size", 5), {}, (1, 5)),
        (("N", 5), {}, (1, 5)),
        (("unk__12", 5), {}, (1, 5)),  # tf2onnx's unknown dim
        (("sequence", 64), {}, (None, 64)),  # a named axis 0 that is a length is never guessed
        (("num_boxes", 4), {}, (None, 4)),
        (("sequence", 64), {"sequence": 32}, (32, 64)),
        ((-1, 0, 2), {}, (1, None, 2)),  # ORT's -1 and 0 are unknown sizes
        ((None,), {}, (None,)),  # a rank-1 input's only dim is a length, not a batch
        ((3, None), {}, (3, None)),
        ((), {"batch": 2}, ()),
    ],
)
def test_resolve_shape(
    shape: tuple[Any, ...], dims: dict[str, int], expected: tuple[int | None, ...]
) -> None:
    assert resolve_shape(InputSpec("x", "tensor(float)", shape), InputOptions(dims=dims)) == expected


def test_shapes_size_a_whole_input_over_dims() -> None:
    spec = InputSpec("x", "tensor(float)", (None, 3, "height", None))
    options = InputOptions(dims={"height": 7}, shapes={"x": (2, 3, 64, 48)})
    assert resolve_shape(spec, options) == (2, 3, 64, 48)
    assert synthesize([spec], options)["x"].shape == (2, 3, 64, 48)


def test_symbolic_shapes_read_as_the_model_declares_them() -> None:
    assert symbolic((None, 3, -1, 0)) == "[?, 3, ?, ?]"
    assert symbolic(("batch", 3, "height", "width")) == "[batch, 3, height, width]"
    assert symbolic(()) == "[]"


def test_an_unnamed_dim_nothing_sizes_fails_naming_the_input_and_every_way_to_size_it(tmp_path: Path) -> None:
    spec = InputSpec("x", "tensor(float)", (None, 3, None, None))
    model = ModelSource(label="models/det.onnx", sha256="0", path=tmp_path / "models" / "det.onnx")
    with pytest.raises(InputsError) as info:
        synthesize([spec], InputOptions(), model=model)
    message = str(info.value)
    assert message.startswith("model 'models/det.onnx': nothing sizes input 'x' [?, 3, ?, ?] (axes 2, 3);")
    assert "shapes={'x': [1, 3, <n>, <n>]}" in message
    assert "det.npz" in message
    assert "test_data_set_0/input_<i>.pb" in message
    assert "dims=" not in message  # no named dim to size


def test_named_dims_nothing_sizes_are_offered_to_dims_and_every_input_is_named() -> None:
    specs = [
        InputSpec("image", "tensor(float)", ("batch", 3, "height", "width")),
        InputSpec("state", "tensor(float)", (2, None, 128)),
        InputSpec("sr", "tensor(int64)", ()),
    ]
    with pytest.raises(InputsError) as info:
        synthesize(specs, InputOptions(dims={"width": 32}))
    message = str(info.value)
    assert (
        "input 'image' [batch, 3, height, width] (axis 2: height); input 'state' [2, ?, 128] (axis 1)"
        in message
    )
    assert "shapes={'image': [1, 3, <n>, 32], 'state': [2, <n>, 128]}" in message
    assert "dims={'height': <n>}" in message
    assert "'sr'" not in message  # a scalar needs no size


@pytest.mark.parametrize(
    ("shapes", "expected"),
    [
        ({"y": (1, 3, 8, 8)}, "M: shapes names input 'y', which the model does not have; its inputs: 'x' [?, 3, ?, ?]; "
         "'sr' []."),
        ({"x": (1, 3, 8)}, "M: shapes gives input 'x' the shape [1, 3, 8], but the model declares it [?, 3, ?, ?] "
         "(the model's input has rank 4, not 3)."),
        ({"x": (1, 4, 8, 8)}, "M: shapes gives input 'x' the shape [1, 4, 8, 8], but the model declares it "
         "[?, 3, ?, ?] (axis 1 is fixed at 3)."),
        ({"sr": (1,)}, "M: shapes gives input 'sr' the shape [1], but the model declares it [] (the model's input "
         "has rank 0, not 1)."),
    ],
)  # fmt: skip
def test_shapes_that_do_not_fit_the_model_are_usage_errors(
    shapes: dict[str, tuple[int, ...]], expected: str
) -> None:
    specs = [InputSpec("x", "tensor(float)", (None, 3, None, None)), InputSpec("sr", "tensor(int64)", ())]
    with pytest.raises(UsageError) as info:
        synthesize(specs, InputOptions(shapes=shapes, shapes_origin="M"))
    assert str(info.value) == expected


def test_a_model_dims_name_that_matches_no_dim_lists_the_names_that_exist() -> None:
    specs = [InputSpec("x", "tensor(float)", ("batch", 3, "height", "width"))]
    options = InputOptions(dims={"heigth": 320}, model_dims=frozenset({"heigth"}), dims_origin="M")
    with pytest.raises(UsageError) as info:
        synthesize(specs, options)
    assert str(info.value).startswith(
        "M: dims 'heigth' matches no dim of the model's inputs; its named dims are batch, height, width "
        "(inputs: 'x' [batch, 3, height, width])."
    )
    unnamed = [InputSpec("x", "tensor(float)", (None, 3, None, None))]
    with pytest.raises(UsageError, match=r"its inputs have no named dims .*sized with shapes="):
        synthesize(
            unnamed, InputOptions(dims={"height": 320}, model_dims=frozenset({"height"}), dims_origin="M")
        )
    # the run-wide --ortperf-dims serves every model: a name one model lacks is no error
    assert synthesize(specs, InputOptions(dims={"height": 4, "width": 4, "sequence": 8}))["x"].shape == (
        1,
        3,
        4,
        4,
    )


def test_synthetic_hint_names_the_inputs_made_up_and_is_empty_for_real_data() -> None:
    feeds = synthesize(
        [InputSpec("audio", "tensor(float)", (1, "samples"))], InputOptions(dims={"samples": 1})
    )
    hint = synthetic_hint(feeds)
    assert hint.startswith("The inputs were synthesized (synthetic(seed=0)): audio float32[1, 1].")
    assert "shapes=" in hint
    assert "test_data_set_0" in hint
    assert synthetic_hint(Feeds(dict(feeds), source="test_data_set_0")) == ""
    assert synthetic_hint(dict(feeds)) == ""


def test_symbolic_dims_from_real_session(make_model: ModelFactory) -> None:
    session = _session(make_model([("x", TensorProto.FLOAT, ["batch", None, "seq", 3])]))
    specs = specs_from_session(session)
    with pytest.raises(InputsError, match=r"input 'x' \[batch, \?, seq, 3\] \(axis 1\)"):
        synthesize(specs, InputOptions(dims={"seq": 5}))
    feeds = synthesize(specs, InputOptions(dims={"seq": 5}, shapes={"x": (1, 2, 5, 3)}))
    assert feeds["x"].shape == (1, 2, 5, 3)
    session.run(None, dict(feeds))


@pytest.mark.parametrize(
    ("elem_type", "low", "high"),
    [("int64", 5, 8), ("int32", -3, 3), ("uint8", 250, 256), ("int8", -128, -120)],
)
def test_int_range_is_respected(elem_type: str, low: int, high: int) -> None:
    spec = InputSpec("ids", f"tensor({elem_type})", (4000,))
    array = synthesize([spec], InputOptions(int_range=(low, high)))["ids"]
    assert array.dtype == np.dtype(elem_type)
    assert int(array.min()) >= low
    assert int(array.max()) < high
    assert set(np.unique(array).tolist()) == set(range(low, high))  # whole range used


def test_default_int_range_is_0_to_100() -> None:
    array = synthesize([InputSpec("ids", "tensor(int64)", (5000,))], InputOptions())["ids"]
    assert (int(array.min()), int(array.max())) == (0, 99)


def test_per_input_int_ranges_override_the_global_one() -> None:
    specs = [InputSpec("ids", "tensor(int64)", (500,)), InputSpec("mask", "tensor(int64)", (500,))]
    feeds = synthesize(specs, InputOptions(int_range=(0, 1000), int_ranges={"mask": (0, 2)}))
    assert set(np.unique(feeds["mask"]).tolist()) == {0, 1}
    assert int(feeds["ids"].max()) >= 2


@pytest.mark.parametrize(
    ("elem_type", "int_range"),
    [("uint8", (0, 257)), ("uint8", (-1, 10)), ("int8", (0, 129)), ("int32", (0, 2**31 + 1))],
)
def test_range_that_does_not_fit_the_dtype_is_an_inputs_error(
    elem_type: str, int_range: tuple[int, int]
) -> None:
    spec = InputSpec("tok", f"tensor({elem_type})", (2,))
    with pytest.raises(InputsError) as info:
        synthesize([spec], InputOptions(int_ranges={"tok": int_range}))
    message = str(info.value)
    assert "'tok'" in message
    assert f"tensor({elem_type})" in message
    assert f"[{int_range[0]}, {int_range[1]})" in message


def test_unsupported_type_tells_to_use_an_npz(make_model: ModelFactory) -> None:
    session = _session(make_model([("text", TensorProto.STRING, [1])]))
    with pytest.raises(InputsError) as info:
        synthesize(specs_from_session(session), InputOptions())
    message = str(info.value)
    assert "'text'" in message
    assert "tensor(string)" in message
    assert ".npz" in message


# --- model-zoo test data sets -----------------------------------------------------------------


def _write_pb(path: Path, array: np.ndarray[Any, Any], name: str | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(numpy_helper.from_array(array, name).SerializeToString())


@pytest.fixture
def two_input_model(tmp_path: Path, make_model: ModelFactory) -> ModelSource:
    model = make_model([("x", TensorProto.FLOAT, ["batch", 3]), ("ids", TensorProto.INT64, [2])])
    return _on_disk(model, tmp_path / "zoo" / "model.onnx")


TWO_SPECS = [InputSpec("x", "tensor(float)", ("batch", 3)), InputSpec("ids", "tensor(int64)", (2,))]


def test_loads_test_data_set_0_by_tensor_name(two_input_model: ModelSource) -> None:
    assert two_input_model.directory is not None
    data_set = two_input_model.directory / "test_data_set_0"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ids = np.array([4, 2], dtype=np.int64)
    # file order does not match the model's input order: names decide
    _write_pb(data_set / "input_0.pb", ids, "ids")
    _write_pb(data_set / "input_1.pb", x, "x")
    _write_pb(data_set / "output_0.pb", x, "x_out")  # outputs are ignored
    feeds = load_feeds(two_input_model, TWO_SPECS, InputOptions())
    assert feeds.source == "test_data_set_0"
    assert list(feeds) == ["x", "ids"]
    np.testing.assert_array_equal(feeds["x"], x)
    np.testing.assert_array_equal(feeds["ids"], ids)


def test_unnamed_tensors_are_matched_by_position(two_input_model: ModelSource) -> None:
    assert two_input_model.directory is not None
    data_set = two_input_model.directory / "test_data_set_0"
    x = np.ones((1, 3), dtype=np.float32)
    ids = np.array([1, 9], dtype=np.int64)
    _write_pb(data_set / "input_0.pb", x)
    _write_pb(data_set / "input_1.pb", ids)
    feeds = load_feeds(two_input_model, TWO_SPECS, InputOptions())
    np.testing.assert_array_equal(feeds["ids"], ids)
    np.testing.assert_array_equal(feeds["x"], x)


def test_lowest_numbered_data_set_is_chosen(two_input_model: ModelSource) -> None:
    assert two_input_model.directory is not None
    for number in (10, 2, 3):
        data_set = two_input_model.directory / f"test_data_set_{number}"
        _write_pb(data_set / "input_0.pb", np.full((1, 3), number, dtype=np.float32), "x")
        _write_pb(data_set / "input_1.pb", np.array([number, number], dtype=np.int64), "ids")
    (two_input_model.directory / "test_data_set_1").write_text("a file, not a data set")
    feeds = load_feeds(two_input_model, TWO_SPECS, InputOptions())
    assert feeds.source == "test_data_set_2"  # numeric order, not text order ("10" < "2")
    assert feeds["ids"].tolist() == [2, 2]


def test_real_squeezenet_with_a_zoo_data_set(tmp_path: Path, squeezenet_path: Path) -> None:
    zoo = tmp_path / "squeezenet"
    model = _on_disk(onnx.load(squeezenet_path), zoo / "model.onnx")
    session = ort.InferenceSession(str(model.path), providers=["CPUExecutionProvider"])
    specs = specs_from_session(session)
    (spec,) = specs
    shape = resolve_shape(spec, InputOptions())
    image = np.random.default_rng(1).random(shape, dtype=np.float32)
    _write_pb(zoo / "test_data_set_0" / "input_0.pb", image, spec.name)
    feeds = load_feeds(model, specs, InputOptions())
    assert feeds.source == "test_data_set_0"
    np.testing.assert_array_equal(feeds[spec.name], image)
    (probs,) = session.run(None, dict(feeds))
    assert probs.shape[0] == 1


def test_data_set_with_wrong_file_count_names_directory_and_inputs(two_input_model: ModelSource) -> None:
    assert two_input_model.directory is not None
    data_set = two_input_model.directory / "test_data_set_0"
    _write_pb(data_set / "input_0.pb", np.ones((1, 3), dtype=np.float32), "x")
    with pytest.raises(InputsError) as info:
        load_feeds(two_input_model, TWO_SPECS, InputOptions())
    message = str(info.value)
    assert str(data_set) in message
    assert "1 input_*.pb" in message
    assert "x, ids" in message


def test_corrupt_pb_is_an_inputs_error_naming_the_file(two_input_model: ModelSource) -> None:
    assert two_input_model.directory is not None
    data_set = two_input_model.directory / "test_data_set_0"
    _write_pb(data_set / "input_0.pb", np.ones((1, 3), dtype=np.float32), "x")
    (data_set / "input_1.pb").write_bytes(b"\xff\xff\xff not protobuf")
    with pytest.raises(InputsError) as info:
        load_feeds(two_input_model, TWO_SPECS, InputOptions())
    assert f"'{data_set / 'input_1.pb'}' is not a readable ONNX TensorProto" in str(info.value)


def test_a_git_lfs_pointer_in_a_data_set_names_git_lfs_pull(two_input_model: ModelSource) -> None:
    assert two_input_model.directory is not None
    data_set = two_input_model.directory / "test_data_set_0"
    _write_pb(data_set / "input_0.pb", np.ones((1, 3), dtype=np.float32), "x")
    (data_set / "input_1.pb").write_bytes(LFS_POINTER + b"v1\noid sha256:" + b"ab" * 32 + b"\nsize 88\n")
    with pytest.raises(InputsError) as info:
        load_feeds(two_input_model, TWO_SPECS, InputOptions())
    assert str(info.value) == (
        f"'{data_set / 'input_1.pb'}' is a Git LFS pointer (a small text file that stands for the tensor), not "
        "the tensor: this checkout has not fetched its LFS objects; run 'git lfs pull' in the repository (on "
        "GitHub Actions: actions/checkout with lfs: true)."
    )


def test_pb_without_element_type_is_an_inputs_error(two_input_model: ModelSource) -> None:
    assert two_input_model.directory is not None
    data_set = two_input_model.directory / "test_data_set_0"
    _write_pb(data_set / "input_0.pb", np.ones((1, 3), dtype=np.float32), "x")
    (data_set / "input_1.pb").write_bytes(b"\x08\x63")  # parses: dims=[99], no data type
    with pytest.raises(InputsError, match=r"input_1\.pb' is not a readable ONNX TensorProto"):
        load_feeds(two_input_model, TWO_SPECS, InputOptions())


def test_data_set_with_wrong_names_lists_missing_and_unexpected(two_input_model: ModelSource) -> None:
    assert two_input_model.directory is not None
    data_set = two_input_model.directory / "test_data_set_0"
    _write_pb(data_set / "input_0.pb", np.ones((1, 3), dtype=np.float32), "x")
    _write_pb(data_set / "input_1.pb", np.ones((2,), dtype=np.int64), "x")  # names x twice
    with pytest.raises(InputsError) as info:
        load_feeds(two_input_model, TWO_SPECS, InputOptions())
    message = str(info.value)
    assert str(data_set) in message
    assert "missing: ids" in message


def test_data_set_with_wrong_dtype_names_dir_input_and_types(two_input_model: ModelSource) -> None:
    assert two_input_model.directory is not None
    data_set = two_input_model.directory / "test_data_set_0"
    _write_pb(data_set / "input_0.pb", np.ones((1, 3), dtype=np.float64), "x")
    _write_pb(data_set / "input_1.pb", np.ones((2,), dtype=np.int64), "ids")
    with pytest.raises(InputsError) as info:
        load_feeds(two_input_model, TWO_SPECS, InputOptions())
    message = str(info.value)
    assert str(data_set) in message
    assert "'x' is float64 but the model expects tensor(float)" in message


# --- .npz beside the model ---------------------------------------------------------------------


@pytest.fixture
def npz_model(tmp_path: Path, make_model: ModelFactory) -> ModelSource:
    model = make_model([("x", TensorProto.FLOAT, ["batch", 3]), ("ids", TensorProto.INT64, [2])])
    return _on_disk(model, tmp_path / "models" / "bert.v2.onnx")


def test_npz_beside_the_model_is_used(npz_model: ModelSource) -> None:
    assert npz_model.path is not None
    npz = npz_model.path.parent / "bert.v2.npz"
    x = np.full((5, 3), 0.25, dtype=np.float32)
    ids = np.array([7, 8], dtype=np.int64)
    np.savez(npz, ids=ids, x=x)
    feeds = load_feeds(npz_model, TWO_SPECS, InputOptions())
    assert feeds.source == "bert.v2.npz"
    assert list(feeds) == ["x", "ids"]  # model order
    np.testing.assert_array_equal(feeds["x"], x)
    np.testing.assert_array_equal(feeds["ids"], ids)


def test_data_set_wins_over_npz(npz_model: ModelSource) -> None:
    assert npz_model.path is not None
    assert npz_model.directory is not None
    zeros = {"x": np.zeros((1, 3), np.float32), "ids": np.zeros(2, np.int64)}
    np.savez(npz_model.path.with_suffix(".npz"), **zeros)  # type: ignore[arg-type]
    data_set = npz_model.directory / "test_data_set_0"
    _write_pb(data_set / "input_0.pb", np.ones((1, 3), dtype=np.float32), "x")
    _write_pb(data_set / "input_1.pb", np.ones((2,), dtype=np.int64), "ids")
    assert load_feeds(npz_model, TWO_SPECS, InputOptions()).source == "test_data_set_0"


def test_other_npz_files_are_ignored(npz_model: ModelSource) -> None:
    assert npz_model.directory is not None
    np.savez(npz_model.directory / "other.npz", x=np.zeros((1, 3), np.float32))
    feeds = load_feeds(npz_model, TWO_SPECS, InputOptions(seed=3))
    assert feeds.source == "synthetic(seed=3)"


def test_in_memory_model_uses_synthetic_feeds(float_model: onnx.ModelProto) -> None:
    data = float_model.SerializeToString()
    source = ModelSource(label="<bytes>", sha256=hashlib.sha256(data).hexdigest(), data=data)
    feeds = load_feeds(source, [InputSpec("x", "tensor(float)", (1, 4))], InputOptions())
    assert feeds.source == "synthetic(seed=0)"
    assert feeds["x"].shape == (1, 4)


@pytest.mark.parametrize(
    ("arrays", "fragment"),
    [
        ({"x": np.zeros((1, 3), np.float32)}, "missing: ids; unexpected: none"),
        (
            {"x": np.zeros((1, 3), np.float32), "ids": np.zeros(2, np.int64), "extra": np.zeros(1)},
            "missing: none; unexpected: extra",
        ),
        ({"x": np.zeros((1, 3), np.float32), "ids": np.zeros(2, np.int32)}, "'ids' is int32"),
        ({"x": np.zeros((1, 4), np.float32), "ids": np.zeros(2, np.int64)}, "'x' has shape (1, 4)"),
        ({"x": np.zeros((3,), np.float32), "ids": np.zeros(2, np.int64)}, "'x' has shape (3,)"),
        ({"x": np.zeros((1, 3), np.float32), "ids": np.zeros((1, 2), np.int64)}, "'ids' has shape"),
    ],
)
def test_npz_mismatches_name_the_file(
    npz_model: ModelSource, arrays: dict[str, np.ndarray[Any, Any]], fragment: str
) -> None:
    assert npz_model.path is not None
    npz = npz_model.path.with_suffix(".npz")
    np.savez(npz, **arrays)  # type: ignore[arg-type]
    with pytest.raises(InputsError) as info:
        load_feeds(npz_model, TWO_SPECS, InputOptions())
    message = str(info.value)
    assert f"'{npz}'" in message
    assert fragment in message


def test_npz_with_object_array_is_refused_without_unpickling(npz_model: ModelSource) -> None:
    assert npz_model.path is not None
    npz = npz_model.path.with_suffix(".npz")
    np.savez(npz, x=np.array([{"evil": 1}, None], dtype=object), ids=np.zeros(2, np.int64))
    with pytest.raises(InputsError) as info:
        load_feeds(npz_model, TWO_SPECS, InputOptions())
    message = str(info.value)
    assert f"'{npz}' cannot be read as a numpy .npz without pickle" in message
    assert "allow_pickle" in message


@pytest.mark.parametrize(
    "content",
    [b"not an npz at all", np.lib.format.MAGIC_PREFIX + b"\x01\x00garbage"],
    ids=["garbage", "npy-header"],
)
def test_corrupt_npz_names_the_file(npz_model: ModelSource, content: bytes) -> None:
    assert npz_model.path is not None
    npz = npz_model.path.with_suffix(".npz")
    npz.write_bytes(content)
    with pytest.raises(InputsError) as info:
        load_feeds(npz_model, TWO_SPECS, InputOptions())
    assert str(info.value) == f"'{npz}' is not a .npz archive."


def test_truncated_zip_npz_is_refused_without_leaking_the_file(
    npz_model: ModelSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert npz_model.path is not None
    npz = npz_model.path.with_suffix(".npz")
    npz.write_bytes(b"PK\x03\x04 truncated zip")
    leaked: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", leaked.append)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        try:
            load_feeds(npz_model, TWO_SPECS, InputOptions())
        except InputsError as exc:
            message = str(exc)
        else:
            pytest.fail("a truncated .npz was accepted")
        gc.collect()
    assert str(npz) in message
    assert [str(u.exc_value) for u in leaked] == []


def test_shapes_that_the_model_own_data_contradicts_are_a_usage_error(two_input_model: ModelSource) -> None:
    assert two_input_model.directory is not None
    data_set = two_input_model.directory / "test_data_set_0"
    _write_pb(data_set / "input_0.pb", np.zeros((2, 3), np.float32), "x")
    _write_pb(data_set / "input_1.pb", np.array([4, 2], np.int64), "ids")
    agreeing = InputOptions(shapes={"x": (2, 3)}, shapes_origin="M")
    assert load_feeds(two_input_model, TWO_SPECS, agreeing).source == "test_data_set_0"
    with pytest.raises(UsageError) as info:
        load_feeds(two_input_model, TWO_SPECS, InputOptions(shapes={"x": (4, 3)}, shapes_origin="M"))
    assert str(info.value) == (
        f"M: shapes gives input 'x' the shape [4, 3], but the model's own inputs ('{data_set}') hold it at "
        "[2, 3] and are fed as they are; drop the entry or change the data."
    )
