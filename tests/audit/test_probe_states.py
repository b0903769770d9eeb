"""Probe and on-policy states are built through the arena's hooks: the audit writes no benchmark's
episode state, and the states it rebuilds are those the rollout that reached them had."""

from __future__ import annotations

import copy

import pytest

from collapse_probe.benchmarks import Task
from collapse_probe.benchmarks.p4g import ELICITATION, OPENINGS, P4GArena
from collapse_probe.core._records import ConversationRecord
from collapse_probe.models import Completion
from collapse_probe.pipelines.audit import benchmark_probe_states, on_policy_states


@pytest.fixture
def arena():
    return P4GArena(personas=[{"persona_id": f"p{i}"} for i in range(3)], max_turns=2)


def _play(arena, task, replies):
    """Drive one episode through the arena's own turn taking; the episode before each simulator turn."""
    ep = arena.new_episode(task, 0)
    before = []
    replies = iter(replies)
    while (side := arena.next_side(ep)) is not None:
        if side == "simulator":
            before.append(copy.deepcopy(ep))
        text = next(replies) if side == "simulator" else "Would you give to Save the Children?"
        arena.apply(ep, side, Completion(text=text), text)
    return ep, before


def test_on_policy_states_have_the_episode_state_of_the_rollout(arena):
    task = arena.load_tasks(1)[0]
    ep, before = _play(arena, task, ["Maybe.", "Tell me more.", "No thanks."])
    assert [b.state for b in before] == [
        {"rounds": 0, "elicited": False}, {"rounds": 1, "elicited": False}, {"rounds": 2, "elicited": True},
    ]  # fmt: skip
    record = ConversationRecord.make(policy="p", simulator="s", task_id=task.task_id, messages=ep.messages, status="ok")
    states = on_policy_states(arena, [record], {task.task_id: task})
    assert [s.episode.state for s in states] == [b.state for b in before]
    assert [s.episode.messages for s in states] == [b.messages for b in before]
    assert [s.closed_set for s in states] == [False, False, True]
    # the reward view reads the rebuilt states as it reads the live ones
    for s, b in zip(states, before, strict=True):
        assert arena.reward_class(s.episode, "[DONATE $1]") == arena.reward_class(b, "[DONATE $1]")


def test_probe_states_come_from_the_benchmark_with_its_episode_state(arena):
    tasks = arena.load_tasks(3)
    states = benchmark_probe_states(arena, tasks)
    assert [s.source for s in states] == ["opening", "elicitation"] * 3
    assert [s.episode.messages[0]["content"] for s in states[::2]] == list(OPENINGS[:3])
    assert [s.episode.state for s in states[:2]] == [{"rounds": 0, "elicited": False}, {"rounds": 0, "elicited": True}]
    assert states[1].episode.messages[-1]["content"] == ELICITATION and states[1].closed_set


def test_an_arena_without_the_hook_gets_a_plain_episode():
    class Plain:
        name = "plain"

        def new_episode(self, task, seed):
            from collapse_probe.benchmarks import Episode

            return Episode(task=task, seed=seed, state={"untouched": True})

    task = Task("t", {})
    msgs = [{"role": "policy", "content": "hi"}, {"role": "simulator", "content": "yo"}]
    rec = ConversationRecord.make(
        policy="p", simulator="s", task_id="t", messages=[*msgs, {"role": "policy", "content": "?"}], status="ok"
    )
    (state,) = on_policy_states(Plain(), [rec], {"t": task})
    assert state.episode.state == {"untouched": True} and state.episode.messages == msgs[:1]
