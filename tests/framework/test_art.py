"""The ART adapter on ART's own classes (openpipe-art 0.5.23 needs Python >= 3.12: run this file in
``DIR/art`` from ``scripts/framework_env.sh DIR``).

What runs is ART's: ``gather_trajectory_groups`` with the adapter's ``after_each`` hook, over
``TrajectoryGroup``s of ``Trajectory`` objects (pydantic models that validate their ``metrics``). Not
covered: ``model.train`` / ``model.log`` (a training backend: unsloth/vLLM on a GPU, or ART's service).
"""

from __future__ import annotations

import asyncio
import math

import pytest

art = pytest.importorskip("art", reason="ART is not importable here (openpipe-art 0.5.23 needs Python >= 3.12)")


def test_after_each_on_arts_gather_records_groups_and_tags_trajectories_with_a_fixed_key_set(donor):
    from collapse_probe.benchmarks.p4g import P4GArena
    from collapse_probe.integrations.monitor import CollapseMonitor, simulator_reply
    from collapse_probe.integrations.monitor.art import after_each, end_step

    arena = P4GArena(max_turns=1)
    monitor = CollapseMonitor(shadow_fraction=1.0, shadow_samples=4, partition="exact", arena=arena)
    sim = monitor.wrap(donor)

    async def rollout(step: int, i: int) -> art.Trajectory:
        opening = "Hello, would you help children?" if i % 2 else "Hi there!"
        messages = [{"role": "system", "content": "You persuade."}, {"role": "assistant", "content": opening}]
        reply = await simulator_reply(sim, [{"role": "user", "content": opening}], rollout=f"{step}-{i}", seed=i)
        reward = 1.0 if reply and "[DONATE" in reply else 0.0
        return art.Trajectory(messages_and_choices=messages, reward=reward)

    async def step(k: int) -> tuple[list[art.TrajectoryGroup], dict]:
        groups = await art.gather_trajectory_groups(
            (art.TrajectoryGroup(rollout(k, 4 * g + i) for i in range(4)) for g in range(2)),
            after_each=after_each(monitor), pbar_desc=None,
        )  # fmt: skip
        return groups, await end_step(monitor, k)

    first, row0 = asyncio.run(step(0))
    second, row1 = asyncio.run(step(1))
    assert row0["shadow_states"] == 8 and row0["rollouts"] == 8 and row0["strategy_entropy"]["n_classes"] == 2
    trajectories = [t for g in first + second for t in g.trajectories]
    assert len(trajectories) == 16
    keys = {tuple(sorted(k for k in t.metrics if k.startswith("collapse/"))) for t in trajectories}
    assert len(keys) == 1 and "collapse/epsilon" in next(iter(keys))
    assert all(math.isnan(t.metrics["collapse/epsilon"]) for g in first for t in g.trajectories)
    assert all(
        t.metrics["collapse/epsilon"] == row0["collapse_error"]["estimate"] for g in second for t in g.trajectories
    )
    assert row1["step"] == 1
