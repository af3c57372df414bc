"""Per-model tables of pyproject.toml and ortperf.toml: which apply, in which order, and what is wrong."""

from __future__ import annotations

from pathlib import Path

from pytest_ortperf.store.model_tables import ortperf_files, read_tables, settings_for


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_every_matching_table_applies_the_most_specific_last(tmp_path: Path) -> None:
    pyproject = _write(
        tmp_path / "pyproject.toml",
        '[tool.ortperf.models."models/*.onnx"]\nseed = 1\ndims = {batch = 2}\n'
        '[tool.ortperf.models."models/bert*.onnx"]\nseed = 2\n'
        '[tool.ortperf.models."other/*.onnx"]\nseed = 9\n',
    )
    _write(tmp_path / "models" / "ortperf.toml", '[models."bert.onnx"]\ndims = {batch = 3}\n')
    model = tmp_path / "models" / "bert.onnx"
    model.write_bytes(b"")
    tables = read_tables(pyproject, ortperf_files([model], rootdir=tmp_path), rootdir=tmp_path)
    found = settings_for(model, tables)
    assert found.values == {"seed": 2, "dims": {"batch": 3}}
    assert found.origin("seed") == 'pyproject.toml [tool.ortperf.models."models/bert*.onnx"] seed'
    assert found.origin("dims") == 'models/ortperf.toml [models."bert.onnx"] dims'
    assert settings_for(tmp_path / "models" / "cnn.onnx", tables).values == {"seed": 1, "dims": {"batch": 2}}
    assert settings_for(tmp_path / "elsewhere.onnx", tables).values == {}


def test_a_zoo_folder_is_matched_by_its_folder(tmp_path: Path) -> None:
    pyproject = _write(tmp_path / "pyproject.toml", '[tool.ortperf.models."zoo/*"]\nseed = 5\n')
    model = tmp_path / "zoo" / "resnet" / "model.onnx"
    _write(model, "")
    assert settings_for(model, read_tables(pyproject, [], rootdir=tmp_path)).values == {"seed": 5}


def test_unknown_keys_bad_tables_and_unreadable_files_are_problems_of_the_models_they_match(
    tmp_path: Path,
) -> None:
    pyproject = _write(
        tmp_path / "pyproject.toml",
        '[tool.ortperf.models."a.onnx"]\nbatch = 4\n[tool.ortperf.models]\n"b.onnx" = 3\n',
    )
    broken = _write(tmp_path / "sub" / "ortperf.toml", "[models\nnot toml")
    tables = read_tables(pyproject, [broken], rootdir=tmp_path)
    (a,) = settings_for(tmp_path / "a.onnx", tables).problems
    assert a.startswith(
        'pyproject.toml [tool.ortperf.models."a.onnx"]: unknown key(s) batch; a model table takes shapes, dims,'
    )
    (b,) = settings_for(tmp_path / "b.onnx", tables).problems
    assert b.startswith('pyproject.toml [tool.ortperf.models."b.onnx"]: must be a table of settings')
    (sub,) = settings_for(tmp_path / "sub" / "deep" / "c.onnx", tables).problems
    assert sub.startswith("sub/ortperf.toml: not a readable TOML file (")
    assert settings_for(tmp_path / "c.onnx", tables).problems == ()


def test_an_empty_glob_is_a_problem_of_every_model_the_file_configures(tmp_path: Path) -> None:
    pyproject = _write(tmp_path / "pyproject.toml", '[tool.ortperf.models.""]\nseed = 1\n')
    (problem,) = settings_for(
        tmp_path / "models" / "m.onnx", read_tables(pyproject, [], rootdir=tmp_path)
    ).problems
    assert (
        problem
        == 'pyproject.toml [tool.ortperf.models.""]: the glob is empty; name the models it is for, such as "models/*.onnx".'
    )
