"""Experiment trackers, written once: W&B, MLflow, TensorBoard and trackio.

Two callers log through them: the live monitor, every step's scalars as the step closes
(:mod:`collapse_probe.integrations.monitor`), and ``--log-to``, a finished run's figures and its steps
(:func:`collapse_probe.integrations.interop.log_run`). Both open a :class:`Tracker` with :func:`open_tracker`,
call :meth:`Tracker.log` per step (and :meth:`Tracker.summary` for a finished run's figures), and
:meth:`Tracker.close` it. A tracker's package is imported only when the tracker is opened.

Where a tracker run is already open in the process (``wandb.run``, an active MLflow run) and the
caller asks to ``join`` it (the monitor inside a trainer that logs to it), the figures are logged
into that run, which is left open; otherwise the tracker opens its own run and closes it.
Nothing from the environment is logged: the configuration is the caller's (``config.json``, which
never holds a key).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from collapse_probe.errors import ConfigError, require

TRACKERS = ("wandb", "mlflow", "tensorboard", "trackio")
"""The trackers, by the name ``--log-to`` and the monitor's ``trackers`` take (each is also the name of
the module it needs)."""


class Tracker:
    """One open tracker run (the base logs nothing; each tracker below overrides what it stores)."""

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        """Scalars at ``step``."""

    def summary(self, figures: Mapping[str, float]) -> None:
        """A finished run's figures (default: logged at step 0)."""
        self.log(figures, 0)

    def artifacts(self, paths: Iterable[Path]) -> None:
        """Files kept beside the run, where the tracker stores files (MLflow)."""

    def close(self) -> str:
        """Close the run (a joined run stays open); return where the figures went."""
        return ""


class _Wandb(Tracker):
    def __init__(self, project: str, run_name: str, kind: str, config: Mapping[str, object], out: Path | None,
                 join: bool) -> None:  # fmt: skip
        wandb = require("wandb", "trackers", "the wandb tracker")
        self.owned = not (join and wandb.run is not None)
        if self.owned:
            settings = wandb.Settings(console="off", save_code=False, disable_git=True, x_disable_stats=True,
                                      silent=True)  # fmt: skip
            self.run = wandb.init(project=project, name=run_name or None, job_type=kind, config=dict(config),
                                  dir=str(out) if out else None, settings=settings, reinit="create_new")  # fmt: skip
        else:
            self.run = wandb.run

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        # a joined run counts its own steps: logging ours into it would be refused as out of order
        self.run.log(dict(scalars), step=step) if self.owned else self.run.log(dict(scalars))

    def summary(self, figures: Mapping[str, float]) -> None:
        self.run.summary.update(dict(figures))

    def close(self) -> str:
        where = str(getattr(self.run, "dir", ""))
        if self.owned:
            self.run.finish()
        return where


class _Mlflow(Tracker):
    def __init__(self, project: str, run_name: str, kind: str, config: Mapping[str, object], out: Path | None,
                 join: bool, tags: Mapping[str, str]) -> None:  # fmt: skip
        mlflow = require("mlflow", "trackers", "the mlflow tracker")
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        active = mlflow.active_run() if join else None
        uri = mlflow.get_tracking_uri()
        if active is None and join and out is not None and not uri.startswith(("http", "databricks")):
            # the run's own store, beside its other files (a database: MLflow 3 keeps file stores behind a switch)
            uri = f"sqlite:///{(out / 'mlflow.db').resolve()}"
        self.uri, self.project = uri, project
        self.client = MlflowClient(tracking_uri=uri)
        self.owned = active is None
        if active is not None:
            self.run_id = active.info.run_id
            return
        exp = self.client.get_experiment_by_name(project)
        exp_id = exp.experiment_id if exp is not None else self.client.create_experiment(project)
        self.run_id = self.client.create_run(exp_id, run_name=run_name or kind,
                                             tags={"collapse_probe.kind": kind, **tags}).info.run_id  # fmt: skip
        params = [Param(k, v[:6000]) for k, v in config_params(config).items()]
        for i in range(0, len(params), 100):  # MLflow's limit per batch: 100 parameters
            self.client.log_batch(self.run_id, params=params[i : i + 100])

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(k, float(v), now, step) for k, v in scalars.items()]
        for i in range(0, len(metrics), 1000):  # MLflow's limit per batch: 1000 metrics
            self.client.log_batch(self.run_id, metrics=metrics[i : i + 1000])

    def artifacts(self, paths: Iterable[Path]) -> None:
        for p in paths:
            if p.is_file():
                self.client.log_artifact(self.run_id, str(p))

    def close(self) -> str:
        if self.owned:
            self.client.set_terminated(self.run_id)
        return f"{self.uri} (experiment {self.project}, run {self.run_id})"


class _TensorBoard(Tracker):
    def __init__(self, logdir: Path) -> None:
        require("tensorboard", "trackers", "the tensorboard tracker")
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        logdir.mkdir(parents=True, exist_ok=True)
        self.logdir = logdir
        self.writer = EventFileWriter(str(logdir))

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary

        summary = Summary(value=[Summary.Value(tag=k, simple_value=float(v)) for k, v in scalars.items()])
        self.writer.add_event(Event(wall_time=time.time(), step=step, summary=summary))
        self.writer.flush()

    def close(self) -> str:
        self.writer.close()
        return str(self.logdir)


class _Trackio(Tracker):
    def __init__(self, project: str, run_name: str, config: Mapping[str, object]) -> None:
        self.trackio = require("trackio", "trackers", "the trackio tracker")
        self.project = project
        self.trackio.init(project=project, name=run_name or None, config=dict(config))

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        self.trackio.log(dict(scalars), step=step)

    def close(self) -> str:
        self.trackio.finish()
        return f"trackio project {self.project}"


def open_tracker(
    name: str,
    *,
    project: str = "collapse-probe",
    run_name: str = "",
    kind: str = "run",
    config: Mapping[str, object] | None = None,
    out: Path | None = None,
    logdir: Path | None = None,
    join: bool = False,
    tags: Mapping[str, str] | None = None,
) -> Tracker:
    """Open tracker ``name`` for one run.

    Args:
        name: one of :data:`TRACKERS`.
        project: the W&B project / MLflow experiment / trackio project.
        run_name: the run's name in the tracker (default: the tracker's own).
        kind: the run kind (W&B job type, an MLflow tag).
        config: the run's configuration (logged as the tracker's config / parameters).
        out: the run directory (W&B's files; with ``join`` and no MLflow server set, MLflow's store
            ``out/mlflow.db``).
        logdir: TensorBoard's log directory (default ``out/tensorboard``).
        join: log into a tracker run already open in this process (W&B, MLflow) instead of a new one.
        tags: MLflow tags of a new run.

    Raises:
        ConfigError: an unknown tracker.
        MissingDependencyError: its package is not installed (``collapse-probe[trackers]``).
    """
    cfg = dict(config or {})
    if name == "wandb":
        return _Wandb(project, run_name, kind, cfg, out, join)
    if name == "mlflow":
        return _Mlflow(project, run_name, kind, cfg, out, join, dict(tags or {}))
    if name == "tensorboard":
        return _TensorBoard(Path(logdir or (out or Path("runs")) / "tensorboard"))
    if name == "trackio":
        return _Trackio(project, run_name, cfg)
    raise ConfigError(f"unknown tracker {name!r}; known: {', '.join(TRACKERS)}")


def config_params(config: Mapping[str, object]) -> dict[str, str]:
    """A configuration flattened to ``path: value`` strings (lists and objects as JSON), three levels deep."""
    import json

    out: dict[str, str] = {}

    def walk(v: Any, path: list[str]) -> None:
        if isinstance(v, dict) and v and len(path) < 3:
            for k, x in v.items():
                walk(x, [*path, segment(k)])
        else:
            out["/".join(path)] = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)

    walk(dict(config), [])
    return out


def segment(text: Any) -> str:
    """One path segment of a figure's name, in the characters every tracker accepts (what MLflow does:
    letters, digits, ``_ - . :`` and a space)."""
    import re

    s = re.sub(r"[^A-Za-z0-9_.:\- ]", "_", str(text)).strip() or "_"
    return "_" if set(s) == {"."} else s
