"""The HTML page, rendered from JSON reports: what each section shows, merging CI jobs, bad report files.

``example_report.json`` is a real report, cut down to 13 checks: the example suite run after its small
CNN was made four times wider than its baselines (the browser test's regression; tests/browser), with
one profiled test.
"""

from __future__ import annotations

import copy
import json
import re
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_ortperf.cli import main
from pytest_ortperf.kinds import builtin_kinds
from pytest_ortperf.reports.html import (
    Job,
    ReportFileError,
    read_report,
    read_reports,
)
from pytest_ortperf.reports.html import render_page as render_any_page
from pytest_ortperf.reports.html import write_page as write_any_page

# The built-in kinds' drawings, as the run and `ortperf report` hand them to the page.
DRAWINGS = builtin_kinds().drawings()
render_page = partial(render_any_page, drawings=DRAWINGS)
write_page = partial(write_any_page, drawings=DRAWINGS)

EXAMPLE = Path(__file__).with_name("example_report.json")


@pytest.fixture
def document() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(EXAMPLE.read_text())
    return loaded


def _check(document: dict[str, Any], kind: str, verdict: str | None = None) -> dict[str, Any]:
    return next(c for c in document["checks"] if c["kind"] == kind and verdict in (None, c["verdict"]))


def _section(page: str, record: dict[str, Any], kind: str) -> str:
    """The <details> of the check of ``record``'s test and ``kind``."""
    test = re.escape(record["test"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    found = re.search(
        rf'<details class="check [^"]*" id="c\d+"[^>]*><summary>(?:(?!</details>).)*?{test}</span> · {kind}(?:(?!</details>).)*</details>',
        page,
        re.S,
    )
    assert found, f"no {kind} section for {record['test']}"
    return found.group(0)


def test_the_page_fetches_nothing_and_has_every_section(document: dict[str, Any]) -> None:
    page = render_page([Job("", document)])
    assert page.startswith("<!DOCTYPE html>")
    for section in ("summary", "checks", "profiles", "tradeoffs"):
        assert f'<section id="{section}">' in page
    # Styles, script and charts are inline: no link, no source, no address but the SVG namespace.
    assert "<link" not in page
    assert " src=" not in page
    assert set(re.findall(r"https?://[^\s\"')]+", page)) == {"http://www.w3.org/2000/svg"}
    # One row and one section per check.
    assert page.count('<tr class="') == len(document["checks"])
    assert len(re.findall(r'<details class="check \w+" id="c\d+"', page)) == len(document["checks"])


def test_failures_come_first_open_and_counted_and_passing_checks_stay_closed(
    document: dict[str, Any],
) -> None:
    page = render_page([Job("", document)])
    states = re.findall(r'<tr class="(\w+)">', page)
    failed = sum(c["failed"] for c in document["checks"])
    assert states[:failed] == ["failed"] * failed
    assert "failed" not in states[failed:]
    assert f'<span class="pill bad">{failed} failed</span>' in page
    assert re.findall(r'<details class="check failed" id="c\d+" open>', page)
    assert not re.findall(r'<details class="check ok" id="c\d+" open>', page)
    assert f"<title>pytest-ortperf: {failed} failed of {len(document['checks'])} checks</title>" in page


def test_a_latency_regression_shows_both_sides_rounds_and_the_paired_ratios_against_the_band(
    document: dict[str, Any],
) -> None:
    record = _check(document, "latency", "regression")
    section = _section(render_page([Job("", document)]), record, "latency")
    assert section.count('<svg class="chart"') == 2  # the distributions and the interval
    assert 'class="iv bad"' in section or "iv bad" in section
    assert record["path"] in section  # the route that decided
    rounds = len(record["current"]["round_medians_ms"])
    assert rounds == len(record["reference"]["round_medians_ms"])
    assert "paired round ratios (dots)" in section
    assert "threshold (±3%)" in section


def test_a_latency_check_names_the_inputs_it_was_fed(document: dict[str, Any]) -> None:
    record = _check(document, "latency", "regression")
    record["inputs"] = {"x": "float32[1, 3, 64, 64]", "<m>": "int64[]"}
    record["inputs_source"] = "synthetic(seed=0)"
    section = _section(render_page([Job("", document)]), record, "latency")
    assert (
        "<p>Inputs fed (synthetic(seed=0)): <code>x float32[1, 3, 64, 64]</code>, <code>&lt;m&gt; int64[]</code></p>"
        in section
    )
    del record["inputs"]
    assert "Inputs fed" not in _section(render_page([Job("", document)]), record, "latency")


def test_an_unchanged_latency_check_shows_the_baselines_rounds_and_the_machines_drift(
    document: dict[str, Any],
) -> None:
    record = _check(document, "latency", "unchanged")
    section = _section(render_page([Job("", document)]), record, "latency")
    assert record["drift"]["text"] in section
    assert f"baseline {record['baseline']['recorded']}" in section
    assert "no rounds" not in section


def test_a_failed_accuracy_check_draws_errors_against_the_tolerance_and_names_the_worst_elements(
    document: dict[str, Any],
) -> None:
    record = _check(document, "accuracy", "failed")
    section = _section(render_page([Job("", document)]), record, "accuracy")
    output = record["references"][0]["outputs"][0]
    assert output["against_tolerance"]["counts"][-5:] != [0] * 5  # elements beyond the tolerance
    assert "tolerance</text>" in section  # the histogram's tolerance line
    assert "worst elements of <code>probabilities</code>" in section
    worst = output["worst_elements"][0]
    assert str(worst["index"]) in section


def test_an_exact_output_draws_no_histogram(document: dict[str, Any]) -> None:
    record = _check(document, "accuracy", "ok")
    section = _section(render_page([Job("", document)]), record, "accuracy")
    assert all(o["max_abs"] == 0 for ref in record["references"] for o in ref["outputs"])
    assert '<svg class="chart"' not in section


def test_a_graph_check_names_a_lost_fusion_and_draws_both_histograms(document: dict[str, Any]) -> None:
    record = _check(document, "graph", "unchanged")
    record["test"] = record["test"].replace(record["variant"], "cpu-all")  # at a level that fuses
    record["variant"] = "cpu-all"
    record["reference"]["ops"] = {**record["reference"]["ops"], "com.microsoft:FusedConv": 2}
    record["current"]["ops"] = {**record["current"]["ops"], "Conv": 2, "Relu": 2}
    record["current"]["digest"] = "another"
    section = _section(render_page([Job("", document)]), record, "graph")
    assert "lost fusion: FusedConv 2 -&gt; 0 (Conv +2, Relu +2)" in section
    assert "this hardware class&#x27;s recorded graph" in section  # the reference side's legend


def test_memory_and_start_up_checks_show_their_figures(document: dict[str, Any]) -> None:
    page = render_page([Job("", document)])
    memory = _section(page, _check(document, "memory"), "memory")
    assert "peak bytes in use in ORT&#x27;s arena" in memory
    assert "Memory per node (KiB)" in memory
    startup = _section(page, _check(document, "startup"), "startup")
    assert "session creation: one dot per fresh process" in startup


def test_a_profiled_test_is_drawn_against_its_baselines_profile_with_the_nodes_that_grew(
    document: dict[str, Any],
) -> None:
    profile = document["profiles"][0]
    nodes = profile["profile"]["nodes"]
    slowest = max(nodes, key=lambda name: nodes[name]["us"])
    before = copy.deepcopy(profile["profile"])
    before["nodes"][slowest]["us"] = nodes[slowest]["us"] / 3
    latency = _check(document, "latency", "unchanged")
    latency["test"] = profile["test"]
    latency["baseline"]["profile"] = before
    page = render_page([Job("", document)])
    assert "nodes whose time grew most (by more than 10%" in page
    grew = re.search(r"nodes whose time grew most.*?.*?</table>", page, re.S)
    assert grew is not None
    assert slowest in grew.group(0)
    assert "+200%" in grew.group(0)
    assert 'href="#p-' in _section(page, latency, "latency")  # the latency check links to it
    # Without a baseline profile the bars say so, and no node is said to have grown.
    page = render_page([Job("", json.loads(EXAMPLE.read_text()))])
    assert "no baseline profile" in page
    assert "nodes whose time grew most" not in page


def test_the_trade_off_view_draws_each_variant_with_its_contract(document: dict[str, Any]) -> None:
    page = render_page([Job("", document)])
    tradeoffs = page[page.index('<section id="tradeoffs">') :]
    assert tradeoffs.count('<svg class="chart"') == len(document["tradeoffs"])
    assert "cpu-all-int8-static" in tradeoffs
    assert "No model ran two or more variants" not in tradeoffs


def test_names_are_escaped(document: dict[str, Any]) -> None:
    record = _check(document, "contract")
    record["test"] = 'test_x.py::test_<script>alert("x")</script>'
    page = render_page([Job("", document)])
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_an_error_and_a_run_error_are_shown_at_the_top(document: dict[str, Any]) -> None:
    document["checks"].append({"test": "t.py::test_boom", "kind": "latency", "variant": "cpu-all",
                               "verdict": "error", "failed": True, "message": "the session timed out"})  # fmt: skip
    document["run_errors"] = ["an xdist worker went down"]
    page = render_page([Job("", document)])
    assert re.findall(r'<tr class="(\w+)">', page)[0] == "error"
    assert '<span class="pill bad">1 errors</span>' in page
    assert "run error: an xdist worker went down" in page
    assert "the session timed out" in page


def test_a_run_without_checks_renders() -> None:
    page = render_page([Job("", {"checks": [], "machine": "m"})])
    assert "No check ran." in page
    assert "No profiled test" in page


def test_several_jobs_merge_into_one_page_each_named(tmp_path: Path, document: dict[str, Any]) -> None:
    for job in ("linux-avx2", "linux-avx512"):
        (tmp_path / job).mkdir()
        (tmp_path / job / "report.json").write_text(json.dumps(document))
    jobs, problems = read_reports(
        [tmp_path / "linux-avx2" / "report.json", tmp_path / "linux-avx512" / "report.json"]
    )
    assert problems == []
    assert [job.label for job in jobs] == ["linux-avx2/report", "linux-avx512/report"]
    page = render_page(jobs)
    assert page.count('<tr class="') == 2 * len(document["checks"])
    assert "<th>job</th>" in page
    assert page.count('<td title="linux-avx512/report">linux-avx512/report</td>') == len(document["checks"])
    assert page.count(", speedups against ") == 2 * len(document["tradeoffs"])


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("not json", "not a JSON report"),
        ('{"checks": "x"}', "not a pytest-ortperf JSON report"),
        ("[1, 2]", "not a pytest-ortperf JSON report"),
        ('{"checks": [{"test": "t", "kind": "latency"}]}', "check 0 is not a check record"),
        (b"\xff\xfe", "not a JSON report"),
    ],
)
def test_a_bad_report_file_is_named_with_what_is_wrong(
    tmp_path: Path, content: str | bytes, reason: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ReportFileError, match=re.escape(str(path)) + ".*" + re.escape(reason)):
        read_report(path)


def test_ortperf_report_renders_the_readable_reports_and_names_the_others(
    tmp_path: Path, document: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    good, bad, missing = tmp_path / "good.json", tmp_path / "bad.json", tmp_path / "missing.json"
    good.write_text(json.dumps(document))
    bad.write_text("{")
    page = tmp_path / "out" / "page.html"
    assert main(["report", str(good), str(bad), str(missing), "--html", str(page)]) == 1
    out, err = capsys.readouterr()
    assert f"wrote {page} (1 report(s), {len(document['checks'])} checks)" in out
    assert f"{bad}: not a JSON report" in err
    assert f"{missing}: cannot read the report" in err
    text = page.read_text()
    assert f"left out: {bad}: not a JSON report" in text
    assert list(page.parent.iterdir()) == [page]  # no temporary file left beside it


def test_ortperf_report_writes_nothing_when_no_report_can_be_read_and_never_overwrites_one(
    tmp_path: Path, document: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    page = tmp_path / "page.html"
    assert main(["report", str(bad), "--html", str(page)]) == 2
    assert "no report could be read; no page was written" in capsys.readouterr().err
    assert not page.exists()
    good = tmp_path / "good.json"
    good.write_text(json.dumps(document))
    before = good.read_bytes()
    assert main(["report", str(good), "--html", str(good)]) == 2
    assert "that is one of the reports to read; it is not overwritten" in capsys.readouterr().err
    assert good.read_bytes() == before


def test_a_page_replaces_the_previous_one_whole(tmp_path: Path, document: dict[str, Any]) -> None:
    page = tmp_path / "page.html"
    page.write_text("old")
    write_page(page, [Job("", document)])
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]
    assert page.stat().st_mode & 0o777 == 0o644  # readable by whoever it is shared with


def test_a_damaged_record_costs_only_its_own_part(document: dict[str, Any]) -> None:
    assert "could not be drawn" not in render_page([Job("", document)])
    record = _check(document, "memory")
    record["comparisons"] = 5  # hand-edited: not a list
    document["profiles"][0]["fallback_nodes"] = 5  # not a list
    page = render_page([Job("", document)])
    assert page.count("could not be drawn from this report") == 2
    assert "this check&#x27;s figures could not be drawn" in _section(page, record, "memory")
    assert f"the profile of {document['profiles'][0]['test']} could not be drawn" in page
    # Every other check is drawn as before.
    assert page.count('<tr class="') == len(document["checks"])
    assert "iv bad" in _section(page, _check(document, "latency", "regression"), "latency")


def test_a_failed_latency_check_draws_the_operator_profiles_its_explanation_compared(
    document: dict[str, Any],
) -> None:
    record = _check(document, "latency", "regression")
    after = copy.deepcopy(document["profiles"][0]["profile"])
    before = copy.deepcopy(after)
    slowest = max(after["nodes"], key=lambda name: after["nodes"][name]["us"])
    before["nodes"][slowest]["us"] /= 2
    record["operators"] = {"source": "both sides profiled now", "before": before, "after": after}
    section = _section(render_page([Job("", document)]), record, "latency")
    assert "At operator level (both sides profiled now)" in section
    # The profile's totals come from other runs than the statistic that decided: the page says so.
    assert "These totals come from profiled runs" in section
    assert f"by the statistic that decided ({record['decided_by']})" in section.replace("&#x27;", "'")
    assert section.count('<svg class="chart"') == 4  # rounds, interval, by op type, by provider
    grew = re.search(r"nodes whose time grew most.*?</table>", section, re.S)
    assert grew is not None
    assert slowest in grew.group(0)
    assert "+100%" in grew.group(0)


def test_ortperf_report_to_a_folder_is_an_error_naming_it(
    tmp_path: Path, document: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(document))
    folder = tmp_path / "pages"
    folder.mkdir()
    assert main(["report", str(good), "--html", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ortperf: error:")
    assert str(folder) in err
    assert list(folder.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.json", "pages"]  # no temporary file left


def test_graph_bars_name_each_op_type_as_the_terminal_does(document: dict[str, Any]) -> None:
    """The NCHWc op types all read 'com.microsoft.nchwc…' (the label cut at 20 characters): they are
    labelled as the terminal names them, a name two domains share keeps its domain, and a name too
    long for its label loses the start of its domain, never its op."""
    record = _check(document, "graph", "unchanged")
    record["reference"]["ops"] = {"Gelu": 1, "com.microsoft:Gelu": 1, "com.microsoft:FusedConv": 2}
    record["current"]["ops"] = {
        "com.microsoft.nchwc:Conv": 2,
        "com.microsoft.nchwc:MaxPool": 2,
        "com.microsoft.nchwc:GlobalAveragePool": 1,
        "com.microsoft.nchwc:ReorderOutput": 1,
        "Gelu": 1,
        "com.microsoft:Gelu": 1,
        "org.example.custom.kernels:MyAttention": 1,
    }
    section = _section(render_page([Job("", document)]), record, "graph")
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", section)
    shown = ("nchwc:Conv", "nchwc:MaxPool", "nchwc:GlobalAveragePool", "nchwc:ReorderOutput", "FusedConv")
    for op in (*shown, "Gelu", "com.microsoft:Gelu", "\u2026tom.kernels:MyAttention"):
        assert op in labels, (op, labels)
    assert not any(label.startswith("com.microsoft.nchwc") for label in labels)


def test_the_summary_table_has_a_fixed_layout_whose_columns_share_the_width(document: dict[str, Any]) -> None:
    """At 1280 px the summary table scrolled sideways and cut 'current' off: its columns now share the
    page's width (tests/browser checks it in Chromium), each cell's whole text in its tooltip."""
    for merged, jobs in ((False, [Job("", document)]), (True, [Job("a", document), Job("b", document)])):
        page = render_page(jobs)
        table = page[page.index('<table id="checks-table">') : page.index("</table>")]
        widths = [int(w) for w in re.findall(r'<col style="width:(\d+)%">', table)]
        assert sum(widths) == 100
        assert len(widths) == len(re.findall(r"<th[ >]", table)) == (10 if merged else 9)
        first_row = table[table.index("<tbody>") :].split("</tr>")[0]
        cells = re.findall(r"<td[^>]*>", first_row)
        assert all("title=" in cell for cell in cells[1:]), cells


def test_an_output_not_compared_reads_so_with_its_reason(document: dict[str, Any]) -> None:
    changed = copy.deepcopy(document)
    record = _check(changed, "accuracy", "ok")
    output = record["references"][0]["outputs"][0]
    output["compared"], output["not_compared"] = (
        False,
        "onnxruntime returned a SparseTensor, which is not compared",
    )
    section = _section(render_page([Job("", changed)]), record, "accuracy")
    assert (
        "<td class='v-warn'>not compared: onnxruntime returned a SparseTensor, which is not compared</td>"
        in section
    )


def test_a_cosine_that_did_not_judge_says_why(document: dict[str, Any]) -> None:
    changed = copy.deepcopy(document)
    record = _check(changed, "accuracy", "ok")
    record["references"][0]["outputs"][0]["whole_output_not_judged"] = "every element within tolerance"
    section = _section(render_page([Job("", changed)]), record, "accuracy")
    assert "ok (cosine and SQNR not judged: every element within tolerance)" in section


def test_at_level_disabled_a_dropped_fused_op_is_the_models_op_change_not_a_lost_fusion(
    document: dict[str, Any],
) -> None:
    record = _check(document, "graph", "unchanged")
    assert record["variant"] == "cpu-disabled"
    record["reference"]["ops"] = {**record["reference"]["ops"], "Gemm": 3, "MatMul": 6, "Add": 0}
    record["current"]["ops"] = {**record["current"]["ops"], "Gemm": 1, "MatMul": 8, "Add": 2}
    record["current"]["digest"] = "another"
    section = _section(render_page([Job("", document)]), record, "graph")
    assert (
        "an op change of the model (level disabled: ORT fused nothing): Gemm 3 -&gt; 1 (Add +2, MatMul +2)"
        in section
    )
    assert "lost fusion" not in section


def test_the_summary_keeps_a_tests_own_name_whole_and_cuts_only_its_path(document: dict[str, Any]) -> None:
    record = _check(document, "accuracy")
    record["test"] = f"models/zoo/nlp/transformers/bert_tiny.onnx::accuracy[{record['variant']}]"
    page = render_page([Job("", document)])
    assert (
        '<span class="tp"><bdi>models/zoo/nlp/transformers/bert_tiny.onnx::</bdi></span>'
        '<span class="tn">accuracy</span>'
    ) in page
