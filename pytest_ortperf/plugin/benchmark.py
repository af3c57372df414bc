"""Hand finished ortperf measurements to pytest-benchmark, without measuring again.

pytest-benchmark is optional. When it is installed and active, every latency
check can also appear as one entry in its terminal table, in ``--benchmark-json``,
in ``--benchmark-save``/``--benchmark-autosave`` runs and in
``--benchmark-compare``, so dashboards that read pytest-benchmark JSON take
ortperf's numbers unchanged. This module never imports ``pytest_benchmark`` at
import time; it is looked up when :func:`publish` is called.

How an entry gets in (pytest-benchmark 5.x):

* The session object. pytest-benchmark's ``pytest_configure`` creates a
  ``BenchmarkSession``, stores it as ``config._benchmarksession`` and registers
  it with the plugin manager under the name ``"pytest-benchmark"``. We ask the
  plugin manager (public pluggy API) and fall back to the private attribute.
  With ``-p no:benchmark`` or without the package there is no session and
  :func:`publish` returns ``False``.
* Registration. Its ``benchmark`` fixture registers a measurement by appending
  a ``pytest_benchmark.stats.Metadata`` to ``BenchmarkSession.benchmarks``
  (``add_stats=bs.benchmarks.append``). We do the same with a ``Metadata``
  built from our numbers, so everything downstream is pytest-benchmark's own
  code: ``Metadata.as_dict`` for JSON/save, ``prepare_benchmarks`` for the
  table and compare, the ``pytest_benchmark_*`` hooks, ``has_error`` filtering.
* ``Metadata(fixture, iterations, options)`` copies ``name``, ``fullname``,
  ``group``, ``param``, ``params``, ``extra_info`` and ``cprofile_stats`` from
  the fixture and later reads ``fixture.has_error``. A small stand-in object
  (:class:`_Measured`) provides exactly those, so no ``BenchmarkFixture`` (and
  none of its timer calibration) is created. ``fullname``/``param``/``params``
  default to what the ``benchmark`` fixture would record for the same test:
  ``node.nodeid`` and ``node.callspec``. ``name``, the column pytest-benchmark's
  table shows (``--benchmark-name=normal``, its default), defaults to the node id
  too (``tests/test_mlp.py::test_latency[cpu-all]``) rather than the fixture's
  ``node.name``: ortperf's checks are the same test in many files
  (``test_latency[cpu-all]`` three times over), and rows that cannot be told
  apart are useless. ``--benchmark-compare`` matches entries by ``fullname``,
  which is unchanged.

What a "round" is. pytest-benchmark keeps one number per round: the time of
``iterations`` back-to-back calls divided by ``iterations`` (``Metadata.update``),
in seconds; min/median/mean/stddev/IQR/outliers/ops are computed over those
per-round values. We publish one of *our* rounds as one of *theirs*: value =
that round's median run latency (converted to seconds), ``iterations`` = runs
per round. That keeps the unit (seconds per call) and the round count honest,
and the spread pytest-benchmark reports is the round-to-round drift, which is
the distribution ortperf's own verdict is computed from (``round_medians_ms``).
Per-run samples are not kept by ``LatencyStats`` (and could be a million per
check), so they cannot be published; consequently the table's ``Min`` is the
fastest round median, not the fastest single run (``LatencyStats.min_ms``), and
``Mean`` is the mean of round medians. Values are written straight into
``Metadata.stats`` (``Stats.update``) rather than via ``Metadata.update``, whose
``duration / iterations`` would only add float rounding.

Options. Under ``--benchmark-disable`` pytest-benchmark's contract is "no stats
are reported", so :func:`publish` returns ``False``. pytest-xdist makes
pytest-benchmark disable itself in every process, and its ``--benchmark-json``
then writes nothing. An xdist worker keeps its entries as data instead
(:func:`handed`); the controller adds them to its own session
(:func:`publish_handed`), whose file writing does not depend on being enabled,
so ``--benchmark-json`` holds every ortperf measurement of the run.
``--benchmark-skip`` only deselects tests that request the ``benchmark``
fixture; a check that ran has already paid for its measurement, so it is still
published. ``--benchmark-only`` skips every test that does not
request ``benchmark``, ortperf's included, so there is nothing to publish.

Private shapes are guarded: if the session or ``Metadata`` does not look like
5.x, :func:`publish` returns ``False`` without a warning (``filterwarnings =
error`` suites must not break) and stops trying for the rest of the session.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

PLUGIN_NAME = "pytest-benchmark"
"""The name pytest-benchmark registers its ``BenchmarkSession`` under."""

SOURCE = "pytest-ortperf"
"""``options.source`` of every published entry: tells our entries from the fixture's."""

_UNUSABLE = pytest.StashKey[str]()
_HANDED = pytest.StashKey[list[dict[str, Any]]]()  # an xdist worker's entries, for the controller


@dataclass
class _Measured:
    """The attributes ``pytest_benchmark.stats.Metadata`` reads from a ``BenchmarkFixture``."""

    name: str
    fullname: str
    group: str | None
    param: str | None
    params: dict[str, Any] | None
    extra_info: dict[str, Any] = field(default_factory=dict)
    cprofile_stats: None = None
    has_error: bool = False
    disabled: bool = False
    skipped: bool = False


def publish(
    config: pytest.Config,
    node: object,
    *,
    round_medians_ms: Sequence[float],
    runs_per_round: int,
    extra_info: Mapping[str, object] | None = None,
    name: str | None = None,
    fullname: str | None = None,
    group: str | None = None,
) -> bool:
    """Add one finished measurement to pytest-benchmark's session; ``True`` if it was added.

    ``round_medians_ms``: one median run latency per round, in milliseconds
    (``LatencyStats.round_medians_ms``); each becomes one pytest-benchmark round.
    ``runs_per_round``: runs timed in each round (``LatencyStats.count //
    LatencyStats.rounds``), reported as pytest-benchmark's ``iterations``.
    ``extra_info``: copied into the entry's ``extra_info`` (should be JSON-able).
    ``name``/``fullname`` default to ``node.nodeid`` (the file, the test and its
    parameters: the fixture would name the entry ``node.name``, which repeats across
    files); a second entry with the same
    ``fullname`` in this session gets a ``#2`` (``#3``...) suffix on both, so
    saved runs and ``--benchmark-compare`` keep telling them apart.
    ``group``: pytest-benchmark's group (table section, ``--benchmark-group-by``).

    Returns ``False``, touching nothing, when pytest-benchmark is not installed,
    not loaded (``-p no:benchmark``), disabled (``--benchmark-disable``),
    or does not have the shape this bridge knows. In a pytest-xdist worker, where
    pytest-benchmark disables itself, the entry is kept instead (:func:`handed`) for the
    controller to add to its session (:func:`publish_handed`), so that ``--benchmark-json``
    holds it. Raises ``ValueError`` on numbers that cannot be a measurement (no rounds,
    non-finite or negative values, ``runs_per_round < 1``).
    """
    values_s = _seconds(round_medians_ms)
    if isinstance(runs_per_round, bool) or not isinstance(runs_per_round, int) or runs_per_round < 1:
        raise ValueError(f"runs_per_round must be a whole number >= 1, got {runs_per_round!r}")
    nodeid = str(getattr(node, "nodeid", "") or getattr(node, "name", "?"))
    param, params = _param(node)
    entry = {
        "name": name if name is not None else nodeid,
        "fullname": fullname if fullname is not None else nodeid,
        "group": group,
        "param": param,
        "params": {key: str(value) for key, value in (params or {}).items()} if params is not None else None,
        "extra_info": dict(extra_info or {}),
        "seconds": values_s,
        "runs_per_round": runs_per_round,
    }
    if _UNUSABLE in config.stash:
        return False
    session = _benchmark_session(config)
    if session is not None and _disabled_by_xdist(session) and hasattr(config, "workerinput"):
        config.stash.setdefault(_HANDED, []).append(entry)
        return False
    if session is None or getattr(session, "disabled", True) is not False:
        return False
    return _add(config, session, entry)


def handed(config: pytest.Config) -> list[dict[str, Any]]:
    """The entries this xdist worker kept for the controller (JSON-able)."""
    kept: list[dict[str, Any]] = config.stash.get(_HANDED, [])
    return list(kept)


def publish_handed(config: pytest.Config, entries: Sequence[Mapping[str, Any]]) -> int:
    """Add entries an xdist worker kept to this controller's session, which pytest-xdist disabled but
    which still writes ``--benchmark-json`` and saved runs from what it holds; how many were added.
    Nothing is added when the user disabled pytest-benchmark (``--benchmark-disable``)."""
    session = _benchmark_session(config)
    if session is None or _UNUSABLE in config.stash:
        return 0
    if getattr(session, "disabled", True) is not False and not _disabled_by_xdist(session):
        return 0
    return sum(_add(config, session, dict(entry)) for entry in entries)


def _disabled_by_xdist(session: object) -> bool:
    """pytest-benchmark turned itself off only because pytest-xdist is active (not --benchmark-disable)."""
    return getattr(session, "disabled", False) is True and getattr(session, "xdist_warning", False) is True


def _add(config: pytest.Config, session: object, entry: dict[str, Any]) -> bool:
    benchmarks = getattr(session, "benchmarks", None)
    if not isinstance(benchmarks, list):
        return _give_up(config, "BenchmarkSession.benchmarks is not a list")
    try:
        metadata_cls = importlib.import_module("pytest_benchmark.stats").Metadata
    except (ImportError, AttributeError) as exc:
        return _give_up(config, f"pytest_benchmark.stats.Metadata unavailable: {exc!r}")
    entry_name, entry_fullname = str(entry["name"]), str(entry["fullname"])
    taken = {getattr(bench, "fullname", None) for bench in benchmarks}
    if entry_fullname in taken:
        n = 2
        while f"{entry_fullname}#{n}" in taken:
            n += 1
        entry_name, entry_fullname = f"{entry_name}#{n}", f"{entry_fullname}#{n}"
    values_s = [float(value) for value in entry["seconds"]]
    measured = _Measured(
        name=entry_name,
        fullname=entry_fullname,
        group=entry.get("group"),
        param=entry.get("param"),
        params=entry.get("params"),
        extra_info=dict(entry.get("extra_info") or {}),
    )
    options = {
        "source": SOURCE,
        "timer": "perf_counter_ns",
        "disable_gc": True,
        "min_rounds": len(values_s),
        "min_time": None,
        "max_time": None,
        "precision": None,
        "confidence": None,
        "warmup": True,
    }
    try:
        metadata = metadata_cls(measured, iterations=int(entry["runs_per_round"]), options=options)
        for value in values_s:
            metadata.stats.update(value)
        # Fail here, not at session finish, if the stats no longer work this way.
        metadata.as_dict(include_data=False)
    except Exception as exc:  # an unknown pytest-benchmark: skip, never break the test
        return _give_up(config, f"Metadata has an unexpected shape: {exc!r}")
    benchmarks.append(metadata)
    return True


def annotate(config: pytest.Config, node: object, extra_info: Mapping[str, object]) -> bool:
    """Add ``extra_info`` to the entries this session already holds for ``node`` (its ``fullname``
    is the node id, or starts with it: ``#2``, ``::startup``); ``True`` if there was one."""
    if _UNUSABLE in config.stash:
        return False
    session = _benchmark_session(config)
    benchmarks = getattr(session, "benchmarks", None) if session is not None else None
    if getattr(session, "disabled", True) is not False or not isinstance(benchmarks, list):
        return False
    nodeid = str(getattr(node, "nodeid", "") or getattr(node, "name", "?"))
    found = False
    for bench in benchmarks:
        fullname = str(getattr(bench, "fullname", ""))
        info = getattr(bench, "extra_info", None)
        ours = fullname == nodeid or fullname.startswith((f"{nodeid}#", f"{nodeid}::"))
        if ours and isinstance(info, dict):
            info.update(extra_info)
            found = True
    return found


def _benchmark_session(config: pytest.Config) -> object | None:
    session: object | None = config.pluginmanager.get_plugin(PLUGIN_NAME)
    if session is None:
        session = getattr(config, "_benchmarksession", None)
    return session


def _give_up(config: pytest.Config, reason: str) -> bool:
    config.stash[_UNUSABLE] = reason
    return False


def _seconds(round_medians_ms: Sequence[float]) -> list[float]:
    if isinstance(round_medians_ms, (str, bytes)) or not round_medians_ms:
        raise ValueError("round_medians_ms must hold at least one round median")
    values: list[float] = []
    for value in round_medians_ms:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"round medians must be finite numbers, got {value!r}")
        if value < 0:
            raise ValueError(f"round medians must be >= 0, got {value!r}")
        values.append(float(value) / 1000.0)
    return values


def _param(node: object) -> tuple[str | None, dict[str, Any] | None]:
    callspec = getattr(node, "callspec", None)
    if callspec is None:
        return None, None
    param = getattr(callspec, "id", None)
    params = getattr(callspec, "params", None)
    return (
        param if isinstance(param, str) else None,
        dict(params) if isinstance(params, Mapping) else None,
    )


def unusable_reason(config: pytest.Config) -> str | None:
    """Why publishing was given up for this session (unknown pytest-benchmark shape), if it was."""
    return config.stash.get(_UNUSABLE, None)
