"""Record how this machine's speed moves: interleaved short rounds of several models over minutes.

Question: which statistic of a stored-mode latency check stays put when the
machine switches state, and does a machine-speed canary (a small fixed
workload measured interleaved with the model) make latency more stable?

Method: the 20/21/22/24-layer MLPs of ``benchmarks/gate_quality.py`` and the
plugin's canary workload run in shuffled blocks, one short round each (runs
sized to about ``--round-ms``), for ``--minutes``. Sessions are rebuilt every
``--rebuild`` seconds, as fresh CI runs would build them. Every round's
median, its model and its start time go to a JSON trace that
``benchmarks/state_analysis.py`` replays to compare statistics offline.

    python -m benchmarks.machine_states --minutes 10 --out /tmp/states.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from pytest_ortperf.latency.canary import Canary  # noqa: E402
from pytest_ortperf.latency.measure import time_runs  # noqa: E402
from pytest_ortperf.ort.providers import resolve_provider  # noqa: E402
from pytest_ortperf.ort.runtime import import_onnxruntime  # noqa: E402
from pytest_ortperf.ort.session_settings import SessionSettings  # noqa: E402
from pytest_ortperf.ort.sessions import session_options  # noqa: E402
from pytest_ortperf.ort.variants import OptLevel, Variant  # noqa: E402
from tests.models import mlp_model  # noqa: E402

LAYERS = (20, 21, 22, 24)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rebuild", type=float, default=20.0)
    parser.add_argument("--round-ms", type=float, default=40.0)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    ort = import_onnxruntime()
    variant = Variant(resolve_provider("cpu", source="benchmark"), OptLevel.ALL)
    settings = SessionSettings()
    feeds = {"x": np.random.default_rng(0).standard_normal((args.batch, args.width)).astype(np.float32)}
    blobs = {n: mlp_model(n, args.width).SerializeToString() for n in LAYERS}
    rng = random.Random(args.seed)

    def build() -> dict[str, object]:
        runners: dict[str, object] = {}
        for n, blob in blobs.items():
            session = ort.InferenceSession(
                blob, session_options(ort, variant, settings), providers=["CPUExecutionProvider"]
            )
            runners[str(n)] = lambda s=session: s.run(None, feeds)
        runners["canary"] = Canary.build(ort, variant, settings).run
        return runners

    start = time.perf_counter()
    deadline = start + args.minutes * 60
    rounds: list[list[object]] = []
    runners = build()
    built_at = time.perf_counter()
    per_round: dict[str, int] = {}
    for name, fn in runners.items():  # warm up and size the rounds
        for _ in range(5):
            fn()  # type: ignore[operator]
        t0 = time.perf_counter_ns()
        for _ in range(5):
            fn()  # type: ignore[operator]
        cost_ms = (time.perf_counter_ns() - t0) / 5e6
        per_round[name] = max(1, round(args.round_ms / cost_ms))
    session_no = 0
    while time.perf_counter() < deadline:
        if time.perf_counter() - built_at > args.rebuild:
            runners = build()
            session_no += 1
            for fn in runners.values():
                for _ in range(3):
                    fn()  # type: ignore[operator]
            built_at = time.perf_counter()
        order = list(runners)
        rng.shuffle(order)
        for name in order:
            fn = runners[name]
            at = time.perf_counter() - start
            times = time_runs(fn, per_round[name], time.perf_counter_ns, [])  # type: ignore[arg-type]
            rounds.append([name, round(at, 4), session_no, statistics.median(times) / 1e6])
    args.out.write_text(json.dumps({"per_round": per_round, "rounds": rounds}))
    print(f"{len(rounds)} rounds in {time.perf_counter() - start:.0f} s -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
