"""`pytest --help` and every `ortperf` command's `--help` work with the plugin installed.

argparse %-formats every help string (for ``%(default)s``), so one literal ``%`` in a help
text, such as "(default: 10%)", made `pytest --help` fail in every environment with the plugin.
These run the real entry points in a subprocess, as a user would.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_ortperf.cli import _parser
from pytest_ortperf.plugin.options import OPTIONS, UPDATE_MISSING

FLAGS = [*(o.flag for o in OPTIONS), UPDATE_MISSING]


def _env() -> dict[str, str]:
    """This environment, with the plugin loaded from its entry point whatever the caller's settings."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS")
    }
    env["COLUMNS"] = "100"
    return env


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120, check=False
    )


def _ortperf() -> list[str]:
    exe = shutil.which("ortperf", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "pytest_ortperf.cli"]


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the console script: (), ("show",), ("env", "create"), ..."""
    paths = [path]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths += _commands(sub, (*path, name))
    return paths


def _sub(path: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = _parser()
    for name in path:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


def _listed(flags: list[str], text: str) -> list[str]:
    return [flag for flag in flags if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text)]


def test_pytest_help_lists_every_ortperf_option(tmp_path: Path) -> None:
    done = _run([sys.executable, "-m", "pytest", "--help"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ONNX Runtime performance and accuracy gate (pytest-ortperf)" in done.stdout
    assert _listed(FLAGS, done.stdout) == []
    assert [o.ini for o in OPTIONS if f"  {o.ini} (" not in done.stdout] == []
    assert "(default: 10%)" in " ".join(done.stdout.split())  # a literal percent, shown as written


COMMANDS = _commands(_parser())


def test_the_walk_finds_every_command() -> None:
    assert {" ".join(p) for p in COMMANDS} >= {
        "",
        "providers",
        "update",
        "show",
        "merge",
        "profile",
        "env",
        "env create",
        "env list",
        "env remove",
    }


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "ortperf")
def test_every_ortperf_command_help_works(tmp_path: Path, path: tuple[str, ...]) -> None:
    done = _run([*_ortperf(), *path, "--help"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    if path == ("update",):  # everything after 'update' goes to pytest: its help is pytest's, with ours
        assert _listed(FLAGS, done.stdout) == []
        return
    assert done.stdout.startswith(f"usage: ortperf {' '.join(path)}".rstrip())
    flags = [s for a in _sub(path)._actions for s in a.option_strings if s.startswith("--")]
    assert _listed(flags, done.stdout) == []


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "ortperf")
def test_every_console_script_help_string_formats(path: tuple[str, ...]) -> None:
    """Each command's own help strings through argparse's formatter, so a new one with a bare '%'
    fails here and not in a user's terminal."""
    parser = _sub(path)
    assert parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                parser._get_formatter()._expand_help(choice)
        elif action.help:
            parser._get_formatter()._expand_help(action)
