"""The ``ortperf`` console script."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_ortperf import defaults
from pytest_ortperf.errors import OrtperfError, UsageError
from pytest_ortperf.ort.providers import KNOWN_PROVIDERS, parse_providers, resolve_provider
from pytest_ortperf.ort.runtime import installed_distributions
from pytest_ortperf.version import __version__

if TYPE_CHECKING:
    from pytest_ortperf.profiling.trace import SummaryFile


def _version_text() -> str:
    dists = installed_distributions()
    runtime = ", ".join(f"{name} {version}" for name, version in dists) or "onnxruntime not installed"
    return f"pytest-ortperf {__version__} ({runtime})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ortperf",
        description="ONNX Runtime latency and accuracy regression gate for pytest "
        "(pytest-ortperf). Tests run through pytest; this command inspects and maintains.",
    )
    parser.add_argument("--version", action="version", version=_version_text())
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    providers = commands.add_parser(
        "providers",
        help="probe which execution providers can really run here, and why not",
        description="Create a one-node session with each provider (ORT fallback off) in a child "
        "process and report whether it really runs, with the reason when it does not.",
    )
    providers.add_argument(
        "names",
        nargs="?",
        default=None,
        help="comma-separated providers to probe (default: every provider this onnxruntime lists)",
    )
    update = commands.add_parser(
        "update",
        help="record or refresh baselines: runs pytest --ortperf-update with the given arguments",
        description="Run pytest with --ortperf-update; every argument after 'update' goes to pytest.",
    )
    update.add_argument("pytest_args", nargs=argparse.REMAINDER, help="arguments for pytest")
    show = commands.add_parser("show", help="print what the baseline files hold")
    show.add_argument(
        "--baseline-dir",
        default=None,
        help="directory of baseline files (default: ortperf_baseline_dir of the nearest pytest.ini, "
        "pyproject.toml [tool.pytest.ini_options], tox.ini [pytest] or setup.cfg [tool:pytest] found "
        "upward from the current directory, relative to that file; without the key 'baselines' beside "
        "that file; without such a file ./baselines)",
    )
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.add_argument(
        "--max-cv",
        default=None,
        metavar="PCT",
        help="mark figures noisy as an update with --ortperf-max-cv=PCT does (default: ortperf_max_cv of "
        "the configuration file found as for --baseline-dir, else 10%%)",
    )
    show.add_argument(
        "--threshold",
        default=None,
        metavar="PCT",
        help="mark figures coarse (they cannot detect a change of PCT) as an update with "
        "--ortperf-latency-threshold=PCT does (default: ortperf_latency_threshold of the configuration "
        "file found as for --baseline-dir, else 10%%)",
    )
    merge = commands.add_parser(
        "merge",
        help="merge baseline directories recorded on several runners into one",
        description="Take into the target every entry a source directory changed (new or re-recorded); "
        "report entries two sources changed differently instead of picking one. Additive and "
        "deterministic; a damaged input stops it before anything is written.",
    )
    merge.add_argument("sources", nargs="+", metavar="DIR", help="baseline directories to merge")
    merge.add_argument(
        "--into",
        default=None,
        metavar="DIR",
        help="the directory to merge into (default: the configured baseline directory, as for 'show')",
    )
    report = commands.add_parser(
        "report",
        help="render JSON reports as one self-contained HTML page, merging several CI jobs' reports",
        description="Render one or more JSON reports (written with --ortperf-report) as one HTML page; "
        "each report is a job on the page (a CI matrix's runners side by side). A report that cannot "
        "be read is named and left out; the page shows the others.",
    )
    report.add_argument("reports", nargs="+", metavar="JSON", help="JSON reports written by --ortperf-report")
    report.add_argument("--html", required=True, metavar="PATH", help="the HTML page to write")
    profile = commands.add_parser(
        "profile",
        help="summarize an ONNX Runtime trace, or a marked test's profile summary, by operator",
        description="Summarize an ORT trace (session-level or run-level) by op type, node and provider; "
        "or show the summary.json of a test marked ort_profile, of its folder, or of every test in the "
        "profile dir.",
    )
    profile.add_argument(
        "trace",
        metavar="PATH",
        help="a trace JSON written by ONNX Runtime profiling, a marked test's summary.json or folder, "
        "or the profile dir",
    )
    profile.add_argument("--top", type=int, default=10, help="rows per table (default: 10)")
    profile.add_argument("--json", action="store_true", help="machine-readable output")
    profile.add_argument(
        "--provider",
        default=None,
        help="the provider that was requested, to list nodes that fell back to CPU",
    )
    env = commands.add_parser(
        "env",
        help="create, list and remove cached reference environments holding another ONNX Runtime",
        description="Cached virtual environments, each holding one reference ONNX Runtime, in "
        ".ortperf/envs at the top of the git work tree (outside git: the nearest directory upward "
        "holding pytest.ini, pyproject.toml, tox.ini or setup.cfg), the same from any directory of the "
        "repository, where a pytest run looks for them. The same specs, in any order, give the same one.",
    )
    env_commands = env.add_subparsers(dest="env_command", metavar="ENV_COMMAND", required=True)
    env_dir_help = "the environment cache (default: .ortperf/envs at the top of the git work tree)"
    env_create = env_commands.add_parser(
        "create",
        help="create (or reuse) the environment for these package specs and print its python",
        description="Create a virtual environment and pip install the specs into it, or reuse the "
        "one already made for them. Prints only the environment's python on stdout; pip's output "
        "goes to stderr.",
    )
    env_create.add_argument(
        "specs",
        nargs="+",
        metavar="SPEC",
        help="package specs such as onnxruntime==1.31.1 or onnxruntime-gpu==1.30.0 (one must be "
        "an ONNX Runtime), and others such as numpy<2",
    )
    env_create.add_argument("--dir", default=None, help=env_dir_help)
    env_create.add_argument(
        "--python",
        default=None,
        help="the interpreter to base the environment on (default: the one running ortperf)",
    )
    env_list = env_commands.add_parser("list", help="list the environments, incomplete ones marked")
    env_list.add_argument("--dir", default=None, help=env_dir_help)
    env_list.add_argument("--json", action="store_true", help="machine-readable output")
    env_remove = env_commands.add_parser(
        "remove",
        help="remove an environment by key, key prefix or specs, or all of them",
    )
    env_remove.add_argument(
        "what",
        nargs="*",
        metavar="KEY|SPEC",
        help="a key, a unique key prefix of 4 or more characters, or the specs it was created with",
    )
    env_remove.add_argument(
        "--all", action="store_true", help="remove every environment, incomplete ones too"
    )
    env_remove.add_argument("--dir", default=None, help=env_dir_help)
    bisect = commands.add_parser(
        "bisect",
        help="find the onnxruntime release, or the commit of the model, that changed a test's check",
        description="Binary-search the releases FROM..TO from the package index (each step runs the "
        "test's pytest item in a release's environment, fetched once into .ortperf/envs, and compares its "
        "graph with the good end's), or the commits GOOD..BAD that changed the test's model (each step "
        "measures the model at a commit against the model at GOOD side by side, as --ortperf-ab does); "
        "names the first that differs and explains it.",
    )
    bisect.add_argument(
        "nodeid", help="the test's pytest node id, such as 'tests/test_x.py::test_y[cpu-all]'"
    )
    ends = bisect.add_mutually_exclusive_group(required=True)
    ends.add_argument(
        "--runtimes",
        metavar="[DIST==]FROM..TO",
        help="the release range, such as onnxruntime==1.27.0..1.32.0 (DIST defaults to the installed one)",
    )
    ends.add_argument(
        "--commits",
        metavar="GOOD..BAD",
        help="the commit range, such as v1.2..HEAD: the commits in it that changed the test's model, "
        "in this environment's onnxruntime; the test as it is at BAD",
    )
    bisect.add_argument(
        "--check",
        default=None,
        choices=["graph", "latency"],
        help="the question each step asks; graph: is the optimized graph the good end's (releases); "
        "latency: is the model measured side by side as fast as at GOOD (commits) (default: graph for "
        "--runtimes, latency for --commits)",
    )
    bisect.add_argument(
        "--graph",
        default=defaults.GRAPH_MODE,
        choices=["fusions", "exact"],
        help="what change of the graph makes a release differ, as --ortperf-graph: fusions (a lost "
        f"fusion, nodes off the provider, new copies) or exact (any change) (default: {defaults.GRAPH_MODE})",
    )
    bisect.add_argument(
        "--budget",
        default=defaults.AB_BUDGET_S,
        type=float,
        metavar="SECONDS",
        help="--commits: the side-by-side budget of a step, as --ortperf-ab-budget; an inconclusive step "
        "is measured again with twice as much (default: 3)",
    )
    bisect.add_argument(
        "--walk",
        default="bisect",
        choices=["bisect", "linear"],
        help="--commits: bisect (default), or linear: every commit in order, oldest first, until one "
        "differs (what bisection saves, to compare)",
    )
    bisect.add_argument("--report", default=None, metavar="PATH", help="write every step as JSON")
    bisect.add_argument(
        "--fetch",
        default="auto",
        help="auto: pip installs a release missing from .ortperf/envs; never: refuse, naming it (or a "
        "switch: on/off, yes/no, true/false, 1/0)",
    )
    init = commands.add_parser(
        "init",
        help="write a starting configuration for a folder of models: pytest settings, a CI workflow",
        description="Find the *.onnx files and model-zoo folders under PATH; write pytest.ini (with "
        "ortperf_models, so pytest collects them as tests), a .gitignore line and a CI workflow. A file "
        "that exists is never overwritten: what it would add is printed instead.",
    )
    init.add_argument("path", nargs="?", default=".", help="the repository's folder (default: .)")
    init.add_argument(
        "--ci", default="github", choices=("github", "gitlab", "azure"), help="the CI workflow to write"
    )
    init.add_argument(
        "--providers",
        default=defaults.PROVIDERS,
        help=f"execution providers to test, comma separated (default: {defaults.PROVIDERS})",
    )
    return parser


def _profile(trace: str, top: int, as_json: bool, provider: str | None) -> int:
    """A trace, a marked test's summary.json, or a folder of them (a test's, or the profile dir)."""
    import json

    from pytest_ortperf.profiling.trace import (
        SummaryFile,
        load_profile,
        summarize,
        summary_lines,
        with_requested_provider,
    )

    requested = resolve_provider(provider, source="--provider").name if provider else None
    path = Path(trace)
    problems: list[str] = []
    if path.is_dir():
        summaries = []
        for found in _summary_files(path):
            try:  # a damaged summary fails only itself: the others are shown
                summaries.append(_summary_file(found))
            except OrtperfError as exc:
                problems.append(str(exc))
    else:
        loaded = load_profile(path)
        if not isinstance(loaded, SummaryFile):
            summary = summarize(loaded, requested_provider=requested)
            if as_json:
                print(json.dumps(summary.as_dict(), indent=1, sort_keys=True))
            else:
                print("\n".join(summary_lines(summary, top=max(top, 1))))
            return 0
        summaries = [loaded]
    summaries = [replace(f, summary=with_requested_provider(f.summary, requested)) for f in summaries]
    for problem in problems:
        print(f"ortperf: error: {problem}", file=sys.stderr)
    if as_json:
        documents = [f.as_dict() for f in summaries]
        print(json.dumps(documents if path.is_dir() else documents[0], indent=1, sort_keys=True))
        return 2 if problems else 0
    blocks = []
    for found_summary in summaries:
        names = found_summary.traces
        shown = ", ".join(names) if len(names) <= 3 else f"{names[0]} .. {names[-1]}"
        variant = found_summary.variant
        variant = f" (variant {variant})" if variant and f"[{variant}]" not in found_summary.test else ""
        lines = [
            f"profile of {found_summary.test}{variant}: {found_summary.path}",
            f"{len(names)} trace(s) in {found_summary.path.parent}" + (f": {shown}" if names else ""),
            *summary_lines(found_summary.summary, top=max(top, 1)),
            *(f"WARNING: {warning}" for warning in found_summary.warnings),
        ]
        blocks.append("\n".join(lines))
    if blocks:
        print("\n\n".join(blocks))
    return 2 if problems else 0


def _summary_file(path: Path) -> SummaryFile:
    from pytest_ortperf.profiling.trace import SummaryFile, TraceError, load_profile

    loaded = load_profile(path)
    if not isinstance(loaded, SummaryFile):
        raise TraceError(f"'{path}' is a trace, not the summary.json that pytest-ortperf writes.")
    return loaded


def _summary_files(directory: Path) -> list[Path]:
    """The summary.json of a marked test's folder, or those of every test folder in a profile dir."""
    own = directory / "summary.json"
    if own.is_file():
        return [own]
    found = sorted(directory.glob("*/summary.json"))
    if not found:
        raise OrtperfError(
            f"'{directory}' holds no summary.json: give a trace, a marked test's summary.json or folder, "
            f"or the profile dir (--ortperf-profile-dir, default {defaults.PROFILE_DIR})"
        )
    return found


def _update(pytest_args: Sequence[str]) -> int:
    import pytest

    return int(pytest.main(["--ortperf-update", *pytest_args]))


def _show(directory: str | None, as_json: bool, max_cv: str | None, threshold: str | None = None) -> int:
    from pytest_ortperf.reports.show import (
        configured_baseline_dir,
        configured_max_cv,
        configured_threshold,
        show_baselines,
    )
    from pytest_ortperf.values import parse_threshold

    where = Path(directory) if directory is not None else configured_baseline_dir(Path.cwd())
    if max_cv is not None:
        cv = parse_threshold(max_cv, source="--max-cv")
    else:
        cv = configured_max_cv(Path.cwd())[0]
    if threshold is not None:
        limit = parse_threshold(threshold, source="--threshold")
    else:
        limit = configured_threshold(Path.cwd())[0]
    from pytest_ortperf.kinds import builtin_kinds

    decoders = builtin_kinds().part_decoders()
    lines, problems = show_baselines(where, as_json=as_json, max_cv=cv, threshold=limit, decoders=decoders)
    for line in lines:
        print(line)
    for problem in problems:
        print(f"ortperf: error: {problem}", file=sys.stderr)
    return 1 if problems else 0


def _merge(sources: Sequence[str], into: str | None) -> int:
    from pytest_ortperf.kinds import builtin_kinds
    from pytest_ortperf.reports.show import configured_baseline_dir
    from pytest_ortperf.store.merge import merge

    target = Path(into) if into is not None else configured_baseline_dir(Path.cwd())
    decoders = builtin_kinds().part_decoders()
    report = merge([Path(source) for source in sources], target, decoders=decoders)
    print(
        f"ortperf merge: {report.taken} entries taken into {target}, {report.unchanged} unchanged, "
        f"{len(report.conflicts)} conflicting"
    )
    for path in report.written:
        print(f"wrote {path}")
    for conflict in report.conflicts:
        print(f"ortperf: conflict: {conflict}", file=sys.stderr)
    return 1 if report.conflicts else 0


def _report(sources: Sequence[str], html: str) -> int:
    from pytest_ortperf.reports.html import ReportFileError, read_reports, write_page

    target = Path(html)
    inputs = [Path(source) for source in sources]
    if any(target.resolve() == source.resolve() for source in inputs):
        raise OrtperfError(f"--html {html}: that is one of the reports to read; it is not overwritten")
    jobs, problems = read_reports(inputs)
    for problem in problems:
        print(f"ortperf: error: {problem}", file=sys.stderr)
    if not jobs:
        raise ReportFileError("no report could be read; no page was written")
    from pytest_ortperf.kinds import builtin_kinds

    write_page(target, jobs, problems=problems, drawings=builtin_kinds().drawings())
    checks = sum(len(job.document["checks"]) for job in jobs)
    print(f"ortperf report: wrote {target} ({len(jobs)} report(s), {checks} checks)")
    return 1 if problems else 0


def _providers(names: str | None) -> int:
    from pytest_ortperf.ort.probe import ProviderProber
    from pytest_ortperf.ort.runtime import runtime_info

    info = runtime_info()
    print(f"onnxruntime: {info.describe()}")
    if names is None:
        listed = set(info.available_providers)
        specs = tuple(spec for spec in KNOWN_PROVIDERS if spec.name in listed)
    else:
        specs = parse_providers(names, source="ortperf providers")
    prober = ProviderProber(info.available_providers, info.describe())
    usable = 0
    for spec in specs:
        result = prober.probe(spec)
        usable += result.available
        status = "usable" if result.available else f"unavailable: {result.reason}"
        print(f"{spec.short:>10}  {spec.name}: {status}")
    return 0 if usable else 1


def _env(args: argparse.Namespace) -> int:
    import json

    from pytest_ortperf.errors import UsageError
    from pytest_ortperf.ort.envs import EnvCache, env_root
    from pytest_ortperf.reports.show import format_table

    root = Path(args.dir) if args.dir is not None else env_root(Path.cwd())
    cache = EnvCache(root)
    if args.env_command == "create":
        python = args.python if args.python is not None else sys.executable
        created = cache.create(args.specs, python=python, log=sys.stderr)
        print(created.python)
        return 0
    if args.env_command == "list":
        envs, incomplete = cache.list(), cache.incomplete()
        if args.json:
            listing = {
                "root": str(cache.root),
                "envs": [env.as_dict() for env in envs],
                "incomplete": [str(path) for path in incomplete],
            }
            print(json.dumps(listing, indent=1, sort_keys=True))
            return 0
        rows = [(e.key, e.runtime, " ".join(e.specs), str(e.python), e.created) for e in envs]
        rows += [(path.name, "incomplete", "-", str(path), "-") for path in incomplete]
        if not rows:
            print(f"no environments in '{cache.root}'")
            return 0
        for line in format_table([("KEY", "RUNTIME", "SPECS", "PYTHON", "CREATED"), *rows]):
            print(line)
        return 0
    if args.all == bool(args.what):
        raise UsageError("ortperf env remove: give a key, a key prefix or specs, or --all (not both)")
    removed = cache.remove_all() if args.all else cache.remove(" ".join(args.what))
    for path in removed:
        print(f"removed {path}")
    if not removed:
        print(f"no environments in '{cache.root}'")
    return 0


def _init(path: str, ci: str, providers: str) -> int:
    from pytest_ortperf.scaffold import decoder_models, init, report, unsized_models

    root = Path(path)
    names = [spec.short for spec in parse_providers(providers, source="--providers")]
    decoders = decoder_models(root) if root.is_dir() else []
    changes = init(root, ci=ci, providers=names, decoders=decoders)
    print(report(changes, root, unsized=unsized_models(root, decoders=decoders)), end="")
    return 0


def _bisect_command(args: argparse.Namespace) -> int:
    from pytest_ortperf.gate import bisect_commits, bisect_runtimes

    if args.commits is not None:
        if args.check not in (None, bisect_commits.CHECK):
            raise UsageError(
                f"ortperf bisect --commits: --check {args.check} is not built for commits; "
                f"--check {bisect_commits.CHECK} is (the model at each commit against GOOD's, side by side)"
            )
        if not args.budget > 0:
            raise UsageError(f"ortperf bisect --budget {args.budget:g}: expected seconds above 0")
        return _bisect_commits(args.nodeid, args.commits, args.report, args.budget, args.walk)
    if args.check not in (None, bisect_runtimes.CHECK):
        raise UsageError(
            f"ortperf bisect --runtimes: --check {args.check} is not built for releases yet; "
            f"--check {bisect_runtimes.CHECK} is"
        )
    from pytest_ortperf.plugin.options import Source, parse_fetch

    fetch = "auto" if parse_fetch(args.fetch, Source("--fetch")) else "never"
    return _bisect(args.nodeid, args.runtimes, args.report, fetch, args.graph)


def _bisect_commits(nodeid: str, commits: str, report: str | None, budget_s: float, walk: str) -> int:
    from pytest_ortperf.gate.bisect_commits import bisect_commits

    done = bisect_commits(
        nodeid,
        commits,
        cwd=Path.cwd(),
        python=Path(sys.executable),
        budget_s=budget_s,
        linear=walk == "linear",
        progress=lambda line: print(f"ortperf bisect: {line}", file=sys.stderr, flush=True),
    )
    for line in done.lines():
        print(line)
    if report:
        Path(report).write_text(json.dumps(done.as_dict(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0 if done.result.culprit is not None or "no change" in done.result.conclusion else 1


def _bisect(nodeid: str, runtimes: str, report: str | None, fetch: str, mode: str) -> int:
    from pytest_ortperf.gate import bisect_runtimes as runs
    from pytest_ortperf.gate.bisect import (
        bisect,
        max_comparisons,
        parse_index_versions,
        parse_runtime_range,
        releases_in,
    )
    from pytest_ortperf.ort.envs import EnvCache, env_root

    started = time.perf_counter()
    installed = [name for name, _ in installed_distributions()]
    span = parse_runtime_range(runtimes, installed[0] if installed else "onnxruntime-gpu")
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", span.distribution],
        capture_output=True,
        text=True,
        check=False,
    )
    if listing.returncode != 0:
        raise OrtperfError(
            f"ortperf bisect --runtimes {span}: the package index did not list {span.distribution}: "
            + " / ".join(listing.stderr.strip().splitlines()[-2:])
        )
    releases = releases_in(parse_index_versions(listing.stdout), span)
    cache = EnvCache(env_root(Path.cwd()))
    run_id = f"bisect-{os.getpid()}-{int(time.time())}"

    def python(index: int) -> tuple[Path, float]:
        spec = f"{span.distribution}=={releases[index]}"
        env = cache.get([spec])
        if env is not None:
            return env.python, 0.0
        if fetch == "never":
            raise OrtperfError(
                f"ortperf bisect: {spec} is not in {cache.root} and --fetch=never forbids installing it"
            )
        print(f"ortperf bisect: fetching {spec} into {cache.root}", file=sys.stderr, flush=True)
        fetched = cache.fetch([spec], run_id=run_id)
        return fetched.env.python, fetched.seconds

    runner = runs.ItemRunner(nodeid, Path.cwd(), runs.temporary_workdir())
    judge = runs.GraphJudge(releases, python, runner, mode=mode)
    print(
        f"ortperf bisect: {len(releases)} releases of {span.distribution} ({', '.join(releases)}), "
        f"at most {max_comparisons(len(releases))} comparisons",
        file=sys.stderr,
        flush=True,
    )
    try:
        result = bisect(
            releases,
            judge,
            retries=0,
            progress=lambda line: print(f"ortperf bisect: {line}", file=sys.stderr, flush=True),
        )
    finally:  # the steps' reports and the folder of links
        shutil.rmtree(runner.workdir, ignore_errors=True)
    elapsed = time.perf_counter() - started
    print(f"{'step':<5} {'release':<10} {'verdict':<13} change")
    for number, step in enumerate(result.steps, 1):
        print(f"{number:<5} {step.label:<10} {step.outcome:<13} {step.detail}")
    print(result.conclusion)
    for reason in result.ambiguous:
        print(f"ambiguous: {reason}")
    explanation: list[str] = []
    if result.culprit is not None:
        last_good, culprit = releases.index(result.range[0]), releases.index(result.culprit)
        diff = judge.diff(last_good, culprit)
        explanation = [
            f"{result.range[0]} -> {result.culprit}: {runs.fusions_change(diff.before, diff.after)}",
            *diff.lines(),
            f"{result.range[0]}: {judge.states[last_good].summary}",
            f"{result.culprit}: {judge.states[culprit].summary}",
        ]
        print("explanation: " + "\n  ".join(explanation))
    print(
        f"note: {result.comparisons} comparison(s) of {len(releases)} releases "
        f"(bound {max_comparisons(len(releases))}), {judge.runner.runs} pytest run(s); "
        f"{elapsed:.1f} s in all, {judge.fetch_s:.1f} s fetching, {judge.measure_s:.1f} s measuring"
    )
    if report:
        data = {
            "nodeid": nodeid,
            "runtimes": str(span),
            "check": runs.CHECK,
            "graph_mode": mode,
            **result.as_dict(),
            "explanation": explanation,
            "graphs": {
                releases[i]: {"figures": state.figures.as_dict(), "summary": state.summary}
                for i, state in sorted(judge.states.items())
            },
            "seconds": round(elapsed, 2),
            "fetch_seconds": round(judge.fetch_s, 2),
            "measure_seconds": round(judge.measure_s, 2),
        }
        Path(report).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0 if result.culprit is not None or "no change" in result.conclusion else 1


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        # Names from traces and baselines may hold undecodable bytes: show them, never crash on them.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["update"]:
        # Everything after 'update' belongs to pytest, options included.
        return _update(argv[1:])
    args = parser.parse_args(argv)
    try:
        if args.command == "providers":
            return _providers(args.names)
        if args.command == "show":
            return _show(args.baseline_dir, args.json, args.max_cv, args.threshold)
        if args.command == "merge":
            return _merge(args.sources, args.into)
        if args.command == "report":
            return _report(args.reports, args.html)
        if args.command == "profile":
            return _profile(args.trace, args.top, args.json, args.provider)
        if args.command == "env":
            return _env(args)
        if args.command == "bisect":
            return _bisect_command(args)
        if args.command == "init":
            return _init(args.path, args.ci, args.providers)
    except (OrtperfError, OSError) as exc:
        print(f"ortperf: error: {exc}", file=sys.stderr)
        return 2
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
