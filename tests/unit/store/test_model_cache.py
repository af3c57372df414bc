"""The content-addressed model cache: keeps bytes by sha256, never gives back damaged ones."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pytest_ortperf.errors import UsageError
from pytest_ortperf.store.model_cache import ModelCache

DATA = b"model bytes"
SHA = hashlib.sha256(DATA).hexdigest()


def test_a_model_put_is_got_back_by_its_sha256(tmp_path: Path) -> None:
    cache = ModelCache(tmp_path / "cache")
    assert cache.get(SHA) is None
    assert cache.put(SHA, DATA)
    assert cache.get(SHA) == DATA
    assert cache.path_for(SHA) == tmp_path / "cache" / SHA[:2] / f"{SHA}.onnx"
    assert not cache.put(SHA, DATA), "a good copy is not written again"


def test_a_damaged_entry_is_not_given_back_and_is_replaced_by_the_next_put(tmp_path: Path) -> None:
    cache = ModelCache(tmp_path)
    cache.put(SHA, DATA)
    cache.path_for(SHA).write_bytes(b"truncated")
    assert cache.get(SHA) is None
    assert cache.put(SHA, DATA)
    assert cache.get(SHA) == DATA


def test_bytes_that_do_not_match_their_name_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="do not match"):
        ModelCache(tmp_path).put(SHA, b"other bytes")
    assert not list(tmp_path.iterdir())


def test_a_name_that_is_not_a_sha256_is_absent_not_a_path(tmp_path: Path) -> None:
    assert ModelCache(tmp_path).get("../../etc/passwd") is None


def test_a_cache_path_that_is_a_file_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match=r"model cache '.*file' is not a directory"):
        ModelCache(tmp_path / "file")


def test_an_unwritable_cache_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / SHA[:2]).write_text("a file where a directory goes")
    with pytest.raises(UsageError, match=f"model cache '{tmp_path}': cannot write {SHA[:12]}"):
        ModelCache(tmp_path).put(SHA, DATA)
