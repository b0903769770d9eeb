"""Published trajectories in one neutral form, and the shared-prefix states an audit measures in them.

A reader (τ2-bench results, inspect eval logs, JSONL) turns a file into :class:`PublishedConversation`
records: the messages with the sides named as the rollout engine names them (``policy``,
``simulator``, ``tool``, ``system``), the reward, whether the record is an infrastructure failure
(never scored) and the simulator errors the record itself flags.

:func:`shared_prefix_states` groups the simulator's replies by the conversation so far: two replies
belong to one state when they answer the same task with the same messages before them (the same
roles, texts and tool calls; timestamps, costs and turn indices do not count). Across the trials of
a τ2 task every trial starts with the agent's fixed greeting, so the user simulator's first replies
share a prefix: at that state the published trials are N independent draws of φ(·|s), exactly what a
live audit samples. Deeper prefixes are shared only while the trials have not diverged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from collapse_probe.errors import ConfigError

SIDES = ("policy", "simulator", "tool", "system")
"""Roles of a neutral message (the rollout engine's names for the two sides, plus tools and system)."""


@dataclass(frozen=True)
class PublishedMessage:
    """One message of a published conversation."""

    role: str
    """``policy``, ``simulator``, ``tool`` or ``system`` (see :data:`SIDES`)."""
    content: str
    tool_calls: tuple[tuple[str, str], ...] = ()
    """``(tool name, canonical JSON of the arguments)`` per tool call the message makes."""
    meta: Mapping[str, object] = field(default_factory=dict, compare=False, hash=False)
    """What the source recorded beside the text (e.g. ``elicitation``), kept for the context."""

    @property
    def text(self) -> str:
        """The message as one string: its content, then its tool calls as ``name(arguments)``."""
        calls = " ".join(f"{name}({args})" for name, args in self.tool_calls)
        return f"{self.content} {calls}".strip() if calls else self.content

    def identity(self) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        """What makes two messages the same message of a conversation prefix."""
        return (self.role, self.content, self.tool_calls)


@dataclass
class PublishedConversation:
    """One published conversation (a τ2 simulation, an inspect sample, a JSONL record)."""

    conversation_id: str
    task_id: str
    messages: list[PublishedMessage]
    trial: int | None = None
    reward: float | None = None
    """The trajectory reward; ``None`` when the record has none (not scored)."""
    infra_error: str | None = None
    """Why the record is an infrastructure failure (excluded from every estimate, counted), or ``None``."""
    simulator_errors: list[dict[str, object]] = field(default_factory=list)
    """Errors of the user simulator that the record flags (a review, a hallucination check, a
    termination by a user-simulator error), each ``{"flag", "critical", ...}``."""
    policy: str | None = None
    simulator: str | None = None
    group: tuple[str, ...] = ()
    """Further identity of the state beyond the task (e.g. a training step or a persona): replies
    from records with different groups never share a state."""
    task_content: str | None = None
    """The task's own text where the file has it (τ2: the user scenario; τ-bench: the instruction),
    used to pair tasks across files whose task ids are not stable; ``None`` when the file has none."""


@dataclass
class PublishedRun:
    """What a reader found in a file."""

    conversations: list[PublishedConversation]
    format: str
    """The format's name (``tau2``, ``inspect``, ``jsonl``, ``taubench``, ``verifiers``, ``verifiers-results``,
    ``nemo-gym``)."""
    path: str
    sha256: str
    benchmark: str | None = None
    """The benchmark the file names (e.g. ``tau2-retail``), ``None`` when it names none."""
    policy: str | None = None
    simulator: str | None = None
    agent_greedy: bool | None = None
    """The agent sampled at temperature 0 (then the variance across trials of a task is the
    simulator's alone); ``None`` when the file does not say."""
    skipped: dict[str, int] = field(default_factory=dict)
    """Records left out, by reason (e.g. full-duplex voice simulations without text messages)."""
    notes: list[str] = field(default_factory=list)


@dataclass
class SharedPrefixState:
    """The simulator's replies at one conversation prefix, across the records that share it."""

    state_id: str
    task_id: str
    turn: int
    """Simulator turns before this one in the prefix."""
    prefix: list[PublishedMessage]
    replies: list[str]
    conversations: list[str]
    """The conversation each reply comes from (same order as ``replies``)."""
    group: tuple[str, ...] = ()

    @property
    def closed_set(self) -> bool:
        """The last message of the prefix asks the simulator for a decision (P4G's elicitation)."""
        return bool(self.prefix and self.prefix[-1].meta.get("elicitation"))


def file_sha256(path: str) -> str:
    """The SHA-256 of a file's bytes (what the audit of a published file records as its fingerprint)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def canonical_arguments(arguments: Any, where: str = "a tool call") -> str:
    """Tool-call arguments as canonical JSON (sorted keys), so equal calls compare equal; arguments
    given as text that is not JSON are their own form.

    Raises:
        ConfigError: the arguments (or the JSON their text holds) nest deeper than a user's file may
            (:data:`~collapse_probe.core._files.MAX_JSON_DEPTH`), naming ``where``: a value thousands of
            levels deep is no tool call, and every later walk over it would run out of stack.
    """
    from collapse_probe.core._files import MAX_JSON_DEPTH, check_values

    field = f"{where}: arguments"
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except RecursionError:
            raise ConfigError(
                f"{field}: JSON nested deeper than {MAX_JSON_DEPTH} levels (arrays and objects); expected a tool "
                "call's arguments"
            ) from None
        except ValueError:  # not JSON: the text is its own form
            return arguments
    check_values(arguments, field, expected="a tool call's arguments", max_depth=MAX_JSON_DEPTH, surrogates=True,
                 nonfinite=True)  # fmt: skip
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


def _prefix_key(conv: PublishedConversation, prefix: Sequence[PublishedMessage]) -> tuple[Any, ...]:
    return (conv.simulator, conv.group, conv.task_id, tuple(m.identity() for m in prefix))


def shared_prefix_states(conversations: Sequence[PublishedConversation]) -> tuple[list[SharedPrefixState], int]:
    """The shared-prefix states of the simulator's replies, and how many prefixes had one reply only.

    Every simulator message of a record that is not an infrastructure failure is a reply at the
    prefix before it; replies at one ``(simulator, group, task, prefix)`` form one state. A state
    needs at least 2 replies to measure anything; prefixes with one reply are counted, not measured.
    States are ordered by the first appearance of their prefix (records in file order, messages in
    order), so the result does not depend on anything but the file. An empty reply is no reply (as
    in a live audit) and is left out, and so is a simulator message whose ``meta`` marks it ``given``
    (the task's prompt, part of every prefix after it but not a draw of the simulator).

    Returns:
        ``(states with >= 2 replies, number of prefixes with a single reply)``.
    """
    groups: dict[tuple[Any, ...], SharedPrefixState] = {}
    for conv in conversations:
        if conv.infra_error is not None:
            continue
        turn = 0
        for i, m in enumerate(conv.messages):
            if m.role != "simulator" or m.meta.get("given"):
                # a given user turn (a dataset prompt, the same text in every rollout) was not drawn
                # from the simulator: N copies of it would read as a simulator that always says the same
                continue
            key = _prefix_key(conv, conv.messages[:i])
            st = groups.get(key)
            if st is None:
                digest = hashlib.blake2b(repr(key).encode("utf-8"), digest_size=6).hexdigest()
                st = SharedPrefixState(f"published:{conv.task_id}:{turn}:{digest}", conv.task_id, turn,
                                       list(conv.messages[:i]), [], [], conv.group)  # fmt: skip
                groups[key] = st
            turn += 1
            if m.text.strip():
                st.replies.append(m.text)
                st.conversations.append(conv.conversation_id)
    states = [s for s in groups.values() if len(s.replies) >= 2]
    singletons = sum(1 for s in groups.values() if len(s.replies) == 1)
    return states, singletons


class SimulatorErrorSummary(TypedDict):
    """What a published run's records flag about the simulator (``results.json`` ``simulator_errors``)."""

    conversations: int
    """Scored conversations."""
    flagged: int
    """Scored conversations with at least one flag."""
    flagged_critical: int
    flags: dict[str, int]
    """Flag -> how often the records carry it."""
    failed: int
    """Scored conversations with a reward below 1."""
    failed_flagged: int
    failed_flagged_share: float | None
    """``failed_flagged / failed`` (``None``: no failures)."""
    note: str


def simulator_error_summary(conversations: Sequence[PublishedConversation]) -> SimulatorErrorSummary:
    """What the records flag about the simulator: conversations with a user-simulator error, critical
    ones, and the share of failed conversations (reward below 1) that carry a flag (how many failures
    a reviewer attributed to the simulator)."""
    scored = [c for c in conversations if c.infra_error is None]
    flagged = [c for c in scored if c.simulator_errors]
    critical = [c for c in flagged if any(e.get("critical") for e in c.simulator_errors)]
    failed = [c for c in scored if c.reward is not None and c.reward < 1.0]
    failed_flagged = [c for c in failed if c.simulator_errors]
    kinds: dict[str, int] = {}
    for c in flagged:
        for e in c.simulator_errors:
            kinds[str(e.get("flag"))] = kinds.get(str(e.get("flag")), 0) + 1
    return {
        "conversations": len(scored),
        "flagged": len(flagged),
        "flagged_critical": len(critical),
        "flags": kinds,
        "failed": len(failed),
        "failed_flagged": len(failed_flagged),
        "failed_flagged_share": len(failed_flagged) / len(failed) if failed else None,
        "note": "flags the records carry (τ2 reviews, hallucination checks, user-error terminations); "
        "a record without a review is not known to be free of errors",
    }
