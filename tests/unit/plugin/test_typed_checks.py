"""Every built-in kind's ``ort_perf.check_<kind>()`` is a method of its own, with its keywords
typed for editors and mypy, not a name ``__getattr__`` makes up at run time."""

from __future__ import annotations

import inspect

from pytest_ortperf.kinds import builtin_kinds
from pytest_ortperf.plugin.ort_perf import OrtPerf


def test_every_built_in_kind_has_a_typed_check_method() -> None:
    for name in builtin_kinds().names():
        method = OrtPerf.__dict__.get(f"check_{name}")
        assert method is not None, f"check_{name} is only reached through __getattr__"
        hints = inspect.signature(method)
        assert hints.return_annotation not in (inspect.Signature.empty, "Outcome"), name


def test_the_threads_and_determinism_keywords_are_declared() -> None:
    threads = inspect.signature(OrtPerf.check_threads).parameters
    assert {"counts", "threshold", "budget", "fail_if_beaten", "name", "feeds"} <= set(threads)
    determinism = inspect.signature(OrtPerf.check_determinism).parameters
    assert {"runs", "tolerance", "name", "feeds"} <= set(determinism)
