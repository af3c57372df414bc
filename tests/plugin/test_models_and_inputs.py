"""ort_model and ort_inputs: where the model and feeds come from, and every bad input."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tests.models import SQUEEZENET, mlp_model


def test_marker_levels_closest_wins(pytester: pytest.Pytester, write_model) -> None:
    write_model("module.onnx", width=4)
    write_model("klass.onnx", width=8)
    write_model("func.onnx", width=12)
    pytester.makepyfile(
        """
        import pytest
        pytestmark = pytest.mark.ort_model("module.onnx")

        def test_module(ort_session):
            assert ort_session.get_inputs()[0].shape[1] == 4

        @pytest.mark.ort_model("klass.onnx")
        class TestClass:
            def test_class(self, ort_session):
                assert ort_session.get_inputs()[0].shape[1] == 8

            @pytest.mark.ort_model("func.onnx")
            def test_function(self, ort_session):
                assert ort_session.get_inputs()[0].shape[1] == 12
        """
    )
    pytester.runpytest().assert_outcomes(passed=3)


def test_path_relative_to_test_file_then_rootdir(pytester: pytest.Pytester, write_model) -> None:
    write_model("models/at_root.onnx", width=4)
    write_model("sub/beside.onnx", width=8)
    (pytester.path / "sub" / "__init__.py").write_text("")
    (pytester.path / "sub" / "test_sub.py").write_text(
        "import pytest\n"
        "@pytest.mark.ort_model('beside.onnx')\n"
        "def test_beside(ort_session): assert ort_session.get_inputs()[0].shape[1] == 8\n"
        "@pytest.mark.ort_model('models/at_root.onnx')\n"
        "def test_root(ort_session): assert ort_session.get_inputs()[0].shape[1] == 4\n"
    )
    pytester.runpytest().assert_outcomes(passed=2)


def test_model_proto_marker_and_user_fixture(pytester: pytest.Pytester, write_model) -> None:
    write_model("six.onnx", width=6)
    write_model("ten.onnx", layers=3, width=10)
    pytester.makepyfile(
        """
        import onnx
        import pytest

        @pytest.mark.ort_model(onnx.load("six.onnx"))
        def test_proto(ort_session, ort_model):
            assert ort_model.label == "<ModelProto mlp2>"
            assert ort_session.get_inputs()[0].shape[1] == 6

        class TestOwnFixture:
            @pytest.fixture
            def ort_model(self):
                return onnx.load("ten.onnx")

            def test_override(self, ort_session):
                assert ort_session.get_inputs()[0].shape[1] == 10
        """
    )
    pytester.runpytest().assert_outcomes(passed=2)


def test_missing_model_fails_only_its_tests(pytester: pytest.Pytester, write_model) -> None:
    write_model("good.onnx")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.ort_model("models/nope.onnx")
        def test_missing(ort_session): pass

        @pytest.mark.ort_model("good.onnx")
        def test_good(ort_session): pass

        def test_unrelated(): pass
        """
    )
    result = pytester.runpytest("--ort-opt-levels=basic,all")
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ort_model marker of test_missing_model_fails_only_its_tests.py::test_missing[[]cpu-basic[]]: "
            "model file 'models/nope.onnx' not found (looked for *models/nope.onnx')."
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_file_that_is_not_onnx(pytester: pytest.Pytester, write_model) -> None:
    write_model("good.onnx")
    (pytester.path / "broken.onnx").write_bytes(b"this is not a protobuf \x00\xff")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.ort_model("broken.onnx")
        def test_broken(ort_session): pass

        @pytest.mark.ort_model("good.onnx")
        def test_good(ort_session): pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*ONNX Runtime could not build a session for 'broken.onnx' [[]cpu-all[]]: *INVALID_PROTOBUF*"]
    )
    assert (pytester.path / "broken.onnx").read_bytes().startswith(b"this is not")


LFS_POINTER_FILE = (
    b"version https://git-lfs.github.com/spec/v1\n"
    b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    b"size 4925402\n"
)


def test_a_git_lfs_pointer_given_as_the_model_is_named_with_the_command_that_fetches_it(
    pytester: pytest.Pytester, write_model
) -> None:
    """A clone without its LFS objects: ONNX Runtime would only say 'Protobuf parsing failed'."""
    write_model("good.onnx")
    (pytester.path / "zoo").mkdir()
    for pointer in (pytester.path / "big.onnx", pytester.path / "zoo" / "model.onnx"):
        pointer.write_bytes(LFS_POINTER_FILE)
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.ort_model("big.onnx")
        def test_pointer(ort_perf):
            ort_perf.check()

        @pytest.mark.ort_model("zoo")
        def test_zoo(ort_session): pass

        @pytest.mark.ort_model("good.onnx")
        def test_good(ort_session): pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=2)
    for name in ("big.onnx", "zoo/model.onnx"):
        result.stdout.fnmatch_lines(
            [
                f"*: model file '{pytester.path / name}' is a Git LFS pointer (* bytes of text that stand for the "
                "model), not the model: this checkout has not fetched its LFS objects; run 'git lfs pull' in the "
                "repository (on GitHub Actions: actions/checkout with lfs: true)."
            ]
        )
    result.stdout.no_fnmatch_line("*Protobuf parsing failed*")
    result.stdout.no_fnmatch_line("*Traceback*")
    assert (pytester.path / "big.onnx").read_bytes() == LFS_POINTER_FILE


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            "ort_model(42)",
            "*expected a model path (str or os.PathLike), an onnx.ModelProto or bytes, got int (42).*",
        ),
        ("ort_model()", "*ort_model takes exactly one model (a path or an onnx.ModelProto), got 0.*"),
        ("ort_model('a.onnx', 'b.onnx')", "*ort_model takes exactly one model*got 2.*"),
        (
            "ort_model('a.onnx', batch=2)",
            "*unknown argument(s) batch; ort_model takes a model and optionally shapes, dims, int_range, seed, transformers.*",
        ),
        (
            "ort_model('a.onnx', int_range='ten')",
            "*ort_model marker of *: expected an integer range LOW:HIGH*",
        ),
    ],
)
def test_bad_marker_arguments(pytester: pytest.Pytester, write_model, marker: str, message: str) -> None:
    write_model("a.onnx")
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.{marker}
        def test_bad(ort_inputs): pass

        def test_other(): pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([message])


def test_bad_settings_marker(pytester: pytest.Pytester, write_model) -> None:
    write_model()
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.ort_model("model.onnx")
        @pytest.mark.ort_settings(intra_op_threads="lots")
        def test_bad(ort_session): pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*ort_settings marker of *test_bad*: intra_op_threads='lots' is not a whole number*"]
    )


def test_no_model_declared(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_forgot(ort_session): pass")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_forgot[[]cpu-all[]] uses an ortperf fixture but declares no model. Add @pytest.mark.ort_model(*"
        ]
    )


def test_synthetic_inputs_follow_marker_and_options(pytester: pytest.Pytester) -> None:
    onnx.save(_ids_model(), pytester.path / "ids.onnx")
    pytester.makepyfile(
        """
        import numpy as np
        import pytest

        @pytest.mark.ort_model("ids.onnx", int_range={"ids": (5, 9)}, dims={"seq": 7})
        def test_marker(ort_inputs):
            assert ort_inputs["ids"].shape == (2, 7)
            assert ort_inputs["ids"].dtype == np.int64
            assert ort_inputs["ids"].min() >= 5 and ort_inputs["ids"].max() < 9
            assert ort_inputs.source == "synthetic(seed=11)"

        @pytest.mark.ort_model("ids.onnx")
        def test_options(ort_inputs, ort_session):
            assert ort_inputs["ids"].shape == (2, 3)
            assert ort_inputs["ids"].max() < 4
            assert ort_inputs.source == "synthetic(seed=11)"
            ort_session.run(None, ort_inputs)
        """
    )
    result = pytester.runpytest(
        "--ortperf-dims=batch=2,seq=3", "--ortperf-int-range=0:4", "--ortperf-seed=11"
    )
    result.assert_outcomes(passed=2)


def test_inputs_from_npz_and_model_zoo_layout(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(width=4), pytester.path / "withnpz.onnx")
    feeds = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.savez(pytester.path / "withnpz.npz", x=feeds)
    zoo = pytester.path / "zoo"
    (zoo / "test_data_set_0").mkdir(parents=True)
    onnx.save(mlp_model(width=4), zoo / "model.onnx")
    tensor = numpy_helper.from_array(np.full((3, 4), 0.5, dtype=np.float32), "x")
    (zoo / "test_data_set_0" / "input_0.pb").write_bytes(tensor.SerializeToString())
    pytester.makepyfile(
        """
        import numpy as np
        import pytest

        @pytest.mark.ort_model("withnpz.onnx")
        def test_npz(ort_inputs):
            assert ort_inputs.source == "withnpz.npz"
            np.testing.assert_array_equal(ort_inputs["x"], np.arange(8, dtype=np.float32).reshape(2, 4))

        @pytest.mark.ort_model("zoo")
        def test_zoo(ort_inputs, ort_session):
            assert ort_inputs.source == "test_data_set_0"
            assert ort_inputs["x"].shape == (3, 4)
            ort_session.run(None, ort_inputs)
        """
    )
    pytester.runpytest().assert_outcomes(passed=2)


def test_bad_npz_fails_only_its_test(pytester: pytest.Pytester, write_model) -> None:
    write_model("m.onnx", width=4)
    write_model("ok.onnx", width=4)
    np.savez(pytester.path / "m.npz", wrong_name=np.zeros((1, 4), dtype=np.float32))
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.ort_model("m.onnx")
        def test_bad(ort_inputs): pass

        @pytest.mark.ort_model("ok.onnx")
        def test_ok(ort_inputs): pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*m.npz': inputs do not match the model (missing: x; unexpected: wrong_name).*"]
    )


def test_squeezenet_from_the_onnx_wheel(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        f"""
        import numpy as np
        import pytest

        @pytest.mark.ort_model({str(SQUEEZENET)!r})
        def test_real_cnn(ort_session, ort_inputs):
            (probabilities,) = ort_session.run(None, ort_inputs)
            assert probabilities.shape == (1, 1000, 1, 1)
            assert abs(float(probabilities.sum()) - 1.0) < 1e-4
        """
    )
    pytester.runpytest("--ort-opt-levels=disabled,all").assert_outcomes(passed=2)


def _ids_model() -> onnx.ModelProto:
    from onnx import TensorProto, helper

    node = helper.make_node("Identity", ["ids"], ["out"], name="identity")
    graph = helper.make_graph(
        [node],
        "ids",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("out", TensorProto.INT64, ["batch", "seq"])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
