"""What an xdist worker hands the controller: its staged baseline entries, taken over as staged."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from pytest_ortperf.plugin.processes import export, merge
from pytest_ortperf.store.baselines import BaselineStore
from pytest_ortperf.store.unused import Selection
from tests.unit.store.test_baselines import make_entry, make_figures, record

FILE = "tests/test_models.py"


class _Results:
    def handover(self, **_: Any) -> dict[str, Any]:
        return {}

    def take_over(self, data: dict[str, Any]) -> None:
        pass


def fake_run(store: BaselineStore) -> Any:
    """What export() and merge() use of a run, around a real store."""
    ending = SimpleNamespace(
        finish_error="",
        machines_with_missing_baselines=list,
        traces=dict,
        profile_records=list,
        handed_runtime_notes=[],
    )
    ending.add_errors = lambda *messages: setattr(
        ending, "finish_error", "; ".join(filter(None, [ending.finish_error, *messages]))
    )
    return SimpleNamespace(
        store=store,
        selection=Selection(),
        results=_Results(),
        profiles=SimpleNamespace(reports=[]),
        runtime_notes=list,
        ending=ending,
    )


def test_staged_entries_travel_to_the_controller_and_merge_into_its_file(tmp_path: Path) -> None:
    root = tmp_path / "baselines"
    seed = BaselineStore(root)
    seed.stage(FILE, "test_a[cpu-all]", make_entry(10.0, machine="laptop"))
    seed.stage(FILE, "test_old[cpu-all]", make_entry(3.0))
    seed.write()

    worker = BaselineStore(root)
    worker.stage(FILE, "test_a[cpu-all]", make_entry(12.0, machine="ci", accuracy=record()))
    worker.stage(FILE, "test_old[cpu-all]", None)
    worker.stage_file(record().file, b"arrays")
    controller = fake_run(BaselineStore(root))
    merge(controller, export(fake_run(worker)))
    assert controller.ending.finish_error == ""
    controller.store.write()

    written = BaselineStore(root).entries(FILE)
    assert list(written) == ["test_a[cpu-all]"]
    assert written["test_a[cpu-all]"].figures == {"ci": make_figures(12.0), "laptop": make_figures(10.0)}
    assert written["test_a[cpu-all]"].accuracy == record()
    assert (root / record().file).read_bytes() == b"arrays"


def test_an_entry_that_cannot_be_rebuilt_is_a_run_error_naming_the_test(tmp_path: Path) -> None:
    worker = BaselineStore(tmp_path)
    worker.stage(FILE, "test_a[cpu-all]", make_entry())
    payload = json.loads(export(fake_run(worker)))
    payload["staged"][0][2]["recipe"] = None
    controller = fake_run(BaselineStore(tmp_path))
    merge(controller, json.dumps(payload))
    assert controller.ending.finish_error == (
        f"{tmp_path / FILE}.json: the entry recorded for test_a[cpu-all] cannot be stored (recipe must be an object)"
    )
    assert list(controller.store.staged()) == []


def test_what_fetching_did_in_a_worker_reaches_the_controllers_summary(tmp_path: Path) -> None:
    worker = fake_run(BaselineStore(tmp_path))
    worker.runtime_notes = lambda: [
        "fetched onnxruntime 1.31.1 (the recorded runtime) into .ortperf/envs/ab in 9.0 s"
    ]
    controller = fake_run(BaselineStore(tmp_path))
    merge(controller, export(worker))
    merge(controller, export(fake_run(BaselineStore(tmp_path))))  # a worker that fetched nothing
    assert controller.ending.handed_runtime_notes == [
        "fetched onnxruntime 1.31.1 (the recorded runtime) into .ortperf/envs/ab in 9.0 s"
    ]
