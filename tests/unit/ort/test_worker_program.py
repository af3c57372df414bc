"""The measuring worker's wire format and session recipe: pure logic, no process started."""

from __future__ import annotations

import io
import json
import struct

import numpy as np
import onnxruntime as ort
import pytest

from pytest_ortperf.ort import worker_program
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import session_options, session_recipe
from pytest_ortperf.ort.variants import OptLevel, Variant

CPU_ALL = Variant(resolve_provider("cpu", source="test"), OptLevel.ALL)


def _round_trip(
    header: dict[str, object], arrays: list[np.ndarray]
) -> tuple[dict[str, object], list[np.ndarray]]:
    stream = io.BytesIO()
    worker_program.write_message(stream, header, arrays)
    stream.seek(0)
    message = worker_program.read_message(stream)
    assert message is not None
    assert worker_program.read_message(stream) is None  # nothing after the one message
    return message


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype=np.float32).reshape(3, 4),
        np.array([1, -2, 3], dtype=np.int64),
        np.array([[True, False]]),
        np.array(1.5, dtype=np.float16),  # 0-d
        np.zeros((0, 3), dtype=np.uint8),  # empty
        np.array(["a", "héllo"]),
        np.arange(6, dtype=np.float64).reshape(2, 3).T,  # not contiguous
    ],
    ids=["float32", "int64", "bool", "float16-0d", "empty", "unicode", "transposed"],
)
def test_arrays_cross_as_bytes_with_dtype_and_shape(array: np.ndarray) -> None:
    header, arrays = _round_trip({"cmd": "x"}, [array])
    assert header["cmd"] == "x"
    assert arrays[0].dtype == array.dtype
    np.testing.assert_array_equal(arrays[0], array)


def test_object_string_arrays_travel_as_text() -> None:
    _, arrays = _round_trip({}, [np.array(["ab", "c"], dtype=object)])
    assert arrays[0].dtype.kind == "U"
    assert list(arrays[0]) == ["ab", "c"]


def test_a_message_is_json_not_a_pickle() -> None:
    stream = io.BytesIO()
    worker_program.write_message(stream, {"cmd": "time", "count": 3})
    raw = stream.getvalue()
    (size,) = struct.unpack(">I", raw[:4])
    assert json.loads(raw[4 : 4 + size]) == {"cmd": "time", "count": 3, "arrays": []}


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (struct.pack(">I", 10) + b"{}", "ended after 2 of 10 bytes"),
        (struct.pack(">I", 4) + b"nope", "not a worker message"),
        (struct.pack(">I", 2) + b"[]", "must be a JSON object"),
        (struct.pack(">I", 2**31), "is not a message"),
        (b"\x00\x00", "ended after"),
        (
            struct.pack(">I", 47) + b'{"arrays": [{"dtype": "|O", "shape": [1]}]}    ',
            "has no byte form",
        ),
    ],
    ids=["truncated", "not-json", "not-an-object", "huge-length", "half-a-length", "object-dtype"],
)
def test_a_broken_message_is_a_protocol_error(raw: bytes, problem: str) -> None:
    with pytest.raises(worker_program.ProtocolError, match=problem):
        worker_program.read_message(io.BytesIO(raw))


def test_a_clean_end_of_stream_is_none() -> None:
    assert worker_program.read_message(io.BytesIO(b"")) is None


def test_the_recipe_is_plain_json_and_builds_the_same_options_as_in_process() -> None:
    settings = SessionSettings(intra_op_threads=2, execution_mode="parallel", config_entries=(("a.b", "1"),))
    recipe = session_recipe(CPU_ALL, settings)
    assert json.loads(json.dumps(recipe)) == json.loads(json.dumps(recipe, sort_keys=True))
    remote = worker_program.session_options(ort, json.loads(json.dumps(recipe)))
    local = session_options(ort, CPU_ALL, settings)
    for field in (
        "graph_optimization_level",
        "intra_op_num_threads",
        "inter_op_num_threads",
        "execution_mode",
        "enable_cpu_mem_arena",
        "enable_mem_pattern",
    ):
        assert getattr(remote, field) == getattr(local, field), field
    for key, value in recipe["config_entries"]:
        assert remote.get_session_config_entry(key) == value
    assert remote.get_session_config_entry("a.b") == "1"


def test_an_optimization_level_this_runtime_lacks_is_named() -> None:
    recipe = dict(session_recipe(CPU_ALL, SessionSettings()), opt_level="ORT_ENABLE_EVERYTHING")
    with pytest.raises(ValueError, match=r"no GraphOptimizationLevel\.ORT_ENABLE_EVERYTHING"):
        worker_program.session_options(ort, recipe)
