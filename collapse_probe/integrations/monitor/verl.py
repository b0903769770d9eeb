"""verl adapter (verl 0.9): the collapse monitor as a verl agent loop and a verl reward manager.

verl plays multi-turn rollouts in *agent loops* (``AgentLoopBase`` subclasses registered with
``@register(name)``, run by agent-loop workers in Ray actors) and scores them in *reward managers*
(``RewardManagerBase.run_single``, per sample, in reward-loop workers). The adapter is one of each; they
meet in a *spool* directory (:class:`~collapse_probe.integrations.monitor.CollapseMonitor`'s ``spool``):

- :class:`CollapseMonitorAgentLoop` — a ``ToolAgentLoop`` registered as ``collapse_monitor``: verl's
  machinery generates the policy's turns and keeps the tokens; after each policy turn the benchmark's
  simulator answers (shadow-sampled at the monitor's fraction of its turns, spooled), its reply is the
  next ``user`` message, and the arena decides when the conversation ends. The arena's reward, the task
  and the policy's opening travel with the sample in its ``extra_fields["collapse_probe"]``.
- :class:`CollapseMonitorRewardManager` — a ``RewardManagerBase``: returns the arena's reward as the
  sample's ``reward_score``, records it in the trainer-side monitor, and closes the monitor's step after
  every ``rollouts_per_step`` scored samples (default: ``data.train_batch_size`` ×
  ``actor_rollout_ref.rollout.n``, one training step), taking the spooled turns. Its
  ``reward_extra_info`` has the same ``collapse/…`` keys in every sample (NaN before the first step
  closes), so verl's batch assembly, which takes the keys of the first sample, always finds them.

Both read one config section, ``collapse_monitor`` (see :data:`SETTINGS`), and verl loads both by name::

    # agent_loops.yaml (actor_rollout_ref.rollout.agent.agent_loop_config_path=agent_loops.yaml)
    - name: collapse_monitor
      _target_: collapse_probe.integrations.monitor.verl.CollapseMonitorAgentLoop

    python -m verl.trainer.main_ppo ... data.train_files=p4g.parquet \\
      actor_rollout_ref.rollout.agent.agent_loop_config_path=agent_loops.yaml \\
      reward.reward_manager.source=importlib reward.reward_manager.module.path=pkg://collapse_probe.integrations.monitor.verl \\
      reward.reward_manager.name=CollapseMonitorRewardManager reward.num_workers=1 \\
      +collapse_monitor.sim=smollm2 +collapse_monitor.spool=/runs/grpo/spool +collapse_monitor.out=/runs/grpo/monitor

:func:`write_dataset` writes the parquet file (one row per task: the policy's opening view as the
prompt, ``agent_name`` ``collapse_monitor``, the task id in ``extra_info``). The classes subclass verl's
own and are built on first use; a verl outside the tested releases is named in one warning, and one
whose agent-loop or reward-loop modules do not import is a :class:`~collapse_probe.errors.ConfigError`
naming the versions. :class:`RolloutSession` and :class:`RewardSession` are the framework-free halves.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK
from collapse_probe.core._constraints import Config, Integer, Number
from collapse_probe.core.limits import MAX_CONVERSATIONS, MAX_SEED
from collapse_probe.errors import ConfigError, require
from collapse_probe.integrations.monitor._adapters import check_version, fixed_scalars, framework_error
from collapse_probe.integrations.monitor._config import MonitorConfig
from collapse_probe.integrations.monitor._core import CollapseMonitor
from collapse_probe.integrations.monitor._play import play_policy_turn, play_simulator_turns
from collapse_probe.models import derive_seed
from collapse_probe.rollout import hash_str

AGENT_NAME = "collapse_monitor"
"""The agent loop's registered name (the dataset's ``agent_name``) and the config section's name."""

FIELD = "collapse_probe"
"""The sample's extra field with the arena's reward, the task, the policy's opening and the status."""

SETTINGS = {
    "sim": "the simulator: a participant spec (required)",
    "spool": "directory shared by the agent loops and the reward manager (required)",
    "out": "the trainer-side monitor's run directory (monitor.jsonl, report.html)",
    "benchmark": "the benchmark (default p4g); its own options (max_turns, personas, ...) sit beside it",
    "seed": "base seed of the conversations and of the task order (default 0)",
    "temperature": "the simulator's sampling temperature (default 1.0)",
    "rollouts_per_step": "scored samples per monitor step (default data.train_batch_size x rollout.n)",
    "monitor": "fields of MonitorConfig (shadow_fraction, shadow_samples, ...)",
    "cache": "serve the simulator's training replies through the response cache (default false)",
}
"""The keys of the ``collapse_monitor`` config section (and of the agent loop's YAML entry); a
benchmark's own options (``max_turns``, ``personas``, ``max_tokens``, ...) are accepted beside them."""

_LOCK = threading.Lock()
_SESSIONS: dict[str, RolloutSession | RewardSession] = {}


def _plain(value: Any) -> Any:
    """An OmegaConf node as plain Python (verl's config is a DictConfig)."""
    if hasattr(value, "_metadata") and hasattr(value, "_get_full_key"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(value, resolve=True)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


class VerlSettings(Config):
    """The adapter's own keys of the ``collapse_monitor`` section (:data:`SETTINGS`), each checked once
    with one line naming ``collapse_monitor.KEY``; a benchmark's options beside them are checked by
    the benchmark when the arena is built."""

    FLAG_FORMAT: ClassVar[str] = AGENT_NAME + ".{name}"

    sim: Annotated[str, Field(min_length=1)]
    """The simulator: a participant spec."""
    spool: Annotated[str, Field(min_length=1)]
    """Directory shared by the agent loops and the reward manager."""
    out: Annotated[str | None, Field(min_length=1)] = None
    """The trainer-side monitor's run directory."""
    benchmark: Annotated[str, Field(min_length=1)] = DEFAULT_BENCHMARK
    """The benchmark."""
    seed: Annotated[int, Integer(0, most=MAX_SEED)] = 0
    """Base seed of the conversations and of the task order."""
    temperature: Annotated[float, Number(ge=0)] = 1.0
    """The simulator's sampling temperature."""
    rollouts_per_step: Annotated[int | None, Integer(1, optional=True, most=MAX_CONVERSATIONS)] = None
    """Scored samples per monitor step."""
    monitor: dict[str, Any] = {}
    """Fields of MonitorConfig."""
    cache: bool = False
    """Serve the simulator's training replies through the response cache."""


def _section(value: object, where: str) -> dict[str, Any]:
    plain = _plain(value)
    if plain is None:
        return {}
    if not isinstance(plain, Mapping):
        raise ConfigError(f"{where}: expected a mapping of settings (key: value), got {type(plain).__name__}")
    return {str(k): v for k, v in plain.items()}


def check_settings(settings: object) -> dict[str, Any]:
    """The ``collapse_monitor`` settings checked: a mapping, ``sim`` and ``spool`` present, every key
    known (:data:`SETTINGS` or an option of the benchmark), the adapter's own keys of the right type
    and range (:class:`VerlSettings`) and ``monitor`` a valid :class:`MonitorConfig`.

    Raises:
        ConfigError: one line naming the setting (``collapse_monitor.seed must be ...``).
    """
    from collapse_probe.benchmarks import get_benchmark

    merged = _section(settings, AGENT_NAME)
    for key in ("sim", "spool"):
        if merged.get(key) is None or merged.get(key) == "":
            raise ConfigError(
                f"{AGENT_NAME}.{key} is required ({SETTINGS[key]}): add +{AGENT_NAME}.{key}=... to verl's config"
            )
    own = VerlSettings(**{k: v for k, v in merged.items() if k in SETTINGS})
    known = set(SETTINGS) | set(get_benchmark(own.benchmark).options.model_fields)  # an unknown name: one line
    unknown = sorted(set(merged) - known)
    if unknown:
        raise ConfigError(f"{AGENT_NAME}.{unknown[0]}: unknown setting; known: {', '.join(sorted(known))}")
    bench = get_benchmark(own.benchmark)
    try:
        MonitorConfig(**_section(own.monitor, f"{AGENT_NAME}.monitor"))
        bench.parse({k: v for k, v in merged.items() if k in bench.options.model_fields and v is not None})
    except ConfigError as exc:
        text = str(exc)
        raise ConfigError(text if text.startswith(AGENT_NAME) else f"{AGENT_NAME}: {text}") from None
    return {**merged, **{k: getattr(own, k) for k in merged if k in SETTINGS}}


def settings_from(config: Any, overrides: Mapping[str, object] | None = None) -> dict[str, Any]:
    """The ``collapse_monitor`` section of verl's config, with ``overrides`` (an agent-loop YAML entry's
    keys) on top; checked by :func:`check_settings`."""
    section = config.get(AGENT_NAME) if config is not None and hasattr(config, "get") else None
    merged = _section(section, AGENT_NAME)
    merged.update(_section(overrides, f"the agent loop's {AGENT_NAME} entry"))
    return check_settings(merged)


class CollapseField(TypedDict):
    """A sample's ``collapse_probe`` field as :meth:`RolloutSession.finish` writes it (read back as
    :class:`SampleInfo`)."""

    reward: float | None
    """The arena's reward (``None``: an infrastructure failure, not scored)."""
    task_id: str
    opening: str | None
    """The policy's first message (its strategy)."""
    status: str
    validate: bool
    """A validation sample (played with the unmonitored simulator, not recorded)."""
    rollout: str
    """The conversation's key."""


class RewardResult(TypedDict):
    """What :class:`CollapseMonitorRewardManager` returns to verl for one sample."""

    reward_score: float
    reward_extra_info: dict[str, float]
    """The monitor's figures of the last closed step (and ``unscored``)."""


class SampleInfo(BaseModel):
    """A sample's ``collapse_probe`` field as :meth:`RolloutSession.finish` writes it."""

    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)

    reward: float | None = Field(None, allow_inf_nan=False)
    task_id: str | int | None = None
    opening: str | None = None
    validate_: bool = Field(False, alias="validate")


def _sample_info(info: Any) -> SampleInfo:
    if not isinstance(info, Mapping):
        raise ConfigError(
            f"the sample's {FIELD} field: expected a mapping (reward, task_id, opening, ...), got {type(info).__name__}"
        )
    try:
        return SampleInfo.model_validate(dict(info))
    except ValidationError as exc:
        err = exc.errors()[0]
        at = str(err.get("loc", ("",))[0])
        raise ConfigError(f"the sample's {FIELD}.{at}: {err.get('msg')}, got {err.get('input')!r:.200}") from None


def _arena(settings: Mapping[str, object]) -> Any:
    from collapse_probe.benchmarks import DEFAULT_BENCHMARK, get_benchmark
    from collapse_probe.rollout.runspec import ArenaSpec

    name = str(settings.get("benchmark", DEFAULT_BENCHMARK))
    fields = get_benchmark(name).options.model_fields  # the benchmark's own options, from the same section
    spec = ArenaSpec(name, {k: settings[k] for k in fields if settings.get(k) is not None})
    return spec.build([str(settings["sim"])])


def _cached(
    kind: str, settings: Mapping[str, object], make: Callable[[], RolloutSession | RewardSession]
) -> RolloutSession | RewardSession:
    key = kind + json.dumps(settings, sort_keys=True, default=str)
    with _LOCK:
        if key not in _SESSIONS:
            _SESSIONS[key] = make()
        return _SESSIONS[key]


class RolloutSession:
    """The agent-loop side in one process: the arena, the worker monitor (spooling) and its simulator.

    verl builds a new agent loop per sample; they share this session (:func:`rollout_session`).
    """

    def __init__(self, settings: Mapping[str, object]) -> None:
        from collapse_probe.simulators import make_participant

        checked = check_settings(settings)
        self.settings = dict(checked)
        self.arena = _arena(checked)
        self.seed = int(checked.get("seed", 0))
        self.tasks = self.arena.load_tasks(None, seed=self.seed)
        self.by_id = {str(t.task_id): t for t in self.tasks}
        config = MonitorConfig(**dict(checked.get("monitor") or {}))
        self.monitor = CollapseMonitor(config, arena=self.arena, spool=checked["spool"], worker=True)
        cache = bool(checked.get("cache", False))
        self.simulator = self.monitor.wrap(str(checked["sim"]), cache=cache)
        self.plain = make_participant(str(checked["sim"]), cache=cache)
        """The same simulator unmonitored: validation rollouts are not training steps."""
        self.temperature = float(checked.get("temperature", 1.0))
        self._count = 0

    def new_episode(self, task_id: Any, key: str) -> Any:
        """A conversation on task ``task_id`` (``None``: the tasks in turn), seeded from ``key``."""
        if task_id is None:
            task = self.tasks[self._count % len(self.tasks)]
        elif str(task_id) in self.by_id:
            task = self.by_id[str(task_id)]
        else:
            raise ConfigError(f"extra_info.task_id {task_id!r} is not a task of benchmark {self.arena.name}")
        self._count += 1
        return self.arena.new_episode(task, derive_seed(self.seed, hash_str(key)))

    async def policy_turn(self, episode: Any, text: str, key: str, *, validate: bool = False) -> str | None:
        """The policy says ``text``; the simulator's reply (``None``: the conversation is over)."""
        sim = self.plain if validate else self.simulator
        return await play_policy_turn(self.arena, episode, sim, text, key=key, temperature=self.temperature)

    async def finish(self, episode: Any, key: str, *, validate: bool = False) -> CollapseField:
        """Let the arena close the conversation and score it: the sample's ``collapse_probe`` field."""
        sim = self.plain if validate else self.simulator
        while not episode.done and self.arena.next_side(episode) == "simulator":
            await play_simulator_turns(self.arena, [episode], sim, keys=[key], temperature=self.temperature)
        failed = episode.status == "infra_error"
        reward = None if failed else float((await self.arena.score([episode]))[0].reward)
        opening = next((str(m["content"]) for m in episode.messages if m["role"] == "policy"), None)
        return {"reward": reward, "task_id": str(episode.task.task_id), "opening": opening,
                "status": str(episode.status), "validate": bool(validate), "rollout": key}  # fmt: skip


class RewardSession:
    """The reward side in one process: the trainer-side monitor that takes the spool and closes steps.

    Args:
        settings: the ``collapse_monitor`` section.
        rollouts_per_step: scored training samples per monitor step.
    """

    def __init__(self, settings: Mapping[str, object], rollouts_per_step: int) -> None:
        from collapse_probe.core._constraints import check_value

        check_value(rollouts_per_step, f"{AGENT_NAME}.rollouts_per_step", [Integer(1, most=MAX_CONVERSATIONS)])
        checked = check_settings(settings)
        self.arena = _arena(checked)
        config = MonitorConfig(**dict(checked.get("monitor") or {}))
        self.monitor = CollapseMonitor(config, arena=self.arena, spool=checked["spool"], out=checked.get("out"))
        self.rollouts_per_step = int(rollouts_per_step)
        self.step = int(self.monitor.rows_[-1]["step"]) + 1 if self.monitor.rows_ else 0
        """The next step to close (a resumed run continues after its last row)."""
        self.recorded = 0
        self.scalars = fixed_scalars(self.monitor, self.monitor.rows_[-1] if self.monitor.rows_ else None)
        """The figures of the last closed step, every key always present (NaN: nothing measured yet)."""
        atexit.register(self.monitor.close)

    async def record(self, info: Mapping[str, object], group: object = None) -> tuple[float | None, dict[str, float]]:
        """Record one scored sample (its ``collapse_probe`` field); returns ``(reward, figures)``: the
        figures of the last step closed before this sample (a validation sample is not recorded)."""
        sample = _sample_info(info)
        reward = sample.reward
        logs = dict(self.scalars)
        if sample.validate_:
            return reward, logs
        opening = sample.opening
        self.monitor.record_results([reward], groups=[str(group if group is not None else sample.task_id)],
                                    policy_texts=[opening] if opening else None)  # fmt: skip
        self.recorded += 1
        if self.recorded % self.rollouts_per_step == 0:
            row = await self.monitor.aend_step(self.step)
            self.scalars = fixed_scalars(self.monitor, row)
            self.step += 1
        return reward, logs


def rollout_session(settings: Mapping[str, object]) -> RolloutSession:
    """The process's :class:`RolloutSession` for these settings (made on first use)."""
    session = _cached("rollout", settings, lambda: RolloutSession(settings))
    assert isinstance(session, RolloutSession)  # the "rollout" key holds rollout sessions only
    return session


def reward_session(settings: Mapping[str, object], rollouts_per_step: int) -> RewardSession:
    """The process's :class:`RewardSession` for these settings (made on first use)."""
    session = _cached(f"reward{rollouts_per_step}", settings, lambda: RewardSession(settings, rollouts_per_step))
    assert isinstance(session, RewardSession)  # the "reward…" keys hold reward sessions only
    return session


def write_dataset(arena: Any, tasks: Any, path: str | Path, *, split: str = "train") -> Path:
    """Write verl's parquet dataset for :class:`CollapseMonitorAgentLoop`: one row per task with the
    policy's opening view as ``prompt``, ``agent_name`` ``collapse_monitor`` and the task id (and
    ``split``: ``val`` rows are played with the unmonitored simulator and not recorded)."""
    pq = require("pyarrow.parquet", "verl", "the verl dataset", package="pyarrow")
    pa = require("pyarrow", "verl", "the verl dataset")
    rows = []
    for i, t in enumerate(tasks):
        ep = arena.new_episode(t, 0)
        if arena.next_side(ep) != "policy":
            raise ConfigError(
                f"benchmark {arena.name}: the policy does not speak first, so verl cannot open the conversation"
            )
        prompt = arena.prompt_for(ep, "policy")
        rows.append({
            "data_source": f"collapse_probe/{arena.name}",
            "prompt": [{"role": str(m["role"]), "content": str(m["content"])} for m in prompt.messages],
            "agent_name": AGENT_NAME,
            "reward_model": {"style": "rule", "ground_truth": ""},
            "extra_info": {"task_id": str(t.task_id), "split": split, "index": i},
        })  # fmt: skip
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), out)
    return out


def _collapse_field(non_tensor: Mapping[str, object]) -> dict[str, object]:
    """The ``collapse_probe`` field of a sample: in ``tool_extra_fields`` on the reward-loop path, a
    column of its own when the trainer scores the assembled batch."""
    info = non_tensor.get(FIELD)
    if info is None:
        extra = non_tensor.get("tool_extra_fields")
        info = extra.get(FIELD) if isinstance(extra, Mapping) else None
    if not isinstance(info, Mapping):
        raise ConfigError(
            f"a sample reached CollapseMonitorRewardManager without its collapse_probe field: give its dataset "
            f"row agent_name {AGENT_NAME!r} (collapse_probe.integrations.monitor.verl.write_dataset does)"
        )
    return dict(info)


_BUILT: dict[str, type] = {}


def _build() -> dict[str, type]:
    """Subclass verl's agent loop and reward manager (once), registering both under ``collapse_monitor``."""
    if _BUILT:
        return _BUILT
    try:
        from verl.experimental.agent_loop.agent_loop import register
        from verl.experimental.agent_loop.tool_agent_loop import AgentState, ToolAgentLoop
        from verl.experimental.reward_loop.reward_manager import register as register_reward
        from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase
    except ImportError as exc:
        framework_error("verl", exc)
    check_version("verl")

    class CollapseMonitorAgentLoop(ToolAgentLoop):
        """verl's ``ToolAgentLoop`` in which the benchmark's simulator answers each policy turn."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)  # the YAML entry's own name
            overrides = {k: kwargs.pop(k) for k in list(kwargs) if k not in _LOOP_ARGS}
            super().__init__(*args, **kwargs)
            self.session = rollout_session(settings_from(self.config, overrides))
            self.episode: Any = None
            self.key = ""
            self.validate = False

        async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
            extra = _plain(kwargs.get("extra_info")) or {}
            self.key = f"{os.getpid()}:{uuid.uuid4().hex}"
            self.validate = extra.get("split") == "val"
            self.episode = self.session.new_episode(extra.get("task_id"), self.key)
            output = await super().run(sampling_params, **kwargs)
            output.extra_fields[FIELD] = await self.session.finish(self.episode, self.key, validate=self.validate)
            return output

        async def _handle_generating_state(
            self, agent_data: Any, sampling_params: dict[str, Any], ignore_termination: bool = False
        ) -> Any:
            before = len(agent_data.messages)
            await super()._handle_generating_state(agent_data, sampling_params, ignore_termination)
            # the policy's turn as the arena hears it: its tokens of this turn, without special tokens
            text = self.tokenizer.decode(agent_data.response_ids, skip_special_tokens=True).strip()
            if len(agent_data.messages) == before:
                # verl ended the rollout at its length or turn limit before reading the turn: the arena
                # still hears it (the reward may depend on the answer), the policy does not see the answer
                await self.session.policy_turn(self.episode, text, self.key, validate=self.validate)
                return AgentState.TERMINATED
            agent_data.tool_calls = []  # the policy talks to the simulator, not to tools
            reply = await self.session.policy_turn(self.episode, text, self.key, validate=self.validate)
            if reply is None or self.episode.done:
                return AgentState.TERMINATED
            previous = list(agent_data.messages)
            agent_data.messages.append({"role": "user", "content": reply})
            merged, mask, logprobs = await self.ct_merge_context_msg(
                previous, agent_data.messages, agent_data.prompt_ids, agent_data.response_mask,
                agent_data.response_logprobs or None, tools=getattr(agent_data, "_active_tool_schemas", None),
            )  # fmt: skip
            if len(mask) >= self.response_length:
                return AgentState.TERMINATED
            agent_data.prompt_ids, agent_data.response_mask = merged.token_ids, mask
            if agent_data.response_logprobs:
                agent_data.response_logprobs = logprobs or []
            agent_data.user_turns += 1
            return AgentState.GENERATING

    class CollapseMonitorRewardManager(RewardManagerBase):
        """verl's reward manager for :class:`CollapseMonitorAgentLoop` samples: the arena's reward, and the
        monitor's step closed every ``rollouts_per_step`` samples."""

        def __init__(self, config: Any, tokenizer: Any, compute_score: Any = None, **kwargs: Any) -> None:
            super().__init__(config, tokenizer, compute_score)
            workers = int(config.reward.get("num_workers", 1)) if config.get("reward") is not None else 1
            if workers != 1:
                raise ConfigError(
                    f"reward.num_workers is {workers}: CollapseMonitorRewardManager closes the monitor's steps in one "
                    "process, so it needs reward.num_workers=1 (its samples were scored in the agent loop already)"
                )
            settings = settings_from(config)
            per_step = settings.get("rollouts_per_step")
            if per_step is None:
                per_step = int(config.data.train_batch_size) * int(config.actor_rollout_ref.rollout.n)
            self.session = reward_session(settings, int(per_step))

        async def run_single(self, data: Any) -> RewardResult:
            item = data[-1:][0]  # a multi-sequence output is scored on its last sequence, as verl's own do
            info = _collapse_field(item.non_tensor_batch)
            uid = item.non_tensor_batch.get("uid")
            reward, logs = await self.session.record(info, group=uid)
            logs[self.session.monitor.config.prefix + "unscored"] = float(reward is None)
            # verl needs a number: an unscored (infrastructure-failed) sample gets 0 and is counted
            return {"reward_score": 0.0 if reward is None else reward, "reward_extra_info": logs}

    for cls in (CollapseMonitorAgentLoop, CollapseMonitorRewardManager):
        cls.__module__, cls.__qualname__ = __name__, cls.__name__  # importable by name (hydra's _target_)
    register(AGENT_NAME)(CollapseMonitorAgentLoop)
    register_reward(AGENT_NAME)(CollapseMonitorRewardManager)
    _BUILT.update(CollapseMonitorAgentLoop=CollapseMonitorAgentLoop,
                  CollapseMonitorRewardManager=CollapseMonitorRewardManager)  # fmt: skip
    return _BUILT


_LOOP_ARGS = {"trainer_config", "server_manager", "tokenizer", "processor", "dataset_cls", "data_config",
              "hf_model_type", "tools"}  # fmt: skip
"""The keyword arguments verl's agent-loop worker passes every agent loop; the rest are settings."""


def __getattr__(name: str) -> Any:
    if name in ("CollapseMonitorAgentLoop", "CollapseMonitorRewardManager"):
        return _build()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
