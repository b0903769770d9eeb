"""Fixtures of the model-backend tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def fresh_models(monkeypatch):
    """Backends are built once per process and spec; tests that point the same specs at new local
    servers start from an empty registry (and participant and cache wrappers)."""
    from collapse_probe.models import _registry
    from collapse_probe.simulators import _participant

    monkeypatch.setattr(_registry, "_INSTANCES", {})
    monkeypatch.setattr(_participant, "_WRAPPED", {})
    monkeypatch.setattr(_participant, "_CACHES", {})
    monkeypatch.setattr(_participant, "_METERED", {})
