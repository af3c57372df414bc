"""What a check kind with a baseline part of its own shares around its measurement (``throughput``,
``generation``): whether this hardware's part is recorded, the stored part, and the run of its check,
an error of which becomes its error record. Light: it imports nothing that loads numpy, onnx or
onnxruntime, so a kind's declaration can import it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pytest_ortperf.errors import OrtperfError

if TYPE_CHECKING:
    from pytest_ortperf.checks.kind_result import KindResult
    from pytest_ortperf.gate.protocol import CheckContext, CheckTarget, Outcome
    from pytest_ortperf.latency.activity import Activity
    from pytest_ortperf.store.baselines import BaselineEntry


class PartCheck:
    """A check whose kind keeps a part of its own (``kind``, the part's name too). A subclass
    measures in :meth:`measure`; what it raises of ``caught`` becomes the check's error, naming it."""

    kind: str
    caught: ClassVar[tuple[type[BaseException], ...]] = (OrtperfError, ValueError)
    _context: CheckContext

    def recorded(self, entry: BaselineEntry, machine: str) -> bool:
        figures = entry.figures_for(machine)
        return figures is not None and figures.part(self.kind) is not None

    def stored(self, target: CheckTarget) -> Mapping[str, Any] | None:
        """This hardware's recorded part, shown beside today's figures (None: never recorded here)."""
        entry = target.entry
        figures = entry.figures_for(target.key.machine) if entry is not None else None
        return figures.part(self.kind) if figures is not None else None

    def run(self, target: CheckTarget) -> Sequence[Outcome]:
        from pytest_ortperf.checks.kind_result import kind_error
        from pytest_ortperf.reports.ci_files import check_record

        context, key = self._context, target.key
        with context.measurer.activity(f"{key.shown} ({self.kind})") as activity:
            try:
                result = self.measure(target, activity)
            except self.caught as exc:
                said = (
                    str(exc)
                    if isinstance(exc, (OrtperfError, ValueError))
                    else f"{type(exc).__name__}: {exc}"
                )
                result = kind_error(key, self.kind, f"could not be measured: {said}")
        context.publisher.publish(check_record(result, context.nodeid))
        return [result]

    def measure(self, target: CheckTarget, activity: Activity) -> KindResult:
        raise NotImplementedError
