"""The accuracy check with stand-in services: the stored outputs it reads and stages go through its
``OutputStore``, and a failure is located through its ``Localising``; no file is read here."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from pytest_ortperf.accuracy.output_values import flatten
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.checks.status import Status
from pytest_ortperf.gate.protocol import CheckTarget
from pytest_ortperf.kinds.accuracy_check import AccuracyCheck
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import BuiltSession
from pytest_ortperf.store.baselines import BaselineStore
from pytest_ortperf.store.outputs import AccuracyRecord, for_storage
from pytest_ortperf.store.recorded_outputs import RecordedOutputs
from tests.unit.gate.standins import CPU_ALL, RECIPE, Services, entry, environment, key, model

OUT = np.array([[1.0, -2.0, 0.5, 4.0]], np.float32)


class _Session:
    def get_outputs(self) -> list[Any]:
        return [SimpleNamespace(name="y", type="tensor(float)")]


@dataclass
class _Watchdog:
    value: Any

    def run(self, session: Any, names: list[str], feeds: dict[str, Any]) -> list[Any]:
        return [self.value]


def _services(tmp_path: Path) -> Services:
    built = BuiltSession(_Session(), model("d"), CPU_ALL, SessionSettings(), (CPU_ALL.provider,), None, 0.0)
    services = Services(BaselineStore(tmp_path / "baselines"), built=built)
    services.sessions.running = _Watchdog(OUT)
    return services


def _recorded(values: dict[str, Any]) -> tuple[AccuracyRecord, RecordedOutputs]:
    stored = for_storage(values)[1]
    record = AccuracyRecord(RECIPE["inputs_sha256"], stored, "outputs.npz", flatten(values).structure)
    return record, RecordedOutputs(record, values)


def test_without_an_entry_it_reads_through_the_output_store_and_stages_nothing(tmp_path: Path) -> None:
    services = _services(tmp_path)
    check = AccuracyCheck(services.context())
    (result,) = check.run(CheckTarget(key(), {}, None, environment(), CheckPolicy()))
    assert result.status is Status.MISSING
    assert services.outputs.asked == ["recorded test_model.py"]
    assert services.outputs.staged == []
    assert services.published.records[0]["kind"] == "accuracy"


def test_an_update_keeps_what_the_output_store_gives_and_stages_the_outputs(tmp_path: Path) -> None:
    services = _services(tmp_path)
    policy = CheckPolicy(update=True)
    (result,) = AccuracyCheck(services.context(policy=policy)).run(
        CheckTarget(key(), {}, None, environment(), policy)
    )
    assert result.status is Status.NEW
    assert services.outputs.asked == ["previous"]
    assert services.outputs.staged == ["test_model[cpu-all]"]


def test_a_failure_against_the_stored_outputs_is_located_through_the_service(tmp_path: Path) -> None:
    services = _services(tmp_path)
    record, services.outputs.kept = _recorded({"y": OUT * np.float32(3.0)})
    recorded = replace(entry(), accuracy=record)
    (result,) = AccuracyCheck(services.context()).run(
        CheckTarget(key(), {}, recorded, environment(), CheckPolicy())
    )
    assert result.failed
    (asked,) = services.localising.asked
    assert asked.startswith("located "), "no second model here: it says why it cannot be located"
    assert services.outputs.staged == []
