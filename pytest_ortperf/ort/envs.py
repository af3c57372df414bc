"""Reference environments: cached virtual environments that hold one ONNX Runtime each.

A measuring worker can later run in such an environment to compare this process's ONNX
Runtime with another one (another version, another flavour) on the same machine. Each
environment is a directory ``<root>/<key>``, where the key is derived from the package specs
it was created from, so the same specs in any order give the same environment. Its
``ortperf-env.json`` says what it holds; it is written last, atomically, so a directory
without a readable one is an incomplete leftover (an interrupted or failed create), never used.

The cache of a project is ``.ortperf/envs`` at the top of its git work tree (:func:`env_root`), so
``ortperf env create`` run anywhere in the repository and a suite whose rootdir is any directory of
it find the same environments. :meth:`EnvCache.fetch` is how a run creates the runtime its baselines
recorded on demand: one creation per key across processes (a file lock), and a failure written down
(``.failed/<key>.json``) so that the other workers of the same run report it instead of trying again.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from pytest_ortperf.errors import OrtperfError, UsageError
from pytest_ortperf.ort.worker_program import FLAVOURS
from pytest_ortperf.values import write_atomically

METADATA_FILE = "ortperf-env.json"
FAILED_DIR = ".failed"  # <root>/.failed/<key>.json: why the last fetch of <key> failed, and in which run
LOG_DIR = ".logs"  # <root>/.logs/<key>.log: pip's output of the last fetch of <key>
PROJECT_FILES = ("pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
KEY_LENGTH = 12
MIN_PREFIX = 4
PROBE_TIMEOUT_S = 300.0

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_EXTRAS = r"\[[A-Za-z0-9._-]+(?:,[A-Za-z0-9._-]+)*\]"
_CLAUSE = r"(?:===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+"
_SPEC = re.compile(rf"(?P<name>{_NAME})(?P<rest>(?:{_EXTRAS})?(?:{_CLAUSE}(?:,{_CLAUSE})*)?)")
_EXAMPLE = "onnxruntime==1.31.1"

# Runs inside the environment (python -I -c): one JSON line about the ONNX Runtime it holds.
_PROBE = r"""
import importlib.metadata as md, json, platform, re
import onnxruntime
KNOWN = set(FLAVOURS)
dists = set()
for dist in md.distributions():
    name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()
    if not name.startswith("onnxruntime"):
        continue
    files = dist.files
    if (files is None and name in KNOWN) or any(f.parts[:1] == ("onnxruntime",) for f in files or ()):
        dists.add((name, dist.version))
print(json.dumps({
    "python_version": platform.python_version(),
    "version": str(onnxruntime.__version__),
    "providers": [str(p) for p in onnxruntime.get_available_providers()],
    "distributions": sorted(dists),
}))
""".replace("FLAVOURS", repr(FLAVOURS))


@dataclass(frozen=True)
class ReferenceEnv:
    """A complete environment: where it is and which ONNX Runtime it holds."""

    key: str
    path: Path
    specs: tuple[str, ...]
    python: Path
    flavour: str
    version: str
    providers: tuple[str, ...]
    python_version: str
    created: str

    @property
    def runtime(self) -> str:
        return f"{self.flavour} {self.version}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "path": str(self.path),
            "specs": list(self.specs),
            "python": str(self.python),
            "flavour": self.flavour,
            "version": self.version,
            "providers": list(self.providers),
            "python_version": self.python_version,
            "created": self.created,
        }


@dataclass(frozen=True)
class EnvProbe:
    """What an interpreter's ONNX Runtime is, as reported from inside it."""

    python_version: str
    version: str
    providers: tuple[str, ...]
    distributions: tuple[tuple[str, str], ...]

    def flavour(self, specs: Sequence[str]) -> str:
        """The distribution that provides ``onnxruntime``, preferring one the specs name."""
        requested = {normalize_name(match.group("name")) for match in map(_SPEC.fullmatch, specs) if match}
        ranked = sorted(
            self.distributions,
            key=lambda dist: (dist[0] not in requested, dist[1] != self.version, dist[0]),
        )
        if ranked:
            return ranked[0][0]
        named = sorted(name for name in requested if name.startswith("onnxruntime"))
        return named[0] if named else "onnxruntime"


def normalize_name(name: str) -> str:
    """The PEP 503 form pip compares names in: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def normalize_specs(specs: Iterable[str], *, command: str = "ortperf env create") -> tuple[str, ...]:
    """Each spec checked and normalized (name part in PEP 503 form), sorted, duplicates dropped.

    Only plain requirements pass (``onnxruntime==1.31.1``, ``onnxruntime-gpu>=1.30``,
    ``numpy<2``): no pip options, paths, URLs, environment markers or whitespace.
    """
    normalized = set()
    for raw in specs:
        spec = raw.strip()
        match = _SPEC.fullmatch(spec)
        if match is None:  # also every option, path, URL, marker (;) and inner whitespace
            raise UsageError(
                f"{command}: {raw!r} is not a package spec (expected NAME==VERSION such as {_EXAMPLE})"
            )
        normalized.add(normalize_name(match.group("name")) + match.group("rest"))
    return tuple(sorted(normalized))


def env_key(specs: Iterable[str]) -> str:
    """First 12 hex digits of sha256 over the normalized specs, one a line."""
    text = "\n".join(normalize_specs(specs))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_LENGTH]


def is_ort_spec(spec: str) -> bool:
    match = _SPEC.fullmatch(spec.strip())
    return match is not None and normalize_name(match.group("name")).startswith("onnxruntime")


def interpreter(env_dir: Path) -> Path:
    """The Python of the virtual environment at ``env_dir``."""
    if os.name == "nt":
        return env_dir / "Scripts" / "python.exe"
    return env_dir / "bin" / "python"


def project_env_root(start: Path) -> Path:
    """``.ortperf/envs`` in the project root: the nearest directory upward from ``start`` that holds
    pytest.ini, pyproject.toml, tox.ini or setup.cfg, else ``start`` itself."""
    start = start.absolute()
    for directory in (start, *start.parents):
        if any((directory / name).is_file() for name in PROJECT_FILES):
            return directory / ".ortperf" / "envs"
    return start / ".ortperf" / "envs"


def git_toplevel(start: Path) -> Path | None:
    """The top of the git work tree holding ``start`` (the nearest directory upward with a ``.git``
    directory or file: a worktree or submodule has a file), or None outside git."""
    start = start.absolute()
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def env_root(start: Path) -> Path:
    """Where the reference environments of the project holding ``start`` are: ``.ortperf/envs`` at
    the top of its git work tree, the same from any directory of the repository; outside git, in the
    nearest project root (:func:`project_env_root`)."""
    top = git_toplevel(start)
    return top / ".ortperf" / "envs" if top is not None else project_env_root(start)


def probe_environment(python: Path) -> EnvProbe:
    """Ask ``python`` (isolated: -I) which ONNX Runtime it imports; OrtperfError when it cannot."""
    try:
        done = subprocess.run(
            [str(python), "-I", "-c", _PROBE],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OrtperfError(f"cannot probe ONNX Runtime with {python}: {exc}") from exc
    if done.returncode != 0:
        raise OrtperfError(
            f"{python} cannot import onnxruntime (exit status {done.returncode}): {_tail(done.stderr)}"
        )
    try:
        data = json.loads(done.stdout.strip().splitlines()[-1])
        return EnvProbe(
            python_version=str(data["python_version"]),
            version=str(data["version"]),
            providers=tuple(str(p) for p in data["providers"]),
            distributions=tuple((str(name), str(version)) for name, version in data["distributions"]),
        )
    except (ValueError, IndexError, KeyError, TypeError) as exc:
        raise OrtperfError(f"unexpected probe output from {python}: {done.stdout[-500:]!r}") from exc


# Makes the virtual environment ``env_dir`` with ``python`` and installs the specs into it, writing
# its progress to the stream; raises OrtperfError saying why it could not.
Installer = Callable[[Path, Sequence[str], str, TextIO, Sequence[str]], None]


@dataclass(frozen=True)
class FetchFailure:
    """Why the last fetch of an environment failed, when, and in which run."""

    key: str
    specs: tuple[str, ...]
    reason: str
    when: str
    run_id: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "specs": list(self.specs),
            "reason": self.reason,
            "when": self.when,
            "run_id": self.run_id,
        }


class FetchError(OrtperfError):
    """A fetch that failed, now or earlier in the same run (``remembered``), with its reason."""

    def __init__(self, failure: FetchFailure, *, remembered: bool) -> None:
        super().__init__(failure.reason)
        self.failure = failure
        self.remembered = remembered


@dataclass(frozen=True)
class Fetched:
    """What a fetch gave: the environment, whether this call created it, and the seconds it took
    (creating, or waiting for another process that created it)."""

    env: ReferenceEnv
    created: bool
    seconds: float


class EnvCache:
    """The reference environments under ``root`` (usually ``<project>/.ortperf/envs``).

    ``installer`` makes one environment (default: ``python -m venv`` and ``pip install``)."""

    def __init__(self, root: Path, installer: Installer | None = None) -> None:
        self.root = root.absolute()
        self._installer = installer if installer is not None else pip_install

    # Reading ----------------------------------------------------------------------------------

    def _dirs(self) -> builtins.list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))

    def load(self, env_dir: Path) -> ReferenceEnv | None:
        """The environment at ``env_dir``, or None when it is incomplete (no or a damaged json)."""
        try:
            data = json.loads((env_dir / METADATA_FILE).read_text(encoding="utf-8"))
            env = ReferenceEnv(
                key=_str(data["key"]),
                path=env_dir,
                specs=tuple(_str(s) for s in _list(data["specs"])),
                python=interpreter(env_dir),
                flavour=_str(data["flavour"]),
                version=_str(data["version"]),
                providers=tuple(_str(p) for p in _list(data["providers"])),
                python_version=_str(data["python_version"]),
                created=_str(data["created"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return env if env.key == env_dir.name else None

    def list(self) -> builtins.list[ReferenceEnv]:
        """Every complete environment, by key."""
        return [env for env in map(self.load, self._dirs()) if env is not None]

    def incomplete(self) -> builtins.list[Path]:
        """Directories without a valid ``ortperf-env.json``: interrupted or failed creates."""
        return [path for path in self._dirs() if self.load(path) is None]

    def get(self, specs: Sequence[str]) -> ReferenceEnv | None:
        """The complete environment for these specs, if there is one."""
        return self.load(self.root / env_key(specs))

    def find(self, flavour: str, version: str) -> ReferenceEnv | None:
        """A complete environment with this ONNX Runtime (the newest created when several)."""
        wanted = normalize_name(flavour)
        found = [e for e in self.list() if normalize_name(e.flavour) == wanted and e.version == version]
        return max(found, key=lambda env: (env.created, env.key), default=None)

    # Creating ---------------------------------------------------------------------------------

    def create(
        self,
        specs: Sequence[str],
        *,
        python: str = sys.executable,
        log: TextIO | None = None,
        pip_args: Sequence[str] = (),
    ) -> ReferenceEnv:
        """The environment for ``specs``: reused when complete, else built with ``python -m venv``
        and ``pip install`` (``pip_args`` appended), probed and recorded. ``log`` (default: the
        current ``sys.stderr``) gets the progress and pip's output."""
        out = sys.stderr if log is None else log
        if isinstance(specs, str):
            specs = [specs]
        normalized = normalize_specs(specs)
        if not normalized:
            raise UsageError(f"ortperf env create: no package specs given (such as {_EXAMPLE})")
        if not any(is_ort_spec(spec) for spec in normalized):
            raise UsageError(
                f"ortperf env create: {' '.join(normalized)} names no ONNX Runtime distribution "
                f"(add one, such as {_EXAMPLE} or onnxruntime-gpu==1.30.0)"
            )
        key = env_key(normalized)
        with self._locked(key, out):
            existing = self.load(self.root / key)
            if existing is not None:
                _say(out, f"reusing {key} ({existing.runtime}) at {existing.path}")
                return existing
            env = self._create_locked(key, normalized, python, out, pip_args)
            with contextlib.suppress(OSError):
                (self.root / FAILED_DIR / f"{key}.json").unlink()
            return env

    def fetch(
        self,
        specs: Sequence[str],
        *,
        run_id: str,
        python: str = sys.executable,
        clock: Callable[[], float] = time.perf_counter,
    ) -> Fetched:
        """The environment for ``specs``, created when there is none, for a run (``run_id``).

        Processes of one run and concurrent runs share one creation (the lock of :meth:`create`);
        the others wait and reuse it. A failure is written to ``.failed/<key>.json`` before the lock
        is let go: a later fetch of the same run raises it again (``remembered``) without trying; a
        fetch of another run tries again. pip's output goes to ``.logs/<key>.log``.
        Raises :class:`FetchError`."""
        normalized = normalize_specs(specs, command="fetching a recorded runtime")
        key = env_key(normalized)
        started = clock()
        self.root.mkdir(parents=True, exist_ok=True)
        with self._locked(key, io.StringIO()):
            existing = self.load(self.root / key)
            if existing is not None:  # made by another process while this one waited, or before
                return Fetched(existing, created=False, seconds=clock() - started)
            remembered = self.failure(key)
            if remembered is not None and remembered.run_id == run_id:
                raise FetchError(remembered, remembered=True)
            (self.root / LOG_DIR).mkdir(parents=True, exist_ok=True)
            log_path = self.root / LOG_DIR / f"{key}.log"
            try:
                with open(log_path, "w", encoding="utf-8", errors="replace") as stream:
                    env = self._create_locked(key, normalized, python, stream, FETCH_PIP_ARGS)
            except (OrtperfError, OSError) as exc:
                failure = FetchFailure(
                    key=key,
                    specs=normalized,
                    reason=f"{str(exc).removeprefix('ortperf env create: ')} (pip's output: {log_path})",
                    when=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                    run_id=run_id,
                )
                with contextlib.suppress(OSError):
                    (self.root / FAILED_DIR).mkdir(exist_ok=True)
                    write_atomically(
                        self.root / FAILED_DIR / f"{key}.json",
                        json.dumps(failure.as_dict(), indent=1, sort_keys=True) + "\n",
                    )
                raise FetchError(failure, remembered=False) from exc
            with contextlib.suppress(OSError):
                (self.root / FAILED_DIR / f"{key}.json").unlink()
            return Fetched(env, created=True, seconds=clock() - started)

    def failure(self, key: str) -> FetchFailure | None:
        """The last failed fetch of ``key``, if it is written down (None when unreadable)."""
        try:
            data = json.loads((self.root / FAILED_DIR / f"{key}.json").read_text(encoding="utf-8"))
            return FetchFailure(
                key=_str(data["key"]),
                specs=tuple(_str(s) for s in _list(data["specs"])),
                reason=_str(data["reason"]),
                when=_str(data["when"]),
                run_id=_str(data["run_id"]),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _create_locked(
        self, key: str, specs: tuple[str, ...], python: str, out: TextIO, pip_args: Sequence[str]
    ) -> ReferenceEnv:
        """Build ``key`` afresh (the lock is held): a leftover is removed first, and a failed build
        leaves nothing behind."""
        env_dir = self.root / key
        if env_dir.exists() or env_dir.is_symlink():
            _say(out, f"removing the incomplete {env_dir}")
            _rmtree(env_dir)
        _say(out, f"creating {key} for {' '.join(specs)} in {env_dir}")
        try:
            return self._build(env_dir, key, specs, python, out, pip_args)
        except BaseException:
            _rmtree(env_dir)
            raise

    def _build(
        self,
        env_dir: Path,
        key: str,
        specs: tuple[str, ...],
        python: str,
        out: TextIO,
        pip_args: Sequence[str],
    ) -> ReferenceEnv:
        self._ignore_in_git()
        self._installer(env_dir, specs, python, out, pip_args)
        env_python = interpreter(env_dir)
        try:
            probe = probe_environment(env_python)
        except OrtperfError as exc:
            raise OrtperfError(f"ortperf env create: installed {' '.join(specs)}, but {exc}") from exc
        env = ReferenceEnv(
            key=key,
            path=env_dir,
            specs=specs,
            python=env_python,
            flavour=probe.flavour(specs),
            version=probe.version,
            providers=probe.providers,
            python_version=probe.python_version,
            created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        record = env.as_dict()
        del record["path"]
        record["distributions"] = [list(dist) for dist in probe.distributions]
        write_atomically(env_dir / METADATA_FILE, json.dumps(record, indent=1, sort_keys=True) + "\n")
        _say(out, f"created {key}: {env.runtime} ({', '.join(env.providers)}), python {env_python}")
        return env

    def _ignore_in_git(self) -> None:
        """The cache is never committed: a ``.gitignore`` of ``*`` in it."""
        self.root.mkdir(parents=True, exist_ok=True)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by ortperf env: reference environments, not for git.\n*\n")

    @contextlib.contextmanager
    def _locked(self, key: str, out: TextIO) -> Iterator[None]:
        """One create per key at a time across processes (POSIX; elsewhere no lock is taken)."""
        lock_dir = self.root / ".locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        if sys.platform == "win32":
            yield
            return
        import fcntl

        with open(lock_dir / f"{key}.lock", "a") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                _say(out, f"waiting for another ortperf creating {key}")
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    # Removing ---------------------------------------------------------------------------------

    def remove(self, what: str) -> builtins.list[Path]:
        """Remove the environment ``what`` names: its key, a unique key prefix of 4+ characters,
        or the specs it was created from (whitespace-separated). Returns the removed paths. Waits
        for a creation or fetch of it in progress (its lock), so a half-made one is not cut short."""
        target = self._resolve(what)
        with self._locked(target.name, sys.stderr):
            _rmtree(target)
        return [target]

    def remove_all(self) -> builtins.list[Path]:
        """Remove every environment, complete or not, each under its lock. Returns the removed paths."""
        removed = self._dirs()
        for path in removed:
            with self._locked(path.name, sys.stderr):
                _rmtree(path)
        return removed

    def _resolve(self, what: str) -> Path:
        dirs = {path.name: path for path in self._dirs()}
        text = what.strip()
        if text in dirs:
            return dirs[text]
        if len(text) >= MIN_PREFIX and not any(ch.isspace() for ch in text):
            matches = sorted(name for name in dirs if name.startswith(text.lower()))
            if len(matches) == 1:
                return dirs[matches[0]]
            if len(matches) > 1:
                raise OrtperfError(
                    f"ortperf env remove: {what!r} matches several environments in {self.root}: "
                    f"{', '.join(matches)}; give more of the key"
                )
        with contextlib.suppress(UsageError):
            key = env_key(text.split())
            if text and key in dirs:
                return dirs[key]
        there = ", ".join(sorted(dirs)) if dirs else "none"
        raise OrtperfError(
            f"ortperf env remove: no environment {what!r} in {self.root} (environments there: {there})"
        )


def pip_install(
    env_dir: Path, specs: Sequence[str], python: str, out: TextIO, pip_args: Sequence[str]
) -> None:
    """The default installer: ``python -m venv env_dir``, then its pip installs ``specs``."""
    status, output = _run([python, "-I", "-m", "venv", str(env_dir)], None)
    if status != 0:
        raise OrtperfError(
            f"ortperf env create: '{python} -m venv {env_dir}' failed (exit status {status}): {_tail(output)}"
        )
    install = [str(interpreter(env_dir)), "-I", "-m", "pip", "install", "--disable-pip-version-check"]
    status, output = _run([*install, *specs, *pip_args], out)
    if status != 0:
        reason = pip_failure(output, status, _python_version(interpreter(env_dir)))
        raise OrtperfError(f"ortperf env create: cannot install {' '.join(specs)}: {reason}")


def _python_version(python: Path) -> str:
    """The version of ``python`` (the environment's: it may differ from this process's), or ""."""
    try:
        done = subprocess.run(
            [str(python), "-I", "-c", "import platform; print(platform.python_version())"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


# A fetch runs inside a test run, holding the timing lock: where the index cannot be reached (a runner
# whose firewall drops packets), pip gives up after one retry of 15 s instead of its default five.
FETCH_PIP_ARGS = ("--retries", "1", "--timeout", "15")

# pip's words when it cannot reach an index (urllib3, the resolver, the proxy).
_UNREACHABLE = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "ConnectTimeoutError",
    "ProxyError",
    "Could not fetch URL",
    "Max retries exceeded",
)


def pip_failure(output: str, status: int, python_version: str = "") -> str:
    """Why pip failed, in plain words first: it could not reach the package index, or there is no
    distribution of the spec for this Python; then pip's own ERROR lines."""
    errors = [line.strip() for line in output.splitlines() if line.startswith("ERROR:")]
    said = "; ".join(errors[-3:]) if errors else f"pip exit status {status}: {_tail(output)}"
    if any(words in output for words in _UNREACHABLE):
        return f"pip cannot reach the package index: {said}"
    if "No matching distribution found" in output:
        version = python_version or platform.python_version()
        return (
            f"the package index has no distribution of it for this Python ({version}, "
            f"{platform.system()} {platform.machine()}): {said}"
        )
    return said


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _list(value: object) -> builtins.list[object]:
    if not isinstance(value, builtins.list):
        raise TypeError(f"expected a list, got {value!r}")
    return value


def _say(out: TextIO, message: str) -> None:
    print(f"ortperf env: {message}", file=out, flush=True)


def _tail(text: str, lines: int = 8) -> str:
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return " | ".join(kept[-lines:]) or "(no output)"


def _run(command: Sequence[str], out: TextIO | None) -> tuple[int, str]:
    """Run ``command`` with its output captured, and copied line by line to ``out`` when given."""
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except OSError as exc:
        raise OrtperfError(f"ortperf env create: cannot run {command[0]}: {exc}") from exc
    kept: collections.deque[str] = collections.deque(maxlen=2000)
    assert process.stdout is not None
    with process:
        for line in process.stdout:
            kept.append(line)
            if out is not None:
                out.write(line)
                out.flush()
    return process.returncode, "".join(kept)


def _rmtree(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
