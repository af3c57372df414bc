"""Which execution provider each node was assigned to, as ORT recorded it (onnxruntime 1.24 and later).

Where this API is missing, the graph check reads the placement of an accelerator's variant from one
profiled run instead (``worker_program.profiled_placement``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

RECORD_PLACEMENT_KEY = "session.record_ep_graph_assignment_info"


@dataclass(frozen=True)
class NodePlacement:
    name: str
    op_type: str
    domain: str
    provider: str


@dataclass(frozen=True)
class Placement:
    """Node-to-provider assignment of one session (node names as ORT saw them before layout passes)."""

    nodes: tuple[NodePlacement, ...]

    def counts(self) -> dict[str, int]:
        """Number of nodes per provider."""
        return dict(Counter(node.provider for node in self.nodes))

    def nodes_on(self, provider: str) -> tuple[NodePlacement, ...]:
        return tuple(node for node in self.nodes if node.provider == provider)

    def nodes_not_on(self, provider: str) -> tuple[NodePlacement, ...]:
        """Nodes that did not land on ``provider``: for an accelerator, its fallbacks."""
        return tuple(node for node in self.nodes if node.provider != provider)

    def describe(self) -> str:
        return ", ".join(f"{name}: {count}" for name, count in sorted(self.counts().items()))


def placement_of(session: Any) -> Placement | None:
    """Read the assignment from a session built with :data:`RECORD_PLACEMENT_KEY` on.

    ``None`` when this ORT has no such API (older releases).
    """
    getter = getattr(session, "get_provider_graph_assignment_info", None)
    if getter is None:
        return None
    return Placement(
        tuple(
            NodePlacement(node.name, node.op_type, node.domain, subgraph.ep_name)
            for subgraph in getter()
            for node in subgraph.get_nodes()
        )
    )
