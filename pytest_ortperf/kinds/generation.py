"""The generation kind: ``ort_perf.check_generation(prompt_length=None, new_tokens=None)``, a decoder
judged as it is used (the figures ONNX Runtime's transformers benchmarks and onnxruntime-genai report:
prompt time, time per generated token, tokens per second).

- **The decoder's inputs and outputs, by the common conventions** (optimum's and torch.onnx exports,
  ONNX Runtime GenAI's model builder): ``input_ids``, optional ``attention_mask``, ``position_ids``
  and ``use_cache_branch``, the cache ``past_key_values.N.key/value`` (or ``past.N.key/value``) fed
  back from ``present.N.key/value`` (or ``present_key_values.N...``), and ``logits``. A name that
  follows none of them is mapped by the call (``check_generation(names={"tokens": "input_ids"})``) or
  a model table (``generation = {names = {tokens = "input_ids"}}``); an input nothing maps fails the
  check, naming it and both ways. A decoder exported without a cache recomputes the whole sequence
  every step, as it would be used.
- **Measured in this process, timed** (the timing lock held): a warm-up generation, then repeated
  generations of ``new_tokens`` greedy tokens after a ``prompt_length`` prompt, the cache fed back
  step to step: bound as ONNX Runtime values on the device where the provider keeps its outputs
  there (IO binding: CUDA, TensorRT, ...), fed back as the outputs come on the CPU.
  Time to first token (the prefill and its token), the per-token latency (median and p90 over the
  steps, each step the median of its repeats), tokens per second, and the cache's bytes after the
  prompt and per generated token.
- **Side by side with the recorded reference, by the rule of every latency verdict**: where the recipe
  changed since it was recorded, the reference is rebuilt from its recipe and two figures are judged
  apart, each across measuring processes (``kinds/side_by_side.py``): the prefill at the prompt
  length, and one decode step at the middle of the generation (the cache of ``prompt_length +
  new_tokens / 2`` positions). Each side runs its own graph's feeds (its own layers, heads and cache
  layout, or the whole sequence where it keeps no cache). The message names which grew. The threshold:
  ``ort_thresholds(generation="10%")``, else the one latency threshold.

This module is the whole kind, and imports only what its declaration needs: numpy, onnx and
onnxruntime are imported where they are used.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.errors import UsageError
from pytest_ortperf.gate.registry import CheckKind, KindOption, Record
from pytest_ortperf.kinds.part_check import PartCheck
from pytest_ortperf.reports.tables import TerminalTable
from pytest_ortperf.values import parse_threshold

if TYPE_CHECKING:
    from pytest_ortperf.checks.kind_result import KindResult
    from pytest_ortperf.checks.latency_verdicts import LatencyResult
    from pytest_ortperf.gate.protocol import CheckContext, CheckTarget
    from pytest_ortperf.latency.activity import Activity
    from pytest_ortperf.ort.models import ModelSource
    from pytest_ortperf.store.keys import CheckKey

GENERATION = "generation"
BUDGET_S = 1.0  # timed seconds of repeated generations, a target
MIN_REPEATS, MAX_REPEATS = 3, 50
MOST_S = 20.0  # timed seconds at most, whatever the repeats
SEED = 0
PREFILL, DECODE = "prefill", "decode step"

INPUT_IDS, ATTENTION_MASK, POSITION_IDS, USE_CACHE_BRANCH, LOGITS = (
    "input_ids",
    "attention_mask",
    "position_ids",
    "use_cache_branch",
    "logits",
)
_PAST = re.compile(r"^(?:past_key_values|past)\.(\d+)\.(key|value)$")
_PRESENT = re.compile(r"^(?:present_key_values|present)\.(\d+)\.(key|value)$")
ROLES_TEXT = (
    "input_ids, attention_mask, position_ids, use_cache_branch, past_key_values.N.key/value "
    "(inputs); logits, present.N.key/value (outputs)"
)


def parse_length(text: str, where: str) -> int:
    """ "32" -> 32; a UsageError naming ``where`` unless a whole number of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{where}: a whole number of 1 or more (got {text!r}).")
    return value


def parse_new_tokens(text: str, where: str) -> int:
    """ "16" -> 16; a UsageError naming ``where`` unless 2 or more (a prefill and a decode step)."""
    value = parse_length(text, where)
    if value < 2:
        raise UsageError(f"{where}: 2 or more, a prefill and at least one decode step (got {text!r}).")
    return value


def parse_limit(value: object, where: str) -> float:
    """``ort_thresholds(generation=...)``: a relative threshold ("10%", 0.1), naming ``where``."""
    return parse_threshold(value, source=where)


# -- the decoder's signature ------------------------------------------------------------------------


@dataclass(frozen=True)
class Tensor:
    """One declared input or output: its name, numpy dtype name and shape (ints, dim names or None)."""

    name: str
    dtype: str
    shape: tuple[int | str | None, ...]


Signature = tuple[tuple[Tensor, ...], tuple[Tensor, ...]]
_SIGNATURES: dict[object, Signature] = {}  # read once a process: by content, or by file and its stat


def signature(model: ModelSource) -> Signature:
    """``model``'s declared inputs (initializers excepted) and outputs, read from its graph without a
    session (a reference may run elsewhere) and without its external data; once per content."""
    if model.sha256 not in _SIGNATURES:
        _SIGNATURES[model.sha256] = signature_of(model.path if model.path is not None else model.data or b"")
    return _SIGNATURES[model.sha256]


def signature_of(model: Path | bytes) -> Signature:
    """:func:`signature` of a model file (a model-zoo folder's ``model.onnx``) or its bytes; a file is
    read once a process while its size and time are the same (the collection and every variant's
    check ask)."""
    if isinstance(model, bytes):
        return _read_signature(model)
    stat = model.stat()
    key = (str(model.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _SIGNATURES:
        _SIGNATURES[key] = _read_signature(model)
    return _SIGNATURES[key]


def _read_signature(model: Path | bytes) -> Signature:
    import onnx

    if isinstance(model, bytes):
        graph = onnx.load_model_from_string(model).graph
    else:
        graph = onnx.load(str(model), load_external_data=False).graph
    initialized = {tensor.name for tensor in graph.initializer}

    def tensors(values: Any) -> tuple[Tensor, ...]:
        found = []
        for value in values:
            if value.name in initialized or not value.type.HasField("tensor_type"):
                continue
            tensor = value.type.tensor_type
            dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).name if tensor.elem_type else ""
            dims = tuple(
                d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim
            )
            found.append(Tensor(value.name, dtype, dims))
        return tuple(found)

    return tensors(graph.input), tensors(graph.output)


@dataclass(frozen=True)
class CacheSlot:
    """One cached tensor: layer ``layer``'s keys or values, fed as ``past`` and read back as ``present``;
    ``axis``: its sequence axis; ``shape``: its shape but that axis (and batch 1)."""

    layer: int
    part: str
    past: Tensor
    present: str
    axis: int
    shape: tuple[int, ...]

    def empty(self, length: int) -> tuple[int, ...]:
        return (*self.shape[: self.axis], length, *self.shape[self.axis + 1 :])

    def bytes_per_position(self) -> int:
        import numpy as np

        others = [size for i, size in enumerate(self.shape) if i != self.axis]
        return math.prod(others) * np.dtype(self.past.dtype).itemsize


@dataclass(frozen=True)
class Decoder:
    """A decoder's inputs and outputs as generation feeds them."""

    input_ids: str
    logits: str
    attention_mask: str = ""
    position_ids: str = ""
    use_cache_branch: str = ""
    cache: tuple[CacheSlot, ...] = ()
    vocab: int = 0  # the logits' last dim where declared, else 0
    ids_dtype: str = "int64"
    mask_dtype: str = "int64"
    positions_dtype: str = "int64"

    @property
    def cached(self) -> bool:
        return bool(self.cache)

    @property
    def layers(self) -> int:
        return len({slot.layer for slot in self.cache})

    def describe(self) -> str:
        if not self.cached:
            return "no cache (every step recomputes the whole sequence)"
        per = sum(slot.bytes_per_position() for slot in self.cache)
        return f"{self.layers} cached layer(s), {len(self.cache)} tensors, {_bytes(per)} per position"

    def outputs(self) -> list[str]:
        return [self.logits, *(slot.present for slot in self.cache)]

    def token_feeds(self, ids: Sequence[int], past: int) -> dict[str, Any]:
        """The feeds of one run but its cache: ``ids`` new tokens after ``past`` positions (a decoder
        without a cache is fed the whole sequence: ``ids`` is then all of it, ``past`` 0)."""
        import numpy as np

        total = past + len(ids)
        feeds: dict[str, Any] = {self.input_ids: np.asarray([list(ids)], dtype=self.ids_dtype)}
        if self.attention_mask:
            feeds[self.attention_mask] = np.ones((1, total), dtype=self.mask_dtype)
        if self.position_ids:
            feeds[self.position_ids] = np.arange(past, total, dtype=self.positions_dtype)[None, :]
        if self.use_cache_branch:
            feeds[self.use_cache_branch] = np.array([past > 0])
        return feeds

    def feeds(self, ids: Sequence[int], past: int) -> dict[str, Any]:
        """:meth:`token_feeds` and a cache of ``past`` positions: empty for the prompt, else random
        values of this graph's own layout (what a decode step at that length runs on)."""
        import numpy as np

        feeds = self.token_feeds(ids, past)
        rng = np.random.default_rng(SEED)
        for slot in self.cache:
            feeds[slot.past.name] = (
                rng.standard_normal(slot.empty(past)).astype(slot.past.dtype)
                if past
                else np.zeros(slot.empty(0), dtype=slot.past.dtype)
            )
        return feeds


def decoder_of(
    inputs: Sequence[Tensor], outputs: Sequence[Tensor], names: Mapping[str, str], *, where: str
) -> Decoder:
    """``inputs`` and ``outputs`` as a :class:`Decoder`, each name read as itself or as ``names`` maps
    it; a UsageError naming ``where`` and the first input or output nothing maps, with both ways to
    map it."""
    roles: dict[str, Tensor] = {}
    pasts: dict[tuple[int, str], Tensor] = {}
    for tensor in inputs:
        role = names.get(tensor.name, tensor.name)
        past = _PAST.match(role)
        if past:
            pasts[(int(past.group(1)), past.group(2))] = tensor
        elif role in (INPUT_IDS, ATTENTION_MASK, POSITION_IDS, USE_CACHE_BRANCH):
            roles[role] = tensor
        else:
            raise UsageError(_unmapped(where, "input", tensor))
    presents: dict[tuple[int, str], str] = {}
    logits = None
    for tensor in outputs:
        role = names.get(tensor.name, tensor.name)
        present = _PRESENT.match(role)
        if present:
            presents[(int(present.group(1)), present.group(2))] = tensor.name
        elif role == LOGITS:
            logits = tensor
    if INPUT_IDS not in roles:
        raise UsageError(
            f"{where}: no input is the decoder's input_ids (inputs: {', '.join(t.name for t in inputs)}); "
            f"{_ways(inputs[0].name if inputs else 'tokens', INPUT_IDS)}"
        )
    if logits is None:
        raise UsageError(
            f"{where}: no output is the decoder's logits (outputs: {', '.join(t.name for t in outputs)}); "
            f"{_ways(outputs[0].name if outputs else 'scores', LOGITS)}"
        )
    if len(logits.shape) != 3:
        raise UsageError(
            f"{where}: the output {logits.name!r} has the shape {list(logits.shape)}, not a decoder's logits "
            "[batch, sequence, vocab]; measured nothing"
        )
    cache = []
    for (layer, part), fed in sorted(pasts.items()):
        back = presents.get((layer, part))
        if back is None:
            raise UsageError(
                f"{where}: the cache input {fed.name!r} has no output to feed it back from (present."
                f"{layer}.{part}); {_ways('<output>', f'present.{layer}.{part}')}"
            )
        cache.append(_slot(layer, part, fed, back, where))
    vocab = logits.shape[-1] if logits.shape and isinstance(logits.shape[-1], int) else 0

    def dtype(role: str) -> str:
        return (roles[role].dtype or "int64") if role in roles else "int64"

    return Decoder(
        input_ids=roles[INPUT_IDS].name,
        logits=logits.name,
        attention_mask=roles[ATTENTION_MASK].name if ATTENTION_MASK in roles else "",
        position_ids=roles[POSITION_IDS].name if POSITION_IDS in roles else "",
        use_cache_branch=roles[USE_CACHE_BRANCH].name if USE_CACHE_BRANCH in roles else "",
        cache=tuple(cache),
        vocab=vocab,
        ids_dtype=dtype(INPUT_IDS),
        mask_dtype=dtype(ATTENTION_MASK),
        positions_dtype=dtype(POSITION_IDS),
    )


def _slot(layer: int, part: str, past: Tensor, present: str, where: str) -> CacheSlot:
    """The cache slot of ``past``: its sequence axis is the dim named for a past length (``past``,
    ``seq``, ``len``), else the third of four ([batch, heads, sequence, head]); every other dim but
    the first (batch, run at 1) must be a number."""
    dims = past.shape
    named = [i for i, d in enumerate(dims) if i and isinstance(d, str) and re.search("past|seq|len", d)]
    axis = named[0] if named else (2 if len(dims) == 4 else -1)
    unknown = [i for i, d in enumerate(dims) if i not in (0, axis) and not isinstance(d, int)]
    if axis < 0 or unknown:
        raise UsageError(
            f"{where}: the cache input {past.name!r} has the shape {list(dims)}: generation needs its heads "
            "and head size as numbers, and one sequence dim (the third of [batch, heads, sequence, head], "
            "or a dim named for the past length); export it with fixed heads, or map another input"
        )
    shape = tuple(1 if i == 0 else int(d) if i != axis else 0 for i, d in enumerate(dims))  # type: ignore[arg-type]
    return CacheSlot(layer, part, past, present, axis, shape)


def _unmapped(where: str, what: str, tensor: Tensor) -> str:
    return (
        f"{where}: the {what} {tensor.name!r} ({tensor.dtype}{list(tensor.shape)}) could not be mapped to a "
        f"decoder's ({ROLES_TEXT}); {_ways(tensor.name, 'input_ids')}; measured nothing"
    )


def _ways(name: str, role: str) -> str:
    return (
        f"map it with check_generation(names={{{name!r}: {role!r}}}) or a model table's "
        f'generation = {{names = {{"{name}" = "{role}"}}}}'
    )


# -- measuring in this process --------------------------------------------------------------------


@dataclass(frozen=True)
class Generation:
    """What the repeated generations measured: the prefill's (time to first token) and each step's
    median time over the repeats (ms), and the cache's bytes after the prompt and at the end."""

    prompt_length: int
    new_tokens: int
    repeats: int
    first_token_ms: float
    step_ms: tuple[float, ...]
    cache_bytes_prompt: int
    cache_bytes_end: int
    cached: bool
    device: str

    @property
    def token_ms(self) -> float:
        return statistics.median(self.step_ms) if self.step_ms else 0.0

    @property
    def token_p90_ms(self) -> float:
        return _quantile(self.step_ms, 0.9) if self.step_ms else 0.0

    @property
    def tokens_per_s(self) -> float:
        mean = statistics.fmean(self.step_ms) if self.step_ms else 0.0
        return 1000.0 / mean if mean > 0 else 0.0

    @property
    def cache_bytes_per_token(self) -> float:
        steps = max(self.new_tokens - 1, 1)
        return (self.cache_bytes_end - self.cache_bytes_prompt) / steps if self.cached else 0.0

    def text(self) -> str:
        return (
            f"first token {self.first_token_ms:.4g} ms (prompt {self.prompt_length}), per token "
            f"{self.token_ms:.4g} ms (p90 {self.token_p90_ms:.4g}), {self.tokens_per_s:,.4g} tokens/s "
            f"over {self.new_tokens} tokens"
        )

    def cache_text(self) -> str:
        if not self.cached:
            return "cache: none (every step recomputes the whole sequence)"
        return (
            f"cache ({self.device}): {_bytes(self.cache_bytes_prompt)} after the prompt -> "
            f"{_bytes(self.cache_bytes_end)} after {self.new_tokens} tokens "
            f"(+{_bytes(self.cache_bytes_per_token)} per token)"
        )

    def part(self) -> dict[str, Any]:
        return {
            "prompt_length": self.prompt_length,
            "new_tokens": self.new_tokens,
            "repeats": self.repeats,
            "first_token_ms": round(self.first_token_ms, 6),
            "token_ms": round(self.token_ms, 6),
            "token_p90_ms": round(self.token_p90_ms, 6),
            "tokens_per_s": round(self.tokens_per_s, 3),
            "step_ms": [round(ms, 6) for ms in self.step_ms],
            "cached": self.cached,
            "cache_bytes_prompt": self.cache_bytes_prompt,
            "cache_bytes_end": self.cache_bytes_end,
            "cache_bytes_per_token": round(self.cache_bytes_per_token, 1),
        }


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def _bytes(count: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count:.0f} B"


def cache_device(provider: str) -> tuple[str, int]:
    """Where ``provider`` keeps a run's outputs (IO binding's device): CUDA and TensorRT on the GPU."""
    if provider in ("CUDAExecutionProvider", "TensorrtExecutionProvider", "NvTensorRTRTXExecutionProvider"):
        return "cuda", 0
    if provider == "ROCMExecutionProvider":
        return "cuda", 0
    if provider == "DmlExecutionProvider":
        return "dml", 0
    return "cpu", 0


@dataclass(frozen=True)
class GeneratedRun:
    """One generation: the first token's time (ms), each later step's (ms), the cache's bytes after
    the prompt and at the end, and the tokens generated."""

    first_ms: float
    steps_ms: tuple[float, ...]
    cache_bytes_prompt: int
    cache_bytes_end: int
    tokens: tuple[int, ...]


class Generator:
    """Greedy generation on one session: the prompt, then ``new_tokens - 1`` decode steps, the cache
    fed back step to step. Where the provider keeps outputs on a device (CUDA, TensorRT, ...) the cache
    stays there, bound as ONNX Runtime values (two IO bindings in turn, rebound each step); on the CPU the
    outputs are fed back as they come, as ONNX Runtime's transformers benchmarks do there (an IO
    binding cost 3-9% more per token there: benchmarks/README.md)."""

    def __init__(
        self, session: Any, decoder: Decoder, device: tuple[str, int], *, bound: bool | None = None
    ) -> None:
        """``bound``: whether the cache is bound as ORT values (default: where ``device`` is not the CPU)."""
        import numpy as np

        self._session, self._decoder, self._device = session, decoder, device
        binds = device[0] != "cpu" if bound is None else bound
        # Two bindings in turn: a run's outputs are owned by the binding that made them (in onnxruntime
        # 1.23 clearing it frees them, and a run on them crashes), so the cache a step feeds is read
        # from the other binding, cleared only the step after.
        self._bindings = (session.io_binding(), session.io_binding()) if binds else None
        self._turn = 0
        self._empty = {
            slot.past.name: np.zeros(slot.empty(0), dtype=slot.past.dtype) for slot in decoder.cache
        }
        self._outputs = decoder.outputs()

    def generate(self, prompt: Sequence[int], new_tokens: int) -> GeneratedRun:
        """One generation of ``new_tokens`` after ``prompt``, timed step by step."""
        clock = time.perf_counter_ns
        began = clock()
        token, cache = self._run(list(prompt), 0, self._empty)
        first = (clock() - began) / 1e6
        after_prompt = _cache_bytes(cache)
        steps, sequence = [], [*prompt, token]
        for _ in range(new_tokens - 1):
            began = clock()
            if self._decoder.cached:
                token, cache = self._run([token], len(sequence) - 1, cache)
            else:
                token, cache = self._run(sequence, 0, cache)
            steps.append((clock() - began) / 1e6)
            sequence.append(token)
        return GeneratedRun(
            first, tuple(steps), after_prompt, _cache_bytes(cache), tuple(sequence[len(prompt) :])
        )

    def _run(self, ids: list[int], past: int, cache: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """One run: ``ids`` after ``past`` positions over ``cache`` (numpy arrays, or ORT values on the
        device); the next token (the argmax of the last position's logits) and the new cache."""
        import numpy as np

        decoder, bindings = self._decoder, self._bindings
        feeds = decoder.token_feeds(ids, past)
        if bindings is None:
            values = self._session.run(self._outputs, {**feeds, **cache})
            logits = values[0]
        else:
            binding = bindings[self._turn]
            self._turn = 1 - self._turn
            binding.clear_binding_inputs()
            binding.clear_binding_outputs()
            for name, value in feeds.items():
                binding.bind_cpu_input(name, value)
            for name, value in cache.items():
                if isinstance(value, np.ndarray):
                    binding.bind_cpu_input(name, value)
                else:
                    binding.bind_ortvalue_input(name, value)
            kind, device_id = self._device
            for name in self._outputs:
                binding.bind_output(name, kind, device_id)
            self._session.run_with_iobinding(binding)
            values = binding.get_outputs()
            logits = values[0].numpy()
        token = int(np.argmax(logits[0, -1]))
        return token, {slot.past.name: values[1 + i] for i, slot in enumerate(decoder.cache)}


def _cache_bytes(cache: Mapping[str, Any]) -> int:
    """The bytes of a cache's tensors: numpy arrays, or ONNX Runtime values on a device."""
    import numpy as np

    total = 0
    for value in cache.values():
        if isinstance(value, np.ndarray):
            total += value.nbytes
            continue
        dtype = _ORT_TYPES.get(value.data_type(), "float32")
        total += math.prod(value.shape()) * np.dtype(dtype).itemsize
    return total


_ORT_TYPES = {"tensor(float)": "float32", "tensor(float16)": "float16", "tensor(bfloat16)": "uint16"}


def measure_generation(
    generator: Generator, prompt: Sequence[int], new_tokens: int, *, cached: bool, device: str
) -> Generation:
    """A warm-up generation, then repeats for :data:`BUDGET_S` (at least :data:`MIN_REPEATS`, at most
    :data:`MAX_REPEATS` or :data:`MOST_S`): each step's median over the repeats."""
    generator.generate(prompt, new_tokens)  # allocation, kernel choice: not timed
    runs: list[GeneratedRun] = []
    started = time.perf_counter()
    while True:
        runs.append(generator.generate(prompt, new_tokens))
        spent = time.perf_counter() - started
        if len(runs) >= MAX_REPEATS or spent > MOST_S or (len(runs) >= MIN_REPEATS and spent > BUDGET_S):
            break
    step_ms = tuple(statistics.median(run.steps_ms[i] for run in runs) for i in range(new_tokens - 1))
    return Generation(
        prompt_length=len(prompt),
        new_tokens=new_tokens,
        repeats=len(runs),
        first_token_ms=statistics.median(run.first_ms for run in runs),
        step_ms=step_ms,
        cache_bytes_prompt=runs[-1].cache_bytes_prompt,
        cache_bytes_end=runs[-1].cache_bytes_end,
        cached=cached,
        device=device,
    )


def prompt_ids(length: int, vocab: int) -> list[int]:
    """A fixed prompt of ``length`` token ids below ``vocab`` (below 100 where it is not declared)."""
    import numpy as np

    high = vocab if vocab > 0 else 100
    return [int(i) for i in np.random.default_rng(SEED).integers(0, high, size=length)]


# -- the check ------------------------------------------------------------------------------------


class GenerationCheck(PartCheck):
    """``check_generation()``: the prompt, then the generated tokens, with the cache fed back."""

    kind = GENERATION
    caught = (Exception,)  # ORT's Fail, InvalidArgument...: a run the feeds do not fit, said as a check error

    def __init__(
        self,
        context: CheckContext,
        *,
        prompt_length: int | None = None,
        new_tokens: int | None = None,
        names: Mapping[str, str] | None = None,
    ) -> None:
        self._context = context
        self._prompt, self._new = prompt_length, new_tokens
        self._names = dict(names or {})

    def configured(
        self, *, prompt_length: object = None, new_tokens: object = None, names: object = None
    ) -> GenerationCheck:
        """This check with the call's ``prompt_length`` and ``new_tokens`` (whole numbers, 1 or more;
        ``new_tokens`` 2 or more, one prefill and a decode step) and ``names`` (model name -> the
        conventional one); a UsageError naming the argument otherwise."""
        prompt, new = self._prompt, self._new
        for argument, value, least in (("prompt_length", prompt_length, 1), ("new_tokens", new_tokens, 2)):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise UsageError(f"check_generation({argument}={value!r}): a whole number, {least} or more.")
            prompt, new = (value, new) if argument == "prompt_length" else (prompt, value)
        mapped = dict(self._names)
        if names is not None:
            if not isinstance(names, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in names.items()
            ):
                raise UsageError(
                    f"check_generation(names={names!r}): a mapping of the model's input and output names "
                    'to the conventional ones, such as {"tokens": "input_ids"}.'
                )
            mapped |= dict(names)
        return GenerationCheck(self._context, prompt_length=prompt, new_tokens=new, names=mapped)

    def _lengths(self) -> tuple[int, int]:
        settings = self._context.settings
        prompt = self._prompt or int(KIND.setting(settings, "prompt_length"))
        return prompt, self._new or int(KIND.setting(settings, "new_tokens"))

    def measure(self, target: CheckTarget, activity: Activity) -> KindResult:
        context, key = self._context, target.key
        built = context.built
        decoder = decoder_of(
            *signature(built.model), self._names, where=f"check_generation of {built.model.label}"
        )
        prompt_length, new_tokens = self._lengths()
        prompt = prompt_ids(prompt_length, decoder.vocab)
        device = cache_device(built.variant.provider)
        generator = Generator(built.session, decoder, device)
        with context.measurer.held(activity):
            measured = measure_generation(
                generator, prompt, new_tokens, cached=decoder.cached, device=device[0]
            )
        notes = [measured.text(), measured.cache_text(), f"decoder: {decoder.describe()}"]
        if target.policy.update:
            return self._record(target, measured, notes)
        against, why = self._against_recorded(target, decoder, prompt, new_tokens, activity)
        return judged(
            key,
            measured,
            notes,
            limit=self._limit(target),
            against=against,
            not_compared=why,
            stored=self.stored(target),
        )

    def _limit(self, target: CheckTarget) -> float:
        given = target.policy.kind_thresholds.get(GENERATION)
        return given if isinstance(given, float) else target.policy.threshold

    def _against_recorded(
        self, target: CheckTarget, decoder: Decoder, prompt: list[int], new_tokens: int, activity: Activity
    ) -> tuple[dict[str, LatencyResult], str]:
        """The prefill and a decode step at mid-generation against the recorded reference rebuilt from
        its recipe, each side fed by its own graph, side by side across measuring processes; or why
        nothing is compared."""
        from pytest_ortperf.kinds.side_by_side import ProcessSides, rebuilt_here
        from pytest_ortperf.ort.workers import SideSpec, this_python

        context = self._context
        rebuilt, why = rebuilt_here(context, target, inputs_matter=False)
        if rebuilt is None:
            return {}, why
        theirs = decoder_of(
            *signature(rebuilt.model), self._names, where=f"check_generation of {rebuilt.label}"
        )
        # Token ids both vocabularies hold; the decode step's cache: its positions at mid-generation.
        vocab = min((v for v in (decoder.vocab, theirs.vocab) if v), default=0)
        prompt = prompt_ids(len(prompt), vocab)
        step = prompt_ids(len(prompt) + new_tokens // 2 + 1, vocab)
        phases = {
            PREFILL: (decoder.feeds(prompt, 0), theirs.feeds(prompt, 0)),
            DECODE: (_step_feeds(decoder, step), _step_feeds(theirs, step)),
        }
        built = context.built
        policy = replace(target.policy, threshold=self._limit(target))
        results = {}
        for phase, (mine, other) in phases.items():
            here = SideSpec(this_python(), built.model, built.settings, feeds=mine)
            there = SideSpec(this_python(), rebuilt.model, rebuilt.settings, feeds=other)
            with ProcessSides(context, here, there, mine, activity) as sides:
                results[phase] = sides.judge(
                    key=target.key, label=f"{rebuilt.label} ({phase})", policy=policy
                )
        return results, ""

    def _record(self, target: CheckTarget, measured: Generation, notes: Sequence[str]) -> KindResult:
        from pytest_ortperf.kinds.side_by_side import part_recorded

        return part_recorded(
            target, GENERATION, measured.part(), summary=measured.text(), notes=notes, change="recorded"
        )


def _step_feeds(decoder: Decoder, sequence: Sequence[int]) -> dict[str, Any]:
    """One decode step after ``sequence[:-1]``: its last token over a cache of the rest, or, without a
    cache, the whole sequence."""
    if decoder.cached:
        return decoder.feeds(sequence[-1:], len(sequence) - 1)
    return decoder.feeds(sequence, 0)


def judged(
    key: CheckKey,
    measured: Generation,
    notes: Sequence[str],
    *,
    limit: float,
    against: Mapping[str, LatencyResult],
    not_compared: str = "",
    stored: Mapping[str, Any] | None = None,
) -> KindResult:
    """The verdict: a regression where the prefill or the decode step grew beyond ``limit`` side by
    side with the recorded reference (naming which); inconclusive where one could not be decided and
    none grew; improved where both improved; else ok."""
    from pytest_ortperf.checks.kind_result import KindResult
    from pytest_ortperf.checks.status import Status
    from pytest_ortperf.kinds.side_by_side import estimate_figures, of_the_parts, part_note

    notes = list(notes)
    changes = {phase: _change(result) for phase, result in against.items()}
    statuses = {phase: result.status for phase, result in against.items()}
    grew = [phase for phase, status in statuses.items() if status is Status.REGRESSION]
    if against:
        status = of_the_parts(against)
        path = "side by side with the recorded reference: prefill and a decode step"
        notes += [part_note(phase, changes[phase], result) for phase, result in against.items()]
    else:
        status, path = Status.OK, "measured, not compared"
        notes.append(f"not compared with a recorded reference: {not_compared}")
    if stored:
        notes.append(
            "recorded on this hardware (shown, not judged): first token "
            f"{stored.get('first_token_ms')} ms, per token {stored.get('token_ms')} ms, "
            f"{stored.get('tokens_per_s')} tokens/s (prompt {stored.get('prompt_length')}, "
            f"{stored.get('new_tokens')} tokens)"
        )
    failed = status is Status.REGRESSION
    message = ""
    if failed:
        which = " and the ".join(grew)
        message = "\n".join(
            [
                f"generation of {key.shown}: the {which} grew side by side with the recorded reference",
                *(f"  {phase}: {changes[phase]} ({statuses[phase]})" for phase in against),
                f"  threshold +{limit:.0%}; today: {measured.text()}",
                f"  {measured.cache_text()}",
                f"  to accept the new figures: {key.record_command}",
            ]
        )
    return KindResult(
        key,
        GENERATION,
        status,
        path=path,
        summary=measured.text(),
        change="; ".join(f"{phase}: {text}" for phase, text in changes.items()),
        figures={
            **measured.part(),
            "against": {phase: estimate_figures(result) for phase, result in against.items()},
            **({"recorded": dict(stored)} if stored else {}),
        },
        notes=tuple(notes),
        failed=failed,
        message=message,
    )


def _change(result: LatencyResult) -> str:
    comparison = result.decisive
    if comparison is None:
        return result.change
    estimate = comparison.estimate
    return f"{estimate.ratio - 1:+.1%} (CI {estimate.low - 1:+.1%} .. {estimate.high - 1:+.1%})"


def _error(key: CheckKey, why: str) -> KindResult:
    from pytest_ortperf.checks.kind_result import kind_error

    return kind_error(key, GENERATION, why)


def not_timed(key: CheckKey) -> KindResult:
    from pytest_ortperf.checks.kind_result import kind_not_timed

    return kind_not_timed(key, GENERATION)


# -- reports -------------------------------------------------------------------------------------------


def _figures(record: Record) -> Mapping[str, Any]:
    return CheckRecord.of(record).figures or {}


def row(record: Record) -> tuple[str, ...] | None:
    """The generation table's row: time to first token, per token (p90), tokens/s, the cache's growth."""
    typed = CheckRecord.of(record)
    if typed.verdict == "error":
        return None
    figures = _figures(record)

    def ms(name: str) -> str:
        value = figures.get(name)
        return f"{value:.4g} ms" if isinstance(value, (int, float)) else "-"

    per_token = figures.get("cache_bytes_per_token")
    cache = f"+{_bytes(per_token)}/token" if isinstance(per_token, (int, float)) and per_token else "none"
    rate = figures.get("tokens_per_s")
    return (
        typed.test,
        typed.variant,
        typed.path,
        ms("first_token_ms"),
        f"{ms('token_ms')} (p90 {ms('token_p90_ms')})",
        f"{rate:,.4g}" if isinstance(rate, (int, float)) else "-",
        cache,
        typed.change,
        typed.verdict,
    )


def _title(rows: Sequence[tuple[str, ...]], machine: str) -> str:
    return (
        f"generation on machine '{machine}' (greedy tokens after the prompt, the cache fed back; change: "
        "prefill and a decode step side by side with the recorded reference)"
    )


TABLE = TerminalTable(
    GENERATION,
    _title,
    ("test", "variant", "path", "first token", "per token", "tokens/s", "cache", "change", "verdict"),
)


def drawing(record: Record) -> str:
    """The HTML figure: each decode step's time over the generation (the cache growing to the right),
    above the common facts."""
    from pytest_ortperf.reports.html.checks import draw_common

    steps = _figures(record).get("step_ms")
    values = [float(v) for v in steps if isinstance(v, (int, float))] if isinstance(steps, list) else []
    return _steps_svg(values) + draw_common(record)


def _steps_svg(values: Sequence[float]) -> str:
    if len(values) < 2 or max(values) <= 0:
        return ""
    width, height, pad = 360.0, 140.0, 30.0
    top = max(values) * 1.1
    span_x, span_y = width - 2 * pad, height - 2 * pad
    points = " ".join(
        f"{pad + i / (len(values) - 1) * span_x:.1f},{height - pad - v / top * span_y:.1f}"
        for i, v in enumerate(values)
    )
    title = f"time per generated token, step by step ({len(values)} steps, most {max(values):.4g} ms)"
    return (
        f'<svg class="generation-steps" viewBox="0 0 {width:g} {height:g}" width="{width:g}" '
        f'height="{height:g}" role="img"><title>{escape(title)}</title>'
        f'<polyline fill="none" stroke="currentColor" points="{points}"/>'
        f'<text x="{pad}" y="12">ms per token by step (0 .. {top:.3g} ms)</text></svg>'
    )


KIND = CheckKind(
    name=GENERATION,
    make=GenerationCheck,
    summary="a decoder's time to first token, time per generated token and tokens/s, the cache fed back",
    timed=True,
    not_timed=not_timed,
    part=GENERATION,
    row=row,
    table=TABLE,
    drawing=drawing,
    options=(
        KindOption(
            "prompt_length",
            "prompt tokens check_generation() runs before generating (default 32)",
            "32",
            parse=parse_length,
        ),
        KindOption(
            "new_tokens",
            "tokens check_generation() generates after the prompt, 2 or more (default 16)",
            "16",
            parse=parse_new_tokens,
        ),
    ),
    thresholds=(GENERATION,),
    threshold_parse=parse_limit,
    test_inputs=False,
)


def reads_as_decoder(path: Path) -> bool:
    """Whether the model file ``path`` reads as a decoder (:func:`is_decoder`), for the model collection
    and ``ortperf init``, which ask of every model: a file that does not hold the names ``input_ids`` and
    ``logits`` is answered from its bytes, mapped, without parsing its graph; a file onnx cannot read
    is not one (its checks name it)."""
    import mmap

    try:
        with path.open("rb") as stream, mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if data.find(INPUT_IDS.encode()) < 0 or data.find(LOGITS.encode()) < 0:
                return False
        return is_decoder(*signature_of(path))
    except Exception:  # not a model onnx can read (or an empty file mmap refuses)
        return False


def is_decoder(inputs: Sequence[Tensor], outputs: Sequence[Tensor]) -> bool:
    """Whether a model's signature reads as a decoder by the conventions (``ortperf init``, the model
    collection): ``input_ids`` and ``logits``, with a cache fed back or without one."""
    try:
        decoder_of(inputs, outputs, {}, where="")
    except UsageError:
        return False
    return True
