"""``collapse-probe train``: RL-train a policy LLM (LoRA) against simulators with one of the seven methods."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from collapse_probe.cli._common import (
    add_benchmark,
    add_cache,
    add_out,
    add_ray,
    add_seed,
    add_trackers,
    arena_spec_from_args,
    env,
    load_models_with_options,
    split_specs,
)
from collapse_probe.cli._config import add_config_options, config_values, model_options
from collapse_probe.errors import ConfigError
from collapse_probe.trainers.methods import METHODS, get_method

if TYPE_CHECKING:
    from collapse_probe.results import TrainResults
    from collapse_probe.trainers.config import TrainConfig

METHOD_CHOICES = METHODS
"""The registered training methods (:mod:`collapse_probe.trainers.methods`)."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="REINFORCE + LoRA training of a policy against simulators (single, vs, ensemble, persona, "
        "cotrain, population, selfplay)",
        description="Train a policy LLM with group-relative REINFORCE (A = (R - mean)/(std + eps), population std) "
        "on LoRA adapters. Writes metrics.jsonl per step, checkpoints, results.json and report.html to --out; "
        "rerunning with the same --out resumes from the last checkpoint (--steps may be raised).",
    )
    p.add_argument("--method", default=env("method", "single"), help=f"one of {', '.join(METHOD_CHOICES)}")
    p.add_argument("--policy", default=env("policy", "smollm2"), help="trainable policy spec (local/..., hf/DIR)")
    p.add_argument(
        "--sim",
        default=env("sim", None),
        help="simulator spec(s), comma-separated (ensemble: 2+; vs: prefixed with vs: automatically; "
        "cotrain/population: a trainable model; selfplay: omit). Default smollm2",
    )
    p.add_argument("--heldout", default=env("heldout", None), help="held-out simulator specs for cross-play evaluation")
    p.add_argument("--steps", type=int, default=env("steps", 10), help="training steps (default 10)")
    p.add_argument("--group-size", type=int, default=env("group-size", 4), help="rollouts G per task (default 4)")
    p.add_argument("--tasks", type=int, default=env("tasks", 4), help="training tasks T per step (default 4)")
    p.add_argument("--max-turns", type=int, default=env("max-turns", 3), help="conversation rounds (default 3)")
    p.add_argument("--max-tokens", type=int, default=env("max-tokens", 48), help="tokens per turn (default 48)")
    from collapse_probe.trainers.config import TrainConfig

    # the arena options a run records (a chosen plugin benchmark's own options are added when it is named)
    add_benchmark(p, only=set(TrainConfig.model_fields))
    p.add_argument(
        "--eval-every", type=int, default=env("eval-every", 5), help="held-out evaluation period (default 5)"
    )
    p.add_argument(
        "--eval-tasks",
        type=int,
        default=env("eval-tasks", None),
        help="tasks of the held-out evaluation (default: --tasks)",
    )
    p.add_argument("--eval-rollouts", type=int, default=env("eval-rollouts", 2), help="rollouts per held-out cell")
    p.add_argument("--lr", type=float, default=env("lr", 1e-4), help="policy learning rate (default 1e-4)")
    p.add_argument("--sim-lr", type=float, default=env("sim-lr", None), help="simulator learning rate (default --lr)")
    p.add_argument("--lora-r", type=int, default=env("lora-r", 8), help="LoRA rank (default 8)")
    p.add_argument("--lora-alpha", type=int, default=env("lora-alpha", 16), help="LoRA alpha (default 16)")
    p.add_argument(
        "--lora-targets",
        default=env("lora-targets", None),
        help="comma-separated LoRA target modules (default: peft's for the model's architecture)",
    )
    p.add_argument("--kl-coef", type=float, default=env("kl-coef", 0.0), help="KL weight to the reference (default 0)")
    p.add_argument(
        "--cotrain-reward",
        default=env("cotrain-reward", "adversarial"),
        help="simulator reward: adversarial (1-R) | cooperative (R) | curriculum",
    )
    p.add_argument("--pool-size", type=int, default=env("pool-size", 5), help="population pool size K (default 5)")
    p.add_argument("--snapshot-every", type=int, default=env("snapshot-every", 1), help="steps between pool snapshots")
    p.add_argument("--pool-dir", default=env("pool-dir", None), help="population pool directory (default OUT/pool)")
    p.add_argument("--temperature", type=float, default=env("temperature", 1.0), help="sampling temperature")
    p.add_argument("--vs-k", type=int, default=env("vs-k", 5), help="candidates per Verbalized-Sampling turn")
    p.add_argument("--train-batch", type=int, default=env("train-batch", 8), help="sequences per micro-batch")
    p.add_argument("--save-every", type=int, default=env("save-every", 1), help="steps between checkpoints")
    p.add_argument("--collapse-samples", type=int, default=env("collapse-samples", 8), help="samples per ε state")
    p.add_argument("--collapse-states", type=int, default=env("collapse-states", 2), help="ε states per step")
    p.add_argument(
        "--partition",
        "--partitioner",
        dest="partitioner",
        default=env("partitioner", "exact"),
        help="policy-entropy partitioner (default exact; --partitioner is the same option)",
    )
    p.add_argument(
        "--device",
        default=env("device", None),
        help="device of trained models: cpu, cuda, auto (default: cpu for the embedded models, auto for hf/)",
    )
    p.add_argument("--rollout-backend", default=env("rollout-backend", "torch"), help="torch | vllm (GPU)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    add_seed(p)
    add_cache(p)
    add_ray(p)
    add_out(p, default="runs/train", resume_flags=False)
    add_trackers(p)
    from collapse_probe.trainers.config import TrainConfig

    # every other scalar field of TrainConfig becomes an option of the same name, typed and documented by the field
    generated = add_config_options(p, TrainConfig, skip=("progress", "cache"))
    p.set_defaults(_generated_fields=generated)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The :class:`~collapse_probe.trainers.TrainConfig` the flags describe."""
    from collapse_probe.trainers.config import TrainConfig

    if get_method(args.method).max_sims == 0:
        if args.sim:
            raise ConfigError(f"--sim: method {args.method!r} trains one model that plays both sides; omit --sim")
        sims: list[str] = []
    else:
        sims = split_specs(args.sim or "smollm2", "--sim")
    return TrainConfig(
        method=args.method,
        policy=args.policy,
        sims=sims,
        benchmark=args.benchmark,
        heldout=split_specs(args.heldout, "--heldout") if args.heldout else [],
        steps=args.steps,
        group_size=args.group_size,
        tasks=args.tasks,
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        lr=args.lr,
        sim_lr=args.sim_lr,
        lora_r=args.lora_r,
        lora_alpha=args.lora_alpha,
        lora_target_modules=split_specs(args.lora_targets, "--lora-targets") if args.lora_targets else None,
        kl_coef=args.kl_coef,
        train_batch=args.train_batch,
        cotrain_reward=args.cotrain_reward,
        pool_size=args.pool_size,
        snapshot_every=args.snapshot_every,
        pool_dir=args.pool_dir,
        personas=args.personas,
        tau2_data=args.tau2_data,
        arena_options=_arena_options(args),
        vs_k=args.vs_k,
        eval_every=args.eval_every,
        eval_tasks=args.eval_tasks,
        eval_rollouts=args.eval_rollouts,
        collapse_states=args.collapse_states,
        collapse_samples=args.collapse_samples,
        partitioner=args.partitioner,
        save_every=args.save_every,
        rollout_backend=args.rollout_backend,
        device=args.device,
        cache=not args.no_cache,
        seed=args.seed,
        progress=not args.no_progress,
        vllm_options=_vllm_options(args),
        **config_values(args, getattr(args, "_generated_fields", [])),
    )


def _arena_options(args: argparse.Namespace) -> dict[str, object]:
    """The chosen benchmark's other options the command line gives (e.g. a plugin benchmark's own);
    the turn and token budgets and the persona and tau2 data flags are fields of the config."""
    from collapse_probe.trainers.config import ARENA_KEYWORDS

    options = dict(arena_spec_from_args(args).options)
    return {k: v for k, v in options.items() if k not in {"max_turns", "max_tokens", *ARENA_KEYWORDS}}


def _vllm_options(args: argparse.Namespace) -> dict[str, object]:
    """``-M policy.KEY=VALUE`` options: ``vllm.LLM`` options of the rollout engine (``--rollout-backend vllm``)."""
    options = model_options(args, "policy")
    if options and args.rollout_backend != "vllm":
        raise ConfigError(
            "-M/--model-arg policy.*: the trained policy takes backend options only through the vLLM rollout "
            f"engine (--rollout-backend vllm); got {', '.join(options)} with --rollout-backend {args.rollout_backend}"
        )
    return options


def run(args: argparse.Namespace) -> int:
    from collapse_probe.trainers.config import TRAINABLE_SIMULATOR_METHODS
    from collapse_probe.trainers.llm import run_train

    config = config_from_args(args)
    frozen = [] if config.method in TRAINABLE_SIMULATOR_METHODS else config.sims
    load_models_with_options(args, {"sim": frozen + config.heldout}, handled=("policy",))
    results = run_train(config, args.out)
    print(summary_text(results))
    warning = zero_variance_warning(results)
    if warning:
        print(warning, file=sys.stderr)
    print(f"metrics: {args.out}/metrics.jsonl  report: {args.out}/report.html")
    return 0


def zero_variance_warning(results: TrainResults | Mapping[str, Any]) -> str | None:
    """A warning when every group of every step had zero reward variance (zero-std share 1 throughout):
    group-relative advantages were then all 0, so the policy learned nothing (``None`` otherwise)."""
    from collapse_probe.results import TrainResults

    r = TrainResults.typed(results)
    mean = r.mean.get("zero_std_share")
    shares = [x for x in (mean, r.first.zero_std_share, r.final.zero_std_share) if x is not None]
    if not shares or min(shares) < 1.0:
        return None
    return (
        f"warning: every group of all {r.steps} steps had zero reward variance (zero-std share 1.000): every "
        "advantage was 0, so the policy learned nothing. The simulator's rewards never differ within a group "
        "(an audit says where: collapse-probe audit --sim SPEC); try a more diverse simulator (vs:SPEC, "
        "--method ensemble), a larger --group-size or more --max-turns"
    )


def summary_text(results: TrainResults | Mapping[str, Any]) -> str:
    """The result line of a training run: the last step's rewards, zero-std share, entropy and simulator ε.

    Args:
        results: the run's typed results, or its ``results.json`` object.
    """
    from collapse_probe.results import TrainResults

    r = TrainResults.typed(results)
    final = r.final

    def fmt(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    return (
        f"{r.method}: {r.steps} steps; final train reward {fmt(final.train_reward)}, "
        f"held-out reward {fmt(final.heldout_reward)}, zero-std share {fmt(final.zero_std_share)}, "
        f"policy entropy {fmt(final.policy_entropy)} (estimate incl. unseen classes), simulator ε {fmt(final.sim_collapse_error)}"
    )
