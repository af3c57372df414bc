"""pytest-ortperf: a latency and accuracy regression gate for ONNX Runtime models.

The package is split into plain modules that never import pytest (providers,
variants, settings, models, inputs, probe, sessions, runtime) and one thin
pytest layer (``plugin``, ``hookspec``, ``config``). The console script lives
in ``cli``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
