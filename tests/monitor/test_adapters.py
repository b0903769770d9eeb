"""The framework-free halves of the verl, OpenRLHF and ART adapters (no framework installed).

verl's adapter is a rollout session (the agent loops' process) and a reward session (the reward
manager's) that meet in the spool; OpenRLHF's an arena session per rollout actor; ART's the
``after_each`` hook over groups of trajectories. ``tests/framework`` runs the adapters on the frameworks'
own classes (``scripts/framework_env.sh DIR`` builds an environment with them).
"""

from __future__ import annotations

import asyncio
import types

import pytest

from collapse_probe.core._resources import package_path
from collapse_probe.integrations.monitor import CollapseMonitor, simulator_reply

DIVERSE = f"scripted:{package_path('data', 'scripted', 'p4g_donor_diverse.json')}"


def _verl_settings(tmp_path, **monitor):
    return {"sim": DIVERSE, "benchmark": "p4g", "max_turns": 2, "spool": str(tmp_path / "spool"),
            "out": str(tmp_path / "mon"),
            "monitor": {"shadow_fraction": 1.0, "shadow_samples": 4, "partition": "exact", "strategy_partition": "exact", **monitor}}  # fmt: skip


async def _verl_rollout(session, key, task_id):
    """What the verl agent loop does with its rollout session: one conversation, then its sample field."""
    ep = session.new_episode(task_id, key)
    turns = 0
    while True:
        reply = await session.policy_turn(ep, f"Please help the kids, turn {turns}.", key)
        turns += 1
        if reply is None or ep.done:
            break
    return turns, await session.finish(ep, key)


def test_verl_sessions_meet_in_the_spool_and_close_a_step_every_rollouts_per_step(tmp_path):
    import math

    from collapse_probe.integrations.monitor.verl import RewardSession, RolloutSession

    settings = _verl_settings(tmp_path)
    rollouts, rewards = RolloutSession(settings), RewardSession(settings, rollouts_per_step=2)
    tasks = [t.task_id for t in rollouts.tasks[:2]]

    async def run():
        out = []
        for step in range(2):
            done = await asyncio.gather(*[_verl_rollout(rollouts, f"s{step}-{i}", t) for i, t in enumerate(tasks)])
            for _, info in done:
                out.append((info, await rewards.record(info)))
        return out

    out = asyncio.run(run())
    assert all(info["opening"] == "Please help the kids, turn 0." for info, _ in out)
    assert [r["step"] for r in rewards.monitor.rows_] == [0, 1]
    row = rewards.monitor.rows_[0]
    assert row["rollouts"] == 2 and row["shadow_states"] == 4  # two rounds each, every turn shadowed
    assert row["train_reward"] == pytest.approx(sum(info["reward"] for info, _ in out[:2]) / 2)
    keys = {tuple(sorted(logs)) for _, (_, logs) in out}
    assert len(keys) == 1 and "collapse/epsilon" in next(iter(keys))  # the same keys in every sample
    assert all(math.isnan(logs["collapse/epsilon"]) for _, (_, logs) in out[:2])  # before the first close
    assert [logs["collapse/epsilon"] for _, (_, logs) in out[2:]] == [row["collapse_error"]["estimate"]] * 2
    assert (tmp_path / "mon" / "monitor.jsonl").is_file()


def test_verl_validation_samples_are_played_unmonitored_and_not_recorded(tmp_path):
    from collapse_probe.integrations.monitor.verl import RewardSession, RolloutSession

    settings = _verl_settings(tmp_path)
    rollouts, rewards = RolloutSession(settings), RewardSession(settings, rollouts_per_step=1)

    async def run():
        ep = rollouts.new_episode(None, "v0")
        await rollouts.policy_turn(ep, "Hello there.", "v0", validate=True)
        info = await rollouts.finish(ep, "v0", validate=True)
        return info, await rewards.record(info)

    info, (reward, _) = asyncio.run(run())
    assert info["validate"] and reward == info["reward"]
    assert not rewards.monitor.rows_ and not list((tmp_path / "spool").glob("*.jsonl"))


def test_verl_settings_name_the_missing_or_unknown_key(tmp_path):
    from collapse_probe.errors import ConfigError
    from collapse_probe.integrations.monitor.verl import RolloutSession, settings_from

    with pytest.raises(ConfigError, match="collapse_monitor.sim is required"):
        settings_from({"collapse_monitor": {"spool": "x"}})
    with pytest.raises(ConfigError, match="collapse_monitor.shadow_fraction: unknown setting"):
        settings_from({"collapse_monitor": {"sim": "x", "spool": "x", "shadow_fraction": 0.1}})
    assert settings_from({"collapse_monitor": {"sim": "x", "spool": "s"}}, {"max_turns": 3})["max_turns"] == 3
    session = RolloutSession(_verl_settings(tmp_path))
    with pytest.raises(ConfigError, match="extra_info.task_id 'nope' is not a task"):
        session.new_episode("nope", "k")


def test_verl_classes_without_verl_are_one_line_naming_the_versions():
    import importlib.util

    if importlib.util.find_spec("verl") is not None:
        pytest.skip("verl is installed here: the framework tier covers the real classes")
    import collapse_probe.integrations.monitor.verl as adapter
    from collapse_probe.errors import ConfigError

    with pytest.raises(ConfigError, match=r"needs verl>=0\.9\.1,<0\.10; verl is not installed"):
        adapter.CollapseMonitorAgentLoop  # noqa: B018


def test_art_after_each_records_groups_and_tags_trajectories():
    from collapse_probe.benchmarks.p4g import P4GArena
    from collapse_probe.integrations.monitor.art import after_each, end_step

    arena = P4GArena(max_turns=1)
    monitor = CollapseMonitor(
        shadow_fraction=1.0, shadow_samples=4, partition="exact", strategy_partition="exact", arena=arena
    )
    sim = monitor.wrap(DIVERSE)

    async def rollout(i):
        opening = "Hello, would you help children?" if i % 2 else "Hi there!"
        reply = await simulator_reply(sim, [{"role": "user", "content": opening}], rollout=f"r{i}", seed=i)
        reward = 1.0 if "[DONATE $2]" in reply else 0.0
        return types.SimpleNamespace(reward=reward, metrics={}, messages_and_choices=[
            {"role": "user", "content": "start"}, {"role": "assistant", "content": opening}])  # fmt: skip

    async def step():
        hook = after_each(monitor)
        groups = []
        for g in range(2):
            trajectories = await asyncio.gather(*[rollout(4 * g + i) for i in range(4)])
            groups.append(await hook(types.SimpleNamespace(trajectories=list(trajectories))))
        return groups, await end_step(monitor, 0)

    groups, row = asyncio.run(step())
    assert row["shadow_states"] == 8 and row["rollouts"] == 8
    assert row["strategy_entropy"]["n_messages"] == 8 and row["strategy_entropy"]["n_classes"] == 2
    assert row["zero_std_share"] is not None
    # the next step's trajectories carry this row's figures in their metrics (ART logs them)
    nxt = asyncio.run(
        after_each(monitor)(types.SimpleNamespace(trajectories=[types.SimpleNamespace(reward=0.0, metrics={})]))
    )
    assert nxt.trajectories[0].metrics["collapse/epsilon"] == row["collapse_error"]["estimate"]


def test_openrlhf_session_closes_a_step_every_rollouts_per_step(tmp_path):
    from collapse_probe.integrations.monitor.openrlhf import ArenaSession

    session = ArenaSession(sim=DIVERSE, benchmark="p4g", max_turns=1, rollouts_per_step=2, out=tmp_path,
                           monitor={"shadow_fraction": 1.0, "shadow_samples": 4, "partition": "exact", "strategy_partition": "exact"})  # fmt: skip
    label = next(iter(session.by_id))

    async def one(i):
        ep = session.new_episode(label, f"k{i}")
        return await session.turn(ep, f"k{i}", "Please help the children.")

    results = [asyncio.run(one(i)) for i in range(4)]
    assert all(done for _, _, done in results)
    assert [r["step"] for r in session.monitor.rows_] == [0, 1]
    assert "collapse/epsilon" in session.scalars and len(session.scalars) == len(_names())
    assert (next(tmp_path.glob("actor-*")) / "monitor.jsonl").is_file()


def _names():
    from collapse_probe.integrations.monitor._adapters import SCALAR_NAMES

    return SCALAR_NAMES


def test_the_fixed_scalar_names_cover_every_figure_the_monitor_logs(tmp_path):
    """A figure the monitor adds to ``scalars`` must be added to the fixed set the adapters log."""
    from collapse_probe.benchmarks.p4g import P4GArena
    from collapse_probe.integrations.monitor._adapters import fixed_scalars

    arena = P4GArena(max_turns=1)
    monitor = CollapseMonitor(shadow_fraction=1.0, shadow_samples=4, partition="exact", strategy_partition="exact", arena=arena,
                              alarm_views=("meaning", "reward"))  # fmt: skip
    sim = monitor.wrap(DIVERSE)

    async def step():
        for i in range(6):
            await simulator_reply(sim, [{"role": "user", "content": f"Hello {i % 2}"}], rollout=f"r{i}", seed=i)
        return await monitor.aend_step(0, rewards=[0.0, 1.0, 1.0, 0.0, 1.0, 1.0], groups=list("aabbcc"),
                                       policy_texts=["a", "b", "a", "b", "c", "c"])  # fmt: skip

    row = asyncio.run(step())
    have = monitor.scalars(row)
    fixed = fixed_scalars(monitor, row)
    assert set(have) <= set(fixed), sorted(set(have) - set(fixed))
    assert all(fixed[k] == v for k, v in have.items())


def test_an_installed_framework_outside_the_tested_range_is_named_in_one_line(caplog):
    from collapse_probe.integrations.monitor import _adapters

    assert _adapters.version_notice("verl", "0.9.1") is None and _adapters.version_notice("verl", "0.9.3") is None
    line = _adapters.version_notice("verl", "0.8.2")
    assert line is not None and "\n" not in line
    assert "verl>=0.9.1,<0.10" in line and "installed verl 0.8.2" in line
    assert _adapters.version_notice("openrlhf", "0.12.0") is not None
    _adapters._warned.discard("art")
    with caplog.at_level("WARNING", logger="collapse_probe.integrations.monitor"):
        _adapters.check_version("art", "0.5.18")
        _adapters.check_version("art", "0.5.18")
    assert [r.getMessage() for r in caplog.records].count(_adapters.version_notice("art", "0.5.18")) == 1


def test_the_extras_pin_the_tested_ranges():
    from pathlib import Path

    import tomllib

    from collapse_probe.integrations.monitor._adapters import TESTED, tested_range

    extras = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for adapter, (dist, _, _) in TESTED.items():
        assert any(r.replace(" ", "").startswith(dist + tested_range(adapter)) for r in extras[adapter]), (
            adapter,
            extras[adapter],
        )
