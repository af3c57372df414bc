"""The state of one pytest run: lazily imported ORT, provider probes, sessions, models.

Plain Python; the pytest layer owns one instance per run and hands work to it.
Nothing here touches ONNX Runtime until a test actually asks for a session.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_ortperf.config import OrtperfConfig
from pytest_ortperf.errors import ProviderUnavailable
from pytest_ortperf.inputs import Feeds, InputOptions, load_feeds, specs_from_session
from pytest_ortperf.models import ModelResolver, ModelSource
from pytest_ortperf.probe import ProviderProber
from pytest_ortperf.runtime import import_onnxruntime, runtime_info
from pytest_ortperf.sessions import BuiltSession, SessionPool
from pytest_ortperf.settings import SessionSettings
from pytest_ortperf.variants import Variant


class OrtperfRun:
    def __init__(self, config: OrtperfConfig, on_build: Callable[[BuiltSession], None] | None = None) -> None:
        self.config = config
        self._on_build = on_build
        self._models = ModelResolver(config.rootdir)
        self._pool: SessionPool | None = None
        self._prober: ProviderProber | None = None

    @property
    def pool(self) -> SessionPool:
        if self._pool is None:
            ort = import_onnxruntime()
            self._pool = SessionPool(ort, self.prober, self._on_build)
        return self._pool

    @property
    def prober(self) -> ProviderProber:
        if self._prober is None:
            info = runtime_info()
            self._prober = ProviderProber(info.available_providers, info.describe())
        return self._prober

    def require_available(self, variant: Variant) -> Variant:
        """Raise :class:`ProviderUnavailable` before any model work if the EP cannot run."""
        result = self.prober.probe(variant.provider_spec)
        if not result.available:
            raise ProviderUnavailable(variant.provider, result.reason)
        return variant

    def model(self, spec: Any, *, test_dir: Path, origin: str) -> ModelSource:
        return self._models.resolve(spec, test_dir=test_dir, origin=origin)

    def session(self, model: ModelSource, variant: Variant, settings: SessionSettings) -> BuiltSession:
        return self.pool.get(model, variant, settings)

    def feeds(self, built: BuiltSession, options: InputOptions) -> Feeds:
        return load_feeds(built.model, specs_from_session(built.session), options)

    def summary_lines(self) -> list[str]:
        """Terminal summary: sessions built and reused, providers that could not run."""
        if self._pool is None:
            return []
        pool = self._pool
        lines = [f"sessions: {pool.builds} built in {pool.build_seconds:.2f} s, reused {pool.reuses} time(s)"]
        if self._prober is not None:
            lines += [
                f"{result.provider} unavailable: {result.reason}"
                for result in self._prober.results
                if not result.available
            ]
        return lines

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
