"""The run's own services where they are cheap to test without a session: the settings checks read,
the reference builder's plans that need no git and no session, the model cache it keeps, and the
measurer's activity and timing lock."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pytest_ortperf.checks.paths import rebuild_plan
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.gate.measurer import Measurer
from pytest_ortperf.gate.model_builds import ModelBuilds
from pytest_ortperf.gate.reference_builder import ReferenceBuilder
from pytest_ortperf.gate.run import OrtperfRun
from pytest_ortperf.gate.run_config import OrtperfConfig
from pytest_ortperf.gate.services import CheckSettings
from pytest_ortperf.gate.session_factory import SessionFactory
from pytest_ortperf.latency.activity import Activity
from pytest_ortperf.latency.timing_lock import TimingLock
from pytest_ortperf.ort.inputs import InputOptions
from pytest_ortperf.ort.models import ModelSource
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.workers import WorkerPool
from pytest_ortperf.store.model_cache import ModelCache
from tests.unit.gate.standins import CPU_ALL, RECIPE, built_session, environment, model


def _config(tmp_path: Path, **values: Any) -> OrtperfConfig:
    return OrtperfConfig(
        variants=(CPU_ALL,),
        settings=SessionSettings(),
        inputs=InputOptions(),
        rootdir=tmp_path,
        baseline_dir=tmp_path / "baselines",
        policy=CheckPolicy(),
        **values,
    )


def _builder(
    tmp_path: Path, python: tuple[str, str] = ("", "no such runtime here"), **values: Any
) -> ReferenceBuilder:
    config = _config(tmp_path, **values)
    sessions = SessionFactory(machine=lambda: None, run_timeout_s=config.run_timeout_s)  # type: ignore[arg-type,return-value]
    builds = ModelBuilds(tmp_path, sessions)
    return ReferenceBuilder(
        config, sessions, builds, runtime_python=lambda flavour, version: python, workers=_no_workers
    )


def _no_workers() -> WorkerPool:
    raise AssertionError("no measuring workers in this test")


def test_checks_read_only_the_settings_they_need_from_the_configuration(tmp_path: Path) -> None:
    config = _config(tmp_path, timing=False, canary=False, ab_outputs_fail=False, run_timeout_s=7.0,
                     checks=("graph",), kind_options={"memory": {"limit": 1 << 30}})  # fmt: skip
    assert CheckSettings.of(config) == CheckSettings(
        timing=False,
        canary=False,
        ab_outputs_fail=False,
        run_timeout_s=7.0,
        checks=("graph",),
        kind_options={"memory": {"limit": 1 << 30}},
    )
    assert OrtperfRun(config).settings == CheckSettings.of(config)


def test_changed_settings_rebuild_the_current_model_under_the_recorded_ones(tmp_path: Path) -> None:
    built = built_session(model("a"))
    recorded = {**RECIPE, "settings": {**RECIPE["settings"], "intra_op_threads": 2}}
    plan = rebuild_plan(recorded, environment())
    rebuilt, why = _builder(tmp_path).rebuild(built, plan)
    assert why == ""
    assert rebuilt is not None
    assert rebuilt.model is built.model, "the same bytes: nothing read from git"
    assert rebuilt.settings.intra_op_threads == 2
    assert rebuilt.label.startswith("the recorded settings (")
    assert not rebuilt.python


def test_a_recorded_runtime_that_is_nowhere_to_be_had_is_no_reference_and_says_why(tmp_path: Path) -> None:
    plan = rebuild_plan(RECIPE, environment(ort_version="1.32.0"))
    assert plan.runtime == ("onnxruntime-gpu", "1.31.1")
    rebuilt, why = _builder(tmp_path, ("", "no environment has it")).rebuild(built_session(model("a")), plan)
    assert rebuilt is None
    assert (
        why == "onnxruntime changed (onnxruntime-gpu 1.31.1 -> onnxruntime-gpu 1.32.0): no environment has it"
    )


def test_a_recorded_runtime_found_rebuilds_in_its_interpreter(tmp_path: Path) -> None:
    plan = rebuild_plan(RECIPE, environment(ort_version="1.32.0"))
    rebuilt, _ = _builder(tmp_path, ("/envs/ort-1.31.1/bin/python", "ortperf env")).rebuild(
        built_session(model("a")), plan
    )
    assert rebuilt is not None
    assert rebuilt.python == "/envs/ort-1.31.1/bin/python"
    assert rebuilt.label == "the recorded runtime (ortperf env)"


def test_a_measured_model_is_kept_in_the_model_cache_once_and_one_with_external_data_never(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    builder = _builder(tmp_path, model_cache=cache)
    data = b"the model's bytes"
    kept = ModelSource("model.onnx", hashlib.sha256(data).hexdigest(), data=data)
    builder.keep_model(kept)
    assert ModelCache(cache).get(kept.sha256) == data
    ModelCache(cache).path_for(kept.sha256).unlink()
    builder.keep_model(kept)
    assert ModelCache(cache).get(kept.sha256) is None, "kept once per run"
    graph = b"only the graph"
    external = ModelSource("big.onnx", hashlib.sha256(graph).hexdigest(), data=graph, data_sha256="9" * 64)
    builder.keep_model(external)
    assert ModelCache(cache).get(external.sha256) is None


def test_the_measurer_shows_activities_on_the_progress_line_and_holds_the_timing_lock(tmp_path: Path) -> None:
    heard: list[str] = []

    class Listener:
        def __getattr__(self, name: str) -> Any:
            return lambda *args, **kwargs: heard.append(name)

    measurer = Measurer(TimingLock(tmp_path / "timing.lock"), run_timeout_s=1.0)
    measurer.progress = Listener()
    activity = measurer.activity("test_model[cpu-all]")
    assert isinstance(activity, Activity)
    with activity, measurer.held(activity):
        pass
    assert heard, "the progress line heard of the check"
    assert activity.lock_waits() is not None


def test_the_run_end_fails_the_run_only_on_a_run_error_and_lists_errors_in_order(tmp_path: Path) -> None:
    run = OrtperfRun(_config(tmp_path))
    assert run.ending.end([]) is False, "nothing ran, nothing wrong"
    run.ending.add_errors("a worker's error", "")
    run.ending.add_errors("cannot write a report")
    assert run.ending.finish_error == "a worker's error; cannot write a report"
    assert run.ending.end([]) is True
    assert run.sessions.summary_lines() == [], "no session was built: nothing imported onnxruntime for it"


def test_a_tensor_within_every_element_limit_clears_without_the_whole_tensor_metrics() -> None:
    import numpy as np

    from pytest_ortperf.accuracy.tolerances import Tolerance
    from pytest_ortperf.gate.localisation import within

    tolerance = Tolerance(atol=1e-3, rtol=1e-3, cosine=0.999)
    base = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    assert within(base + np.float32(1e-4), base, tolerance)  # NaN where NaN
    assert not within(base + np.float32(0.1), base, tolerance)
    assert not within(base[:2], base[:2].astype(np.float64), tolerance)  # another dtype: compared in full
    assert not within(np.array(["a"]), np.array(["a"]), tolerance)  # text: compared in full
