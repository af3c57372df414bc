"""Each model's trade-off table: its variants (level x precision, per provider) side by side, with the
latency this run measured, the speedup against the fp32 variant at the lowest level, the accuracy
against fp32, the size of the model each variant loads, and the contracts held.

Read from the run's records only (``reports/results.py``), so an xdist controller, which runs no
test, builds the same table from what its workers handed over. A speedup comes with its interval
when a contract measured the two variants side by side in this run; otherwise it is the ratio of
the two variants' medians from this run, which the table marks as such.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_ortperf.checks.record import CheckRecord, typed
from pytest_ortperf.latency.decision import ratio_interval
from pytest_ortperf.ort.variants import OptLevel, Precision, split_precision

MEDIANS = "medians"
SIDE_BY_SIDE = "side by side"
ROUNDS = "rounds"  # two latency checks' round medians, not interleaved: an interval, but not a paired one


@dataclass(frozen=True)
class SpeedupCell:
    """A speedup as the table shows it: with an interval when one was measured, and on what basis."""

    value: float
    low: float | None = None
    high: float | None = None
    basis: str = MEDIANS  # "side by side" (a contract's interval), "rounds" or "medians" (no interval)

    def describe(self) -> str:
        if self.low is None or self.high is None:
            return f"{self.value:.2f}x ({self.basis})"
        interval = f"{self.low:.2f}..{self.high:.2f}"
        return (
            f"{self.value:.2f}x ({interval})"
            if self.basis == SIDE_BY_SIDE
            else f"{self.value:.2f}x ({interval}, {self.basis})"
        )


@dataclass(frozen=True)
class TradeoffRow:
    variant: str
    precision: str
    level: str
    median_ms: float | None = None
    speedup: SpeedupCell | None = None
    cosine: float | None = None  # the least of its outputs, against the fp32 reference
    sqnr_db: float | None = None
    accuracy_verdict: str = ""
    size_bytes: int | None = None
    calibration: str = ""  # a static int8 build's calibration source
    contracts: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "precision": self.precision,
            "level": self.level,
            "median_ms": self.median_ms,
            "speedup": (
                {
                    "value": self.speedup.value,
                    "low": self.speedup.low,
                    "high": self.speedup.high,
                    "basis": self.speedup.basis,
                }
                if self.speedup is not None
                else None
            ),
            "cosine": self.cosine,
            "sqnr_db": _finite(self.sqnr_db),
            "accuracy": self.accuracy_verdict,
            "bytes": self.size_bytes,
            "calibration": self.calibration,
            "contracts": list(self.contracts),
        }


@dataclass(frozen=True)
class TradeoffTable:
    model: str
    provider: str
    base: str  # the variant speedups are measured against
    rows: tuple[TradeoffRow, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "provider": self.provider,
            "speedup_against": self.base,
            "rows": [row.as_dict() for row in self.rows],
        }


def tradeoff_tables(records: Sequence[Mapping[str, Any]]) -> list[TradeoffTable]:
    """One table per model and provider that ran two or more variants in this run."""
    groups: dict[tuple[str, str, str], dict[str, list[CheckRecord]]] = {}
    for record in typed(records):
        model = record.model
        if model is None or not record.variant:
            continue
        base_id, _ = split_precision(record.variant)
        provider = base_id.rpartition("-")[0]
        key = (str(model.get("label", "?")), str(model.get("sha256", "")), provider)
        variants = groups.setdefault(key, {})
        variants.setdefault(record.variant, []).append(record)
        if record.contract is not None:
            variants.setdefault(str(record.contract.get("other")), [])  # measured for the contract: a row too
    tables = []
    for (label, _, provider), variants in groups.items():
        if len(variants) < 2:
            continue
        ordered = sorted(variants, key=_order)
        fp32 = [v for v in ordered if split_precision(v)[1] is Precision.FP32]
        base = fp32[0] if fp32 else ordered[0]
        rows = tuple(_row(variant, variants, base) for variant in ordered)
        compared = [row for row in rows if row.variant != base and (row.speedup or row.cosine is not None)]
        if compared:  # a model whose variants only had their graphs checked compares nothing
            tables.append(TradeoffTable(label, provider, base, rows))
    return tables


def worth_showing(table: TradeoffTable) -> bool:
    """Whether the terminal shows ``table``: when it holds a precision variant or a contract. The
    levels of one fp32 model alone are in the JSON report and the markdown summary."""
    return any(row.precision != Precision.FP32.value or row.contracts for row in table.rows)


def _order(variant: str) -> tuple[int, int]:
    base_id, precision = split_precision(variant)
    level = base_id.rpartition("-")[2]
    levels = [member.value for member in OptLevel]
    return (levels.index(level) if level in levels else len(levels), list(Precision).index(precision))


def _row(variant: str, variants: Mapping[str, Sequence[CheckRecord]], base: str) -> TradeoffRow:
    records = variants[variant]
    base_id, precision = split_precision(variant)
    median = _median(records)
    model: Mapping[str, Any] = next((r.model for r in records if r.model is not None), {})
    cosine, sqnr, verdict = _accuracy(records)
    calibration = model.get("calibration")
    return TradeoffRow(
        variant=variant,
        precision=precision.value,
        level=base_id.rpartition("-")[2],
        median_ms=median,
        speedup=_speedup(variant, base, variants, median),
        cosine=cosine,
        sqnr_db=sqnr,
        accuracy_verdict=verdict,
        size_bytes=model.get("bytes") if isinstance(model.get("bytes"), int) else None,
        calibration=str(calibration.get("source", "")) if isinstance(calibration, Mapping) else "",
        contracts=tuple(_contract_text(r) for r in records if r.contract is not None),
    )


def _median(records: Sequence[CheckRecord]) -> float | None:
    for record in records:
        value = record.medians.current_ms if record.times_rounds and record.medians is not None else None
        if value is not None and math.isfinite(value):
            return value
    return None


def _speedup(
    variant: str, base: str, variants: Mapping[str, Sequence[CheckRecord]], median: float | None
) -> SpeedupCell | None:
    """Against ``base``: a contract's side-by-side interval when one measured the pair, else the ratio of
    this run's medians."""
    if variant == base:
        return SpeedupCell(1.0, 1.0, 1.0, SIDE_BY_SIDE)
    for record, inverted in [*((r, False) for r in variants[variant]), *((r, True) for r in variants[base])]:
        contract, measured = record.contract, record.speedup
        if contract is None or measured is None:
            continue
        if contract.get("other") != (variant if inverted else base):
            continue
        figures = [measured.get(k) for k in ("value", "low", "high")]
        numbers = [float(f) for f in figures if isinstance(f, (int, float)) and math.isfinite(f) and f > 0]
        if len(numbers) != len(figures):
            continue  # a hand-edited or damaged report's record: no interval to show
        value, low, high = numbers
        if inverted:
            value, low, high = 1.0 / value, 1.0 / high, 1.0 / low
        return SpeedupCell(value, low, high, SIDE_BY_SIDE)
    base_rounds, rounds = _rounds(variants[base]), _rounds(variants[variant])
    if base_rounds and rounds:
        estimate = ratio_interval(base_rounds, rounds)  # this variant / the base: below 1 is faster
        return SpeedupCell(1.0 / estimate.ratio, 1.0 / estimate.high, 1.0 / estimate.low, ROUNDS)
    base_median = _median(variants[base])
    if median is None or base_median is None or median <= 0:
        return None
    return SpeedupCell(base_median / median)


def _rounds(records: Sequence[CheckRecord]) -> list[float]:
    """The round medians of the first latency check that timed rounds."""
    for record in records:
        current = record.current
        if not record.times_rounds or current is None:
            continue
        values = current.get("round_medians_ms")
        if (
            isinstance(values, list)
            and values
            and all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in values)
        ):
            return [float(v) for v in values]
    return []


def _accuracy(records: Sequence[CheckRecord]) -> tuple[float | None, float | None, str]:
    """The least cosine and SQNR of the outputs against the variant reference (fp32), and whether that
    comparison failed (the check's own verdict also covers its baseline and data sets)."""
    cosines: list[float] = []
    sqnrs: list[float] = []
    verdict = ""
    for record in records:
        for reference in record.references:  # an accuracy check's comparisons
            if not str(reference.get("reference", "")).startswith("variant "):
                continue
            verdict = "FAILED" if reference.get("failed") or verdict == "FAILED" else "ok"
            for output in _listed(reference.get("outputs")):
                cosine, sqnr = output.get("cosine"), output.get("sqnr_db")
                if isinstance(cosine, (int, float)):
                    cosines.append(float(cosine))
                if isinstance(sqnr, (int, float)) or sqnr in ("inf", "-inf"):
                    sqnrs.append(float(sqnr))
    return (min(cosines) if cosines else None, min(sqnrs) if sqnrs else None, verdict)


def _listed(value: object) -> list[Mapping[str, Any]]:
    """The objects of a list in a record (a report read from a file may hold anything there)."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _contract_text(record: CheckRecord) -> str:
    contract = record.contract or {}
    kind = "faster than" if contract.get("kind") == "faster_than" else "agrees with"
    bound = contract.get("bound")
    bound_text = f"{bound:g}" if isinstance(bound, (int, float)) else str(bound)
    bound_text += "x" if contract.get("kind") == "faster_than" else ""
    return f"{kind} {contract.get('other')} {bound_text}: {record.verdict}"


def _finite(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    return str(value)


def _size(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1024:.1f} KiB" if value < 1024 * 1024 else f"{value / 1024 / 1024:.1f} MiB"


def _accuracy_text(row: TradeoffRow) -> str:
    if row.cosine is None and row.sqnr_db is None:
        return "-"
    parts = []
    if row.cosine is not None:
        parts.append(f"cos {row.cosine:.5f}")
    if row.sqnr_db is not None:
        parts.append("SQNR inf" if math.isinf(row.sqnr_db) else f"SQNR {row.sqnr_db:.1f} dB")
    return ", ".join(parts) + (f" ({row.accuracy_verdict})" if row.accuracy_verdict else "")


def cells(table: TradeoffTable) -> list[tuple[str, ...]]:
    """The table's rows as text cells: variant, median, speedup, accuracy, size, contracts."""
    rows: list[tuple[str, ...]] = []
    for row in table.rows:
        median = f"{row.median_ms:.4g} ms" if row.median_ms is not None else "-"
        speedup = row.speedup.describe() if row.speedup is not None else "-"
        if row.variant == table.base:
            speedup = "1.00x (base)"
        accuracy = _accuracy_text(row) + (
            " [synthetic calibration]" if "synthetic" in row.calibration else ""
        )
        rows.append(
            (row.variant, median, speedup, accuracy, _size(row.size_bytes), "; ".join(row.contracts) or "-")
        )
    return rows


HEADERS = ("variant", "median", "speedup", "vs fp32 (least output)", "size", "contracts")


def heading(table: TradeoffTable) -> str:
    return (
        f"trade-offs of {table.model} on {table.provider} (this run; speedup against {table.base}: the "
        "interval of a contract that measured the pair side by side, else of the two latency checks' "
        "rounds, not interleaved)"
    )
