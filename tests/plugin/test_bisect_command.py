"""``ortperf bisect --runtimes``: real releases of the CPU wheel (about 15 MB each, fetched once into
the repository's ``.ortperf/envs``), the example BERT test run in each, its graph compared.

The range is kept to two releases here; the full 1.27.0..1.32.0 run is in docs/bisect.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ortperf.cli import main

ROOT = Path(__file__).resolve().parents[2]
BERT = "examples/test_bert.py::test_latency_accuracy_and_graph[cpu-all]"


@pytest.mark.slow
def test_names_the_release_whose_graph_differs_and_its_fusions(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(ROOT)
    report = tmp_path / "bisect.json"
    status = main(["bisect", BERT, "--runtimes", "onnxruntime==1.30.0..1.31.0", "--report", str(report)])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "first changed: 1.31.0 (the last like 1.30.0: 1.30.0)" in out
    assert "gained Attention 2, EmbedLayerNormalization 1" in out
    assert "step 1: measuring 1.31.0 against 1.30.0" in err
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["culprit"] == "1.31.0"
    assert data["comparisons"] == 1
    assert [step["label"] for step in data["steps"]] == ["1.31.0"]
    assert data["graphs"]["1.31.0"]["figures"]["pre_pass"]["Attention"] == 2
    assert "Attention" not in data["graphs"]["1.30.0"]["figures"]["pre_pass"]
    assert any("transformer optimizer" in line for line in data["explanation"])


@pytest.mark.slow
def test_an_unknown_node_id_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    missing = "examples/test_bert.py::test_no_such_test"
    status = main(["bisect", missing, "--runtimes", "onnxruntime==1.30.0..1.31.0"])
    err = capsys.readouterr().err
    assert status == 2
    assert f"pytest found no test {missing!r}" in err


@pytest.mark.slow  # asks the package index for the versions
def test_a_range_with_no_releases_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    status = main(["bisect", BERT, "--runtimes", "onnxruntime==9.0.0..9.5.0"])
    err = capsys.readouterr().err
    assert status == 2
    assert "onnxruntime==9.0.0..9.5.0: the package index has 0 release(s) of onnxruntime" in err


@pytest.mark.slow  # asks the package index for the versions
def test_fetch_never_refuses_naming_the_missing_release(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # a project with no environments fetched
    status = main(["bisect", BERT, "--runtimes", "onnxruntime==1.30.0..1.31.0", "--fetch", "never"])
    err = capsys.readouterr().err
    assert status == 2
    assert "onnxruntime==1.30.0 is not in" in err  # the good end, needed first
    assert "--fetch=never forbids installing it" in err


def test_a_malformed_range_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["bisect", BERT, "--runtimes", "1.27.0"])
    assert status == 2
    assert "--runtimes '1.27.0': expected [DISTRIBUTION==]FROM..TO" in capsys.readouterr().err
