"""Static SVG charts for the HTML report, each rendered as a self-contained ``<svg>`` string that the
page embeds inline. Static, because the page then ships no charting script, stays small, and reads
the same with JavaScript off: coordinates are rounded to one decimal, and every colour comes from a
CSS class (``ax``, ``tk``, ``lb``, ``s0``, ``s1``, ``band``, ``bad``, ``ok``, ``iv``, ``pt``, ``mk``)
that the page's stylesheet styles, set on a group wherever its members differ only in shape.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "Point",
    "distributions",
    "histogram",
    "interval",
    "nice_ticks",
    "paired_bars",
    "scatter",
    "short",
]

WIDTH = 440
CHAR = 6.5  # average width of one character of the page's 11px chart font, for laying out labels
MAX_BARS = 30
_GOLDEN = 0.6180339887498949  # the vertical jitter of dots: a fixed low-discrepancy pattern, not random


@dataclass(frozen=True)
class Point:
    """One labelled point of a scatter chart; ``mark`` ("ok" or "bad") rings it, e.g. a contract."""

    label: str
    x: float
    y: float
    series: int = 0
    mark: str = ""


# --- numbers and text --------------------------------------------------------------------------


def short(value: float, digits: int = 3) -> str:
    """A compact label for a number: ``0.5``, ``12``, ``1.2k``, ``3.4M``, ``3e-05``."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    rounded = float(f"{value:.{digits}g}")
    magnitude = abs(rounded)
    for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if scale <= magnitude < scale * 1000:
            return f"{rounded / scale:.{digits}g}{suffix}"
    return f"{rounded:.{digits}g}"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` increasing ticks in steps of 1, 2 or 5 x 10^k, the first at or below ``low``
    and the last at or above ``high``; none when either end is not finite."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    if low > high:
        low, high = high, low
    if low == high:
        pad = abs(low) * 0.1 or 1.0
        low, high = low - pad, high + pad
    count = max(2, count)
    raw = (high - low) / (count - 1)
    if not (math.isfinite(raw) and raw > 0):
        return [low, high]
    exponent = math.floor(math.log10(raw))
    best: tuple[int, float, float, int, int, int] | None = None
    for power in (exponent - 1, exponent, exponent + 1):
        for multiple in (1, 2, 5):
            step = multiple * 10.0**power
            first = math.floor(low / step + 1e-9)
            last = math.ceil(high / step - 1e-9)
            # the count nearest the one asked for, then the tightest fit around low..high
            key = (abs(last - first + 1 - count), (last - first) * step, step, first, last, power)
            if best is None or key[:3] < best[:3]:
                best = key
    assert best is not None
    _, _, step, first, last, power = best
    places = max(0, -power)
    return [round(index * step, places) + 0.0 for index in range(first, last + 1)]


def _domain_ticks(values: Sequence[float], pad: float = 0.0, least: float = 0.0) -> list[float]:
    """Nice ticks around finite values widened by ``pad`` of their span (at least ``least``)."""
    low, high = min(values), max(values)
    margin = (high - low) * pad or least
    return nice_ticks(low - margin, high + margin) or nice_ticks(low, high) or [low, high]


def _labels(ticks: Sequence[float], write: Callable[[float, int], str] = short) -> list[str]:
    """Tick labels, with as few digits as keep neighbouring ticks apart."""
    labels: list[str] = []
    for digits in range(3, 9):
        labels = [write(tick, digits) for tick in ticks]
        if len(set(labels)) == len(labels):
            break
    return labels


def _percent(change: float, digits: int = 3) -> str:
    sign = "+" if change > 0 else ""
    return f"{sign}{short(change, digits)}%"


def _n(value: float) -> str:
    """A coordinate, rounded to one decimal, without a trailing ``.0``."""
    text = f"{value:.1f}"
    if text.endswith(".0"):
        text = text[:-2]
    return "0" if text == "-0" else text


def _esc(text: object) -> str:
    return html.escape(str(text))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "\u2026"


def _clip_name(text: str, limit: int) -> str:
    """A row's name cut to ``limit``; a ``domain:op`` name keeps its op whole and loses the start of
    its domain (``…icrosoft.nchwc:Conv``), since the op is what tells rows apart."""
    if len(text) <= limit:
        return text
    _, colon, op = text.rpartition(":")
    if not colon or len(op) + 2 > limit:
        return _clip(text, limit)
    return "\u2026" + text[len(text) - (limit - 1) :]


def _finite(values: Iterable[object]) -> list[float]:
    kept: list[float] = []
    for value in values:
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            kept.append(number)
    return kept


def _number(value: object) -> float | None:
    kept = _finite([value])
    return kept[0] if kept else None


def _number_or_inf(value: object) -> float | None:
    """A band's edge: finite or +/-inf (unbounded); None when it is no number at all (NaN)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _quantile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def _jitter(index: int) -> float:
    """A deterministic offset in [-0.5, 0.5) for the index-th dot of a row."""
    return (index * _GOLDEN) % 1.0 - 0.5


# --- drawing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Scale:
    """Maps the domain ``lo..hi`` linearly onto the pixels ``a..b``."""

    lo: float
    hi: float
    a: float
    b: float

    def __call__(self, value: float) -> float:
        if self.hi == self.lo:
            return (self.a + self.b) / 2
        return self.a + (value - self.lo) * (self.b - self.a) / (self.hi - self.lo)

    def clamped(self, value: float) -> float:
        low, high = min(self.a, self.b), max(self.a, self.b)
        if math.isnan(value):
            return low
        if math.isinf(value):
            return high if (value > 0) == (self.b > self.a) else low
        return min(high, max(low, self(value)))


def _svg(width: float, height: float, title: str, body: Iterable[str]) -> str:
    w, h = _n(width), _n(height)
    return (
        f'<svg class="chart" role="img" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        f'xmlns="http://www.w3.org/2000/svg" font-size="11"><title>{_esc(title)}</title>'
        + "".join(body)
        + "</svg>"
    )


def _no_data(title: str, width: float = WIDTH, height: float = 40) -> str:
    text = (
        f'<text class="lb" x="{_n(width / 2)}" y="{_n(height / 2 + 4)}" text-anchor="middle">no data</text>'
    )
    return _svg(width, height, f"{title}: no data", [text])


def _text(x: float, y: float, text: str, css: str = "", anchor: str = "") -> str:
    attributes = f' class="{css}"' if css else ""
    attributes += f' text-anchor="{anchor}"' if anchor else ""
    return f'<text{attributes} x="{_n(x)}" y="{_n(y)}">{_esc(text)}</text>'


def _turned(x: float, y: float, degrees: int, text: str) -> str:
    """A text turned about its anchor point ``x, y``."""
    return f'<text transform="translate({_n(x)} {_n(y)})rotate({degrees})">{_esc(text)}</text>'


def _group(css: str, parts: Sequence[str], extra: str = "") -> str:
    inside = "".join(parts)
    return f'<g class="{css}"{extra}>{inside}</g>' if inside else ""


def _bar(x: float, y: float, width: float, height: float) -> str:
    """One bar as a closed subpath: the bars of a side share one ``<path>``, a third of ``<rect>``s' bytes."""
    return f"M{_n(x)} {_n(y)}h{_n(width)}v{_n(height)}H{_n(x)}z"


def _bars(css: str, bars: Sequence[str]) -> str:
    return f'<path class="{css}" d="{"".join(bars)}"/>' if bars else ""


def _dots(points: Iterable[tuple[float, float]], size: float = 3.6) -> str:
    """Dots as zero-length round-capped strokes of one path: a fraction of the bytes of circles."""
    d = "".join(f"M{_n(x)} {_n(y)}h0" for x, y in points)
    return f'<path d="{d}" stroke-width="{_n(size)}" stroke-linecap="round"/>' if d else ""


def _x_axis(scale: _Scale, ticks: Sequence[float], labels: Sequence[str], y: float) -> list[str]:
    d = f"M{_n(scale.a)} {_n(y)}H{_n(scale.b)}" + "".join(f"M{_n(scale(t))} {_n(y)}v4" for t in ticks)
    texts = [_text(scale(t), y + 15, label) for t, label in zip(ticks, labels, strict=True)]
    return [f'<path class="ax" d="{d}"/>', _group("tk", texts, ' text-anchor="middle"')]


def _y_axis(scale: _Scale, ticks: Sequence[float], labels: Sequence[str], x: float) -> list[str]:
    d = f"M{_n(x)} {_n(scale.a)}V{_n(scale.b)}" + "".join(f"M{_n(x)} {_n(scale(t))}h-4" for t in ticks)
    texts = [_text(x - 6, scale(t) + 4, label) for t, label in zip(ticks, labels, strict=True)]
    return [f'<path class="ax" d="{d}"/>', _group("tk", texts, ' text-anchor="end"')]


def _summary(items: Sequence[str], limit: int = 10) -> str:
    shown = "; ".join(items[:limit])
    return shown + (f"; and {len(items) - limit} more" if len(items) > limit else "")


# --- charts ------------------------------------------------------------------------------------


def distributions(
    sides: Sequence[tuple[str, Sequence[float]]],
    *,
    unit: str = "ms",
    marks: Sequence[tuple[str, float]] = (),
) -> str:
    """One row per side: every value as a dot, its quartiles as a box and its median as a tick, on a
    shared axis; ``marks`` are labelled vertical lines (e.g. a side's single recorded figure)."""
    rows = [(str(name), sorted(_finite(values))) for name, values in sides]
    lines = [(str(name), at) for name, value in marks if (at := _number(value)) is not None]
    everything = [value for _, values in rows for value in values] + [at for _, at in lines]
    title = f"Distribution in {unit}"
    if not rows or not everything:
        return _no_data(title)
    ticks = _domain_ticks(everything)
    label_width = min(120.0, max(48.0, CHAR * max(len(_clip(name, 18)) for name, _ in rows) + 12))
    top = 6.0 + 13 * len(lines)
    row_height = 30.0
    axis_y = top + row_height * len(rows) + 2
    height = axis_y + 32
    scale = _Scale(ticks[0], ticks[-1], label_width, WIDTH - 14)

    body: list[str] = []
    names: list[str] = []
    described: list[str] = []
    for index, (name, values) in enumerate(rows):
        middle = top + row_height * (index + 0.5)
        names.append(_text(label_width - 8, middle + 4, _clip(name, 18)))
        if not values:
            body.append(_text(scale.a + 4, middle + 4, "no rounds", "tk"))
            described.append(f"{name}: no rounds")
            continue
        q1, median, q3 = (_quantile(values, q) for q in (0.25, 0.5, 0.75))
        left, right = scale(q1), scale(q3)
        box = (
            f'<rect x="{_n(left)}" y="{_n(middle - 8)}" width="{_n(right - left)}" height="16" '
            f'fill-opacity=".2"/>'
        )
        tick = f'<path d="M{_n(scale(median))} {_n(middle - 11)}v22" stroke-width="2"/>'
        dots = _dots((scale(value), middle + 12 * _jitter(i)) for i, value in enumerate(values))
        body.append(_group(f"s{index % 2}", [box, tick, dots]))
        described.append(f"{name}: {len(values)} values, median {short(median)} {unit}")
    body.insert(0, _group("lb", names, ' text-anchor="end"'))

    marked: list[str] = []
    for number, (name, at) in enumerate(lines):
        x = scale(at)
        anchor = "end" if x > (scale.a + scale.b) / 2 else "start"
        nudge = -3 if anchor == "end" else 3
        marked.append(f'<path d="M{_n(x)} {_n(4 + 13 * number)}V{_n(axis_y)}"/>')
        marked.append(_text(x + nudge, 13 + 13 * number, f"{name} {short(at)}", anchor=anchor))
        described.append(f"{name}: {short(at)} {unit}")
    body.append(_group("mk", marked))

    body += _x_axis(scale, ticks, _labels(ticks), axis_y)
    body.append(_text((scale.a + scale.b) / 2, height - 3, unit, "lb", "middle"))
    return _svg(WIDTH, height, f"{title}. " + _summary(described), body)


def interval(
    *,
    value: float,
    low: float,
    high: float,
    band: tuple[float, float],
    points: Sequence[float] = (),
    failed: bool = False,
    label: str = "current / reference",
) -> str:
    """A ratio with its interval against the acceptable band, on an axis of percent change (a ratio
    of 1.1 reads "+10%"); an unbounded side of the band (+/-inf) is shaded to the chart's edge."""

    def change(ratio: float | None) -> float | None:
        percent = None if ratio is None else (ratio - 1.0) * 100.0
        return percent if percent is not None and math.isfinite(percent) else None

    estimate, lower, upper = (change(_number(v)) for v in (value, low, high))
    spread = _finite((r - 1.0) * 100.0 for r in _finite(points))
    band_lo, band_hi = (_number_or_inf(edge) for edge in band)
    shown = [c for c in (estimate, lower, upper, *spread) if c is not None]
    if not shown:
        return _no_data(label)
    bounds = [c for edge in (band_lo, band_hi) if (c := change(edge)) is not None]
    ticks = _domain_ticks([*shown, 0.0, *bounds], 0.06, 2.0)
    if ticks[0] < -100.0:  # a ratio is never below 0: the axis starts at -100% at the lowest
        ticks = [-100.0, *(tick for tick in ticks if tick > -100.0)]
    height = 80.0
    scale = _Scale(ticks[0], ticks[-1], 22, WIDTH - 22)
    top, axis_y = 18.0, 58.0
    dots_y, bar_y = 29.0, 45.0

    body = [_text(scale.a, 11, label, "lb")]
    if band_lo is not None and band_hi is not None:
        ends = sorted(scale.clamped((edge - 1.0) * 100.0) for edge in (band_lo, band_hi))
        body.append(
            f'<rect class="band" x="{_n(ends[0])}" y="{_n(top)}" width="{_n(ends[1] - ends[0])}" '
            f'height="{_n(axis_y - top)}"/>'
        )
    body.append(f'<path class="ax" d="M{_n(scale(0.0))} {_n(top)}V{_n(axis_y)}"/>')
    body.append(_group("s1", [_dots([(scale(c), dots_y + 8 * _jitter(i)) for i, c in enumerate(spread)], 3)]))
    verdict = "bad" if failed else "ok"
    if lower is not None or upper is not None:
        ends = sorted(scale(c) for c in (lower, upper) if c is not None)
        start, end = ends[0], ends[-1]
        if end - start < 1:
            start, end = start - 0.5, end + 0.5
        body.append(f'<path class="iv {verdict}" d="M{_n(start)} {_n(bar_y)}H{_n(end)}" stroke-width="5"/>')
    if estimate is not None:
        body.append(f'<circle class="pt" cx="{_n(scale(estimate))}" cy="{_n(bar_y)}" r="4"/>')
    body += _x_axis(scale, ticks, _labels(ticks, _percent), axis_y)

    def said(c: float | None) -> str:
        return "?" if c is None else f"{c:+.1f}%"

    if band_lo is None or band_hi is None:
        accepted = "no band"
    elif math.isinf(band_lo) and math.isinf(band_hi):
        accepted = "any change accepted"
    elif math.isinf(band_lo):
        accepted = f"accepted up to {said(change(band_hi))}"
    elif math.isinf(band_hi):
        accepted = f"accepted from {said(change(band_lo))}"
    else:
        accepted = f"accepted {said(change(band_lo))} to {said(change(band_hi))}"
    title = f"{label}: {said(estimate)} (interval {said(lower)} to {said(upper)}); {accepted}; " + (
        "failed" if failed else "passed"
    )
    return _svg(WIDTH, height, title, body)


def paired_bars(
    rows: Sequence[tuple[str, float | None, float | None]],
    *,
    sides: tuple[str, str] = ("baseline", "current"),
    unit: str = "ms",
) -> str:
    """Two horizontal bars per row, one per side (a side without a figure has no bar), each with its
    value at its end, under a legend naming the sides; at most 30 rows, then "+N more"."""
    cleaned = [(str(name), _number(first), _number(second)) for name, first, second in rows]
    shown, more = cleaned[:MAX_BARS], max(0, len(cleaned) - MAX_BARS)
    values = [v for _, first, second in shown for v in (first, second) if v is not None]
    title = f"{sides[0]} and {sides[1]} in {unit}"
    if not values:
        return _no_data(title)
    ticks = _domain_ticks([0.0, *values])
    # Room for 24 characters: 'nchwc:GlobalAveragePool' whole; longer names lose the start of their domain.
    label_width = min(160.0, max(40.0, CHAR * max(len(_clip_name(name, 24)) for name, _, _ in shown) + 10))
    scale = _Scale(ticks[0], ticks[-1], label_width, WIDTH - 40)
    top, row_height = 20.0, 22.0
    axis_y = top + row_height * len(shown) + 2
    height = axis_y + 32

    legend: list[str] = []
    x = scale.a
    for index, name in enumerate(sides):
        if not name:  # a side no row has: nothing to name
            continue
        legend.append(f'<rect class="s{index}" x="{_n(x)}" y="4" width="9" height="9"/>')
        legend.append(_text(x + 13, 12.5, name, "lb"))
        x += 13 + CHAR * len(name) + 14
    bars: list[list[str]] = [[], []]
    numbers: list[str] = []
    names: list[str] = []
    described: list[str] = []
    zero = scale(0.0)
    for row, (name, *pair) in enumerate(shown):
        y = top + row_height * row
        names.append(_text(label_width - 6, y + 14, _clip_name(name, 24)))
        described.append(f"{name}: " + " / ".join("-" if v is None else short(v) for v in pair))
        for side, v in enumerate(pair):
            if v is None:
                continue
            end = scale(v)
            left = min(zero, end)
            bar_y = y + 2 + 9 * side
            bars[side].append(_bar(left, bar_y, abs(end - zero), 8))
            numbers.append(_text(max(zero, end) + 3, bar_y + 7.5, short(v)))
    body = [
        *legend,
        _group("lb", names, ' text-anchor="end"'),
        _bars("s0", bars[0]),
        _bars("s1", bars[1]),
        _group("tk", numbers, ' font-size="9"'),
        *_x_axis(scale, ticks, _labels(ticks), axis_y),
        _text((scale.a + scale.b) / 2, height - 3, unit, "lb", "middle"),
    ]
    if more:
        body.append(_text(4, height - 3, f"+{more} more", "tk"))
    summary = _summary(described, 6) + (f"; and {more} more rows not drawn" if more else "")
    return _svg(WIDTH, height, f"{title} ({sides[0]} / {sides[1]}). {summary}", body)


def histogram(
    counts: Sequence[int],
    labels: Sequence[str],
    *,
    marker: float | None = None,
    marker_label: str = "",
    bad_from: int | None = None,
) -> str:
    """Vertical bars on a square-root count scale, one per bin with its label under it and its count
    over it; ``marker`` (in bins: 5.0 is the left edge of bin 5) draws a labelled line, and bins from
    ``bad_from`` on are marked as failing."""
    heights = [max(0.0, c) if (c := _number(count)) is not None else 0.0 for count in counts]
    title = "Histogram"
    if not heights or max(heights) <= 0:
        return _no_data(title)
    names = [_clip(str(label), 12) for label in labels[: len(heights)]]
    names += [""] * (len(heights) - len(names))
    bins = len(heights)
    left, right, top, plot_height = 40.0, 10.0, 30.0, 110.0
    width = (WIDTH - left - right) / bins
    widest = CHAR * max(len(name) for name in names)
    rotate = widest > width - 2
    every = max(1, math.ceil(13 / width)) if rotate else 1
    bottom = (min(70.0, widest * 0.72 + 14) if rotate else 18.0) + 4
    base = top + plot_height
    height = base + bottom

    ticks = [t for t in nice_ticks(0.0, max(heights), 4) if t >= 0]
    peak = max(ticks[-1], max(heights))
    scale = _Scale(0.0, math.sqrt(peak), base, top)
    kept: list[float] = []
    for tick in ticks:  # a square-root scale crowds the upper ticks: keep those 12px apart
        if not kept or abs(scale(math.sqrt(tick)) - scale(math.sqrt(kept[-1]))) >= 12:
            kept.append(tick)

    gap = min(2.0, width * 0.2)
    groups: dict[str, list[str]] = {"s1": [], "bad": []}
    numbers: list[str] = []
    upwards: list[str] = []
    under: list[str] = []
    for index, count in enumerate(heights):
        x = left + width * index
        middle = x + width / 2
        if count > 0:
            y = scale(math.sqrt(count))
            css = "bad" if bad_from is not None and index >= bad_from else "s1"
            groups[css].append(_bar(x + gap / 2, y, width - gap, base - y))
            number = short(count)
            if CHAR * 0.8 * len(number) <= width:  # the counts' font is 9px
                numbers.append(_text(middle, y - 2, number))
            elif width >= 7:  # too narrow to write across: upwards
                upwards.append(_turned(middle + 3, y - 2, -90, number))
        if index % every or not names[index]:
            continue
        if rotate:
            under.append(_turned(middle + 3, base + 10, -45, names[index]))
        else:
            under.append(_text(middle, base + 14, names[index]))

    y_ticks = [(tick, short(tick)) for tick in kept]
    axis = f"M{_n(left)} {_n(top)}V{_n(base)}H{_n(WIDTH - right)}" + "".join(
        f"M{_n(left)} {_n(scale(math.sqrt(t)))}h-4" for t, _ in y_ticks
    )
    body = [
        _text(2, 11, "count, sqrt scale", "lb"),
        _bars("s1", groups["s1"]),
        _bars("bad", groups["bad"]),
        f'<path class="ax" d="{axis}"/>',
        _group(
            "tk",
            [_text(left - 6, scale(math.sqrt(t)) + 4, text) for t, text in y_ticks],
            ' text-anchor="end"',
        ),
        _group("tk", numbers, ' text-anchor="middle" font-size="9"'),
        _group("tk", upwards, ' font-size="9"'),
        _group("tk", under, ' text-anchor="end"' if rotate else ' text-anchor="middle"'),
    ]
    described = [f"{sum(int(c) for c in heights)} values in {bins} bins"]
    if (at := _number(marker)) is not None:
        x = left + width * min(float(bins), max(0.0, at))
        anchor = "end" if x > WIDTH * 0.7 else "start"
        words = marker_label or short(at)
        body.append(
            _group(
                "mk",
                [
                    f'<path d="M{_n(x)} {_n(top - 12)}V{_n(base)}"/>',
                    _text(x + (-3 if anchor == "end" else 3), top - 4, words, anchor=anchor),
                ],
            )
        )
        described.append(f"{words} at bin {short(at)}")
    if bad_from is not None:
        failing = sum(1 for index, count in enumerate(heights) if index >= bad_from and count > 0)
        described.append(f"{failing} failing bins hold values")
    return _svg(WIDTH, height, f"{title}: " + "; ".join(described), body)


@dataclass(frozen=True)
class _Axis:
    """One scatter axis: its scale (in log10 units on a log axis), ticks and labels."""

    scale: _Scale
    ticks: list[float]
    labels: list[str]
    log: bool

    def place(self, value: float) -> tuple[float, bool]:
        """The pixel of a value, and whether it stands in for one a log axis cannot show."""
        if not self.log:
            return self.scale(value), False
        if value <= 0:
            return self.scale.a, True
        return self.scale(math.log10(value)), False


def _axis(values: Sequence[float], log: bool, a: float, b: float) -> _Axis:
    if log:
        positive = [v for v in values if v > 0]
        if not positive:
            low_power, high_power = 0, 1
        else:
            low_power = math.floor(math.log10(min(positive)))
            high_power = math.ceil(math.log10(max(positive)))
            if high_power == low_power:
                high_power += 1
        decades = high_power - low_power
        if decades <= 2:
            ticks = [m * 10.0**p for p in range(low_power, high_power) for m in (1, 2, 5)]
            ticks.append(10.0**high_power)
        else:
            every = math.ceil((decades + 1) / 7)
            ticks = [10.0**p for p in range(low_power, high_power + 1, every)]
        scale = _Scale(float(low_power), float(high_power), a, b)
        return _Axis(scale, [math.log10(t) for t in ticks], _labels(ticks), True)
    ticks = _domain_ticks(values, 0.04)  # a margin keeps the points off the axes
    return _Axis(_Scale(ticks[0], ticks[-1], a, b), ticks, _labels(ticks), False)


def _shape(series: int, x: float, y: float, hollow: bool) -> str:
    fill = ' fill="none"' if hollow else ""
    shape = series % 4
    if shape == 0:
        return f'<circle cx="{_n(x)}" cy="{_n(y)}" r="3.5"{fill}/>'
    if shape == 1:
        return f'<rect x="{_n(x - 3)}" y="{_n(y - 3)}" width="6" height="6"{fill}/>'
    if shape == 2:
        return f'<path d="M{_n(x)} {_n(y - 4)}l4 7h-8z"{fill}/>'
    return f'<path d="M{_n(x)} {_n(y - 4.5)}l4.5 4.5-4.5 4.5-4.5-4.5z"{fill}/>'


def scatter(
    points: Sequence[Point],
    *,
    x_label: str,
    y_label: str,
    log_x: bool = False,
    log_y: bool = False,
) -> str:
    """Labelled points, a shape per series (circle, square, triangle, diamond) and a class per series
    (``s0``/``s1``); a ``mark`` of "ok" or "bad" rings a point, and a point a log axis cannot show
    (zero or negative) is drawn hollow at that axis's floor."""
    kept = [p for p in points if _number(p.x) is not None and _number(p.y) is not None]
    title = f"{y_label} against {x_label}"
    if not kept:
        return _no_data(title)
    height = 260.0
    right, top, bottom = 14.0, 12.0, 38.0
    up = _axis([float(p.y) for p in kept], log_y, height - bottom, top)
    left = 26.0 + CHAR * max(len(label) for label in up.labels)  # the y label, then the widest tick label
    across = _axis([float(p.x) for p in kept], log_x, left, WIDTH - right)

    series: list[list[str]] = [[], []]
    rings: dict[str, list[str]] = {"ok": [], "bad": []}
    names: list[str] = []
    described: list[str] = []
    for point in kept:
        x, off_x = across.place(float(point.x))
        y, off_y = up.place(float(point.y))
        index = int(point.series)
        series[index % 2].append(_shape(index, x, y, off_x or off_y))
        if point.mark in rings:
            rings[point.mark].append(f'<circle cx="{_n(x)}" cy="{_n(y)}" r="7" fill="none"/>')
        text = _clip(str(point.label), 28)
        if x > WIDTH - right - CHAR * len(text) - 8:
            names.append(_text(x - 6, y - 5, text, anchor="end"))
        else:
            names.append(_text(x + 6, y - 5, text))
        state = f", {point.mark}" if point.mark in rings else ""
        described.append(f"{point.label} ({short(point.x)}, {short(point.y)}{state})")

    middle = (top + height - bottom) / 2
    body = [
        *_x_axis(across.scale, across.ticks, across.labels, height - bottom),
        *_y_axis(up.scale, up.ticks, up.labels, left),
        _group("s0", series[0]),
        _group("s1", series[1]),
        _group("ok", rings["ok"]),
        _group("bad", rings["bad"]),
        _group("tk", names, ' font-size="9"'),
        _text((left + WIDTH - right) / 2, height - 4, x_label + (" (log)" if log_x else ""), "lb", "middle"),
        f'<text class="lb" text-anchor="middle" x="12" y="{_n(middle)}" '
        f'transform="rotate(-90 12 {_n(middle)})">{_esc(y_label + (" (log)" if log_y else ""))}</text>',
    ]
    return _svg(WIDTH, height, f"{title}: " + _summary(described), body)
