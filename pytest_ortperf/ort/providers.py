"""Execution provider names: short ids, canonical ORT names and fallback chains.

Pure data and parsing; nothing here imports onnxruntime, so option parsing
works (and fails clearly) before any session exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from pytest_ortperf.errors import UsageError

T = TypeVar("T")

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
TENSORRT = "TensorrtExecutionProvider"
_SUFFIX = "ExecutionProvider"


@dataclass(frozen=True)
class ProviderSpec:
    """One execution provider as the variant matrix sees it.

    ``chain`` is what the session is created with, in precedence order: the
    provider itself, then the providers ORT may place unsupported nodes on.
    """

    short: str
    name: str
    aliases: tuple[str, ...] = ()
    chain: tuple[str, ...] = ()

    @property
    def providers(self) -> tuple[str, ...]:
        return self.chain or ((self.name,) if self.name == CPU else (self.name, CPU))

    @property
    def is_cpu(self) -> bool:
        return self.name == CPU


KNOWN_PROVIDERS: tuple[ProviderSpec, ...] = (
    ProviderSpec("cpu", CPU),
    ProviderSpec("cuda", CUDA),
    # TensorRT hands the subgraphs it cannot build to CUDA, as ORT's docs advise.
    ProviderSpec("tensorrt", TENSORRT, ("trt",), (TENSORRT, CUDA, CPU)),
    ProviderSpec("trtrtx", "NvTensorRTRTXExecutionProvider", ("nv_tensorrt_rtx", "tensorrt_rtx")),
    ProviderSpec("openvino", "OpenVINOExecutionProvider", ("ov",)),
    ProviderSpec("dml", "DmlExecutionProvider", ("directml",)),
    ProviderSpec("coreml", "CoreMLExecutionProvider"),
    ProviderSpec("rocm", "ROCMExecutionProvider"),
    ProviderSpec("migraphx", "MIGraphXExecutionProvider"),
    ProviderSpec("qnn", "QNNExecutionProvider"),
    ProviderSpec("xnnpack", "XnnpackExecutionProvider"),
    ProviderSpec("webgpu", "WebGpuExecutionProvider"),
    ProviderSpec("webnn", "WebNNExecutionProvider"),
    ProviderSpec("dnnl", "DnnlExecutionProvider", ("onednn",)),
    ProviderSpec("nnapi", "NnapiExecutionProvider"),
    ProviderSpec("acl", "ACLExecutionProvider"),
    ProviderSpec("armnn", "ArmNNExecutionProvider"),
    ProviderSpec("vitisai", "VitisAIExecutionProvider"),
    ProviderSpec("cann", "CANNExecutionProvider"),
    ProviderSpec("rknpu", "RknpuExecutionProvider"),
    ProviderSpec("vsinpu", "VSINPUExecutionProvider"),
    ProviderSpec("azure", "AzureExecutionProvider"),
    ProviderSpec("js", "JsExecutionProvider"),
)

_BY_NAME: dict[str, ProviderSpec] = {}
for _spec in KNOWN_PROVIDERS:
    for _key in (_spec.short, _spec.name, *_spec.aliases):
        _BY_NAME[_key.lower()] = _spec


def valid_provider_names() -> str:
    """The accepted names, for error messages and ``--help``."""
    return ", ".join("/".join((spec.short, *spec.aliases)) for spec in KNOWN_PROVIDERS)


def resolve_provider(name: str, *, source: str) -> ProviderSpec:
    """Map a short id, alias or canonical EP name (any case) to its spec.

    An unknown name that looks like an EP class name (``FooExecutionProvider``)
    is accepted as is, so plugin EPs newer than this table still work.
    """
    key = name.strip()
    spec = _BY_NAME.get(key.lower())
    if spec is not None:
        return spec
    if key.endswith(_SUFFIX) and len(key) > len(_SUFFIX) and key.isidentifier():
        return ProviderSpec(key[: -len(_SUFFIX)].lower(), key)
    raise UsageError(
        f"{source}: unknown execution provider {name!r}. "
        f"Valid names: {valid_provider_names()} (or any canonical '...ExecutionProvider' name)."
    )


def split_names(values: str | Iterable[str]) -> list[str]:
    """``"a, b"`` or ``["a,b", "c"]`` to ``["a", "b", "c"]`` (blank parts dropped)."""
    items = [values] if isinstance(values, str) else list(values)
    return [part.strip() for item in items for part in item.split(",") if part.strip()]


def parse_names(
    values: str | Iterable[str], parse: Callable[..., T], *, source: str, none_given: str
) -> tuple[T, ...]:
    """``"a,b"`` (or a list of such strings), each name read by ``parse(name, source=source)``; order
    kept, duplicates dropped. No name at all: a usage error saying ``none_given``."""
    names = split_names(values)
    if not names:
        raise UsageError(f"{source}: {none_given}")
    found: list[T] = []
    for name in names:
        item = parse(name, source=source)
        if item not in found:
            found.append(item)
    return tuple(found)


def parse_providers(values: str | Iterable[str], *, source: str) -> tuple[ProviderSpec, ...]:
    """Parse ``"cpu,cuda"`` (or a list of such strings); order kept, duplicates dropped."""
    none_given = f"no execution provider given. Valid names: {valid_provider_names()}."
    return parse_names(values, resolve_provider, source=source, none_given=none_given)
