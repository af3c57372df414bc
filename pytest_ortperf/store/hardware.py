"""The hardware identity of a machine: what decides which kernels ONNX Runtime runs.

Two machines that report the same CPU model name can run different kernels:
ORT dispatches on instruction-set features (AVX2, AVX-512, VNNI, BF16, AMX on
x86; dot-product, i8mm, SVE, BF16 on Arm), and MatMul and Conv speed up
differently across CPU generations. Stored figures are compared only within one
identity. On Linux it is read from ``/proc/cpuinfo``; GPUs from ``nvidia-smi``.

The identity has a readable slug (``zen3-avx2-2c``) and a short digest of all
of it, so two identities that share a slug (another stepping, another feature)
still differ.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# The features ORT's CPU kernels dispatch on, as /proc/cpuinfo names them.
X86_FEATURES = (
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)
ARM_FEATURES = ("asimd", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2", "sme")
_ARM_PARTS = {  # (implementer, part) -> core name, for the slug
    ("0x41", "0xd0c"): "neoverse-n1",
    ("0x41", "0xd40"): "neoverse-v1",
    ("0x41", "0xd49"): "neoverse-n2",
    ("0x41", "0xd4f"): "neoverse-v2",
    ("0x41", "0xd8e"): "neoverse-n3",
    ("0x41", "0xd84"): "neoverse-v3",
    ("0x41", "0xd08"): "cortex-a72",
    ("0x41", "0xd0b"): "cortex-a76",
    ("0xc0", "0xac3"): "ampere-one",
}
DIGEST_LENGTH = 6


@dataclass(frozen=True)
class Hardware:
    """What makes ORT run other kernels, or run them at another speed, on this machine."""

    arch: str  # x86_64, aarch64, ...
    vendor: str  # AuthenticAMD, GenuineIntel, or the Arm implementer (0x41)
    cpu: str  # family/model/stepping on x86, implementer/part/variant/revision on Arm
    generation: str  # zen3, neoverse-n1, ... or a readable fallback
    features: tuple[str, ...]  # the dispatch-relevant ones present, in a fixed order
    cores: int
    gpu: str = ""  # name, compute capability and driver of each NVIDIA GPU

    @property
    def tier(self) -> str:
        """The widest vector tier: amx, avx512, avx2, avx... (x86); sve, dotprod, neon (Arm)."""
        have = set(self.features)
        for tier, needs in (
            ("amx", "amx_tile"),
            ("avx512", "avx512f"),
            ("avx2", "avx2"),
            ("avx", "avx"),
            ("sve", "sve"),
            ("dotprod", "asimddp"),
            ("neon", "asimd"),
        ):
            if needs in have:
                return tier
        return "base"

    @property
    def digest(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_LENGTH]

    @property
    def slug(self) -> str:
        """Readable, with the digest: ``zen3-avx2-2c-1a2b3c``."""
        parts = [self.generation, self.tier, f"{self.cores}c"]
        if self.gpu:
            parts.append(_slug(self.gpu.split(",")[0]))
        return "-".join([*parts, self.digest])

    def describe(self) -> str:
        """Short, for messages: ``avx2/zen3, 2 cores``."""
        text = f"{self.tier}/{self.generation}, {self.cores} cores"
        return f"{text}, {self.gpu}" if self.gpu else text

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "features": list(self.features), "digest": self.digest}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Hardware:
        features = data.get("features")
        if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
            raise TypeError("hardware 'features' must be a list of names")
        values = {name: data.get(name) for name in ("arch", "vendor", "cpu", "generation", "gpu")}
        if not all(isinstance(v, str) for v in values.values()):
            raise TypeError("hardware arch, vendor, cpu, generation and gpu must be text")
        cores = data.get("cores")
        if not isinstance(cores, int) or isinstance(cores, bool) or cores < 1:
            raise TypeError("hardware 'cores' must be a whole number >= 1")
        return cls(features=tuple(features), cores=cores, **values)  # type: ignore[arg-type]


def parse_cpuinfo(text: str, *, arch: str, cores: int, gpu: str = "") -> Hardware:
    """The identity from the text of ``/proc/cpuinfo`` (the first processor's block)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor is enough: they are alike on the machines we run on
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip().lower(), value.strip())
    if arch in ("aarch64", "arm64") or "cpu implementer" in fields:
        present = set(fields.get("features", "").split())
        implementer, part = fields.get("cpu implementer", "?"), fields.get("cpu part", "?")
        cpu = f"{implementer}/{part}/{fields.get('cpu variant', '?')}/{fields.get('cpu revision', '?')}"
        generation = _ARM_PARTS.get((implementer.lower(), part.lower()), f"arm-{implementer}-{part}")
        return Hardware(
            arch=arch,
            vendor=implementer,
            cpu=cpu,
            generation=generation,
            features=tuple(f for f in ARM_FEATURES if f in present),
            cores=cores,
            gpu=gpu,
        )
    present = set(fields.get("flags", "").split())
    vendor = fields.get("vendor_id", "unknown")
    family, model, stepping = (fields.get(k, "?") for k in ("cpu family", "model", "stepping"))
    return Hardware(
        arch=arch,
        vendor=vendor,
        cpu=f"{family}/{model}/{stepping}",
        generation=_x86_generation(vendor, family, model),
        features=tuple(f for f in X86_FEATURES if f in present),
        cores=cores,
        gpu=gpu,
    )


def _x86_generation(vendor: str, family: str, model: str) -> str:
    """AMD Zen generations by family and model; others by family and model numbers."""
    try:
        fam, mod = int(family), int(model)
    except ValueError:
        return "x86"
    if vendor == "AuthenticAMD":
        if fam == 0x17:
            return "zen2" if mod >= 0x30 else "zen"
        if fam == 0x19:
            zen4 = 0x10 <= mod <= 0x1F or 0x60 <= mod <= 0x7F or 0xA0 <= mod <= 0xAF
            return "zen4" if zen4 else "zen3"
        if fam == 0x1A:
            return "zen5"
        return f"amd-f{fam}m{mod}"
    if vendor == "GenuineIntel":
        return f"intel-f{fam}m{mod}"
    return f"x86-f{fam}m{mod}"


def nvidia_gpus(run: Any = subprocess.run) -> str:
    """``name, compute capability, driver`` of each NVIDIA GPU when ``nvidia-smi`` answers; else empty."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ""
    try:
        done = run(
            [exe, "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    rows = [
        [part.strip() for part in line.split(",")] for line in str(done.stdout).splitlines() if line.strip()
    ]
    return "; ".join(f"{r[0]}, sm {r[1]}, driver {r[2]}" for r in rows if len(r) >= 3)


def detect_hardware(
    cores: int, *, cpuinfo: Path = Path("/proc/cpuinfo"), arch: str | None = None, gpu: str | None = None
) -> Hardware:
    """This machine's identity; without ``/proc/cpuinfo`` (not Linux), what ``platform`` says."""
    machine_arch = (arch or platform.machine() or "unknown").lower()
    gpus = nvidia_gpus() if gpu is None else gpu
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        text = ""
    if not text.strip():
        name = _slug(platform.processor() or machine_arch) or "cpu"
        return Hardware(machine_arch, "unknown", name, name, (), cores, gpus)
    return parse_cpuinfo(text, arch=machine_arch, cores=cores, gpu=gpus)


def _slug(text: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))[:32].strip("-")
