"""Configuration of the LLM reference trainers (``collapse-probe train``).

One typed config filled by the CLI, the Python API and a resumed run's ``config.json``; every field
is validated once, in :meth:`TrainConfig.validate`, with a message that names the flag, what was
expected and what was received.
"""

from __future__ import annotations

from dataclasses import InitVar, asdict, dataclass, field, fields
from typing import Any

from collapse_probe._constraints import Integer, Number, OneOf, Specs, check_value, param, rule, validate
from collapse_probe.benchmarks._registry import FORMER_TRAIN_OPTIONS
from collapse_probe.errors import ConfigError
from collapse_probe.runspec import (
    UNSET,
    ArenaSpec,
    RolloutConfig,
    check_options,
    nested_arena,
    nested_rollout,
    rollout_property,
)
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

ARENA_KEYWORDS = FORMER_TRAIN_OPTIONS
"""Options of the arena the config also takes as keywords and attributes (the flat form of earlier
versions); ``config.json`` records them beside the other fields, as before."""

TRAINABLE_PREFIXES = ("local/", "hf/")
"""Model spec prefixes the trainers can put LoRA adapters on (after alias expansion)."""


@dataclass
class TrainConfig:
    """Configuration of one LLM training run. Validated by :meth:`validate` (called on construction).

    ``rollout`` (the rollout config ``play`` and ``crossplay`` nest) and ``arena`` (the benchmark and its
    options) are nested; the flat keywords and attributes of earlier versions (``benchmark``,
    ``group_size`` = ``rollout.rollouts``, ``tasks``, ``max_turns``, ``temperature``, ``seed``,
    ``personas`` and ``tau2_data`` = arena options) read and write them, and ``config.json`` records
    them flat (:meth:`to_dict`).
    """

    method: str = "single"
    """One of :data:`METHODS` (see :mod:`collapse_probe.trainers.methods`)."""
    policy: str = "smollm2"
    """Policy model spec; must be trainable (``local/<name>``, ``hf/<dir>`` or an alias of one)."""
    sims: list[str] = param(None, Specs(), flag="--sim", factory=lambda: ["smollm2"])
    """Training simulator spec(s). ``single``/``persona``: one frozen simulator. ``vs``: one simulator,
    run in Verbalized-Sampling mode (``vs:`` is prefixed when missing). ``ensemble``: two or more frozen
    simulators, rotated one per step. ``cotrain``/``population``: one trainable model (``local/``,
    ``hf/``) that gets its own LoRA adapter. ``selfplay``: empty (the policy model plays both sides)."""
    benchmark: InitVar[str] = UNSET
    """Benchmark name (``p4g``, ``tau2-retail``, ``tau2-airline``, ``tau2-demo`` or an installed one):
    ``arena.benchmark``."""
    heldout: list[str] = param(None, Specs(), factory=list)
    """Held-out simulator specs for the periodic cross-play evaluation (empty: no evaluation)."""
    steps: int = param(10, Integer(1))
    """Training steps (one rollout batch and one update each). May be raised when resuming."""
    group_size: InitVar[int] = UNSET
    """Rollouts ``G`` per task per step: one group-relative advantage group (``rollout.rollouts``,
    at least 2)."""
    tasks: InitVar[int] = UNSET
    """Training tasks ``T`` (the first ``T`` of the benchmark's seeded order); every step rolls out
    ``G`` conversations of each, so a step's batch is ``T x G`` conversations (``rollout.tasks``)."""
    max_turns: InitVar[int] = UNSET
    """Conversation rounds (P4G: persuader + persuadee exchanges; ``rollout.max_turns``, required)."""
    max_tokens: int = param(48, Integer(1))
    """Token budget of every turn, both sides."""
    temperature: InitVar[float] = UNSET
    """Sampling temperature of both sides (``rollout.temperature``, above 0); log-probabilities are
    recomputed at the same temperature, so the update is on-policy for the distribution that sampled."""
    lr: float = param(1e-4, Number(gt=0))
    """AdamW learning rate of the policy's LoRA adapter."""
    sim_lr: float | None = param(None, Number(gt=0, optional=True))
    """AdamW learning rate of a trainable simulator's adapter (``None``: ``lr``)."""
    lora_r: int = param(8, Integer(1))
    """LoRA rank."""
    lora_alpha: int = param(16, Integer(1))
    """LoRA scaling numerator (scale = alpha / r)."""
    lora_dropout: float = param(0.0, Number(ge=0, lt=1))
    """Dropout on the LoRA path."""
    lora_target_modules: list[str] | None = None
    """Modules that get adapters (``None``: peft's default for the architecture, e.g. ``q_proj``, ``v_proj``)."""
    kl_coef: float = param(0.0, Number(ge=0))
    """Weight of the KL penalty to the reference model (the same model with its adapter disabled),
    estimated per trained token with ``k3 = exp(ref - logp) - (ref - logp) - 1``; 0 disables it."""
    adv_eps: float = param(1e-6, Number(ge=0))
    """``eps`` of the group-relative advantage ``A = (R - mean) / (std + eps)`` (population std)."""
    max_grad_norm: float = param(1.0, Number(ge=0))
    """Gradient clipping norm per update (0 disables clipping)."""
    train_batch: int = param(8, Integer(1))
    """Turns (sequences) per forward/backward micro-batch of the update."""
    cotrain_reward: str = param("adversarial", OneOf(SIMULATOR_REWARD_MODES))
    """Simulator reward of ``cotrain``/``population``: adversarial ``1 - R`` (persuasion default),
    cooperative ``R``, or curriculum ``exp(-(Var_g(R) - 0.25)^2 / 0.02)``."""
    pool_size: int = param(5, Integer(1))
    """``population``: FIFO pool of the K most recent simulator adapter snapshots."""
    snapshot_every: int = param(1, Integer(1))
    """``population``: push a snapshot of the co-trained simulator into the pool every this many steps."""
    pool_dir: str | None = None
    """``population``: pool directory (default ``OUT/pool``); its ``manifest.json`` lists the members."""
    personas: InitVar[str | None] = UNSET
    """P4G persona file (``persona`` method draws from it; default: the shipped one): an arena option."""
    tau2_data: InitVar[str | None] = UNSET
    """Official tau2 data directory for the tau2 benchmarks: an arena option."""
    vs_k: int = param(5, Integer(2))
    """Candidates per Verbalized-Sampling turn."""
    eval_every: int = param(5, Integer(1))
    """Cross-play evaluation over ``heldout`` every this many steps (and at the last step)."""
    eval_tasks: int | None = param(None, Integer(1, optional=True))
    """Tasks of the held-out evaluation (``None``: ``tasks``)."""
    eval_rollouts: int = param(2, Integer(1))
    """Conversations per task and held-out simulator in the evaluation."""
    collapse_states: int = param(2, Integer(0))
    """Visited simulator states per step at which the simulator's collapse error is measured."""
    collapse_samples: int = param(8, Integer(2))
    """Responses sampled per such state (``eps = 1 - max_count / N`` over ``partitioner``'s classes)."""
    partitioner: str = "exact"
    """Partitioner of the simulator's replies for ``sim_collapse_error`` and of the policy's messages
    for ``policy_entropy`` (``exact``, ``embedding`` or an installed partitioner that needs no judge
    model and no benchmark hook)."""
    entropy_turns: str = param("first", OneOf(("first", "all")))
    """Policy turns entering ``policy_entropy``: the opening move (``first``) or every turn (``all``)."""
    save_every: int = param(1, Integer(1))
    """Write a checkpoint every this many steps (and at the last step)."""
    keep_checkpoints: int = param(2, Integer(1))
    """Most recent checkpoints kept on disk."""
    rollout_backend: str = param("torch", OneOf(ROLLOUT_BACKENDS))
    """One of :data:`ROLLOUT_BACKENDS`."""
    vllm_options: dict[str, Any] = field(default_factory=dict)
    """Extra ``vllm.LLM`` options for ``rollout_backend="vllm"`` (e.g. ``gpu_memory_utilization``).
    Defaults there: ``enable_sleep_mode=True`` (vLLM releases its memory during the learner step),
    ``gpu_memory_utilization=0.45`` (the learner and its optimizer keep the rest),
    ``logprobs_mode="processed_logprobs"`` (log-probabilities at the sampling temperature, as the
    learner computes them) and ``max_lora_rank`` = the smallest rank vLLM accepts that holds ``lora_r``."""
    tis_cap: float | None = param(2.0, Number(gt=0, optional=True))
    """Truncated importance sampling for vLLM rollouts: each token's loss is weighted by
    ``min(pi_learner / pi_vllm, tis_cap)``, correcting the mismatch between vLLM's bf16 sampler and the
    learner; ``None`` turns the correction off (the mismatch is still logged as ``logprob_mismatch``).
    Unused with torch rollouts, which sample from the learner's own weights."""
    device: str | None = None
    """Device of trained models (``None``: ``cpu`` for ``local/``, ``auto`` for ``hf/``)."""
    dtype: str | None = None
    """Weights dtype of trained models (``None``: float32 for ``local/``, ``auto`` for ``hf/``)."""
    cache: bool = True
    """Serve frozen simulators through the response cache (trained models never are)."""
    seed: InitVar[int] = UNSET
    """Seed of the task order, every conversation, LoRA initialisation and pool draws (``rollout.seed``)."""
    progress: bool = False
    """Show progress bars."""
    arena_options: InitVar[dict[str, Any] | None] = UNSET
    """The arena's other options (a plugin benchmark's own), beside ``personas`` and ``tau2_data``."""
    rollout: RolloutConfig = param(None, factory=lambda: RolloutConfig(tasks=4, rollouts=4, max_turns=3))
    """Tasks, rollouts per task (the group ``G``), turns, seed and temperature of the training rollouts."""
    arena: ArenaSpec = field(default_factory=ArenaSpec)
    """The benchmark and its options (``max_turns`` and ``max_tokens`` above reach it where it takes them)."""

    NESTED_FLAGS = {"rollout": {"rollouts": "--group-size"}}
    """How the trainer names the nested fields whose flag differs from the field (``validate``)."""

    FLAT_FIELDS = (
        "benchmark",
        "group_size",
        "tasks",
        "max_turns",
        "temperature",
        "seed",
        *ARENA_KEYWORDS,
        "arena_options",
    )
    """Keywords the config takes besides its fields (the flat form of earlier versions)."""

    def __post_init__(
        self,
        benchmark: str,
        group_size: int,
        tasks: int,
        max_turns: int,
        temperature: float,
        personas: str | None,
        tau2_data: str | None,
        seed: int,
        arena_options: dict[str, Any] | None,
    ) -> None:
        self.rollout = nested_rollout(
            self.rollout, tasks=tasks, rollouts=group_size, max_turns=max_turns, seed=seed, temperature=temperature
        )
        if isinstance(self.arena, dict):
            self.arena = ArenaSpec(
                str(self.arena.get("benchmark") or ArenaSpec().benchmark), self.arena.get("options") or {}
            )
        options: Any = self.arena.options
        if isinstance(options, dict):
            options = dict(options)  # a copy: a config copied by dataclasses.replace shares the old one
        if arena_options is not UNSET:
            kept = {k: v for k, v in options.items() if k in ARENA_KEYWORDS} if isinstance(options, dict) else {}
            options = {**arena_options, **kept} if isinstance(arena_options, dict) else arena_options
        for name, value in zip(ARENA_KEYWORDS, (personas, tau2_data), strict=True):
            if value is not UNSET:
                options = _with_option(options, name, value)
        self.arena = nested_arena(self.arena, None if benchmark is UNSET else benchmark, options)
        self.validate()

    def validate(self) -> None:
        """Check every field once, at the boundary.

        Raises:
            ConfigError: naming the flag, the allowed values and the value received.
        """
        method = get_method(self.method)
        if not isinstance(self.policy, str) or not self.policy.strip():
            raise ConfigError(f"--policy: expected a model spec, got {self.policy!r}")
        # the trainer's own bounds on the shared rollout fields, first: they name the flag as before
        check_value(self.rollout.rollouts, "--group-size", (Integer(2, why=GROUP_WHY),))
        check_value(self.rollout.max_turns, "--max-turns", (Integer(1),))
        check_value(self.rollout.temperature, "--temperature", (Number(gt=0, why="REINFORCE needs a sampling policy"),))
        validate(self)
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
        if not isinstance(self.vllm_options, dict):
            raise ConfigError(f"vllm_options: expected a mapping of vllm.LLM options, got {self.vllm_options!r}")
        if self.rollout_backend == "vllm":
            from collapse_probe.models.vllm import lora_rank_for_vllm, validate_engine_options

            lora_rank_for_vllm(self.lora_r)
            validate_engine_options(self.vllm_options)

    @rule
    def _lora_targets(self) -> None:
        if self.lora_target_modules is not None and (
            not isinstance(self.lora_target_modules, list)
            or not all(isinstance(m, str) and m for m in self.lora_target_modules)
        ):
            raise ConfigError(f"--lora-targets: expected a list of module names, got {self.lora_target_modules!r}")

    @rule
    def _options_mapping(self) -> None:
        check_options(self.arena.options, "arena_options")

    @property
    def simulator_lr(self) -> float:
        """Learning rate of a trainable simulator."""
        return self.lr if self.sim_lr is None else self.sim_lr

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy of every field, flat as ``config.json`` and ``results.json`` record it: the
        rollout fields, ``benchmark``, ``personas`` and ``tau2_data`` beside the others, and
        ``arena_options`` with the arena's other options (only when there are any)."""
        d = asdict(self)
        del d["rollout"], d["arena"]
        r, options = self.rollout, dict(self.arena.options)
        flat = {"benchmark": self.arena.benchmark, "group_size": r.rollouts, "tasks": r.tasks}
        flat.update(max_turns=r.max_turns, temperature=r.temperature, seed=r.seed)
        flat.update({name: options.pop(name, None) for name in ARENA_KEYWORDS})
        return {**d, **flat, **({"arena_options": options} if options else {})}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Build from a mapping (e.g. a run's ``config.json``, of this version or an earlier one);
        unknown keys are rejected by name.

        Raises:
            ConfigError: a key that is not a field, or a field that fails validation.
        """
        known = {f.name for f in fields(cls)} | set(cls.FLAT_FIELDS)
        # what a run directory's config.json adds (its resolved "arena" record follows from the fields)
        recorded = {"kind", "version", "schema", "arena", "fingerprints"}
        extra = sorted(set(data) - known - recorded)
        if extra:
            raise ConfigError(f"train config: unknown field(s) {', '.join(extra)}; known: {', '.join(sorted(known))}")
        return cls(**{k: v for k, v in data.items() if k in known and k not in recorded})


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


def _flat_property(name: str, get: Any, set_: Any) -> property:
    return property(get, set_, doc=f"The flat ``{name}`` of earlier versions.")


def _with_option(options: Any, name: str, value: Any) -> Any:
    """A copy of ``options`` with option ``name`` set (``None``: removed); not a mapping: as it is."""
    if not isinstance(options, dict):
        return options  # refused by name by the options rule
    options = {k: v for k, v in options.items() if k != name}
    return options if value is None else {**options, name: value}


def _set_option(name: str) -> Any:
    def set_(config: TrainConfig, value: Any) -> None:
        config.arena = nested_arena(config.arena, None, _with_option(config.arena.options, name, value))

    return set_


def _other_options(config: TrainConfig) -> dict[str, Any]:
    return {k: v for k, v in config.arena.options.items() if k not in ARENA_KEYWORDS}


def _set_other_options(config: TrainConfig, value: dict[str, Any] | None) -> None:
    kept = {k: v for k, v in config.arena.options.items() if k in ARENA_KEYWORDS}
    config.arena = nested_arena(config.arena, None, {**(value or {}), **kept})


# the keywords of earlier versions, read and written as attributes (set after the dataclass took their defaults)
for _name, _attr in (("group_size", "rollouts"), ("tasks", "tasks"), ("max_turns", "max_turns"),
                     ("temperature", "temperature"), ("seed", "seed")):  # fmt: skip
    setattr(TrainConfig, _name, rollout_property(_attr))
for _name in ARENA_KEYWORDS:
    setattr(TrainConfig, _name, _flat_property(_name, lambda c, n=_name: c.arena.options.get(n), _set_option(_name)))
setattr(TrainConfig, "arena_options", property(_other_options, _set_other_options, doc="The arena's other options."))  # noqa: B010
setattr(  # noqa: B010
    TrainConfig,
    "benchmark",
    _flat_property(
        "benchmark", lambda c: c.arena.benchmark, lambda c, v: setattr(c, "arena", nested_arena(c.arena, v, None))
    ),
)
