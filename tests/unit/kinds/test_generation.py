"""The generation kind's pure parts: a signature read as a decoder (the conventions, a mapping, and the
message for what cannot be mapped), and the figures of repeated generations."""

from __future__ import annotations

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.kinds.generation import (
    Generation,
    Tensor,
    cache_device,
    decoder_of,
    is_decoder,
    parse_length,
    row,
)

IDS = Tensor("input_ids", "int64", ("batch", "sequence"))
MASK = Tensor("attention_mask", "int64", ("batch", "total_sequence"))
LOGITS = Tensor("logits", "float32", ("batch", "sequence", 500))


def cache(layers: int, *, past: str = "past_key_values", present: str = "present") -> tuple[list, list]:
    inputs = [
        Tensor(f"{past}.{i}.{part}", "float32", ("batch", 4, "past_sequence", 16))
        for i in range(layers)
        for part in ("key", "value")
    ]
    outputs = [
        Tensor(f"{present}.{i}.{part}", "float32", ("batch", 4, "total_sequence", 16))
        for i in range(layers)
        for part in ("key", "value")
    ]
    return inputs, outputs


def test_a_gpt2_export_reads_as_a_decoder_with_its_cache_paired_layer_by_layer() -> None:
    pasts, presents = cache(2)
    decoder = decoder_of([IDS, MASK, *pasts], [LOGITS, *presents], {}, where="m")
    assert decoder.cached
    assert decoder.layers == 2
    assert [(s.past.name, s.present, s.axis, s.shape) for s in decoder.cache][:2] == [
        ("past_key_values.0.key", "present.0.key", 2, (1, 4, 0, 16)),
        ("past_key_values.0.value", "present.0.value", 2, (1, 4, 0, 16)),
    ]
    assert decoder.vocab == 500
    assert decoder.describe() == "2 cached layer(s), 4 tensors, 1.0 KiB per position"
    feeds = decoder.feeds([1, 2, 3], 5)
    assert feeds["input_ids"].tolist() == [[1, 2, 3]]
    assert feeds["attention_mask"].shape == (1, 8)
    assert feeds["past_key_values.1.value"].shape == (1, 4, 5, 16)
    assert decoder.feeds([1], 0)["past_key_values.0.key"].shape == (1, 4, 0, 16)


def test_position_ids_and_the_merged_decoders_branch_flag_are_fed() -> None:
    pasts, presents = cache(1, past="past", present="present_key_values")
    positions = Tensor("position_ids", "int64", ("batch", "sequence"))
    branch = Tensor("use_cache_branch", "bool", (1,))
    decoder = decoder_of([IDS, MASK, positions, branch, *pasts], [LOGITS, *presents], {}, where="m")
    feeds = decoder.token_feeds([7, 8], 3)
    assert feeds["position_ids"].tolist() == [[3, 4]]
    assert feeds["use_cache_branch"].tolist() == [True]
    assert decoder.token_feeds([7], 0)["use_cache_branch"].tolist() == [False]


def test_the_feeds_take_the_dtypes_the_graph_declares() -> None:
    ids32 = Tensor("input_ids", "int32", ("batch", "sequence"))
    mask32 = Tensor("attention_mask", "int32", ("batch", "total_sequence"))
    feeds = decoder_of([ids32, mask32], [LOGITS], {}, where="m").token_feeds([1, 2], 0)
    assert (feeds["input_ids"].dtype.name, feeds["attention_mask"].dtype.name) == ("int32", "int32")


def test_a_decoder_exported_without_a_cache_is_one_that_recomputes_the_sequence() -> None:
    decoder = decoder_of([IDS, MASK], [LOGITS], {}, where="m")
    assert not decoder.cached
    assert decoder.describe() == "no cache (every step recomputes the whole sequence)"


def test_an_input_nothing_maps_is_named_with_both_ways_to_map_it() -> None:
    tokens = Tensor("tokens", "int64", ("batch", "sequence"))
    with pytest.raises(UsageError) as raised:
        decoder_of([tokens, MASK], [LOGITS], {}, where="check_generation of model.onnx")
    said = str(raised.value)
    assert said.startswith(
        "check_generation of model.onnx: the input 'tokens' (int64['batch', 'sequence']) could not be mapped"
    )
    assert "map it with check_generation(names={'tokens': 'input_ids'}) or a model table's" in said
    assert 'generation = {names = {"tokens" = "input_ids"}}' in said
    mapped = decoder_of([tokens, MASK], [LOGITS], {"tokens": "input_ids"}, where="m")
    assert mapped.input_ids == "tokens"


def test_a_cache_input_without_its_output_and_logits_of_a_classifier_are_refused() -> None:
    pasts, presents = cache(1)
    with pytest.raises(
        UsageError, match=r"the cache input 'past_key_values.0.value' has no output to feed it back"
    ):
        decoder_of([IDS, *pasts], [LOGITS, presents[0]], {}, where="m")
    classifier = Tensor("logits", "float32", ("batch", 2))
    with pytest.raises(UsageError, match=r"not a decoder's logits \[batch, sequence, vocab\]"):
        decoder_of([IDS, MASK], [classifier], {}, where="m")


def test_a_cache_whose_heads_are_not_numbers_says_what_generation_needs() -> None:
    past = Tensor("past_key_values.0.key", "float32", ("batch", "heads", "past_sequence", 16))
    with pytest.raises(UsageError, match=r"generation needs its heads and head size as numbers"):
        decoder_of([IDS, past], [LOGITS, Tensor("present.0.key", "float32", ())], {}, where="m")


def test_encoders_and_classifiers_do_not_read_as_decoders() -> None:
    types = Tensor("token_type_ids", "int64", ("batch", "sequence"))
    assert not is_decoder([IDS, MASK, types], [LOGITS])  # BERT's masked-LM head
    assert not is_decoder([IDS, MASK], [Tensor("logits", "float32", ("batch", 2))])
    assert not is_decoder([Tensor("x", "float32", (1, 3, 224, 224))], [Tensor("y", "float32", (1, 1000))])
    assert is_decoder([IDS, MASK], [LOGITS])


def test_the_figures_of_repeated_generations() -> None:
    measured = Generation(
        prompt_length=32,
        new_tokens=5,
        repeats=3,
        first_token_ms=4.0,
        step_ms=(1.0, 2.0, 3.0, 4.0),
        cache_bytes_prompt=32 * 1024,
        cache_bytes_end=36 * 1024,
        cached=True,
        device="cpu",
    )
    assert measured.token_ms == 2.5
    assert measured.token_p90_ms == pytest.approx(3.7)
    assert measured.tokens_per_s == pytest.approx(400.0)
    assert measured.cache_bytes_per_token == 1024
    assert measured.cache_text() == (
        "cache (cpu): 32.0 KiB after the prompt -> 36.0 KiB after 5 tokens (+1.0 KiB per token)"
    )
    record = {"test": "t", "variant": "cpu-all", "path": "p", "verdict": "ok", "figures": measured.part()}
    assert row(record) == (
        "t",
        "cpu-all",
        "p",
        "4 ms",
        "2.5 ms (p90 3.7 ms)",
        "400",
        "+1.0 KiB/token",
        "-",
        "ok",
    )


def test_lengths_and_devices() -> None:
    assert parse_length("16", "--ortperf-generation-new-tokens") == 16
    with pytest.raises(UsageError, match=r"--ortperf-generation-new-tokens: a whole number of 1 or more"):
        parse_length("0", "--ortperf-generation-new-tokens")
    assert cache_device("CUDAExecutionProvider") == ("cuda", 0)
    assert cache_device("CPUExecutionProvider") == ("cpu", 0)


@pytest.mark.parametrize("cache", [True, False])
def test_a_generation_bound_as_ort_values_and_one_fed_back_as_arrays_make_the_same_tokens(
    cache: bool,
) -> None:
    """The IO-binding path a GPU provider takes, run on the CPU's own binding: the same greedy tokens and
    the same cache as the path the CPU takes (real sessions of a GPT-2-shaped decoder)."""
    import onnxruntime as ort

    from pytest_ortperf.kinds.generation import Generator, signature_of
    from tests.exported_models import decoder_model

    data = decoder_model(2, cache=cache).SerializeToString()
    decoder = decoder_of(*signature_of(data), {}, where="m")
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    made = []
    for bound in (True, False):
        run = Generator(session, decoder, ("cpu", 0), bound=bound).generate([1, 2, 3, 4], 5)
        assert run.first_ms > 0
        assert len(run.steps_ms) == 4
        assert len(run.tokens) == 5
        made.append((run.tokens, run.cache_bytes_prompt, run.cache_bytes_end))
    assert made[0] == made[1]
    per_position = 2 * 2 * 4 * 16 * 4  # layers x keys and values x heads x head size x float32
    assert made[0][1:] == ((4 * per_position, 8 * per_position) if cache else (0, 0))


def test_a_model_file_without_the_conventional_names_is_answered_from_its_bytes(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collection and ortperf init ask every model whether it reads as a decoder: one that does not
    hold ``input_ids`` and ``logits`` is never parsed; a decoder is; a file that is no model is not one."""
    import onnx

    from pytest_ortperf.kinds import generation
    from tests.exported_models import decoder_model, detector_model

    onnx.save(detector_model(1, 4), tmp_path / "cnn.onnx")
    onnx.save(decoder_model(1), tmp_path / "gpt.onnx")
    (tmp_path / "empty.onnx").write_bytes(b"")
    (tmp_path / "junk.onnx").write_bytes(b"input_ids logits, but no model")
    parsed: list[str] = []
    read = generation._read_signature
    monkeypatch.setattr(generation, "_read_signature", lambda model: parsed.append(str(model)) or read(model))
    assert not generation.reads_as_decoder(tmp_path / "cnn.onnx")
    assert parsed == []
    assert generation.reads_as_decoder(tmp_path / "gpt.onnx")
    assert not generation.reads_as_decoder(tmp_path / "empty.onnx")
    assert not generation.reads_as_decoder(tmp_path / "junk.onnx")
    assert len(parsed) == 2  # the decoder and the junk that holds both names
