"""The recorded runtime of a side-by-side plan across runtimes: an interpreter whose environment has
it, found or fetched on demand.

Where the onnxruntime a baseline recorded differs from this process's, its reference runs in a
measuring worker of another environment: the configured ``--ortperf-ab-python``, else an
``ortperf env`` of the repository's cache (``ort/envs.py: env_root``, the same from any directory of
the repository), else, under ``--ortperf-fetch-runtime=auto`` (the default), one this run creates:
pip installs the recorded wheel and version into the cache, once (a file lock shares one creation
among xdist workers and concurrent jobs), with a line when it starts and the time it took. A failed
fetch is tried once per run: the other checks, in this process or another worker of the run, get
its reason without trying again. Every check that falls back says why, naming the setting.

Plain logic with narrow callables in (what a worker of an interpreter imports, the timing lock,
where lines go): unit-testable with stand-ins.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.ort.envs import EnvCache, Fetched, FetchError, ReferenceEnv

FETCH_OPTION = "--ortperf-fetch-runtime"
FETCH_INI = "ortperf_fetch_runtime"


@dataclass
class RuntimeFinder:
    """Finds, and under ``fetch`` creates, an interpreter with a recorded runtime; once per runtime.

    ``imports(python)``: the runtime a worker of ``python`` really imports, as ``flavour version``
    (raises OrtperfError when none starts). ``hold()``: the timing lock, held while pip works so that
    no other process measures meanwhile. ``say(line)``: a line for the terminal, now (None: not shown
    live, as in an xdist worker); every fetch also leaves a line in :attr:`notes` for the summary."""

    caches: Sequence[EnvCache]  # the first is where a fetch creates; the others are only searched
    imports: Callable[[str], str]
    ab_python: str = ""
    fetch: bool = True
    run_id: str = ""
    hold: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext
    say: Callable[[str], None] | None = None
    notes: list[str] = field(default_factory=list)  # what fetching did, for the run's summary
    _found: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    def python(self, flavour: str, version: str) -> tuple[str, str]:
        """An interpreter whose environment has ``flavour`` ``version`` and where it came from; or
        ("", why there is none)."""
        key = (flavour, version)
        if key not in self._found:
            self._found[key] = self._find(flavour, version)
        return self._found[key]

    def _find(self, flavour: str, version: str) -> tuple[str, str]:
        wanted = f"{flavour} {version}"
        if self.ab_python:
            try:
                if self.imports(self.ab_python) == wanted:
                    return self.ab_python, f"--ortperf-ab-python {self.ab_python}"
            except OrtperfError:
                pass  # an unusable interpreter is reported by the checks that name it explicitly
        for cache in self.caches:
            try:
                found = cache.find(flavour, version)
            except OrtperfError:
                found = None
            if found is not None:
                return self._checked(found, wanted, f"ortperf env {found.key}")
        root = self.caches[0].root
        command = f"ortperf env create {flavour}=={version}"
        if not self.fetch:
            return "", (
                f"no environment here has {wanted} (neither --ortperf-ab-python nor an ortperf env in "
                f"{root}), and {FETCH_OPTION}=never (ini {FETCH_INI}) does not fetch it; create one "
                f"with: {command} (run anywhere in the repository)"
            )
        return self._fetched(flavour, version, wanted, command)

    def _fetched(self, flavour: str, version: str, wanted: str, command: str) -> tuple[str, str]:
        cache = self.caches[0]
        spec = f"{flavour}=={version}"
        if self.say is not None:
            self.say(
                f"ortperf: fetching {wanted}, the runtime the baselines recorded, into {cache.root} "
                f"(pip install {spec}; {FETCH_OPTION}=never turns this off) ..."
            )
        try:
            with self.hold():
                fetched = cache.fetch([spec], run_id=self.run_id)
        except (OrtperfError, OSError) as exc:  # FetchError, a version that is no spec, an unwritable cache
            why = f"{FETCH_OPTION}=auto could not fetch {wanted}: {exc}"
            if isinstance(exc, FetchError) and exc.remembered:  # another worker of this run tried
                why += f" (failed at {exc.failure.when} in this run; not tried again)"
            else:
                self._note(f"not fetched: {why}")
            return "", (
                f"{why}; {command} makes it by hand, or {FETCH_OPTION}=never (ini {FETCH_INI}) stops trying"
            )
        where = f"ortperf env {fetched.env.key}"
        self._note(_fetch_line(fetched, wanted))
        return self._checked(fetched.env, wanted, where)

    def _checked(self, env: ReferenceEnv, wanted: str, where: str) -> tuple[str, str]:
        """What the environment says it holds, checked against what its worker really imports."""
        try:
            really = self.imports(str(env.python))
        except OrtperfError as exc:
            return "", f"{where} cannot run a measuring worker: {exc}"
        if really != wanted:
            return "", f"{where} claims {wanted} but its interpreter imports {really}; remove it"
        return str(env.python), where

    def _note(self, line: str) -> None:
        self.notes.append(line)
        if self.say is not None:
            self.say(f"ortperf: {line}")


def _fetch_line(fetched: Fetched, wanted: str) -> str:
    seconds, where = f"{fetched.seconds:.1f} s", _short(fetched.env.path)
    if fetched.created:
        return f"fetched {wanted} (the recorded runtime) into {where} in {seconds}"
    return f"{wanted} (the recorded runtime) was fetched into {where} by another process; waited {seconds}"


def _short(path: Path) -> str:
    """``path`` relative to the working directory when below it."""
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)


def summary_lines(notes: Sequence[str]) -> list[str]:
    """The fetch lines of a run (its own and its xdist workers'), each once, in order."""
    return list(dict.fromkeys(notes))
