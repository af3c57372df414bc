"""Two optimized graphs compared exactly, and what of the difference fails a check.

By default (mode ``fusions``) three changes fail, each a known cause of a slower model that a clock
sees only as noise-sized slowdowns:

- a lost fusion: an op type the optimizer made drops in count while the op types it is made of
  appear (``FusedConv 3 -> 0, Conv +3, Relu +3``);
- nodes that move off the requested provider (a silent fallback);
- new copy nodes between providers.

Other changes inform. Mode ``exact`` fails any change of the graph; ``off`` fails none. Pinned counts
(``expect_fusions={"FusedConv": 3}``) fail whenever the graph's count differs, whatever the mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_ortperf import defaults
from pytest_ortperf.errors import UsageError
from pytest_ortperf.graph.figures import GraphFigures, is_fusion, parts_of, short
from pytest_ortperf.values import safe_repr, turned_off

MODES = ("fusions", "exact", "off")
DEFAULT_MODE = defaults.GRAPH_MODE
_NAMED_NODES = 6  # nodes a message names, each way
MODEL_OPS_CHANGED = (
    "op changes of the model (level disabled: ORT fused nothing, these ops are the model's own)"
)
MODEL_OP_CHANGED = "an op change of the model (level disabled: ORT fused nothing)"


@dataclass(frozen=True)
class GraphDiff:
    """What changed from ``before`` to ``after``."""

    before: GraphFigures
    after: GraphFigures
    # False at level ``disabled``: ORT fused nothing, so an op type that reads as a fusion (a Gemm, a
    # FusedConv) came with the exported model, and its drop is an op change of the model, not a lost
    # fusion (:meth:`model_op_changes`).
    optimized: bool = True

    @property
    def same(self) -> bool:
        """The very same graph: no node off the requested provider that was not, and equal canonical
        digests (both serialized), or, where neither could be serialized, the same histogram and
        placement."""
        if self.newly_off():  # a node ran elsewhere: never the same, whatever the figures say
            return False
        if self.before.digest or self.after.digest:
            return self.before.digest == self.after.digest
        return self.before == self.after

    def op_changes(self) -> dict[str, tuple[int, int]]:
        """Op types whose count changed: before, after."""
        names = sorted(set(self.before.ops) | set(self.after.ops))
        counts = {op: (self.before.ops.get(op, 0), self.after.ops.get(op, 0)) for op in names}
        return {op: pair for op, pair in counts.items() if pair[0] != pair[1]}

    def lost_fusions(self) -> list[str]:
        """'FusedConv 3 -> 0 (Conv +3, Relu +3)' for each fused op type whose count dropped while its
        parts appeared; none where ORT fused nothing (level ``disabled``: :meth:`model_op_changes`)."""
        return self._fused_ops_dropped() if self.optimized else []

    def model_op_changes(self) -> list[str]:
        """At level ``disabled``, what would read as a lost fusion ('Gemm 2 -> 0 (Add +2)'): the
        exported model's own op types changed, since ORT fused nothing there."""
        return [] if self.optimized else self._fused_ops_dropped()

    def _fused_ops_dropped(self) -> list[str]:
        changes = self.op_changes()
        grown = {op: after - before for op, (before, after) in changes.items() if after > before}
        lost = []
        for op, (before, after) in changes.items():
            if after >= before or not is_fusion(op):
                continue
            made_of = parts_of(op)
            appeared = {part: n for part, n in grown.items() if made_of is None or part in made_of}
            if appeared:
                parts = ", ".join(f"{short(part)} +{n}" for part, n in sorted(appeared.items()))
                lost.append(f"{short(op)} {before} -> {after} ({parts})")
        return lost

    def gained_fusions(self) -> list[str]:
        """'FusedConv 0 -> 3 (Conv -3, Relu -3)' for each fused op type whose count grew while its
        unfused parts went away: ORT fuses what it did not."""
        return [text for text, fused in self._fused_ops_grown() if fused]

    def grown_fusions(self) -> list[str]:
        """'Gemm 49 -> 65' for each fused op type whose count grew with no unfused part going away:
        the model grew (more layers of the same kind), ORT fuses nothing new."""
        return [text for text, fused in self._fused_ops_grown() if not fused]

    def _fused_ops_grown(self) -> list[tuple[str, bool]]:
        changes = self.op_changes()
        shrunk = {op: before - after for op, (before, after) in changes.items() if after < before}
        grown = []
        for op, (before, after) in changes.items():
            if after <= before or not is_fusion(op):
                continue
            made_of = parts_of(op)
            gone = {part: n for part, n in shrunk.items() if made_of is None or part in made_of}
            parts = ", ".join(f"{short(part)} -{n}" for part, n in sorted(gone.items()))
            grown.append((f"{short(op)} {before} -> {after}" + (f" ({parts})" if gone else ""), bool(gone)))
        return grown

    def lost_pre_pass(self) -> list[str]:
        """'Attention 2 -> 0' for each count of ORT's transformer optimizer that dropped."""
        before, after = self.before.pre_pass, self.after.pre_pass
        return [f"{op} {n} -> {after.get(op, 0)}" for op, n in sorted(before.items()) if after.get(op, 0) < n]

    def placement_changes(self) -> list[str]:
        """What moved work between providers: nodes off the requested one, new copy nodes."""
        changes = []
        moved = self.moved_off_provider()
        if moved:
            other = "" if moved[1] > moved[0] else " (other nodes than before)"
            changes.append(f"nodes off the requested provider {moved[0]} -> {moved[1]}{other}")
        copies = self.new_copies()
        if copies:
            changes.append(f"copy nodes between providers {copies[0]} -> {copies[1]}")
        return changes

    def moved_off_provider(self) -> tuple[int, int] | None:
        """Nodes off the requested provider, before and after, when more of them are off now or, with
        both graphs built in this run, when a node is off that was not (one fell back as another
        returned: the count alone would not move)."""
        pair = self.before.off_provider, self.after.off_provider
        return pair if pair[1] > pair[0] or self.newly_off() else None

    def newly_off(self) -> list[str]:
        """The nodes off the requested provider now ('name (op) on provider') that were not before;
        all of them when the reference keeps no node names (stored figures)."""
        before = set(self.before.off_nodes)
        if not self.before.node_ops and not before:
            return list(self.after.off_nodes) if self.after.off_provider > self.before.off_provider else []
        return [node for node in self.after.off_nodes if node not in before]

    def new_copies(self) -> tuple[int, int] | None:
        pair = self.before.copies, self.after.copies
        return pair if pair[1] > pair[0] else None

    def nodes_changed(self) -> tuple[list[str], list[str]]:
        """Nodes (``name (op)``) only in the current graph, and only in the reference, when both sides
        were built in this run (stored figures keep no node names)."""
        before, after = self.before.node_ops, self.after.node_ops
        if not before or not after:
            return [], []
        added = [_node(name, op) for name, op in after.items() if before.get(name) != op]
        removed = [_node(name, op) for name, op in before.items() if after.get(name) != op]
        return added, removed

    def text(self) -> str:
        """'FusedConv 3 -> 0, Conv +3, Relu +3' (fused op types first), or 'same graph'."""
        if self.same:
            return "same graph"
        parts = []
        changes = self.op_changes()
        ordered = sorted(changes, key=lambda op: (not is_fusion(op), short(op)))
        for op in ordered:
            before, after = changes[op]
            parts.append(
                f"{short(op)} {before} -> {after}" if is_fusion(op) else f"{short(op)} {after - before:+d}"
            )
        parts += self.placement_changes()
        return ", ".join(parts) or "same op counts, other weights, attributes or wiring"

    def lines(self) -> list[str]:
        """The change as a failure message lists it."""
        lines = [f"change:    {self.text()}"]
        lost, gained = self.lost_fusions(), self.gained_fusions()
        if lost:
            lines.append(f"lost fusions: {'; '.join(lost)}")
        model_ops = self.model_op_changes()
        if model_ops:
            lines.append(f"{MODEL_OPS_CHANGED}: {'; '.join(model_ops)}")
        if self.before.pre_pass != self.after.pre_pass:
            before, after = _counts(self.before.pre_pass), _counts(self.after.pre_pass)
            lines.append(f"transformer optimizer: {before} -> {after}")
        if gained:
            lines.append(f"gained fusions: {'; '.join(gained)}")
        grown = self.grown_fusions()
        if grown:
            lines.append(
                f"more fused nodes as the model grew (no unfused part went away): {'; '.join(grown)}"
            )
        moved, newly_off = self.moved_off_provider(), self.newly_off()
        if moved and newly_off:
            lines.append(f"off the requested provider now: {_some(newly_off)}")
        elif moved:  # ORT did not say which nodes (an onnxruntime without the placement API)
            lines.append("off the requested provider now: which nodes, this onnxruntime does not report")
        added, removed = self.nodes_changed()
        if added:
            lines.append(f"nodes new: {_some(added)}")
        if removed:
            lines.append(f"nodes gone: {_some(removed)}")
        return lines


def _node(name: str, op: str) -> str:
    return f"{name or '<unnamed>'} ({short(op)})"


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{op} {n}" for op, n in sorted(counts.items())) or "none"


def _some(items: list[str]) -> str:
    shown = ", ".join(items[:_NAMED_NODES])
    return shown + (f" and {len(items) - _NAMED_NODES} more" if len(items) > _NAMED_NODES else "")


def failures(diff: GraphDiff, mode: str = DEFAULT_MODE) -> list[str]:
    """Why ``diff`` fails under ``mode`` (empty: it passes)."""
    if mode == "off" or diff.same:
        return []
    reasons = [f"lost fusion: {lost}" for lost in diff.lost_fusions()]
    reasons += [f"{MODEL_OP_CHANGED}: {changed}" for changed in diff.model_op_changes()]
    reasons += [f"the transformer optimizer fused less: {lost}" for lost in diff.lost_pre_pass()]
    reasons += diff.placement_changes()
    if mode == "exact" and not reasons:
        reasons.append(
            f"the graph changed ({diff.text()}) and ort_thresholds(graph='exact') fails any change"
        )
    return reasons


def pinned(figures: GraphFigures, expected: Mapping[str, int]) -> list[str]:
    """Pinned counts that ``figures`` does not have: 'FusedConv: expected 3, found 0'. A name matches
    an op type with its domain (``com.microsoft:FusedConv``) or as messages name it (``FusedConv``)."""
    problems = []
    for name, count in expected.items():
        found = sum(n for op, n in figures.ops.items() if name in (op, short(op)))
        if found != count:
            problems.append(f"{name}: expected {count}, found {found}")
    return problems


def parse_graph_mode(value: object, *, source: str) -> str:
    """``--ortperf-graph`` / ini ``ortperf_graph``: one of :data:`MODES` (any off word of the switch
    grammar, ``no`` or ``false`` say, is ``off``)."""
    text = str(value).strip().lower() if isinstance(value, str) else ""
    if text and turned_off(text):  # the switch grammar's off words turn the check off too
        return "off"
    if text not in MODES:
        raise UsageError(f"{source}: expected one of {', '.join(MODES)}, got {safe_repr(value)}.")
    return text


def mode_option(text: str, where: str) -> str:
    """The graph kind's own option (``--ortperf-graph``, ini ``ortperf_graph``), parsed as it enters."""
    return parse_graph_mode(text, source=where)


GraphLimit = tuple[str, tuple[tuple[str, int], ...]]  # (mode or "", pinned counts)


def graph_threshold(value: object, where: str) -> GraphLimit:
    """The graph kind's ``ort_thresholds(graph=...)`` keyword, parsed as it enters."""
    return parse_graph_threshold(value, source=where)


def merged_limits(farther: GraphLimit, closer: GraphLimit) -> GraphLimit:
    """Two markers' ``graph=``: the closer one's mode and pins, each where it gives one, else the
    farther one's (a module's pinned counts stand under a test's mode)."""
    return closer[0] or farther[0], closer[1] or farther[1]


def parse_graph_threshold(value: object, *, source: str) -> GraphLimit:
    """``ort_thresholds(graph=...)``: a mode (``'exact'``), or pinned counts (``{'FusedConv': 3}``:
    the optimized graph must hold exactly that many). Returns (mode or "", pins)."""
    if isinstance(value, str):
        return parse_graph_mode(value, source=source), ()
    if isinstance(value, Mapping) and value:
        pins = []
        for name, count in value.items():
            if not isinstance(name, str) or not name.strip():
                raise UsageError(f"{source}: op type names must be non-empty strings, got {safe_repr(name)}.")
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise UsageError(
                    f"{source}: the count pinned for {safe_repr(name)} must be an integer >= 0, "
                    f"got {safe_repr(count)}."
                )
            pins.append((name.strip(), count))
        return "", tuple(pins)
    raise UsageError(
        f"{source}: expected a mode ({', '.join(MODES)}) or op type counts such as {{'FusedConv': 3}}, "
        f"got {safe_repr(value)}."
    )
