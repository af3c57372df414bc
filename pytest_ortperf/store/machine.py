"""Which machine this is: baselines are keyed by machine, and stored figures are compared only
within one hardware identity (:mod:`pytest_ortperf.store.hardware`).

The automatic name is OS, architecture and the hardware slug, e.g.
``linux-x86_64-zen3-avx2-2c-1a2b3c``: two CPU generations that report the same
model name get two names. A CI runner class names itself (``--ortperf-machine``
or ``ORTPERF_MACHINE``); its entries are keyed ``<class>@<hardware slug>``, so one
class holds entries for every hardware identity that serves it, and a run
compares only with those of its own.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from pathlib import Path

from pytest_ortperf.errors import UsageError
from pytest_ortperf.store.hardware import DIGEST_LENGTH, Hardware, detect_hardware

MACHINE_ENV = "ORTPERF_MACHINE"
CLASS_SEPARATOR = "@"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


@dataclass(frozen=True)
class Machine:
    name: str
    cpu: str
    cores: int
    arch: str
    system: str
    hardware: Hardware
    gpu: str = ""
    named: bool = False  # named by --ortperf-machine / $ORTPERF_MACHINE: a runner class

    @property
    def key(self) -> str:
        """What baselines are keyed by: the automatic name, which already tells hardware apart, or
        ``<class>@<hardware slug>``, so one runner class holds entries for each hardware it runs on."""
        return f"{self.name}{CLASS_SEPARATOR}{self.hardware.slug}" if self.named else self.name


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


def validate_name(name: str, *, source: str) -> str:
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"{source}: machine name {name!r} must be 1-80 characters of letters, digits, '.', '_' "
            "or '-', starting with a letter or digit."
        )
    return name


def detect_machine(override: str | None = None, *, source: str = "--ortperf-machine") -> Machine:
    """This machine, named by ``override``, else ``$ORTPERF_MACHINE``, else its hardware."""
    cpu, cores = cpu_model(), usable_cores()
    arch, system = platform.machine().lower() or "unknown", platform.system().lower() or "unknown"
    hardware = detect_hardware(cores, arch=arch)
    if override:
        name = validate_name(override, source=source)
    elif os.environ.get(MACHINE_ENV):
        name = validate_name(os.environ[MACHINE_ENV], source=f"${MACHINE_ENV}")
    else:
        name = f"{system}-{arch}-{hardware.slug}"
        if len(name) > 80:  # keep the digest: it tells identities with one readable slug apart
            name = f"{name[: 79 - DIGEST_LENGTH].rstrip('-')}-{hardware.digest}"
    return Machine(
        name=name,
        cpu=cpu,
        cores=cores,
        arch=arch,
        system=system,
        hardware=hardware,
        gpu=hardware.gpu,
        named=bool(override or os.environ.get(MACHINE_ENV)),
    )


def runner_class(key: str) -> str:
    """The runner class of a baseline key (``gha-x64@zen3-avx2-2c-1a2b3c`` -> ``gha-x64``), or ""."""
    name, separator, _ = key.partition(CLASS_SEPARATOR)
    return name if separator else ""
