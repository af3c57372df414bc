"""``ortperf show``: what the baseline files hold, as a table or JSON."""

from __future__ import annotations

import configparser
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_ortperf import defaults
from pytest_ortperf.checks.latency_figures import PART as LATENCY_PART
from pytest_ortperf.checks.latency_figures import LatencyFigures, latency_part
from pytest_ortperf.latency.decision import DEFAULT_THRESHOLD, stored_called
from pytest_ortperf.latency.recording import DEFAULT_MAX_CV, coarse, detects, noise
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.store.baselines import BaselineError, Decoders, Figures, parse
from pytest_ortperf.values import parse_threshold

Row = dict[str, Any]


def _ms(value: object) -> str:
    return f"{value:.4g} ms" if isinstance(value, float) else "-"


def _rounds(latency: LatencyStats | None) -> str:
    """'40 + canary', '15' (measured without the canary, e.g. before it existed) or '-'."""
    if latency is None:
        return "-"
    return f"{latency.rounds} + canary" if latency.canary_round_medians_ms else str(latency.rounds)


def _decoded(figures: Figures, decoders: Decoders) -> Row:
    """Each part a decoder is given for, as its kind writes it and in its kind's words (``memory``
    and ``memory_text``; None where these figures hold none); the others under ``parts``, as stored
    (the store does not interpret them), where there are any."""
    row: Row = {}
    for name, decode in decoders.items():
        if name == LATENCY_PART:  # its figures are the row's own columns (_figures_row)
            continue
        typed = figures.part_as(name, decode)
        row[name] = typed.as_dict() if typed is not None else None
        row[f"{name}_text"] = typed.describe() if typed is not None else None
    shown = {*decoders, LATENCY_PART}
    others = {name: dict(value) for name, value in figures.parts.items() if name not in shown}
    return {**row, **({"parts": others} if others else {})}


def _figures_row(machine: str, figures: Figures, max_cv: float, threshold: float, decoders: Decoders) -> Row:
    part = latency_part(figures) or LatencyFigures()
    latency = part.latency
    # Figures recorded short never decide (checks.paths: without_reference); the others may, and
    # are coarse by the update summary's rule when they cannot detect a change of the threshold.
    called = stored_called(threshold)  # what stored figures can call at this threshold
    reach = detects(latency, part.spread, threshold=called) if latency and not part.short else None
    return {
        "machine": machine,
        "median_ms": latency.median_ms if latency else None,
        "p90_ms": latency.p90_ms if latency else None,
        "rounds": _rounds(latency),
        "spread": part.spread,
        "settled": part.settled,
        "short": part.short,  # why a short recording was enough; "" when measured until settled
        # The update summary's rule (latency.recording.noise), so both call the same figures noisy.
        "noise": noise(part.spread, max_cv=max_cv) if latency else "",
        "coarse": coarse(reach, called),  # latency.recording.coarse, the update summary's word
        "recorded": figures.recorded,
        **_decoded(figures, decoders),
    }


def _part_text(part: dict[str, Any] | None) -> str:
    """A registered kind's part in one cell: its scalar fields as ``name=value``."""
    if not part:
        return "-"
    cells = [
        f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}"
        for key, value in sorted(part.items())
        if isinstance(value, (str, int, float, bool))
    ]
    return ", ".join(cells) or "(no scalar fields)"


def baseline_rows(
    directory: Path,
    *,
    max_cv: float = DEFAULT_MAX_CV,
    threshold: float = DEFAULT_THRESHOLD,
    decoders: Decoders | None = None,
) -> tuple[list[Row], list[str]]:
    """One row per entry (test x variant) of every ``*.json`` under ``directory``, with its recipe
    summary and one row per machine's figures (``noise``: why they are noisy at ``max_cv``, as an
    update judges them); plus the files that are damaged. ``decoders``: the kinds' part decoders
    (``KindRegistry.part_decoders``), by which parts are validated and shown in their kinds' words;
    a part without one is shown as stored."""
    decoders = dict(decoders or {})
    rows: list[Row] = []
    problems: list[str] = []
    if not directory.is_dir():
        return rows, [f"baseline directory '{directory}' does not exist"]
    for path in sorted(directory.rglob("*.json")):
        test_file = path.relative_to(directory).as_posix().removesuffix(".json")
        try:
            entries = parse(path.read_text(encoding="utf-8"), path=path, decoders=decoders)
        except BaselineError as exc:
            problems.append(str(exc))
            continue
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"baseline file '{path}' cannot be read ({exc}).")
            continue
        for test, entry in sorted(entries.items()):
            sha256 = entry.recipe.get("model_sha256")
            rows.append(
                {
                    "test": f"{test_file}::{test}",
                    "variant": entry.variant,
                    "model_sha256": sha256 if isinstance(sha256, str) else None,
                    "ort_version": str(entry.recipe.get("ort_version", "?")),
                    "outputs": len(entry.accuracy.outputs) if entry.accuracy else 0,
                    "recorded": entry.recorded,
                    "figures": [
                        _figures_row(m, entry.figures[m], max_cv, threshold, decoders)
                        for m in sorted(entry.figures)
                    ],
                }
            )
    return rows, problems


def show_baselines(
    directory: Path,
    *,
    as_json: bool,
    max_cv: float = DEFAULT_MAX_CV,
    threshold: float = DEFAULT_THRESHOLD,
    decoders: Decoders | None = None,
) -> tuple[list[str], list[str]]:
    """Each entry once, with its recipe (model, onnxruntime, variant), and under it one line per
    machine key's figures: they share the recipe, only the hardware differs. Figures are marked
    noisy by the rule the update summary uses, at ``max_cv``; parts as :func:`baseline_rows` shows
    them."""
    decoders = dict(decoders or {})
    rows, problems = baseline_rows(directory, max_cv=max_cv, threshold=threshold, decoders=decoders)
    if as_json:
        return [json.dumps(rows, indent=1, sort_keys=True)], problems
    if not rows:
        return [f"no baselines in '{directory}'"], problems
    entries = format_table(
        [
            (
                str(r["test"]),
                str(r["variant"]),
                f"model {str(r['model_sha256'])[:12] if r['model_sha256'] else '?'}",
                f"onnxruntime {r['ort_version']}",
                f"outputs {r['outputs'] or '-'}",
                f"recorded {r['recorded']}",
            )
            for r in rows
        ]
    )
    figure_rows = [figures for r in rows for figures in r["figures"]]
    # A decoded part's column (memory, start-up, graph...) only where some entry holds it.
    parts = [part for part in decoders if part != LATENCY_PART and any(f[part] for f in figure_rows)]
    named = sorted({name for f in figure_rows for name in f.get("parts", {})})  # registered kinds' own parts
    machines = iter(
        format_table(
            [
                (
                    f"    {f['machine']}",
                    f"median {_ms(f['median_ms'])}",
                    f"p90 {_ms(f['p90_ms'])}",
                    f"rounds {f['rounds']}",
                    f"spread {'-' if f['spread'] is None else format(f['spread'], '.1%')}",
                    f"recorded {f['recorded']}",
                    *(f"{part} {f[part + '_text'] or '-'}" for part in parts),
                    *(f"{name} {_part_text(f.get('parts', {}).get(name))}" for name in named),
                    " ".join(
                        ([f"noisy ({f['noise']})"] if f["noise"] else [])
                        + ([f"coarse ({f['coarse']})"] if f["coarse"] else [])
                        # A short recording never tried to settle: it says why it was enough instead.
                        + ([f"short recording ({f['short']})"] if f["short"] else [])
                        + ([] if f["settled"] or f["short"] else ["not settled"])
                    ),
                )
                for f in figure_rows
            ]
        )
        if figure_rows
        else []
    )
    lines = []
    for row, line in zip(rows, entries, strict=True):
        lines.append(line)
        lines += [next(machines) for _ in row["figures"]]
    return lines, problems


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
                return (directory / str(value)).resolve() if value else directory / defaults.BASELINE_DIR
    return start / defaults.BASELINE_DIR


def configured_max_cv(start: Path) -> tuple[float, str]:
    """``ortperf_max_cv`` of the configuration file :func:`configured_baseline_dir` reads, and where
    it came from: what an update started here calls noisy, so ``show`` calls the same figures so.
    A value that does not parse is a :class:`UsageError` naming the file and key."""
    return configured_fraction(start, "ortperf_max_cv", DEFAULT_MAX_CV)


def configured_threshold(start: Path) -> tuple[float, str]:
    """``ortperf_latency_threshold`` as :func:`configured_max_cv` reads its key: the threshold an
    update started here holds recorded figures to, so ``show`` calls the same figures coarse."""
    return configured_fraction(start, "ortperf_latency_threshold", DEFAULT_THRESHOLD)


def configured_fraction(start: Path, key: str, default: float) -> tuple[float, str]:
    """A percentage ``key`` of the nearest pytest configuration file (``default`` without one)."""
    for directory in (start, *start.parents):
        for name in ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"):
            ini = _ini_options(directory / name)
            if ini is not None:
                value = ini.get(key)
                if value is None or not str(value).strip():
                    return default, "the default"
                where = f"{key} in {directory / name}"
                return parse_threshold(value, source=where), where
    return default, "the default"


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
