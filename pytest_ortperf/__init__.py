"""pytest-ortperf: a latency and accuracy regression gate for ONNX Runtime models.

The package is split into plain modules that never import pytest and a thin
pytest layer (``plugin``, ``hookspec``, ``benchmark_bridge``; ``config`` turns
pytest's options into frozen values). The console script lives in ``cli``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
