"""The graph check end to end: real sessions write their optimized graphs; lost fusions fail side by
side on a machine other than the recording one; a re-export passes latency as the same graph."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import onnxruntime
import pytest

from pytest_ortperf.graph.figures import hardware_class
from pytest_ortperf.kinds import builtin_kinds
from pytest_ortperf.ort.models import ModelResolver
from pytest_ortperf.ort.transformers import prepare
from pytest_ortperf.reports.show import show_baselines
from pytest_ortperf.store.hardware import parse_cpuinfo
from tests.models import conv_stack_model, reexported
from tests.plugin.conftest import git, move_figures_to_other_hardware, other_generation

GRAPH_TEST = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

def test_graph(ort_perf):
    ort_perf.check_graph()
"""
LEVELS = ("--ort-opt-levels=basic,extended",)
PLACEMENT = hasattr(onnxruntime.InferenceSession, "get_provider_graph_assignment_info")
CPUINFO = Path(__file__).resolve().parents[1] / "unit" / "data" / "cpuinfo" / "sapphire_rapids_amx.txt"
# A conftest that makes a run believe it runs on the CPU $FAKE_CPUINFO describes (runs started with it
# set are subprocesses, so the patch never outlives them).
FAKE_CPU = """
import functools, os
from pathlib import Path

def pytest_configure(config):
    if os.environ.get("FAKE_CPUINFO"):
        from pytest_ortperf.store import machine
        machine.detect_hardware = functools.partial(machine.detect_hardware, cpuinfo=Path(os.environ["FAKE_CPUINFO"]))
"""


def commit(pytester: pytest.Pytester, *paths: str) -> None:
    git(pytester, "add", *paths)
    git(pytester, "commit", "-q", "-m", "commit")


def start_repository(pytester: pytest.Pytester, test: str = GRAPH_TEST) -> Path:
    """A repository whose HEAD holds a 3-layer conv stack and its test; the baseline file's path."""
    git(pytester, "init", "-q")
    git(pytester, "config", "user.name", "Test")
    git(pytester, "config", "user.email", "test@example.com")
    git(pytester, "config", "commit.gpgsign", "false")
    onnx.save(conv_stack_model(3), pytester.path / "model.onnx")
    pytester.makepyfile(test_graph=test)
    commit(pytester, "model.onnx", "test_graph.py")
    return pytester.path / "baselines" / "test_graph.py.json"


def graph_of(baseline: Path, test: str) -> dict[str, object]:
    figures = json.loads(baseline.read_text())["entries"][test]["figures"]
    (only,) = figures.values()
    graph: dict[str, object] = only["graph"]
    return graph


def to_other_hardware(baseline: Path, test: str) -> str:
    """The recorded figures moved to another CPU generation, the graph's hardware class with them."""
    key = next(iter(json.loads(baseline.read_text())["entries"][test]["figures"]))

    def edit(figures: dict[str, object]) -> None:
        hardware = figures["measured_on"]["hardware"]  # type: ignore[index]
        figures["graph"]["hardware_class"] = f"{hardware['arch']}:{','.join(sorted(hardware['features']))}"  # type: ignore[index]

    # the figures are moved first, then edited with their new hardware
    other = move_figures_to_other_hardware(baseline, test, key)
    document = json.loads(baseline.read_text())
    edit(document["entries"][test]["figures"][other])
    baseline.write_text(json.dumps(document))
    return other


def test_the_graph_is_recorded_per_variant_and_passes_unchanged(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    baseline = start_repository(pytester)
    pytester.runpytest("--ortperf-update", *LEVELS).assert_outcomes(passed=2)
    basic, extended = (
        graph_of(baseline, "test_graph[cpu-basic]"),
        graph_of(baseline, "test_graph[cpu-extended]"),
    )
    assert basic["ops"] == {"Conv": 3, "Identity": 1, "Relu": 3} or basic["ops"] == {"Conv": 3, "Relu": 3}
    assert basic["fused"] == {}
    assert extended["fused"] == {"com.microsoft:FusedConv": 3}
    if PLACEMENT:  # onnxruntime 1.23 (Python 3.10) cannot say where nodes run
        assert extended["providers"] == {"CPUExecutionProvider": sum(basic["providers"].values())}  # type: ignore[union-attr]
    assert len(str(extended["digest"])) == 64
    result = pytester.runpytest(*LEVELS)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "graphs (what ONNX Runtime will run for each variant*",
            "*test_graph.py::test_graph*cpu-extended*graph*unchanged*fused: FusedConv 3; digest *nothing changed*unchanged",
        ]
    )
    before = baseline.read_bytes()
    pytester.runpytest("--ortperf-update", *LEVELS).assert_outcomes(passed=2)
    assert baseline.read_bytes() == before  # an update of the same graph writes nothing
    shown, problems = show_baselines(baseline.parent, as_json=False, decoders=builtin_kinds().part_decoders())
    assert not problems
    assert any("graph 4 nodes, fused: FusedConv 3; digest " in line or "graph 3 nodes, fused: FusedConv 3" in line
               for line in shown)  # fmt: skip


def test_a_lost_fusion_fails_side_by_side_on_a_machine_other_than_the_recording_one(
    pytester: pytest.Pytester, isolated_git: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline = start_repository(pytester)
    pytester.makeconftest(FAKE_CPU)
    monkeypatch.setenv("FAKE_CPUINFO", str(CPUINFO))
    pytester.runpytest_subprocess("--ortperf-update", *LEVELS).assert_outcomes(passed=2)
    monkeypatch.delenv("FAKE_CPUINFO")
    (recorded_on,) = json.loads(baseline.read_text())["entries"]["test_graph[cpu-extended]"]["figures"]
    assert "-amx-" in recorded_on  # recorded on a Sapphire Rapids (AMX), a CPU this machine is not
    onnx.save(conv_stack_model(3, exposed=1), pytester.path / "model.onnx")  # conv0 can no longer fuse
    result = pytester.runpytest(*LEVELS, "--ortperf-report=report.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "graph regression in test_graph[[]cpu-extended[]] against the recorded model (git *)",
            "  reference: * fused: FusedConv 3; digest *",
            "  current:   * fused: FusedConv 2; digest *",
            "  change:    FusedConv 3 -> 2, Conv +1, Relu +1",
            "  lost fusions: FusedConv 3 -> 2 (Conv +1, Relu +1)",
            "  nodes new: conv0 (Conv), relu0 (Relu)",
            "  nodes gone: conv0 (FusedConv)",
            "  fails: lost fusion: FusedConv 3 -> 2 (Conv +1, Relu +1)",
            "  to accept the new graph: ortperf update 'test_graph.py::test_graph[[]cpu-extended[]]'*",
        ]
    )
    records = {r["variant"]: r for r in json.loads((pytester.path / "report.json").read_text())["checks"]}
    assert records["cpu-extended"]["kind"] == "graph"
    assert records["cpu-extended"]["verdict"] == "regression"
    assert records["cpu-extended"]["path"].startswith("side by side vs the recorded model (git ")
    assert records["cpu-basic"]["verdict"] == "ok"  # the extra output informs at basic: nothing fused there


@pytest.mark.parametrize(
    ("marker", "outcome"),
    [
        ("@pytest.mark.ort_thresholds(graph='off')", {"passed": 1}),
        (
            "@pytest.mark.ort_thresholds(graph='off')\n@pytest.mark.ort_thresholds(graph={'FusedConv': 2})",
            {"passed": 1},
        ),
        (
            "@pytest.mark.ort_thresholds(graph='off')\n@pytest.mark.ort_thresholds(graph={'FusedConv': 3})",
            {"failed": 1},
        ),
    ],
)
def test_what_fails_is_set_by_a_marker(
    pytester: pytest.Pytester, isolated_git: None, marker: str, outcome: dict[str, int]
) -> None:
    """graph='off' lets a lost fusion pass; pinned counts (a marker of their own) still decide."""
    test = GRAPH_TEST.replace("def test_graph", f"{marker}\ndef test_graph")
    start_repository(pytester, test)
    pytester.runpytest("--ortperf-update", "--ort-opt-levels=extended").assert_outcomes(passed=1)
    onnx.save(conv_stack_model(3, exposed=1), pytester.path / "model.onnx")
    pytester.runpytest("--ort-opt-levels=extended").assert_outcomes(**outcome)


def test_exact_mode_fails_a_change_that_only_informs(pytester: pytest.Pytester, isolated_git: None) -> None:
    start_repository(pytester)
    pytester.runpytest("--ortperf-update", *LEVELS).assert_outcomes(passed=2)
    onnx.save(conv_stack_model(3, exposed=1), pytester.path / "model.onnx")
    result = pytester.runpytest("--ort-opt-levels=basic", "--ortperf-graph=exact")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["  fails: the graph changed (* and ort_thresholds(graph='exact') fails any change"]
    )


def test_pinned_counts_of_a_call_fail_with_the_counts(pytester: pytest.Pytester) -> None:
    onnx.save(conv_stack_model(2), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_pins="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx")

        def test_pins(ort_perf):
            ort_perf.check_graph(expect_fusions={"FusedConv": 2, "Attention": 1})
        """
    )
    result = pytester.runpytest("--ort-opt-levels=extended", "--ortperf-missing=pass")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*graph of test_pins[[]cpu-extended[]]: pinned counts not met: Attention: expected 1, found 0;*"]
    )


CPUINFO_FILES = Path(__file__).parents[1] / "unit" / "data" / "cpuinfo"


@pytest.mark.parametrize("cpu", ["zen1_avx2", "zen3_avx2", "zen4_avx512", "sapphire_rapids_amx"])
def test_the_other_hardware_of_the_tests_is_another_graph_class_on_every_cpu(cpu: str) -> None:
    """Tests that move figures "to other hardware" must mean another graph class on whatever CPU the
    session gets (an AVX2 machine is of the Zen 3 candidate's class)."""
    here = parse_cpuinfo((CPUINFO_FILES / f"{cpu}.txt").read_text(), arch="x86_64", cores=2).as_dict()
    other = other_generation(here)
    assert hardware_class(other) != hardware_class(here)


def test_stored_graphs_decide_only_on_the_hardware_class_that_recorded_them(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """No repository and no model cache: the recorded model cannot be rebuilt."""
    onnx.save(conv_stack_model(3), pytester.path / "model.onnx")
    pytester.makepyfile(test_graph=GRAPH_TEST)
    baseline = pytester.path / "baselines" / "test_graph.py.json"
    pytester.runpytest("--ortperf-update", "--ort-opt-levels=extended").assert_outcomes(passed=1)
    onnx.save(conv_stack_model(3, exposed=1), pytester.path / "model.onnx")
    here = pytester.runpytest("--ort-opt-levels=extended")
    here.assert_outcomes(failed=1)
    here.stdout.fnmatch_lines(
        [
            "graph regression in test_graph[[]cpu-extended[]] against the graph recorded on this hardware class (recorded *)",
            "  lost fusions: FusedConv 3 -> 2 (Conv +1, Relu +1)",
            "  decided by stored figures: the model changed * and the recorded one is neither in git here nor in the model cache*",
        ]
    )
    to_other_hardware(baseline, "test_graph[cpu-extended]")
    elsewhere = pytester.runpytest("--ort-opt-levels=extended")
    elsewhere.assert_outcomes(failed=1)
    elsewhere.stdout.fnmatch_lines(
        [
            "no graph baseline for test_graph[[]cpu-extended[]] (the model changed *; no graph was recorded on this hardware class (*) (graphs exist for: *)); built *"
        ]
    )


def test_a_reexport_passes_latency_as_the_same_graph_with_no_timed_round(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    start_repository(
        pytester,
        """
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx")

        def test_gate(ort_perf):
            latency, accuracy, graph = ort_perf.check()
            print("LATENCY", latency.status, latency.current.rounds)
        """,
    )
    pytester.runpytest(
        "--ortperf-update", "--ort-opt-levels=extended", "--ortperf-budget=0.3"
    ).assert_outcomes(passed=1)
    onnx.save(reexported(conv_stack_model(3)), pytester.path / "model.onnx")
    result = pytester.runpytest("--ort-opt-levels=extended", "-s", "--ortperf-report=report.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*LATENCY unchanged (same graph) 0",
            "*test_graph.py::test_gate*cpu-extended*same graph*the same optimized graph as the reference; not timed*unchanged (same graph)",
        ]
    )
    latency = next(
        r for r in json.loads((pytester.path / "report.json").read_text())["checks"] if r["kind"] == "latency"
    )
    assert latency["current"]["rounds"] == 0
    assert latency["path"].startswith("same graph as the recorded model (git ")


@pytest.mark.slow
def test_a_latency_failure_side_by_side_carries_the_graph_difference(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    start_repository(
        pytester,
        """
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx")

        def test_latency(ort_perf):
            ort_perf.check_latency()
        """,
    )
    pytester.runpytest(
        "--ortperf-update", "--ort-opt-levels=extended", "--ortperf-budget=0.5"
    ).assert_outcomes(passed=1)
    onnx.save(conv_stack_model(9), pytester.path / "model.onnx")  # three times the layers
    result = pytester.runpytest("--ort-opt-levels=extended")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "latency regression in test_latency[[]cpu-extended[]] against the recorded model (git *",
            "  graph at cpu-extended:",
            "    change:    FusedConv 3 -> 9",
            "    more fused nodes as the model grew (no unfused part went away): FusedConv 3 -> 9",
            "*to accept the new latency: *",
        ]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--ortperf-graph=loose",), "*--ortperf-graph: expected one of fusions, exact, off, got 'loose'.*"),
        (
            ("-o", "ortperf_graph=every"),
            "*ini ortperf_graph: expected one of fusions, exact, off, got 'every'.*",
        ),
    ],
)
def test_a_bad_graph_mode_is_a_usage_error_naming_the_option(
    pytester: pytest.Pytester, args: tuple[str, ...], message: str
) -> None:
    onnx.save(conv_stack_model(1), pytester.path / "model.onnx")
    pytester.makepyfile(test_graph=GRAPH_TEST)
    result = pytester.runpytest(*args)
    assert result.ret != 0
    result.stderr.fnmatch_lines([message])


def test_a_bad_graph_marker_fails_only_its_test(pytester: pytest.Pytester) -> None:
    onnx.save(conv_stack_model(1), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_graph=GRAPH_TEST
        + """
@pytest.mark.ort_thresholds(graph={"FusedConv": -1})
def test_bad(ort_perf):
    ort_perf.check_graph()
"""
    )
    result = pytester.runpytest("--ort-opt-levels=extended", "--ortperf-missing=pass")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*graph: the count pinned for 'FusedConv' must be an integer >= 0, got -1.*"]
    )


def test_damaged_graph_figures_name_the_file_and_overwrite_nothing(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    baseline = start_repository(pytester)
    pytester.runpytest("--ortperf-update", "--ort-opt-levels=extended").assert_outcomes(passed=1)
    document = json.loads(baseline.read_text())
    (figures,) = document["entries"]["test_graph[cpu-extended]"]["figures"].values()
    figures["graph"]["ops"] = {"Conv": -3}
    baseline.write_text(json.dumps(document))
    damaged = baseline.read_bytes()
    result = pytester.runpytest("--ort-opt-levels=extended")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{baseline}*graph ops*must be a count*"])
    pytester.runpytest("--ortperf-update", "--ort-opt-levels=extended")
    assert baseline.read_bytes() == damaged


MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
BERT = (("hidden_size", 64), ("model_type", "bert"), ("num_heads", 4))
ENCODER = MODELS / "encoder.onnx"
PRE_PASS_TEST = """
import pytest
pytestmark = pytest.mark.ort_model(
    "bert.onnx",
    int_range={"input_ids": (0, 512), "attention_mask": (1, 2)},
    transformers={"model_type": "bert", "num_heads": 4, "hidden_size": 64},
)

def test_graph(ort_perf):
    ort_perf.check_graph()
"""


def test_the_transformer_optimizer_pre_pass_records_its_fusions_and_a_lost_attention_fails(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """The example BERT exported from transformers, then exported again with its attention written as
    scaled_dot_product_attention (transformers' sdpa): the same model, fusions lost."""
    model = ModelResolver(pytester.path).resolve(MODELS / "bert.onnx", test_dir=pytester.path, origin="test")
    here = prepare(model, BERT, cache_dir=pytester.path / "probe", ort_version=onnxruntime.__version__)
    if "Attention" not in here.fused:  # onnxruntime 1.23.2 (Python 3.10) does not; 1.31 and 1.32 do
        pytest.skip(
            f"onnxruntime {onnxruntime.__version__}'s transformer optimizer does not fuse this export's attention"
        )
    git(pytester, "init", "-q")
    git(pytester, "config", "user.name", "Test")
    git(pytester, "config", "user.email", "test@example.com")
    git(pytester, "config", "commit.gpgsign", "false")
    (pytester.path / "bert.onnx").write_bytes((MODELS / "bert.onnx").read_bytes())
    pytester.makepyfile(test_bert=PRE_PASS_TEST)
    pytester.makeini("[pytest]\nortperf_dims = batch=1,sequence=16\n")
    commit(pytester, "bert.onnx", "test_bert.py")
    baseline = pytester.path / "baselines" / "test_bert.py.json"
    pytester.runpytest("--ortperf-update", "--ort-opt-levels=extended").assert_outcomes(passed=1)
    graph = graph_of(baseline, "test_graph[cpu-extended]")
    assert graph["pre_pass"] == {
        "Attention": 2,
        "BiasGelu": 2,
        "EmbedLayerNormalization": 1,
        "SkipLayerNormalization": 4,
    }
    assert graph["ops"]["com.microsoft:Attention"] == 2  # type: ignore[index]
    recipe = json.loads(baseline.read_text())["entries"]["test_graph[cpu-extended]"]["recipe"]
    assert recipe["model_transformers"] == {"hidden_size": 64, "model_type": "bert", "num_heads": 4}
    assert recipe["model_git_blob"] == git(pytester, "rev-parse", "HEAD:bert.onnx")  # the source's
    assert list((pytester.path / ".ortperf" / "transformers").glob("*.onnx"))  # cached by content
    pytester.runpytest("--ort-opt-levels=extended").assert_outcomes(passed=1)  # unchanged: deterministic

    (pytester.path / "bert.onnx").write_bytes((MODELS / "bert_sdpa.onnx").read_bytes())
    result = pytester.runpytest("--ort-opt-levels=extended")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "graph regression in test_graph[[]cpu-extended[]] against the recorded model (git *)",
            "  change:    Attention 2 -> 0, EmbedLayerNormalization 1 -> 0, *MatMul +*Softmax +2*",
            "  lost fusions: Attention 2 -> 0 (*); EmbedLayerNormalization 1 -> 0 (*)",
            "  transformer optimizer: Attention 2, BiasGelu 2, EmbedLayerNormalization 1, SkipLayerNormalization 4 -> "
            "BiasGelu 2, LayerNormalization 1, SkipLayerNormalization 4",
            "  fails: the transformer optimizer fused less: Attention 2 -> 0",
            "  fails: the transformer optimizer fused less: EmbedLayerNormalization 1 -> 0",
        ]
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("bert", "*transformers= takes the optimizer's options as a dict with model_type*got 'bert'.*"),
        (
            {"model_type": "bert", "heads": 4},
            "*transformers= has unknown option(s) heads; it takes model_type, num_heads, hidden_size.*",
        ),
        (
            {"model_type": "bert", "num_heads": "4"},
            "*transformers= option num_heads must be an integer >= 0, got '4'.*",
        ),
    ],
)
def test_bad_transformer_options_fail_only_their_test_naming_the_marker(
    pytester: pytest.Pytester, options: object, message: str
) -> None:
    (pytester.path / "encoder.onnx").write_bytes(ENCODER.read_bytes())
    pytester.makepyfile(
        test_enc=f"""
        import pytest

        @pytest.mark.ort_model("encoder.onnx", transformers={options!r})
        def test_bad(ort_perf):
            ort_perf.check_graph()

        def test_other():
            pass
        """
    )
    result = pytester.runpytest("--ort-opt-levels=basic")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"*ort_model marker of test_enc.py::test_bad[[]cpu-basic[]]: {message[1:]}"])
