"""A model file at a git revision (real git in tmp_path), and the A/B marker and option values."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest

from pytest_ortperf.accuracy.tolerances import ToleranceSpec
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.errors import ModelError, UsageError
from pytest_ortperf.ort.git_lfs import lfs_available
from pytest_ortperf.ort.git_models import GitRevision, read_blob
from pytest_ortperf.ort.models import LFS_POINTER, ModelResolver, git_blob_id
from pytest_ortperf.plugin.configure import ABMarker, ab_marker, build_config, thresholds_for
from pytest_ortperf.plugin.options import OPTIONS
from tests.models import mlp_model
from tests.unit.plugin.test_config import FakeConfig

LFS_FILE = (
    LFS_POINTER
    + b"v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
)


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Git that reads no user or system config and never looks above tmp_path for a repository."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        monkeypatch.delenv(name, raising=False)


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit_all(repo: Path, message: str = "models") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one commit holding models/model.onnx (a real MLP)."""
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    git(root, "init", "-q")
    git(root, "config", "user.name", "Test")
    git(root, "config", "user.email", "test@example.com")
    git(root, "config", "commit.gpgsign", "false")
    onnx.save(mlp_model(2, 16, seed=0), root / "models" / "model.onnx")
    commit_all(root, "first model")
    return root


# --- GitRevision ----------------------------------------------------------------------------------


def test_model_at_returns_the_committed_bytes_of_a_file_changed_since(repo: Path) -> None:
    model = repo / "models" / "model.onnx"
    committed = model.read_bytes()
    onnx.save(mlp_model(4, 16, seed=1), model)
    assert model.read_bytes() != committed
    revision = GitRevision("HEAD", repo)
    assert revision.toplevel == repo.resolve()
    assert revision.commit == git(repo, "rev-parse", "HEAD")
    found = revision.model_at(model)
    assert found.label == "HEAD:models/model.onnx"
    assert found.data == committed
    assert found.reason == ""
    assert onnx.load_from_string(found.data).graph.name == "mlp2"


def test_model_at_an_older_revision_and_from_a_subdirectory(repo: Path) -> None:
    model = repo / "models" / "model.onnx"
    first = model.read_bytes()
    onnx.save(mlp_model(3, 16, seed=2), model)
    second = model.read_bytes()
    commit_all(repo, "second model")
    revision = GitRevision("HEAD~1", repo / "models")  # any directory inside the work tree
    assert revision.model_at(model).data == first
    assert revision.model_at(model).label == "HEAD~1:models/model.onnx"
    assert GitRevision("HEAD", repo / "models").model_at(model).data == second


def test_a_branch_name_is_a_revision(repo: Path) -> None:
    git(repo, "branch", "baseline-branch")
    onnx.save(mlp_model(3, 16, seed=2), repo / "models" / "model.onnx")
    commit_all(repo, "change on the main line")
    found = GitRevision("baseline-branch", repo).model_at(repo / "models" / "model.onnx")
    assert found.label == "baseline-branch:models/model.onnx"
    assert found.data is not None
    assert onnx.load_from_string(found.data).graph.name == "mlp2"


def test_a_model_added_after_the_revision_has_no_reference(repo: Path) -> None:
    new = repo / "models" / "new.onnx"
    onnx.save(mlp_model(1, 8), new)
    found = GitRevision("HEAD", repo).model_at(new)
    assert found.data is None
    assert found.label == "HEAD:models/new.onnx"
    assert found.reason == "no file 'models/new.onnx' at HEAD (a new model?)"


def test_a_model_outside_the_repository_has_no_reference(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "model.onnx"
    outside.parent.mkdir()
    onnx.save(mlp_model(1, 8), outside)
    found = GitRevision("HEAD", repo).model_at(outside)
    assert found.data is None
    assert found.label == f"HEAD:{outside}"
    assert "outside the repository" in found.reason
    assert str(repo.resolve()) in found.reason


def test_a_committed_lfs_pointer_is_a_model_error_naming_git_lfs(repo: Path) -> None:
    pointer = repo / "models" / "big.onnx"
    pointer.write_bytes(LFS_FILE)
    commit_all(repo, "lfs pointer")
    onnx.save(mlp_model(1, 8), pointer)  # the work tree has the real model (LFS smudged)
    with pytest.raises(ModelError, match="Git LFS") as info:
        GitRevision("HEAD", repo).model_at(pointer)
    # An object no clone has (test_git_lfs.py reads real ones): the fix depends on git-lfs being here.
    assert str(info.value).startswith("HEAD:models/big.onnx is kept in Git LFS")
    fix = "git lfs fetch origin" if lfs_available(repo) else "install git-lfs"
    assert fix in str(info.value)


def test_an_unknown_revision_is_a_usage_error_naming_the_option_and_revision(repo: Path) -> None:
    with pytest.raises(UsageError) as info:
        GitRevision("nosuchrev", repo)
    message = str(info.value)
    assert message.startswith("--ortperf-ab=nosuchrev: git does not know this revision")
    assert "git fetch" in message


def test_the_source_named_in_errors_can_be_a_marker(repo: Path) -> None:
    with pytest.raises(UsageError, match=r"^ort_ab marker of t\.py::t=v9: git does not know"):
        GitRevision("v9", repo, source="ort_ab marker of t.py::t")


def test_a_revision_that_is_not_a_commit_is_a_usage_error(repo: Path) -> None:
    tree = git(repo, "rev-parse", "HEAD^{tree}")
    with pytest.raises(UsageError, match="git does not know this revision"):
        GitRevision(tree, repo)


def test_a_repository_without_commits_knows_no_head(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    with pytest.raises(UsageError, match=r"^--ortperf-ab=HEAD: git does not know this revision"):
        GitRevision("HEAD", empty)


def test_a_directory_outside_any_work_tree_is_a_usage_error(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError) as info:
        GitRevision("HEAD", plain)
    message = str(info.value)
    assert message.startswith(f"--ortperf-ab=HEAD: '{plain}' is not inside a git work tree (")
    assert "not a git repository" in message  # git's own first line


def test_no_git_on_path_is_a_usage_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_ortperf.ort.git_models.shutil.which", lambda name: None)
    with pytest.raises(
        UsageError, match=r"^--ortperf-ab=HEAD: same-job A/B needs git, and no 'git' is on PATH"
    ):
        GitRevision("HEAD", repo)


def test_git_that_cannot_run_is_a_usage_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", "git")

    monkeypatch.setattr("pytest_ortperf.ort.git_models.subprocess.run", broken)
    with pytest.raises(UsageError, match=r"^--ortperf-ab=HEAD: running git failed \(.*Permission denied"):
        GitRevision("HEAD", repo)


# --- ort_ab marker --------------------------------------------------------------------------------

ORIGIN = "ort_ab marker of tests/test_m.py::test_a"


def test_ab_marker_positional_reference() -> None:
    assert ab_marker(("x.onnx",), {}, origin=ORIGIN) == ABMarker("x.onnx")


def test_ab_marker_reference_keyword_and_model_proto() -> None:
    proto = mlp_model(1, 4)
    assert ab_marker((), {"reference": proto}, origin=ORIGIN) == ABMarker(proto)


def test_ab_marker_rev_is_stripped() -> None:
    assert ab_marker((), {"rev": "HEAD"}, origin=ORIGIN) == ABMarker(rev="HEAD")
    assert ab_marker((), {"rev": " origin/main "}, origin=ORIGIN) == ABMarker(rev="origin/main")


def test_ab_marker_python_alone_or_with_a_reference_or_a_revision(tmp_path: Path) -> None:
    python = sys.executable
    assert ab_marker((), {"python": python}, origin=ORIGIN) == ABMarker(python=python)
    assert ab_marker(("x.onnx",), {"python": python}, origin=ORIGIN) == ABMarker("x.onnx", python=python)
    assert ab_marker((), {"rev": "HEAD", "python": python}, origin=ORIGIN) == ABMarker(
        rev="HEAD", python=python
    )
    # A relative path is relative to rootdir; a bare name is looked up on PATH.
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "python").symlink_to(python)
    found = ab_marker((), {"python": "envs/python"}, origin=ORIGIN, rootdir=tmp_path)
    assert found.python == str(tmp_path / "envs" / "python")
    assert ab_marker((), {"python": "sh"}, origin=ORIGIN).python == shutil.which("sh")


@pytest.mark.parametrize("python", ["envs/none/bin/python", "/no/such/python", "no-such-command-here", "."])
def test_ab_marker_python_must_be_an_interpreter_here(python: str, tmp_path: Path) -> None:
    with pytest.raises(
        UsageError, match=rf"^{ORIGIN}: python: '.*' is not a Python interpreter here .*ortperf env create"
    ):
        ab_marker((), {"python": python}, origin=ORIGIN, rootdir=tmp_path)


def test_ab_marker_python_of_the_wrong_type() -> None:
    with pytest.raises(UsageError, match=r"ort_ab python must be a path to an interpreter, got 3"):
        ab_marker((), {"python": 3}, origin=ORIGIN)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {}),
        ((), {"rev": ""}),
        (("x.onnx",), {"rev": "HEAD"}),
        ((), {"reference": "x.onnx", "rev": "HEAD"}),
        (("x.onnx",), {"reference": "y.onnx"}),
        (("x.onnx", "y.onnx"), {}),
        (("x.onnx",), {"revision": "HEAD"}),
    ],
)
def test_ab_marker_takes_one_reference_or_one_revision(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageError) as info:
        ab_marker(args, kwargs, origin=ORIGIN)
    message = str(info.value)
    assert message.startswith(f"{ORIGIN}: ort_ab takes one reference model")
    assert ("unknown: revision" in message) is ("revision" in kwargs)


@pytest.mark.parametrize("rev", ["-x", "--output=/tmp/x", " -HEAD", "   ", 3])
def test_ab_marker_rejects_what_is_no_revision(rev: object) -> None:
    with pytest.raises(UsageError, match=rf"^{ORIGIN}: ort_ab rev must be a git revision, got "):
        ab_marker((), {"rev": rev}, origin=ORIGIN)


# --- options and ort_thresholds(ab=...) -----------------------------------------------------------


def test_ab_options_default_to_off_and_the_one_latency_threshold(tmp_path: Path) -> None:
    defaults = {o.ini: o for o in OPTIONS}
    config = FakeConfig(tmp_path)
    built = build_config(config)
    assert built.ab_rev == ""  # A/B mode is off unless asked for
    threshold, budget = defaults["ortperf_latency_threshold"], defaults["ortperf_ab_budget"]
    assert built.policy.threshold == float(str(threshold.default).rstrip("%")) / 100 == 0.03
    assert built.policy.ab.budget_s == float(str(budget.default))
    # The help text states the same defaults the option table holds, once.
    assert f"(default: {threshold.default})" in threshold.help
    assert f"(default: {budget.default})" in budget.help
    assert defaults["ortperf_ab_threshold"].default == ""
    assert "Deprecated" in defaults["ortperf_ab_threshold"].help
    assert config.warnings == []


@pytest.mark.parametrize(
    ("cli", "ini", "expected", "said"),
    [
        ({"ortperf_ab_threshold": "5%"}, {}, 0.05, "--ortperf-ab-threshold is deprecated"),
        ({}, {"ortperf_ab_threshold": "5%"}, 0.05, "ini ortperf_ab_threshold is deprecated"),
        # the one threshold given: it decides, and the deprecated one only warns
        (
            {"ortperf_latency_threshold": "8%", "ortperf_ab_threshold": "5%"},
            {},
            0.08,
            "--ortperf-ab-threshold",
        ),
    ],
)
def test_the_deprecated_ab_threshold_sets_the_one_latency_threshold_with_a_warning(
    tmp_path: Path, cli: dict[str, Any], ini: dict[str, Any], expected: float, said: str
) -> None:
    config = FakeConfig(
        tmp_path, cli={"ortperf_ab": " origin/main ", **cli}, ini={"ortperf_ab_budget": "1.5", **ini}
    )
    built = build_config(config)
    assert built.ab_rev == "origin/main"
    assert built.policy.threshold == expected
    assert built.policy.ab.budget_s == 1.5
    (warning,) = config.warnings
    assert isinstance(warning, pytest.PytestDeprecationWarning)
    assert str(warning).startswith(said)
    assert (
        "use --ortperf-latency-threshold (ini ortperf_latency_threshold, marker ort_thresholds(latency=...))"
        in str(warning)
    )


@pytest.mark.parametrize(
    ("cli", "ini", "prefix"),
    [
        ({"ortperf_ab": "--exec=evil"}, {}, "--ortperf-ab: '--exec=evil' is not a git revision"),
        ({}, {"ortperf_ab": "-x"}, "ini ortperf_ab: '-x' is not a git revision"),
        ({"ortperf_ab_threshold": "fast"}, {}, "--ortperf-ab-threshold: expected a threshold"),
        ({}, {"ortperf_ab_threshold": "0%"}, "ini ortperf_ab_threshold: a threshold must be a positive"),
        ({"ortperf_ab_budget": "soon"}, {}, "--ortperf-ab-budget"),
    ],
)
def test_bad_ab_options_are_usage_errors_naming_the_option(
    tmp_path: Path, cli: dict[str, Any], ini: dict[str, Any], prefix: str
) -> None:
    with pytest.raises(UsageError) as info:
        build_config(FakeConfig(tmp_path, cli=cli, ini=ini))
    assert str(info.value).startswith(prefix)


def test_ort_thresholds_ab_sets_the_latency_threshold_with_a_deprecation_warning() -> None:
    base = CheckPolicy()
    with pytest.warns(
        pytest.PytestDeprecationWarning, match=r"t\.py::t: ort_thresholds\(ab=\.\.\.\) is deprecated"
    ):
        policy, tolerances = thresholds_for(base, ToleranceSpec(), [((), {"ab": "5%"})], origin="t.py::t")
    assert policy.threshold == 0.05
    assert tolerances == ToleranceSpec()


def test_the_closest_ort_thresholds_wins_and_latency_beats_ab_in_one_marker() -> None:
    markers = [((), {"ab": "5%", "latency": "20%"}), ((), {"ab": 0.02})]
    with pytest.warns(pytest.PytestDeprecationWarning):
        policy, _ = thresholds_for(CheckPolicy(), ToleranceSpec(), markers, origin="t.py::t")
    assert policy.threshold == 0.02
    with pytest.warns(pytest.PytestDeprecationWarning):
        policy, _ = thresholds_for(CheckPolicy(), ToleranceSpec(), markers[:1], origin="t.py::t")
    assert policy.threshold == 0.20


@pytest.mark.parametrize("value", ["fast", "-5%", 0, True])
def test_a_bad_ort_thresholds_ab_is_a_usage_error(value: object) -> None:
    with (
        pytest.raises(UsageError, match=r"^ort_thresholds of t\.py::t: "),
        pytest.warns(pytest.PytestDeprecationWarning),
    ):
        thresholds_for(
            CheckPolicy(), ToleranceSpec(), [((), {"ab": value})], origin="ort_thresholds of t.py::t"
        )


# --- --ortperf-ab=auto: the pull request's base ----------------------------------------------------


@pytest.fixture
def pull_request(repo: Path, tmp_path: Path) -> tuple[Path, str]:
    """A clone of ``repo`` (its origin) on a feature branch one commit past the branch point, while
    the origin's main line moved on by a commit of its own. Returns (clone, branch point)."""
    git(repo, "branch", "-M", "main")
    branch_point = git(repo, "rev-parse", "HEAD")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    for where in (repo, clone):
        git(where, "config", "user.name", "Test")
        git(where, "config", "user.email", "test@example.com")
        git(where, "config", "commit.gpgsign", "false")
    onnx.save(mlp_model(3, 16, seed=3), repo / "models" / "model.onnx")
    commit_all(repo, "main moves on")
    git(clone, "checkout", "-q", "-b", "feature")
    onnx.save(mlp_model(4, 16, seed=4), clone / "models" / "model.onnx")
    commit_all(clone, "the pull request's change")
    git(clone, "fetch", "-q", "origin")
    return clone, branch_point


@pytest.mark.parametrize(
    ("env", "target", "given"),
    [
        ({"GITHUB_BASE_REF": "main"}, "origin/main", "GITHUB_BASE_REF=main"),
        (
            {"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main"},
            "origin/main",
            "CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main",
        ),
        (
            {"SYSTEM_PULLREQUEST_TARGETBRANCH": "refs/heads/main"},
            "origin/main",
            "SYSTEM_PULLREQUEST_TARGETBRANCH=",
        ),
        ({"BITBUCKET_PR_DESTINATION_BRANCH": "main"}, "origin/main", "BITBUCKET_PR_DESTINATION_BRANCH=main"),
        ({"BUILDKITE_PULL_REQUEST_BASE_BRANCH": "main", "GITHUB_BASE_REF": ""}, "origin/main", "BUILDKITE_"),
        ({}, "origin/HEAD", "origin/HEAD"),
    ],
)
def test_auto_is_the_merge_base_with_the_target_the_ci_names(
    pull_request: tuple[Path, str], env: dict[str, str], target: str, given: str
) -> None:
    clone, branch_point = pull_request
    revision = GitRevision.pull_request_base(clone, env=env)
    assert revision.commit == branch_point  # not the target's tip, which moved on since
    assert revision.name.startswith(f"merge-base with {target} ({branch_point[:12]}, from {given}")
    found = revision.model_at(clone / "models" / "model.onnx")
    assert found.label == f"{revision.name}:models/model.onnx"
    assert found.data is not None
    assert onnx.load_from_string(found.data).graph.name == "mlp2"  # the model at the branch point


def test_auto_takes_a_base_commit_as_it_is(pull_request: tuple[Path, str]) -> None:
    clone, branch_point = pull_request
    revision = GitRevision.pull_request_base(clone, env={"CI_MERGE_REQUEST_DIFF_BASE_SHA": branch_point})
    assert revision.commit == branch_point
    assert f"from CI_MERGE_REQUEST_DIFF_BASE_SHA={branch_point}" in revision.name


def test_auto_with_a_branch_the_clone_lacks_says_what_to_fetch(pull_request: tuple[Path, str]) -> None:
    clone, _ = pull_request
    with pytest.raises(UsageError) as caught:
        GitRevision.pull_request_base(clone, env={"GITHUB_BASE_REF": "release"})
    assert str(caught.value) == (
        "--ortperf-ab=auto: GITHUB_BASE_REF=release names origin/release or release, which this clone does "
        "not have: fetch it (git fetch origin; on GitHub Actions, actions/checkout with fetch-depth: 0)."
    )


def test_auto_outside_a_pull_request_without_origin_head_is_a_usage_error(repo: Path) -> None:
    with pytest.raises(
        UsageError, match=r"^--ortperf-ab=auto: no pull request base: none of GITHUB_BASE_REF, "
    ):
        GitRevision.pull_request_base(repo, env={})


def test_auto_without_common_history_says_to_fetch_it(pull_request: tuple[Path, str]) -> None:
    clone, _ = pull_request
    git(clone, "checkout", "-q", "--orphan", "unrelated")
    commit_all(clone, "a history of its own")
    with pytest.raises(UsageError, match="HEAD and origin/main have no common commit in this clone"):
        GitRevision.pull_request_base(clone, env={"GITHUB_BASE_REF": "main"})


def test_auto_names_the_marker_that_asked(repo: Path) -> None:
    with pytest.raises(UsageError, match=r"^ort_ab marker of t::x=auto: no pull request base"):
        GitRevision.pull_request_base(repo, env={}, source="ort_ab marker of t::x")


# --- a recorded model, rebuilt from the git object its baseline names -----------------------------


def test_the_resolver_gives_a_files_git_object_id_and_git_gives_the_bytes_back(repo: Path) -> None:
    model = repo / "models" / "model.onnx"
    source = ModelResolver(repo).resolve(model, test_dir=repo, origin="test")
    assert source.git_blob == git(repo, "hash-object", str(model)) == git_blob_id(model.read_bytes())
    committed = model.read_bytes()
    onnx.save(mlp_model(4, 16, seed=1), model)  # changed since: the recorded bytes are still in git
    assert read_blob(repo / "models", source.git_blob) == committed


def test_no_object_no_repository_or_a_malformed_id_gives_nothing(repo: Path, tmp_path: Path) -> None:
    never_committed = git_blob_id(b"not in any commit")
    assert read_blob(repo, never_committed) is None
    outside = tmp_path / "no-repo"
    outside.mkdir()
    blob = git(repo, "rev-parse", "HEAD:models/model.onnx")
    assert read_blob(outside, blob) is None
    assert read_blob(repo, "HEAD") is None  # only object ids, never revisions or options
    assert read_blob(repo, "--help") is None


def test_git_keeps_a_committed_staged_or_tracked_model_and_nothing_else(tmp_path: Path) -> None:
    """What makes an update record short: git can give the model back later."""
    from pytest_ortperf.ort.git_models import git_keeps

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q"], ["config", "user.name", "T"], ["config", "user.email", "t@e"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    committed, staged, changed, loose = (
        repo / f"{name}.onnx" for name in ("committed", "staged", "changed", "loose")
    )
    for path in (committed, staged, changed, loose):
        path.write_bytes(path.name.encode())
    subprocess.run(["git", "add", "committed.onnx", "changed.onnx"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "m"], cwd=repo, check=True)
    subprocess.run(["git", "add", "staged.onnx"], cwd=repo, check=True)
    changed.write_bytes(b"other bytes, to be committed with their baselines")
    blob = lambda path: git_blob_id(path.read_bytes())  # noqa: E731
    assert git_keeps(repo, committed, blob(committed))
    assert git_keeps(repo, staged, blob(staged))
    assert git_keeps(repo, changed, blob(changed))  # tracked: its new bytes come with the commit
    assert git_keeps(repo, None, blob(committed))  # a model made from it: its source's object
    assert not git_keeps(repo, loose, blob(loose))  # untracked: nothing keeps it
    assert not git_keeps(repo, None, "0" * 40)
    outside = tmp_path / "outside.onnx"
    outside.write_bytes(b"x")
    assert not git_keeps(tmp_path, outside, blob(outside))  # no repository at all


def test_tracked_blobs_are_the_whole_repositorys_from_any_folder(repo: Path, tmp_path: Path) -> None:
    from pytest_ortperf.ort.git_models import tracked_blobs

    blob = git(repo, "rev-parse", "HEAD:models/model.onnx")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("")
    commit_all(repo, "tests")
    found = tracked_blobs(repo / "tests")
    assert found is not None
    assert blob in found
    assert len(found) == 2
    onnx.save(mlp_model(3, 16, seed=0), repo / "models" / "model.onnx")
    commit_all(repo, "changed")
    assert blob not in (tracked_blobs(repo / "tests") or ())
    outside = tmp_path / "outside"
    outside.mkdir()
    assert tracked_blobs(outside) is None


def test_a_model_changed_since_it_was_recorded_is_one_git_holds_and_its_index_no_longer_does(
    repo: Path,
) -> None:
    from pytest_ortperf.ort.git_models import changed_since
    from pytest_ortperf.ort.models import git_blob_id

    recorded = git(repo, "rev-parse", "HEAD:models/model.onnx")
    outside = git_blob_id(b"a model outside the repository (site-packages, say): git never had it")
    assert changed_since(repo, {recorded, outside}) == frozenset()  # unchanged; the other is no file of git's
    onnx.save(mlp_model(3, 16, seed=0), repo / "models" / "model.onnx")
    commit_all(repo, "changed")
    assert changed_since(repo / "models", {recorded, outside}) == {recorded}
