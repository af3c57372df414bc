"""The latency gate end to end: record, compare, fail a real slowdown, update; real sessions."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import onnx
import pytest

from pytest_ortperf.latency.measure import MeasureSettings
from pytest_ortperf.latency.timing_lock import default_lock_path
from pytest_ortperf.store.hardware import Hardware
from pytest_ortperf.store.machine import detect_machine
from tests.models import mlp_model
from tests.plugin.conftest import (
    LATENCY_MODEL,
    LATENCY_TEST_FILE,
    commit_model,
    git,
    move_figures_to_other_hardware,
    reexport,
)

# A fast model whose cost quadruples with four times the layers: a real slowdown that stays
# unmistakable even when a busy shared machine swings timings by 2x between runs. The noise
# limit is lifted so that recording never depends on how quiet the machine is.
FAST = LATENCY_MODEL
SLOW = {"layers": 32, "width": 128}
QUICK = ("--ortperf-budget=0.2", "--ortperf-latency-threshold=50%", "--ortperf-max-cv=1000%")

HERE = detect_machine().hardware.slug  # a runner class keys its entries <class>@<this hardware>


def _slow_down(pytester: pytest.Pytester) -> None:
    onnx.save(mlp_model(**SLOW), pytester.path / "model.onnx")


@pytest.mark.slow
def test_record_compare_slowdown_update(pytester: pytest.Pytester, latency_suite: Path) -> None:
    recorded = pytester.runpytest("--ortperf-update", *QUICK)
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines(
        ["ortperf update: 0 updated, 1 new, 0 unchanged, 0 unused*", "wrote *test_gate.py.json"]
    )
    first = latency_suite.read_bytes()
    entry = json.loads(first)["entries"]["test_latency[cpu-all]"]
    assert entry["variant"] == "cpu-all"
    assert entry["recipe"]["model_sha256"]
    (machine,) = entry["figures"]
    assert entry["figures"][machine]["measured_on"]["measurement"]["budget_s"] == 0.2  # how it was measured

    same = pytester.runpytest(*QUICK)
    same.assert_outcomes(passed=1)
    # Nothing changed: a short look, the drift shown as information, no verdict to get wrong.
    same.stdout.fnmatch_lines(
        [
            "test_gate.py::test_latency  cpu-all  unchanged  * ms  * ms  *x * than at recording*; nothing changed  unchanged"
        ]
    )

    _slow_down(pytester)
    slower = pytester.runpytest(*QUICK)
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(
        [
            f"latency regression in test_latency[[]cpu-all[]] on machine '{machine}'",
            "  baseline: median * ms, p90 * ms (* rounds x * runs), recorded *",
            "  current:  median * ms, p90 * ms (* rounds x * runs)",
            "  change:   +*% (99% CI +*% .. +*%), threshold +/-50%",
            "  first measurement: +*(confirmed by a second)",
            "  changed since the baseline: model sha256 * -> *",
            "  to accept the new latency: ortperf update 'test_gate.py::test_latency[[]cpu-all[]]' --ortperf-budget=0.2 --ortperf-latency-threshold=50% --ortperf-max-cv=1000%",
        ]
    )
    assert latency_suite.read_bytes() == first, "a failing comparison must not touch the baseline"

    updated = pytester.runpytest("--ortperf-update", *QUICK)
    updated.assert_outcomes(passed=1)
    updated.stdout.fnmatch_lines(["ortperf update: 1 updated, 0 new, 0 unchanged, 0 unused*"])
    assert latency_suite.read_bytes() != first
    pytester.runpytest(*QUICK).assert_outcomes(passed=1)


def _move_figures_to_other_hardware(baseline_file: Path, key: str, *, faster: float = 1.0) -> str:
    """The figures recorded under machine key ``key`` moved to another CPU generation, ``faster`` times
    faster; that key."""

    def faster_there(figures: dict[str, Any]) -> None:
        latency = figures["latency"]
        latency["round_medians_ms"] = [m / faster for m in latency["round_medians_ms"]]

    return move_figures_to_other_hardware(baseline_file, "test_latency[cpu-all]", key, edit=faster_there)


@pytest.mark.slow
def test_a_runner_class_holds_an_entry_per_hardware_and_compares_only_its_own(
    pytester: pytest.Pytester, latency_suite: Path, isolated_git: None
) -> None:
    """The same runner class on another CPU generation: the unchanged recipe is unchanged there (no
    missing, no regression against the other generation's figures); a slower model fails side by side
    with the recorded one rebuilt from git; an update there adds this hardware's figures and keeps the
    other generation's."""
    blob = commit_model(pytester, **LATENCY_MODEL)  # the recorded model can be rebuilt from git
    pytester.runpytest("--ortperf-update", "--ortperf-machine=ci-class", *QUICK).assert_outcomes(passed=1)
    (key,) = json.loads(latency_suite.read_text())["entries"]["test_latency[cpu-all]"]["figures"]
    assert key == f"ci-class@{HERE}"
    other_key = _move_figures_to_other_hardware(latency_suite, key, faster=3)  # 3x faster there
    recorded = latency_suite.read_bytes()

    # Nothing in the recipe changed: unchanged on this generation too, without figures of its own to
    # show drift against, and never judged against the other generation's (3x faster) figures.
    result = pytester.runpytest("--ortperf-machine=ci-class", "--ortperf-report=report.json", *QUICK)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "test_gate.py::test_latency  cpu-all  unchanged  -  * ms  nothing changed; no figures for this hardware yet  unchanged"
        ]
    )
    (check,) = json.loads((pytester.path / "report.json").read_text())["checks"]
    assert check["verdict"] == "unchanged"
    for line in (
        "*no latency baseline*",
        "*have no baseline*",
        "*latency regression*",
        "*latency improvement*",
    ):
        result.stdout.no_fnmatch_line(line)
    assert latency_suite.read_bytes() == recorded, "a plain run never writes"

    # A slower model in the work tree: measured side by side with the recorded one, rebuilt from git,
    # whichever hardware recorded the entry.
    _slow_down(pytester)
    slower = pytester.runpytest("--ortperf-machine=ci-class", "--ortperf-report=report.json", *QUICK)
    slower.assert_outcomes(failed=1)
    slower.stdout.fnmatch_lines(
        [
            f"latency regression in test_latency[[]cpu-all[]] against the recorded model (git {blob[:12]}) (same-job A/B)",
            "  change:    +*% (* CI +*% .. +*%), threshold +/-50%",  # QUICK: the one threshold
            "  to accept the new latency: ortperf update 'test_gate.py::test_latency[[]cpu-all[]]' --ortperf-machine=ci-class *",
        ]
    )
    (check,) = json.loads((pytester.path / "report.json").read_text())["checks"]
    assert check["path"] == f"side by side vs the recorded model (git {blob[:12]})"
    assert latency_suite.read_bytes() == recorded, "a failing comparison must not touch the baseline"
    git(pytester, "checkout", "--", "model.onnx")

    # An update here adds this hardware's figures and keeps the other generation's.
    updated = pytester.runpytest(
        "--ortperf-update", "--ortperf-machine=ci-class", "--ortperf-report=report.json", *QUICK
    )
    updated.assert_outcomes(passed=1)
    updated.stdout.fnmatch_lines(
        ["ortperf update: 0 updated, 0 new, 1 added for this hardware, 0 unchanged, 0 unused*"]
    )
    (check,) = json.loads((pytester.path / "report.json").read_text())["checks"]
    assert check["changed_since_baseline"] == ["figures of this hardware added"]
    both = json.loads(latency_suite.read_text())["entries"]["test_latency[cpu-all]"]["figures"]
    assert sorted(both) == sorted([key, other_key])
    assert Hardware.from_dict(both[key]["measured_on"]["hardware"]).slug == HERE
    kept, before = (
        both[other_key],
        json.loads(recorded)["entries"]["test_latency[cpu-all]"]["figures"][other_key],
    )
    assert kept["measured_on"]["hardware"] == before["measured_on"]["hardware"], (
        "the other hardware's figures are kept"
    )
    assert kept["latency"]["round_medians_ms"] == pytest.approx(
        before["latency"]["round_medians_ms"], rel=1e-4
    )
    again = pytester.runpytest("--ortperf-machine=ci-class", *QUICK)
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(
        [
            "test_gate.py::test_latency  cpu-all  unchanged  * ms  * ms  *x * than at recording*; nothing changed  unchanged"
        ]
    )


def test_update_keeps_an_unchanged_baseline_byte_for_byte(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    first, stamp = latency_suite.read_bytes(), latency_suite.stat().st_mtime_ns
    again = pytester.runpytest("--ortperf-update", *QUICK)
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["ortperf update: 0 updated, 0 new, 1 unchanged, 0 unused*"])
    assert latency_suite.read_bytes() == first
    assert latency_suite.stat().st_mtime_ns == stamp


@pytest.mark.parametrize(("policy", "outcome"), [("fail", "failed"), ("skip", "skipped"), ("pass", "passed")])
def test_missing_baseline_policy(
    pytester: pytest.Pytester, latency_suite: Path, policy: str, outcome: str
) -> None:
    result = pytester.runpytest("-rs", f"--ortperf-missing={policy}", *QUICK)
    result.assert_outcomes(**{outcome: 1})
    if policy == "pass":  # measured and listed, with the hint to record
        result.stdout.fnmatch_lines(
            [
                "test_gate.py::test_latency  cpu-all  stored  -* ms  *-  *missing",
                "1 check(s) have no baseline for machine *",
            ]
        )
    else:
        result.stdout.fnmatch_lines(
            ["*no latency baseline for test_latency[[]cpu-all[]] on machine '*' (no machine has one yet)*"]
        )
    assert not latency_suite.parent.exists(), "nothing is written without --ortperf-update"


def test_missing_names_machines_that_have_baselines(pytester: pytest.Pytester, latency_suite: Path) -> None:
    pytester.runpytest("--ortperf-update", "--ortperf-machine=ci-large", *QUICK).assert_outcomes(passed=1)
    assert (
        f"ci-large@{HERE}"
        in json.loads(latency_suite.read_text())["entries"]["test_latency[cpu-all]"]["figures"]
    )
    # The model changed and nothing keeps the recorded one (no git, no model cache): only stored figures
    # could decide, and this machine key has none of its own.
    reexport(pytester)
    result = pytester.runpytest("--ortperf-machine=laptop", *QUICK)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"no latency baseline for test_latency[[]cpu-all[]] on machine 'laptop@{HERE}' (the model changed "
            "(sha256 * -> *) and the recorded one is neither in git here nor in the model cache "
            "(--ortperf-model-cache); this hardware has no figures of its own (figures exist for: "
            f"ci-large@{HERE}), and stored figures are only compared on the hardware that measured them); "
            "measured median *",
            "    ortperf update 'test_gate.py::test_latency[[]cpu-all[]]' --ortperf-machine=laptop --ortperf-budget=0.2 *",
        ]
    )


def test_machine_from_environment(
    pytester: pytest.Pytester, latency_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORTPERF_MACHINE", "runner-class-a")
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    figures = json.loads(latency_suite.read_text())["entries"]["test_latency[cpu-all]"]["figures"]
    assert list(figures) == [f"runner-class-a@{HERE}"]


def test_the_record_command_carries_a_runner_class_named_in_the_environment(
    pytester: pytest.Pytester, latency_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shell that copies the command may not have the variable: without it, it would record the entry
    # under the hardware's own name, and the runner class would stay without one.
    monkeypatch.setenv("ORTPERF_MACHINE", "runner-class-a")
    result = pytester.runpytest(*QUICK)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "    ORTPERF_MACHINE=runner-class-a ortperf update 'test_gate.py::test_latency[[]cpu-all[]]' --ortperf-budget=0.2 *"
        ]
    )
    # Named on the command line, the flag is carried instead, and the variable is not repeated.
    result = pytester.runpytest("--ortperf-machine=runner-class-b", *QUICK)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["    ortperf update 'test_gate.py::test_latency[[]cpu-all[]]' --ortperf-machine=runner-class-b *"]
    )


def test_the_record_command_leaves_out_the_options_that_write_reports(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    """Accepting a check's figures records a baseline; it need not rewrite the failed run's reports."""
    reports = ("--ortperf-report=r.json", "--ortperf-html", "r.html", "--ortperf-markdown=r.md")
    result = pytester.runpytest(*reports, "--ortperf-seed=3", *QUICK)
    result.assert_outcomes(failed=1)
    # A set: under CI=true pytest's short summary repeats the whole failure message, command included.
    lines = {line for line in result.stdout.lines if line.startswith("    ortperf update ")}
    assert lines == {
        "    ortperf update 'test_gate.py::test_latency[cpu-all]' --ortperf-seed=3 --ortperf-budget=0.2 "
        "--ortperf-latency-threshold=50% --ortperf-max-cv=1000%"
    }
    assert (pytester.path / "r.html").is_file()  # the separate value was taken as the option's, not a path


def test_thresholds_marker_beats_the_option(pytester: pytest.Pytester, latency_suite: Path) -> None:
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    _slow_down(pytester)
    pytester.makepyfile(
        test_gate=LATENCY_TEST_FILE.replace(
            "def test_latency", "@pytest.mark.ort_thresholds(latency='2000%')\ndef test_latency"
        )
    )
    result = pytester.runpytest(*QUICK)
    result.assert_outcomes(passed=1)


def test_bad_thresholds_marker(pytester: pytest.Pytester, latency_suite: Path) -> None:
    pytester.makepyfile(
        test_gate=LATENCY_TEST_FILE.replace(
            "def test_latency", "@pytest.mark.ort_thresholds(latency='fast', atoll=1)\ndef test_latency"
        )
    )
    result = pytester.runpytest(*QUICK)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ort_thresholds marker of *: ort_thresholds takes keyword arguments latency, ab, atol, rtol, cosine, mismatch, outputs, *, graph, memory, startup, throughput, generation; unknown: atoll*"
        ]
    )


def test_a_noisy_update_writes_the_entry_and_lists_it_as_noisy(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    result = pytester.runpytest(
        "--ortperf-update", "--ortperf-report=report.json", *QUICK, "--ortperf-max-cv=0.0001%"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "ortperf update: 0 updated, 1 new, 0 unchanged, 0 unused, 1 noisy*",  # "1 coarse" too on a loaded machine
            "noisy figures (written with their spread; *):",
            "  test_gate.py::test_latency[[]cpu-all[]] (spread *%)",
            "wrote *test_gate.py.json",
        ]
    )
    (figures,) = json.loads(latency_suite.read_text())["entries"]["test_latency[cpu-all]"]["figures"].values()
    assert figures["latency"]["median_ms"] > 0
    assert figures["spread"] > 0.0001 / 100  # written with its spread
    (check,) = json.loads((pytester.path / "report.json").read_text())["checks"]
    assert check["noisy"] is True
    assert check["recorded_spread"] == pytest.approx(figures["spread"], rel=1e-4)


@pytest.mark.parametrize(
    "damage",
    [
        b'{"schema": 1, "kind": "pytest-ortperf baselines", "entries": {',
        b'{"schema": 9, "kind": "pytest-ortperf baselines", "entries": {}}',
        b"[]",
    ],
)
def test_damaged_baseline_fails_its_tests_and_is_never_overwritten(
    pytester: pytest.Pytester, latency_suite: Path, damage: bytes
) -> None:
    latency_suite.parent.mkdir()
    latency_suite.write_bytes(damage)
    pytester.makepyfile(test_other="def test_unrelated():\n    pass\n")
    for args in ((), ("--ortperf-update",)):
        result = pytester.runpytest(*args, *QUICK)
        result.assert_outcomes(failed=1, passed=1)
        result.stdout.fnmatch_lines([f"*baseline file '{latency_suite}'*"])
        result.stdout.no_fnmatch_line("*Traceback*")
        assert latency_suite.read_bytes() == damage


@pytest.mark.slow
def test_unused_baselines_are_reported_and_pruned_on_request(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    pytester.makepyfile(
        test_gate=LATENCY_TEST_FILE + "\ndef test_latency_two(ort_perf):\n    ort_perf.check_latency()\n"
    )
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=2)
    pytester.makepyfile(test_gate=LATENCY_TEST_FILE)
    kept = pytester.runpytest("--ortperf-update", *QUICK)
    kept.stdout.fnmatch_lines(
        [
            "ortperf update: 0 updated, 0 new, 1 unchanged, 1 unused*",
            "unused baselines (kept; --ortperf-prune deletes them):",
            "  test_gate.py::test_latency_two[[]cpu-all[]]",
        ]
    )
    assert "test_latency_two[cpu-all]" in json.loads(latency_suite.read_text())["entries"]
    pytester.runpytest("--ortperf-update", "--ortperf-prune", *QUICK).stdout.fnmatch_lines(
        ["unused baselines (pruned):"]
    )
    assert list(json.loads(latency_suite.read_text())["entries"]) == ["test_latency[cpu-all]"]


def test_deselected_tests_are_not_unused(pytester: pytest.Pytester, latency_suite: Path) -> None:
    pytester.makepyfile(
        test_gate=LATENCY_TEST_FILE + "\ndef test_latency_two(ort_perf):\n    ort_perf.check_latency()\n"
    )
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=2)
    result = pytester.runpytest("--ortperf-update", "-k", "two", *QUICK)
    result.stdout.fnmatch_lines(["ortperf update: 0 updated, 0 new, 1 unchanged, 0 unused*"])


@pytest.mark.slow
def test_narrowed_selections_never_count_or_prune_entries_of_existing_tests(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    pytester.makepyfile(
        test_gate=LATENCY_TEST_FILE + "\ndef test_latency_two(ort_perf):\n    ort_perf.check_latency()\n"
    )
    pytester.makepyfile(test_more=LATENCY_TEST_FILE)
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=3)
    recorded = {path: path.read_bytes() for path in (pytester.path / "baselines").glob("*.json")}
    assert len(recorded) == 2
    pytester.makeini("[pytest]\nmarkers =\n    slow: a marker no test has\n")
    for selection in (
        ("-k", "two"),
        ("-m", "slow"),
        ("--deselect", "test_gate.py::test_latency[cpu-all]"),
        ("--ignore", "test_more.py"),
        ("test_more.py",),
    ):
        result = pytester.runpytest(
            "--ortperf-update", "--ortperf-prune", "--ortperf-strict", *selection, *QUICK
        )
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), selection
        result.stdout.no_fnmatch_line("*unused baselines*")
        assert {path: path.read_bytes() for path in recorded} == recorded, selection


# An update that fails one test of a file (here on purpose: updates never refuse figures) leaves only
# that test in pytest's last-failed cache: --lf then collects that file in part and skips the others whole.
FAILS_WHEN_ASKED = "    if os.environ.get('FAIL_OTHER'):\n        raise AssertionError('failed on purpose')\n"
FAILED = ("--ortperf-update", "test_gate.py::test_other", *QUICK)


def _fail_other(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patched:
        patched.setenv("FAIL_OTHER", "1")
        pytester.runpytest(*FAILED).assert_outcomes(failed=1)


@pytest.mark.slow
def test_last_failed_runs_judge_entries_against_whole_files(
    pytester: pytest.Pytester, latency_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def body(name: str) -> str:
        return f"\ndef {name}(ort_perf):\n{FAILS_WHEN_ASKED if name == 'test_other' else ''}    ort_perf.check_latency()\n"

    three = "\n".join(body(name) for name in ("test_other", "test_gone"))
    pytester.makepyfile(test_gate="import os\n" + LATENCY_TEST_FILE + three)
    pytester.makepyfile(test_more=LATENCY_TEST_FILE)
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=4)
    more = (pytester.path / "baselines" / "test_more.py.json").read_bytes()
    pytester.makepyfile(
        test_gate="import os\n" + LATENCY_TEST_FILE + three.partition("\ndef test_gone")[0]
    )  # a test really removed

    _fail_other(pytester, monkeypatch)
    strict = pytester.runpytest("--lf", "--ortperf-strict", *QUICK)
    strict.assert_outcomes(passed=1)
    strict.stdout.fnmatch_lines(
        [
            "run-last-failure: rerun previous 1 failure (skipped 1 file)",
            "ERROR: 1 unused baseline entries (--ortperf-strict):",
            "  test_gate.py::test_gone[[]cpu-all[]]",
        ]
    )

    _fail_other(pytester, monkeypatch)
    pruned = pytester.runpytest("--lf", "--ortperf-update", "--ortperf-prune", *QUICK)
    pruned.assert_outcomes(passed=1)
    pruned.stdout.fnmatch_lines(
        [
            "ortperf update: *, 1 unused*",
            "unused baselines (pruned):",
            "  test_gate.py::test_gone[[]cpu-all[]]",
            "wrote *",
        ]
    )
    assert sorted(json.loads(latency_suite.read_text())["entries"]) == [
        "test_latency[cpu-all]",
        "test_other[cpu-all]",
    ]
    assert (pytester.path / "baselines" / "test_more.py.json").read_bytes() == more


@pytest.mark.slow
def test_a_long_check_shows_its_progress_when_asked_and_the_summary_its_time(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    # No baseline: the check measures its whole budget, 2 s, well past the second after which it shows
    # (the rounds are planned from the warm-up's cost: a budget is met only roughly).
    long = (
        "--ortperf-budget=2",
        "--ortperf-missing=pass",
        "--ortperf-max-cv=1000%",
        "--ortperf-report=report.json",
    )
    asked = pytester.runpytest("--ortperf-progress=on", *long)
    asked.assert_outcomes(passed=1)
    asked.stdout.fnmatch_lines(["ortperf: test_latency[[]cpu-all[]]: measuring, round * of * (* s)"])
    asked.stdout.fnmatch_lines(["gate time: * s over 1 latency check (*warming * s, measuring * s*)"])
    (check,) = [
        c for c in json.loads((pytester.path / "report.json").read_text())["checks"] if c["kind"] == "latency"
    ]
    seconds = check["seconds"]
    assert set(seconds) == {"building", "warming", "measuring", "confirming", "waiting", "explaining"}
    assert 0.5 < seconds["measuring"] < 30
    assert seconds["warming"] >= 0.1
    assert seconds["confirming"] == 0
    assert seconds["explaining"] == 0  # a pass pays nothing for explanations

    # Not a terminal (pytester's output is captured): auto shows nothing, and neither does -q.
    for args in ((), ("-q",), ("--ortperf-progress=off",)):
        plain = pytester.runpytest(*args, *long)
        plain.assert_outcomes(passed=1)
        plain.stdout.no_fnmatch_line("ortperf: test_latency*")


# Another process of the same user that holds the timing lock from when the test starts until 2.5 s later.
HOLD_LOCK = """
import sys, time
from pathlib import Path
from pytest_ortperf.latency.timing_lock import TimingLock

lock_path, ready, started = sys.argv[1:]
with TimingLock(Path(lock_path)).held():
    Path(ready).write_text("held")
    deadline = time.monotonic() + 60
    while not Path(started).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(2.5)
"""


@pytest.mark.slow
def test_a_check_that_waits_for_the_timing_lock_says_who_held_it(
    pytester: pytest.Pytester, latency_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(pytester.path))  # this run's own per-user lock file
    lock = default_lock_path()
    assert lock.parent == pytester.path
    # Started once collected: the fixture that builds the session already waits for the lock.
    pytester.makepyfile(
        test_gate=LATENCY_TEST_FILE + "from pathlib import Path\nPath('started').write_text('')\n"
    )
    (pytester.path / "hold_lock.py").write_text(HOLD_LOCK)
    holder = subprocess.Popen(
        [sys.executable, "hold_lock.py", lock.name, "ready", "started"], cwd=pytester.path
    )
    try:
        deadline = time.monotonic() + 30
        while not (pytester.path / "ready").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        result = pytester.runpytest(
            "--ortperf-missing=pass", "--ortperf-progress=on", "--ortperf-report=report.json", *QUICK
        )
        holder.wait(timeout=60)
    finally:
        holder.kill()
    result.assert_outcomes(passed=1)
    named = f"held by pid {holder.pid} (hold_lock.py {lock.name} ready started) since ??:??:??"
    result.stdout.fnmatch_lines(
        [
            f"ortperf: test_latency[[]cpu-all[]]: waiting for the timing lock, {named} (* s)",
            "gate time: * (*waiting * s)",
            f"waiting * s for the timing lock, {named}",
        ]
    )
    (check,) = json.loads((pytester.path / "report.json").read_text())["checks"]
    (wait,) = check["timing_lock"]
    assert wait["holder"]["pid"] == holder.pid
    assert wait["holder"]["command"] == f"hold_lock.py {lock.name} ready started"
    assert 1 < wait["seconds"] <= check["seconds"]["waiting"]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--ortperf-progress=sometimes", "*--ortperf-progress: expected auto, on or off, got 'sometimes' (*"),
        ("--ortperf-missing=maybe", "*--ortperf-missing: expected fail, skip or pass, got 'maybe'.*"),
        (
            "--ortperf-latency-threshold=fast",
            "*--ortperf-latency-threshold: expected a threshold such as '10%' or 0.1, got 'fast'.*",
        ),
        (
            "--ortperf-latency-threshold=-5%",
            "*--ortperf-latency-threshold: a threshold must be a positive finite amount*",
        ),
        (
            "--ortperf-budget=0",
            "*--ortperf-budget: expected a number of seconds above 0 (at most a day), got '0'.*",
        ),
        ("--ortperf-machine=my machine", "*--ortperf-machine: machine name 'my machine' must be*"),
    ],
)
def test_bad_gate_options(pytester: pytest.Pytester, option: str, message: str) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


@pytest.mark.slow
def test_ortperf_update_and_show_commands(pytester: pytest.Pytester, latency_suite: Path) -> None:
    ortperf = Path(sys.executable).parent / "ortperf"
    result = pytester.run(ortperf, "update", "-q", *QUICK)
    assert result.ret == 0, result.stdout.str()
    assert latency_suite.exists()
    shown = pytester.run(ortperf, "show")
    assert shown.ret == 0
    # Each entry once with its recipe, and under it a line per machine key's figures.
    shown.stdout.fnmatch_lines(
        [
            "test_gate.py::test_latency[[]cpu-all[]]  cpu-all  model *  onnxruntime *  outputs -  recorded *",
            f"    *{HERE}  median * ms  p90 * ms  rounds * + canary  spread *%  recorded *",
        ]
    )


@pytest.mark.slow
def test_the_update_summary_and_ortperf_show_call_the_same_figures_noisy(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    """One rule (latency.recording.noise) for both: what an update lists as noisy is what `ortperf
    show`, reading the same ini, marks noisy, entry by entry and with the same reason. A max-cv
    far below any real spread makes every recording noisy, so the comparison is never empty."""
    pytester.makepyfile(
        test_gate=LATENCY_TEST_FILE + "\ndef test_other(ort_perf):\n    ort_perf.check_latency()\n"
    )
    pytester.makeini("[pytest]\nortperf_max_cv = 0.0001%\n")
    result = pytester.runpytest("--ortperf-update", *QUICK[:2])
    result.assert_outcomes(passed=2)
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith("noisy figures ("))
    listed = {}
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        test, _, why = line.strip().partition(" (")
        listed[test] = why.removesuffix(")")
    assert sorted(listed) == ["test_gate.py::test_latency[cpu-all]", "test_gate.py::test_other[cpu-all]"]
    shown = pytester.run(Path(sys.executable).parent / "ortperf", "show", "--json")
    assert shown.ret == 0, shown.stderr.str()
    marked = {
        row["test"]: figures["noise"] for row in json.loads(shown.stdout.str()) for figures in row["figures"]
    }
    assert marked == listed
    assert all(why.startswith("spread ") and "> max-cv 0.0001%" in why for why in marked.values())


def test_checks_appear_in_pytest_benchmark_json(pytester: pytest.Pytester, latency_suite: Path) -> None:
    pytest.importorskip("pytest_benchmark")
    result = pytester.runpytest(
        "--ortperf-missing=pass", "--ortperf-machine=ci-box", "--benchmark-json=bench.json", *QUICK
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*benchmark 'ortperf': 1 tests*", "test_gate.py::test_latency[[]cpu-all[]] *"]
    )
    (entry,) = json.loads((pytester.path / "bench.json").read_text())["benchmarks"]
    assert entry["fullname"] == "test_gate.py::test_latency[cpu-all]"
    extra_info = entry["extra_info"]
    assert extra_info["variant"] == "cpu-all"
    assert extra_info["machine"] == f"ci-box@{HERE}"
    assert extra_info["verdict"] == "missing"
    assert extra_info["mode"] == "stored"
    assert extra_info["decided_by"] == "stored"  # no baseline: no statistic decided
    assert extra_info["baseline_median_ms"] is None
    assert entry["stats"]["rounds"] == MeasureSettings().rounds


def test_node_id_selection_never_marks_siblings_unused(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    pytester.makepyfile(
        test_gate=LATENCY_TEST_FILE + "\ndef test_latency_two(ort_perf):\n    ort_perf.check_latency()\n"
    )
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=2)
    result = pytester.runpytest("--ortperf-update", "--ortperf-prune", "test_gate.py::test_latency", *QUICK)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["ortperf update: 0 updated, 0 new, 1 unchanged, 0 unused*"])
    assert sorted(json.loads(latency_suite.read_text())["entries"]) == [
        "test_latency[cpu-all]",
        "test_latency_two[cpu-all]",
    ]


def test_a_baseline_that_cannot_be_written_is_an_error_not_a_traceback(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    pytester.makepyfile(test_gate=LATENCY_TEST_FILE.replace("check_latency", "check"))
    latency_suite.parent.mkdir()
    (latency_suite.parent / "test_gate.py.outputs").write_text("a file where the outputs directory must go")
    result = pytester.runpytest("--ortperf-update", *QUICK)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["ERROR: cannot write baseline file '*test_gate.py.outputs*': *"])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_repair_sets_a_damaged_file_aside_and_records_afresh(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    latency_suite.parent.mkdir()
    damage = b'{"schema": 1, "kind": "pytest-ortperf baselines", "entries": {'
    latency_suite.write_bytes(damage)
    pytester.runpytest("--ortperf-repair", *QUICK).assert_outcomes(failed=1)  # no update: untouched
    assert latency_suite.read_bytes() == damage
    result = pytester.runpytest("--ortperf-update", "--ortperf-repair", *QUICK)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["repaired *test_gate.py.json: the damaged file was kept as test_gate.py.json.damaged-*"]
    )
    (backup,) = latency_suite.parent.glob("test_gate.py.json.damaged-*")
    assert backup.read_bytes() == damage
    assert "test_latency[cpu-all]" in json.loads(latency_suite.read_text())["entries"]


SEVERAL_TESTS = """
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 4})

def test_iris(ort_perf):
    ort_perf.check_accuracy()

def test_wine(ort_perf):
    ort_perf.check_accuracy()

def test_digits(ort_perf):
    ort_perf.check_accuracy()

def test_mnist(ort_perf):
    ort_perf.check_accuracy()
"""


def test_a_narrowed_repair_keeps_every_readable_entry_and_names_the_damaged_one(
    pytester: pytest.Pytester, write_model: Any
) -> None:
    """``ortperf update --ortperf-repair -k iris`` on a file damaged in one entry: the other tests'
    entries stay in the repaired file; the one that cannot be read is named, not dropped silently."""
    write_model()
    pytester.makepyfile(test_several=SEVERAL_TESTS)
    pytester.runpytest("--ortperf-update").assert_outcomes(passed=4)
    path = pytester.path / "baselines" / "test_several.py.json"
    text = path.read_text(encoding="utf-8")
    entries = json.loads(text)["entries"]
    assert sorted(entries) == [f"test_{name}[cpu-all]" for name in ("digits", "iris", "mnist", "wine")]
    start = text.index('  "test_wine[cpu-all]": {')
    at = text.index('"variant": ', start)
    damaged = text[:at] + '"variant" ' + text[at + len('"variant": ') :]  # one colon lost, in one entry
    path.write_text(damaged, encoding="utf-8")

    result = pytester.runpytest(
        "--ortperf-update", "--ortperf-repair", "-k", "iris", "--ortperf-report=r.json"
    )
    result.assert_outcomes(passed=1, deselected=3)
    (warning,) = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))["run_errors"]
    assert warning.startswith("WARNING: 1 damaged part of ")  # every report says what was left behind
    assert "entry 'test_wine[cpu-all]' (not JSON at line " in warning
    result.stdout.fnmatch_lines(
        [
            "repaired *test_several.py.json: the damaged file was kept as test_several.py.json.damaged-*; "
            "3 entries still readable in it kept",
            "WARNING: 1 damaged part of *test_several.py.json is only in test_several.py.json.damaged-*, "
            "not recorded afresh by this run *",
            "  entry 'test_wine[[]cpu-all]' (not JSON at line *: Expecting ':' delimiter)",
        ]
    )
    after = json.loads(path.read_text(encoding="utf-8"))["entries"]
    assert sorted(after) == ["test_digits[cpu-all]", "test_iris[cpu-all]", "test_mnist[cpu-all]"]
    assert all(after[name] == entries[name] for name in after)  # kept as they were, outputs included
    (backup,) = path.parent.glob("test_several.py.json.damaged-*")
    assert backup.read_text(encoding="utf-8") == damaged
    kept = pytester.runpytest("-k", "not wine")
    kept.assert_outcomes(passed=3, deselected=1)  # nothing "never recorded" among the kept entries


TWO_CHECKS = """
import numpy as np
import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 16})

def test_two(ort_perf, ort_inputs):
    ort_perf.check_latency(feeds={"x": np.repeat(ort_inputs["x"], 16, axis=0)})  # batch 256
    ort_perf.check_latency()  # batch 16: its own baseline, #2
    ort_perf.check_latency(feeds={"x": ort_inputs["x"][:1]}, name="single")  # batch 1
"""


@pytest.mark.slow
def test_each_check_in_a_test_has_its_own_baseline(pytester: pytest.Pytester, latency_suite: Path) -> None:
    pytester.makepyfile(test_gate=TWO_CHECKS)
    recorded = pytester.runpytest("--ortperf-update", *QUICK)
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines(["ortperf update: 0 updated, 3 new, 0 unchanged, 0 unused*"])
    entries = json.loads(latency_suite.read_text())["entries"]
    assert sorted(entries) == ["test_two[cpu-all]", "test_two[cpu-all]#2", "test_two[cpu-all]#single"]
    # Each check compares with its own measurement, and none of them is an unused entry.
    again = pytester.runpytest("--ortperf-strict", *QUICK)
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["test_gate.py::test_two#2 *", "test_gate.py::test_two#single *"])


def test_a_check_name_used_twice_or_malformed_fails_the_test(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    pytester.makepyfile(
        test_gate=LATENCY_TEST_FILE.replace(
            "ort_perf.check_latency()", "ort_perf.check_latency(name='a')\n    ort_perf.check(name='a')"
        )
        + "\ndef test_bad_name(ort_perf):\n    ort_perf.check_accuracy(name='a b')\n"
    )
    result = pytester.runpytest("--ortperf-missing=pass", *QUICK)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["*check name 'a' is used twice in this test*", "*check name 'a b': use 1 to 64 letters*"]
    )


@pytest.mark.slow
def test_a_worker_that_goes_down_during_an_update_is_reported(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(
        test_gate=LATENCY_TEST_FILE + "\ndef test_crash(ort_perf):\n    import os\n    os._exit(1)\n"
    )
    result = pytester.runpytest_subprocess("--ortperf-update", "-n", "1", *QUICK)
    result.stdout.fnmatch_lines(
        [
            "ERROR: worker gw0 went down: its staged baselines were not written; rerun the update for the tests it ran"
        ]
    )
    assert not latency_suite.exists()


@pytest.mark.slow
def test_update_missing_records_only_what_this_hardware_lacks(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    pytester.makepyfile(test_gate=LATENCY_TEST_FILE + "\ndef test_second(ort_perf):\n    ort_perf.check()\n")
    pytester.runpytest("--ortperf-update", "-k", "test_latency", *QUICK).assert_outcomes(
        passed=1, deselected=1
    )
    before = json.loads(latency_suite.read_text())["entries"]
    assert list(before) == ["test_latency[cpu-all]"]

    # The value only in '=' form: a plain --ortperf-update still leaves the next argument alone.
    result = pytester.runpytest("--ortperf-update=missing", "test_gate.py", *QUICK)
    result.assert_outcomes(passed=2)
    after = json.loads(latency_suite.read_text())["entries"]
    assert after["test_latency[cpu-all]"] == before["test_latency[cpu-all]"], "kept byte for byte"
    second = after["test_second[cpu-all]"]
    (figures,) = second["figures"].values()
    assert figures["latency"]["median_ms"] > 0
    assert second["accuracy"]["outputs"]
    # The kept entry was checked as in a plain run: nothing changed since it was recorded.
    result.stdout.re_match_lines([r"test_gate\.py::test_latency +cpu-all +unchanged .* unchanged"])

    again = latency_suite.read_bytes()
    pytester.runpytest("--ortperf-update=missing", *QUICK).assert_outcomes(passed=2)
    assert latency_suite.read_bytes() == again, "nothing missing: nothing written"


def test_update_takes_no_other_value(pytester: pytest.Pytester, latency_suite: Path) -> None:
    result = pytester.runpytest("--ortperf-update=all", *QUICK)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ortperf-update: ignored explicit argument 'all'*"])
    assert not latency_suite.exists()


def test_a_call_reads_its_baseline_entry_once_for_latency_and_accuracy(
    pytester: pytest.Pytester, latency_suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route is chosen from one read of the entry, handed to every check of the call."""
    pytester.makepyfile(test_gate=LATENCY_TEST_FILE.replace("ort_perf.check_latency()", "ort_perf.check()"))
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    from pytest_ortperf.store.baselines import BaselineStore

    reads: list[str] = []
    real = BaselineStore.lookup

    def counted(self: BaselineStore, test_file: str, test: str) -> object:
        reads.append(test)
        return real(self, test_file, test)

    monkeypatch.setattr(BaselineStore, "lookup", counted)
    pytester.runpytest(*QUICK).assert_outcomes(passed=1)
    assert reads == ["test_latency[cpu-all]"]


@pytest.mark.usefixtures("isolated_git")
def test_an_update_records_short_where_the_reference_is_rebuilt_and_in_full_where_figures_decide(
    pytester: pytest.Pytester, latency_suite: Path
) -> None:
    """A model git keeps is rebuilt as the reference when it changes: its figures only inform, and are
    recorded short (a quarter of the budget, one measurement). Gated on drift, the same figures decide,
    and the next update measures them until they settle, replacing the short ones."""
    recorded = pytester.runpytest("--ortperf-update", "--ortperf-report=loose.json", *QUICK)
    recorded.assert_outcomes(passed=1)
    (loose,) = json.loads(latency_suite.read_text())["entries"].values()
    assert "short" not in next(iter(loose["figures"].values())), (
        "a model nothing keeps: its stored figures will decide"
    )
    report = json.loads((pytester.path / "loose.json").read_text())
    assert [r["short_recording"] for r in report["checks"] if r["kind"] == "latency"] == [""]
    latency_suite.unlink()

    commit_model(pytester, **LATENCY_MODEL)
    recorded = pytester.runpytest("--ortperf-update", "--ortperf-report=kept.json", *QUICK)
    recorded.assert_outcomes(passed=1)
    (kept,) = json.loads(latency_suite.read_text())["entries"].values()
    why = "the reference is rebuilt from git; these figures only inform"
    assert next(iter(kept["figures"].values()))["short"] == why
    report = json.loads((pytester.path / "kept.json").read_text())
    assert [r["short_recording"] for r in report["checks"] if r["kind"] == "latency"] == [why]
    shown = pytester.run(Path(sys.executable).parent / "ortperf", "show")
    shown.stdout.fnmatch_lines([f"    *{HERE}  median * short recording ({why})"])
    # The unchanged check's look only informs: it shares the timing lock; gated on drift, it decides.
    for drift, lock in (("", "shared"), ("--ortperf-drift-threshold=900%", "exclusive")):
        gate = pytester.runpytest("--ortperf-report=gate.json", *QUICK, *([drift] if drift else []))
        gate.assert_outcomes(passed=1)
        (check,) = [
            c
            for c in json.loads((pytester.path / "gate.json").read_text())["checks"]
            if c["kind"] == "latency"
        ]
        assert (check["path"], check["lock"]) == ("unchanged", lock)

    gated = pytester.runpytest("--ortperf-update", "--ortperf-drift-threshold=50%", *QUICK)
    gated.assert_outcomes(passed=1)
    gated.stdout.fnmatch_lines(["ortperf update: 1 updated, 0 new, 0 unchanged, 0 unused*"])
    (settled,) = json.loads(latency_suite.read_text())["entries"].values()
    assert "short" not in next(iter(settled["figures"].values()))
