"""Atomic baseline writes, proven by killing the writer: every surviving file is the old or the new one.

A writer process loads a :class:`BaselineStore` over a baseline directory and
rewrites it in a loop, alternating between two known contents: OLD (40 entries,
32 KB of JSON, and a 256 KB ``.npz``) and NEW (200 entries, 2.5 MB of JSON and a 4 MB
``.npz``, staged with ``stage_file``). The store writes the ``.npz`` first, then the
JSON file. The test kills the writer with SIGKILL at a random point, then checks
what is on disk:

* the JSON file exists, :func:`parse` accepts it and its bytes are exactly
  ``render(OLD)`` or ``render(NEW)``; the ``.npz`` is exactly the old or the new
  bytes and loads;
* more precisely, each file is what the writer's progress allows: unchanged if its
  write had not begun, the target if it had completed, one of the two if the kill
  landed inside :func:`write_atomically`;
* temporary files (``.<name>.XXXXXXXX.tmp``) left by a kill before the rename never
  take the real file's place: each holds a prefix of the content being written
  (mode 0600) while the real file beside it is intact.

Writers. A fork server (one ``sys.executable`` process) imports everything and
builds both contents once, then forks one writer per kill, so hundreds of kills
fit in seconds and none lands in interpreter start-up. A writer prints ``R`` once
its store is loaded; its ``write_atomically`` is wrapped to print
``B <file> <target> <time>`` before and ``E ...`` after each file write
(CLOCK_MONOTONIC, comparable across processes) on a pipe that the parent reads;
EOF on that pipe after the SIGKILL means the writer is gone.

Kill points. Every 25th kill comes just after two full rounds (it measures how long
a round takes); of the others, half come a random delay after ``R`` (anywhere in
the first round: loading, staging, rendering, writing) and half a random fraction
of a typical write duration after the ``B`` of a randomly chosen file, so that many
land inside a write (in the temp-file write, its fsync, the rename or the fsync of
the directory). The schedule (mode, delays, fractions) comes from a seeded RNG;
where a kill actually lands depends on timing and is counted from the markers.

How many kills: exactly :data:`DEFAULT_KILLS` (100: about 4 s on an idle disk, about
10 s on a busy one), whatever the machine's speed, so every default run tries
the same schedule. The environment variable ``ORTPERF_KILLS`` sets the number of
kills for a long run, e.g.
``ORTPERF_KILLS=2000 pytest tests/unit/store/test_atomic_writes.py -s`` (``-s`` shows the
summary: where the kills landed, survivors old/new, leftover temp files, write
timings). ``ORTPERF_KILLS_SEED`` changes the schedule.

Leftover temp files: a SIGKILL between ``mkstemp`` and ``os.replace`` leaves its
temp file behind (no ``except`` or ``finally`` runs), about one per three kills here.
The store removes such a file only once it is older than
``baselines.STALE_TEMPORARY_S`` (600 s; ``remove_stale_temporaries``, at the start of
each write), so within this test they accumulate, a few MB each, and the test
sweeps them itself once they pass :data:`LEFTOVER_BUDGET` bytes. They do not harm
correctness: a later write picks a fresh name, leaves young ones untouched, and
``showing.baseline_rows`` (which globs ``*.json``) does not see them.

SIGKILL proves atomicity against a crashing process; what fsync adds (surviving a
power loss) is beyond what killing a process can show.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pytest

from pytest_ortperf.checks.latency_figures import latency_figures
from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.reports.show import baseline_rows
from pytest_ortperf.store.baselines import BaselineEntry, BaselineStore, Entries, parse, render
from pytest_ortperf.store.outputs import load_npz, npz_bytes

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or not hasattr(socket, "send_fds"), reason="needs fork, SIGKILL and fd passing"
)

DEFAULT_KILLS = 100
KILLS = int(os.environ.get("ORTPERF_KILLS", DEFAULT_KILLS))
SEED = int(os.environ.get("ORTPERF_KILLS_SEED", "20250102"))
LEFTOVER_BUDGET = 64 * 1024 * 1024  # bytes of leftover temp files kept before the parent sweeps them

TEST_FILE = "tests/perf/test_models.py"
NPZ = f"{TEST_FILE}.outputs/test_model[cpu-all].npz"
MACHINE = "ci-x86_64"
ROOT = Path(__file__).resolve().parents[3]
WRITER_ITERATIONS = 200  # a writer that is never killed stops by itself


# the two contents ------------------------------------------------------------


def _stats(median: float) -> LatencyStats:
    return LatencyStats(
        count=30, rounds=3, min_ms=median * 0.9, median_ms=median, mean_ms=median * 1.01,
        stdev_ms=0.25, iqr_ms=0.5, p90_ms=median * 1.1, p95_ms=median * 1.2, p99_ms=median * 1.5,
        cv=0.025, round_cv=0.01, throughput_per_s=1000 / median,
        round_medians_ms=(median * 0.99, median, median * 1.01),
    )  # fmt: skip


def contents(which: str) -> tuple[Entries, bytes]:
    """OLD: 40 entries (32 KB of JSON) and a 256 KB .npz; NEW: 200 entries (2.5 MB of JSON) and a 4 MB .npz."""
    new = which == "new"
    count, pad = (200, 190) if new else (40, 2)
    entries: Entries = {}
    for i in range(count):
        digest = hashlib.sha256(f"{which}-{i}".encode()).hexdigest()
        median = 1.0 + i / 100 + (0.5 if new else 0.0)
        recorded = "2025-06-30" if new else "2025-01-02"
        entries[f"test_model_{i:04d}[cpu-all]"] = BaselineEntry(
            variant="cpu-all",
            recorded=recorded,
            recipe={"ort_version": "1.31.1", "model_sha256": digest, "notes": digest * pad},
            figures={MACHINE: latency_figures(recorded, _stats(median), measured_on={"cores": 2})},
        )
    rng = np.random.default_rng(1 if new else 0)
    arrays = {"logits": rng.standard_normal(1_000_000 if new else 64_000).astype(np.float32)}
    return entries, npz_bytes(arrays)


# the writers -------------------------------------------------------------------


def _say(line: str) -> None:
    os.write(1, f"{line}\n".encode())  # unbuffered: whatever was said before SIGKILL reaches the pipe


def _server_main(root_arg: str, socket_fd: str) -> None:  # pragma: no cover - runs in the fork server
    """Import and prepare once, then fork one writer per byte received; each gets a fresh pipe as stdout."""
    from pytest_ortperf.store import baselines

    root = Path(root_arg)
    built = {which: contents(which) for which in ("old", "new")}
    texts = {which: render(entries).encode() for which, (entries, _) in built.items()}
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps killed writers
    with socket.socket(fileno=int(socket_fd)) as parent:
        parent.sendall(b"ready")
        while parent.recv(1) == b"f":
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:
                status = 1
                try:
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    parent.close()
                    os.close(read_end)
                    os.dup2(write_end, 1)
                    os.close(write_end)
                    _writer(root, built, texts, baselines)
                    status = 0
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(status)
            os.close(write_end)
            socket.send_fds(parent, [b"%010d" % pid], [read_end])
            os.close(read_end)


def _writer(
    root: Path, built: dict[str, tuple[Entries, bytes]], texts: dict[str, bytes], module: Any
) -> None:
    """Rewrite the baselines OLD <-> NEW through a store until killed, saying where it is."""
    keys = sorted({test for entries, _ in built.values() for test in entries})
    target = {"json": "", "npz": ""}
    real_write = module.write_atomically

    def traced(path: Path, text: str | bytes) -> None:
        kind = "npz" if path.suffix == ".npz" else "json"
        _say(f"B {kind} {target[kind]} {time.monotonic():.6f}")
        real_write(path, text)
        _say(f"E {kind} {target[kind]} {time.monotonic():.6f}")

    module.write_atomically = traced  # the store calls the module-level name
    store = BaselineStore(root)
    json_path, npz_path = store.path_for(TEST_FILE), root / NPZ
    now = {
        "json": "old" if json_path.read_bytes() == texts["old"] else "new",
        "npz": "old" if npz_path.read_bytes() == built["old"][1] else "new",
    }
    store.entries(TEST_FILE)
    _say(f"R {time.monotonic():.6f}")
    for _ in range(WRITER_ITERATIONS):
        target["json"] = "new" if now["json"] == "old" else "old"
        target["npz"] = "new" if now["npz"] == "old" else "old"
        wanted = built[target["json"]][0]
        for test in keys:
            store.stage(TEST_FILE, test, wanted.get(test))
        store.stage_file(NPZ, built[target["npz"]][1])
        store.write()
        now = dict(target)
    _say("done")


class ForkServer:
    """A ``sys.executable`` process that imported everything once and forks a writer per kill.

    Starting a fresh interpreter per kill costs ~0.3 s of imports; a fork costs
    milliseconds, so hundreds of kills fit in seconds. Each writer's stdout is a
    pipe whose read end is passed back over a Unix socket: EOF on it means the
    writer is gone.
    """

    def __init__(self, root: Path, log: Path) -> None:
        self.log = log
        self.socket, theirs = socket.socketpair()
        code = (
            f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
            "from tests.unit.store.test_atomic_writes import _server_main; _server_main(*sys.argv[1:])"
        )
        with theirs, log.open("wb") as stderr:
            self.process = subprocess.Popen(
                # Python >= 3.12 may warn on fork() in a threaded process; one BLAS thread keeps it single-threaded.
                [
                    sys.executable,
                    "-W",
                    "ignore::DeprecationWarning",
                    "-c",
                    code,
                    str(root),
                    str(theirs.fileno()),
                ],
                cwd=ROOT,
                env={
                    **os.environ,
                    "OPENBLAS_NUM_THREADS": "1",
                    "OMP_NUM_THREADS": "1",
                    "MKL_NUM_THREADS": "1",
                },
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        self.socket.settimeout(60)
        if self.socket.recv(5) != b"ready":
            self.close()
            pytest.fail(f"the fork server did not start:\n{log.read_text()}")

    def fork(self) -> tuple[int, BinaryIO]:
        self.socket.sendall(b"f")
        message, fds, _, _ = socket.recv_fds(self.socket, 10, 1)
        assert len(message) == 10, self.log.read_text()
        assert len(fds) == 1
        return int(message), os.fdopen(fds[0], "rb")

    def close(self) -> None:
        self.socket.close()  # EOF: the server leaves its loop
        self.process.wait(timeout=30)


def _line(stream: BinaryIO, log: Path) -> str:
    line = stream.readline().decode()
    if not line:
        pytest.fail(f"the writer died on its own:\n{log.read_text()}")
    return line.rstrip("\n")


def _kill(pid: int, stream: BinaryIO) -> list[str]:
    """SIGKILL the writer; the rest of what it said, once it is surely gone."""
    os.kill(pid, signal.SIGKILL)
    rest = stream.read().decode().splitlines()  # EOF: the kernel closed its files, it does nothing more
    stream.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # and it has been reaped
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.0005)
    return rest


@dataclass
class Tally:
    """What the kills found: where they landed, which files survived, the leftovers, timings."""

    phases: Counter[str] = field(default_factory=Counter)
    inside: Counter[str] = field(default_factory=Counter)
    survivors: Counter[str] = field(default_factory=Counter)
    leftovers_made: int = 0
    leftover_kinds: Counter[str] = field(default_factory=Counter)
    leftovers_swept: int = 0
    leftover_bytes_max: int = 0
    mixed_pairs: int = 0
    write_seconds: dict[str, list[float]] = field(default_factory=dict)  # "<kind> <target>": durations
    into_write: list[float] = field(default_factory=list)  # seconds from "B" to the kill, kills inside
    cycle_seconds: list[float] = field(default_factory=list)

    def typical_write(self, kind: str, target: str) -> float:
        seen = self.write_seconds.get(f"{kind} {target}", [])[-50:]
        return statistics.median(seen) if seen else 0.01

    def typical_cycle(self) -> float:
        seen = self.cycle_seconds[-50:]
        return statistics.median(seen) if seen else 0.1


def _temps(root: Path) -> dict[Path, str]:
    """Leftover temp files of both files, with the kind of file they belong to."""
    found = {}
    for kind, path in (("json", root / f"{TEST_FILE}.json"), ("npz", root / NPZ)):
        for temp in path.parent.iterdir():  # not glob: the .npz name holds "[...]"
            if temp.name.startswith(f".{path.name}.") and temp.name.endswith(".tmp"):
                found[temp] = kind
    return found


@pytest.mark.slow
def test_killing_the_writer_leaves_old_or_new_files_never_a_mix(tmp_path: Path) -> None:
    old_entries, old_npz = contents("old")
    new_entries, new_npz = contents("new")
    bytes_of = {
        "json": {"old": render(old_entries).encode(), "new": render(new_entries).encode()},
        "npz": {"old": old_npz, "new": new_npz},
    }
    assert len(bytes_of["json"]["new"]) > 2_000_000
    assert len(bytes_of["npz"]["new"]) > 3_000_000
    root = tmp_path / "baselines"
    json_path, npz_path = root / f"{TEST_FILE}.json", root / NPZ

    setup = BaselineStore(root)
    for test, entry in old_entries.items():
        setup.stage(TEST_FILE, test, entry)
    setup.stage_file(NPZ, old_npz)
    assert sorted(setup.write()) == sorted([json_path, npz_path])
    assert json_path.read_bytes() == bytes_of["json"]["old"]
    assert (
        render(parse(json_path.read_text(encoding="utf-8"), path=json_path)).encode()
        == bytes_of["json"]["old"]
    )

    rng = random.Random(SEED)
    tally = Tally()
    state = {"json": "old", "npz": "old"}
    known_temps: dict[Path, int] = {}
    log = tmp_path / "writers.log"
    server = ForkServer(root, log)
    started = time.monotonic()
    pid, stream = None, None
    try:
        for kill in range(KILLS):
            pid, stream = server.fork()
            said = [_line(stream, log)]
            assert said[0].startswith("R "), said
            # Choose the kill point: every 25th just after two full rounds (this measures a round),
            # else a random delay after R, or a random fraction into a write.
            if kill % 25 == 0:
                while sum(line.startswith("E json ") for line in said) < 2:
                    said.append(_line(stream, log))
            elif rng.random() < 0.5:
                time.sleep(rng.uniform(0, 1.3 * tally.typical_cycle()))
            else:
                kind, fraction = rng.choice(["json", "npz"]), rng.uniform(0, 1.1)
                while not said[-1].startswith(f"B {kind} "):
                    said.append(_line(stream, log))
                time.sleep(fraction * tally.typical_write(kind, said[-1].split()[2]))
            killed_at = time.monotonic()
            try:
                said += _kill(pid, stream)
            except ProcessLookupError:
                pytest.fail(f"the writer died before it was killed:\n{log.read_text()}")
            pid, stream = None, None
            assert "done" not in said, "the writer finished before it was killed"
            _check_after_kill(root, said, killed_at, state, bytes_of, known_temps, tally)
    finally:
        if pid is not None and stream is not None:
            with contextlib.suppress(ProcessLookupError):
                _kill(pid, stream)
        server.close()
    assert log.read_text() == "", "the writers complained"
    elapsed = time.monotonic() - started

    # A normal write after all those kills: succeeds, leaves the leftovers alone.
    before = {temp: (temp.stat().st_size, temp.stat().st_mtime_ns) for temp in _temps(root)}
    after_kills = BaselineStore(root)
    target = "new" if state["json"] == "old" else "old"
    wanted = new_entries if target == "new" else old_entries
    for test in sorted(old_entries.keys() | new_entries.keys()):
        after_kills.stage(TEST_FILE, test, wanted.get(test))
    after_kills.stage_file(NPZ, bytes_of["npz"]["new" if state["npz"] == "old" else "old"])
    assert json_path in after_kills.write()
    assert json_path.read_bytes() == bytes_of["json"][target]
    assert {temp: (temp.stat().st_size, temp.stat().st_mtime_ns) for temp in _temps(root)} == before
    rows, problems = baseline_rows(root)
    assert problems == []
    assert len(rows) == len(wanted)

    in_write = sum(tally.inside.values())
    _report(tally, elapsed, in_write, len(before))
    kills = sum(tally.phases.values())
    assert kills == KILLS
    # Kills timed from a "B" marker land inside a write unless the write is very quick (here: over half).
    assert in_write >= max(1, kills // 10), tally.phases


def _check_after_kill(
    root: Path,
    said: list[str],
    killed_at: float,
    state: dict[str, str],
    bytes_of: dict[str, dict[str, bytes]],
    known_temps: dict[Path, int],
    tally: Tally,
) -> None:
    json_path, npz_path = root / f"{TEST_FILE}.json", root / NPZ
    markers = [line.split() for line in said if line[:2] in ("B ", "E ")]
    # What the markers say about timing: write durations and the first round (R to the end of a json write).
    begins: dict[str, float] = {}
    for mark, kind, target, at in markers:
        if mark == "B":
            begins[kind] = float(at)
        else:
            tally.write_seconds.setdefault(f"{kind} {target}", []).append(float(at) - begins[kind])
    json_ends = [float(m[3]) for m in markers if m[:2] == ["E", "json"]]
    if json_ends:
        tally.cycle_seconds.append(json_ends[0] - float(said[0].split()[1]))

    # The files exist, parse, and are exactly old or new.
    json_bytes, npz_bytes_now = json_path.read_bytes(), npz_path.read_bytes()
    found = {
        kind: next((w for w, data in bytes_of[kind].items() if data == now), None)
        for kind, now in (("json", json_bytes), ("npz", npz_bytes_now))
    }
    assert found["json"] is not None, f"{json_path} is neither the old nor the new file after {markers[-3:]}"
    assert found["npz"] is not None, f"{npz_path} is neither the old nor the new file after {markers[-3:]}"
    parse(json_bytes.decode("utf-8"), path=json_path)
    assert list(load_npz(npz_path)) == ["logits"]

    # And exactly what the child's progress allows.
    new_temps = {temp: kind for temp, kind in _temps(root).items() if temp not in known_temps}
    for kind in ("json", "npz"):
        own = [m for m in markers if m[1] == kind]
        if not own:
            allowed = {state[kind]}
        elif own[-1][0] == "E":
            allowed = {own[-1][2]}
        else:
            allowed = {own[-2][2] if len(own) > 1 else state[kind], own[-1][2]}
        assert found[kind] in allowed, f"{kind}: found {found[kind]}, allowed {allowed} after {own[-2:]}"
        tally.survivors[f"{kind} {found[kind]}"] += 1
    if found["json"] != found["npz"]:
        tally.mixed_pairs += 1

    # Where the kill landed.
    last = markers[-1] if markers else None
    if last is None:
        tally.phases["after R, before the first write (load, stage, render)"] += 1
    elif last[0] == "E":
        tally.phases[f"between writes (after the {last[1]} write)"] += 1
    else:
        kind, target = last[1], last[2]
        tally.phases[f"inside the {kind} write"] += 1
        mine = [temp for temp, k in new_temps.items() if k == kind]
        if mine:
            where = "temp file staged, not yet renamed"
        elif found[kind] == target:
            where = "renamed (in the directory fsync or just after)"
        else:
            where = "before the temp file was created"
        tally.inside[f"{kind} -> {target}: {where}"] += 1
        tally.into_write.append(killed_at - float(last[3]))

    # Leftovers: never the real file, only ever a prefix of what was being written.
    for temp, kind in new_temps.items():
        content = temp.read_bytes()
        being_written = markers[-1][2] if markers and markers[-1][:2] == ["B", kind] else None
        assert being_written is not None, f"a temp file {temp.name} appeared outside a {kind} write"
        assert bytes_of[kind][being_written].startswith(content), f"{temp.name} is not a prefix of the target"
        mode, real = temp.stat().st_mode & 0o777, (json_path if kind == "json" else npz_path).stat().st_mode
        assert mode in (0o600, real & 0o777), oct(mode)  # mkstemp's, or the real file's once chmod ran
        if len(content) < len(bytes_of[kind][being_written]):
            tally.leftover_kinds[f"{kind}: partial (killed while writing the temp file)"] += 1
        elif mode == 0o600 and mode != real & 0o777:
            tally.leftover_kinds[f"{kind}: complete, still 0600 (killed in its fsync or before chmod)"] += 1
        else:
            tally.leftover_kinds[f"{kind}: complete, after chmod (killed just before the rename)"] += 1
        known_temps[temp] = len(content)
    assert len(new_temps) <= 1
    tally.leftovers_made += len(new_temps)
    tally.leftover_bytes_max = max(tally.leftover_bytes_max, sum(known_temps.values()))
    if sum(known_temps.values()) > LEFTOVER_BUDGET:  # keep the disk use bounded; keep the newest few
        for temp in sorted(known_temps, key=lambda t: t.stat().st_mtime_ns)[:-3]:
            temp.unlink()
            del known_temps[temp]
            tally.leftovers_swept += 1
    state.update({kind: which for kind, which in found.items() if which is not None})


def _report(tally: Tally, elapsed: float, in_write: int, leftovers_now: int) -> None:
    kills = sum(tally.phases.values())
    print(f"\n{kills} kills in {elapsed:.1f} s (seed {SEED}); {in_write} landed inside a write")
    for phase, count in tally.phases.most_common():
        print(f"  {count:5d}  {phase}")
    print("inside a write:")
    for where, count in tally.inside.most_common():
        print(f"  {count:5d}  {where}")
    print("survivors: " + ", ".join(f"{k}: {v}" for k, v in sorted(tally.survivors.items())))
    print(f"json and npz from different contents after a kill: {tally.mixed_pairs}")
    print(
        f"leftover temp files: {tally.leftovers_made} made, {tally.leftovers_swept} swept by the test, "
        f"{leftovers_now} still there at the end; at most {tally.leftover_bytes_max / 1e6:.1f} MB at once"
    )
    for what, count in sorted(tally.leftover_kinds.items()):
        print(f"  {count:5d}  {what}")
    for what, seen in sorted(tally.write_seconds.items()):
        print(f"{what} write: median {statistics.median(seen) * 1e3:.2f} ms over {len(seen)} completed")
    if tally.into_write:
        print(
            f"kills inside a write came {statistics.median(tally.into_write) * 1e3:.2f} ms after its start (median)"
        )
    print(f"first round (R to the end of its json write): median {tally.typical_cycle() * 1e3:.1f} ms")
