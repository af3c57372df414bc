"""A folder of models gated without Python: collection, selection, per-model tables, bad files, and
``ortperf init``; real models, real sessions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest
import yaml

from pytest_ortperf.cli import main as ortperf
from tests.exported_models import detector_model
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


def _repository(folder: Path, *, branch: str = "") -> None:
    """A git repository in ``folder`` (on ``branch``, else git's default), with an author for its commits."""
    init = ("init", "-q", *(("-b", branch) if branch else ()))
    for args in (init, ("config", "user.name", "T"), ("config", "user.email", "t@example.com"),
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


def _github(document: dict[Any, Any]) -> dict[str, Any]:
    jobs, on = document["jobs"], document[True]  # YAML 1.1 reads the key `on` as true

    def runs(job: str) -> list[str]:
        return [step["run"] for step in jobs[job]["steps"] if "run" in step]

    kept = [
        s["with"]["path"] for s in jobs["record"]["steps"] if s.get("uses", "").startswith("actions/upload")
    ]
    return {
        "gate": runs("gate"),
        "record": runs("record"),
        "install": [s["run"] for job in jobs.values() for s in job["steps"] if s.get("name") == "Install"],
        "branches": [on["push"]["branches"], on["pull_request"]["branches"]],
        "kept": kept,
    }


def _gitlab(document: dict[Any, Any]) -> dict[str, Any]:
    gate, record = document["ortperf-gate"], document["ortperf-record"]
    rules = [rule["if"] for job in (gate, record) for rule in job["rules"]]
    return {
        "gate": gate["script"],
        "record": record["script"],
        "install": document[".ortperf"]["before_script"],
        "branches": [[rule.split('"')[1]] for rule in rules if "$CI_COMMIT_BRANCH" in rule],
        "kept": record["artifacts"]["paths"],
    }


def _azure(document: dict[Any, Any]) -> dict[str, Any]:
    jobs = {job["job"]: job["steps"] for job in document["jobs"]}
    return {
        "gate": [step["script"] for step in jobs["gate"] if "script" in step],
        "record": [step["script"] for step in jobs["record"] if "script" in step],
        "install": [
            step["script"]
            for steps in jobs.values()
            for step in steps
            if step.get("displayName") == "Install"
        ],
        "branches": [document[key]["branches"]["include"] for key in ("trigger", "pr")]
        + [schedule["branches"]["include"] for schedule in document["schedules"]],
        "kept": [step["publish"] for step in jobs["record"] if "publish" in step],
    }


@pytest.mark.parametrize(
    ("ci", "workflow", "read"),
    [("github", ".github/workflows/ortperf.yml", _github),
     ("gitlab", ".gitlab-ci.yml", _gitlab),
     ("azure", "azure-pipelines.yml", _azure)],
)  # fmt: skip
@pytest.mark.parametrize(("providers", "extra"), [("cpu,cuda", "gpu"), ("cpu", "cpu")])
def test_init_writes_the_configuration_and_a_workflow_that_parses(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    ci: str,
    workflow: str,
    read: Any,
    providers: str,
    extra: str,
) -> None:
    (tmp_path / "models" / "zoo" / "resnet").mkdir(parents=True)
    (tmp_path / "models" / "zoo" / "resnet" / "test_data_set_0").mkdir()
    onnx.save(mlp_model(), tmp_path / "models" / "zoo" / "resnet" / "model.onnx")
    onnx.save(mlp_model(), tmp_path / "models" / "mlp.onnx")
    (tmp_path / ".venv").mkdir()
    onnx.save(mlp_model(), tmp_path / ".venv" / "ignored.onnx")  # an environment's files are not models
    _repository(tmp_path, branch="master")  # a repository whose branch is master, not main
    out = _init(tmp_path, "--ci", ci, "--providers", providers, capsys=capsys)
    assert out.splitlines()[:3] == [
        "wrote pytest.ini",
        "wrote .gitignore",
        f"wrote {workflow} (branch master, from the branch checked out; installs pytest-ortperf[{extra}])",
    ]
    assert out.rstrip().splitlines()[-3:] == [
        "  git add . && git commit -m 'Gate the models'   # first: committed models record fast",
        "  ortperf update    # record the baselines (then commit baselines/)",
        "  pytest            # the gate: fails a model that got slower or less accurate",
    ]
    ini = (tmp_path / "pytest.ini").read_text()
    assert "ortperf_models =\n    models/*.onnx\n    models/zoo/*\n" in ini
    assert f"ortperf_providers = {providers}\n" in ini
    found = read(yaml.safe_load((tmp_path / workflow).read_text()))
    assert found["install"]
    assert all(f'"pytest-ortperf[{extra}]"' in command for command in found["install"])
    assert found["branches"]
    assert all(branches == ["master"] for branches in found["branches"])
    # The gate: side by side on pull requests, then against the committed baselines; it never writes.
    gate = " ".join(found["gate"])
    assert "--ortperf-ab=auto" in gate
    assert "--ortperf-report=ortperf-report.json" in gate
    assert "--ortperf-update" not in gate
    # Recording is a job of its own, and what it records is kept for ortperf merge.
    assert [command for command in found["record"] if "pytest --ortperf-update=missing " in command]
    assert found["kept"] in (["baselines/"], ["baselines"])
    assert ".ortperf" in (tmp_path / workflow).read_text()  # the model cache and runtimes are kept


@pytest.mark.parametrize("ci", ["github", "gitlab", "azure"])
def test_init_in_a_repository_with_git_lfs_checks_the_lfs_objects_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ci: str
) -> None:
    """A model kept in Git LFS is a pointer in a checkout without its objects: every check would fail.
    A repository whose .gitattributes names filter=lfs gets workflows that check the objects out."""
    (tmp_path / "models").mkdir()
    onnx.save(mlp_model(), tmp_path / "models" / "mlp.onnx")
    _repository(tmp_path, branch="main")
    paths = {
        "github": ".github/workflows/ortperf.yml",
        "gitlab": ".gitlab-ci.yml",
        "azure": "azure-pipelines.yml",
    }
    plain = yaml.safe_load(_written(tmp_path, ci, paths[ci], capsys))
    (tmp_path / ".gitattributes").write_text("*.onnx filter=lfs diff=lfs merge=lfs -text\n")
    out = _init(tmp_path, "--ci", ci, capsys=capsys)
    assert "checks out the Git LFS objects" in out.splitlines()[2]
    lfs = yaml.safe_load((tmp_path / paths[ci]).read_text())
    if ci == "github":
        for document in (plain, lfs):
            checkouts = [
                s
                for job in document["jobs"].values()
                for s in job["steps"]
                if "checkout" in s.get("uses", "")
            ]
            assert len(checkouts) == 2
            assert all(bool(step["with"].get("lfs")) is (document is lfs) for step in checkouts)
    elif ci == "azure":
        checkouts = [s for job in lfs["jobs"] for s in job["steps"] if "checkout" in s]
        assert checkouts
        assert all(step["lfs"] is True for step in checkouts)
        assert "lfs" not in str(plain)
    else:
        assert any("git lfs pull" in line for line in lfs[".ortperf"]["before_script"])
        assert not any("git-lfs" in line for line in plain[".ortperf"]["before_script"])


def _written(root: Path, ci: str, path: str, capsys: pytest.CaptureFixture[str]) -> str:
    """The workflow ``ortperf init --ci ci`` writes in ``root``, then removed so init can write it again."""
    _init(root, "--ci", ci, capsys=capsys)
    text = (root / path).read_text()
    for written in (root / path, root / "pytest.ini", root / ".gitignore"):
        written.unlink()
    return text


def test_init_appends_its_gitignore_line_and_names_inputs_to_size_before_the_first_update(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An existing .gitignore gains the .ortperf/ line (a list of patterns: nothing is lost), once;
    a model whose input nothing sizes (an exporter's [?, 3, ?, ?]) is named before anything fails."""
    (tmp_path / "models").mkdir()
    onnx.save(mlp_model(), tmp_path / "models" / "mlp.onnx")
    onnx.save(detector_model(), tmp_path / "models" / "det.onnx")
    (tmp_path / ".gitignore").write_text("*.pyc")  # no newline at its end
    out = _init(tmp_path, capsys=capsys)
    assert (tmp_path / ".gitignore").read_text().splitlines()[0] == "*.pyc"
    assert (tmp_path / ".gitignore").read_text().splitlines()[-1] == ".ortperf/"
    assert "wrote .gitignore (appended the .ortperf/ line to it)" in out
    assert "Size these inputs before the first ortperf update, or its checks of this model fail:" in out
    assert "  models/det.onnx: nothing sizes input 'x' [?, 3, ?, ?] (axes 2, 3);" in out
    assert "models/mlp.onnx" not in out.split("Size these inputs")[1].split("Next:")[0]
    again = _init(tmp_path, capsys=capsys)
    assert ".gitignore already has what it needs" in again
    assert (tmp_path / ".gitignore").read_text().count(".ortperf/") == 1


def test_init_never_overwrites_and_prints_what_it_would_add(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "models").mkdir()
    onnx.save(mlp_model(), tmp_path / "models" / "mlp.onnx")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    out = _init(tmp_path, capsys=capsys)
    assert (tmp_path / "pyproject.toml").read_text() == '[project]\nname = "mine"\n'
    assert "pyproject.toml exists and was left as it is; add this to it:" in out
    assert '    ortperf_models = ["models/*.onnx"]' in out
    again = _init(tmp_path, capsys=capsys)
    assert ".github/workflows/ortperf.yml already has what it needs" in again  # the same file
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
    assert (
        "latency regression in models/mlp.onnx::latency[cpu-" in slower.stdout
    )  # the model named, not "in latency[cpu-..."


def _gate_job(root: Path, env: dict[str, str]) -> tuple[bool, str]:
    """The gate job of the GitHub workflow ``ortperf init`` wrote, run as a pull request's runner
    would: each ``run`` step whose ``if`` holds for a pull request, in order, in a shell (the install
    step aside: this environment has the package); a failing step stops the job unless it has
    ``continue-on-error``. (Whether the job passed, everything it printed.)"""
    document = yaml.safe_load((root / ".github" / "workflows" / "ortperf.yml").read_text())
    env = {**env, **document["env"]}
    passed, printed = True, []
    for step in document["jobs"]["gate"]["steps"]:
        if "run" not in step or step.get("name") == "Install":
            continue
        assert step.get("if", "github.event_name == 'pull_request'") == "github.event_name == 'pull_request'"
        done = subprocess.run(["bash", "-c", step["run"]], cwd=root, env=env, capture_output=True, text=True)
        printed.append(f"--- {step['name']}: exit {done.returncode}\n{done.stdout}{done.stderr}")
        if done.returncode != 0 and not step.get("continue-on-error"):
            passed = False
            break
    return passed, "\n".join(printed)


@pytest.mark.slow
def test_the_written_workflow_goes_green_once_a_change_is_accepted_and_still_reports_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pull request re-exports a model (other weights): the job fails until the change is accepted
    with the commands its failure prints, then passes, and the A/B step still reports the change."""
    (tmp_path / "models").mkdir()
    onnx.save(mlp_model(layers=2, width=16), tmp_path / "models" / "mlp.onnx")
    _repository(tmp_path, branch="main")
    _init(tmp_path, "--ci", "github", capsys=capsys)
    bin_dir = str(Path(sys.executable).parent)  # pytest and ortperf of this environment
    quick = "--ortperf-budget=0.2 --ortperf-ab-budget=0.3 --ortperf-max-cv=1000% --ortperf-checks=latency,accuracy"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTEST_ADDOPTS": f"-p no:cacheprovider --ort-opt-levels=all {quick}",
        "GITHUB_BASE_REF": "main",  # a pull request into main
        "GITHUB_EVENT_NAME": "pull_request",
    }
    recorded = subprocess.run(["ortperf", "update"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert recorded.returncode == 0, recorded.stdout[-3000:]
    _commit(tmp_path)
    subprocess.run(["git", "checkout", "-q", "-b", "pr"], cwd=tmp_path, check=True)
    onnx.save(mlp_model(layers=2, width=16, seed=5), tmp_path / "models" / "mlp.onnx")  # re-exported
    _commit(tmp_path)

    passed, printed = _gate_job(tmp_path, env)
    assert not passed, printed
    gate_output = printed.split("--- The gate against the committed baselines")[1]
    printed_commands = r"to accept the [a-z ]+: ((?:[A-Z_]+=\S+ )*ortperf update '[^\n]*)"
    accepts = sorted(set(re.findall(printed_commands, gate_output)))
    assert accepts, gate_output
    for command in accepts:  # the commands the gate's failures print, as a shell runs them
        accepted = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert accepted.returncode == 0, accepted.stdout[-3000:]
    _commit(tmp_path)

    passed, printed = _gate_job(tmp_path, env)
    assert passed, printed
    ab_step = printed.split("--- The gate against the committed baselines")[0]
    assert ": exit 1" in ab_step.splitlines()[0], "the A/B step still fails on the change it reports"
    assert "outputs of models/mlp.onnx::latency[cpu-all] against merge-base with main" in ab_step
    # how it is accepted: the model's checks recorded (its accuracy items hold the outputs the gate reads)
    accept = r"to accept the current outputs: (\S+=\S+ )*ortperf update models/mlp.onnx\b"
    assert re.search(accept, ab_step), ab_step
    checks = json.loads((tmp_path / "ortperf-ab.json").read_text())["checks"]
    outputs = [
        c for c in checks if (c["test"], c["kind"]) == ("models/mlp.onnx::latency[cpu-all]", "accuracy")
    ]
    assert [c["verdict"] for c in outputs] == ["failed"]  # the report keeps the change


def test_a_collected_model_is_compared_with_its_file_at_a_revision_in_ab_mode(
    pytester: pytest.Pytester, models: Path
) -> None:
    _repository(pytester.path)
    _commit(pytester.path)
    onnx.save(mlp_model(layers=2, width=16, seed=5), models / "mlp.onnx")  # re-exported: other weights
    result = pytester.runpytest(
        "--ortperf-ab=HEAD", "--ortperf-checks=latency", "-k", "cpu-all", "--ortperf-report=r.json", "-rf"
    )
    # What pytest's short summary shows of a latency item failing on its outputs names the outputs,
    # not "accuracy of latency[...", which reads as a slowdown (at 80 columns it stops about there).
    (summary,) = [line for line in result.outlines if line.startswith("FAILED models/mlp.onnx::")]
    assert summary.startswith("FAILED models/mlp.onnx::latency[cpu-all] - Failed: outputs of models/mlp.onnx")
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


def test_a_glob_that_cannot_be_used_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, models: Path
) -> None:
    result = pytester.runpytest("--ortperf-models=/abs/*.onnx")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*ortperf_models: cannot use the glob '/abs/*.onnx' (*); write it relative to*"]
    )


def test_a_glob_that_matches_no_model_is_a_usage_error_naming_it_and_its_source(
    pytester: pytest.Pytester, models: Path
) -> None:
    """A typo'd glob used to give 'collected 0 items' (exit 5) and, beside a good glob, fewer models
    without a word: a gate that collects nothing passes. It is a usage error naming glob and source."""
    ini = pytester.path / "pytest.ini"
    ini.write_text(INI.replace("models/*.onnx", "modles/*.onnx"), encoding="utf-8")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*ortperf_models in {ini}: the glob 'modles/*.onnx' matches no model file under {pytester.path} "
         "(it matches nothing); fix or remove it."]
    )  # fmt: skip
    ini.write_text(INI.replace("models/*.onnx", "models/*.onnx\n    zoo/*"), encoding="utf-8")
    (pytester.path / "zoo" / "notes").mkdir(parents=True)  # a folder without model.onnx
    one_bad = pytester.runpytest("--collect-only")
    assert one_bad.ret == pytest.ExitCode.USAGE_ERROR
    one_bad.stderr.fnmatch_lines(
        ["*the glob 'zoo/[*]' matches no model file under * (it matches 1 path(s), none a [*].onnx file or a "
         "folder holding model.onnx (e.g. notes)); fix or remove it."]
    )  # fmt: skip
    cli = pytester.runpytest("--ortperf-models=models/*.onxx")
    assert cli.ret == pytest.ExitCode.USAGE_ERROR
    cli.stderr.fnmatch_lines(["*--ortperf-models: the glob 'models/[*].onxx' matches no model file under *"])


def test_a_model_dvc_keeps_that_is_not_pulled_is_a_usage_error_naming_dvc_pull(
    pytester: pytest.Pytester, models: Path
) -> None:
    """A fresh clone without ``dvc pull`` holds a model's pointer only: that model would be left out of
    the gate without a word; it is named, with the command that fetches it."""
    (pytester.path / "pytest.ini").write_text(INI, encoding="utf-8")
    (pytester.path / "models" / "big.onnx.dvc").write_text(
        "outs:\n- md5: " + "0" * 32 + "\n  path: big.onnx\n"
    )
    result = pytester.runpytest("--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*ortperf_models in *pytest.ini: models/big.onnx is kept in DVC (big.onnx.dvc) and is not in the work "
         "tree: run dvc pull (pip install 'pytest-ortperf[[]dvc[]]' brings DVC)."]
    )  # fmt: skip
    (pytester.path / "models" / "big.onnx.dvc").unlink()  # a pipeline's output instead, not pulled
    (pytester.path / "dvc.lock").write_text(
        "schema: '2.0'\nstages:\n  export:\n    outs:\n    - path: models/big.onnx\n      md5: "
        + "0" * 32
        + "\n"
    )
    piped = pytester.runpytest("--collect-only")
    assert piped.ret == pytest.ExitCode.USAGE_ERROR
    piped.stderr.fnmatch_lines(["*models/big.onnx is kept in DVC (dvc.lock) and is not in the work tree*"])
    onnx.save(mlp_model(), pytester.path / "models" / "big.onnx")  # pulled
    pulled = pytester.runpytest("--collect-only", "-q")
    assert pulled.ret == pytest.ExitCode.OK
    pulled.stdout.fnmatch_lines(["*models/big.onnx::latency*"])


def test_an_unmatched_ini_glob_only_warns_when_the_run_names_its_own_tests(
    pytester: pytest.Pytester, models: Path
) -> None:
    (pytester.path / "pytest.ini").write_text(INI.replace("models/*.onnx", "modles/*.onnx"), encoding="utf-8")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("test_plain.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["ortperf WARNING: ortperf_models in *pytest.ini: the glob 'modles/[*].onnx' matches no model file*"]
    )


def test_init_run_twice_changes_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second init offers no block to paste that the files already hold (pasting it made a second
    [pytest] section), and a workflow edited since is named as different, never as one to add to."""
    (tmp_path / "models").mkdir()
    onnx.save(mlp_model(), tmp_path / "models" / "mlp.onnx")
    _init(tmp_path, capsys=capsys)
    files = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    again = _init(tmp_path, capsys=capsys)
    assert {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()} == files
    for name in ("pytest.ini", ".gitignore", ".github/workflows/ortperf.yml"):
        assert f"{name} already has what it needs" in again, again
    assert "add this to it" not in again
    workflow = tmp_path / ".github" / "workflows" / "ortperf.yml"
    workflow.write_text(workflow.read_text() + "# mine\n")
    edited = _init(tmp_path, capsys=capsys)
    assert (
        ".github/workflows/ortperf.yml exists and differs from what init writes; it was left as it is."
        in edited
    )
    assert workflow.read_text().endswith("# mine\n")


@pytest.mark.slow
def test_the_written_workflow_gates_a_decoder_with_generation_and_its_printed_command_accepts_a_lost_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder with a GPT-2-shaped decoder whose sequence dims nothing sizes: init collects it with the
    generation check alone, the record job records it, the gate passes; a pull request that exports it
    again without its cache fails the gate naming the decode step, until the command it prints accepts it."""
    from tests.exported_models import decoder_model

    wide = {"width": 256, "heads": 4, "vocab": 2000}
    (tmp_path / "models").mkdir()
    onnx.save(decoder_model(2, **wide), tmp_path / "models" / "gpt.onnx")
    _repository(tmp_path, branch="main")
    out = _init(tmp_path, "--ci", "github", capsys=capsys)
    assert "wrote ortperf.toml (1 decoder(s), measured with check_generation())" in out
    assert "Size these inputs" not in out
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTEST_ADDOPTS": "-p no:cacheprovider --ort-opt-levels=all --ortperf-ab-budget=0.5",
        "GITHUB_BASE_REF": "main",
        "GITHUB_EVENT_NAME": "pull_request",
    }
    recorded = subprocess.run(["ortperf", "update"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert recorded.returncode == 0, recorded.stdout[-3000:]
    assert "models/gpt.onnx::generation[cpu-all]" in recorded.stdout
    _commit(tmp_path)
    passed, printed = _gate_job(tmp_path, env)
    assert passed, printed

    subprocess.run(["git", "checkout", "-q", "-b", "pr"], cwd=tmp_path, check=True)
    onnx.save(decoder_model(2, cache=False, **wide), tmp_path / "models" / "gpt.onnx")
    _commit(tmp_path)
    passed, printed = _gate_job(tmp_path, env)
    assert not passed, printed
    gate_output = printed.split("--- The gate against the committed baselines")[1]
    assert "generation of models/gpt.onnx::generation[cpu-all]: the decode step grew" in gate_output
    printed_commands = r"to accept the new figures: ((?:[A-Z_]+=\S+ )*ortperf update '[^\n]*)"
    accepts = sorted(set(re.findall(printed_commands, gate_output)))
    assert accepts, gate_output
    for command in accepts:
        accepted = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert accepted.returncode == 0, accepted.stdout[-3000:]
    _commit(tmp_path)
    passed, printed = _gate_job(tmp_path, env)
    assert passed, printed
