"""Machine identity: /proc/cpuinfo, name validation and the name's precedence."""

from __future__ import annotations

import platform
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.store import machine as machine_module
from pytest_ortperf.store.hardware import Hardware
from pytest_ortperf.store.machine import MACHINE_ENV, Machine, cpu_model, detect_machine, validate_name

CPUINFO = """\
processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 106
model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
stepping\t: 6

processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
"""


def test_cpu_model_reads_the_model_name_from_cpuinfo(tmp_path: Path) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    assert cpu_model(path) == "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"


def test_cpu_model_reads_the_hardware_line_of_arm_boards(tmp_path: Path) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\nBogoMIPS\t: 108.00\nHardware\t: BCM2835\nRevision\t: c03111\n")
    assert cpu_model(path) == "BCM2835"


def test_cpu_model_falls_back_to_the_platform_without_cpuinfo(tmp_path: Path) -> None:
    expected = platform.processor() or platform.machine() or "unknown-cpu"
    assert cpu_model(tmp_path / "missing") == expected
    assert cpu_model(tmp_path / "missing")


def test_cpu_model_falls_back_when_cpuinfo_has_no_model(tmp_path: Path) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text("processor\t: 0\nBogoMIPS\t: 50.00\n")
    assert cpu_model(path) == (platform.processor() or platform.machine() or "unknown-cpu")


@pytest.mark.parametrize("name", ["ci-large", "gh.ubuntu_22.04", "a", "0runner", "x" * 80])
def test_validate_name_accepts_plain_names(name: str) -> None:
    assert validate_name(name, source="--ortperf-machine") == name


@pytest.mark.parametrize(
    "name", ["", "ci large", "../x", "a/b", "-ci", ".hidden", "x" * 81, "y" * 200, "café", "ci\n"]
)
def test_validate_name_rejects_names_unfit_for_a_file_key(name: str) -> None:
    with pytest.raises(UsageError) as info:
        validate_name(name, source="--ortperf-machine")
    message = str(info.value)
    assert message.startswith(f"--ortperf-machine: machine name {name!r} must be 1-80 characters")
    assert "starting with a letter or digit" in message


ZEN3 = Hardware("x86_64", "AuthenticAMD", "25/1/1", "zen3", ("avx", "avx2", "fma", "f16c"), 4)


@pytest.fixture
def fake_hardware(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fixed CPU, core count and hardware identity, without reading the real machine or nvidia-smi."""
    monkeypatch.setattr(machine_module, "cpu_model", lambda: "AMD EPYC 7R13 Processor")
    monkeypatch.setattr(machine_module, "usable_cores", lambda: 4)
    monkeypatch.setattr(
        machine_module, "detect_hardware", lambda cores, arch: replace(ZEN3, cores=cores, arch=arch)
    )
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.delenv(MACHINE_ENV, raising=False)


@pytest.mark.usefixtures("fake_hardware")
def test_detect_machine_derives_a_name_from_the_hardware_identity() -> None:
    assert detect_machine() == Machine(
        name=f"linux-x86_64-zen3-avx2-4c-{ZEN3.digest}",
        cpu="AMD EPYC 7R13 Processor",
        cores=4,
        arch="x86_64",
        system="linux",
        hardware=ZEN3,
        gpu="",
    )


@pytest.mark.usefixtures("fake_hardware")
def test_detect_machine_adds_the_first_gpu_and_keeps_the_digest_within_80_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpus = "NVIDIA H100 80GB HBM3, sm 9.0, driver 580.65; NVIDIA H100 80GB HBM3, sm 9.0, driver 580.65"
    with_gpu = replace(ZEN3, gpu=gpus)
    monkeypatch.setattr(machine_module, "detect_hardware", lambda cores, arch: with_gpu)
    found = detect_machine()
    assert found.name == f"linux-x86_64-zen3-avx2-4c-nvidia-h100-80gb-hbm3-{with_gpu.digest}"
    assert found.gpu == gpus
    long = replace(ZEN3, generation="x" * 70)
    monkeypatch.setattr(machine_module, "detect_hardware", lambda cores, arch: long)
    name = detect_machine().name
    assert len(name) == 80
    assert name.endswith(f"-{long.digest}")


@pytest.mark.usefixtures("fake_hardware")
def test_the_environment_variable_names_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MACHINE_ENV, "ci-large")
    found = detect_machine()
    assert found.name == "ci-large"
    assert found.cpu == "AMD EPYC 7R13 Processor"  # the hardware is still recorded
    assert found.cores == 4


@pytest.mark.usefixtures("fake_hardware")
def test_the_override_wins_over_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MACHINE_ENV, "ci-large")
    assert detect_machine("my-laptop").name == "my-laptop"


@pytest.mark.usefixtures("fake_hardware")
def test_an_empty_environment_variable_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MACHINE_ENV, "")
    assert detect_machine().name == f"linux-x86_64-zen3-avx2-4c-{ZEN3.digest}"


@pytest.mark.usefixtures("fake_hardware")
def test_a_bad_environment_variable_is_reported_by_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MACHINE_ENV, "my laptop")
    with pytest.raises(UsageError) as info:
        detect_machine()
    assert str(info.value).startswith("$ORTPERF_MACHINE: machine name 'my laptop'")


@pytest.mark.usefixtures("fake_hardware")
def test_a_bad_override_is_reported_by_its_source() -> None:
    with pytest.raises(UsageError) as info:
        detect_machine("../escape", source="ini ortperf_machine")
    assert str(info.value).startswith("ini ortperf_machine: machine name '../escape'")
