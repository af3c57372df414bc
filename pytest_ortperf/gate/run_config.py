"""The run's ortperf configuration as frozen values: what the pytest layer resolves from options,
ini keys and markers (``plugin/configure.py``) and hands to the gate. No pytest here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ortperf import defaults
from pytest_ortperf.accuracy.tolerances import ToleranceSpec
from pytest_ortperf.checks.policy import CheckPolicy
from pytest_ortperf.ort.inputs import InputOptions
from pytest_ortperf.ort.session_settings import SessionSettings
from pytest_ortperf.ort.variants import Variant


@dataclass(frozen=True)
class OrtperfConfig:
    """The whole run's ortperf configuration, resolved once in ``pytest_configure``."""

    variants: tuple[Variant, ...]
    settings: SessionSettings
    inputs: InputOptions
    rootdir: Path
    baseline_dir: Path
    policy: CheckPolicy
    machine: str | None = None
    prune: bool = False
    tolerances: ToleranceSpec = field(default_factory=ToleranceSpec)
    reference_variant: Variant | None = None
    profile_dir: Path = Path(defaults.PROFILE_DIR)
    session_profile: bool = False
    parallel_timing: bool = False
    report_path: Path | None = None
    markdown_path: Path | None = None
    html_path: Path | None = None
    strict: bool = False
    run_timeout_s: float = defaults.RUN_TIMEOUT_S
    repair: bool = False
    ab_rev: str = ""
    ab_python: str = ""  # the reference side's interpreter (A/B across runtimes)
    fetch_runtime: bool = True  # create an environment with a recorded runtime on demand (auto|never)
    canary: bool = True
    ab_outputs_fail: bool = True
    progress: bool | None = None  # the progress line: on, off, or None for auto (plugin/progress.py)
    model_cache: Path | None = None
    timing: bool = True  # off: latency checks are skipped, nothing is timed (--ortperf-timing=off)
    # What ort_perf.check() runs (ortperf_checks; unset: the registry's default kinds, CheckKind.default)
    checks: tuple[str, ...] = ()
    # The kinds' own options (CheckKind.options): kind -> option name -> value, as text
    kind_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    contracts: tuple[str, ...] = ()  # default relative contracts of check(): levels, quantized


@dataclass(frozen=True)
class ABMarker:
    """What an ``ort_ab`` marker names: a reference model, a revision, an interpreter."""

    reference: Any = None
    rev: str = ""
    python: str = ""
