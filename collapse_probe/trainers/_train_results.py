"""What a training run writes besides its checkpoints: ``metrics.jsonl`` / ``rollouts.jsonl`` records,
``results.json`` (a pure function of the config and the metrics) and ``report.html``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Required, TypedDict

import numpy as np

from collapse_probe._version import __version__
from collapse_probe.trainers.config import TrainConfig

if TYPE_CHECKING:
    from collapse_probe.results import TrainResults

SCHEMA = "collapse-probe/train/v1"
METRICS = "metrics.jsonl"
ROLLOUTS = "rollouts.jsonl"
ADVANTAGE_CONVENTION = "A = (R - mean_g R) / (std_g R + eps), std with ddof=0 (population); zero-std groups: A = 0"


class RolloutAdapter(TypedDict):
    """The adapter the rollout replica engines sampled through at a step (they load it by path)."""

    path: str
    fingerprint: str
    replicas: int
    """How many replica engines loaded it."""


class StepRecord(TypedDict, total=False):
    """One line of ``metrics.jsonl``: what one training step did, its keys in the order written (read
    back as :class:`~collapse_probe.results.TrainStep`). Keys after ``policy_update_skipped`` are
    written only by the steps (or methods) that have them."""

    step: Required[int]
    """1-based step number."""
    train_reward: float | None
    zero_std_share: float | None
    zero_std_all_success_share: float | None
    zero_std_all_fail_share: float | None
    zero_std_sim_caused_share: float | None
    policy_entropy: float | None
    sim_collapse_error: float | None
    """The monitor's mean plug-in ε of the simulator (``None`` with the monitor off)."""
    loss: float | None
    seconds: float | None
    simulator: str
    n_conversations: int
    infra_failures: int
    policy_tokens: int
    policy_update_skipped: bool
    pool_member: int
    """The pool snapshot (its step) that played the simulator."""
    pool_size: int
    sim_importance_weight_mean: float
    """Mean importance weight of the simulator's examples when a lagged snapshot played them."""
    sim_collapse_error_estimate: float | None
    sim_collapse_error_ci95: list[float | None] | None
    monitor_alarms: list[str]
    """``kind`` or ``kind:view`` of each alarm the monitor raised at the step."""
    rollout_adapter: RolloutAdapter
    kl: float | None
    logprob_mismatch: float | None
    tis_clipped_share: float | None
    sim_loss: float | None
    sim_tokens: int
    heldout_reward: float | None
    heldout_reward_step: int
    """``final`` of ``results.json`` only: the step of the last held-out evaluation."""


def train_results(config: TrainConfig, metrics: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """``results.json`` content of a training run (a pure function of its config and its ``metrics.jsonl``
    records), as :class:`~collapse_probe.results.TrainResults` builds it."""

    def mean_of(key: str) -> float | None:
        vals = [v for r in metrics if isinstance(v := r.get(key), int | float) and not isinstance(v, bool)]
        return float(np.mean(vals)) if vals else None

    final: dict[str, object] = dict(metrics[-1]) if metrics else {}
    evals = [r for r in metrics if r.get("heldout_reward") is not None]
    if evals:
        final["heldout_reward"] = evals[-1]["heldout_reward"]
        final["heldout_reward_step"] = evals[-1]["step"]
    return {
        "schema": SCHEMA,
        "version": __version__,
        "method": config.method,
        "steps": len(metrics),
        "final": final,
        "first": dict(metrics[0]) if metrics else {},
        "mean": {
            k: mean_of(k) for k in ("train_reward", "zero_std_share", "policy_entropy", "sim_collapse_error", "seconds")
        },
        "heldout_curve": [{"step": r["step"], "heldout_reward": r["heldout_reward"]} for r in evals],
        "advantage": {"convention": ADVANTAGE_CONVENTION, "std_ddof": 0, "eps": config.adv_eps},
        "config": config.to_dict(),
    }


def write_train_report(
    results: TrainResults | Mapping[str, object],
    metrics: Sequence[Mapping[str, object]],
    path: str | Path,
    *,
    label: str,
) -> Path:
    """``report.html``: the training figures (reward, entropy, ε, zero-std share) and a summary table
    (drawn by the report layer: :func:`collapse_probe.report.training_plots.write_train_report`)."""
    from collapse_probe.core._reports import write_report

    out: Path = write_report("train", results, metrics, path, label=label)
    return out


def step_problem(rec: Mapping[str, object]) -> str | None:
    """What is wrong with one ``metrics.jsonl`` / ``rollouts.jsonl`` record (``None``: well formed)."""
    from collapse_probe.core._records import field_problem

    step = rec.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        return field_problem("step", "a whole number >= 0", step)
    return None
