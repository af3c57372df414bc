"""The HTML report in a real browser: the example suite's page with a real regression in it, and the
page's own controls (sorting, filtering, a followed link opening its check)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest

from pytest_ortperf.cli import main as ortperf_main
from pytest_ortperf.kinds import builtin_kinds
from pytest_ortperf.reports.html import Job, write_page

REPOSITORY = Path(__file__).resolve().parents[2]
SECTIONS = ("summary", "checks", "profiles", "tradeoffs")


def _git(where: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=where, check=True, capture_output=True, text=True)


def _heavier_small_cnn(path: Path) -> None:
    """The example's CNN rebuilt four times as wide (3 -> 64 -> 128 channels): the same inputs and
    classes, really slower, its scores changed."""
    script = REPOSITORY / "examples" / "models" / "make_small_cnn.py"
    spec = importlib.util.spec_from_file_location("make_small_cnn_wide", script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.CHANNELS = (3, 64, 128)
    onnx.save(module.build(), path)


def _as_recorded_by_this_runtime(baselines: Path) -> None:
    """The copy's recipes name this process's onnxruntime. Under another wheel than the one that
    recorded them (.ci/run's .[cpu] leg, onnxruntime 1.32.0 against onnxruntime-gpu 1.31.1), the changed
    small CNN would otherwise need the recorded runtime to be measured side by side: a 340 MB fetch
    and every check measured across runtimes, or, without it, stored figures that only the recording
    hardware has. This test is about the page, so its regression is measured side by side in this
    runtime, on any machine."""
    from pytest_ortperf.ort.runtime import runtime_info

    runtime = runtime_info()
    for path in baselines.glob("*.json"):
        document = json.loads(path.read_text(encoding="utf-8"))
        for entry in document["entries"].values():
            if "recipe" in entry:  # (an entry of the older per-machine layout holds outputs only)
                entry["recipe"].update(ort_version=runtime.version, ort_flavour=runtime.flavour)
        path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def example_page(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """The example suite run once in a copy of the repository whose small CNN got four times wider
    since its baselines were recorded; its HTML page and JSON report."""
    root = tmp_path_factory.mktemp("repository")
    shutil.copytree(
        REPOSITORY / "examples", root / "examples", ignore=shutil.ignore_patterns(".ortperf", "__pycache__")
    )
    shutil.copytree(REPOSITORY / "baselines", root / "baselines")
    _as_recorded_by_this_runtime(root / "baselines")
    _git(root, "init", "-q")
    for key, value in (
        ("user.name", "Test"),
        ("user.email", "test@example.com"),
        ("commit.gpgsign", "false"),
    ):
        _git(root, "config", key, value)
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "the example suite as recorded")
    _heavier_small_cnn(root / "examples" / "models" / "small_cnn.onnx")
    page, report = root / "report.html", root / "report.json"
    # The copy's recipes name this runtime (above), so nothing is fetched; the flag only makes sure.
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "examples", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         f"--ortperf-html={page}", f"--ortperf-report={report}", "--ortperf-fetch-runtime=never"],
        cwd=root, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    return page, report, done


@pytest.mark.slow
def test_the_example_suites_page_shows_the_injected_regression_in_the_first_screen(
    example_page: tuple[Path, Path, subprocess.CompletedProcess[str]], open_page: Any, tmp_path: Path
) -> None:
    page_path, report_path, done = example_page
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    document = json.loads(report_path.read_text())
    regressions = [c for c in document["checks"] if c["kind"] == "latency" and c["verdict"] == "regression"]
    # The injected one is caught at every level. (Under another onnxruntime than the one that recorded
    # the baselines, other models may really differ too.)
    injected = {
        c["variant"]
        for c in regressions
        if c["test"].startswith("test_small_cnn.py::test_latency_and_accuracy")
    }
    assert injected == {"cpu-disabled", "cpu-basic", "cpu-extended", "cpu-all"}

    opened = open_page(page_path)
    page = opened.page
    assert opened.errors == []
    for section in SECTIONS:
        assert page.locator(f"section#{section}").count() == 1, section
    # Every check of the report has its row and its section.
    assert page.locator("#checks-table tbody tr").count() == len(document["checks"])
    assert page.locator("details.check[id^=c]").count() == len(document["checks"])
    # The first rows are the failures, and the first regression's row lies wholly in the first screen.
    first = page.locator("#checks-table tbody tr").first
    assert "failed" in (first.get_attribute("class") or "")
    latency_rows = '#checks-table tbody tr.failed:has(td:nth-child(3):text-is("latency"))'  # the check column
    row = page.locator(latency_rows).filter(has_text="regression").first
    box = row.bounding_box()
    assert box is not None
    assert box["y"] + box["height"] <= page.viewport_size["height"]
    # Its section is open, with both distributions and the interval against the threshold drawn.
    anchor = row.locator("a").get_attribute("href")
    section = page.locator(f"details{anchor}")
    assert section.get_attribute("open") is not None
    assert section.locator("svg.chart").count() >= 2
    assert section.locator("svg.chart .iv.bad").count() == 1
    # The profiled test's failed latency check shows where the time went, both sides profiled.
    profiled = page.locator("details.check.failed", has_text="test_profiled_latency[cpu-all] · latency")
    assert profiled.locator("h3", has_text="At operator level").count() == 1
    # The profiled test and the trade-offs are drawn too.
    assert page.locator("#tradeoffs svg.chart").count() >= 1
    opened.screenshot(tmp_path / "example-suite-first-screen.png")


@pytest.mark.slow
def test_ortperf_report_merges_two_jobs_into_one_page_that_renders(
    example_page: tuple[Path, Path, subprocess.CompletedProcess[str]], open_page: Any, tmp_path: Path
) -> None:
    _, report_path, _ = example_page
    for job in ("linux-avx2", "linux-avx512"):
        (tmp_path / job).mkdir()
        shutil.copy(report_path, tmp_path / job / "report.json")
    merged = tmp_path / "merged.html"
    assert ortperf_main(["report", str(tmp_path / "linux-avx2" / "report.json"),
                         str(tmp_path / "linux-avx512" / "report.json"), "--html", str(merged)]) == 0  # fmt: skip
    opened = open_page(merged)
    assert opened.errors == []
    checks = len(json.loads(report_path.read_text())["checks"])
    assert opened.page.locator("#checks-table tbody tr").count() == 2 * checks
    assert opened.page.locator("#checks-table tbody tr", has_text="linux-avx512/report").count() == checks


def test_the_pages_controls_sort_filter_and_open_a_followed_check(open_page: Any, tmp_path: Path) -> None:
    """On a real report (tests/unit/reports/example_report.json): a header click sorts, the filter hides
    rows, and following a row's link opens its closed section."""
    document = json.loads((REPOSITORY / "tests" / "unit" / "reports" / "example_report.json").read_text())
    path = tmp_path / "page.html"
    write_page(path, [Job("", document)], drawings=builtin_kinds().drawings())
    opened = open_page(path)
    page = opened.page
    rows = page.locator("#checks-table tbody tr")
    assert rows.count() == len(document["checks"])
    assert "failed" in (rows.first.get_attribute("class") or "")
    # At 1280 px the table fits the page: nothing scrolls sideways, and "current" is on screen.
    assert page.viewport_size["width"] == 1280
    table = page.evaluate(
        "(() => { const t = document.getElementById('checks-table'), d = document.documentElement;"
        " return [t.scrollWidth, t.clientWidth, t.offsetWidth, t.parentElement.clientWidth,"
        " d.scrollWidth, d.clientWidth]; })()"
    )
    assert table[0] <= table[1], table  # the table's content fits the table
    assert table[2] <= table[3], table  # the table fits its section
    assert table[4] <= table[5], table  # the page does not scroll sideways
    current = page.locator("#checks-table th", has_text="current").bounding_box()
    assert current is not None
    assert current["x"] + current["width"] <= 1280
    opened.screenshot(tmp_path / "summary-1280.png")
    # Sorting by the check column, ascending then descending.
    header = page.locator("#checks-table th", has_text="check")
    header.click()
    kinds = [rows.nth(i).locator("td").nth(2).inner_text() for i in range(rows.count())]
    assert kinds == sorted(kinds)
    header.click()
    kinds = [rows.nth(i).locator("td").nth(2).inner_text() for i in range(rows.count())]
    assert kinds == sorted(kinds, reverse=True)
    # Filtering: only the rows holding every word stay visible.
    page.fill("#filter", "memory regression")
    visible = [i for i in range(rows.count()) if rows.nth(i).is_visible()]
    assert len(visible) == sum(
        c["kind"] == "memory" and c["verdict"] == "regression" for c in document["checks"]
    )
    page.fill("#filter", "")
    # A passing check's section is closed until its row's link is followed.
    ok_row = page.locator("#checks-table tbody tr.ok").first
    anchor = ok_row.locator("a").get_attribute("href")
    assert page.locator(f"details{anchor}").get_attribute("open") is None
    ok_row.locator("a").click()
    assert page.locator(f"details{anchor}").get_attribute("open") is not None
    assert opened.errors == []


def test_a_long_test_path_is_cut_and_the_tests_own_name_stays_whole(open_page: Any, tmp_path: Path) -> None:
    """The summary's test column cuts a long path short (from the left, keeping the file name), never
    the test's own name (it was ``...ls/bert_tiny.onnx::accuracy``, cut from the left whole)."""
    document = json.loads((REPOSITORY / "tests" / "unit" / "reports" / "example_report.json").read_text())
    record = next(c for c in document["checks"] if c["kind"] == "accuracy")
    record["test"] = (
        "models/zoo/natural_language/transformers/distilled/bert_tiny.onnx::"
        f"test_accuracy_against_the_reference_outputs[{record['variant']}]"
    )
    path = tmp_path / "page.html"
    write_page(path, [Job("", document)], drawings=builtin_kinds().drawings())
    page = open_page(path).page
    cell = page.locator("#checks-table td.t", has=page.locator(".tn", has_text="test_accuracy_against")).first
    measured = cell.evaluate(
        "(td) => { const name = td.querySelector('.tn'), path = td.querySelector('.tp');"
        " const box = td.getBoundingClientRect(), own = name.getBoundingClientRect();"
        " return {name: name.innerText, nameFits: name.scrollWidth <= name.clientWidth + 1,"
        " inside: own.left >= box.left - 1 && own.right <= box.right + 1,"
        " pathCut: path.scrollWidth > path.clientWidth, pathShown: path.clientWidth}; }"
    )
    assert measured["name"] == "test_accuracy_against_the_reference_outputs"
    assert measured["nameFits"], measured
    assert measured["inside"], measured
    assert measured["pathCut"], measured  # the path is the part that gave way
