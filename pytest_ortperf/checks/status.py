"""How a check ended: one enum for the latency and the accuracy check.

A ``str`` enum whose value is what the terminal table, the CI files, JUnit
properties and pytest-benchmark's ``extra_info`` show, so reports and JSON read
the same words as before the enum existed.
"""

from __future__ import annotations

import enum

from pytest_ortperf.latency.decision import Verdict


class Status(str, enum.Enum):
    # a comparison decided (latency: the verdict; accuracy: ok or failed)
    OK = "ok"
    REGRESSION = "regression"
    IMPROVED = "improved"
    INCONCLUSIVE = "inconclusive"
    NOT_CONFIRMED = "inconclusive (not confirmed)"  # a regression a second measurement did not repeat
    FAILED = "failed"
    UNCHANGED = "unchanged"  # nothing the repository controls changed (also: an update that kept the entry)
    SAME_GRAPH = "unchanged (same graph)"  # a changed model whose optimized graph is the reference's
    DRIFTED = "drifted"  # unchanged, but beyond --ortperf-drift-threshold
    DIFFERS_REPORTED = "differs (reported)"  # --ortperf-ab-outputs=report
    # nothing to compare with
    MISSING = "missing"
    INPUTS_CHANGED = "inputs changed"
    NO_REFERENCE = "no reference"
    IDENTICAL_TO_REFERENCE = "identical to reference"
    # --ortperf-update
    NEW = "new"
    UPDATED = "updated"
    # a check that ended in an error instead of a verdict
    ERROR = "error"
    # --ortperf-timing=off
    NOT_TIMED = "not timed"
    # a contract this run does not measure (a variant held to itself, an update)
    NOT_MEASURED = "not measured"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def of(cls, verdict: Verdict) -> Status:
        """The status a comparison's verdict gives."""
        return cls(verdict.value)
