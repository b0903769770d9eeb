"""The population pool's members are typed (``PoolMember``, ``PoolState``): a pushed snapshot, the
checkpointed state and a pool reopened from its manifest hold exactly ``step`` and ``path``."""

from __future__ import annotations

import random

import pytest

from collapse_probe.errors import ConfigError
from collapse_probe.trainers.population import PoolMember, PoolState, PopulationPool


def test_members_state_and_manifest_hold_the_declared_fields(tmp_path):
    pool = PopulationPool.open(tmp_path / "pool", 2)
    for step in (1, 2, 3):
        evicted = pool.push(step, lambda d: d.mkdir())
    assert evicted == [{"step": 1, "path": "step-00000001"}]
    state = pool.state()
    assert set(state) == set(PoolState.__annotations__)
    assert all(set(m) == set(PoolMember.__annotations__) for m in state["members"] + state["evicted"])
    again = PopulationPool.open(tmp_path / "pool", 2)
    assert again.members == state["members"] and again.evicted == state["evicted"]
    assert pool.member_dir(pool.sample(random.Random(0))).is_dir()
    again.restore(state)
    assert again.state() == state
    with pytest.raises(ConfigError, match="checkpointed member"):
        again.restore({"members": [{"step": 9, "path": "step-00000009"}], "evicted": []})
