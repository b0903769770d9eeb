"""Fixtures of the model-backend tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def fresh_models():
    """Backends are built once per process and spec; tests that point the same specs at new local
    servers start from empty process caches (registry, participant and cache wrappers), and leave
    none of their backends behind for the tests after them."""
    import collapse_probe

    collapse_probe.reset_caches()
    yield
    collapse_probe.reset_caches()
