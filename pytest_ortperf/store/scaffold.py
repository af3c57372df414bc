"""``ortperf init``: a starting configuration for a repository of models, written beside them.

It finds the models (``*.onnx`` files and model-zoo folders), writes the pytest configuration that
collects them as tests (``ortperf_models``), a ``.gitignore`` line for ``.ortperf/`` and a CI
workflow, and never overwrites a file: where one exists, it prints what it would add instead.
Plain logic: no pytest here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_ortperf.errors import UsageError

SKIPPED_FOLDERS = {
    ".git",
    ".ortperf",
    ".venv",
    "venv",
    "node_modules",
    "site-packages",
    "__pycache__",
    "baselines",
}
INI_FILES = ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
CI_FILES = {
    "github": Path(".github/workflows/ortperf.yml"),
    "gitlab": Path(".gitlab-ci.yml"),
    "azure": Path("azure-pipelines.yml"),
}
GITIGNORE_LINE = ".ortperf/"
NEXT_STEPS = (
    "ortperf update    # record the baselines (then commit baselines/)",
    "pytest            # the gate: fails a model that got slower or less accurate",
)


@dataclass(frozen=True)
class Change:
    """One file ``init`` writes, or would add to when it exists."""

    path: Path
    text: str
    written: bool  # False: the file exists and was left as it is; ``text`` is what to add by hand


def model_globs(root: Path) -> list[str]:
    """One glob per folder that holds models: ``models/*.onnx`` for model files, ``models/*`` for
    model-zoo folders (``model.onnx`` beside ``test_data_set_*``), relative to ``root``. Environments,
    baselines and hidden folders are not entered (a virtual environment holds thousands of files)."""
    globs: list[str] = []
    for folder, subfolders, files in os.walk(root):  # top-down: pruned folders are never entered
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS and not d.startswith("."))
        relative = Path(folder).relative_to(root)
        for name in sorted(f for f in files if f.endswith(".onnx")):
            zoo = name == "model.onnx" and any(d.startswith("test_data_set_") for d in subfolders)
            glob = (relative.parent / "*").as_posix() if zoo else (relative / "*.onnx").as_posix()
            if glob not in globs:
                globs.append(glob)
    return globs


def init(root: Path, *, ci: str = "github", providers: Sequence[str] = ("cpu",)) -> list[Change]:
    """Write the configuration for the models under ``root``; existing files are left untouched."""
    if ci not in CI_FILES:
        raise UsageError(f"--ci: expected one of {', '.join(CI_FILES)}, got {ci!r}.")
    if not root.is_dir():
        raise UsageError(f"{root}: not a folder.")
    globs = model_globs(root)
    if not globs:
        raise UsageError(
            f"{root}: no *.onnx file or model-zoo folder found (folders such as .venv are skipped)."
        )
    changes = [_configuration(root, globs, providers), _gitignore(root)]
    changes.append(_write(root / CI_FILES[ci], _workflow(ci)))
    return changes


def report(changes: Sequence[Change], root: Path) -> str:
    """What ``init`` did and would do, then the two commands that follow it."""
    lines = []
    for change in changes:
        shown = (
            change.path.relative_to(root).as_posix() if change.path.is_relative_to(root) else str(change.path)
        )
        if change.written:
            lines.append(f"wrote {shown}")
        elif not change.text:
            lines.append(f"{shown} already has what it needs")
        else:
            lines += [f"{shown} exists and was left as it is; add this to it:", ""]
            lines += [f"    {line}" if line else "" for line in change.text.rstrip("\n").splitlines()]
            lines.append("")
    lines += ["", "Next:", *(f"  {step}" for step in NEXT_STEPS)]
    return "\n".join(lines) + "\n"


def _configuration(root: Path, globs: Sequence[str], providers: Sequence[str]) -> Change:
    existing = next((root / name for name in INI_FILES if (root / name).is_file()), None)
    provider_list = ",".join(providers)
    if existing is not None and existing.name == "pyproject.toml":
        quoted = ", ".join(f'"{glob}"' for glob in globs)
        text = (
            "[tool.pytest.ini_options]\n"
            f"ortperf_models = [{quoted}]\n"
            f'ortperf_providers = "{provider_list}"\n'
            'ortperf_opt_levels = "disabled,all"\n'
        )
        return Change(existing, text, written=False)
    lines = "".join(f"    {glob}\n" for glob in globs)
    body = (
        "# pytest-ortperf: each model below is collected as tests, one per check and variant\n"
        '# (models/m.onnx::latency[cpu-all]); per-model settings go in [tool.ortperf.models."GLOB"]\n'
        "# tables of pyproject.toml or an ortperf.toml beside the models.\n"
        f"ortperf_models =\n{lines}"
        f"ortperf_providers = {provider_list}\n"
        "ortperf_opt_levels = disabled,all\n"
    )
    if existing is not None:
        section = "[tool:pytest]" if existing.name == "setup.cfg" else "[pytest]"
        return Change(existing, f"{section}\n{body}", written=False)
    return _write(root / "pytest.ini", f"[pytest]\n{body}")


def _gitignore(root: Path) -> Change:
    path = root / ".gitignore"
    text = f"{GITIGNORE_LINE}\n"
    if path.exists():
        present = GITIGNORE_LINE in path.read_text(encoding="utf-8", errors="replace").splitlines()
        return Change(path, "" if present else text, written=False)
    return _write(path, "# traces, the model cache, reference runtimes: never commit them\n" + text)


def _write(path: Path, text: str) -> Change:
    if path.exists():
        return Change(path, text, written=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as stream:  # "x": never replaces a file made meanwhile
        stream.write(text)
    return Change(path, text, written=True)


INSTALL = 'python -m pip install "pytest-ortperf[gpu]"'
AB = "pytest --ortperf-ab=auto --ortperf-report=ortperf-ab.json"
GATE = (
    "pytest --ortperf-update=missing --ortperf-model-cache=.ortperf/models "
    "--ortperf-report=ortperf-report.json --ortperf-html=ortperf-report.html "
    "--ortperf-markdown=ortperf-summary.md --junitxml=ortperf-junit.xml"
)


def _workflow(ci: str) -> str:
    """A workflow that runs the side-by-side gate on pull requests and the baseline gate on every
    push, caches the model cache and the reference runtimes, and keeps reports and traces."""
    if ci == "github":
        return f"""# pytest-ortperf: the ONNX model gate (written by ortperf init).
name: ortperf
on:
  pull_request:
  push:
    branches: [main]
jobs:
  gate:
    runs-on: ubuntu-24.04
    env:
      ORTPERF_MACHINE: gha-ubuntu-24.04-x64  # one name for this runner class
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # A/B mode reads the base branch's models with git
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - name: Install
        run: {INSTALL}
      - name: Model cache and reference runtimes
        uses: actions/cache@v4
        with:
          path: |
            .ortperf/models
            .ortperf/envs
          key: ortperf-${{{{ runner.os }}}}-${{{{ github.sha }}}}
          restore-keys: ortperf-${{{{ runner.os }}}}-
      - name: Pull requests - each changed model side by side with the base branch's
        if: github.event_name == 'pull_request'
        run: {AB}
      - name: The gate against the committed baselines
        run: {GATE}
      - name: Reports and traces
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: ortperf-reports
          path: |
            ortperf-*.json
            ortperf-*.html
            ortperf-*.md
            ortperf-junit.xml
            .ortperf/profiles
"""
    if ci == "gitlab":
        return f"""# pytest-ortperf: the ONNX model gate (written by ortperf init).
ortperf-gate:
  image: python:3.12
  variables:
    ORTPERF_MACHINE: gitlab-saas-linux-x64  # one name for this runner class
    GIT_DEPTH: "0"  # A/B mode reads the base branch's models with git
  cache:
    key: ortperf
    paths:
      - .ortperf/models
      - .ortperf/envs
  script:
    - {INSTALL}
    - if [ -n "$CI_MERGE_REQUEST_IID" ]; then {AB}; fi
    - {GATE}
  artifacts:
    when: always
    paths:
      - ortperf-report.json
      - ortperf-report.html
      - ortperf-summary.md
      - .ortperf/profiles
    reports:
      junit: ortperf-junit.xml
"""
    return f"""# pytest-ortperf: the ONNX model gate (written by ortperf init).
trigger:
  - main
pr:
  - main
pool:
  vmImage: ubuntu-24.04
variables:
  ORTPERF_MACHINE: azure-ubuntu-24.04-x64  # one name for this runner class
steps:
  - checkout: self
    fetchDepth: 0  # A/B mode reads the base branch's models with git
  - task: UsePythonVersion@0
    inputs:
      versionSpec: "3.12"
  - task: Cache@2
    inputs:
      key: ortperf | "$(Agent.OS)"
      path: .ortperf
  - script: {INSTALL}
    displayName: Install
  - script: {AB}
    displayName: Pull requests - each changed model side by side with the base branch's
    condition: eq(variables['Build.Reason'], 'PullRequest')
  - script: {GATE}
    displayName: The gate against the committed baselines
  - task: PublishTestResults@2
    condition: always()
    inputs:
      testResultsFiles: ortperf-junit.xml
  - publish: .ortperf/profiles
    artifact: ortperf-traces
    condition: always()
  - publish: ortperf-report.html
    artifact: ortperf-report
    condition: always()
"""
