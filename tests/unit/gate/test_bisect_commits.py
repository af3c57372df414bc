"""``ortperf bisect --commits`` without onnxruntime: the linear walk, the range, the verdicts read from
A/B latency records, and the model's history in a real git repository."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_ortperf.errors import OrtperfError, UsageError
from pytest_ortperf.gate.bisect import Judgement, Outcome, bisect, linear_walk
from pytest_ortperf.gate.bisect_commits import (
    Commit,
    CommitBisection,
    CommitRange,
    ModelHistory,
    Worktree,
    judgement,
    model_of,
    parse_commit_range,
)

GOOD = Commit("a" * 40, "model 0")
LATER = Commit("b" * 40, "model 1")


def judge_of(outcomes: list[Outcome], calls: list[tuple[int, int]]):  # type: ignore[no-untyped-def]
    def judge(index: int, attempt: int) -> Judgement:
        calls.append((index, attempt))
        return Judgement(outcomes[index], f"row {index}")

    return judge


@pytest.mark.parametrize("culprit", range(1, 8))
def test_a_linear_walk_names_what_bisection_names_with_more_comparisons(culprit: int) -> None:
    labels = [f"c{i}" for i in range(8)]
    outcomes: list[Outcome] = ["good" if i < culprit else "bad" for i in range(8)]
    walked: list[tuple[int, int]] = []
    searched: list[tuple[int, int]] = []
    walk = linear_walk(labels, judge_of(outcomes, walked))
    search = bisect(labels, judge_of(outcomes, searched))
    assert walk.culprit == search.culprit == f"c{culprit}"
    assert walk.range == search.range
    assert [index for index, _ in walked] == list(range(1, culprit + 1))
    assert search.comparisons <= 4


def test_a_linear_walk_stops_undecided_at_an_inconclusive_step() -> None:
    calls: list[tuple[int, int]] = []
    result = linear_walk(["a", "b", "c"], judge_of(["good", "inconclusive", "bad"], calls))
    assert result.culprit is None
    assert calls == [(1, 0), (1, 1)]  # measured again with more budget, then reported
    assert result.ambiguous == ("b inconclusive after 2 measurement(s)",)


def test_a_linear_walk_with_no_change_names_none() -> None:
    result = linear_walk(["a", "b", "c"], judge_of(["good", "good", "good"], []))
    assert result.culprit is None
    assert result.conclusion.startswith("no change")


def test_commit_ranges_parse() -> None:
    assert parse_commit_range("v1.2..HEAD") == CommitRange("v1.2", "HEAD")
    assert parse_commit_range(" 3f2a1c9..main~2 ") == CommitRange("3f2a1c9", "main~2")


@pytest.mark.parametrize("text", ["HEAD", "..HEAD", "HEAD..", "a...b", "a..b c"])
def test_a_malformed_commit_range_is_named(text: str) -> None:
    with pytest.raises(UsageError, match=r"--commits .*expected GOOD\.\.BAD"):
        parse_commit_range(text)


def record(verdict: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "latency",
        "verdict": verdict,
        "change": {"text": "+19.3% (99.9% CI +13.8% .. +20.5%)", "threshold": 0.03},
        "reference": {"label": f"{GOOD.sha}:models/mlp.onnx"},
        **extra,
    }


@pytest.mark.parametrize(
    ("verdict", "outcome"),
    [
        ("ok", "good"),
        ("identical to reference", "good"),
        ("regression", "bad"),
        ("improved", "other"),
        ("inconclusive", "inconclusive"),
    ],
)
def test_a_step_reads_the_ab_verdict_with_its_interval(verdict: str, outcome: str) -> None:
    judged = judgement(record(verdict), GOOD, LATER)
    assert judged.outcome == outcome
    assert judged.detail == "aaaaaaaaaa vs bbbbbbbbbb: +19.3% (99.9% CI +13.8% .. +20.5%), threshold +/-3%"


def test_a_verdict_a_bisection_cannot_use_is_named() -> None:
    with pytest.raises(OrtperfError, match=r"said 'no reference'.*not in git"):
        judgement(record("no reference", message="not in git"), GOOD, LATER)


def test_the_model_is_named_by_the_ab_reference() -> None:
    assert model_of(record("ok"), GOOD, "t.py::t") == "models/mlp.onnx"
    with pytest.raises(OrtperfError, match="not measured against a model at aaaaaaaaaa"):
        model_of({"verdict": "missing", "message": "no baseline"}, GOOD, "t.py::t")


def test_the_lines_name_the_culprit_and_explain_its_step() -> None:
    commits = tuple(Commit(c * 40, f"model {i}") for i, c in enumerate("abcd"))
    labels = [c.label for c in commits]
    result = bisect(labels, judge_of(["good", "good", "bad", "bad"], []))
    explained = record(
        "regression",
        explanations=[{"title": "at operator level", "lines": ["op types whose time grew most: MatMul"]}],
    )
    done = CommitBisection(
        "t.py::t", CommitRange("a", "d"), "m.onnx", commits, result, {2: explained}, "bisect", 9.0, 8.0, 2
    )
    lines = done.lines()
    assert "first changed: cccccccccc (the last like aaaaaaaaaa: bbbbbbbbbb): model 2" in lines
    text = "\n".join(lines)
    assert "explanation: aaaaaaaaaa -> cccccccccc (model 2); bbbbbbbbbb, the last commit before it" in text
    assert "  at operator level:\n    op types whose time grew most: MatMul" in text
    assert lines[-1].startswith("note: 3 comparison(s) of 4 commits (bisect; bound 3, a linear walk up to 3)")
    assert done.as_dict()["culprit"] == "cccccccccc"


# The model's history, in a real git repository ---------------------------------------------------


def run_git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    root = tmp_path / "repo"
    root.mkdir()
    run_git(root, "init", "-q", "-b", "main")
    for key, value in (("user.name", "T"), ("user.email", "t@example.com"), ("commit.gpgsign", "false")):
        run_git(root, "config", key, value)
    (root / "models").mkdir()
    for i, (path, text) in enumerate(
        [
            ("models/m.onnx", "0"),
            ("README", "r"),
            ("models/m.onnx", "1"),
            ("models/m.onnx", "2"),
            ("README", "s"),
        ]
    ):
        (root / path).write_text(text)
        run_git(root, "add", "-A")
        run_git(root, "commit", "-q", "-m", f"commit {i}")
    return root


def test_the_history_lists_the_commits_that_changed_the_model(repo: Path) -> None:
    history = ModelHistory.resolve(repo, parse_commit_range("HEAD~4..HEAD"))
    assert history.good.subject == "commit 0"
    assert [c.subject for c in history.changes(["models/m.onnx"])] == ["commit 2", "commit 3"]


def test_a_range_that_does_not_touch_the_model_is_named(repo: Path) -> None:
    history = ModelHistory.resolve(repo, parse_commit_range("HEAD~1..HEAD"))
    assert history.changes(["models/m.onnx"]) == []
    error = history.untouched("models/m.onnx", ["models/m.onnx"])
    assert "--commits HEAD~1..HEAD: no commit of that range changes the test's model models/m.onnx" in str(
        error
    )
    assert "(its last change: " in str(error)
    assert str(error).endswith("commit 3)")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nosuch..HEAD", "'nosuch' names no commit of"),
        ("HEAD..HEAD~2", "is not an ancestor of HEAD~2"),
        ("HEAD..main", "both ends are commit"),
    ],
)
def test_bad_ends_are_named(repo: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=f"--commits {text}: .*{message}"):
        ModelHistory.resolve(repo, parse_commit_range(text))


def test_the_worktree_checks_out_each_commits_model_and_goes_away(repo: Path, tmp_path: Path) -> None:
    history = ModelHistory.resolve(repo, parse_commit_range("HEAD~4..HEAD"))
    first, _ = history.changes(["models/m.onnx"])
    with Worktree(history.toplevel, history.bad, tmp_path / "work") as tree:
        assert (tree.path / "models/m.onnx").read_text() == "2"
        tree.check_out(first, ["models/m.onnx", "models/m.data"])
        assert (tree.path / "models/m.onnx").read_text() == "1"
        assert (repo / "models/m.onnx").read_text() == "2"  # the user's work tree is untouched
    assert not tree.path.exists()
    assert run_git(repo, "worktree", "list").count("\n") == 0
