"""A runner class whose CPU generation changed: does a baseline recorded on one CPU route a check on another?

Question: baselines are recorded under one runner class name on one CPU generation, and the next run
of the same class lands on another (CI runner classes mix them). With recipe routing, what a baseline
recorded (model, settings, inputs, runtime) decides a check's route on any hardware: nothing changed
-> `unchanged`; the model changed and git keeps the recorded one -> side by side with it, measured here.

Targets, on the real CPU, for baselines recorded while the run believed it ran on another generation:

- the unchanged model passes with verdict `unchanged` (the example suite, and a one-check repository);
- a re-export (the same graph, other bytes) passes, side by side;
- models with +5%, +10% and +20% more work fail side by side with verdict `regression`;
- no check reports `missing`, and none says `regression` or `improved` when nothing changed.

Before recipe routing, every check on the real CPU counts as `missing` for its hardware (stored figures
are not compared across hardware): the targets above are then unmet by design.

Method: pytest in subprocesses, `ORTPERF_MACHINE=bench-class`, this checkout's `pytest_ortperf` first on
`PYTHONPATH`. The other generation is a fake `/proc/cpuinfo` (`benchmarks/fake_cpuinfo.py`): by default
the first of `tests/unit/data/cpuinfo/{zen4_avx512,zen3_avx2,sapphire_rapids_amx}.txt` (Arm:
`neoverse_v1_sve`, `neoverse_n1`) whose hardware identity differs from this machine's. Verdicts come from
`--ortperf-report`.

1. The example suite (`pytest examples`, 16 latency checks), temporary baseline directory: (1)
   recorded under the fake cpuinfo; (2) a plain run on the real CPU; (3) `--ortperf-update=missing` on
   the real CPU (records what this hardware still lacks: all 16 before recipe routing); (4) a plain
   run again.
2. A temporary git repository with one test (`ort_model` marker, `check_latency()`) and its
   `model.onnx` committed: the base model of a `benchmarks/gate_paths.py` family (`--family`, default
   conv). Recorded under the fake cpuinfo (baselines outside the repository); then per trial, in one
   shuffled order, `model.onnx` in the working tree is left as committed or replaced by the re-export
   or the +5/+10/+20% model (an uncommitted change: the recorded model is rebuilt from git), a plain
   run on the real CPU, and the file restored.

    python -m benchmarks.hardware_change > benchmarks/results/hardware_change.md

``--control`` records on the real CPU instead (no fake cpuinfo): the same runs on one hardware
identity, where today's routes already apply, so a target missed there is not about hardware.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

BAD = ("regression", "improved")
MISSING = "missing"
CPUINFO = REPO / "tests" / "unit" / "data" / "cpuinfo"
CANDIDATES = {
    "x86_64": ("zen4_avx512.txt", "zen3_avx2.txt", "sapphire_rapids_amx.txt"),
    "aarch64": ("neoverse_v1_sve.txt", "neoverse_n1.txt"),
}
CLASS = "bench-class"

# The cases of the repository part: the model in the working tree, and what passing the target means.
CASES: tuple[tuple[str, str], ...] = (
    ("unchanged", "as committed"),
    ("re-export", "the same graph, other bytes"),
    ("+5%", "5% more work"),
    ("+10%", "10% more work"),
    ("+20%", "20% more work"),
)
TEST_FILE = """\
import pytest

pytestmark = pytest.mark.ort_model("model.onnx", dims={{"batch": {batch}}})


def test_latency(ort_perf):
    ort_perf.check_latency()
"""
PYTEST_INI = """\
[pytest]
ortperf_providers = cpu
ortperf_opt_levels = all
"""


def other_generation(arch: str, real_slug: str) -> Path:
    """The first fake cpuinfo of this architecture whose hardware identity is not this machine's."""
    from pytest_ortperf.store.hardware import detect_hardware
    from pytest_ortperf.store.machine import usable_cores

    for name in CANDIDATES.get(arch, ()):
        path = CPUINFO / name
        if detect_hardware(usable_cores(), cpuinfo=path, arch=arch).slug != real_slug:
            return path
    raise SystemExit(f"no fake cpuinfo of another generation for {arch} ({real_slug}); pass --cpuinfo")


def environment(cpuinfo: Path | None, home: Path) -> dict[str, str]:
    """pytest's environment: the runner class, this checkout first, git that reads no user config."""
    env = dict(os.environ, ORTPERF_MACHINE=CLASS)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.pop("ORTPERF_BENCH_CPUINFO", None)
    if cpuinfo is not None:
        env["ORTPERF_BENCH_CPUINFO"] = str(cpuinfo)
    env |= {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / "no-gitconfig")}
    env["GIT_CEILING_DIRECTORIES"] = str(home)
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "CI"):
        env.pop(name, None)
    return env


@dataclass(frozen=True)
class Run:
    latency: list[dict[str, Any]]
    run_errors: list[str]
    seconds: float
    output: str

    def verdicts(self) -> collections.Counter[str]:
        return collections.Counter(str(c["verdict"]) for c in self.latency)

    def missing(self) -> int:
        """Checks that say missing: by verdict, or a 'no latency baseline' message."""
        return sum(
            c["verdict"] == MISSING or "no latency baseline" in str(c.get("message") or "")
            for c in self.latency
        )


def pytest_run(
    label: str, cwd: Path, args: Sequence[str], report: Path, cpuinfo: Path | None, home: Path
) -> Run:
    report.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "pytest", *args, "-q", "-p", "no:cacheprovider",
        "-p", "benchmarks.fake_cpuinfo", f"--ortperf-report={report}",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=cwd, env=environment(cpuinfo, home), capture_output=True, text=True, check=False
    )
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1) or not report.is_file():
        raise RuntimeError(
            f"{label}: pytest exited {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    document = json.loads(report.read_text())
    latency = [c for c in document["checks"] if c["kind"] == "latency"]
    return Run(latency, list(document.get("run_errors", [])), seconds, done.stdout + done.stderr)


RECORD_ATTEMPTS = 4


def record(
    label: str, cwd: Path, args: Sequence[str], report: Path, cpuinfo: Path | None, home: Path
) -> tuple[str, float, list[str]]:
    """``--ortperf-update``, then ``--ortperf-update=missing`` (under the same CPU) while a check is left
    unrecorded (a noisy spell: 'too noisy'), at most ``RECORD_ATTEMPTS`` runs. The verdicts of each
    run, their seconds, and what went wrong."""
    shown, seconds, problems = [], 0.0, []
    extra = "--ortperf-update"
    for _ in range(RECORD_ATTEMPTS):
        run = pytest_run(label, cwd, [*args, extra], report, cpuinfo, home)
        seconds += run.seconds
        shown.append(
            counted(run.verdicts()) if extra == "--ortperf-update" else f"then {counted(run.verdicts())}"
        )
        problems += [f"{label}: run error {e}" for e in run.run_errors]
        left = set(run.verdicts()) - {"new", "updated", "unchanged"}
        if run.latency and not left:
            return "; ".join(shown), seconds, problems
        extra = "--ortperf-update=missing"
    return (
        "; ".join(shown),
        seconds,
        [*problems, f"{label}: not recorded in {RECORD_ATTEMPTS} runs ({shown[-1]})"],
    )


def counted(counter: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counter.items())) or "-"


def change(check: Mapping[str, Any]) -> float | None:
    """The decisive ratio (side by side, stored) or, for an unchanged check, the drift."""
    for field in ("change", "drift"):
        value = check.get(field)
        if isinstance(value, Mapping) and isinstance(value.get("ratio"), (int, float)):
            return float(value["ratio"])
    return None


def spread(ratios: Sequence[float]) -> str:
    if not ratios:
        return "-"
    middle, low, high = ((r - 1) * 100 for r in (statistics.median(ratios), min(ratios), max(ratios)))
    return f"{middle:+.1f}% ({low:+.1f} .. {high:+.1f})"


def first_line(run: Run) -> str:
    message = next((str(c["message"]) for c in run.latency if c.get("message")), "")
    return message.splitlines()[0] if message else "-"


def examples_part(cpuinfo: Path | None, fake: str, real: str, tmp: Path) -> tuple[list[str], list[str]]:
    """The example suite: record on the fake CPU, then plain, update=missing and plain on the real one."""
    base, report = tmp / "examples-baselines", tmp / "examples-report.json"
    lines = [
        "## 1. The example suite (`pytest examples`)",
        "",
        "| step | CPU the run sees | latency verdicts | paths | missing | seconds |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    failures: list[str] = []
    example = ""
    args = ["examples", f"--ortperf-baseline-dir={base}", "--ortperf-missing=pass"]
    verdicts, seconds, problems = record("examples 1. record", REPO, args, report, cpuinfo, tmp)
    lines.append(f"| 1. record | {fake} | {verdicts} | - | - | {seconds:.1f} |")
    failures += problems
    steps = [
        ("2. plain run", []),
        ("3. --ortperf-update=missing", ["--ortperf-update=missing"]),
        ("4. plain run", []),
    ]
    for label, extra in steps:
        run = pytest_run(label, REPO, [*args, *extra], report, None, tmp)
        paths = counted(collections.Counter(str(c["path"]) for c in run.latency))
        shown = counted(run.verdicts())
        lines.append(f"| {label} | {real} | {shown} | {paths} | {run.missing()} | {run.seconds:.1f} |")
        failures += [f"examples {label}: run error {e}" for e in run.run_errors]
        if label == "2. plain run":
            failures += [
                f"examples step 2: {c['test']}: {c['verdict']}"
                for c in run.latency
                if c["verdict"] != "unchanged"
            ]
            example = first_line(run)
    stored = json.loads(next(base.glob("*.json")).read_text())["entries"]
    keys = sorted({machine for entry in stored.values() for machine in entry})
    lines += [
        "",
        f"Entries of each check after step 3: {', '.join(f'`{k}`' for k in keys)}.",
        "",
        f"A message of step 2: `{example}`",
    ]
    return lines, failures


def repository_part(
    cpuinfo: Path | None, fake: str, real: str, tmp: Path, family_name: str, reps: int, seed: int
) -> tuple[list[str], list[str]]:
    """One check in a temporary git repository: recorded on the fake CPU, each case run on the real one."""
    from benchmarks.gate_paths import FAMILIES, Models

    family = next(f for f in FAMILIES if f.name == family_name)
    (tmp / "models").mkdir()
    models = Models(family, tmp / "models")
    repo, base, report = tmp / "repo", tmp / "repo-baselines", tmp / "repo-report.json"
    repo.mkdir()
    env = environment(None, tmp)

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
        return done.stdout

    def changed() -> set[str]:
        """Paths git sees changed or new in the working tree (``git status --porcelain``: 'XY path')."""
        return {line[3:] for line in git("status", "--porcelain", "--untracked-files=all").splitlines()}

    git("init", "-q")
    git("config", "user.name", "Bench")
    git("config", "user.email", "bench@example.com")
    git("config", "commit.gpgsign", "false")
    shutil.copyfile(models.paths["base"], repo / "model.onnx")
    (repo / "test_model.py").write_text(TEST_FILE.format(batch=family.batch), encoding="utf-8")
    (repo / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    (repo / ".gitignore").write_text("__pycache__/\n", encoding="utf-8")
    git("add", "model.onnx", "test_model.py", "pytest.ini", ".gitignore")
    git("commit", "-q", "-m", f"{family.name} model and its latency test")
    blob = git("rev-parse", "HEAD:model.onnx").strip()
    args = [f"--ortperf-baseline-dir={base}"]

    recorded, record_s, failures = record("repository record", repo, args, report, cpuinfo, tmp)
    plan = [case for case, _ in CASES for _ in range(reps)]
    random.Random(seed).shuffle(plan)
    runs: dict[str, list[Run]] = {case: [] for case, _ in CASES}
    dirty: set[str] = set()
    for number, case in enumerate(plan, 1):
        if case != "unchanged":
            shutil.copyfile(models.paths[case], repo / "model.onnx")
        dirty |= changed() - {"model.onnx"}  # what the run sees: the model's change alone
        run = pytest_run(f"{case} #{number}", repo, args, report, None, tmp)
        git("checkout", "--", "model.onnx")
        runs[case].append(run)
        print(
            f"[{time.strftime('%H:%M:%S')}] repository {number}/{len(plan)} {case}: "
            f"{counted(run.verdicts())} ({run.seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )
    if dirty:
        failures.append(
            f"repository: files other than model.onnx changed in the working tree: {sorted(dirty)}"
        )

    lines = [
        f"## 2. One check in a temporary git repository ({family.name})",
        "",
        f"`model.onnx` committed (blob `{blob[:12]}`), the base model of the `{family.name}` family of "
        f"`benchmarks/gate_paths.py` (batch {family.batch}); recorded on {fake} "
        f"({recorded}, {record_s:.1f} s); each case {reps} plain runs on "
        f"{real}, in one shuffled order, the working tree's `model.onnx` replaced (uncommitted) and "
        "restored after each run.",
        "",
        "| case | model.onnx in the working tree | latency verdicts | paths | change: median (range) | "
        "missing | target | seconds per run, median |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for case, description in CASES:
        chosen = runs[case]
        checks = [c for run in chosen for c in run.latency]
        verdicts = collections.Counter(str(c["verdict"]) for c in checks)
        paths = counted(collections.Counter(str(c["path"]) for c in checks))
        ratios = [r for r in (change(c) for c in checks) if r is not None]
        missing = sum(run.missing() for run in chosen)
        if case == "unchanged":
            met = bool(checks) and set(verdicts) == {"unchanged"}
        elif case == "re-export":
            met = bool(checks) and not any(c["failed"] for c in checks)
        else:
            met = bool(checks) and set(verdicts) == {"regression"}
        met = met and missing == 0 and len(checks) == len(chosen)
        if not met:
            failures.append(f"repository {case}: verdicts {counted(verdicts)}; {missing} reporting missing")
        failures += [f"repository {case}: run error {e}" for run in chosen for e in run.run_errors]
        seconds = statistics.median(run.seconds for run in chosen) if chosen else float("nan")
        target = {"unchanged": "`unchanged`", "re-export": "passes"}.get(case, "`regression`")
        lines.append(
            f"| {case} | {description} | {counted(verdicts)} | {paths} | {spread(ratios)} | {missing} | "
            f"{target}: {'met' if met else '**not met**'} | {seconds:.1f} |"
        )
    examples = {case: first_line(runs[case][0]) for case in ("unchanged", "+5%") if runs[case]}
    lines += [""] + [f"A message of the {case} case: `{text}`" for case, text in examples.items()]
    return lines, failures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cpuinfo", type=Path, help="the other generation's /proc/cpuinfo (default: see the description)"
    )
    parser.add_argument(
        "--parts", type=lambda v: v.split(","), default=["examples", "repository"],
        help="examples, repository, or both (default)",
    )  # fmt: skip
    parser.add_argument("--family", default="conv", help="the repository's model: a gate_paths family")
    parser.add_argument("--reps", type=int, default=3, help="plain runs per case in the repository")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--control",
        action="store_true",
        help="record on this CPU, not the fake one: the same runs, one hardware",
    )
    args = parser.parse_args(argv)
    unknown = set(args.parts) - {"examples", "repository"}
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    from benchmarks.conditions import Sampler, code_state, loadavg
    from benchmarks.gate_paths import FAMILIES
    from pytest_ortperf.ort.runtime import runtime_info
    from pytest_ortperf.store.hardware import detect_hardware
    from pytest_ortperf.store.machine import detect_machine, usable_cores

    if args.family not in {f.name for f in FAMILIES}:
        parser.error(f"unknown family {args.family} (known: {', '.join(f.name for f in FAMILIES)})")
    real = detect_machine()
    cpuinfo = (args.cpuinfo or other_generation(real.arch, real.hardware.slug)).resolve()
    fake = detect_hardware(usable_cores(), cpuinfo=cpuinfo, arch=real.arch)
    if fake.slug == real.hardware.slug:
        parser.error(f"{cpuinfo} describes this machine's hardware ({fake.slug}): nothing would change")
    shown = cpuinfo.relative_to(REPO) if cpuinfo.is_relative_to(REPO) else cpuinfo
    fake_seen, real_seen = f"{fake.describe()} (fake)", real.hardware.describe()
    record_cpuinfo: Path | None = cpuinfo
    if args.control:
        record_cpuinfo, fake_seen = None, f"{real_seen} (control: this CPU)"

    with tempfile.TemporaryDirectory(prefix="ortperf-hw-") as name:
        tmp = Path(name)
        probe = subprocess.run(
            [sys.executable, "-c", "import pytest_ortperf; print(pytest_ortperf.__file__)"],
            cwd=tmp, env=environment(None, tmp), capture_output=True, text=True, check=True,
        )  # fmt: skip
        imported = Path(probe.stdout.strip()).resolve()
        if not imported.is_relative_to(REPO):
            raise SystemExit(f"pytest's pytest_ortperf would be {imported}, not this checkout's ({REPO})")
        lines = [
            "# A runner class whose CPU generation changed",
            "",
            f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {code_state()}",
            (
                f"- recorded as: {fake.describe()} (`{shown}`, slug `{fake.slug}`)"
                if not args.control
                else f"- control: recorded on this CPU too (`--control`; the fake would be `{shown}`)"
            ),
            f"- running on: {real_seen} ({real.cpu}, slug `{real.hardware.slug}`; {platform.machine()})",
            f"- {runtime_info().describe()}; runner class `ORTPERF_MACHINE={CLASS}`; load average at start "
            f"{loadavg()}",
        ]
        sampler = Sampler()
        sampler.start()
        failures: list[str] = []
        body: list[str] = []
        if "examples" in args.parts:
            part, failed = examples_part(record_cpuinfo, fake_seen, real_seen, tmp)
            body += ["", *part]
            failures += failed
        if "repository" in args.parts:
            part, failed = repository_part(
                record_cpuinfo, fake_seen, real_seen, tmp, args.family, args.reps, args.seed
            )
            body += ["", *part]
            failures += failed
        lines.append(f"- load: {sampler.stop()}")
    lines += body
    lines += ["", "## Targets", ""]
    if failures:
        lines += [f"Not met ({len(failures)}):", ""] + [f"- {f}" for f in failures]
    else:
        lines.append(
            "Met: the unchanged model `unchanged`, the re-export passed, +5/+10/+20% `regression`, "
            "nothing `missing`, no run errors."
        )
    print("\n".join(lines))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
