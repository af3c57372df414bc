"""``ort_perf.check_determinism()``: the same inputs run several times on one session and on a fresh
one. An unseeded random op flaps and fails, naming its output; a deterministic model passes; the kind
appears in every report through the registry alone."""

from __future__ import annotations

import json
from xml.etree import ElementTree

import onnx
import pytest
from onnx import TensorProto, helper

from tests.models import mlp_model


def noisy_model() -> onnx.ModelProto:
    """``y = x + RandomNormalLike(x)`` with no seed (another draw every run), beside ``z = Relu(x)``,
    which is deterministic."""
    graph = helper.make_graph(
        [
            helper.make_node("RandomNormalLike", ["x"], ["noise"], name="draw", scale=0.1),
            helper.make_node("Add", ["x", "noise"], ["y"], name="add"),
            helper.make_node("Relu", ["x"], ["z"], name="relu"),
        ],
        "noisy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 8]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


TESTS = """
import pytest

@pytest.mark.ort_model("noisy.onnx")
def test_noisy(ort_perf):
    ort_perf.check_determinism()

@pytest.mark.ort_model("mlp.onnx", dims={"batch": 2})
def test_steady(ort_perf):
    result = ort_perf.check_determinism(runs=3)
    assert result.status == "ok"

@pytest.mark.ort_model("noisy.onnx")
def test_loose(ort_perf):
    ort_perf.check_determinism(tolerance=1e9, name="loose")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    onnx.save(noisy_model(), pytester.path / "noisy.onnx")
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "mlp.onnx")
    pytester.makepyfile(test_determinism=TESTS)
    return pytester


def test_an_unseeded_random_op_fails_naming_its_output_and_a_deterministic_model_passes(
    suite: pytest.Pytester,
) -> None:
    result = suite.runpytest(
        "--ortperf-report=report.json", "--ortperf-html=report.html", "--junitxml=junit.xml"
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*determinism of test_noisy[[]cpu-all]: FAILED: 1 output(s) differ between runs on the same inputs*",
            "*output 'y': differs by up to *(within the session *, against a fresh session *; tolerance 0)",
            "*use_deterministic_compute=True does not help: 'y' by up to * still differ(s) between its runs",
        ]
    )
    assert "output 'z'" not in result.stdout.str()  # the deterministic output is not named
    # Every report, from the registry alone: the terminal's table of checks, the JSON, HTML, JUnit.
    result.stdout.fnmatch_lines(
        ["other checks (determinism*", "*test_noisy*determinism*1 of 2 output(s) differ*failed*"]
    )
    records = [
        r
        for r in json.loads((suite.path / "report.json").read_text())["checks"]
        if r["kind"] == "determinism"
    ]
    verdicts = {r["test"].split("::")[1]: r["verdict"] for r in records}
    assert verdicts == {
        "test_noisy[cpu-all]": "failed",
        "test_steady[cpu-all]": "ok",
        "test_loose[cpu-all]": "ok",
    }
    noisy = next(r for r in records if r["test"].endswith("test_noisy[cpu-all]"))
    assert noisy["figures"]["within_session"]["z"] == 0
    assert noisy["figures"]["within_session"]["y"] > 0
    assert noisy["figures"]["fresh_session"]["y"] > 0
    assert "1 of 2 output(s) differ" in (suite.path / "report.html").read_text()
    properties = {
        (case.get("name"), prop.get("name"), prop.get("value"))
        for case in ElementTree.parse(suite.path / "junit.xml").iter("testcase")
        for prop in case.iter("property")
    }
    assert ("test_noisy[cpu-all]", "ortperf_determinism_verdict", "failed") in properties


def test_bad_options_fail_the_test_naming_them(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "mlp.onnx")
    pytester.makepyfile(
        """
import pytest
pytestmark = pytest.mark.ort_model("mlp.onnx", dims={"batch": 2})

def test_one_run(ort_perf):
    ort_perf.check_determinism(runs=1)

def test_negative(ort_perf):
    ort_perf.check_determinism(tolerance=-1)
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*check_determinism(runs=1): runs is a whole number, 2 or more.*"])
    result.stdout.fnmatch_lines(
        ["*check_determinism(tolerance=-1): a tolerance is a finite number, 0 or more.*"]
    )
