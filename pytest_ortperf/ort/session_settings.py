"""Session settings pinned for measurement, and their parsing from text.

Everything that changes latency and is not part of the variant lives in one
frozen :class:`SessionSettings`; it is part of the session cache key and is
what later gets stored beside a baseline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_ortperf.errors import UsageError
from pytest_ortperf.ort.providers import resolve_provider
from pytest_ortperf.values import on_off, option_text, safe_repr

ConfigItems = tuple[tuple[str, str], ...]

_EXECUTION_MODES = ("sequential", "parallel")


@dataclass(frozen=True)
class SessionSettings:
    """Pinned ORT session settings. Defaults favour steady latency on small shared machines.

    One intra-op and one inter-op thread with spinning off: on 2-core shared
    runners a second thread mostly measures the neighbours, and spinning burns
    a core between runs. ``benchmarks/README.md`` ("Session settings") has the
    measurements behind this.
    """

    intra_op_threads: int = 1
    inter_op_threads: int = 1
    execution_mode: str = "sequential"
    intra_op_spinning: bool = False
    inter_op_spinning: bool = False
    cpu_mem_arena: bool = True
    mem_pattern: bool = True
    denormal_as_zero: bool = False
    intra_op_thread_affinities: str = ""
    config_entries: ConfigItems = ()
    provider_options: tuple[tuple[str, ConfigItems], ...] = field(default=())

    def options_for(self, provider: str) -> dict[str, str]:
        """Provider options for one canonical EP name."""
        for name, items in self.provider_options:
            if name == provider:
                return dict(items)
        return {}

    def with_overrides(self, overrides: Mapping[str, Any], *, source: str) -> SessionSettings:
        """A copy with ``overrides`` applied; values may be text or native Python values.

        ``config_entries`` and ``provider_options`` merge key by key instead of
        replacing, so a per-test override adds to what the ini file set.
        """
        changes: dict[str, Any] = {}
        for key, value in overrides.items():
            if key == "config_entries":
                merged = dict(self.config_entries) | _config_items(value, source=source)
                changes[key] = tuple(sorted(merged.items()))
            elif key == "provider_options":
                changes[key] = _merge_provider_options(self.provider_options, value, source=source)
            else:
                changes[key] = _coerce(key, value, source=source)
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form, for headers, reports and baselines."""
        data = dataclasses.asdict(self)
        data["config_entries"] = dict(self.config_entries)
        data["provider_options"] = {name: dict(items) for name, items in self.provider_options}
        return data

    def describe(self) -> str:
        """One line for the report header: only what differs from the defaults, plus threads."""
        default = SessionSettings()
        parts = [f"intra_op_threads={self.intra_op_threads}", f"inter_op_threads={self.inter_op_threads}"]
        for f in dataclasses.fields(self):
            if f.name in ("intra_op_threads", "inter_op_threads"):
                continue
            value = getattr(self, f.name)
            if value != getattr(default, f.name):
                parts.append(f"{f.name}={value!r}")
        return ", ".join(parts)


_SCALAR_FIELDS = {
    f.name: f.type
    for f in dataclasses.fields(SessionSettings)
    if f.name not in ("config_entries", "provider_options")
}


def setting_names() -> str:
    return ", ".join([*_SCALAR_FIELDS, "config_entries", "provider_options"])


def _coerce(key: str, value: Any, *, source: str) -> Any:
    kind = _SCALAR_FIELDS.get(key)
    if kind is None:
        raise UsageError(f"{source}: unknown session setting {key!r}. Valid settings: {setting_names()}.")
    text = option_text(value, source=f"{source}: {key}").strip().lower()
    if kind == "bool":
        if isinstance(value, bool):
            return value
        switch = on_off(text)
        if switch is not None:
            return switch
        raise UsageError(
            f"{source}: {key}={safe_repr(value)} is not a boolean (use 1/0, true/false, on/off)."
        )
    if kind == "int":
        if isinstance(value, bool) or not (
            (isinstance(value, int) and 0 <= value < 2**31) or _is_whole(text)
        ):
            raise UsageError(
                f"{source}: {key}={safe_repr(value)} is not a whole number >= 0 (0 lets ORT choose)."
            )
        return int(value)
    if key == "execution_mode" and text not in _EXECUTION_MODES:
        raise UsageError(
            f"{source}: execution_mode={safe_repr(value)}; use one of {', '.join(_EXECUTION_MODES)}."
        )
    if key == "execution_mode":
        return text
    return _config_text(option_text(value, source=source).strip(), source, key)


def _is_whole(text: str) -> bool:
    """ASCII digits only: ``str.isdigit`` also accepts characters such as '²' that int() refuses."""
    return text.isascii() and text.isdigit() and len(text) <= 9  # ORT takes int32 thread counts


def _config_items(value: Any, *, source: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise UsageError(f"{source}: config_entries must be a mapping of ORT config keys to values.")
    items: dict[str, str] = {}
    for k, v in value.items():
        key = _config_text(k, source, "key")
        items[key] = _config_text(v, source, f"value of {safe_repr(key)}")
    return items


def _config_text(value: Any, source: str, what: str) -> str:
    """ORT takes config keys of 1..1024 characters and UTF-8 text; refuse others here, clearly.

    User values reach here as any Python value; ``option_text`` turns the ones ``str()`` refuses
    (an int of more than 4300 digits) into a usage error naming ``source``.
    """
    text = option_text(value, source=f"{source}: config {what}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{source}: config {what} {safe_repr(text)} is not valid UTF-8 text.") from None
    if what == "key" and not 0 < len(text) <= 1024:
        raise UsageError(f"{source}: a config key must have 1 to 1024 characters, got {len(text)}.")
    return text


def _merge_provider_options(
    current: tuple[tuple[str, ConfigItems], ...], value: Any, *, source: str
) -> tuple[tuple[str, ConfigItems], ...]:
    if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) for v in value.values()):
        raise UsageError(
            f"{source}: provider_options must map a provider to its options, "
            "e.g. {'cuda': {'cudnn_conv_algo_search': 'DEFAULT'}}."
        )
    merged = {name: dict(items) for name, items in current}
    for provider, options in value.items():
        name = resolve_provider(
            option_text(provider, source=f"{source}: provider_options"), source=source
        ).name
        where = f"{source}: provider_options[{safe_repr(provider)}]"
        merged.setdefault(name, {}).update(
            {option_text(k, source=where): option_text(v, source=where) for k, v in options.items()}
        )
    return tuple(sorted((name, tuple(sorted(opts.items()))) for name, opts in merged.items()))


def parse_assignments(lines: Iterable[str], *, source: str) -> dict[str, Any]:
    """Parse ``key=value`` lines (ini lines or repeated options) into override values.

    ``config.KEY=VALUE`` sets an ORT session config entry and
    ``PROVIDER:KEY=VALUE`` a provider option, e.g. ``cuda:cudnn_conv_algo_search=DEFAULT``.
    """
    overrides: dict[str, Any] = {}
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise UsageError(f"{source}: expected KEY=VALUE, got {raw!r}.")
        if key.startswith("config."):
            overrides.setdefault("config_entries", {})[key[len("config.") :]] = value
        elif ":" in key:
            provider, _, option = key.partition(":")
            name = resolve_provider(provider, source=source).name
            overrides.setdefault("provider_options", {}).setdefault(name, {})[option.strip()] = value
        else:
            _coerce(key, value, source=source)  # fail on the offending line, not later
            overrides[key] = value
    return overrides
