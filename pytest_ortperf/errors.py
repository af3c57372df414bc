"""Errors a user can act on. Each message names the file, option or marker at fault."""

from __future__ import annotations


class OrtperfError(Exception):
    """Base class: a problem in the user's setup, reported without a traceback."""


class UsageError(OrtperfError):
    """A bad option, ini value or marker argument."""


class ModelError(OrtperfError):
    """A model that is missing, unreadable or not ONNX."""


class InputsError(OrtperfError):
    """Feeds that cannot be loaded or generated for a model."""


class OnnxRuntimeMissing(OrtperfError):
    """Neither onnxruntime wheel is installed."""


class SessionBuildError(OrtperfError):
    """ONNX Runtime refused to build a session for a model and variant."""


class ProviderUnavailable(OrtperfError):
    """A requested execution provider cannot really run on this machine."""

    def __init__(self, provider: str, reason: str) -> None:
        super().__init__(f"{provider} is not usable here: {reason}")
        self.provider = provider
        self.reason = reason


class BaselineError(OrtperfError):
    """A baseline file that cannot be used: it names the file and what is wrong."""
