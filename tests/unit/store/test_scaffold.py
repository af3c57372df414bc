"""What ortperf init finds and writes, as plain logic."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.store.scaffold import init, model_globs


def test_one_glob_per_folder_of_models_zoo_folders_by_their_parent_and_environments_skipped(
    tmp_path: Path,
) -> None:
    for name in ("models/a.onnx", "models/b.onnx", "deep/x/c.onnx", "zoo/resnet/model.onnx", ".venv/lib/d.onnx",
                 "baselines/e.onnx"):  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "zoo" / "resnet" / "test_data_set_0").mkdir()
    assert model_globs(tmp_path) == ["deep/x/*.onnx", "models/*.onnx", "zoo/*"]


def test_init_refuses_what_it_cannot_use_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no \*\.onnx file or model-zoo folder found"):
        init(tmp_path)
    (tmp_path / "m.onnx").write_bytes(b"")
    with pytest.raises(UsageError, match="--ci: expected one of github, gitlab, azure, got 'jenkins'"):
        init(tmp_path, ci="jenkins")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]
