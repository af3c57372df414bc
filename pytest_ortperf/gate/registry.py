"""The registry of check kinds: each kind is declared once, as a :class:`CheckKind`, and what runs
and records checks iterates over the registry; the terminal summary's tables too (each kind's rows
in the table it declares). No report names a kind: they read each record as typed
(``checks/record.py: CheckRecord``), by what it holds (timed rounds, compared outputs, a contract),
and draw it by its kind's declared drawing.

The built-in kinds are declared in ``kinds/`` (one module each, ``kinds/__init__.py: BUILTIN``) and
registered through the package's own implementation of the ``pytest_ortperf_register_kinds`` hook
(``plugin/hookspec.py``), called when pytest reads options, as a conftest or another plugin adds its
own. A kind that declares nothing but its name and its check object still appears in every report:
its records have the common fields every report reads (``kind``, ``test``, ``variant``,
``verdict``, ``path``, ``summary``, ``change_text``, ``message``, ``notes``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_ortperf.checks.record import typed
from pytest_ortperf.errors import UsageError
from pytest_ortperf.lazy import later
from pytest_ortperf.reports.tables import COMMON_TABLE, TerminalTable
from pytest_ortperf.store.parts import RESERVED_PARTS

if TYPE_CHECKING:
    from pytest_ortperf.gate.protocol import Check, CheckContext, Outcome
    from pytest_ortperf.gate.services import CheckSettings
    from pytest_ortperf.store.keys import CheckKey

Record = Mapping[str, Any]
# The common record and row of a check, loaded when first used (see pytest_ortperf.lazy).
COMMON_RECORD = later("pytest_ortperf.reports.ci_files", "check_record")
COMMON_ROW = later("pytest_ortperf.reports.terminal", "check_row")
NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


@dataclass(frozen=True)
class BenchmarkEntry:
    """A check's entry in pytest-benchmark's session: one round per value (milliseconds)."""

    round_medians_ms: Sequence[float]
    runs_per_round: int
    group: str
    suffix: str = ""  # appended to the node id ("::startup"); "" for the test's own entry
    extra_info: Mapping[str, object] | None = None


@dataclass(frozen=True)
class KindOption:
    """An option a kind owns. Its flag and its ini key share one name, the kind's and the option's:
    ``--ortperf-<kind>-<name>`` and ``ortperf_<kind>_<name>`` (underscores in the flag become
    hyphens); the name ``""`` is the kind's own setting, ``--ortperf-<kind>`` and ``ortperf_<kind>``
    (the graph kind's mode). The command line wins over the ini file, which wins over ``default``; the
    value is parsed once, when the run is configured, by ``parse(text, where)`` (``where``: the flag, the ini
    key or "the default of" the flag; it raises a ``UsageError`` naming ``where``), and a check reads
    it with ``context.settings.option(kind, name)``: the parsed value, or the text without a parser.
    ``metavar``: what ``--help`` shows the flag take (``--ortperf-graph MODE``)."""

    name: str
    help: str
    default: str = ""
    parse: Callable[[str, str], Any] | None = None
    metavar: str = "VALUE"

    def ini(self, kind: str) -> str:
        return f"ortperf_{kind}_{self.name}" if self.name else f"ortperf_{kind}"

    def typed_default(self, kind: str) -> Any:
        """The default as a check reads it: parsed, as a given value is."""
        return self.parse(self.default, f"the default of {self.flag(kind)}") if self.parse else self.default

    def flag(self, kind: str) -> str:
        return "--" + self.ini(kind).replace("_", "-")


@dataclass(frozen=True)
class CheckKind:
    """One kind of check, declared once.

    - ``name``: its record's ``kind``, its JUnit property ``ortperf_<name>_verdict``, its
      ``ort_perf.check_<name>()`` method and its word in ``ortperf_checks``.
    - ``make``: its check object for one test instance (``gate/protocol.py: Check``).
    - ``default``: whether ``ort_perf.check()`` runs it when ``ortperf_checks`` is not set.
    - ``timed``: whether it times anything; under ``--ortperf-timing=off`` it is then reported as
      'not timed' (``not_timed``: that outcome) instead of run.
    - ``part``: its part of a baseline entry's figures (None: it keeps none), which
      ``--ortperf-update=missing`` asks ``Check.recorded`` about.
    - ``part_decoder``: its part's JSON to its typed figures (``MemoryFigures.from_dict``), raising
      ``KeyError``, ``TypeError`` or ``ValueError`` where the part is damaged: the store validates
      every machine's part with it as a baseline file loads (a damaged part is an error naming the
      file, the entry and the machine), and its check reads its part typed with
      ``figures.part_as(part, decoder)``. None: the part is kept as read and the check reads the JSON.
    - ``accepted_by_update``: whether ``ortperf update`` accepts a failure of it (it records what
      the check compares with); None: where it keeps a part. A property of the model alone (outputs
      that differ run to run, a contract between variants) is not: no command prints for it.
    - ``row``: its terminal row, read from its record (None: that record has none), in ``table``
      (``reports/terminal.py: TerminalTable``: its title and headers, which kinds can share; the
      latency kind's is ``LATENCY_TABLE``); without a ``table``, the common table of checks shows
      it, by its ``row`` or the common one (``check_row``); ``terminal=False``: in no table.
    - ``benchmark``: its pytest-benchmark entry, read from its record, or extra information for the
      test's other entries (a mapping); None: it publishes none.
    - ``properties``: its JUnit properties besides its verdict, read from its record.
    - ``record``: its record of an outcome (the not-timed one too); a kind whose check returns a
      :class:`~pytest_ortperf.checks.kind_result.KindResult` keeps the common one.
    - ``drawing``: its figures on the HTML page, read from its record (None: the common drawing).
    - ``summary``: one line for ``--help`` and the docs.
    - ``options``: its options (:class:`KindOption`), a flag and an ini key each, registered when
      pytest reads its options (a kind registered through ``pytest_ortperf_register_kinds`` in a
      plugin or the rootdir's conftest.py).
    - ``thresholds``: keywords of ``ort_thresholds(...)`` and of a model table's ``thresholds`` that
      it owns; their values reach its check in ``target.policy.kind_thresholds``, parsed where they
      enter by ``threshold_parse(value, where)`` (a UsageError naming ``where``: the marker or the
      table, and the keyword), or as given without one. Of two markers that give one, the closer
      one's value stands, or, with ``threshold_merge(farther, closer)``, what that makes of both
      (the graph kind's: a mode from one and pinned counts from the other).
    - ``test_inputs``: whether its check runs the test's inputs; False: it feeds the model from the
      model's own graph (``generation``), so it runs where the test's inputs cannot be made.
    """

    name: str
    make: Callable[[CheckContext], Check]
    summary: str = ""
    default: bool = False
    timed: bool = False
    part: str | None = None
    part_decoder: Callable[[Any], Any] | None = None
    not_timed: Callable[[CheckKey], Outcome] | None = None
    row: Callable[[Record], tuple[str, ...] | None] | None = None
    table: TerminalTable | None = None
    terminal: bool = True
    benchmark: Callable[[Record], BenchmarkEntry | Mapping[str, object] | None] | None = None
    drawing: Callable[[Record], str] | None = None
    properties: Callable[[Record], Mapping[str, object]] = lambda record: {}
    record: Callable[[Any, str], dict[str, Any]] = COMMON_RECORD
    options: tuple[KindOption, ...] = ()
    thresholds: tuple[str, ...] = ()
    threshold_parse: Callable[[object, str], Any] | None = None
    threshold_merge: Callable[[Any, Any], Any] | None = None
    accepted_by_update: bool | None = None
    test_inputs: bool = True

    def setting(self, settings: CheckSettings, name: str) -> Any:
        """The value of this kind's option ``name``: the run's (``settings.option``), else its declared
        default, parsed (a check handed settings that hold no options of its kind: a stand-in)."""
        try:
            return settings.option(self.name, name)
        except KeyError:
            declared = next((o for o in self.options if o.name == name), None)
            if declared is None:
                raise KeyError(f"check kind {self.name!r} declares no option {name!r}") from None
            return declared.typed_default(self.name)

    @property
    def accepts_update(self) -> bool:
        """Whether recording accepts a failure of it (``accepted_by_update``, else it keeps a part)."""
        return self.part is not None if self.accepted_by_update is None else self.accepted_by_update

    @property
    def verdict_property(self) -> str:
        return f"ortperf_{self.name}_verdict"


class KindRegistry:
    """The check kinds of a run, in the order they were registered (the order ``check()`` runs them)."""

    def __init__(self, kinds: Sequence[CheckKind] = ()) -> None:
        self._kinds: dict[str, CheckKind] = {}
        self._origins: dict[str, str] = {}
        for kind in kinds:
            self.register(kind, origin=BUILT_IN)

    def register(self, kind: CheckKind, *, origin: str = "") -> None:
        """Add ``kind``; a clear error naming both origins when the name is taken or malformed."""
        if not isinstance(kind, CheckKind):
            raise UsageError(f"{origin or 'a plugin'} registered {kind!r}: a check kind must be a CheckKind.")
        if not NAME.fullmatch(kind.name):
            raise UsageError(
                f"{origin or 'a plugin'} registered a check kind named {kind.name!r}: a name is lower case "
                "letters, digits and underscores, starting with a letter (it becomes check_<name>())."
            )
        if kind.timed and kind.not_timed is None:
            raise UsageError(
                f"{origin or 'a plugin'} registered the check kind {kind.name!r} as timed without its "
                "not_timed outcome: --ortperf-timing=off reports a timed kind as 'not timed' with it."
            )
        bad = [
            getattr(o, "name", repr(o))
            for o in kind.options
            if not isinstance(o, KindOption)
            or (o.name != "" and not NAME.fullmatch(o.name))
            or (o.parse is not None and not callable(o.parse))
        ]
        bad += [key for key in kind.thresholds if not isinstance(key, str) or not NAME.fullmatch(key)]
        if bad:
            raise UsageError(
                f"{origin or 'a plugin'} registered the check kind {kind.name!r} with option or threshold "
                f"name(s) {', '.join(map(repr, bad))}: options are KindOption (with a callable parse, or "
                "none) and every name is lower case letters, digits and underscores, starting with a letter "
                "(an option's may also be empty: the kind's own setting, --ortperf-<kind>)."
            )
        if kind.part_decoder is not None and (kind.part is None or not callable(kind.part_decoder)):
            raise UsageError(
                f"{origin or 'a plugin'} registered the check kind {kind.name!r} with "
                f"part_decoder={kind.part_decoder!r}: a decoder is a callable, and decodes the kind's "
                "part (give it part=...)."
            )
        if kind.table is not None and not isinstance(kind.table, TerminalTable):
            raise UsageError(
                f"{origin or 'a plugin'} registered the check kind {kind.name!r} with table={kind.table!r}: "
                "a table is a reports.terminal.TerminalTable (its title and headers), or None for the "
                "common table of checks."
            )
        if kind.table is not None:
            holder = next((k for k in self if k.table is not None and k.table.name == kind.table.name), None)
            if kind.table.name == COMMON_TABLE.name or (
                holder is not None and holder.table is not kind.table
            ):
                raise UsageError(
                    f"{origin or 'a plugin'} registered the check kind {kind.name!r} with a table named "
                    f"{kind.table.name!r}, which another table has: give its TerminalTable another name "
                    "(or share that kind's table object)."
                )
        owned = [key for key in kind.thresholds if key in self.threshold_keys()]
        if owned:
            raise UsageError(
                f"{origin or 'a plugin'} registered the check kind {kind.name!r} with the threshold key(s) "
                f"{', '.join(owned)}, which another kind owns: give them other names."
            )
        if kind.name in self._kinds or kind.name in RESERVED:
            taken = self._origins.get(kind.name, BUILT_IN)
            raise UsageError(
                f"{origin or 'a plugin'} registered a check kind named {kind.name!r}, which {taken} "
                "already registered: give it another name."
            )
        sharer = next((k for k in self if kind.part is not None and k.part == kind.part), None)
        if kind.part is not None and (kind.part in RESERVED_PARTS or sharer is not None):
            taken = f"the check kind {sharer.name!r}'s" if sharer is not None else "a key of the figures"
            raise UsageError(
                f"{origin or 'a plugin'} registered the check kind {kind.name!r} with part={kind.part!r}, "
                f"which is {taken}: give its part another name (its own name, say)."
            )
        self._kinds[kind.name] = kind
        self._origins[kind.name] = origin

    def __iter__(self) -> Iterator[CheckKind]:
        return iter(self._kinds.values())

    def __contains__(self, name: object) -> bool:
        return name in self._kinds

    def get(self, name: str) -> CheckKind | None:
        return self._kinds.get(name)

    def __getitem__(self, name: str) -> CheckKind:
        kind = self._kinds.get(name)
        if kind is None:
            raise UsageError(f"no check kind named {name!r} (known: {', '.join(self.names())}).")
        return kind

    def names(self) -> list[str]:
        return list(self._kinds)

    def defaults(self) -> list[str]:
        """What ``check()`` runs when ``ortperf_checks`` is not set."""
        return [kind.name for kind in self if kind.default]

    def part_decoders(self) -> dict[str, Callable[[Any], Any]]:
        """Each kind's part decoder by its part's name: what a baseline file's parts are validated with."""
        return {kind.part: kind.part_decoder for kind in self if kind.part and kind.part_decoder}

    def threshold_keys(self) -> dict[str, str]:
        """The ``ort_thresholds`` keywords the kinds own, each with its kind's name."""
        return {key: kind.name for kind in self for key in kind.thresholds}

    def threshold_parsers(self) -> dict[str, Callable[[object, str], Any]]:
        """The parser of each ``ort_thresholds`` keyword a kind owns and parses."""
        return {key: kind.threshold_parse for kind in self if kind.threshold_parse for key in kind.thresholds}

    def threshold_mergers(self) -> dict[str, Callable[[Any, Any], Any]]:
        """How a closer marker's value of each keyword that a kind merges combines with a farther one's."""
        return {key: kind.threshold_merge for kind in self if kind.threshold_merge for key in kind.thresholds}

    def terminal_tables(self, records: Sequence[Record]) -> list[tuple[TerminalTable, list[tuple[str, ...]]]]:
        """The terminal summary's tables and their rows: each kind's records by its ``row`` in its
        ``table`` (the common table of checks where it declares none), the tables in the order of the
        kinds that first declared them, the common one last; records of kinds not registered here,
        and of kinds in no table, have no row."""
        tables: dict[str, tuple[TerminalTable, list[tuple[str, ...]]]] = {}
        for kind in self:
            if kind.terminal:
                table = kind.table or COMMON_TABLE
                tables.setdefault(table.name, (table, []))
        tables[COMMON_TABLE.name] = tables.pop(COMMON_TABLE.name, (COMMON_TABLE, []))
        for record in typed(records):
            of = self.get(record.kind)
            if of is None or not of.terminal:
                continue
            row = (of.row or COMMON_ROW)(record)
            if row is not None:
                tables[(of.table or COMMON_TABLE).name][1].append(row)
        return list(tables.values())

    def drawings(self, *, plugins_only: bool = False) -> dict[str, Callable[[Record], str]]:
        """Each kind's drawing, by kind; ``plugins_only``: of the kinds a plugin or a conftest.py
        registered (not the package's own, which ``ortperf report`` knows without the run)."""
        return {
            kind.name: kind.drawing
            for kind in self
            if kind.drawing is not None and not (plugins_only and self._origins.get(kind.name) == BUILT_IN)
        }


# Kinds of records that are not check kinds of their own (a contract is run by check_contracts()).
# The origin the package's own kinds are registered with.
BUILT_IN = "pytest-ortperf"
RESERVED = frozenset({"contract", "profile", "check", "contracts", "speedup"})
