"""Image classifiers from the onnx wheel, tested at every optimization level."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ONNX_LIGHT_MODELS


@pytest.mark.ort_model(ONNX_LIGHT_MODELS / "light_resnet50.onnx")
class TestResNet50:
    def test_classifies_one_image(self, ort_session, ort_inputs):
        (scores,) = ort_session.run(None, ort_inputs)
        assert scores.shape == (1, 1000)
        assert np.isfinite(scores).all()

    def test_latency(self, ort_perf):
        ort_perf.check_latency()

    def test_accuracy(self, ort_perf):
        ort_perf.check_accuracy()

    def test_graph(self, ort_perf):
        ort_perf.check_graph()  # what ORT will run at this level: its fusions, placement and digest

    def test_runs_entirely_on_the_requested_provider(self, ort_session_info, ort_variant):
        placement = ort_session_info.placement
        if placement is None:
            pytest.skip("this onnxruntime cannot report node placement (get_provider_graph_assignment_info)")
        assert placement.nodes_not_on(ort_variant.provider) == ()


@pytest.mark.ort_model(ONNX_LIGHT_MODELS / "light_squeezenet.onnx")
def test_squeezenet_outputs_probabilities(ort_session, ort_inputs):
    (probabilities,) = ort_session.run(None, ort_inputs)
    assert probabilities.shape == (1, 1000, 1, 1)
    np.testing.assert_allclose(probabilities.sum(), 1.0, rtol=1e-4)


@pytest.mark.ort_model(ONNX_LIGHT_MODELS / "light_inception_v1.onnx")
def test_inception_v1_is_deterministic(ort_session, ort_inputs):
    first = ort_session.run(None, ort_inputs)
    second = ort_session.run(None, ort_inputs)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.ort_model(ONNX_LIGHT_MODELS / "light_squeezenet.onnx")
def test_squeezenet_latency_and_accuracy(ort_perf):
    ort_perf.check()


@pytest.mark.ort_profile
@pytest.mark.ort_model(ONNX_LIGHT_MODELS / "light_squeezenet.onnx")
def test_squeezenet_profiled(ort_session, ort_inputs):
    """Each run writes its own trace under .ortperf/profiles/; the report shows the top operators."""
    for _ in range(2):
        ort_session.run(None, ort_inputs)
