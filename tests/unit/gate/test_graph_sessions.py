"""One optimized graph serves both the graph's digest and a timed session (issue 37): the session that
wrote a variant's optimized graph is kept by the run's pool and handed out next, by ``get`` or
``fresh``, instead of building the same session again. Real onnxruntime sessions of small models."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pytest_ortperf.gate.session_factory import SessionFactory
from pytest_ortperf.ort.models import ModelResolver, ModelSource
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.sessions import SPARES
from pytest_ortperf.ort.variants import OptLevel, Variant
from pytest_ortperf.store.machine import detect_machine
from tests.models import mlp_model

VARIANT = Variant(resolve_provider("cpu", source="test"), OptLevel.ALL)
SETTINGS = SessionSettings()
FEEDS = {"x": np.ones((3, 8), dtype=np.float32)}


def _model(seed: int = 0) -> ModelSource:
    return ModelResolver(Path.cwd()).resolve(
        mlp_model(layers=2, width=8, seed=seed), test_dir=Path.cwd(), origin=f"test seed {seed}"
    )


def _factory() -> SessionFactory:
    machine = detect_machine()
    return SessionFactory(machine=lambda: machine, run_timeout_s=60.0)


def test_the_session_that_wrote_the_graph_is_the_next_fresh_session_not_another_build() -> None:
    factory = _factory()
    model = _model()
    built = factory.session(model, VARIANT, SETTINGS)
    figures, _ = factory.graph(model, VARIANT, SETTINGS)
    assert figures.digest
    pool = factory.pool
    assert (pool.builds, pool.adopted) == (2, 1), "the graph's session counts as a build of the run"
    fresh = factory.fresh(built)
    assert pool.builds == 2, "the graph's session was handed out: nothing built"
    assert fresh.session is not built.session
    assert (fresh.model, fresh.variant, fresh.settings) == (built.model, built.variant, built.settings)
    assert fresh.providers == built.providers
    assert fresh.placement == built.placement
    np.testing.assert_array_equal(fresh.session.run(None, FEEDS)[0], built.session.run(None, FEEDS)[0])
    again = factory.fresh(built)
    assert pool.builds == 3, "a spare is handed out once: the next fresh session is built"
    assert again.session is not fresh.session
    factory.graph(model, VARIANT, SETTINGS)
    assert pool.builds == 3, "the graph is built once per run, and its session once"


def test_a_reference_first_asked_for_its_graph_gets_that_session_from_the_pool() -> None:
    factory = _factory()
    reference = _model(seed=1)
    factory.graph(reference, VARIANT, SETTINGS)
    built = factory.session(reference, VARIANT, SETTINGS)
    assert factory.pool.builds == 1, "the reference's session is the one that wrote its graph"
    assert factory.session(reference, VARIANT, SETTINGS) is built
    assert factory.pool.reuses == 1
    (output,) = built.session.run(None, FEEDS)
    assert output.shape == (3, 8)
    assert factory.summary_lines()[0].startswith("sessions: 1 built in ")
    assert "(1 of them wrote an optimized graph)" in factory.summary_lines()[0]


def test_a_deterministic_fresh_session_is_always_built() -> None:
    factory = _factory()
    model = _model()
    built = factory.session(model, VARIANT, SETTINGS)
    factory.graph(model, VARIANT, SETTINGS)
    deterministic = factory.fresh(built, deterministic=True)
    assert factory.pool.builds == 3, "the graph's session is not deterministic: another is built"
    assert deterministic.session.get_session_options().use_deterministic_compute
    factory.fresh(built)
    assert factory.pool.builds == 3, "the spare was kept for a plain fresh session"


def test_only_the_latest_graph_sessions_are_kept() -> None:
    factory = _factory()
    models = [_model(seed=seed) for seed in range(SPARES + 1)]
    for model in models:
        factory.graph(model, VARIANT, SETTINGS)
    assert factory.pool.builds == SPARES + 1
    factory.session(models[0], VARIANT, SETTINGS)
    assert factory.pool.builds == SPARES + 2, "the oldest spare was dropped: its session is built"
    for model in models[1:]:
        factory.session(model, VARIANT, SETTINGS)
    assert factory.pool.builds == SPARES + 2, "the latest were kept"


GRAPH_OF_A_FRESH_PROCESS = """
import sys
from pathlib import Path
import onnx
from pytest_ortperf.gate.session_factory import SessionFactory
from pytest_ortperf.ort.models import ModelResolver
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.variants import OptLevel, Variant
from pytest_ortperf.store.machine import detect_machine

machine = detect_machine()
model = ModelResolver(Path.cwd()).resolve(Path(sys.argv[1]), test_dir=Path.cwd(), origin="test")
figures, _ = SessionFactory(machine=lambda: machine, run_timeout_s=60.0).graph(
    model, Variant(resolve_provider("cpu", source="test"), OptLevel.ALL), SessionSettings()
)
print(figures.digest, figures.ops.get("com.microsoft.nchwc:Conv", 0))
"""


def test_the_graph_digest_of_one_model_is_the_same_in_every_process(tmp_path: Path) -> None:
    """Issue 47: ORT writes the nodes of a YOLO-style detector's NCHWc graph at ``all`` in an order
    that varies from one process to the next (5 orders in 10 processes); the digest is of a
    structural order, so 10 processes give one digest."""
    import subprocess
    import sys

    import onnx

    from tests.models import yolo_style_model

    path = tmp_path / "yolo.onnx"
    onnx.save(yolo_style_model(), path)
    answers = {
        subprocess.run(
            [sys.executable, "-c", GRAPH_OF_A_FRESH_PROCESS, str(path)],
            capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[3],
        ).stdout.strip()
        for _ in range(10)
    }  # fmt: skip
    (answer,) = answers
    digest, nchwc = answer.split()
    assert len(digest) == 64
    assert int(nchwc) > 0 or "avx" not in Path("/proc/cpuinfo").read_text(), "no NCHWc transformation here"
