"""``ort_perf.check_generation()``: a decoder (GPT-2-shaped, built with onnx.helper at test time) as it is
used, the cache fed back run to run. Recorded, passed unchanged; a copy with two more layers fails naming
the prefill and the decode step; a copy exported without the cache fails naming the decode step. Inputs
that follow no convention are named, with the call and the model table that map them; the zero-code
collection offers the kind for decoders."""

from __future__ import annotations

import json

import onnx
import pytest

from tests.exported_models import decoder_model
from tests.plugin.conftest import commit_model

WIDE = {"width": 256, "heads": 4, "vocab": 2000}
TESTS = """
import pytest
pytestmark = [pytest.mark.ort_model("model.onnx"), pytest.mark.ort_thresholds(generation="20%")]

def test_generate(ort_perf):
    ort_perf.check_generation(prompt_length=48, new_tokens=16)
"""


def _record(pytester: pytest.Pytester) -> dict:
    (record,) = [
        r
        for r in json.loads((pytester.path / "report.json").read_text())["checks"]
        if r["kind"] == "generation"
    ]
    return record


@pytest.mark.slow
def test_generation_is_recorded_passes_unchanged_and_fails_more_layers_and_a_lost_cache(
    pytester: pytest.Pytester, isolated_git: None
) -> None:
    commit_model(pytester, decoder_model(2, **WIDE))
    pytester.makepyfile(test_gen=TESTS)
    pytester.runpytest("--ortperf-update").assert_outcomes(passed=1)
    baseline = pytester.path / "baselines" / "test_gen.py.json"
    (figures,) = json.loads(baseline.read_text())["entries"]["test_generate[cpu-all]"]["figures"].values()
    part = figures["parts"]["generation"]
    assert (part["prompt_length"], part["new_tokens"], part["cached"]) == (48, 16, True)
    assert len(part["step_ms"]) == 15  # the first token comes from the prefill
    assert part["first_token_ms"] > 0
    assert 0 < part["token_ms"] <= part["token_p90_ms"]
    assert part["tokens_per_s"] > 0
    # 2 layers x keys and values x 4 heads x 64 x float32 per position; 48 positions after the prompt
    per_position = 2 * 2 * 4 * 64 * 4
    assert part["cache_bytes_prompt"] == 48 * per_position
    assert part["cache_bytes_end"] == (48 + 15) * per_position
    assert part["cache_bytes_per_token"] == per_position

    unchanged = pytester.runpytest("--ortperf-report=report.json", "--ortperf-html=report.html")
    unchanged.assert_outcomes(passed=1)
    record = _record(pytester)
    assert record["verdict"] == "ok"
    assert record["path"] == "measured, not compared"
    assert any(
        note.startswith("recorded on this hardware (shown, not judged): first token ")
        and note.endswith(" tokens/s (prompt 48, 16 tokens)")
        for note in record["notes"]
    )
    assert (
        "cache (cpu): 192.0 KiB after the prompt -> 252.0 KiB after 16 tokens (+4.0 KiB per token)"
        in record["notes"]
    )
    unchanged.stdout.fnmatch_lines(
        ["generation on machine *", "*test_gen.py::test_generate*cpu-all*ms*+4.0 KiB/token*ok"]
    )
    assert 'class="generation-steps"' in (pytester.path / "report.html").read_text()

    # Two more layers: both the prompt and every token cost about twice as much.
    onnx.save(decoder_model(4, **WIDE), pytester.path / "model.onnx")
    deeper = pytester.runpytest("--ortperf-report=report.json")
    deeper.assert_outcomes(failed=1)
    deeper.stdout.fnmatch_lines(
        [
            "*generation of test_generate[[]cpu-all[]]: the prefill and the decode step grew side by side with the "
            "recorded reference",
            "*  prefill: +* (regression)",
            "*  decode step: +* (regression)",
            "*  threshold +20%; today: first token *",
            "*  cache (cpu): 384.0 KiB after the prompt -> 504.0 KiB after 16 tokens (+8.0 KiB per token)",
        ]
    )
    against = _record(pytester)["figures"]["against"]
    assert against["prefill"]["ratio"] > 1.3, against
    assert against["decode step"]["ratio"] > 1.3, against

    # The same two layers exported without the cache: every step recomputes the whole sequence.
    onnx.save(decoder_model(2, cache=False, **WIDE), pytester.path / "model.onnx")
    recomputed = pytester.runpytest("--ortperf-report=report.json")
    recomputed.assert_outcomes(failed=1)
    recomputed.stdout.fnmatch_lines(
        [
            "*generation of test_generate[[]cpu-all[]]: the decode step grew side by side with the recorded "
            "reference",
            "*  decode step: +* (regression)",
            "*  cache: none (every step recomputes the whole sequence)",
        ]
    )
    record = _record(pytester)
    assert record["figures"]["against"]["prefill"]["verdict"] != "regression"
    assert record["figures"]["against"]["decode step"]["ratio"] > 3, record["figures"]["against"]


def test_inputs_that_follow_no_convention_are_named_and_mapped_by_the_call(pytester: pytest.Pytester) -> None:
    renamed = {"input_ids": "tokens", "present.0.key": "kv_out_0_k"}
    onnx.save(decoder_model(1, names=renamed), pytester.path / "model.onnx")
    pytester.makepyfile(
        test_gen="""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

def test_unmapped(ort_perf):
    ort_perf.check_generation(prompt_length=4, new_tokens=2)

def test_mapped(ort_perf):
    ort_perf.check_generation(prompt_length=4, new_tokens=3, names={"tokens": "input_ids", "kv_out_0_k": "present.0.key"})

def test_bad_length(ort_perf):
    ort_perf.check_generation(new_tokens=1)
"""
    )
    result = pytester.runpytest("--ortperf-update", "--ortperf-report=report.json")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*check_generation of model.onnx: the input 'tokens' (int64[[]'batch', 'sequence'[]]) could not be "
            "mapped to a decoder's (input_ids, *); map it with check_generation(names={'tokens': 'input_ids'}) "
            'or a model table\'s generation = {names = {"tokens" = "input_ids"}}; measured nothing',
            "*check_generation(new_tokens=1): a whole number, 2 or more.",
        ]
    )
    (mapped,) = [
        r
        for r in json.loads((pytester.path / "report.json").read_text())["checks"]
        if "mapped" in r["test"] and "un" not in r["test"]
    ]
    assert mapped["verdict"] == "new"
    assert mapped["figures"]["cache_bytes_per_token"] == 2 * 4 * 16 * 4


def test_the_model_collection_offers_generation_for_decoders_and_a_table_maps_their_names(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "models").mkdir()
    onnx.save(decoder_model(1, names={"input_ids": "tokens"}), pytester.path / "models" / "gpt.onnx")
    onnx.save(decoder_model(1), pytester.path / "models" / "plain.onnx")
    pytester.makeini("[pytest]\nortperf_models = models/*.onnx\n")
    (pytester.path / "ortperf.toml").write_text(
        '[models."models/gpt.onnx"]\n'
        'checks = ["generation"]\n'
        'generation = {prompt_length = 4, new_tokens = 3, names = {tokens = "input_ids"}}\n'
        '[models."models/plain.onnx"]\n'
        "generation = {prompt_length = 4, new_tokens = 2}\n"
    )
    listed = pytester.runpytest("--co", "-q")
    listed.stdout.fnmatch_lines_random(
        [
            "models/gpt.onnx::generation[[]cpu-all[]]",
            "models/plain.onnx::latency[[]cpu-all[]]",
            "models/plain.onnx::generation[[]cpu-all[]]",
        ]
    )
    assert "models/gpt.onnx::latency" not in listed.stdout.str()
    result = pytester.runpytest("-k", "generation", "--ortperf-update", "--ortperf-report=report.json")
    result.assert_outcomes(passed=2)
    records = {r["test"]: r for r in json.loads((pytester.path / "report.json").read_text())["checks"]}
    assert records["models/gpt.onnx::generation[cpu-all]"]["figures"]["new_tokens"] == 3
    assert records["models/plain.onnx::generation[cpu-all]"]["figures"]["new_tokens"] == 2


def test_a_table_naming_a_kind_the_run_does_not_have_fails_its_model_naming_the_table(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(decoder_model(1), pytester.path / "gpt.onnx")
    pytester.makeini("[pytest]\nortperf_models = *.onnx\n")
    (pytester.path / "ortperf.toml").write_text('[models."gpt.onnx"]\nchecks = ["generation", "speed"]\n')
    result = pytester.runpytest()
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*ortperf.toml [[]models.\"gpt.onnx\"[]] checks: unknown check kind(s) 'speed'; the run's kinds are latency, *"
        ]
    )


@pytest.mark.parametrize(
    ("args", "ini", "said"),
    [
        (
            ["--ortperf-generation-new-tokens=1"],
            "",
            "--ortperf-generation-new-tokens: 2 or more, a prefill and at least one decode step (got '1').",
        ),
        (
            [],
            "ortperf_generation_prompt_length = many\n",
            "ortperf_generation_prompt_length: a whole number of 1 or more (got 'many').",
        ),
    ],
)
def test_bad_generation_options_are_usage_errors_naming_the_option(
    pytester: pytest.Pytester, args: list[str], ini: str, said: str
) -> None:
    pytester.makeini(f"[pytest]\n{ini}")
    pytester.makepyfile(test_gen="def test_nothing():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{said}*"])


def test_a_table_keyword_the_call_does_not_take_fails_naming_the_table_and_a_chosen_check_list_is_kept(
    pytester: pytest.Pytester,
) -> None:
    onnx.save(decoder_model(1), pytester.path / "gpt.onnx")
    pytester.makeini("[pytest]\nortperf_models = *.onnx\n")
    (pytester.path / "ortperf.toml").write_text('[models."gpt.onnx"]\ngeneration = {promt_length = 4}\n')
    result = pytester.runpytest("-k", "generation")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            '*ortperf.toml [[]models."gpt.onnx"[]] generation: unknown keyword(s) promt_length; it takes '
            "prompt_length, new_tokens, names."
        ]
    )
    # A run that names its checks collects those: the decoder is not given a generation item then.
    listed = pytester.runpytest("--co", "-q", "--ortperf-checks=latency")
    assert "gpt.onnx::latency[cpu-all]" in listed.stdout.str()
    assert "generation" not in listed.stdout.str()
