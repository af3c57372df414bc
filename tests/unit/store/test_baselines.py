"""Baseline files: deterministic rendering, strict parsing that names the file, schema-1 migration, the store."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from pytest_ortperf.checks.latency_figures import latency_figures, latency_part
from pytest_ortperf.footprint.memory_figures import MemoryFigures
from pytest_ortperf.footprint.startup_figures import StartupFigures
from pytest_ortperf.kinds import builtin_kinds
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.profiling.operators import OpProfile
from pytest_ortperf.store.baselines import (
    KIND,
    SCHEMA,
    BaselineEntry,
    BaselineError,
    BaselineStore,
    Entries,
    Figures,
    parse,
    parse_with_outputs,
    render,
    write_atomically,
)
from pytest_ortperf.store.outputs import AccuracyRecord

DECODERS = builtin_kinds().part_decoders()  # the built-in kinds' part decoders, as a run hands them

TEST_FILE = "tests/perf/test_models.py"
TEST = "test_squeezenet[cpu-all]"

RECIPE: dict[str, Any] = {
    "model": "models/squeezenet.onnx",
    "model_sha256": "ab" * 32,
    "model_git_blob": "12" * 20,
    "settings": {"intra_op_threads": 1, "execution_mode": "sequential"},
    "inputs": {"x": "float32[1, 3, 224, 224]"},
    "inputs_sha256": "cd" * 32,
    "ort_version": "1.31.1",
    "ort_flavour": "onnxruntime",
    "providers_requested": ["cpu"],
    "providers_used": ["CPUExecutionProvider"],
    "variant": "cpu-all",
    "plugin_version": "0.9.0",
}
MEASURED: dict[str, Any] = {
    "cpu": "AMD EPYC 9R14",
    "cores": 2,
    "gpu": "",
    "hardware": {"arch": "x86_64", "digest": "4eda52"},
    "measurement": {"budget_s": 4.0, "rounds": 40},
}


def make_stats(median: float = 10.0, **changes: Any) -> LatencyStats:
    """Stats rounded to 6 significant digits, so they survive rendering unchanged."""
    values: dict[str, Any] = {
        "count": 30,
        "rounds": 3,
        "min_ms": median * 0.9,
        "median_ms": median,
        "mean_ms": median * 1.01,
        "stdev_ms": 0.25,
        "iqr_ms": 0.5,
        "p90_ms": median * 1.1,
        "p95_ms": median * 1.2,
        "p99_ms": median * 1.5,
        "cv": 0.025,
        "round_cv": 0.01,
        "throughput_per_s": 1000 / median,
        "round_medians_ms": (median * 0.99, median, median * 1.01),
    }
    values = {k: _six(v) for k, v in values.items()}
    values.update(changes)
    return LatencyStats(**values)


def _six(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_six(v) for v in value)
    return float(f"{value:.6g}") if isinstance(value, float) else value


def make_figures(median: float = 10.0, recorded: str = "2025-01-02", **changes: Any) -> Figures:
    return latency_figures(recorded, make_stats(median), measured_on=dict(MEASURED), **changes)


def make_entry(
    median: float = 10.0,
    variant: str = "cpu-all",
    *,
    machine: str = "ci",
    recorded: str = "2025-01-02",
    accuracy: AccuracyRecord | None = None,
    **recipe: Any,
) -> BaselineEntry:
    """An entry of RECIPE (with ``recipe`` changes) holding ``machine``'s figures of ``median``."""
    return BaselineEntry(
        variant=variant,
        recorded=recorded,
        recipe=RECIPE | {"variant": variant} | recipe,
        accuracy=accuracy,
        figures={machine: make_figures(median, recorded)},
    )


def record(file: str = f"{TEST_FILE}.outputs/test_squeezenet_cpu-all_-0f1e2d3c.npz") -> AccuracyRecord:
    return AccuracyRecord("cd" * 32, (), file)


def document(tests: Any = None, **changes: Any) -> str:
    doc = {"schema": SCHEMA, "kind": KIND, "entries": {} if tests is None else tests}
    return json.dumps(doc | changes)


def valid_entry_dict() -> dict[str, Any]:
    return make_entry().as_dict()


# render --------------------------------------------------------------------


def test_render_is_deterministic_and_independent_of_insertion_order() -> None:
    a, b = make_entry(10.0), make_entry(20.0, variant="cpu-basic")
    two = a.with_figures("m2", make_figures(11.0)).with_figures("m1", make_figures(12.0))
    again = a.with_figures("m1", make_figures(12.0)).with_figures("m2", make_figures(11.0))
    first: Entries = {"test_b": two, "test_a": b}
    second: Entries = {"test_a": b, "test_b": again}
    text = render(first)
    assert text == render(first)
    assert text == render(second)
    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    assert text.index('"test_a"') < text.index('"test_b"')
    assert text.index('"m1"') < text.index('"m2"')


def test_render_writes_schema_2_with_one_recipe_and_figures_per_machine() -> None:
    entry = make_entry(accuracy=record()).with_figures("laptop", make_figures(3.5))
    text = render({TEST: entry})
    data = json.loads(text)
    assert data["schema"] == SCHEMA == 2
    assert data["kind"] == KIND == "pytest-ortperf baselines"
    stored = data["entries"][TEST]
    assert sorted(stored) == ["accuracy", "figures", "recipe", "recorded", "variant"]
    assert stored["recipe"] == RECIPE
    assert sorted(stored["figures"]) == ["ci", "laptop"]
    assert stored["figures"]["laptop"]["measured_on"] == MEASURED
    assert stored["figures"]["laptop"]["latency"]["median_ms"] == 3.5
    assert text.splitlines()[0] == "{"
    assert '\n "entries": {' in text  # one-space indentation: reviewable diffs


def test_the_file_text_is_exactly_this() -> None:
    """The format, pinned: a change to it shows here first."""
    figures = latency_figures(
        "2025-01-03",
        LatencyStats(1, 1, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1000.0, (1.0,)),
        measured_on={"cores": 2},
        spread=0.0312345678,
        settled=False,
    )
    entry = BaselineEntry("cpu-all", "2025-01-02", {"variant": "cpu-all"}, figures={"ci@zen4": figures})
    assert render({"test_a[cpu-all]": entry}) == (
        '{\n "entries": {\n  "test_a[cpu-all]": {\n   "figures": {\n    "ci@zen4": {\n'
        '     "latency": {\n      "count": 1,\n      "cv": 0.0,\n      "iqr_ms": 0.0,\n'
        '      "mean_ms": 1.0,\n      "median_ms": 1.0,\n      "min_ms": 1.0,\n      "p90_ms": 1.0,\n'
        '      "p95_ms": 1.0,\n      "p99_ms": 1.0,\n      "round_cv": 0.0,\n      "round_medians_ms": [\n'
        '       1.0\n      ],\n      "rounds": 1,\n      "stdev_ms": 0.0,\n      "throughput_per_s": 1000.0\n'
        '     },\n     "measured_on": {\n      "cores": 2\n     },\n     "recorded": "2025-01-03",\n'
        '     "settled": false,\n     "spread": 0.0312346\n    }\n   },\n   "recipe": {\n'
        '    "variant": "cpu-all"\n   },\n   "recorded": "2025-01-02",\n   "variant": "cpu-all"\n  }\n },\n'
        ' "kind": "pytest-ortperf baselines",\n "schema": 2\n}\n'
    )


def test_figures_leave_out_what_they_do_not_hold() -> None:
    bare = latency_figures("2025-01-02", profile=OpProfile(runs=1, ops={}, nodes={}))
    assert bare.as_dict() == {
        "recorded": "2025-01-02",
        "measured_on": {},
        "profile": {"runs": 1, "ops": {}, "nodes": {}},
    }
    noisy = latency_figures("2025-01-02", make_stats(), spread=0.2, settled=False).as_dict()
    assert (noisy["spread"], noisy["settled"]) == (0.2, False)
    assert "profile" not in noisy
    assert "short" not in noisy
    short = latency_figures("2025-01-02", make_stats(), short="the reference is rebuilt from git")
    assert Figures.from_dict(short.as_dict()) == short
    assert short.as_dict()["short"] == "the reference is rebuilt from git"


def test_render_rounds_floats_to_6_significant_digits() -> None:
    stats = make_stats(median_ms=12.3456789, round_medians_ms=(0.000123456789, 98765.4321), cv=0.1234567)
    figures = latency_figures(
        "2025-01-02", stats, measured_on={"ratio": 1.23456789, "cores": 16}, spread=0.123456789
    )
    entry = BaselineEntry("cpu-all", "2025-01-02", {"ratio": 2.3456789}, figures={"ci": figures})
    data = json.loads(render({TEST: entry}))["entries"][TEST]
    stored = data["figures"]["ci"]
    assert stored["latency"]["median_ms"] == 12.3457
    assert stored["latency"]["cv"] == 0.123457
    assert stored["latency"]["round_medians_ms"] == [0.000123457, 98765.4]
    assert stored["latency"]["count"] == 30  # ints untouched
    assert stored["measured_on"] == {"ratio": 1.23457, "cores": 16}
    assert stored["spread"] == 0.123457
    assert data["recipe"] == {"ratio": 2.34568}


def test_render_keeps_non_ascii_readable() -> None:
    entry = make_entry(model="models/r\u00e9seau \u00b7 v2.onnx")
    assert "r\u00e9seau \u00b7 v2" in render({TEST: entry})


def test_render_refuses_nan() -> None:
    entry = make_entry(broken=float("nan"))
    with pytest.raises(ValueError, match="JSON compliant"):
        render({TEST: entry})


def test_render_drops_entries_that_hold_nothing() -> None:
    empty = BaselineEntry("cpu-all", "2025-01-02", RECIPE)
    assert empty.empty
    text = render({TEST: make_entry(), "test_gone": empty})
    assert "test_gone" not in text
    assert render({}) == render({"test_gone": empty})
    outputs_only = BaselineEntry("cpu-all", "2025-01-02", RECIPE, accuracy=record())
    assert not outputs_only.empty
    assert TEST in render({TEST: outputs_only})


# parse ---------------------------------------------------------------------


def test_parse_round_trips_render_byte_for_byte(tmp_path: Path) -> None:
    noisy = latency_figures(
        "2025-01-04",
        make_stats(4.5),
        profile=OpProfile(2, {"Conv": (1.5, 3)}, {}),
        measured_on=MEASURED,
        spread=0.25,
        settled=False,
    )
    entries: Entries = {
        TEST: make_entry(accuracy=record())
        .with_figures("laptop", make_figures(3.5))
        .with_figures("box", noisy),
        "test_other[cpu-all]": make_entry(7.0, machine="laptop"),
        "test_outputs_only[cpu-all]": BaselineEntry(
            "cpu-all", "2025-01-02", RECIPE, accuracy=record("x.npz")
        ),
    }
    text = render(entries)
    parsed = parse(text, path=tmp_path / "x.json")
    assert parsed == entries
    assert render(parsed) == text
    assert parse_with_outputs(text, path=tmp_path / "x.json")[1] == {record().file, "x.npz"}


def test_parse_defaults_missing_figures_and_measured_on_to_empty(tmp_path: Path) -> None:
    data = valid_entry_dict()
    del data["figures"]["ci"]["measured_on"]
    assert parse(document({TEST: data}), path=tmp_path / "x.json")[TEST].figures["ci"].measured_on == {}
    del data["figures"]
    assert parse(document({TEST: data}), path=tmp_path / "x.json")[TEST].figures == {}


BAD_DOCUMENTS = [
    pytest.param("not json at all", "is not valid JSON", id="not-json"),
    pytest.param(render({TEST: make_entry()})[:-40], "is not valid JSON", id="truncated"),
    pytest.param("", "is not valid JSON", id="empty"),
    pytest.param("[1, 2]", "is not a pytest-ortperf baseline file", id="a-list"),
    pytest.param(document(kind="pytest-benchmark"), "is not a pytest-ortperf baseline file", id="wrong-kind"),
    pytest.param(
        json.dumps({"schema": 2, "entries": {}}), "is not a pytest-ortperf baseline file", id="no-kind"
    ),
    pytest.param(
        document(schema=0), "has schema 0; this version reads 2 (and 1, which it migrates).", id="schema-0"
    ),
    pytest.param(document(schema="2"), "has schema '2'; this version reads 2", id="schema-text"),
    pytest.param(document(schema=True), "has schema True; this version reads 2", id="schema-bool"),
    pytest.param(document(schema=2.0), "has schema 2.0; this version reads 2", id="schema-float"),
    pytest.param(
        document(schema=3),
        "has schema 3; this version reads 2 (written by a newer pytest-ortperf: upgrade it).",
        id="schema-3",
    ),
    pytest.param(document(entries=[]), "'entries' must be an object", id="entries-list"),
    pytest.param(document(entries=None), "'entries' must be an object", id="entries-null"),
    pytest.param(document({TEST: ["ci"]}), "an entry must be an object, got list", id="entry-list"),
    pytest.param(document({TEST: "fast"}), "an entry must be an object, got str", id="entry-str"),
    pytest.param(
        document({TEST: ["ci"]}, schema=1),
        f"entry {TEST!r} must map machines to entries",
        id="v1-machines-list",
    ),
    pytest.param(
        document({TEST: {"ci": "fast"}}, schema=1), "an entry must be an object, got str", id="v1-entry-str"
    ),
]


@pytest.mark.parametrize(("text", "fragment"), BAD_DOCUMENTS)
def test_parse_errors_name_the_file(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "tests" / "test_models.py.json"
    with pytest.raises(BaselineError) as info:
        parse(text, path=path)
    message = str(info.value)
    assert f"baseline file '{path}'" in message
    assert fragment in message


def _entry(**changes: Any) -> dict[str, Any]:
    return valid_entry_dict() | changes


def _without(key: str) -> dict[str, Any]:
    data = valid_entry_dict()
    del data[key]
    return data


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        pytest.param(_without("variant"), "variant must be a string", id="no-variant"),
        pytest.param(_entry(recorded=20250102), "recorded must be a string", id="recorded-int"),
        pytest.param(_without("recipe"), "recipe must be an object", id="no-recipe"),
        pytest.param(_entry(recipe=["x"]), "recipe must be an object", id="recipe-list"),
        pytest.param(_entry(figures=["ci"]), "figures must map machines to figures", id="figures-list"),
        pytest.param(_entry(accuracy={"outputs": None}), "an 'outputs' list", id="accuracy-damaged"),
    ],
)
def test_parse_reports_a_damaged_entry_with_file_and_test(
    tmp_path: Path, entry: dict[str, Any], fragment: str
) -> None:
    path = tmp_path / "test_models.py.json"
    with pytest.raises(BaselineError) as info:
        parse(document({TEST: entry}), path=path)
    message = str(info.value)
    assert message.startswith(f"baseline file '{path}': entry {TEST!r} is damaged (")
    assert fragment in message


def _figures(**changes: Any) -> dict[str, Any]:
    return make_figures().as_dict() | changes


def _latency(**changes: Any) -> dict[str, Any]:
    data = make_figures().as_dict()
    data["latency"] = data["latency"] | changes
    return data


def _latency_without(key: str) -> dict[str, Any]:
    data = make_figures().as_dict()
    del data["latency"][key]
    return data


def _figures_without(key: str) -> dict[str, Any]:
    data = make_figures().as_dict()
    del data[key]
    return data


@pytest.mark.parametrize(
    ("figures", "fragment"),
    [
        pytest.param(_figures_without("latency"), "'latency'", id="no-latency-nor-profile"),
        pytest.param(_figures_without("recorded"), "recorded must be a string", id="no-recorded"),
        pytest.param(_figures(measured_on=[]), "measured_on must be an object", id="measured-on-list"),
        pytest.param(_figures(latency=None), "", id="latency-null"),
        pytest.param(_figures(latency=[1, 2]), "", id="latency-list"),
        pytest.param(
            _figures(spread=-0.1), "spread must be a finite number >= 0, got -0.1", id="spread-negative"
        ),
        pytest.param(
            _figures(spread="3%"), "spread must be a finite number >= 0, got '3%'", id="spread-text"
        ),
        pytest.param(
            _figures(spread=True), "spread must be a finite number >= 0, got True", id="spread-bool"
        ),
        pytest.param(_figures(settled="no"), "settled must be true or false, got 'no'", id="settled-text"),
        pytest.param(
            _figures(short=True), "short must be a string (why a short recording was enough)", id="short-bool"
        ),
        pytest.param(_figures(profile={"runs": 1}), "'ops'", id="profile-damaged"),
        pytest.param("fast", "figures must be an object, got str", id="figures-str"),
        pytest.param(_latency_without("cv"), "'cv'", id="latency-missing-cv"),
        pytest.param(
            _latency(median_ms="10"), "median_ms must be a finite number, got '10'", id="median-str"
        ),
        pytest.param(_latency(p90_ms=None), "p90_ms must be a finite number, got None", id="p90-null"),
        pytest.param(_latency(count=-1), "count must be a whole number >= 0, got -1", id="count-negative"),
        pytest.param(_latency(count=30.5), "count must be a whole number >= 0, got 30.5", id="count-float"),
        pytest.param(_latency(rounds=True), "rounds must be a whole number >= 0, got True", id="rounds-bool"),
        pytest.param(
            _latency(round_medians_ms=[]), "round_medians_ms must be a non-empty list", id="no-rounds"
        ),
        pytest.param(
            _latency(round_medians_ms=[1, "2"]), "round_medians_ms must be a finite number", id="round-str"
        ),
        pytest.param(_figures(memory={"processes": 1}), "'arena_peak'", id="memory-without-figures"),
        pytest.param(
            _figures(memory={"processes": 1, "arena_peak": -5}),
            "arena_peak must be a whole number of bytes",
            id="memory-negative",
        ),
        pytest.param(_figures(startup={"create_ms": [1.0]}), "'first_run_ms'", id="startup-incomplete"),
        pytest.param(_figures(startup=[]), "start-up figures must be an object", id="startup-list"),
    ],
)
def test_parse_reports_damaged_figures_with_file_test_and_machine(
    tmp_path: Path, figures: Any, fragment: str
) -> None:
    path = tmp_path / "test_models.py.json"
    with pytest.raises(BaselineError) as info:
        parse(
            document({TEST: _entry(figures={"ci": make_figures().as_dict(), "ci-large": figures})}),
            path=path,
            decoders=DECODERS,
        )
    message = str(info.value)
    assert message.startswith(
        f"baseline file '{path}': entry {TEST!r}, figures of machine 'ci-large' are damaged ("
    )
    assert fragment in message


def test_parse_reports_nan_written_by_hand(tmp_path: Path) -> None:
    text = render({TEST: make_entry()}).replace('"median_ms": 10.0', '"median_ms": NaN')
    assert "NaN" in text
    with pytest.raises(BaselineError, match="median_ms must be a finite number, got nan"):
        parse(text, path=tmp_path / "x.json", decoders=DECODERS)


@pytest.mark.parametrize("medians", [[0.0, 10.0], [-1.0, 10.0]])
def test_parse_rejects_non_positive_round_medians(tmp_path: Path, medians: list[float]) -> None:
    path = tmp_path / "x.json"
    with pytest.raises(BaselineError, match="round_medians_ms") as info:
        parse(
            document({TEST: _entry(figures={"ci": _latency(round_medians_ms=medians)})}),
            path=path,
            decoders=DECODERS,
        )
    assert str(path) in str(info.value)


# schema 1: loads migrated --------------------------------------------------------------------------


def v1(
    median: float | None = 10.0,
    recorded: str = "2025-01-02",
    *,
    accuracy: AccuracyRecord | None = None,
    measured: dict[str, Any] | None = None,
    **recipe: Any,
) -> dict[str, Any]:
    """A schema-1 entry (one test x variant x machine) with RECIPE (changed by ``recipe``)."""
    data: dict[str, Any] = {
        "variant": "cpu-all",
        "recorded": recorded,
        "environment": RECIPE | recipe | (MEASURED if measured is None else measured),
    }
    if median is not None:
        data["latency"] = make_stats(median).as_dict()
    if accuracy is not None:
        data["accuracy"] = accuracy.as_dict()
    return data


def v1_document(tests: dict[str, Any]) -> str:
    return json.dumps({"schema": 1, "kind": KIND, "entries": tests})


def test_schema_1_takes_the_recipe_of_the_latest_recording_and_drops_machines_that_measured_another(
    tmp_path: Path,
) -> None:
    laptop = {**MEASURED, "cpu": "Intel Core i7"}
    text = v1_document(
        {
            TEST: {
                "ci": v1(10.0, "2025-03-01", plugin_version="1.0.0"),  # the latest: its recipe leads
                "laptop": v1(3.5, "2025-02-01", measured=laptop),  # same recipe, older plugin: kept
                "old-box": v1(20.0, "2025-01-01", ort_version="1.30.0"),  # another recipe: dropped
            }
        }
    )
    (entry,) = parse(text, path=tmp_path / "x.json").values()
    assert entry.recipe == RECIPE | {"plugin_version": "1.0.0"}
    assert entry.recorded == "2025-03-01"
    assert entry.machines() == ["ci", "laptop"]
    assert entry.figures["laptop"] == latency_figures("2025-02-01", make_stats(3.5), measured_on=laptop)
    ci = latency_part(entry.figures["ci"])
    assert ci is not None
    assert ci.spread is None
    assert ci.settled
    assert entry.environment_for("laptop") == RECIPE | {"plugin_version": "1.0.0"} | laptop


def test_schema_1_ties_go_to_the_last_machine_key_and_the_chosen_one_is_kept_even_lacking_a_key(
    tmp_path: Path,
) -> None:
    old = {
        key: value for key, value in RECIPE.items() if key != "ort_flavour"
    }  # recorded before the key existed
    text = v1_document(
        {
            TEST: {
                "a-box": {**v1(10.0), "environment": old | {"model_sha256": "ef" * 32}},
                "b-box": {**v1(12.0), "environment": old},
            }
        }
    )
    (entry,) = parse(text, path=tmp_path / "x.json").values()
    assert entry.recipe == old
    assert entry.machines() == ["b-box"]


def test_schema_1_keeps_the_outputs_of_the_chosen_recipe(tmp_path: Path) -> None:
    text = v1_document(
        {
            "test_kept[cpu-all]": {
                "a-box": v1(10.0, accuracy=record("t.outputs/kept@a-box.npz")),
                "b-box": v1(10.0, "2025-02-02"),  # the latest, without outputs
                "c-box": v1(10.0, accuracy=record("t.outputs/kept@c-box.npz")),
            },
            "test_other[cpu-all]": {
                "a-box": v1(
                    10.0, "2025-01-01", accuracy=record("t.outputs/other@a-box.npz"), ort_version="1.2"
                ),
                "b-box": v1(None, "2025-02-02", accuracy=record("t.outputs/other@b-box.npz")),
            },
        }
    )
    entries, named = parse_with_outputs(text, path=tmp_path / "x.json")
    kept, other = entries["test_kept[cpu-all]"], entries["test_other[cpu-all]"]
    assert kept.accuracy == record("t.outputs/kept@a-box.npz")  # the first same-recipe machine's
    assert kept.machines() == ["a-box", "b-box", "c-box"]
    assert other.accuracy == record("t.outputs/other@b-box.npz")  # the chosen entry's
    assert other.figures == {}  # outputs only: no figures for b-box; a-box measured another recipe
    assert not other.empty
    assert named == {
        f"t.outputs/{name}.npz" for name in ("kept@a-box", "kept@c-box", "other@a-box", "other@b-box")
    }


def test_schema_1_damage_names_the_file_test_and_machine(tmp_path: Path) -> None:
    path = tmp_path / "test_models.py.json"
    entry = v1()
    del entry["latency"]
    for damaged, fragment in (
        (entry, "'latency'"),
        ({**v1(), "environment": []}, "environment must be an object"),
        ({**v1(), "environment": {"x": float("inf")}}, "environment.x must hold finite numbers, got inf"),
    ):
        with pytest.raises(BaselineError) as info:
            parse(v1_document({TEST: {"ci": v1(), "ci-large": damaged}}), path=path)
        message = str(info.value)
        assert message.startswith(
            f"baseline file '{path}': entry {TEST!r} for machine 'ci-large' is damaged ("
        )
        assert fragment in message


def test_schema_1_is_migrated_by_the_next_write_only(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    path = store.path_for(TEST_FILE)
    path.parent.mkdir(parents=True)
    outputs = tmp_path / f"{TEST_FILE}.outputs"
    outputs.mkdir()
    for name in ("a@ci.npz", "a@old.npz"):
        (outputs / name).write_bytes(b"arrays")
    text = v1_document(
        {
            "test_a[cpu-all]": {
                "ci": v1(10.0, "2025-02-01", accuracy=record(f"{TEST_FILE}.outputs/a@ci.npz")),
                "old": v1(
                    10.0, "2025-01-01", accuracy=record(f"{TEST_FILE}.outputs/a@old.npz"), ort_version="1.2"
                ),
            },
            TEST: {"ci": v1(5.0)},
        }
    )
    path.write_text(text, encoding="utf-8")
    assert store.lookup(TEST_FILE, TEST) == parse(text, path=path)[TEST]
    assert store.write() == []
    assert path.read_text(encoding="utf-8") == text  # reading never writes

    store.stage(TEST_FILE, TEST, make_entry(6.0))
    assert store.write() == [path]
    migrated = path.read_text(encoding="utf-8")
    assert json.loads(migrated)["schema"] == 2
    assert migrated == render(parse(text, path=path) | {TEST: make_entry(6.0)})
    # The outputs of the machine whose recipe was dropped are named by nothing any more: deleted.
    assert sorted(p.name for p in outputs.iterdir()) == ["a@ci.npz"]


# entries -------------------------------------------------------------------------------------------


def test_an_entry_answers_per_machine() -> None:
    profiled = Figures("2025-01-02", measured_on={"cpu": "arm"}).with_part("memory", {"peak": 1})
    entry = make_entry(machine="ci").with_figures("arm", profiled)
    assert entry.figures_for("ci") == make_figures()
    assert entry.figures_for("elsewhere") is None
    assert entry.machines() == ["arm", "ci"]
    assert entry.machines("latency") == ["ci"]
    assert entry.machines("memory") == ["arm"]
    assert entry.machines("finite") == []  # a registered kind's own part: nobody holds one yet
    counted = entry.with_figures("arm", profiled.with_part("finite", {"largest": 2.5}))
    assert counted.machines("finite") == ["arm"]
    assert counted.figures["arm"].part("finite") == {"largest": 2.5}
    assert counted.figures["arm"].with_part("finite", None) == profiled
    assert entry.environment_for("arm") == RECIPE | {"cpu": "arm"}
    assert entry.environment_for("elsewhere") == RECIPE
    assert entry.with_figures("arm", None) == make_entry(machine="ci")
    assert entry.with_figures("ci", make_figures(2.0)).figures["ci"] == make_figures(2.0)


def test_with_recipe_keeps_figures_under_the_same_recipe_and_drops_them_under_another() -> None:
    entry = make_entry(accuracy=record()).with_figures("laptop", make_figures(3.5))
    newer = entry.with_recipe(
        RECIPE | {"plugin_version": "1.0.0", "model": "renamed.onnx"}, recorded="2025-06-01"
    )
    assert newer.recipe["plugin_version"] == "1.0.0"
    assert (newer.figures, newer.recorded, newer.accuracy) == (entry.figures, entry.recorded, entry.accuracy)
    changed = entry.with_recipe(RECIPE | {"model_sha256": "ef" * 32}, recorded="2025-06-01")
    assert changed.figures == {}
    assert changed.recorded == "2025-06-01"
    assert changed.accuracy == entry.accuracy  # the accuracy check judges it and re-records it itself


# write_atomically ----------------------------------------------------------


def test_write_atomically_creates_parents_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "test_x.py.json"
    write_atomically(path, "first\n")
    assert path.read_text(encoding="utf-8") == "first\n"
    write_atomically(path, "second \u00b7 \u00fcn\u00efcode\n")
    assert path.read_bytes() == "second \u00b7 \u00fcn\u00efcode\n".encode()
    assert [p.name for p in path.parent.iterdir()] == ["test_x.py.json"]


def test_write_atomically_keeps_the_old_file_and_cleans_up_when_replacing_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "test_x.py.json"
    path.write_text("old\n", encoding="utf-8")

    def failing_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_atomically(path, "new\n")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["test_x.py.json"]


def test_write_atomically_writes_unix_newlines(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    write_atomically(path, "a\nb\n")
    assert path.read_bytes() == b"a\nb\n"


def test_write_atomically_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("old\n", encoding="utf-8")
    path.chmod(0o644)
    write_atomically(path, "new\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


# BaselineStore -------------------------------------------------------------


def test_path_for_mirrors_the_test_file_under_the_root(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / ".ortperf")
    assert store.path_for(TEST_FILE) == tmp_path / ".ortperf" / "tests" / "perf" / "test_models.py.json"


def test_lookup_without_a_file_is_none_and_creates_nothing(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / "baselines")
    assert store.lookup(TEST_FILE, TEST) is None
    assert store.current(TEST_FILE, TEST) is None
    assert store.entries(TEST_FILE) == {}
    assert not (tmp_path / "baselines").exists()
    assert store.write() == []


def test_stage_and_write_create_the_file_under_nested_directories(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / "baselines")
    entry = make_entry()
    store.stage(TEST_FILE, TEST, entry)
    assert list(store.staged()) == [(store.path_for(TEST_FILE), TEST, entry)]
    assert store.current(TEST_FILE, TEST) == entry
    assert store.lookup(TEST_FILE, TEST) is None  # as loaded
    path = store.path_for(TEST_FILE)
    assert not path.exists()  # nothing on disk before write()
    assert store.write() == [path]
    assert list(store.staged()) == []
    assert path.read_text(encoding="utf-8") == render({TEST: entry})
    assert store.lookup(TEST_FILE, TEST) == entry
    fresh = BaselineStore(tmp_path / "baselines")
    assert fresh.lookup(TEST_FILE, TEST) == entry


def test_under_one_recipe_each_write_adds_its_machines_figures(tmp_path: Path) -> None:
    first, second = BaselineStore(tmp_path), BaselineStore(tmp_path)
    assert second.lookup(TEST_FILE, TEST) is None  # loaded before the first one wrote
    first.stage(TEST_FILE, TEST, make_entry(10.0, machine="ci-large", accuracy=record()))
    first.write()
    # The second store never saw ci-large's figures: its write merges into what is on disk now.
    second.stage(TEST_FILE, TEST, make_entry(20.0, machine="ci-small", plugin_version="1.0.0"))
    second.stage(TEST_FILE, "test_other[cpu-all]", make_entry(5.0, machine="ci-large"))
    second.write()
    fresh = BaselineStore(tmp_path).lookup(TEST_FILE, TEST)
    assert fresh is not None
    assert fresh.machines() == ["ci-large", "ci-small"]
    assert fresh.figures["ci-large"] == make_figures(10.0)
    assert fresh.figures["ci-small"] == make_figures(20.0)
    assert fresh.recipe["plugin_version"] == "1.0.0"  # the staged recipe
    assert fresh.accuracy == record()  # the staged entry had none: the one on disk stays
    assert BaselineStore(tmp_path).lookup(TEST_FILE, "test_other[cpu-all]") == make_entry(
        5.0, machine="ci-large"
    )


def test_within_one_recipe_a_write_removes_no_machines_figures(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, make_entry(10.0, machine="ci").with_figures("laptop", make_figures(3.0)))
    store.write()
    store = BaselineStore(tmp_path)
    loaded = store.lookup(TEST_FILE, TEST)
    assert loaded is not None
    store.stage(TEST_FILE, TEST, loaded.with_figures("laptop", None).with_figures("ci", make_figures(11.0)))
    current = store.current(TEST_FILE, TEST)
    assert current is not None
    assert current.machines() == ["ci", "laptop"]  # as the write will leave it
    store.write()
    written = BaselineStore(tmp_path).lookup(TEST_FILE, TEST)
    assert written == current


def test_another_recipe_replaces_the_entry_and_its_figures(tmp_path: Path) -> None:
    npz = tmp_path / record().file
    npz.parent.mkdir(parents=True)
    npz.write_bytes(b"arrays")
    store = BaselineStore(tmp_path)
    store.stage(
        TEST_FILE, TEST, make_entry(10.0, accuracy=record()).with_figures("laptop", make_figures(3.0))
    )
    store.write()

    store = BaselineStore(tmp_path)
    changed = make_entry(12.0, machine="ci", recorded="2025-06-01", model_sha256="ef" * 32)
    store.stage(TEST_FILE, TEST, changed)
    assert store.current(TEST_FILE, TEST) == changed
    store.write()
    assert BaselineStore(tmp_path).lookup(TEST_FILE, TEST) == changed
    assert not npz.exists()  # no entry names the old recipe's outputs any more

    # A new recipe with nothing measured yet: the old figures go, and so does the entry.
    store.stage(TEST_FILE, TEST, BaselineEntry("cpu-all", "2025-07-01", RECIPE | {"model_sha256": "01" * 32}))
    assert store.current(TEST_FILE, TEST) is None
    store.write()
    assert BaselineStore(tmp_path).entries(TEST_FILE) == {}


def test_a_recipe_lacking_a_key_keeps_its_figures_when_staged_as_it_is(tmp_path: Path) -> None:
    old = {key: value for key, value in RECIPE.items() if key != "inputs_sha256"}
    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, BaselineEntry("cpu-all", "2025-01-02", old, figures={"ci": make_figures()}))
    store.write()
    store = BaselineStore(tmp_path)
    store.stage(
        TEST_FILE, TEST, BaselineEntry("cpu-all", "2025-01-02", old, figures={"arm": make_figures(2.0)})
    )
    store.write()
    written = BaselineStore(tmp_path).lookup(TEST_FILE, TEST)
    assert written is not None
    assert written.machines() == ["arm", "ci"]


def test_writing_identical_content_does_not_rewrite_the_file(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, make_entry())
    path = store.path_for(TEST_FILE)
    store.write()
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = path.stat()

    again = BaselineStore(tmp_path)
    again.stage(TEST_FILE, TEST, make_entry())
    assert again.write() == []
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_staging_none_removes_the_entry_with_every_machines_figures(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, make_entry().with_figures("laptop", make_figures(3.0)))
    store.stage(TEST_FILE, "test_old", make_entry(4))
    store.stage(TEST_FILE, "test_kept", make_entry(5))
    store.write()

    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, None)
    store.stage(TEST_FILE, "test_old", None)
    store.stage(TEST_FILE, "test_never_there", None)
    assert store.current(TEST_FILE, TEST) is None
    assert store.write() == [store.path_for(TEST_FILE)]
    fresh = BaselineStore(tmp_path)
    assert fresh.entries(TEST_FILE) == {"test_kept": make_entry(5)}
    assert "test_old" not in store.path_for(TEST_FILE).read_text(encoding="utf-8")


def test_a_later_stage_of_the_same_test_wins(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, make_entry(1))
    store.stage(TEST_FILE, TEST, make_entry(2))
    assert len(list(store.staged())) == 1
    store.write()
    assert BaselineStore(tmp_path).lookup(TEST_FILE, TEST) == make_entry(2)


@pytest.mark.parametrize(
    "damage",
    ["{ not json", document(schema=3), document({TEST: {"variant": "cpu-all"}})],
    ids=["not-json", "newer-schema", "damaged-entry"],
)
def test_a_damaged_file_raises_on_lookup_and_stage_and_is_never_overwritten(
    tmp_path: Path, damage: str
) -> None:
    store = BaselineStore(tmp_path)
    path = store.path_for(TEST_FILE)
    path.parent.mkdir(parents=True)
    path.write_text(damage, encoding="utf-8")
    original = path.read_bytes()

    with pytest.raises(BaselineError) as lookup_error:
        store.lookup(TEST_FILE, TEST)
    assert f"baseline file '{path}'" in str(lookup_error.value)
    with pytest.raises(BaselineError) as stage_error:
        store.stage(TEST_FILE, TEST, make_entry())
    assert f"baseline file '{path}'" in str(stage_error.value)
    with pytest.raises(BaselineError, match="baseline file"):
        store.current(TEST_FILE, TEST)

    assert list(store.staged()) == []
    assert store.write() == []
    assert path.read_bytes() == original
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_file_damaged_after_it_was_loaded_is_not_written_over(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, make_entry())
    store.write()
    store.stage(TEST_FILE, "test_other", make_entry(2.0))
    path = store.path_for(TEST_FILE)
    path.write_text("{ half a file", encoding="utf-8")  # another process, or a person
    with pytest.raises(BaselineError) as info:
        store.write()
    assert str(info.value).startswith(f"baseline file '{path}' is not valid JSON")
    assert "It is not overwritten" in str(info.value)
    assert path.read_text(encoding="utf-8") == "{ half a file"


def test_a_file_a_newer_version_wrote_since_it_was_loaded_asks_for_an_upgrade(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, make_entry())
    store.write()
    store.stage(TEST_FILE, "test_other", make_entry(2.0))
    path = store.path_for(TEST_FILE)
    path.write_text(document(schema=3), encoding="utf-8")
    with pytest.raises(BaselineError) as info:
        store.write()
    assert "newer pytest-ortperf: upgrade it" in str(info.value)
    assert "--ortperf-repair" not in str(info.value)
    assert path.read_text(encoding="utf-8") == document(schema=3)


def test_a_damaged_file_does_not_affect_other_files(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    bad = store.path_for("tests/test_bad.py")
    bad.parent.mkdir(parents=True)
    bad.write_text("garbage", encoding="utf-8")
    with pytest.raises(BaselineError):
        store.lookup("tests/test_bad.py", TEST)
    store.stage("tests/test_good.py", TEST, make_entry())
    assert store.write() == [store.path_for("tests/test_good.py")]
    assert bad.read_text(encoding="utf-8") == "garbage"


def test_a_file_that_is_not_text_names_the_path_and_the_repair(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    path = store.path_for(TEST_FILE)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe\x00not utf-8")
    with pytest.raises(BaselineError) as info:
        store.lookup(TEST_FILE, TEST)
    assert str(info.value).startswith(f"baseline file '{path}' is not UTF-8 text (")
    assert str(info.value).endswith(
        "It is not overwritten: fix it, or record it afresh with --ortperf-update --ortperf-repair (which "
        "keeps the damaged file as test_models.py.json.damaged-<time>)."
    )
    with pytest.raises(BaselineError, match="is not UTF-8 text"):
        store.stage(TEST_FILE, TEST, make_entry())
    assert path.read_bytes() == b"\xff\xfe\x00not utf-8"
    repairing = BaselineStore(tmp_path, repair=True)
    repairing.stage(TEST_FILE, TEST, make_entry())
    assert repairing.write() == [path]
    assert [backup.read_bytes() for backup in path.parent.glob(f"{path.name}.damaged-*")] == [
        b"\xff\xfe\x00not utf-8"
    ]


def test_the_store_reads_each_file_once(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, make_entry())
    store.write()
    reader = BaselineStore(tmp_path)
    assert reader.lookup(TEST_FILE, TEST) is not None
    reader.path_for(TEST_FILE).write_text("changed on disk", encoding="utf-8")
    assert reader.lookup(TEST_FILE, TEST) == make_entry()


def test_write_removes_only_stale_temporaries_of_its_own_files(tmp_path: Path) -> None:
    import time

    from pytest_ortperf.store.baselines import remove_stale_temporaries

    target = tmp_path / "t.py.json"
    old = tmp_path / ".t.py.json.abc123.tmp"
    young = tmp_path / ".t.py.json.def456.tmp"
    other = tmp_path / ".other.json.ghi789.tmp"
    for path in (old, young, other):
        path.write_text("partial")
    hour_ago = time.time() - 3600
    os.utime(old, (hour_ago, hour_ago))
    os.utime(other, (hour_ago, hour_ago))
    remove_stale_temporaries(target)
    assert not old.exists()
    assert young.exists()
    assert other.exists()
    BaselineStore(tmp_path)  # a store on the same folder reads nothing until asked


# A file that loads must be writable again -------------------------------------


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"x": value}
    return value


UNWRITABLE_VALUES = [
    pytest.param('{"x": NaN}', "x must hold finite numbers, got nan", id="nan"),
    pytest.param('{"x": [1, -Infinity]}', "x[1] must hold finite numbers, got -inf", id="inf"),
    pytest.param('{"x": 1e999}', "x must hold finite numbers, got inf", id="1e999"),
    pytest.param(json.dumps(_nested(500)), "is nested deeper than 32 levels", id="500-deep"),
]


@pytest.mark.parametrize(("value", "fragment"), UNWRITABLE_VALUES)
def test_a_recipe_that_could_not_be_written_back_is_a_damaged_entry(
    tmp_path: Path, value: str, fragment: str
) -> None:
    text = render({TEST: make_entry()}).replace('"recipe": {', f'"recipe": {{"bad": {value}, ', 1)
    path = tmp_path / "test_models.py.json"
    with pytest.raises(BaselineError) as info:
        parse(text, path=path)
    message = str(info.value)
    assert message.startswith(f"baseline file '{path}': entry {TEST!r} is damaged (")
    assert f"recipe.bad.{fragment}" in message or fragment in message


@pytest.mark.parametrize(("value", "fragment"), UNWRITABLE_VALUES)
def test_measured_on_that_could_not_be_written_back_is_damaged_figures(
    tmp_path: Path, value: str, fragment: str
) -> None:
    text = render({TEST: make_entry()}).replace('"measured_on": {', f'"measured_on": {{"bad": {value}, ', 1)
    path = tmp_path / "test_models.py.json"
    with pytest.raises(BaselineError) as info:
        parse(text, path=path)
    message = str(info.value)
    assert message.startswith(
        f"baseline file '{path}': entry {TEST!r}, figures of machine 'ci' are damaged ("
    )
    assert fragment in message


def test_an_update_beside_an_unwritable_entry_is_refused_naming_the_file(tmp_path: Path) -> None:
    # The kept entry of another test holds NaN: before, the load passed and the write crashed.
    store = BaselineStore(tmp_path)
    path = store.path_for(TEST_FILE)
    path.parent.mkdir(parents=True)
    text = render({"test_old": make_entry()}).replace('"recipe": {', '"recipe": {"x": NaN, ', 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError, match=f"baseline file '{path}': entry 'test_old' is damaged"):
        store.stage(TEST_FILE, TEST, make_entry())
    assert path.read_text(encoding="utf-8") == text


def test_write_turns_an_unrenderable_value_into_an_error_naming_the_file(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, make_entry(bad=float("nan")))
    deep = BaselineStore(tmp_path / "deep")
    deep.stage(TEST_FILE, TEST, make_entry(bad=_nested(5000)))
    unloadable = BaselineStore(tmp_path / "unloadable")  # figures holding neither latency nor a profile
    unloadable.stage(TEST_FILE, TEST, make_entry().with_figures("ci", Figures("2025-01-02")))
    for candidate in (store, deep, unloadable):
        with pytest.raises(BaselineError) as info:
            candidate.write()
        assert f"cannot write baseline file '{candidate.path_for(TEST_FILE)}'" in str(info.value)
        assert not candidate.path_for(TEST_FILE).exists()


def test_pruning_deletes_the_outputs_only_after_the_json_no_longer_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ortperf.store import baselines

    outputs = tmp_path / "outputs.npz"
    outputs.write_bytes(b"arrays")
    store = BaselineStore(tmp_path)
    store.stage(
        TEST_FILE, TEST, BaselineEntry("cpu-all", "2025-01-02", RECIPE, accuracy=record("outputs.npz"))
    )
    store.write()

    seen = []
    real = baselines.write_atomically

    def spy(path: Path, text: str | bytes) -> None:
        seen.append(outputs.exists())  # at the moment the JSON is replaced
        real(path, text)

    monkeypatch.setattr(baselines, "write_atomically", spy)
    pruner = BaselineStore(tmp_path)
    pruner.stage(TEST_FILE, TEST, None)
    pruner.write()
    assert seen == [True]
    assert not outputs.exists()


def test_outputs_still_named_by_the_entry_are_kept(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs.npz"
    outputs.write_bytes(b"arrays")
    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, make_entry(accuracy=record("outputs.npz")))
    store.write()
    store = BaselineStore(tmp_path)
    store.stage(TEST_FILE, TEST, make_entry(9.0, machine="laptop"))  # same recipe, no accuracy of its own
    store.write()
    assert outputs.exists()


def test_repair_treats_a_damaged_file_as_empty_and_sets_it_aside_only_when_writing(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path, repair=True)
    path = store.path_for(TEST_FILE)
    path.parent.mkdir(parents=True)
    path.write_text("garbage", encoding="utf-8")
    assert store.entries(TEST_FILE) == {}
    store.stage(TEST_FILE, TEST, make_entry())
    assert path.read_text(encoding="utf-8") == "garbage"  # loading moves nothing (xdist workers load)
    assert store.damaged() == [path]

    assert store.write() == [path]
    ((damaged, backup, kept, lost),) = [(r.path, r.backup, r.kept, r.lost) for r in store.repaired]
    assert damaged == path
    assert (kept, lost) == (0, ("the whole file (no entry can be read in it)",))
    assert backup.name.startswith(f"{path.name}.damaged-")
    assert backup.read_text(encoding="utf-8") == "garbage"
    assert parse(path.read_text(encoding="utf-8"), path=path) == {TEST: make_entry()}


def test_a_damaged_file_named_by_another_process_is_set_aside_by_the_writer(tmp_path: Path) -> None:
    path = BaselineStore(tmp_path).path_for(TEST_FILE)
    path.parent.mkdir(parents=True)
    path.write_text("garbage", encoding="utf-8")
    controller = BaselineStore(tmp_path, repair=True)
    controller.recheck(path)
    controller.write()
    assert not path.exists()
    assert [r.backup.read_text(encoding="utf-8") for r in controller.repaired] == ["garbage"]
    plain = BaselineStore(tmp_path)
    path.write_text("garbage", encoding="utf-8")
    plain.recheck(path)  # without --ortperf-repair: left for the tests that use it to report
    assert plain.write() == []
    assert path.read_text(encoding="utf-8") == "garbage"


def test_memory_and_start_up_figures_round_trip_beside_latency(tmp_path: Path) -> None:
    memory = MemoryFigures(
        processes=2, arena_peak=4096, arena_held=8192, peak_rss=1 << 20, peak_rss_range=(1, 2)
    )
    startup = StartupFigures((8.0, 9.0), (0.3, 0.4), (0.05, 0.05), engine_cache="hit")
    figures = make_figures().with_part("memory", memory).with_part("startup", startup)
    only_memory = Figures(recorded="2025-01-02").with_part(
        "memory", memory
    )  # a test that checks memory alone
    path = tmp_path / "t.json"
    text = document({TEST: _entry(figures={"ci": figures.as_dict(), "box": only_memory.as_dict()})})
    entries = parse(text, path=path, decoders=DECODERS)
    assert entries[TEST].figures_for("ci") == figures
    assert entries[TEST].figures_for("box") == only_memory
    assert entries[TEST].machines("memory") == ["box", "ci"]
    assert entries[TEST].machines("latency") == ["ci"]
    ci = entries[TEST].figures_for("ci")
    assert ci is not None
    assert ci.part_as("memory", MemoryFigures.from_dict) == memory
    assert ci.part_as("startup", StartupFigures.from_dict) == startup
    # The file keeps them where it always has: at the top level of the machine's figures.
    written = json.loads(text)["entries"][TEST]["figures"]["ci"]
    assert written["memory"] == memory.as_dict()
    assert written["startup"] == startup.as_dict()
    assert "parts" not in written


def test_the_store_interprets_no_part_and_validates_each_by_its_kinds_decoder() -> None:
    """A part is kept as it was read; a load handed the kinds' decoders refuses a damaged one with
    the kind's own words, and one without keeps it (its kind is not loaded here); a part of a kind
    with no decoder is kept too."""
    damaged = {**make_figures().as_dict(), "memory": {"processes": 1}, "parts": {"mine": {"x": 1}}}
    kept = Figures.from_dict(damaged)
    assert kept.part("memory") == {"processes": 1}
    assert kept.part("mine") == {"x": 1}
    assert kept.as_dict() == damaged
    with pytest.raises(KeyError, match="arena_peak"):
        Figures.from_dict(damaged, DECODERS)
    with pytest.raises(TypeError, match="graph figures must be an object"):
        Figures.from_dict({**make_figures().as_dict(), "graph": [1]})


def test_a_writer_reads_merges_and_writes_under_the_lock_another_writer_holds(tmp_path: Path) -> None:
    """The cause of lost figures when two runners record at once: each read the file, merged its
    own figures and wrote, and the second write replaced the first. A write now waits for the
    directory's lock and reads what the other writer wrote under it."""
    import threading

    from pytest_ortperf.store.baselines import writers_take_turns

    root = tmp_path / "baselines"
    store = BaselineStore(root)
    assert store.current(TEST_FILE, "test_a[cpu-all]") is None  # read before the other runner writes
    store.stage(TEST_FILE, "test_a[cpu-all]", make_entry(machine="runner-b"))
    path = root / f"{TEST_FILE}.json"
    done = threading.Event()
    with writers_take_turns(path):  # the other runner, in the middle of its read-merge-write
        writer = threading.Thread(target=lambda: (store.write(), done.set()))
        writer.start()
        assert not done.wait(0.3), "a writer went ahead while another held the lock"
        write_atomically(path, render({"test_a[cpu-all]": make_entry(machine="runner-a")}))  # its write
    writer.join(10)
    assert done.is_set()
    entry = parse(path.read_text(), path=path)["test_a[cpu-all]"]
    assert sorted(entry.figures) == ["runner-a", "runner-b"]


def test_the_recorded_model_blobs_of_every_readable_baseline_file(tmp_path: Path) -> None:
    root = tmp_path / "baselines"
    (root / "sub").mkdir(parents=True)
    (root / "test_a.py.json").write_text(
        render(
            {
                "test_a[cpu-all]": make_entry(model_git_blob="a" * 40),
                "test_b[cpu-all]": make_entry(model_git_blob=None),
            }
        )
    )
    (root / "sub" / "test_c.py.json").write_text(
        render({"test_c[cpu-all]": make_entry(model_git_blob="c" * 40)})
    )
    dvc = {"file": "m.onnx.dvc", "blob": "d" * 40, "md5": "0" * 32, "path": "m.onnx"}  # its pointer's id too
    (root / "test_d.py.json").write_text(
        render({"test_d[cpu-all]": make_entry(model_git_blob=None, model_dvc=dvc)})
    )
    (root / "test_damaged.py.json").write_text("{ not json")
    store = BaselineStore(root)
    assert store.recorded_model_blobs() == {"a" * 40, "c" * 40, "d" * 40}
    # The damaged file stays the error of the test that reads it.
    with pytest.raises(BaselineError, match=r"test_damaged\.py\.json"):
        store.entries("test_damaged.py")
    assert BaselineStore(tmp_path / "none").recorded_model_blobs() == frozenset()
