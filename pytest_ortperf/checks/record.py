"""A check's record, typed: the one form every report, summary and bisect step reads a check in.

A check publishes its record as plain JSON-able data (each kind builds its own fields). It enters the
run once, through :meth:`CheckRecord.of`, which reads the fields every report asks of any check (who,
what, the verdict, why) and the fields only some kinds write (a recording's notes, a latency check's
medians, an accuracy check's references, a contract), each into a typed attribute, once. The record
is also the read-only mapping of its JSON fields, so that the JSON report writes it unchanged
(``dict(record)``) and a kind's own row or drawing can read a field the common type does not name.

A record read from a file (a saved report, another version's, edited by hand) may hold anything:
an attribute whose field is not of its form reads as empty (``""``, ``None``, ``()``) rather than
raising, and the record names that field in :attr:`CheckRecord.damaged`, so that a report says what
it could not read instead of leaving it out unsaid.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name)
    return "" if value is None else str(value)


def _mapping(value: object) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None


def report_number(value: object) -> float | None:
    """A figure of a record (JSON writes NaN and the infinities as strings), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    return None


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if isinstance(value, (list, tuple)) else ()


def _objects(value: object) -> tuple[Mapping[str, Any], ...]:
    return (
        tuple(item for item in value if isinstance(item, Mapping)) if isinstance(value, (list, tuple)) else ()
    )


@dataclass(frozen=True)
class RecordingNotes:
    """What an update noted of the figures it wrote (``latency/recording.py``): how noisy they are and
    why, what it kept instead, whether they settled, and what they cannot detect."""

    spread: float | None = None  # the figures' recorded spread; None: no recording made
    short: bool = False  # short figures, that only inform (not measured until settled)
    noisy: bool = False
    noise: str = ""  # why they are noisy, as ``ortperf show`` says it
    kept: str = ""  # stored figures kept, quieter than the update's own, and why
    coarse: str = ""  # figures that will decide and cannot detect the threshold: what they can

    @property
    def settled(self) -> bool:
        return self.spread is not None and not self.short


@dataclass(frozen=True)
class Medians:
    """A latency check's medians (ms): today's, and what it compared with (the A/B reference or the
    baseline), with the mode that says which."""

    current_ms: float | None
    compared_ms: float | None
    reference: Mapping[str, Any] | None  # the A/B reference's fields, as written
    baseline: Mapping[str, Any] | None  # the baseline's fields, as written

    @property
    def compared(self) -> Mapping[str, Any] | None:
        return self.reference if self.reference is not None else self.baseline


@dataclass(frozen=True, eq=False)
class CheckRecord(Mapping[str, Any]):
    """One check's record: the fields every check has, typed; the fields of a few kinds, typed where
    they are written (``None`` or empty in the records of the others); and the mapping of all its
    JSON fields, as published."""

    test: str
    kind: str
    verdict: str
    failed: bool
    variant: str = ""
    machine: str = ""
    message: str = ""
    path: str = ""  # the plan the check took (``checks/paths.py``)
    mode: str = ""  # "baseline", "a/b", ...
    change: str = ""  # the change as the terminal and JUnit show it ("-" for none)
    summary_of_change: str = ""  # a latency record's ``change_summary`` as written ("" for none)
    summary: str = ""  # what was measured, in a few words (kinds without a table of their own)
    decided_by: str = ""
    stored_reason: str = ""
    entry: tuple[str, str] | None = None  # the baseline entry: file and test name
    accept: str | None = None  # the command that records it (None: no failure to accept; "": none can)
    changes: tuple[str, ...] = ()  # what changed since the baseline
    explanations: tuple[Mapping[str, Any], ...] = ()
    model: Mapping[str, Any] | None = None  # what model the test runs (its fp32 model, precision)
    seconds: Mapping[str, Any] | None = None  # the check's time by phase
    update_missing: Mapping[str, Any] | None = None  # what --ortperf-update=missing did with it
    runtime_unavailable: str = ""  # the recorded runtime that could not be had here
    recording: RecordingNotes = field(default_factory=RecordingNotes)
    medians: Medians | None = None  # the medians of a check that writes ``current`` (latency's)
    estimate: Mapping[str, Any] | None = None  # the decisive change: ratio, interval, threshold
    inputs: Mapping[str, Any] | None = None  # each input as fed, where the kind says
    inputs_source: str = ""
    timing_lock: tuple[Mapping[str, Any], ...] = ()  # the timing lock's waits
    references: tuple[Mapping[str, Any], ...] = ()  # an accuracy check's comparisons
    contract: Mapping[str, Any] | None = None  # a contract's bound and what it was against
    speedup: Mapping[str, Any] | None = None  # a contract's measured speedup
    agreement: float | None = None  # a contract's agreement of outputs
    # The sides as the kind wrote them (latency's medians and rounds, memory's bytes, the graph's ops):
    # what the check measured, what it compared with, and the baseline it stands on.
    current: Mapping[str, Any] | None = None
    reference: Mapping[str, Any] | None = None
    baseline: Mapping[str, Any] | None = None
    drift: Mapping[str, Any] | None = None  # an unchanged check's drift since recording
    operators: Mapping[str, Any] | None = None  # the operator profiles of both sides, where explained
    comparisons: tuple[Mapping[str, Any], ...] = ()  # a footprint check's figure by figure
    figures: Mapping[str, Any] | None = None  # a kind's own figures (``kind_result.py``)
    notes: tuple[str, ...] = ()
    not_compared: tuple[Mapping[str, Any], ...] = ()  # outputs an accuracy check did not judge
    drawn: str = ""  # the HTML its kind's drawing rendered into it (``reports/html/fields.py: DRAWN``)
    damaged: tuple[str, ...] = ()  # fields present but not of the form ortperf writes (a hand-edited report)
    fields: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> CheckRecord:
        """The record of published (or read) fields ``data``; a record already typed is itself."""
        if isinstance(data, CheckRecord):
            return data
        entry = data.get("entry")
        current, reference, baseline = (
            _mapping(data.get(name)) for name in ("current", "reference", "baseline")
        )
        medians = None
        if current is not None:
            compared = reference if reference is not None else baseline
            medians = Medians(
                current_ms=report_number(current.get("median_ms")),
                compared_ms=report_number(compared.get("median_ms")) if compared is not None else None,
                reference=reference,
                baseline=baseline,
            )
        accept = data.get("accept")
        return cls(
            test=_text(data, "test"),
            kind=_text(data, "kind"),
            verdict=_text(data, "verdict"),
            failed=bool(data.get("failed")),
            variant=_text(data, "variant"),
            machine=_text(data, "machine"),
            message=_text(data, "message"),
            path=_text(data, "path"),
            mode=_text(data, "mode"),
            change=_text(data, "change_summary") or _text(data, "change_text") or "-",
            summary_of_change=_text(data, "change_summary"),
            summary=_text(data, "summary"),
            decided_by=_text(data, "decided_by"),
            stored_reason=_text(data, "stored_reason"),
            entry=(str(entry[0]), str(entry[1]))
            if isinstance(entry, (list, tuple)) and len(entry) == 2
            else None,
            accept=None if accept is None else str(accept),
            changes=_texts(data.get("changed_since_baseline")),
            explanations=_objects(data.get("explanations")),
            model=_mapping(data.get("model")),
            seconds=_mapping(data.get("seconds")),
            update_missing=_mapping(data.get("update_missing")),
            runtime_unavailable=_text(data, "runtime_unavailable"),
            recording=RecordingNotes(
                spread=report_number(data.get("recorded_spread")),
                short=bool(data.get("short_recording")),
                noisy=bool(data.get("noisy")),
                noise=_text(data, "noise"),
                kept=_text(data, "kept"),
                coarse=_text(data, "coarse"),
            ),
            medians=medians,
            estimate=_mapping(data.get("change")),
            inputs=_mapping(data.get("inputs")),
            inputs_source=_text(data, "inputs_source"),
            timing_lock=_objects(data.get("timing_lock")),
            references=_objects(data.get("references")),
            contract=_mapping(data.get("contract")),
            speedup=_mapping(data.get("speedup")),
            agreement=report_number(data.get("agreement")),
            current=current,
            reference=reference,
            baseline=baseline,
            drift=_mapping(data.get("drift")),
            operators=_mapping(data.get("operators")),
            comparisons=_objects(data.get("comparisons")),
            figures=_mapping(data.get("figures")),
            notes=tuple(str(note) for note in data.get("notes") or () if note)
            if isinstance(data.get("notes"), (list, tuple))
            else (),
            not_compared=_objects(data.get("not_compared")),
            drawn=data["drawing_html"] if isinstance(data.get("drawing_html"), str) else "",
            damaged=_damaged(data),
            fields=dict(data),
        )

    def with_fields(self, **more: Any) -> CheckRecord:
        """This record with ``more`` fields added or replaced, typed again."""
        return CheckRecord.of({**self.fields, **more})

    def as_dict(self) -> dict[str, Any]:
        """The JSON form, as published."""
        return dict(self.fields)

    @property
    def times_rounds(self) -> bool:
        """Whether the check timed rounds of runs (latency's): its ``current`` says each round's median,
        so its medians, rounds, inputs and time are a timed measurement's."""
        return self.current is not None and "round_medians_ms" in self.current

    @property
    def compares_outputs(self) -> bool:
        """Whether the check compared outputs (accuracy's): its record lists what it compared them with."""
        return "references" in self.fields

    @property
    def ratio(self) -> float | None:
        """The decisive change's ratio (current / compared), where one was estimated."""
        value = report_number(self.estimate.get("ratio")) if self.estimate is not None else None
        return value if value is not None and math.isfinite(value) else None

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    __eq__ = Mapping.__eq__  # equal to the same fields, typed or not
    __hash__ = None  # type: ignore[assignment]  # a mapping of mutable fields


@dataclass(frozen=True)
class ProfileRecord:
    """A profiled test's record (``reports/ci_files.py: profile_record``), typed where it enters a
    report: its runs, time per run, operator profile, time per provider, fallbacks and warnings."""

    test: str
    runs: int = 0
    run_ms: float = 0.0
    profile: Mapping[str, Any] = field(default_factory=dict)  # by op type and node, as a baseline keeps it
    providers: Mapping[str, Any] = field(default_factory=dict)  # microseconds per run, per provider
    fallback_nodes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    traces: int = 0
    directory: str = ""

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ProfileRecord:
        runs, per_run, traces = (report_number(data.get(name)) for name in ("runs", "run_ms", "traces"))
        return cls(
            test=_text(data, "test"),
            runs=int(runs or 0),
            run_ms=per_run or 0.0,
            profile=_mapping(data.get("profile")) or {},
            providers=_mapping(data.get("providers")) or {},
            fallback_nodes=_texts(data.get("fallback_nodes")),
            warnings=_texts(data.get("warnings")),
            traces=int(traces or 0),
            directory=_text(data, "directory"),
        )


_OBJECTS = (
    "model", "seconds", "update_missing", "inputs", "contract", "speedup", "current", "reference", "baseline",
    "drift", "operators", "figures", "change",
)  # fmt: skip
_LISTS = (
    "entry",
    "explanations",
    "timing_lock",
    "references",
    "comparisons",
    "not_compared",
    "changed_since_baseline",
)


def _damaged(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The fields of ``data`` that are there and not of their form (read as empty)."""
    objects = [
        name for name in _OBJECTS if data.get(name) is not None and not isinstance(data[name], Mapping)
    ]
    lists = [
        name for name in _LISTS if data.get(name) is not None and not isinstance(data[name], (list, tuple))
    ]
    return tuple(sorted(objects + lists))


def typed(records: Sequence[Mapping[str, Any]]) -> list[CheckRecord]:
    """``records`` as typed records."""
    return [CheckRecord.of(record) for record in records]


def check_in_report(report: Mapping[str, Any], nodeid: str, kind: str) -> CheckRecord | None:
    """The record of ``nodeid``'s check of ``kind`` in an ``--ortperf-report`` document (its first,
    matched by the node id's path from its last ``/``, as a run in another directory names it), or
    None where the report holds none."""
    tail = nodeid.split("/")[-1]
    checks = report.get("checks", [])
    for check in typed([c for c in checks if isinstance(c, Mapping)] if isinstance(checks, list) else []):
        if check.kind == kind and check.test.split("/")[-1] == tail:
            return check
    return None
