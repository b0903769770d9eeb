"""A training run's checkpoints: ``checkpoints/step-NNNNNNNN/`` with every trained model's adapter
(peft ``save_pretrained``, safetensors), its optimizer state, the RNG states and ``trainer_state.json``.

A checkpoint is written into a temporary directory and renamed into place, so one that exists is
complete (:func:`list_checkpoints` lists only those with a ``trainer_state.json``).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from collapse_probe.errors import ConfigError, require
from collapse_probe.rollout import write_json_atomic
from collapse_probe.trainers._models import TrainedModel
from collapse_probe.trainers.population import PoolState

if TYPE_CHECKING:
    from torch import Tensor

    from collapse_probe.integrations.monitor._core import SamplingState

CHECKPOINTS = "checkpoints"

ParamState = dict[str, "Tensor | float | int"]
"""One parameter's optimizer state: its moment tensors (``exp_avg``, ...) and scalars (``step``)."""


class OptimizerStateDict(TypedDict):
    """What ``torch.optim.Optimizer.state_dict()`` returns (and ``load_state_dict`` takes)."""

    state: dict[int, ParamState]
    """Parameter index -> its state."""
    param_groups: list[dict[str, object]]
    """Each group's hyper-parameters (``lr``, ``betas``, ...) and parameter indices."""


class OptimizerMeta(TypedDict):
    """An optimizer's state in ``trainer_state.json`` without its tensors (those are in
    ``optimizer-NAME.safetensors``, keyed ``"{index}.{name}"``)."""

    param_groups: list[dict[str, object]]
    scalars: dict[str, dict[str, float | int]]
    """Parameter index (as a string) -> its non-tensor state."""


class CheckpointExtra(TypedDict, total=False):
    """The trainer's own state a checkpoint keeps besides the models (written after them, in this order)."""

    pool: PoolState
    """The population pool's members (``--schedule pool``)."""
    monitor: SamplingState
    """Where the collapse monitor's shadow sampling stands."""


class TrainerState(CheckpointExtra):
    """``trainer_state.json`` of a checkpoint."""

    step: int
    """The step the checkpoint follows."""
    optimizers: dict[str, OptimizerMeta]
    """Model name -> its optimizer's state without tensors."""
    updates: dict[str, int]
    """Model name -> optimizer steps applied."""
    versions: dict[str, int]
    """Model name -> training step of its last optimizer step."""
    python_random: list[int | list[int] | float | None]
    """:func:`random.getstate` as JSON: ``[version, the generator's state, the Gaussian carry]``."""


def list_checkpoints(out: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints ``(step, directory)`` of run directory ``out``, oldest first."""
    d = out / CHECKPOINTS
    found = []
    if d.is_dir():
        for p in d.iterdir():
            if p.name.startswith("step-") and (p / "trainer_state.json").is_file():
                with contextlib.suppress(ValueError):
                    found.append((int(p.name[5:]), p))
    return sorted(found)


def save_checkpoint(
    out: Path, step: int, models: Sequence[TrainedModel], *, keep: int, extra: CheckpointExtra | None = None
) -> Path:
    """Write ``checkpoints/step-NNNNNNNN`` atomically and keep the newest ``keep``.

    Args:
        out: the run directory.
        step: the step the checkpoint follows.
        models: the trained models (their adapters, optimizers, update counts and versions).
        keep: how many checkpoints to keep (older ones are removed).
        extra: more of the trainer's state, stored in ``trainer_state.json`` (the pool, the monitor).
    """
    torch = require("torch", "train", "checkpoints")
    st = require("safetensors.torch", "train", "checkpoints", package="safetensors")
    root = out / CHECKPOINTS
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:08d}"
    tmp = root / f".step-{step:08d}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    state: TrainerState = {"step": step, "optimizers": {}, "updates": {}, "versions": {}, "python_random": []}
    for m in models:
        m.model.save_pretrained(str(tmp / m.name), safe_serialization=True)
        tensors, meta = _flatten_optimizer(m.optimizer.state_dict())
        st.save_file(tensors, str(tmp / f"optimizer-{m.name}.safetensors"))
        state["optimizers"][m.name] = meta
        state["updates"][m.name] = m.updates
        state["versions"][m.name] = m.version
    rng = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            rng[f"cuda{i}"] = s
    st.save_file(rng, str(tmp / "rng.safetensors"))
    py_state = random.getstate()
    state["python_random"] = [py_state[0], list(py_state[1]), py_state[2]]
    if extra is not None and "pool" in extra:
        state["pool"] = extra["pool"]
    if extra is not None and "monitor" in extra:
        state["monitor"] = extra["monitor"]
    write_json_atomic(tmp / "trainer_state.json", state)
    if final.exists():
        shutil.rmtree(final)
    os.rename(tmp, final)
    for _, old in list_checkpoints(out)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_checkpoint(d: Path, models: Sequence[TrainedModel]) -> TrainerState:
    """Restore every model's adapter and optimizer and the RNG states from checkpoint directory ``d``;
    return its ``trainer_state.json`` (the caller restores the rest of its state from it).

    Raises:
        ConfigError: a model's adapter is not in the checkpoint (another method's run).
    """
    torch = require("torch", "train", "checkpoints")
    st = require("safetensors.torch", "train", "checkpoints", package="safetensors")
    state: TrainerState = json.loads((d / "trainer_state.json").read_text(encoding="utf-8"))
    for m in models:
        if not (d / m.name).is_dir():
            raise ConfigError(f"checkpoint {d} has no {m.name} adapter; it does not belong to this method")
        m.load_adapter_dir(d / m.name)
        tensors = st.load_file(str(d / f"optimizer-{m.name}.safetensors"))
        m.optimizer.load_state_dict(_unflatten_optimizer(tensors, state["optimizers"][m.name]))
        m.updates = int(state["updates"][m.name])
        m.version = int(state["versions"][m.name])
    rng = st.load_file(str(d / "rng.safetensors"))
    torch.set_rng_state(rng["torch"])
    if torch.cuda.is_available():
        cuda = [rng[k] for k in sorted(k for k in rng if k.startswith("cuda"))]
        if len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda)
    random.setstate(_python_random(state["python_random"], d))
    return state


def _python_random(saved: list[int | list[int] | float | None], d: Path) -> tuple[int, tuple[int, ...], float | None]:
    """The :func:`random.setstate` argument a checkpoint stored (:attr:`TrainerState.python_random`)."""
    if len(saved) == 3:
        version, internal, gauss = saved
        if isinstance(version, int) and isinstance(internal, list) and (gauss is None or isinstance(gauss, float)):
            return version, tuple(internal), gauss
    raise ConfigError(
        f"checkpoint {d}: trainer_state.json field python_random is {saved!r:.80}; expected random.getstate()"
    )


def _flatten_optimizer(state: OptimizerStateDict) -> tuple[dict[str, Tensor], OptimizerMeta]:
    """An optimizer's state split into its tensors (``"{index}.{name}"``) and the rest."""
    from torch import Tensor

    tensors: dict[str, Tensor] = {}
    scalars: dict[str, dict[str, float | int]] = {}
    for idx, param in state["state"].items():
        for key, v in param.items():
            if isinstance(v, Tensor):
                tensors[f"{idx}.{key}"] = v.detach().cpu().contiguous().clone()
            else:
                scalars.setdefault(str(idx), {})[key] = v
    return tensors, {"param_groups": state["param_groups"], "scalars": scalars}


def _unflatten_optimizer(tensors: dict[str, Tensor], meta: OptimizerMeta) -> OptimizerStateDict:
    """The inverse of :func:`_flatten_optimizer`."""
    state: dict[int, ParamState] = {}
    for name, v in tensors.items():
        idx, key = name.split(".", 1)
        state.setdefault(int(idx), {})[key] = v
    for idx_s, kv in meta.get("scalars", {}).items():
        state.setdefault(int(idx_s), {}).update(kv)
    return {"state": state, "param_groups": meta["param_groups"]}
