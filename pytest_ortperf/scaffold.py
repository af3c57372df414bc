"""``ortperf init``: a starting configuration for a repository of models, written beside them.

It finds the models (``*.onnx`` files and model-zoo folders), writes the pytest configuration that
collects them as tests (``ortperf_models``), a ``.gitignore`` line for ``.ortperf/`` and a CI
workflow, and never overwrites a file: where one exists, it prints what it would add instead.

The workflow gates with a plain ``pytest``, which never writes baselines; on pull requests an A/B step
before it reports each changed model against the base branch's without stopping the job (the gate
decides, so a change accepted in the pull request goes green); recording is a job of its own whose
figures are kept for ``ortperf merge``. It triggers on the repository's default branch, as
git names it, and installs the CPU wheel when only the CPU provider is tested. No pytest here: the
console script's ``init`` is its only user, which is why it sits beside it rather than in ``store/``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_ortperf.errors import UsageError
from pytest_ortperf.ort.dvc_models import declared_outputs, outputs
from pytest_ortperf.ort.inputs import unsized_inputs
from pytest_ortperf.store.model_tables import ORTPERF_TOML

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
    # Committed first: figures of a model git keeps only inform and are recorded short; an uncommitted
    # model's figures will decide and are measured until settled (about ten times as long).
    "git add . && git commit -m 'Gate the models'   # first: committed models record fast",
    "ortperf update    # record the baselines (then commit baselines/)",
    "pytest            # the gate: fails a model that got slower or less accurate",
)


@dataclass(frozen=True)
class Change:
    """One file ``init`` writes, or would add to when it exists."""

    path: Path
    text: str
    written: bool  # False: the file exists and was left as it is; ``text`` is what to add by hand
    note: str = ""  # what the file was made from, shown after its line
    whole: bool = False  # ``text`` is a whole file that differs from the one there, not a block to add


def model_globs(root: Path) -> list[str]:
    """One glob per folder that holds models: ``models/*.onnx`` for model files, ``models/*`` for
    model-zoo folders (``model.onnx`` beside ``test_data_set_*``), relative to ``root``. Environments,
    baselines and hidden folders are not entered (a virtual environment holds thousands of files)."""
    globs: list[str] = []
    for folder, subfolders, files in os.walk(root):  # top-down: pruned folders are never entered
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS and not d.startswith("."))
        relative = Path(folder).relative_to(root)
        # A model DVC keeps may not be pulled here: its pointer (model.onnx.dvc) or a dvc.lock output
        # names it, and the workflows pull it.
        kept = [f.removesuffix(".dvc") for f in files if f.endswith(".onnx.dvc")]
        if "dvc.lock" in files or "dvc.yaml" in files:
            kept += _lock_models(Path(folder))
        for name in sorted({f for f in files if f.endswith(".onnx")} | set(kept)):
            if "/" in name:  # a dvc.lock output in a folder below this one
                nested = (relative / name).parent.as_posix()
                glob = f"{nested}/*.onnx" if nested != "." else "*.onnx"
                if glob not in globs:
                    globs.append(glob)
                continue
            zoo = name == "model.onnx" and any(d.startswith("test_data_set_") for d in subfolders)
            glob = (relative.parent / "*").as_posix() if zoo else (relative / "*.onnx").as_posix()
            if glob not in globs:
                globs.append(glob)
    return globs


def _lock_models(folder: Path) -> list[str]:
    """The ``*.onnx`` outputs the ``dvc.lock`` in ``folder`` names and those its ``dvc.yaml`` declares
    (a pipeline not run yet), relative to it."""
    found: list[str] = []
    for name, read in (
        ("dvc.lock", lambda t: [path for path, _ in outputs(t)]),
        ("dvc.yaml", declared_outputs),
    ):
        try:
            found += read((folder / name).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return [path for path in dict.fromkeys(found) if path.endswith(".onnx")]


def uses_dvc(root: Path) -> bool:
    """Whether the repository keeps files in DVC: a ``.dvc`` folder at ``root`` or above it, up to the
    git work tree's top. Its workflows must then pull the models (``dvc pull``): a pointer is no model."""
    for folder in (root.resolve(), *root.resolve().parents):
        if (folder / ".dvc").is_dir():
            return True
        if (folder / ".git").exists():
            break
    return False


def _model_files(root: Path) -> Iterator[Path]:
    """Every ``*.onnx`` file under ``root``, environments, baselines and hidden folders not entered."""
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED_FOLDERS and not d.startswith("."))
        for name in sorted(f for f in files if f.endswith(".onnx")):
            yield Path(folder) / name


def decoder_models(root: Path) -> list[Path]:
    """The models under ``root`` that read as decoders (``input_ids`` in, ``logits`` out, a cache fed
    back or none: ``kinds/generation.py``), which the collection measures with ``check_generation()``.
    A file that does not parse is left to the run, which names it."""
    from pytest_ortperf.kinds.generation import reads_as_decoder

    return [path for path in _model_files(root) if reads_as_decoder(path)]


def unsized_models(root: Path, *, decoders: Sequence[Path] = ()) -> list[str]:
    """For each model under ``root`` whose inputs nothing but the run's defaults would size (an
    exporter's unnamed or named dim such as ddddocr's ``image_width``): what the first ``ortperf
    update`` would fail on, and how to size it (``ort/inputs.py: unsized_message``). ``decoders``
    are left out: init collects them with the generation check alone, which feeds them itself. A
    file that does not parse is left to the run, which names it."""
    found = []
    for path in _model_files(root):
        if path in decoders:
            continue
        try:
            said = unsized_inputs(path)
        except Exception:  # not a model onnx can read: the run reports it
            continue
        if said:
            found.append(f"{path.relative_to(root).as_posix()}: {said}")
    return found


def init(
    root: Path,
    *,
    ci: str = "github",
    providers: Sequence[str] = ("cpu",),
    decoders: Sequence[Path] | None = None,
) -> list[Change]:
    """Write the configuration for the models under ``root``; existing files are left untouched.
    ``decoders``: its models that read as decoders (:func:`decoder_models`, found here when None)."""
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
    decoders = decoder_models(root) if decoders is None else decoders
    if decoders:
        changes.append(_decoder_tables(root, decoders))
    branch = default_branch(root)
    lfs, dvc = uses_lfs(root), uses_dvc(root)
    workflow = _write(root / CI_FILES[ci], _workflow(ci, branch.name, providers, lfs=lfs, dvc=dvc))
    note = f"branch {branch.name}, {branch.source}; installs pytest-ortperf[{extra(providers, dvc=dvc)}]"
    if lfs:
        note += "; checks out the Git LFS objects"
    if dvc:
        note += "; pulls the DVC-tracked models (dvc pull, from the repository's default remote)"
    changes.append(replace(workflow, note=note))
    return changes


def report(changes: Sequence[Change], root: Path, *, unsized: Sequence[str] = ()) -> str:
    """What ``init`` did and would do, the inputs to size first (``unsized``: :func:`unsized_models`),
    then the commands that follow it."""
    lines = []
    for change in changes:
        shown = (
            change.path.relative_to(root).as_posix() if change.path.is_relative_to(root) else str(change.path)
        )
        if change.written:
            lines.append(f"wrote {shown}" + (f" ({change.note})" if change.note else ""))
        elif not change.text:
            lines.append(f"{shown} already has what it needs")
        elif change.whole:
            said = f"{shown} exists and differs from what init writes; it was left as it is. "
            said += "init would write:"
            lines += [said, ""]
            lines += [f"    {line}" if line else "" for line in change.text.rstrip("\n").splitlines()]
            lines.append("")
        else:
            lines += [f"{shown} exists and was left as it is; add this to it:", ""]
            lines += [f"    {line}" if line else "" for line in change.text.rstrip("\n").splitlines()]
            lines.append("")
    if unsized:
        which = "these models" if len(unsized) > 1 else "this model"
        lines += ["", f"Size these inputs before the first ortperf update, or its checks of {which} fail:"]
        lines += [f"  {line}" for line in unsized]
    lines += ["", "Next:", *(f"  {step}" for step in NEXT_STEPS)]
    return "\n".join(lines) + "\n"


def _configuration(root: Path, globs: Sequence[str], providers: Sequence[str]) -> Change:
    existing = next((root / name for name in INI_FILES if (root / name).is_file()), None)
    provider_list = ",".join(providers)
    if existing is not None and _configured(existing):
        return Change(existing, "", written=False)  # init ran before, or the models are set by hand
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


DECODERS_NOTE = (
    "# pytest-ortperf: these models read as decoders (input_ids in, logits out, the cache fed back),\n"
    "# collected with the generation check: the prompt, then the generated tokens (time to first token,\n"
    "# per token, tokens/s). Latency, accuracy and graph run one inference at sizes they cannot guess:\n"
    "# size the inputs (shapes = {...}) before adding them to checks.\n"
)


def _decoder_tables(root: Path, decoders: Sequence[Path]) -> Change:
    """An ``ortperf.toml`` beside the models whose tables collect each decoder with ``generation``."""
    tables = "".join(
        f'[models."{path.relative_to(root).as_posix()}"]\nchecks = ["generation"]\n\n' for path in decoders
    )
    path, note = root / ORTPERF_TOML, f"{len(decoders)} decoder(s), measured with check_generation()"
    if path.exists():  # its own tables stay; these are what to add
        return Change(path, DECODERS_NOTE + tables, written=False, note=note)
    return replace(_write(path, DECODERS_NOTE + tables.rstrip("\n") + "\n"), note=note)


def _configured(path: Path) -> bool:
    """Whether the pytest configuration already names the models to collect (``ortperf_models``):
    pasting init's block again would make a second section."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return any(line.strip().startswith("ortperf_models") for line in text.splitlines())


GITIGNORE_NOTE = "# traces, the model cache, reference runtimes: never commit them\n"


def _gitignore(root: Path) -> Change:
    """A ``.gitignore`` with the ``.ortperf/`` line: written, or the line appended to the one there
    (a list of patterns: adding one loses nothing), or nothing where it has it."""
    path = root / ".gitignore"
    text = f"{GITIGNORE_LINE}\n"
    if path.exists():
        existing = path.read_text(encoding="utf-8", errors="replace")
        if GITIGNORE_LINE in (line.strip() for line in existing.splitlines()):
            return Change(path, "", written=False)
        with path.open("a", encoding="utf-8") as stream:
            stream.write(("" if not existing or existing.endswith("\n") else "\n") + GITIGNORE_NOTE + text)
        return Change(path, text, written=True, note=f"appended the {GITIGNORE_LINE} line to it")
    return _write(path, GITIGNORE_NOTE + text)


def _write(path: Path, text: str) -> Change:
    if path.exists():
        same = path.read_text(encoding="utf-8", errors="replace") == text
        return Change(path, "" if same else text, written=False, whole=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as stream:  # "x": never replaces a file made meanwhile
        stream.write(text)
    return Change(path, text, written=True)


FALLBACK_BRANCH = "main"
_BRANCH_NAME = re.compile(r"[A-Za-z0-9._/-]+")  # what the workflows can quote without escaping
WEEKLY = "0 4 * * 1"  # the record job's schedule: a new runner CPU gets its figures without a merge


@dataclass(frozen=True)
class Branch:
    """The branch the workflows gate and record on, and where its name came from."""

    name: str
    source: str  # where the name came from, as the report of ``init`` says it


def default_branch(root: Path) -> Branch:
    """The repository's default branch: the one ``origin/HEAD`` names (set by ``git clone``), else the
    branch checked out in ``root``, else ``main``. A name the workflows could not quote as it is (a
    quote, a space) is passed over for the next source."""
    asked = (
        (("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"), "from origin/HEAD"),
        (("symbolic-ref", "--quiet", "--short", "HEAD"), "from the branch checked out"),
    )
    for args, source in asked:
        try:
            done = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.SubprocessError):  # no git here: nothing more to ask
            break
        name = done.stdout.strip().removeprefix("origin/") if done.returncode == 0 else ""
        if name and _BRANCH_NAME.fullmatch(name):
            return Branch(name, source)
    return Branch(FALLBACK_BRANCH, "no git branch found, so the usual default")


def extra(providers: Sequence[str], *, dvc: bool = False) -> str:
    """The package extras the workflows install: ``cpu`` (the onnxruntime wheel) when every provider
    is the CPU one, else ``gpu`` (onnxruntime-gpu, about 340 MB, which also runs on CPU); and ``dvc``
    for a repository whose models DVC keeps."""
    runtime = "cpu" if all(provider == "cpu" for provider in providers) else "gpu"
    return f"{runtime},dvc" if dvc else runtime


REPORTS = (
    "--ortperf-report=ortperf-report.json --ortperf-html=ortperf-report.html "
    "--ortperf-markdown=ortperf-summary.md --junitxml=ortperf-junit.xml"
)
AB = "pytest --ortperf-ab=auto --ortperf-report=ortperf-ab.json"
# The A/B step reports, the gate decides: a change accepted in the pull request (``ortperf update``,
# baselines committed) passes the gate, while the base branch's model still differs, so an A/B step
# that stopped the job could never go green. An unaccepted change fails the gate, which measures a
# changed model side by side with the recorded one.
AB_REPORTS = "reports what changed against the base branch; the gate below decides"
# Echoed from a plain YAML scalar in the GitLab script: no ": " in it, or YAML reads a mapping.
AB_FAILED = "the A/B step found changes (above); the gate against the baselines decides"
# The gate never writes baselines: the committed recipes decide every check on any runner.
GATE = f"pytest --ortperf-model-cache=.ortperf/models {REPORTS}"
# Recording is its own job, and what it writes is kept: --ortperf-update=missing adds only what this
# runner's hardware lacks under unchanged recipes; a changed recipe is judged, never taken in.
RECORD = (
    "pytest --ortperf-update=missing --ortperf-model-cache=.ortperf/models "
    "--ortperf-report=ortperf-record.json"
)
KEEP = "download the artifact, run 'ortperf merge <its folder> --into baselines' and commit baselines/"


def uses_lfs(root: Path) -> bool:
    """Whether the repository keeps files in Git LFS: a ``.gitattributes`` at ``root`` or above it, up
    to the git work tree's top, names ``filter=lfs``. Its workflows must then check the LFS objects
    out: a pointer file is no model (and the gate reads recorded models from their LFS objects)."""
    for folder in (root.resolve(), *root.resolve().parents):
        attributes = folder / ".gitattributes"
        try:
            if "filter=lfs" in attributes.read_text(encoding="utf-8", errors="replace"):
                return True
        except OSError:
            pass
        if (folder / ".git").exists():
            break
    return False


# Models in DVC: pulled from the repository's default DVC remote (its credentials, where it needs them,
# are the repository's to give the job, as for any DVC pipeline).
DVC_PULL = "dvc pull"


def _workflow(ci: str, branch: str, providers: Sequence[str], *, lfs: bool = False, dvc: bool = False) -> str:
    """A workflow with two jobs. The gate, on pull requests and pushes to ``branch``: each changed
    model side by side with the base branch's (pull requests), then every check against the committed
    baselines, which it never writes. The record job, after a push to ``branch`` and weekly: adds
    what this runner's hardware lacks and keeps it as an artifact for ``ortperf merge``. Both cache
    the model cache and the reference runtimes."""
    install = f'python -m pip install "pytest-ortperf[{extra(providers, dvc=dvc)}]"'
    quoted = json.dumps(branch)  # a YAML double-quoted scalar
    # Models in Git LFS: the checkout fetches their objects (the runners' images have git-lfs; GitLab's
    # python image gets it from Debian, since the gate reads recorded models from their LFS objects).
    github_lfs = "\n          lfs: true  # the models are in Git LFS" if lfs else ""
    github_dvc = f"\n      - name: The models DVC keeps\n        run: {DVC_PULL}" if dvc else ""
    gitlab_dvc = f"\n    - {DVC_PULL}" if dvc else ""
    azure_dvc = f"\n      - script: {DVC_PULL}\n        displayName: The models DVC keeps" if dvc else ""
    azure_lfs = "\n        lfs: true  # the models are in Git LFS" if lfs else ""
    # Both GitHub jobs: the checkout with its history, Python, the install, and the caches.
    github_setup = f"""      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # changed models are measured against the recorded ones, read with git{github_lfs}
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - name: Install
        run: {install}{github_dvc}
      - name: Model cache and reference runtimes
        uses: actions/cache@v4
        with:
          path: |
            .ortperf/models
            .ortperf/envs
          key: ortperf-${{{{ runner.os }}}}-${{{{ github.sha }}}}
          restore-keys: ortperf-${{{{ runner.os }}}}-"""
    gitlab_lfs = "\n    - apt-get update -qq && apt-get install -y -qq git-lfs && git lfs pull" if lfs else ""
    if ci == "github":
        return f"""# pytest-ortperf: the ONNX model gate (written by ortperf init).
# gate: judges every change against the committed baselines; it never writes them.
# record: after a push to {branch} and weekly, records what this runner's hardware lacks (a changed
# model, setting or runtime is judged, never recorded) and keeps it as an artifact:
# {KEEP}.
name: ortperf
on:
  pull_request:
    branches: [{quoted}]
  push:
    branches: [{quoted}]
  schedule:
    - cron: "{WEEKLY}"
  workflow_dispatch:
env:
  ORTPERF_MACHINE: gha-ubuntu-24.04-x64  # one name for this runner class
jobs:
  gate:
    if: github.event_name == 'pull_request' || github.event_name == 'push'
    runs-on: ubuntu-24.04
    steps:
{github_setup}
      - name: Pull requests - each changed model beside the base branch's (reports; the gate decides)
        if: github.event_name == 'pull_request'
        continue-on-error: true  # {AB_REPORTS}
        run: {AB}
      - name: The gate against the committed baselines (never writes them)
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
  record:
    if: github.event_name != 'pull_request'
    runs-on: ubuntu-24.04
    steps:
{github_setup}
      - name: Record what this runner's hardware lacks (a changed recipe is judged, never recorded)
        run: {RECORD}
      - name: Did it record anything?
        id: recorded
        if: always()
        run: echo "changed=$(git status --porcelain -- baselines | wc -l)" >> "$GITHUB_OUTPUT"
      - name: Keep the recorded baselines ({KEEP})
        if: always() && steps.recorded.outputs.changed != '0'
        uses: actions/upload-artifact@v4
        with:
          name: ortperf-baselines-${{{{ github.run_id }}}}
          path: baselines/
"""
    if ci == "gitlab":
        on_branch = f"$CI_COMMIT_BRANCH == {quoted}"
        return f"""# pytest-ortperf: the ONNX model gate (written by ortperf init).
# ortperf-gate: judges every change against the committed baselines; it never writes them.
# ortperf-record: after a push to {branch} and in scheduled pipelines, records what this runner's
# hardware lacks (a changed model, setting or runtime is judged, never recorded) and keeps it as an
# artifact: {KEEP}.
variables:
  ORTPERF_MACHINE: gitlab-saas-linux-x64  # one name for this runner class
  GIT_DEPTH: "0"  # changed models are measured against the recorded ones, read with git
.ortperf:
  image: python:3.12
  cache:
    key: ortperf
    paths:
      - .ortperf/models
      - .ortperf/envs
  before_script:{gitlab_lfs}
    - {install}{gitlab_dvc}
ortperf-gate:
  extends: .ortperf
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
    - if: {on_branch} && $CI_PIPELINE_SOURCE == "push"
  script:
    # {AB_REPORTS}
    - if [ -n "$CI_MERGE_REQUEST_IID" ]; then {AB} || echo "{AB_FAILED}"; fi
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
ortperf-record:
  extends: .ortperf
  rules:
    - if: {on_branch} && ($CI_PIPELINE_SOURCE == "push" || $CI_PIPELINE_SOURCE == "schedule")
  script:
    - {RECORD}
  artifacts:
    when: always
    name: ortperf-baselines-$CI_PIPELINE_ID
    paths:
      - baselines/
"""
    steps = f"""      - checkout: self
        fetchDepth: 0  # changed models are measured against the recorded ones, read with git{azure_lfs}
      - task: UsePythonVersion@0
        inputs:
          versionSpec: "3.12"
      - task: Cache@2
        inputs:
          key: ortperf | "$(Agent.OS)"
          path: .ortperf
      - script: {install}
        displayName: Install{azure_dvc}
"""
    return f"""# pytest-ortperf: the ONNX model gate (written by ortperf init).
# gate: judges every change against the committed baselines; it never writes them.
# record: after a push to {branch} and weekly, records what this runner's hardware lacks (a changed
# model, setting or runtime is judged, never recorded) and keeps it as an artifact:
# {KEEP}.
trigger:
  branches:
    include: [{quoted}]
pr:
  branches:
    include: [{quoted}]
schedules:
  - cron: "{WEEKLY}"
    displayName: Weekly - record what a new runner's hardware lacks
    branches:
      include: [{quoted}]
    always: true
pool:
  vmImage: ubuntu-24.04
variables:
  ORTPERF_MACHINE: azure-ubuntu-24.04-x64  # one name for this runner class
jobs:
  - job: gate
    condition: ne(variables['Build.Reason'], 'Schedule')
    steps:
{steps}      - script: {AB}
        displayName: Pull requests - each changed model beside the base branch's (reports; gate decides)
        condition: eq(variables['Build.Reason'], 'PullRequest')
        continueOnError: true  # {AB_REPORTS}
      - script: {GATE}
        displayName: The gate against the committed baselines (never writes them)
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
  - job: record
    condition: ne(variables['Build.Reason'], 'PullRequest')
    steps:
{steps}      - script: {RECORD}
        displayName: Record what this runner's hardware lacks (a changed recipe is judged, never recorded)
      - publish: baselines
        artifact: ortperf-baselines-$(Build.BuildId)
        condition: succeededOrFailed()
"""
