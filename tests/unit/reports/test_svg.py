"""The report's static SVG charts: well-formed, accessible, small, and robust to odd figures."""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET

import pytest

from pytest_ortperf.reports.html.svg import (
    Point,
    distributions,
    histogram,
    interval,
    nice_ticks,
    paired_bars,
    scatter,
    short,
)

SVG = "{http://www.w3.org/2000/svg}"
NAN, INF = math.nan, math.inf
TRICKY = 'a<b & "c"'


def parse(chart: str) -> ET.Element:
    root = ET.fromstring(chart)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg"
    assert root.get("class") == "chart"
    assert root.get("role") == "img"
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    title = root[0]
    assert title.tag == f"{SVG}title"
    assert title.text
    return root


def classed(root: ET.Element, name: str) -> list[ET.Element]:
    return [element for element in root.iter() if name in (element.get("class") or "").split()]


def texts(root: ET.Element) -> list[str]:
    return [element.text or "" for element in root.iter(f"{SVG}text")]


def dots(root: ET.Element) -> int:
    """Dots are zero-length round-capped strokes, one ``M..h0`` each."""
    return sum(
        (element.get("d") or "").count("h0")
        for element in root.iter(f"{SVG}path")
        if element.get("stroke-linecap") == "round"
    )


def axis_line(root: ET.Element) -> tuple[float, float, float]:
    """The start x, the end x and the y of the horizontal axis (the path ``M x y H x2 ...``)."""
    for path in classed(root, "ax"):
        match = re.match(r"M([-\d.]+) ([-\d.]+)H([-\d.]+)", path.get("d") or "")
        if match:
            return float(match[1]), float(match[3]), float(match[2])
    raise AssertionError("no horizontal axis")


def bars(root: ET.Element, name: str) -> list[tuple[float, float, float, float]]:
    """The bars of one class (``M x y h width v height H x z`` each): x, y, width and height."""
    (path,) = [element for element in classed(root, name) if element.tag == f"{SVG}path"]
    number = r"(-?[\d.]+)"
    found = re.findall(rf"M{number} {number}h{number}v{number}H{number}z", path.get("d") or "")
    return [(float(x), float(y), float(width), float(height)) for x, y, width, height, _ in found]


def no_data(chart: str) -> bool:
    return "no data" in texts(parse(chart))


# --- helpers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("low", "high"),
    [(0, 10), (0, 1), (3.95, 4.9), (-7, 13), (1e-5, 3e-5), (1000, 1004), (0.44, 2.06), (-250, -3)],
)
def test_nice_ticks_are_1_2_5_steps_covering_the_range(low: float, high: float) -> None:
    ticks = nice_ticks(low, high)
    assert 4 <= len(ticks) <= 7
    assert ticks[0] <= low
    assert ticks[-1] >= high
    steps = {round(b - a, 12) for a, b in itertools.pairwise(ticks)}
    assert len(steps) == 1
    (step,) = steps
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 6) in (1, 2, 5)


def test_nice_ticks_odd_ranges() -> None:
    assert nice_ticks(NAN, 1) == []
    assert nice_ticks(0, INF) == []
    assert nice_ticks(10, 0) == nice_ticks(0, 10)
    same = nice_ticks(5, 5)
    assert same[0] < 5 < same[-1]
    assert nice_ticks(0, 10) == [0, 2, 4, 6, 8, 10]


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0"), (0.5, "0.5"), (12, "12"), (1200, "1.2k"), (12_000, "12k"), (1_500_000, "1.5M"),
     (-2500, "-2.5k"), (999.9, "1k"), (3e-05, "3e-05"), (0.0123, "0.0123"), (NAN, "nan"), (-INF, "-inf")],
)  # fmt: skip
def test_short_labels(value: float, text: str) -> None:
    assert short(value) == text


# --- distributions ---------------------------------------------------------------------------


def test_distributions_draw_every_value_a_box_and_a_median_per_side() -> None:
    root = parse(distributions([("baseline", [4.0 + i / 10 for i in range(11)]), ("current", [5.0] * 13)]))
    assert dots(root) == 24
    first, second = classed(root, "s0"), classed(root, "s1")
    assert len(first) == len(second) == 1
    assert dots(first[0]) == 11
    assert dots(second[0]) == 13
    box = first[0].find(f"{SVG}rect")
    assert box is not None
    # quartiles 4.25..4.75 and a median at 4.5 inside the box
    median = re.match(r"M([\d.]+)", first[0].findall(f"{SVG}path")[0].get("d") or "")
    assert median
    left, width = float(box.get("x") or 0), float(box.get("width") or 0)
    assert left < float(median[1]) < left + width
    assert {"baseline", "current", "ms"} <= set(texts(root))


def test_distributions_show_a_side_without_values_and_marks() -> None:
    chart = distributions(
        [("baseline", []), ("current", [4.1, NAN, 4.3, INF])], marks=[("baseline median", 4.2)]
    )
    root = parse(chart)
    assert dots(root) == 2  # the non-finite values are left out
    assert {"baseline", "no rounds"} <= set(texts(root))
    (mark,) = classed(root, "mk")
    assert any("baseline median" in text for text in texts(mark))
    assert mark.find(f"{SVG}path") is not None


def test_a_typical_distribution_chart_is_small_and_deterministic() -> None:
    sides = [
        ("baseline", [4 + (i * 7 % 30) / 100 for i in range(30)]),
        ("current", [4.2 + i / 90 for i in range(30)]),
    ]
    chart = distributions(sides)
    assert len(chart.encode()) < 4000
    assert chart == distributions(sides)
    assert not chart.startswith("<?xml")
    assert 'xmlns="http://www.w3.org/2000/svg"' in chart
    assert re.search(r"\d\.\d\d", chart.replace(parse(chart)[0].text or "", "")) is None  # one decimal


# --- interval --------------------------------------------------------------------------------


def test_a_failed_interval_is_marked_bad_and_reads_in_percent() -> None:
    root = parse(
        interval(value=1.1, low=1.05, high=1.15, band=(0.9, 1.04), points=[1.02, 1.1, 1.2], failed=True)
    )
    (bar,) = classed(root, "iv")
    assert "bad" in (bar.get("class") or "").split()
    assert dots(root) == 3
    labels = texts(root)
    assert "+10%" in labels
    assert "0%" in labels
    assert "failed" in (root[0].text or "")
    (estimate,) = classed(root, "pt")
    start, end = (float(x) for x in re.findall(r"[MH]([\d.]+)", bar.get("d") or ""))
    assert start < float(estimate.get("cx") or 0) < end


def test_a_passing_interval_is_marked_ok() -> None:
    root = parse(interval(value=0.99, low=0.97, high=1.01, band=(0.9, 1.1)))
    (bar,) = classed(root, "iv")
    assert "ok" in (bar.get("class") or "").split()
    assert "passed" in (root[0].text or "")


@pytest.mark.parametrize(("band", "edge"), [((-INF, 1.05), "left"), ((0.95, INF), "right")])
def test_an_unbounded_band_is_shaded_to_the_edge(band: tuple[float, float], edge: str) -> None:
    root = parse(interval(value=1.0, low=0.98, high=1.02, band=band))
    (shade,) = classed(root, "band")
    left, right, _ = axis_line(root)
    x, width = float(shade.get("x") or 0), float(shade.get("width") or 0)
    if edge == "left":
        assert x == left
        assert left < x + width < right
    else:
        assert left < x
        assert x + width == right


def test_an_interval_without_figures_says_no_data() -> None:
    assert no_data(interval(value=NAN, low=NAN, high=INF, band=(NAN, NAN)))
    root = parse(interval(value=1.2, low=NAN, high=NAN, band=(NAN, 1.1)))
    assert classed(root, "pt")
    assert not classed(root, "iv")
    assert not classed(root, "band")


# --- paired bars -----------------------------------------------------------------------------


def test_paired_bars_leave_out_a_missing_side() -> None:
    root = parse(paired_bars([("Conv", 1.0, 1.2), ("MatMul", None, 0.4), ("Add", 0.1, NAN)], unit="us"))
    assert len(bars(root, "s0")) == 2
    assert len(bars(root, "s1")) == 2
    assert bars(root, "s1")[0][2] == pytest.approx(1.2 * bars(root, "s0")[0][2], abs=0.1)  # from zero
    assert {"baseline", "current", "Conv", "MatMul", "Add", "1.2", "0.4", "us"} <= set(texts(root))


def test_paired_bars_grow_with_rows_and_stop_at_thirty() -> None:
    few = parse(paired_bars([("a", 1.0, 2.0)] * 3))
    many = parse(paired_bars([(f"op{i}", float(i), float(i) + 1) for i in range(35)]))
    assert float(many.get("height") or 0) > float(few.get("height") or 0)
    assert "+5 more" in texts(many)
    assert "op29" in texts(many)
    assert "op30" not in texts(many)


# --- histogram -------------------------------------------------------------------------------


def test_histogram_marks_the_tolerance_between_bins_and_the_failing_bins() -> None:
    counts = [1, 4, 25, 100, 1200, 30, 2]
    labels = ["<1e-4", "1e-4", "1e-3", "1e-2", "0.1", "1", ">1e3"]
    root = parse(histogram(counts, labels, marker=5.0, marker_label="atol 1", bad_from=5))
    good, bad = bars(root, "s1"), bars(root, "bad")
    assert (len(good), len(bad)) == (5, 2)
    (marker,) = classed(root, "mk")
    x = float(re.match(r"M([\d.]+)", marker.find(f"{SVG}path").get("d") or "")[1])  # type: ignore[index, union-attr]
    bin4, bin5 = good[4], bad[0]
    assert bin4[0] + bin4[2] <= x <= bin5[0]
    assert "atol 1" in texts(marker)
    words = texts(root)
    assert "count, sqrt scale" in words
    assert "1.2k" in words
    assert set(labels) <= set(words)
    # a square-root scale: four times the count, twice the height
    assert good[3][3] == pytest.approx(2 * good[2][3], abs=0.2)


def test_a_crowded_histogram_still_parses() -> None:
    root = parse(histogram([i * 37 for i in range(60)], [f"bin {i}" for i in range(60)], marker=99))
    assert len(bars(root, "s1")) == 59  # no bar for a zero count
    under = [text for text in root.iter(f"{SVG}text") if (text.text or "").startswith("bin ")]
    assert 10 < len(under) < 60  # thinned out,
    assert all("rotate(-45)" in (text.get("transform") or "") for text in under)  # and turned


def test_an_empty_histogram_says_no_data() -> None:
    assert no_data(histogram([], []))
    assert no_data(histogram([0, 0], ["a", "b"]))


# --- scatter ---------------------------------------------------------------------------------


def test_scatter_puts_a_zero_on_a_log_axis_at_its_floor_hollow() -> None:
    points = [
        Point("fp32", 2.0, 24_000, 0),
        Point("int8", 1.0, 12_000, 1, "ok"),
        Point("fp16", 1.5, 0.0, 0),
        Point("broken", 1.2, 500.0, 3, "bad"),
    ]
    root = parse(scatter(points, x_label="median ms", y_label="bytes", log_y=True))
    _, _, floor = axis_line(root)
    (hollow,) = [
        e for e in root.iter() if e.get("fill") == "none" and e.tag == f"{SVG}circle" and e.get("r") == "3.5"
    ]
    assert float(hollow.get("cy") or 0) == floor
    assert len(classed(root, "ok")[0]) == 1
    assert len(classed(root, "bad")[0]) == 1
    assert {"fp32", "int8", "fp16", "broken", "bytes (log)", "median ms", "10k"} <= set(texts(root))
    shapes = [e.tag.removeprefix(SVG) for g in classed(root, "s0") + classed(root, "s1") for e in g]
    assert sorted(shapes) == ["circle", "circle", "path", "rect"]


def test_scatter_skips_points_it_cannot_place() -> None:
    assert no_data(scatter([Point("p", NAN, 1.0)], x_label="x", y_label="y"))
    root = parse(scatter([Point("p", NAN, 1.0), Point("q", 1.0, 2.0)], x_label="x", y_label="y"))
    assert "q" in texts(root)
    assert "p" not in texts(root)


# --- every chart -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "chart",
    [
        lambda: distributions([(TRICKY, [1.0, 2.0])], unit=TRICKY),
        lambda: interval(value=1.0, low=0.9, high=1.1, band=(0.8, 1.2), label=TRICKY),
        lambda: paired_bars([(TRICKY, 1.0, 2.0)], sides=(TRICKY, "b")),
        lambda: histogram([1, 2], [TRICKY, "b"], marker=1, marker_label=TRICKY),
        lambda: scatter([Point(TRICKY, 1.0, 2.0)], x_label=TRICKY, y_label="y"),
    ],
)
def test_text_is_escaped(chart: object) -> None:
    text = chart()  # type: ignore[operator]
    assert "a<b" not in text
    assert any(TRICKY in words for words in texts(parse(text)))
    assert TRICKY in (parse(text)[0].text or "")


@pytest.mark.parametrize(
    "chart",
    [
        lambda: distributions([]),
        lambda: distributions([("a", [NAN, INF]), ("b", [])]),
        lambda: paired_bars([]),
        lambda: paired_bars([("x", None, NAN)]),
        lambda: scatter([], x_label="x", y_label="y", log_x=True, log_y=True),
    ],
)
def test_empty_charts_say_no_data(chart: object) -> None:
    assert no_data(chart())  # type: ignore[operator]


def test_an_interval_axis_never_reaches_below_minus_100_percent() -> None:
    # A ratio is never below 0: a +750% regression's axis starts at -100%, not at a "nice" -500%.
    chart = interval(value=8.5, low=5.9, high=10.4, band=(1 / 1.03, 1.03), failed=True)
    ticks = [
        text.text for text in ET.fromstring(chart).iter(f"{SVG}text") if text.text and text.text.endswith("%")
    ]
    assert ticks[0] == "-100%"
    assert all(float(t.rstrip("%").replace("k", "e3")) >= -100 for t in ticks)
