"""The model under test: resolving a marker argument to bytes on disk or in memory.

A model is identified by the sha256 of its serialized bytes; that digest keys
the session cache and, later, tells a baseline that the model changed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ortperf.errors import ModelError, UsageError
from pytest_ortperf.ort.dvc_models import DvcPointer, dvc_pointer, pointer_files
from pytest_ortperf.values import safe_repr

ZOO_MODEL_NAME = "model.onnx"
_HASH_CHUNK = 1 << 20
# What a Git LFS pointer file starts with; git-lfs keeps pointers below 1024 bytes. A checkout that has
# not fetched the LFS objects holds these small text files where the models should be.
LFS_POINTER = b"version https://git-lfs.github.com/spec/"
LFS_POINTER_MAX_BYTES = 1024
LFS_FETCH = "run 'git lfs pull' in the repository (on GitHub Actions: actions/checkout with lfs: true)"


def is_lfs_pointer(data: bytes) -> bool:
    """Whether ``data`` is a Git LFS pointer file rather than the content it stands for."""
    return len(data) < LFS_POINTER_MAX_BYTES and data.startswith(LFS_POINTER)


@dataclass(frozen=True)
class ModelSource:
    """A resolved model: a file (ORT loads it by path, so external data works) or bytes."""

    label: str
    sha256: str
    path: Path | None = None
    data: bytes | None = None
    git_blob: str = ""  # the id git gives these bytes (``git hash-object``): where a commit keeps them
    # The digest of the external data files the model names (its weights beside it), "" when none:
    # the .onnx file's own sha256 does not change when only they do.
    data_sha256: str = ""
    # The transformer optimizer's options when this is its output (ort/transformers.py): then
    # ``git_blob`` is the id of the model it was made from.
    transformers: tuple[tuple[str, Any], ...] = ()
    # How a precision build made this model from the one under test (ort/precision.py): its recipe
    # as sorted (key, value) pairs, nested values as canonical JSON text, so the source stays
    # hashable; then ``git_blob`` is the id of the model it was made from.
    precision: tuple[tuple[str, Any], ...] = ()
    # Where DVC keeps this file, when it does (ort/dvc_models.py): its pointer, recorded with a
    # baseline so that a later run can read the recorded model back through DVC.
    dvc: DvcPointer | None = None

    @property
    def has_external_data(self) -> bool:
        """Whether it keeps tensors in files beside it (then ORT needs its path, and its bytes alone are
        not the model): known from resolving it, without parsing it again."""
        return bool(self.data_sha256)

    @property
    def content(self) -> tuple[str, str]:
        """What makes two models the same model: the .onnx file's bytes and its external data's."""
        return self.sha256, self.data_sha256

    @property
    def ort_input(self) -> str | bytes:
        """What ``InferenceSession`` takes."""
        if self.path is not None:
            return str(self.path)
        assert self.data is not None
        return self.data

    @property
    def directory(self) -> Path | None:
        return None if self.path is None else self.path.parent


class ModelResolver:
    """Resolves marker/fixture values to :class:`ModelSource`, hashing each file once."""

    def __init__(self, rootdir: Path) -> None:
        self._rootdir = rootdir
        self._digests: dict[tuple[Path, int, int], tuple[str, str, str]] = {}
        self._pointers: dict[tuple[Path, str], DvcPointer | None] = {}  # (file, md5): asked once
        self._locations: dict[tuple[Path, int, int], list[str]] = {}

    def resolve(self, spec: Any, *, test_dir: Path, origin: str) -> ModelSource:
        """Resolve a path (relative to ``test_dir``, then rootdir), a ModelProto or bytes.

        ``origin`` names where the value came from, for error messages.
        """
        if isinstance(spec, ModelSource):
            return spec
        if isinstance(spec, (str, os.PathLike)):
            if not os.fspath(spec).strip():
                raise UsageError(f"{origin}: the model path is empty.")
            return self._from_path(Path(os.fspath(spec)), test_dir=test_dir, origin=origin)
        if isinstance(spec, (bytes, bytearray)):
            data = bytes(spec)
            label = f"<{len(data)} bytes>"
            if is_lfs_pointer(data):
                raise ModelError(
                    f"{origin}: the model bytes are a Git LFS pointer (a small text file that stands for "
                    f"the model), not the model: {LFS_FETCH}."
                )
            return ModelSource(label=label, sha256=_digest_bytes(data), data=data, git_blob=git_blob_id(data))
        serialize = getattr(spec, "SerializeToString", None)
        if type(spec).__name__ == "ModelProto" and callable(serialize):
            data = serialize(deterministic=True)
            name = getattr(getattr(spec, "graph", None), "name", "") or "model"
            return ModelSource(label=f"<ModelProto {name}>", sha256=_digest_bytes(data), data=data)
        raise UsageError(
            f"{origin}: expected a model path (str or os.PathLike), an onnx.ModelProto or bytes, "
            f"got {type(spec).__name__} ({safe_repr(spec)})."
        )

    def _from_path(self, given: Path, *, test_dir: Path, origin: str) -> ModelSource:
        candidates = [given] if given.is_absolute() else [test_dir / given, self._rootdir / given]
        try:
            found = next((c for c in candidates if c.exists()), None)
        except (OSError, ValueError) as exc:  # a name too long for the file system, a NUL
            raise ModelError(f"{origin}: model path {safe_repr(str(given))} is not usable: {exc}.") from None
        if found is None:
            tried = " or ".join(f"'{c}'" for c in dict.fromkeys(candidates))
            raise ModelError(f"{origin}: model file '{given}' not found (looked for {tried}).")
        if found.is_dir():
            if not (found / ZOO_MODEL_NAME).is_file():
                raise ModelError(
                    f"{origin}: '{found}' is a directory without a {ZOO_MODEL_NAME} "
                    "(a model-zoo directory holds model.onnx and test_data_set_*/)."
                )
            found = found / ZOO_MODEL_NAME
        path = found.resolve()
        pointers = pointer_files(path)  # DVC may keep it: its md5 is taken in the same read
        sha256, blob, md5 = self._digest_file(path, origin, md5=bool(pointers))
        data = self._digest_data(path, origin)
        if pointers and (path, md5) not in self._pointers:
            self._pointers[(path, md5)] = dvc_pointer(path, md5, pointers)
        return ModelSource(
            label=self._label(path),
            sha256=sha256,
            path=path,
            git_blob=blob,
            data_sha256=data,
            dvc=self._pointers.get((path, md5)) if pointers else None,
        )

    def _digest_data(self, path: Path, origin: str) -> str:
        """The digest of the external data files ``path`` names, each file's sha256 under its location
        (each file read once per content); "" for a model without external data."""
        try:
            stat = path.stat()
        except OSError:
            return ""  # _digest_file has read it just now; a file gone since is ORT's to report
        key = (path, stat.st_mtime_ns, stat.st_size)
        if key not in self._locations:  # a parse of the model, once per content, where it may name any
            self._locations[key] = external_data_locations(path) if may_name_external_data(path) else []
        locations = self._locations[key]
        if not locations:
            return ""
        digest = hashlib.sha256()
        for location in sorted(locations):
            sha256, _, _ = self._digest_file(path.parent / location, origin)
            digest.update(f"{location}\0{sha256}\n".encode())
        return digest.hexdigest()

    def _label(self, path: Path) -> str:
        try:
            return path.relative_to(self._rootdir.resolve()).as_posix()
        except ValueError:
            return str(path)

    def _digest_file(self, path: Path, origin: str, *, md5: bool = False) -> tuple[str, str, str]:
        """(sha256, git blob id, md5 or "") of the file, read once per content; ``md5``: also the md5
        DVC names it by (only where a DVC pointer may name it)."""
        try:
            stat = path.stat()
            key = (path, stat.st_mtime_ns, stat.st_size)
            if key not in self._digests or (md5 and not self._digests[key][2]):
                digest = hashlib.sha256()
                blob = hashlib.sha1(f"blob {stat.st_size}\0".encode(), usedforsecurity=False)
                dvc = hashlib.md5(usedforsecurity=False) if md5 else None
                with path.open("rb") as handle:
                    while chunk := handle.read(_HASH_CHUNK):
                        if len(chunk) == stat.st_size and is_lfs_pointer(chunk):  # the whole file
                            raise _lfs_pointer_error(path, chunk, origin)
                        digest.update(chunk)
                        blob.update(chunk)
                        if dvc is not None:
                            dvc.update(chunk)
                self._digests[key] = (digest.hexdigest(), blob.hexdigest(), dvc.hexdigest() if dvc else "")
            return self._digests[key]
        except OSError as exc:
            raise ModelError(f"{origin}: cannot read model '{path}': {exc.strerror or exc}.") from exc


def _lfs_pointer_error(path: Path, head: bytes, origin: str) -> ModelError:
    """The error of a model file that is a Git LFS pointer: ONNX Runtime would only say that protobuf
    parsing failed."""
    return ModelError(
        f"{origin}: model file '{path}' is a Git LFS pointer ({len(head)} bytes of text that stand "
        f"for the model), not the model: this checkout has not fetched its LFS objects; {LFS_FETCH}."
    )


def _digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_blob_id(data: bytes) -> str:
    """The object id git gives ``data`` as a file's content (what ``git hash-object`` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


# The key under which a tensor stored outside the model names its file (ExternalDataProto.key):
# every model with external data holds these bytes.
_LOCATION_KEY = b"location"


def bytes_may_name_external_data(data: bytes) -> bool:
    """Whether serialized model bytes can name external data (:func:`may_name_external_data` for bytes
    held in memory: a recorded model read from git, say)."""
    return _LOCATION_KEY in data


def may_name_external_data(path: Path) -> bool:
    """Whether the model file at ``path`` can name external data: its bytes hold the key every
    external tensor names its file by. A model without those bytes names none, and is not parsed
    (``import onnx`` alone took 1.4 s a process on a 2-core Zen 3, most of it ml_dtypes' extension).
    True where the file cannot be read: the parse then says nothing, and ORT says why."""
    tail = b""
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_HASH_CHUNK):
                if _LOCATION_KEY in tail + chunk:
                    return True
                tail = chunk[-(len(_LOCATION_KEY) - 1) :]
    except OSError:
        return True
    return False


def external_data_locations(path: Path) -> list[str]:
    """The external data files the model at ``path`` names (``location`` of its tensors, relative to
    its folder), each once; [] when it names none or cannot be parsed here (ORT then says why)."""
    import onnx  # a dependency; imported here so resolving a path stays cheap

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception:  # unreadable here: ORT reports it when the session is built
        return []
    return tensor_locations(proto)


def tensor_locations(proto: Any) -> list[str]:
    """The external data locations an ``onnx.ModelProto``'s tensors name, each once, in order."""
    import onnx

    found: dict[str, None] = {}
    for tensor in graph_tensors(proto):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            location = next((e.value for e in tensor.external_data if e.key == "location"), "")
            if location:
                found[location] = None
    return list(found)


def weight_bytes(model: ModelSource) -> int | None:
    """The bytes of a model's weights: every initializer (sparse ones at their stored size) of the
    graph and its subgraphs, and every Constant node's tensor, from their shapes and element types
    (external data is not read). None when the model cannot be parsed here, or holds strings."""
    import onnx  # a dependency; imported here so resolving a path stays cheap

    try:
        if model.path is not None:
            proto = onnx.load(str(model.path), load_external_data=False)
        else:
            proto = onnx.load_from_string(model.data or b"")
    except Exception:  # unreadable here: ORT reports it when the session is built
        return None
    total = 0
    for tensor in graph_tensors(proto):
        if tensor.data_type == onnx.TensorProto.STRING:
            return None
        count = 1
        for dim in tensor.dims:
            count *= dim
        total += count * onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    return total


def graph_tensors(proto: Any) -> Iterator[Any]:
    """Every tensor a model (an ``onnx.ModelProto``) holds, in its graph and all its subgraphs:
    initializers, a sparse initializer's values and indices, and tensors held by node attributes
    (a Constant's value, tensor-list attributes)."""
    graphs = [proto.graph]
    while graphs:
        graph = graphs.pop()
        yield from graph.initializer
        for sparse in graph.sparse_initializer:
            yield sparse.values
            yield sparse.indices
        for node in graph.node:
            for attribute in node.attribute:
                if attribute.HasField("t"):
                    yield attribute.t
                yield from attribute.tensors
                if attribute.HasField("g"):
                    graphs.append(attribute.g)
                graphs.extend(attribute.graphs)
