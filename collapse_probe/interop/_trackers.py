"""``--log-to wandb|mlflow|tensorboard``: a finished run's figures logged to an experiment tracker.

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

Names keep only letters, digits and ``_ - . : /`` and a space (what MLflow accepts), the same in every
tracker. Nothing from the environment is logged: the configuration comes from ``config.json``, which
never holds a key.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError, require

TRACKERS = ("wandb", "mlflow", "tensorboard")
SKIP = ("states", "config", "notices", "grounding_states")
"""Top-level keys of ``results.json`` that are not figures (per-state rows, the configuration, text)."""
_ID_FIELDS = (("policy", "simulator"), ("state_id",), ("policy",), ("simulator",), ("turn",), ("step",), ("mode",))
_BAD = re.compile(r"[^A-Za-z0-9_.:\- ]")


def _segment(text: Any) -> str:
    """One path segment of a figure's name, in the characters every tracker accepts."""
    s = _BAD.sub("_", str(text)).strip() or "_"
    return "_" if set(s) == {"."} else s


def _item_name(item: dict[str, Any], index: int) -> str:
    for fields in _ID_FIELDS:
        if all(f in item and isinstance(item[f], str | int) and not isinstance(item[f], bool) for f in fields):
            return " vs ".join(_segment(item[f]) for f in fields)
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
            yield from _walk(v, [*path, _segment(k)])
    elif isinstance(value, list):
        for i, v in enumerate(value):
            name = _item_name(v, i) if isinstance(v, dict) else str(i)
            yield from _walk(v, [*path, name])


def run_figures(results: dict[str, Any]) -> dict[str, float]:
    """Every finite number of ``results.json`` (outside :data:`SKIP`) by its path."""
    out: dict[str, float] = {}
    for k, v in results.items():
        if k in SKIP:
            continue
        for name, value in _walk(v, [_segment(k)]):
            out.setdefault(name, value)
    return out


def step_figures(metrics: list[dict[str, Any]]) -> list[tuple[int, dict[str, float]]]:
    """``(step, figures)`` of each line of a train run's ``metrics.jsonl`` (the last line of a step wins)."""
    by_step: dict[int, dict[str, float]] = {}
    for rec in metrics:
        step = rec.get("step")
        if isinstance(step, int) and not isinstance(step, bool):
            by_step[step] = {n: v for n, v in _walk({k: v for k, v in rec.items() if k != "step"}, [])}
    return sorted(by_step.items())


def config_params(config: dict[str, Any]) -> dict[str, str]:
    """``config.json`` flattened to ``path: value`` strings (lists and objects as JSON)."""
    out: dict[str, str] = {}

    def walk(v: Any, path: list[str]) -> None:
        if isinstance(v, dict) and v and len(path) < 3:
            for k, x in v.items():
                walk(x, [*path, _segment(k)])
        else:
            out["/".join(path)] = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)

    walk(config, [])
    return out


def _log_wandb(run: Any, figures: dict[str, float], steps: list[tuple[int, dict[str, float]]], project: str) -> str:
    wandb = require("wandb", "trackers", "--log-to wandb")
    settings = wandb.Settings(console="off", save_code=False, disable_git=True, x_disable_stats=True,
                              silent=True)  # fmt: skip
    wb = wandb.init(project=project, name=run.name, job_type=run.kind, config=config_params(run.config),
                    settings=settings, reinit="create_new")  # fmt: skip
    try:
        for step, values in steps:
            wb.log(values, step=step)
        wb.summary.update(figures)
        where = str(wb.dir)
    finally:
        wb.finish()
    return where


def _log_mlflow(run: Any, figures: dict[str, float], steps: list[tuple[int, dict[str, float]]], project: str) -> str:
    mlflow = require("mlflow", "trackers", "--log-to mlflow")
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    uri = mlflow.get_tracking_uri()
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(project)
    exp_id = exp.experiment_id if exp is not None else client.create_experiment(project)
    mr = client.create_run(exp_id, run_name=run.name, tags={"collapse_probe.kind": run.kind,
                                                               "collapse_probe.schema": str(run.results.get("schema"))})  # fmt: skip
    rid = mr.info.run_id
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in figures.items()]
    metrics += [Metric(k, v, now, step) for step, values in steps for k, v in values.items()]
    params = [Param(k, v[:6000]) for k, v in config_params(run.config).items()]
    for i in range(0, len(params), 100):  # MLflow's limits per batch: 100 parameters, 1000 metrics
        client.log_batch(rid, params=params[i : i + 100])
    for i in range(0, len(metrics), 1000):
        client.log_batch(rid, metrics=metrics[i : i + 1000])
    for name in ("results.json", "config.json", "report.html"):
        if (run.path / name).is_file():
            client.log_artifact(rid, str(run.path / name))
    client.set_terminated(rid)
    return f"{uri} (experiment {project}, run {rid})"


def _log_tensorboard(run: Any, figures: dict[str, float], steps: list[tuple[int, dict[str, float]]],
                     logdir: Path) -> str:  # fmt: skip
    require("tensorboard", "trackers", "--log-to tensorboard")
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    logdir.mkdir(parents=True, exist_ok=True)
    writer = EventFileWriter(str(logdir))
    try:
        for step, values in [(0, figures), *steps]:
            summary = Summary(value=[Summary.Value(tag=k, simple_value=v) for k, v in values.items()])
            writer.add_event(Event(wall_time=time.time(), step=step, summary=summary))
    finally:
        writer.close()
    return str(logdir)


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
    from collapse_probe.interop._rundata import load_run_data

    names = [t.strip() for t in trackers.split(",")] if isinstance(trackers, str) else list(trackers)
    unknown = [t for t in names if t not in TRACKERS]
    if unknown or not names:
        raise ConfigError(f"--log-to must be a comma-separated list of {', '.join(TRACKERS)}, got {trackers!r}")
    run = load_run_data(run_dir)
    figures = run_figures(run.results)
    steps = step_figures(run.metrics)
    where = {}
    for t in dict.fromkeys(names):
        if t == "wandb":
            where[t] = _log_wandb(run, figures, steps, project)
        elif t == "mlflow":
            where[t] = _log_mlflow(run, figures, steps, project)
        else:
            where[t] = _log_tensorboard(run, figures, steps, Path(tensorboard_dir or run.path / "tensorboard"))
    return where
