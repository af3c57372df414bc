"""Hardware identity from /proc/cpuinfo (captured x86 and Arm files), and what a mismatch says."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_ortperf.store import hardware as hardware_module
from pytest_ortperf.store.hardware import Hardware, detect_hardware, nvidia_gpus, parse_cpuinfo


@pytest.fixture
def cpuinfo(data_dir: Path) -> Any:
    def read(name: str, *, arch: str = "x86_64", cores: int = 2, gpu: str = "") -> Hardware:
        text = (data_dir / "cpuinfo" / f"{name}.txt").read_text()
        return parse_cpuinfo(text, arch=arch, cores=cores, gpu=gpu)

    return read


def test_an_epyc_without_avx512_is_zen3_avx2(cpuinfo: Any) -> None:
    found = cpuinfo("zen3_avx2")
    assert (found.vendor, found.cpu, found.generation) == ("AuthenticAMD", "25/1/1", "zen3")
    assert found.features == ("avx", "avx2", "fma", "f16c")
    assert found.tier == "avx2"
    assert found.slug == f"zen3-avx2-2c-{found.digest}"
    assert found.describe() == "avx2/zen3, 2 cores"


def test_an_epyc_with_avx512_is_another_identity_under_the_same_model_name(cpuinfo: Any) -> None:
    zen3, zen4 = cpuinfo("zen3_avx2"), cpuinfo("zen4_avx512")
    assert zen4.generation == "zen4"
    assert zen4.tier == "avx512"
    assert {"avx512f", "avx512_vnni", "avx512_bf16"} <= set(zen4.features)
    assert zen3.digest != zen4.digest


def test_an_intel_with_amx(cpuinfo: Any) -> None:
    found = cpuinfo("sapphire_rapids_amx", cores=8)
    assert (found.vendor, found.cpu, found.generation) == ("GenuineIntel", "6/143/8", "intel-f6m143")
    assert found.tier == "amx"
    assert {"amx_tile", "amx_int8", "amx_bf16", "avx_vnni", "avx512_fp16"} <= set(found.features)
    assert found.slug.startswith("intel-f6m143-amx-8c-")


@pytest.mark.parametrize(
    ("name", "generation", "tier", "features"),
    [
        ("neoverse_n1", "neoverse-n1", "dotprod", ("asimd", "asimdhp", "asimddp")),
        ("neoverse_v1_sve", "neoverse-v1", "sve", ("asimd", "asimdhp", "asimddp", "i8mm", "bf16", "sve")),
    ],
)
def test_arm_identities_come_from_implementer_part_and_features(
    cpuinfo: Any, name: str, generation: str, tier: str, features: tuple[str, ...]
) -> None:
    found = cpuinfo(name, arch="aarch64", cores=4)
    assert (found.arch, found.vendor, found.generation, found.tier) == ("aarch64", "0x41", generation, tier)
    assert found.features == features
    assert found.cpu.startswith("0x41/0x")


def test_a_stepping_alone_changes_the_digest_not_the_readable_part(cpuinfo: Any, data_dir: Path) -> None:
    text = (data_dir / "cpuinfo" / "zen3_avx2.txt").read_text()
    stepped = parse_cpuinfo(text.replace("stepping\t: 1", "stepping\t: 2", 1), arch="x86_64", cores=2)
    base = cpuinfo("zen3_avx2")
    assert stepped.slug != base.slug
    assert stepped.slug.rsplit("-", 1)[0] == base.slug.rsplit("-", 1)[0]  # same readable part
    assert (base.cpu, stepped.cpu) == ("25/1/1", "25/1/2")


def test_the_identity_survives_json_and_refuses_a_damaged_one(cpuinfo: Any) -> None:
    found = cpuinfo("zen4_avx512", gpu="NVIDIA H100 80GB HBM3, sm 9.0, driver 580.1")
    assert Hardware.from_dict(found.as_dict()) == found
    assert found.slug.startswith("zen4-avx512-2c-nvidia-h100-80gb-hbm3-")
    with pytest.raises(TypeError, match="cores"):
        Hardware.from_dict({**found.as_dict(), "cores": "2"})


def test_without_cpuinfo_the_platform_names_the_cpu(tmp_path: Path) -> None:
    found = detect_hardware(2, cpuinfo=tmp_path / "missing", arch="x86_64", gpu="")
    assert (found.arch, found.features, found.cores) == ("x86_64", (), 2)
    assert found.generation


def test_this_machine_has_an_identity() -> None:
    found = detect_hardware(1, gpu="")
    assert found.arch
    assert found.slug.endswith(found.digest)


def test_nvidia_gpus_reads_name_compute_capability_and_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hardware_module.shutil, "which", lambda name: "/usr/bin/nvidia-smi")

    def smi(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert "--query-gpu=name,compute_cap,driver_version" in args
        return subprocess.CompletedProcess(
            args, 0, "NVIDIA H100 80GB HBM3, 9.0, 580.65\nNVIDIA L4, 8.9, 580.65\n", ""
        )

    assert (
        nvidia_gpus(run=smi)
        == "NVIDIA H100 80GB HBM3, sm 9.0, driver 580.65; NVIDIA L4, sm 8.9, driver 580.65"
    )
    monkeypatch.setattr(hardware_module.shutil, "which", lambda name: None)
    assert nvidia_gpus(run=smi) == ""
