"""verl adapter: the collapse monitor in verl's multi-turn agent loop, reward path and tracking.

verl runs the conversation in agent-loop workers and the update in the trainer process, so the
adapter has two halves that meet in a *spool* directory (:class:`~collapse_probe.monitor.CollapseMonitor`'s
``spool``):

- :class:`CollapseMonitorInteraction` — a ``verl.interactions.base.BaseInteraction``: the benchmark's
  simulator answers the policy (shadow-sampled), the arena decides when the conversation ends and
  scores it. verl's ``ToolAgentLoop`` drops an interaction's returned metadata, so the interaction keeps
  its own state per ``instance_id`` (the episode, its task, the turn count) and spools every turn and
  final reward itself. Register it in the interaction config::

      interaction:
        - name: donor
          class_name: collapse_probe.monitor.verl.CollapseMonitorInteraction
          config: {sim: smollm2, benchmark: p4g, max_turns: 3, spool: /runs/grpo/monitor-spool,
                   monitor: {shadow_fraction: 0.1, shadow_samples: 8}}

- :class:`MonitoredRewardManager` — wraps the run's reward manager in the trainer process: after the
  inner manager scores a batch it closes the monitor's step (``data.meta_info["global_steps"]``, the
  batch's ``uid`` groups), and logs the figures through verl's ``Tracking`` (its wandb / mlflow /
  tensorboard / console backends) when given one.

Without verl installed the classes keep the documented interface (``BaseInteraction`` is then
``object``), which is what the tests exercise; with verl they subclass its base class.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from collapse_probe.errors import ConfigError
from collapse_probe.models import derive_seed
from collapse_probe.monitor._config import MonitorConfig
from collapse_probe.monitor._core import CollapseMonitor
from collapse_probe.monitor._play import play_policy_turn
from collapse_probe.rollout import hash_str

try:  # the adapter works without verl (the interface is duck-typed); with it, it is a real subclass
    from verl.interactions.base import BaseInteraction as _Base
except Exception:  # noqa: BLE001 - verl's package import pulls optional GPU stacks; any failure means "absent"
    _Base = object


def _arena(config: dict[str, Any]) -> Any:
    from collapse_probe.benchmarks import DEFAULT_BENCHMARK, get_benchmark
    from collapse_probe.runspec import ArenaSpec

    name = str(config.get("benchmark", DEFAULT_BENCHMARK))
    fields = get_benchmark(name).options.model_fields  # the benchmark's own options, from the same config
    spec = ArenaSpec(name, {k: config[k] for k in fields if config.get(k) is not None})
    return spec.build([str(config["sim"])])


class CollapseMonitorInteraction(_Base):
    """A verl interaction in which a benchmark's simulator answers the policy (see the module docstring).

    Config keys: ``sim`` (a participant spec, required), ``benchmark`` (default ``p4g``), ``max_turns``,
    ``max_tokens``, ``personas``, ``seed``, ``temperature``, ``spool`` (required: the directory the
    trainer-side :class:`MonitoredRewardManager` reads), ``monitor`` (fields of :class:`MonitorConfig`).
    ``start_interaction(instance_id, task_id=...)`` picks the task (default: tasks in turn).
    """

    def __init__(self, config: dict[str, Any]) -> None:
        if _Base is not object:
            super().__init__(config)
        self.config = config
        self.name = config.get("name", "collapse_monitor")
        if "sim" not in config or "spool" not in config:
            raise ConfigError(
                "CollapseMonitorInteraction config needs 'sim' (a simulator spec) and 'spool' (a directory)"
            )
        self.arena = _arena(config)
        self.tasks = self.arena.load_tasks(None, seed=int(config.get("seed", 0)))
        self.by_id = {str(t.task_id): t for t in self.tasks}
        mon = MonitorConfig(**dict(config.get("monitor") or {}))
        self.monitor = CollapseMonitor(mon, arena=self.arena, spool=config["spool"], worker=True)
        self.simulator = self.monitor.wrap(str(config["sim"]), cache=bool(config.get("cache", False)))
        self.temperature = float(config.get("temperature", 1.0))
        self.instances_: dict[str, dict[str, Any]] = {}
        """instance_id -> {"episode", "reward"}: the state verl's agent loop does not carry for us."""
        self._count = 0

    async def start_interaction(self, instance_id: str | None = None, task_id: Any = None, **kwargs: Any) -> str:
        iid = instance_id or str(uuid.uuid4())
        if task_id is not None and str(task_id) not in self.by_id:
            raise ConfigError(f"task_id {task_id!r} is not a task of benchmark {self.arena.name}")
        task = self.by_id[str(task_id)] if task_id is not None else self.tasks[self._count % len(self.tasks)]
        self._count += 1
        seed = derive_seed(int(self.config.get("seed", 0)), hash_str(iid))
        self.instances_[iid] = {"episode": self.arena.new_episode(task, seed), "reward": None}
        return iid

    async def generate_response(
        self, instance_id: str, messages: list[dict[str, Any]], **kwargs: Any
    ) -> tuple[bool, str, float, dict[str, Any]]:
        state = self.instances_.get(instance_id)
        if state is None:
            raise ConfigError(f"generate_response for unknown instance {instance_id!r}: start_interaction first")
        ep = state["episode"]
        said = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
        text = str(said.get("content") or "") if said is not None else ""
        reply = None if said is None else await play_policy_turn(self.arena, ep, self.simulator, text, key=instance_id,
                                                                  temperature=self.temperature)  # fmt: skip
        if reply is None:
            return True, "", float(state["reward"] or 0.0), {}
        if ep.done:
            state["reward"] = None if ep.status == "infra_error" else (await self.arena.score([ep]))[0].reward
        return ep.done, reply, float(state["reward"] or 0.0), {}

    async def calculate_score(self, instance_id: str | None = None, **kwargs: Any) -> float:
        state = self.instances_.get(instance_id or "")
        return float(state["reward"] or 0.0) if state else 0.0

    async def finalize_interaction(self, instance_id: str | None = None, **kwargs: Any) -> None:
        state = self.instances_.pop(instance_id or "", None)
        if state is not None:
            ep = state["episode"]
            first = next((m["content"] for m in ep.messages if m["role"] == "policy"), None)
            self.monitor.record_results(
                [state["reward"]], groups=[ep.task.task_id], policy_texts=[first] if first else None
            )


class MonitoredRewardManager:
    """A verl reward manager that closes the monitor's step after the wrapped one scores the batch.

    Args:
        inner: the run's reward manager (``inner(data, return_dict=True)`` → ``{"reward_tensor", ...}``).
        monitor: the trainer-side monitor, with the same ``spool`` as the interactions and a run directory.
        tracking: optional ``verl.utils.tracking.Tracking`` to log the ``collapse/…`` scalars to.
    """

    def __init__(self, inner: Any, monitor: CollapseMonitor, tracking: Any = None) -> None:
        if monitor.worker:
            raise ConfigError("MonitoredRewardManager needs the trainer-side monitor (worker=False)")
        self.inner, self.monitor, self.tracking = inner, monitor, tracking
        self._steps = 0

    def __call__(self, data: Any, return_dict: bool = False) -> Any:
        out = self.inner(data, return_dict=True)
        tensor = out["reward_tensor"] if isinstance(out, dict) else out
        rewards = [float(x) for x in tensor.sum(-1).tolist()]
        uid = getattr(data, "non_tensor_batch", {}).get("uid")
        groups: Sequence[Any] | None = [str(u) for u in uid] if uid is not None else None
        step = int((getattr(data, "meta_info", {}) or {}).get("global_steps", self._steps))
        self._steps = step + 1
        self.monitor._drain_spool()  # the interactions' own rewards arrive with their turns
        self.monitor._step.rewards, self.monitor._step.groups = [], []  # the batch's rewards are the trainer's
        row = self.monitor.end_step(step, rewards=rewards, groups=groups)
        if self.tracking is not None:
            self.tracking.log(data=self.monitor.scalars(row), step=step)
        if return_dict:
            return out if isinstance(out, dict) else {"reward_tensor": out}
        return tensor
