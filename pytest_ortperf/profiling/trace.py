"""ONNX Runtime profile traces: reading, slicing one run out, and summarizing.

A trace is a JSON array of Chrome-trace complete events ``{cat, pid, tid, dur,
ts, ph, name, args}`` with integer microseconds. Session-level traces hold
every run; a run is a ``model_run`` Session event, and its nodes are the
``Node`` events on the same thread inside its time window (exact even when
several threads run the same session at once). Summaries key on the raw
``provider`` string of each node, so any execution provider is reported. A
marked test's ``summary.json`` (written by ``profiling.book``) reads back into
the same summary.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_ortperf.errors import OrtperfError

KERNEL_SUFFIX = "_kernel_time"
CPU = "CPUExecutionProvider"


class TraceError(OrtperfError):
    """A file that is not an ONNX Runtime trace; the message names the file and why."""


@dataclass(frozen=True)
class TraceEvent:
    cat: str
    name: str
    ts: int
    dur: int
    tid: int
    pid: int = 0
    args: Mapping[str, Any] = field(default_factory=dict)

    @property
    def node(self) -> str:
        return self.name.removesuffix(KERNEL_SUFFIX)

    @property
    def op(self) -> str:
        return str(self.args.get("op_name", "?"))

    @property
    def provider(self) -> str:
        return str(self.args.get("provider", "?"))

    def as_dict(self) -> dict[str, Any]:
        return {
            "cat": self.cat, "name": self.name, "ts": self.ts, "dur": self.dur, "tid": self.tid,
            "pid": self.pid, "ph": "X", "args": dict(self.args),
        }  # fmt: skip


def parse_trace(text: str, *, source: str) -> list[TraceEvent]:
    """Events of a trace, sorted by start time; a clear :class:`TraceError` for anything else.

    ONNX Runtime writes a JSON array of events; the Chrome trace format also allows an object
    whose ``traceEvents`` holds them, which is read the same way."""
    return _events(_decode(text, source=source), source=source)


def _decode(text: str, *, source: str) -> Any:
    if not text.strip():
        raise TraceError(f"'{source}' is empty, not an ONNX Runtime trace.")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, huge integers, deep nesting
        raise TraceError(f"'{source}' is not JSON ({exc}), so not an ONNX Runtime trace.") from None


def _events(data: Any, *, source: str) -> list[TraceEvent]:
    if isinstance(data, Mapping) and isinstance(data.get("traceEvents"), list):
        data = data["traceEvents"]
    if not isinstance(data, list):
        raise TraceError(
            f"'{source}' holds a JSON {type(data).__name__}, not a list of trace events (nor an object "
            "with traceEvents, nor a summary.json that pytest-ortperf writes)."
        )
    events = []
    for position, raw in enumerate(data):
        if not isinstance(raw, Mapping):
            raise TraceError(f"'{source}': event {position} is not an object.")
        try:
            events.append(
                TraceEvent(
                    cat=str(raw["cat"]), name=str(raw["name"]), ts=_int(raw["ts"]), dur=_int(raw["dur"]),
                    tid=_int(raw.get("tid", 0)), pid=_int(raw.get("pid", 0)),
                    args=_args(raw.get("args")),
                )
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise TraceError(
                f"'{source}': event {position} lacks a valid {exc} field of a trace event."
            ) from None
    if events and not any(e.cat in ("Session", "Node", "Kernel") for e in events):
        raise TraceError(f"'{source}' has no Session, Node or Kernel events: not an ONNX Runtime trace.")
    return sorted(events, key=lambda e: (e.ts, -e.dur))


def _args(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


_MAX_US = 2**53  # microseconds: far beyond any real trace, and exact in a float


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(value)
    try:
        number = int(float(value))
    except (OverflowError, ValueError):
        raise TypeError(value) from None
    if not -_MAX_US <= number <= _MAX_US:
        raise TypeError(value)
    return number


def load_trace(path: Path) -> list[TraceEvent]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"cannot read trace '{path}': {exc}") from None
    return parse_trace(text, source=str(path))


def model_runs(events: Iterable[TraceEvent]) -> list[TraceEvent]:
    return [e for e in events if e.cat == "Session" and e.name == "model_run"]


def slice_run(
    events: Sequence[TraceEvent], run: TraceEvent, *, callers: Collection[int] | None = None
) -> list[TraceEvent]:
    """The events of one run: same thread, inside the run's window.

    With ``callers`` (the threads that called ``run`` on this session), Node
    events inside the window on any other thread are the run's too: in
    ORT_PARALLEL mode nodes execute on inter-op pool threads, never on the
    caller's. They are only unambiguous when no other run overlaps the window.
    """
    end = run.ts + run.dur
    kinds = ("Session", "Node", "Kernel")

    def own(e: TraceEvent) -> bool:
        if e.tid == run.tid:
            return True
        return callers is not None and e.cat == "Node" and e.tid not in callers

    return [e for e in events if run.ts <= e.ts and e.ts + e.dur <= end and e.cat in kinds and own(e)]


def overlapping_runs(runs: Sequence[TraceEvent]) -> set[int]:
    """Indexes (into ``runs``) of runs whose window overlaps another run's window."""
    order = sorted(range(len(runs)), key=lambda i: runs[i].ts)
    found: set[int] = set()
    latest_end = None
    for position, index in enumerate(order):
        run = runs[index]
        end = run.ts + run.dur
        if latest_end is not None and latest_end > run.ts:
            found.add(index)
        if position + 1 < len(order) and runs[order[position + 1]].ts < end:
            found.add(index)
        latest_end = end if latest_end is None else max(latest_end, end)
    return found


@dataclass(frozen=True)
class OpTime:
    name: str
    us: int
    count: int
    op: str = ""
    provider: str = ""


@dataclass(frozen=True)
class ProfileSummary:
    """Where the time of one or more runs went."""

    runs: int
    run_us: int
    node_us: int
    by_op: tuple[OpTime, ...]
    by_node: tuple[OpTime, ...]
    by_provider: tuple[OpTime, ...]
    fallback_nodes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        def rows(items: Iterable[OpTime]) -> list[dict[str, Any]]:
            return [
                {"name": i.name, "us": i.us, "count": i.count, "op": i.op, "provider": i.provider}
                for i in items
            ]

        return {
            "runs": self.runs, "run_us": self.run_us, "node_us": self.node_us,
            "by_op": rows(self.by_op), "by_node": rows(self.by_node), "by_provider": rows(self.by_provider),
            "fallback_nodes": list(self.fallback_nodes),
        }  # fmt: skip


SUMMARY_TABLES = ("by_op", "by_node", "by_provider")


@dataclass(frozen=True)
class SummaryFile:
    """A marked test's ``summary.json``, as pytest-ortperf writes it beside the test's traces."""

    path: Path
    test: str
    variant: str
    traces: tuple[str, ...]
    warnings: tuple[str, ...]
    summary: ProfileSummary

    def as_dict(self) -> dict[str, Any]:
        return {
            "test": self.test, "variant": self.variant, "traces": list(self.traces),
            "warnings": list(self.warnings), **self.summary.as_dict(),
        }  # fmt: skip


def is_summary_document(data: Any) -> bool:
    """Whether a JSON value is a summary.json of pytest-ortperf (not a trace)."""
    return isinstance(data, Mapping) and "test" in data and all(key in data for key in SUMMARY_TABLES)


def parse_summary(data: Mapping[str, Any], *, path: Path) -> SummaryFile:
    """A summary.json's content; a :class:`TraceError` naming the file and the field that is wrong."""
    source = str(path)

    def text(value: Any, field: str) -> str:
        if not isinstance(value, str):
            raise TraceError(f"'{source}': summary field {field} is not text.")
        return value

    def texts(field: str) -> tuple[str, ...]:
        value = data.get(field, [])
        if not isinstance(value, list):
            raise TraceError(f"'{source}': summary field {field} is not a list.")
        return tuple(text(item, field) for item in value)

    def number(value: Any, field: str) -> int:
        try:
            found = _int(value)
        except TypeError:
            raise TraceError(f"'{source}': summary field {field} is not a number.") from None
        if found < 0:
            raise TraceError(f"'{source}': summary field {field} is negative.")
        return found

    def rows(field: str) -> tuple[OpTime, ...]:
        value = data[field]
        if not isinstance(value, list):
            raise TraceError(f"'{source}': summary field {field} is not a list.")
        found = []
        for position, row in enumerate(value):
            where = f"{field}[{position}]"
            if not isinstance(row, Mapping):
                raise TraceError(f"'{source}': summary field {where} is not an object.")
            found.append(
                OpTime(
                    name=text(row.get("name"), f"{where}.name"),
                    us=number(row.get("us"), f"{where}.us"),
                    count=number(row.get("count"), f"{where}.count"),
                    op=text(row.get("op", ""), f"{where}.op"),
                    provider=text(row.get("provider", ""), f"{where}.provider"),
                )
            )
        return _ranked(found)

    summary = ProfileSummary(
        runs=number(data.get("runs"), "runs"),
        run_us=number(data.get("run_us"), "run_us"),
        node_us=number(data.get("node_us"), "node_us"),
        by_op=rows("by_op"),
        by_node=rows("by_node"),
        by_provider=rows("by_provider"),
        fallback_nodes=texts("fallback_nodes"),
    )
    return SummaryFile(
        path=path,
        test=text(data["test"], "test"),
        variant=text(data.get("variant", ""), "variant"),
        traces=texts("traces"),
        warnings=texts("warnings"),
        summary=summary,
    )


def load_profile(path: Path) -> list[TraceEvent] | SummaryFile:
    """A trace's events, or a marked test's summary.json; a clear :class:`TraceError` for anything else."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"cannot read trace '{path}': {exc}") from None
    data = _decode(text, source=str(path))
    if is_summary_document(data):
        return parse_summary(data, path=path)
    return _events(data, source=str(path))


def with_requested_provider(summary: ProfileSummary, requested_provider: str | None) -> ProfileSummary:
    """``summary`` with its CPU fallbacks found again for ``requested_provider`` (None: as it is)."""
    if requested_provider is None:
        return summary
    fallback: tuple[str, ...] = ()
    if requested_provider != CPU:
        fallback = tuple(sorted({node.name for node in summary.by_node if node.provider == CPU}))
    return replace(summary, fallback_nodes=fallback)


def summarize(events: Iterable[TraceEvent], *, requested_provider: str | None = None) -> ProfileSummary:
    """Time per op type, node and provider; nodes that ran on CPU when an accelerator was asked for."""
    events = list(events)
    nodes = [e for e in events if e.cat == "Node"]
    by_op: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_node: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    by_provider: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in nodes:
        for bucket in (by_op[e.op], by_node[(e.node, e.op, e.provider)], by_provider[e.provider]):
            bucket[0] += e.dur
            bucket[1] += 1
    for e in events:
        if e.cat == "Kernel":
            by_provider["GPU kernels"][0] += e.dur
            by_provider["GPU kernels"][1] += 1
    fallback: tuple[str, ...] = ()
    if requested_provider and requested_provider != CPU:
        fallback = tuple(sorted({e.node for e in nodes if e.provider == CPU}))
    return ProfileSummary(
        runs=len(model_runs(events)),
        run_us=sum(e.dur for e in model_runs(events)),
        node_us=sum(e.dur for e in nodes),
        by_op=_ranked(OpTime(op, us, n) for op, (us, n) in by_op.items()),
        by_node=_ranked(OpTime(node, us, n, op, prov) for (node, op, prov), (us, n) in by_node.items()),
        by_provider=_ranked(OpTime(p, us, n) for p, (us, n) in by_provider.items()),
        fallback_nodes=fallback,
    )


def _ranked(items: Iterable[OpTime]) -> tuple[OpTime, ...]:
    return tuple(sorted(items, key=lambda i: (-i.us, i.name)))


def summary_lines(summary: ProfileSummary, *, top: int = 10) -> list[str]:
    """Human-readable summary: totals, top op types, top nodes, providers, CPU fallbacks."""
    per_run = summary.run_us / summary.runs / 1000 if summary.runs else 0.0
    lines = [
        f"{summary.runs} run(s), {summary.run_us / 1000:.3f} ms in model_run ({per_run:.3f} ms per run), "
        f"{summary.node_us / 1000:.3f} ms in nodes"
    ]
    total = summary.node_us or 1
    lines.append(f"top {min(top, len(summary.by_op))} op types:")
    lines += [
        f"  {i.name:<28} {i.us / 1000:10.3f} ms {i.us / total:6.1%}  x{i.count}" for i in summary.by_op[:top]
    ]
    lines.append(f"top {min(top, len(summary.by_node))} nodes:")
    lines += [
        f"  {i.name:<28} {i.op:<18} {i.provider:<26} {i.us / 1000:10.3f} ms  x{i.count}"
        for i in summary.by_node[:top]
    ]
    lines.append("time per provider:")
    lines += [f"  {i.name:<28} {i.us / 1000:10.3f} ms {i.us / total:6.1%}" for i in summary.by_provider]
    if summary.fallback_nodes:
        lines.append(
            f"{len(summary.fallback_nodes)} node(s) ran on CPU although an accelerator was requested:"
        )
        lines += [f"  {name}" for name in summary.fallback_nodes[:top]]
    return lines
