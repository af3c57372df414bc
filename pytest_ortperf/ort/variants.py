"""Optimization levels, precisions, and the provider x level x precision variant matrix."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_ortperf.errors import UsageError
from pytest_ortperf.ort.providers import ProviderSpec, parse_names, resolve_provider
from pytest_ortperf.values import turned_off


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
    none_given = f"no optimization level given. Valid levels: {_valid_levels()}."
    return parse_names(values, parse_opt_level, source=source, none_given=none_given)


class Precision(str, enum.Enum):
    """The numeric precision of the model a variant runs: the model under test (``fp32``), or one
    built from it with onnxruntime's own tools (``ort/precision.py``)."""

    FP32 = "fp32"
    FP16 = "fp16"
    INT8_DYNAMIC = "int8-dynamic"
    INT8_STATIC = "int8-static"

    @property
    def quantized(self) -> bool:
        return self in (Precision.INT8_DYNAMIC, Precision.INT8_STATIC)


def _valid_precisions() -> str:
    return ", ".join(member.value for member in Precision)


def parse_precision(name: str, *, source: str) -> Precision:
    key = name.strip().lower().replace("_", "-")
    try:
        return Precision(key)
    except ValueError:
        raise UsageError(
            f"{source}: unknown precision {name!r}. Valid precisions: {_valid_precisions()}."
        ) from None


def parse_precisions(values: str | Iterable[str], *, source: str) -> tuple[Precision, ...]:
    """Parse ``"fp32,int8-dynamic"`` (or a list of such strings); order kept, duplicates dropped."""
    none_given = f"no precision given. Valid precisions: {_valid_precisions()}."
    return parse_names(values, parse_precision, source=source, none_given=none_given)


def split_precision(text: str) -> tuple[str, Precision]:
    """``cpu-all-int8-dynamic`` to (``cpu-all``, INT8_DYNAMIC); a text without a precision suffix is fp32."""
    stripped = text.strip()
    for precision in sorted(Precision, key=lambda p: -len(p.value)):
        suffix = f"-{precision.value}"
        if stripped.lower().endswith(suffix) and len(stripped) > len(suffix):
            return stripped[: -len(suffix)], precision
    return stripped, Precision.FP32


@dataclass(frozen=True)
class Variant:
    """One cell of the matrix: an execution provider at an optimization level, running the model at
    a precision (fp32: the model under test itself)."""

    provider_spec: ProviderSpec
    opt_level: OptLevel
    precision: Precision = Precision.FP32

    @property
    def provider(self) -> str:
        """Canonical EP name, e.g. ``CUDAExecutionProvider``."""
        return self.provider_spec.name

    @property
    def id(self) -> str:
        """Test id suffix and baseline key, e.g. ``cuda-extended`` or ``cpu-all-int8-dynamic``."""
        base = f"{self.provider_spec.short}-{self.opt_level.value}"
        return base if self.precision is Precision.FP32 else f"{base}-{self.precision.value}"

    @property
    def fp32(self) -> Variant:
        """This provider and level on the model under test itself."""
        return Variant(self.provider_spec, self.opt_level)

    def __str__(self) -> str:
        return self.id


def variant_matrix(
    providers: Iterable[ProviderSpec],
    levels: Iterable[OptLevel],
    precisions: Iterable[Precision] = (Precision.FP32,),
) -> tuple[Variant, ...]:
    """Every provider at every level at every precision, provider-major, then level (keeps one
    provider's runs together, and a level's precisions beside each other)."""
    level_list, precision_list = tuple(levels), tuple(precisions)
    return tuple(
        Variant(spec, level, precision)
        for spec in providers
        for level in level_list
        for precision in precision_list
    )


def parse_variant(text: str, *, source: str, precision: bool = True) -> Variant | None:
    """``cpu-disabled`` (or, with ``precision``, ``cpu-all-int8-dynamic``) to a variant; ``none`` turns
    the reference variant off."""
    if turned_off(text):
        return None
    base, found = split_precision(text) if precision else (text.strip(), Precision.FP32)
    provider, sep, level = base.rpartition("-")
    if not sep:
        expected = (
            "PROVIDER-LEVEL[-PRECISION] such as cpu-disabled or cpu-all-int8-dynamic"
            if precision
            else "PROVIDER-LEVEL such as cpu-disabled"
        )
        raise UsageError(f"{source}: expected {expected}, or none; got {text!r}.")
    return Variant(resolve_provider(provider, source=source), parse_opt_level(level, source=source), found)


def variant(variant_id: str) -> Variant:
    """The variant an id names (``cpu-all``, ``cpu-all-int8-dynamic``), for a test that chooses its own:
    ``@pytest.mark.parametrize("ort_variant", [variant("cpu-all-int8-static")], indirect=True)``."""
    found = parse_variant(variant_id, source=f"variant({variant_id!r})") if variant_id.strip() else None
    if found is None:
        raise UsageError(
            f"variant({variant_id!r}): expected a variant id such as cpu-all or cpu-all-int8-dynamic."
        )
    return found
