"""Optimization levels and the provider x level variant matrix."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_ortperf.errors import UsageError
from pytest_ortperf.ort.providers import ProviderSpec, split_names


class OptLevel(str, enum.Enum):
    """Graph optimization levels by their user-facing names.

    ``layout`` (ORT_ENABLE_LAYOUT, between extended and all) exists only in
    newer ORT releases; it is accepted here and rejected when a session is
    built on an ORT that lacks it.
    """

    DISABLED = "disabled"
    BASIC = "basic"
    EXTENDED = "extended"
    LAYOUT = "layout"
    ALL = "all"

    @property
    def ort_name(self) -> str:
        """The ``onnxruntime.GraphOptimizationLevel`` member name."""
        return _ORT_NAMES[self]


_ORT_NAMES = {
    OptLevel.DISABLED: "ORT_DISABLE_ALL",
    OptLevel.BASIC: "ORT_ENABLE_BASIC",
    OptLevel.EXTENDED: "ORT_ENABLE_EXTENDED",
    OptLevel.LAYOUT: "ORT_ENABLE_LAYOUT",
    OptLevel.ALL: "ORT_ENABLE_ALL",
}
_ALIASES = {member.ort_name.lower(): member for member in OptLevel} | {
    "none": OptLevel.DISABLED,
    "disable": OptLevel.DISABLED,
    "disable_all": OptLevel.DISABLED,
    "enable_basic": OptLevel.BASIC,
    "enable_extended": OptLevel.EXTENDED,
    "enable_layout": OptLevel.LAYOUT,
    "enable_all": OptLevel.ALL,
    "0": OptLevel.DISABLED,
    "1": OptLevel.BASIC,
    "2": OptLevel.EXTENDED,
    "3": OptLevel.LAYOUT,
    "99": OptLevel.ALL,
}


def _valid_levels() -> str:
    return ", ".join(member.value for member in OptLevel)


def parse_opt_level(name: str, *, source: str) -> OptLevel:
    key = name.strip().lower()
    try:
        return OptLevel(key)
    except ValueError:
        pass
    if key in _ALIASES:
        return _ALIASES[key]
    raise UsageError(f"{source}: unknown graph optimization level {name!r}. Valid levels: {_valid_levels()}.")


def parse_opt_levels(values: str | Iterable[str], *, source: str) -> tuple[OptLevel, ...]:
    """Parse ``"disabled,all"`` (or a list of such strings); order kept, duplicates dropped."""
    names = split_names(values)
    if not names:
        raise UsageError(f"{source}: no optimization level given. Valid levels: {_valid_levels()}.")
    levels: list[OptLevel] = []
    for name in names:
        level = parse_opt_level(name, source=source)
        if level not in levels:
            levels.append(level)
    return tuple(levels)


@dataclass(frozen=True)
class Variant:
    """One cell of the matrix: an execution provider at an optimization level."""

    provider_spec: ProviderSpec
    opt_level: OptLevel

    @property
    def provider(self) -> str:
        """Canonical EP name, e.g. ``CUDAExecutionProvider``."""
        return self.provider_spec.name

    @property
    def id(self) -> str:
        """Test id suffix and baseline key, e.g. ``cuda-extended``."""
        return f"{self.provider_spec.short}-{self.opt_level.value}"

    def __str__(self) -> str:
        return self.id


def variant_matrix(providers: Iterable[ProviderSpec], levels: Iterable[OptLevel]) -> tuple[Variant, ...]:
    """Every provider at every level, provider-major (keeps one provider's runs together)."""
    level_list = tuple(levels)
    return tuple(Variant(spec, level) for spec in providers for level in level_list)
