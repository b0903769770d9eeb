"""OpenRLHF adapter: the collapse monitor inside OpenRLHF's multi-turn agent API.

OpenRLHF (``--train.agent_func_path agent.py``, OpenRLHF 0.11) imports ``AgentExecutor`` from the given
file and runs it inside its rollout actors; what a rollout's last step returns under ``extra_logs`` goes
into the sample's ``Experience.info`` and is averaged into the trainer's logged metrics.
:func:`agent_classes` builds the executor and its agent instance::

    # agent.py
    from collapse_probe.integrations.monitor.openrlhf import agent_classes
    AgentInstance, AgentExecutor = agent_classes(sim="smollm2", rollouts_per_step=256,
                                   out="runs/openrlhf-monitor", monitor={"shadow_fraction": 0.1})

The dataset's ``label`` is the task id. Each ``step`` plays the policy's action as its turn, lets the
simulator answer (shadow-sampled), and returns the reply as the environment feedback and the arena's
reward when the conversation ends. A rollout actor does not know OpenRLHF's training step, so each
actor's monitor closes a step after every ``rollouts_per_step`` finished rollouts (set it to the rollout
batch size × samples per prompt that one actor plays) and writes its rows to
``out/actor-<pid>/monitor.jsonl``.

``extra_logs`` carries the same keys in every sample from the first one on (OpenRLHF concatenates the
samples' logs and splits them again by batch size, so a key missing from some samples stops training):
the figures of the last monitor step closed when the rollout started, NaN in all of them before the
first step has closed. All rollouts of one batch start after the previous batch's step closed, so the
samples of a batch carry the same figures and OpenRLHF's mean over them is that step's figure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypedDict

from pydantic import Field

from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK
from collapse_probe.core._constraints import Config, Integer, rule
from collapse_probe.core.limits import MAX_CONVERSATIONS, MAX_SEED, MAX_TURNS
from collapse_probe.errors import ConfigError, require
from collapse_probe.integrations.monitor._adapters import check_version, fixed_scalars, framework_error
from collapse_probe.integrations.monitor._config import MonitorConfig
from collapse_probe.integrations.monitor._core import CollapseMonitor
from collapse_probe.integrations.monitor._play import play_policy_turn
from collapse_probe.models import derive_seed
from collapse_probe.rollout import hash_str


class SessionSettings(Config):
    """What :class:`ArenaSession` (and :func:`agent_classes`) take, checked once: one line naming the setting."""

    FLAG_FORMAT: ClassVar[str] = "openrlhf {name}"

    sim: Annotated[str, Field(min_length=1)]
    """The simulator: a participant spec."""
    benchmark: Annotated[str, Field(min_length=1)] = DEFAULT_BENCHMARK
    """The benchmark."""
    rollouts_per_step: Annotated[int, Integer(1, most=MAX_CONVERSATIONS)]
    """Finished rollouts per monitor step."""
    out: Annotated[str | None, Field(min_length=1)] = None
    """The monitors' run directory (one per actor process inside it)."""
    monitor: dict[str, Any] | None = None
    """Fields of MonitorConfig."""
    max_turns: Annotated[int | None, Integer(1, optional=True, most=MAX_TURNS)] = None
    """Conversation rounds."""
    seed: Annotated[int, Integer(0, most=MAX_SEED)] = 0
    """Base seed of the conversations and of the task order."""
    feedback: str = "\n{reply}\n"
    """What the policy sees after its turn: ``{reply}`` is the simulator's reply."""

    @rule
    def _feedback_names_the_reply_only(self) -> None:
        try:
            self.feedback.format(reply="")
        except (KeyError, IndexError, ValueError, AttributeError) as exc:
            raise ConfigError(
                f"openrlhf feedback: expected text with {{reply}} (and doubled braces for literal ones), got "
                f"{self.feedback!r:.200} ({type(exc).__name__}: {exc})"
            ) from None


class ArenaSession:
    """The framework-free half: one process's arena, monitored simulator and step counting."""

    def __init__(self, *, sim: str, benchmark: str = DEFAULT_BENCHMARK, rollouts_per_step: int, out: str | Path | None = None,
                 monitor: dict[str, Any] | None = None, max_turns: int | None = None, seed: int = 0,
                 feedback: str = "\n{reply}\n") -> None:  # fmt: skip
        from collapse_probe.rollout.runspec import ArenaSpec

        SessionSettings(sim=sim, benchmark=benchmark, rollouts_per_step=rollouts_per_step,
                        out=None if out is None else str(out), monitor=monitor, max_turns=max_turns, seed=seed,
                        feedback=feedback)  # fmt: skip
        self.arena = ArenaSpec.from_dict({"benchmark": benchmark, "max_turns": max_turns}).build([sim])
        self.by_id = {str(t.task_id): t for t in self.arena.load_tasks(None, seed=seed)}
        where = Path(out) / f"actor-{os.getpid()}" if out is not None else None
        self.monitor = CollapseMonitor(MonitorConfig(**dict(monitor or {})), arena=self.arena, out=where)
        self.simulator = self.monitor.wrap(sim)
        self.rollouts_per_step = rollouts_per_step
        self.seed = seed
        self.feedback = feedback
        self.finished = 0
        self.step = 0
        self.scalars: dict[str, float] = fixed_scalars(self.monitor, None)
        """The ``collapse/…`` figures of the last closed step, every key always present (NaN: not measured
        yet); a rollout's ``extra_logs`` are the ones current when it started."""

    def new_episode(self, label: Any, key: str) -> Any:
        if str(label) not in self.by_id:
            raise ConfigError(f"label {label!r} is not a task id of benchmark {self.arena.name}")
        return self.arena.new_episode(self.by_id[str(label)], derive_seed(self.seed, hash_str(key)))

    async def turn(self, episode: Any, key: str, action: str) -> tuple[str, float | None, bool]:
        """Play ``action`` as the policy's turn; return ``(feedback, reward or None, done)``."""
        reply = await play_policy_turn(self.arena, episode, self.simulator, action, key=key)
        if reply is None:
            return "", None, True
        if not episode.done:
            return self.feedback.format(reply=reply), None, False
        reward = None if episode.status == "infra_error" else (await self.arena.score([episode]))[0].reward
        first = next((m["content"] for m in episode.messages if m["role"] == "policy"), None)
        self.monitor.record_results([reward], groups=[episode.task.task_id], policy_texts=[first] if first else None)
        self.finished += 1
        if self.finished % self.rollouts_per_step == 0:
            row = await self.monitor.aend_step(self.step)
            self.scalars = fixed_scalars(self.monitor, row)
            self.step += 1
        return self.feedback.format(reply=reply), reward, True


class ResetResult(TypedDict):
    """What an OpenRLHF agent instance's ``reset`` returns."""

    observation: object
    """The prompt OpenRLHF gave, unchanged."""


class StepResult(TypedDict):
    """What an OpenRLHF agent instance's ``step`` returns (tensors are ``torch.Tensor``)."""

    rewards: object
    scores: object
    environment_feedback: str
    """What the policy sees after its turn (``feedback`` with the simulator's reply)."""
    done: bool
    sampling_params: object
    extra_logs: dict[str, object]
    """The monitor's figures current when the rollout started, as tensors."""


def agent_classes(**session: Any) -> tuple[type, type]:
    """``(AgentInstance, AgentExecutor)`` for OpenRLHF's ``--train.agent_func_path`` (see the module
    docstring); keyword arguments go to :class:`ArenaSession` (built once per rollout actor, on first use).

    Raises:
        ConfigError: OpenRLHF's agent module does not import (one line naming the tested and the
            installed release; ``openrlhf/utils/agent.py`` needs ``aiohttp``).
    """
    torch = require("torch", "openrlhf", "the OpenRLHF agent")
    try:
        import openrlhf.utils.agent as agent
    except ImportError as exc:
        framework_error("openrlhf", exc)
    check_version("openrlhf")
    base_instance: Any = agent.AgentInstanceBase
    base_executor: Any = agent.MultiTurnAgentExecutor
    holder: dict[str, ArenaSession] = {}

    def current() -> ArenaSession:
        if "s" not in holder:
            holder["s"] = ArenaSession(**session)
        return holder["s"]

    class AgentInstance(base_instance):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.session = current()
            self.episode: Any = None
            self.key = ""
            self.logs = dict(self.session.scalars)

        async def reset(self, states: Mapping[str, object], **kwargs: Any) -> ResetResult:
            self.key = f"{os.getpid()}:{id(self):x}:{self.session.finished}"
            self.episode = self.session.new_episode(states.get("label"), self.key)
            self.logs = dict(self.session.scalars)  # the figures current when this rollout starts
            return {"observation": states["observation"]}

        async def step(self, states: Mapping[str, object], **kwargs: Any) -> StepResult:
            feedback, reward, done = await self.session.turn(
                self.episode, self.key, str(states.get("action_text") or "")
            )
            r = torch.tensor(0.0 if reward is None else float(reward))
            logs = {k: torch.tensor(v) for k, v in self.logs.items()}
            return {"rewards": r, "scores": r, "environment_feedback": feedback, "done": done,
                    "sampling_params": states.get("sampling_params"), "extra_logs": logs}  # fmt: skip

    class AgentExecutor(base_executor):
        def __init__(self) -> None:
            super().__init__(AgentInstance)

    return AgentInstance, AgentExecutor
