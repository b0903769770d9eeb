"""The LLM reference trainers: REINFORCE with group-relative advantages and LoRA adapters.

One step of every method:

1. **Rollouts.** ``T`` training tasks (the first ``T`` of the benchmark's seeded order, the same every
   step) x ``G`` rollouts each go through the batched engine
   (:func:`~collapse_probe.rollout.run_conversations`). The policy is a LoRA-adapted copy of its base
   model wrapped with :meth:`LocalModel.from_loaded`, so rollouts sample from the *current* weights;
   conversation seeds derive from ``(seed, step, task, rollout)``, so every step draws afresh and a
   resumed step draws what the killed one would have. The engine's ``on_turn`` hook records every
   turn's exact request and sampled ``Completion.token_ids``.
2. **Advantages.** Trajectory rewards are z-scored within each task's group with the population std
   (``ddof=0``): ``A = (R - mean) / (std + eps)``; zero-std groups get ``A = 0`` and are counted in
   ``zero_std_share`` (:func:`~collapse_probe.trainers.advantages.group_relative_advantages`).
   Conversations that failed for infrastructure reasons are left out of their group (never scored 0).
3. **Update.** One AdamW step on the loss of :mod:`collapse_probe.trainers.reinforce` over every turn
   of the trained side(s), with log-probabilities recomputed with grad on the exact sampled ids given
   the exact prompt ids the backend used; only those completion tokens carry loss.

Methods (names and semantics as in the collapse lab, :mod:`collapse_probe.trainers.lab`):

- ``single``: one frozen simulator.
- ``vs``: the simulator runs in Verbalized-Sampling mode (``vs:SPEC``).
- ``ensemble``: frozen simulators rotated one per step (step ``k`` plays ``sims[(k - 1) % K]``).
- ``persona``: P4G, where a task is a donor persona; rollout ``g`` of task ``t`` at step ``k`` faces a
  persona drawn uniformly from the persona file with seed ``(seed, step, task, g)``, independently per
  rollout. The group keeps the task id, so its baseline averages over the sampled user population
  (like the lab's persona simulator, which draws a persona per conversation from its family's own
  persona prior).
- ``cotrain``: the simulator is its own LoRA model, updated on its own turns of the same rollouts with
  ``simulator_advantages``: adversarial ``1 - R`` (default), cooperative ``R``, or curriculum
  ``exp(-(Var_g(R) - 0.25)^2 / 0.02)`` (population variance). The curriculum reward is constant within a
  group, so its within-group advantage would be identically 0; it is credited across the groups of
  the batch instead (z-scored over the ``T`` groups, a batch-level baseline, then given to every
  simulator turn of the group). It therefore needs ``T >= 2`` tasks to carry any signal. Only groups
  with all ``G`` rollouts scored enter the simulator update.
- ``population``: as ``cotrain``, plus a FIFO pool (:mod:`collapse_probe.trainers.population`) of the
  ``K`` most recent simulator adapter snapshots (the initial adapter is the first member; a snapshot is
  pushed every ``snapshot_every`` updates). One member is drawn uniformly per step and plays the whole
  batch; the live adapter is then updated on those turns with per-turn importance weights truncated at
  1, ``min(1, pi_live(turn) / pi_member(turn))`` (V-trace style, as in the lab), which are exactly 1
  when the member is the live adapter.
- ``selfplay``: one LoRA model plays both sides (one batch per turn, both sides on the live weights).
  It is trained on both sides' turns with the *shared* reward ``R``: its simulator turns get the same
  group-relative advantage as its policy turns (the cooperative simulator reward; one model, one
  objective, as in the lab). Rollouts are on-policy for both sides, so no lagged copy and no
  importance weights are needed.

vLLM rollouts (``rollout_backend="vllm"``): the learner stays in this process on its GPU and vLLM
sleeps during each learner step; after the step the learner's cached GPU memory is returned
(``torch.cuda.empty_cache()``) before the engine wakes. With CUDA initialised here, vLLM starts its
workers with ``spawn``, which re-imports the calling script: a script that runs this trainer must do
so under ``if __name__ == "__main__":`` (the CLI does).

Run directory: ``config.json``, ``metrics.jsonl`` (one line per step), ``rollouts.jsonl`` (every
conversation with its ``step``), ``checkpoints/step-NNNNNNNN/`` (adapters via peft ``save_pretrained``
as safetensors, optimizer state and RNG state as safetensors, ``trainer_state.json``), ``pool/`` for
``population``, ``results.json`` (schema ``collapse-probe/train/v1``) and ``report.html``. A killed run
resumes from its last checkpoint; lines of ``metrics.jsonl``/``rollouts.jsonl`` written after that
checkpoint are dropped first, so no step is duplicated or missing.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
from pydantic import JsonValue

from collapse_probe._version import __version__
from collapse_probe.benchmarks import Arena, Task
from collapse_probe.core._jsonl import dumps_line
from collapse_probe.core._records import INFRA_ERROR, ConversationRecord
from collapse_probe.core._sync import run_sync
from collapse_probe.errors import ConfigError, InfraError, require
from collapse_probe.models import derive_seed
from collapse_probe.models._usage import start_run_usage
from collapse_probe.rollout import (
    ConversationSpec,
    EngineConfig,
    RunDir,
    TurnEvent,
    hash_str,
    iter_jsonl,
    run_conversations,
)
from collapse_probe.rollout._rundir import check_out_path
from collapse_probe.rollout.runspec import ArenaSpec, arena_record
from collapse_probe.simulators import Participant
from collapse_probe.trainers._checkpoints import CheckpointExtra, list_checkpoints, load_checkpoint, save_checkpoint
from collapse_probe.trainers._models import TrainedModel, UpdateStats, trained_model
from collapse_probe.trainers._train_results import (
    METRICS,
    ROLLOUTS,
    RolloutAdapter,
    StepRecord,
    step_problem,
    train_results,
    write_train_report,
)
from collapse_probe.trainers.advantages import (
    group_advantages_by_key,
    reward_groups,
    simulator_advantages,
    zero_std_causes,
)
from collapse_probe.trainers.config import RESUMABLE_FIELDS, TrainConfig
from collapse_probe.trainers.methods import TrainMethod, get_method
from collapse_probe.trainers.population import PopulationPool
from collapse_probe.trainers.reinforce import (
    TrainingExample,
    examples_from_events,
    turn_logprob_sums,
)

if TYPE_CHECKING:
    from collapse_probe.integrations.monitor._core import MonitorRow, SamplingState
    from collapse_probe.results import TrainResults

logger = logging.getLogger(__name__)


class PoolDraw(TypedDict, total=False):
    """Which pool snapshot played the simulator at a step (empty without a pool); into the step's record."""

    pool_member: int
    """The snapshot's step."""
    pool_size: int


@dataclass
class _StepData:
    records: list[ConversationRecord]
    events: list[TurnEvent]
    sim_label: str
    sim_participant: Participant
    info: PoolDraw = field(default_factory=lambda: PoolDraw())


# ------------------------------------------------------------------------------------------------ the arena


def arena_spec(config: TrainConfig) -> ArenaSpec:
    """The run's arena: the benchmark with the run's turn and token budgets (resolve it against
    :func:`arena_participants`)."""
    # the run's budgets (options every benchmark takes)
    budgets = {"max_turns": config.rollout.max_turns, "max_tokens": config.max_tokens}
    return ArenaSpec.from_dict({**config.arena.options, **budgets, "benchmark": config.arena.benchmark})


def arena_participants(config: TrainConfig) -> list[str]:
    """The model specs of the run's conversations (training and held-out): they decide τ2 prompt compaction
    exactly as for ``crossplay`` over the same specs."""
    return [config.policy, *config.sims, *config.heldout]


def build_arena(config: TrainConfig) -> Arena:
    """The benchmark arena with the run's turn and token budgets, built by the one arena builder
    (:meth:`~collapse_probe.rollout.runspec.ArenaSpec.build`)."""
    return arena_spec(config).build(arena_participants(config), cache=config.cache)


def _plugin_error(row: MonitorRow | None) -> float | None:
    """The monitor row's mean plug-in ε of the simulator (``None``: no row, or no state measured)."""
    if row is None:
        return None
    error = row["collapse_error"]
    return error["plugin"] if error["estimate"] is not None else None


# ------------------------------------------------------------------------------------------------ trainer


class LLMTrainer:
    """Runs one training configuration in a run directory (see the module docstring).

    Args:
        config: what to train.
        out: the run directory (created; an existing one with the same configuration resumes).
        arena: the benchmark (default: :func:`build_arena`).
    """

    def __init__(self, config: TrainConfig, out: str | Path, *, arena: Arena | None = None) -> None:
        config.validate()
        self.config = config
        self.out = Path(out)
        self.run_dir = RunDir(self.out)
        check_out_path(self.out, "train")  # before its usage.json is read: a file, a link loop, another run
        self.usage = start_run_usage(self.out)
        self.arena = arena
        self.policy: TrainedModel | None = None
        self.simulator: TrainedModel | None = None
        self.frozen: dict[str, Participant] = {}
        self.heldout: dict[str, Participant] = {}
        self.pool: PopulationPool | None = None
        self.personas: list[dict[str, JsonValue]] = []
        self.tasks: list[Task] = []
        self.step_ = 0
        """Steps completed (restored from the last checkpoint on resume)."""
        self._vllm: Any = None
        self._rollout_adapter: RolloutAdapter | None = None
        """The adapter the rollout replicas sampled through at the last step (path, fingerprint, count)."""
        self.monitor: Any = None
        """The live collapse monitor (:class:`~collapse_probe.integrations.monitor.CollapseMonitor`), rows in ``monitor/``."""
        self._monitored: dict[int, Participant] = {}

    # ---- labels ---------------------------------------------------------------------------------

    @property
    def policy_label(self) -> str:
        return f"policy:{self.config.policy}+lora"

    @property
    def method(self) -> TrainMethod:
        """The registered description of the configured method."""
        return get_method(self.config.method)

    @property
    def sim_labels(self) -> list[str]:
        c, m = self.config, self.method
        if m.simulator == "self":
            return [f"simulator:{c.policy}+lora({c.method})"]
        if m.simulator == "trained":
            return [f"simulator:{c.sims[0]}+lora"]
        if m.verbalized:
            return [s if s.startswith("vs:") else f"vs:{s}" for s in c.sims]
        return list(c.sims)

    # ---- setup ----------------------------------------------------------------------------------

    def setup(self) -> None:
        """Check the run directory, build arena and models, and restore the last checkpoint."""
        c = self.config
        if self.arena is None:
            self.arena = build_arena(c)
        self._prepare_dir()
        m = self.method
        if m.personas:
            pool = getattr(self.arena, "personas", None)
            if not pool:
                raise ConfigError(
                    f"--method persona draws a persona per rollout and needs a benchmark whose arena has a persona "
                    f"pool (p4g); {c.arena.benchmark!r} has none"
                )
            self.personas = list(pool)
        self.tasks = self.arena.load_tasks(c.rollout.tasks, seed=c.rollout.seed)
        from collapse_probe.simulators import make_participant

        if m.simulator == "frozen":
            self.frozen = {label: make_participant(label, vs_k=c.vs_k, cache=c.cache) for label in self.sim_labels}
        self.heldout = {s: make_participant(s, vs_k=c.vs_k, cache=c.cache) for s in c.heldout}
        self.policy = trained_model("policy", c.policy, self.policy_label, c, c.lr, derive_seed(c.rollout.seed, 1))
        if m.simulator == "trained":
            self.simulator = trained_model(
                "simulator", c.sims[0], self.sim_labels[0], c, c.simulator_lr, derive_seed(c.rollout.seed, 2)
            )
        else:
            self.simulator = None
        if m.schedule == "pool":
            assert self.simulator is not None
            self.pool = PopulationPool.open(Path(c.pool_dir) if c.pool_dir else self.out / "pool", c.pool_size)
        if c.rollout_backend == "vllm":
            self._setup_vllm()
        self._monitor_state: SamplingState | None = None
        self._restore()
        if c.collapse_states > 0:
            self.monitor = self._make_monitor()
            if self._monitor_state is not None:
                self.monitor.restore_sampling_state(self._monitor_state)

    def _make_monitor(self) -> Any:
        """The collapse monitor of the run: the same one the framework adapters use (one code path).

        ``collapse_states`` states per step are asked for as a share of the simulator's turns, about
        one per conversation round: ``min(1, collapse_states / (tasks x group_size x max_turns))``; the
        monitor shadow-samples that share of turns by systematic sampling, so a step has at least
        ``floor(share x turns)`` measured states. Each gets ``collapse_samples`` replies, the training
        reply included.
        """
        from collapse_probe.integrations.monitor import CollapseMonitor, MonitorConfig

        c = self.config
        rounds = getattr(self.arena, "max_turns", None)
        rounds = rounds if isinstance(rounds, int) and rounds > 0 else 1
        share = min(1.0, c.collapse_states / max(1, len(self.tasks) * c.rollout.rollouts * rounds))
        config = MonitorConfig(shadow_fraction=share, shadow_samples=c.collapse_samples, partition=c.partitioner,
                               strategy_partition=c.partitioner, seed=derive_seed(c.rollout.seed, 0x3D0))  # fmt: skip
        return CollapseMonitor(config, arena=self.arena, out=self.out / "monitor")

    def _monitored_participant(self, part: Participant) -> Participant:
        """``part`` with shadow sampling (one wrapper per participant, so batches stay per model)."""
        if self.monitor is None:
            return part
        if id(part) not in self._monitored:
            self._monitored[id(part)] = self.monitor.wrap(part)
        return self._monitored[id(part)]

    def _prepare_dir(self) -> None:
        """Check and lock the run directory (:meth:`RunDir.create`); ``config.json`` is written at once,
        before any checkpoint, and takes new values of the fields a resume may change (``--steps``, ...)."""
        record = {**self.config.to_dict(), "version": __version__}
        if self.arena is not None:
            record["arena"] = arena_record(self.arena)
        self.run_dir.create(record, kind="train", resumable=RESUMABLE_FIELDS)
        self.run_dir.write_config()

    def _setup_vllm(self) -> None:
        from collapse_probe.models.vllm import VLLMModel, lora_rank_for_vllm

        assert self.policy is not None
        options = {
            "max_lora_rank": lora_rank_for_vllm(self.config.lora_r),
            "enable_sleep_mode": True,
            "gpu_memory_utilization": 0.45,
            "logprobs_mode": "processed_logprobs",
            **self.config.vllm_options,
        }
        from collapse_probe.models.ray_replicas import active_session

        if active_session() is not None:  # --ray-address: rollouts on replica engines, the learner here
            from collapse_probe.models import get_model

            self._vllm = get_model(
                f"vllm/{self.policy.base_path}",
                enable_lora=True,
                prompt_style=self.policy.backend.prompt_style,
                logprobs=True,
                **options,
            )
            return
        self._vllm = VLLMModel(
            f"vllm/{self.policy.base_path}",
            str(self.policy.base_path),
            enable_lora=True,
            prompt_style=self.policy.backend.prompt_style,
            logprobs=True,
            **options,
        )

    # ---- checkpoints ----------------------------------------------------------------------------

    def _trained_models(self) -> list[TrainedModel]:
        return [m for m in (self.policy, self.simulator) if m is not None]

    def checkpoints(self) -> list[tuple[int, Path]]:
        """Complete checkpoints ``(step, directory)``, oldest first."""
        return list_checkpoints(self.out)

    def save_checkpoint(self, step: int) -> Path:
        """Write ``checkpoints/step-NNNNNNNN`` atomically and keep the newest ``keep_checkpoints``
        (:func:`~collapse_probe.trainers._checkpoints.save_checkpoint`), with the pool and the monitor."""
        extra: CheckpointExtra = {}
        if self.pool is not None:
            extra["pool"] = self.pool.state()
        if self.monitor is not None:  # a resumed run shadows the same turns with the same seeds
            extra["monitor"] = self.monitor.sampling_state()
        final = save_checkpoint(self.out, step, self._trained_models(), keep=self.config.keep_checkpoints, extra=extra)
        if self.pool is not None:
            self.pool.prune()
        return final

    def _restore(self) -> None:
        """Resume from the newest checkpoint, or start fresh; trim records written after it."""
        ckpts = self.checkpoints()
        if not ckpts:
            self.step_ = 0
            self._trim_records(0)
            if self.pool is not None:
                self._init_pool()
            return
        step, d = ckpts[-1]
        state = load_checkpoint(d, self._trained_models())
        if self.pool is not None:
            self.pool.restore(state.get("pool", {"members": []}))
            self.pool.prune()
        self.step_ = step
        self._monitor_state = state.get("monitor")
        self._trim_records(step)
        logger.info("resumed %s from checkpoint step %d", self.out, step)

    def _init_pool(self) -> None:
        """A fresh run's pool holds only the initial adapter (snapshot ``step 0``).

        A pool belongs to its run: on resume it is restored from the checkpoint's copy of the
        manifest. Without a checkpoint, members left in the run's own pool directory come from a
        first step that was killed and are dropped; a ``--pool-dir`` elsewhere that already holds
        members is refused rather than overwritten.
        """
        assert self.pool is not None and self.simulator is not None
        own = self.pool.directory.resolve().is_relative_to(self.out.resolve())
        if self.pool.members and not own:
            raise ConfigError(
                f"--pool-dir {str(self.pool.directory)!r} already holds a pool of {len(self.pool)} members from "
                "another run; give an empty directory (a run resumes its own pool from its checkpoints)"
            )
        self.pool.members = []
        self.pool.evicted = []
        self.pool.prune()
        sim = self.simulator
        self.pool.push(0, lambda p: sim.model.save_pretrained(str(p), safe_serialization=True))

    def _trim_records(self, step: int) -> None:
        for name in (METRICS, ROLLOUTS):
            p = self.out / name
            if not p.exists():
                continue
            self.run_dir.repair(name)
            kept = [r for r in iter_jsonl(p, step_problem) if r["step"] <= step]
            tmp = p.with_name(p.name + ".tmp")
            tmp.write_bytes(b"".join(dumps_line(r, p) for r in kept))
            os.replace(tmp, p)

    # ---- one step -------------------------------------------------------------------------------

    def _simulator_for_step(self, step: int) -> tuple[str, Participant, PoolDraw]:
        c, m = self.config, self.method
        if m.simulator == "self":
            assert self.policy is not None
            return self.sim_labels[0], Participant(self.sim_labels[0], self.policy.backend), {}
        if m.simulator == "trained":
            assert self.simulator is not None
            info: PoolDraw = {}
            if self.pool is not None:
                member = self.pool.sample(random.Random(derive_seed(c.rollout.seed, hash_str(f"pool|{step}"))))
                info = {"pool_member": member["step"], "pool_size": len(self.pool)}
            return self.sim_labels[0], self.simulator.participant, info
        if m.schedule == "rotate":
            label = self.sim_labels[(step - 1) % len(self.sim_labels)]
            return label, self.frozen[label], {}
        label = self.sim_labels[0]
        return label, self.frozen[label], {}

    def _specs(self, step: int, sim_label: str) -> tuple[list[ConversationSpec], dict[str, str]]:
        c, draw_persona = self.config, self.method.personas
        seed_k = derive_seed(c.rollout.seed, step)
        specs, personas = [], {}
        for t in self.tasks:
            for g in range(c.rollout.rollouts):
                task = t
                if draw_persona:
                    rng = random.Random(derive_seed(seed_k, hash_str(f"persona|{t.task_id}|{g}")))
                    persona = self.personas[rng.randrange(len(self.personas))]
                    task = Task(t.task_id, {**t.data, "persona": persona}, t.split)
                spec = ConversationSpec(
                    task=task,
                    rollout=g,
                    policy=self.policy_label,
                    simulator=sim_label,
                    seed=derive_seed(seed_k, hash_str(f"{t.task_id}|{g}")),
                )
                if draw_persona:
                    personas[spec.key] = str(task.data["persona"].get("persona_id"))
                specs.append(spec)
        return specs, personas

    def _policy_participant(self, step: int) -> Participant:
        assert self.policy is not None
        if self._vllm is None:
            return self.policy.participant
        path = self.out / "adapters" / "policy-live"
        self.policy.model.save_pretrained(str(path), safe_serialization=True)
        view = self._vllm.with_lora(path, name=f"step{step}")
        replicas = getattr(self._vllm, "replicas", None)
        if replicas is not None:  # replica engines load the adapter by path: record which one they saw
            self._rollout_adapter = {"path": str(path), "fingerprint": view.fingerprint(), "replicas": replicas}
        return Participant(self.policy_label, view)

    def rollout(self, step: int) -> _StepData:
        """Run the step's ``T x G`` conversations and record every turn."""
        c = self.config
        sim_label, sim_part, info = self._simulator_for_step(step)
        specs, personas = self._specs(step, sim_label)
        events: list[TurnEvent] = []
        monitor = self.monitor

        def on_turn(event: TurnEvent) -> None:
            events.append(event)
            if monitor is not None:
                monitor.on_turn(event)

        participants = {
            self.policy_label: self._policy_participant(step),
            sim_label: self._monitored_participant(sim_part),
        }
        records = run_sync(
            run_conversations(
                self.arena,  # type: ignore[arg-type]
                specs,
                participants,
                # top_p = 1: the vLLM rollouts' processed log-probabilities are then the learner's
                config=EngineConfig(
                    temperature=c.rollout.temperature, top_p=1.0, max_live=c.rollout.max_live, progress=c.progress
                ),
                on_turn=on_turn,
            )
        )
        # the persona a conversation's simulator played is kept with its record in rollouts.jsonl
        records = [r.model_copy(update={"persona_id": personas[r.key]}) if r.key in personas else r for r in records]
        return _StepData(records, events, sim_label, sim_part, info)

    def step(self, step: int) -> StepRecord:
        """Run training step ``step`` (1-based) and return its metrics record."""
        assert self.policy is not None
        t0 = time.perf_counter()
        data, row, groups, rewards, zero, examples, weight_mean = self._sample_step(step)
        losses = self._update(step, examples)
        record = self._step_record(step, data, row, groups, rewards, zero, losses)
        if weight_mean is not None:
            record["sim_importance_weight_mean"] = weight_mean
        self._step_extras(step, record, row, losses)
        record["seconds"] = round(time.perf_counter() - t0, 3)
        for r in data.records:
            self.run_dir.append_jsonl(ROLLOUTS, {"step": step, **r.to_line_dict()})
        return record

    def _sample_step(
        self, step: int
    ) -> tuple[
        _StepData,
        MonitorRow | None,
        dict[str, list[str]],
        dict[str, float],
        float | None,
        dict[str, list[TrainingExample]],
        float | None,
    ]:
        """Roll out step ``step`` (a lagged pool member plays when one is due) and build its examples:
        ``(data, monitor row, groups, rewards, zero-std share, examples, mean importance weight)`` (the
        weight ``None`` unless a lagged snapshot played)."""
        c = self.config
        live_sim = None
        if self.pool is not None and self.simulator is not None:
            _, _, pinfo = self._simulator_for_step(step)
            member = next(m for m in self.pool.members if m["step"] == pinfo["pool_member"])
            if member["step"] < self.simulator.version:  # a lagged snapshot plays this batch
                live_sim = self.simulator.adapter_state()
                self.simulator.load_adapter_dir(self.pool.member_dir(member))
        try:
            data = self.rollout(step)
            row = self.simulator_collapse_error(data, step)
            groups, rewards = reward_groups(data.records)
            adv, zero = self._policy_advantages(groups, rewards)
            examples = self._examples(data.events, adv, self._simulator_advantages(groups, rewards))
            if live_sim is not None and examples["simulator"]:
                played = turn_logprob_sums(
                    self.simulator.model,  # type: ignore[union-attr]
                    examples["simulator"],
                    pad_id=self.simulator.pad_id,  # type: ignore[union-attr]
                    temperature=c.rollout.temperature,
                    micro_batch=c.train_batch,
                )
        finally:
            if live_sim is not None:
                self.simulator.load_adapter_state(live_sim)  # type: ignore[union-attr]
        weight_mean = None
        if live_sim is not None and examples["simulator"]:
            weight_mean = self._importance_weights(examples["simulator"], played)
        return data, row, groups, rewards, zero, examples, weight_mean

    def _importance_weights(self, examples: list[TrainingExample], played: list[float]) -> float:
        """Weight each simulator example by min(1, p_live / p_played) (it was played by a lagged
        snapshot); return the mean weight for the step's record."""
        assert self.simulator is not None
        c = self.config
        live = turn_logprob_sums(
            self.simulator.model,
            examples,
            pad_id=self.simulator.pad_id,
            temperature=c.rollout.temperature,
            micro_batch=c.train_batch,
        )
        for e, lp_live, lp_played in zip(examples, live, played, strict=True):
            e.weight = float(min(1.0, np.exp(min(lp_live - lp_played, 0.0))))
        ws = [e.weight for e in examples]
        return float(np.mean(ws))

    def _update(self, step: int, examples: dict[str, list[TrainingExample]]) -> dict[str, UpdateStats]:
        """Update every trained model on its examples (vLLM asleep meanwhile); snapshot the simulator
        into the pool when one is due. Returns model name -> its update's losses."""
        c = self.config
        if self._vllm is not None:
            self._vllm.sleep()  # the learner step gets vLLM's memory; the next rollout wakes it
        losses = {}
        for m in self._trained_models():
            losses[m.name] = m.update(self.config, examples[m.name])
            if not losses[m.name]["skipped"]:
                m.version = step
        if self._vllm is not None:
            # The learner's freed activations and gradients stay in torch's allocator cache unless
            # returned: vLLM would then wake up into less memory than it profiled at start.
            require("torch", "train", "LoRA training").cuda.empty_cache()
        if self.pool is not None and self.simulator is not None and step % c.snapshot_every == 0:
            sim = self.simulator
            self.pool.push(step, lambda p: sim.model.save_pretrained(str(p), safe_serialization=True))
        return losses

    def _step_record(
        self,
        step: int,
        data: _StepData,
        row: MonitorRow | None,
        groups: dict[str, list[str]],
        rewards: dict[str, float],
        zero: float | None,
        losses: dict[str, UpdateStats],
    ) -> StepRecord:
        """The step's metrics record: rewards, the policy's strategy entropy, the simulator's collapse
        error and the policy's update."""
        from collapse_probe.metrics.strategy import policy_strategy_entropy

        c = self.config
        scored = [r.reward for r in data.records if r.reward is not None and r.status != INFRA_ERROR]
        entropy = policy_strategy_entropy(
            [r for r in data.records if r.status != INFRA_ERROR],
            self.policy_label,
            partitioner=c.partitioner,
            turns=c.entropy_turns,  # type: ignore[arg-type]
        )
        return {
            "step": step,
            "train_reward": float(np.mean(scored)) if scored else None,
            "zero_std_share": zero,
            **zero_std_causes(groups, rewards, {r.key: r.texts_of("simulator") for r in data.records}),
            "policy_entropy": entropy["strategy_entropy"],
            "sim_collapse_error": _plugin_error(row),
            "loss": losses["policy"]["loss"],
            "seconds": None,
            "simulator": data.sim_label,
            "n_conversations": len(data.records),
            "infra_failures": sum(1 for r in data.records if r.status == INFRA_ERROR),
            "policy_tokens": losses["policy"]["n_tokens"],
            "policy_update_skipped": losses["policy"]["skipped"],
            **data.info,
        }

    def _step_extras(
        self, step: int, record: StepRecord, row: MonitorRow | None, losses: dict[str, UpdateStats]
    ) -> None:
        """Add to ``record`` what only some steps have: the monitor's estimate and alarms, the rollout
        adapter, the KL term, the logprob mismatch, the simulator's update, the held-out reward."""
        c = self.config
        if row is not None:
            record["sim_collapse_error_estimate"] = row["collapse_error"]["estimate"]
            record["sim_collapse_error_ci95"] = row["collapse_error"]["ci95"]
            record["monitor_alarms"] = [
                a["kind"] + (f":{a['view']}" if a.get("view") else "") for a in row.get("alarms", [])
            ]
        if self._rollout_adapter is not None:
            record["rollout_adapter"] = self._rollout_adapter
        if c.kl_coef > 0:
            record["kl"] = losses["policy"]["kl"]
        if losses["policy"].get("logprob_mismatch") is not None:
            record["logprob_mismatch"] = losses["policy"]["logprob_mismatch"]
            record["tis_clipped_share"] = losses["policy"].get("tis_clipped_share")
        if "simulator" in losses:
            record["sim_loss"] = losses["simulator"]["loss"]
            record["sim_tokens"] = losses["simulator"]["n_tokens"]
        if c.heldout and (step % c.eval_every == 0 or step == c.steps):
            record["heldout_reward"] = self.evaluate_heldout()

    def _policy_advantages(
        self, groups: dict[str, list[str]], rewards: dict[str, float]
    ) -> tuple[dict[str, float], float | None]:
        adv, share = group_advantages_by_key(groups, rewards, eps=self.config.adv_eps)
        if share is None:
            raise InfraError("every conversation of this step failed for infrastructure reasons; nothing to learn from")
        return adv, share

    def _simulator_advantages(self, groups: dict[str, list[str]], rewards: dict[str, float]) -> dict[str, float]:
        if self.simulator is None:
            return {}
        full = [
            keys
            for keys in groups.values()
            if len(keys) == self.config.rollout.rollouts and all(k in rewards for k in keys)
        ]
        if not full:
            return {}
        matrix = np.array([[rewards[k] for k in keys] for keys in full])
        adv, _ = simulator_advantages(matrix, self.config.cotrain_reward, eps=self.config.adv_eps)
        return {k: float(a) for keys, row in zip(full, adv, strict=True) for k, a in zip(keys, row, strict=True)}

    def _examples(
        self, events: Sequence[TurnEvent], policy_adv: dict[str, float], sim_adv: dict[str, float]
    ) -> dict[str, list[TrainingExample]]:
        assert self.policy is not None
        side_target = {"policy": "policy"}
        prompt_ids = {"policy": self.policy.backend.prompt_ids}
        if self.method.simulator == "self":
            side_target["simulator"] = "policy"
        elif self.simulator is not None:
            side_target["simulator"] = "simulator"
            prompt_ids["simulator"] = self.simulator.backend.prompt_ids
        out = examples_from_events(events, side_target, {"policy": policy_adv, "simulator": sim_adv}, prompt_ids)
        out.setdefault("simulator", [])
        return out

    # ---- measurements ---------------------------------------------------------------------------

    def simulator_collapse_error(self, data: _StepData, step: int) -> MonitorRow | None:
        """Close the monitor's step ``step`` over this step's rollouts: the monitor's rows carry the
        training step of ``metrics.jsonl`` (from 1), so the monitor's report, its trackers, the train
        report and the dashboard name a step alike.

        The monitor shadow-sampled a share of the simulator's turns while they were rolled out
        (:meth:`_make_monitor`): at each such state ``collapse_samples`` replies (the training reply
        and ``collapse_samples - 1`` more from the monitor's own seeds, through the same participant)
        are partitioned by ``partitioner`` (``embedding``: constrained by the benchmark's meaning key,
        as in the audit). ``sim_collapse_error`` stays the mean plug-in ``1 - max_count / N``; the
        row also has the bias-aware estimate with its interval, the reward view and the alarms.
        Returns the monitor's row, or ``None`` when the monitor is off (``collapse_states = 0``).
        """
        if self.monitor is None:
            return None
        rewards = [None if r.status == INFRA_ERROR else r.reward for r in data.records]
        groups = [r.task_id for r in data.records]
        row: MonitorRow = self.monitor.end_step(step, rewards=rewards, groups=groups, extra={"simulator": data.sim_label},
                                                rollouts=[r.key for r in data.records])  # fmt: skip
        return row

    def evaluate_heldout(self) -> float | None:
        """Mean reward of the current policy over the held-out simulators (cross-play, no run directory)."""
        from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay

        c = self.config
        cfg = CrossplayConfig(
            policies=[self.policy_label],
            simulators=list(c.heldout),
            benchmark=c.arena.benchmark,
            tasks=c.eval_tasks or c.rollout.tasks,
            rollouts=c.eval_rollouts,
            max_turns=c.rollout.max_turns,
            seed=c.rollout.seed,
            temperature=c.rollout.temperature,
            partitioner=c.partitioner,
            entropy_turns=c.entropy_turns,  # type: ignore[arg-type]
        )
        results = run_crossplay(
            cfg,
            arena=self.arena,
            participants={self.policy_label: self._policy_participant(self.step_), **self.heldout},
            out=None,
            progress=c.progress,
            report=False,
        )
        return results.heldout_reward.get(self.policy_label)

    # ---- the loop -------------------------------------------------------------------------------

    def run(self) -> TrainResults:
        """Train from the last checkpoint to ``config.steps``, write results and report, return the results."""
        self.setup()
        c = self.config
        bar = None
        if c.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=c.steps, initial=self.step_, desc=f"train {c.method}", unit="step")
        try:
            while self.step_ < c.steps:
                k = self.step_ + 1
                record = self.step(k)
                self.run_dir.append_jsonl(METRICS, record)
                self.step_ = k
                if k % c.save_every == 0 or k == c.steps:
                    self.save_checkpoint(k)
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        return self.finish()

    def metrics(self) -> list[dict[str, JsonValue]]:
        """The ``metrics.jsonl`` records (as :class:`StepRecord` wrote them, read back), in step order."""
        return sorted(self.run_dir.read_jsonl(METRICS, step_problem), key=lambda r: r["step"])

    def finish(self) -> TrainResults:
        """Write ``results.json`` and ``report.html`` from ``metrics.jsonl``; return the typed results."""
        from collapse_probe.results import TrainResults

        metrics = self.metrics()
        typed = TrainResults.build({**train_results(self.config, metrics), "usage": self.usage.finish()})
        self.run_dir.write_results(typed)
        write_train_report(typed.to_json(), metrics, self.out / "report.html", label=f"{self.config.method}")
        if self.monitor is not None:
            self.monitor.close()
        return typed


# ------------------------------------------------------------------------------------------------ entry point


def run_train(config: TrainConfig, out: str | Path, *, arena: Arena | None = None) -> TrainResults:
    """Train (or resume training) ``config`` in run directory ``out``; return its typed results
    (:class:`~collapse_probe.results.TrainResults`, what ``results.json`` holds).

    Raises:
        ConfigError: bad configuration, an untrainable model spec, or a run directory holding a
            different configuration.
        InfraError: every conversation of a step failed for infrastructure reasons.
    """
    return LLMTrainer(config, out, arena=arena).run()
