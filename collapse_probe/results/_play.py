"""``results.json`` of a ``play`` run (schema ``collapse-probe/play/v1``)."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, PrivateAttr

from collapse_probe.core._records import ConversationRecord
from collapse_probe.results._audit import VarianceDecomposition
from collapse_probe.results._base import JSON, ResultsModel
from collapse_probe.results._common import Fingerprints, RewardSummary, Usage

PLAY_SCHEMA: Final = "collapse-probe/play/v1"


class PlayResults(ResultsModel):
    """Policy-vs-simulator conversations on a benchmark: the run's configuration and its mean reward.

    The configuration fields (``policy`` ... ``extra``) are the run's ``PlayConfig``, as ``config.json``
    records them.
    """

    schema_: Literal["collapse-probe/play/v1"] = Field(PLAY_SCHEMA, alias="schema")
    """The results kind and version."""
    policy: str
    """Policy model spec."""
    sim: str
    """Simulator spec (``vs:SPEC`` for Verbalized Sampling)."""
    benchmark: str
    """Benchmark name."""
    tasks: int
    """Tasks asked for."""
    rollouts: int
    """Conversations per task."""
    max_turns: int | None
    """Conversation rounds (``null``: the benchmark's own cap)."""
    seed: int
    """Seed of the task order and every conversation."""
    temperature: float
    """Sampling temperature of both sides."""
    max_live: int | None = None
    """At most this many conversations in flight (``null``: all)."""
    extra: dict[str, JSON] = {}
    """Options recorded with the run."""
    summary: RewardSummary
    """Mean reward with its 95 % CI over tasks."""
    variance: VarianceDecomposition | None = None
    """The reward variance split into task, simulator, agent and judge shares, the flip rate and pass^k."""
    fingerprints: Fingerprints = {}
    """Model spec -> content fingerprint of the model its conversations ran with."""
    usage: Usage = {}
    """Model spec -> spend."""
    _conversations: list[ConversationRecord] = PrivateAttr(default_factory=list)

    @property
    def conversations(self) -> list[ConversationRecord]:
        """The run's conversation records (messages, reward, status), in task and rollout order, as
        ``conversations.jsonl`` holds them; not part of ``results.json`` (empty for results read from a file)."""
        return self._conversations
