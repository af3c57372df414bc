"""The ``ortperf`` console script."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.ort.providers import KNOWN_PROVIDERS, parse_providers, resolve_provider
from pytest_ortperf.ort.runtime import installed_distributions
from pytest_ortperf.version import __version__


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
    profile = commands.add_parser(
        "profile",
        help="summarize an ONNX Runtime trace by operator, node and provider",
        description="Summarize an ORT trace (session-level or run-level) by op type, node and provider.",
    )
    profile.add_argument("trace", help="trace JSON written by ONNX Runtime profiling")
    profile.add_argument("--top", type=int, default=10, help="rows per table (default: 10)")
    profile.add_argument("--json", action="store_true", help="machine-readable output")
    profile.add_argument(
        "--provider",
        default=None,
        help="the provider that was requested, to list nodes that fell back to CPU",
    )
    return parser


def _profile(trace: str, top: int, as_json: bool, provider: str | None) -> int:
    import json

    from pytest_ortperf.profiling.trace import load_trace, summarize, summary_lines

    requested = resolve_provider(provider, source="--provider").name if provider else None
    summary = summarize(load_trace(Path(trace)), requested_provider=requested)
    if as_json:
        print(json.dumps(summary.as_dict(), indent=1, sort_keys=True))
    else:
        print("\n".join(summary_lines(summary, top=max(top, 1))))
    return 0


def _update(pytest_args: Sequence[str]) -> int:
    import pytest

    return int(pytest.main(["--ortperf-update", *pytest_args]))


def _show(directory: str | None, as_json: bool) -> int:
    from pytest_ortperf.reports.show import configured_baseline_dir, show_baselines

    where = Path(directory) if directory is not None else configured_baseline_dir(Path.cwd())
    lines, problems = show_baselines(where, as_json=as_json)
    for line in lines:
        print(line)
    for problem in problems:
        print(f"ortperf: error: {problem}", file=sys.stderr)
    return 1 if problems else 0


def _merge(sources: Sequence[str], into: str | None) -> int:
    from pytest_ortperf.reports.show import configured_baseline_dir
    from pytest_ortperf.store.merge import merge

    target = Path(into) if into is not None else configured_baseline_dir(Path.cwd())
    report = merge([Path(source) for source in sources], target)
    print(
        f"ortperf merge: {report.taken} entries taken into {target}, {report.unchanged} unchanged, "
        f"{len(report.conflicts)} conflicting"
    )
    for path in report.written:
        print(f"wrote {path}")
    for conflict in report.conflicts:
        print(f"ortperf: conflict: {conflict}", file=sys.stderr)
    return 1 if report.conflicts else 0


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
            return _show(args.baseline_dir, args.json)
        if args.command == "merge":
            return _merge(args.sources, args.into)
        if args.command == "profile":
            return _profile(args.trace, args.top, args.json, args.provider)
    except (OrtperfError, OSError) as exc:
        print(f"ortperf: error: {exc}", file=sys.stderr)
        return 2
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
