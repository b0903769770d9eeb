"""Batched multi-turn rollouts and run directories."""

from collapse_probe.core._records import INFRA_ERROR, ConversationRecord, Message, ToolCall, record_fingerprints
from collapse_probe.rollout._engine import (
    CONVERSATIONS,
    ConversationSpec,
    EngineConfig,
    TurnEvent,
    hash_str,
    make_specs,
    run_conversations,
    run_conversations_sync,
)
from collapse_probe.rollout._rundir import RunDir, iter_jsonl, write_json_atomic

__all__ = [
    "CONVERSATIONS",
    "ConversationRecord",
    "ConversationSpec",
    "EngineConfig",
    "RunDir",
    "INFRA_ERROR",
    "Message",
    "ToolCall",
    "TurnEvent",
    "hash_str",
    "iter_jsonl",
    "make_specs",
    "record_fingerprints",
    "run_conversations",
    "run_conversations_sync",
    "write_json_atomic",
]
