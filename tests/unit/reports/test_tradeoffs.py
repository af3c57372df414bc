"""Each model's trade-off table, built from the run's records alone (as an xdist controller has them)."""

from __future__ import annotations

from typing import Any

from pytest_ortperf.reports.ci_files import markdown, report_document
from pytest_ortperf.reports.tradeoffs import cells, tradeoff_tables, worth_showing

MODEL = {"label": "models/cnn.onnx", "sha256": "ab" * 32, "bytes": 24_000}


def latency(variant: str, median: float, precision: str = "fp32", size: int = 24_000) -> dict[str, Any]:
    model = {**MODEL, "precision": precision, "bytes": size}
    if precision == "int8-static":
        model["calibration"] = {"source": "synthetic (seeds 1..8)", "synthetic": True}
    return {"test": f"t.py::test_x[{variant}]", "kind": "latency", "variant": variant, "verdict": "ok",
            "failed": False, "current": {"median_ms": median, "round_medians_ms": []}, "model": model}  # fmt: skip


def accuracy(variant: str, cosine: float, sqnr: float | str, failed: bool = False) -> dict[str, Any]:
    reference = {"reference": "variant cpu-disabled (fp32)", "failed": failed,
                 "outputs": [{"name": "y", "cosine": cosine, "sqnr_db": sqnr}]}  # fmt: skip
    return {"test": f"t.py::test_y[{variant}]", "kind": "accuracy", "variant": variant, "verdict": "missing",
            "failed": failed, "references": [reference], "model": {**MODEL, "precision": "fp32"}}  # fmt: skip


def contract(variant: str, other: str, value: float, low: float, high: float) -> dict[str, Any]:
    return {"test": f"t.py::test_z[{variant}]", "kind": "contract", "variant": variant, "verdict": "ok",
            "failed": False, "contract": {"kind": "faster_than", "other": other, "bound": 1.2, "source": "m"},
            "speedup": {"value": value, "low": low, "high": high}, "model": MODEL}  # fmt: skip


RECORDS = [
    latency("cpu-disabled", 2.0),
    latency("cpu-all", 1.0),
    latency("cpu-all-int8-static", 0.8, "int8-static", 12_000),
    accuracy("cpu-all-int8-static", 0.9995, 31.2),
    contract("cpu-all", "cpu-disabled", 1.9, 1.8, 2.1),
    {
        **latency("cpu-all", 3.0),
        "model": {**MODEL, "label": "other.onnx"},
    },  # another model, one variant: no table
]


def test_one_table_per_model_with_speedups_against_the_lowest_fp32_level() -> None:
    (table,) = tradeoff_tables(RECORDS)
    assert (table.model, table.provider, table.base) == ("models/cnn.onnx", "cpu", "cpu-disabled")
    rows = {row.variant: row for row in table.rows}
    assert list(rows) == ["cpu-disabled", "cpu-all", "cpu-all-int8-static"]
    # measured side by side by a contract: its interval; else the ratio of this run's medians
    assert (rows["cpu-all"].speedup.value, rows["cpu-all"].speedup.low) == (1.9, 1.8)
    assert rows["cpu-all-int8-static"].speedup.value == 2.5
    assert rows["cpu-all-int8-static"].speedup.basis == "medians"
    assert (rows["cpu-all-int8-static"].cosine, rows["cpu-all-int8-static"].sqnr_db) == (0.9995, 31.2)
    text = {row[0]: row for row in cells(table)}
    assert text["cpu-all"][2] == "1.90x (1.80..2.10)"
    assert text["cpu-all-int8-static"][2:5] == (
        "2.50x (medians)",
        "cos 0.99950, SQNR 31.2 dB (ok) [synthetic calibration]",
        "11.7 KiB",
    )
    assert text["cpu-all"][5] == "faster than cpu-disabled 1.2x: ok"


def test_a_contract_measured_from_the_base_side_is_inverted() -> None:
    records = [
        latency("cpu-disabled", 2.0),
        latency("cpu-all", 1.0),
        contract("cpu-disabled", "cpu-all", 0.5, 0.4, 0.625),
    ]
    (table,) = tradeoff_tables(records)
    speedup = next(row.speedup for row in table.rows if row.variant == "cpu-all")
    assert speedup is not None
    assert (speedup.value, speedup.low, speedup.high) == (2.0, 1.6, 2.5)


def test_the_tables_reach_the_json_report_and_the_markdown_summary() -> None:
    document = report_document(
        RECORDS, machine="ci", runtime="onnxruntime 1.31.1", version="0", traces={}, unused=[]
    )
    (table,) = document["tradeoffs"]
    assert [row["variant"] for row in table["rows"]] == ["cpu-disabled", "cpu-all", "cpu-all-int8-static"]
    assert table["rows"][2]["speedup"] == {"value": 2.5, "low": None, "high": None, "basis": "medians"}
    text = markdown(RECORDS, machine="ci", unused=[])
    assert "**trade-offs of models/cnn.onnx on cpu" in text
    assert "| cpu-all-int8-static | 0.8 ms | 2.50x (medians) |" in text


def test_without_a_contract_the_two_latency_checks_rounds_give_an_interval_marked_as_not_interleaved() -> (
    None
):
    base, fast = latency("cpu-disabled", 2.0), latency("cpu-all", 1.0)
    base["current"]["round_medians_ms"] = [2.0, 2.1, 1.9, 2.05, 1.95]
    fast["current"]["round_medians_ms"] = [1.0, 1.05, 0.95, 1.02, 0.98]
    (table,) = tradeoff_tables([base, fast])
    speedup = table.rows[1].speedup
    assert speedup is not None
    assert speedup.basis == "rounds"
    assert speedup.low is not None
    assert speedup.high is not None
    assert speedup.low < speedup.value < speedup.high
    assert 1.8 < speedup.value < 2.2
    assert cells(table)[1][2].endswith(", rounds)")


def test_the_terminal_shows_tables_with_precisions_or_contracts_and_none_that_compare_nothing() -> None:
    levels_only = [latency("cpu-disabled", 2.0), latency("cpu-all", 1.0)]
    (table,) = tradeoff_tables(levels_only)
    assert not worth_showing(table)  # in the JSON report and the markdown, not the terminal
    (with_int8,) = tradeoff_tables(RECORDS)
    assert worth_showing(with_int8)
    graphs_only = [{**record, "kind": "graph", "current": None} for record in levels_only]
    assert tradeoff_tables(graphs_only) == []
