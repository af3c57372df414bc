"""``ortperf show``: what the baseline files hold, as a table or JSON."""

from __future__ import annotations

import configparser
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.store.baselines import BaselineError, parse

_HEADERS = ("test", "variant", "machine", "median", "p90", "rounds", "outputs", "recorded", "onnxruntime")


def _ms(value: object) -> str:
    return f"{value:.4g} ms" if isinstance(value, float) else "-"


def _rounds(latency: LatencyStats | None) -> str:
    """'40 + canary', '15' (measured without the canary, e.g. before it existed) or '-'."""
    if latency is None:
        return "-"
    return f"{latency.rounds} + canary" if latency.canary_round_medians_ms else str(latency.rounds)


def baseline_rows(directory: Path) -> tuple[list[dict[str, str | float | None]], list[str]]:
    """One row per entry of every ``*.json`` under ``directory``, plus the files that are damaged."""
    rows: list[dict[str, str | float | None]] = []
    problems: list[str] = []
    if not directory.is_dir():
        return rows, [f"baseline directory '{directory}' does not exist"]
    for path in sorted(directory.rglob("*.json")):
        test_file = path.relative_to(directory).as_posix().removesuffix(".json")
        try:
            entries = parse(path.read_text(encoding="utf-8"), path=path)
        except BaselineError as exc:
            problems.append(str(exc))
            continue
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"baseline file '{path}' cannot be read ({exc}).")
            continue
        for test, machines in sorted(entries.items()):
            for machine, entry in sorted(machines.items()):
                rows.append(
                    {
                        "test": f"{test_file}::{test}",
                        "variant": entry.variant,
                        "machine": machine,
                        "median_ms": entry.latency.median_ms if entry.latency else None,
                        "p90_ms": entry.latency.p90_ms if entry.latency else None,
                        "rounds": _rounds(entry.latency),
                        "outputs": len(entry.accuracy.outputs) if entry.accuracy else 0,
                        "recorded": entry.recorded,
                        "ort_version": str(entry.environment.get("ort_version", "?")),
                    }
                )
    return rows, problems


def show_baselines(directory: Path, *, as_json: bool) -> tuple[list[str], list[str]]:
    rows, problems = baseline_rows(directory)
    if as_json:
        return [json.dumps(rows, indent=1, sort_keys=True)], problems
    if not rows:
        return [f"no baselines in '{directory}'"], problems
    table = [_HEADERS] + [
        (
            str(r["test"]),
            str(r["variant"]),
            str(r["machine"]),
            _ms(r["median_ms"]),
            _ms(r["p90_ms"]),
            str(r["rounds"]),
            str(r["outputs"] or "-"),
            str(r["recorded"]),
            str(r["ort_version"]),
        )
        for r in rows
    ]
    return format_table(table), problems


def format_table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns, two spaces apart, no trailing blanks."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def configured_baseline_dir(start: Path) -> Path:
    """Where pytest would keep baselines for a run started in ``start``: ``ortperf_baseline_dir``
    of the nearest pytest configuration file found upward (pytest.ini, .pytest.ini, pyproject.toml
    with [tool.pytest.ini_options], tox.ini with [pytest], setup.cfg with [tool:pytest]), relative
    to that file; else ``baselines`` beside it; with no such file, ``start/baselines``."""
    for directory in (start, *start.parents):
        for name in ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"):
            ini = _ini_options(directory / name)
            if ini is not None:
                value = ini.get("ortperf_baseline_dir")
                return (directory / str(value)).resolve() if value else directory / "baselines"
    return start / "baselines"


def _ini_options(path: Path) -> dict[str, Any] | None:
    """The pytest options of a configuration file, or None when it is not one pytest would use."""
    if not path.is_file():
        return None
    try:
        if path.name == "pyproject.toml":
            tomllib: Any = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
            options = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("pytest", {})
            table = options.get("ini_options") if isinstance(options, dict) else None
            return dict(table) if isinstance(table, dict) else None
        parser = configparser.ConfigParser(interpolation=None)
        parser.read_string(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, configparser.Error):
        return None  # pytest itself reports a broken configuration file
    section = "tool:pytest" if path.name == "setup.cfg" else "pytest"
    if parser.has_section(section):
        return dict(parser.items(section))
    return {} if path.name in ("pytest.ini", ".pytest.ini") else None
