"""``ortperf bisect --commits``: the commits that changed a test's model, each measured side by side.

A step asks the question of the plugin's same-job A/B check (``docs/ab.md``): the test's own pytest
item runs with ``--ortperf-ab=GOOD``, so its latency check measures the model as it is in the work
tree against the model at the good end, in interleaved rounds of one job, confirmed in new measuring
worker processes, and explains a failure at operator level. The work tree is a temporary git worktree
at the bad end (the test, its conftest and settings as they are there); for each candidate the model
(and its external data files) is checked out at that commit (git's own LFS filter reads an LFS
object), so nothing of the user's work tree changes.

The model's path is not known before the item has run: the first measurement, the bad end against
the good end, names it (the A/B reference's label). The candidates are then the good end and the
commits of ``GOOD..BAD`` that changed that path (``git rev-list``), oldest first; the first
measurement counts as the bad end's (the model there is the one at the last commit that changed it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any

from pytest_ortperf import defaults
from pytest_ortperf.checks.latency_verdicts import LATENCY
from pytest_ortperf.checks.record import CheckRecord, check_in_report
from pytest_ortperf.errors import OrtperfError, UsageError
from pytest_ortperf.gate.bisect import BisectResult, Judgement, Outcome, bisect, linear_walk, max_comparisons
from pytest_ortperf.gate.bisect_runtimes import ItemRunner, temporary_workdir
from pytest_ortperf.ort.dvc_models import DVC_LABEL, dvc_outputs, model_at_revision
from pytest_ortperf.ort.git_models import external_locations

CHECK = LATENCY  # the kind a bisection over commits judges (``ortperf bisect --commits --check``)

_TIMEOUT_S = 120
_RANGE = re.compile(r"^(?P<good>[^.\s][^\s]*?)\.\.(?P<bad>[^.\s]\S*)$")
# The A/B latency verdicts, as a bisection reads them.
OUTCOME_OF: dict[str, Outcome] = {
    "ok": "good",
    "identical to reference": "good",
    "regression": "bad",
    "improved": "other",
    "inconclusive": "inconclusive",
}


@dataclass(frozen=True)
class CommitRange:
    """``GOOD..BAD`` of ``--commits``, as given."""

    good: str
    bad: str

    def __str__(self) -> str:
        return f"{self.good}..{self.bad}"


def parse_commit_range(text: str) -> CommitRange:
    """Parse ``--commits``; a malformed range raises a :class:`UsageError` naming it."""
    match = _RANGE.match(text.strip())
    if match is None or "..." in text:
        raise UsageError(
            f"ortperf bisect --commits {text!r}: expected GOOD..BAD, two revisions git knows, "
            "such as v1.2..HEAD or 3f2a1c9..main"
        )
    return CommitRange(match.group("good"), match.group("bad"))


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str

    @property
    def label(self) -> str:
        return self.sha[:10]


def git(cwd: Path, *args: str, what: str = "") -> str:
    """git's output, stripped; an error naming ``what`` (the option at fault) and git's words."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OrtperfError(f"ortperf bisect: running git {args[0]} failed ({exc})") from None
    if done.returncode != 0:
        words = " / ".join(done.stderr.strip().splitlines()[-2:]) or f"exit {done.returncode}"
        raise UsageError(f"ortperf bisect{f' {what}' if what else ''}: git {args[0]}: {words}")
    return done.stdout.strip()


@dataclass(frozen=True)
class ModelHistory:
    """The repository around the working directory and the two ends of the range, resolved."""

    toplevel: Path
    span: CommitRange
    good: Commit
    bad: Commit

    @classmethod
    def resolve(cls, cwd: Path, span: CommitRange) -> ModelHistory:
        if shutil.which("git") is None:
            raise UsageError("ortperf bisect --commits needs git, and no 'git' is on PATH")
        where = f"--commits {span}"
        toplevel = Path(git(cwd, "rev-parse", "--show-toplevel", what=where))
        ends = []
        for rev in (span.good, span.bad):
            try:
                sha = git(toplevel, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", what=where)
            except UsageError:
                raise UsageError(
                    f"ortperf bisect --commits {span}: {rev!r} names no commit of {toplevel}"
                ) from None
            ends.append(Commit(sha, git(toplevel, "log", "-1", "--format=%s", sha)))
        good, bad = ends
        if good.sha == bad.sha:
            raise UsageError(f"ortperf bisect --commits {span}: both ends are commit {good.label}")
        ancestry = subprocess.run(
            ["git", "merge-base", "--is-ancestor", good.sha, bad.sha], cwd=toplevel, check=False
        )
        if ancestry.returncode != 0:
            raise UsageError(
                f"ortperf bisect --commits {span}: {span.good} ({good.label}) is not an ancestor of "
                f"{span.bad} ({bad.label}); GOOD must be older, on BAD's history"
            )
        return cls(toplevel, span, good, bad)

    def changes(self, paths: Sequence[str]) -> list[Commit]:
        """The commits after GOOD up to BAD that changed ``paths``, oldest first."""
        listing = git(
            self.toplevel,
            "log",
            "--reverse",
            "--format=%H %s",
            f"{self.good.sha}..{self.bad.sha}",
            "--",
            *paths,
        )
        return [
            Commit(*line.split(" ", 1)) if " " in line else Commit(line, "") for line in listing.splitlines()
        ]

    def untouched(self, model: str, paths: Sequence[str]) -> UsageError:
        """The error for a range that does not change the model, with its last change before."""
        last = git(self.toplevel, "log", "-1", "--format=%h %s", self.bad.sha, "--", *paths)
        return UsageError(
            f"ortperf bisect --commits {self.span}: no commit of that range changes the test's model "
            f"{model}" + (f" (its last change: {last})" if last else "")
        )


class Worktree:
    """A temporary git worktree at ``commit``; each candidate's model is checked out into it."""

    def __init__(self, toplevel: Path, commit: Commit, folder: Path) -> None:
        self.toplevel = toplevel
        self.path = folder / "tree"
        self.at = commit.sha  # the commit whose model files the tree holds now
        git(toplevel, "worktree", "add", "--detach", "--quiet", str(self.path), commit.sha)
        self._dvc_models(commit.sha, [path for paths in dvc_outputs(self.path).values() for path in paths])

    def __enter__(self) -> Worktree:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.remove()

    def remove(self) -> None:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(self.path)],
            cwd=self.toplevel,
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.path, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=self.toplevel, capture_output=True, check=False)

    def model_paths(self, model: str) -> list[str]:
        """``model`` and the external data files it names here, relative to the top level."""
        file = self.path / model
        folder = PurePosixPath(model).parent
        found = [model]
        if file.is_file():
            found += [str(folder / name) for name in external_locations(file.read_bytes())]
        # A model DVC keeps: its pointer's history is the model's (a .dvc file, or the dvc.lock naming it).
        found += [pointer for pointer, paths in dvc_outputs(self.path).items() if model in paths]
        return found

    def check_out(self, commit: Commit, paths: Sequence[str]) -> None:
        """The files ``paths`` as they are at ``commit`` (absent there: removed)."""
        if commit.sha == self.at:
            return
        present = [
            line.split("\t", 1)[1]
            for line in git(self.path, "ls-tree", "-r", commit.sha, "--", *paths).splitlines()
        ]
        for path in set(paths) - set(present):
            (self.path / path).unlink(missing_ok=True)
        if present:
            git(self.path, "checkout", commit.sha, "--", *present)
        self._dvc_models(commit.sha, sorted(set(paths) - set(present)))
        self.at = commit.sha

    def _dvc_models(self, sha: str, relatives: Sequence[str]) -> None:
        """Of ``relatives`` (not in git), the models DVC kept at ``sha`` written into the tree, read back
        through their pointers there (``ort/dvc_models.py``); one that cannot be had is an error
        naming why."""
        for relative in sorted(set(relatives)):
            if not relative.endswith(".onnx") or (self.path / relative).is_file():
                continue
            kept = model_at_revision(self.toplevel, sha, relative, label=f"{sha[:12]}:{relative}")
            if kept is None:
                continue
            if kept.data is None:
                raise OrtperfError(f"ortperf bisect: the model {relative} at {sha[:12]}: {kept.reason}")
            (self.path / relative).parent.mkdir(parents=True, exist_ok=True)
            (self.path / relative).write_bytes(kept.data)


def latency_record(report: dict[str, Any], nodeid: str, source: str) -> CheckRecord:
    """The latency record of ``nodeid`` in an ``--ortperf-report`` JSON."""
    record = check_in_report(report, nodeid, CHECK)
    if record is not None:
        return record
    raise OrtperfError(f"ortperf bisect: {source} holds no latency check of {nodeid}: does the test run one?")


def model_of(record: Mapping[str, Any], good: Commit, nodeid: str) -> str:
    """The model's path relative to the top level, from the A/B reference's label ``GOOD:path``."""
    record = CheckRecord.of(record)
    label = str(record.reference.get("label", "")) if record.reference is not None else ""
    prefix = f"{good.sha}:"
    if not label.startswith(prefix):
        raise OrtperfError(
            f"ortperf bisect: the latency check of {nodeid} was not measured against a model at "
            f"{good.label} ({record.verdict}: {record.message or label or 'no reference'})"
        )
    return label[len(prefix) :].split(DVC_LABEL, 1)[0]  # a model DVC keeps: "path (DVC md5 ...), ..."


def judgement(record: Mapping[str, Any], good: Commit, commit: Commit) -> Judgement:
    """The row of one measurement: commits, verdict, change with its interval."""
    record = CheckRecord.of(record)
    verdict = record.verdict
    outcome = OUTCOME_OF.get(verdict)
    if outcome is None:
        raise OrtperfError(
            f"ortperf bisect: {commit.label} against {good.label}: the latency check said {verdict!r}, "
            f"not a verdict a bisection can use: {record.message}".rstrip(": ")
        )
    change = record.estimate or {}
    text = str(change.get("text") or verdict)
    threshold = change.get("threshold")
    limit = f", threshold +/-{threshold:.0%}" if isinstance(threshold, (int, float)) else ""
    return Judgement(outcome, f"{good.label} vs {commit.label}: {text}{limit}")


@dataclass
class LatencyJudge:
    """Judges commits by the test's A/B latency check against the good end (``commits[0]``); attempt
    k measures with ``budget_s * 2**k`` seconds (``--ortperf-ab-budget``)."""

    nodeid: str
    good: Commit
    tree: Worktree
    runner: ItemRunner
    python: Path
    budget_s: float = defaults.AB_BUDGET_S
    commits: list[Commit] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    records: dict[int, CheckRecord] = field(default_factory=dict)
    first: CheckRecord | None = None  # the bad end's first measurement, made before the candidates
    measure_s: float = 0.0

    def measure(self, attempt: int) -> CheckRecord:
        """The item run once in the worktree as it is now, against the good end."""
        started = time.perf_counter()
        budget = self.budget_s * 2**attempt
        report = self.runner.run(
            self.python,
            f"the worktree at {self.tree.at[:10]}",
            extra=(
                f"--ortperf-ab={self.good.sha}",
                "--ortperf-ab-outputs=report",
                f"--ortperf-ab-budget={budget:g}",
            ),
        )
        self.measure_s += time.perf_counter() - started
        return latency_record(report, self.nodeid, f"the report of {self.tree.at[:10]}")

    def __call__(self, index: int, attempt: int) -> Judgement:
        commit = self.commits[index]
        if index == len(self.commits) - 1 and attempt == 0 and self.first is not None:
            record = self.first
        else:
            self.tree.check_out(commit, self.paths)
            record = self.measure(attempt)
        self.records[index] = record
        return judgement(record, self.good, commit)


def explanation(record: Mapping[str, Any] | None) -> list[str]:
    """A failed side-by-side check's explanation sections (operators, graph), as lines."""
    lines: list[str] = []
    for section in CheckRecord.of(record).explanations if record is not None else ():
        lines.append(f"{section.get('title', '')}:")
        lines += [f"  {line}" for line in section.get("lines", [])]
    return lines


def step_figures(record: Mapping[str, Any]) -> dict[str, Any]:
    """What the JSON report keeps of a step's measurement."""
    keep = ("verdict", "change", "reference", "current", "decided_by", "confirmation", "seconds", "model")
    return {key: record[key] for key in keep if key in record}


@dataclass(frozen=True)
class CommitBisection:
    """What ``ortperf bisect --commits`` found: the search's result with the commits, the model, every
    step's measurement, the explanation of the culprit's and the times."""

    nodeid: str
    span: CommitRange
    model: str
    commits: tuple[Commit, ...]
    result: BisectResult
    records: dict[int, CheckRecord]
    walk: str
    seconds: float
    measure_s: float
    runs: int

    def explained(self) -> list[str]:
        """The culprit's step: its measurement against the good end, with the operators whose time moved."""
        if self.result.culprit is None:
            return []
        index = [c.label for c in self.commits].index(self.result.culprit)
        last_good = self.result.range[0]
        good = self.commits[0].label
        alike = (
            "" if last_good == good else f"; {last_good}, the last commit before it, measured alike to {good}"
        )
        head = f"{good} -> {self.result.culprit} ({self.commits[index].subject}){alike}"
        return [head, *explanation(self.records.get(index))]

    def lines(self) -> list[str]:
        subjects = {c.label: c.subject for c in self.commits}
        rows = [f"{'step':<5} {'commit':<11} {'verdict':<13} change"]
        for number, step in enumerate(self.result.steps, 1):
            again = f" ({step.attempts} measurements)" if step.attempts > 1 else ""
            rows.append(f"{number:<5} {step.label:<11} {step.outcome + again:<13} {step.detail}")
        rows.append(
            self.result.conclusion + (f": {subjects[self.result.culprit]}" if self.result.culprit else "")
        )
        rows += [f"ambiguous: {reason}" for reason in self.result.ambiguous]
        explained = self.explained()
        if explained:
            rows.append("explanation: " + "\n  ".join(explained))
        candidates = len(self.commits)
        linear = candidates - 1
        rows.append(
            f"note: {self.result.comparisons} comparison(s) of {candidates} commits ("
            + (
                f"bisect; bound {max_comparisons(candidates)}, a linear walk up to {linear}"
                if self.walk == "bisect"
                else f"linear walk; up to {linear}"
            )
            + f"), {self.runs} pytest run(s); {self.seconds:.1f} s in all, "
            f"{self.measure_s:.1f} s measuring"
            + (
                f"; a walk of all {linear} at this run's {self.measure_s / self.runs:.1f} s a comparison: "
                f"about {linear * self.measure_s / self.runs:.0f} s"
                if self.runs
                else ""
            )
        )
        return rows

    def as_dict(self) -> dict[str, Any]:
        labels = [c.label for c in self.commits]
        return {
            "nodeid": self.nodeid,
            "commits_range": str(self.span),
            "check": "latency",
            "walk": self.walk,
            "model": self.model,
            "commits": [{"label": c.label, "sha": c.sha, "subject": c.subject} for c in self.commits],
            **self.result.as_dict(),
            "explanation": self.explained(),
            "measurements": {labels[i]: step_figures(r) for i, r in sorted(self.records.items())},
            "seconds": round(self.seconds, 2),
            "measure_seconds": round(self.measure_s, 2),
            "pytest_runs": self.runs,
        }


def bisect_commits(
    nodeid: str,
    commits: str,
    *,
    cwd: Path,
    python: Path,
    budget_s: float = defaults.AB_BUDGET_S,
    linear: bool = False,
    retries: int = 1,
    progress: Callable[[str], None] | None = None,
) -> CommitBisection:
    """Search the commits of ``commits`` (``GOOD..BAD``) that changed ``nodeid``'s model for the first
    whose side-by-side latency verdict against GOOD differs; ``progress`` gets a line per step."""
    started = time.perf_counter()
    span = parse_commit_range(commits)
    history = ModelHistory.resolve(cwd, span)
    say = progress if progress is not None else (lambda line: None)
    workdir = temporary_workdir()
    try:
        with Worktree(history.toplevel, history.bad, workdir) as tree:
            where = cwd.resolve().relative_to(history.toplevel.resolve())
            runner = ItemRunner(nodeid, tree.path / where, workdir, timed=True, overlaid=False)
            judge = LatencyJudge(nodeid, history.good, tree, runner, python, budget_s)
            say(
                f"measuring {history.bad.label} (the bad end) against {history.good.label}: it names "
                "the test's model, and counts as step 1"
            )
            judge.first = judge.measure(0)
            model = model_of(judge.first, history.good, nodeid)
            judge.paths = tree.model_paths(model)
            changed = history.changes(judge.paths)
            if not changed:
                raise history.untouched(model, judge.paths)
            judge.commits = [history.good, *changed]
            labels = [c.label for c in judge.commits]
            say(
                f"{len(changed)} commit(s) of {span} changed {model} "
                f"({', '.join(labels[1:])}), at most "
                f"{max_comparisons(len(labels)) if not linear else len(labels) - 1} comparisons"
            )
            search = linear_walk if linear else bisect
            result = search(labels, judge, retries=retries, progress=say)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return CommitBisection(
        nodeid,
        span,
        model,
        tuple(judge.commits),
        result,
        dict(judge.records),
        "linear walk" if linear else "bisect",
        time.perf_counter() - started,
        judge.measure_s,
        runner.runs,
    )
