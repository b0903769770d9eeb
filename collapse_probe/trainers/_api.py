"""``collapse_probe.train(...)`` and ``collapse_probe.lab(...)``: the trainers as one call each."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collapse_probe.core._callable import config_and_options
from collapse_probe.trainers.config import TrainConfig
from collapse_probe.trainers.lab import LabConfig

if TYPE_CHECKING:
    from collapse_probe.results import LabRunResults, TrainResults


def train(
    config: TrainConfig | Mapping[str, object] | None = None, /, *, out: str | Path, **kwargs: Any
) -> TrainResults:
    """Train a policy (:func:`~collapse_probe.trainers.run_train`) in run directory ``out``.

    ``kwargs`` are fields of :class:`~collapse_probe.trainers.TrainConfig` (overriding ``config``'s)
    and ``arena``. Returns the typed results (:class:`~collapse_probe.results.TrainResults`, what
    ``results.json`` holds; ``r.to_json()`` gives its JSON object).
    """
    from collapse_probe.trainers.llm import run_train

    cfg, options = config_and_options(TrainConfig, config, kwargs, what="collapse_probe.train", options_of=run_train)
    return run_train(cfg, out, **options)


async def train_async(
    config: TrainConfig | Mapping[str, object] | None = None, /, *, out: str | Path, **kwargs: Any
) -> TrainResults:
    """:func:`train` for async code (training runs in a worker thread; the event loop stays free)."""
    return await asyncio.to_thread(train, config, out=out, **kwargs)


def lab(config: LabConfig | Mapping[str, object] | None = None, /, **kwargs: Any) -> LabRunResults:
    """Run the tabular collapse lab (:func:`~collapse_probe.trainers.lab.run_lab`) for one method and seed.

    ``kwargs`` are fields of :class:`~collapse_probe.trainers.LabConfig` (overriding ``config``'s).
    Returns the typed results (:class:`~collapse_probe.results.LabRunResults`, what ``lab --out`` writes
    to ``results.json``): ``r.summary``, ``r.heldout_reward``, ``r.policy_entropy``; ``r.to_json()`` gives its JSON
    object.
    """
    from collapse_probe.results import LabRunResults
    from collapse_probe.trainers.lab import run_lab

    cfg, _ = config_and_options(LabConfig, config, kwargs, what="collapse_probe.lab")
    return LabRunResults.build(run_lab(cfg).to_json())


async def lab_async(config: LabConfig | Mapping[str, object] | None = None, /, **kwargs: Any) -> LabRunResults:
    """:func:`lab` for async code (the lab runs in a worker thread)."""
    return await asyncio.to_thread(lab, config, **kwargs)
