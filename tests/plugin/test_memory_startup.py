"""Memory and start-up checks end to end: record, pass on the same model, fail on a model that really
needs more memory or starts slower, on hardware other than the one that recorded them; real sessions
in fresh worker processes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from tests.models import mlp_model, reexported, small_ops_model
from tests.plugin.conftest import git, move_figures_to_other_hardware
from tests.wheels import ARENA_REPORTED

QUICK = ("--ortperf-budget=0.2", "--ortperf-max-cv=1000%")
MEMORY_TEST = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

def test_memory(ort_perf):
    ort_perf.check_memory()
"""
STARTUP_TEST = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

def test_startup(ort_perf):
    ort_perf.check_startup()
"""


def with_duplicated_weight(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` (an MLP) with one more weight: a near copy of its first, used by a node added at the end."""
    grown = onnx.ModelProto()
    grown.CopyFrom(model)
    graph = grown.graph
    first = numpy_helper.to_array(graph.initializer[0])
    graph.initializer.append(numpy_helper.from_array(first * np.float32(1.001), "w_copy"))
    last = graph.node[-1]  # Identity -> y
    graph.node.remove(last)
    graph.node.extend(
        [
            helper.make_node("MatMul", [last.input[0], "w_copy"], ["extra"], name="extra_matmul"),
            helper.make_node("Add", [last.input[0], "extra"], ["y"], name="extra_add"),
        ]
    )
    return grown


def commit(pytester: pytest.Pytester, model: onnx.ModelProto) -> str:
    git(pytester, "init", "-q")
    git(pytester, "config", "user.name", "Test")
    git(pytester, "config", "user.email", "test@example.com")
    git(pytester, "config", "commit.gpgsign", "false")
    onnx.save(model, pytester.path / "model.onnx")
    git(pytester, "add", "model.onnx")
    git(pytester, "commit", "-q", "-m", "model")
    return git(pytester, "rev-parse", "HEAD:model.onnx")[:12]


def move_to_other_hardware(baseline_file: Path, test: str) -> str:
    """Every figure of ``test`` (one machine's) moved to another CPU generation; its machine key."""
    (key,) = json.loads(baseline_file.read_text())["entries"][test]["figures"]
    return move_figures_to_other_hardware(baseline_file, test, key)


def report(pytester: pytest.Pytester) -> list[dict[str, object]]:
    return json.loads((pytester.path / "report.json").read_text())["checks"]


@pytest.mark.slow
def test_memory_records_passes_unchanged_and_fails_a_model_that_needs_more(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    blob = commit(pytester, mlp_model(8, 128))
    pytester.makepyfile(test_memory=MEMORY_TEST)
    baseline = pytester.path / "baselines" / "test_memory.py.json"
    recorded = pytester.runpytest("--ortperf-update", *QUICK)
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines(["ortperf update: 0 updated, 1 new, 0 unchanged, 0 unused*"])
    (figures,) = json.loads(baseline.read_text())["entries"]["test_memory[cpu-all]"]["figures"].values()
    assert figures["memory"]["weights"] == 8 * 128 * 128 * 4
    if ARENA_REPORTED:
        assert figures["memory"]["arena_peak"] >= 8 * 128 * 128 * 4, "MatMul weights are in ORT's arena"
    assert figures["memory"]["processes"] == 2
    assert "latency" not in figures
    other = move_to_other_hardware(baseline, "test_memory[cpu-all]")
    moved = baseline.read_bytes()

    # Nothing changed: unchanged on this hardware too, without figures of its own.
    same = pytester.runpytest("--ortperf-report=report.json", "--junitxml=junit.xml", *QUICK)
    same.assert_outcomes(passed=1)
    same.stdout.fnmatch_lines(
        [
            "test_memory.py::test_memory  cpu-all  memory  unchanged  *, weights 512 KiB  nothing changed  unchanged"
        ]
    )
    (check,) = report(pytester)
    assert (check["kind"], check["verdict"], check["failed"]) == ("memory", "unchanged", False)
    if ARENA_REPORTED:
        assert check["current"]["arena_peak"] == figures["memory"]["arena_peak"], (
            "exact on every machine here"
        )
    assert 'name="ortperf_memory_verdict" value="unchanged"' in (pytester.path / "junit.xml").read_text()

    # The same work re-exported (other weights, same shapes): side by side with the recorded model, equal.
    onnx.save(mlp_model(8, 128, seed=3), pytester.path / "model.onnx")
    reexported = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    reexported.assert_outcomes(passed=1)
    (check,) = report(pytester)
    assert check["path"] == f"side by side vs the recorded model (git {blob})"
    assert check["verdict"] == "ok"
    assert check["comparisons"][-1]["text"] == "+0.0% (+0 B)"  # the weights
    (change,) = check["changed_since_baseline"]  # named on the side-by-side route too
    assert change.startswith("model sha256 ")

    # One more weight tensor (1/8 of the weights): fails side by side, naming figures, change and nodes.
    onnx.save(with_duplicated_weight(mlp_model(8, 128)), pytester.path / "model.onnx")
    grown = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    grown.assert_outcomes(failed=1)
    arena = [  # where this onnxruntime's profile reports its arena (1.31, 1.32; not 1.23)
        "  reference: ORT arena: peak in use * KiB, arena held *",
        "             model weights: 512 KiB",
        "             peak resident memory added: * MiB (* over 2 processes)",
        "  current:   ORT arena: peak in use * KiB, arena held *",
        "  change:    peak bytes in use in ORT's arena +*% (+64 KiB) -> regression",
        "             limit +/-1% and at least 4 KiB, * process pairs, look 1 of 3",
    ]
    grown.stdout.fnmatch_lines(
        [
            f"memory regression in test_memory[[]cpu-all[]] against the recorded model (git {blob}) (side by side, fresh processes)",
            *(arena if ARENA_REPORTED else ["  reference: model weights: 512 KiB"]),
            "  change:    bytes of the model's weights +12.5% (+64 KiB) -> regression",
            "  changed since the baseline: model sha256 * -> *",
            "  to accept the new memory: ortperf update 'test_memory.py::test_memory[[]cpu-all[]]' *",
        ]
    )
    if ARENA_REPORTED:
        grown.stdout.fnmatch_lines(["  nodes whose bytes grew most: extra_*(new)*"])
    (check,) = report(pytester)
    assert check["failed"] is True
    assert baseline.read_bytes() == moved, "a failing check must not touch the baseline"

    # A looser threshold for this test lets the growth pass.
    pytester.makepyfile(
        test_memory=MEMORY_TEST.replace(
            "def test_memory", "@pytest.mark.ort_thresholds(memory='50%')\ndef test_memory"
        )
    )
    pytester.runpytest(*QUICK).assert_outcomes(passed=1)

    # An update here adds this hardware's memory figures and keeps the other hardware's.
    pytester.makepyfile(test_memory=MEMORY_TEST)
    git(pytester, "checkout", "--", "model.onnx")
    updated = pytester.runpytest("--ortperf-update", *QUICK)
    updated.assert_outcomes(passed=1)
    keys = json.loads(baseline.read_text())["entries"]["test_memory[cpu-all]"]["figures"]
    assert other in keys
    assert len(keys) == 2


@pytest.mark.slow
def test_stored_memory_figures_decide_only_on_their_hardware(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """No git, no model cache: a changed model cannot be rebuilt, so this hardware's stored figures decide."""
    onnx.save(mlp_model(8, 128), pytester.path / "model.onnx")
    pytester.makepyfile(test_memory=MEMORY_TEST)
    baseline = pytester.path / "baselines" / "test_memory.py.json"
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    onnx.save(with_duplicated_weight(mlp_model(8, 128)), pytester.path / "model.onnx")
    stored = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    stored.assert_outcomes(failed=1)
    stored.stdout.fnmatch_lines(
        [
            "memory regression in test_memory[[]cpu-all[]] against this hardware's stored figures (recorded *)",
            "  decided by stored figures: the model changed (sha256 * -> *) and the recorded one is neither in git*",
        ]
    )
    move_to_other_hardware(baseline, "test_memory[cpu-all]")
    elsewhere = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    elsewhere.assert_outcomes(failed=1)
    elsewhere.stdout.fnmatch_lines(
        [
            "no memory baseline for test_memory[[]cpu-all[]] on machine *; this hardware has no figures of its own (figures exist for: *"
        ]
    )


@pytest.mark.slow
def test_startup_records_passes_unchanged_and_fails_a_model_that_starts_slower(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    blob = commit(pytester, small_ops_model(ops=30))
    pytester.makepyfile(test_startup=STARTUP_TEST)
    baseline = pytester.path / "baselines" / "test_startup.py.json"
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    (figures,) = json.loads(baseline.read_text())["entries"]["test_startup[cpu-all]"]["figures"].values()
    assert len(figures["startup"]["create_ms"]) == 7
    move_to_other_hardware(baseline, "test_startup[cpu-all]")

    same = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    same.assert_outcomes(passed=1)
    (check,) = report(pytester)
    assert (check["kind"], check["path"], check["verdict"]) == ("startup", "unchanged", "unchanged")

    # Thirty times the operators: graph optimization and kernel creation take really longer.
    onnx.save(small_ops_model(ops=900), pytester.path / "model.onnx")
    slower = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(
        [
            f"start-up regression in test_startup[[]cpu-all[]] against the recorded model (git {blob}) (side by side, fresh processes)",
            "  reference: session creation: median * ms over * fresh processes *",
            "  change:    session creation +*% (* ms -> * ms) -> regression",
            # pairs of fresh processes, by the rule of every side-by-side verdict (no second measurement)
            "             limit +/-25%, * t interval +*% .. +*% over * process pairs, look * of 5",
            "  to accept the new start-up: ortperf update *",
        ]
    )


@pytest.mark.slow
def test_check_adds_memory_and_startup_when_asked_and_only_then(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(2, 16), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_all="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx")

        def test_default(ort_perf):
            assert [type(r).__name__ for r in ort_perf.check()] == ["LatencyResult", "AccuracyResult", "GraphResult"]

        def test_asked(ort_perf):
            kinds = [getattr(r, "kind", type(r).__name__) for r in ort_perf.check(memory=True, startup=True)]
            assert kinds == ["LatencyResult", "AccuracyResult", "graph", "memory", "startup"]
            no_graph = [getattr(r, "kind", type(r).__name__) for r in ort_perf.check(graph=False, name="again")]
            assert no_graph == ["LatencyResult", "AccuracyResult"]
        """
    )
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=2)
    pytester.makeini("[pytest]\nortperf_checks = accuracy, memory\n")
    pytester.makepyfile(
        test_all="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx")

        def test_default(ort_perf):
            assert [getattr(r, "kind", type(r).__name__) for r in ort_perf.check()] == ["AccuracyResult", "memory"]

        def test_asked(ort_perf):
            assert [getattr(r, "kind", type(r).__name__) for r in ort_perf.check(memory=False)] == ["AccuracyResult"]
        """
    )
    # test_default never recorded memory: missing, passed by the option; the report says which ran.
    ran = pytester.runpytest("--ortperf-missing=pass", "--ortperf-report=report.json", *QUICK)
    ran.assert_outcomes(passed=2)
    assert sorted((c["test"].split("::")[1], c["kind"]) for c in report(pytester)) == [
        ("test_asked[cpu-all]", "accuracy"),
        ("test_default[cpu-all]", "accuracy"),
        ("test_default[cpu-all]", "memory"),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--ortperf-checks=latency,memroy",),
            "*--ortperf-checks: expected checks from latency, accuracy, graph, memory, startup, determinism, threads, throughput, generation, comma separated; unknown: memroy. The kinds: latency (*",
        ),
        (("--ortperf-memory-threshold=5",), "*--ortperf-memory-threshold: did you mean 5%?*"),
        (
            ("--ortperf-memory-floor=lots",),
            "*--ortperf-memory-floor: expected a size such as 4KiB, 512MiB, 8GiB or a number of bytes, got 'lots'.*",
        ),
        (("--ortperf-memory-limit=8 parsecs",), "*--ortperf-memory-limit: expected a size such as 4KiB*"),
        (
            ("--ortperf-startup-threshold=-3%",),
            "*--ortperf-startup-threshold: a threshold must be a positive finite amount*",
        ),
    ],
)
def test_bad_options_are_usage_errors_that_name_the_option(
    pytester: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret != 0
    result.stderr.fnmatch_lines([message])


def test_a_bad_marker_threshold_fails_only_its_test(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(2, 16), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_marks="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx")

        @pytest.mark.ort_thresholds(startup="lots")
        def test_bad(ort_perf):
            ort_perf.check_startup()

        def test_fine():
            pass
        """
    )
    result = pytester.runpytest(*QUICK)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ort_thresholds marker of test_marks.py::test_bad*: startup: expected a threshold such as '10%' or 0.1, got 'lots'.*"
        ]
    )


def test_a_model_past_the_memory_limit_fails_only_its_memory_check(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(4, 1024), pytester.path / "model.onnx")  # 16 MiB of weights
    pytester.makepyfile(
        test_big="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

        def test_memory(ort_perf):
            ort_perf.check_memory()

        def test_accuracy(ort_perf):
            ort_perf.check_accuracy()
        """
    )
    result = pytester.runpytest(
        "--ortperf-update", "--ortperf-memory-limit=8MiB", "--ortperf-report=report.json", *QUICK
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the session ran out of memory at the worker's limit of 8 MiB (--ortperf-memory-limit); resident memory reached * MiB*"
        ]
    )
    errors = [c for c in report(pytester) if c["verdict"] == "error"]
    assert [c["kind"] for c in errors] == ["memory"]
    entries = json.loads((pytester.path / "baselines" / "test_big.py.json").read_text())["entries"]
    assert list(entries) == ["test_accuracy[cpu-all]"], (
        "the accuracy test's entry is written; nothing for the failed check"
    )


@pytest.mark.slow
def test_in_ab_mode_memory_is_measured_side_by_side_with_the_reference_model(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(with_duplicated_weight(mlp_model(8, 128)), pytester.path / "model.onnx")
    onnx.save(mlp_model(8, 128), pytester.path / "reference.onnx")
    pytester.makepyfile(
        test_ab="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

        @pytest.mark.ort_ab("reference.onnx")
        def test_grown(ort_perf):
            ort_perf.check_memory()

        @pytest.mark.ort_ab("model.onnx")
        def test_same(ort_perf):
            ort_perf.check_memory()
        """
    )
    result = pytester.runpytest("--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["memory regression in test_grown[[]cpu-all[]] against * (side by side, fresh processes)"]
    )
    verdicts = {c["test"].split("::")[1]: c["verdict"] for c in report(pytester)}
    assert verdicts == {"test_grown[cpu-all]": "regression", "test_same[cpu-all]": "identical to reference"}


@pytest.mark.slow
def test_check_returns_one_result_per_check_in_order_also_in_ab_mode_and_with_timing_off(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(mlp_model(2, 16), pytester.path / "model.onnx")
    onnx.save(reexported(mlp_model(2, 16)), pytester.path / "reference.onnx")  # the same outputs, other bytes
    pytester.makepyfile(
        test_order="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx")

        def kinds(results):
            return [getattr(r, "kind", type(r).__name__) for r in results]

        @pytest.mark.ort_ab("reference.onnx")
        def test_ab(ort_perf):
            latency, accuracy, graph = ort_perf.check()  # A/B adds the outputs' comparison, not a result
            assert kinds((latency, accuracy, graph)) == ["LatencyResult", "AccuracyResult", "graph"]

        def test_untimed(ort_perf, request):
            results = ort_perf.check(startup=True, memory=True)
            assert kinds(results) == ["LatencyResult", "AccuracyResult", "graph", "memory", "startup"]
            print("STATUSES", [str(r.status) for r in results])

        def test_startup_alone(ort_perf):
            ort_perf.check_startup()
        """
    )
    ab = ("--ortperf-ab-budget=0.5", "--ortperf-ab-threshold=50%", "--ortperf-missing=pass")
    result = pytester.runpytest("-k", "test_ab", *ab, *QUICK)
    result.assert_outcomes(passed=1)
    pytester.runpytest("-k", "not test_ab", "--ortperf-update", *QUICK).assert_outcomes(passed=2)
    untimed = pytester.runpytest("-k", "not test_ab", "--ortperf-timing=off", "-rs", "-s", *QUICK)
    untimed.assert_outcomes(passed=1, skipped=1)
    untimed.stdout.fnmatch_lines(
        [
            "*STATUSES [[]'not timed', 'ok', 'unchanged', 'unchanged', 'not timed'[]]*",
            "SKIPPED * start-up of test_startup_alone[[]cpu-all[]] not timed: timing is off (--ortperf-timing=off)*",
        ]
    )
