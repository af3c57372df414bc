"""plugin.benchmark.publish: finished measurements show up in pytest-benchmark's table, JSON and compare."""

from __future__ import annotations

import json
import math

import onnx
import pytest

from pytest_ortperf.plugin.benchmark import publish
from tests.models import mlp_model

# Inner tests publish hand-made numbers; only the test of two files runs ortperf's checks.
# Round medians in ms (min 1, max 4, median 2.5, mean 2.5) over 4 rounds x 10 runs.
_INNER = """
import pytest
from pytest_ortperf.plugin.benchmark import publish

EXTRA = {"variant": "cpu-all", "machine": "ci-box", "verdict": "ok",
         "baseline_median_ms": 2.4, "change": "+4.2% [+1.0%, +7.5%]"}

def test_one(request):
    published = publish(request.config, request.node, round_medians_ms=[2.0, 1.0, 4.0, 3.0],
                        runs_per_round=10, extra_info=EXTRA, group="ortperf")
    print(f"PUBLISHED={published}")
"""

# Keep inner runs fast and deterministic: no cpuinfo probe, no git calls.
_CONFTEST = """
import pytest

@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_generate_machine_info(config):
    return {"node": "test"}

@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_generate_commit_info(config):
    return {"id": "test"}
"""

_EXTRA = {
    "variant": "cpu-all",
    "machine": "ci-box",
    "verdict": "ok",
    "baseline_median_ms": 2.4,
    "change": "+4.2% [+1.0%, +7.5%]",
}


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(test_inner=_INNER)
    return pytester


def _entries(path: object) -> list[dict[str, object]]:
    with open(str(path)) as fh:
        data = json.load(fh)
    benchmarks = data["benchmarks"]
    assert isinstance(benchmarks, list)
    return benchmarks


def test_json_has_the_entry_with_our_numbers_and_extra_info(inner: pytest.Pytester) -> None:
    result = inner.runpytest("-s", "--benchmark-json=out.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PUBLISHED=True*"])
    [entry] = _entries(inner.path / "out.json")
    assert entry["name"] == "test_inner.py::test_one"  # the node id: one test name repeats across files
    assert entry["fullname"] == "test_inner.py::test_one"
    assert entry["group"] == "ortperf"
    assert entry["param"] is None
    assert entry["extra_info"] == _EXTRA
    assert entry["options"]["source"] == "pytest-ortperf"  # type: ignore[index]
    stats = entry["stats"]
    assert isinstance(stats, dict)
    assert stats["rounds"] == 4
    assert stats["iterations"] == 10
    assert stats["data"] == pytest.approx([0.002, 0.001, 0.004, 0.003])
    assert stats["min"] == pytest.approx(0.001)
    assert stats["max"] == pytest.approx(0.004)
    assert stats["median"] == pytest.approx(0.0025)
    assert stats["mean"] == pytest.approx(0.0025)
    assert stats["ops"] == pytest.approx(400.0)


def test_terminal_table_shows_the_entry(inner: pytest.Pytester) -> None:
    result = inner.runpytest(
        "--benchmark-time-unit=ms", "--benchmark-columns=min,median,mean,rounds,iterations"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*benchmark 'ortperf': 1 tests*",
            "Name (time in ms)*Min*Median*Mean*Rounds*Iterations*",
            "test_inner.py::test_one*1.0000*2.5000*2.5000*4*10*",
        ]
    )


def test_without_pytest_benchmark_publish_returns_false(inner: pytest.Pytester) -> None:
    result = inner.runpytest("-s", "-p", "no:benchmark")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PUBLISHED=False*"])
    result.stdout.no_fnmatch_line("*benchmark*tests*")


def test_benchmark_disable_publishes_nothing(inner: pytest.Pytester) -> None:
    result = inner.runpytest("-s", "--benchmark-disable", "--benchmark-json=out.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PUBLISHED=False*"])
    assert not (inner.path / "out.json").exists()


def test_benchmark_skip_still_publishes_what_was_measured(inner: pytest.Pytester) -> None:
    result = inner.runpytest("-s", "--benchmark-skip", "--benchmark-json=out.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PUBLISHED=True*"])
    assert [e["name"] for e in _entries(inner.path / "out.json")] == ["test_inner.py::test_one"]


def test_saved_run_is_compared_against(inner: pytest.Pytester) -> None:
    inner.runpytest("--benchmark-save=first").assert_outcomes(passed=1)
    result = inner.runpytest("--benchmark-compare=0001", "--benchmark-compare-fail=median:50%")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_one (0001_first)*", "*test_one (NOW)*"])


def test_params_and_repeated_checks_in_one_test(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(
        test_params="""
        import pytest
        from pytest_ortperf.plugin.benchmark import publish

        @pytest.mark.parametrize("variant", ["cpu-basic"])
        def test_model(request, variant):
            for value in (1.0, 2.0, 3.0):
                assert publish(request.config, request.node, round_medians_ms=[value], runs_per_round=1)
            assert publish(request.config, request.node, round_medians_ms=[5.0], runs_per_round=1,
                           name="custom", fullname="custom::id")
        """
    )
    result = pytester.runpytest("--benchmark-json=out.json")
    result.assert_outcomes(passed=1)
    entries = {e["fullname"]: e for e in _entries(pytester.path / "out.json")}
    assert sorted(entries) == [
        "custom::id",
        "test_params.py::test_model[cpu-basic]",
        "test_params.py::test_model[cpu-basic]#2",
        "test_params.py::test_model[cpu-basic]#3",
    ]
    third = entries["test_params.py::test_model[cpu-basic]#3"]
    assert third["name"] == "test_params.py::test_model[cpu-basic]#3"
    assert third["param"] == "cpu-basic"
    assert third["params"] == {"variant": "cpu-basic"}
    assert third["stats"]["median"] == pytest.approx(0.003)  # type: ignore[index]
    assert entries["custom::id"]["name"] == "custom"


def test_checks_of_a_test_of_the_same_name_in_two_files_are_told_apart_and_compared(
    pytester: pytest.Pytester,
) -> None:
    """Real ortperf checks: the table names each row by file, test and variant, and a saved run is
    compared with the next one row by row."""
    pytester.makeconftest(_CONFTEST)
    onnx.save(mlp_model(layers=2, width=8), pytester.path / "model.onnx")
    test = (
        "import pytest\n"
        "pytestmark = pytest.mark.ort_model('model.onnx')\n\n"
        "def test_latency(ort_perf):\n"
        "    ort_perf.check_latency()\n"
    )
    pytester.makepyfile(test_mlp=test, test_cnn=test)
    options = ("--ortperf-missing=pass", "--ortperf-budget=0.05", "--ortperf-max-cv=1000%")
    first = pytester.runpytest(*options, "--benchmark-json=out.json", "--benchmark-save=first")
    first.assert_outcomes(passed=2)
    for name in ("test_mlp.py", "test_cnn.py"):
        first.stdout.fnmatch_lines([f"{name}::test_latency[[]cpu-all[]] *"])
    entries = _entries(pytester.path / "out.json")
    nodeids = ["test_cnn.py::test_latency[cpu-all]", "test_mlp.py::test_latency[cpu-all]"]
    assert sorted(e["name"] for e in entries) == nodeids
    assert sorted(e["fullname"] for e in entries) == nodeids
    assert {e["param"] for e in entries} == {"cpu-all"}
    compared = pytester.runpytest(*options, "--benchmark-compare=0001")
    compared.assert_outcomes(passed=2)
    for nodeid in nodeids:
        escaped = nodeid.replace("[", "[[]")
        compared.stdout.fnmatch_lines([f"{escaped} (0001_first) *"])
        compared.stdout.fnmatch_lines([f"{escaped} (NOW) *"])


def test_unknown_pytest_benchmark_shape_is_skipped_quietly(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_shape="""
        import warnings

        import pytest_benchmark.stats
        from pytest_ortperf.plugin.benchmark import publish, unusable_reason

        class Changed:
            def __init__(self, fixture, iterations):  # no 'options' any more
                pass

        def test_shape(request, monkeypatch):
            monkeypatch.setattr(pytest_benchmark.stats, "Metadata", Changed)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                assert not publish(request.config, request.node, round_medians_ms=[1.0], runs_per_round=1)
            assert caught == []
            assert "unexpected shape" in unusable_reason(request.config)
            monkeypatch.undo()
            # Given up for the rest of the session, even though Metadata is back.
            assert not publish(request.config, request.node, round_medians_ms=[1.0], runs_per_round=1)
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*benchmark*tests*")


@pytest.mark.parametrize(
    ("medians", "runs_per_round"),
    [([], 1), ([1.0, math.nan], 1), ([-1.0], 1), ([1.0], 0), ([True], 1)],
)
def test_numbers_that_cannot_be_a_measurement_are_rejected(
    request: pytest.FixtureRequest, medians: list[float], runs_per_round: int
) -> None:
    with pytest.raises(ValueError, match="round"):
        publish(request.config, request.node, round_medians_ms=medians, runs_per_round=runs_per_round)


@pytest.mark.slow
def test_start_up_is_an_entry_of_its_own_and_memory_rides_on_the_tests_entries(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(mlp_model(2, 16), pytester.path / "model.onnx")
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(
        test_fp="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx")

        def test_fp(ort_perf):
            ort_perf.check(memory=True, startup=True)
        """
    )
    result = pytester.runpytest(
        "--ortperf-update", "--ortperf-budget=0.2", "--ortperf-max-cv=1000%", "--benchmark-json=bench.json"
    )
    result.assert_outcomes(passed=1)
    entries = {b["fullname"]: b for b in json.loads((pytester.path / "bench.json").read_text())["benchmarks"]}
    assert sorted(entries) == ["test_fp.py::test_fp[cpu-all]", "test_fp.py::test_fp[cpu-all]::startup"]
    startup = entries["test_fp.py::test_fp[cpu-all]::startup"]
    assert startup["group"] == "ortperf-startup"
    assert startup["stats"]["rounds"] == 7  # one fresh process per round
    assert startup["extra_info"]["check"] == "startup"
    assert startup["extra_info"]["first_run_ms"] > 0
    memory = entries["test_fp.py::test_fp[cpu-all]"]["extra_info"]["ortperf_memory"]
    assert memory["verdict"] == "new"
    assert memory["weights"] == 2 * 16 * 16 * 4


_XDIST_CHECKS = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

def test_a(ort_perf):
    ort_perf.check_latency()

def test_b(ort_perf):
    ort_perf.check_latency()
"""


def test_under_xdist_benchmark_json_holds_every_measurement_written_by_the_controller(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(_CONFTEST)
    onnx.save(mlp_model(layers=2, width=16), pytester.path / "model.onnx")
    pytester.makepyfile(test_checks=_XDIST_CHECKS)
    args = ("-n", "2", "--ort-opt-levels=disabled,all", "--ortperf-missing=pass", "--ortperf-budget=0.2")
    result = pytester.runpytest(*args, "--benchmark-json=bench.json")
    result.assert_outcomes(passed=4)
    entries = _entries(pytester.path / "bench.json")
    assert sorted(e["fullname"] for e in entries) == [
        "test_checks.py::test_a[cpu-all]",
        "test_checks.py::test_a[cpu-disabled]",
        "test_checks.py::test_b[cpu-all]",
        "test_checks.py::test_b[cpu-disabled]",
    ]
    for entry in entries:
        assert entry["group"] == "ortperf"
        assert entry["extra_info"]["variant"] in entry["fullname"]
        assert entry["param"] in ("cpu-all", "cpu-disabled")
        assert entry["stats"]["rounds"] >= 1
        assert entry["options"]["source"] == "pytest-ortperf"
    # the user's --benchmark-disable still means no stats
    disabled = pytester.runpytest(*args, "--benchmark-json=off.json", "--benchmark-disable")
    disabled.assert_outcomes(passed=4)
    assert not (pytester.path / "off.json").exists()
