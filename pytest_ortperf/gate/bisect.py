"""The search of ``ortperf bisect``, without pytest: which release range it walks and how it walks it.

A bisection is handed an ordered list of candidates (onnxruntime releases, or commits that changed a
model), the first of them the good end, and a judge that measures one candidate against the good end
and answers ``good`` (the check's verdict is the good end's), ``bad`` (it differs the way the bad end
does), ``other`` (it differs the other way: faster, not slower; a non-monotone history) or
``inconclusive`` (the measurement could not decide). The search judges the bad end first, then
halves the range; an inconclusive step is judged again with more budget (``attempt`` 1, 2, ...) and,
still undecided, stops the search: it names the range the change lies in, never a culprit its
measurements did not single out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from packaging.version import InvalidVersion, Version

from pytest_ortperf.errors import UsageError

Outcome = Literal["good", "bad", "other", "inconclusive"]
OUTCOMES: tuple[str, ...] = ("good", "bad", "other", "inconclusive")


@dataclass(frozen=True)
class Judgement:
    """What one measurement of a candidate against the good end said, with its row text (versions or
    commits, verdict, change with its interval) in ``detail``."""

    outcome: Outcome
    detail: str = ""


@dataclass(frozen=True)
class Step:
    """One judged candidate: its position, its label, the outcome of its last attempt, how many
    attempts it took (more than one: inconclusive ones were measured again) and the row text."""

    index: int
    label: str
    outcome: Outcome
    attempts: int
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "label": self.label,
            "outcome": self.outcome,
            "attempts": self.attempts,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class BisectResult:
    """The search's answer. ``culprit`` is the first candidate judged bad whose predecessor was judged
    good, or None; ``range`` the (last good, first not good) labels the change is known to lie between;
    ``conclusion`` the sentence to print; ``ambiguous`` the reasons the answer is not a single culprit
    or may mislead (inconclusive steps, a non-monotone history)."""

    candidates: tuple[str, ...]
    steps: tuple[Step, ...]
    culprit: str | None
    range: tuple[str, str]
    conclusion: str
    ambiguous: tuple[str, ...] = field(default=())

    @property
    def comparisons(self) -> int:
        """Measurements made: every attempt of every step."""
        return sum(step.attempts for step in self.steps)

    def as_dict(self) -> dict[str, Any]:
        return {
            "candidates": list(self.candidates),
            "steps": [step.as_dict() for step in self.steps],
            "comparisons": self.comparisons,
            "culprit": self.culprit,
            "range": list(self.range),
            "conclusion": self.conclusion,
            "ambiguous": list(self.ambiguous),
        }


Judge = Callable[[int, int], Judgement]  # (candidate index, attempt from 0) -> judgement


def max_comparisons(count: int) -> int:
    """The most steps a bisection of ``count`` candidates (good end included) needs when every step
    decides: the bad end, then ceil(log2) halvings of the rest."""
    return math.ceil(math.log2(count)) + 1 if count > 1 else 0


def bisect(
    labels: Sequence[str],
    judge: Judge,
    *,
    retries: int = 1,
    progress: Callable[[str], None] | None = None,
) -> BisectResult:
    """Binary-search ``labels`` (index 0 the good end, which is not judged: it is the reference) for
    the first candidate ``judge`` says is bad. Each step is judged up to ``1 + retries`` times while it
    is inconclusive; ``progress`` gets a line per step."""
    if len(labels) < 2:
        raise UsageError(
            f"ortperf bisect: {len(labels)} candidate(s) ({', '.join(labels) or 'none'}); "
            "a bisection needs a good and a bad end"
        )
    total = len(labels)
    steps: list[Step] = []

    def judged(index: int) -> Step:
        return _step(labels, index, judge, steps, retries=retries, progress=progress)

    end = judged(total - 1)
    if end.outcome == "good":
        return _result(
            labels,
            steps,
            None,
            (labels[0], labels[-1]),
            f"no change: {labels[-1]} gives the same verdict as {labels[0]}; nothing to bisect",
            (),
        )
    if end.outcome == "inconclusive":
        return _result(
            labels,
            steps,
            None,
            (labels[0], labels[-1]),
            f"inconclusive: {labels[-1]} could not be told apart from {labels[0]} even with more "
            "budget; no culprit named",
            (f"{labels[-1]} inconclusive",),
        )
    bad_kind: Outcome = end.outcome  # "bad", or "other" when the bad end went the other way
    ambiguous: list[str] = []
    low, high = 0, total - 1  # judged: low is good, high is bad_kind
    while high - low > 1:
        middle = (low + high) // 2
        step = judged(middle)
        if step.outcome == "good":
            low = middle
        elif step.outcome == bad_kind:
            high = middle
        elif step.outcome == "inconclusive":
            ambiguous.append(f"{step.label} inconclusive after {step.attempts} measurement(s)")
            return _result(
                labels,
                steps,
                None,
                (labels[low], labels[high]),
                f"inconclusive: the change lies after {labels[low]} "
                f"and at or before {labels[high]}, "
                f"but {step.label} could not be decided; no culprit named",
                tuple(ambiguous),
            )
        else:
            ambiguous.append(
                f"non-monotone history: {step.label} differs from {labels[0]} the other way than "
                f"{labels[-1]} does (slower, then faster, or the reverse)"
            )
            return _result(
                labels,
                steps,
                None,
                (labels[low], labels[high]),
                f"ambiguous: the change lies after {labels[low]} and at or before {labels[high]}, "
                f"but {step.label} went the other way; no single culprit",
                tuple(ambiguous),
            )
    if bad_kind == "other":
        ambiguous.append(
            f"{labels[-1]} differs from {labels[0]} the other way (an improvement, not a regression)"
        )
    culprit = labels[high]
    return _result(
        labels,
        steps,
        culprit,
        (labels[low], culprit),
        f"first {'changed' if bad_kind == 'bad' else 'improved'}: {culprit} "
        f"(the last like {labels[0]}: {labels[low]})",
        tuple(ambiguous),
    )


def linear_walk(
    labels: Sequence[str],
    judge: Judge,
    *,
    retries: int = 1,
    progress: Callable[[str], None] | None = None,
) -> BisectResult:
    """Judge ``labels`` one by one, oldest first, until one is not ``good``: the walk a bisection
    saves (up to ``len(labels) - 1`` comparisons), for comparing the two. The same answers as
    :func:`bisect`: a culprit only when the candidate before it was judged good."""
    if len(labels) < 2:
        raise UsageError(
            f"ortperf bisect: {len(labels)} candidate(s) ({', '.join(labels) or 'none'}); "
            "a walk needs a good and a bad end"
        )
    steps: list[Step] = []
    for index in range(1, len(labels)):
        step = _step(labels, index, judge, steps, retries=retries, progress=progress)
        outcome, attempt = step.outcome, step.attempts - 1
        if outcome == "good":
            continue
        span = (labels[index - 1], labels[index])
        if outcome == "inconclusive":
            return _result(
                labels,
                steps,
                None,
                span,
                f"inconclusive: {labels[index]} could not be decided; no culprit named",
                (f"{labels[index]} inconclusive after {attempt + 1} measurement(s)",),
            )
        word = "changed" if outcome == "bad" else "improved"
        ambiguous = () if outcome == "bad" else (f"{labels[index]} differs from {labels[0]} the other way",)
        return _result(
            labels,
            steps,
            labels[index],
            span,
            f"first {word}: {labels[index]} (the last like {labels[0]}: {labels[index - 1]})",
            ambiguous,
        )
    return _result(
        labels,
        steps,
        None,
        (labels[0], labels[-1]),
        f"no change: every candidate gives the same verdict as {labels[0]}",
        (),
    )


def _step(
    labels: Sequence[str],
    index: int,
    judge: Judge,
    steps: list[Step],
    *,
    retries: int,
    progress: Callable[[str], None] | None,
) -> Step:
    """Candidate ``index`` judged against the good end, again (with more budget) up to ``retries``
    times while it is inconclusive; the step is appended to ``steps``, and ``progress`` gets a line
    before each measurement and one with the outcome."""
    outcome: Outcome = "inconclusive"
    detail = ""
    attempt = 0
    for attempt in range(1 + max(retries, 0)):
        if progress is not None:
            again = f" again (attempt {attempt + 1}, more budget)" if attempt else ""
            progress(f"step {len(steps) + 1}: measuring {labels[index]} against {labels[0]}{again}")
        judgement = judge(index, attempt)
        outcome, detail = judgement.outcome, judgement.detail
        if outcome != "inconclusive":
            break
    step = Step(index, labels[index], outcome, attempt + 1, detail)
    steps.append(step)
    if progress is not None:
        progress(f"step {len(steps)}: {labels[index]}: {outcome}{f' ({detail})' if detail else ''}")
    return step


def _result(
    labels: Sequence[str],
    steps: Sequence[Step],
    culprit: str | None,
    span: tuple[str, str],
    conclusion: str,
    ambiguous: tuple[str, ...],
) -> BisectResult:
    return BisectResult(tuple(labels), tuple(steps), culprit, span, conclusion, ambiguous)


# Runtime ranges ------------------------------------------------------------------------------------

_RANGE = re.compile(r"^(?:(?P<dist>[A-Za-z0-9][A-Za-z0-9._-]*)==)?(?P<low>[^.\s][^\s]*?)\.\.(?P<high>\S+)$")


@dataclass(frozen=True)
class RuntimeRange:
    """``[DIST==]FROM..TO`` of ``--runtimes``: the distribution and the two ends as given."""

    distribution: str
    low: Version
    high: Version

    def __str__(self) -> str:
        return f"{self.distribution}=={self.low}..{self.high}"


def parse_runtime_range(text: str, default_distribution: str) -> RuntimeRange:
    """Parse ``--runtimes``; a bad range raises a :class:`UsageError` naming it."""
    match = _RANGE.match(text.strip())
    if match is None:
        raise UsageError(
            f"ortperf bisect --runtimes {text!r}: expected [DISTRIBUTION==]FROM..TO, "
            "such as onnxruntime==1.27.0..1.32.0"
        )
    dist = (match.group("dist") or default_distribution).lower()
    if not dist.startswith("onnxruntime"):
        raise UsageError(f"ortperf bisect --runtimes {text!r}: {dist} is not an ONNX Runtime distribution")
    try:
        low, high = Version(match.group("low")), Version(match.group("high"))
    except InvalidVersion as exc:
        raise UsageError(f"ortperf bisect --runtimes {text!r}: {exc}") from exc
    if low >= high:
        raise UsageError(f"ortperf bisect --runtimes {text!r}: FROM ({low}) must be older than TO ({high})")
    return RuntimeRange(dist, low, high)


def parse_index_versions(pip_output: str) -> list[Version]:
    """The versions ``pip index versions DIST`` lists (its 'Available versions:' line)."""
    for line in pip_output.splitlines():
        if line.strip().lower().startswith("available versions:"):
            found: list[Version] = []
            for item in line.split(":", 1)[1].split(","):
                try:
                    found.append(Version(item.strip()))
                except InvalidVersion:
                    continue
            return found
    return []


def releases_in(available: Sequence[Version], span: RuntimeRange) -> list[str]:
    """The final releases of ``available`` from ``span.low`` to ``span.high``, oldest first; fewer than
    two (or an end the index does not have) raise a :class:`UsageError` naming the range."""
    chosen = sorted(
        v
        for v in set(available)
        if span.low <= v <= span.high and not v.is_prerelease and not v.is_devrelease
    )
    if len(chosen) < 2:
        listed = ", ".join(str(v) for v in chosen) or "none"
        raise UsageError(
            f"ortperf bisect --runtimes {span}: the package index has {len(chosen)} release(s) of "
            f"{span.distribution} in that range ({listed}); a bisection needs at least two"
        )
    missing = [str(end) for end in (span.low, span.high) if end not in chosen]
    if missing:
        raise UsageError(
            f"ortperf bisect --runtimes {span}: the package index has no {span.distribution} "
            f"{' or '.join(missing)} (releases in range: {', '.join(str(v) for v in chosen)})"
        )
    return [str(v) for v in chosen]
