"""A check kind registered by a conftest through ``pytest_ortperf_register_kinds``: one declaration,
and it runs from ``ort_perf.check_<name>()`` and ``ort_perf.check()``, and appears in the terminal
summary, the JSON and markdown reports, the HTML page and the JUnit properties."""

from __future__ import annotations

import json
from xml.etree import ElementTree

import pytest

from pytest_ortperf.checks.latency_figures import KEYS as LATENCY_KEYS

# A kind of its own: every output of the model is finite. Its check runs the session once on the
# test's inputs; "bound" is a per-call option (check_finite(bound=...)), through configured().
CONFTEST = """
import math

import numpy as np

from pytest_ortperf import CheckKind, KindResult, Status


class FiniteCheck:
    kind = "finite"

    def __init__(self, context, bound=math.inf):
        self._context = context
        self._bound = bound

    def configured(self, *, bound):
        return FiniteCheck(self._context, bound)

    def recorded(self, entry, machine):
        return False

    def run(self, target):
        session = self._context.built.session
        names = [output.name for output in session.get_outputs()]
        values = session.run(names, target.inputs)
        worst = max(float(np.max(np.abs(value))) for value in values)
        failed = not math.isfinite(worst) or worst > self._bound
        result = KindResult(
            target.key,
            "finite",
            Status.REGRESSION if failed else Status.OK,
            path="the model's own outputs",
            summary=f"largest |output| {worst:.3g}",
            figures={"largest": worst, "outputs": len(names)},
            notes=("NaN and infinity fail",),
            failed=failed,
            message=f"finite check of {target.key.test}: largest |output| {worst:.3g} > {self._bound}" if failed else "",
        )
        self._context.publisher.publish(KIND.record(result, self._context.nodeid))
        return [result]


KIND = CheckKind(name="finite", make=FiniteCheck, summary="every output finite and bounded")


def pytest_ortperf_register_kinds(registry):
    registry.register(KIND, origin="conftest.py")
"""

TEST_FILE = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

def test_bounded(ort_perf):
    result = ort_perf.check_finite()
    assert result.status == "ok"

def test_too_tight(ort_perf):
    ort_perf.check_finite(bound=1e-9, name="tight")

def test_in_check(ort_perf):
    (finite,) = ort_perf.check(finite=True)
    assert finite.kind == "finite"
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, write_model) -> pytest.Pytester:
    write_model(layers=2, width=8)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_kind=TEST_FILE)
    pytester.makeini("[pytest]\nortperf_checks = finite\n")
    return pytester


def test_a_kind_registered_in_a_conftest_appears_in_every_report(suite: pytest.Pytester) -> None:
    result = suite.runpytest(
        "--ortperf-report=report.json",
        "--ortperf-markdown=summary.md",
        "--ortperf-html=report.html",
        "--junitxml=junit.xml",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=2, failed=1)
    # The failure says why, in the kind's own words.
    result.stdout.fnmatch_lines(["*finite check of test_too_tight*#tight: largest |output|*> 1e-09*"])
    # The terminal: the common table of checks, read from the records.
    result.stdout.fnmatch_lines(
        [
            "other checks (finite: *",
            "*test*variant*check*path*current*change*verdict*",
            "*test_kind.py::test_bounded*cpu-all*finite*the model's own outputs*largest |output|*ok*",
        ]
    )
    records = json.loads((suite.path / "report.json").read_text())["checks"]
    finite = [r for r in records if r["kind"] == "finite"]
    assert sorted(r["verdict"] for r in finite) == ["ok", "ok", "regression"]
    bounded = next(r for r in finite if r["test"].endswith("test_bounded[cpu-all]"))
    assert bounded["figures"]["outputs"] == 1
    assert bounded["figures"]["largest"] > 0
    assert bounded["notes"] == ["NaN and infinity fail"]
    assert "finite" in (suite.path / "summary.md").read_text()
    page = (suite.path / "report.html").read_text()
    assert "largest |output|" in page
    assert "NaN and infinity fail" in page
    properties = {
        (case.get("name"), prop.get("name"), prop.get("value"))
        for case in ElementTree.parse(suite.path / "junit.xml").iter("testcase")
        for prop in case.iter("property")
    }
    assert ("test_bounded[cpu-all]", "ortperf_finite_verdict", "ok") in properties
    assert ("test_too_tight[cpu-all]", "ortperf_finite_verdict", "regression") in properties


def test_a_kind_name_taken_or_malformed_is_a_usage_error_naming_its_origin(
    pytester: pytest.Pytester, write_model
) -> None:
    write_model(layers=2, width=8)
    pytester.makepyfile(test_kind=TEST_FILE)
    named = "a check kind named"
    taken = ("latency", "", f"{named} 'latency', which pytest-ortperf already registered*")
    malformed = ("Bad-Name", "", f"{named} 'Bad-Name': a name is lower case*")
    untimed = ("finite", ", timed=True", "the check kind 'finite' as timed without its not_timed outcome*")
    for name, extra, said in (taken, malformed, untimed):
        pytester.makeconftest(
            f"""
from pytest_ortperf import CheckKind

def pytest_ortperf_register_kinds(registry):
    registry.register(CheckKind(name={name!r}, make=object{extra}), origin="conftest.py")
"""
        )
        result = pytester.runpytest()
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*conftest.py registered {said}"])


def test_an_unknown_kind_in_ortperf_checks_names_the_registered_ones(suite: pytest.Pytester) -> None:
    suite.makeini("[pytest]\nortperf_checks = latency,fnite\n")
    result = suite.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    from pytest_ortperf.kinds import builtin_kinds

    known = ", ".join([*builtin_kinds().names(), "finite"])  # the built-in kinds, then the conftest's
    result.stderr.fnmatch_lines(
        [
            f"*ortperf_checks*{known}, comma separated; unknown: fnite. The kinds: *; finite (every output finite and bounded)."
        ]
    )


def test_a_call_option_the_kind_does_not_take_fails_the_test_naming_it(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_kind="""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

def test_wrong(ort_perf):
    ort_perf.check_finite(bount=1.0)

def test_missing_kind(ort_perf):
    ort_perf.check_finit()
"""
    )
    result = suite.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*check_finite()*bount*"])
    result.stdout.fnmatch_lines(["*has no attribute 'check_finit' (check kinds: latency, *, finite)*"])


RESULT_TYPES = {
    "latency": "LatencyResult",
    "accuracy": "AccuracyResult",
    "graph": "GraphResult",
    "memory": "FootprintResult",
    "startup": "FootprintResult",
    "determinism": "KindResult",
}


def test_the_default_checks_are_declared_once_and_help_docs_and_behaviour_agree(
    pytester: pytest.Pytester, write_model
) -> None:
    """CheckKind.default is the one statement of what ort_perf.check() runs when ortperf_checks is
    not set: --help, docs/reference.md, docs/check-kinds.md and a real run say the same kinds."""
    from pathlib import Path

    from pytest_ortperf.kinds import builtin_kinds

    defaults = builtin_kinds().defaults()
    assert defaults  # a run without ortperf_checks checks something
    listed = ",".join(defaults)
    helped = pytester.runpytest("--help")
    assert f"(default: the kinds declared default: {listed})" in " ".join(helped.stdout.str().split())
    docs = Path(__file__).parents[2] / "docs"
    row = next(
        line for line in (docs / "reference.md").read_text().splitlines() if "`--ortperf-checks=LIST`" in line
    )
    assert f"| `{listed}`;" in row
    kinds_doc = (docs / "check-kinds.md").read_text()
    words = ", ".join(defaults[:-1]) + f" and {defaults[-1]}" if len(defaults) > 1 else defaults[0]
    assert f"({words} are)" in kinds_doc

    write_model(layers=2, width=8)
    pytester.makepyfile(
        test_defaults="""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

def test_default(ort_perf):
    print("KINDS", ",".join(type(outcome).__name__ for outcome in ort_perf.check()))
"""
    )
    result = pytester.runpytest("-s", "--ortperf-update", "--ortperf-budget=0.2")
    result.assert_outcomes(passed=1)
    # one outcome per default kind, in their order (the built-in kinds' result types)
    result.stdout.fnmatch_lines([f"*KINDS {','.join(RESULT_TYPES[kind] for kind in defaults)}"])


# A kind with a baseline part of its own: the number of outputs and the largest |output|, recorded by
# an update and compared otherwise; the store keeps the part without interpreting it.
PART_CONFTEST = """
import datetime

import numpy as np

from pytest_ortperf import CheckKind, KindOption, KindResult, Status


class RangeCheck:
    kind = "range"

    def __init__(self, context):
        self._context = context

    def recorded(self, entry, machine):
        figures = entry.figures_for(machine)
        return figures is not None and figures.part("range") is not None

    def run(self, target):
        context, key = self._context, target.key
        values = context.built.session.run(None, target.inputs)
        now = {"largest": round(max(float(np.max(np.abs(v))) for v in values), 3), "outputs": len(values)}
        if target.policy.update:
            before, staged = context.store.stage_part(
                key.test_file, key.test, variant=key.variant, machine=key.machine, name="range", data=now,
                environment=target.environment, today=datetime.date.today().isoformat(),
            )
            status, path = (Status.UNCHANGED if not staged else Status.UPDATED if before else Status.NEW), "record"
        else:
            figures = target.entry.figures_for(key.machine) if target.entry else None
            stored = figures.part("range") if figures else None
            # its own option (flag or ini key), overridden per test by its own ort_thresholds keyword
            slack = float(target.policy.kind_thresholds.get("range", context.settings.option("range", "slack")))
            moved = stored is not None and abs(stored["largest"] - now["largest"]) > slack
            status = Status.MISSING if stored is None else Status.REGRESSION if moved else Status.OK
            path = f"stored figures, slack {slack:g}"
        result = KindResult(key, "range", status, path=path, summary=f"largest {now['largest']}", figures=now,
                            failed=status is Status.REGRESSION, message="range moved" if status is Status.REGRESSION else "")
        context.publisher.publish(KIND.record(result, context.nodeid))
        return [result]


def draw(record):
    return f"<p class='range-drawing'>range drawn: largest {record['figures']['largest']}</p>"


KIND = CheckKind(
    name="range",
    make=RangeCheck,
    part="range",
    summary="the outputs' range, kept in the baseline",
    drawing=draw,
    options=(KindOption("slack", "how far the largest |output| may move", "0"),),
    thresholds=("range",),
)


def pytest_ortperf_register_kinds(registry):
    registry.register(KIND, origin="conftest.py")
"""


def test_a_registered_kind_keeps_its_baseline_part_across_updates_of_other_kinds(
    pytester: pytest.Pytester, write_model
) -> None:
    write_model(layers=2, width=8)
    pytester.makeconftest(PART_CONFTEST)
    pytester.makepyfile(
        test_range="""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

def test_model(ort_perf):
    ort_perf.check()
"""
    )
    quick = ("--ortperf-budget=0.2", "--ortperf-max-cv=1000%")
    pytester.runpytest("--ortperf-update", "--ortperf-checks=latency,graph,range", *quick).assert_outcomes(
        passed=1
    )
    baseline = pytester.path / "baselines" / "test_range.py.json"
    document = json.loads(baseline.read_text())
    (figures,) = document["entries"]["test_model[cpu-all]"]["figures"].values()
    part = figures["parts"]["range"]
    assert part["outputs"] == 1
    assert part["largest"] > 0
    # The latency and graph parts re-recorded by updates of those kinds alone: the range part stays.
    for key in (*LATENCY_KEYS, "graph"):  # latency's part: its figures and how they were recorded
        figures.pop(key, None)
    baseline.write_text(json.dumps(document))
    pytester.runpytest("--ortperf-update", "--ortperf-checks=latency", *quick).assert_outcomes(passed=1)
    pytester.runpytest("--ortperf-update", "--ortperf-checks=graph", *quick).assert_outcomes(passed=1)
    (after,) = json.loads(baseline.read_text())["entries"]["test_model[cpu-all]"]["figures"].values()
    assert after["parts"] == {"range": part}
    assert "latency" in after
    assert "graph" in after
    # It decides from its part, and ortperf show has a column for it.
    pytester.runpytest("--ortperf-checks=range", "--ortperf-report=report.json").assert_outcomes(passed=1)
    # Its drawing is in the page the CLI makes later from the JSON report alone (it knows no conftest).
    from pytest_ortperf.cli import main

    assert (
        main(["report", str(pytester.path / "report.json"), "--html", str(pytester.path / "page.html")]) == 0
    )
    assert f"range drawn: largest {part['largest']}" in (pytester.path / "page.html").read_text()
    from pytest_ortperf.reports.show import show_baselines

    lines, problems = show_baselines(pytester.path / "baselines", as_json=False)
    assert not problems
    assert any(f"range largest={part['largest']:.4g}, outputs=1" in line for line in lines), lines


def test_a_registered_kind_has_its_own_option_ini_key_and_threshold_keyword(
    pytester: pytest.Pytester, write_model
) -> None:
    """The kind's option is on the command line and in --help, its ini key in the ini file (the flag
    wins), and its ort_thresholds keyword reaches its check per test."""
    write_model(layers=2, width=8)
    pytester.makeconftest(PART_CONFTEST)
    pytester.makepyfile(
        test_range="""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

def test_model(ort_perf):
    ort_perf.check_range()

@pytest.mark.ort_thresholds(range=1e9)
def test_lenient(ort_perf):
    ort_perf.check_range()
"""
    )
    pytester.runpytest("--ortperf-update").assert_outcomes(passed=2)
    baseline = pytester.path / "baselines" / "test_range.py.json"
    document = json.loads(baseline.read_text())
    for entry in document["entries"].values():
        for figures in entry["figures"].values():
            figures["parts"]["range"]["largest"] += 5.0  # as if the outputs had moved by 5
    baseline.write_text(json.dumps(document))

    helped = pytester.runpytest("--help")
    helped.stdout.fnmatch_lines(["*--ortperf-range-slack=VALUE*"])
    strict = pytester.runpytest("--ortperf-report=report.json")
    strict.assert_outcomes(passed=1, failed=1)  # the default slack 0; the marker's keyword lets it pass
    paths = {
        r["test"].split("::")[1]: r["path"]
        for r in json.loads((pytester.path / "report.json").read_text())["checks"]
    }
    assert paths == {
        "test_model[cpu-all]": "stored figures, slack 0",
        "test_lenient[cpu-all]": "stored figures, slack 1e+09",
    }
    pytester.makeini("[pytest]\nortperf_range_slack = 10\n")
    pytester.runpytest().assert_outcomes(passed=2)  # the ini key
    pytester.runpytest("--ortperf-range-slack=1").assert_outcomes(passed=1, failed=1)  # the flag wins
    pytester.makepyfile(
        test_range="""
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 2})

@pytest.mark.ort_thresholds(rnage=1)
def test_model(ort_perf):
    ort_perf.check_range()
"""
    )
    typo = pytester.runpytest()
    typo.assert_outcomes(errors=1)  # a usage error of the test (in its fixture)
    typo.stdout.fnmatch_lines(
        [
            "*ort_thresholds takes keyword arguments latency, *, variants, graph, memory, startup, throughput, generation, range; unknown: rnage*"
        ]
    )


def test_a_kind_registered_after_the_options_were_read_is_an_error_naming_where_to_register_it(
    pytester: pytest.Pytester, write_model
) -> None:
    """A conftest.py below the rootdir loads while collecting, after pytest read its options."""
    write_model("sub/model.onnx", layers=2, width=8)
    (pytester.path / "sub" / "conftest.py").write_text(PART_CONFTEST)
    (pytester.path / "sub" / "test_sub.py").write_text(
        "import pytest\n\n@pytest.mark.ort_model('model.onnx')\ndef test_m(ort_perf):\n    ort_perf.check_range()\n"
    )
    result = pytester.runpytest(".")
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        [
            "*registered the check kind 'range' after the run was configured: register kinds in a plugin or in the conftest.py of the rootdir*"
        ]
    )
