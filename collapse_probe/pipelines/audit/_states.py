"""Probe states: the simulator turns an audit samples at (benchmark probes, human prefixes, on-policy turns)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from collapse_probe.benchmarks import Arena, Episode, Task
from collapse_probe.benchmarks._base import audit_hook
from collapse_probe.core._records import INFRA_ERROR, ConversationRecord, Message
from collapse_probe.errors import ConfigError
from collapse_probe.pipelines.audit._config import ProbeState

if TYPE_CHECKING:
    from collapse_probe.benchmarks._base import EpisodeMessage

# ----------------------------------------------------------------------------------------------- states


def _episode(arena: Arena, task: Task, messages: Sequence[EpisodeMessage]) -> Episode:
    """The arena's episode at a state whose conversation so far is ``messages``: its ``episode_at``
    hook (which rebuilds the arena's own turn-taking state), else a new episode holding them."""
    hook = audit_hook(arena, "episode_at")
    if hook is not None:
        return hook(task, messages)
    ep = arena.new_episode(task, 0)
    ep.messages = [m.copy() for m in messages]
    return ep


def _episode_message(message: Message) -> EpisodeMessage:
    """A recorded message as its episode held it: a conversation record's messages are the episode's,
    written into ``conversations.jsonl`` as they were, so their keys are :data:`EpisodeMessage`'s."""
    return cast("EpisodeMessage", message.as_dict())


def benchmark_probe_states(arena: Arena, tasks: Sequence[Task], **options: Any) -> list[ProbeState]:
    """The benchmark's probe states (its ``probe_states`` hook, given ``options``), one :class:`ProbeState` each.

    Raises:
        ConfigError: the benchmark offers no probe states (audit its on-policy states with ``--policy``).
    """
    hook = audit_hook(arena, "probe_states")
    if hook is None:
        raise ConfigError(
            f"--benchmark {arena.name}: this benchmark offers no probe states; give --policy SPEC to audit "
            "the on-policy states of rollouts on it"
        )
    states = []
    for spec in hook(tasks, **options):
        suffix = f":{spec.index}" if spec.index else ""
        states.append(ProbeState(
            f"{spec.kind}:{spec.task.task_id}{suffix}", spec.kind,
            sum(1 for m in spec.messages if m["role"] == "simulator"),
            _episode(arena, spec.task, spec.messages), closed_set=spec.asks_decision, kind=spec.kind,
        ))  # fmt: skip
    return states


def human_probe_states(
    arena: Arena, dialogues: Sequence[Any], n: int, max_turns: int | None, seed: int
) -> list[ProbeState]:
    """Prefixes of real P4G dialogues ending in a persuader turn, at a seeded depth in the first
    ``max_turns`` persuader turns (``None``: any of them); the human persuadee's actual next reply is
    kept for comparison."""
    usable_hook = audit_hook(arena, "human_dialogue_usable")
    usable = [d for d in dialogues if len(d.turns) >= 2 and (usable_hook is None or usable_hook(d))]
    if not usable:
        raise ConfigError("--human: no dialogue with a complete persuadee survey and at least 2 turns was found")
    rng = random.Random(seed)
    rng.shuffle(usable)
    states = []
    for d in usable[:n]:
        ends = [i + 1 for i, (spk, _) in enumerate(d.turns) if spk == "policy" and i + 1 < len(d.turns)
                and d.turns[i + 1][0] == "simulator"][:max_turns]  # fmt: skip
        if not ends:
            continue
        k = rng.choice(ends)
        ep = audit_hook(arena, "episode_from_dialogue")(d, k)
        states.append(ProbeState(f"human:{d.dialogue_id}:{k}", "human", ep.turns("simulator"), ep,
                                 human_reply=d.turns[k][1]))  # fmt: skip
    return states


def on_policy_states(arena: Arena, records: Sequence[ConversationRecord], tasks: dict[str, Task]) -> list[ProbeState]:
    """The simulator turns that rollouts visited (Definition 3.1), rebuilt from conversation records.

    The state of the simulator turn at message index m is the record's first m messages. It is
    rebuilt from the record rather than captured live so that a resumed run (whose conversations
    are read back, not replayed) audits the same states, and so that the arena's *direct* prompt
    is audited whatever mode drove the rollouts.
    """
    states = []
    for rec in records:
        if rec.status == INFRA_ERROR:
            continue
        task = tasks[rec.task_id]
        msgs = [_episode_message(m) for m in rec.messages]
        for m_idx, m in enumerate(rec.messages):
            if m.role != "simulator":
                continue
            prefix = msgs[:m_idx]
            last_is_elicitation = bool(m_idx and (rec.messages[m_idx - 1].meta or {}).get("elicitation"))
            turn = sum(1 for p in rec.messages[:m_idx] if p.role == "simulator")
            states.append(ProbeState(
                f"on_policy:{rec.key}:{m_idx}", "on_policy", turn, _episode(arena, task, prefix),
                closed_set=last_is_elicitation, conversation=rec.key,
            ))  # fmt: skip
    return states
