"""Experiment trackers the monitor logs its per-step scalars to: W&B, MLflow, TensorBoard, trackio.

Each is imported only when asked for and only if installed; a missing one is a single logged notice.
A tracker run already open in the process (``wandb.run``, an active MLflow run) is logged into, not
replaced, so the figures land beside the trainer's own.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


class _Wandb:
    def __init__(self, out: Path | None, config: Mapping[str, Any]) -> None:
        import wandb

        self.wandb = wandb
        self.owned = wandb.run is None
        if self.owned:
            wandb.init(project="collapse-probe", dir=str(out) if out else None, config=dict(config), job_type="monitor")

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        self.wandb.log(dict(scalars), step=step) if self.owned else self.wandb.log(dict(scalars))

    def close(self) -> None:
        if self.owned:
            self.wandb.finish()


class _Mlflow:
    def __init__(self, out: Path | None, config: Mapping[str, Any]) -> None:
        import mlflow

        self.mlflow = mlflow
        self.owned = mlflow.active_run() is None
        if self.owned:
            if out is not None and not mlflow.get_tracking_uri().startswith(("http", "databricks")):
                mlflow.set_tracking_uri((out / "mlruns").resolve().as_uri())
            mlflow.start_run(run_name="collapse-monitor")

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        # MLflow metric names may not hold every character; "/" is allowed
        self.mlflow.log_metrics({k: float(v) for k, v in scalars.items()}, step=step)

    def close(self) -> None:
        if self.owned:
            self.mlflow.end_run()


class _TensorBoard:
    def __init__(self, out: Path | None, config: Mapping[str, Any]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str((out or Path("runs")) / "tensorboard"))

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        for k, v in scalars.items():
            self.writer.add_scalar(k, float(v), step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class _Trackio:
    def __init__(self, out: Path | None, config: Mapping[str, Any]) -> None:
        import trackio

        self.trackio = trackio
        trackio.init(project="collapse-probe", config=dict(config))

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        self.trackio.log(dict(scalars), step=step)

    def close(self) -> None:
        self.trackio.finish()


_TRACKERS: dict[str, tuple[str, type]] = {
    "wandb": ("wandb", _Wandb),
    "mlflow": ("mlflow", _Mlflow),
    "tensorboard": ("tensorboard", _TensorBoard),
    "trackio": ("trackio", _Trackio),
}


def open_trackers(names: Sequence[str], out: Path | None, config: Mapping[str, Any]) -> list[Any]:
    """The trackers among ``names`` that are installed, opened (one notice per missing one)."""
    opened = []
    for name in names:
        module, cls = _TRACKERS[name]
        if importlib.util.find_spec(module) is None:
            logger.warning(
                "monitor: tracker %s is not installed (pip install %s); its figures stay in monitor.jsonl", name, module
            )
            continue
        opened.append(cls(out, config))
    return opened
