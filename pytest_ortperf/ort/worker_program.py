"""The measuring worker: a small program that times ONNX Runtime sessions for a parent process.

It runs in any Python environment that has ``onnxruntime`` and ``numpy``: pytest and this
package need not be installed there, because the parent starts it by file path
(``python -I worker_program.py``). So this module imports nothing from ``pytest_ortperf``
and keeps to what Python 3.8 understands; the package imports it for the wire format and for
:func:`session_options`, so one piece of code builds sessions in and out of process.

Commands arrive on stdin and answers leave on stdout, as messages: a 4-byte big-endian
length, a JSON header, then the raw bytes of every array the header lists (dtype and
shape in the header). Arrays, never pickles: either side can be any Python or numpy version,
and a message cannot run code. What the worker or a native library prints goes to stderr,
which the parent keeps and shows when a command fails.

Commands: ``hello``; ``load`` (a model by path or bytes, a session recipe, the feeds, how many
sessions); ``warm_up``; ``time`` (k runs, timed here with ``perf_counter_ns``, returned as an
int64 array); ``outputs``; ``profile`` (untimed runs on a new session of the loaded model with
session-level profiling, which is then dropped; answers the trace file's path); ``footprint``
(in a worker started for it alone: the memory and start-up a session adds to a fresh process, see
:func:`footprint`); ``graph`` (a session that writes its optimized graph to a path the parent
names, see :func:`optimized_graph`); ``release``; ``exit``. Every answer has ``ok``; a failed command
answers ``ok: false`` with the error, and the worker waits for the next one.

The worker ends when its parent does: stdin reaches end of file when the parent exits, and a
watcher thread notices a new parent process id while a long command runs.
"""

from __future__ import annotations

import gc
import json
import os
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

MAX_HEADER = 64 * 1024 * 1024
PROTOCOL = 1
_LENGTH = struct.Struct(">I")
# Distributions that install the `onnxruntime` import package (``ort/runtime.py`` uses this list).
FLAVOURS = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-directml",
    "onnxruntime-openvino",
    "onnxruntime-qnn",
    "onnxruntime-rocm",
    "onnxruntime-migraphx",
    "onnxruntime-training",
)


class ProtocolError(Exception):
    """A message that is not one: the other side is gone, or speaks something else."""


def _read_exact(stream: IO[bytes], size: int) -> bytearray:
    data = bytearray()
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise EOFError(f"the stream ended after {len(data)} of {size} bytes")
        data += chunk
    return data


def _value_form(value: Any, arrays: list[Any]) -> Any:
    """An output as JSON, its arrays appended to ``arrays``: every output onnxruntime returns, none
    dropped (a list for a sequence, pairs for a map, null for an absent optional output, the type's
    name for anything else), so the parent makes it comparable as it does its own outputs."""
    if type(value).__name__ == "ndarray":
        arrays.append(value)
        return {"array": len(arrays) - 1}
    if value is None:
        return {"none": True}
    if isinstance(value, dict):
        return {"map": [[_plain(key), _value_form(item, arrays)] for key, item in value.items()]}
    if isinstance(value, (list, tuple)):
        table = _maps_table(value)
        if table is not None:  # ZipMap's rows: one array, not one JSON number per probability
            keys, values = table
            arrays.append(values)
            return {"maps": {"keys": keys, "array": len(arrays) - 1}}
        return {"list": [_value_form(item, arrays) for item in value]}
    if isinstance(value, (bool, int, float, str)) or hasattr(value, "item"):
        return {"scalar": _plain(value)}
    return {"other": type(value).__name__}


def _maps_table(rows: Any) -> tuple[list[Any], Any] | None:
    """Dicts with one key set and plain number values as (keys, ``[rows, keys]`` array); else None."""
    import numpy as np

    if not rows or not all(isinstance(row, dict) for row in rows):
        return None
    keys = list(rows[0])
    if any(list(row) != keys for row in rows):
        return None
    try:
        values = np.asarray([[row[key] for key in keys] for row in rows])
    except ValueError:
        return None
    if values.dtype.kind not in "fiub" or values.ndim != 2:
        return None
    return [_plain(key) for key in keys], values


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def write_message(stream: IO[bytes], header: dict[str, Any], arrays: Sequence[Any] = ()) -> None:
    """One message: the header (with the arrays' dtypes and shapes added), then each array's bytes."""
    packed = []
    if arrays:
        import numpy as np
    for array in arrays:
        value = np.asarray(array)
        if value.dtype == object:  # strings as fixed-width text; anything else has no byte form
            value = value.astype(str)
        packed.append(np.ascontiguousarray(value))
    header = dict(header, arrays=[{"dtype": a.dtype.str, "shape": list(a.shape)} for a in packed])
    data = json.dumps(header).encode("utf-8")
    stream.write(_LENGTH.pack(len(data)) + data)
    for value in packed:
        stream.write(value.tobytes())
    stream.flush()


def read_message(stream: IO[bytes]) -> tuple[dict[str, Any], list[Any]] | None:
    """The next message, or None at a clean end of the stream (between messages)."""
    import numpy as np

    first = stream.read(_LENGTH.size)
    if not first:
        return None
    try:
        raw = first + _read_exact(stream, _LENGTH.size - len(first)) if len(first) < _LENGTH.size else first
        (size,) = _LENGTH.unpack(bytes(raw))
        if size > MAX_HEADER:
            raise ProtocolError(f"a header of {size} bytes is not a message")
        header = json.loads(bytes(_read_exact(stream, size)).decode("utf-8"))
        if not isinstance(header, dict):
            raise ProtocolError("a message header must be a JSON object")
        arrays = []
        for spec in header.get("arrays", []):
            dtype = np.dtype(spec["dtype"])
            if dtype.hasobject:
                raise ProtocolError(f"dtype {spec['dtype']} has no byte form")
            shape = tuple(int(n) for n in spec["shape"])
            count = 1
            for n in shape:
                count *= n
            data = _read_exact(stream, count * dtype.itemsize)
            arrays.append(np.frombuffer(data, dtype=dtype).reshape(shape))
    except (EOFError, ValueError, KeyError, TypeError) as exc:
        raise ProtocolError(f"not a worker message: {exc}") from None
    return header, arrays


# --- warm-up --------------------------------------------------------------------------------------

SETTLED = 0.05  # two windows of runs whose medians differ by no more than this: settled
SETTLE_WINDOW = 3  # runs per window


def warm_up_runs(
    run: Callable[[], object],
    runs: int,
    floor_s: float,
    cap_s: float,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> float:
    """Warm ``run`` up until its run times have settled; the typical cost of a later run (ns).

    At least ``runs`` runs and ``floor_s`` seconds; then until the median of the last
    :data:`SETTLE_WINDOW` runs is within :data:`SETTLED` of the median of the ones before them, or
    ``cap_s`` seconds have passed. First runs are slow (allocation, kernel selection, caches);
    how many depends on the model, so a count and a time alone either waste time on a model that
    settled at once or stop before a slow one has. Used in process (``latency.measure``) and in
    the worker, so both sides of a comparison warm up by one rule."""
    window = SETTLE_WINDOW
    durations: list[int] = []
    started = clock()
    floor_end, cap_end = started + int(floor_s * 1e9), started + int(max(cap_s, floor_s) * 1e9)
    while True:
        t0 = clock()
        run()
        now = clock()
        durations.append(now - t0)
        if len(durations) < runs or now < floor_end:
            continue
        if now >= cap_end or _settled(durations, window):
            break
    recent = sorted(durations[len(durations) // 2 :])  # the later half: past first-run effects
    return float(recent[len(recent) // 2])


def _settled(durations: list[int], window: int) -> bool:
    if len(durations) < 2 * window:
        return False
    last = sorted(durations[-window:])[window // 2]
    before = sorted(durations[-2 * window : -window])[window // 2]
    return abs(last - before) <= SETTLED * max(before, 1)


# --- sessions -----------------------------------------------------------------------------------


def session_options(ort: Any, recipe: dict[str, Any]) -> Any:
    """``SessionOptions`` from a recipe (``ort.sessions.session_recipe``): every setting explicit."""
    level = getattr(ort.GraphOptimizationLevel, recipe["opt_level"], None)
    if level is None:
        raise ValueError(
            f"this onnxruntime {ort.__version__} has no GraphOptimizationLevel.{recipe['opt_level']}"
        )
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    options.intra_op_num_threads = int(recipe["intra_op_threads"])
    options.inter_op_num_threads = int(recipe["inter_op_threads"])
    options.execution_mode = (
        ort.ExecutionMode.ORT_PARALLEL
        if recipe["execution_mode"] == "parallel"
        else ort.ExecutionMode.ORT_SEQUENTIAL
    )
    options.enable_cpu_mem_arena = bool(recipe["cpu_mem_arena"])
    options.enable_mem_pattern = bool(recipe["mem_pattern"])
    for key, value in recipe["config_entries"]:
        options.add_session_config_entry(key, value)
    return options


# --- plugin execution providers -------------------------------------------------------------------

# Packages that bring an execution provider as a library of its own (onnxruntime >= 1.23), named as
# ORT's plugin packaging guidance asks: onnxruntime-ep-openvino, -webgpu, -nv-tensorrt-rtx...; each
# module offers get_library_path() and get_ep_name() (or get_ep_names()).
PLUGIN_PREFIX = "onnxruntime-ep-"
_plugins: dict[str, tuple[str, str]] | None = None  # provider -> (package, library path)
_registered: set[str] = set()


class PluginUnusable(Exception):
    """A plugin provider that is installed but cannot run here (it offers no device, ...)."""


def plugin_providers() -> dict[str, tuple[str, str]]:
    """The providers installed plugin packages bring: name -> (package, library path). Read once per
    process; a package that cannot say is left out."""
    global _plugins
    if _plugins is None:
        import importlib

        found: dict[str, tuple[str, str]] = {}
        try:
            from importlib import metadata

            names = sorted({d.metadata["Name"] or "" for d in metadata.distributions()})
        except ImportError:  # Python 3.7 has no importlib.metadata
            names = []
        for name in names:
            if not name.lower().replace("_", "-").startswith(PLUGIN_PREFIX):
                continue
            try:
                module: Any = importlib.import_module(name.lower().replace("-", "_"))
                names_of = getattr(module, "get_ep_names", None)
                eps = list(names_of()) if names_of is not None else [module.get_ep_name()]
                library = str(module.get_library_path())
            except Exception:  # a broken package: ORT has nothing to load from it
                continue
            for ep in eps:
                found.setdefault(str(ep), (name, library))
        _plugins = found
    return _plugins


def _plugin_devices(ort: Any, name: str) -> list[Any]:
    """Register the plugin package that brings provider ``name`` (once per process) and return the
    devices it offers; raises :class:`PluginUnusable` when it offers none."""
    package, library = plugin_providers()[name]
    if name not in _registered:
        if not hasattr(ort, "register_execution_provider_library"):
            raise PluginUnusable(
                f"{package} brings {name} as a plugin, and this onnxruntime {ort.__version__} cannot load "
                "plugins (1.23 and later can)"
            )
        ort.register_execution_provider_library(name, library)
        _registered.add(name)
    devices = [device for device in ort.get_ep_devices() if device.ep_name == name]
    if not devices:
        raise PluginUnusable(
            f"{package} registered {name} and offers no device here "
            "(onnxruntime.get_ep_devices() lists none for it)"
        )
    return devices


def is_plugin(ort: Any, name: str) -> bool:
    """Whether provider ``name`` comes from a plugin package here: built into this onnxruntime, it
    does not."""
    if name in _registered:
        return True
    return name in plugin_providers() and name not in ort.get_available_providers()


def new_session(ort: Any, model_input: Any, options: Any, providers: list[Any]) -> Any:
    """``ort.InferenceSession`` with ORT's Python fallback off, for ``providers`` (names, or
    (name, options) pairs, in precedence order). A provider from a plugin package is added to
    ``options`` for the devices it offers: ORT ignores a plugin named in ``providers``, and would run
    the session on the CPU alone. The CPU provider then stays the fallback, as ORT adds it.
    ``options``: None for ORT's defaults."""
    pairs = [(p, {}) if isinstance(p, str) else (p[0], dict(p[1])) for p in providers]
    plugins = [(name, settings) for name, settings in pairs if is_plugin(ort, name)]
    if not plugins:
        return ort.InferenceSession(model_input, options, providers=providers, enable_fallback=0)
    others = [name for name, _ in pairs if name != "CPUExecutionProvider" and not is_plugin(ort, name)]
    if others:
        raise PluginUnusable(f"a plugin provider cannot be combined with {', '.join(others)}")
    options = options if options is not None else ort.SessionOptions()
    for name, settings in plugins:
        options.add_provider_for_devices(_plugin_devices(ort, name), settings)
    return ort.InferenceSession(model_input, options, providers=[], enable_fallback=0)


QUIET = 3  # ORT's error level: at `all` it warns that an NCHWc graph is hardware specific (expected)
# The optimized graph's weights go to a file of their own beside it: reading the graph back then skips
# them, and they are hashed as bytes (a 100 MB ResNet-50: 0.5 s a graph instead of 1.2 s).
GRAPH_WEIGHTS = "weights.bin"
_EXTERNAL = "session.optimized_model_external_initializers_"
COMPILED_NOTE = (
    "ORT cannot write a graph whose nodes a provider compiled (it refuses to serialize compiled "
    "nodes); compared instead: the op types of the model's nodes and the provider ORT assigned each "
    "one (a fallback, a placement change), not the compiled graph's fusions, weights or wiring"
)


def optimized_graph(
    ort: Any, model_input: Any, recipe: dict[str, Any], path: str, kept: list[Any] | None = None
) -> dict[str, Any]:
    """Build a session from ``recipe`` that writes its optimized graph to ``path``: where ORT placed
    each node (``placement``: name, ``domain:op``, provider; ``placed`` False where this onnxruntime
    cannot say) and, when the graph could not be written (a provider that compiles nodes), ``note``
    with ORT's reason, the session then built again without the file. ``kept``: the session is
    appended to it, for a caller in the same process that runs it afterwards."""
    providers = [(name, dict(settings)) for name, settings in recipe["providers"]]

    def build(write: bool) -> Any:
        options = session_options(ort, recipe)
        options.log_severity_level = QUIET
        if write:
            options.optimized_model_filepath = path
            options.add_session_config_entry(_EXTERNAL + "file_name", GRAPH_WEIGHTS)
            options.add_session_config_entry(_EXTERNAL + "min_size_in_bytes", "1024")
        return new_session(ort, model_input, options, providers)

    note = ""
    try:
        session = build(True)
    except Exception as first:  # ORT raises Fail, RuntimeError, ...
        session = build(False)
        reason = " ".join(str(first).split())
        if "compiled nodes" in reason:  # OpenVINO, TensorRT: ORT cannot serialize what they compiled
            note = COMPILED_NOTE
        else:
            note = "ORT could not write the optimized graph (" + reason[:300] + ")"
    if kept is not None:
        kept.append(session)
    getter = getattr(session, "get_provider_graph_assignment_info", None)
    placement: list[list[str]] = []
    for subgraph in getter() if getter is not None else []:
        for node in subgraph.get_nodes():
            op = node.op_type if node.domain in ("", "ai.onnx") else node.domain + ":" + node.op_type
            placement.append([node.name, op, subgraph.ep_name])
    placed = getter is not None
    if not placed and providers[0][0] != "CPUExecutionProvider":
        # An accelerator on an onnxruntime without the placement API (before 1.24): where fallbacks
        # matter, one profiled run says where each node ran.
        profiled, why = profiled_placement(ort, model_input, recipe)
        if profiled is not None:
            placement, placed = profiled, True
            note = "; ".join(part for part in (note, PROFILED_NOTE) if part)
        else:
            note = "; ".join(part for part in (note, f"node placement unknown: {why}") if part)
    return {"placement": placement, "placed": placed, "note": note}


PROFILED_NOTE = (
    "node placement read from one profiled run on zeros (this onnxruntime has no placement API): "
    "the nodes that ran, each with its provider; a compiled subgraph is one node, without domain"
)
# Input types a profiled run can make zeros of, as the session states them.
_ZEROS = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int64)": "int64",
    "tensor(int32)": "int32",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}


def profiled_placement(
    ort: Any, model_input: Any, recipe: dict[str, Any]
) -> tuple[list[list[str]] | None, str]:
    """Where each node ran (name, op type, provider), from the profile of one run on zeros (every
    symbolic dimension 1): for an onnxruntime without ``get_provider_graph_assignment_info``. None,
    with the reason, when the model takes an input zeros cannot stand for or the run fails."""
    import tempfile

    import numpy as np

    providers = [(name, dict(settings)) for name, settings in recipe["providers"]]
    options = session_options(ort, recipe)
    options.log_severity_level = QUIET
    options.enable_profiling = True
    with tempfile.TemporaryDirectory(prefix="ortperf-placement-") as scratch:
        options.profile_file_prefix = os.path.join(scratch, "placement")
        session = new_session(ort, model_input, options, providers)
        feeds = {}
        for spec in session.get_inputs():
            if spec.type not in _ZEROS:
                session.end_profiling()
                return None, f"input '{spec.name}' is a {spec.type}, which a run on zeros cannot feed"
            shape = [dim if isinstance(dim, int) and dim > 0 else 1 for dim in spec.shape]
            feeds[spec.name] = np.zeros(shape, dtype=_ZEROS[spec.type])
        try:
            session.run(None, feeds)
        except Exception as exc:  # a shape that 1 does not fit, ...
            session.end_profiling()
            return None, "a run on zeros failed (" + " ".join(str(exc).split())[:200] + ")"
        with open(session.end_profiling(), encoding="utf-8") as stream:
            events = json.load(stream)
    placement: list[list[str]] = []
    seen: set[str] = set()
    for event in events if isinstance(events, list) else []:
        name, args = str(event.get("name", "")), event.get("args") or {}
        if event.get("cat") != "Node" or not name.endswith("_kernel_time") or "provider" not in args:
            continue
        node = name[: -len("_kernel_time")]
        if node not in seen:
            seen.add(node)
            placement.append([node, str(args.get("op_name", "")), str(args["provider"])])
    return placement, ""


def _runtime(ort: Any) -> dict[str, Any]:
    import platform

    try:
        from importlib import metadata

        found = []
        for name in FLAVOURS:
            try:
                found.append([name, metadata.version(name)])
            except metadata.PackageNotFoundError:
                continue
    except ImportError:  # Python 3.7 has no importlib.metadata
        found = []
    flavour = found[0][0] if len(found) == 1 else ("unknown" if not found else "+".join(n for n, _ in found))
    import numpy as np

    return {
        "ort_version": str(ort.__version__),
        "ort_flavour": flavour,
        "distributions": found,
        "providers": list(ort.get_available_providers()),
        "python": platform.python_version(),
        "executable": sys.executable,
        "numpy": np.__version__,
        "pid": os.getpid(),
        "protocol": PROTOCOL,
    }


class _Model:
    """The sessions of one loaded model (run in turn, run by run), its feeds, and what the sessions
    were built from (for a profiling session of the same model)."""

    def __init__(
        self, sessions: list[Any], feeds: dict[str, Any], built_from: tuple[Any, dict[str, Any]]
    ) -> None:
        self.sessions = sessions
        self.feeds = feeds
        self.built_from = built_from  # (model path or bytes, session recipe)
        self.turn = 0


class _Deadline:
    """Terminates a run past the run timeout (``RunOptions.terminate``), like the in-process watchdog;
    a run that still does not end ends the worker, and the parent reports what it printed."""

    def __init__(self, ort: Any, timeout_s: float) -> None:
        self.options = ort.RunOptions()
        self.timeout_s = timeout_s
        self.grace_s = max(1.0, timeout_s / 2)  # the parent waits twice the timeout: exit before
        self.ends = 0.0  # monotonic deadline of the run in progress; 0: none
        self.fired = False
        threading.Thread(target=self._watch, name="ortperf-worker-deadline", daemon=True).start()

    def _watch(self) -> None:
        poll = min(0.1, self.timeout_s / 4)
        while True:
            time.sleep(poll)
            ends = self.ends
            if not ends or time.monotonic() <= ends:
                continue
            if not self.fired:
                self.fired = True
                self.options.terminate = True
            elif time.monotonic() > ends + self.grace_s:
                sys.stderr.write(f"ortperf worker: a run ignored termination for {self.grace_s:g} s\n")
                sys.stderr.flush()
                os._exit(3)


class Worker:
    def __init__(self, ort: Any, timeout_s: float) -> None:
        self.ort = ort
        self.models: dict[int, _Model] = {}
        self.next_handle = 1
        self.deadline = _Deadline(ort, timeout_s)

    def run(self, model: _Model, output_names: list[str] | None = None) -> Any:
        session = model.sessions[model.turn]
        model.turn = (model.turn + 1) % len(model.sessions)
        return self.run_on(session, model.feeds, output_names)

    def run_on(self, session: Any, feeds: dict[str, Any], output_names: list[str] | None = None) -> Any:
        deadline = self.deadline
        deadline.ends = time.monotonic() + deadline.timeout_s
        try:
            return session.run(output_names, feeds, deadline.options)
        except Exception:
            if deadline.fired:
                raise RuntimeError(
                    f"session.run took longer than {deadline.timeout_s:g} s and was terminated "
                    "(--ortperf-run-timeout)"
                ) from None
            raise
        finally:
            deadline.ends = 0.0
            if deadline.fired:
                deadline.fired = False
                deadline.options = self.ort.RunOptions()  # a terminated RunOptions stays terminated

    def handle(self, header: dict[str, Any], arrays: list[Any]) -> tuple[dict[str, Any], list[Any]]:
        command = header.get("cmd")
        if command == "hello":
            return _runtime(self.ort), []
        if command == "load":
            return self.load(header, arrays), []
        if command == "footprint":
            return self.footprint(header, arrays), []
        if command == "graph":
            model_input, _ = _model_and_feeds(header, arrays)
            return optimized_graph(self.ort, model_input, header["recipe"], str(header["path"])), []
        if command == "release":
            self.models.pop(int(header["handle"]), None)
            gc.collect()
            return {}, []
        model = self.models.get(int(header.get("handle", 0)))
        if model is None:
            raise ValueError(f"no loaded model with handle {header.get('handle')!r}")
        if command == "warm_up":
            runs, seconds = int(header["runs"]), float(header["seconds"])
            return {"cost_ns": self.warm_up(model, runs, seconds, float(header["cap"]))}, []
        if command == "time":
            return {}, [self.time_runs(model, int(header["count"]))]
        if command == "outputs":
            described = [(output.name, output.type) for output in model.sessions[0].get_outputs()]
            values = self.run(model, [name for name, _ in described])
            sent: list[Any] = []
            shapes = [_value_form(value, sent) for value in values]
            return {
                "names": [name for name, _ in described],
                "types": [str(kind or "") for _, kind in described],
                "values": shapes,
            }, sent
        if command == "profile":
            return {"trace": self.profile(model, int(header["runs"]), str(header["prefix"]))}, []
        raise ValueError(f"unknown command {command!r}")

    def load(self, header: dict[str, Any], arrays: list[Any]) -> dict[str, Any]:
        recipe = header["recipe"]
        model_input, feeds = _model_and_feeds(header, arrays)
        sessions = []
        started = time.perf_counter()
        for _ in range(int(header.get("instances", 1))):
            sessions.append(self.build(model_input, recipe))
        build_s = time.perf_counter() - started
        handle = self.next_handle
        self.next_handle += 1
        self.models[handle] = _Model(sessions, feeds, (model_input, recipe))
        return {"handle": handle, "providers": list(sessions[0].get_providers()), "build_s": build_s}

    def footprint(self, header: dict[str, Any], arrays: list[Any]) -> dict[str, Any]:
        model_input, feeds = _model_and_feeds(header, arrays)
        recipe = header["recipe"]
        return footprint(
            lambda prefix="": self.build(model_input, recipe, prefix),
            lambda session: self.run_on(session, feeds),
            steady_runs=int(header.get("steady_runs", 20)),
            profile_prefix=str(header.get("profile_prefix", "")),
            limit_bytes=int(header.get("limit_bytes", 0)),
            engine_cache=str(header.get("engine_cache", "")),
        )

    def build(self, model_input: Any, recipe: dict[str, Any], profile_prefix: str = "") -> Any:
        ort = self.ort
        options = session_options(ort, recipe)
        if profile_prefix:
            options.enable_profiling = True
            options.profile_file_prefix = profile_prefix
        providers = [(name, dict(settings)) for name, settings in recipe["providers"]]
        return new_session(ort, model_input, options, providers)

    def profile(self, model: _Model, runs: int, prefix: str) -> str:
        """``runs`` untimed runs on a new session of ``model`` with session-level profiling (the
        timed sessions are never profiled); the path of its trace, which the caller reads."""
        session = self.build(*model.built_from, profile_prefix=prefix)
        try:
            for _ in range(runs):
                self.run_on(session, model.feeds)
        finally:
            trace = str(session.end_profiling())
            del session
            gc.collect()
        return trace

    def warm_up(self, model: _Model, runs: int, seconds: float, cap_s: float) -> float:
        return warm_up_runs(lambda: self.run(model), runs, seconds, cap_s)

    def time_runs(self, model: _Model, count: int) -> Any:
        """``count`` runs, each timed on its own (the garbage collector is off in the worker)."""
        import numpy as np

        clock = time.perf_counter_ns
        durations = []
        for _ in range(count):
            t0 = clock()
            self.run(model)
            durations.append(clock() - t0)
        return np.asarray(durations, dtype=np.int64)


def _model_and_feeds(header: dict[str, Any], arrays: list[Any]) -> tuple[Any, dict[str, Any]]:
    """A ``load`` or ``footprint`` command's model (its path, or its bytes as the first array) and feeds."""
    if header.get("model_path"):
        model_input: Any = header["model_path"]
        feed_arrays = arrays
    else:
        model_input, feed_arrays = arrays[0].tobytes(), arrays[1:]
    return model_input, dict(zip(header["feeds"], feed_arrays))


# --- footprint: memory and start-up in a fresh process ----------------------------------------------

# ORT's accounting of its CPU arena, on every Node event of a session profile when the arena is on.
ARENA_FIELDS = ("mem_in_use_peak", "mem_arena_held", "mem_bytes_in_use")
NODE_FIELDS = ("output_size", "parameter_size")  # the bytes of a node's outputs and parameters
TOP_NODES = 20  # the nodes kept per figure set, largest first
_PROC_STATUS = "/proc/self/status"


def proc_status(text: str) -> dict[str, int]:
    """The byte figures of ``/proc/self/status`` text (``VmRSS: 1234 kB`` -> ``{"VmRSS": 1263616}``)."""
    figures = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            figures[name] = int(parts[0]) * 1024
    return figures


def _status() -> dict[str, int]:
    try:
        with open(_PROC_STATUS) as stream:
            return proc_status(stream.read())
    except OSError:
        return {}


def _reset_peak() -> bool:
    """Reset the process's peak resident set (``VmHWM``) to its current one (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as stream:
            stream.write("5")
        return True
    except OSError:
        return False


def _limit_address_space(limit_bytes: int) -> str:
    """Cap the address space at what the process maps now plus ``limit_bytes``; "" or why not."""
    try:
        import resource
    except ImportError:
        return "the platform has no resource limits"
    mapped = _status().get("VmSize", 0)
    if not mapped:
        return "the platform does not say how much the process maps"
    cap = mapped + limit_bytes
    try:
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY and cap > hard:
            cap = hard
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError) as exc:
        return f"the address space cannot be capped ({exc})"
    return ""


def arena_figures(events: list[Any]) -> dict[str, Any]:
    """ORT's arena accounting from a session profile's events: the peak bytes in use, the bytes the
    arena held, and the nodes of the last run whose outputs and parameters take the most bytes. {}
    when the events carry no accounting (the arena is off, or the provider keeps none)."""
    nodes = [
        e
        for e in events
        if isinstance(e, dict)
        and e.get("cat") == "Node"
        and str(e.get("name", "")).endswith("_kernel_time")
        and isinstance(e.get("args"), dict)
        and "mem_in_use_peak" in e["args"]
    ]
    if not nodes:
        return {}
    run_events = ("Session", "model_run")
    runs = [e for e in events if isinstance(e, dict) and (e.get("cat"), e.get("name")) == run_events]
    last_start = max((float(e.get("ts", 0)) for e in runs), default=0.0)
    last = [e for e in nodes if float(e.get("ts", 0)) >= last_start] or nodes
    figures: dict[str, Any] = {}
    for name in ARENA_FIELDS:
        values = [int(e["args"][name]) for e in last if name in e["args"]]
        if values:
            figures[name] = max(values)
    sizes: dict[str, int] = {}
    for event in last:
        node = str(event["name"])[: -len("_kernel_time")]
        size = sum(int(event["args"].get(name, 0) or 0) for name in NODE_FIELDS)
        sizes[node] = max(sizes.get(node, 0), size)
    figures["nodes"] = dict(sorted(sizes.items(), key=lambda item: (-item[1], item[0]))[:TOP_NODES])
    return figures


def _engine_files(directory: str) -> set[str]:
    try:
        return {name for name in os.listdir(directory) if not name.startswith(".")}
    except OSError:
        return set()


def _device_bytes() -> int | None:
    """The GPU memory this process holds, from ``nvidia-smi`` (None without one)."""
    import subprocess

    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    total = 0
    for line in out.splitlines():
        pid, _, used = line.partition(",")
        if pid.strip() == str(os.getpid()) and used.strip().isdigit():
            total += int(used.strip()) * 1024 * 1024
    return total


def footprint(
    build: Callable[..., Any],
    run: Callable[[Any], object],
    *,
    steady_runs: int = 20,
    profile_prefix: str = "",
    limit_bytes: int = 0,
    engine_cache: str = "",
    clock: Callable[[], int] = time.perf_counter_ns,
) -> dict[str, Any]:
    """What building a session and running it adds to this (fresh) process: the time to build it,
    its first run and a steady run; the peak resident memory it added (``VmHWM`` after, less
    ``VmRSS`` before) and what it keeps; then, on a second, profiled session of the same model, ORT's
    arena accounting (:func:`arena_figures`). ``limit_bytes``: cap the address space this much above
    what is mapped now. ``engine_cache``: a compile cache directory (TensorRT's engine cache, OpenVINO's
    ``cache_dir``), to tell a hit (nothing written there) from a miss (the session compiled and wrote)."""
    gc.collect()
    before = _status()
    peak_reset = _reset_peak()
    limited = _limit_address_space(limit_bytes) if limit_bytes else ""
    cached = _engine_files(engine_cache) if engine_cache else set()
    started = clock()
    try:
        session = build()
        built = clock()
        run(session)
    except MemoryError:
        raise MemoryError(_over_limit(before, limit_bytes)) from None
    except Exception as exc:
        if limit_bytes and _looks_out_of_memory(exc):
            raise MemoryError(f"{_over_limit(before, limit_bytes)}: {' '.join(str(exc).split())}") from None
        raise
    first = clock()
    steady = []
    for _ in range(max(1, steady_runs)):
        t0 = clock()
        run(session)
        steady.append(clock() - t0)
    after = _status()
    answer: dict[str, Any] = {
        "create_s": (built - started) / 1e9,
        "first_run_s": (first - built) / 1e9,
        "steady_run_s": sorted(steady)[len(steady) // 2] / 1e9,
        "rss_before": before.get("VmRSS"),
        "peak_rss_added": (after["VmHWM"] - before["VmRSS"]) if peak_reset and "VmHWM" in after else None,
        "rss_kept": (after["VmRSS"] - before["VmRSS"]) if "VmRSS" in after and "VmRSS" in before else None,
        "limit": limited,
        "device_bytes": _device_bytes() if _uses_gpu(session) else None,
    }
    if engine_cache:
        answer["engine_cache"] = "miss" if _engine_files(engine_cache) - cached else "hit"
    del session
    if profile_prefix:
        answer["arena"] = _profiled_arena(build(profile_prefix), run)
    return answer


def _profiled_arena(session: Any, run: Callable[[Any], object]) -> dict[str, Any]:
    """ORT's arena figures of a profiled ``session`` after a few runs (:func:`arena_figures`)."""
    for _ in range(3):
        run(session)
    trace = str(session.end_profiling())
    try:
        with open(trace, encoding="utf-8") as stream:
            events = json.load(stream)
    finally:
        os.remove(trace)
    return arena_figures(events if isinstance(events, list) else [])


def _uses_gpu(session: Any) -> bool:
    return any(p in ("CUDAExecutionProvider", "TensorrtExecutionProvider") for p in session.get_providers())


def _looks_out_of_memory(exc: BaseException) -> bool:
    text = str(exc).lower()
    words = ("bad_alloc", "failed to allocate", "out of memory", "cannot allocate")
    return any(word in text for word in words)


def _over_limit(before: dict[str, int], limit_bytes: int) -> str:
    now = _status()
    reached = now.get("VmHWM", now.get("VmRSS", 0)) - before.get("VmRSS", 0)
    return (
        f"the session ran out of memory at the worker's limit of {limit_bytes / 2**20:.0f} MiB "
        f"(--ortperf-memory-limit); resident memory reached {reached / 2**20:.1f} MiB above the "
        "process's start"
    )


def _watch_parent(parent: int) -> None:
    """End the worker when the process that started it is gone (its children are re-parented)."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(70)


def main() -> int:
    # The protocol gets its own copy of stdout; fd 1 then points at stderr, so nothing a native
    # library prints can land inside a message.
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    commands = sys.stdin.buffer
    threading.Thread(target=_watch_parent, args=(os.getppid(),), name="ortperf-parent", daemon=True).start()
    timeout_s = float(sys.argv[1]) if len(sys.argv) > 1 else 300.0
    try:
        import numpy  # noqa: F401  (the wire format needs it)
        import onnxruntime as ort

        worker = Worker(ort, timeout_s)
    except Exception as exc:
        error = f"cannot import onnxruntime and numpy in {sys.executable}: {type(exc).__name__}: {exc}"
        write_message(channel, {"ok": False, "error": error})
        return 2
    # No collection can land inside a timed run: the worker's few cycles are collected on release.
    gc.collect()
    gc.disable()
    while True:
        try:
            message = read_message(commands)
        except ProtocolError as exc:
            sys.stderr.write(f"ortperf worker: {exc}\n")
            return 2
        if message is None or message[0].get("cmd") == "exit":
            return 0
        try:
            answer, arrays = worker.handle(*message)
            answer = dict(answer, ok=True)
        except Exception as exc:
            answer, arrays = {"ok": False, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())}"}, []
        write_message(channel, answer, arrays)


if __name__ == "__main__":
    sys.exit(main())
