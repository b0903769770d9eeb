"""verl, OpenRLHF and ART adapters.

verl and ART do not import on this CPU machine without their GPU stacks (verl: hydra, tensordict, ray
workers; ART: litellm, polars, unsloth), so their adapters are exercised here against the documented
interfaces: the call sequence verl's ``ToolAgentLoop`` makes on a ``BaseInteraction`` and the reward
manager's ``(data, return_dict)``; ART's ``after_each(group)`` over groups holding trajectories with
``reward``, ``metrics`` and ``messages_and_choices``. Tests marked ``framework`` run the same adapters
against the real classes and skip when the framework is not importable. OpenRLHF's agent base classes
import with ``pip install --no-deps openrlhf pylatexenc``.
"""

from __future__ import annotations

import asyncio
import types

import pytest

from collapse_probe._resources import package_path
from collapse_probe.monitor import CollapseMonitor, simulator_reply

DIVERSE = f"scripted:{package_path('data', 'scripted', 'p4g_donor_diverse.json')}"


def _verl_session(tmp_path, **monitor):
    from collapse_probe.monitor.verl import CollapseMonitorInteraction

    config = {"name": "donor", "sim": DIVERSE, "benchmark": "p4g", "max_turns": 2, "spool": str(tmp_path / "spool"),
              "monitor": {"shadow_fraction": 1.0, "shadow_samples": 4, "partition": "exact", **monitor}}  # fmt: skip
    return CollapseMonitorInteraction(config)


async def _verl_conversation(interaction, iid, task_id):
    """What verl's ToolAgentLoop does with an interaction: start, respond per turn, score, finalize."""
    await interaction.start_interaction(iid, task_id=task_id)
    messages = [{"role": "user", "content": "Persuade the donor."}]
    done, turns = False, 0
    while not done:
        messages.append({"role": "assistant", "content": f"Please help the kids, turn {turns}."})
        done, reply, score, _ = await interaction.generate_response(iid, messages)
        messages.append({"role": "user", "content": reply})
        turns += 1
    final = await interaction.calculate_score(iid)
    await interaction.finalize_interaction(iid)
    return turns, score, final


def test_verl_interaction_keeps_state_per_instance_and_spools_to_the_reward_manager(tmp_path):
    from collapse_probe.monitor.verl import MonitoredRewardManager

    interaction = _verl_session(tmp_path)
    tasks = interaction.tasks[:2]
    results = asyncio.run(_gather_verl(interaction, tasks))
    assert [t for t, _, _ in results] == [2, 2]  # two rounds each, ended by the arena
    assert all(s == f for _, s, f in results) and not interaction.instances_
    torch = pytest.importorskip("torch")
    rewards = [s for _, s, _ in results]

    class Inner:
        def __call__(self, data, return_dict=False):
            return {"reward_tensor": torch.tensor([[0.0, r] for r in rewards])}

    logged = []
    tracking = types.SimpleNamespace(log=lambda data, step: logged.append((step, data)))
    driver = CollapseMonitor(partition="exact", arena=interaction.arena, spool=tmp_path / "spool", out=tmp_path / "mon")
    manager = MonitoredRewardManager(Inner(), driver, tracking=tracking)
    batch = types.SimpleNamespace(non_tensor_batch={"uid": ["a", "a"]}, meta_info={"global_steps": 4})
    out = manager(batch, return_dict=True)
    assert out["reward_tensor"].shape == (2, 2)
    row = driver.rows_[-1]
    assert row["step"] == 4 and row["shadow_states"] == 4 and row["rollouts"] == 2
    assert row["train_reward"] == pytest.approx(sum(rewards) / 2)
    assert logged and logged[0][0] == 4 and "collapse/epsilon" in logged[0][1]


async def _gather_verl(interaction, tasks):
    return await asyncio.gather(*[_verl_conversation(interaction, f"req-{i}", t.task_id) for i, t in enumerate(tasks)])


@pytest.mark.framework
def test_verl_interaction_subclasses_the_real_base():
    base = pytest.importorskip("verl.interactions.base")
    from collapse_probe.monitor.verl import CollapseMonitorInteraction

    assert issubclass(CollapseMonitorInteraction, base.BaseInteraction)


def test_art_after_each_records_groups_and_tags_trajectories():
    from collapse_probe.benchmarks.p4g import P4GArena
    from collapse_probe.monitor.art import after_each, end_step

    arena = P4GArena(max_turns=1)
    monitor = CollapseMonitor(shadow_fraction=1.0, shadow_samples=4, partition="exact", arena=arena)
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


@pytest.mark.framework
def test_openrlhf_agent_classes_on_the_real_base_classes(tmp_path):
    pytest.importorskip("openrlhf.utils.agent")
    torch = pytest.importorskip("torch")
    from collapse_probe.monitor.openrlhf import agent_classes

    instance_cls, executor_cls = agent_classes(sim=DIVERSE, benchmark="p4g", max_turns=1, rollouts_per_step=2,
                                               out=tmp_path, monitor={"shadow_fraction": 1.0, "partition": "exact"})  # fmt: skip
    import openrlhf.utils.agent as agent

    assert issubclass(instance_cls, agent.AgentInstanceBase) and issubclass(executor_cls, agent.MultiTurnAgentExecutor)
    _openrlhf_rollouts(instance_cls, torch)


def test_openrlhf_session_closes_a_step_every_rollouts_per_step(tmp_path):
    from collapse_probe.monitor.openrlhf import ArenaSession

    session = ArenaSession(sim=DIVERSE, benchmark="p4g", max_turns=1, rollouts_per_step=2, out=tmp_path,
                           monitor={"shadow_fraction": 1.0, "shadow_samples": 4, "partition": "exact"})  # fmt: skip
    label = next(iter(session.by_id))

    async def one(i):
        ep = session.new_episode(label, f"k{i}")
        return await session.turn(ep, f"k{i}", "Please help the children.")

    results = [asyncio.run(one(i)) for i in range(4)]
    assert all(done for _, _, done in results)
    assert [r["step"] for r in session.monitor.rows_] == [0, 1]
    assert "collapse/epsilon" in session.scalars
    assert (next(tmp_path.glob("actor-*")) / "monitor.jsonl").is_file()


def _openrlhf_rollouts(instance_cls, torch):
    async def run():
        inst = instance_cls()
        label = next(iter(inst.session.by_id))
        await inst.reset({"observation": "Persuader:", "label": label})
        return await inst.step({"observation_text": "Persuader:", "action_text": "Help the kids!", "label": label})

    out = asyncio.run(run())
    assert out["done"] is True and isinstance(out["rewards"], torch.Tensor)
    assert "[DONATE" in out["environment_feedback"]
