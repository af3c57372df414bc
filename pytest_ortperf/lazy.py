"""A callable named by its module and attribute, imported when it is first called.

A check kind's declaration (``gate/registry.py: CheckKind``) is read when pytest reads its options,
in every run of an environment that has the plugin, so it must import little; its check, record and
rows can load numpy, onnx and the rest of the package. ``later("pkg.module", "name")`` stands for
``pkg.module.name`` in such a declaration (``name`` may be dotted: ``"MemoryFigures.from_dict"``): the
module is imported on the first call, and a name that does not resolve is an error naming the
reference.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from pytest_ortperf.errors import UsageError


@dataclass(frozen=True)
class Later:
    """``module.name``, resolved on each call (the import is cached by Python)."""

    module: str
    name: str

    def resolve(self) -> Any:
        try:
            found: Any = importlib.import_module(self.module)
            for name in self.name.split("."):
                found = getattr(found, name)
            return found
        except (ImportError, AttributeError) as exc:
            raise UsageError(f"{self} could not be loaded: {exc}") from exc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __str__(self) -> str:
        return f"{self.module}:{self.name}"


def later(module: str, name: str) -> Any:
    """``module.name``, imported when first called (typed ``Any``: it fits any callable field)."""
    return Later(module, name)
