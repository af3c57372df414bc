"""Parametrization over providers x levels, and the options that choose them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_ortperf.store.machine import detect_machine

TEST_USING_SESSION = """
import json

import pytest
pytestmark = pytest.mark.ort_model("model.onnx")

def test_session(ort_session):
    assert ort_session.get_providers()[0] == "CPUExecutionProvider"

def test_plain():
    pass
"""

HERE = detect_machine().hardware.slug  # a runner class keys its entries <class>@<this hardware>


def test_default_matrix_is_cpu_at_all(pytester: pytest.Pytester, write_model) -> None:
    write_model()
    pytester.makepyfile(TEST_USING_SESSION)
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_session[[]cpu-all[]]", "*::test_plain"])
    result.stdout.no_fnmatch_line("*test_plain[[]*")


def test_every_level_is_one_test(pytester: pytest.Pytester, write_model) -> None:
    write_model()
    pytester.makepyfile(TEST_USING_SESSION)
    result = pytester.runpytest("-v", "--ort-opt-levels=disabled,basic,extended,all")
    result.assert_outcomes(passed=5)
    for level in ("disabled", "basic", "extended", "all"):
        result.stdout.fnmatch_lines([f"*test_session[[]cpu-{level}[]] PASSED*"])


def test_ini_keys_choose_the_matrix(pytester: pytest.Pytester, write_model) -> None:
    write_model()
    pytester.makeini("[pytest]\nortperf_providers = CPUExecutionProvider\nortperf_opt_levels = basic, all\n")
    pytester.makepyfile(TEST_USING_SESSION)
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_session[[]cpu-basic[]]", "*test_session[[]cpu-all[]]"])


def test_command_line_beats_ini(pytester: pytest.Pytester, write_model) -> None:
    write_model()
    pytester.makeini("[pytest]\nortperf_opt_levels = basic\n")
    pytester.makepyfile(TEST_USING_SESSION)
    result = pytester.runpytest("--collect-only", "-q", "--ort-opt-levels=extended")
    result.stdout.fnmatch_lines(["*test_session[[]cpu-extended[]]"])
    result.stdout.no_fnmatch_line("*cpu-basic*")


def test_variant_fixture_exposes_provider_and_level(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_variant(ort_variant):
            assert ort_variant.provider == "CPUExecutionProvider"
            assert ort_variant.opt_level.value == "disabled"
            assert ort_variant.id == "cpu-disabled"
        """
    )
    pytester.runpytest("--ort-opt-levels=disabled").assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (
            "--ort-providers=cpu,tpu",
            "*--ort-providers: unknown execution provider 'tpu'. Valid names: cpu, cuda, tensorrt/trt*",
        ),
        (
            "--ort-opt-levels=all,turbo",
            "*--ort-opt-levels: unknown graph optimization level 'turbo'. Valid levels: disabled, basic, extended, layout, all*",
        ),
        (
            "--ortperf-session-options=intra_op_threads=many",
            "*--ortperf-session-options: intra_op_threads='many' is not a whole number*",
        ),
        ("--ortperf-session-options=threads=2", "*unknown session setting 'threads'*"),
        ("--ortperf-int-range=10:1", "*--ortperf-int-range: integer range 10:1 is empty*"),
        ("--ortperf-dims=batch=zero", "*--ortperf-dims: expected NAME=N*"),
    ],
)
def test_bad_option_is_a_usage_error(pytester: pytest.Pytester, option: str, expected: str) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest(option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])


def test_bad_ini_value_names_the_ini_key(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nortperf_providers = cpu, quantum\n")
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini ortperf_providers: unknown execution provider 'quantum'*"])


def test_user_parametrization_of_the_variant_is_respected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from pytest_ortperf.ort.providers import resolve_provider
        from pytest_ortperf.ort.variants import OptLevel, Variant

        ONLY = Variant(resolve_provider("cpu", source="test"), OptLevel.BASIC)

        @pytest.mark.parametrize("ort_variant", [ONLY], ids=["mine"], indirect=True)
        def test_one(ort_variant):
            assert ort_variant == ONLY
        """
    )
    result = pytester.runpytest("-v", "--ort-opt-levels=disabled,all")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_one[[]mine[]] PASSED*"])


def test_header_shows_runtime_variants_and_settings(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--ort-opt-levels=basic,all", "--ortperf-session-options=mem_pattern=0")
    result.stdout.fnmatch_lines(
        [
            "ortperf: onnxruntime* 1.*; variants: cpu-basic, cpu-all",
            "ortperf settings: intra_op_threads=1, inter_op_threads=1, mem_pattern=False",
        ]
    )


# --- Where baselines go, and failing on improvements (real sessions) ---------------------------

LATENCY_TEST = """
import json

import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 16})

def test_latency(ort_perf):
    ort_perf.check_latency()
"""
QUICK = ("--ortperf-budget=0.2", "--ortperf-latency-threshold=50%", "--ortperf-max-cv=1000%")


def test_baseline_dir_option_chooses_where_baselines_land(pytester: pytest.Pytester, write_model) -> None:
    write_model()
    pytester.makepyfile(test_gate=LATENCY_TEST)
    result = pytester.runpytest("--ortperf-update", "--ortperf-baseline-dir=perf/base", *QUICK)
    result.assert_outcomes(passed=1)
    assert (pytester.path / "perf" / "base" / "test_gate.py.json").is_file()
    assert not (pytester.path / "baselines").exists()
    compared = pytester.runpytest("--ortperf-baseline-dir=perf/base", *QUICK)
    compared.assert_outcomes(passed=1)  # found where it was recorded; without the option: missing
    pytester.runpytest(*QUICK).assert_outcomes(failed=1)


def test_baseline_dir_ini_is_relative_to_the_ini_file(pytester: pytest.Pytester, write_model) -> None:
    write_model()
    pytester.makepyfile(test_gate=LATENCY_TEST)
    pytester.makeini("[pytest]\nortperf_baseline_dir = ci/baselines\n")
    result = pytester.runpytest("--ortperf-update", *QUICK)
    result.assert_outcomes(passed=1)
    assert (pytester.path / "ci" / "baselines" / "test_gate.py.json").is_file()
    assert not (pytester.path / "baselines").exists()
    pytester.runpytest(*QUICK).assert_outcomes(passed=1)


def test_fail_on_improvement_fails_a_check_that_got_much_faster(
    pytester: pytest.Pytester, write_model
) -> None:
    write_model(layers=32, width=128)
    pytester.makepyfile(test_gate=LATENCY_TEST)
    pytester.runpytest("--ortperf-update", *QUICK).assert_outcomes(passed=1)
    baseline = (pytester.path / "baselines" / "test_gate.py.json").read_bytes()
    write_model(layers=8, width=128)  # a quarter of the work

    passed = pytester.runpytest(*QUICK)
    passed.assert_outcomes(passed=1)
    passed.stdout.fnmatch_lines(["test_gate.py::test_latency * improved"])

    failed = pytester.runpytest("--ortperf-fail-on-improvement", *QUICK)
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(
        [
            "*latency improvement in *test_latency*",
            "*(faster beyond the threshold: check that the model still does all its work)",
        ]
    )
    assert (pytester.path / "baselines" / "test_gate.py.json").read_bytes() == baseline


TWO_TESTS = """
import json

import pytest
pytestmark = pytest.mark.ort_model("model.onnx", dims={"batch": 16})

def test_one(ort_perf):
    ort_perf.check_latency()

def test_two(ort_perf):
    ort_perf.check_latency()
"""


@pytest.mark.slow
def test_unused_entries_of_other_machines_are_reported_and_pruned_only_on_request(
    pytester: pytest.Pytester, write_model
) -> None:
    write_model()
    pytester.makepyfile(test_gate=TWO_TESTS)
    both_levels = "--ort-opt-levels=disabled,all"
    pytester.runpytest("--ortperf-update", "--ortperf-machine=ci-box", both_levels, *QUICK).assert_outcomes(
        passed=4
    )
    pytester.makepyfile(test_gate=TWO_TESTS.split("def test_two")[0])  # test_two deleted
    baseline = pytester.path / "baselines" / "test_gate.py.json"
    laptop = ("--ortperf-machine=laptop", "--ortperf-missing=pass", *QUICK)

    plain = pytester.runpytest(*laptop)
    plain.assert_outcomes(passed=1)
    # test_two at both levels; test_one[cpu-disabled] still exists, only not in this run's matrix
    plain.stdout.fnmatch_lines(["2 unused baseline entries (ortperf update --ortperf-prune removes them)"])

    kept = pytester.runpytest("--ortperf-update", *laptop)
    kept.stdout.fnmatch_lines(
        [
            "ortperf update: 0 updated, 0 new, 1 added for this hardware, 0 unchanged, 2 unused*",
            "unused baselines (kept; --ortperf-prune deletes them):",
            # one entry per test x variant, whichever machines measured it: no machine is named
            "  test_gate.py::test_two[[]cpu-all[]]",
            "  test_gate.py::test_two[[]cpu-disabled[]]",
        ]
    )
    assert {"test_two[cpu-all]", "test_two[cpu-disabled]"} <= set(json.loads(baseline.read_text())["entries"])

    pruned = pytester.runpytest("--ortperf-update", "--ortperf-prune", *laptop)
    pruned.stdout.fnmatch_lines(["unused baselines (pruned):"])
    entries = json.loads(baseline.read_text())["entries"]
    assert sorted(entries) == ["test_one[cpu-all]", "test_one[cpu-disabled]"]
    # the recipe did not change: the laptop's figures were added beside ci-box's
    assert sorted(entries["test_one[cpu-all]"]["figures"]) == [f"ci-box@{HERE}", f"laptop@{HERE}"]
    assert sorted(entries["test_one[cpu-disabled]"]["figures"]) == [f"ci-box@{HERE}"]
    pytester.runpytest(*laptop).stdout.no_fnmatch_line("*unused baseline entries*")


@pytest.mark.parametrize("policy", ["pass", "skip"])
def test_missing_pass_or_skip_names_the_machines_that_have_baselines(
    pytester: pytest.Pytester, write_model, policy: str
) -> None:
    write_model()
    data = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    np.savez(pytester.path / "model.npz", x=data)  # inputs read from a file: not kept by the recipe
    pytester.makepyfile(test_gate=LATENCY_TEST)
    pytester.runpytest("--ortperf-update", "--ortperf-machine=ci-box", *QUICK).assert_outcomes(passed=1)
    # Other input data: nothing can be rebuilt, so only this hardware's own figures could decide,
    # and the laptop has none: missing, and the hint names the machines that hold figures.
    np.savez(pytester.path / "model.npz", x=data * 2)
    result = pytester.runpytest("--ortperf-machine=laptop", f"--ortperf-missing={policy}", *QUICK)
    result.assert_outcomes(**{"passed" if policy == "pass" else "skipped": 1})
    result.stdout.fnmatch_lines(
        [
            f"1 check(s) have no baseline for machine 'laptop@{HERE}' (figures exist for: ci-box@{HERE}); record them with *"
        ]
    )


@pytest.mark.parametrize(
    ("old", "new", "value"),
    [
        ("--ortperf-session-option", "--ortperf-session-options", "intra_op_threads=2"),
        ("--ortperf-tolerance", "--ortperf-tolerances", "atol=0.5"),
    ],
)
def test_an_earlier_spelling_of_a_flag_works_with_a_warning_naming_the_new_one(
    pytester: pytest.Pytester, old: str, new: str, value: str
) -> None:
    """A flag and its ini key share one name; the spellings that did not still work, for a release."""
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest(f"{old}={value}")
    result.assert_outcomes(passed=1)
    ini = new.removeprefix("--").replace("-", "_")
    result.stdout.fnmatch_lines(
        [
            f"*PytestDeprecationWarning: {old} is deprecated and will be removed in a later release: use {new} (the flag and its ini key share one name, {ini}).*"
        ]
    )
    if old == "--ortperf-session-option":
        result.stdout.fnmatch_lines(["ortperf settings: intra_op_threads=2, *"])
    quiet = pytester.runpytest(f"{new}={value}")
    quiet.assert_outcomes(passed=1)
    assert "deprecated" not in quiet.stdout.str()
    strict = pytester.runpytest("-W", "error::pytest.PytestDeprecationWarning", f"{old}={value}")
    assert strict.ret != 0  # a suite that turns warnings into errors hears of it at once
