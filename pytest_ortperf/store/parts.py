"""Where a baseline file keeps the kinds' parts of a machine's figures, and the names no part may
take: a file fact, read by the store (``baselines.py``) and by the registry of kinds, which checks a
kind's part against it as the kind is registered (so this module imports nothing)."""

from __future__ import annotations

# Parts kept at the top level of a machine's figures, as files have held them since those checks were
# first recorded, each with its keys there (a part of one key is that key's object; the latency
# kind's part spans five keys); every other kind's part under "parts". The store interprets none of
# them (Figures.parts).
TOP_LEVEL_PARTS: dict[str, tuple[str, ...]] = {
    "latency": ("latency", "profile", "spread", "settled", "short"),
    "memory": ("memory",),
    "startup": ("startup",),
    "graph": ("graph",),
}
# A machine's figures' own keys, and the keys of a part that are not its name: no kind's part may
# take one.
RESERVED_PARTS = ("recorded", "measured_on", "parts", "profile", "spread", "settled", "short")
