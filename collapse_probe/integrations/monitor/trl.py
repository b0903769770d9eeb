"""TRL adapter: the collapse monitor inside ``trl.GRPOTrainer`` through TRL's own extension points.

- :func:`arena_reward_func` — a reward function that plays the simulator's side of a benchmark after
  each completion (the completion is the policy's turn) and returns the benchmark's reward; its
  simulator turns are shadow-sampled when the simulator came from :meth:`CollapseMonitor.wrap`.
- :func:`monitor_reward_func` — a **weight-0** reward function, listed after the rewards it watches:
  it closes the monitor's step and hands every figure to TRL's metric logging (``log_metric``), so
  they reach ``trainer.state.log_history`` and every ``report_to`` logger under ``collapse/…`` keys.
- :class:`CollapseMonitorCallback` — a ``TrainerCallback`` that stops training on an alarm when
  asked and writes the run directory's ``report.html`` at the end.
- :func:`arena_environment` — an ``environment_factory`` class for multi-turn GRPO (TRL ≥ 1.0): the
  policy talks to the simulator through a ``reply`` tool; ``get_reward`` scores the conversation.

The weight of the monitor's reward function is 0 and it returns 0 for every completion, so the summed
reward, the advantages and therefore the trained weights are exactly those of the same run without it.

Example::

    monitor = CollapseMonitor(arena=arena, out="runs/grpo-monitor")
    sim = monitor.wrap("smollm2")
    trainer = GRPOTrainer(model, reward_funcs=[arena_reward_func(arena, sim, tasks), monitor_reward_func(monitor)],
                          args=GRPOConfig(..., reward_weights=[1.0, 0.0]), train_dataset=prompt_dataset(arena, tasks),
                          callbacks=[CollapseMonitorCallback(monitor)])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from collapse_probe.core._sync import run_sync
from collapse_probe.errors import ConfigError, require
from collapse_probe.integrations.monitor._adapters import check_version
from collapse_probe.integrations.monitor._core import CollapseMonitor
from collapse_probe.integrations.monitor._play import play_policy_turn, play_simulator_turns
from collapse_probe.integrations.monitor._shadow import ShadowSimulator
from collapse_probe.models import Completion, derive_seed

SimulatorSchedule = Callable[[int], Any]
"""``step -> Participant``: which simulator plays at a training step (e.g. a switch at step K)."""


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or a conversational list of messages (last one's content)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content") or "")
    raise ConfigError(f"a GRPO completion must be a string or a list of messages, got {type(completion).__name__}")


def prompt_dataset(arena: Any, tasks: Sequence[Any]) -> Any:
    """A ``datasets.Dataset`` with one conversational ``prompt`` per task (the policy's opening view) and
    its ``task_id``: the train dataset of :func:`arena_reward_func`."""
    datasets = require("datasets", "trl", "the GRPO prompt dataset")
    rows = []
    for t in tasks:
        ep = arena.new_episode(t, 0)
        if arena.next_side(ep) != "policy":
            raise ConfigError(
                f"benchmark {arena.name}: the policy does not speak first, so a completion cannot be its turn"
            )
        prompt = arena.prompt_for(ep, "policy")
        rows.append({"prompt": [dict(m) for m in prompt.messages], "task_id": t.task_id})
    return datasets.Dataset.from_list(rows)


def arena_reward_func(
    arena: Any,
    simulator: Any,
    tasks: Sequence[Any],
    *,
    seed: int = 0,
    temperature: float = 1.0,
    name: str = "arena_reward",
) -> Callable[..., list[float | None]]:
    """A GRPO reward function: the completion is the policy's turn, the simulator answers, the arena scores.

    Args:
        arena: the benchmark (its episodes must end after one policy turn, e.g. ``P4GArena(max_turns=1)``;
            an episode that wants a second policy turn is a configuration error).
        simulator: a :class:`~collapse_probe.simulators.Participant` (from :meth:`CollapseMonitor.wrap` to
            monitor it), or a :data:`SimulatorSchedule` ``step -> Participant``.
        tasks: the tasks the dataset's ``task_id`` column refers to.
        seed: base of the conversations' seeds: completion ``i`` of step ``k`` plays with
            ``derive_seed(derive_seed(seed, k), i)``, the same with or without the monitor.
        temperature: the simulator's sampling temperature.
        name: the function's name in TRL's logs (``rewards/<name>/mean``).

    Returns:
        ``f(prompts, completions, task_id, trainer_state, **kw) -> list[float | None]`` (``None``: the
        simulator failed for infrastructure reasons; TRL then gives that completion no advantage).
    """
    by_id = {str(t.task_id): t for t in tasks}

    def reward(prompts: Sequence[Any], completions: Sequence[Any], task_id: Sequence[Any] | None = None,
               trainer_state: Any = None, **_: Any) -> list[float | None]:  # fmt: skip
        if task_id is None:
            raise ConfigError(
                "the GRPO dataset needs a task_id column (see collapse_probe.integrations.monitor.trl.prompt_dataset)"
            )
        step = int(getattr(trainer_state, "global_step", 0) or 0)
        sim = simulator(step) if callable(simulator) and not hasattr(simulator, "model") else simulator
        seed_k = derive_seed(seed, step)
        episodes, texts = [], []
        for i, (tid, comp) in enumerate(zip(task_id, completions, strict=True)):
            if str(tid) not in by_id:
                raise ConfigError(f"task_id {tid!r} of the GRPO dataset is not among the {len(by_id)} tasks given")
            ep = arena.new_episode(by_id[str(tid)], derive_seed(seed_k, i))
            if arena.next_side(ep) != "policy":
                raise ConfigError(f"benchmark {arena.name}: the policy does not speak first")
            text = completion_text(comp)
            arena.apply(ep, "policy", Completion(text=text), text)
            episodes.append(ep)
            texts.append(text)
        keys = [f"{step}:{i}" for i in range(len(episodes))]
        run_sync(play_simulator_turns(arena, episodes, sim, keys=keys, temperature=temperature))
        waiting = [ep for ep in episodes if not ep.done and arena.next_side(ep) == "policy"]
        if waiting:
            raise ConfigError(
                f"benchmark {arena.name}: a conversation wants a second policy turn, but a GRPO completion is one turn; "
                "build the arena with one round (P4GArena(max_turns=1)) or use arena_environment for multi-turn rollouts"
            )
        scorable = [ep for ep in episodes if ep.status != "infra_error"]
        scores = iter(run_sync(arena.score(scorable)) if scorable else [])
        rewards: list[float | None] = [None if ep.status == "infra_error" else next(scores).reward for ep in episodes]
        if isinstance(sim.model, ShadowSimulator):
            sim.model.monitor.record_results(rewards, groups=[str(t) for t in task_id], policy_texts=texts)
        return rewards

    reward.__name__ = name
    return reward


def monitor_reward_func(monitor: CollapseMonitor, *, name: str = "collapse_monitor") -> Callable[..., list[float]]:
    """The weight-0 reward function that closes the monitor's step and logs its figures through TRL.

    List it *after* the reward functions it watches and give it weight 0 (``reward_weights=[..., 0.0]``).
    The step is ``trainer_state.global_step`` (from 0); the figures go to ``log_metric`` as
    ``collapse/epsilon``, ``collapse/epsilon_lo`` / ``_hi``, ``collapse/reward_epsilon``,
    ``collapse/strategy_entropy``, ``collapse/sim_variance_share``, ``collapse/zero_std_share``,
    ``collapse/accumulated_epsilon``, ``collapse/alarms``, ...; the monitor's alarms go to the
    completions table through ``log_extra`` when TRL gives it.
    """
    check_version("trl")

    def collapse_monitor(prompts: Sequence[Any], completions: Sequence[Any], trainer_state: Any = None,
                         log_metric: Any = None, **_: Any) -> list[float]:  # fmt: skip
        step = int(getattr(trainer_state, "global_step", 0) or 0)
        texts = None if monitor._step.results_texts else [completion_text(c) for c in completions]
        row = monitor.end_step(step, policy_texts=texts)
        if log_metric is not None:
            for key, value in monitor.scalars(row).items():
                log_metric(key, value)
        return [0.0] * len(prompts)

    collapse_monitor.__name__ = name
    return collapse_monitor


def _callback_base() -> type:
    transformers = require("transformers", "trl", "the TRL monitor callback")
    return transformers.TrainerCallback


def CollapseMonitorCallback(monitor: CollapseMonitor, *, stop_on_alarm: bool = False) -> Any:  # noqa: N802 - a class factory
    """A ``transformers.TrainerCallback`` for the monitor: ``stop_on_alarm`` ends training after a step
    that raised a collapse alarm (``control.should_training_stop``); at the end of training it writes the
    run directory's ``report.html`` and closes the trackers."""
    check_version("trl")
    base = _callback_base()

    class _Callback(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            self.monitor = monitor
            self.stop_on_alarm = stop_on_alarm

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            last = self.monitor.rows_[-1] if self.monitor.rows_ else None
            if self.stop_on_alarm and last is not None and any(a["kind"] == "collapse" for a in last["alarms"]):
                control.should_training_stop = True
            return control

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            self.monitor.close()
            return control

    _Callback.__name__ = _Callback.__qualname__ = "CollapseMonitorCallback"
    return _Callback()


def arena_environment(arena: Any, simulator: Any, tasks: Sequence[Any], *, seed: int = 0) -> type:
    """An ``environment_factory`` class for TRL's multi-turn GRPO: one instance per rollout.

    ``reset(task_id=..., **kw)`` starts a conversation on that task; the policy speaks through the
    ``reply(message)`` tool, which returns the simulator's answer (shadow-sampled when ``simulator`` is
    monitored); ``get_reward()`` scores the conversation (TRL calls it once per finished rollout) and
    reports the reward to the monitor. Needs a chat template that supports tool calling.
    """
    by_id = {str(t.task_id): t for t in tasks}
    counter = [0]

    class ArenaEnvironment:
        def __init__(self) -> None:
            self.episode: Any = None
            self.key = ""

        def reset(self, task_id: Any = None, **kwargs: Any) -> str | None:
            task = by_id.get(str(task_id)) if task_id is not None else tasks[counter[0] % len(tasks)]
            if task is None:
                raise ConfigError(f"task_id {task_id!r} is not among the {len(by_id)} tasks given")
            counter[0] += 1
            self.key = f"env:{counter[0]}"
            self.episode = arena.new_episode(task, derive_seed(seed, counter[0]))
            return None

        def reply(self, message: str) -> str:
            """Say something to the other side of the conversation and get their answer.

            Args:
                message: what you say.

            Returns:
                The other side's answer (empty when the conversation is over).
            """
            if self.episode is None:
                raise ConfigError("reply() before reset(): TRL resets every environment before a rollout")
            return run_sync(play_policy_turn(arena, self.episode, simulator, message, key=self.key)) or ""

        def get_reward(self) -> float | None:
            ep = self.episode
            if ep is None or ep.status == "infra_error":
                return None
            while not ep.done:  # let the arena close the conversation (P4G: the donation question)
                side = arena.next_side(ep)
                if side != "simulator":
                    break
                run_sync(play_simulator_turns(arena, [ep], simulator, keys=[self.key]))
            reward = run_sync(arena.score([ep]))[0].reward
            if isinstance(simulator.model, ShadowSimulator):
                simulator.model.monitor.record_results([reward], groups=[ep.task.task_id])
            return reward

    return ArenaEnvironment
