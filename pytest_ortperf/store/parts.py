"""Where a baseline file keeps the kinds' parts of a machine's figures, and the names no part may
take: a file fact, read by the store (``baselines.py``) and by the registry of kinds, which checks a
kind's part against it as the kind is registered (so this module imports nothing)."""

from __future__ import annotations

LATENCY_PARTS = ("latency", "profile")  # the latency check's figures: typed fields of Figures
# These at the top level of a machine's figures, as files have held them since those checks were first
# recorded; every other kind's part under "parts". The store interprets none of them (Figures.parts).
TOP_LEVEL_PARTS = ("memory", "startup", "graph")
# A machine's figures' own keys beside the parts: no kind's part may take one (the latency kind's
# part is "latency").
RESERVED_PARTS = ("recorded", "measured_on", "spread", "settled", "short", "parts", "profile")
