"""The documentation keeps up with the code.

README.md, docs/*.md and benchmarks/README.md are plain Markdown; these tests
check them against what the plugin really defines: every option with its ini
key, every marker, fixture and console-script command is in docs/reference.md;
no page names an option or ini key that does not exist; every relative link
leads to a file (and a heading) that exists; README.md stays a short first
page that still opens with the two commands CI runs (.ci/run reads them).
"""

from __future__ import annotations

import argparse
import ast
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference.md"
BENCHMARKS_README = ROOT / "benchmarks" / "README.md"
PACKAGE = ROOT / "pytest_ortperf"
PLUGIN = PACKAGE / "plugin"

README_MAX_BYTES = 10 * 1024
README_COMMANDS = (
    'python3 -m venv .venv && .venv/bin/pip install -e ".[gpu,transformers]" && .venv/bin/pytest examples',
    'python3 -m venv .venv && .venv/bin/pip install -e ".[gpu,test]" && .venv/bin/pytest tests -n 2',
)

FLAG = re.compile(r"(?<![\w-])--ort(?:perf)?-[a-z0-9]+(?:-[a-z0-9]+)*")
INI_KEY = re.compile(r"(?<!\w)ortperf_[a-z0-9_]*[a-z0-9]")
FENCE = re.compile(r"^(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
REPO_PATH = re.compile(r"(?<![\w/.-])((?:pytest_ortperf|benchmarks)/[\w./-]*[\w/])")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:, ...


def pages() -> list[Path]:
    """Every Markdown page of the user documentation."""
    found = [README, *sorted(DOCS.glob("*.md"))]
    if BENCHMARKS_README.exists():
        found.append(BENCHMARKS_README)
    return found


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    lines, inside = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.lstrip()):
            inside = not inside
            continue
        if not inside:
            lines.append((number, line))
    return lines


def options() -> tuple:
    from pytest_ortperf.plugin.options import OPTIONS

    assert OPTIONS, "pytest_ortperf.plugin.options.OPTIONS is empty"
    return OPTIONS


def marker_names() -> list[str]:
    from pytest_ortperf.plugin.options import MARKERS

    names = [re.split(r"[(:]", line, maxsplit=1)[0].strip() for line in MARKERS]
    assert names, "pytest_ortperf.plugin.options.MARKERS is empty"
    assert all(names), f"cannot read marker names from MARKERS: {MARKERS!r}"
    return names


def fixture_names() -> set[str]:
    """Functions decorated with ``pytest.fixture`` (or ``fixture``) in the pytest layer, by their name."""
    names: set[str] = set()
    for source in sorted(PLUGIN.rglob("*.py")):
        tree = ast.parse(read(source), filename=str(source))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in node.decorator_list:
                call = decorator if isinstance(decorator, ast.Call) else None
                target = call.func if call else decorator
                is_fixture = (isinstance(target, ast.Attribute) and target.attr == "fixture") or (
                    isinstance(target, ast.Name) and target.id == "fixture"
                )
                if not is_fixture:
                    continue
                name = node.name
                for keyword in call.keywords if call else ():
                    if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                        name = str(keyword.value.value)
                names.add(name)
    assert names, f"found no pytest fixtures in {rel(PLUGIN)}"
    return names


def console_parser() -> argparse.ArgumentParser:
    from pytest_ortperf import cli

    for name in ("_parser", "build_parser", "make_parser", "parser"):
        factory = getattr(cli, name, None)
        if callable(factory):
            parser = factory()
            if isinstance(parser, argparse.ArgumentParser):
                return parser
    raise AssertionError("pytest_ortperf.cli has no function that builds its argparse parser (_parser)")


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def console_commands() -> list[str]:
    commands = sorted(subparsers(console_parser()))
    assert commands, "the ortperf console script defines no subcommands"
    return commands


def console_flags() -> set[str]:
    parser = console_parser()
    flags: set[str] = set()
    for each in (parser, *subparsers(parser).values()):
        for action in each._actions:
            flags.update(s for s in action.option_strings if s.startswith("--"))
    return flags


def package_string_literals() -> set[str]:
    """Every ``ortperf_...`` string the package writes (JUnit properties, user properties, keys)."""
    found: set[str] = set()
    for source in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(read(source), filename=str(source))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and re.fullmatch(r"ortperf_[a-z0-9_]+", node.value)
            ):
                found.add(node.value)
    return found


def mentions(text: str, word: str) -> bool:
    """``word`` appears as a whole token (``--ortperf-ab`` is not found in ``--ortperf-ab-budget``)."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: markup dropped, lower case, punctuation removed, spaces to '-'."""
    text = INLINE_CODE.sub(lambda m: m.group(2), heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
    text = text.strip().lower()
    kept = "".join(
        ch
        for ch in text
        if ch in " -_" or unicodedata.category(ch)[0] in ("L", "N") or unicodedata.category(ch) == "Mn"
    )
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose_lines(read(path)):
        match = HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    found = []
    for number, line in prose_lines(read(path)):
        line = INLINE_CODE.sub("", line)
        found += [(number, m.group(1)) for m in LINK.finditer(line)]
        reference = REFERENCE_LINK.match(line)
        if reference:
            found.append((number, reference.group(1)))
    return found


# The reference holds everything the plugin defines ---------------------------------------------


def test_reference_lists_every_option_with_its_ini_key():
    text = read(REFERENCE)
    missing = [
        f"{item} (option {option.flag} / ini {option.ini})"
        for option in options()
        for item in (option.flag, option.ini)
        if not mentions(text, item)
    ]
    assert not missing, f"{rel(REFERENCE)} does not mention: " + "; ".join(missing)


def test_reference_lists_every_marker():
    text = read(REFERENCE)
    missing = [name for name in marker_names() if not re.search(rf"`{re.escape(name)}(?![\w])", text)]
    assert not missing, f"{rel(REFERENCE)} does not document the marker(s): {', '.join(missing)}"


def test_reference_lists_every_fixture():
    text = read(REFERENCE)
    missing = sorted(name for name in fixture_names() if f"`{name}`" not in text)
    assert not missing, f"{rel(REFERENCE)} does not document the fixture(s): {', '.join(missing)}"


def test_reference_lists_every_console_command():
    text = read(REFERENCE)
    missing = [command for command in console_commands() if not mentions(text, f"ortperf {command}")]
    assert not missing, f"{rel(REFERENCE)} does not document the console command(s): " + ", ".join(
        f"ortperf {command}" for command in missing
    )


# No page names something that does not exist --------------------------------------------------


def kind_property_names():
    """The JUnit properties every built-in check kind gets from its declaration: its verdict's, and
    its figures' for the kinds that publish them (``gate/publisher.py``, ``kinds/*.py``)."""
    from pytest_ortperf.kinds import builtin_kinds

    kinds = builtin_kinds()
    return {kind.verdict_property for kind in kinds} | {f"ortperf_{kind.name}" for kind in kinds}


def named_in(page, pattern, *, unless):
    """Each match of ``pattern`` on ``page`` for which ``unless`` is false, with its line number."""
    return sorted(
        {
            f"{found} (line {number})"
            for number, line in enumerate(read(page).splitlines(), 1)
            for found in pattern.findall(line)
            if not unless(found)
        }
    )


def example_kind_options():
    """The flags and ini keys of the kind docs/check-kinds.md shows as its example: the kind that
    tests/plugin/test_registered_kind.py registers and runs (``range``)."""
    from tests.plugin.test_registered_kind import PART_CONFTEST

    namespace: dict[str, object] = {}
    exec(PART_CONFTEST, namespace)
    kind = namespace["KIND"]
    return {o.flag(kind.name) for o in kind.options}, {o.ini(kind.name) for o in kind.options}


def builtin_kind_options():
    """The flags and ini keys the built-in kinds declare with themselves (``CheckKind.options``)."""
    from pytest_ortperf.kinds import BUILTIN

    flags = {o.flag(kind.name) for kind in BUILTIN for o in kind.options}
    return flags, {o.ini(kind.name) for kind in BUILTIN for o in kind.options}


@pytest.mark.parametrize("page", pages(), ids=rel)
def test_every_flag_named_in_the_docs_exists(page):
    deprecated = {old for option in options() for old in option.deprecated}  # still accepted, with a warning
    known = {option.flag for option in options()} | console_flags() | example_kind_options()[0] | deprecated
    known |= builtin_kind_options()[0]
    unknown = named_in(page, FLAG, unless=known.__contains__)
    assert not unknown, f"{rel(page)} names option(s) the plugin does not define: {'; '.join(unknown)}"


@pytest.mark.parametrize("page", pages(), ids=rel)
def test_every_ini_key_named_in_the_docs_exists(page):
    known = {option.ini for option in options()} | package_string_literals() | kind_property_names()
    known |= example_kind_options()[1] | builtin_kind_options()[1]
    unknown = named_in(page, INI_KEY, unless=known.__contains__)
    assert not unknown, (
        f"{rel(page)} names ini key(s) or property name(s) the plugin does not define: {'; '.join(unknown)}"
    )


@pytest.mark.parametrize("page", pages(), ids=rel)
def test_every_package_path_named_in_the_docs_exists(page):
    missing = named_in(page, REPO_PATH, unless=lambda found: (ROOT / found).exists())
    assert not missing, f"{rel(page)} names path(s) that do not exist: {'; '.join(missing)}"


@pytest.mark.parametrize("page", pages(), ids=rel)
def test_relative_links_lead_to_existing_files_and_headings(page):
    broken = []
    for number, target in links(page):
        if EXTERNAL.match(target):
            continue
        path_part, _, fragment = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if not destination.exists():
            broken.append(f"{target} (line {number}): no file {path_part}")
        elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
            broken.append(f"{target} (line {number}): no heading #{fragment} in {rel(destination)}")
    assert not broken, f"{rel(page)} has broken link(s): {'; '.join(broken)}"


# README.md stays a first page ------------------------------------------------------------------


def test_readme_is_short():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, (
        f"{rel(README)} is {size} bytes, over {README_MAX_BYTES}: move details to a page under docs/"
    )


def test_readme_opens_with_the_two_commands_ci_runs():
    text = read(README)
    assert text.startswith("# pytest-ortperf\n"), (
        f"{rel(README)} must start with the '# pytest-ortperf' title"
    )
    lines = text.splitlines()
    assert "```bash" in lines, f"{rel(README)} has no ```bash block"
    start = lines.index("```bash") + 1
    end = lines.index("```", start)
    block = lines[start:end]
    assert tuple(block[:2]) == README_COMMANDS, (
        f"{rel(README)}: the first two lines of the first ```bash block are {block[:2]!r}, "
        f"expected {list(README_COMMANDS)!r} (.ci/run runs them)"
    )
    before = lines[: start - 1]
    assert all(not line.strip() or line.startswith("# ") for line in before), (
        f"{rel(README)}: only the title may come before the ```bash block"
    )


def test_readme_links_every_docs_page():
    text = read(README)
    pages_linked = {m.group(1).partition("#")[0] for m in LINK.finditer(text)}
    expected = {f"docs/{page.name}" for page in sorted(DOCS.glob("*.md"))} | {
        "docs/architecture.md",
        "benchmarks/README.md",
    }
    missing = sorted(expected - pages_linked)
    assert not missing, f"{rel(README)} does not link: {', '.join(missing)}"


# Output the docs quote, checked against the code that prints it. A page that quotes a line the code no
# longer prints (another wording, a count it lost or gained) fails here instead of misleading a reader.
def _prose(path: Path) -> str:
    """The page with line breaks folded, so a quote that wraps is found whole."""
    return re.sub(r"\s*\n\s*", " ", read(path))


def _shape(text: str) -> str:
    """The line with each number replaced by '#': the same shape with other figures."""
    return re.sub(r"[0-9]+(?:\.[0-9]+)?", "#", text)


QUOTING_PAGES = [README, *sorted(DOCS.glob("*.md"))]
LOOK = re.compile(r"look ([0-9]+) of ([0-9]+) (\([^)]*\))")
UPDATE_LINE = re.compile(r"ortperf update: [0-9][^`\n]*?(?=`|$)")


@pytest.mark.parametrize("page", QUOTING_PAGES, ids=rel)
def test_quoted_sequential_looks_say_what_a_check_prints(page: Path) -> None:
    from pytest_ortperf.latency.sequential import verdict_at

    for look, looks, shown in LOOK.findall(_prose(page)):
        ratios = [1.0 + 0.001 * i for i in range(11)]
        printed = verdict_at(
            ratios, threshold=0.03, confidence=0.99, look=int(look), looks=int(looks)
        ).statistic
        expected = LOOK.search(printed)
        assert expected is not None, printed
        assert shown == expected.group(3), (
            f"{rel(page)} quotes look {look} of {looks} {shown}; a check prints {printed!r}"
        )


def test_the_docs_quote_the_update_summary_as_it_is_printed() -> None:
    from pytest_ortperf.reports.terminal import UpdateReport, update_lines

    everything = update_lines(
        UpdateReport(new=2, updated=3, unchanged=1, noisy=["t (spread 14.2% > max-cv 10%)"], unused=["t"]),
        prune=False,
    )[0]
    quotes = [(page, quote) for page in QUOTING_PAGES for quote in UPDATE_LINE.findall(_prose(page))]
    assert quotes, "the update summary is quoted in docs/latency.md"
    for page, quote in quotes:
        assert _shape(quote.rstrip(" .")) == _shape(everything), (
            f"{rel(page)} quotes {quote!r}; an update prints {everything!r} (every count shown)"
        )


# The package map in docs/architecture.md is the tree ------------------------------------------


def _map_rows() -> dict[str, str]:
    """docs/architecture.md's package map: folder (``gate/``, ``reports/html/``, ``""`` for the top)
    -> the text of its row."""
    rows = {}
    for line in read(ROOT / "docs" / "architecture.md").splitlines():
        cells = line.split(" | ")
        if not line.startswith("| `") or len(cells) < 2:
            continue
        folder = cells[0].removeprefix("| `").split("`")[0]
        rows["" if folder == "pytest_ortperf/" else folder] = " | ".join(cells[1:])
    return rows


def test_the_architecture_map_names_every_module_of_the_package_in_its_folders_row():
    package = ROOT / "pytest_ortperf"
    rows = _map_rows()
    folders = {"", *(p.parent.relative_to(package).as_posix() + "/" for p in package.rglob("*/__init__.py"))}
    assert set(rows) == folders, (
        f"rows for: {sorted(set(rows) - folders)}; folders without a row: {sorted(folders - set(rows))}"
    )
    problems = []
    for folder, text in rows.items():
        named = set(re.findall(r"`([a-z_]+\.py)\b", text))
        here = {p.name for p in (package / folder).glob("*.py")}
        problems += [f"{folder or 'top'}: names {name}, which is not there" for name in sorted(named - here)]
        problems += [
            f"{folder or 'top'}: does not name {name}" for name in sorted(here - named - {"__init__.py"})
        ]
    assert not problems, "docs/architecture.md's package map and the tree differ: " + "; ".join(problems)


def test_no_two_package_modules_share_a_file_name_and_no_two_classes_a_name():
    package = ROOT / "pytest_ortperf"
    names = [p.name for p in package.rglob("*.py") if p.name != "__init__.py"]
    assert not sorted({name for name in names if names.count(name) > 1})
    classes = [m for p in package.rglob("*.py") for m in re.findall(r"^class (\w+)", p.read_text(), re.M)]
    assert not sorted({name for name in classes if classes.count(name) > 1})
