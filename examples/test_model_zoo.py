"""A PyTorch-exported model in ONNX model-zoo layout: ort_inputs reads test_data_set_0."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

MODEL_DIR = Path(__file__).parent / "models" / "torch_conv2d"


@pytest.mark.ort_model(MODEL_DIR)
def test_matches_pytorch_reference(ort_session, ort_inputs):
    assert ort_inputs.source == "test_data_set_0"
    expected = numpy_helper.to_array(
        onnx.load_tensor(str(MODEL_DIR / "test_data_set_0" / "output_0.pb"))
    )
    (actual,) = ort_session.run(None, ort_inputs)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.ort_model(MODEL_DIR)
def test_accuracy_against_shipped_outputs(ort_perf):
    """check_accuracy also compares with test_data_set_0/output_0.pb (and the reference variant)."""
    ort_perf.check_accuracy()
