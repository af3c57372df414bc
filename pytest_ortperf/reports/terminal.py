"""The run's terminal summary: report data turned into lines; the pytest layer only prints them."""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ortperf.checks.record import CheckRecord, ProfileRecord, typed
from pytest_ortperf.checks.status import Status
from pytest_ortperf.latency.activity import GateSeconds
from pytest_ortperf.latency.lock_holder import LockWait, merge_waits
from pytest_ortperf.latency.paired import AB_STATISTIC
from pytest_ortperf.ort.git_models import SHALLOW
from pytest_ortperf.reports.accuracy_rows import accuracy_row
from pytest_ortperf.reports.show import format_table
from pytest_ortperf.reports.tables import LATENCY_TABLE, TerminalTable
from pytest_ortperf.reports.tradeoffs import HEADERS, TradeoffTable, cells, heading
from pytest_ortperf.store.baselines import Repaired
from pytest_ortperf.store.keys import split_check_name
from pytest_ortperf.store.machine import runner_class


@dataclass
class UpdateReport:
    """What an ``--ortperf-update`` run did, for the summary line."""

    new: int = 0
    added_here: int = 0  # of the "new": figures of this hardware added to an existing entry
    updated: int = 0
    unchanged: int = 0
    noisy: list[str] = field(default_factory=list)  # "node id (spread 14.2%)" of figures written noisy
    # "node id (detect >= 13.4%, threshold 10%)" of figures written that will decide and are coarse
    coarse: list[str] = field(default_factory=list)
    # "node id: why" of stored figures kept, quieter than the update's own, of an unchanged recipe
    kept: list[str] = field(default_factory=list)
    # node ids of latency figures measured until settled because nothing keeps their model (git does
    # not track it yet): slow, where committed models are recorded short
    unkept: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    # --ortperf-update=missing: what it did with each check (reports.results: RunResults.missing_only)
    missing_only: list[Mapping[str, Any]] | None = None

    @classmethod
    def tally(
        cls,
        statuses: Sequence[str],
        *,
        unused: Sequence[str],
        written: Sequence[Path],
        noisy: Sequence[str] = (),
        coarse: Sequence[str] = (),
        kept: Sequence[str] = (),
        added_here: int = 0,
        unkept: Sequence[str] = (),
        missing_only: Sequence[Mapping[str, Any]] | None = None,
    ) -> UpdateReport:
        report = cls(
            unkept=list(unkept),
            unused=list(unused),
            written=list(written),
            noisy=list(noisy),
            coarse=list(coarse),
            kept=list(kept),
            added_here=added_here,
            missing_only=None if missing_only is None else list(missing_only),
        )
        for status in statuses:
            if status == Status.NEW:
                report.new += 1
            elif status == Status.UPDATED:
                report.updated += 1
            elif status == Status.UNCHANGED:
                report.unchanged += 1
        return report


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.4g} ms"


def _test_of(record: CheckRecord) -> str:
    """The row's test: its file and name with the variant stripped, its check's name kept (``#big``)."""
    if record.entry is not None:
        test_file, name = record.entry
    else:
        test_file, _, name = record.test.partition("::")
    test, check = split_check_name(name)
    return f"{test_file}::{test.rsplit(f'[{record.variant}]', 1)[0]}{check}"


def _median_ms(median: float | None) -> str:
    """A side's median of all runs, said to be one (``median 4.227 ms``): the change beside it is
    another statistic, which its cell names."""
    if median is None or math.isnan(median):
        return "-"
    return f"median {_ms(median)}"


def decided_statistic(decided_by: str) -> str:
    """The statistic that decided, in a few words for the change cell (the JSON's ``decided_by`` has
    it whole): the change is read from it, not from the two medians beside it."""
    if AB_STATISTIC.split(",")[0] in decided_by:
        return "paired round ratios"
    if "fastest quarter" in decided_by:
        return "fastest round medians" + (" / canary" if "canary" in decided_by else "")
    return ""


def _change_cell(record: CheckRecord) -> str:
    statistic = decided_statistic(record.decided_by) if record.estimate else ""
    return f"{record.change} by {statistic}" if statistic and record.change != "-" else record.change


def latency_row(record: Mapping[str, Any]) -> tuple[str, ...] | None:
    """One latency check's row, read from its record (``reports/ci_files.py: latency_record``); None
    for one that did not measure (not timed, or an error: its failure says it)."""
    typed = CheckRecord.of(record)
    if typed.verdict in (Status.NOT_TIMED, Status.ERROR):
        return None
    medians = typed.medians
    reference = medians.reference if medians is not None else None
    runtimes = reference.get("runtimes") if reference is not None else None
    return (
        _test_of(typed),
        typed.variant,
        f"{typed.mode} ({runtimes})" if runtimes else typed.mode,
        _median_ms(medians.compared_ms if medians is not None else None),
        _median_ms(medians.current_ms if medians is not None else None),
        _change_cell(typed),
        typed.verdict,
    )


def latency_rows(records: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """The latency table's rows of latency checks' ``records``: those that measured."""
    return [row for row in map(latency_row, records) if row is not None]


def accuracy_check_row(record: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The accuracy table's row of a check: every accuracy check, passing ones and those that ended in
    an error (its first line) included; not the not-timed ones."""
    typed = CheckRecord.of(record)
    if typed.verdict == Status.NOT_TIMED:
        return None
    return accuracy_row(typed, _test_of(typed))


def check_row(record: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The common row of a check, read from the fields every record of a check kind has (memory,
    start-up, graph, and any registered kind): what it compared with, measured and decided. None
    for a check that ended in an error: its failure says it."""
    typed = CheckRecord.of(record)
    if typed.verdict == Status.ERROR:
        return None
    summary = typed.summary or "-"
    return (_test_of(typed), typed.variant, typed.kind, typed.path, summary, typed.change, typed.verdict)


def tables_lines(
    tables: Sequence[tuple[TerminalTable, Sequence[tuple[str, ...]]]], machine: str
) -> list[str]:
    """Each kind's table after the latency table: its title line, then its rows."""
    lines: list[str] = []
    for table, rows in tables:
        if rows:
            lines.append(table.title(rows, machine))
            lines += format_table([table.headers, *rows])
    return lines


def latency_table(
    rows: Sequence[tuple[str, ...]],
    machine: str,
    *,
    missing: int,
    elsewhere: Sequence[str] = (),
    runtimes_unavailable: Mapping[str, int] | None = None,
    shallow: int = 0,
) -> list[str]:
    """One row per latency check: test, variant, mode, reference median, current median, change, verdict.

    ``shallow``: how many of the ``missing`` are a changed model whose recorded one a shallow clone
    lacks (fetching the history is their fix, not recording);
    ``elsewhere``: machines that hold latency figures for the checks missing here;
    ``runtimes_unavailable``: recorded runtimes not to be had here, with the checks they left missing."""
    if not rows:
        return []
    lines = [LATENCY_TABLE.title(rows, machine), *format_table([LATENCY_TABLE.headers, *rows])]
    inconclusive = sum(1 for row in rows if row[-1].startswith("inconclusive"))
    if inconclusive:
        lines.append(
            f"{inconclusive} check(s) inconclusive: the noise could not rule out a slowdown beyond the "
            "threshold ('could detect' = the smallest change that run would have caught); give them "
            "more time (--ortperf-budget, --ortperf-ab-budget in mode a/b) or compare side by side "
            "(--ortperf-ab)."
        )
    if shallow:
        lines.append(f"{shallow} check(s) not judged: their model changed, and {SHALLOW}.")
    missing -= shallow
    if missing:
        lines.append(
            f"{missing} check(s) have no baseline for machine '{machine}'"
            + (f" (figures exist for: {', '.join(elsewhere)})" if elsewhere else "")
            + "; record them with "
            "'ortperf update' and the same arguments (or pytest --ortperf-update)"
            + (f" and ORTPERF_MACHINE={runner_class(machine)}" if runner_class(machine) else "")
            + "."
        )
    for runtime, count in (runtimes_unavailable or {}).items():
        flavour, _, version = runtime.partition(" ")
        lines.append(
            f"{count} of them: recorded by {runtime}, which is not available here; what it measured is "
            "not this runtime's reference, so it was not judged (to judge: ortperf env create "
            f"{flavour}=={version}; or re-record them with this runtime)."
        )
    return lines


def not_timed_line(counts: Mapping[str, int]) -> str:
    """The checks --ortperf-timing=off skipped, kind by kind (``2 latency checks and 1 throughput check``)."""
    each = [f"{count} {kind} check{'s' if count != 1 else ''}" for kind, count in counts.items()]
    checks = ", ".join(each[:-1]) + f" and {each[-1]}" if len(each) > 1 else "".join(each)
    return (
        f"timing off (--ortperf-timing=off): {checks} not timed; sessions were run and accuracy checks "
        "compared outputs"
    )


def update_lines(report: UpdateReport, *, prune: bool) -> list[str]:
    counts = (
        f"ortperf update: {report.updated} updated, {report.new - report.added_here} new, "
        + (f"{report.added_here} added for this hardware, " if report.added_here else "")
        + f"{report.unchanged} unchanged, {len(report.unused)} unused"
    )
    if report.noisy:
        counts += f", {len(report.noisy)} noisy"
    if report.coarse:
        counts += f", {len(report.coarse)} coarse"
    if report.kept:
        counts += f" ({len(report.kept)} of the unchanged kept over noisier figures)"
    lines = [counts]
    if report.missing_only is not None:
        lines += missing_only_lines(report.missing_only)
    if report.noisy:
        lines.append(
            "noisy figures (written with their spread; where they decide, the spread widens the interval; "
            "record them again on a quieter machine to sharpen them):"
        )
        lines += [f"  {line}" for line in report.noisy]
    if report.coarse:
        lines.append(
            "coarse figures (they will decide: nothing keeps the model, or drift gates; measured again up to "
            "the recording cap and still unable to detect a change of the threshold, so a smaller change "
            "will read inconclusive; record them again on a quieter machine):"
        )
        lines += [f"  {line}" for line in report.coarse]
    if report.kept:
        lines.append(
            "stored figures kept (an unchanged recipe never takes noisier figures; record again on a "
            "quieter machine to replace them):"
        )
        lines += [f"  {line}" for line in report.kept]
    lines += unkept_lines(report.unkept)
    if report.unused:
        action = "pruned" if prune else "kept; --ortperf-prune deletes them"
        lines.append(f"unused baselines ({action}):")
        lines += [f"  {nodeid}" for nodeid in report.unused]
    lines += [f"wrote {path}" for path in report.written]
    return lines


UNKEPT_SHOWN = 3  # tests named whose figures were measured until settled; the rest are counted


def unkept_lines(unkept: Sequence[str]) -> list[str]:
    """Why this update was slow where it was: figures of models that git does not keep yet will
    decide (nothing can rebuild them later), so they were measured until settled; a committed model's
    figures only inform and are recorded short."""
    if not unkept:
        return []
    count = len(unkept)
    named = ", ".join(unkept[:UNKEPT_SHOWN]) + (
        f" and {count - UNKEPT_SHOWN} more" if count > UNKEPT_SHOWN else ""
    )
    return [
        f"{count} latency figure{'s' if count != 1 else ''} recorded until settled (the slow way): git does "
        "not keep their model yet, so no later run can rebuild it and these figures will decide "
        f"({named}). Commit the models first (git add and git commit; for a model DVC keeps, its .dvc "
        "file or dvc.lock, and dvc push), then run ortperf update: figures of a model git or DVC keeps "
        "only inform and are recorded short."
    ]


def missing_only_lines(notes: Sequence[Mapping[str, Any]]) -> list[str]:
    """What ``--ortperf-update=missing`` recorded and what it judged: a figure taken in is never
    mistaken for a verdict. Checks whose recipe changed are listed with what changed."""
    recorded = sum(note.get("action") == "recorded" for note in notes)
    judged = len(notes) - recorded
    lines = [
        f"--ortperf-update=missing: {recorded} check(s) recorded (never recorded, or figures this "
        f"hardware lacked under an unchanged recipe); {judged} judged as in a plain run, nothing "
        "written for them"
    ]
    changed = [note for note in notes if note.get("action") == "judged" and note.get("changes")]
    if changed:
        lines.append(
            "judged, not recorded: their recipe changed since it was recorded (a changed model, "
            "settings, inputs or runtime is never taken in; accept it with a plain 'ortperf update'):"
        )
        for note in changed:
            lines.append(f"  {note['test']} ({note['kind']}): {'; '.join(str(c) for c in note['changes'])}")
    return lines


def lost_worker_line(worker: str, *, update: bool) -> str:
    """An xdist worker that went down before handing over what it had."""
    if update:
        return (
            f"worker {worker} went down: its staged baselines were not written; rerun the update "
            "for the tests it ran"
        )
    return f"worker {worker} went down: its ortperf results are missing from this summary and the reports"


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def profile_lines(record: Mapping[str, Any], *, top: int = 5) -> list[str]:
    """A marked test's profile in a few lines, read from its record (``reports/ci_files.py:
    profile_record``): runs, total and per-run time, top op types and nodes, providers, fallbacks,
    warnings, where."""
    profiled = ProfileRecord.of(record)
    nodeid = profiled.test
    if not profiled.traces:
        return [
            f"profile {nodeid}: no run was profiled (the test made no run through ort_session "
            "and no latency check measured); no trace written"
        ]
    runs, per_run, profile = profiled.runs, profiled.run_ms, profiled.profile
    ops = sorted(
        ((str(op), float(v["us"])) for op, v in _mapping(profile.get("ops")).items()), key=lambda o: -o[1]
    )
    total = sum(us for _, us in ops) or 1.0
    nodes = sorted(
        ((str(name), str(v["op"]), float(v["us"])) for name, v in _mapping(profile.get("nodes")).items()),
        key=lambda n: -n[2],
    )
    providers = profiled.providers
    op_text = ", ".join(f"{op} {us / total:.0%}" for op, us in ops[:top])
    provider_text = ", ".join(f"{name} {float(us) / total:.0%}" for name, us in providers.items())
    node_text = ", ".join(f"{name} ({op}) {us / total:.0%}" for name, op, us in nodes[:top])
    lines = [
        f"profile {nodeid}: {profiled.traces} run(s), {per_run * max(runs, 1):.3f} ms in total, "
        f"{per_run if runs else 0.0:.3f} ms per run; top ops: {op_text}; providers: {provider_text}",
        f"  top nodes: {node_text}",
    ]
    fallback = list(profiled.fallback_nodes)
    if fallback:
        lines.append(f"  {len(fallback)} node(s) fell back to CPU: {', '.join(fallback[:top])}")
    lines += [f"  WARNING: {warning}" for warning in profiled.warnings]
    where = profiled.directory
    lines.append(f"  traces and summary.json in {where} (ortperf profile {shlex.quote(str(where))})")
    return lines


LOCK_WAIT_SHOWN_S = 1.0  # a check that waited longer than this for the timing lock says who held it
LOCK_HOLDERS_SHOWN = 3  # other processes named; the rest are counted


INPUTS_TESTS_SHOWN = 3  # tests named per set of inputs; the rest are counted


def inputs_lines(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the latency checks were fed, from their records (workers' included): one line per set of
    inputs (each input's dtype and shape, where the data came from) with the tests measured on it,
    so that a reader sees what was measured (``inputs: x float32[1, 3, 64, 64] (synthetic(seed=0))
    for test_det.py::test_latency``)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for record in typed(records):
        shapes = record.inputs
        if not record.times_rounds or shapes is None:
            continue
        fed = ", ".join(f"{name} {shape}" for name, shape in shapes.items()) or "no inputs"
        test = record.test.replace(f"[{record.variant}]", "")
        tests = groups.setdefault((fed, record.inputs_source), [])
        if test not in tests:
            tests.append(test)
    lines = []
    for (fed, source), tests in groups.items():
        shown = ", ".join(tests[:INPUTS_TESTS_SHOWN])
        rest = len(tests) - INPUTS_TESTS_SHOWN
        more = f" and {rest} more" if rest > 0 else ""
        lines.append(f"inputs: {fed}{f' ({source})' if source else ''} for {shown}{more}")
    return lines


def lock_wait_lines(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Who held the timing lock while checks waited more than :data:`LOCK_WAIT_SHOWN_S` for it, from
    the checks' records (workers' included): one line per other process, longest wait first
    (``waiting 22.8 s for the timing lock, held by pid 1234 (pytest tests/) since 12:03:05``), and
    one for this run's own xdist workers."""
    waits: list[LockWait] = []
    for record in typed(records):
        seconds = record.seconds
        if not record.times_rounds or not record.timing_lock or seconds is None:
            continue
        if GateSeconds.from_dict(seconds).waiting <= LOCK_WAIT_SHOWN_S:
            continue
        waits += filter(None, (LockWait.from_dict(w) for w in record.timing_lock))
    merged = merge_waits(waits)
    ours = [w for w in merged if w.holder is not None and w.holder.this_run]
    others = [w for w in merged if w not in ours]
    lines = [wait.describe() for wait in others[:LOCK_HOLDERS_SHOWN]]
    rest = others[LOCK_HOLDERS_SHOWN:]
    if rest:
        held = sum(w.seconds for w in rest)
        lines.append(f"waiting {held:.1f} s for the timing lock, held by {len(rest)} other processes")
    if ours:
        workers = sorted({w.holder.worker or f"pid {w.holder.pid}" for w in ours if w.holder is not None})
        lines.append(
            f"waiting {sum(w.seconds for w in ours):.1f} s for the timing lock, held by this run's xdist "
            f"worker{'s' if len(workers) > 1 else ''} {', '.join(workers)}"
        )
    return lines


@dataclass(frozen=True)
class RunSummary:
    """Everything the terminal summary shows, gathered by the run at its end."""

    machine: str
    sessions: Sequence[str] = ()  # sessions built and reused, providers that could not run
    runtimes: Sequence[str] = ()  # recorded runtimes fetched, or why not (gate/runtimes.py)
    errors: Sequence[str] = ()  # errors of the run as a whole, lost xdist workers included
    repaired: Sequence[Repaired] = ()  # damaged files set aside, what of each was kept and lost
    strict_unused: Sequence[str] = ()
    unused_hint: Sequence[str] = ()
    rows: Sequence[tuple[str, ...]] = ()  # the latency table's
    # every other kind's table and its rows, in the order of the kinds (gate/registry.py: terminal_tables)
    tables: Sequence[tuple[TerminalTable, Sequence[tuple[str, ...]]]] = ()
    missing: int = 0
    shallow: int = 0  # of the missing: a changed model whose recorded one a shallow clone lacks
    elsewhere: Sequence[str] = ()  # machines with latency figures for the checks missing here
    # recorded runtimes that could not be had here -> the latency checks they left missing
    runtimes_unavailable: Mapping[str, int] = field(default_factory=dict)
    timing_mode: str = ""
    update: UpdateReport | None = None
    prune: bool = False
    reported_differences: Sequence[str] = ()
    profile_lines: Sequence[str] = ()
    gate_time: str = ""  # where the latency checks' time went (reports.ci_files.gate_time)
    not_timed: Mapping[str, int] = field(
        default_factory=dict
    )  # checks skipped by --ortperf-timing=off, by kind
    lock_waits: Sequence[str] = ()  # who held the timing lock while checks waited (lock_wait_lines)
    inputs: Sequence[str] = ()  # what the latency checks were fed (inputs_lines)
    tradeoffs: Sequence[TradeoffTable] = ()  # each model's variants side by side (reports/tradeoffs.py)
    not_compared: Sequence[str] = ()  # outputs an accuracy check did not compare, and why
    accept: str = ""  # one command that accepts every failing check's test (store/keys.py: accept_all)


def repaired_lines(repaired: Repaired) -> list[str]:
    """A repaired file: where the damaged one went, how many of its entries the new one kept, and
    each part that is only in the damaged copy (a repair never ends with fewer entries unnamed)."""
    line = f"repaired {repaired.path}: the damaged file was kept as {repaired.backup.name}"
    if repaired.kept:
        line += f"; {repaired.kept} {'entry' if repaired.kept == 1 else 'entries'} still readable in it kept"
    lines = [line]
    if repaired.lost:
        count = len(repaired.lost)
        lines.append(
            f"WARNING: {count} damaged {'part' if count == 1 else 'parts'} of {repaired.path} "
            f"{'is' if count == 1 else 'are'} only in {repaired.backup.name}, not recorded afresh by this "
            "run (select their tests in an update to record them, or copy them back by hand):"
        )
        lines += [f"  {what}" for what in repaired.lost]
    return lines


def summary_lines(summary: RunSummary) -> list[str]:
    """The ortperf section of the terminal summary, in order; empty when there is nothing to say."""
    lines = list(summary.sessions)
    lines += summary.runtimes
    lines += [f"ERROR: {error}" for error in summary.errors]
    for repaired in summary.repaired:
        lines += repaired_lines(repaired)
    if summary.strict_unused:
        lines.append(f"ERROR: {len(summary.strict_unused)} unused baseline entries (--ortperf-strict):")
        lines += [f"  {nodeid}" for nodeid in summary.strict_unused]
    lines += summary.unused_hint
    if summary.rows:
        lines += latency_table(
            summary.rows,
            summary.machine,
            missing=summary.missing,
            elsewhere=summary.elsewhere,
            runtimes_unavailable=summary.runtimes_unavailable,
            shallow=summary.shallow,
        )
        lines += summary.inputs
        lines.append(f"timing: {summary.timing_mode}")
    lines += tables_lines(summary.tables, summary.machine)
    for table in summary.tradeoffs:
        lines += [heading(table), *format_table([HEADERS, *cells(table)])]
    if summary.not_timed:
        lines.append(not_timed_line(summary.not_timed))
    if summary.gate_time:
        lines.append(summary.gate_time)
    lines += summary.lock_waits
    if summary.update is not None:
        lines += update_lines(summary.update, prune=summary.prune)
    lines += summary.reported_differences
    if summary.not_compared:
        lines.append(f"outputs not compared ({len(summary.not_compared)}):")
        lines += [f"  {line}" for line in summary.not_compared]
    lines += summary.profile_lines
    if summary.accept:
        lines.append(
            f"to accept every failing check above at once (each test whole, every variant): {summary.accept}"
        )
    return lines
