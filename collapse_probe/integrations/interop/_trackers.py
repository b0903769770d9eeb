"""``--log-to wandb|mlflow|tensorboard|trackio``: a finished run's figures logged to an experiment tracker
(the trackers themselves: :mod:`collapse_probe.core._trackers`, shared with the live monitor).

The figures are ``results.json``'s own numbers, read from the run directory after the run
(:func:`run_figures`), never recomputed, so a tracker shows exactly what ``results.json`` says: every
finite number in it, keyed by its path (``summary/collapse_error/estimate``,
``cells/<policy> vs <simulator>/mean_reward``, ``transfer/<policy>/transfer_ratio``; items of a list
are named by their ``state_id``, ``policy``/``simulator``, ``turn`` or ``step``, else their index),
except the per-state rows (``states``) and the run's configuration, which is logged as parameters. A
train run also logs each step of ``metrics.jsonl`` at its step.

- W&B (``wandb``): one run in project ``--log-project`` (default ``collapse-probe``); figures in its
  summary, steps in its history, the configuration as its config. ``WANDB_MODE=offline`` keeps it on
  disk (``WANDB_DIR``); online it needs ``WANDB_API_KEY``, read by wandb itself.
- MLflow (``mlflow``): one run in experiment ``--log-project`` at ``mlflow.get_tracking_uri()``
  (``$MLFLOW_TRACKING_URI``); figures as metrics at step 0, steps as metrics at their step, the
  configuration as parameters, and ``results.json``, ``config.json`` and ``report.html`` as artifacts.
- TensorBoard (``tensorboard``): an event file in ``--tensorboard-dir`` (default ``RUN_DIR/tensorboard``);
  figures as scalars at step 0, steps at their step (TensorBoard stores scalars as float32).
- trackio (``trackio``): one run in project ``--log-project``; figures at step 0, steps at their step.

Names keep only letters, digits and ``_ - . : /`` and a space (what MLflow accepts), the same in every
tracker. Nothing from the environment is logged: the configuration comes from ``config.json``, which
never holds a key.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from collapse_probe.core._trackers import TRACKERS, open_tracker, segment
from collapse_probe.errors import ConfigError

SKIP = ("states", "config", "notices", "grounding_states")
"""Top-level keys of ``results.json`` that are not figures (per-state rows, the configuration, text)."""
_ID_FIELDS = (("policy", "simulator"), ("state_id",), ("policy",), ("simulator",), ("turn",), ("step",), ("mode",))


def _item_name(item: Mapping[str, object], index: int) -> str:
    for fields in _ID_FIELDS:
        if all(f in item and isinstance(item[f], str | int) and not isinstance(item[f], bool) for f in fields):
            return " vs ".join(segment(item[f]) for f in fields)
    return str(index)


def _walk(value: Any, path: list[str]) -> Iterator[tuple[str, float]]:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int | float):
        if math.isfinite(value):
            yield "/".join(path), float(value)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, [*path, segment(k)])
    elif isinstance(value, list):
        for i, v in enumerate(value):
            name = _item_name(v, i) if isinstance(v, dict) else str(i)
            yield from _walk(v, [*path, name])


def run_figures(results: Mapping[str, object]) -> dict[str, float]:
    """Every finite number of ``results.json`` (outside :data:`SKIP`) by its path."""
    out: dict[str, float] = {}
    for k, v in results.items():
        if k in SKIP:
            continue
        for name, value in _walk(v, [segment(k)]):
            out.setdefault(name, value)
    return out


def step_figures(metrics: Sequence[Mapping[str, object]]) -> list[tuple[int, dict[str, float]]]:
    """``(step, figures)`` of each line of a train run's ``metrics.jsonl`` (the last line of a step wins)."""
    by_step: dict[int, dict[str, float]] = {}
    for rec in metrics:
        step = rec.get("step")
        if isinstance(step, int) and not isinstance(step, bool):
            by_step[step] = {n: v for n, v in _walk({k: v for k, v in rec.items() if k != "step"}, [])}
    return sorted(by_step.items())


def check_trackers(trackers: str | list[str]) -> list[str]:
    """The trackers named (``wandb``, ``mlflow``, ``tensorboard``, ``trackio``; a list or comma-separated),
    each known and its package installed, checked before a run starts.

    Raises:
        ConfigError: an unknown tracker, or none.
        MissingDependencyError: a tracker's package is not installed (``collapse-probe[trackers]``).
    """
    from collapse_probe.errors import require

    names = [t.strip() for t in trackers.split(",")] if isinstance(trackers, str) else [str(t) for t in trackers]
    bad = [t for t in names if t not in TRACKERS]
    if bad or not names:
        raise ConfigError(f"--log-to: unknown tracker {', '.join(map(repr, bad))}; expected {', '.join(TRACKERS)}")
    for t in names:
        require(t, "trackers", f"--log-to {t}")
    return list(dict.fromkeys(names))


def log_run(run_dir: str | Path, trackers: str | list[str], *, project: str = "collapse-probe",
            tensorboard_dir: str | Path | None = None) -> dict[str, str]:  # fmt: skip
    """Log a finished run's figures to each tracker; return tracker -> where it went.

    Args:
        run_dir: the run directory (its ``results.json`` must exist).
        trackers: ``wandb``, ``mlflow``, ``tensorboard``, or a comma-separated list of them.
        project: W&B project / MLflow experiment.
        tensorboard_dir: TensorBoard log directory (default ``run_dir/tensorboard``).

    Raises:
        ConfigError: an unknown tracker or a run without results.
        MissingDependencyError: the tracker's package is not installed (``collapse-probe[trackers]``).
    """
    from collapse_probe.integrations.interop._rundata import load_run_data

    names = check_trackers(trackers)
    run = load_run_data(run_dir)
    figures = run_figures(run.results)
    steps = step_figures(run.metrics)
    where = {}
    for t in names:
        tracker = open_tracker(
            t, project=project, run_name=run.name, kind=run.kind, config=run.config,
            logdir=Path(tensorboard_dir or run.path / "tensorboard"),
            tags={"collapse_probe.schema": str(run.results.get("schema"))},
        )  # fmt: skip
        try:
            for step, values in steps:
                tracker.log(values, step)
            tracker.summary(figures)
            tracker.artifacts(run.path / name for name in ("results.json", "config.json", "report.html"))
        finally:
            where[t] = tracker.close()
    return where
