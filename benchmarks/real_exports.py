"""A changed real export: what one ``pytest`` process costs and decides, against pytest-benchmark, on
models written by real converters, and where the plugin's time goes (issue 48).

Question: on models exported by ``torch.onnx.export`` (a transformers ``BertModel``, a Conv1d stack, a
LayerNorm-heavy MLP, an attention stack) and by onnxmltools (a LightGBM classifier), when the file is
unchanged, exported again, or grown by +5%, +10% or +20% of its work (more layers or trees), what
does each whole ``pytest`` process decide and how long does it take, for this plugin and for
pytest-benchmark's comparison side by side in one run? And inside the plugin's process, where do the
seconds go?

Method: the same as ``benchmarks/changed_model.py`` (whose helpers this reuses): per family a
throwaway git repository holds ``models/model.onnx``, collected without Python (``ortperf_models``,
``ortperf_checks = latency``, level ``all``: one item), its ``--ortperf-update`` baselines committed.
Beside it a pytest-benchmark test times the same file on an onnxruntime session (one thread,
``all``, the same kind of inputs) against a run saved on the base model
(``--benchmark-compare-fail=median:10%``). Trials run in shuffled order, each a fresh ``python -m
pytest`` process timed around ``subprocess.run``; the model file is restored after each. The plugin's
trials keep the JSON report's latency record (verdict, ``seconds`` by phase) and the ``gate time:``
line of the terminal summary.

Conditions: ``unchanged`` (the committed file), ``re-export`` (the converter run again on the same
model, then ``tests/models.py: reexported``: other bytes and node names, the same graph), ``new
weights`` (every float initializer scaled by 1.001: the same work under another optimized graph's
digest, so measured side by side, an A/A of the rule across processes; :func:`new_weights`), ``+5%``,
``+10%``, ``+20%`` (the model rebuilt with more layers or trees; every model is built at the start
of a family's run, from fixed seeds, never from a committed file).

Families (units of work: base -> +5/+10/+20%):

- ``bert``: transformers ``BertModel`` (hidden 64, 4 heads, FFN 256, sequence 128, batch 1),
  layers 20 -> 21/22/24, exported with ``torch.onnx.export(dynamo=False)``, opset 17, inputs
  ``input_ids`` in [0, 1000) and ``attention_mask`` in [0, 2);
- ``resnet``: a torchvision ``ResNet`` of BasicBlocks (random init, 100 classes) on a [1, 3, 96, 96]
  image, blocks per stage (4, 4, 4, 4) -> (4, 4, 5, 4) / (4, 5, 5, 4) / (5, 5, 5, 5) (about +6%, +12%,
  +24% of the work: every stage costs about the same), exported with ``torch.onnx.export(dynamo=False)``;
- ``lightgbm``: a binary ``LGBMClassifier`` (31 leaves, 20 features) trained on a fixed synthetic
  set, converted by ``onnxmltools.convert_lightgbm`` (``zipmap=False``, opset 15) for a batch of
  256; trees 100 -> 105/110/120 (boosting is sequential and seeded, so the first 100 trees of a
  grown model are the base's);
- ``conv1d``: Conv1d(48, 48, 5) + ReLU blocks on a [1, 48, 256] input, blocks 20 -> 21/22/24;
- ``layernorm``: Linear(64, 64) + LayerNorm + GELU blocks on [1, 256, 64], blocks 20 -> 21/22/24;
- ``attention``: ``nn.MultiheadAttention`` (64 wide, 4 heads) + LayerNorm blocks with residuals on
  [1, 128, 64], blocks 12 -> 13/14/15 (+8% for +5%: whole blocks only).

onnxmltools declares the LightGBM ``label`` output ``[1]`` whatever the batch, so onnxruntime logs a
``VerifyOutputSizes`` warning on every run of a batch; the builder declares it ``[256]``, as a user
would, so neither tool times a log line.

Run from the repository root (torch 2.13.0, transformers, onnxmltools and lightgbm installed)::

    python -m benchmarks.real_exports --families bert,lightgbm,conv1d --trials 5 \\
        --out benchmarks/results/real_exports.md --json benchmarks/results/real_exports.json

``--before DIR`` (another checkout, e.g. ``git worktree add DIR COMMIT``): every plugin trial is a pair,
this checkout's process and DIR's back to back in a random order, reported pair by pair. Processes
keep compiled modules (``__pycache__``), as an installed package does, even where the machine sets
``PYTHONDONTWRITEBYTECODE``; ``--no-compiled`` compiles the plugin in every process, as the campaigns
before 2026-11-29 did (0.2-0.4 s a process on the Xeon of ``benchmarks/README.md``).

``--profile FAMILY:CONDITION`` runs one plugin trial of that condition under ``python -m cProfile``
and writes the profile beside ``--out`` (``.prof``) with a table of where the time went inside the
phases. ``--latency FAMILY``: the built models' run times, one thread, nothing else.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import io
import json
import os
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import onnx  # noqa: E402

from benchmarks.changed_model import PHASES, Trial, _count, _range, _verdicts, latency_run, trial_fields  # noqa: E402
from benchmarks.changed_model import pb_trial as changed_pb_trial  # noqa: E402
from benchmarks.conditions import (  # noqa: E402
    Sampler,
    code_state,
    cpu_fields,
    git,
    loadavg,
    other_pytest_processes,
    run_pytest,
)
from tests.models import reexported  # noqa: E402

CONDITIONS = ("unchanged", "re-export", "new weights", "+5%", "+10%", "+20%")
GROWN = ("+5%", "+10%", "+20%")


@dataclass(frozen=True)
class Tools:
    """How the trials' processes run: the plugin's checkout (``tree``; ``before``: another checkout
    whose plugin trials alternate with this one's), and whether Python keeps compiled modules
    (``compiled``, as for an installed package; see ``conditions.run_pytest``)."""

    tree: Path = REPO
    before: Path | None = None
    compiled: bool = True


def pytest(
    where: Path,
    extra: Sequence[str],
    prefix: Sequence[str] = (),
    *,
    tools: Tools = Tools(),
    tree: Path | None = None,
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """One whole ``python [prefix] -m pytest`` process in ``where``, timed (``-m cProfile -o FILE``)."""
    return run_pytest(tree or tools.tree, where, extra, prefix, compiled=tools.compiled)


@dataclass(frozen=True)
class Input:
    """One model input as both tools synthesize it: a float32 standard normal, or integers in
    ``[low, high)``."""

    shape: list[int]
    dtype: str = "float32"
    low: int = 0
    high: int = 0


@dataclass(frozen=True)
class Family:
    """A real export with ``units`` of work: the builder (serialized model), base and grown units."""

    name: str
    build: Callable[[int], bytes]
    base: int
    grown: dict[str, int]
    inputs: dict[str, Input]


def _torch_export(
    module: Any, example: tuple[Any, ...], names: Sequence[str], outputs: Sequence[str]
) -> bytes:
    import torch

    buffer = io.BytesIO()
    module.eval()
    with torch.no_grad():
        torch.onnx.export(
            module, example, buffer, input_names=list(names), output_names=list(outputs),
            opset_version=17, dynamo=False,
        )  # fmt: skip
    return buffer.getvalue()


def bert_model(layers: int) -> bytes:
    """transformers ``BertModel``, ``layers`` layers of width 64, exported by ``torch.onnx.export``."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=1000, hidden_size=64, num_hidden_layers=layers, num_attention_heads=4,
        intermediate_size=256, max_position_embeddings=256, attn_implementation="eager",
    )  # fmt: skip
    bert = BertModel(config)

    class Encoder(torch.nn.Module):
        # transformers 5.x's forward takes its arguments by name
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    ids = torch.randint(0, 1000, (1, 64), dtype=torch.int64)
    mask = torch.ones((1, 64), dtype=torch.int64)
    return _torch_export(Encoder(), (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state"])


def lightgbm_model(trees: int) -> bytes:
    """A binary LightGBM classifier of ``trees`` trees, converted by onnxmltools for a batch of 256."""
    import lightgbm
    import onnxmltools
    from onnxmltools.convert.common.data_types import FloatTensorType

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4000, 20)).astype(np.float32)
    y = (x[:, 0] + 0.5 * x[:, 1] * x[:, 2] - x[:, 3] ** 2 + 0.3 * rng.standard_normal(4000) > 0).astype(int)
    classifier = lightgbm.LGBMClassifier(
        n_estimators=trees, num_leaves=255, learning_rate=0.05, random_state=0, deterministic=True,
        n_jobs=1, verbose=-1, min_child_samples=5,
    )  # fmt: skip
    classifier.fit(x, y)
    model = onnxmltools.convert_lightgbm(
        classifier, initial_types=[("input", FloatTensorType([256, 20]))], target_opset=15, zipmap=False
    )
    for output in model.graph.output:  # declared [1] by the converter: onnxruntime warns every run
        dims = output.type.tensor_type.shape.dim
        if dims:
            dims[0].dim_value = 256
    data: bytes = model.SerializeToString()
    return data


def conv1d_model(blocks: int) -> bytes:
    """``blocks`` Conv1d(48, 48, 5) + ReLU on [1, 48, 256], exported by ``torch.onnx.export``."""
    import torch

    torch.manual_seed(0)
    layers: list[Any] = []
    for _ in range(blocks):
        layers += [torch.nn.Conv1d(64, 64, 5, padding=2), torch.nn.ReLU()]
    return _torch_export(torch.nn.Sequential(*layers), (torch.randn(1, 64, 384),), ["x"], ["y"])


def layernorm_model(blocks: int) -> bytes:
    """``blocks`` Linear(64, 64) + LayerNorm + GELU on [1, 256, 64], exported by ``torch.onnx.export``."""
    import torch

    torch.manual_seed(0)
    layers: list[Any] = []
    for _ in range(blocks):
        layers += [torch.nn.Linear(64, 64), torch.nn.LayerNorm(64), torch.nn.GELU()]
    return _torch_export(torch.nn.Sequential(*layers), (torch.randn(1, 256, 64),), ["x"], ["y"])


def attention_model(blocks: int) -> bytes:
    """``blocks`` self-attention blocks (64 wide, 4 heads, softmax(QK^T / 4) V, a residual and LayerNorm)
    on [1, 128, 64], exported by ``torch.onnx.export``. Written out rather than ``nn.MultiheadAttention``,
    whose inference fast path torch cannot export."""
    import torch

    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = torch.nn.Linear(64, 192)
            self.out = torch.nn.Linear(64, 64)
            self.norm = torch.nn.LayerNorm(64)

        def forward(self, x: Any) -> Any:
            q, k, v = self.qkv(x).reshape(1, 128, 3, 4, 16).permute(2, 0, 3, 1, 4)
            weights = torch.softmax(q @ k.transpose(-1, -2) / 4.0, dim=-1)
            attended = (weights @ v).transpose(1, 2).reshape(1, 128, 64)
            return self.norm(x + self.out(attended))

    stack = torch.nn.Sequential(*[Block() for _ in range(blocks)])
    return _torch_export(stack, (torch.randn(1, 128, 64),), ["x"], ["y"])


# The vision family's ResNet stages (BasicBlocks per stage) by how much work was added: every stage
# of a ResNet costs about the same, so each block about 1/17 of the whole at 4 a stage.
RESNET_STAGES = {0: (4, 4, 4, 4), 1: (4, 4, 5, 4), 2: (4, 5, 5, 4), 4: (5, 5, 5, 5)}


def resnet_model(extra_blocks: int) -> bytes:
    """A torchvision ``ResNet`` of BasicBlocks, random init, 4 a stage plus ``extra_blocks``
    (:data:`RESNET_STAGES`), on a [1, 3, 96, 96] image, exported by ``torch.onnx.export``."""
    import torch
    from torchvision.models.resnet import BasicBlock, ResNet

    torch.manual_seed(0)
    net = ResNet(BasicBlock, list(RESNET_STAGES[extra_blocks]), num_classes=100)
    return _torch_export(net, (torch.randn(1, 3, 96, 96),), ["pixel_values"], ["logits"])


FAMILIES = {
    "resnet": Family(
        "resnet", resnet_model, 0, {"+5%": 1, "+10%": 2, "+20%": 4}, {"pixel_values": Input([1, 3, 96, 96])}
    ),
    "bert": Family(
        "bert", bert_model, 20, {"+5%": 21, "+10%": 22, "+20%": 24},
        {"input_ids": Input([1, 64], "int64", 0, 1000), "attention_mask": Input([1, 64], "int64", 0, 2)},
    ),
    "lightgbm": Family(
        "lightgbm", lightgbm_model, 100, {"+5%": 105, "+10%": 110, "+20%": 120}, {"input": Input([256, 20])}
    ),
    "conv1d": Family(
        "conv1d", conv1d_model, 20, {"+5%": 21, "+10%": 22, "+20%": 24}, {"x": Input([1, 64, 384])}
    ),
    "layernorm": Family(
        "layernorm", layernorm_model, 20, {"+5%": 21, "+10%": 22, "+20%": 24}, {"x": Input([1, 256, 64])}
    ),
    "attention": Family(
        "attention", attention_model, 12, {"+5%": 13, "+10%": 14, "+20%": 15}, {"x": Input([1, 128, 64])}
    ),
}  # fmt: skip

INI = "[pytest]\nortperf_models = models/*.onnx\nortperf_opt_levels = all\nortperf_checks = latency\n"
PB_TEST = '''"""pytest-benchmark on the model file the plugin's repository holds."""
import json
import pathlib

import numpy as np
import onnxruntime as ort

HERE = pathlib.Path(__file__).parent
MODEL = HERE.parent / "repo" / "models" / "model.onnx"
INPUTS = json.loads((HERE / "inputs.json").read_text())


def feeds():
    rng = np.random.default_rng(0)
    made = {}
    for name, spec in INPUTS.items():
        if spec["dtype"] == "float32":
            made[name] = rng.standard_normal(spec["shape"]).astype(np.float32)
        else:
            made[name] = rng.integers(spec["low"], spec["high"], size=spec["shape"], dtype=spec["dtype"])
    return made


def test_model(benchmark):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(MODEL), options, providers=["CPUExecutionProvider"])
    benchmark(session.run, None, feeds())
'''


@dataclass
class RealTrial(Trial):
    """One timed pytest process, with the plugin's ``gate time:`` line."""

    gate: str = ""
    threshold: float | None = None
    estimate: dict[str, float] = field(default_factory=dict)
    pair: int | None = None  # with --before: the pair of processes (this code, the code before) it is in


def model_table(family: Family) -> str:
    """The ``[tool.ortperf.models]`` table that gives the plugin the integer inputs' ranges."""
    ranges = {name: spec for name, spec in family.inputs.items() if spec.dtype != "float32"}
    if not ranges:
        return ""
    table = ", ".join(f"{name} = [{spec.low}, {spec.high}]" for name, spec in ranges.items())
    return f'[tool.ortperf.models."models/*.onnx"]\nint_range = {{{table}}}\n'


BEFORE = "plugin (before)"  # the tool name of a trial of the --before checkout


def plugin_trial(
    family: Family,
    repo: Path,
    condition: str,
    prefix: Sequence[str] = (),
    *,
    tools: Tools = Tools(),
    before: bool = False,
) -> RealTrial:
    """One plugin process: this checkout's plugin or, with ``before``, the ``--before`` checkout's."""
    tree = tools.before if before and tools.before else tools.tree
    tool = BEFORE if before else "plugin"
    wall, done, record = latency_run(repo, lambda extra: pytest(repo, extra, prefix, tools=tools, tree=tree))
    gate = next((line.strip() for line in done.stdout.splitlines() if "gate time:" in line), "")
    if record is None:
        status = done.stdout[-400:]
        return RealTrial(family.name, tool, condition, wall, "error", status=status, gate=gate)
    comparison = record.get("comparison") or record.get("change") or {}
    estimate = {k: float(v) for k, v in comparison.items() if k in ("ratio", "low", "high") and v is not None}
    processes = record.get("processes") or {}
    if processes.get("count"):  # side by side across measuring processes: how many it measured
        estimate["processes"] = float(processes["count"])
    fields = trial_fields(record, done.stdout)
    return RealTrial(family.name, tool, condition, wall, **fields, gate=gate, estimate=estimate)


def pb_trial(family: Family, pb: Path, condition: str, tools: Tools = Tools()) -> RealTrial:
    trial = changed_pb_trial(family, pb, condition, make=RealTrial, compiled=tools.compiled)
    assert isinstance(trial, RealTrial)
    return trial


@dataclass
class Workspace:
    """A family's throwaway repository (baselines committed) and pytest-benchmark's folder beside it."""

    repo: Path
    pb: Path
    models: dict[str, bytes]

    @property
    def model_file(self) -> Path:
        return self.repo / "models" / "model.onnx"

    def put(self, condition: str) -> None:
        if condition != "unchanged":
            self.model_file.write_bytes(self.models[condition])

    def restore(self) -> None:
        git(self.repo, "checkout", "--", "models")


def new_weights(model: onnx.ModelProto, factor: float = 1.001) -> onnx.ModelProto:
    """``model`` with every float initializer scaled by ``factor``: the same graph and the same work
    (no value nears a denormal), other bytes and another optimized-graph digest (it covers the
    weights), so a check measures it side by side with the recorded model, as an A/A. A model
    without float initializers (a tree ensemble: its thresholds are attributes) keeps its digest
    and takes the same-graph route."""
    from onnx import numpy_helper

    changed = onnx.ModelProto()
    changed.CopyFrom(model)
    for index, tensor in enumerate(changed.graph.initializer):
        if tensor.data_type == onnx.TensorProto.FLOAT:
            scaled = (numpy_helper.to_array(tensor) * np.float32(factor)).astype(np.float32)
            changed.graph.initializer[index].CopyFrom(numpy_helper.from_array(scaled, tensor.name))
    return changed


def build_models(family: Family, conditions: Sequence[str], log: list[str]) -> dict[str, bytes]:
    started = time.perf_counter()
    models = {"base": family.build(family.base)}
    if "re-export" in conditions:  # the converter run again, then other names and producer
        again = onnx.load_from_string(family.build(family.base))
        models["re-export"] = reexported(again).SerializeToString()
    if "new weights" in conditions:  # the same graph and work under other weights: side by side A/A
        models["new weights"] = new_weights(onnx.load_from_string(models["base"])).SerializeToString()
    for condition in conditions:
        if condition in family.grown:
            models[condition] = family.build(family.grown[condition])
    log.append(f"{family.name}: {len(models)} models built in {time.perf_counter() - started:.1f} s")
    return models


def workspace(
    family: Family, tmp: Path, conditions: Sequence[str], log: list[str], tools: Tools = Tools()
) -> Workspace:
    repo, pb = tmp / "repo", tmp / "pb"
    (repo / "models").mkdir(parents=True)
    pb.mkdir()
    space = Workspace(repo, pb, build_models(family, conditions, log))
    space.model_file.write_bytes(space.models["base"])
    (repo / "pytest.ini").write_text(INI)
    if model_table(family):
        (repo / "pyproject.toml").write_text(model_table(family))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "model")
    wall, done = pytest(repo, ["--ortperf-update"], tools=tools)
    log.append(f"{family.name}: update {wall:.1f} s: {done.stdout.strip().splitlines()[-1]}")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "baselines")
    (pb / "pytest.ini").write_text("[pytest]\n")
    (pb / "inputs.json").write_text(json.dumps({name: asdict(spec) for name, spec in family.inputs.items()}))
    (pb / "test_pb.py").write_text(PB_TEST)
    wall, _ = pytest(
        pb,
        [
            "-p",
            "no:ortperf",
            "--benchmark-storage=file://" + str(pb / "store"),
            "--benchmark-save=base",
            "test_pb.py",
        ],
        tools=tools,
    )
    log.append(f"{family.name}: pytest-benchmark save {wall:.1f} s")
    return space


def run_family(
    family: Family,
    conditions: Sequence[str],
    trials: int,
    rng: random.Random,
    log: list[str],
    tools: Tools = Tools(),
) -> list[RealTrial]:
    """Every trial of one family in shuffled order; with ``tools.before``, each plugin trial is a
    pair: this checkout's process and the one before's, back to back in a random order."""
    results: list[RealTrial] = []
    with tempfile.TemporaryDirectory(prefix="ortperf-real-") as tmp:
        space = workspace(family, Path(tmp), conditions, log, tools)
        plan = [("plugin", c) for c in conditions]
        plan += [("pytest-benchmark", "A/A")] if "unchanged" in conditions else []
        plan += [("pytest-benchmark", c) for c in conditions if c in family.grown]
        order = [step for step in plan for _ in range(trials)]
        rng.shuffle(order)
        for pair, (tool, condition) in enumerate(order):
            space.put("unchanged" if condition == "A/A" else condition)
            if tool == "plugin":
                sides = [False, True] if tools.before else [False]
                rng.shuffle(sides)
                done = [plugin_trial(family, space.repo, condition, tools=tools, before=b) for b in sides]
                made = [replace(t, pair=pair if tools.before else None) for t in done]
            else:
                made = [pb_trial(family, space.pb, condition, tools)]
            space.restore()
            results += made
            for trial in made:
                line = f"{family.name} {trial.tool} {condition}: {trial.wall_s:.2f} s {trial.verdict} "
                line += f"{trial.status} {trial.change} {trial.gate}"
                log.append(line)
                print(line, file=sys.stderr, flush=True)
    return results


def paired_table(trials: Sequence[RealTrial]) -> list[str]:
    """This checkout's processes against the ``--before`` checkout's, pair by pair: wall and phases."""
    pairs: dict[tuple[str, str, int], dict[str, RealTrial]] = {}
    for t in trials:
        if t.pair is not None:
            pairs.setdefault((t.family, t.condition, t.pair), {})[t.tool] = t
    if not pairs:
        return []
    out = [
        "",
        "## This code against the code before, pair by pair",
        "",
        "Each pair: one process of each, back to back in a random order, on the same model file. Wall "
        "ratio: after / before, median (min-max) over the pairs; then each's median wall, confirming "
        "and explaining seconds, and verdicts (pass / fail / inconclusive).",
        "",
        "| family | condition | pairs | wall after / before | after s | before s | confirming after / "
        "before | explaining after / before | verdicts after | verdicts before |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for family in dict.fromkeys(t.family for t in trials):
        for condition in CONDITIONS:
            both = [
                (p["plugin"], p[BEFORE])
                for (f, c, _), p in sorted(pairs.items())
                if f == family and c == condition and "plugin" in p and BEFORE in p
            ]
            if not both:
                continue
            after, before = [a for a, _ in both], [b for _, b in both]

            def phase(group: Sequence[RealTrial], name: str) -> str:
                return f"{statistics.median(t.seconds.get(name, 0.0) for t in group):.2f}"

            ratios = [a.wall_s / b.wall_s for a, b in both]
            walls = [f"{statistics.median(t.wall_s for t in group):.2f}" for group in (after, before)]
            out.append(
                f"| {family} | {condition} | {len(both)} | {_range(ratios)} | {walls[0]} | {walls[1]} | "
                f"{phase(after, 'confirming')} / {phase(before, 'confirming')} | "
                f"{phase(after, 'explaining')} / {phase(before, 'explaining')} | {_verdicts(after)} | "
                f"{_verdicts(before)} |"
            )
    return out


def report(trials: Sequence[RealTrial], header: Sequence[str]) -> str:
    out = list(header)
    families = list(dict.fromkeys(t.family for t in trials))
    out += [
        "",
        "## Time per pytest process and verdicts",
        "",
        "Wall seconds per whole `python -m pytest` process: median (min-max). Ratio: the plugin's median "
        "over pytest-benchmark's median for the same change (its A/A for unchanged, re-export and new "
        "weights). "
        "Verdicts: pass / fail / inconclusive.",
        "",
        "| family | condition | plugin s | pytest-benchmark s | ratio | plugin verdicts | "
        "pytest-benchmark verdicts | plugin estimates (ratio) | measuring processes | plugin statuses |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for family in families:
        mine = [t for t in trials if t.family == family]
        for condition in CONDITIONS:
            plugin = [t for t in mine if t.tool == "plugin" and t.condition == condition]
            pb_condition = "A/A" if condition in ("unchanged", "re-export", "new weights") else condition
            pb = [t for t in mine if t.tool == "pytest-benchmark" and t.condition == pb_condition]
            if not plugin and not pb:
                continue
            ratio = (
                f"{statistics.median(t.wall_s for t in plugin) / statistics.median(t.wall_s for t in pb):.2f}"
                if plugin and pb else "-"
            )  # fmt: skip
            ratios = [t.estimate["ratio"] for t in plugin if "ratio" in t.estimate]
            estimates = f"{min(ratios):.3f}-{max(ratios):.3f}" if ratios else "-"
            statuses = ", ".join(f"{s} x{n}" for s, n in sorted(_count(t.status for t in plugin).items()))
            counts = [t.estimate["processes"] for t in plugin if "processes" in t.estimate]
            out.append(
                f"| {family} | {condition} | {_range([t.wall_s for t in plugin])} | "
                f"{_range([t.wall_s for t in pb])} ({pb_condition}) | {ratio} | {_verdicts(plugin)} | "
                f"{_verdicts(pb)} | {estimates} | {_range(counts, 0) if counts else '-'} | {statuses} |"
            )
    out += [
        "",
        "## Where the plugin's time went",
        "",
        "The latency record's `seconds` by phase, median over the trials (s); `other`: the process's "
        "wall time less the phases (start-up, collection, reading baselines, the run's end); `builds`: "
        "sessions built in the run (the terminal summary's `sessions:` line).",
        "",
        "| family | condition | wall | " + " | ".join(PHASES) + " | other | builds |",
        "| --- | --- | --- | " + " | ".join("---" for _ in PHASES) + " | --- | --- |",
    ]
    for family in families:
        for condition in CONDITIONS:
            plugin = [
                t for t in trials if t.family == family and t.tool == "plugin" and t.condition == condition
            ]
            if not plugin:
                continue
            cells = [f"{statistics.median(t.seconds.get(p, 0.0) for t in plugin):.2f}" for p in PHASES]
            other = statistics.median(t.wall_s - sum(t.seconds.values()) for t in plugin)
            builds = [t.builds for t in plugin if t.builds is not None]
            out.append(
                f"| {family} | {condition} | {statistics.median(t.wall_s for t in plugin):.2f} | "
                + " | ".join(cells)
                + f" | {other:.2f} | {_range(builds, 0)} |"
            )
    out += paired_table(trials)
    out += ["", "## Every plugin trial's `gate time:` line", ""]
    for t in trials:
        if t.tool in ("plugin", BEFORE):
            which = " (before)" if t.tool == BEFORE else ""
            out.append(
                f"- {t.family} {t.condition}{which} ({t.wall_s:.1f} s, {t.status}): `{t.gate or 'none'}`"
            )
    return "\n".join(out) + "\n"


# What each function of the profile stands for, inside the latency check's phases: (label, file
# suffix, function name). Cumulative seconds of each, summed over its calls; a row's calls may nest
# in another row's (the graph is written while a session is built), so rows do not add up.
PROFILE_ROWS = (
    ("whole process", "", "<module>"),
    ("importing the plugin and the runtime (pytest_configure)", "", "pytest_configure"),
    ("onnxruntime session creation (InferenceSession.__init__)", "onnxruntime_inference_collection.py",
     "__init__"),
    ("  of which the session's C++ build (_create_inference_session)", "onnxruntime_inference_collection.py",
     "_create_inference_session"),
    ("session runs (InferenceSession.run)", "onnxruntime_inference_collection.py", "run"),
    ("ending profiling (end_profiling: writing the trace)", "onnxruntime_inference_collection.py",
     "end_profiling"),
    ("onnx.load / load_model", "onnx/__init__.py", "load_model"),
    ("onnx protobuf parsing (ParseFromString)", "", "ParseFromString"),
    ("protobuf serializing (SerializeToString)", "", "SerializeToString"),
    ("hashing (sha256 update / hexdigest)", "", "<built-in method _hashlib.openssl_sha256>"),
    ("subprocesses (git, LFS, workers: subprocess.run)", "subprocess.py", "run"),
    ("json.loads (trace parsing, reports)", "json/__init__.py", "loads"),
    ("sleeping (time.sleep)", "", "<built-in method time.sleep>"),
    ("thread/lock waits (acquire)", "", "<method 'acquire' of '_thread.lock' objects>"),
)  # fmt: skip


def profile_table(path: Path, package_rows: int = 40) -> str:
    """The rows above, then the plugin's own functions by cumulative time, from a cProfile file."""
    stats = pstats.Stats(str(path))
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    lines = ["| what | calls | cumulative s |", "| --- | --- | --- |"]
    for label, suffix, name in PROFILE_ROWS:
        calls, total = 0, 0.0
        for (file, _, function), (_, ncalls, _, cumulative, _) in raw.items():
            if function == name and file.endswith(suffix):
                if name == "<module>" and file != "<string>" and not file.endswith("runpy.py"):
                    continue
                calls, total = (
                    calls + ncalls,
                    max(total, cumulative) if name == "<module>" else total + cumulative,
                )
        lines.append(f"| {label} | {calls} | {total:.2f} |")
    mine = sorted(
        ((cumulative, ncalls, f"{Path(file).parent.name}/{Path(file).name}:{line} {function}")
         for (file, line, function), (_, ncalls, _, cumulative, _) in raw.items()
         if "pytest_ortperf" in file),
        reverse=True,
    )  # fmt: skip
    lines += [
        "",
        "The package's functions by cumulative seconds (nested: a caller includes its callees):",
        "",
    ]
    lines += ["| function | calls | cumulative s |", "| --- | --- | --- |"]
    lines += [f"| `{where}` | {calls} | {seconds:.2f} |" for seconds, calls, where in mine[:package_rows]]
    return "\n".join(lines) + "\n"


def profile_main(args: argparse.Namespace, log: list[str], tools: Tools) -> int:
    name, _, condition = args.profile.partition(":")
    family = FAMILIES[name]
    out = args.out or Path(f"real_exports_{name}.md")
    prof = out.with_suffix(".prof")
    with tempfile.TemporaryDirectory(prefix="ortperf-real-") as tmp:
        space = workspace(family, Path(tmp), [condition], log, tools)
        space.put(condition)
        cprofile = ("-m", "cProfile", "-o", str(prof))
        trial = plugin_trial(family, space.repo, condition, prefix=cprofile, tools=tools)
        space.put(condition)
        plain = plugin_trial(family, space.repo, condition, tools=tools)
    text = "\n".join(
        [
            f"# One {name} {condition} plugin trial under cProfile",
            "",
            f"- {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}; "
            f"{cpu_fields().get('model name', 'unknown CPU')}, {os.cpu_count()} cores; load {loadavg()}; "
            f"{code_state()}",
            *[f"- {line}" for line in log],
            f"- under cProfile: {trial.wall_s:.1f} s, {trial.status}: `{trial.gate}`",
            f"- the same trial without it: {plain.wall_s:.1f} s, {plain.status}: `{plain.gate}`",
            "",
            profile_table(prof),
        ]
    )
    out.write_text(text)
    print(text)
    return 0


def latency_main(names: Sequence[str]) -> int:
    """Each family's base and grown models: median run time on one thread, ``all``."""
    import onnxruntime as ort

    for name in names:
        family = FAMILIES[name]
        rng = np.random.default_rng(0)
        feeds = {
            n: rng.standard_normal(s.shape).astype(np.float32)
            if s.dtype == "float32" else rng.integers(s.low, s.high, size=s.shape, dtype=s.dtype)
            for n, s in family.inputs.items()
        }  # fmt: skip
        for units in [family.base, *family.grown.values()]:
            options = ort.SessionOptions()
            options.intra_op_num_threads = options.inter_op_num_threads = 1
            session = ort.InferenceSession(family.build(units), options, providers=["CPUExecutionProvider"])
            for _ in range(20):
                session.run(None, feeds)
            times = []
            for _ in range(100):
                started = time.perf_counter()
                session.run(None, feeds)
                times.append(time.perf_counter() - started)
            print(f"{name} {units}: {statistics.median(times) * 1e3:.2f} ms (min {min(times) * 1e3:.2f})")
    return 0


def _commit(tree: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True)
    return done.stdout.strip() or "not a git checkout"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--families", default="bert,lightgbm,conv1d", help=f"of {', '.join(FAMILIES)}")
    parser.add_argument(
        "--conditions", default=",".join(CONDITIONS), help="of " + ", ".join(CONDITIONS).replace("%", "%%")
    )
    parser.add_argument("--trials", type=int, default=5, help="trials per condition and tool")
    parser.add_argument("--seed", type=int, default=48)
    parser.add_argument("--out", type=Path, help="the markdown report (default: stdout)")
    parser.add_argument("--json", type=Path, help="every trial, as JSON (gzip if it ends .gz)")
    parser.add_argument(
        "--merge", default="", help="JSON files of earlier runs, comma separated: report them all"
    )
    parser.add_argument("--profile", default="", help="FAMILY:CONDITION: one plugin trial under cProfile")
    parser.add_argument("--latency", action="store_true", help="print the models' run times and stop")
    parser.add_argument(
        "--before",
        type=Path,
        help="another checkout (e.g. git worktree add DIR COMMIT): its plugin trials "
        "alternate with this one's, pair by pair",
    )
    parser.add_argument(
        "--busy",
        type=int,
        default=0,
        help="busy processes beside the trials (one spinning Python loop each; the load of a shared "
        "runner: 2 on a 2-core machine is one busy process per core)",
    )
    parser.add_argument(
        "--no-compiled",
        action="store_true",
        help="every process compiles the plugin again (the machine's "
        "PYTHONDONTWRITEBYTECODE kept), as the campaigns before 2026-11-29 05:40 UTC did",
    )
    args = parser.parse_args(argv)
    tools = Tools(before=args.before.resolve() if args.before else None, compiled=not args.no_compiled)
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    unknown = [f for f in families if f not in FAMILIES] + [c for c in conditions if c not in CONDITIONS]
    if unknown:
        parser.error(f"unknown family or condition: {', '.join(unknown)}")
    log: list[str] = []
    if args.latency:
        return latency_main(families)
    if args.profile:
        return profile_main(args, log, tools)
    trials: list[RealTrial] = []
    headers: list[str] = []
    for path in [p for p in args.merge.split(",") if p]:
        raw = Path(path).read_bytes()
        saved = json.loads(gzip.decompress(raw) if path.endswith(".gz") else raw)
        trials += [RealTrial(**t) for t in saved["trials"]]
        headers += saved["header"]
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdout=subprocess.DEVNULL)
        for _ in range(args.busy)
    ]
    sampler = Sampler()
    sampler.start()
    rng = random.Random(args.seed)
    began = time.perf_counter()
    mine: list[RealTrial] = []
    try:
        if args.trials > 0:
            for name in families:
                mine += run_family(FAMILIES[name], conditions, args.trials, rng, log, tools)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    cpu = cpu_fields()
    header = [
        f"- run {started}, {(time.perf_counter() - began) / 60:.1f} min; "
        f"{cpu.get('model name', 'unknown CPU')}, "
        f"{os.cpu_count()} cores; load average at the start {loadavg()}; {sampler.stop()}; other pytest "
        f"processes at the end {other_pytest_processes()} (other engineers' test runs shared the machine)",
        f"- load: {args.busy} busy process(es) beside the trials (one spinning Python loop each)",
        f"- code: {code_state()}"
        + (f"; before: {tools.before} ({_commit(tools.before)})" if tools.before else ""),
        "- compiled modules kept (as for an installed package)" if tools.compiled
        else "- every process compiled the plugin again (PYTHONDONTWRITEBYTECODE=1)",
        f"- command: `python -m benchmarks.real_exports {' '.join(sys.argv[1:] if argv is None else argv)}`",
        *[f"- {line}" for line in log if ": update " in line or " save " in line or " built in " in line],
    ] if mine else []  # fmt: skip
    headers += header
    trials += mine
    text = report(trials, ["# A changed real export in pytest-benchmark's time", "", *headers])
    if args.json:
        data = json.dumps({"header": header, "trials": [asdict(t) for t in mine]}, indent=1).encode()
        args.json.write_bytes(gzip.compress(data) if args.json.suffix == ".gz" else data)
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
