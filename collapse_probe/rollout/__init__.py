"""Batched multi-turn rollouts and run directories."""

from collapse_probe.rollout._engine import (
    CONVERSATIONS,
    ConversationSpec,
    EngineConfig,
    TurnEvent,
    make_specs,
    run_conversations,
    run_conversations_sync,
)
from collapse_probe.rollout._rundir import RunDir, iter_jsonl, write_json_atomic

__all__ = [
    "CONVERSATIONS",
    "ConversationSpec",
    "EngineConfig",
    "RunDir",
    "TurnEvent",
    "iter_jsonl",
    "make_specs",
    "run_conversations",
    "run_conversations_sync",
    "write_json_atomic",
]
