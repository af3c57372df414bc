"""The throughput kind: ``ort_perf.check_throughput(batch_sizes=None, concurrency=None)``, what a team
serving the model reads (the source article's server numbers: inferences per second, p95 and p99).

- **Inferences per second at each batch size** of the model's batch dim (the first dim of every
  input, where it is free: a name or unknown in the graph), 1, 8 and 32 by default (the call's
  ``batch_sizes``, else ``--ortperf-throughput-batch-sizes`` / ``ortperf_throughput_batch_sizes``).
  The test's feeds are tiled along that dim to each size. One session, the sizes timed in
  interleaved rounds in a random order each round.
- **p50, p95 and p99 latency with ``concurrency`` callers** (threads) running the session at once at
  the first batch size (default: one caller per core of this machine).
- **Side by side with the recorded reference, by the rule of every latency verdict**: where the recipe
  changed since the curve was recorded, the reference is rebuilt from its recipe (model from git or
  the model cache, settings) and each batch size is judged across measuring processes
  (``kinds/side_by_side.py``): a time per inference grown beyond the threshold at any size fails,
  naming the sizes. The threshold: ``ort_thresholds(throughput="5%")`` (a model table's
  ``thresholds`` too), else the one latency threshold; it bounds the time per inference, so 5% is a
  fall of 4.8% in inferences per second. The concurrent percentiles are shown beside the recorded
  ones, not judged (a tail from one process is not a verdict).
- A model whose batch dim is fixed is measured at its own size and says so; batch sizes asked of it
  are an error naming the input and its shape.

This module is the whole kind, and imports only what its declaration needs: what loads numpy and
onnxruntime is imported where it is used, so reading the options stays light.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from html import escape
from typing import TYPE_CHECKING, Any

from pytest_ortperf.checks.record import CheckRecord
from pytest_ortperf.errors import UsageError
from pytest_ortperf.gate.registry import CheckKind, KindOption, Record
from pytest_ortperf.kinds.part_check import PartCheck
from pytest_ortperf.reports.tables import TerminalTable
from pytest_ortperf.values import parse_threshold

if TYPE_CHECKING:
    from pytest_ortperf.checks.kind_result import KindResult
    from pytest_ortperf.checks.latency_verdicts import LatencyResult
    from pytest_ortperf.gate.protocol import CheckContext, CheckTarget
    from pytest_ortperf.latency.activity import Activity
    from pytest_ortperf.store.keys import CheckKey

THROUGHPUT = "throughput"
DEFAULT_SIZES = (1, 8, 32)
BUDGET_S = 1.0  # timed seconds of the curve over all sizes, a target
CONCURRENT_S = 0.5  # timed seconds of the concurrent callers, a target
MIN_CALLS = 100  # concurrent calls at least (a p99 of fewer is the maximum), time allowing
MOST_CONCURRENT_S = 5.0


def parse_limit(value: object, where: str) -> float:
    """``ort_thresholds(throughput=...)``: a relative threshold ("10%", 0.1), naming ``where``."""
    return parse_threshold(value, source=where)


def parse_batch_sizes(text: str, where: str) -> tuple[int, ...]:
    """ "1,8,32" -> (1, 8, 32); "" -> () (the default sizes); a UsageError naming ``where`` otherwise."""
    if not text.strip():
        return ()
    try:
        sizes = tuple(int(part) for part in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or any(size < 1 for size in sizes):
        raise UsageError(
            f"{where}: batch sizes are whole numbers of 1 or more, comma separated (got {text!r})."
        )
    return tuple(sorted(set(sizes)))


@dataclass(frozen=True)
class BatchDim:
    """Whether every input's first dim is free, and if not, which input fixes it (and its shape)."""

    free: bool
    fixed_by: str = ""  # "input 'x' is float32[1, 8]"
    size: int = 1  # the feeds' size along the first dim


def batch_dim(declared: Sequence[tuple[str, Sequence[object]]], feeds: Mapping[str, Any]) -> BatchDim:
    """The batch dim of a model whose inputs are ``declared`` as (name, shape): free where every
    input has a first dim that is a name or unknown; ``feeds``: the test's, which give its size."""
    sizes = [
        int(getattr(value, "shape", (1,))[0] or 1) for value in feeds.values() if getattr(value, "shape", ())
    ]
    size = sizes[0] if sizes else 1
    for name, shape in declared:
        first = shape[0] if shape else None
        if not shape or isinstance(first, int):
            return BatchDim(False, f"input {name!r} has the shape {list(shape)}", size)
    return BatchDim(True, "", size)


def tiled(feeds: Mapping[str, Any], size: int) -> dict[str, Any]:
    """``feeds`` repeated along their first dim to ``size`` rows."""
    import numpy as np

    out = {}
    for name, value in feeds.items():
        array = np.asarray(value)
        rows = array.shape[0] if array.ndim else 1
        repeats = math.ceil(size / max(rows, 1))
        out[name] = np.ascontiguousarray(np.concatenate([array] * repeats, axis=0)[:size])
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, by linear interpolation between ranks."""
    ordered = sorted(values)
    at = q * (len(ordered) - 1)
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def concurrent_latencies(
    run: Callable[[], object],
    callers: int,
    *,
    budget_s: float = CONCURRENT_S,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> list[float]:
    """Every call's latency (ms) of ``callers`` threads running ``run`` at once until ``budget_s`` has
    passed and :data:`MIN_CALLS` were made (or :data:`MOST_CONCURRENT_S`, whichever is first)."""
    times: list[float] = []
    lock, ready = threading.Lock(), threading.Barrier(callers)
    start = clock()
    soft, hard = start + budget_s * 1e9, start + MOST_CONCURRENT_S * 1e9
    errors: list[BaseException] = []

    def caller() -> None:
        try:
            ready.wait()  # every caller starts at once
            while True:
                began = clock()
                if began > hard or (began > soft and len(times) >= MIN_CALLS):
                    return
                run()
                with lock:
                    times.append((clock() - began) / 1e6)
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=caller, daemon=True) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return times


@dataclass(frozen=True)
class Throughput:
    """What was measured: each batch size's median time per run (ms) and the concurrent latencies."""

    median_ms: Mapping[int, float]
    concurrency: int
    concurrent_ms: Sequence[float]
    batch: BatchDim

    def per_second(self, size: int) -> float:
        return size * 1000.0 / max(self.median_ms[size], 1e-9)

    def curve_text(self) -> str:
        return ", ".join(f"batch {size}: {_rate(self.per_second(size))}" for size in self.median_ms)

    def tail(self) -> dict[str, float]:
        return {f"p{q}_ms": round(percentile(self.concurrent_ms, q / 100), 6) for q in (50, 95, 99)}

    def tail_text(self) -> str:
        tail = self.tail()
        return (
            f"{self.concurrency} caller(s): p50 {tail['p50_ms']:.4g} ms, p95 {tail['p95_ms']:.4g} ms, "
            f"p99 {tail['p99_ms']:.4g} ms over {len(self.concurrent_ms)} calls"
        )

    def part(self) -> dict[str, Any]:
        """What the baseline keeps (and the record shows): the curve and the concurrent percentiles."""
        return {
            "batch_sizes": list(self.median_ms),
            "median_ms": {str(size): round(ms, 6) for size, ms in self.median_ms.items()},
            "per_second": {str(size): round(self.per_second(size), 3) for size in self.median_ms},
            "concurrency": self.concurrency,
            **self.tail(),
            "calls": len(self.concurrent_ms),
            "free_batch": self.batch.free,
        }


def _rate(per_second: float) -> str:
    return f"{per_second:,.4g}/s" if per_second < 1e4 else f"{per_second / 1000:,.4g}k/s"


class ThroughputCheck(PartCheck):
    """``check_throughput()``: inferences per second over batch sizes, and the tail with callers."""

    kind = THROUGHPUT

    def __init__(
        self, context: CheckContext, *, batch_sizes: Sequence[int] = (), concurrency: int | None = None
    ) -> None:
        self._context = context
        self._sizes = tuple(batch_sizes)
        self._concurrency = concurrency

    def configured(self, *, batch_sizes: object = None, concurrency: object = None) -> ThroughputCheck:
        """This check with the call's ``batch_sizes`` (whole numbers, 1 or more) and ``concurrency``
        (callers, 1 or more); a UsageError naming the argument otherwise."""
        sizes = self._sizes
        if batch_sizes is not None:
            given = batch_sizes if isinstance(batch_sizes, (list, tuple)) else None
            if not given or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in given):
                raise UsageError(
                    f"check_throughput(batch_sizes={batch_sizes!r}): a list of whole numbers, 1 or more."
                )
            sizes = tuple(sorted(set(given)))
        callers = self._concurrency
        if concurrency is not None:
            if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
                raise UsageError(f"check_throughput(concurrency={concurrency!r}): a whole number, 1 or more.")
            callers = concurrency
        return ThroughputCheck(self._context, batch_sizes=sizes, concurrency=callers)

    def measure(self, target: CheckTarget, activity: Activity) -> KindResult:
        from pytest_ortperf.kinds.threads_check import measure_curve
        from pytest_ortperf.store.machine import usable_cores

        context, key = self._context, target.key
        session = context.built.session
        declared = [(i.name, list(i.shape)) for i in session.get_inputs()]
        batch = batch_dim(declared, target.inputs)
        asked = self._sizes or context.settings.option(THROUGHPUT, "batch_sizes")
        if not batch.free and asked and set(asked) != {batch.size}:
            where = "check_throughput(batch_sizes=...)" if self._sizes else "--ortperf-throughput-batch-sizes"
            return _error(
                key,
                f"{where} asks for batch sizes {', '.join(map(str, asked))}, but the model has no free "
                f"batch dim: {batch.fixed_by}; measured nothing",
            )
        sizes = tuple(asked or DEFAULT_SIZES) if batch.free else (batch.size,)
        # A fixed batch dim: the test's own feeds, as they are (a scalar input has no dim to tile).
        feeds = (
            {size: tiled(target.inputs, size) for size in sizes}
            if batch.free
            else {batch.size: target.inputs}
        )
        run = context.sessions.watchdog.run
        runs = {size: _runner(run, session, feeds[size]) for size in sizes}
        callers = self._concurrency or usable_cores()
        with context.measurer.held(activity):
            rounds = measure_curve(runs, budget_s=BUDGET_S)
            concurrent = concurrent_latencies(lambda: session.run(None, feeds[sizes[0]]), callers)
        measured = Throughput(
            {size: statistics.median(values) for size, values in rounds.items()}, callers, concurrent, batch
        )
        if target.policy.update:
            return self._record(target, measured)
        against, why = self._against_recorded(target, measured, feeds, activity)
        return judged(
            key,
            measured,
            limit=self._limit(target),
            against=against,
            not_compared=why,
            stored=self.stored(target),
        )

    def _limit(self, target: CheckTarget) -> float:
        """The test's ``ort_thresholds(throughput=...)`` (parsed where it entered), else the one latency
        threshold."""
        given = target.policy.kind_thresholds.get(THROUGHPUT)
        return given if isinstance(given, float) else target.policy.threshold

    def _against_recorded(
        self,
        target: CheckTarget,
        measured: Throughput,
        feeds: Mapping[int, Mapping[str, Any]],
        activity: Activity,
    ) -> tuple[dict[int, LatencyResult], str]:
        """Each batch size against the recorded reference rebuilt from its recipe, side by side across
        measuring processes; or why nothing is compared."""
        from pytest_ortperf.kinds.side_by_side import ProcessSides, rebuilt_here
        from pytest_ortperf.ort.workers import SideSpec, this_python

        context = self._context
        rebuilt, why = rebuilt_here(context, target)
        if rebuilt is None:
            return {}, why
        built = context.built
        here = SideSpec(this_python(), built.model, built.settings)
        there = SideSpec(this_python(), rebuilt.model, rebuilt.settings)
        policy = replace(target.policy, threshold=self._limit(target))
        results = {}
        for size in measured.median_ms:
            with ProcessSides(context, here, there, feeds[size], activity) as sides:
                results[size] = sides.judge(
                    key=target.key, label=f"{rebuilt.label} at batch {size}", policy=policy
                )
        return results, ""

    def _record(self, target: CheckTarget, measured: Throughput) -> KindResult:
        from pytest_ortperf.kinds.side_by_side import part_recorded

        summary = f"{measured.curve_text()}; {measured.tail_text()}"
        return part_recorded(
            target, THROUGHPUT, measured.part(), summary=summary, notes=_batch_notes(measured.batch)
        )


def _runner(run: Callable[..., object], session: Any, feeds: Mapping[str, Any]) -> Callable[[], object]:
    return lambda: run(session, None, feeds)


def _batch_notes(batch: BatchDim) -> tuple[str, ...]:
    if batch.free:
        return ()
    return (
        f"the model has no free batch dim ({batch.fixed_by}): measured at its own batch of {batch.size} only",
    )


def judged(
    key: CheckKey,
    measured: Throughput,
    *,
    limit: float,
    against: Mapping[int, LatencyResult],
    not_compared: str = "",
    stored: Mapping[str, Any] | None = None,
) -> KindResult:
    """The verdict: a regression where any batch size's time per inference grew beyond ``limit``
    side by side with the recorded reference (naming the sizes); inconclusive where one could not be
    decided and none regressed; improved where every size improved; else ok."""
    from pytest_ortperf.checks.kind_result import KindResult
    from pytest_ortperf.checks.status import Status
    from pytest_ortperf.kinds.side_by_side import estimate_figures, of_the_parts, part_note

    notes = [
        f"curve: {measured.curve_text()}",
        f"concurrent: {measured.tail_text()}",
        *_batch_notes(measured.batch),
    ]
    changes = {size: _change(result) for size, result in against.items()}
    statuses = {size: result.status for size, result in against.items()}
    regressed = [size for size, status in statuses.items() if status is Status.REGRESSION]
    if against:
        status = of_the_parts(against)
        path = "side by side with the recorded reference at each batch size"
        notes += [part_note(f"batch {size}", changes[size], result) for size, result in against.items()]
    else:
        status, path = Status.OK, "measured, not compared"
        notes.append(f"not compared with a recorded reference: {not_compared}")
    if stored:
        recorded = ", ".join(
            f"batch {size}: {_rate(float(rate))}" for size, rate in dict(stored.get("per_second", {})).items()
        )
        tail = (
            f"; {stored.get('concurrency')} caller(s) p99 {stored.get('p99_ms')} ms"
            if "p99_ms" in stored
            else ""
        )
        notes.append(f"recorded on this hardware (shown, not judged): {recorded}{tail}")
    change = "; ".join(f"batch {size}: {text}" for size, text in changes.items())
    failed = status is Status.REGRESSION
    message = ""
    if failed:
        grew = ", ".join(f"batch {size}: {changes[size]}" for size in regressed)
        message = "\n".join(
            [
                f"throughput of {key.shown}: {measured.curve_text()}",
                f"  inferences per second fell side by side with the recorded reference at batch size(s) "
                f"{', '.join(map(str, regressed))}: {grew}; threshold +{limit:.0%} time per inference",
                f"  concurrent: {measured.tail_text()}",
                f"  to accept the new figures: {key.record_command}",
            ]
        )
    return KindResult(
        key,
        THROUGHPUT,
        status,
        path=path,
        summary=f"{measured.curve_text()}; {measured.tail_text()}",
        change=change,
        figures={
            **measured.part(),
            "against": {str(size): estimate_figures(result) for size, result in against.items()},
            **({"recorded_per_second": dict(stored.get("per_second", {}))} if stored else {}),
        },
        notes=tuple(notes),
        failed=failed,
        message=message,
    )


def _change(result: LatencyResult) -> str:
    """A side-by-side latency result as a change of inferences per second, beside its time."""
    comparison = result.decisive
    if comparison is None:
        return result.change
    estimate = comparison.estimate
    return (
        f"{1 / estimate.ratio - 1:+.1%} inferences/s (time per inference {estimate.ratio - 1:+.1%}, "
        f"CI {estimate.low - 1:+.1%} .. {estimate.high - 1:+.1%})"
    )


def _error(key: CheckKey, why: str) -> KindResult:
    from pytest_ortperf.checks.kind_result import kind_error

    return kind_error(key, THROUGHPUT, why)


def not_timed(key: CheckKey) -> KindResult:
    from pytest_ortperf.checks.kind_result import kind_not_timed

    return kind_not_timed(key, THROUGHPUT)


def row(record: Record) -> tuple[str, ...] | None:
    """The throughput table's row: the curve, the concurrent p99, the change, the verdict."""
    typed = CheckRecord.of(record)
    if typed.verdict == "error":
        return None
    figures = _figures(record)
    rates = figures.get("per_second")
    rates = rates if isinstance(rates, Mapping) else {}
    curve = ", ".join(f"{size}: {_rate(float(rate))}" for size, rate in rates.items()) or "-"
    tail = f"{figures['p99_ms']:.4g} ms ({figures.get('concurrency')})" if "p99_ms" in figures else "-"
    return (
        typed.test,
        typed.variant,
        typed.path,
        curve,
        tail,
        typed.change,
        typed.verdict,
    )


def _figures(record: Record) -> Mapping[str, Any]:
    return CheckRecord.of(record).figures or {}


def _title(rows: Sequence[tuple[str, ...]], machine: str) -> str:
    return (
        f"throughput on machine '{machine}' (inferences per second by batch size; p99 latency with the "
        "callers in brackets; change: side by side with the recorded reference)"
    )


TABLE = TerminalTable(
    "throughput",
    _title,
    ("test", "variant", "path", "inferences/s by batch size", "p99 (callers)", "change", "verdict"),
)


def drawing(record: Record) -> str:
    """The HTML curve: inferences per second over batch sizes (log scales), today's and the recorded
    one where the record holds it, above the common facts."""
    from pytest_ortperf.reports.html.checks import draw_common

    figures = _figures(record)
    today = _points(figures.get("per_second"))
    recorded = _points(figures.get("recorded_per_second"))
    return _curve_svg(today, recorded) + draw_common(record)


def _points(rates: object) -> list[tuple[float, float]]:
    if not isinstance(rates, Mapping):
        return []
    points = []
    for size, rate in rates.items():
        try:
            x, y = float(size), float(rate)
        except (TypeError, ValueError):
            continue
        if x > 0 and y > 0 and math.isfinite(y):
            points.append((x, y))
    return sorted(points)


def _curve_svg(today: Sequence[tuple[float, float]], recorded: Sequence[tuple[float, float]]) -> str:
    if not today:
        return ""
    width, height, pad = 360.0, 160.0, 34.0
    everything = [*today, *recorded]
    xs = [math.log2(x) for x, _ in everything]
    ys = [math.log10(y) for _, y in everything]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(ys) - 0.05, max(ys) + 0.05

    def at(point: tuple[float, float]) -> tuple[float, float]:
        x = pad + (math.log2(point[0]) - x0) / (x1 - x0) * (width - 2 * pad)
        y = height - pad - (math.log10(point[1]) - y0) / (y1 - y0) * (height - 2 * pad)
        return round(x, 1), round(y, 1)

    def line(points: Sequence[tuple[float, float]], css: str) -> str:
        placed = [at(p) for p in points]
        path = " ".join(f"{x},{y}" for x, y in placed)
        dots = "".join(f'<circle cx="{x}" cy="{y}" r="3"/>' for x, y in placed)
        return f'<g class="{css}"><polyline fill="none" stroke="currentColor" points="{path}"/>{dots}</g>'

    labels = "".join(
        f'<text x="{at(p)[0]}" y="{height - pad + 14}" text-anchor="middle">{int(p[0])}</text>' for p in today
    )
    legend = "today" + (" (line), recorded (dashed)" if recorded else "")
    recorded_line = (
        line(recorded, "recorded").replace("<polyline", '<polyline stroke-dasharray="4 3"')
        if recorded
        else ""
    )
    title = f"inferences per second by batch size: {legend}"
    return (
        f'<svg class="throughput-curve" viewBox="0 0 {width:g} {height:g}" width="{width:g}" '
        f'height="{height:g}" role="img"><title>{escape(title)}</title>'
        f"{line(today, 'today')}{recorded_line}{labels}"
        f'<text x="{pad}" y="12">inferences/s by batch size ({escape(legend)})</text></svg>'
    )


KIND = CheckKind(
    name=THROUGHPUT,
    make=ThroughputCheck,
    summary="inferences per second at each batch size, and p99 latency with concurrent callers",
    timed=True,
    not_timed=not_timed,
    part=THROUGHPUT,
    row=row,
    table=TABLE,
    drawing=drawing,
    options=(
        KindOption(
            "batch_sizes",
            "batch sizes check_throughput() measures where the model's batch dim is free, comma separated "
            f"(default {','.join(map(str, DEFAULT_SIZES))}; unset: not asked, so a fixed batch dim is "
            "measured at its own size)",
            "",
            parse=parse_batch_sizes,
        ),
    ),
    thresholds=(THROUGHPUT,),
    threshold_parse=parse_limit,
)
