"""The HTML report at scale: what does the page weigh and how fast does it render with 50, 200 and 1000
checks, with its static SVG charts against an interactive plotting library (Plotly.js, inlined)?

Question: ``render_page`` draws every chart as static inline SVG (``reports/html/svg.py``). Is that the
right call against the usual alternative, a plotting library inlined into the page that draws each
chart from its data in the browser? Compared on the same report: bytes and gzip bytes of the page,
Python render time, and in a real headless Chromium the load time, first contentful paint, the time
until every chart drawn on load is drawn, and the JS heap.

Method:

1. Report documents of 50, 200 and 1000 checks, built from ``tests/unit/reports/example_report.json``
   (13 checks: latency, accuracy, graph, memory, start-up, contract): its check records cycled (deep
   copies). Copy ``k`` of a record gets the test id ``file.py::function_k[params]`` (the checks of one
   test keep sharing their test id, as a test with several checks does) and the model label
   ``..._k.onnx`` (so the report holds one trade-off table per copy of the example's precision
   model, as a suite of many models would). About 10% of the checks fail: copies of the example's 8
   failed records, spread evenly over them; the other copies of those records pass (``verdict``
   "ok", ``failed`` false, no message, their accuracy outputs and memory/start-up comparisons ok).
   One profiled test per 20 checks (the example's profile, on latency checks' test ids spread over
   the report); ``tradeoffs`` recomputed with ``tradeoff_tables``.
2. Static SVG: ``render_page([Job("", document)])`` as it is.
3. Plotly: the same page, rendered by the same ``render_page`` with the five chart functions of
   ``reports/html/svg.py`` replaced (in this process only) by recorders that put an empty ``<div
   class="plot">`` where the SVG was and keep the chart's data. So the summary table, the sections
   and the captions are byte for byte the same, and every chart becomes one Plotly figure of the same
   data, written by hand as JSON (no Plotly Python API): distributions as horizontal box traces with
   every point; an interval as a marker with an asymmetric error bar over a shaded band (and the
   paired ratios as points); a histogram as bars with a marker line; paired bars as two grouped
   horizontal bar traces; a trade-off scatter as a marker+text trace per precision, contracts ringed.
   Every figure 440 px wide like the SVG, the mode bar kept (the library's default). ``plotly.min.js``
   comes from a scratch virtualenv (``--plotly-env``, default ``/tmp/plotlyenv``; not a project
   dependency: ``python3 -m venv /tmp/plotlyenv && /tmp/plotlyenv/bin/pip install plotly``), inlined
   once at the end of the body, followed by the figures as one JS array and the drawing script:

   - eager: every chart drawn with ``Plotly.newPlot`` on load;
   - lazy: the library's best case: on load only the charts of the sections open on load (the failed
     checks); a closed section's charts when it opens (``toggle``); charts outside any section (the
     trade-off scatters) when they scroll into view (``IntersectionObserver``).

   Each page sets ``window.__done = performance.now()`` when ``Promise.all`` of its on-load
   ``newPlot`` promises resolves. Without a plotly virtualenv only the SVG page is measured.
4. Browser: Debian's Chromium (``--chromium``) through Playwright, headless, 1280x800, the flags of
   ``tests/browser/conftest.py`` plus ``--enable-precise-memory-info``. Each load in a fresh browser
   context (``browser.new_page``) from a ``file://`` URL; any request leaving the file is refused
   and counted as an error; console errors and uncaught exceptions are collected. Per load:
   navigation ``loadEventEnd``, ``first-contentful-paint``, ``__done`` (the SVG page: its
   ``loadEventEnd``, every chart being there when the page is parsed), DOM elements, and
   ``performance.memory.usedJSHeapSize`` after a forced garbage collection (CDP
   ``HeapProfiler.collectGarbage``), i.e. the JS heap the page keeps (V8's: not the DOM's memory).
   ``--repeats`` loads per page and size (7; 3 above 200 checks, ``--large-repeats``, where one
   eager Plotly load takes over a minute), interleaved (SVG, eager, lazy, SVG, ...) so that the
   drift of a shared machine hits all alike; medians and min..max. Python render time: median of 7
   (the Plotly pages: render with recorders, the figures' JSON and the inlining).

Run from the repository root (about 10 minutes on a 2-core machine, most of it the eager Plotly page
at 1000 checks; progress on stderr)::

    .venv/bin/python benchmarks/html_report.py
    .venv/bin/python benchmarks/html_report.py --sizes 200 --repeats 3 --out /tmp/r.md --trace /tmp/r.json

Writes ``benchmarks/results/html_report.md`` and, with every sample, ``html_report.json``.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import gzip
import importlib.metadata
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.conditions import cpu_fields, loadavg  # noqa: E402
from pytest_ortperf.reports.html import Job, render_page, svg  # noqa: E402
from pytest_ortperf.reports.tradeoffs import tradeoff_tables  # noqa: E402
from tests.browser.chromium import FLAGS as BROWSER_FLAGS  # noqa: E402
from tests.browser.chromium import VIEWPORT, chromium_path  # noqa: E402

EXAMPLE = REPO / "tests/unit/reports/example_report.json"
RESULTS = REPO / "benchmarks/results"
SIZES = (50, 200, 1000)
FAILED_SHARE = 0.10
CHECKS_PER_PROFILE = 20
RENDER_REPEATS = 7
PAGES = ("svg", "plotly eager", "plotly lazy")
# The browser tests' flags (root on a closed network), plus exact heap figures.
FLAGS = (*BROWSER_FLAGS, "--enable-precise-memory-info")
CHART_FUNCTIONS = ("distributions", "interval", "paired_bars", "histogram", "scatter")
WIDTH = 440
COLOURS = ("#7a8aa6", "#1f6fd1")
BAD, OK, BAND, WARN = "#c62828", "#2e7d32", "#e3f1e4", "#b26a00"
SYMBOLS = ("circle", "square", "triangle-up", "diamond")
CONFIG = {"displaylogo": False, "responsive": False}

EAGER = """
(function(){
var promises=[];
for(var i=0;i<FIGS.length;i++){promises.push(Plotly.newPlot('plot'+i,FIGS[i].data,FIGS[i].layout,CONFIG));}
Promise.all(promises).then(function(){window.__done=performance.now();},
  function(e){console.error('a plot failed: '+e);window.__done=-1;});
})();
"""
LAZY = """
(function(){
var drawn={};
function draw(i){if(drawn[i]){return null;}drawn[i]=true;
  return Plotly.newPlot('plot'+i,FIGS[i].data,FIGS[i].layout,CONFIG);}
function index(div){return +div.id.slice(4);}
var seen=new IntersectionObserver(function(entries){entries.forEach(function(e){
  if(e.isIntersecting){seen.unobserve(e.target);draw(index(e.target));}});});
var first=[];
Array.prototype.forEach.call(document.querySelectorAll('div.plot'),function(div){
  var holder=div.closest('details');
  if(!holder){seen.observe(div);}else if(holder.open){first.push(draw(index(div)));}
});
Array.prototype.forEach.call(document.querySelectorAll('details'),function(d){
  d.addEventListener('toggle',function(){if(d.open){
    Array.prototype.forEach.call(d.querySelectorAll('div.plot'),function(div){draw(index(div));});}});
});
Promise.all(first).then(function(){window.__done=performance.now();},
  function(e){console.error('a plot failed: '+e);window.__done=-1;});
})();
"""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- the report documents -----------------------------------------------------------------------


def _renamed(test: str, copy_index: int) -> str:
    """``file.py::function[params]`` as ``file.py::function_k[params]``."""
    head, bracket, params = test.partition("[")
    return f"{head}_{copy_index}{bracket}{params}"


def _passing(record: dict[str, Any]) -> None:
    """Turn a copy of a failed record into a passing one, in place."""
    record["failed"] = False
    record["verdict"] = "ok"
    record["message"] = ""
    for reference in record.get("references") or []:
        if isinstance(reference, dict):
            reference["failed"] = False
            for output in reference.get("outputs") or []:
                if isinstance(output, dict):
                    output["ok"] = True
                    output["failed_metric"] = ""
    for comparison in record.get("comparisons") or []:
        if isinstance(comparison, dict):
            comparison["verdict"] = "ok"


def build_document(example: Mapping[str, Any], size: int) -> dict[str, Any]:
    """A report of ``size`` checks cycled from ``example``'s, about 10% failed (see the docstring)."""
    template = list(example["checks"])
    failing = [i for i in range(size) if template[i % len(template)].get("failed")]
    target = round(FAILED_SHARE * size)
    chosen = {
        index
        for n, index in enumerate(failing)
        if math.floor((n + 1) * target / len(failing)) > math.floor(n * target / len(failing))
    }
    checks = []
    for i in range(size):
        copy_index, record = divmod(i, len(template))[0], copy.deepcopy(template[i % len(template)])
        record["test"] = _renamed(str(record["test"]), copy_index)
        model = record.get("model")
        if isinstance(model, dict) and isinstance(model.get("label"), str):
            stem, dot, suffix = model["label"].rpartition(".")
            model["label"] = f"{stem}_{copy_index}{dot}{suffix}" if dot else f"{suffix}_{copy_index}"
        if record.get("failed") and i not in chosen:
            _passing(record)
        checks.append(record)
    latency_tests = list(dict.fromkeys(str(c["test"]) for c in checks if c["kind"] == "latency"))
    wanted = min(len(latency_tests), max(1, round(size / CHECKS_PER_PROFILE)))
    step = len(latency_tests) / wanted
    profile = example["profiles"][0]
    profiles = []
    for n in range(wanted):
        one = copy.deepcopy(profile)
        one["test"] = latency_tests[int(n * step)]
        profiles.append(one)
    document = {key: copy.deepcopy(value) for key, value in example.items()}
    document.update(
        checks=checks,
        failed=sum(bool(c.get("failed")) for c in checks),
        errors=0,
        profiles=profiles,
        tradeoffs=[table.as_dict() for table in tradeoff_tables(checks)],
    )
    return document


def describe_document(document: Mapping[str, Any]) -> dict[str, Any]:
    kinds: dict[str, int] = {}
    for check in document["checks"]:
        kinds[check["kind"]] = kinds.get(check["kind"], 0) + 1
    return {
        "checks": len(document["checks"]),
        "failed": document["failed"],
        "kinds": kinds,
        "profiles": len(document["profiles"]),
        "tradeoff_tables": len(document["tradeoffs"]),
    }


# --- the pages ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chart:
    """One call of a chart function of ``reports/html/svg.py``: which, and its arguments."""

    function: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@contextmanager
def recorded_charts() -> Iterator[list[Chart]]:
    """Within it, ``reports/html/svg.py``'s chart functions draw nothing: each call is recorded and answers
    an empty ``<div class="plot" id="plotN">``, N its index in the list yielded."""
    charts: list[Chart] = []

    def recorder(function: str) -> Callable[..., str]:
        def record(*args: Any, **kwargs: Any) -> str:
            charts.append(Chart(function, args, dict(kwargs)))
            return f'<div class="plot" id="plot{len(charts) - 1}"></div>'

        return record

    with mock.patch.multiple(svg, **{name: recorder(name) for name in CHART_FUNCTIONS}):
        yield charts


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _percent(ratio: object) -> float | None:
    value = _finite(ratio)
    return None if value is None else (value - 1.0) * 100.0


def _clip(text: str, limit: int = 18) -> str:
    """A label cut to ``limit`` characters, as ``reports/html/svg.py`` cuts its row labels."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _layout(height: float, **extra: Any) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "width": WIDTH,
        "height": round(height),
        "margin": {"l": 110, "r": 14, "t": 20, "b": 36},
        "showlegend": False,
        "font": {"size": 11},
        "paper_bgcolor": "#fff",
        "plot_bgcolor": "#fff",
    }
    layout.update(extra)
    return layout


def _distributions(sides: Sequence[tuple[str, Sequence[float]]], *, unit: str = "ms", marks: Any = ()) -> Any:
    data = [
        {
            "type": "box",
            "orientation": "h",
            "name": _clip(str(name)),
            "x": [v for v in (_finite(x) for x in values) if v is not None],
            "boxpoints": "all",
            "jitter": 0.6,
            "pointpos": 0,
            "marker": {"size": 4, "color": COLOURS[index % 2]},
            "line": {"color": COLOURS[index % 2]},
        }
        for index, (name, values) in enumerate(sides)
    ]
    lines = [(str(name), _finite(at)) for name, at in marks]
    shapes = [
        {"type": "line", "xref": "x", "yref": "paper", "x0": at, "x1": at, "y0": 0, "y1": 1,
         "line": {"color": WARN, "dash": "dash"}}
        for _, at in lines
        if at is not None
    ]  # fmt: skip
    annotations = [
        {"x": at, "xref": "x", "y": 1, "yref": "paper", "yanchor": "bottom", "text": name, "showarrow": False}
        for name, at in lines
        if at is not None
    ]
    return data, _layout(
        40 + 34 * len(sides) + 13 * len(shapes),
        xaxis={"title": {"text": unit}},
        shapes=shapes,
        annotations=annotations,
    )


def _interval(
    *,
    value: float,
    low: float,
    high: float,
    band: tuple[float, float],
    points: Sequence[float] = (),
    failed: bool = False,
    label: str = "current / reference",
) -> Any:
    estimate, lower, upper = _percent(value), _percent(low), _percent(high)
    spread = [p for p in (_percent(r) for r in points) if p is not None]
    colour = BAD if failed else OK
    data: list[dict[str, Any]] = []
    if spread:
        data.append(
            {"type": "scatter", "mode": "markers", "x": spread, "y": [0.6] * len(spread),
             "marker": {"size": 5, "color": "#1d2330", "opacity": 0.6}, "name": "paired ratios"}
        )  # fmt: skip
    if estimate is not None:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "x": [estimate],
                "y": [0],
                "marker": {"size": 10, "color": colour},
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": [(upper - estimate) if upper is not None else 0],
                    "arrayminus": [(estimate - lower) if lower is not None else 0],
                    "color": colour,
                    "thickness": 5,
                    "width": 0,
                },
                "name": label,
            }
        )
    shown = [x for x in (estimate, lower, upper, *spread, 0.0) if x is not None]
    reach = (max(shown) - min(shown)) or 1.0
    floor, ceiling = min(shown) - 0.3 * reach, max(shown) + 0.3 * reach
    edges = [_percent(edge) for edge in band]
    band_low = edges[0] if edges[0] is not None else floor
    band_high = edges[1] if edges[1] is not None else ceiling
    shapes = [
        {"type": "rect", "xref": "x", "yref": "paper", "x0": band_low, "x1": band_high, "y0": 0, "y1": 1,
         "fillcolor": BAND, "line": {"width": 0}, "layer": "below"}
    ]  # fmt: skip
    return data, _layout(
        110,
        xaxis={"ticksuffix": "%", "zeroline": True, "range": [floor, ceiling]},
        yaxis={"showticklabels": False, "range": [-0.6, 1.1], "showgrid": False, "zeroline": False},
        margin={"l": 14, "r": 14, "t": 20, "b": 30},
        shapes=shapes,
        title={"text": label, "font": {"size": 11}, "x": 0.02, "y": 0.97},
    )


def _paired_bars(
    rows: Sequence[tuple[str, float | None, float | None]], *, sides: tuple[str, str], unit: str = "ms"
) -> Any:
    names = [str(name) for name, _, _ in rows]
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": str(side),
            "y": names,
            "x": [_finite(row[index + 1]) for row in rows],
            "text": [f"{v:.4g}" if (v := _finite(row[index + 1])) is not None else "" for row in rows],
            "textposition": "outside",
            "marker": {"color": COLOURS[index]},
        }
        for index, side in enumerate(sides)
    ]
    return data, _layout(
        70 + 22 * len(rows),
        barmode="group",
        showlegend=True,
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom"},
        xaxis={"title": {"text": unit}},
        yaxis={"autorange": "reversed", "type": "category"},
        margin={"l": 130, "r": 40, "t": 26, "b": 36},
    )


def _histogram(
    counts: Sequence[int],
    labels: Sequence[str],
    *,
    marker: float | None = None,
    marker_label: str = "",
    bad_from: int | None = None,
) -> Any:
    names = [str(label) for label in labels[: len(counts)]]
    colours = [BAD if bad_from is not None and n >= bad_from else COLOURS[1] for n in range(len(counts))]
    data = [
        {
            "type": "bar",
            "x": names,
            "y": list(counts),
            "text": [str(c) for c in counts],
            "textposition": "outside",
            "marker": {"color": colours},
        }
    ]
    shapes, annotations = [], []
    if marker is not None:
        at = marker - 0.5  # bin n's left edge on a category axis
        shapes.append(
            {"type": "line", "xref": "x", "yref": "paper", "x0": at, "x1": at, "y0": 0, "y1": 1,
             "line": {"color": WARN, "dash": "dash"}}
        )  # fmt: skip
        annotations.append(
            {"x": at, "y": 1, "yref": "paper", "yanchor": "bottom", "text": marker_label, "showarrow": False}
        )
    return data, _layout(
        190,
        xaxis={"type": "category"},
        yaxis={"title": {"text": "elements"}},
        margin={"l": 48, "r": 10, "t": 26, "b": 36},
        shapes=shapes,
        annotations=annotations,
    )


def _scatter(
    points: Sequence[svg.Point], *, x_label: str, y_label: str, log_x: bool = False, log_y: bool = False
) -> Any:
    series: dict[int, list[svg.Point]] = {}
    for point in points:
        series.setdefault(int(point.series), []).append(point)
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers+text",
            "x": [p.x for p in members],
            "y": [p.y for p in members],
            "text": [p.label for p in members],
            "textposition": "top center",
            "marker": {"size": 9, "symbol": SYMBOLS[index % len(SYMBOLS)], "color": COLOURS[index % 2]},
            "name": f"series {index}",
        }
        for index, members in sorted(series.items())
    ]
    for mark, colour in (("ok", OK), ("bad", BAD)):
        ringed = [p for p in points if p.mark == mark]
        if ringed:
            data.append(
                {"type": "scatter", "mode": "markers", "x": [p.x for p in ringed], "y": [p.y for p in ringed],
                 "marker": {"size": 16, "symbol": "circle-open", "color": colour}, "name": f"contract {mark}"}
            )  # fmt: skip
    return data, _layout(
        260,
        xaxis={"title": {"text": x_label}, "type": "log" if log_x else "linear"},
        yaxis={"title": {"text": y_label}, "type": "log" if log_y else "linear"},
        margin={"l": 60, "r": 14, "t": 12, "b": 40},
    )


FIGURES: dict[str, Callable[..., Any]] = {
    "distributions": _distributions,
    "interval": _interval,
    "paired_bars": _paired_bars,
    "histogram": _histogram,
    "scatter": _scatter,
}


def _clean(value: Any) -> Any:
    """``value`` with every non-finite float as None (JSON null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _clean(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(item) for item in value]
    return value


def figure(chart: Chart) -> dict[str, Any]:
    """The Plotly figure (data and layout) of one recorded chart."""
    data, layout = FIGURES[chart.function](*chart.args, **chart.kwargs)
    return _clean({"data": data, "layout": layout})


@dataclass
class PageResult:
    """One page as built, and what it gave over its loads."""

    text: str
    bytes: int
    gzip_bytes: int
    charts: int
    render_s: list[float]
    samples: Samples = field(default_factory=lambda: Samples())


def svg_page(document: Mapping[str, Any]) -> str:
    return render_page([Job("", document)])


def plotly_page(document: Mapping[str, Any], plotly_js: str, *, lazy: bool) -> tuple[str, int]:
    """The page with every chart a Plotly figure; and how many charts."""
    with recorded_charts() as charts:
        page = render_page([Job("", document)])
    figures = json.dumps([figure(chart) for chart in charts], separators=(",", ":"), allow_nan=False)
    figures = figures.replace("</", "<\\/")  # no "</script>" inside the script
    config = json.dumps(CONFIG)
    scripts = (
        f"<script>{plotly_js}</script>\n"
        f"<script>var CONFIG={config};var FIGS={figures};"
        f"{LAZY if lazy else EAGER}</script>\n"
    )
    head, end, tail = page.rpartition("</body>")
    if not end:
        raise RuntimeError("render_page wrote no </body>")
    return head + scripts + end + tail, len(charts)


def timed(build: Callable[[], tuple[str, int]], repeats: int = RENDER_REPEATS) -> PageResult:
    """A page built ``repeats`` times: its size, its charts and the seconds each build took."""
    seconds, text, charts = [], "", 0
    for _ in range(repeats):
        start = time.perf_counter()
        text, charts = build()
        seconds.append(time.perf_counter() - start)
    encoded = text.encode()
    return PageResult(text, len(encoded), len(gzip.compress(encoded)), charts, seconds)


def build_pages(document: Mapping[str, Any], plotly: str | None) -> dict[str, PageResult]:
    """The SVG page of ``document`` and, given ``plotly.min.js``, its two Plotly pages."""

    def ours() -> tuple[str, int]:
        text = svg_page(document)
        return text, text.count('<svg class="chart"')

    pages = {"svg": timed(ours)}
    if plotly is not None:
        pages["plotly eager"] = timed(lambda: plotly_page(document, plotly, lazy=False))
        pages["plotly lazy"] = timed(lambda: plotly_page(document, plotly, lazy=True))
        if pages["plotly eager"].charts != pages["svg"].charts:
            raise RuntimeError(f"{pages['svg'].charts} SVG charts but {pages['plotly eager'].charts} figures")
    return pages


# --- plotly from its scratch virtualenv ----------------------------------------------------------


def plotly_js(env: Path) -> tuple[str, str] | None:
    """(plotly.min.js, "plotly X (plotly.js Y)") from the virtualenv ``env``, or None without one."""
    python = env / "bin/python"
    if not python.exists():
        return None
    program = (
        "import json, pathlib, plotly; "
        "p = pathlib.Path(plotly.__file__).parent / 'package_data/plotly.min.js'; "
        "print(json.dumps([plotly.__version__, str(p)]))"
    )
    done = subprocess.run([str(python), "-c", program], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        log(f"plotly is not importable in {env}: {done.stderr.strip()[-300:]}")
        return None
    version, path = json.loads(done.stdout)
    text = Path(path).read_text(encoding="utf-8")
    first = text[:200]
    js_version = first.split("plotly.js v", 1)[1].split()[0] if "plotly.js v" in first else "?"
    return text, f"plotly {version} (plotly.js {js_version})"


# --- the browser --------------------------------------------------------------------------------


@dataclass
class Samples:
    """What one page gave over its loads."""

    load_ms: list[float] = field(default_factory=list)
    fcp_ms: list[float] = field(default_factory=list)
    done_ms: list[float] = field(default_factory=list)
    heap_bytes: list[float] = field(default_factory=list)
    elements: list[float] = field(default_factory=list)
    plotted: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def load(browser: Any, path: Path, samples: Samples, *, plots: bool, timeout_s: float) -> None:
    """Open ``path`` in a fresh context and record one load of it into ``samples``."""
    page = browser.new_page(viewport=VIEWPORT)
    try:
        page.on(
            "console",
            lambda message: samples.errors.append(message.text) if message.type == "error" else None,
        )
        page.on("pageerror", lambda error: samples.errors.append(f"uncaught: {error}"))

        def refuse(route: Any) -> None:
            samples.errors.append(f"the page fetched {route.request.url}")
            route.abort()

        page.route(lambda url: not url.startswith("file:"), refuse)
        page.goto(path.resolve().as_uri(), wait_until="load", timeout=timeout_s * 1000)
        if plots:
            page.wait_for_function("window.__done !== undefined", timeout=timeout_s * 1000, polling=50)
        page.wait_for_function(  # a page may load before it first paints
            "performance.getEntriesByType('paint').some(e => e.name === 'first-contentful-paint')",
            timeout=timeout_s * 1000,
            polling=50,
        )
        figures = page.evaluate(
            """() => {
              const nav = performance.getEntriesByType('navigation')[0];
              const fcp = performance.getEntriesByType('paint')
                .find(e => e.name === 'first-contentful-paint');
              return {load: nav.loadEventEnd, fcp: fcp ? fcp.startTime : null,
                      done: window.__done === undefined ? nav.loadEventEnd : window.__done,
                      elements: document.getElementsByTagName('*').length,
                      plotted: document.querySelectorAll('.js-plotly-plot').length};
            }"""
        )
        session = page.context.new_cdp_session(page)
        session.send("HeapProfiler.collectGarbage")
        heap = page.evaluate("performance.memory ? performance.memory.usedJSHeapSize : null")
        session.detach()
        samples.load_ms.append(float(figures["load"]))
        if figures["fcp"] is not None:
            samples.fcp_ms.append(float(figures["fcp"]))
        samples.done_ms.append(float(figures["done"]))
        samples.elements.append(float(figures["elements"]))
        samples.plotted.append(float(figures["plotted"]))
        if heap is not None:
            samples.heap_bytes.append(float(heap))
    finally:
        page.context.close()


# --- measuring ----------------------------------------------------------------------------------


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    example = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    plotly = None if args.no_plotly else plotly_js(args.plotly_env)
    if plotly is None:
        log("no plotly: measuring the SVG page only")
    meta: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_fields(),
        "nproc": os.cpu_count(),
        "load_start": loadavg(),
        "python": platform.python_version(),
        "playwright": importlib.metadata.version("playwright"),
        "plotly": plotly[1] if plotly else None,
        "plotly_js_bytes": len(plotly[0].encode()) if plotly else None,
        "plotly_js_gzip_bytes": len(gzip.compress(plotly[0].encode())) if plotly else None,
        "repeats": args.repeats,
        "flags": list(FLAGS),
    }
    started = time.monotonic()
    sizes: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="html_report.") as folder, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=list(FLAGS))
        meta["chromium"] = browser.version
        try:
            for size in args.sizes:
                document = build_document(example, size)
                log(f"{size} checks: {describe_document(document)}")
                pages = build_pages(document, plotly[0] if plotly else None)
                paths = {}
                for name, page in pages.items():
                    paths[name] = Path(folder) / f"{size}-{name.replace(' ', '-')}.html"
                    paths[name].write_text(page.text, encoding="utf-8")
                    if args.keep is not None:
                        args.keep.mkdir(parents=True, exist_ok=True)
                        shutil.copy(paths[name], args.keep / paths[name].name)
                repeats = args.repeats if size <= args.full_repeats_up_to else args.large_repeats
                for repeat in range(repeats):
                    for name in pages:
                        load(
                            browser,
                            paths[name],
                            pages[name].samples,
                            plots=name != "svg",
                            timeout_s=args.timeout,
                        )
                    log(
                        f"{size} checks, load {repeat + 1}/{repeats}: "
                        + ", ".join(f"{n} {p.samples.done_ms[-1]:.0f} ms" for n, p in pages.items())
                    )
                sizes[str(size)] = {
                    "document": describe_document(document),
                    "repeats": repeats,
                    "pages": {
                        name: {
                            "bytes": p.bytes,
                            "gzip_bytes": p.gzip_bytes,
                            "charts": p.charts,
                            "render_s": p.render_s,
                            "load_ms": p.samples.load_ms,
                            "fcp_ms": p.samples.fcp_ms,
                            "done_ms": p.samples.done_ms,
                            "heap_bytes": p.samples.heap_bytes,
                            "elements": p.samples.elements,
                            "plotted": p.samples.plotted,
                            "errors": p.samples.errors,
                        }
                        for name, p in pages.items()
                    },
                }
        finally:
            browser.close()
    meta["minutes"] = (time.monotonic() - started) / 60
    meta["load_end"] = loadavg()
    return {"meta": meta, "sizes": sizes}


# --- the report ---------------------------------------------------------------------------------


def _size(count: float) -> str:
    for unit, name in ((2**20, "MiB"), (2**10, "KiB")):
        if count >= unit:
            return f"{count / unit:.3g} {name}"
    return f"{count:.0f} B"


def _spread(values: Sequence[float], unit: str = "ms", scale: float = 1.0) -> str:
    if not values:
        return "-"
    shown = [v * scale for v in values]
    middle = statistics.median(shown)
    digits = 0 if middle >= 100 else 1
    return f"{middle:.{digits}f} ({min(shown):.{digits}f}..{max(shown):.{digits}f}) {unit}"


def _heap(values: Sequence[float]) -> str:
    if not values:
        return "-"
    mib = [v / 2**20 for v in values]
    return f"{statistics.median(mib):.3g} ({min(mib):.3g}..{max(mib):.3g}) MiB"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3g}x" if b > 0 else "n/a"


def render(result: Mapping[str, Any]) -> str:
    meta, sizes = result["meta"], result["sizes"]
    cpu = meta["cpu"]
    flags = set(str(cpu.get("flags", "")).split())
    avx = ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in ("avx2", "avx512f"))
    lines = [
        "# The HTML report at scale: static SVG charts against Plotly.js",
        "",
        "Question: what does the report page weigh, and how fast does it render, with 50, 200 and 1000 "
        "checks, with its static SVG charts against an interactive plotting library (Plotly.js inlined)?",
        "",
        f"- date {meta['date']}; took {meta['minutes']:.1f} min",
        f"- machine: {cpu.get('model name', 'unknown')} (cpu family {cpu.get('cpu family', '?')}, model "
        f"{cpu.get('model', '?')}); {avx}; {meta['nproc']} logical CPUs; load average at start "
        f"{meta['load_start']}, at end {meta['load_end']}",
        f"- Chromium {meta['chromium']} (Debian, headless, through Playwright {meta['playwright']}); "
        f"Python {meta['python']}",
        f"- {meta['plotly'] or 'plotly: not installed, no comparison run'}"
        + (
            f"; `plotly.min.js` {_size(meta['plotly_js_bytes'])} ({_size(meta['plotly_js_gzip_bytes'])} "
            "gzipped)"
            if meta["plotly_js_bytes"]
            else ""
        ),
        "",
        "Method: see the docstring of `benchmarks/html_report.py`. The pages: `svg` is `render_page` as "
        "it is; `plotly eager` and `plotly lazy` are the same HTML with every SVG chart replaced by an "
        "empty `<div>` and a Plotly figure of the same data, `plotly.min.js` inlined once; eager draws "
        "every chart on load, lazy only those of the sections open on load (the failed checks), the rest "
        "when their section opens or they scroll into view. Each load in a fresh browser context, "
        "1280x800, the page kinds interleaved in every repeat. Figures: median (min..max). `load`: "
        "navigation `loadEventEnd`; `FCP`: first contentful paint; `charts drawn`: `Promise.all` of the "
        "on-load `Plotly.newPlot` calls resolved (the SVG page: its load, its charts being part of the "
        "HTML); `heap`: `performance.memory.usedJSHeapSize` after a forced garbage collection (V8's JS "
        "heap, not the DOM's memory); `render`: Python, median (min..max) of 7.",
        "",
    ]
    for size, data in sizes.items():
        document = data["document"]
        kinds = ", ".join(f"{kind} {count}" for kind, count in document["kinds"].items())
        lines += [
            f"## {size} checks",
            "",
            f"{document['failed']} failed; {kinds}; {document['profiles']} profiled tests; "
            f"{document['tradeoff_tables']} trade-off tables. {data['repeats']} loads per page.",
            "",
            "| page | bytes | gzip | charts | render in Python | load | FCP | charts drawn | heap | "
            "DOM elements |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name, page in data["pages"].items():
            elements = statistics.median(page["elements"]) if page["elements"] else 0
            charts = str(page["charts"])
            if name != "svg" and page["plotted"]:
                charts += f" ({statistics.median(page['plotted']):.0f} drawn on load)"
            lines.append(
                f"| {name} | {_size(page['bytes'])} | {_size(page['gzip_bytes'])} | {charts} | "
                f"{_spread(page['render_s'], 'ms', 1000)} | {_spread(page['load_ms'])} | "
                f"{_spread(page['fcp_ms'])} | {_spread(page['done_ms'])} | {_heap(page['heap_bytes'])} | "
                f"{elements:.0f} |"
            )
        errors = {name: page["errors"] for name, page in data["pages"].items() if page["errors"]}
        lines += ["", "Console errors: " + (json.dumps(errors) if errors else "none, on every load."), ""]
    lines += ["## Conclusions", "", *conclusions(sizes), ""]
    return "\n".join(lines)


def conclusions(sizes: Mapping[str, Any]) -> list[str]:
    def median(page: Mapping[str, Any], key: str) -> float:
        return statistics.median(page[key]) if page[key] else math.nan

    lines = []
    for size, data in sizes.items():
        pages = data["pages"]
        ours = pages["svg"]
        if "plotly eager" not in pages:
            lines.append(
                f"- {size} checks: the SVG page is {_size(ours['bytes'])} ({_size(ours['gzip_bytes'])} "
                f"gzipped), loads in {median(ours, 'load_ms'):.0f} ms; the Plotly comparison was not run."
            )
            continue
        eager, lazy = pages["plotly eager"], pages["plotly lazy"]
        on_load = f"{median(lazy, 'plotted'):.0f}" if lazy.get("plotted") else "?"
        done = [median(page, "done_ms") for page in (ours, eager, lazy)]
        fcp = " / ".join(f"{median(page, 'fcp_ms'):.0f}" for page in (ours, eager, lazy))
        heap = " / ".join(f"{median(page, 'heap_bytes') / 2**20:.3g}" for page in (ours, eager, lazy))
        lines.append(
            f"- {size} checks, {ours['charts']} charts: the SVG page is {_size(ours['bytes'])} "
            f"({_size(ours['gzip_bytes'])} gzipped) against {_size(eager['bytes'])} "
            f"({_size(eager['gzip_bytes'])}) eager and {_size(lazy['bytes'])} "
            f"({_size(lazy['gzip_bytes'])}) lazy, {_ratio(eager['bytes'], ours['bytes'])} the bytes "
            f"({_ratio(eager['gzip_bytes'], ours['gzip_bytes'])} gzipped). It loads with every chart "
            f"drawn in {done[0]:.0f} ms; eager Plotly draws its charts in {done[1]:.0f} ms "
            f"({_ratio(done[1], done[0])}), lazy Plotly the failed checks' {on_load} charts in "
            f"{done[2]:.0f} ms "
            f"({_ratio(done[2], done[0])}). First contentful paint {fcp} ms; heap {heap} MiB "
            "(SVG / eager / lazy)."
        )
    return lines + overall(sizes)


def overall(sizes: Mapping[str, Any]) -> list[str]:
    """What the sizes say together: growth per check, and what a Plotly chart costs."""
    if len(sizes) < 2 or any("plotly eager" not in data["pages"] for data in sizes.values()):
        return []
    (small, first), (large, last) = next(iter(sizes.items())), list(sizes.items())[-1]
    checks = int(large) - int(small)

    def growth(name: str, key: str) -> float:
        return (last["pages"][name][key] - first["pages"][name][key]) / checks / 2**10

    lines = [
        f"- From {small} to {large} checks the SVG page grows by {growth('svg', 'bytes'):.2f} KiB per check "
        f"({growth('svg', 'gzip_bytes'):.3f} KiB gzipped), the Plotly page by "
        f"{growth('plotly eager', 'bytes'):.2f} KiB ({growth('plotly eager', 'gzip_bytes'):.3f} KiB "
        "gzipped) on top of the library."
    ]
    middle = sizes.get("200", first)
    eager, lazy = middle["pages"]["plotly eager"], middle["pages"]["plotly lazy"]
    if eager.get("plotted") and lazy.get("plotted"):
        drawn = statistics.median(eager["plotted"]), statistics.median(lazy["plotted"])
        done = statistics.median(eager["done_ms"]), statistics.median(lazy["done_ms"])
        if drawn[0] > drawn[1]:
            each = (done[0] - done[1]) / (drawn[0] - drawn[1])
            lines.append(
                f"- At {middle['document']['checks']} checks, eager against lazy: about {each:.0f} ms per "
                f"Plotly chart drawn on load, and {done[1] - drawn[1] * each:.0f} ms before the first "
                "(loading, parsing and starting the library)."
            )
    elements = [statistics.median(last["pages"][name]["elements"]) for name in PAGES]
    lines.append(
        "- The heap is V8's alone: the SVG page's charts are DOM, not JS objects (at "
        f"{large} checks {elements[0]:.0f} elements, against {elements[1]:.0f} eager and "
        f"{elements[2]:.0f} lazy)."
    )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default=",".join(map(str, SIZES)), help="checks per report, comma-separated"
    )
    parser.add_argument("--repeats", type=int, default=7, help="loads per page and size")
    parser.add_argument(
        "--large-repeats", type=int, default=3, help="loads per page above --full-repeats-up-to checks"
    )
    parser.add_argument("--full-repeats-up-to", type=int, default=200)
    parser.add_argument("--plotly-env", type=Path, default=Path("/tmp/plotlyenv"), help="a venv with plotly")
    parser.add_argument("--no-plotly", action="store_true", help="measure the SVG page only")
    parser.add_argument("--chromium", default=chromium_path() or "/usr/bin/chromium")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a load may take")
    parser.add_argument("--keep", type=Path, help="also keep the pages measured in this folder")
    parser.add_argument("--out", type=Path, default=RESULTS / "html_report.md")
    parser.add_argument("--trace", type=Path, default=RESULTS / "html_report.json")
    parser.add_argument("--from-trace", type=Path, help="measure nothing: write the report of this trace")
    args = parser.parse_args(argv)
    args.sizes = [int(size) for size in args.sizes.split(",") if size]
    if args.from_trace is not None:
        result = json.loads(args.from_trace.read_text(encoding="utf-8"))
    else:
        result = measure(args)
        args.trace.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    text = render(result)
    args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
