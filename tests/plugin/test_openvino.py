"""OpenVINO, a real provider beside the CPU, end to end: recording and the gate, accuracy against
``cpu-disabled``, a node that falls back to the CPU provider, the compile cache's cold and warm
starts, per-provider profiles, and what ORT's memory accounting does not see.

These tests need onnxruntime-openvino as the installed runtime (it installs the same ``onnxruntime``
package as onnxruntime and onnxruntime-gpu, so it has a venv of its own: ``.ci/run``'s OpenVINO leg
makes ``.venvov`` and runs this file there, with ``ORTPERF_TEST_REQUIRE_OPENVINO=1`` so that a runtime
without a usable OpenVINO fails the leg); elsewhere they skip with the runtime found.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import onnx
import pytest

from pytest_ortperf.ort import worker_program
from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.runtime import runtime_info
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import session_recipe
from pytest_ortperf.ort.variants import OptLevel, Variant
from tests.models import mlp_model, normalized_mlp_model
from tests.plugin.conftest import git

OPENVINO = "OpenVINOExecutionProvider"
PROVIDERS = "--ort-providers=cpu,openvino"
COMPILED_NOTE = "ORT cannot write a graph whose nodes a provider compiled"


def _why_not() -> str:
    """'' where OpenVINO really runs here; else why not, naming the runtime installed."""
    info = runtime_info()
    if info.flavour != "onnxruntime-openvino":
        return f"needs onnxruntime-openvino as the installed runtime, not {info.describe()} (.ci/run's OpenVINO leg)"
    probe = ProviderProber(info.available_providers, info.describe()).probe(
        resolve_provider("openvino", source="test")
    )
    return "" if probe.available else f"OpenVINO does not run here: {probe.reason}"


WHY_NOT = _why_not()
if WHY_NOT and os.environ.get("ORTPERF_TEST_REQUIRE_OPENVINO"):  # the CI leg made for these tests
    raise RuntimeError(f"ORTPERF_TEST_REQUIRE_OPENVINO is set, and {WHY_NOT}")
pytestmark = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT)


def _report(path: Path) -> dict[tuple[str, str], dict[str, object]]:
    """The JSON report's checks by (variant, kind)."""
    checks = json.loads(path.read_text())["checks"]
    return {(str(c["variant"]), str(c["kind"])): c for c in checks}


def test_an_unchanged_model_records_and_passes_on_openvino_with_accuracy_against_cpu_disabled(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(mlp_model(3, 32), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_ov="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

        def test_gate(ort_perf, ort_session, ort_session_info, ort_variant):
            assert ort_session.get_providers()[0] == ort_variant.provider
            placement = ort_session_info.placement  # ORT's own record of where each node runs
            assert placement is not None and placement.nodes_not_on(ort_variant.provider) == ()
            ort_perf.check()
        """
    )
    fast = ("-p", "no:benchmark", "--ortperf-budget=0.5")
    recorded = pytester.runpytest("--ortperf-update", PROVIDERS, *fast)
    recorded.assert_outcomes(passed=2)
    entries = json.loads((pytester.path / "baselines" / "test_ov.py.json").read_text())["entries"]
    (figures,) = entries["test_gate[openvino-all]"]["figures"].values()
    assert figures["graph"]["ops"] == {"MatMul": 3, "Relu": 3}  # the nodes as ORT placed them
    assert figures["graph"]["providers"] == {OPENVINO: 6}
    assert figures["graph"]["digest"] == ""  # compiled: ORT cannot serialize it
    assert figures["latency"]["median_ms"] > 0

    report = pytester.path / "report.json"
    gate = pytester.runpytest(PROVIDERS, *fast, f"--ortperf-report={report}")
    gate.assert_outcomes(passed=2)
    gate.stdout.fnmatch_lines(
        ["*test_ov.py::test_gate*openvino-all*graph*unchanged*graph not serialized*unchanged"]
    )
    checks = _report(report)
    assert checks[("openvino-all", "latency")]["verdict"] == "unchanged"
    accuracy = str(checks[("openvino-all", "accuracy")]["message"])
    assert "  vs variant cpu-disabled: ok (y)" in accuracy.split("\n")
    graph_notes = checks[("openvino-all", "graph")]["notes"]
    assert [note for note in graph_notes if COMPILED_NOTE in note] == [  # type: ignore[union-attr]
        next(note for note in graph_notes if COMPILED_NOTE in note)  # type: ignore[union-attr]
    ]
    assert not checks[("cpu-all", "graph")]["notes"]


def test_a_node_falling_back_to_the_cpu_fails_the_openvino_variant_naming_it(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """Side by side with the recorded model from git: the fallback names the node, its op type and
    where it ran, and the graph that cannot be serialized is explained once for both sides."""
    git(pytester, "init", "-q")
    git(pytester, "config", "user.name", "Test")
    git(pytester, "config", "user.email", "test@example.com")
    git(pytester, "config", "commit.gpgsign", "false")
    onnx.save(mlp_model(2, 16), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_graph="""
        import pytest
        pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

        def test_graph(ort_perf):
            ort_perf.check_graph()
        """
    )
    git(pytester, "add", "model.onnx", "test_graph.py")
    git(pytester, "commit", "-q", "-m", "model")
    pytester.runpytest("--ortperf-update", PROVIDERS).assert_outcomes(passed=2)

    onnx.save(normalized_mlp_model(2, 16), pytester.path / "model.onnx")
    result = pytester.runpytest(PROVIDERS, "-p", "no:benchmark")
    result.assert_outcomes(passed=1, failed=1)  # the CPU variant runs the Normalizer where it asked
    result.stdout.fnmatch_lines(
        [
            "graph regression in test_graph[[]openvino-all[]] against the recorded model (git *",
            "  change:    ai.onnx.ml:Normalizer +1, nodes off the requested provider 0 -> 1",
            "  off the requested provider now: <unnamed> (ai.onnx.ml:Normalizer) on CPUExecutionProvider",
            "  fails: nodes off the requested provider 0 -> 1",
        ]
    )
    # Once in the failure's report (the short summary repeats the whole message where pytest runs on CI).
    failure = result.stdout.str().split("short test summary info")[0]
    assert failure.count(COMPILED_NOTE) == 1


@pytest.mark.slow
def test_startup_with_a_cache_dir_says_which_starts_were_cold_and_which_warm(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(mlp_model(2, 32), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_start="""
        import pytest

        @pytest.mark.ort_model("model.onnx", dims={"batch": 2})
        @pytest.mark.ort_settings(provider_options={"openvino": {"cache_dir": "ovcache"}})
        def test_start(ort_perf):
            ort_perf.check_startup()
        """
    )
    report = pytester.path / "report.json"
    result = pytester.runpytest(
        "--ortperf-update", "--ort-providers=openvino", "-p", "no:benchmark", f"--ortperf-report={report}"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_start*openvino-all*startup*record*compile cache: cold in 1 of 7 processes (compiled), warm in 6 (loaded from it)*"
        ]
    )
    startup = _report(report)[("openvino-all", "startup")]
    assert startup["current"]["cache"] == ["cold"] + ["hit"] * 6  # type: ignore[index]
    assert [path.suffix for path in (pytester.path / "ovcache").iterdir()] == [".blob"]


def test_profiles_and_memory_are_told_per_provider(pytester: pytest.Pytester) -> None:
    """A model whose Normalizer falls back: ORT's placement names it, the per-run profile splits the
    time between the two providers, and memory says what ORT's arena accounting cannot see."""
    onnx.save(normalized_mlp_model(2, 32, node_name="norm"), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_prof="""
        import pytest

        @pytest.mark.ort_profile
        @pytest.mark.ort_model("model.onnx", dims={"batch": 2})
        def test_profiled(ort_session, ort_session_info, ort_inputs):
            fallen = [(n.name, n.op_type, n.provider) for n in ort_session_info.placement.nodes_not_on("OpenVINOExecutionProvider")]
            assert fallen == [("norm", "Normalizer", "CPUExecutionProvider")]
            for _ in range(3):
                ort_session.run(None, ort_inputs)

        @pytest.mark.ort_model("model.onnx", dims={"batch": 2})
        def test_memory(ort_perf):
            ort_perf.check_memory()
        """
    )
    report = pytester.path / "report.json"
    result = pytester.runpytest(
        "--ortperf-update", "--ort-providers=openvino", "-p", "no:benchmark", f"--ortperf-report={report}"
    )
    result.assert_outcomes(passed=2)
    line = next(
        text for text in result.stdout.lines if text.startswith("profile test_prof.py::test_profiled")
    )
    shares = dict(re.findall(r"(\w+ExecutionProvider) (\d+)%", line.partition("providers: ")[2]))
    assert set(shares) == {OPENVINO, "CPUExecutionProvider"}
    assert "OpenVINO-EP-subgraph" in line  # the compiled subgraph's kernel, as OpenVINO names it
    notes = _report(report)[("openvino-all", "memory")]["notes"]
    assert any(f"{OPENVINO} allocates outside ORT's arena" in note for note in notes)  # type: ignore[union-attr]


class _WithoutPlacementApi:
    """onnxruntime as releases before 1.24 are: sessions without ``get_provider_graph_assignment_info``
    (everything else is the installed runtime's, real)."""

    def __init__(self, ort: Any) -> None:
        self._ort = ort

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ort, name)

    def InferenceSession(self, *args: Any, **kwargs: Any) -> Any:
        return _SessionWithoutPlacement(self._ort.InferenceSession(*args, **kwargs))


class _SessionWithoutPlacement:
    def __init__(self, session: Any) -> None:
        self._session = session

    def __getattr__(self, name: str) -> Any:
        if name == "get_provider_graph_assignment_info":
            raise AttributeError(name)
        return getattr(self._session, name)


def test_without_the_placement_api_a_profiled_run_finds_the_fallback(tmp_path: Path) -> None:
    import onnxruntime

    variant = Variant(resolve_provider("openvino", source="test"), OptLevel.ALL)
    recipe = session_recipe(variant, SessionSettings())
    model = normalized_mlp_model(2, 16, node_name="norm").SerializeToString()
    answer = worker_program.optimized_graph(
        _WithoutPlacementApi(onnxruntime), model, recipe, str(tmp_path / "optimized.onnx")
    )
    assert answer["placed"] is True
    assert ["norm", "Normalizer", "CPUExecutionProvider"] in answer["placement"]
    on_openvino = [op for _, op, provider in answer["placement"] if provider == OPENVINO]
    assert on_openvino
    assert all(op.startswith("OpenVINO-EP-subgraph") for op in on_openvino)
    assert worker_program.PROFILED_NOTE in answer["note"]
    assert COMPILED_NOTE in answer["note"]


def test_a_decoder_generates_on_openvino_and_a_lost_cache_fails_its_decode_step(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    """check_generation() on the OpenVINO provider: the cache fed back run to run through OpenVINO's
    compiled graph, recorded and passed unchanged; the decoder exported without its cache fails naming
    the decode step (a GPT-2-shaped decoder built with onnx.helper)."""
    from tests.exported_models import decoder_model
    from tests.plugin.conftest import commit_model

    wide = {"width": 256, "heads": 4, "vocab": 2000}
    commit_model(pytester, decoder_model(2, **wide))
    pytester.makepyfile(
        test_gen="""
        import pytest
        pytestmark = [pytest.mark.ort_model("model.onnx"), pytest.mark.ort_thresholds(generation="20%")]

        def test_generate(ort_perf, ort_session, ort_variant):
            assert ort_session.get_providers()[0] == ort_variant.provider
            ort_perf.check_generation(prompt_length=32, new_tokens=8)
        """
    )
    only = ("-p", "no:benchmark", "--ort-providers=openvino", "--ort-opt-levels=all")
    pytester.runpytest("--ortperf-update", *only).assert_outcomes(passed=1)
    entries = json.loads((pytester.path / "baselines" / "test_gen.py.json").read_text())["entries"]
    (figures,) = entries["test_generate[openvino-all]"]["figures"].values()
    part = figures["parts"]["generation"]
    assert part["cached"] is True
    assert part["cache_bytes_per_token"] == 2 * 2 * 4 * 64 * 4
    pytester.runpytest(*only).assert_outcomes(passed=1)

    onnx.save(decoder_model(2, cache=False, **wide), pytester.path / "model.onnx")
    lost = pytester.runpytest(*only)
    lost.assert_outcomes(failed=1)
    lost.stdout.fnmatch_lines(
        [
            "*generation of test_generate[[]openvino-all[]]: the decode step grew side by side with the recorded*"
        ]
    )
