"""Fuzzing every loader of untrusted input with hypothesis.

Each loader must turn any input into a result or its documented error, never a
traceback from the plugin's internals:

- baseline JSON (``baselines.parse``, ``BaselineStore.entries``, ``ortperf show``): ``BaselineError``
  naming the file; ``AccuracyRecord.from_dict`` only the ``KeyError``/``TypeError``/``ValueError``
  that ``parse`` turns into one;
- reference ``.npz`` (``store.outputs.load_npz``): ``BaselineError`` naming the file;
- ORT trace JSON (``trace.parse_trace``, ``ortperf profile``): ``TraceError`` naming the source,
  and ``summarize``/``summary_lines`` never fail on events it accepted;
- option, ini and marker values (thresholds, tolerances, variants, providers, levels, dims,
  ranges, seeds, budgets, session settings, machine names, the whole ``build_config``):
  ``UsageError`` (or another ``OrtperfError``);
- model files: ``ModelResolver.resolve`` succeeds or raises ``OrtperfError``; a session built from
  garbage or mutated model bytes through ``SessionPool`` raises only ``SessionBuildError``, and ORT
  never crashes the process (builds run in a child process, ``_model_worker.py``, that is watched).

Inputs are both random (text, bytes, JSON from ``st.recursive``) and structure-aware: valid
documents, archives and models with one field, byte or proto field mutated (wrong type, NaN,
infinities, huge or negative numbers, numbers past CPython's 4300-digit limit, deep nesting,
missing keys).

Running::

    pytest tests/fuzz                                  # profile "fuzz": 100 examples a test, derandomized, < 20 s
    HYPOTHESIS_PROFILE=fuzz-long pytest tests/fuzz --hypothesis-show-statistics   # 20,000 a test, ~35 min
    HYPOTHESIS_PROFILE=fuzz-long FUZZ_MAX_EXAMPLES=3000 pytest tests/fuzz         # 3,000 a test, ~6 min
    HYPOTHESIS_PROFILE=fuzz-long pytest tests/fuzz -n 2 -k "trace or npz"        # a part, on two cores

- ``HYPOTHESIS_PROFILE``: ``fuzz`` (default: derandomized, so CI tries the same inputs every run)
  or ``fuzz-long`` (a fresh seed each run; a failure also prints a ``@reproduce_failure`` blob).
- ``FUZZ_MAX_EXAMPLES=N``: N examples a test instead of the profile's count (tests that are
  cheaper or dearer than most scale it by their ``fuzz(weight)``).
- ``FUZZ_INCLUDE_KNOWN_BUGS=1``: stop skipping the inputs of the known bugs (see below), to see
  the fuzzers find them again or to check a fix.

No example database is written (the repository does not ignore ``.hypothesis/``). The number
of inputs tried per loader is printed at the end of a run (not under xdist); sessions are built
in ``_model_worker.py``, a child process restarted whenever ORT kills it.

Every bug fuzzing found has a regression test with its minimal input at the end of this
module. An open bug's test is strict xfail, and the strategies skip exactly its inputs (the
``_known_bug_*`` predicates, applied with ``.filter(not_known(...))``), so everything else keeps
being fuzzed. When the bug is fixed its test XPASSes, which fails the run: remove its xfail mark
and the predicate.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import select
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("hypothesis", reason="the fuzz tests need hypothesis (pip install hypothesis)")

import numpy as np
import onnx
import onnxruntime
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from onnx import TensorProto, helper, numpy_helper

from pytest_ortperf import cli
from pytest_ortperf.accuracy.tolerances import ToleranceSpec, parse_tolerance_lines, parse_tolerance_values
from pytest_ortperf.checks.latency_figures import latency_part, stored_latency
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.errors import (
    BaselineError,
    InputsError,
    ModelError,
    OrtperfError,
    SessionBuildError,
    UsageError,
)
from pytest_ortperf.graph.diff import parse_graph_threshold
from pytest_ortperf.graph.figures import GraphFigures
from pytest_ortperf.kinds import builtin_kinds
from pytest_ortperf.latency.decision import judge
from pytest_ortperf.ort.inputs import InputOptions, InputSpec, load_feeds, specs_from_session
from pytest_ortperf.ort.models import ModelResolver, ModelSource, is_lfs_pointer
from pytest_ortperf.ort.probe import ProviderProber
from pytest_ortperf.ort.providers import parse_providers, resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings, parse_assignments
from pytest_ortperf.ort.sessions import SessionPool, session_options
from pytest_ortperf.ort.transformers import parse_options
from pytest_ortperf.ort.variants import OptLevel, Variant, parse_opt_level, parse_opt_levels, parse_precisions
from pytest_ortperf.plugin.configure import (
    OPTIONS,
    build_config,
    expect_contracts,
    input_options,
    model_marker_spec,
    parse_variant,
    settings_for,
    thresholds_for,
)
from pytest_ortperf.plugin.options import parse_dims, parse_int_range, parse_seconds, parse_seed
from pytest_ortperf.profiling.operators import explain
from pytest_ortperf.profiling.trace import (
    TraceError,
    model_runs,
    parse_trace,
    slice_run,
    summarize,
    summary_lines,
)
from pytest_ortperf.store.baselines import KIND, SCHEMA, BaselineStore, parse, render, salvaged
from pytest_ortperf.store.machine import validate_name
from pytest_ortperf.store.model_tables import read_tables
from pytest_ortperf.store.model_tables import settings_for as settings_for_model
from pytest_ortperf.store.outputs import AccuracyRecord, load_npz, zoo_expected
from pytest_ortperf.values import parse_threshold
from tests.fuzz._support import COUNTS, DEFAULT_PROFILE, LONG_PROFILE, profile_name
from tests.models import mlp_model

# --------------------------------------------------------------------------- profiles

_COMMON: dict[str, Any] = {
    "deadline": None,
    "database": None,  # the repository does not ignore .hypothesis/
    # Inputs are large on purpose (deep nesting, 5000-digit numbers, whole model files),
    # and the strategies filter out the inputs of known bugs.
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
}
settings.register_profile(DEFAULT_PROFILE, max_examples=100, derandomize=True, print_blob=False, **_COMMON)
settings.register_profile(LONG_PROFILE, max_examples=20_000, derandomize=False, print_blob=True, **_COMMON)
PROFILE = settings.get_profile(profile_name())


def fuzz(weight: float = 1.0) -> settings:
    """The chosen profile with ``weight`` times its examples (tests that build sessions use less).

    ``$FUZZ_MAX_EXAMPLES`` replaces the profile's example count (to fit a run into a time budget).
    """
    examples = int(os.environ.get("FUZZ_MAX_EXAMPLES") or PROFILE.max_examples)
    return settings(PROFILE, max_examples=max(1, round(examples * weight)))


def tried(loader: str) -> None:
    COUNTS[loader] += 1


# --------------------------------------------------------------------------- known bugs
# Inputs of open bugs found by fuzzing, each pinned by a strict-xfail regression test at the end
# of this module. The strategies skip exactly these inputs (``.filter(not_known(...))``) so the
# rest keeps being fuzzed; FUZZ_INCLUDE_KNOWN_BUGS=1 turns the skipping off (to see them fail again).

INCLUDE_KNOWN_BUGS = os.environ.get("FUZZ_INCLUDE_KNOWN_BUGS", "1") == "1"  # all found bugs are fixed
INT_DIGIT_LIMIT = 4300  # CPython refuses int <-> str conversions of more digits (ValueError)


def not_known(predicate: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A filter that drops the inputs ``predicate`` recognises as a known bug's."""
    return lambda value: INCLUDE_KNOWN_BUGS or not predicate(value)


def _walk(value: Any, depth: int = 0) -> Iterator[tuple[Any, int]]:
    yield value, depth
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield key, depth + 1
            yield from _walk(item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _walk(item, depth + 1)


# --------------------------------------------------------------------------- raw JSON literals


class Raw:
    """A JSON literal spliced into a document as is (json.dumps cannot write these)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        shown = self.text if len(self.text) <= 40 else f"{self.text[:20]}...({len(self.text)} chars)"
        return f"Raw({shown!r})"


def to_json(document: Any) -> str:
    """``json.dumps`` (NaN and Infinity allowed) with every :class:`Raw` spliced in."""
    raws: list[str] = []

    def default(value: Any) -> str:
        if isinstance(value, Raw):
            raws.append(value.text)
            return f"@@RAW{len(raws) - 1}@@"
        raise TypeError(type(value).__name__)

    text = json.dumps(document, default=default)
    for index, raw in enumerate(raws):
        text = text.replace(f'"@@RAW{index}@@"', raw, 1)
    return text


def _nested(depth: int, kind: str) -> str:
    return "[" * depth + "]" * depth if kind == "list" else '{"a":' * depth + "1" + "}" * depth


RAW_LITERALS = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e-999", "-0", "0.0", "1E400"]),
    st.integers(4290, 4310).map(lambda n: Raw("9" * n)),  # around the 4300-digit limit
    st.integers(309, 4300).map(lambda n: "1" * n),  # past float range, within the digit limit
    st.tuples(
        st.integers(1, 500) | st.sampled_from([1000, 3000, 100_000]), st.sampled_from(["list", "dict"])
    ).map(lambda t: _nested(*t)),
).map(lambda v: v if isinstance(v, Raw) else Raw(v))


def raw_digits(raw: Raw) -> int:
    text = raw.text.lstrip("-")
    return len(text) if text.isdigit() else 0


def raw_depth(raw: Raw) -> int:
    return max(raw.text.count("["), raw.text.count("{"))


# --------------------------------------------------------------------------- JSON strategies

EDGE_NUMBERS = st.sampled_from(
    [0, -1, 1, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63), 10**20, 10**308, 10**309,
     -(10**400), 10**400, 1e308, -1e308, 5e-324, -0.0, math.inf, -math.inf, math.nan]
)  # fmt: skip
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),  # NaN and infinities included: json.dumps writes NaN/Infinity, json.loads reads them
    st.text(max_size=20),
    st.text(
        st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010, exclude_categories=()), max_size=3
    ),  # lone surrogates
    EDGE_NUMBERS,
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)
# What replaces one field of a valid document: wrong types, non-finite, huge, negative, raw literals.
WEIRD_VALUES = st.one_of(JSON_SCALARS, JSON_VALUES, RAW_LITERALS, st.just([]), st.just({}), st.just(""))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from _paths(item, (*prefix, index))


@st.composite
def mutated(draw: st.DrawFn, documents: st.SearchStrategy[Any]) -> Any:
    """A valid document with one to three fields replaced, deleted or renamed."""
    document = draw(documents)
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(document))
        if not paths:
            return draw(WEIRD_VALUES)
        path = draw(st.sampled_from(paths))
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "rename"]))
        if action == "replace":
            parent[path[-1]] = draw(WEIRD_VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = parent.pop(path[-1])
    return document


@st.composite
def text_mutated(draw: st.DrawFn, texts: st.SearchStrategy[str]) -> str:
    """A valid document's text with a few characters inserted, deleted or replaced, or cut short."""
    text = draw(texts)
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace", "truncate"]))
        char = draw(st.characters() | st.sampled_from(list('{}[]":,0-9eE.+-\\ntfa')))
        if action == "insert":
            text = text[:position] + char + text[position:]
        elif action == "delete":
            text = text[:position] + text[position + 1 :]
        elif action == "replace":
            text = text[:position] + char + text[position + 1 :]
        else:
            text = text[:position]
    return text


# --------------------------------------------------------------------------- baseline documents

NAMES = st.text(max_size=12) | st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010, exclude_categories=()),
                                        max_size=3)  # fmt: skip

FINITE = st.floats(min_value=0.0, max_value=1e6)
POSITIVE = st.floats(min_value=1e-3, max_value=1e6)


@st.composite
def latency_dicts(draw: st.DrawFn) -> dict[str, Any]:
    medians = draw(st.lists(POSITIVE, min_size=1, max_size=6))
    data: dict[str, Any] = {
        name: draw(FINITE)
        for name in ("min_ms", "median_ms", "mean_ms", "stdev_ms", "iqr_ms", "p90_ms", "p95_ms", "p99_ms",
                     "cv", "round_cv", "throughput_per_s")
    }  # fmt: skip
    data.update(rounds=len(medians), count=len(medians) * draw(st.integers(1, 50)), round_medians_ms=medians)
    return data


@st.composite
def accuracy_dicts(draw: st.DrawFn) -> dict[str, Any]:
    outputs = [
        {
            "name": draw(st.text(max_size=8)),
            "dtype": draw(st.sampled_from(["float32", "int64", "bool", "float16"])),
            "shape": draw(st.lists(st.integers(0, 64), max_size=4)),
            "stored": draw(st.sampled_from(["full", "subsample"])),
            "sha256": "ab" * 32,
            **{key: draw(st.floats(-1e6, 1e6)) for key in ("mean", "std", "min", "max")},
        }
        for _ in range(draw(st.integers(0, 3)))
    ]
    return {"inputs_sha256": "cd" * 32, "outputs": outputs, "file": "t.py.outputs/t@m.npz"}


@st.composite
def profile_dicts(draw: st.DrawFn) -> dict[str, Any]:
    ops = draw(st.dictionaries(st.sampled_from(["MatMul", "Relu", "Conv"]), st.tuples(FINITE, st.integers(0, 9)),
                               max_size=3))  # fmt: skip
    nodes = draw(st.dictionaries(st.text(max_size=6), st.tuples(st.sampled_from(list(ops) or ["Relu"]), FINITE),
                                 max_size=3))  # fmt: skip
    return {
        "runs": draw(st.integers(0, 10)),
        "ops": {op: {"us": us, "nodes": n} for op, (us, n) in ops.items()},
        "nodes": {
            n: {"op": op, "provider": "CPUExecutionProvider", "us": us} for n, (op, us) in nodes.items()
        },
    }


ENVIRONMENT_SCALARS = JSON_SCALARS.filter(lambda v: not isinstance(v, float) or math.isfinite(v))


# Finite numbers only: a file must be writable again, so NaN/Infinity make an entry damaged.
# Recipe keys come from the keys the plugin records too, so migrations meet recipes that match.
ENVIRONMENTS = st.dictionaries(
    st.sampled_from(["model_sha256", "ort_version", "variant", "cpu", "cores"]) | st.text(max_size=8),
    ENVIRONMENT_SCALARS,
    max_size=3,
)
DATES = st.sampled_from(["2026-11-22", "2026-11-23"])


@st.composite
def v1_entry_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """A schema-1 entry: one test x variant x machine."""
    entry: dict[str, Any] = {"variant": "cpu-all", "recorded": draw(DATES), "environment": draw(ENVIRONMENTS)}
    parts = draw(st.sampled_from([("latency",), ("accuracy",), ("latency", "accuracy")]))
    if "latency" in parts:
        entry["latency"] = draw(latency_dicts())
        if draw(st.booleans()):
            entry["profile"] = draw(profile_dicts())
    if "accuracy" in parts:
        entry["accuracy"] = draw(accuracy_dicts())
    return entry


@st.composite
def figures_dicts(draw: st.DrawFn) -> dict[str, Any]:
    figures: dict[str, Any] = {"recorded": draw(DATES), "measured_on": draw(ENVIRONMENTS)}
    parts = draw(st.sampled_from([("latency",), ("profile",), ("latency", "profile")]))
    if "latency" in parts:
        figures["latency"] = draw(latency_dicts())
    if "profile" in parts:
        figures["profile"] = draw(profile_dicts())
    if draw(st.booleans()):
        figures["spread"] = draw(FINITE)
    if draw(st.booleans()):
        figures["settled"] = draw(st.booleans())
    return figures


@st.composite
def entry_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """A schema-2 entry: one test x variant, its recipe, outputs and figures per machine."""
    entry: dict[str, Any] = {
        "variant": "cpu-all",
        "recorded": draw(DATES),
        "recipe": draw(ENVIRONMENTS),
        "figures": draw(st.dictionaries(NAMES, figures_dicts(), max_size=2)),
    }
    if draw(st.booleans()):
        entry["accuracy"] = draw(accuracy_dicts())
    return entry


BASELINE_DOCUMENTS = st.builds(
    lambda entries: {"schema": SCHEMA, "kind": KIND, "entries": entries},
    st.dictionaries(NAMES, entry_dicts(), max_size=3),
) | st.builds(
    lambda entries: {"schema": 1, "kind": KIND, "entries": entries},
    st.dictionaries(NAMES, st.dictionaries(NAMES, v1_entry_dicts(), min_size=1, max_size=3), max_size=3),
)


NESTING_LIMIT = 400  # json's C decoder raises RecursionError somewhat below sys.getrecursionlimit()


def _unloadable(document: Any) -> bool:
    """Raw literals json.loads refuses: more than 4300 digits (ValueError), deep nesting (RecursionError)."""
    return any(
        isinstance(value, Raw) and (raw_digits(value) > INT_DIGIT_LIMIT or raw_depth(value) >= NESTING_LIMIT)
        for value, _ in _walk(document)
    )


def _loaded(document: Any) -> Any:
    return json.loads(to_json(document))


def _outcome(call: Callable[[], Any], allowed: type[Exception] | tuple[type[Exception], ...]) -> Any:
    """``call()``'s result, or the allowed exception it raised (any other exception propagates)."""
    try:
        return call()
    except allowed as exc:
        return exc


# The built-in kinds' part decoders, as a run hands them to the store: every part is validated as it loads.
DECODERS = builtin_kinds().part_decoders()
# What baselines.parse turns into a BaselineError when an entry's from_dict raises it.
ENTRY_ERRORS = (KeyError, TypeError, ValueError, OverflowError, AttributeError)


def _check_baseline_text(text: str, path: Path) -> None:
    entries = _outcome(lambda: parse(text, path=path, decoders=DECODERS), BaselineError)
    if isinstance(entries, BaselineError):
        assert str(path) in str(entries), f"the message does not name the file: {entries}"
        return
    # Accepted: what the plugin does next with an entry must not fail either; an update writes
    # the kept entries back, so they must render.
    written = render(entries)
    assert render(parse(written, path=path, decoders=DECODERS)) == written
    for entry in entries.values():
        for machine, figures in entry.figures.items():
            entry.environment_for(machine)
            part = latency_part(figures)
            if part is not None and part.latency is not None:
                medians = part.latency.round_medians_ms
                judge(medians, medians, threshold=0.1)
            if part is not None and part.profile is not None:
                explain(part.profile, part.profile)
                explain(part.profile, type(part.profile)(runs=1, ops={}, nodes={}))


@given(text=st.text() | st.binary().map(lambda b: b.decode("latin-1")))
@fuzz()
def test_baseline_parse_random_text(text: str) -> None:
    tried("baselines.parse")
    _check_baseline_text(text, Path("baselines/t.py.json"))


@given(
    document=(
        JSON_VALUES
        | st.builds(
            lambda s, e: {"schema": s, "kind": KIND, "entries": e}, st.sampled_from([1, SCHEMA]), JSON_VALUES
        )
    )
)
@fuzz()
def test_baseline_parse_random_json(document: Any) -> None:
    tried("baselines.parse")
    _check_baseline_text(to_json(document), Path("baselines/t.py.json"))


@given(document=BASELINE_DOCUMENTS)
@fuzz(0.3)
def test_baseline_valid_documents_parse(document: Any) -> None:
    """The generator of valid documents really makes valid ones (so mutations start from valid)."""
    tried("baselines.parse")
    entries = parse(to_json(document), path=Path("b.json"))
    assert set(entries) == set(_loaded(document)["entries"])  # (JSON joins surrogate pairs)


@given(document=mutated(BASELINE_DOCUMENTS))
@fuzz()
def test_baseline_parse_mutated_document(document: Any) -> None:
    tried("baselines.parse")
    _check_baseline_text(to_json(document), Path("baselines/t.py.json"))


@given(text=text_mutated(BASELINE_DOCUMENTS.map(to_json)))
@fuzz()
def test_baseline_parse_mutated_text(text: str) -> None:
    tried("baselines.parse")
    _check_baseline_text(text, Path("baselines/t.py.json"))


def _rendered(document: Any) -> str:
    """A valid document as the store writes it (render's layout: what a repair reads block by block)."""
    return render(parse(to_json(document), path=Path("b.json")))


@given(
    data=st.one_of(
        st.binary(),
        text_mutated(BASELINE_DOCUMENTS.map(_rendered)).map(lambda t: t.encode("utf-8", "surrogatepass")),
        mutated(BASELINE_DOCUMENTS).map(lambda d: to_json(d).encode()),
    )
)
@fuzz(0.5)
def test_a_repair_salvages_any_bytes_without_raising(data: bytes) -> None:
    """--ortperf-repair reads whatever is left of a damaged file (store/salvage.py): it never raises,
    what it keeps writes and loads again, and a file that loads whole is kept whole."""
    tried("baselines.salvaged")
    path = Path("baselines/t.py.json")
    salvage = salvaged(data, path, DECODERS)
    written = render(salvage.entries)
    assert render(parse(written, path=path, decoders=DECODERS)) == written
    whole = _outcome(
        lambda: parse(data.decode("utf-8"), path=path, decoders=DECODERS), (BaselineError, UnicodeDecodeError)
    )
    if isinstance(whole, dict):
        assert salvage.entries == whole
        assert salvage.lost == ()


@given(
    data=st.one_of(
        st.binary(),
        mutated(BASELINE_DOCUMENTS).map(lambda d: to_json(d).encode()),
    )
)
@fuzz(0.5)
def test_baseline_file_store_and_show(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    """A baseline file's bytes through BaselineStore (what checks use) and `ortperf show`."""
    tried("BaselineStore.entries + ortperf show")
    root = tmp_path_factory.mktemp("baselines")
    path = root / "test_x.py.json"
    path.write_bytes(data)
    result = _outcome(lambda: BaselineStore(root).entries("test_x.py"), BaselineError)
    if isinstance(result, BaselineError):
        assert str(path) in str(result)
    for as_json in ([], ["--json"]):
        code, _, err = _run_cli(["show", "--baseline-dir", str(root), *as_json])
        assert code in (0, 1)
        assert code == 0 or str(path) in err


@given(
    data=(mutated(accuracy_dicts()) | JSON_VALUES)
    .filter(lambda d: not _unloadable(d))  # from_dict takes what json.loads makes
    .map(_loaded)
)
@fuzz()
def test_accuracy_record_from_dict(data: Any) -> None:
    """Only the errors that baselines.parse turns into BaselineError."""
    tried("AccuracyRecord.from_dict")
    with contextlib.suppress(*ENTRY_ERRORS):
        AccuracyRecord.from_dict(data)


def graph_dicts() -> st.SearchStrategy[dict[str, Any]]:
    """Graph figures as a baseline holds them (``GraphFigures.as_dict``)."""
    counts = st.dictionaries(st.text(max_size=20), st.integers(min_value=0, max_value=10_000), max_size=5)
    return st.fixed_dictionaries(
        {"ops": counts, "fused": counts, "providers": counts},
        optional={
            "off_provider": st.integers(min_value=0, max_value=100),
            "copies": st.integers(min_value=0, max_value=100),
            "digest": st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
            "hardware_class": st.text(max_size=40),
            "pre_pass": counts,
        },
    )


@given(data=(mutated(graph_dicts()) | JSON_VALUES).filter(lambda d: not _unloadable(d)).map(_loaded))
@fuzz()
def test_graph_figures_from_dict(data: Any) -> None:
    """Only the errors that baselines.parse turns into BaselineError; what loads writes back the same."""
    tried("GraphFigures.from_dict")
    try:
        figures = GraphFigures.from_dict(data)
    except ENTRY_ERRORS:
        return
    assert GraphFigures.from_dict(figures.as_dict()) == figures


@given(
    value=JSON_VALUES
    | st.text(max_size=12)
    | st.dictionaries(st.text(max_size=8), st.integers() | st.booleans())
)
@fuzz()
def test_graph_thresholds_and_transformer_options(value: Any) -> None:
    """ort_thresholds(graph=...) and ort_model(transformers=...): a value or a UsageError naming the marker."""
    tried("graph.diff.parse_graph_threshold + ort.transformers.parse_options")
    for parser in (parse_graph_threshold, parse_options):
        message = ""
        try:
            parser(value, source="the marker")
        except UsageError as exc:
            message = str(exc)
        assert not message or message.startswith("the marker: ")


CONTRACT_VALUES = JSON_VALUES | st.dictionaries(
    st.sampled_from(["cpu-disabled", "cpu-all-int8-static", "cuda-all", "cpu", "x-y-fp16", ""])
    | st.text(max_size=8),
    st.floats(allow_nan=True) | st.integers() | st.booleans() | st.text(max_size=4),
    max_size=3,
)


@given(
    args=st.lists(JSON_VALUES, max_size=1),
    kwargs=st.dictionaries(
        st.sampled_from(["faster_than", "agreement", "speedup"]), CONTRACT_VALUES, max_size=2
    ),
)
@fuzz()
def test_contract_marker_values(args: list[Any], kwargs: dict[str, Any]) -> None:
    """ort_expect(faster_than=..., agreement=...): contracts, or a UsageError naming the marker."""
    tried("plugin.config.expect_contracts")
    message = ""
    try:
        contracts = expect_contracts([(args, kwargs)], origin="the marker")
    except UsageError as exc:
        message = str(exc)
    assert not message or message.startswith("the marker")
    if not message:
        for contract in contracts:
            assert contract.bound > 0
            assert contract.kind in ("faster_than", "agreement")


# --------------------------------------------------------------------------- reference .npz


def _npz(arrays: Mapping[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # type: ignore[arg-type]
    return buffer.getvalue()


NPZ_ARRAYS = st.dictionaries(
    st.from_regex(r"[a-z_][a-z0-9_]{0,7}", fullmatch=True),
    hnp.arrays(
        st.sampled_from([np.float32, np.float64, np.int64, np.int8, np.bool_, np.float16, np.complex64]),
        hnp.array_shapes(min_dims=0, max_dims=3, max_side=4),
    ),
    max_size=3,
)


@st.composite
def byte_mutated(draw: st.DrawFn, blobs: st.SearchStrategy[bytes]) -> bytes:
    """Valid bytes with a few bytes flipped, inserted or deleted, a range duplicated, or cut short."""
    data = bytearray(draw(blobs))
    for _ in range(draw(st.integers(1, 6))):
        position = draw(st.integers(0, max(len(data) - 1, 0)))
        action = draw(st.sampled_from(["flip", "flip", "set", "insert", "delete", "truncate", "duplicate"]))
        if action == "flip" and data:
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif action == "set" and data:
            data[position] = (
                draw(st.sampled_from([0x00, 0xFF, 0x7F, 0x80]))
                if draw(st.booleans())
                else draw(st.integers(0, 255))
            )
        elif action == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=8))
        elif action == "delete":
            del data[position : position + draw(st.integers(1, 16))]
        elif action == "truncate":
            del data[position:]
        else:
            end = position + draw(st.integers(1, 64))
            data[end:end] = data[position:end]
    return bytes(data)


NPY_HEADER_VALUES = {
    "descr": st.one_of(
        st.sampled_from(["<f4", "|O", "<i8", "|b1", "<U3", "|V0", "|S0", "", "<f999", "x"]),
        JSON_SCALARS.map(repr),
        st.just("[('a', '<f4')]"),
    ),
    "fortran_order": st.sampled_from(["False", "True", "None", "1", "'x'"]),
    "shape": st.one_of(
        st.lists(st.integers(-2, 6) | st.sampled_from([2**31, 2**62, 2**63 - 1, 2**63]), max_size=4).map(
            lambda s: repr(tuple(s))
        ),
        st.sampled_from(["()", "(3,)", "[3]", "'x'", "None", "(1.5,)", "(True,)"]),
    ),
}


@st.composite
def crafted_npz(draw: st.DrawFn) -> bytes:
    """A zip holding .npy members with hand-made headers: odd dtypes, shapes and data lengths."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for index in range(draw(st.integers(1, 3))):
            fields = {
                key: draw(values) for key, values in NPY_HEADER_VALUES.items() if draw(st.integers(0, 9))
            }
            header = "{" + "".join(f"'{k}': {v}, " for k, v in fields.items()) + "}"
            header = header.ljust(draw(st.integers(len(header), len(header) + 100)))
            version = draw(st.sampled_from([(1, 0), (2, 0), (3, 0), (9, 9)]))
            encoded = header.encode("latin-1", "replace") + b"\n"
            size = len(encoded).to_bytes(2 if version[0] == 1 else 4, "little")
            body = draw(st.binary(max_size=64))
            name = draw(
                st.sampled_from(
                    [f"a{index}.npy", f"a{index}", f"../x{index}.npy", f"d/{index}.npy", f"/{index}"]
                )
            )
            archive.writestr(name, b"\x93NUMPY" + bytes(version) + size + encoded + body)
    return buffer.getvalue()


def _check_npz(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("npz") / "ref.npz"
    path.write_bytes(data)
    result = _outcome(lambda: load_npz(path), BaselineError)
    if isinstance(result, BaselineError):
        assert str(path) in str(result)


@given(data=st.binary(max_size=2048) | st.binary(max_size=64).map(lambda b: b"PK\x03\x04" + b))
@fuzz()
def test_load_npz_random_bytes(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    tried("outputs.load_npz")
    _check_npz(tmp_path_factory, data)


@given(data=byte_mutated(NPZ_ARRAYS.map(_npz)))
@fuzz()
def test_load_npz_mutated_archive(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    tried("outputs.load_npz")
    _check_npz(tmp_path_factory, data)


@given(data=crafted_npz())
@fuzz()
def test_load_npz_crafted_headers(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    tried("outputs.load_npz")
    _check_npz(tmp_path_factory, data)


# --------------------------------------------------------------------------- model-zoo data sets, input .npz

DATA_JSON_TEXTS = st.one_of(
    JSON_VALUES.map(to_json),
    st.fixed_dictionaries({}, optional={"rtol": WEIRD_VALUES, "atol": WEIRD_VALUES}).map(to_json),
    text_mutated(st.just('{"rtol": 0.001, "atol": 1e-05, "model": "x"}')),
    st.integers(0, 5000).map(lambda digits: '{"rtol": 1' + "0" * digits + "}"),
    st.sampled_from([1_000, 100_000]).map(lambda depth: '{"a": ' * depth + "1" + "}" * depth),
    st.sampled_from([1_000, 100_000]).map(lambda depth: "[" * depth + "]" * depth),
)
OUTPUT_PB = numpy_helper.from_array(
    np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), "y"
).SerializeToString()


def _data_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("zoo") / "test_data_set_0"
    folder.mkdir()
    return folder


@given(text=DATA_JSON_TEXTS)
@fuzz(0.5)
def test_zoo_data_json(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    tried("outputs.zoo_expected(data.json)")
    folder = _data_set(tmp_path_factory)
    (folder / "output_0.pb").write_bytes(OUTPUT_PB)
    (folder / "data.json").write_bytes(text.encode("utf-8", "surrogatepass"))
    result = _outcome(lambda: zoo_expected(folder, ["y"]), InputsError)
    if isinstance(result, InputsError):
        assert str(folder / "data.json") in str(result)
        return
    expected, tolerances = result
    assert list(expected) == ["y"]
    assert set(tolerances) <= {"rtol", "atol", "cosine"}
    assert all(math.isfinite(value) and value >= 0 for value in tolerances.values())


@given(data=st.binary(max_size=512) | byte_mutated(st.just(OUTPUT_PB)))
@fuzz(0.5)
def test_zoo_output_pb(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    tried("outputs.zoo_expected(output_*.pb)")
    folder = _data_set(tmp_path_factory)
    (folder / "output_0.pb").write_bytes(data)
    result = _outcome(lambda: zoo_expected(folder, ["y"]), InputsError)
    if isinstance(result, InputsError):
        assert str(folder / "output_0.pb") in str(result)
    else:
        assert all(isinstance(array, np.ndarray) for array in result[0].values())


@given(data=st.binary(max_size=1024) | byte_mutated(NPZ_ARRAYS.map(_npz)) | NPZ_ARRAYS.map(_npz))
@fuzz(0.5)
def test_input_npz_beside_the_model(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    tried("inputs.load_feeds(.npz)")
    folder = tmp_path_factory.mktemp("model")
    model = folder / "model.onnx"
    model.write_bytes(b"")
    model.with_suffix(".npz").write_bytes(data)
    source = ModelSource(label="model.onnx", sha256="0" * 64, path=model)
    spec = InputSpec("x", "tensor(float)", (1, 3))
    result = _outcome(lambda: load_feeds(source, [spec], InputOptions()), InputsError)
    if isinstance(result, InputsError):
        assert str(model.with_suffix(".npz")) in str(result)
    else:
        assert result["x"].dtype == np.float32


# --------------------------------------------------------------------------- traces

PROVIDERS = st.sampled_from(
    ["CPUExecutionProvider", "CUDAExecutionProvider", "TensorrtExecutionProvider", ""]
)
# Mostly real microsecond counts; sometimes negative, float or near the end of float range.
DURATIONS = st.one_of(
    st.integers(0, 500),
    st.integers(0, 500),
    st.sampled_from([-1, 0.5, 2**31, 2**63, 10**299]),
    st.sampled_from([1e306, 1e308, 1.7e308]),
)


@st.composite
def trace_documents(draw: st.DrawFn) -> Any:
    """A plausible ORT trace: model_run Session events with Node and Kernel events inside."""
    events: list[dict[str, Any]] = []
    clock = draw(st.integers(0, 10**6))
    for _ in range(draw(st.integers(0, 3))):
        tid = draw(st.integers(0, 3))
        start = clock
        for index in range(draw(st.integers(0, 4))):
            dur = draw(DURATIONS)
            events.append({
                "cat": "Node", "name": draw(st.just(f"n{index}_kernel_time") | NAMES), "ts": clock, "dur": dur,
                "tid": tid, "pid": 1, "ph": "X",
                "args": {"op_name": draw(st.sampled_from(["MatMul", "Relu", "Conv"]) | NAMES), "provider": draw(PROVIDERS)},
            })  # fmt: skip
            clock += dur + 1
        if draw(st.booleans()):
            events.append({"cat": "Kernel", "name": "k", "ts": start, "dur": draw(DURATIONS), "tid": 9, "pid": 1,
                           "ph": "X"})  # fmt: skip
        events.append({"cat": "Session", "name": "model_run", "ts": start, "dur": clock - start + 1, "tid": tid,
                       "pid": 1, "ph": "X", "args": {}})  # fmt: skip
        clock += 10
    draw(st.randoms(use_true_random=False)).shuffle(events)
    return {"traceEvents": events} if draw(st.booleans()) else events


def _check_trace_text(text: str, source: str) -> None:
    events = _outcome(lambda: parse_trace(text, source=source), TraceError)
    if isinstance(events, TraceError):
        assert source in str(events), f"the message does not name the source: {events}"
        return
    for requested in (None, "CPUExecutionProvider", "CUDAExecutionProvider"):
        summary = summarize(events, requested_provider=requested)
        summary_lines(summary)
        json.dumps(summary.as_dict())
    for run in model_runs(events):
        slice_run(events, run)


@given(text=st.text() | st.binary().map(lambda b: b.decode("latin-1")))
@fuzz()
def test_trace_parse_random_text(text: str) -> None:
    tried("trace.parse_trace")
    _check_trace_text(text, "trace.json")


@given(document=JSON_VALUES)
@fuzz()
def test_trace_parse_random_json(document: Any) -> None:
    tried("trace.parse_trace")
    _check_trace_text(to_json(document), "trace.json")


@given(document=mutated(trace_documents()))
@fuzz()
def test_trace_parse_mutated_trace(document: Any) -> None:
    tried("trace.parse_trace")
    _check_trace_text(to_json(document), "trace.json")


@given(text=text_mutated(trace_documents().map(to_json)))
@fuzz()
def test_trace_parse_mutated_text(text: str) -> None:
    tried("trace.parse_trace")
    _check_trace_text(text, "trace.json")


def _run_cli(argv: list[str]) -> tuple[int, str, str]:
    """``ortperf ARGV`` with stdout/stderr as strict UTF-8 streams, like a terminal's."""
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="strict", write_through=True)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out_bytes.getvalue().decode(), err_bytes.getvalue().decode()


@given(
    data=st.one_of(
        st.binary(max_size=256),
        mutated(trace_documents()).map(lambda d: to_json(d).encode()),
        trace_documents().map(lambda d: to_json(d).encode()),
    ),
    options=st.sampled_from([[], ["--json"], ["--provider", "cuda"], ["--top", "0"]]),
)
@fuzz(0.5)
def test_ortperf_profile_cli(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, options: list[str]
) -> None:
    """`ortperf profile FILE`: a summary (exit 0) or one 'ortperf: error:' line naming the file (exit 2)."""
    tried("ortperf profile")
    path = tmp_path_factory.mktemp("trace") / "trace.json"
    path.write_bytes(data)
    code, _, err = _run_cli(["profile", str(path), *options])
    assert code in (0, 2)
    if code == 2:
        assert err.startswith("ortperf: error:"), err
        assert str(path) in err, err


# --------------------------------------------------------------------------- JSON reports (the HTML page)
# `ortperf report` reads JSON reports that may come from another version, or be cut short or edited
# by hand: read_report gives a Job or a ReportFileError naming the file, and a Job always renders.
EXAMPLE_REPORT = json.loads(
    (Path(__file__).parents[1] / "unit" / "reports" / "example_report.json").read_text()
)


def _small(value: Any) -> Any:
    """The example report with every list and object cut to its first 4 items: each kind of check
    and field stays, and a failing example's repr stays readable."""
    if isinstance(value, list):
        return [_small(item) for item in value[:4]]
    if isinstance(value, dict):
        keep = list(value)[:4] if not {"test", "kind", "checks"} & set(value) else list(value)
        return {key: _small(value[key]) for key in keep}
    return value


@st.composite
def report_documents(draw: st.DrawFn) -> dict[str, Any]:
    """One to three of the example report's checks (of any kind), its profiles and trade-offs."""
    picked = draw(st.lists(st.sampled_from(range(len(EXAMPLE_REPORT["checks"]))), min_size=1, max_size=3))
    document = {key: value for key, value in EXAMPLE_REPORT.items() if key != "checks"}
    document["checks"] = [EXAMPLE_REPORT["checks"][i] for i in picked]
    return {key: _small(value) for key, value in document.items()}


REPORT_DOCUMENTS = report_documents()


def _check_report_text(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    from pytest_ortperf.kinds import builtin_kinds
    from pytest_ortperf.reports.html import ReportFileError, read_report, render_page

    path = tmp_path_factory.mktemp("report") / "report.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        job = read_report(path)
    except ReportFileError as exc:
        problem = str(exc)
    else:
        problem = ""
    if problem:
        assert str(path) in problem
        return
    page = render_page([job], drawings=builtin_kinds().drawings())
    assert page.startswith("<!DOCTYPE html>")
    assert page.count('<tr class="') == len(job.document["checks"])


@given(document=mutated(REPORT_DOCUMENTS))
@fuzz(0.5)
def test_report_page_mutated_document(tmp_path_factory: pytest.TempPathFactory, document: Any) -> None:
    tried("page.read_report")
    _check_report_text(tmp_path_factory, to_json(document))


@given(text=text_mutated(REPORT_DOCUMENTS.map(to_json)))
@fuzz(0.5)
def test_report_page_mutated_text(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    tried("page.read_report")
    _check_report_text(tmp_path_factory, text)


# --------------------------------------------------------------------------- option, ini and marker values

NUMBER_TEXT = st.one_of(
    st.integers().map(str),
    st.floats().map(repr),
    st.sampled_from(["", " ", "-", "+", "0", "-0", "00", "1", "-1", "1.5", "1e3", "1e999", "-1e999", "1e-400",
                     "nan", "NaN", "inf", "-inf", "Infinity", "0x10", "1_000", "\u0661\u0662", "\u00b2", "\uff15", " 7 ", "7\x00",
                     "\u00a07", "10%", "%", "1%%", "50%", "-5%", "0%", "100000%", "2147483647", "2147483648",
                     "4294967296", "18446744073709551616", "-2147483649"]),
    st.integers(4290, 4310).map(lambda n: "9" * n),  # around CPython's 4300-digit int() limit
)  # fmt: skip
SETTING_KEYS = st.sampled_from(["intra_op_threads", "inter_op_threads", "execution_mode", "intra_op_spinning",
                                "inter_op_spinning", "cpu_mem_arena", "mem_pattern", "denormal_as_zero",
                                "intra_op_thread_affinities", "config.session.x", "config.", "cuda:x", "cpu:arena",
                                "bogus:x", "config_entries", "provider_options"])  # fmt: skip
TOLERANCE_KEYS = st.sampled_from(
    ["atol", "rtol", "cosine", "mismatch", "logits.atol", ".rtol", "a.b.cosine", "x"]
)
# What Python makes of undecodable bytes in argv or a file (surrogateescape): lone surrogates.
SURROGATES = st.text(st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF, exclude_categories=()),
                     min_size=1, max_size=2)  # fmt: skip
WORD_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["cpu", "cuda", "trt", "CPUExecutionProvider", "FooExecutionProvider", "ExecutionProvider",
                     "all", "disabled", "layout", "99", "none", "off", "sequential", "parallel", "true", "on",
                     "cpu-disabled", "cuda-all", "-", "#"]),
    SETTING_KEYS,
    TOLERANCE_KEYS,
    SURROGATES,
)  # fmt: skip
SEPARATORS = st.sampled_from(["", ",", "=", ":", "-", ".", " ", "\n", "%", ";"])


@st.composite
def option_text(draw: st.DrawFn) -> str:
    """Random text, or tokens an option value is made of joined by the separators it uses."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.text(max_size=60))
    parts = draw(st.lists(st.one_of(NUMBER_TEXT, WORD_TEXT), max_size=6))
    return "".join(part + draw(SEPARATORS) for part in parts)


def _assignment(keys: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """``KEY=VALUE`` with spacing variations, as ini lines and repeated options hold them."""
    return st.builds(
        lambda key, space, value: f"{key}{space}={space}{value}",
        keys | WORD_TEXT,
        st.sampled_from(["", " ", "\t"]),
        NUMBER_TEXT | WORD_TEXT,
    )


SETTING_LINES = st.lists(option_text() | _assignment(SETTING_KEYS), max_size=5)
TOLERANCE_LINES = st.lists(option_text() | _assignment(TOLERANCE_KEYS), max_size=5)
# (Built by map: hypothesis cannot repr a strategy holding an int of more than 4300 digits.)
HUGE_INTS = st.sampled_from([2**31, 2**63, 2**64, 10**400, -(10**400)]) | st.integers(4301, 5000).map(
    lambda n: 10**n
)
PY_VALUES = st.one_of(
    JSON_VALUES,
    option_text(),
    NUMBER_TEXT,
    HUGE_INTS,
    st.tuples(JSON_SCALARS, JSON_SCALARS),
    st.binary(max_size=8),
)


def _known_bug_tolerance(value: Any) -> bool:
    """An int of more than 4300 digits as a tolerance: the UsageError's {value!r} raises ValueError
    (test_regression_tolerance_int_over_4300_digits)."""
    return any(_too_many_digits(item) for item, _ in _walk(value))


def _too_many_digits(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**INT_DIGIT_LIMIT


def _usage(call: Callable[[], Any]) -> Any:
    """Call a parser; only OrtperfError (UsageError for option text) may come out, with a message."""
    result = _outcome(call, OrtperfError)
    if isinstance(result, OrtperfError):
        assert str(result), "an error without a message"
    return result


TEXT_PARSERS: dict[str, Callable[[Any], Any]] = {
    "values.parse_threshold": lambda v: parse_threshold(v, source="--opt"),
    "config.parse_variant": lambda v: parse_variant(v, source="--opt"),
    "options.parse_dims": lambda v: parse_dims(v, source="--opt"),
    "options.parse_int_range": lambda v: parse_int_range(v, source="--opt"),
    "options.parse_seconds": lambda v: parse_seconds(v, source="--opt"),
    "options.parse_seed": lambda v: parse_seed(v, source="--opt"),
    "providers.parse_providers": lambda v: parse_providers(v, source="--opt"),
    "providers.resolve_provider": lambda v: resolve_provider(v, source="--opt"),
    "variants.parse_opt_levels": lambda v: parse_opt_levels(v, source="--opt"),
    "variants.parse_opt_level": lambda v: parse_opt_level(v, source="--opt"),
    "variants.parse_precisions": lambda v: parse_precisions(v, source="--opt"),
    "machine.validate_name": lambda v: validate_name(v, source="--opt"),
}
# Shapes the option values really have, for each parser.
STRUCTURED_TEXT: dict[str, st.SearchStrategy[str]] = {
    "options.parse_dims": st.lists(_assignment(st.text(max_size=4)), max_size=4).map(",".join),
    "options.parse_int_range": st.builds(
        lambda a, sep, b: f"{a}{sep}{b}", NUMBER_TEXT, st.sampled_from([":", ","]), NUMBER_TEXT
    ),
    "config.parse_variant": st.builds(lambda a, b: f"{a}-{b}", WORD_TEXT, WORD_TEXT),
}


TEXT_STRATEGIES = {
    name: option_text() | STRUCTURED_TEXT.get(name, NUMBER_TEXT | WORD_TEXT) for name in TEXT_PARSERS
}


@pytest.mark.parametrize("name", sorted(TEXT_PARSERS))
@given(data=st.data())
@fuzz(0.5)
def test_option_text(name: str, data: st.DataObject) -> None:
    """Every option parser on text: a value, or a UsageError naming the option."""
    text = data.draw(TEXT_STRATEGIES[name], label="text")
    tried(name)
    result = _usage(lambda: TEXT_PARSERS[name](text))
    if isinstance(result, OrtperfError):
        assert isinstance(result, UsageError)
        assert "--opt" in str(result), f"the message does not name the option: {result}"


@pytest.mark.parametrize("name", ["values.parse_threshold", "options.parse_int_range", "options.parse_seconds",
                                  "options.parse_seed", "options.parse_dims"])  # fmt: skip
@given(value=PY_VALUES)
@fuzz(0.5)
def test_option_python_values(name: str, value: Any) -> None:
    """Marker arguments and ini values arrive as Python values, not only as text."""
    tried(f"{name} (values)")
    _usage(lambda: TEXT_PARSERS[name](value))


@given(lines=SETTING_LINES, level=st.sampled_from(list(OptLevel)))
@fuzz()
def test_session_option_lines(lines: list[str], level: OptLevel) -> None:
    """--ortperf-session-options lines through to the SessionOptions a session would be built with."""
    tried("session_settings.parse_assignments + session_options")
    overrides = _usage(lambda: parse_assignments(lines, source="--ortperf-session-options"))
    if isinstance(overrides, OrtperfError):
        return
    resolved = _usage(lambda: SessionSettings().with_overrides(overrides, source="--ortperf-session-options"))
    if isinstance(resolved, OrtperfError):
        return
    variant = Variant(resolve_provider("cpu", source="x"), level)
    _usage(lambda: session_options(onnxruntime, variant, resolved))


@given(lines=TOLERANCE_LINES)
@fuzz()
def test_tolerance_lines(lines: list[str]) -> None:
    tried("config.parse_tolerance_lines")
    _usage(lambda: parse_tolerance_lines(lines, source="--ortperf-tolerances"))


@given(values=st.dictionaries(TOLERANCE_KEYS | st.text(max_size=6), PY_VALUES, max_size=4)
       .filter(not_known(_known_bug_tolerance)))  # fmt: skip
@fuzz()
def test_tolerance_values(values: dict[str, Any]) -> None:
    tried("accuracy.parse_tolerance_values")
    _usage(lambda: parse_tolerance_values(values, source="ort_thresholds"))


MARKER_KEYS = st.sampled_from(["latency", "atol", "rtol", "cosine", "mismatch", "outputs", "dims", "shapes",
                               "int_range", "seed", "path"]) | SETTING_KEYS  # fmt: skip
MARKER_KWARGS = st.dictionaries(
    MARKER_KEYS | st.text(max_size=6),
    PY_VALUES | st.dictionaries(st.text(max_size=6) | TOLERANCE_KEYS | SETTING_KEYS, PY_VALUES, max_size=3),
    max_size=4,
)
MARKERS = st.lists(st.tuples(st.lists(PY_VALUES, max_size=2), MARKER_KWARGS), max_size=3)
BASE_POLICY = CheckPolicy(threshold=0.1, missing="fail", update=False, fail_on_improvement=False, max_cv=0.1)


@given(markers=MARKERS.filter(not_known(_known_bug_tolerance)))
@example(markers=[([], {"config_entries": {"0": 10**4301}})])  # the long profile's find (issue 22)
@fuzz()
def test_marker_arguments(markers: list[tuple[list[Any], dict[str, Any]]]) -> None:
    """ort_thresholds, ort_settings and ort_model arguments as a test module would write them."""
    tried("config markers (ort_thresholds/ort_settings/ort_model)")
    _usage(lambda: thresholds_for(BASE_POLICY, ToleranceSpec(), markers, origin="test_x.py::t"))
    resolved = _usage(lambda: settings_for(SessionSettings(), markers, origin="test_x.py::t"))
    if not isinstance(resolved, OrtperfError):
        variant = Variant(resolve_provider("cpu", source="x"), OptLevel.ALL)
        _usage(lambda: session_options(onnxruntime, variant, resolved))
    for args, kwargs in markers:
        _usage(lambda a=args, k=kwargs: model_marker_spec(a, k, origin="test_x.py::t"))
        _usage(lambda k=kwargs: input_options(InputOptions(), k, origin="test_x.py::t"))


class FakeConfig:
    """The parts of pytest's Config that build_config reads."""

    def __init__(self, root: Path, cli: dict[str, Any], ini: dict[str, Any]) -> None:
        self.rootpath = root
        self.inipath = root / "pytest.ini"
        self.invocation_params = SimpleNamespace(dir=root)
        self._cli, self._ini = cli, ini

    def getoption(self, name: str) -> Any:
        return self._cli.get(name)

    def issue_config_time_warning(self, warning: Warning, stacklevel: int) -> None:
        """A deprecated option's warning (pytest shows it at configure time): taken, not raised."""

    def getini(self, name: str) -> Any:
        option = next((o for o in OPTIONS if o.ini == name), None)
        if option is None:  # as pytest's: an ini key nobody registered
            raise ValueError(f"unknown configuration value: {name!r}")
        default = option.default == "true" if option.ini_type == "bool" else option.default
        return self._ini.get(name, default)


def _option_values(metavar: str, ini_type: str) -> st.SearchStrategy[Any]:
    """Values shaped like each option's, plus anything."""
    if ini_type == "linelist":
        return SETTING_LINES | TOLERANCE_LINES
    shaped = {
        "LIST": st.lists(WORD_TEXT, max_size=4).map(",".join),
        "NAME=N,...": STRUCTURED_TEXT["options.parse_dims"],
        "LOW:HIGH": STRUCTURED_TEXT["options.parse_int_range"],
        "VARIANT": STRUCTURED_TEXT["config.parse_variant"],
    }.get(metavar, NUMBER_TEXT | WORD_TEXT)
    return option_text() | shaped


@st.composite
def option_sets(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """Some options on the command line, some in the ini file, the rest at their defaults."""
    cli: dict[str, Any] = {}
    ini: dict[str, Any] = {}
    for option in OPTIONS:
        where = draw(st.sampled_from(["default", "default", "cli", "ini"]))
        if where == "default":
            continue
        if option.ini_type == "bool":
            value: Any = True if where == "cli" else draw(st.booleans())
        else:
            value = draw(_option_values(option.metavar, option.ini_type))
        (cli if where == "cli" else ini)[option.ini] = value
    return cli, ini


DIRECTORY_INI = ("ortperf_baseline_dir", "ortperf_profile_dir")


@given(options=option_sets())
@fuzz()
def test_build_config(options: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Every option and ini key at once, as pytest_configure builds the run's configuration."""
    tried("config.build_config (all options)")
    cli_values, ini_values = options
    _usage(lambda: build_config(FakeConfig(Path("/nonexistent/root"), cli_values, ini_values)))


# --------------------------------------------------------------------------- model files


def _safe_model_name(name: str) -> bool:
    """Relative names only: absolute and '..' names could reach /dev/zero, whose hashing never ends."""
    return not Path(name).is_absolute() and ".." not in Path(name).parts


@given(
    data=st.binary(max_size=4096),
    name=(st.text(min_size=1, max_size=40) | st.integers(200, 5000).map(lambda n: "m" * n)).filter(
        _safe_model_name
    ),
)
@fuzz()
def test_model_resolver_garbage_file(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, name: str
) -> None:
    """A model file of any bytes resolves (it is only hashed), except a Git LFS pointer, which is a
    ModelError naming it; any relative name resolves or is an OrtperfError."""
    tried("models.ModelResolver.resolve")
    directory = tmp_path_factory.mktemp("models")
    (directory / "model.onnx").write_bytes(data)
    resolver = ModelResolver(directory)
    if is_lfs_pointer(data):
        with pytest.raises(ModelError, match=r"^test_x\.py: model file .* is a Git LFS pointer"):
            resolver.resolve("model.onnx", test_dir=directory, origin="test_x.py")
        return
    source = resolver.resolve("model.onnx", test_dir=directory, origin="test_x.py")
    assert source.path is not None
    assert source.path.read_bytes() == data
    result = _usage(lambda: resolver.resolve(name, test_dir=directory, origin="test_x.py"))
    if isinstance(result, OrtperfError):
        assert "test_x.py" in str(result)


WORKER = Path(__file__).with_name("_model_worker.py")
WORKER_MEMORY = 4 << 30
WORKER_TIMEOUT_S = 60.0


class ModelWorker:
    """Builds sessions in a child process and reports how it answered, or how it died."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.log = directory / "worker.log"
        self.process: subprocess.Popen[str] | None = None
        self.deaths: list[str] = []

    def _start(self) -> subprocess.Popen[str]:
        with self.log.open("ab") as log:
            process = subprocess.Popen(
                [sys.executable, str(WORKER), str(WORKER_MEMORY)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                cwd=Path(__file__).parents[2],
            )
        ready = self._read(process, 120.0)
        assert ready == {"ready": True}, f"model worker did not start: {self._log_tail()}"
        return process

    def _read(self, process: subprocess.Popen[str], timeout: float) -> dict[str, Any] | None:
        assert process.stdout is not None
        readable, _, _ = select.select([process.stdout], [], [], timeout)
        line = process.stdout.readline() if readable else ""
        return json.loads(line) if line else None

    def _log_tail(self) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text[-1500:]

    def build(self, data: bytes, *, by_path: bool, level: str = "all", run: bool = False) -> dict[str, Any]:
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        path = self.directory / "model.onnx"
        path.write_bytes(data)
        request = {"file": str(path), "by_path": by_path, "level": level, "run": run}
        assert self.process.stdin is not None
        self.log.write_text("")
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            answer = self._read(self.process, WORKER_TIMEOUT_S)
        except BrokenPipeError:
            answer = None
        if answer is not None:
            return answer
        timed_out = self.process.poll() is None
        code = self._stop(kill=True)
        how = "hung" if timed_out else (f"killed by signal {-code}" if code < 0 else f"exit status {code}")
        return {"died": how, "log": self._log_tail()}

    def _stop(self, *, kill: bool) -> int:
        process, self.process = self.process, None
        assert process is not None
        if kill and process.poll() is None:
            process.kill()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            return process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()

    def close(self) -> None:
        if self.process is not None:
            self._stop(kill=False)


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelWorker]:
    pool = ModelWorker(tmp_path_factory.mktemp("worker"))
    yield pool
    pool.close()


def _assert_clean_build(answer: dict[str, Any], data: bytes = b"") -> None:
    """A build of ``data`` that succeeded or failed with a SessionBuildError naming the model; bytes
    that are a Git LFS pointer are refused before ONNX Runtime sees them, with a ModelError saying so."""
    event(f"build: {answer.get('build', answer.get('died'))}")
    if answer.get("run") is not None:
        event(f"run: {answer['run']}")
    assert "died" not in answer, f"ONNX Runtime crashed the process building this model: {answer}"
    if is_lfs_pointer(data):
        assert answer["build"] == "ModelError", answer
        assert "is a Git LFS pointer" in answer["message"] or "are a Git LFS pointer" in answer["message"], (
            answer
        )
        return
    assert answer["build"] in ("ok", "SessionBuildError"), f"not a SessionBuildError: {answer}"
    if answer["build"] == "SessionBuildError":
        assert answer["label"], answer
        assert answer["label"] in answer["message"], answer
    if answer.get("run") is not None:
        assert answer["run"] != "died", answer


def _zoo_model() -> onnx.ModelProto:
    """A small model with a variety of ops, initializers and attributes for mutations to hit."""
    rng = np.random.default_rng(0)

    def init(name: str, array: np.ndarray) -> TensorProto:
        return numpy_helper.from_array(array, name)

    inits = [
        init("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32)),
        init("b", np.zeros(4, np.float32)),
        init("shape", np.array([1, -1], np.int64)),
        init("fc", rng.standard_normal((64, 10)).astype(np.float32)),
        init("emb", rng.standard_normal((100, 4)).astype(np.float32)),  # synthetic ids are in [0, 100)
        init("starts", np.array([0], np.int64)),
        init("ends", np.array([3], np.int64)),
        init("cshape", np.array([4, 2], np.int64)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
        helper.make_node("Reshape", ["p", "shape"], ["flat"], name="reshape"),
        helper.make_node("Gemm", ["flat", "fc"], ["logits"], name="gemm"),
        helper.make_node("Softmax", ["logits"], ["y"], axis=1, name="softmax"),
        helper.make_node("Gather", ["emb", "ids"], ["e"], axis=0, name="gather"),
        helper.make_node("ReduceMean", ["e"], ["m"], axes=[0], keepdims=0, name="mean"),
        helper.make_node("Slice", ["m", "starts", "ends"], ["s"], name="slice"),
        helper.make_node("Transpose", ["s"], ["t"], perm=[1, 0], name="transpose"),
        helper.make_node("ConstantOfShape", ["cshape"], ["k"], name="cos",
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        helper.make_node("Concat", ["t", "k"], ["z"], axis=1, name="concat"),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "zoo",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, [1, "n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
        inits,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


BASE_MODELS = {"mlp": mlp_model(layers=2, width=8), "zoo": _zoo_model()}
MODEL_BYTES = st.sampled_from(sorted(BASE_MODELS)).map(lambda n: BASE_MODELS[n].SerializeToString())

INT64 = st.one_of(st.integers(-2, 70), st.sampled_from([2**31, 2**40, 2**62, 2**63 - 1, -(2**63)]))
INT32 = st.one_of(st.integers(-2, 40), st.sampled_from([2**31 - 1, -(2**31), 1000]))
OPS = st.sampled_from(["Relu", "MatMul", "Conv", "Reshape", "Gather", "Concat", "Slice", "Softmax", "Identity",
                       "Add", "Expand", "Tile", "Resize", "Loop", "If", "Scan", "NonZero", "TopK", "Einsum",
                       "ConstantOfShape", "Range", "Pad", "Split", "Unsqueeze", "Cast", "Bogus", ""])  # fmt: skip


@st.composite
def proto_mutated(draw: st.DrawFn) -> bytes:
    """A valid model with one to three fields of its ModelProto changed: dims, types, ops, attributes."""
    model = onnx.ModelProto()
    model.CopyFrom(BASE_MODELS[draw(st.sampled_from(sorted(BASE_MODELS)))])
    graph = model.graph
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["dims", "data_type", "raw_data", "op_type", "domain", "input", "attribute",
                                     "drop_node", "opset", "ir_version", "value_info", "drop_output"]))  # fmt: skip
        if kind in ("dims", "data_type", "raw_data") and graph.initializer:
            tensor = graph.initializer[draw(st.integers(0, len(graph.initializer) - 1))]
            if kind == "dims":
                del tensor.dims[:]
                tensor.dims.extend(draw(st.lists(INT64, max_size=4)))
            elif kind == "data_type":
                tensor.data_type = draw(INT32)
            else:
                raw = tensor.raw_data
                tensor.raw_data = raw[: draw(st.integers(0, len(raw)))] + draw(st.binary(max_size=8))
        elif kind in ("op_type", "domain", "input", "attribute", "drop_node") and graph.node:
            index = draw(st.integers(0, len(graph.node) - 1))
            node = graph.node[index]
            if kind == "op_type":
                node.op_type = draw(OPS)
            elif kind == "domain":
                node.domain = draw(st.sampled_from(["ai.onnx.ml", "com.microsoft", "bogus", "ai.onnx"]))
            elif kind == "input" and node.input:
                names = [n.input[0] for n in graph.node if n.input] + ["", "nope", node.output[0]]
                node.input[draw(st.integers(0, len(node.input) - 1))] = draw(st.sampled_from(names))
            elif kind == "attribute" and node.attribute:
                attribute = node.attribute[draw(st.integers(0, len(node.attribute) - 1))]
                attribute.i = draw(INT64)
                del attribute.ints[:]
                attribute.ints.extend(draw(st.lists(INT64, max_size=5)))
                attribute.f = draw(st.floats(width=32))
                attribute.type = draw(st.sampled_from([0, 1, 2, 3, 4, 6, 7, 11]))
            elif kind == "drop_node":
                del graph.node[index]
        elif kind == "opset":
            model.opset_import[0].version = draw(
                st.sampled_from([1, 6, 7, 11, 12, 17, 21, 22, 23, 24, 99, 0, -1])
            )
        elif kind == "ir_version":
            model.ir_version = draw(st.sampled_from([0, 1, 3, 4, 7, 10, 11, 12, 99, -1]))
        elif kind == "value_info" and graph.input:
            value = graph.input[draw(st.integers(0, len(graph.input) - 1))]
            value.type.tensor_type.elem_type = draw(INT32)
            for dim in value.type.tensor_type.shape.dim:
                if draw(st.booleans()):
                    dim.dim_value = draw(INT64)
        elif kind == "drop_output" and graph.output:
            del graph.output[draw(st.integers(0, len(graph.output) - 1))]
    return model.SerializeToString()


def _has_non_utf8_string(message: Any) -> bool:
    """A string field anywhere in the proto whose bytes are not UTF-8 (upb hands those back as bytes)."""
    for field, value in message.ListFields():
        repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
        values = value if repeated else [value]
        if field.type == field.TYPE_STRING and any(isinstance(v, bytes) for v in values):
            return True
        if field.type == field.TYPE_MESSAGE and any(_has_non_utf8_string(v) for v in values):
            return True
    return False


def _known_bug_model_bytes(data: bytes) -> bool:
    """Models whose names or dim names are not UTF-8: ORT builds them, then reading them back in
    Python raises UnicodeDecodeError (test_regression_model_non_utf8_*)."""
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception:  # not a protobuf at all (DecodeError and friends): not this bug
        return False
    return _has_non_utf8_string(model)


@given(data=st.binary(max_size=2048).filter(not_known(_known_bug_model_bytes)), by_path=st.booleans())
# Found by the long profile: bytes that begin like a Git LFS pointer are refused as one.
@example(data=b"version https://git-lfs.github.com/spec/", by_path=False)
@example(data=b"version https://git-lfs.github.com/spec/", by_path=True)
@fuzz()
def test_session_from_garbage_bytes(worker: ModelWorker, data: bytes, by_path: bool) -> None:
    tried("SessionPool.get (garbage bytes)")
    _assert_clean_build(worker.build(data, by_path=by_path), data)


@given(
    data=byte_mutated(MODEL_BYTES).filter(not_known(_known_bug_model_bytes)),
    by_path=st.booleans(),
    level=st.sampled_from(["all", "disabled"]),
)
@fuzz()
def test_session_from_mutated_model_bytes(
    worker: ModelWorker, data: bytes, by_path: bool, level: str
) -> None:
    tried("SessionPool.get (mutated model bytes)")
    _assert_clean_build(worker.build(data, by_path=by_path, level=level, run=True), data)


@given(data=proto_mutated(), by_path=st.booleans(), level=st.sampled_from(["all", "disabled"]))
@fuzz()
def test_session_from_mutated_model_proto(
    worker: ModelWorker, data: bytes, by_path: bool, level: str
) -> None:
    tried("SessionPool.get (mutated ModelProto)")
    _assert_clean_build(worker.build(data, by_path=by_path, level=level, run=True), data)


def test_worker_builds_the_base_models(worker: ModelWorker) -> None:
    """The unmutated models build and run, so mutations start from something ORT accepts."""
    for name, model in BASE_MODELS.items():
        answer = worker.build(model.SerializeToString(), by_path=False, run=True)
        assert (answer["build"], answer["run"]) == ("ok", "ok"), (name, answer)


# --------------------------------------------------------------------------- regression tests
# The minimal inputs of the bugs fuzzing found. Fixed ones are plain tests. An open one is strict
# xfail on exactly the exception the bug raises, and a ``_known_bug_*`` predicate keeps the fuzz
# strategies away from its inputs: when it is fixed the test XPASSes and fails the run, so remove
# its xfail mark and the predicate.

BASELINE_PATH = Path("baselines/test_x.py.json")


def _baseline_document(**entry_changes: Any) -> str:
    """A valid one-entry schema-1 baseline file (which loads migrated), with entry fields replaced
    (Raw values spliced in)."""
    entry: dict[str, Any] = {
        "variant": "cpu-all",
        "recorded": "2026-11-22",
        "environment": {},
        "latency": {
            "count": 5, "rounds": 1, "min_ms": 1.0, "median_ms": 1.0, "mean_ms": 1.0, "stdev_ms": 0.0,
            "iqr_ms": 0.0, "p90_ms": 1.0, "p95_ms": 1.0, "p99_ms": 1.0, "cv": 0.0, "round_cv": 0.0,
            "throughput_per_s": 1000.0, "round_medians_ms": [1.0],
        },
    }  # fmt: skip
    for key, value in entry_changes.items():
        section, _, field = key.partition("__")
        if field:
            entry[section][field] = value
        else:
            entry[section] = value
    return to_json({"schema": 1, "kind": KIND, "entries": {"test_a[cpu-all]": {"m": entry}}})


def test_regression_baseline_document_itself_parses() -> None:
    """The base document of the regression tests below is valid (so each one tests its one change)."""
    (entry,) = parse(_baseline_document(), path=BASELINE_PATH).values()
    assert stored_latency(entry.figures["m"]) is not None


def test_regression_baseline_int_over_4300_digits() -> None:
    with pytest.raises(BaselineError, match=r"test_x\.py\.json"):
        parse("9" * 4301, path=BASELINE_PATH)


def test_regression_baseline_deep_nesting() -> None:
    with pytest.raises(BaselineError, match=r"test_x\.py\.json"):
        parse("[" * 100_000, path=BASELINE_PATH)


def test_regression_baseline_latency_huge_int() -> None:
    with pytest.raises(BaselineError, match=r"test_x\.py\.json"):
        parse(_baseline_document(latency__min_ms=Raw("1" + "0" * 309)), path=BASELINE_PATH, decoders=DECODERS)


def test_regression_baseline_round_median_huge_int() -> None:
    with pytest.raises(BaselineError, match=r"test_x\.py\.json"):
        parse(
            _baseline_document(latency__round_medians_ms=[Raw("1" + "0" * 309)]),
            path=BASELINE_PATH,
            decoders=DECODERS,
        )


ACCURACY = {
    "inputs_sha256": "cd" * 32,
    "file": "t.outputs/a@m.npz",
    "outputs": [{"name": "y", "dtype": "float32", "shape": [2], "stored": "full", "sha256": "ab" * 32,
                 "mean": 0.0, "std": 0.0, "min": 0.0, "max": 0.0}],
}  # fmt: skip


def test_regression_baseline_accuracy_huge_int() -> None:
    accuracy = json.loads(json.dumps(ACCURACY))
    accuracy["outputs"][0]["mean"] = 10**309
    with pytest.raises(BaselineError, match=r"test_x\.py\.json"):
        parse(_baseline_document(accuracy=accuracy), path=BASELINE_PATH)


@pytest.mark.parametrize(
    "profile", [{"runs": 1, "ops": None, "nodes": {}}, {"runs": 1, "ops": {}, "nodes": [1]}]
)
def test_regression_baseline_profile_not_an_object(profile: dict[str, Any]) -> None:
    with pytest.raises(BaselineError, match=r"test_x\.py\.json"):
        parse(_baseline_document(profile=profile), path=BASELINE_PATH, decoders=DECODERS)


@pytest.mark.parametrize(
    "profile",
    [
        {"runs": Raw("Infinity"), "ops": {}, "nodes": {}},
        {"runs": 1, "ops": {"Relu": {"us": 1.0, "nodes": Raw("1e999")}}, "nodes": {}},
        {"runs": 1, "ops": {"Relu": {"us": Raw("1" * 400), "nodes": 1}}, "nodes": {}},
    ],
    ids=["runs-inf", "nodes-inf", "us-huge"],
)
def test_regression_baseline_profile_overflow(profile: dict[str, Any]) -> None:
    with pytest.raises(BaselineError, match=r"test_x\.py\.json"):
        parse(_baseline_document(profile=profile), path=BASELINE_PATH, decoders=DECODERS)


# Non-finite or too deeply nested environments: tests/unit/store/test_baselines.py (same inputs, exact messages).


def test_regression_baseline_profile_nan_cannot_be_written_back() -> None:
    profile = {"runs": 1, "ops": {"Relu": {"us": Raw("NaN"), "nodes": 1}}, "nodes": {}}
    with pytest.raises(BaselineError, match=r"test_x\.py\.json.* is damaged \(profile"):
        parse(_baseline_document(profile=profile), path=BASELINE_PATH, decoders=DECODERS)


def test_regression_baseline_schema_2_figures_nan_cannot_be_written_back() -> None:
    figures = {
        "recorded": "2026-11-22",
        "profile": {"runs": 1, "ops": {"Relu": {"us": Raw("NaN"), "nodes": 1}}, "nodes": {}},
    }
    entry = {"variant": "cpu-all", "recorded": "2026-11-22", "recipe": {}, "figures": {"m": figures}}
    text = to_json({"schema": SCHEMA, "kind": KIND, "entries": {"test_a[cpu-all]": entry}})
    with pytest.raises(
        BaselineError, match=r"test_x\.py\.json.*, figures of machine 'm' are damaged \(profile"
    ):
        parse(text, path=BASELINE_PATH)


def test_regression_show_surrogate(tmp_path: Path) -> None:
    (tmp_path / "test_x.py.json").write_text(_baseline_document().replace("test_a[cpu-all]", "test_\\udc80"))
    code, out, _ = _run_cli(["show", "--baseline-dir", str(tmp_path)])
    assert code == 0
    assert "test_" in out


def test_regression_trace_int_over_4300_digits() -> None:
    with pytest.raises(TraceError, match=r"trace\.json"):
        parse_trace("[" + "9" * 4301 + "]", source="trace.json")


def test_regression_trace_deep_nesting() -> None:
    with pytest.raises(TraceError, match=r"trace\.json"):
        parse_trace("[" * 100_000, source="trace.json")


@pytest.mark.parametrize(
    "ts", ["Infinity", "1e999", '"inf"', "1" + "0" * 309], ids=["Infinity", "1e999", "inf-text", "huge-int"]
)
def test_regression_trace_infinite_number(ts: str) -> None:
    text = '[{"cat": "Node", "name": "n", "ts": %s, "dur": 0}]' % ts  # noqa: UP031
    with pytest.raises(TraceError, match=r"trace\.json"):
        parse_trace(text, source="trace.json")


def test_regression_trace_summary_overflow() -> None:
    # Durations past 2**53 us (285 years) are refused when the trace is read, naming the file.
    with pytest.raises(TraceError, match=r"'trace\.json'"):
        parse_trace(
            '[{"cat": "Kernel", "name": "k", "ts": 0, "dur": 1e308}, {"cat": "Kernel", "name": "k", "ts": 1, "dur": 1e308}]',
            source="trace.json",
        )


def test_regression_trace_cli_surrogate(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text('[{"cat": "Node", "name": "\\udc80", "ts": 0, "dur": 1, "args": {"op_name": "Relu"}}]')
    code, out, _ = _run_cli(["profile", str(path)])
    assert code == 0
    assert "Relu" in out


@pytest.mark.parametrize(
    "call",
    [
        lambda: parse_dims("batch=" + "9" * 4301, source="--opt"),
        lambda: parse_seed("9" * 4301, source="--opt"),
        lambda: parse_assignments(["intra_op_threads=" + "9" * 4301], source="--opt"),
    ],
    ids=["parse_dims", "parse_seed", "parse_assignments"],
)
def test_regression_option_huge_whole_number_text(call: Callable[[], Any]) -> None:
    with pytest.raises(UsageError, match="--opt"):
        call()


@pytest.mark.parametrize(
    "call",
    [
        lambda: parse_threshold(10**5000, source="--opt"),
        lambda: parse_int_range(10**5000, source="--opt"),
        lambda: parse_seconds(10**5000, source="--opt"),
        lambda: parse_seed(10**5000, source="--opt"),
        lambda: parse_dims({"batch": 10**5000}, source="--opt"),
    ],
    ids=["parse_threshold", "parse_int_range", "parse_seconds", "parse_seed", "parse_dims"],
)
def test_regression_option_huge_int_value(call: Callable[[], Any]) -> None:
    with pytest.raises(UsageError, match="--opt"):
        call()


def test_regression_option_huge_tolerance() -> None:
    with pytest.raises(UsageError, match="ort_thresholds"):
        parse_tolerance_values({"atol": 10**309}, source="ort_thresholds")


@pytest.mark.parametrize("line", ["intra_op_threads=2147483648", "inter_op_threads=2147483648"])
def test_regression_settings_thread_count_past_int32(line: str) -> None:
    # Refused where it is parsed, as a usage error naming the option, before ORT sees it.
    with pytest.raises(UsageError, match="--opt"):
        SessionSettings().with_overrides(parse_assignments([line], source="--opt"), source="--opt")


@pytest.mark.parametrize("line", ["config.session.x=\udc80", "intra_op_thread_affinities=\udc80"])
def test_regression_settings_surrogate(line: str) -> None:
    # Refused where it is parsed, as a usage error naming the option, before ORT sees it.
    with pytest.raises(UsageError, match="--opt"):
        SessionSettings().with_overrides(parse_assignments([line], source="--opt"), source="--opt")


@pytest.mark.parametrize("line", ["config.=1", "config." + "k" * 1025 + "=1"], ids=["empty", "too-long"])
def test_regression_settings_config_key(line: str) -> None:
    # Refused where it is parsed, as a usage error naming the option, before ORT sees it.
    with pytest.raises(UsageError, match="--opt"):
        SessionSettings().with_overrides(parse_assignments([line], source="--opt"), source="--opt")


@pytest.mark.parametrize("key", DIRECTORY_INI)
def test_regression_ini_dir_nul(key: str) -> None:
    with pytest.raises(UsageError):
        build_config(FakeConfig(Path("/nonexistent/root"), {}, {key: "a\x00b"}))


def test_regression_model_path_too_long(tmp_path: Path) -> None:
    with pytest.raises(OrtperfError, match=r"test_x\.py"):
        ModelResolver(tmp_path).resolve("m" * 256, test_dir=tmp_path, origin="test_x.py")


def test_regression_model_non_utf8_dim_name() -> None:
    data = (
        mlp_model().SerializeToString().replace(b"batch", b"\xffatch")
    )  # the minimal byte flip the fuzzer found
    session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    with pytest.raises(InputsError):
        specs_from_session(session)


def test_regression_model_non_utf8_node_name() -> None:
    data = mlp_model().SerializeToString().replace(b"matmul0", b"\xffatmul0")
    model = ModelResolver(Path()).resolve(data, test_dir=Path(), origin="test_x.py")
    pool = SessionPool(onnxruntime, ProviderProber(onnxruntime.get_available_providers(), "x"))
    variant = Variant(resolve_provider("cpu", source="x"), OptLevel.ALL)
    result = _outcome(lambda: pool.get(model, variant, SessionSettings()), SessionBuildError)
    # ORT hands back node names undecoded only through the placement API (not in 1.23 and older).
    if hasattr(onnxruntime.InferenceSession, "get_provider_graph_assignment_info"):
        assert isinstance(result, SessionBuildError)
        assert model.label in str(result)
    else:
        assert not isinstance(result, SessionBuildError)


def test_regression_tolerance_int_over_4300_digits() -> None:
    with pytest.raises(UsageError, match="ort_thresholds"):
        parse_tolerance_values({"atol": 10**4301}, source="ort_thresholds")


@pytest.mark.parametrize(
    "settings",
    [
        {"config_entries": {"0": 10**4301}},
        {"config_entries": {10**4301: "0"}},
        {"provider_options": {"cpu": {"k": 10**4301}}},
        {"provider_options": {10**4301: {}}},
    ],
    ids=["config-value", "config-key", "provider-option", "provider"],
)
def test_regression_settings_marker_int_over_4300_digits(settings: dict[str, Any]) -> None:
    # Found by the long profile: str() of the value raised a raw ValueError in ort/session_settings.py.
    with pytest.raises(UsageError, match=r"^ort_settings marker of test_x\.py::t: .*far too large"):
        settings_for(SessionSettings(), [((), settings)], origin="ort_settings marker of test_x.py::t")


# --------------------------------------------------------------------------- model tables

TOML_TABLES = st.builds(
    lambda glob, key, value: f'[tool.ortperf.models."{glob}"]\n{key} = {value}\n',
    st.sampled_from(["*.onnx", "models/*", "**", "m.onnx", "[", ""]) | st.text(max_size=6),
    st.sampled_from(["dims", "shapes", "seed", "skip", "thresholds", "batch", "x y"]) | st.text(max_size=5),
    st.sampled_from(["1", '"a"', "{batch = 2}", "{x = [1, 3]}", "[1, 2]", "true", "{", "inf"])
    | st.text(max_size=6),
)


@given(text=TOML_TABLES | st.text(max_size=200))
@fuzz()
def test_model_tables_from_any_pyproject(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    """Any pyproject.toml: tables or problems naming the file, never an exception."""
    tried("store.model_tables.read_tables")
    root = tmp_path_factory.mktemp("tables")
    (root / "pyproject.toml").write_text(text, encoding="utf-8", errors="surrogateescape")
    tables = read_tables(root / "pyproject.toml", [], rootdir=root)
    found = settings_for_model(root / "m.onnx", tables)
    assert all(problem.startswith("pyproject.toml") for problem in found.problems)
