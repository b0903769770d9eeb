"""Experiment trackers the monitor logs its per-step scalars to: W&B, MLflow, TensorBoard, trackio
(:mod:`collapse_probe.core._trackers`, the same trackers ``--log-to`` uses).

Each is imported only when asked for and only if installed; a missing one is a single logged notice.
A tracker run already open in the process (``wandb.run``, an active MLflow run) is logged into, not
replaced, so the figures land beside the trainer's own.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from collapse_probe.core._trackers import Tracker, open_tracker

logger = logging.getLogger(__name__)


def open_trackers(names: Sequence[str], out: Path | None, config: Mapping[str, object]) -> list[Tracker]:
    """The trackers among ``names`` that are installed, opened (one notice per missing one)."""
    opened = []
    for name in names:
        if importlib.util.find_spec(name) is None:  # each tracker's module is its name
            logger.warning(
                "monitor: tracker %s is not installed (pip install %s); its figures stay in monitor.jsonl", name, name
            )
            continue
        opened.append(
            open_tracker(name, run_name="collapse-monitor", kind="monitor", config=config, out=out, join=True)
        )
    return opened
