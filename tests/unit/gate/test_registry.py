"""The registry of check kinds: the terminal summary's tables come from what each kind declares."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.gate.registry import CheckKind, KindRegistry
from pytest_ortperf.kinds import builtin_kinds
from pytest_ortperf.reports.tables import COMMON_TABLE, LATENCY_TABLE, TerminalTable


def _record(kind: str, verdict: str = "ok", **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "test": f"t.py::test_{kind}", "variant": "cpu-all", "verdict": verdict, **fields}


def _make(context: Any) -> Any:
    raise AssertionError("not run here")


def test_each_kinds_rows_go_into_the_table_it_declares_in_the_order_the_kinds_declared_them() -> None:
    kinds = builtin_kinds()
    spans = TerminalTable(
        "spans", lambda rows, machine: f"spans on {machine} ({len(rows)})", ("test", "span")
    )
    kinds.register(CheckKind(name="span", make=_make, row=lambda r: (str(r["test"]), "3 ms"), table=spans))
    kinds.register(CheckKind(name="finite", make=_make))
    records = [
        _record("finite"),
        _record("memory", summary="arena peak 1 MiB"),
        _record("span"),
        _record("graph", summary="12 nodes"),
        _record("accuracy", "error", message="boom"),
        _record("latency", "not timed"),
        _record("finite", "error"),
        _record("unknown"),
    ]
    tables = kinds.terminal_tables(records)
    names = [table.name for table, _ in tables]
    assert names == [
        "latency",
        "accuracy",
        "graphs",
        "fresh processes",
        "throughput",
        "generation",
        "spans",
        "checks",
    ]
    rows = {table.name: rows for table, rows in tables}
    assert rows["latency"] == [], "a latency check that did not measure has no row"
    assert [row[-1] for row in rows["accuracy"]] == ["error"], "an accuracy error has its row"
    assert [row[2] for row in rows["graphs"]] == ["graph"]
    assert [row[2] for row in rows["fresh processes"]] == ["memory"]
    assert rows["spans"] == [("t.py::test_span", "3 ms")]
    assert [row[2] for row in rows["checks"]] == ["finite"], "not its error, nor an unregistered kind"
    assert tables[0][0] is LATENCY_TABLE
    assert tables[-1][0] is COMMON_TABLE


def test_a_table_that_is_not_a_terminal_table_is_a_usage_error_naming_the_kind() -> None:
    with pytest.raises(
        UsageError, match=re.escape("'finite' with table='mine': a table is a reports.terminal.TerminalTable")
    ):
        KindRegistry([CheckKind(name="finite", make=_make, table="mine")])  # type: ignore[arg-type]


def test_a_table_named_as_another_is_a_usage_error_unless_it_is_that_table() -> None:
    kinds = builtin_kinds()
    mine = TerminalTable("latency", lambda rows, machine: "mine")
    with pytest.raises(UsageError, match="'span' with a table named 'latency', which another table has"):
        kinds.register(CheckKind(name="span", make=_make, table=mine))
    with pytest.raises(UsageError, match="a table named 'checks'"):
        kinds.register(CheckKind(name="span", make=_make, table=TerminalTable("checks", mine.title)))
    kinds.register(CheckKind(name="span", make=_make, table=LATENCY_TABLE))  # sharing the latency table
    assert next(table.name for table, _ in kinds.terminal_tables([])) == "latency"


def test_each_kind_that_decodes_its_part_hands_its_decoder_to_the_store_by_the_parts_name() -> None:
    kinds = builtin_kinds()
    kinds.register(CheckKind(name="span", make=_make, part="span", part_decoder=dict))
    kinds.register(CheckKind(name="plain", make=_make, part="plain"))  # kept as read: no decoder
    decoders = kinds.part_decoders()
    assert sorted(decoders) == ["graph", "latency", "memory", "span", "startup"]
    assert decoders["span"] is dict
    assert decoders["memory"]({"processes": 1, "arena_peak": 4096}).arena_peak == 4096
    with pytest.raises(KeyError, match="arena_peak"):
        decoders["memory"]({"processes": 1})


@pytest.mark.parametrize(
    ("part", "decoder"), [(None, dict), ("span", "not callable")], ids=["no-part", "not-callable"]
)
def test_a_part_decoder_without_a_part_or_not_callable_is_a_usage_error_naming_the_kind(
    part: str | None, decoder: Any
) -> None:
    with pytest.raises(UsageError, match=re.escape("the check kind 'span' with part_decoder=")):
        KindRegistry().register(CheckKind(name="span", make=_make, part=part, part_decoder=decoder))


def test_declaring_the_built_in_kinds_with_their_part_decoders_imports_no_numpy() -> None:
    """The entry point reads every kind's declaration in every pytest run: their decoders load later."""
    import subprocess
    import sys

    code = "import sys, pytest_ortperf.kinds as k; k.builtin_kinds().part_decoders(); print('numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_an_option_of_no_name_is_the_kinds_own_setting() -> None:
    """``KindOption("")``: ``--ortperf-<kind>`` and ``ortperf_<kind>`` (the graph kind's mode)."""
    from pytest_ortperf.gate.registry import KindOption

    own = KindOption("", "the span's mode", "wide")
    assert (own.flag("span"), own.ini("span")) == ("--ortperf-span", "ortperf_span")
    assert own.metavar == "VALUE"  # what --help shows it take, unless the kind names it
    (mode,) = builtin_kinds()["graph"].options
    assert (mode.flag("graph"), mode.metavar) == ("--ortperf-graph", "MODE")
    KindRegistry().register(CheckKind(name="span", make=_make, options=(own,)))
    with pytest.raises(UsageError, match="option or threshold name"):
        KindRegistry().register(CheckKind(name="span", make=_make, options=(KindOption("Bad", "", ""),)))


@pytest.mark.parametrize(
    ("part", "taken"), [("memory", "the check kind 'memory''s"), ("spread", "a key of the figures")]
)
def test_a_part_another_kind_keeps_or_a_key_of_the_figures_is_a_usage_error_naming_both(
    part: str, taken: str
) -> None:
    """Two kinds keeping one part would overwrite each other's figures; a part named as one of the
    figures' own keys (``spread``) would be read as that key."""
    with pytest.raises(UsageError, match=re.escape(f"with part={part!r}, which is {taken}")):
        builtin_kinds().register(CheckKind(name="span", make=_make, part=part))
