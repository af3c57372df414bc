"""A folder of models gated without Python: collection, selection, per-model tables, bad files, and
``ortperf init``; real models, real sessions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest
import yaml

from pytest_ortperf.cli import main as ortperf
from tests.models import mlp_model

INI = "[pytest]\nortperf_models = models/*.onnx\nortperf_opt_levels = disabled,all\nortperf_missing = pass\n"


@pytest.fixture
def models(pytester: pytest.Pytester) -> Path:
    """Two real models and a file that is not one, under models/, collected by the ini key."""
    folder = pytester.path / "models"
    folder.mkdir()
    onnx.save(mlp_model(layers=2, width=16), folder / "mlp.onnx")
    onnx.save(mlp_model(layers=3, width=8, seed=1), folder / "small.onnx")
    pytester.makeini(INI)
    return folder


def test_each_model_is_one_test_per_check_and_variant(pytester: pytest.Pytester, models: Path) -> None:
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "models/mlp.onnx::latency[[]cpu-disabled[]]",
            "models/mlp.onnx::accuracy[[]cpu-disabled[]]",
            "models/mlp.onnx::graph[[]cpu-disabled[]]",
            "models/mlp.onnx::latency[[]cpu-all[]]",
            "models/mlp.onnx::accuracy[[]cpu-all[]]",
            "models/mlp.onnx::graph[[]cpu-all[]]",
            "models/small.onnx::latency[[]cpu-disabled[]]",
            "*12 tests collected*",
        ]
    )
    # precisions, memory and start-up add their items
    more = pytester.runpytest(
        "--collect-only", "-q", "--ort-precisions=fp32,int8-dynamic", "--ortperf-checks=accuracy,memory"
    )
    more.stdout.fnmatch_lines(["models/mlp.onnx::memory[[]cpu-all-int8-dynamic[]]", "*16 tests collected*"])


def test_selection_record_and_gate_work_as_for_python_tests(pytester: pytest.Pytester, models: Path) -> None:
    selected = pytester.runpytest(
        "-k", "accuracy and cpu-all and mlp", "--ortperf-update", "--ortperf-report=r.json"
    )
    selected.assert_outcomes(passed=1)
    baseline = json.loads((pytester.path / "baselines" / "models" / "mlp.onnx.json").read_text())
    assert list(baseline["entries"]) == ["accuracy[cpu-all]"]
    (record,) = json.loads((pytester.path / "r.json").read_text())["checks"]
    assert (record["test"], record["kind"], record["verdict"]) == (
        "models/mlp.onnx::accuracy[cpu-all]",
        "accuracy",
        "new",
    )
    by_id = pytester.runpytest("models/mlp.onnx::accuracy[cpu-all]", "-v")
    by_id.assert_outcomes(passed=1)
    deselected = pytester.runpytest(
        "--deselect", "models/mlp.onnx::latency[cpu-all]", "-k", "mlp and cpu-all"
    )
    deselected.assert_outcomes(passed=2, deselected=10)


def test_under_xdist_every_item_runs_once(pytester: pytest.Pytester, models: Path) -> None:
    result = pytester.runpytest("-n", "2", "--ortperf-checks=accuracy,graph")
    result.assert_outcomes(passed=8)


def test_per_model_tables_most_specific_first_and_bad_keys_fail_only_their_models(
    pytester: pytest.Pytester, models: Path
) -> None:
    pytester.makefile(
        ".toml",
        pyproject="""
        [tool.ortperf.models."models/*.onnx"]
        opt_levels = ["all"]
        dims = {batch = 2}

        [tool.ortperf.models."models/small.onnx"]
        dims = {batch = 5}
        skip = "retired, kept for the record"
        """,
    )
    (models / "ortperf.toml").write_text(
        '[models."mlp.onnx"]\ndims = {batch = 3}\nthresholds = {atol = 1e-3}\n'
    )
    pytester.makeconftest(
        """
        def pytest_ortperf_session_built(built):
            print("BUILT", built.model.label, built.variant.id)
        """
    )
    result = pytester.runpytest("--ortperf-checks=accuracy", "-s", "-rs", "--ortperf-report=r.json")
    result.assert_outcomes(passed=1, skipped=1)  # only 'all' (pyproject); small.onnx skipped
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] models/small.onnx*: retired, kept for the record"])
    (record,) = [
        c for c in json.loads((pytester.path / "r.json").read_text())["checks"] if c["kind"] == "accuracy"
    ]
    (reference,) = [r for r in record["references"] if r["reference"].startswith("variant")]
    assert reference["outputs"][0]["tolerance"]["atol"] == 0.001  # ortperf.toml beats pyproject.toml
    # the batch of ortperf.toml, the more specific file: 3 rows
    (models / "ortperf.toml").write_text('[models."mlp.onnx"]\ndims = {batch = 3}\nbatch_size = 4\n')
    bad = pytester.runpytest("--ortperf-checks=accuracy")
    bad.assert_outcomes(failed=1, skipped=1)
    bad.stdout.fnmatch_lines(
        [
            '*models/ortperf.toml [[]models."mlp.onnx"[]]: unknown key(s) batch_size; a model table takes shapes, dims,*'
        ]
    )
    (models / "ortperf.toml").write_text('[models."mlp.onnx"]\nopt_levels = ["fastest"]\n')
    bad_value = pytester.runpytest("--ortperf-checks=accuracy")
    bad_value.stdout.fnmatch_lines(
        [
            "*models/ortperf.toml [[]models.\"mlp.onnx\"[]] opt_levels: unknown graph optimization level 'fastest'*"
        ]
    )


def test_files_that_are_not_models_fail_only_their_own_items(pytester: pytest.Pytester, models: Path) -> None:
    (models / "notes.onnx").write_text("not a model")
    damaged = (models / "mlp.onnx").read_bytes()
    (models / "damaged.onnx").write_bytes(damaged[: len(damaged) // 2])
    result = pytester.runpytest("--ortperf-checks=accuracy", "--ort-opt-levels=all")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "FAILED models/damaged.onnx::accuracy[[]cpu-all[]] - *",
            "FAILED models/notes.onnx::accuracy[[]cpu-all[]] - *",
        ]
    )


def _repository(folder: Path) -> None:
    """A git repository in ``folder``, with an author for its commits."""
    for args in (("init", "-q"), ("config", "user.name", "T"), ("config", "user.email", "t@example.com"),
                 ("config", "commit.gpgsign", "false")):  # fmt: skip
        subprocess.run(["git", *args], cwd=folder, check=True)


def _commit(folder: Path) -> None:
    """Commit everything in ``folder``."""
    subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "models"], cwd=folder, check=True)


# ortperf init -------------------------------------------------------------------


def _init(path: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert ortperf(["init", str(path), *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("ci", "workflow", "steps"),
    [("github", ".github/workflows/ortperf.yml", lambda doc: doc["jobs"]["gate"]["steps"]),
     ("gitlab", ".gitlab-ci.yml", lambda doc: doc["ortperf-gate"]["script"]),
     ("azure", "azure-pipelines.yml", lambda doc: doc["steps"])],
)  # fmt: skip
def test_init_writes_the_configuration_and_a_workflow_that_parses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ci: str, workflow: str, steps: Any
) -> None:
    (tmp_path / "models" / "zoo" / "resnet").mkdir(parents=True)
    (tmp_path / "models" / "zoo" / "resnet" / "test_data_set_0").mkdir()
    onnx.save(mlp_model(), tmp_path / "models" / "zoo" / "resnet" / "model.onnx")
    onnx.save(mlp_model(), tmp_path / "models" / "mlp.onnx")
    (tmp_path / ".venv").mkdir()
    onnx.save(mlp_model(), tmp_path / ".venv" / "ignored.onnx")  # an environment's files are not models
    out = _init(tmp_path, "--ci", ci, "--providers", "cpu,cuda", capsys=capsys)
    assert out.splitlines()[:3] == ["wrote pytest.ini", "wrote .gitignore", f"wrote {workflow}"]
    assert out.rstrip().splitlines()[-2:] == [
        "  ortperf update    # record the baselines (then commit baselines/)",
        "  pytest            # the gate: fails a model that got slower or less accurate",
    ]
    ini = (tmp_path / "pytest.ini").read_text()
    assert "ortperf_models =\n    models/*.onnx\n    models/zoo/*\n" in ini
    assert "ortperf_providers = cpu,cuda\n" in ini
    document = yaml.safe_load((tmp_path / workflow).read_text())
    text = json.dumps(steps(document))
    assert "pip install" in text
    assert "--ortperf-ab=auto" in text
    assert "--ortperf-report=ortperf-report.json" in text
    assert ".ortperf" in (tmp_path / workflow).read_text()  # the model cache and runtimes are kept


def test_init_never_overwrites_and_prints_what_it_would_add(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "models").mkdir()
    onnx.save(mlp_model(), tmp_path / "models" / "mlp.onnx")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    (tmp_path / ".gitignore").write_text("*.pyc\n")
    out = _init(tmp_path, capsys=capsys)
    assert (tmp_path / "pyproject.toml").read_text() == '[project]\nname = "mine"\n'
    assert (tmp_path / ".gitignore").read_text() == "*.pyc\n"
    assert "pyproject.toml exists and was left as it is; add this to it:" in out
    assert '    ortperf_models = ["models/*.onnx"]' in out
    assert ".gitignore exists and was left as it is; add this to it:\n\n    .ortperf/" in out
    again = _init(tmp_path, capsys=capsys)
    assert ".github/workflows/ortperf.yml exists and was left as it is" in again
    assert ortperf(["init", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: not a folder." in capsys.readouterr().err


@pytest.mark.slow
def test_init_then_record_then_gate_passes_and_fails_on_a_slower_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The three commands on a fresh folder of models, then a model that got slower."""
    (tmp_path / "models").mkdir()
    onnx.save(mlp_model(layers=8, width=128), tmp_path / "models" / "mlp.onnx")
    _repository(tmp_path)
    _init(tmp_path, capsys=capsys)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "--ortperf-checks=latency",
            *args,
        ]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)

    recorded = run("--ortperf-update")
    assert recorded.returncode == 0, recorded.stdout[-2000:]
    _commit(tmp_path)
    gate = run()
    assert gate.returncode == 0, gate.stdout[-2000:]
    onnx.save(mlp_model(layers=32, width=128), tmp_path / "models" / "mlp.onnx")  # four times the work
    slower = run()
    assert slower.returncode == 1, slower.stdout[-2000:]
    assert "latency regression in latency[cpu-" in slower.stdout


def test_a_collected_model_is_compared_with_its_file_at_a_revision_in_ab_mode(
    pytester: pytest.Pytester, models: Path
) -> None:
    _repository(pytester.path)
    _commit(pytester.path)
    onnx.save(mlp_model(layers=2, width=16, seed=5), models / "mlp.onnx")  # re-exported: other weights
    result = pytester.runpytest(
        "--ortperf-ab=HEAD", "--ortperf-checks=latency", "-k", "cpu-all", "--ortperf-report=r.json"
    )
    checks = {(c["test"], c["kind"]): c for c in json.loads((pytester.path / "r.json").read_text())["checks"]}
    small = checks[("models/small.onnx::latency[cpu-all]", "latency")]
    assert small["verdict"] == "identical to reference"
    mlp = checks[("models/mlp.onnx::latency[cpu-all]", "latency")]
    assert mlp["mode"] == "a/b"
    assert mlp["reference"]["label"] == "HEAD:models/mlp.onnx"
    # the re-export's outputs differ from the committed model's: the A/B outputs check says so
    assert checks[("models/mlp.onnx::latency[cpu-all]", "accuracy")]["verdict"] == "failed"
    assert result.ret == 1


def test_a_model_table_declares_contracts_measured_in_their_own_item(
    pytester: pytest.Pytester, models: Path
) -> None:
    pytester.makefile(
        ".toml",
        pyproject="""
        [tool.ortperf.models."models/mlp.onnx"]
        opt_levels = ["all"]
        contracts = {agreement = {"cpu-disabled" = 0.99}}
        """,
    )
    result = pytester.runpytest("--ortperf-checks=graph", "-k", "mlp", "--ortperf-report=r.json", "-v")
    result.stdout.fnmatch_lines(["models/mlp.onnx::contracts[[]cpu-all[]] PASSED*"])
    (record,) = [
        c for c in json.loads((pytester.path / "r.json").read_text())["checks"] if c["kind"] == "contract"
    ]
    assert record["contract"]["source"] == 'pyproject.toml [tool.ortperf.models."models/mlp.onnx"] contracts'
    assert record["agreement"] == 1.0


def test_a_glob_that_cannot_be_used_is_a_usage_error_naming_it(pytester: pytest.Pytester, models: Path) -> None:
    result = pytester.runpytest("--ortperf-models=/abs/*.onnx")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ortperf_models: cannot use the glob '/abs/*.onnx' (*); write it relative to*"])
