"""``results.json`` of a training run (schema ``collapse-probe/train/v1``); its steps are ``metrics.jsonl``."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from collapse_probe.results._base import JSON, Count, Interval, ResultsModel
from collapse_probe.results._common import Usage

TRAIN_SCHEMA: Final = "collapse-probe/train/v1"


class TrainStep(ResultsModel):
    """One training step's record (a line of ``metrics.jsonl``; ``first`` and ``final`` are two of them).

    Methods add their own keys (the pool member that played, importance weights, the rollout
    adapter, ...); they are kept as they are.
    """

    step: int | None = None
    """1-based step number."""
    train_reward: float | None = None
    """Mean reward of the step's scored conversations."""
    zero_std_share: float | None = None
    """Share of groups whose rewards were all equal (advantage 0)."""
    policy_entropy: float | None = None
    """Strategy entropy of the policy's turns (nats, Chao–Wang–Jost)."""
    sim_collapse_error: float | None = None
    """Mean plug-in ε of the simulator at the monitored states."""
    sim_collapse_error_estimate: float | None = None
    sim_collapse_error_ci95: Interval | None = None
    loss: float | None = None
    seconds: float | None = None
    simulator: str | None = None
    """The simulator that played the step."""
    n_conversations: Count | None = None
    infra_failures: Count | None = None
    policy_tokens: Count | None = None
    policy_update_skipped: bool | None = None
    heldout_reward: float | None = None
    """Mean reward over the held-out simulators (evaluation steps only)."""
    heldout_reward_step: int | None = None
    """``final`` only: the step of the last evaluation."""
    monitor_alarms: list[str] | None = None
    kl: float | None = None
    logprob_mismatch: float | None = None
    tis_clipped_share: float | None = None
    sim_loss: float | None = None
    sim_tokens: Count | None = None


class HeldoutPoint(ResultsModel):
    step: int
    heldout_reward: float | None


class AdvantageConvention(ResultsModel):
    """How the group-relative advantage is computed."""

    convention: str
    std_ddof: int
    eps: float


class TrainResults(ResultsModel):
    """Summary of one training run (a pure function of its config and ``metrics.jsonl``)."""

    schema_: Literal["collapse-probe/train/v1"] = Field(TRAIN_SCHEMA, alias="schema")
    """The results kind and version."""
    version: str | None = None
    method: str
    """The training method."""
    steps: Count
    """Steps recorded."""
    final: TrainStep
    """The last step's record (with the last held-out evaluation)."""
    first: TrainStep
    mean: dict[str, float | None] = {}
    """Mean over steps of each headline metric."""
    heldout_curve: list[HeldoutPoint] = []
    advantage: AdvantageConvention | None = None
    config: dict[str, JSON] = {}
    """The run's ``TrainConfig``."""
    usage: Usage = {}
