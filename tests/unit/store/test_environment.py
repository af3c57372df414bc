"""What a measurement depended on: the input digest, the recorded environment, what changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ortperf import __version__
from pytest_ortperf.checks.latency_figures import latency_figures
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.runtime import RuntimeInfo
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.ort.variants import OptLevel, Variant
from pytest_ortperf.store.baselines import BaselineEntry, parse, render
from pytest_ortperf.store.environment import (
    describe_inputs,
    environment,
    feeds_digest,
    portable_label,
    recipe_changes,
    what_changed,
)
from pytest_ortperf.store.hardware import Hardware
from pytest_ortperf.store.machine import Machine
from pytest_ortperf.store.recipe import MEASURED_KEYS, RECIPE_KEYS, same_recipe, split


def feeds() -> dict[str, np.ndarray[Any, Any]]:
    return {
        "pixels": np.arange(12, dtype=np.float32).reshape(1, 3, 4),
        "mask": np.array([[1, 0, 1]], dtype=np.int64),
    }


# feeds_digest --------------------------------------------------------------


def test_feeds_digest_is_a_stable_sha256() -> None:
    digest = feeds_digest(feeds())
    assert digest == feeds_digest(feeds())
    assert len(digest) == 64
    int(digest, 16)


def test_feeds_digest_ignores_dict_order() -> None:
    forward = feeds()
    backward = dict(reversed(list(forward.items())))
    assert list(backward) != list(forward)
    assert feeds_digest(backward) == feeds_digest(forward)


def test_feeds_digest_ignores_memory_layout() -> None:
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    fortran = np.asfortranarray(data)
    assert not fortran.flags.c_contiguous
    assert feeds_digest({"x": fortran}) == feeds_digest({"x": data})
    assert feeds_digest({"x": data.T.copy().T}) == feeds_digest({"x": data})


def _changed(**replacements: np.ndarray[Any, Any]) -> dict[str, np.ndarray[Any, Any]]:
    return feeds() | replacements


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(_changed(mask=np.array([[1, 0, 0]], dtype=np.int64)), id="value"),
        pytest.param(_changed(mask=np.array([[1, 0, 1]], dtype=np.int32)), id="dtype"),
        pytest.param(_changed(pixels=np.arange(12, dtype=np.float32).reshape(1, 4, 3)), id="shape"),
        pytest.param(_changed(pixels=np.arange(12, dtype=np.float32).reshape(3, 4)), id="rank"),
        pytest.param({"image": feeds()["pixels"], "mask": feeds()["mask"]}, id="name"),
        pytest.param({"pixels": feeds()["pixels"]}, id="fewer-inputs"),
    ],
)
def test_feeds_digest_changes_with_values_dtypes_shapes_and_names(
    other: dict[str, np.ndarray[Any, Any]],
) -> None:
    assert feeds_digest(other) != feeds_digest(feeds())


def test_feeds_digest_changes_with_the_dtype_even_for_the_same_bytes() -> None:
    floats = np.arange(4, dtype=np.float32)
    assert floats.tobytes() == floats.view(np.int32).tobytes()
    assert feeds_digest({"x": floats}) != feeds_digest({"x": floats.view(np.int32)})


def test_describe_inputs_lists_dtype_and_shape_by_name() -> None:
    assert describe_inputs(feeds()) == {"mask": "int64[1, 3]", "pixels": "float32[1, 3, 4]"}
    assert list(describe_inputs(feeds())) == ["mask", "pixels"]


# environment ---------------------------------------------------------------


def built_session(settings: SessionSettings) -> BuiltSession:
    return BuiltSession(
        session=None,
        model=ModelSource(
            label="models/squeezenet.onnx", sha256="5e" * 32, path=Path("models/squeezenet.onnx")
        ),
        variant=Variant(resolve_provider("cpu", source="test"), OptLevel.ALL),
        settings=settings,
        providers=("CPUExecutionProvider",),
        placement=None,
        build_seconds=0.1,
    )


HARDWARE = Hardware("x86_64", "AuthenticAMD", "25/1/1", "zen3", ("avx", "avx2"), 4)
MACHINE = Machine(
    name="ci",
    cpu="AMD EPYC 7R13 Processor",
    cores=4,
    arch="x86_64",
    system="linux",
    hardware=HARDWARE,
    gpu="",
)
RUNTIME = RuntimeInfo(
    version="1.31.1",
    flavour="onnxruntime-gpu",
    distributions=(("onnxruntime-gpu", "1.31.1"),),
    available_providers=("CPUExecutionProvider",),
)


def test_environment_records_what_latency_depends_on() -> None:
    settings = SessionSettings().with_overrides({"intra_op_threads": 2}, source="test")
    env = environment(built_session(settings), feeds(), machine=MACHINE, runtime=RUNTIME)
    assert env["plugin_version"] == __version__
    assert env["ort_version"] == "1.31.1"
    assert env["ort_flavour"] == "onnxruntime-gpu"
    assert env["model"] == "models/squeezenet.onnx"
    assert env["model_sha256"] == "5e" * 32
    assert env["variant"] == "cpu-all"
    assert env["providers_requested"] == ["CPUExecutionProvider"]
    assert env["providers_used"] == ["CPUExecutionProvider"]
    assert env["settings"]["intra_op_threads"] == 2
    assert env["inputs"] == {"mask": "int64[1, 3]", "pixels": "float32[1, 3, 4]"}
    assert env["inputs_sha256"] == feeds_digest(feeds())
    assert (env["cpu"], env["cores"], env["gpu"]) == ("AMD EPYC 7R13 Processor", 4, "")
    assert env["hardware"] == {**HARDWARE.as_dict(), "digest": HARDWARE.digest}


@pytest.mark.parametrize(
    ("label", "portable"),
    [
        ("models/resnet50.onnx", "models/resnet50.onnx"),
        (
            "/tmp/venv/lib/python3.11/site-packages/onnx/backend/test/data/light/light_resnet50.onnx",
            "<site-packages>/onnx/backend/test/data/light/light_resnet50.onnx",
        ),
        ("/usr/lib/python3/dist-packages/pkg/m.onnx", "<site-packages>/pkg/m.onnx"),
        ("/home/me/elsewhere/model.onnx", "<outside the rootdir>/model.onnx"),
        ("<ModelProto mlp>", "<ModelProto mlp>"),
    ],
)
def test_no_baseline_holds_a_path_of_the_recording_machine(label: str, portable: str) -> None:
    assert portable_label(label) == portable


def test_environment_read_back_from_a_baseline_file_shows_no_change(tmp_path: Path) -> None:
    """The recorded environment survives JSON: comparing it with a fresh one finds nothing."""
    settings = SessionSettings().with_overrides(
        {
            "config_entries": {"session.disable_prepacking": "1"},
            "provider_options": {"cpu": {"arena_extend_strategy": "kSameAsRequested"}},
        },
        source="test",
    )
    env = environment(built_session(settings), feeds(), machine=MACHINE, runtime=RUNTIME)
    stats = LatencyStats(1, 1, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1000.0, (1.0,))
    recipe, measured_on = split(env)
    # every key of an environment has its place (model_transformers: only with the pre-pass;
    # model_precision: only for a precision variant's built model; model_data_sha256: only for a
    # model with external data files; model_dvc: only for a model DVC tracks)
    only_some = {"model_transformers", "model_precision", "model_data_sha256", "model_dvc"}
    assert set(recipe) == set(RECIPE_KEYS) - only_some
    assert set(measured_on) == set(MEASURED_KEYS)
    figures = latency_figures("2025-01-02", stats, measured_on=measured_on)
    text = render({"test_x": BaselineEntry("cpu-all", "2025-01-02", recipe, figures={"ci": figures})})
    stored = parse(text, path=tmp_path / "x.json")["test_x"]
    assert what_changed(stored.environment_for("ci"), env) == []
    assert same_recipe(stored.recipe, split(env)[0])


# what_changed --------------------------------------------------------------

OLD: dict[str, Any] = {
    "plugin_version": "0.1.0",
    "model_sha256": "a" * 64,
    "ort_version": "1.30.0",
    "ort_flavour": "onnxruntime",
    "providers_used": ["CPUExecutionProvider"],
    "settings": {"intra_op_threads": 1, "execution_mode": "sequential", "config_entries": {}},
    "inputs": {"x": "float32[1, 4]"},
    "inputs_sha256": "c" * 64,
    "cpu": "AMD EPYC 7R13 Processor",
    "cores": 4,
    "gpu": "",
}


def test_what_changed_is_empty_for_equal_environments() -> None:
    assert what_changed(OLD, dict(OLD)) == []
    assert what_changed({}, {}) == []


def test_what_changed_ignores_keys_that_do_not_explain_latency() -> None:
    assert what_changed(OLD, OLD | {"plugin_version": "9.9.9", "model": "renamed.onnx"}) == []


def test_what_changed_names_model_runtime_and_settings_differences() -> None:
    new = OLD | {
        "model_sha256": "b" * 64,
        "ort_version": "1.31.1",
        "settings": {"intra_op_threads": 4, "execution_mode": "parallel", "config_entries": {}},
    }
    assert what_changed(OLD, new) == [
        "model sha256 aaaaaaaaaaaa -> bbbbbbbbbbbb",
        "onnxruntime 1.30.0 -> 1.31.1",
        "session settings: execution_mode 'sequential' -> 'parallel', intra_op_threads 1 -> 4",
    ]


def test_what_changed_names_a_setting_that_appeared() -> None:
    new = OLD | {"settings": OLD["settings"] | {"denormal_as_zero": True}}
    assert what_changed(OLD, new) == ["session settings: denormal_as_zero None -> True"]


def test_what_changed_names_how_latency_was_measured() -> None:
    # A baseline measured another way (before the canary, another budget) is re-recorded by an update.
    old = OLD | {"measurement": {"budget_s": 2.0, "rounds": 15, "warmup_runs": 5, "warmup_s": 0.2}}
    new = OLD | {
        "measurement": {"budget_s": 4.0, "rounds": 40, "warmup_runs": 5, "warmup_s": 0.2, "canary": True}
    }
    assert what_changed(old, new) == [
        "measurement: budget_s 2.0 -> 4.0, canary None -> True, rounds 15 -> 40",
    ]


@pytest.mark.parametrize(
    ("key", "value", "line"),
    [
        ("ort_flavour", "onnxruntime-gpu", "onnxruntime wheel onnxruntime -> onnxruntime-gpu"),
        (
            "providers_used",
            ["CUDAExecutionProvider", "CPUExecutionProvider"],
            "providers used ['CPUExecutionProvider'] -> ['CUDAExecutionProvider', 'CPUExecutionProvider']",
        ),
        ("inputs", {"x": "float32[8, 4]"}, "inputs: x float32[1, 4] -> [8, 4]"),
        ("inputs_sha256", "d" * 64, "input data cccccccccccc -> dddddddddddd"),
        ("cpu", "Intel(R) Xeon(R)", "CPU AMD EPYC 7R13 Processor -> Intel(R) Xeon(R)"),
        ("cores", 8, "cores 4 -> 8"),
        ("gpu", "NVIDIA L4 (driver 550)", "GPU  -> NVIDIA L4 (driver 550)"),
    ],
)
def test_what_changed_labels_each_key(key: str, value: Any, line: str) -> None:
    assert what_changed(OLD, OLD | {key: value}) == [line]


def test_what_changed_names_each_changed_input_with_its_type_once() -> None:
    before = {"inputs": {"images": "float32[1, 3, 320, 320]", "mask": "int64[1, 8]", "old": "float32[2]"}}
    after = {"inputs": {"images": "float32[1, 3, 640, 640]", "mask": "int32[1, 8]", "new": "bool[4]"}}
    assert what_changed(before, after) == [
        "inputs: images float32[1, 3, 320, 320] -> [1, 3, 640, 640], mask int64[1, 8] -> int32[1, 8], "
        "new none -> bool[4], old float32[2] -> none"
    ]


def test_what_changed_reports_a_key_missing_from_an_old_baseline() -> None:
    old = {k: v for k, v in OLD.items() if k != "ort_version"}
    assert what_changed(old, OLD) == ["onnxruntime None -> 1.30.0"]


def test_recipe_changes_name_what_the_repository_changed_and_nothing_a_machine_measured() -> None:
    recipe = {key: value for key, value in OLD.items() if key not in ("cpu", "cores", "gpu")} | {
        "variant": "cpu-all"
    }
    assert recipe_changes(recipe, OLD | {"variant": "cpu-all", "cpu": "other", "cores": 64}) == []
    new = OLD | {"variant": "cpu-all", "model_sha256": "b" * 64, "inputs_sha256": "d" * 64}
    assert recipe_changes(recipe, new) == [
        "model sha256 aaaaaaaaaaaa -> bbbbbbbbbbbb",
        "input data cccccccccccc -> dddddddddddd",
    ]
    assert recipe_changes(recipe, OLD | {"variant": "cpu-basic"}) == ["variant cpu-all -> cpu-basic"]


def test_recipe_changes_name_a_key_an_older_recipe_lacks() -> None:
    old = {key: value for key, value in OLD.items() if key != "inputs_sha256"} | {"variant": "cpu-all"}
    assert recipe_changes(old, OLD | {"variant": "cpu-all"}) == [
        "the recorded recipe has no inputs_sha256 (recorded by an older version)"
    ]
