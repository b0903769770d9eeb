"""Configuration of the LLM reference trainers (``collapse-probe train``).

One typed config filled by the CLI, the Python API and a resumed run's ``config.json``; every field
is checked when the config is built, with a message that names the flag, what was
expected and what was received.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK, TRAIN_ARENA_OPTIONS
from collapse_probe.core._constraints import AtMost, Config, Constraint, Flag, Integer, Number, OneOf, Specs, rule
from collapse_probe.core.limits import (
    MAX_GROUP,
    MAX_LORA_RANK,
    MAX_ROLLOUTS,
    MAX_SAMPLES_PER_STATE,
    MAX_SEED,
    MAX_STATES,
    MAX_STEPS,
    MAX_TOKENS,
    MAX_TURNS,
    MAX_VS_K,
)
from collapse_probe.errors import ConfigError
from collapse_probe.rollout.runspec import ArenaSpec, BenchmarkOptions, RolloutConfig
from collapse_probe.trainers.advantages import SIMULATOR_REWARD_MODES
from collapse_probe.trainers.methods import METHODS, REGISTRY, get_method

__all__ = ["METHODS", "TrainConfig"]

FROZEN_SIMULATOR_METHODS = tuple(n for n, m in REGISTRY.items() if m.simulator == "frozen")
"""Methods whose simulators are frozen models (any backend)."""

TRAINABLE_SIMULATOR_METHODS = tuple(n for n, m in REGISTRY.items() if m.simulator == "trained")
"""Methods whose simulator is its own LoRA model, updated on its own turns."""

VLLM_METHODS = tuple(n for n in METHODS if REGISTRY[n].vllm_rollouts)
"""Methods the trainer can roll out through vLLM."""

ROLLOUT_BACKENDS = ("torch", "vllm")
"""``torch``: rollouts decode with the model being trained (current LoRA weights, CPU or GPU).
``vllm``: rollouts through a vLLM engine with the current adapter per request (GPU)."""

RESUMABLE_FIELDS = frozenset({"steps", "eval_every", "save_every", "keep_checkpoints", "progress"})
"""Fields that may differ when a run directory is resumed (e.g. ``--steps`` raised to train longer)."""

GROUP_WHY = (
    "advantages are relative to the group of G rollouts of a task, and with one rollout every advantage is 0, "
    "so nothing would be learned"
)

ARENA_KEYWORDS = TRAIN_ARENA_OPTIONS
"""Options of the arena the config has as fields of its own (the ``--personas`` and ``--tau2-data``
flags)."""

TRAINABLE_PREFIXES = ("local/", "hf/")
"""Model spec prefixes the trainers can put LoRA adapters on (after alias expansion)."""


class TrainConfig(Config):
    """Configuration of one LLM training run, checked when built (and by :meth:`validate` again).

    ``rollout`` (the tasks, ``group_size`` rollouts per task, turns, seed and temperature) and ``arena``
    (the benchmark and its options) are derived from the fields; ``config.json`` records the fields.
    """

    method: str = "single"
    """One of :data:`METHODS` (see :mod:`collapse_probe.trainers.methods`)."""
    policy: str = "smollm2"
    """Policy model spec; must be trainable (``local/<name>``, ``hf/<dir>`` or an alias of one)."""
    sims: Annotated[list[str], Specs(), Flag("--sim")] = ["smollm2"]
    """Training simulator spec(s). ``single``/``persona``: one frozen simulator. ``vs``: one simulator,
    run in Verbalized-Sampling mode (``vs:`` is prefixed when missing). ``ensemble``: two or more frozen
    simulators, rotated one per step. ``cotrain``/``population``: one trainable model (``local/``,
    ``hf/``) that gets its own LoRA adapter. ``selfplay``: empty (the policy model plays both sides)."""
    benchmark: str = DEFAULT_BENCHMARK
    """Benchmark name (``p4g``, ``tau2-retail``, ``tau2-airline``, ``tau2-demo`` or an installed one)."""
    heldout: Annotated[list[str], Specs()] = []
    """Held-out simulator specs for the periodic cross-play evaluation (empty: no evaluation)."""
    steps: Annotated[int, Integer(1, most=MAX_STEPS)] = 10
    """Training steps (one rollout batch and one update each). May be raised when resuming."""
    group_size: Annotated[int, Integer(2, why=GROUP_WHY, most=MAX_GROUP)] = 4
    """Rollouts ``G`` per task per step: one group-relative advantage group (at least 2)."""
    tasks: Annotated[int, Integer(1), AtMost(MAX_STATES, "tasks")] = 4
    """Training tasks ``T`` (the first ``T`` of the benchmark's seeded order); every step rolls out
    ``G`` conversations of each, so a step's batch is ``T x G`` conversations."""
    max_turns: Annotated[int, Integer(1), AtMost(MAX_TURNS, "rounds of a conversation")] = 3
    """Conversation rounds (P4G: persuader + persuadee exchanges)."""
    max_tokens: Annotated[int, Integer(1, most=MAX_TOKENS)] = 48
    """Token budget of every turn, both sides."""
    temperature: Annotated[float, Number(gt=0, why="REINFORCE needs a sampling policy")] = 1.0
    """Sampling temperature of both sides (above 0); log-probabilities are
    recomputed at the same temperature, so the update is on-policy for the distribution that sampled."""
    lr: Annotated[float, Number(gt=0)] = 1e-4
    """AdamW learning rate of the policy's LoRA adapter."""
    sim_lr: Annotated[float | None, Number(gt=0, optional=True)] = None
    """AdamW learning rate of a trainable simulator's adapter (``None``: the same as :attr:`lr`)."""
    lora_r: Annotated[int, Integer(1, most=MAX_LORA_RANK)] = 8
    """LoRA rank."""
    lora_alpha: Annotated[int, Integer(1, most=MAX_LORA_RANK)] = 16
    """LoRA scaling numerator (scale = alpha / r)."""
    lora_dropout: Annotated[float, Number(ge=0, lt=1)] = 0.0
    """Dropout on the LoRA path."""
    lora_target_modules: Annotated[list[str] | None, ModuleNames(), Flag("--lora-targets")] = None
    """Modules that get adapters (``None``: peft's default for the architecture, e.g. ``q_proj``, ``v_proj``)."""
    kl_coef: Annotated[float, Number(ge=0)] = 0.0
    """Weight of the KL penalty to the reference model (the same model with its adapter disabled),
    estimated per trained token with ``k3 = exp(ref - logp) - (ref - logp) - 1``; 0 disables it."""
    adv_eps: Annotated[float, Number(ge=0)] = 1e-6
    """``eps`` of the group-relative advantage ``A = (R - mean) / (std + eps)`` (population std)."""
    max_grad_norm: Annotated[float, Number(ge=0)] = 1.0
    """Gradient clipping norm per update (0 disables clipping)."""
    train_batch: Annotated[int, Integer(1, most=MAX_GROUP)] = 8
    """Turns (sequences) per forward/backward micro-batch of the update."""
    cotrain_reward: Annotated[str, OneOf(SIMULATOR_REWARD_MODES)] = "adversarial"
    """Simulator reward of ``cotrain``/``population``: adversarial ``1 - R`` (persuasion default),
    cooperative ``R``, or curriculum ``exp(-(Var_g(R) - 0.25)^2 / 0.02)``."""
    pool_size: Annotated[int, Integer(1, most=MAX_GROUP)] = 5
    """``population``: FIFO pool of the K most recent simulator adapter snapshots."""
    snapshot_every: Annotated[int, Integer(1, most=MAX_STEPS)] = 1
    """``population``: push a snapshot of the co-trained simulator into the pool every this many steps."""
    pool_dir: str | None = None
    """``population``: pool directory (default ``OUT/pool``); its ``manifest.json`` lists the members."""
    personas: str | None = None
    """P4G persona file the ``persona`` method draws from (default: the shipped one); passed to the arena."""
    tau2_data: str | None = None
    """Official tau2 data directory for the tau2 benchmarks; passed to the arena."""
    vs_k: Annotated[int, Integer(2, most=MAX_VS_K)] = 5
    """Candidates per Verbalized-Sampling turn."""
    eval_every: Annotated[int, Integer(1, most=MAX_STEPS)] = 5
    """Cross-play evaluation over :attr:`heldout` every this many steps (and at the last step)."""
    eval_tasks: Annotated[int | None, Integer(1, optional=True, most=MAX_STATES)] = None
    """Tasks of the held-out evaluation (``None``: the same as :attr:`tasks`)."""
    eval_rollouts: Annotated[int, Integer(1, most=MAX_ROLLOUTS)] = 2
    """Conversations per task and held-out simulator in the evaluation."""
    collapse_states: Annotated[int, Integer(0, most=MAX_STATES)] = 2
    """Visited simulator states per step at which the simulator's collapse error is measured."""
    collapse_samples: Annotated[int, Integer(2, most=MAX_SAMPLES_PER_STATE)] = 8
    """Responses sampled per such state (``eps = 1 - max_count / N`` over :attr:`partitioner`'s classes)."""
    partitioner: Annotated[str, Flag("--partition", "--partitioner", metavar="NAME")] = "exact"
    """Partitioner of the simulator's replies for ``sim_collapse_error`` and of the policy's messages
    for ``policy_entropy`` (``exact``, ``embedding`` or an installed partitioner that needs no judge
    model and no benchmark hook)."""
    entropy_turns: Annotated[str, OneOf(("first", "all"))] = "first"
    """Policy turns entering ``policy_entropy``: the opening move (``first``) or every turn (``all``)."""
    save_every: Annotated[int, Integer(1, most=MAX_STEPS)] = 1
    """Write a checkpoint every this many steps (and at the last step)."""
    keep_checkpoints: Annotated[int, Integer(1, most=MAX_GROUP)] = 2
    """Most recent checkpoints kept on disk."""
    rollout_backend: Annotated[str, OneOf(ROLLOUT_BACKENDS)] = "torch"
    """Engine that samples the rollouts: ``torch`` (the learner's own weights) or ``vllm`` (GPU)."""
    vllm_options: dict[str, Any] = {}
    """Extra ``vllm.LLM`` options for :attr:`rollout_backend="vllm"` (e.g. ``gpu_memory_utilization``).
    Defaults there: ``enable_sleep_mode=True`` (vLLM releases its memory during the learner step),
    ``gpu_memory_utilization=0.45`` (the learner and its optimizer keep the rest),
    ``logprobs_mode="processed_logprobs"`` (log-probabilities at the sampling temperature, as the
    learner computes them) and ``max_lora_rank`` = the smallest rank vLLM accepts that holds ``lora_r``."""
    tis_cap: Annotated[float | None, Number(gt=0, optional=True)] = 2.0
    """Truncated importance sampling for vLLM rollouts: each token's loss is weighted by
    min(pi_learner / pi_vllm, :attr:`tis_cap`), correcting the mismatch between vLLM's bf16 sampler and the
    learner; ``none`` (``None`` in Python) turns the correction off (the mismatch is still logged as
    ``logprob_mismatch``). Unused with torch rollouts, which sample from the learner's own weights."""
    device: str | None = None
    """Device of trained models (``None``: ``cpu`` for ``local/``, ``auto`` for ``hf/``)."""
    dtype: str | None = None
    """Weights dtype of trained models (``None``: float32 for ``local/``, ``auto`` for ``hf/``)."""
    cache: bool = True
    """Serve frozen simulators through the response cache (trained models never are)."""
    seed: Annotated[int, Integer(None, most=MAX_SEED)] = 0
    """Seed of the task order, every conversation, LoRA initialisation and pool draws."""
    progress: bool = False
    """Show progress bars."""
    arena_options: Annotated[dict[str, Any] | None, BenchmarkOptions(optional=True), Flag("arena_options")] = None
    """The arena's other options (a plugin benchmark's own), beside ``personas`` and ``tau2_data``."""

    @rule
    def _method_and_models(self) -> None:
        method = get_method(self.method)
        if not self.policy.strip():
            raise ConfigError(f"--policy: expected a model spec, got {self.policy!r}")
        method.check_sims(self.sims)
        if method.simulator == "trained" and _has_mode_prefix(self.sims[0]):
            raise ConfigError(
                f"--sim: method {self.method!r} trains the simulator model itself; give a plain model spec "
                f"(local/..., hf/... or an alias), got {self.sims[0]!r}"
            )
        if len(set(self.heldout)) != len(self.heldout):
            raise ConfigError(f"--heldout: duplicate simulators {self.heldout}")
        _check_device(self.device)
        from collapse_probe.models import resolve_spec

        if not resolve_spec(self.policy).startswith(TRAINABLE_PREFIXES):  # before any model loads
            raise ConfigError(
                f"--policy {self.policy!r} cannot be trained: LoRA training needs a local transformers model "
                f"(local/<name>, hf/<dir> or an alias of one such as smollm2), got {resolve_spec(self.policy)!r}"
            )
        from collapse_probe.metrics.partitioners import check_partitioner  # metrics load scipy: not at import

        check_partitioner(self.partitioner, "--partitioner", "the policy entropy and the simulator's collapse error")

    @rule
    def _vllm_rollouts(self) -> None:
        if self.rollout_backend == "vllm" and not get_method(self.method).vllm_rollouts:
            raise ConfigError(
                f"--rollout-backend vllm: supported for the methods with one trained model and a frozen simulator "
                f"({', '.join(VLLM_METHODS)}); got method {self.method!r}"
            )
        if self.vllm_options and self.rollout_backend != "vllm":
            raise ConfigError(
                "vllm_options (-M policy.KEY=VALUE): the trained policy takes backend options only through the vLLM "
                f"rollout engine (--rollout-backend vllm); got {', '.join(self.vllm_options)} with --rollout-backend "
                f"{self.rollout_backend}"
            )
        if self.rollout_backend == "vllm":
            from collapse_probe.models.vllm import lora_rank_for_vllm, validate_engine_options

            lora_rank_for_vllm(self.lora_r)
            validate_engine_options(self.vllm_options)

    @property
    def simulator_lr(self) -> float:
        """Learning rate of a trainable simulator."""
        return self.lr if self.sim_lr is None else self.sim_lr

    @property
    def rollout(self) -> RolloutConfig:
        """The training rollouts as the :class:`~collapse_probe.rollout.runspec.RolloutConfig` ``play`` and
        ``crossplay`` share (``group_size`` is its ``rollouts``; a copy)."""
        return RolloutConfig(
            tasks=self.tasks, rollouts=self.group_size, max_turns=self.max_turns, seed=self.seed,
            temperature=self.temperature,
        )  # fmt: skip

    @property
    def arena(self) -> ArenaSpec:
        """The benchmark and its options: ``arena_options`` with ``personas`` and ``tau2_data`` where given
        (``max_turns`` and ``max_tokens`` reach it where it takes them, see the trainer)."""
        given = {k: v for k in ARENA_KEYWORDS if (v := getattr(self, k)) is not None}
        return ArenaSpec(self.benchmark, {**(self.arena_options or {}), **given})

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> TrainConfig:
        """Build from a mapping (e.g. a run's ``config.json``); unknown keys are rejected by name.

        Raises:
            ConfigError: a key that is not a field, or a field that fails validation.
        """
        # what a run directory's config.json adds (its resolved "arena" record follows from the fields)
        recorded = {"kind", "version", "schema", "arena", "fingerprints"}
        extra = sorted(set(values) - set(cls.model_fields) - recorded)
        if extra:
            known = ", ".join(sorted(cls.model_fields))
            raise ConfigError(f"train config: unknown field(s) {', '.join(extra)}; known: {known}")
        return cls(**{k: v for k, v in values.items() if k not in recorded})


def _has_mode_prefix(spec: str) -> bool:
    """``spec`` names a sampling mode (``vs:``, ``direct:``) before its model."""
    from collapse_probe.simulators import parse_participant_spec

    return parse_participant_spec(spec)[1] != spec.strip()


DEVICE_PATTERN = r"auto|cpu|mps|cuda(:\d+)?|xpu(:\d+)?"
"""Devices a trained model can be placed on (``auto``: CUDA when available, else CPU)."""


def _check_device(device: Any) -> None:
    import re

    if device is None:
        return
    if not isinstance(device, str) or re.fullmatch(DEVICE_PATTERN, device) is None:
        raise ConfigError(f"--device: expected auto, cpu, cuda, cuda:N, mps or xpu, got {device!r}")


class ModuleNames(Constraint):
    """``None`` or a list of non-empty module names (the LoRA targets)."""

    def check(self, value: Any, flag: str) -> None:
        if value is not None and (not isinstance(value, list) or not all(isinstance(m, str) and m for m in value)):
            raise ConfigError(f"--lora-targets: expected a list of module names, got {value!r}")
        if value == []:
            raise ConfigError(
                "--lora-targets: expected at least one module name, got none (leave it out for peft's default)"
            )
