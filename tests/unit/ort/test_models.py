"""ModelResolver: paths (test dir, rootdir, absolute, zoo directory), ModelProto, bytes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import onnx
import pytest

from pytest_ortperf.errors import ModelError, UsageError
from pytest_ortperf.ort import models
from pytest_ortperf.ort.models import (
    LFS_POINTER,
    ModelResolver,
    ModelSource,
    is_lfs_pointer,
    may_name_external_data,
)

ORIGIN = "ort_model marker of tests/test_x.py::test_a"


@pytest.fixture
def layout(tmp_path: Path, float_model: onnx.ModelProto) -> tuple[Path, Path, bytes]:
    """rootdir/ with tests/ below it; returns (rootdir, test_dir, model bytes)."""
    root = tmp_path / "repo"
    test_dir = root / "tests"
    test_dir.mkdir(parents=True)
    return root, test_dir, float_model.SerializeToString()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_relative_path_is_looked_up_beside_the_test_first(layout: tuple[Path, Path, bytes]) -> None:
    root, test_dir, data = layout
    (test_dir / "m.onnx").write_bytes(data)
    (root / "m.onnx").write_bytes(b"other bytes at the root")
    source = ModelResolver(root).resolve("m.onnx", test_dir=test_dir, origin=ORIGIN)
    assert source.path == (test_dir / "m.onnx").resolve()
    assert source.sha256 == _sha(data)
    assert source.label == "tests/m.onnx"
    assert source.ort_input == str(test_dir / "m.onnx")
    assert source.directory == test_dir
    assert source.data is None


def test_relative_path_falls_back_to_rootdir(layout: tuple[Path, Path, bytes]) -> None:
    root, test_dir, data = layout
    (root / "models").mkdir()
    (root / "models" / "m.onnx").write_bytes(data)
    source = ModelResolver(root).resolve(Path("models/m.onnx"), test_dir=test_dir, origin=ORIGIN)
    assert source.path == (root / "models" / "m.onnx").resolve()
    assert source.label == "models/m.onnx"
    assert source.sha256 == _sha(data)


def test_absolute_path_outside_rootdir_is_labelled_absolute(
    tmp_path: Path, layout: tuple[Path, Path, bytes]
) -> None:
    root, test_dir, data = layout
    outside = tmp_path / "elsewhere" / "m.onnx"
    outside.parent.mkdir()
    outside.write_bytes(data)
    source = ModelResolver(root).resolve(str(outside), test_dir=test_dir, origin=ORIGIN)
    assert source.path == outside.resolve()
    assert source.label == str(outside.resolve())


def test_model_zoo_directory_resolves_to_its_model_onnx(layout: tuple[Path, Path, bytes]) -> None:
    root, test_dir, data = layout
    zoo = test_dir / "squeezenet"
    (zoo / "test_data_set_0").mkdir(parents=True)
    (zoo / "model.onnx").write_bytes(data)
    source = ModelResolver(root).resolve("squeezenet", test_dir=test_dir, origin=ORIGIN)
    assert source.path == (zoo / "model.onnx").resolve()
    assert source.directory == zoo.resolve()
    assert source.label == "tests/squeezenet/model.onnx"


def test_directory_without_model_onnx_is_a_model_error(layout: tuple[Path, Path, bytes]) -> None:
    root, test_dir, _ = layout
    (test_dir / "empty").mkdir()
    with pytest.raises(ModelError) as info:
        ModelResolver(root).resolve("empty", test_dir=test_dir, origin=ORIGIN)
    message = str(info.value)
    assert message.startswith(ORIGIN)
    assert f"'{test_dir / 'empty'}' is a directory without a model.onnx" in message


def test_missing_file_names_given_path_and_every_place_looked(layout: tuple[Path, Path, bytes]) -> None:
    root, test_dir, _ = layout
    with pytest.raises(ModelError) as info:
        ModelResolver(root).resolve("models/nope.onnx", test_dir=test_dir, origin=ORIGIN)
    message = str(info.value)
    assert message.startswith(f"{ORIGIN}: model file 'models/nope.onnx' not found")
    assert f"(looked for '{test_dir / 'models/nope.onnx'}' or '{root / 'models/nope.onnx'}')" in message


def test_missing_file_when_test_dir_is_rootdir_lists_the_place_once(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as info:
        ModelResolver(tmp_path).resolve("nope.onnx", test_dir=tmp_path, origin=ORIGIN)
    assert str(info.value).count(str(tmp_path / "nope.onnx")) == 1
    assert " or " not in str(info.value)


def test_missing_absolute_path_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "gone.onnx"
    with pytest.raises(ModelError, match="not found") as info:
        ModelResolver(tmp_path / "root").resolve(missing, test_dir=tmp_path / "t", origin=ORIGIN)
    assert str(info.value).count(str(missing)) == 2  # the given path and where it looked


def test_model_proto_digest_is_sha256_of_deterministic_serialisation(float_model: onnx.ModelProto) -> None:
    float_model.graph.name = "tiny_graph"
    source = ModelResolver(Path("/nonexistent")).resolve(float_model, test_dir=Path("."), origin=ORIGIN)
    expected = float_model.SerializeToString(deterministic=True)
    assert source.data == expected
    assert source.sha256 == _sha(expected)
    assert source.path is None
    assert source.directory is None
    assert source.ort_input == expected
    assert source.label == "<ModelProto tiny_graph>"
    # a real ONNX model: round-trips through onnx
    assert onnx.load_from_string(expected).graph.name == "tiny_graph"


class ModelProto:
    """Duck-typed stand-in named like onnx's class: tells apart the two serialisations."""

    def __init__(self) -> None:
        self.graph = type("Graph", (), {"name": ""})()

    def SerializeToString(self, deterministic: bool = False) -> bytes:
        return b"deterministic" if deterministic else b"map order may vary"


def test_model_proto_is_serialised_deterministically() -> None:
    source = ModelResolver(Path("/nonexistent")).resolve(ModelProto(), test_dir=Path("."), origin=ORIGIN)
    assert source.data == b"deterministic"
    assert source.sha256 == _sha(b"deterministic")
    assert source.label == "<ModelProto model>"  # unnamed graph


def test_model_proto_digest_follows_content(float_model: onnx.ModelProto) -> None:
    resolver = ModelResolver(Path("/nonexistent"))
    before = resolver.resolve(float_model, test_dir=Path("."), origin=ORIGIN).sha256
    float_model.doc_string = "changed"
    after = resolver.resolve(float_model, test_dir=Path("."), origin=ORIGIN).sha256
    assert before != after


@pytest.mark.parametrize("kind", [bytes, bytearray])
def test_bytes_model(kind: type, float_model: onnx.ModelProto) -> None:
    data = float_model.SerializeToString()
    source = ModelResolver(Path("/nonexistent")).resolve(kind(data), test_dir=Path("."), origin=ORIGIN)
    assert source.data == data
    assert type(source.data) is bytes
    assert source.sha256 == _sha(data)
    assert source.label == f"<{len(data)} bytes>"


def test_model_source_passes_through() -> None:
    given = ModelSource(label="x", sha256="0" * 64, data=b"x")
    assert ModelResolver(Path("/nonexistent")).resolve(given, test_dir=Path("."), origin=ORIGIN) is given


@pytest.mark.parametrize(("spec", "type_name"), [(42, "int"), (None, "NoneType"), ([b"x"], "list")])
def test_wrong_type_is_a_usage_error_naming_origin_and_type(spec: object, type_name: str) -> None:
    with pytest.raises(UsageError) as info:
        ModelResolver(Path("/nonexistent")).resolve(spec, test_dir=Path("."), origin=ORIGIN)
    message = str(info.value)
    assert message.startswith(f"{ORIGIN}: expected a model path")
    assert f"got {type_name} ({spec!r})" in message


def test_long_wrong_value_is_truncated_in_the_message() -> None:
    with pytest.raises(UsageError) as info:
        ModelResolver(Path("/nonexistent")).resolve(list(range(100)), test_dir=Path("."), origin=ORIGIN)
    assert "99" not in str(info.value)
    assert "[0, 1, 2" in str(info.value)


def test_digest_changes_when_file_content_changes(layout: tuple[Path, Path, bytes]) -> None:
    root, test_dir, data = layout
    path = test_dir / "m.onnx"
    path.write_bytes(data)
    resolver = ModelResolver(root)
    first = resolver.resolve("m.onnx", test_dir=test_dir, origin=ORIGIN).sha256
    path.write_bytes(data + b"\x00")  # size changes
    second = resolver.resolve("m.onnx", test_dir=test_dir, origin=ORIGIN).sha256
    assert (first, second) == (_sha(data), _sha(data + b"\x00"))

    # same size, different content, different mtime
    stat = path.stat()
    path.write_bytes(data + b"\x01")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    third = resolver.resolve("m.onnx", test_dir=test_dir, origin=ORIGIN).sha256
    assert third == _sha(data + b"\x01")


def test_digest_is_cached_by_path_mtime_and_size(layout: tuple[Path, Path, bytes]) -> None:
    root, test_dir, data = layout
    path = test_dir / "m.onnx"
    path.write_bytes(data)
    resolver = ModelResolver(root)
    first = resolver.resolve("m.onnx", test_dir=test_dir, origin=ORIGIN).sha256
    stat = path.stat()
    # rewrite with same size and put the mtime back: the cached digest is reused (file hashed once)
    path.write_bytes(bytes(len(data)))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert resolver.resolve("m.onnx", test_dir=test_dir, origin=ORIGIN).sha256 == first
    # a fresh resolver has no cache and sees the new content
    assert ModelResolver(root).resolve("m.onnx", test_dir=test_dir, origin=ORIGIN).sha256 == _sha(
        bytes(len(data))
    )


def test_unreadable_model_is_a_model_error_naming_it(
    layout: tuple[Path, Path, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, test_dir, data = layout
    path = test_dir / "m.onnx"
    path.write_bytes(data)

    def refuse(self: Path, *args: object, **kwargs: object) -> object:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(ModelError) as info:
        ModelResolver(root).resolve("m.onnx", test_dir=test_dir, origin=ORIGIN)
    message = str(info.value)
    assert message.startswith(f"{ORIGIN}: cannot read model '{path.resolve()}'")
    assert "Permission denied" in message


def test_real_squeezenet_resolves_by_absolute_path(squeezenet_path: Path, tmp_path: Path) -> None:
    source = ModelResolver(tmp_path).resolve(squeezenet_path, test_dir=tmp_path, origin=ORIGIN)
    assert source.sha256 == _sha(squeezenet_path.read_bytes())
    assert source.path == squeezenet_path.resolve()


def test_empty_path_is_a_usage_error(tmp_path: Path) -> None:
    resolver = ModelResolver(tmp_path)
    with pytest.raises(UsageError, match=r"marker X: the model path is empty"):
        resolver.resolve("  ", test_dir=tmp_path, origin="marker X")


POINTER = LFS_POINTER + b"v1\noid sha256:" + b"4d" * 32 + b"\nsize 4925402\n"


def test_a_git_lfs_pointer_file_is_a_model_error_naming_git_lfs_pull(
    layout: tuple[Path, Path, bytes],
) -> None:
    root, test_dir, _ = layout
    path = test_dir / "m.onnx"
    path.write_bytes(POINTER)
    with pytest.raises(ModelError) as info:
        ModelResolver(root).resolve("m.onnx", test_dir=test_dir, origin=ORIGIN)
    assert str(info.value) == (
        f"{ORIGIN}: model file '{path.resolve()}' is a Git LFS pointer ({len(POINTER)} bytes of text that stand "
        "for the model), not the model: this checkout has not fetched its LFS objects; run 'git lfs pull' in "
        "the repository (on GitHub Actions: actions/checkout with lfs: true)."
    )
    assert path.read_bytes() == POINTER


def test_git_lfs_pointer_bytes_are_a_model_error() -> None:
    with pytest.raises(
        ModelError, match=r"^marker X: the model bytes are a Git LFS pointer .*'git lfs pull'"
    ):
        ModelResolver(Path(".")).resolve(POINTER, test_dir=Path("."), origin="marker X")


def test_only_a_small_file_that_starts_like_a_pointer_is_one(float_model: onnx.ModelProto) -> None:
    assert is_lfs_pointer(POINTER)
    assert not is_lfs_pointer(POINTER + b"x" * 1024)  # git-lfs pointers are below 1024 bytes
    assert not is_lfs_pointer(b"  " + POINTER)
    assert not is_lfs_pointer(float_model.SerializeToString())


def test_a_models_external_data_has_its_own_digest_which_follows_the_weights(tmp_path: Path) -> None:
    """The .onnx of a model with external data names its weights' file, offset and length only: new
    weights of the same shapes leave it byte for byte the same, and its data digest changes."""
    from tests.models import mlp_model

    def saved(seed: int) -> ModelSource:
        (tmp_path / "model.data").unlink(missing_ok=True)  # onnx appends to an existing data file
        path = tmp_path / "model.onnx"
        onnx.save(
            mlp_model(2, 64, seed=seed),
            path,
            save_as_external_data=True,
            location="model.data",
            size_threshold=0,
        )
        return ModelResolver(tmp_path).resolve("model.onnx", test_dir=tmp_path, origin="test")

    first, again, other = saved(0), saved(0), saved(1)
    assert first.data_sha256
    assert first.content == again.content
    assert other.sha256 == first.sha256  # the .onnx file is the same
    assert other.data_sha256 != first.data_sha256
    plain = tmp_path / "plain.onnx"
    onnx.save(mlp_model(2, 64), plain)
    assert ModelResolver(tmp_path).resolve("plain.onnx", test_dir=tmp_path, origin="test").data_sha256 == ""


def test_a_model_whose_bytes_hold_no_location_key_is_not_parsed_for_external_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a file that holds the key an external tensor names its file by is parsed (with onnx, whose
    import costs a second or more); the key is found across read chunks too."""
    from tests.models import mlp_model

    external = tmp_path / "external.onnx"
    onnx.save(mlp_model(2, 64), external, save_as_external_data=True, location="w.data", size_threshold=0)
    plain = tmp_path / "plain.onnx"
    onnx.save(mlp_model(2, 64), plain)
    assert may_name_external_data(external)
    assert not may_name_external_data(plain)
    split = tmp_path / "split.bin"
    split.write_bytes(b"x" * (models._HASH_CHUNK - 3) + b"location" + b"y" * 10)
    assert may_name_external_data(split), "the key across two chunks"
    parsed: list[Path] = []
    monkeypatch.setattr(models, "external_data_locations", lambda path: parsed.append(path) or [])
    resolver = ModelResolver(tmp_path)
    assert resolver.resolve("plain.onnx", test_dir=tmp_path, origin="test").data_sha256 == ""
    resolver.resolve("external.onnx", test_dir=tmp_path, origin="test")
    assert parsed == [external]
