"""Shared paths for the example suite."""

from __future__ import annotations

from pathlib import Path

import onnx

# Real CNN graphs that ship inside the onnx wheel (weights are built at load time).
ONNX_LIGHT_MODELS = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
