"""``ortperf show``: baseline files as a table or JSON, with damaged files reported by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.reports.show import baseline_rows, show_baselines
from pytest_ortperf.store.baselines import BaselineEntry, BaselineStore


def latency(median: float, p90: float, canary: tuple[float, ...] = ()) -> LatencyStats:
    return LatencyStats(
        count=30,
        rounds=3,
        min_ms=median,
        median_ms=median,
        mean_ms=median,
        stdev_ms=0.0,
        iqr_ms=0.0,
        p90_ms=p90,
        p95_ms=p90,
        p99_ms=p90,
        cv=0.0,
        round_cv=0.0,
        throughput_per_s=1000 / median,
        round_medians_ms=(median, median, median),
        canary_round_medians_ms=canary,
    )


@pytest.fixture
def baseline_dir(tmp_path: Path) -> Path:
    root = tmp_path / ".ortperf"
    store = BaselineStore(root)
    env = {"ort_version": "1.31.1"}
    store.stage(
        "tests/test_vision.py",
        "test_squeezenet[cpu-all]",
        "laptop",
        BaselineEntry("cpu-all", "2025-01-03", latency(3.25, 3.5, (0.1, 0.1, 0.1)), env),
    )
    store.stage(
        "tests/test_vision.py",
        "test_squeezenet[cpu-all]",
        "ci",
        BaselineEntry("cpu-all", "2025-01-02", latency(12.3456, 13.5), env),
    )
    store.stage(
        "tests/nlp/test_bert.py",
        "test_bert[cuda-extended]",
        "gpu-box",
        BaselineEntry("cuda-extended", "2025-02-01", latency(1.5, 1.75), {}),
    )
    store.write()
    return root


def test_rows_cover_every_entry_of_every_file_in_order(baseline_dir: Path) -> None:
    rows, problems = baseline_rows(baseline_dir)
    assert problems == []
    assert rows == [
        {
            "test": "tests/nlp/test_bert.py::test_bert[cuda-extended]",
            "variant": "cuda-extended",
            "machine": "gpu-box",
            "median_ms": 1.5,
            "p90_ms": 1.75,
            "rounds": "3",
            "outputs": 0,
            "recorded": "2025-02-01",
            "ort_version": "?",
        },
        {
            "test": "tests/test_vision.py::test_squeezenet[cpu-all]",
            "variant": "cpu-all",
            "machine": "ci",
            "median_ms": 12.3456,
            "p90_ms": 13.5,
            "rounds": "3",
            "outputs": 0,
            "recorded": "2025-01-02",
            "ort_version": "1.31.1",
        },
        {
            "test": "tests/test_vision.py::test_squeezenet[cpu-all]",
            "variant": "cpu-all",
            "machine": "laptop",
            "median_ms": 3.25,
            "p90_ms": 3.5,
            "rounds": "3 + canary",
            "outputs": 0,
            "recorded": "2025-01-03",
            "ort_version": "1.31.1",
        },
    ]


def test_show_as_a_table(baseline_dir: Path) -> None:
    lines, problems = show_baselines(baseline_dir, as_json=False)
    assert problems == []
    assert len(lines) == 4
    assert lines[0].split() == [
        "test",
        "variant",
        "machine",
        "median",
        "p90",
        "rounds",
        "outputs",
        "recorded",
        "onnxruntime",
    ]
    assert lines[1].split() == [
        "tests/nlp/test_bert.py::test_bert[cuda-extended]",
        "cuda-extended",
        "gpu-box",
        "1.5",
        "ms",
        "1.75",
        "ms",
        "3",
        "-",
        "2025-02-01",
        "?",
    ]
    assert "12.35 ms" in lines[2]
    assert "13.5 ms" in lines[2]
    assert lines[3].split()[2] == "laptop"
    assert "3 + canary" in lines[3]
    # aligned columns: "machine" starts at the same offset on every line
    offset = lines[0].index("machine")
    assert [line[offset:].split()[0] for line in lines[1:]] == ["gpu-box", "ci", "laptop"]


def test_show_as_json(baseline_dir: Path) -> None:
    lines, problems = show_baselines(baseline_dir, as_json=True)
    assert problems == []
    assert len(lines) == 1
    assert json.loads(lines[0]) == baseline_rows(baseline_dir)[0]


def test_a_damaged_file_is_a_problem_naming_it_while_others_still_show(baseline_dir: Path) -> None:
    bad = baseline_dir / "tests" / "test_broken.py.json"
    bad.write_text('{"schema": 1, "kind": "pytest-ortperf baselines", "entries": ', encoding="utf-8")
    newer = baseline_dir / "tests" / "test_future.py.json"
    newer.write_text('{"schema": 7, "kind": "pytest-ortperf baselines", "entries": {}}', encoding="utf-8")

    lines, problems = show_baselines(baseline_dir, as_json=False)
    assert len(problems) == 2
    assert f"baseline file '{bad}' is not valid JSON" in problems[0]
    assert f"baseline file '{newer}' has schema 7" in problems[1]
    assert "newer pytest-ortperf" in problems[1]
    assert len(lines) == 4
    assert any("test_squeezenet" in line for line in lines)

    rows, json_problems = show_baselines(baseline_dir, as_json=True)
    assert json_problems == problems
    assert len(json.loads(rows[0])) == 3


def test_an_undecodable_file_is_a_problem_too(baseline_dir: Path) -> None:
    bad = baseline_dir / "test_binary.py.json"
    bad.write_bytes(b"\xff\xfe\x00\x01")
    rows, problems = baseline_rows(baseline_dir)
    assert len(rows) == 3
    assert len(problems) == 1
    assert "utf-8" in problems[0].lower()


def test_an_undecodable_file_is_reported_by_its_path(baseline_dir: Path) -> None:
    bad = baseline_dir / "test_binary.py.json"
    bad.write_bytes(b"\xff\xfe\x00\x01")
    _, problems = baseline_rows(baseline_dir)
    assert len(problems) == 1
    assert str(bad) in problems[0]


def test_rows_are_sorted_even_when_a_file_was_edited_by_hand(tmp_path: Path) -> None:
    entry = BaselineEntry("cpu-all", "2025-01-02", latency(1.0, 1.0)).as_dict()
    document = {
        "schema": 1,
        "kind": "pytest-ortperf baselines",
        "entries": {"test_b": {"zeta": entry, "alpha": entry}, "test_a": {"mid": entry}},
    }
    (tmp_path / "test_x.py.json").write_text(json.dumps(document), encoding="utf-8")
    rows, problems = baseline_rows(tmp_path)
    assert problems == []
    assert [(row["test"], row["machine"]) for row in rows] == [
        ("test_x.py::test_a", "mid"),
        ("test_x.py::test_b", "alpha"),
        ("test_x.py::test_b", "zeta"),
    ]


def test_an_empty_directory_says_so(tmp_path: Path) -> None:
    lines, problems = show_baselines(tmp_path, as_json=False)
    assert lines == [f"no baselines in '{tmp_path}'"]
    assert problems == []
    assert show_baselines(tmp_path, as_json=True) == (["[]"], [])


def test_a_missing_directory_is_a_problem(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    lines, problems = show_baselines(missing, as_json=False)
    assert lines == [f"no baselines in '{missing}'"]
    assert problems == [f"baseline directory '{missing}' does not exist"]


# Which directory `ortperf show` reads without --baseline-dir ----------------------------------

CONFIG_FILES = [
    pytest.param("pytest.ini", "[pytest]\nortperf_baseline_dir = perf/base\n", id="pytest.ini"),
    pytest.param("pyproject.toml", '[tool.pytest.ini_options]\nortperf_baseline_dir = "perf/base"\n', id="pyproject"),
    pytest.param("tox.ini", "[pytest]\nortperf_baseline_dir = perf/base\n", id="tox.ini"),
    pytest.param("setup.cfg", "[tool:pytest]\nortperf_baseline_dir = perf/base\n", id="setup.cfg"),
]


@pytest.mark.parametrize(("name", "text"), CONFIG_FILES)
def test_the_configured_baseline_dir_is_found_upward_and_relative_to_its_file(
    tmp_path: Path, name: str, text: str
) -> None:
    from pytest_ortperf.reports.show import configured_baseline_dir

    (tmp_path / name).write_text(text, encoding="utf-8")
    start = tmp_path / "tests" / "deep"
    start.mkdir(parents=True)
    assert configured_baseline_dir(start) == (tmp_path / "perf" / "base").resolve()


def test_without_the_key_baselines_sit_beside_the_config_file_and_without_one_in_the_start(
    tmp_path: Path,
) -> None:
    from pytest_ortperf.reports.show import configured_baseline_dir

    start = tmp_path / "project" / "tests"
    start.mkdir(parents=True)
    (tmp_path / "project" / "setup.cfg").write_text("[metadata]\nname = x\n", encoding="utf-8")  # not pytest's
    (tmp_path / "project" / "pyproject.toml").write_text("[tool.black]\n", encoding="utf-8")  # not pytest's
    outer = tmp_path / "pytest.ini"
    outer.write_text("[pytest]\n", encoding="utf-8")
    assert configured_baseline_dir(start) == tmp_path / "baselines"
    outer.unlink()
    if not any((parent / "pytest.ini").is_file() for parent in tmp_path.parents):
        assert configured_baseline_dir(start) == start / "baselines"


def test_ortperf_show_reads_the_configured_dir_from_a_subdirectory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ortperf import cli

    (tmp_path / "pytest.ini").write_text("[pytest]\nortperf_baseline_dir = perf/base\n", encoding="utf-8")
    store = BaselineStore(tmp_path / "perf" / "base")
    store.stage(
        "tests/test_m.py", "test_m[cpu-all]", "ci-box", BaselineEntry("cpu-all", "2025-01-02", latency(1.5, 1.75))
    )
    store.write()
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path / "tests")
    assert cli.main(["show"]) == 0
    assert "test_m[cpu-all]" in capsys.readouterr().out
