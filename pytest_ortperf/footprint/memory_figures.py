"""Memory figures of a session and the rule that compares them.

What a session costs in memory, each figure measured in a fresh worker process
(``ort/worker_program.py: footprint``):

- ``arena_peak``: ONNX Runtime's own accounting, the peak bytes in use in its CPU arena over the
  session's life (the weights it keeps there and the planned activations), from the profile of a
  steady run.
- ``weights``: the bytes of the model's weights (initializers and constants, from their shapes and
  types). Where ORT keeps a weight is its own affair and changes between versions: onnxruntime
  1.31 keeps MatMul weights in the arena and prepacked Conv weights outside it, 1.32 keeps only the
  prepacked copies there. So ``arena_peak`` alone misses a Conv weight added; this figure does not.
- ``device``: the GPU memory the worker process holds (CUDA, TensorRT), where a GPU provider runs.
- ``peak_rss``: the peak resident memory building and running the session added to the process.

The arena peak is exact: identical over 20 fresh processes of each of five workload families
(``benchmarks/README.md``, "Memory and start-up"); the weights are exact by construction. Both
decide whenever the session keeps the arena figure (the CPU arena is on, the default), and any
change beyond the threshold is real. The
resident set varied by up to 8% (1 MiB, int8) over those processes, so it decides only where
neither of the others is kept, with a wider threshold and floor (:data:`RSS_THRESHOLD`,
:data:`RSS_FLOOR`); at those it caught none of the benchmark's changes below 1 MiB.

A change decides when it exceeds both the relative threshold and the absolute floor: the floor keeps
a tiny model's allocation rounding from failing a gate, the threshold keeps a large model's
legitimate small growth from it. Against stored figures the medians are compared
(:func:`compare_memory`); side by side, :func:`compare_pairs` judges pairs of fresh processes by the
rule of every side-by-side verdict (``footprint/comparison.py: judge_pairs``): an exact figure
decides at the first look (two pairs), the resident set takes pairs until its interval decides.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_ortperf import defaults
from pytest_ortperf.footprint.comparison import FigureComparison, judge_pairs, size_text
from pytest_ortperf.latency.decision import Verdict

ARENA, WEIGHTS, DEVICE, RSS = "arena_peak", "weights", "device", "peak_rss"
FIGURE_NAMES = {
    ARENA: "peak bytes in use in ORT's arena",
    WEIGHTS: "bytes of the model's weights",
    DEVICE: "GPU memory of the session's process",
    RSS: "peak resident memory added to a fresh process",
}
DEFAULT_THRESHOLD = defaults.MEMORY_THRESHOLD
DEFAULT_FLOOR = defaults.MEMORY_FLOOR
RSS_THRESHOLD = 0.10  # 2-process medians of the resident set differed by up to 8% (int8)
RSS_FLOOR = 1 << 20  # and by up to 1.07 MiB: no lower floor stays quiet
# Side by side, looked at after these many pairs of fresh processes (``compare_pairs``): ORT's arena and
# the weights are exact and decide at the first look, as two processes a side did before.
PAIR_LOOKS = (2, 4, 6)


@dataclass(frozen=True)
class MemoryFigures:
    """What one session cost in memory (the median over the fresh processes measured), and the
    largest nodes of its profile (bytes of outputs and parameters), where the profile has them."""

    processes: int
    arena_peak: int | None = None
    arena_held: int | None = None
    weights: int | None = None
    peak_rss: int | None = None
    peak_rss_range: tuple[int, int] | None = None  # lowest and highest over the processes
    device: int | None = None
    nodes: Mapping[str, int] = field(default_factory=dict)
    # Each figure in each process, in the order measured, for the pairs of a side-by-side measurement;
    # not stored (a baseline keeps the medians).
    samples: Mapping[str, tuple[int | None, ...]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def decisive(self) -> str:
        """The session's figure that decides (beside the weights): the GPU memory, else ORT's arena,
        else the resident set."""
        if self.device is not None:
            return DEVICE
        if self.arena_peak is not None:
            return ARENA
        return RSS

    def value(self, name: str) -> int | None:
        value: int | None = getattr(self, name)  # the figures' names are their fields'
        return value

    def describe(self) -> str:
        """The deciding figures in a few words: 'arena peak 2.01 MiB, weights 2 MiB'."""
        value = self.value(self.decisive)
        short = {ARENA: "arena peak", DEVICE: "GPU", RSS: "peak RSS +"}[self.decisive]
        text = f"{short} {size_text(value)}" if value is not None else "-"
        return text if self.weights is None else f"{text}, weights {size_text(self.weights)}"

    def lines(self) -> list[str]:
        """Every figure, one per line, for a message."""
        lines = []
        if self.arena_peak is not None:
            held = f", arena held {size_text(self.arena_held)}" if self.arena_held is not None else ""
            lines.append(f"ORT arena: peak in use {size_text(self.arena_peak)}{held}")
        if self.weights is not None:
            lines.append(f"model weights: {size_text(self.weights)}")
        if self.device is not None:
            lines.append(f"GPU memory of the process: {size_text(self.device)}")
        if self.peak_rss is not None:
            spread = ""
            if self.peak_rss_range is not None and self.processes > 1:
                low, high = self.peak_rss_range
                spread = f" ({size_text(low)} .. {size_text(high)} over {self.processes} processes)"
            lines.append(f"peak resident memory added: {size_text(self.peak_rss)}{spread}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"processes": self.processes}
        for name in ("arena_peak", "arena_held", "weights", "peak_rss", "device"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        if self.peak_rss_range is not None:
            data["peak_rss_range"] = list(self.peak_rss_range)
        if self.nodes:
            data["nodes"] = dict(self.nodes)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> MemoryFigures:
        """Rebuild from :meth:`as_dict` output; ``KeyError``/``TypeError``/``ValueError`` if damaged."""
        if not isinstance(data, Mapping):
            raise TypeError(f"memory figures must be an object, got {type(data).__name__}")
        names = ("arena_peak", "arena_held", "weights", "peak_rss", "device")
        values = {name: _bytes(data.get(name), name) for name in names}
        if all(value is None for value in values.values()):
            raise KeyError("arena_peak")
        processes = data.get("processes")
        if not isinstance(processes, int) or isinstance(processes, bool) or processes < 1:
            raise ValueError(f"processes must be a whole number >= 1, got {processes!r}")
        span = data.get("peak_rss_range")
        if span is not None:
            if not isinstance(span, list) or len(span) != 2:
                raise TypeError("peak_rss_range must be [lowest, highest]")
            span = (_bytes(span[0], "peak_rss_range"), _bytes(span[1], "peak_rss_range"))
        nodes = data.get("nodes", {})
        if not isinstance(nodes, Mapping):
            raise TypeError("nodes must map node names to bytes")
        return cls(
            processes=processes,
            arena_peak=values["arena_peak"],
            arena_held=values["arena_held"],
            weights=values["weights"],
            peak_rss=values["peak_rss"],
            device=values["device"],
            peak_rss_range=span,  # type: ignore[arg-type]
            nodes={str(name): int(_bytes(size, f"nodes.{name}") or 0) for name, size in nodes.items()},
        )

    @classmethod
    def of(cls, footprints: Sequence[Any]) -> MemoryFigures:
        """The median over fresh processes' :class:`~pytest_ortperf.ort.workers.Footprint` (ORT's
        figures are identical in each; the resident set is not)."""
        if not footprints:
            raise ValueError("memory figures need at least one process")

        def median(values: Sequence[int | None]) -> int | None:
            known = [v for v in values if v is not None]
            return int(statistics.median(known)) if known else None

        samples: dict[str, tuple[int | None, ...]] = {
            ARENA: tuple(_optional(f.arena.get("mem_in_use_peak")) for f in footprints),
            "arena_held": tuple(_optional(f.arena.get("mem_arena_held")) for f in footprints),
            WEIGHTS: tuple(getattr(f, "weights", None) for f in footprints),
            RSS: tuple(f.peak_rss_added for f in footprints),
            DEVICE: tuple(f.device_bytes for f in footprints),
        }
        rss = [value for value in samples[RSS] if value is not None]
        last = footprints[-1].arena
        return cls(
            processes=len(footprints),
            arena_peak=median(samples[ARENA]),
            arena_held=median(samples["arena_held"]),
            weights=median(samples[WEIGHTS]),
            peak_rss=median(rss),
            peak_rss_range=(min(rss), max(rss)) if rss else None,
            device=median(samples[DEVICE]),
            nodes={str(k): int(v) for k, v in dict(last.get("nodes") or {}).items()},
            samples=samples,
        )


def _optional(value: Any) -> int | None:
    return None if value is None else int(value)


def _bytes(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be a whole number of bytes >= 0, got {value!r}")
    return value


def compare_memory(
    before: MemoryFigures,
    after: MemoryFigures,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    floor: int = DEFAULT_FLOOR,
) -> list[FigureComparison]:
    """The deciding figures both sides have, each compared: a regression when it grew by more than
    both ``threshold`` (relative) and ``floor`` (bytes), an improvement when it shrank by as much.
    The session's figure (the GPU memory where a GPU provider runs, else ORT's arena peak, else the
    resident set, held to at least :data:`RSS_THRESHOLD` and :data:`RSS_FLOOR`), and the weights.
    Empty when the two sides share no figure."""
    return [_compared(name, old, new, threshold, floor) for name, old, new in _deciding(before, after)]


def compare_pairs(
    before: MemoryFigures,
    after: MemoryFigures,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    floor: int = DEFAULT_FLOOR,
    confidence: float = 0.99,
    look: int = 1,
    looks: int = 1,
) -> list[FigureComparison]:
    """Side by side: the figures :func:`compare_memory` compares, each judged over pairs of fresh
    processes (``before.samples[i]`` beside ``after.samples[i]``) by the rule of every side-by-side
    verdict, at look ``look`` of ``looks``; the floor is a share of the reference's median. A figure
    with fewer than two complete pairs (or none before) is compared on its medians."""
    compared = []
    for name, old, new in _deciding(before, after):
        pairs = [
            (then, now)
            for then, now in zip(before.samples.get(name, ()), after.samples.get(name, ()), strict=False)
            if then is not None and now is not None
        ]
        if len(pairs) < 2 or old == 0:
            compared.append(_compared(name, old, new, threshold, floor))
            continue
        relative, least = _limits(name, threshold, floor)
        verdict, rule = judge_pairs(
            [then for then, _ in pairs],
            [now for _, now in pairs],
            threshold=max(relative, least / old),
            confidence=confidence,
            look=look,
            looks=looks,
            limit=_rule(relative, least),
        )
        compared.append(FigureComparison(FIGURE_NAMES[name], old, new, verdict, rule))
    return compared


def _deciding(before: MemoryFigures, after: MemoryFigures) -> list[tuple[str, int, int]]:
    """The deciding figures both sides have: the session's (the GPU memory, else ORT's arena peak,
    else the resident set) and the weights."""
    deciding = []
    for names in ((DEVICE, ARENA, RSS), (WEIGHTS,)):
        for name in names:
            old, new = before.value(name), after.value(name)
            if old is not None and new is not None:
                deciding.append((name, old, new))
                break
    return deciding


def _limits(name: str, threshold: float, floor: int) -> tuple[float, int]:
    """The threshold and floor a figure is held to: the resident set to at least its own."""
    if name == RSS:
        return max(threshold, RSS_THRESHOLD), max(floor, RSS_FLOOR)
    return threshold, floor


def _rule(threshold: float, floor: int) -> str:
    return f"+/-{threshold * 100:.3g}% and at least {size_text(floor)}"


def _compared(name: str, old: int, new: int, threshold: float, floor: int) -> FigureComparison:
    threshold, floor = _limits(name, threshold, floor)
    limit = max(threshold * old, floor)
    delta = new - old
    verdict = Verdict.REGRESSION if delta > limit else Verdict.IMPROVED if -delta > limit else Verdict.OK
    return FigureComparison(FIGURE_NAMES[name], old, new, verdict, _rule(threshold, floor))


def grown_nodes(before: MemoryFigures, after: MemoryFigures, *, top: int = 5) -> list[str]:
    """The nodes whose bytes (outputs and parameters) grew most, new nodes included: 'dupmm +256 KiB'."""
    grown = []
    for node, size in after.nodes.items():
        old = before.nodes.get(node)
        delta = size - (old or 0)
        if delta > 0:
            grown.append((delta, node, old is None))
    grown.sort(key=lambda item: (-item[0], item[1]))
    return [f"{node} +{size_text(delta)}{' (new)' if new else ''}" for delta, node, new in grown[:top]]
