"""Inputs are never degenerate without saying so: models shaped as exporters write them (a detector
``[?, 3, ?, ?]``, a stateful VAD with an int64 sample rate), sized by ``shapes=``, recorded, changed
for real and gated; real sessions."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx.tools.update_model_dims import update_inputs_outputs_dims

from tests.exported_models import detector_model, vad_model
from tests.plugin.conftest import git

ONE_LEVEL = ("--ort-opt-levels=all", "--ortperf-budget=0.2", "--ortperf-max-cv=1000%")

DETECTOR_TESTS = """
import pytest
pytestmark = pytest.mark.ort_model("detector.onnx"{sizes})

def test_latency(ort_perf):
    ort_perf.check_latency()

def test_accuracy(ort_perf):
    ort_perf.check_accuracy()
"""


def _detector_suite(pytester: pytest.Pytester, sizes: str = "") -> None:
    pytester.makepyfile(test_det=DETECTOR_TESTS.format(sizes=sizes))


UNSIZED_MESSAGE = (
    "model 'detector.onnx': nothing sizes input 'x' [[]?, 3, ?, ?[]] (axes 2, 3); synthetic data would have to "
    "guess these sizes (a dim of 1 measures a degenerate input). Size it in its model table "
    '([[]tool.ortperf.models."<glob>"[]] in pyproject.toml or [[]models."<glob>"[]] in an ortperf.toml): '
    "shapes = {x = [[]1, 3, <n>, <n>[]]}; or in a test: ort_model(..., shapes={'x': [[]1, 3, <n>, <n>[]]}), "
    "or give the model its own inputs beside it: "
    "detector.npz, or test_data_set_0/input_<i>.pb (ONNX model-zoo layout)."
)


def test_an_unsized_detector_fails_its_checks_naming_the_input_and_shapes(pytester: pytest.Pytester) -> None:
    onnx.save(detector_model(), pytester.path / "detector.onnx")
    _detector_suite(pytester)
    pytester.makepyfile(
        test_more="""
        import numpy as np
        import pytest
        pytestmark = pytest.mark.ort_model("detector.onnx")

        def test_own_feeds(ort_perf):  # a check given its feeds needs no sizes
            ort_perf.check_accuracy(feeds={"x": np.zeros((1, 3, 16, 16), np.float32)})

        def test_inputs(ort_inputs):
            pass
        """
    )
    first = pytester.runpytest("--ortperf-update", "--ortperf-report=r.json", *ONE_LEVEL)
    first.assert_outcomes(failed=2, passed=1, errors=1)
    first.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_inputs[[]cpu-all[]]*",
            UNSIZED_MESSAGE,
            "*_ test_latency[[]cpu-all[]] _*",
            UNSIZED_MESSAGE,
            "*_ test_accuracy[[]cpu-all[]] _*",
            UNSIZED_MESSAGE,
        ]
    )
    records = json.loads((pytester.path / "r.json").read_text())["checks"]
    unsized = [
        (r["test"], r["kind"], r["verdict"]) for r in records if "nothing sizes input 'x'" in r["message"]
    ]
    assert unsized == [
        ("test_det.py::test_latency[cpu-all]", "latency", "error"),
        ("test_det.py::test_accuracy[cpu-all]", "accuracy", "error"),
    ]
    entries = json.loads((pytester.path / "baselines" / "test_more.py.json").read_text())["entries"]
    assert list(entries) == ["test_own_feeds[cpu-all]"]
    assert not (pytester.path / "baselines" / "test_det.py.json").exists(), (
        "nothing measured, nothing recorded"
    )


@pytest.mark.slow
def test_a_sized_detector_is_recorded_at_its_shape_shown_and_gated_when_it_changes(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    onnx.save(detector_model(), pytester.path / "detector.onnx")
    _detector_suite(pytester, ', shapes={"x": [1, 3, 64, 64]}')
    recorded = pytester.runpytest("--ortperf-update", "--ortperf-report=r.json", *ONE_LEVEL)
    recorded.assert_outcomes(passed=2)
    recorded.stdout.fnmatch_lines(
        ["inputs: x float32[[]1, 3, 64, 64[]] (synthetic(seed=0)) for test_det.py::test_latency"]
    )
    (latency,) = [
        c for c in json.loads((pytester.path / "r.json").read_text())["checks"] if c["kind"] == "latency"
    ]
    assert latency["inputs"] == {"x": "float32[1, 3, 64, 64]"}
    assert latency["inputs_source"] == "synthetic(seed=0)"
    entry = json.loads((pytester.path / "baselines" / "test_det.py.json").read_text())["entries"]
    assert entry["test_latency[cpu-all]"]["recipe"]["inputs"] == {"x": "float32[1, 3, 64, 64]"}

    pytester.runpytest(*ONE_LEVEL).assert_outcomes(passed=2)

    # Committed, as a model repository keeps it: the retrained model's latency is then measured side by
    # side with the recorded one rebuilt from git (with neither git nor a model cache, stored figures
    # from another minute would decide, and a loaded 2-core machine once moved them +20.7%).
    for args in (("init", "-q"), ("add", "detector.onnx"), ("commit", "-q", "-m", "detector")):
        git(pytester, "-c", "user.name=T", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args)
    onnx.save(detector_model(seed=1), pytester.path / "detector.onnx")  # retrained: other weights
    changed = pytester.runpytest(*ONE_LEVEL, "--ortperf-report=c.json")
    changed.assert_outcomes(passed=1, failed=1)
    (latency,) = [
        c for c in json.loads((pytester.path / "c.json").read_text())["checks"] if c["kind"] == "latency"
    ]
    assert latency["path"].startswith("side by side vs the recorded model (git ")
    # the side-by-side route names what changed since the baseline too, as the stored one does
    (change,) = latency["changed_since_baseline"]
    assert change.startswith("model sha256 ")
    changed.stdout.fnmatch_lines(["*test_accuracy*", "*output 'heatmap': FAILED*"])


LATENCY_ONLY = """
import pytest
pytestmark = pytest.mark.ort_model("detector.onnx"{sizes})

def test_latency(ort_perf):
    ort_perf.check_latency()
"""


@pytest.mark.slow
def test_a_detector_whose_input_size_changes_with_the_model_fails_naming_the_input_change(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """Recorded at 64x64 (sized by the marker), then made static 128x128 and committed: the recorded
    model rebuilt from git but fed today's 128x128 input would pass against itself. It is fed its
    recorded 64x64 inputs, made again from the recipe, side by side; the message names the change."""

    def commit(*paths: str) -> None:
        for args in (("add", *paths), ("commit", "-q", "-m", "change")):
            git(pytester, "-c", "user.name=T", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args)

    git(pytester, "init", "-q")
    onnx.save(detector_model(), pytester.path / "detector.onnx")
    pytester.makepyfile(test_det=LATENCY_ONLY.format(sizes=', shapes={"x": [1, 3, 64, 64]}'))
    pytester.runpytest("--ortperf-update", *ONE_LEVEL).assert_outcomes(passed=1)
    commit("detector.onnx", "test_det.py", "baselines")

    static = update_inputs_outputs_dims(
        detector_model(), {"x": [1, 3, 128, 128]}, {"heatmap": [1, 1, 128, 128]}
    )
    onnx.save(static, pytester.path / "detector.onnx")
    pytester.makepyfile(test_det=LATENCY_ONLY.format(sizes=""))  # the model's own dims size it now
    commit("detector.onnx", "test_det.py")

    gate = pytester.runpytest(*ONE_LEVEL, "--ortperf-report=r.json")
    gate.assert_outcomes(failed=1)
    changed = "inputs: x float32[[]1, 3, 64, 64[]] -> [[]1, 3, 128, 128[]]"
    gate.stdout.fnmatch_lines(
        [
            "*latency regression in test_latency[[]cpu-all[]] against the recorded model (git *",
            f"  changed since the baseline: model sha256 * -> *; {changed}*",
        ]
    )
    assert "decided by stored figures" not in gate.stdout.str()
    (latency,) = [
        c for c in json.loads((pytester.path / "r.json").read_text())["checks"] if c["kind"] == "latency"
    ]
    assert latency["inputs"] == {"x": "float32[1, 3, 128, 128]"}
    assert latency["path"].startswith("side by side vs the recorded model (git ")
    assert "inputs: x float32[1, 3, 64, 64] -> [1, 3, 128, 128]" in latency["changed_since_baseline"]


VAD_TESTS = """
import pytest
pytestmark = pytest.mark.ort_model("vad.onnx", int_range={{"sr": (16000, 16001)}}{sizes})

def test_accuracy(ort_perf, ort_inputs):
    assert int(ort_inputs["sr"]) == 16000
    ort_perf.check_accuracy()
"""


@pytest.mark.slow
def test_a_stateful_vad_is_sized_recorded_changed_and_gated(pytester: pytest.Pytester) -> None:
    onnx.save(vad_model(), pytester.path / "vad.onnx")
    pytester.makepyfile(test_vad=VAD_TESTS.format(sizes=""))
    unsized = pytester.runpytest("--ortperf-update", *ONE_LEVEL)
    unsized.assert_outcomes(errors=1)  # the test asks for ort_inputs: its setup errs
    unsized.stdout.fnmatch_lines(
        [
            "model 'vad.onnx': nothing sizes input 'input' [[]?, ?[]] (axis 1); input 'state' "
            "[[]2, ?, 32[]] (axis 1); * Size them in its model table (*): "
            "shapes = {input = [[]1, <n>[]], state = [[]2, <n>, 32[]]}; or in a test: "
            "ort_model(..., shapes={'input': [[]1, <n>[]], 'state': [[]2, <n>, 32[]]})*"
        ]
    )

    sized = ', shapes={"input": [1, 512], "state": [2, 1, 32]}'
    pytester.makepyfile(test_vad=VAD_TESTS.format(sizes=sized))
    pytester.runpytest("--ortperf-update", *ONE_LEVEL).assert_outcomes(passed=1)
    pytester.runpytest(*ONE_LEVEL).assert_outcomes(passed=1)
    onnx.save(vad_model(seed=3), pytester.path / "vad.onnx")  # retrained
    changed = pytester.runpytest(*ONE_LEVEL)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*output 'output': FAILED*"])


def _refuses_a_one_sample_reflect_pad() -> str:
    """Why this onnxruntime cannot show the case, or "": 1.31 refuses a reflect pad of an axis of length
    1 (``Pad reflect requires axis length >= 2``); 1.23.2, Python 3.10's newest, runs it."""
    import onnxruntime as ort

    session = ort.InferenceSession(vad_model().SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {
        "input": np.ones((1, 1), np.float32),
        "state": np.zeros((2, 1, 32), np.float32),
        "sr": np.array(16000, np.int64),
    }
    try:
        session.run(None, feeds)
    except Exception:  # the refusal this test is about
        return ""
    return f"onnxruntime {ort.__version__} runs a reflect pad of an axis of length 1: nothing to refuse"


def test_ort_refusing_synthesized_inputs_points_at_shapes_and_test_data(pytester: pytest.Pytester) -> None:
    why_not = _refuses_a_one_sample_reflect_pad()
    if why_not:
        pytest.skip(why_not)
    onnx.save(vad_model(), pytester.path / "vad.onnx")
    too_short = ', shapes={"input": [1, 1], "state": [2, 1, 32]}'
    pytester.makepyfile(test_vad=VAD_TESTS.format(sizes=too_short))
    result = pytester.runpytest("--ortperf-update", *ONE_LEVEL)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*session.run failed on CPUExecutionProvider*Pad reflect requires axis length >= 2*",
            "*The inputs were synthesized (synthetic(seed=0)): input float32[[]1, 1[]], state float32[[]2, 1, 32[]], "
            "sr int64[[][]]. A model that needs other sizes or values takes them from ort_model(..., "
            "shapes={'<input>': [[]...[]]}) (or dims=, int_range=), or from its own inputs beside it: "
            "<model>.npz or test_data_set_0/input_<i>.pb.",
        ]
    )
    assert not (pytester.path / "baselines").exists()


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        (
            ', shapes={"image": [1, 3, 64, 64]}',
            "*ort_model marker of test_det.py::test_latency[[]cpu-all[]]: shapes names input 'image', which the "
            "model does not have; its inputs: 'x' [[]?, 3, ?, ?[]].",
        ),
        (
            ', shapes={"x": [1, 3, 64]}',
            "*shapes gives input 'x' the shape [[]1, 3, 64[]], but the model declares it [[]?, 3, ?, ?[]] (the "
            "model's input has rank 4, not 3).",
        ),
        (
            ', shapes={"x": [1, 1, 64, 64]}',
            "*shapes gives input 'x' the shape [[]1, 1, 64, 64[]], but the model declares it [[]?, 3, ?, ?[]] "
            "(axis 1 is fixed at 3).",
        ),
        (
            ', shapes={"x": [1, 3, 0, 64]}',
            "*shapes[[]'x'[]] must be a list of whole sizes >= 1*got [[]1, 3, 0, 64[]].",
        ),
        (
            ', dims={"height": 320}',
            "*ort_model marker of test_det.py::test_latency[[]cpu-all[]]: dims 'height' matches no dim of the "
            "model's inputs; its inputs have no named dims (inputs: 'x' [[]?, 3, ?, ?[]]). Unnamed dims (?) are "
            "sized with shapes={'<input name>': [[]...[]]}.",
        ),
    ],
)
def test_sizes_that_do_not_fit_the_model_are_usage_errors_naming_the_marker(
    pytester: pytest.Pytester, sizes: str, message: str
) -> None:
    onnx.save(detector_model(), pytester.path / "detector.onnx")
    _detector_suite(pytester, sizes)
    result = pytester.runpytest("-k", "latency", *ONE_LEVEL)
    result.assert_outcomes(errors=1, deselected=1)
    result.stdout.fnmatch_lines([message])


@pytest.mark.slow
def test_model_tables_size_collected_models_and_name_their_key(pytester: pytest.Pytester) -> None:
    (pytester.path / "models").mkdir()
    onnx.save(detector_model(), pytester.path / "models" / "detector.onnx")
    pytester.makeini("[pytest]\nortperf_models = models/*.onnx\nortperf_opt_levels = all\n")
    unsized = pytester.runpytest("--ortperf-checks=accuracy", "--ortperf-update")
    unsized.assert_outcomes(failed=1)
    unsized.stdout.fnmatch_lines(["*model 'models/detector.onnx': nothing sizes input 'x' [[]?, 3, ?, ?[]]*"])
    table = '[tool.ortperf.models."models/*.onnx"]\nshapes = {{x = {shape}}}\n'
    pytester.makefile(".toml", pyproject=table.format(shape="[1, 3, 32]"))
    bad = pytester.runpytest("--ortperf-checks=accuracy", "--ortperf-update")
    bad.assert_outcomes(failed=1)
    bad.stdout.fnmatch_lines(
        [
            "*pyproject.toml [[]tool.ortperf.models.\"models/[*].onnx\"[]] shapes: shapes gives input 'x' the shape*"
        ]
    )
    pytester.makefile(".toml", pyproject=table.format(shape="[1, 3, 32, 32]"))
    pytester.runpytest("--ortperf-checks=accuracy", "--ortperf-update").assert_outcomes(passed=1)
    baseline = pytester.path / "baselines" / "models" / "detector.onnx.json"
    entry = json.loads(baseline.read_text())["entries"]["accuracy[cpu-all]"]
    assert entry["recipe"]["inputs"] == {"x": "float32[1, 3, 32, 32]"}
