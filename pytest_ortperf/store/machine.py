"""Which machine this is: baselines are compared only within one machine identity.

The automatic identity is a readable slug of OS, architecture, CPU model,
core count and GPU, e.g. ``linux-x86_64-amd-epyc-2c``. CI runner classes whose
hardware varies slightly should name themselves (``--ortperf-machine`` or
``ORTPERF_MACHINE``).
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pytest_ortperf.errors import UsageError

MACHINE_ENV = "ORTPERF_MACHINE"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


@dataclass(frozen=True)
class Machine:
    name: str
    cpu: str
    cores: int
    arch: str
    system: str
    gpu: str = ""


def slug(text: str) -> str:
    words = re.sub(r"\(r\)|\(tm\)|\bcpu\b|\bprocessor\b|@.*$", " ", text.lower())
    return "-".join(re.findall(r"[a-z0-9]+", words))[:48].strip("-")


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown-cpu"


def usable_cores() -> int:
    getter = getattr(os, "sched_getaffinity", None)
    return len(getter(0)) if getter is not None else (os.cpu_count() or 1)


def gpu_names() -> str:
    """``name (driver x)`` of NVIDIA GPUs when ``nvidia-smi`` answers, else empty."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return ""
    try:
        done = subprocess.run(
            [exe, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    rows = [line.split(",") for line in done.stdout.splitlines() if line.strip()]
    return "; ".join(f"{r[0].strip()} (driver {r[1].strip()})" for r in rows if len(r) >= 2)


def validate_name(name: str, *, source: str) -> str:
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"{source}: machine name {name!r} must be 1-80 characters of letters, digits, '.', '_' "
            "or '-', starting with a letter or digit."
        )
    return name


def detect_machine(override: str | None = None, *, source: str = "--ortperf-machine") -> Machine:
    """This machine, named by ``override``, else ``$ORTPERF_MACHINE``, else its hardware."""
    cpu, cores, gpu = cpu_model(), usable_cores(), gpu_names()
    arch, system = platform.machine().lower() or "unknown", platform.system().lower() or "unknown"
    if override:
        name = validate_name(override, source=source)
    elif os.environ.get(MACHINE_ENV):
        name = validate_name(os.environ[MACHINE_ENV], source=f"${MACHINE_ENV}")
    else:
        parts = [system, arch, slug(cpu) or "cpu", f"{cores}c"]
        if gpu:
            parts.append(slug(gpu.split(" (driver")[0]))
        name = "-".join(parts)[:80].rstrip("-")
    return Machine(name=name, cpu=cpu, cores=cores, arch=arch, system=system, gpu=gpu)
