"""Command-line options and ini keys: one table, and the pure parsers behind them.

``register`` takes pytest's parser duck-typed, so this module does not import
pytest; the console script reuses the same parsers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_ortperf.errors import UsageError
from pytest_ortperf.providers import valid_provider_names

_WHOLE = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class OptionDef:
    """One setting: ``--flag`` on the command line and ``ini`` key, with its default."""

    flag: str
    ini: str
    help: str
    default: str | list[str]
    metavar: str = "VALUE"
    ini_type: str = "string"

    @property
    def dest(self) -> str:
        return self.ini


OPTIONS: tuple[OptionDef, ...] = (
    OptionDef(
        "--ort-providers",
        "ortperf_providers",
        f"Execution providers to test, comma separated (default: cpu). Names: {valid_provider_names()}.",
        "cpu",
        "LIST",
    ),
    OptionDef(
        "--ort-opt-levels",
        "ortperf_opt_levels",
        "Graph optimization levels to test, comma separated: disabled, basic, extended, layout, all "
        "(default: all).",
        "all",
        "LIST",
    ),
    OptionDef(
        "--ortperf-session-option",
        "ortperf_session_options",
        "Session setting KEY=VALUE (repeatable): intra_op_threads, inter_op_threads, execution_mode, "
        "intra_op_spinning, inter_op_spinning, cpu_mem_arena, mem_pattern, denormal_as_zero, "
        "intra_op_thread_affinities; config.KEY=VALUE for an ORT session config entry; "
        "PROVIDER:KEY=VALUE for a provider option (e.g. cuda:cudnn_conv_algo_search=DEFAULT).",
        [],
        "KEY=VALUE",
        "linelist",
    ),
    OptionDef(
        "--ortperf-dims",
        "ortperf_dims",
        "Sizes for symbolic input dims in synthetic feeds, e.g. batch=1,sequence=128 "
        "(unnamed or unlisted dims are 1).",
        "",
        "NAME=N,...",
    ),
    OptionDef(
        "--ortperf-int-range",
        "ortperf_int_range",
        "Half-open range LOW:HIGH of synthetic integer inputs such as token ids (default: 0:100).",
        "0:100",
        "LOW:HIGH",
    ),
    OptionDef(
        "--ortperf-seed",
        "ortperf_seed",
        "Seed of synthetic feeds (default: 0).",
        "0",
        "N",
    ),
)


def register(parser: Any) -> None:
    """Add every option and ini key to pytest's ``parser``."""
    group = parser.getgroup("ortperf", "ONNX Runtime performance and accuracy gate (pytest-ortperf)")
    for option in OPTIONS:
        action = "append" if option.ini_type == "linelist" else "store"
        group.addoption(
            option.flag,
            action=action,
            dest=option.dest,
            metavar=option.metavar,
            default=None,
            help=option.help,
        )
        parser.addini(option.ini, option.help, type=option.ini_type, default=option.default)


def parse_dims(value: str | Mapping[str, Any], *, source: str) -> dict[str, int]:
    """``"batch=1,sequence=128"`` (or a mapping) to ``{"batch": 1, "sequence": 128}``."""
    items: Iterable[tuple[str, Any]]
    if isinstance(value, Mapping):
        items = value.items()
    else:
        items = [part.partition("=")[::2] for part in str(value).split(",") if part.strip()]
    dims: dict[str, int] = {}
    for name, size in items:
        text = str(size).strip()
        if not str(name).strip() or not _WHOLE.fullmatch(text) or int(text) < 1:
            raise UsageError(f"{source}: expected NAME=N with N >= 1 for each dim, got {name}={size!r}.")
        dims[str(name).strip()] = int(text)
    return dims


def parse_int_range(value: Any, *, source: str) -> tuple[int, int]:
    """``"0:100"``, ``"0,100"`` or ``(0, 100)`` to a half-open ``(low, high)`` with low < high."""
    parts = (
        [str(p) for p in value]
        if isinstance(value, (tuple, list))
        else str(value).replace(",", ":").split(":")
    )
    try:
        low, high = (int(p.strip()) for p in parts)
    except ValueError:
        raise UsageError(
            f"{source}: expected an integer range LOW:HIGH such as 0:1000, got {value!r}."
        ) from None
    if low >= high:
        raise UsageError(f"{source}: integer range {low}:{high} is empty (LOW must be < HIGH).")
    return low, high


def parse_seed(value: Any, *, source: str) -> int:
    text = str(value).strip()
    if isinstance(value, bool) or not _WHOLE.fullmatch(text.removeprefix("-")):
        raise UsageError(f"{source}: seed must be a whole number, got {value!r}.")
    return int(text)
