"""Accuracy end to end: recorded outputs, the reference variant, model-zoo data; real sessions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tests.models import mlp_model
from tests.plugin.conftest import CUDA_UNAVAILABLE

TEST_FILE = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

def test_outputs(ort_perf):
    ort_perf.check_accuracy()
"""
LEVELS = "--ort-opt-levels=disabled,all"


@pytest.fixture
def suite(pytester: pytest.Pytester) -> Path:
    onnx.save(mlp_model(layers=4, width=32), pytester.path / "model.onnx")
    pytester.makepyfile(test_acc=TEST_FILE)
    return pytester.path / "baselines"


def _nudge_weights(path: Path, factor: float) -> None:
    model = onnx.load(path)
    for init in model.graph.initializer:
        scaled = (numpy_helper.to_array(init) * np.float32(factor)).astype(np.float32)
        init.CopyFrom(numpy_helper.from_array(scaled, init.name))
    onnx.save(model, path)


def test_record_then_weights_moved_one_percent_fail(pytester: pytest.Pytester, suite: Path) -> None:
    recorded = pytester.runpytest("--ortperf-update", LEVELS)
    recorded.assert_outcomes(passed=2)
    recorded.stdout.fnmatch_lines(["ortperf update: 0 updated, 2 new, 0 unchanged, 0 unused*"])
    entry = json.loads((suite / "test_acc.py.json").read_text())["entries"]["test_outputs[cpu-all]"]
    stored = entry["accuracy"]  # one reference per entry, compared on every hardware
    assert stored["outputs"][0]["name"] == "y"
    assert stored["outputs"][0]["stored"] == "full"
    npz = suite / stored["file"]
    assert npz.parent.name == "test_acc.py.outputs"
    assert npz.name.startswith("test_outputs_cpu-all-")
    assert "@" not in npz.name, "the outputs file name holds no machine"
    with np.load(npz, allow_pickle=False) as archive:
        assert archive["y"].shape == (4, 32)
    pytester.runpytest(LEVELS).assert_outcomes(passed=2)

    _nudge_weights(pytester.path / "model.onnx", 1.01)
    before = npz.read_bytes()
    moved = pytester.runpytest(LEVELS)
    moved.assert_outcomes(failed=2)
    moved.stdout.fnmatch_lines(
        [
            "accuracy of test_outputs[[]cpu-all[]] on machine '*' FAILED",
            "  vs baseline (recorded *):",
            "    output 'y': FAILED on isclose (max abs *, max rel *, * of 128 elements outside tolerance *; worst at [[]*[]]: actual *, expected *; atol=1e-05, rtol=0.0001, cosine>=0.99999)",
            "  vs variant cpu-disabled: ok (y)",
            "  changed since the baseline: model sha256 * -> *",
            "  to accept the current outputs as the baseline: ortperf update 'test_acc.py::test_outputs[[]cpu-all[]]' --ort-opt-levels=disabled,all",
        ]
    )
    assert npz.read_bytes() == before, "a failing comparison must not touch the reference outputs"


def test_cross_variant_check_needs_no_baseline(pytester: pytest.Pytester, suite: Path) -> None:
    result = pytester.runpytest("--ortperf-missing=pass", "--ort-opt-levels=disabled,basic,extended,all")
    result.assert_outcomes(passed=4)
    assert not suite.exists()


def test_reference_variant_catches_a_variant_that_computes_something_else(
    pytester: pytest.Pytester, suite: Path
) -> None:
    """A variant-specific difference: force an output change only on the non-reference variant."""
    pytester.makepyfile(
        test_acc="""
        import numpy as np
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

        def test_outputs(ort_perf, ort_inputs, ort_variant):
            feeds = dict(ort_inputs)
            if ort_variant.id != "cpu-disabled":
                original = ort_perf.session.session.run
                ort_perf.session.session.run = lambda names, inputs, *a: [o * 1.5 for o in original(names, inputs, *a)]
            ort_perf.check_accuracy(feeds)
        """
    )
    result = pytester.runpytest("--ortperf-missing=pass", LEVELS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["  vs variant cpu-disabled:", "    output 'y': FAILED on isclose*"])


def test_model_zoo_outputs_are_a_reference(pytester: pytest.Pytester) -> None:
    zoo = pytester.path / "zoo"
    (zoo / "test_data_set_0").mkdir(parents=True)
    model = mlp_model(layers=2, width=8)
    onnx.save(model, zoo / "model.onnx")
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    (zoo / "test_data_set_0" / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    import onnxruntime as ort

    (y,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x}
    )
    (zoo / "test_data_set_0" / "output_0.pb").write_bytes(
        numpy_helper.from_array(y + 0.01, "y").SerializeToString()
    )
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("zoo")
        def test_zoo(ort_perf):
            ort_perf.check_accuracy()
        """
    )
    strict = pytester.runpytest("--ortperf-missing=pass", "--ortperf-reference-variant=none")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["    output 'y': FAILED on isclose*"])
    (zoo / "test_data_set_0" / "data.json").write_text('{"atol": 0.02, "rtol": 0}')
    pytester.runpytest("--ortperf-missing=pass", "--ortperf-reference-variant=none").assert_outcomes(passed=1)


def test_every_model_zoo_data_set_is_a_reference(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inputs come from test_data_set_0; test_data_set_1 is run on its own inputs and compared too."""
    import onnxruntime as ort

    zoo = pytester.path / "zoo"
    zoo.mkdir()
    model = mlp_model(layers=2, width=8)
    onnx.save(model, zoo / "model.onnx")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for index, scale in enumerate((1.0, -0.5)):
        folder = zoo / f"test_data_set_{index}"
        folder.mkdir()
        x = (np.linspace(-1, 1, 16, dtype=np.float32) * scale).reshape(2, 8)
        (y,) = session.run(None, {"x": x})
        (folder / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
        (folder / "output_0.pb").write_bytes(numpy_helper.from_array(y, "y").SerializeToString())
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("zoo")
        def test_zoo(ort_perf):
            ort_perf.check_accuracy()
        """
    )
    options = ("--ortperf-missing=pass", "--ortperf-reference-variant=none")
    pytester.runpytest(*options).assert_outcomes(passed=1)
    (y,) = session.run(None, {"x": (np.linspace(-1, 1, 16, dtype=np.float32) * -0.5).reshape(2, 8)})
    (zoo / "test_data_set_1" / "output_0.pb").write_bytes(
        numpy_helper.from_array(y + 0.01, "y").SerializeToString()
    )
    result = pytester.runpytest(*options)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["    output 'y': FAILED on isclose*"])
    result.stdout.no_fnmatch_line("*vs test_data_set_0: FAILED*")
    # Data sets are read once per run, not once per check and variant.
    import pytest_ortperf.gate.model_builds

    reads: list[str] = []
    real = pytest_ortperf.gate.model_builds.zoo_expected
    monkeypatch.setattr(
        pytest_ortperf.gate.model_builds,
        "zoo_expected",
        lambda path, names: reads.append(path.name) or real(path, names),
    )
    pytester.runpytest(*options, "--ort-opt-levels=disabled,basic,extended,all").assert_outcomes(failed=4)
    assert sorted(reads) == ["test_data_set_0", "test_data_set_1"]


def test_tolerances_from_marker_option_and_per_output(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=2)
    _nudge_weights(pytester.path / "model.onnx", 1.001)
    pytester.runpytest(LEVELS).assert_outcomes(failed=2)
    pytester.runpytest(LEVELS, "--ortperf-tolerances=rtol=0.01").assert_outcomes(passed=2)
    pytester.runpytest(LEVELS, "--ortperf-tolerances=y.rtol=0.01").assert_outcomes(passed=2)
    pytester.runpytest(LEVELS, "--ortperf-tolerances=other.rtol=0.01").assert_outcomes(failed=2)
    pytester.makepyfile(
        test_acc=TEST_FILE.replace(
            "def test_outputs", "@pytest.mark.ort_thresholds(outputs={'y': {'rtol': 0.01}})\ndef test_outputs"
        )
    )
    pytester.runpytest(LEVELS).assert_outcomes(passed=2)


def test_changed_inputs_compare_with_the_recorded_model_on_todays_inputs(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=2)
    result = pytester.runpytest(LEVELS, "--ortperf-seed=7", "--ortperf-report=report.json")
    result.assert_outcomes(passed=2)
    checks = json.loads((pytester.path / "report.json").read_text())["checks"]
    firsts = {c["references"][0]["reference"] for c in checks if c["kind"] == "accuracy"}
    assert firsts == {"the recorded model (the same bytes) on today's inputs"}


def test_changed_inputs_and_a_model_that_cannot_be_rebuilt_are_not_an_accuracy_failure(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=2)
    _nudge_weights(pytester.path / "model.onnx", 1.0001)  # changed, and git keeps no copy of the recorded one
    result = pytester.runpytest(LEVELS, "--ortperf-seed=7")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "  vs baseline: inputs changed since the baseline (not an accuracy failure): re-record; no recorded "
            "model to compare with: the model changed (sha256 * -> *) and the recorded one is neither in git here "
            "nor in the model cache (--ortperf-model-cache)"
        ]
    )
    result.stdout.no_fnmatch_line("*FAILED on*")


def test_changed_output_shape_is_a_clear_failure(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=2)
    pytester.runpytest(LEVELS, "--ortperf-dims=batch=4").assert_outcomes(passed=2)
    onnx.save(mlp_model(layers=4, width=32, seed=0), pytester.path / "model.onnx")
    model = onnx.load(pytester.path / "model.onnx")
    model.graph.output[0].name = "z"
    model.graph.node[-1].output[0] = "z"
    onnx.save(model, pytester.path / "model.onnx")
    result = pytester.runpytest(LEVELS)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["    output 'y': output missing from the model now"])
    result.stdout.no_fnmatch_line("*Traceback*")


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--ortperf-tolerances=atol=-1", "*--ortperf-tolerances: atol must be a number >= 0, got '-1'.*"),
        ("--ortperf-tolerances=speed=1", "*--ortperf-tolerances: key 'speed': unknown tolerance 'speed'*"),
        ("--ortperf-tolerances=cosine=2", "*--ortperf-tolerances: cosine must be a number between 0 and 1*"),
        (
            "--ortperf-reference-variant=cpu",
            "*--ortperf-reference-variant: expected PROVIDER-LEVEL such as cpu-disabled*",
        ),
        (
            "--ortperf-reference-variant=cpu-warp",
            "*--ortperf-reference-variant: unknown graph optimization level 'warp'*",
        ),
    ],
)
def test_bad_accuracy_options(pytester: pytest.Pytester, option: str, message: str) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_object_array_in_reference_npz_is_refused(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=2)
    entry = json.loads((suite / "test_acc.py.json").read_text())["entries"]["test_outputs[cpu-all]"]
    npz = suite / entry["accuracy"]["file"]
    np.savez(npz, y=np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    result = pytester.runpytest(LEVELS)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines([f"*reference outputs '{npz}' cannot be read without pickle*"])


def test_data_set_with_inputs_only_is_no_reference(pytester: pytest.Pytester) -> None:
    zoo = pytester.path / "zoo"
    (zoo / "test_data_set_0").mkdir(parents=True)
    onnx.save(mlp_model(layers=2, width=8), zoo / "model.onnx")
    x = np.ones((2, 8), dtype=np.float32)
    (zoo / "test_data_set_0" / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("zoo")
        def test_zoo(ort_perf):
            ort_perf.check_accuracy()
        """
    )
    pytester.runpytest("--ortperf-missing=pass", LEVELS).assert_outcomes(passed=2)


def test_string_outputs_are_compared_exactly(pytester: pytest.Pytester) -> None:
    from onnx import TensorProto, helper

    labels = numpy_helper.from_array(np.array(["cat", "dog", "eel"], dtype=object), "labels")
    node = helper.make_node("Gather", ["labels", "i"], ["name"], name="lookup")
    graph = helper.make_graph(
        [node], "names",
        [helper.make_tensor_value_info("i", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("name", TensorProto.STRING, [2])],
        [labels],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, pytester.path / "names.onnx")
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("names.onnx", int_range=(2, 3))
        def test_names(ort_perf):
            ort_perf.check_accuracy()
        """
    )
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=2)
    pytester.runpytest(LEVELS).assert_outcomes(passed=2)
    labels.CopyFrom(numpy_helper.from_array(np.array(["cat", "dog", "fox"], dtype=object), "labels"))
    model.graph.initializer[0].CopyFrom(labels)
    onnx.save(model, pytester.path / "names.onnx")
    result = pytester.runpytest(LEVELS)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["    output 'name': 2 of 2 values differ (first at [[]0[]]: 'fox', expected 'eel')"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_test_level_marker_keeps_module_input_options(pytester: pytest.Pytester, suite: Path) -> None:
    onnx.save(_two_ids_model(), pytester.path / "ids.onnx")
    pytester.makepyfile(
        test_acc="""
        import pytest
        pytestmark = pytest.mark.ort_model("ids.onnx", int_range={"mask": (1, 2)})

        @pytest.mark.ort_model("ids.onnx", dims={"seq": 5})
        def test_inputs(ort_inputs):
            assert ort_inputs["mask"].shape == (1, 5)
            assert (ort_inputs["mask"] == 1).all()
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def _two_ids_model() -> onnx.ModelProto:
    from onnx import TensorProto, helper

    node = helper.make_node("Add", ["ids", "mask"], ["out"], name="add")
    graph = helper.make_graph(
        [node], "ids",
        [helper.make_tensor_value_info(n, TensorProto.INT64, [1, "seq"]) for n in ("ids", "mask")],
        [helper.make_tensor_value_info("out", TensorProto.INT64, [1, "seq"])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


# per-test tolerances from ort_thresholds ------------------------------------------


def _scale_last_weights(path: Path, factor: float) -> None:
    """MatMul + Relu is positively homogeneous: scaling the last weights scales the output exactly."""
    model = onnx.load(path)
    last = model.graph.initializer[-1]
    last.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(last) * np.float32(factor), last.name))
    onnx.save(model, path)


def _with_marker(marker: str) -> str:
    return TEST_FILE.replace("def test_outputs", f"@pytest.mark.ort_thresholds({marker})\ndef test_outputs")


def test_ort_thresholds_marker_sets_the_tolerances_of_every_output(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=2)
    _scale_last_weights(pytester.path / "model.onnx", 1.03)
    pytester.runpytest(LEVELS).assert_outcomes(failed=2)
    pytester.makepyfile(test_acc=_with_marker("rtol=0.05"))
    pytester.runpytest(LEVELS).assert_outcomes(passed=2)
    pytester.makepyfile(test_acc=_with_marker("rtol=0.01, cosine=0.9"))
    result = pytester.runpytest(LEVELS)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["    output 'y': FAILED on isclose (*; atol=1e-05, rtol=0.01, cosine>=0.9)"])


def test_tolerances_per_variant_and_dtype_from_the_option(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=2)
    _scale_last_weights(pytester.path / "model.onnx", 1.03)
    one = pytester.runpytest(LEVELS, "--ortperf-tolerances=variant:cpu-all.rtol=0.05", "-rA")
    one.assert_outcomes(passed=1, failed=1)
    one.stdout.fnmatch_lines(["FAILED test_acc.py::test_outputs[[]cpu-disabled[]]*"])
    pytester.runpytest(LEVELS, "--ortperf-tolerances=variant:cpu.rtol=0.05").assert_outcomes(passed=2)
    pytester.runpytest(LEVELS, "--ortperf-tolerances=dtype:float32.rtol=0.05").assert_outcomes(passed=2)
    pytester.runpytest(LEVELS, "--ortperf-tolerances=dtype:float16.rtol=0.05").assert_outcomes(failed=2)
    # The output's own value wins over the variant's.
    both = ("--ortperf-tolerances=variant:cpu.rtol=0.05", "--ortperf-tolerances=y.rtol=0.01")
    pytester.runpytest(LEVELS, *both).assert_outcomes(failed=2)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            "--ortperf-tolerances=dtype:float8.atol=1",
            "*--ortperf-tolerances: key 'dtype:float8.atol': unknown dtype 'float8'*",
        ),
        (
            "--ortperf-tolerances=variant:gpu.rtol=1",
            "*--ortperf-tolerances: key 'variant:gpu.rtol': unknown execution provider 'gpu'*",
        ),
        (
            "--ortperf-tolerances=y.speed=1",
            "*--ortperf-tolerances: key 'y.speed': unknown tolerance 'speed'*",
        ),
    ],
)
def test_bad_tolerance_keys_are_usage_errors(pytester: pytest.Pytester, option: str, message: str) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


# a reference variant that cannot be compared ----------------------------------------


CHOICE_TEST = """
import pytest
from pytest_ortperf.plugin import RUN_KEY
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

def test_outputs(request, ort_perf):
    choice = request.config.stash[RUN_KEY].references.reference_choice(ort_perf.session)
    print(f"*CHOICE {choice.label}: {choice.note} session={choice.session is not None}")
"""


@pytest.mark.parametrize(
    ("reference", "lines"),
    [
        pytest.param(
            "cuda-disabled",
            [
                f"*CHOICE variant cuda-disabled: not available here (*{CUDA_UNAVAILABLE}) session=False",
                f"*CHOICE variant cuda-disabled: not available here (*{CUDA_UNAVAILABLE}) session=False",
            ],
            id="unavailable",
        ),
        pytest.param(
            "cpu-disabled",
            [
                "*CHOICE variant cpu-disabled: this variant is the reference session=False",
                "*CHOICE variant cpu-disabled:  session=True",
            ],
            id="itself",
        ),
        pytest.param("none", ["*CHOICE :  session=False", "*CHOICE :  session=False"], id="none"),
    ],
)
def test_the_reference_variant_says_why_it_is_not_compared(
    pytester: pytest.Pytester, suite: Path, reference: str, lines: list[str]
) -> None:
    pytester.makepyfile(test_acc=CHOICE_TEST)
    result = pytester.runpytest(LEVELS, f"--ortperf-reference-variant={reference}", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(lines)


# large outputs: the whole tensor counts ----------------------------------------------


def _big_model(constant: np.ndarray) -> onnx.ModelProto:
    from onnx import TensorProto, helper

    size = constant.shape[-1]
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "c"], ["y"], name="scale")], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, size])],
        [numpy_helper.from_array(constant, "c")],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize(
    ("value", "line"),
    [
        pytest.param(
            np.nan,
            "*FAILED on nan/inf (1 new non-finite values in the whole tensor: 1 now, 0 recorded; first at [[]0, 7[]])*",
            id="nan",
        ),
        pytest.param(1000.0, "*FAILED on whole-tensor summary (*", id="bump"),
    ],
)
def test_a_large_output_fails_on_a_change_outside_its_subsample(
    pytester: pytest.Pytester, value: float, line: str
) -> None:
    size = 200_000
    onnx.save(_big_model(np.ones((1, size), np.float32)), pytester.path / "big.onnx")
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("big.onnx")
        def test_big(ort_perf):
            ort_perf.check_accuracy()
        """
    )
    options = ("--ort-opt-levels=all", "--ortperf-reference-variant=none")
    pytester.runpytest("--ortperf-update", *options).assert_outcomes(passed=1)
    same = pytester.runpytest(*options)
    same.assert_outcomes(passed=1)
    same.stdout.no_fnmatch_line("*FAILED*")
    constant = np.ones((1, size), np.float32)
    constant[0, 7] = value  # every 20th element or so is sampled: element 7 is not
    onnx.save(_big_model(constant), pytester.path / "big.onnx")
    changed = pytester.runpytest(*options)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines([line])


# a damaged outputs file ----------------------------------------------------------------


def test_damaged_outputs_are_not_overwritten_without_repair(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.runpytest("--ortperf-update", LEVELS).assert_outcomes(passed=2)
    entry = json.loads((suite / "test_acc.py.json").read_text())["entries"]["test_outputs[cpu-all]"]
    npz = suite / entry["accuracy"]["file"]
    npz.write_bytes(b"garbage")
    plain = pytester.runpytest(LEVELS)
    plain.assert_outcomes(failed=1, passed=1)
    plain.stdout.fnmatch_lines(
        [
            f"*reference outputs '{npz}' are damaged: the file is not a .npz archive. It is not overwritten: fix "
            f"it, or record it afresh with --ortperf-update --ortperf-repair (which keeps the damaged file as "
            f"{npz.name}.damaged-<time>)."
        ]
    )
    plain.stdout.no_fnmatch_line("*allow_pickle*")
    update = pytester.runpytest("--ortperf-update", LEVELS)
    update.assert_outcomes(failed=1, passed=1)
    update.stdout.fnmatch_lines(
        ["*It is not overwritten: fix it, or record it afresh with --ortperf-update --ortperf-repair*"]
    )
    assert npz.read_bytes() == b"garbage"
    pytester.runpytest("--ortperf-update", "--ortperf-repair", LEVELS).assert_outcomes(passed=2)
    assert [p.read_bytes() for p in npz.parent.glob(f"{npz.name}.damaged-*")] == [b"garbage"]
    pytester.runpytest(LEVELS).assert_outcomes(passed=2)


def test_a_damaged_baseline_file_is_reported_once_per_test_with_the_command_that_repairs_it(
    pytester: pytest.Pytester, suite: Path
) -> None:
    """check() reads the file for latency and for accuracy: one report, naming the file and the repair."""
    pytester.makepyfile(test_acc=TEST_FILE.replace("check_accuracy()", "check()"))
    damage = b'{"schema": 1, "kind": "pytest-ortperf baselines", "entries": {'
    suite.mkdir()
    damaged = suite / "test_acc.py.json"
    damaged.write_bytes(damage)
    for args in ((), ("--ortperf-update",)):
        result = pytester.runpytest("-rN", *args, "--ortperf-budget=0.2", "--ortperf-max-cv=1000%")
        result.assert_outcomes(failed=1)
        text = result.stdout.str()
        assert text.count(f"baseline file '{damaged}' is not valid JSON") == 1, text
        result.stdout.fnmatch_lines(
            [
                f"baseline file '{damaged}' is not valid JSON (*). It is not overwritten: fix it, or record it "
                "afresh with --ortperf-update --ortperf-repair (which keeps the damaged file as "
                "test_acc.py.json.damaged-<time>)."
            ]
        )
        assert damaged.read_bytes() == damage
    assert not list(suite.glob("*.damaged-*"))


def test_a_baseline_file_of_a_newer_version_asks_for_an_upgrade_not_a_repair(
    pytester: pytest.Pytester, suite: Path
) -> None:
    newer = b'{"schema": 9, "kind": "pytest-ortperf baselines", "entries": {}}'
    suite.mkdir()
    (suite / "test_acc.py.json").write_bytes(newer)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*has schema 9; this version reads 2 (written by a newer pytest-ortperf: upgrade it)."]
    )
    result.stdout.no_fnmatch_line("*--ortperf-repair*")
    assert (suite / "test_acc.py.json").read_bytes() == newer


# the model's own data set ---------------------------------------------------------------


def test_outputs_the_data_set_does_not_ship_are_reported_not_failed(pytester: pytest.Pytester) -> None:
    from onnx import TensorProto, helper

    zoo = pytester.path / "zoo"
    (zoo / "test_data_set_0").mkdir(parents=True)
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["y"], name="relu"),
            helper.make_node("Neg", ["x"], ["z"], name="neg"),
        ],
        "two",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("y", "z")],
    )
    onnx.save(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
        zoo / "model.onnx",
    )
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    (zoo / "test_data_set_0" / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    (zoo / "test_data_set_0" / "output_0.pb").write_bytes(
        numpy_helper.from_array(np.maximum(x, 0), "y").SerializeToString()
    )
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.ort_model("zoo")
        def test_zoo(ort_perf):
            result = ort_perf.check_accuracy()
            print(result.message)
        """
    )
    result = pytester.runpytest(
        "--ortperf-missing=pass", "--ortperf-reference-variant=none", "--ort-opt-levels=all", "-s"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["  vs test_data_set_0: ok (y; z: not in the data set)"])


def test_an_unavailable_reference_variant_is_reported_in_the_check(
    pytester: pytest.Pytester, suite: Path
) -> None:
    pytester.makepyfile(
        test_acc="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

        def test_outputs(ort_perf):
            ort_perf.check_accuracy()
        """
    )
    result = pytester.runpytest("--ort-opt-levels=all", "--ortperf-reference-variant=cuda-disabled")
    result.assert_outcomes(failed=1)  # no baseline recorded: the default --ortperf-missing=fail
    result.stdout.fnmatch_lines([f"*vs variant cuda-disabled: not available here (*{CUDA_UNAVAILABLE})*"])
