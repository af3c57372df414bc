"""Measuring workers: ONNX Runtime sessions timed in child processes, possibly in another Python.

The parent side of ``worker_program.py``. A :class:`WorkerProcess` starts the program by file
path in an interpreter (``python -I``: neither this package nor pytest needs to be installed
there), speaks its message protocol over pipes, and bounds every request by a deadline. A worker
that crashes, hangs or cannot load a model raises :class:`WorkerError` with what it printed; the
caller fails that one check and the run goes on. Workers end with the run (:meth:`WorkerPool.close`,
and at interpreter exit), and on their own when their parent dies.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import numpy as np

from pytest_ortperf.errors import OrtperfError
from pytest_ortperf.ort import worker_program
from pytest_ortperf.ort.models import ModelSource, weight_bytes
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import provider_arguments, session_recipe
from pytest_ortperf.ort.variants import Variant
from pytest_ortperf.values import on_off

PROGRAM = Path(worker_program.__file__)
START_TIMEOUT_S = 60.0  # importing onnxruntime (and CUDA's libraries) on a busy machine
_STDERR_TAIL = 2000
_LIVE: weakref.WeakSet[WorkerProcess] = weakref.WeakSet()


class WorkerError(OrtperfError):
    """A measuring worker crashed, hung, or refused a command; the message says what it printed."""


@dataclass(frozen=True)
class WorkerRuntime:
    """What ONNX Runtime a worker's environment has."""

    version: str
    flavour: str
    providers: tuple[str, ...]
    python: str
    executable: str

    def describe(self) -> str:
        return f"{self.flavour} {self.version}"


class WorkerProcess:
    """One worker: requests in order, each answered within its deadline or the worker is killed."""

    def __init__(self, python: str, *, timeout_s: float, program: Path = PROGRAM, wait: bool = True) -> None:
        """Start the worker; with ``wait`` False, :meth:`ready` (or :attr:`runtime`) waits for its
        greeting later, so that several workers start at once."""
        self.python = python
        self.timeout_s = timeout_s
        # What the worker prints, kept for the message of a failed command; closed with the pool.
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self._tail = ""  # the end of what it printed, kept when the file is closed
        try:
            self._process = subprocess.Popen(
                [python, "-I", str(program), repr(float(timeout_s))],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                close_fds=True,
            )
        except OSError as exc:
            self._stderr.close()
            raise WorkerError(f"cannot start a measuring worker with {python}: {exc}") from None
        self._answers: queue.Queue[tuple[dict[str, Any], list[Any]] | BaseException | None] = queue.Queue()
        reader = threading.Thread(target=self._read, name="ortperf-worker-reader", daemon=True)
        reader.start()
        _LIVE.add(self)
        self._runtime: WorkerRuntime | None = None
        if wait:
            self.ready()

    def ready(self) -> WorkerRuntime:
        """The worker's runtime, once it has started and answered its first command."""
        if self._runtime is None:
            self._runtime = self._hello()
        return self._runtime

    @property
    def runtime(self) -> WorkerRuntime:
        return self.ready()

    @property
    def starting(self) -> bool:
        """Started and not yet greeted (importing onnxruntime, say)."""
        return self._runtime is None and self.alive

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def request(
        self, header: Mapping[str, Any], arrays: Sequence[Any] = (), *, work_s: float = 0.0
    ) -> tuple[dict[str, Any], list[Any]]:
        """Send one command; its answer within four times the expected ``work_s`` plus twice the run
        timeout (the worker itself terminates a run past the run timeout, and answers why)."""
        if not self.alive:
            raise self._died(f"'{header.get('cmd')}'")
        try:
            assert self._process.stdin is not None
            worker_program.write_message(self._process.stdin, dict(header), arrays)
        except (BrokenPipeError, OSError):
            raise self._died(f"'{header.get('cmd')}'") from None
        return self._answer(str(header.get("cmd")), 2 * self.timeout_s + 4 * work_s + 2.0)

    def close(self) -> None:
        """Ask the worker to exit; kill it if it does not within a second. Safe to call twice."""
        self.ask_to_exit()
        process = self._process
        if process.poll() is None:
            try:
                process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                self.kill()
        self._cleanup()

    def ask_to_exit(self) -> None:
        """Tell the worker to exit, without waiting: :meth:`close` then waits for it, so that
        several workers end at once. Safe to call twice."""
        process = self._process
        if process.poll() is None and process.stdin is not None and not process.stdin.closed:
            try:
                worker_program.write_message(process.stdin, {"cmd": "exit"})
                process.stdin.close()
            except OSError:
                self.kill()

    def kill(self) -> None:
        process = self._process
        if process.poll() is None:
            process.kill()
            process.wait()
        self._cleanup()

    def _cleanup(self) -> None:
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if not self._stderr.closed:
            self._tail = self._read_tail()
            self._stderr.close()
        _LIVE.discard(self)

    def _hello(self) -> WorkerRuntime:
        try:
            answer, _ = self._answer_to("hello", max(2 * self.timeout_s, START_TIMEOUT_S))
        except WorkerError:
            self.kill()
            raise
        return WorkerRuntime(
            version=str(answer.get("ort_version", "?")),
            flavour=str(answer.get("ort_flavour", "?")),
            providers=tuple(answer.get("providers", ())),
            python=str(answer.get("python", "?")),
            executable=str(answer.get("executable", self.python)),
        )

    def _answer_to(self, command: str, timeout_s: float) -> tuple[dict[str, Any], list[Any]]:
        try:
            assert self._process.stdin is not None
            worker_program.write_message(self._process.stdin, {"cmd": command})
        except (BrokenPipeError, OSError):
            pass  # a worker that failed at start has already written why: read it
        return self._answer(command, timeout_s)

    def _answer(self, command: str, timeout_s: float) -> tuple[dict[str, Any], list[Any]]:
        try:
            answer = self._answers.get(timeout=timeout_s)
        except queue.Empty:
            self.kill()
            raise WorkerError(
                f"the measuring worker ({self.python}) did not answer '{command}' within {timeout_s:.3g} s "
                f"(--ortperf-run-timeout) and was stopped{self._printed()}"
            ) from None
        if answer is None:
            raise self._died(f"'{command}'")
        if isinstance(answer, BaseException):
            self.kill()
            raise WorkerError(
                f"the measuring worker ({self.python}) answered '{command}' with something that is not a "
                f"message ({answer}) and was stopped{self._printed()}"
            )
        header, arrays = answer
        if not header.get("ok"):
            error = str(header.get("error", "no reason given"))
            raise WorkerError(f"the measuring worker ({self.python}) failed '{command}': {error}")
        return header, arrays

    def _died(self, command: str) -> WorkerError:
        try:
            code = self._process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self._process.returncode
        self._cleanup()
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                how += f" ({signal.Signals(-code).name})"
        return WorkerError(f"the measuring worker ({self.python}) {how} during {command}{self._printed()}")

    def _read_tail(self) -> str:
        try:
            self._stderr.flush()
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - _STDERR_TAIL))
            return self._stderr.read().decode("utf-8", "backslashreplace").strip()
        except (OSError, ValueError):
            return ""

    def _printed(self) -> str:
        """What the worker wrote to stderr, its tail, as the end of an error message."""
        text = self._tail if self._stderr.closed else self._read_tail()
        if not text:
            return "; it printed nothing"
        return f"; it printed:\n{text}"

    def _read(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        while True:
            try:
                message = worker_program.read_message(stdout)
            except worker_program.ProtocolError as exc:
                self._answers.put(exc)
                return
            except (OSError, ValueError):
                message = None
            self._answers.put(message)
            if message is None:
                return


@dataclass
class LoadedModel:
    """A model loaded in a worker: ``instances`` sessions run in turn, and the feeds they run on."""

    worker: WorkerProcess
    handle: int
    providers: tuple[str, ...]

    def warm_up(self, runs: int, seconds: float, cap_s: float) -> float:
        """Warm up until the run times settle (``worker_program.warm_up_runs``: at least ``runs``
        runs and ``seconds``, at most ``cap_s``); the typical run cost (ns). The first runs of a
        session may take long, so the deadline allows one more run timeout."""
        answer, _ = self.worker.request(
            {"cmd": "warm_up", "handle": self.handle, "runs": runs, "seconds": seconds, "cap": cap_s},
            work_s=max(seconds, cap_s) + self.worker.timeout_s / 4,
        )
        return float(answer["cost_ns"])

    def time_runs(self, count: int, expected_ns: float) -> list[int]:
        _, arrays = self.worker.request(
            {"cmd": "time", "handle": self.handle, "count": count}, work_s=count * expected_ns / 1e9
        )
        return [int(value) for value in arrays[0]]

    def outputs(self) -> dict[str, Any]:
        """Every output as onnxruntime returned it in the worker (arrays, lists, dicts, None)."""
        return {name: value for name, (value, _) in self.typed_outputs().items()}

    def typed_outputs(self) -> dict[str, tuple[Any, str]]:
        """Every output with its type as the session states it (``seq(map(int64,tensor(float)))``)."""
        answer, arrays = self.worker.request({"cmd": "outputs", "handle": self.handle})
        values = [_from_form(form, arrays) for form in answer["values"]]
        return {
            name: (value, kind)
            for name, kind, value in zip(answer["names"], answer["types"], values, strict=True)
        }

    def profile(self, runs: int, prefix: Path) -> Path:
        """``runs`` untimed runs on a new session of this model with session-level profiling,
        built in the worker beside the timed ones and dropped after; the path of its trace."""
        try:
            prefix.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WorkerError(f"cannot create '{prefix.parent}' for a worker's trace: {exc}") from None
        answer, _ = self.worker.request(
            {"cmd": "profile", "handle": self.handle, "runs": runs, "prefix": str(prefix)},
            work_s=max(self.worker.timeout_s, START_TIMEOUT_S),
        )
        return Path(str(answer["trace"]))

    def release(self) -> None:
        if self.worker.alive:
            self.worker.request({"cmd": "release", "handle": self.handle})


def load(
    worker: WorkerProcess,
    model: ModelSource,
    variant: Variant,
    settings: SessionSettings,
    feeds: Mapping[str, Any],
    *,
    instances: int = 1,
) -> LoadedModel:
    """Build ``instances`` sessions of ``model`` in ``worker``; the provider must really be used."""
    header, arrays = _load_header("load", model, variant, settings, feeds)
    header["instances"] = instances
    try:
        answer, _ = worker.request(header, arrays, work_s=max(worker.timeout_s, START_TIMEOUT_S))
    except WorkerError as exc:
        raise WorkerError(
            f"'{model.label}' [{variant.id}] in {worker.runtime.describe()} ({worker.python}): {exc}"
        ) from None
    providers = tuple(answer.get("providers", ()))
    if variant.provider not in providers:
        raise WorkerError(
            f"'{model.label}' [{variant.id}] in {worker.runtime.describe()} ({worker.python}): ORT dropped "
            f"{variant.provider} while building the session (it would run on {', '.join(providers)})"
        )
    return LoadedModel(worker, int(answer["handle"]), providers)


def _load_header(
    command: str, model: ModelSource, variant: Variant, settings: SessionSettings, feeds: Mapping[str, Any]
) -> tuple[dict[str, Any], list[Any]]:
    """The header and arrays of a command that builds ``model`` (``load``, ``footprint``)."""
    names = sorted(feeds)
    arrays = [np.asarray(feeds[name]) for name in names]
    header: dict[str, Any] = {"cmd": command, "recipe": session_recipe(variant, settings), "feeds": names}
    if model.path is not None:
        header["model_path"] = str(model.path)
    else:
        data = model.data if model.data is not None else b""
        arrays.insert(0, np.frombuffer(data, dtype=np.uint8))
    return header, arrays


@dataclass(frozen=True)
class Footprint:
    """What building and running one session added to a fresh worker process
    (``worker_program.footprint``)."""

    create_s: float
    first_run_s: float
    steady_run_s: float
    peak_rss_added: int | None  # bytes; None where the peak cannot be reset (not Linux)
    rss_kept: int | None
    arena: Mapping[str, Any]  # ORT's arena accounting; {} when not asked for or not kept
    device_bytes: int | None  # GPU memory the process holds; None without a GPU provider
    engine_cache: str  # a compile cache: "hit" (loaded), "miss" (compiled, wrote it) or "" (no cache)
    runtime: WorkerRuntime
    limit_note: str = ""  # why the address-space limit could not be applied, if it could not
    weights: int | None = None  # the model's weight bytes (ort.models.weight_bytes), read in this process


def compile_cache_directory(variant: Variant, settings: SessionSettings) -> str:
    """The directory where a variant's provider keeps what it compiled, when its options name one:
    TensorRT's engine cache (``trt_engine_cache_enable``, ``trt_engine_cache_path``), OpenVINO's
    model cache (``cache_dir``). A fresh process that writes nothing there loaded from it."""
    for name, options in provider_arguments(variant, settings):
        enabled = on_off(str(options.get("trt_engine_cache_enable", ""))) is True
        if name == "TensorrtExecutionProvider" and enabled:
            return str(options.get("trt_engine_cache_path", "") or ".")
        if name == "OpenVINOExecutionProvider" and options.get("cache_dir"):
            return str(options["cache_dir"])
    return ""


def with_empty_cache(variant: Variant, settings: SessionSettings, directory: Path) -> SessionSettings:
    """``settings`` with the variant's compile cache moved to ``directory`` (empty): a process built
    with them starts cold, as the first start of a new deployment does. Unchanged without a cache."""
    for name, options in provider_arguments(variant, settings):
        enabled = on_off(str(options.get("trt_engine_cache_enable", ""))) is True
        key = (
            "trt_engine_cache_path"
            if name == "TensorrtExecutionProvider" and enabled
            else "cache_dir"
            if name == "OpenVINOExecutionProvider" and options.get("cache_dir")
            else ""
        )
        if key:
            directory.mkdir(parents=True, exist_ok=True)
            moved = {name: {key: str(directory)}}
            return settings.with_overrides({"provider_options": moved}, source="the cold start's cache")
    return settings


def in_memory(model: ModelSource) -> ModelSource:
    """``model`` as bytes, read once, unless it keeps tensors in separate files (then ORT needs its
    path). Both sides of a comparison build from bytes: one read from a file and the other from git
    would otherwise differ by the file read, which is no part of ORT's start-up."""
    if model.path is None or model.has_external_data:
        return model
    try:
        return replace(model, data=model.path.read_bytes(), path=None)
    except OSError as exc:
        raise WorkerError(f"cannot read '{model.path}': {exc}") from None


_WEIGHTS_UNKNOWN = -1


def measure_footprint(
    python: str,
    model: ModelSource,
    variant: Variant,
    settings: SessionSettings,
    feeds: Mapping[str, Any],
    *,
    timeout_s: float,
    profile_prefix: Path | None = None,
    limit_bytes: int = 0,
    steady_runs: int = 20,
    program: Path = PROGRAM,
    weights: int | None = _WEIGHTS_UNKNOWN,
) -> Footprint:
    """Start a worker for this alone, build ``model`` in it once and run it; what that added
    (:class:`Footprint`). ``profile_prefix``: also profile a second session, for ORT's arena
    accounting. ``weights``: the model's weight bytes when the caller has them (a check measures
    one model in several processes: it reads the model and its weights once, :func:`in_memory`).
    The worker is stopped after, whatever happens; a worker that dies raises :class:`WorkerError`
    with what it printed, and the run goes on."""
    if weights == _WEIGHTS_UNKNOWN:
        weights = weight_bytes(model)
    model = in_memory(model)
    worker = WorkerProcess(python, timeout_s=timeout_s, program=program)
    try:
        header, arrays = _load_header("footprint", model, variant, settings, feeds)
        header.update(steady_runs=steady_runs, limit_bytes=int(limit_bytes))
        header["engine_cache"] = compile_cache_directory(variant, settings)
        if profile_prefix is not None:
            profile_prefix.parent.mkdir(parents=True, exist_ok=True)
            header["profile_prefix"] = str(profile_prefix)
        try:
            answer, _ = worker.request(header, arrays, work_s=max(worker.timeout_s, START_TIMEOUT_S))
        except WorkerError as exc:
            raise WorkerError(f"'{model.label}' [{variant.id}] in a fresh worker ({python}): {exc}") from None
        return Footprint(
            create_s=float(answer["create_s"]),
            first_run_s=float(answer["first_run_s"]),
            steady_run_s=float(answer["steady_run_s"]),
            peak_rss_added=_optional_int(answer.get("peak_rss_added")),
            rss_kept=_optional_int(answer.get("rss_kept")),
            arena=dict(answer.get("arena") or {}),
            device_bytes=_optional_int(answer.get("device_bytes")),
            engine_cache=str(answer.get("engine_cache", "")),
            runtime=worker.runtime,
            limit_note=str(answer.get("limit", "")),
            weights=weights,
        )
    finally:
        worker.close()


def worker_graph(
    python: str,
    model: ModelSource,
    variant: Variant,
    settings: SessionSettings,
    path: Path,
    *,
    timeout_s: float,
    program: Path = PROGRAM,
) -> dict[str, Any]:
    """Build ``model`` in a worker of ``python``'s environment, in a session that writes its optimized
    graph to ``path`` (``worker_program.optimized_graph``); its answer. The worker is stopped after."""
    model = in_memory(model)
    worker = WorkerProcess(python, timeout_s=timeout_s, program=program)
    try:
        header, arrays = _load_header("graph", model, variant, settings, {})
        header["path"] = str(path)
        try:
            answer, _ = worker.request(header, arrays, work_s=max(worker.timeout_s, START_TIMEOUT_S))
        except WorkerError as exc:
            raise WorkerError(f"'{model.label}' [{variant.id}] in a worker ({python}): {exc}") from None
        return answer
    finally:
        worker.close()


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class SideSpec:
    """What one side of a comparison runs: which interpreter, which model, under which settings."""

    python: str
    model: ModelSource
    settings: SessionSettings
    feeds: Mapping[str, Any] | None = None  # this side's own inputs; None: the comparison's


MEASURING = "measuring"  # the role of the run's pooled measuring processes (measuring-0, measuring-1...)


@dataclass
class ProcessUnit:
    """Both sides of a comparison in one measuring process (one worker with a session of each), or in
    a pair of processes, one a side, where the sides run in different interpreters: the unit a
    verdict across processes replicates (``latency/across_processes.py``)."""

    current: LoadedModel
    reference: LoadedModel

    @property
    def name(self) -> str:
        here, there = self.current.worker.pid, self.reference.worker.pid
        return f"pid {here}" if here == there else f"pids {here}/{there}"

    def release(self) -> list[WorkerProcess]:
        """Free both sessions; the workers that failed to answer (to be discarded)."""
        failed = []
        for model in (self.current, self.reference):
            try:
                model.release()
            except WorkerError:
                failed.append(model.worker)
        return failed


def unit_keys(current: SideSpec, reference: SideSpec, index: int) -> list[tuple[str, str]]:
    """The pool keys of unit ``index``: one pooled measuring process when both sides run in one
    interpreter, else a process of each side's."""
    if current.python == reference.python:
        return [(current.python, f"{MEASURING}-{index}")]
    return [(current.python, f"current-{index}"), (reference.python, f"reference-{index}")]


def load_units(
    pool: WorkerPool,
    current: SideSpec,
    reference: SideSpec,
    variant: Variant,
    feeds: Mapping[str, Any],
    *,
    first: int,
    count: int,
    then: int = 0,
) -> list[ProcessUnit]:
    """Units ``first`` .. ``first + count - 1`` of a comparison, each in processes of its own (the
    pool's, reused from earlier checks where they run; started together where not), loaded at once
    (nothing is timed while they load). Within each unit the two sides load in turn, current first in
    even units and reference first in odd ones: the worker loaded first ran a memory-bound model
    about 2% slower (``benchmarks/README.md``, "Across ONNX Runtime versions"). A load that fails
    frees what was loaded and raises :class:`WorkerError`.

    ``then``: the processes of that many more units (the next look's) start too, without waiting, so
    that they import onnxruntime while these load; they are waited for before this returns, so that
    nothing imports while the units are timed."""
    keys = [unit_keys(current, reference, first + index) for index in range(count)]
    later = [
        key for index in range(count, count + then) for key in unit_keys(current, reference, first + index)
    ]
    pool.prestart_keys(later)
    workers = pool.start([key for unit in keys for key in unit])
    per_unit = len(keys[0]) if keys else 0
    groups = [workers[index * per_unit : (index + 1) * per_unit] for index in range(count)]
    loaded: list[LoadedModel] = []

    def unit(index: int) -> ProcessUnit:
        here, there = groups[index][0], groups[index][-1]
        roles = [("current", current, here), ("reference", reference, there)]
        if (first + index) % 2:
            roles.reverse()
        models: dict[str, LoadedModel] = {}
        for role, spec, worker in roles:
            own = spec.feeds if spec.feeds is not None else feeds
            models[role] = load(worker, spec.model, variant, spec.settings, own)
            loaded.append(models[role])
        return ProcessUnit(models["current"], models["reference"])

    try:
        if count == 1:
            made = [unit(0)]
        else:
            with ThreadPoolExecutor(max_workers=count, thread_name_prefix="ortperf-load") as executor:
                made = list(executor.map(unit, range(count)))
        pool.start(later)
        return made
    except WorkerError:
        for model in loaded:
            with contextlib.suppress(WorkerError):
                model.release()
        raise


class WorkerPool:
    """The run's workers, one per (interpreter, role), started on first use and restarted after a
    failure. Both sides of a comparison run in workers, so neither pays a different process cost."""

    def __init__(self, timeout_s: float, program: Path = PROGRAM) -> None:
        self.timeout_s = timeout_s
        self.program = program
        self._workers: dict[tuple[str, str], WorkerProcess] = {}

    def get(self, python: str, role: str) -> WorkerProcess:
        key = (python, role)
        worker = self._workers.get(key)
        if worker is None or not worker.alive:
            worker = WorkerProcess(python, timeout_s=self.timeout_s, program=self.program)
            self._workers[key] = worker
        return worker

    def prestart(self, python: str, count: int) -> None:
        """Start ``count`` pooled measuring processes of ``python`` without waiting for them (they
        import onnxruntime while the caller goes on: while pytest collects, say); a later
        :meth:`start` of their keys waits for their greeting."""
        self.prestart_keys([(python, f"{MEASURING}-{index}") for index in range(count)])

    def prestart_keys(self, keys: Sequence[tuple[str, str]]) -> None:
        """Start the workers of these (interpreter, role) keys that are not running, without waiting."""
        for key in keys:
            worker = self._workers.get(key)
            if worker is not None and not worker.alive:
                worker.close()  # one that died (a failed start): its pipes and files closed
                worker = None
            if worker is None:
                self._workers[key] = WorkerProcess(
                    key[0], timeout_s=self.timeout_s, program=self.program, wait=False
                )

    def settle(self) -> None:
        """Wait for every started worker's greeting (those still importing onnxruntime): a timing in
        the pytest process then never runs beside their start. One that fails to start is left to
        the check that asks for it (:meth:`start` starts it again, and says why when it cannot)."""
        for worker in list(self._workers.values()):
            if worker.starting:
                try:
                    worker.ready()
                except WorkerError:
                    continue

    @property
    def started(self) -> int:
        """How many worker processes the pool has started and not yet closed."""
        return len(self._workers)

    def side(self, python: str, role: str, count: int, *, fresh: bool = False) -> list[WorkerProcess]:
        """``count`` workers of ``python`` for one side (roles ``role-0``, ``role-1``...)."""
        return self.start([(python, f"{role}-{index}") for index in range(count)], fresh=fresh)

    def start(self, keys: Sequence[tuple[str, str]], *, fresh: bool = False) -> list[WorkerProcess]:
        """The workers for these (interpreter, role) keys, started together in this order (those not
        yet running); ``fresh``: new processes in place of the ones there were."""
        for key in keys:
            worker = self._workers.get(key)
            if worker is not None and (fresh or not worker.alive):
                worker.close()
                worker = None
            if worker is None:
                self._workers[key] = WorkerProcess(
                    key[0], timeout_s=self.timeout_s, program=self.program, wait=False
                )
        workers = [self._workers[key] for key in keys]
        for worker in workers:
            worker.ready()
        return workers

    def discard(self, worker: WorkerProcess) -> None:
        """Stop a worker that failed a command, so the next check starts a clean one."""
        worker.kill()
        self._workers = {key: w for key, w in self._workers.items() if w is not worker}

    def close(self) -> None:
        """Every worker asked to exit first, then each waited for: they end at once."""
        for worker in self._workers.values():
            worker.ask_to_exit()
        for worker in self._workers.values():
            worker.close()
        self._workers.clear()


def this_python() -> str:
    return sys.executable


@atexit.register
def _stop_all() -> None:  # a worker never outlives the run, even one nobody closed
    for worker in list(_LIVE):
        worker.kill()


class OpaqueOutput:
    """An output value the worker could not send (a sparse tensor): its type's name only."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name


def _from_form(form: Any, arrays: Sequence[Any]) -> Any:
    """The value ``worker_program._value_form`` sent, rebuilt."""
    if not isinstance(form, dict):
        raise WorkerError(f"a worker sent an output this version cannot read: {form!r}")
    if "array" in form:
        return arrays[int(form["array"])]
    if "none" in form:
        return None
    if "map" in form:
        return {key: _from_form(item, arrays) for key, item in form["map"]}
    if "maps" in form:  # rows of dicts with one key set, sent as one array
        keys, values = form["maps"]["keys"], arrays[int(form["maps"]["array"])]
        return [dict(zip(keys, row, strict=True)) for row in values.tolist()]
    if "list" in form:
        return [_from_form(item, arrays) for item in form["list"]]
    if "scalar" in form:
        return form["scalar"]
    return OpaqueOutput(str(form.get("other", "?")))
