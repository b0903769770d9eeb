"""What a training run writes besides its checkpoints: ``metrics.jsonl`` / ``rollouts.jsonl`` records,
``results.json`` (a pure function of the config and the metrics) and ``report.html``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from collapse_probe._version import __version__
from collapse_probe.trainers.config import TrainConfig

SCHEMA = "collapse-probe/train/v1"
METRICS = "metrics.jsonl"
ROLLOUTS = "rollouts.jsonl"
ADVANTAGE_CONVENTION = "A = (R - mean_g R) / (std_g R + eps), std with ddof=0 (population); zero-std groups: A = 0"


def train_results(config: TrainConfig, metrics: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``results.json`` content of a training run (a pure function of its config and metrics)."""

    def mean_of(key: str) -> float | None:
        vals = [r[key] for r in metrics if isinstance(r.get(key), int | float) and not isinstance(r.get(key), bool)]
        return float(np.mean(vals)) if vals else None

    final: dict[str, Any] = dict(metrics[-1]) if metrics else {}
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
    results: dict[str, Any], metrics: Sequence[dict[str, Any]], path: str | Path, *, label: str
) -> Path:
    """``report.html``: the training figures (reward, entropy, ε, zero-std share) and a summary table
    (drawn by the report layer: :func:`collapse_probe.report.training_plots.write_train_report`)."""
    from collapse_probe.core._reports import write_report

    out: Path = write_report("train", results, metrics, path, label=label)
    return out


def step_problem(rec: dict[str, Any]) -> str | None:
    """What is wrong with one ``metrics.jsonl`` / ``rollouts.jsonl`` record (``None``: well formed)."""
    from collapse_probe.core._records import field_problem

    step = rec.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        return field_problem("step", "a whole number >= 0", step)
    return None
