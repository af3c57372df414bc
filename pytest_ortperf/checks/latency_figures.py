"""The latency kind's part of a machine's figures: the recorded latency, the operator profile recorded
beside it, and how the recording went.

The store keeps the part as the JSON :meth:`LatencyFigures.as_dict` writes and never interprets it
(``store/baselines.py: Figures.parts``). A baseline file keeps its keys (``latency``, ``profile``,
``spread``, ``settled``, ``short``) at the top level of a machine's figures, as files have since
latency was first recorded (``store/parts.py: TOP_LEVEL_PARTS``); this module is the only reader
of what they mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_ortperf.latency.stats import LatencyStats
from pytest_ortperf.profiling.operators import OpProfile
from pytest_ortperf.store.baselines import Figures

PART = "latency"  # the latency kind's part (kinds/latency.py declares it)
KEYS = ("latency", "profile", "spread", "settled", "short")  # its keys in a machine's figures


@dataclass(frozen=True)
class LatencyFigures:
    """What the latency check recorded on one machine.

    - ``latency``: the recorded figures (None where only a profile was recorded);
    - ``profile``: the operator profile recorded beside them (a test marked ``ort_profile``);
    - ``spread``: how much the compared round medians varied when recorded (a fraction, e.g.
      0.12), so a comparison with noisy figures can widen by it;
    - ``settled``: False when the recording hit its cap before the figures settled ("not settled";
      "noisy" is a spread above --ortperf-max-cv, ``latency.recording.noise``);
    - ``short``: why a short recording was enough (its reference is rebuilt, so its figures only
      inform: ``latency.recording.short_reason``), "" for figures measured until settled.
    """

    latency: LatencyStats | None = None
    profile: OpProfile | None = None
    spread: float | None = None
    settled: bool = True
    short: str = ""

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.latency is not None:
            data["latency"] = self.latency.as_dict()
        if self.profile is not None:
            data["profile"] = self.profile.as_dict()
        if self.spread is not None:
            data["spread"] = self.spread
        if not self.settled:
            data["settled"] = False
        if self.short:
            data["short"] = self.short
        return data

    @classmethod
    def from_dict(cls, data: Any) -> LatencyFigures:
        """Rebuild from :meth:`as_dict` output; ``KeyError``/``TypeError``/``ValueError`` if damaged."""
        if not isinstance(data, Mapping):
            raise TypeError(f"latency figures must be an object, got {type(data).__name__}")
        if "latency" not in data and "profile" not in data:
            raise KeyError("latency")  # a spread or a note without the figures they describe
        spread = data.get("spread")
        if spread is not None and (
            not isinstance(spread, (int, float)) or isinstance(spread, bool) or not 0 <= spread < math.inf
        ):
            raise ValueError(f"spread must be a finite number >= 0, got {spread!r}")
        settled = data.get("settled", True)
        if not isinstance(settled, bool):
            raise TypeError(f"settled must be true or false, got {settled!r}")
        short = data.get("short", "")
        if not isinstance(short, str):
            raise TypeError(f"short must be a string (why a short recording was enough), got {short!r}")
        return cls(
            latency=LatencyStats.from_dict(data["latency"]) if "latency" in data else None,
            profile=OpProfile.from_dict(data["profile"]) if "profile" in data else None,
            spread=None if spread is None else float(spread),
            settled=settled,
            short=short,
        )


def latency_part(figures: Figures | None) -> LatencyFigures | None:
    """The latency kind's part of ``figures``, typed; None where they hold none."""
    return figures.part_as(PART, LatencyFigures.from_dict) if figures is not None else None


def stored_latency(figures: Figures | None) -> LatencyStats | None:
    """The recorded latency of ``figures``; None where they hold none."""
    part = latency_part(figures)
    return part.latency if part is not None else None


def recorded_short(figures: Figures | None) -> str:
    """Why ``figures`` were recorded short, where they were ("" otherwise)."""
    part = latency_part(figures)
    return part.short if part is not None else ""


def latency_figures(
    recorded: str,
    latency: LatencyStats | None = None,
    *,
    measured_on: Mapping[str, Any] | None = None,
    profile: OpProfile | None = None,
    spread: float | None = None,
    settled: bool = True,
    short: str = "",
) -> Figures:
    """A machine's figures holding the latency kind's part alone, as a first recording writes them."""
    part = LatencyFigures(latency, profile, spread, settled, short)
    return Figures(recorded=recorded, measured_on=dict(measured_on or {})).with_part(PART, part)
