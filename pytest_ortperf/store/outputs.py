"""Reference outputs: stored beside a baseline as ``.npz``, or shipped with a model-zoo model.

Outputs up to :data:`FULL_LIMIT` elements are stored whole. Larger ones store a
deterministic subsample (:data:`SUBSAMPLE` evenly spaced elements of the
flattened tensor) plus mean/std/min/max, the count of NaN/Inf values and the
sha256 of the whole tensor. The entry records which was done and how the
subsample was taken, so a later change of the constants still compares old
entries on their own elements.

An output that is not one tensor (a sequence, a map, ZipMap's sequence of maps, an absent optional
output) is stored as its arrays (``accuracy/output_values.py: flatten``: a map's values under the output's
name, a sequence's elements as ``name[0]``, ``name[1]``...), each recorded like a tensor, and the
entry's ``structure`` says, in plain JSON, what each such output is: its kind, a map's keys, a
sequence's elements. Nothing needs pickle to read back.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytest_ortperf.accuracy.metrics import Array
from pytest_ortperf.accuracy.output_values import OutputValue, check_structure, flatten, unflatten
from pytest_ortperf.errors import BaselineError, InputsError
from pytest_ortperf.ort.inputs import NotNpzError, read_npz, read_tensors
from pytest_ortperf.store.keys import CheckKey
from pytest_ortperf.values import file_slug

FULL_LIMIT = 100_000
SUBSAMPLE = 10_000
SAMPLE_METHOD = "linspace"


@dataclass(frozen=True)
class Sampling:
    """How a subsample was taken: ``count`` evenly spaced elements of tensors over ``limit``."""

    limit: int
    count: int
    method: str = SAMPLE_METHOD

    @classmethod
    def current(cls, limit: int | None = None) -> Sampling:
        """The way this version samples (and how entries that did not record it were sampled)."""
        return cls(limit=FULL_LIMIT if limit is None else limit, count=SUBSAMPLE)

    def as_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "count": self.count, "method": self.method}

    @classmethod
    def from_dict(cls, data: Any) -> Sampling:
        if not isinstance(data, Mapping) or data.get("method") != SAMPLE_METHOD:
            raise TypeError(f"'sample' must be an object with method {SAMPLE_METHOD!r}")
        limit, count = data.get("limit"), data.get("count")
        if not all(isinstance(n, int) and not isinstance(n, bool) and 0 < n < 2**62 for n in (limit, count)):
            raise TypeError("'sample' limit and count must be positive whole numbers")
        return cls(limit=int(limit), count=int(count), method=SAMPLE_METHOD)  # type: ignore[arg-type]

    def indices(self, size: int) -> Array:
        """The flat indices of the subsample of a tensor of ``size`` elements."""
        return np.unique(np.linspace(0, size - 1, self.count).astype(np.int64))


@dataclass(frozen=True)
class StoredOutput:
    """How one output was stored, and its summary over the whole tensor."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    stored: str  # "full" or "subsample"
    sha256: str
    mean: float
    std: float
    min: float
    max: float
    nonfinite: int | None = None  # NaN/Inf in the whole tensor; None: an entry from before it was kept
    sample: Sampling | None = None  # subsamples: how taken; None: an older entry, the current constants

    @property
    def sampling(self) -> Sampling:
        return self.sample or Sampling.current()

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name, "dtype": self.dtype, "shape": list(self.shape), "stored": self.stored,
            "sha256": self.sha256, "mean": self.mean, "std": self.std, "min": self.min, "max": self.max,
        }  # fmt: skip
        if self.nonfinite is not None:
            data["nonfinite"] = self.nonfinite
        if self.sample is not None:
            data["sample"] = self.sample.as_dict()
        return data

    @classmethod
    def from_dict(cls, data: Any) -> StoredOutput:
        if not isinstance(data, Mapping) or data.get("stored") not in ("full", "subsample"):
            raise TypeError("an output record needs 'stored' of full or subsample")
        shape = data["shape"]
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise TypeError("shape must be a list of whole numbers")
        numbers = {key: float(data[key]) for key in ("mean", "std", "min", "max")}
        nonfinite = data.get("nonfinite")
        if nonfinite is not None and (
            not isinstance(nonfinite, int) or isinstance(nonfinite, bool) or not 0 <= nonfinite < 2**62
        ):
            raise TypeError("nonfinite must be a whole number >= 0")
        sample = data.get("sample")
        return cls(
            str(data["name"]),
            str(data["dtype"]),
            tuple(shape),
            data["stored"],
            str(data["sha256"]),
            **numbers,
            nonfinite=nonfinite,
            sample=None if sample is None else Sampling.from_dict(sample),
        )


@dataclass(frozen=True)
class AccuracyRecord:
    """The accuracy part of a baseline entry: input digest, the records of the arrays stored, the
    .npz file, and the structure of each output that is not one tensor (``accuracy/output_values.py``).
    ``structure`` None: an entry recorded before sequence and map outputs were stored, which holds
    its tensors only."""

    inputs_sha256: str
    outputs: tuple[StoredOutput, ...]
    file: str
    structure: Mapping[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "inputs_sha256": self.inputs_sha256,
            "outputs": [output.as_dict() for output in self.outputs],
            "file": self.file,
        }
        if self.structure is not None:
            data["structure"] = {name: self.structure[name] for name in sorted(self.structure)}
        return data

    def values(self, stored: Mapping[str, Array]) -> dict[str, OutputValue]:
        """The recorded outputs, from the arrays of the .npz; a structure naming an array the file
        does not hold raises ``BaselineError``."""
        try:
            return unflatten(stored, self.structure or {})
        except (KeyError, TypeError) as exc:
            raise BaselineError(
                f"reference outputs '{self.file}' do not hold what their entry's structure names ({exc}); "
                "re-record with --ortperf-update."
            ) from None

    @classmethod
    def from_dict(cls, data: Any) -> AccuracyRecord:
        if not isinstance(data, Mapping) or not isinstance(data.get("outputs"), list):
            raise TypeError("accuracy must be an object with an 'outputs' list")
        file = data.get("file")
        if (
            not isinstance(file, str)
            or not file.endswith(".npz")
            or "\\" in file
            or Path(file).is_absolute()
            or ".." in Path(file).parts
        ):
            raise TypeError("accuracy 'file' must be a relative .npz path inside the baseline directory")
        structure = data.get("structure")
        if structure is not None:
            if not isinstance(structure, Mapping) or not all(
                isinstance(v, Mapping) for v in structure.values()
            ):
                raise TypeError("accuracy 'structure' must be an object of one object per output")
            check_structure(structure)
        return cls(
            str(data["inputs_sha256"]),
            tuple(StoredOutput.from_dict(o) for o in data["outputs"]),
            file,
            structure=None if structure is None else dict(structure),
        )


def outputs_file(key: CheckKey) -> str:
    """Where the reference outputs of a new record live, relative to the baseline directory: one
    file per test x variant (the key's test holds the variant), whatever machine records it, as
    the entry holds one accuracy record for its recipe. A record keeps the name it was written
    with (older ones end in ``@<machine>.npz``), so this names new records only."""
    return f"{key.test_file}.outputs/{file_slug(key.test)}.npz"


def nonfinite_count(array: Array) -> int:
    """NaN and Inf values in the whole tensor (0 for integers, booleans and text)."""
    if array.dtype.kind not in "fc":
        return 0
    return int(array.size - np.count_nonzero(np.isfinite(array)))


def tensor_sha256(array: Array) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def summary(array: Array) -> dict[str, float]:
    """Mean, std, min and max of the finite values of the whole tensor (zeros for text)."""
    if array.size == 0 or array.dtype.kind not in "fiub":
        return {"mean": 0.0, "std": 0.0, "min": 0.0, "max": 0.0}
    values = array.astype(np.float64)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return {"mean": 0.0, "std": 0.0, "min": 0.0, "max": 0.0}
    return {
        "mean": float(finite.mean()),
        "std": float(finite.std()),
        "min": float(finite.min()),
        "max": float(finite.max()),
    }


def for_storage(
    outputs: Mapping[str, OutputValue], limit: int = FULL_LIMIT
) -> tuple[dict[str, Array], tuple[StoredOutput, ...]]:
    """What to put in the .npz (whole arrays or subsamples) and the record of each array; the
    structure of the outputs that are not one tensor is ``flatten(outputs).structure``."""
    arrays: dict[str, Array] = {}
    records = []
    sampling = Sampling.current(limit)
    flat = flatten(outputs)
    for name, array in flat.leaves.items():
        array = np.ascontiguousarray(array)
        whole = array.size <= limit
        arrays[name] = array if whole else array.ravel()[sampling.indices(array.size)]
        records.append(
            StoredOutput(
                name=name, dtype=array.dtype.name, shape=tuple(int(d) for d in array.shape),
                stored="full" if whole else "subsample", sha256=tensor_sha256(array), **summary(array),
                nonfinite=nonfinite_count(array), sample=None if whole else sampling,
            )
        )  # fmt: skip
    return arrays, tuple(records)


def comparable(actual: Mapping[str, OutputValue], records: Sequence[StoredOutput]) -> dict[str, OutputValue]:
    """The current outputs reduced the way the reference was stored (same subsample of each array)."""
    flat = flatten(actual)
    reduced = dict(flat.leaves)
    for record in records:
        array = flat.leaves.get(record.name)
        if record.stored == "subsample" and array is not None and tuple(array.shape) == record.shape:
            reduced[record.name] = np.ascontiguousarray(array).ravel()[record.sampling.indices(array.size)]
    return unflatten(reduced, flat.structure)


def npz_bytes(arrays: Mapping[str, Array]) -> bytes:
    """Deterministic .npz bytes (numpy writes fixed zip timestamps)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{name: arrays[name] for name in sorted(arrays)})  # type: ignore[arg-type]
    return buffer.getvalue()


def load_npz(path: Path) -> dict[str, Array]:
    """Load reference outputs without pickle; any problem names the file."""
    try:
        return read_npz(path)
    except FileNotFoundError:
        raise BaselineError(
            f"reference outputs '{path}' are missing (the baseline entry names them)."
        ) from None
    except NotNpzError:
        raise BaselineError(
            f"reference outputs '{path}' are damaged: the file is not a .npz archive."
        ) from None
    except Exception as exc:  # zip, format and pickle refusals
        raise BaselineError(f"reference outputs '{path}' cannot be read without pickle: {exc}") from None


def zoo_expected(data_set: Path, output_names: Sequence[str]) -> tuple[dict[str, Array], dict[str, float]]:
    """``output_*.pb`` of a model-zoo data set, mapped to output names, and rtol/atol from data.json."""
    expected: dict[str, Array] = {}
    for position, (name, array) in enumerate(read_tensors(data_set, "output")):
        if name in output_names:
            expected[name] = array
        elif position < len(output_names):
            expected[output_names[position]] = array
    return expected, _data_json_tolerances(data_set)


def _data_json_tolerances(data_set: Path) -> dict[str, float]:
    for candidate in (data_set / "data.json", data_set.parent / "data.json"):
        if candidate.is_file():
            try:
                data = json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InputsError(f"'{candidate}' is not valid JSON: {exc}") from None
            except RecursionError:
                raise InputsError(f"'{candidate}' is not valid JSON: nested too deeply.") from None
            if not isinstance(data, dict):
                raise InputsError(f"'{candidate}' must hold a JSON object with rtol/atol.")
            found = {key: data[key] for key in ("rtol", "atol") if key in data}
            if not all(_tolerance_number(v) for v in found.values()):
                raise InputsError(f"'{candidate}': rtol/atol must be finite numbers >= 0.")
            # data.json defines the model's own comparison (assert_allclose with rtol/atol, as ONNX's
            # backend tests use it), so the cosine limit is not added on top of it.
            return {key: float(value) for key, value in found.items()} | ({"cosine": 0.0} if found else {})
    return {}


def _tolerance_number(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        number = float(value)  # a huge JSON integer does not fit a float
    except OverflowError:
        return False
    return math.isfinite(number) and number >= 0
