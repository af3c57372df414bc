"""``ortperf show``: baseline files as a table or JSON, with damaged files reported by name."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ortperf.checks.latency_figures import latency_figures
from pytest_ortperf.kinds import builtin_kinds
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.reports.ci_files import latency_record
from pytest_ortperf.reports.show import baseline_rows, show_baselines
from pytest_ortperf.store.baselines import BaselineEntry, BaselineStore, Figures
from pytest_ortperf.store.outputs import AccuracyRecord, StoredOutput


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


def figures(median: float, p90: float, canary: tuple[float, ...] = (), **changes: Any) -> Figures:
    """Latency figures; ``memory=`` and ``startup=``: those kinds' parts beside them."""
    parts = {name: changes.pop(name) for name in ("memory", "startup") if name in changes}
    made = latency_figures(changes.pop("recorded", "2025-01-02"), latency(median, p90, canary), **changes)
    for name, part in parts.items():
        made = made.with_part(name, part)
    return made


# What `ortperf show` is handed: the built-in kinds' part decoders.
DECODERS = builtin_kinds().part_decoders()


SHA = "0123456789abcdef" * 4


@pytest.fixture
def baseline_dir(tmp_path: Path) -> Path:
    root = tmp_path / ".ortperf"
    store = BaselineStore(root)
    recipe = {"ort_version": "1.31.1", "model_sha256": SHA, "variant": "cpu-all"}
    store.stage(
        "tests/test_vision.py",
        "test_squeezenet[cpu-all]",
        BaselineEntry(
            "cpu-all",
            "2025-01-03",
            recipe,
            figures={
                "laptop": figures(
                    3.25, 3.5, (0.1, 0.1, 0.1), recorded="2025-01-03", spread=0.2, settled=False
                ),
                "ci": figures(12.3456, 13.5, spread=0.031),
            },
        ),
    )
    store.stage(
        "tests/nlp/test_bert.py",
        "test_bert[cuda-extended]",
        BaselineEntry(
            "cuda-extended", "2025-02-01", {}, figures={"gpu-box": figures(1.5, 1.75, recorded="2025-02-01")}
        ),
    )
    store.write()
    return root


NO_FOOTPRINT = {
    "memory": None,
    "memory_text": None,
    "startup": None,
    "startup_text": None,
    "graph": None,
    "graph_text": None,
}


def test_rows_cover_every_entry_of_every_file_in_order(baseline_dir: Path) -> None:
    rows, problems = baseline_rows(baseline_dir, decoders=DECODERS)
    assert problems == []
    assert rows == [
        {
            "test": "tests/nlp/test_bert.py::test_bert[cuda-extended]",
            "variant": "cuda-extended",
            "model_sha256": None,
            "ort_version": "?",
            "outputs": 0,
            "recorded": "2025-02-01",
            "figures": [
                {
                    "machine": "gpu-box",
                    "median_ms": 1.5,
                    "p90_ms": 1.75,
                    "rounds": "3",
                    "spread": None,
                    "settled": True,
                    "short": "",
                    "noise": "",
                    "coarse": "",
                    "recorded": "2025-02-01",
                    **NO_FOOTPRINT,
                }
            ],
        },
        {
            "test": "tests/test_vision.py::test_squeezenet[cpu-all]",
            "variant": "cpu-all",
            "model_sha256": SHA,
            "ort_version": "1.31.1",
            "outputs": 0,
            "recorded": "2025-01-03",
            "figures": [
                {
                    "machine": "ci",
                    "median_ms": 12.3456,
                    "p90_ms": 13.5,
                    "rounds": "3",
                    "spread": 0.031,
                    "settled": True,
                    "short": "",
                    "noise": "",
                    "coarse": "",
                    "recorded": "2025-01-02",
                    **NO_FOOTPRINT,
                },
                {
                    "machine": "laptop",
                    "median_ms": 3.25,
                    "p90_ms": 3.5,
                    "rounds": "3 + canary",
                    "spread": 0.2,
                    "settled": False,
                    "short": "",
                    "noise": "spread 20.0% > max-cv 10%",
                    "coarse": "detect >= 16%, threshold 10%",
                    "recorded": "2025-01-03",
                    **NO_FOOTPRINT,
                },
            ],
        },
    ]


def test_show_as_a_table_gives_each_entry_once_and_a_line_per_machine(baseline_dir: Path) -> None:
    lines, problems = show_baselines(baseline_dir, decoders=DECODERS, as_json=False)
    assert problems == []
    assert len(lines) == 5
    assert lines[0].split() == [
        "tests/nlp/test_bert.py::test_bert[cuda-extended]",
        "cuda-extended",
        "model",
        "?",
        "onnxruntime",
        "?",
        "outputs",
        "-",
        "recorded",
        "2025-02-01",
    ]
    assert lines[1].split() == [
        "gpu-box", "median", "1.5", "ms", "p90", "1.75", "ms", "rounds", "3", "spread", "-", "recorded", "2025-02-01"
    ]  # fmt: skip
    assert lines[2].split()[:4] == [
        "tests/test_vision.py::test_squeezenet[cpu-all]",
        "cpu-all",
        "model",
        SHA[:12],
    ]
    assert "onnxruntime 1.31.1" in lines[2]
    assert lines[3].split()[0] == "ci"
    assert "median 12.35 ms" in lines[3]
    assert "p90 13.5 ms" in lines[3]
    assert "spread 3.1%" in lines[3]
    assert not lines[3].endswith("noisy")
    assert lines[4].split()[0] == "laptop"
    assert "rounds 3 + canary" in lines[4]
    assert lines[4].endswith(
        "noisy (spread 20.0% > max-cv 10%) coarse (detect >= 16%, threshold 10%) not settled"
    )
    # machines are indented under their entry, and their columns aligned
    assert all(line.startswith("    ") for line in (lines[1], lines[3], lines[4]))
    offset = lines[1].index("median")
    assert [line[offset:].split()[0] for line in (lines[1], lines[3], lines[4])] == ["median"] * 3
    assert lines[0].index("model") == lines[2].index("model")


def test_show_as_json(baseline_dir: Path) -> None:
    lines, problems = show_baselines(baseline_dir, decoders=DECODERS, as_json=True)
    assert problems == []
    assert len(lines) == 1
    assert json.loads(lines[0]) == baseline_rows(baseline_dir, decoders=DECODERS)[0]


def test_an_entry_with_outputs_only_shows_no_machine(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    output = StoredOutput("y", "float32", (2,), "full", "ab" * 32, 0.0, 0.0, 0.0, 0.0)
    accuracy = AccuracyRecord("cd" * 32, (output,), "t.py.outputs/a.npz")
    store.stage("t.py", "test_a[cpu-all]", BaselineEntry("cpu-all", "2025-01-02", {}, accuracy=accuracy))
    store.write()
    lines, problems = show_baselines(tmp_path, decoders=DECODERS, as_json=False)
    assert problems == []
    assert len(lines) == 1
    assert "outputs 1" in lines[0]


def test_a_damaged_file_is_a_problem_naming_it_while_others_still_show(baseline_dir: Path) -> None:
    bad = baseline_dir / "tests" / "test_broken.py.json"
    bad.write_text('{"schema": 2, "kind": "pytest-ortperf baselines", "entries": ', encoding="utf-8")
    newer = baseline_dir / "tests" / "test_future.py.json"
    newer.write_text('{"schema": 7, "kind": "pytest-ortperf baselines", "entries": {}}', encoding="utf-8")

    lines, problems = show_baselines(baseline_dir, decoders=DECODERS, as_json=False)
    assert len(problems) == 2
    assert f"baseline file '{bad}' is not valid JSON" in problems[0]
    assert f"baseline file '{newer}' has schema 7" in problems[1]
    assert "newer pytest-ortperf" in problems[1]
    assert len(lines) == 5
    assert any("test_squeezenet" in line for line in lines)

    rows, json_problems = show_baselines(baseline_dir, decoders=DECODERS, as_json=True)
    assert json_problems == problems
    assert len(json.loads(rows[0])) == 2


def test_an_undecodable_file_is_a_problem_too(baseline_dir: Path) -> None:
    bad = baseline_dir / "test_binary.py.json"
    bad.write_bytes(b"\xff\xfe\x00\x01")
    rows, problems = baseline_rows(baseline_dir, decoders=DECODERS)
    assert len(rows) == 2
    assert len(problems) == 1
    assert "utf-8" in problems[0].lower()


def test_an_undecodable_file_is_reported_by_its_path(baseline_dir: Path) -> None:
    bad = baseline_dir / "test_binary.py.json"
    bad.write_bytes(b"\xff\xfe\x00\x01")
    _, problems = baseline_rows(baseline_dir, decoders=DECODERS)
    assert len(problems) == 1
    assert str(bad) in problems[0]


def test_rows_are_sorted_even_when_a_file_was_edited_by_hand(tmp_path: Path) -> None:
    entry = BaselineEntry("cpu-all", "2025-01-02", {}, figures={"m": figures(1.0, 1.0)}).as_dict()
    entry["figures"] = {"zeta": entry["figures"]["m"], "alpha": entry["figures"]["m"]}
    document = {
        "schema": 2,
        "kind": "pytest-ortperf baselines",
        "entries": {"test_b": entry, "test_a": entry},
    }
    (tmp_path / "test_x.py.json").write_text(json.dumps(document), encoding="utf-8")
    rows, problems = baseline_rows(tmp_path, decoders=DECODERS)
    assert problems == []
    assert [(row["test"], [f["machine"] for f in row["figures"]]) for row in rows] == [
        ("test_x.py::test_a", ["alpha", "zeta"]),
        ("test_x.py::test_b", ["alpha", "zeta"]),
    ]


def test_a_schema_1_file_shows_migrated(tmp_path: Path) -> None:
    old = {"variant": "cpu-all", "recorded": "2025-01-02", "environment": {"ort_version": "1.30.0"}}
    old["latency"] = latency(2.0, 2.5).as_dict()
    document = {"schema": 1, "kind": "pytest-ortperf baselines", "entries": {"test_a": {"ci": old}}}
    (tmp_path / "test_x.py.json").write_text(json.dumps(document), encoding="utf-8")
    rows, problems = baseline_rows(tmp_path, decoders=DECODERS)
    assert problems == []
    assert [(row["ort_version"], [f["machine"] for f in row["figures"]]) for row in rows] == [
        ("1.30.0", ["ci"])
    ]


def test_an_empty_directory_says_so(tmp_path: Path) -> None:
    lines, problems = show_baselines(tmp_path, decoders=DECODERS, as_json=False)
    assert lines == [f"no baselines in '{tmp_path}'"]
    assert problems == []
    assert show_baselines(tmp_path, decoders=DECODERS, as_json=True) == (["[]"], [])


def test_a_missing_directory_is_a_problem(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    lines, problems = show_baselines(missing, decoders=DECODERS, as_json=False)
    assert lines == [f"no baselines in '{missing}'"]
    assert problems == [f"baseline directory '{missing}' does not exist"]


# Which directory `ortperf show` reads without --baseline-dir ----------------------------------

CONFIG_FILES = [
    pytest.param("pytest.ini", "[pytest]\nortperf_baseline_dir = perf/base\n", id="pytest.ini"),
    pytest.param(
        "pyproject.toml", '[tool.pytest.ini_options]\nortperf_baseline_dir = "perf/base"\n', id="pyproject"
    ),
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
    (tmp_path / "project" / "setup.cfg").write_text(
        "[metadata]\nname = x\n", encoding="utf-8"
    )  # not pytest's
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
    entry = BaselineEntry("cpu-all", "2025-01-02", {}, figures={"ci-box": figures(1.5, 1.75)})
    store.stage("tests/test_m.py", "test_m[cpu-all]", entry)
    store.write()
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path / "tests")
    assert cli.main(["show"]) == 0
    assert "test_m[cpu-all]" in capsys.readouterr().out


def test_memory_and_start_up_figures_get_columns_only_where_an_entry_holds_them(tmp_path: Path) -> None:
    from pytest_ortperf.footprint.memory_figures import MemoryFigures
    from pytest_ortperf.footprint.startup_figures import StartupFigures

    store = BaselineStore(tmp_path)
    memory = MemoryFigures(processes=2, arena_peak=2 << 20, peak_rss=12 << 20)
    startup = StartupFigures((8.0, 9.0), (0.3, 0.3), (0.05, 0.05))
    entry = BaselineEntry(
        "cpu-all",
        "2025-01-02",
        {},
        figures={"box": figures(1.5, 1.75, memory=memory, startup=startup), "other": figures(2.0, 2.5)},
    )
    store.stage("t.py", "test_a[cpu-all]", entry)
    store.write()
    lines, _ = show_baselines(tmp_path, decoders=DECODERS, as_json=False)
    assert "memory arena peak 2 MiB" in lines[1]
    assert "startup create 8.5 ms, first run 0.3 ms (6.0x steady)" in lines[1]
    assert "memory -" in lines[2]
    assert "startup -" in lines[2]
    (row,) = baseline_rows(tmp_path, decoders=DECODERS)[0]
    assert row["figures"][0]["memory"] == memory.as_dict()
    assert row["figures"][1]["startup"] is None


def test_a_part_without_its_decoder_is_shown_as_stored_and_one_with_it_in_its_kinds_words(
    tmp_path: Path,
) -> None:
    """The store interprets no part: `ortperf show` shows a part in its kind's words where it is handed
    that kind's decoder, and as the JSON it holds otherwise (a kind of a plugin the command does not load)."""
    from pytest_ortperf.footprint.memory_figures import MemoryFigures

    store = BaselineStore(tmp_path)
    memory = MemoryFigures(processes=2, arena_peak=2 << 20, peak_rss=12 << 20)
    entry = BaselineEntry("cpu-all", "2025-01-02", {}, figures={"box": figures(1.5, 1.75, memory=memory)})
    store.stage("t.py", "test_a[cpu-all]", entry)
    store.write()
    (row,), _ = baseline_rows(tmp_path)
    assert row["figures"][0]["parts"] == {"memory": memory.as_dict()}
    assert "memory_text" not in row["figures"][0]
    (row,), _ = baseline_rows(tmp_path, decoders=DECODERS)
    assert row["figures"][0]["memory_text"] == memory.describe()
    assert "parts" not in row["figures"][0]


def test_show_says_why_a_short_recording_was_enough_and_never_calls_it_unsettled(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    short = figures(3.0, 3.5, spread=0.04, settled=False, short="the reference is rebuilt from git")
    store.stage("t.py", "test_a[cpu-all]", BaselineEntry("cpu-all", "2025-01-03", {}, figures={"ci": short}))
    store.write()
    (row,), _ = baseline_rows(tmp_path, decoders=DECODERS)
    assert row["figures"][0]["short"] == "the reference is rebuilt from git"
    table, _ = show_baselines(tmp_path, decoders=DECODERS, as_json=False)
    assert table[1].rstrip().endswith("short recording (the reference is rebuilt from git)")
    assert "not settled" not in table[1]


@pytest.mark.parametrize(
    ("spread", "settled", "noise", "end"),
    [
        # The two figures of the report: 17.5% (settled) was noisy in the update summary only, 8.3%
        # (not settled) in `ortperf show` only. Now one rule says noisy, and "not settled" is its own word.
        # Three rounds of a 17.5% spread also cannot detect the 10% threshold: coarse, their own word.
        (
            0.175,
            True,
            "spread 17.5% > max-cv 10%",
            "noisy (spread 17.5% > max-cv 10%) coarse (detect >= 11.8%, threshold 10%)",
        ),
        (0.083, False, "", "not settled"),
        (
            0.25,
            False,
            "spread 25.0% > max-cv 10%",
            "noisy (spread 25.0% > max-cv 10%) coarse (detect >= 25%, threshold 10%) not settled",
        ),
        (0.031, True, "", "recorded 2025-01-02"),
    ],
)
def test_show_and_the_update_summary_call_the_same_figures_noisy(
    tmp_path: Path, spread: float, settled: bool, noise: str, end: str
) -> None:
    from pytest_ortperf.latency.recording import noise as rule
    from pytest_ortperf.reports.results import RunResults
    from tests.unit.reports.test_terminal import result

    store = BaselineStore(tmp_path)
    entry = BaselineEntry(
        "cpu-all", "2025-01-03", {}, figures={"ci": figures(3.0, 3.5, spread=spread, settled=settled)}
    )
    store.stage("t.py", "test_a[cpu-all]", entry)
    store.write()
    (row,), _ = baseline_rows(tmp_path, decoders=DECODERS, max_cv=0.10)
    assert row["figures"][0]["noise"] == noise == rule(spread, max_cv=0.10)
    table, _ = show_baselines(tmp_path, decoders=DECODERS, as_json=False, max_cv=0.10)
    assert table[1].rstrip().endswith(end)
    assert ("noisy" in table[1]) == bool(noise)

    results = RunResults()  # what the update that recorded these figures lists
    recorded = result("test_a", "cpu-all", "new", 3.0)
    noted = dataclasses.replace(recorded, recorded_spread=spread, noise=rule(spread, max_cv=0.10))
    results.add(latency_record(noted, "t.py::test_a[cpu-all]"))
    assert results.noisy_recordings() == ([f"t.py::test_a[cpu-all] ({noise})"] if noise else [])


@pytest.mark.parametrize(("spread", "rounds"), [(0.175, 3), (0.175, 200), (0.41, 40), (0.41, 200), (0.05, 3)])
def test_show_the_update_summary_and_the_json_call_the_same_figures_coarse(
    tmp_path: Path, spread: float, rounds: int
) -> None:
    """Coarse: figures that will decide and cannot detect a change of the threshold. One rule
    (``latency.recording.coarse`` of ``detects``) for ``ortperf show``, the JSON record and the
    update summary; more rounds of the same spread detect more (a 41% spread over 40 rounds cannot
    detect 10%, over 200 it can)."""
    from pytest_ortperf.latency.recording import coarse, detects
    from pytest_ortperf.reports.results import RunResults
    from pytest_ortperf.reports.terminal import UpdateReport, update_lines

    medians = tuple(3.0 * (1 + 0.01 * (i % 5)) for i in range(rounds))
    stats = dataclasses.replace(latency(3.0, 3.5), rounds=rounds, count=rounds * 3, round_medians_ms=medians)
    store = BaselineStore(tmp_path)
    recorded = latency_figures("2025-01-02", stats, spread=spread, settled=True)
    store.stage(
        "t.py", "test_a[cpu-all]", BaselineEntry("cpu-all", "2025-01-03", {}, figures={"ci": recorded})
    )
    store.write()
    said = coarse(detects(stats, spread, threshold=0.10), 0.10)
    assert bool(said) == ((spread, rounds) in [(0.175, 3), (0.41, 40)])
    (row,), _ = baseline_rows(tmp_path, decoders=DECODERS, threshold=0.10)
    assert row["figures"][0]["coarse"] == said
    table, _ = show_baselines(tmp_path, decoders=DECODERS, as_json=False, threshold=0.10)
    assert (f"coarse ({said})" in table[1]) == bool(said)
    assert (" coarse" in table[1]) == bool(said)

    results = RunResults()  # what the update that recorded them lists
    from tests.unit.reports.test_terminal import result

    noted = dataclasses.replace(result("test_a", "cpu-all", "new", 3.0), recorded_spread=spread, coarse=said)
    results.add(latency_record(noted, "t.py::test_a[cpu-all]"))
    assert results.coarse_recordings() == ([f"t.py::test_a[cpu-all] ({said})"] if said else [])
    lines = update_lines(
        UpdateReport.tally(["new"], unused=[], written=[], coarse=results.coarse_recordings()), prune=False
    )
    assert lines[0].endswith(", 1 coarse") == bool(said)
    assert (f"  t.py::test_a[cpu-all] ({said})" in lines) == bool(said)
    # figures recorded short never decide: never coarse
    short = latency_figures(
        "2025-01-02",
        stats,
        spread=spread,
        settled=True,
        short="the reference is rebuilt from git; these figures only inform",
    )
    store.stage("t.py", "test_a[cpu-all]", BaselineEntry("cpu-all", "2025-01-03", {}, figures={"ci": short}))
    store.write()
    (row,), _ = baseline_rows(tmp_path, decoders=DECODERS, threshold=0.10)
    assert row["figures"][0]["coarse"] == ""


def test_show_reads_max_cv_where_an_update_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ortperf.cli import main
    from pytest_ortperf.reports.show import configured_max_cv

    assert configured_max_cv(tmp_path) == (0.10, "the default")
    (tmp_path / "pytest.ini").write_text("[pytest]\nortperf_max_cv = 25%\n", encoding="utf-8")
    assert configured_max_cv(tmp_path) == (0.25, f"ortperf_max_cv in {tmp_path / 'pytest.ini'}")
    store = BaselineStore(tmp_path / "baselines")
    entry = BaselineEntry("cpu-all", "2025-01-03", {}, figures={"ci": figures(3.0, 3.5, spread=0.175)})
    store.stage("t.py", "test_a[cpu-all]", entry)
    store.write()
    monkeypatch.chdir(tmp_path)

    def noise(*args: str) -> str:
        assert main(["show", "--json", *args]) == 0
        (row,) = json.loads(capsys.readouterr().out)
        return str(row["figures"][0]["noise"])

    assert noise() == ""  # 17.5% is within the configured 25%
    assert noise("--max-cv", "5%") == "spread 17.5% > max-cv 5%"
    (tmp_path / "pytest.ini").write_text("[pytest]\nortperf_max_cv = lots\n", encoding="utf-8")
    assert main(["show"]) == 2
    assert f"ortperf_max_cv in {tmp_path / 'pytest.ini'}: expected a threshold" in capsys.readouterr().err
