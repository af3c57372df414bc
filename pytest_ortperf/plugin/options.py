"""Command-line options and ini keys: one table, and the pure parsers behind them.

``register`` takes pytest's parser duck-typed, so this module does not import
pytest; the console script reuses the same parsers.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ortperf import defaults
from pytest_ortperf.defaults import percent, seconds
from pytest_ortperf.errors import UsageError
from pytest_ortperf.ort.providers import parse_providers, valid_provider_names
from pytest_ortperf.ort.variants import (
    Precision,
    Variant,
    parse_opt_levels,
    parse_precisions,
    parse_variant,
    split_precision,
)
from pytest_ortperf.store.machine import validate_name
from pytest_ortperf.values import (
    SWITCH_WORDS,
    on_off,
    option_text,
    parse_auto_switch,
    parse_size,
    parse_switch,
    parse_threshold,
    safe_repr,
    turned_off,
)

_WHOLE = re.compile(r"[0-9]{1,9}")  # a billion is far past any dim; int() stays cheap


# The markers, as pytest --markers shows them: name(arguments): what it does.
MARKERS = (
    "ort_model(model, *, shapes=None, dims=None, int_range=None, seed=None): the ONNX model a test, "
    "class or module uses: a path (relative to the test file or rootdir) or an onnx.ModelProto; "
    "shapes={'input': [1, 3, 640, 640]} and dims={'height': 640} size its synthetic inputs.",
    "ort_settings(**settings): per-test ORT session settings, e.g. intra_op_threads=2 or "
    "provider_options={'cuda': {'cudnn_conv_algo_search': 'DEFAULT'}}.",
    "ort_thresholds(latency='10%', ab='3%', memory='1%', startup='25%', atol=..., rtol=..., cosine=..., "
    "outputs={...}, graph='exact' or graph={'FusedConv': 3}): per-test limits for ort_perf checks.",
    "ort_ab(reference) or ort_ab(rev='origin/main') or ort_ab(python='/path/to/python'): same-job A/B "
    "for ort_perf latency checks: the model is measured side by side with this reference model (a path "
    "or onnx.ModelProto), with its own file at that git revision, or in the ONNX Runtime of that "
    "interpreter's environment (python= combines with either), and compared by paired ratios instead "
    "of the stored baseline.",
    "ort_expect(faster_than={'cpu-disabled': 1.3}, agreement={'cpu-all': 0.99}): relative contracts "
    "between this variant and others of the same model, measured side by side in the same run "
    "(no baseline): at least that speedup; at least that share of agreeing outputs.",
    "ort_profile: run-level profiling; every run of ort_session (and a few untimed runs of each "
    "ort_perf latency check) writes its own trace, summarized per operator and provider.",
)


UPDATE_MISSING = "--ortperf-update=missing"
UPDATE_MISSING_HELP = (
    "Record only what does not exist: new entries, and figures this hardware lacks under an unchanged "
    "recipe. A changed model, settings, inputs or runtime is judged as in a plain run, never recorded; "
    "every entry it does not record is left byte for byte."
)


def parse_dims(value: str | Mapping[str, Any], *, source: str) -> dict[str, int]:
    """``"batch=1,sequence=128"`` (or a mapping) to ``{"batch": 1, "sequence": 128}``."""
    items: Iterable[tuple[str, Any]]
    if isinstance(value, Mapping):
        items = value.items()
    else:
        items = [
            part.partition("=")[::2] for part in option_text(value, source=source).split(",") if part.strip()
        ]
    dims: dict[str, int] = {}
    for name, size in items:
        text = option_text(size, source=source).strip()
        if not option_text(name, source=source).strip() or not _WHOLE.fullmatch(text) or int(text) < 1:
            raise UsageError(
                f"{source}: expected NAME=N with N >= 1 for each dim, got {name}={safe_repr(size)}."
            )
        dims[str(name).strip()] = int(text)
    return dims


def parse_shapes(value: Any, *, source: str) -> dict[str, tuple[int, ...]]:
    """``{"x": [1, 3, 640, 640]}`` (a mapping of input name to a list of whole sizes >= 1) to
    ``{"x": (1, 3, 640, 640)}``; a scalar input's shape is ``[]``."""
    if not isinstance(value, Mapping) or not value:
        raise UsageError(
            f"{source}: shapes must map input names to shapes, such as shapes={{'x': [1, 3, 640, 640]}}; "
            f"got {safe_repr(value)}."
        )
    shapes: dict[str, tuple[int, ...]] = {}
    for name, shape in value.items():
        fits = isinstance(shape, (list, tuple)) and all(
            isinstance(size, int) and not isinstance(size, bool) and 1 <= size < 10**9 for size in shape
        )
        if not isinstance(name, str) or not name or not fits:
            raise UsageError(
                f"{source}: shapes[{safe_repr(name)}] must be a list of whole sizes >= 1 for an input name, "
                f"such as [1, 3, 640, 640]; got {safe_repr(shape)}."
            )
        shapes[name] = tuple(shape)
    return shapes


def parse_int_range(value: Any, *, source: str) -> tuple[int, int]:
    """``"0:100"``, ``"0,100"`` or ``(0, 100)`` to a half-open ``(low, high)`` with low < high."""
    parts = (
        [option_text(p, source=source) for p in value]
        if isinstance(value, (tuple, list))
        else option_text(value, source=source).replace(",", ":").split(":")
    )
    try:
        low, high = (int(p.strip()) for p in parts)
    except ValueError:
        raise UsageError(
            f"{source}: expected an integer range LOW:HIGH such as 0:1000, got {safe_repr(value)}."
        ) from None
    if low >= high:
        raise UsageError(f"{source}: integer range {low}:{high} is empty (LOW must be < HIGH).")
    return low, high


def parse_seconds(value: Any, *, source: str) -> float:
    try:
        seconds = float(option_text(value, source=source).strip())
    except (ValueError, OverflowError):
        seconds = float("nan")
    if isinstance(value, bool) or not (0 < seconds <= 86400):
        raise UsageError(
            f"{source}: expected a number of seconds above 0 (at most a day), got {safe_repr(value)}."
        )
    return seconds


def parse_seed(value: Any, *, source: str) -> int:
    text = option_text(value, source=source).strip()
    if isinstance(value, bool) or not re.fullmatch(r"[0-9]{1,19}", text.removeprefix("-")):
        raise UsageError(
            f"{source}: seed must be a whole number of at most 19 digits, got {safe_repr(value)}."
        )
    return int(text)


_RANGE = "{}:{}".format(*defaults.INT_RANGE)


@dataclass(frozen=True)
class Source:
    """Where an option's value came from. ``where`` names it in errors: the flag, ``ini KEY``, or
    ``the default of FLAG``. ``directory`` is what a relative path in it means: where pytest ran, for
    the command line; the ini file's folder, for the ini file (the rootdir without one). ``ini_file``:
    that file, where there is one; ``rootdir``: the run's."""

    where: str
    directory: Path = Path()
    rootdir: Path = Path()
    ini_file: Path | None = None

    def __str__(self) -> str:
        return self.where

    @property
    def command_line(self) -> bool:
        return self.where.startswith("--")


Parse = Callable[[Any, Source], Any]  # (value, where it came from) -> the typed value


def _text(value: Any, source: Source) -> str:
    return option_text(value, source=source.where).strip()


def _switch(value: Any, source: Source) -> bool:
    return parse_switch(value, source=source.where)


def _auto_switch(value: Any, source: Source) -> bool | None:
    return parse_auto_switch(value, source=source.where)


def _threshold(value: Any, source: Source) -> float:
    return parse_threshold(value, source=source.where)


def _optional_threshold(value: Any, source: Source) -> float | None:
    """A threshold that can be off (empty, off, none, no, ...)."""
    return None if turned_off(_text(value, source)) else parse_threshold(value, source=source.where)


def _earlier_threshold(value: Any, source: Source) -> float | None:
    """A deprecated spelling's threshold: None where it is not given."""
    return parse_threshold(value, source=source.where) if _text(value, source) else None


def _size(value: Any, source: Source) -> int:
    return parse_size(value, source=source.where)


def _optional_size(value: Any, source: Source) -> int | None:
    return parse_size(value, source=source.where) if _text(value, source) else None


def _seconds(value: Any, source: Source) -> float:
    return parse_seconds(value, source=source.where)


def _choice(*choices: str) -> Parse:
    def parse(value: Any, source: Source) -> str:
        text = _text(value, source).lower()
        if text not in choices:
            raise UsageError(
                f"{source}: expected {', '.join(choices[:-1])} or {choices[-1]}, got {safe_repr(value)}."
            )
        return text

    return parse


def parse_fetch(value: Any, source: Source) -> bool:
    """Whether a recorded runtime is fetched on demand: ``auto`` (or on), else ``never`` (or off)."""
    text = _text(value, source).lower()
    if text in ("auto", "never"):
        return text == "auto"
    switch = on_off(text)
    if switch is None:
        raise UsageError(
            f"{source}: expected auto or never, got {safe_repr(value)} (or a switch: {SWITCH_WORDS})."
        )
    return switch


def _revision(value: Any, source: Source) -> str:
    text = _text(value, source)
    if text.startswith("-"):
        raise UsageError(f"{source}: {text!r} is not a git revision.")
    return text


def _machine(value: Any, source: Source) -> str | None:
    text = _text(value, source)
    return validate_name(text, source=source.where) if text else None


def _reference_variant(value: Any, source: Source) -> Variant | None:
    text = _text(value, source)
    if split_precision(text)[1] is not Precision.FP32:
        raise UsageError(
            f"{source}: the reference variant runs the model under test (fp32); give PROVIDER-LEVEL such as "
            f"cpu-disabled, got {text!r}. Precision variants are compared with it at fp32."
        )
    return parse_variant(text, source=source.where, precision=False)


DEFAULT_CONTRACTS = ("levels", "quantized")
MISSING = defaults.MISSING_CHOICES  # checks/policy.py: Missing


def _contracts(value: Any, source: Source) -> tuple[str, ...]:
    """The default relative contracts, comma separated (``off``: none)."""
    text = option_text(value, source=source.where)
    if turned_off(text):
        return ()
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in DEFAULT_CONTRACTS]
    if unknown:
        raise UsageError(
            f"{source}: unknown contract(s) {', '.join(unknown)}; choose from {', '.join(DEFAULT_CONTRACTS)} "
            "or off."
        )
    return tuple(dict.fromkeys(names))


def _directory(default: str | None) -> Parse:
    """A path relative to where it came from (:attr:`Source.directory`); empty: ``default`` under the
    rootdir, or None where there is no default (the option is off)."""

    def parse(value: Any, source: Source) -> Path | None:
        text = _text(value, source)
        if not text:
            return None if default is None else source.rootdir / default
        try:
            return (source.directory / text).resolve()
        except (OSError, ValueError) as exc:  # a NUL byte, a loop of links
            raise UsageError(f"{source}: {text!r} is not a usable path ({exc}).") from None

    return parse


def python_path(text: str, *, source: str, rootdir: Path) -> str:
    """An interpreter to run a measuring worker with: a path (relative to rootdir) or a command on
    PATH, which must exist; a usage error naming ``source`` otherwise."""
    candidate = Path(text).expanduser()
    if candidate.is_absolute() or any(sep in text for sep in (os.sep, os.altsep) if sep):
        found: str | None = str(rootdir / candidate)  # an absolute path stays as it is
    else:
        found = shutil.which(text)
    if found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
        raise UsageError(
            f"{source}: {text!r} is not a Python interpreter here (no executable file by that name); "
            "'ortperf env create onnxruntime==VERSION' makes one and prints its path."
        )
    return found


def _python(value: Any, source: Source) -> str:
    """``--ortperf-ab-python``: an interpreter (relative to the rootdir), or "" for none."""
    text = _text(value, source)
    return python_path(text, source=source.where, rootdir=source.rootdir) if text else ""


def _names(value: Any, source: Source) -> tuple[str, ...]:
    """A comma-separated list of names, each once, in the order given (``ortperf_checks``: which
    names are kinds, the registry says when the run is configured)."""
    return tuple(dict.fromkeys(name.strip() for name in _text(value, source).split(",") if name.strip()))


@dataclass(frozen=True)
class Layer:
    """The lines one place gave a layered option (:attr:`OptionDef.layered`), and where."""

    lines: tuple[str, ...]
    source: Source


def _lines(value: Any, source: Source) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise UsageError(f"{source}: expected lines, got {safe_repr(value)}.")
    return tuple(option_text(line, source=source.where) for line in value)


def _session_layers(layers: Sequence[Layer], source: Source) -> Any:
    """``ortperf_session_options``: the ini file's assignments, then the command line's over them."""
    from pytest_ortperf.ort.session_settings import SessionSettings, parse_assignments

    settings = SessionSettings()
    for layer in layers:
        where = layer.source.where
        settings = settings.with_overrides(parse_assignments(layer.lines, source=where), source=where)
    return settings


def _tolerance_layers(layers: Sequence[Layer], source: Source) -> Any:
    """``ortperf_tolerances``: the ini file's tolerances, the command line's merged over them."""
    from pytest_ortperf.accuracy.tolerances import ToleranceSpec, parse_tolerance_lines

    spec = ToleranceSpec()
    for layer in layers:
        spec = spec.merged(parse_tolerance_lines(layer.lines, source=layer.source.where))
    return spec


@dataclass(frozen=True)
class ModelGlob:
    """One ``ortperf_models`` glob, the folder it is relative to, and where it was written (for messages)."""

    pattern: str
    base: Path
    source: str  # "--ortperf-models" or "ortperf_models in <ini file>"


def _model_globs(value: Any, source: Source) -> tuple[ModelGlob, ...]:
    """``--ortperf-models`` globs (relative to where pytest runs), else the ini key's, one a line
    (relative to the ini file; ``#`` starts a comment line)."""
    lines = [line.strip() for line in _lines(value, source)]
    said = source.where
    if not source.command_line:
        said = f"ortperf_models in {source.ini_file}" if source.ini_file else "ortperf_models"
    kept = [line for line in lines if line and not line.startswith("#")]
    return tuple(ModelGlob(line, source.directory, said) for line in kept)


@dataclass(frozen=True)
class OptionDef:
    """One setting: ``--flag`` on the command line and ``ini`` key, with its default."""

    flag: str
    ini: str
    help: str
    default: str | list[str]
    metavar: str = "VALUE"
    ini_type: str = "string"
    # Earlier spellings of the flag, still accepted for a release with a warning that names the flag
    # (the flag and its ini key share one name: --ortperf-x-y and ortperf_x_y).
    deprecated: tuple[str, ...] = ()
    # The value's parser, (value, where it came from) -> the typed value: the configuration reads
    # typed values only, each parsed here once.
    parse: Parse = _text
    # A linelist whose command-line lines add to the ini file's instead of replacing them: its parser
    # is handed every place's lines (:class:`Layer`), the ini file's first.
    layered: bool = False

    @property
    def dest(self) -> str:
        return self.ini

    @property
    def switch(self) -> bool:
        """A presence flag on the command line, a yes/no word in the ini file."""
        return self.ini_type == "bool"

    def value(self, given: Any, source: Source | str) -> Any:
        """``given`` (from ``source``) parsed by this row; a layered row's lines as its one layer."""
        origin = source if isinstance(source, Source) else Source(source)
        if self.layered and not (isinstance(given, tuple) and all(isinstance(g, Layer) for g in given)):
            given = (Layer(_lines(given, origin), origin),)
        return self.parse(given, origin)

    @property
    def typed_default(self) -> Any:
        """The default as the configuration reads it."""
        return self.value(self.default, f"the default of {self.flag}")


OPTIONS: tuple[OptionDef, ...] = (
    OptionDef(
        "--ort-providers",
        "ortperf_providers",
        f"Execution providers to test, comma separated (default: {defaults.PROVIDERS}). Names: "
        f"{valid_provider_names()}.",
        defaults.PROVIDERS,
        "LIST",
        parse=lambda value, source: parse_providers(value, source=source.where),
    ),
    OptionDef(
        "--ort-opt-levels",
        "ortperf_opt_levels",
        "Graph optimization levels to test, comma separated: disabled, basic, extended, layout, all "
        "(default: all).",
        "all",
        "LIST",
        parse=lambda value, source: parse_opt_levels(value, source=source.where),
    ),
    OptionDef(
        "--ortperf-models",
        "ortperf_models",
        "Collect model files as tests without Python: a glob of *.onnx files or model-zoo folders "
        "(repeatable; relative to where pytest runs). The ini key takes one glob per line, relative to "
        "the ini file. Each model gets one test per check and variant (models/m.onnx::latency[cpu-all]).",
        [],
        "GLOB",
        "linelist",
        parse=_model_globs,
    ),
    OptionDef(
        "--ort-precisions",
        "ort_precisions",
        "Precisions to test, comma separated: fp32 (the model under test), fp16, int8-dynamic, "
        "int8-static (built from it with onnxruntime's own tools, cached under .ortperf/precision). "
        "Default: fp32.",
        "fp32",
        "LIST",
        parse=lambda value, source: parse_precisions(value, source=source.where),
    ),
    OptionDef(
        "--ortperf-contracts",
        "ortperf_contracts",
        "Relative contracts every test with ort_perf.check() is held to, measured side by side in the "
        "run, comma separated: 'levels' (a level is not slower than the level below it), 'quantized' "
        "(an int8 variant is faster than fp32), or 'off' (default).",
        "off",
        "LIST",
        parse=_contracts,
    ),
    OptionDef(
        "--ortperf-session-options",
        "ortperf_session_options",
        "Session setting KEY=VALUE (repeatable): intra_op_threads, inter_op_threads, execution_mode, "
        "intra_op_spinning, inter_op_spinning, cpu_mem_arena, mem_pattern, denormal_as_zero, "
        "intra_op_thread_affinities; config.KEY=VALUE for an ORT session config entry; "
        "PROVIDER:KEY=VALUE for a provider option (e.g. cuda:cudnn_conv_algo_search=DEFAULT).",
        [],
        "KEY=VALUE",
        "linelist",
        deprecated=("--ortperf-session-option",),
        layered=True,
        parse=_session_layers,
    ),
    OptionDef(
        "--ortperf-dims",
        "ortperf_dims",
        "Sizes for named symbolic input dims in synthetic feeds, e.g. batch=1,sequence=128, for every "
        "model (a leading batch dim is 1 unless sized; any other dim that nothing sizes is an error).",
        "",
        "NAME=N,...",
        parse=lambda value, source: parse_dims(value, source=source.where),
    ),
    OptionDef(
        "--ortperf-int-range",
        "ortperf_int_range",
        f"Half-open range LOW:HIGH of synthetic integer inputs such as token ids (default: {_RANGE}).",
        _RANGE,
        "LOW:HIGH",
        parse=lambda value, source: parse_int_range(value, source=source.where),
    ),
    OptionDef(
        "--ortperf-seed",
        "ortperf_seed",
        f"Seed of synthetic feeds (default: {defaults.SEED}).",
        str(defaults.SEED),
        "N",
        parse=lambda value, source: parse_seed(value, source=source.where),
    ),
    OptionDef(
        "--ortperf-update",
        "ortperf_update",
        "Record or refresh the latency baselines of the selected tests (they pass). "
        "Nothing is ever written without this flag.",
        "false",
        ini_type="bool",
        parse=_switch,
    ),
    OptionDef(
        "--ortperf-baseline-dir",
        "ortperf_baseline_dir",
        "Directory of baseline files (default: baselines/ at rootdir; an ini value is relative "
        "to the ini file).",
        "",
        "DIR",
        parse=_directory(defaults.BASELINE_DIR),
    ),
    OptionDef(
        "--ortperf-model-cache",
        "ortperf_model_cache",
        "Directory where every measured model is kept by its sha256, so that a check of a changed model "
        "can rebuild the recorded one when git does not keep it (persist it between CI runs). "
        "Default: off.",
        "",
        "DIR",
        parse=_directory(None),
    ),
    OptionDef(
        "--ortperf-machine",
        "ortperf_machine",
        "Machine identity for baselines (default: $ORTPERF_MACHINE, else derived from the "
        "hardware, e.g. linux-x86_64-amd-epyc-2c). Name CI runner classes with it.",
        "",
        "NAME",
        parse=_machine,
    ),
    OptionDef(
        "--ortperf-latency-threshold",
        "ortperf_latency_threshold",
        "The latency change that matters: the one threshold of every latency route (side by side "
        "with the recorded model, --ortperf-ab, stored figures, check_threads). A slowdown beyond it "
        "fails when the route's evidence shows it; a noisier route needs more evidence (stored "
        "figures: their interval and a second measurement) "
        f"(default: {percent(defaults.LATENCY_THRESHOLD)}).",
        percent(defaults.LATENCY_THRESHOLD),
        "PCT",
        parse=_threshold,
    ),
    OptionDef(
        "--ortperf-checks",
        "ortperf_checks",
        "What ort_perf.check() runs, comma separated: the names of registered check kinds (built in "
        "or a plugin's; an unknown name lists them) (default: the kinds declared default: "
        "latency,accuracy,graph). check(memory=True, startup=True) adds others for one test.",
        "",
        "LIST",
        parse=_names,
    ),
    OptionDef(
        "--ortperf-drift-threshold",
        "ortperf_drift_threshold",
        "When nothing the repository controls changed since the baseline (model, session settings, "
        "inputs, onnxruntime, providers, hardware), the check passes after a short look and shows how far "
        "the machine drifted from the recorded figures. With this threshold (e.g. 20%), a drift beyond it "
        "fails the check: for a machine you keep steady. Default: off.",
        "",
        "PCT",
        parse=_optional_threshold,
    ),
    OptionDef(
        "--ortperf-canary",
        "ortperf_canary",
        "on: on the CPU provider, follow every measured round with a short round of a fixed "
        "machine-speed canary workload and compare latencies relative to it; off: absolute "
        "latencies (default: on).",
        "on",
        "on|off",
        parse=_switch,
    ),
    OptionDef(
        "--ortperf-timing",
        "ortperf_timing",
        "off: a functional-only run: sessions are built and run and accuracy checks compare outputs, but "
        "nothing is timed: a test's check_latency() or check_startup() skips it (naming this option) and "
        "check() runs its untimed checks only (accuracy, memory). Not with --ortperf-update, which "
        "records latency. on: latency checks run (default: on).",
        "on",
        "on|off",
        parse=_switch,
    ),
    OptionDef(
        "--ortperf-ab",
        "ortperf_ab",
        "Same-job A/B: compare each model with the same file at this git revision (e.g. origin/main; "
        "auto: the merge-base with the pull request's target branch, from the CI's variables, else "
        "origin/HEAD), both measured side by side in interleaved rounds, instead of with the stored "
        "baseline.",
        "",
        "REV",
        parse=_revision,
    ),
    OptionDef(
        "--ortperf-ab-python",
        "ortperf_ab_python",
        "Same-job A/B across ONNX Runtime versions: the reference side runs in this Python "
        "interpreter's environment (e.g. one made by 'ortperf env create onnxruntime==1.31.1'), the "
        "current side in this one, both in measuring worker processes; the same model unless "
        "--ortperf-ab or ort_ab names a reference. Outputs of the two runtimes are compared too.",
        "",
        "PATH",
        parse=_python,
    ),
    OptionDef(
        "--ortperf-fetch-runtime",
        "ortperf_fetch_runtime",
        "auto: when a baseline recorded another onnxruntime than this one and no environment here has "
        "it (--ortperf-ab-python, an 'ortperf env' of the repository), pip installs the recorded wheel "
        "and version into the repository's .ortperf/envs once, and the checks are measured side by side "
        "across the two runtimes; never: no install (an environment already there is still used), "
        "those checks fall back to the stored figures of this hardware, saying why (default: auto).",
        "auto",
        "auto|never",
        parse=parse_fetch,
    ),
    OptionDef(
        "--ortperf-progress",
        "ortperf_progress",
        "Show what a long latency check is doing (which test, which side, rounds so far) while it runs: "
        "auto shows it on a terminal, not under -q and not when the CI environment variable is set; on "
        "shows it anyway (a line every few seconds in a log); off never (default: auto). xdist workers "
        "never show it.",
        "auto",
        "auto|on|off",
        parse=_auto_switch,
    ),
    OptionDef(
        "--ortperf-ab-outputs",
        "ortperf_ab_outputs",
        "check: in A/B mode, outputs that differ from the reference model's fail the test; report: "
        "they are reported and pass (for pull requests that change outputs on purpose) "
        "(default: check).",
        "check",
        "check|report",
        parse=_choice("check", "report"),
    ),
    OptionDef(
        "--ortperf-ab-threshold",
        "ortperf_ab_threshold",
        "Deprecated: the one latency threshold is --ortperf-latency-threshold (ortperf_latency_threshold); "
        "this sets it, with a warning, where that is not given.",
        "",
        "PCT",
        parse=_earlier_threshold,
    ),
    OptionDef(
        "--ortperf-ab-budget",
        "ortperf_ab_budget",
        "Seconds of timed runs per A/B check, both models together, after warmup "
        f"(default: {seconds(defaults.AB_BUDGET_S)}).",
        seconds(defaults.AB_BUDGET_S),
        "SECONDS",
        parse=_seconds,
    ),
    OptionDef(
        "--ortperf-budget",
        "ortperf_budget",
        "Seconds per latency measurement, after warmup: many short rounds spread over it, so the "
        f"machine's speed states are sampled rather than one burst (default: {seconds(defaults.BUDGET_S)}).",
        seconds(defaults.BUDGET_S),
        "SECONDS",
        parse=_seconds,
    ),
    OptionDef(
        "--ortperf-missing",
        "ortperf_missing",
        "What a latency or accuracy check without a baseline for this machine does: fail (with the command "
        f"that records it), skip, or pass (measured and reported). Default: {defaults.MISSING}.",
        defaults.MISSING,
        "|".join(MISSING),
        parse=_choice(*MISSING),
    ),
    OptionDef(
        "--ortperf-fail-on-improvement",
        "ortperf_fail_on_improvement",
        "Fail a latency check that got faster beyond the threshold (catches a model that silently "
        "skips work).",
        "false",
        ini_type="bool",
        parse=_switch,
    ),
    OptionDef(
        "--ortperf-max-cv",
        "ortperf_max_cv",
        "With --ortperf-update, list as noisy in the update summary the recorded latency baselines whose "
        "round medians (relative to the machine-speed canary when it runs) vary more than this (the rule "
        "'ortperf show' marks noisy by); every entry is written all the same "
        f"(default: {percent(defaults.MAX_CV)}).",
        percent(defaults.MAX_CV),
        "PCT",
        parse=_threshold,
    ),
    OptionDef(
        "--ortperf-prune",
        "ortperf_prune",
        "With --ortperf-update, delete unused baseline entries: entries in the baseline files of "
        "collected test files whose test no longer exists, for every machine (entries of other machines "
        "are listed as '(other machines: ...)'). Without it they are only reported.",
        "false",
        ini_type="bool",
        parse=_switch,
    ),
    OptionDef(
        "--ortperf-reference-variant",
        "ortperf_reference_variant",
        "Variant whose outputs every other variant's outputs are compared with in check_accuracy "
        "(default: cpu-disabled, the most literal execution; none turns it off).",
        "cpu-disabled",
        "VARIANT",
        parse=_reference_variant,
    ),
    OptionDef(
        "--ortperf-tolerances",
        "ortperf_tolerances",
        "Accuracy tolerance KEY=VALUE (repeatable): atol, rtol, cosine (minimum similarity), "
        "mismatch (allowed share of elements outside atol/rtol: 0.001 or 0.1%), for every output; "
        "OUTPUT.KEY or output:OUTPUT.KEY for one output, dtype:float16.KEY per dtype, "
        "variant:cuda.KEY or variant:cuda-all.KEY per provider or variant. Most specific wins: "
        "output > variant > provider > dtype > every output > built-in defaults (a value given "
        "here replaces the built-in provider floor too).",
        [],
        "KEY=VALUE",
        "linelist",
        deprecated=("--ortperf-tolerance",),
        layered=True,
        parse=_tolerance_layers,
    ),
    OptionDef(
        "--ortperf-profile-dir",
        "ortperf_profile_dir",
        "Where tests marked ort_profile write their traces: <dir>/<test id>/run-<k>.json and "
        "summary.json (default: .ortperf/profiles at rootdir).",
        "",
        "DIR",
        parse=_directory(defaults.PROFILE_DIR),
    ),
    OptionDef(
        "--ortperf-session-profile",
        "ortperf_session_profile",
        "Also profile every ort_session at session level for the whole run: one trace per model "
        "and variant in <profile dir>/session/, beside the per-run traces of marked tests.",
        "false",
        ini_type="bool",
        parse=_switch,
    ),
    OptionDef(
        "--ortperf-parallel-timing",
        "ortperf_parallel_timing",
        "Let latency measurements of several processes (pytest-xdist workers) run at once; by "
        "default they take turns through a lock, since parallel timing on shared cores is distorted.",
        "false",
        ini_type="bool",
        parse=_switch,
    ),
    OptionDef(
        "--ortperf-report",
        "ortperf_report",
        "Write every check's result as JSON (test, variant, machine, metrics, baseline, verdict, traces).",
        "",
        "PATH.json",
        parse=_directory(None),
    ),
    OptionDef(
        "--ortperf-markdown",
        "ortperf_markdown",
        "Write a markdown summary of the checks (also appended to $GITHUB_STEP_SUMMARY when set).",
        "",
        "PATH.md",
        parse=_directory(None),
    ),
    OptionDef(
        "--ortperf-html",
        "ortperf_html",
        "Write one self-contained HTML page of the run's checks, with charts (rendered from the JSON "
        "report; `ortperf report` renders and merges reports later).",
        "",
        "PATH.html",
        parse=_directory(None),
    ),
    OptionDef(
        "--ortperf-strict",
        "ortperf_strict",
        "Fail the run when baselines are unused (their tests were renamed or deleted).",
        "false",
        ini_type="bool",
        parse=_switch,
    ),
    OptionDef(
        "--ortperf-run-timeout",
        "ortperf_run_timeout",
        "Seconds one session.run made by ort_perf checks or profiled runs may take before it is "
        f"terminated and the test fails (default: {seconds(defaults.RUN_TIMEOUT_S)}).",
        seconds(defaults.RUN_TIMEOUT_S),
        "SECONDS",
        parse=_seconds,
    ),
    OptionDef(
        "--ortperf-repair",
        "ortperf_repair",
        "With --ortperf-update, set a damaged baseline file aside as <file>.damaged-<time> and record "
        "it afresh, keeping every entry still readable in it and naming the parts it cannot keep; "
        "without this flag a damaged file is never touched.",
        "false",
        ini_type="bool",
        parse=_switch,
    ),
)


def argparse_help(text: str) -> str:
    """``text`` as argparse takes a help string: it %-formats help (``%(default)s``), so a literal
    ``%`` such as "10%" must be written ``%%`` or ``--help`` fails with "unsupported format character"."""
    return text.replace("%", "%%")


def register(parser: Any) -> None:
    """Add every option and ini key to pytest's ``parser``.

    Every help string an option hands to argparse goes through :func:`argparse_help` here, in
    one place; ini help is not %-formatted, so it keeps the text as written.
    """
    group = parser.getgroup("ortperf", "ONNX Runtime performance and accuracy gate (pytest-ortperf)")

    def add(*flags: str, help: str, **kwargs: Any) -> None:
        group.addoption(*flags, help=argparse_help(help), **kwargs)

    for option in OPTIONS:
        if option.switch:
            add(
                option.flag,
                action="store_const",
                const=True,
                dest=option.dest,
                default=None,
                help=option.help,
            )
        else:
            action = "append" if option.ini_type == "linelist" else "store"
            add(
                option.flag,
                *option.deprecated,
                action=action,
                dest=option.dest,
                metavar=option.metavar,
                default=None,
                help=option.help,
            )
        # A switch's ini value is a word of the one yes/no grammar, parsed by its row like every value.
        ini_type = "string" if option.switch else option.ini_type
        parser.addini(option.ini, option.help, type=ini_type, default=option.default)
    # Its own option string: a flag with an optional value would take the next argument
    # (`pytest --ortperf-update tests/`) as its value.
    add(
        UPDATE_MISSING,
        action="store_const",
        const=True,
        dest="ortperf_update_missing",
        default=None,
        help=UPDATE_MISSING_HELP,
    )


class KindsAtOptionTime:
    """The registry ``pytest_ortperf_register_kinds`` is handed: a historic hook, called while pytest
    reads its options for every plugin and initial conftest.py, so that each kind's own options
    (``CheckKind.options``) are added to ``parser`` before the command line and the ini file are
    read. It keeps what it is given; ``pytest_configure`` registers it beside the built-in kinds,
    where a name taken or malformed is a usage error naming its origin. A kind handed over after
    that (a conftest.py below the rootdir, loaded while collecting) is an error naming where to
    register it instead, never a kind that is silently missing.

    Duck-typed on purpose: this module is imported in every run and must not load the registry."""

    def __init__(self, parser: Any) -> None:
        self._parser = parser
        self.kinds: list[tuple[Any, str]] = []
        self.problems: list[str] = []  # options that could not be added, said at configure
        self.closed = False

    def register(self, kind: Any, *, origin: str = "") -> None:
        if self.closed:
            from pytest_ortperf.errors import UsageError

            raise UsageError(
                f"{origin or 'a plugin'} registered the check kind {getattr(kind, 'name', kind)!r} after "
                "the run was configured: register kinds in a plugin or in the conftest.py of the rootdir "
                "(or of a directory named on the command line), which pytest loads before reading options."
            )
        self.kinds.append((kind, origin))
        name = getattr(kind, "name", "")
        if not isinstance(name, str) or not name:
            return  # not a kind: configure says so
        group = self._parser.getgroup("ortperf")
        for option in getattr(kind, "options", ()):
            try:
                ini, flag = option.ini(name), option.flag(name)
                group.addoption(
                    flag, action="store", dest=ini, default=None, metavar=getattr(option, "metavar", "VALUE"),
                    help=argparse_help(f"{option.help} (check kind {name}; ini {ini})"),
                )  # fmt: skip
                self._parser.addini(ini, help=f"{option.help} (check kind {name})", default=option.default)
            except (AttributeError, TypeError, ValueError) as exc:  # not a KindOption, or a name taken
                self.problems.append(f"{origin or 'a plugin'}: option of check kind {name!r}: {exc}")


def deprecated_spellings(args: Sequence[str]) -> list[str]:
    """What to say of each earlier spelling of a flag in ``args`` (the command line, addopts,
    ``PYTEST_ADDOPTS``): it still works, for a release, and the flag to use instead."""
    renamed = {old: option.flag for option in OPTIONS for old in option.deprecated}
    said: list[str] = []
    for arg in args:
        old = str(arg).split("=", 1)[0]
        if old in renamed and not any(old in line for line in said):
            new = renamed[old]
            said.append(
                f"{old} is deprecated and will be removed in a later release: use {new} (the flag and its "
                f"ini key share one name, {new.removeprefix('--').replace('-', '_')})."
            )
    return said
