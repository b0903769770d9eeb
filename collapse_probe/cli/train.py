"""``collapse-probe train``: RL-train a policy LLM (LoRA) against simulators with one of the seven methods."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from collapse_probe.benchmarks._registry import TRAIN_ARENA_OPTIONS
from collapse_probe.cli._common import (
    add_benchmark,
    add_cache,
    add_out,
    add_ray,
    add_trackers,
    arena_spec_from_args,
    load_models_with_options,
)
from collapse_probe.cli._config import model_options
from collapse_probe.cli._flags import add_model_options, config_fields, model_values
from collapse_probe.errors import ConfigError
from collapse_probe.trainers.methods import METHODS, get_method

if TYPE_CHECKING:
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
    # the run's options (out, cache, progress, trackers) and the benchmark's come from their own helpers
    helps = {"method": f"one of {', '.join(METHOD_CHOICES)}", "sims": SIM_HELP}
    add_model_options(p, CONFIG, exclude=NOT_FLAGS, helps=helps, defaults={"sims": None})
    add_benchmark(p, CONFIG, only=TRAIN_ARENA_OPTIONS)  # and a chosen plugin benchmark's options when named
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    add_cache(p)
    add_ray(p)
    add_out(p, default="runs/train", resume_flags=False)
    add_trackers(p)


CONFIG = "collapse_probe.trainers.config:TrainConfig"
"""The config model this subcommand's flags are generated from."""
NOT_FLAGS = ("benchmark", "arena_options", "vllm_options", "cache", "progress")
"""Fields of :class:`~collapse_probe.trainers.TrainConfig` set otherwise: ``--benchmark`` and its
options, ``-M policy.KEY=VALUE`` (vLLM), ``--no-cache`` and ``--no-progress``."""
SIM_HELP = (
    "simulator spec(s), comma-separated (ensemble: 2+; vs: prefixed with vs: automatically; cotrain/population: "
    "a trainable model; selfplay: omit). Default smollm2"
)


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The :class:`~collapse_probe.trainers.TrainConfig` the flags describe."""
    from collapse_probe.trainers.config import TrainConfig

    if get_method(args.method).max_sims == 0:
        if args.sims:
            raise ConfigError(f"--sim: method {args.method!r} trains one model that plays both sides; omit --sim")
        sims: list[str] = []
    else:
        sims = args.sims if args.sims is not None else TrainConfig.model_fields["sims"].get_default()
    values = model_values(args, config_fields(CONFIG, exclude=NOT_FLAGS))
    return TrainConfig(**{**values, "sims": sims}, benchmark=args.benchmark, arena_options=_arena_options(args),
                       vllm_options=model_options(args, "policy"), cache=not args.no_cache, progress=not args.no_progress)  # fmt: skip


def _arena_options(args: argparse.Namespace) -> dict[str, object]:
    """The chosen benchmark's other options the command line gives (e.g. a plugin benchmark's own);
    the turn and token budgets and the persona and tau2 data flags are fields of the config."""
    from collapse_probe.trainers.config import ARENA_KEYWORDS

    options = dict(arena_spec_from_args(args).options)
    return {k: v for k, v in options.items() if k not in {"max_turns", "max_tokens", *ARENA_KEYWORDS}}


def run(args: argparse.Namespace) -> int:
    from collapse_probe.trainers.config import TRAINABLE_SIMULATOR_METHODS
    from collapse_probe.trainers.llm import run_train

    config = config_from_args(args)
    frozen = [] if config.method in TRAINABLE_SIMULATOR_METHODS else config.sims
    load_models_with_options(args, {"sim": frozen + config.heldout}, handled=("policy",))
    results = run_train(config, args.out)
    from collapse_probe.report.terminal import train_text, zero_variance_warning

    print(train_text(results))
    warning = zero_variance_warning(results)
    if warning:
        print(warning, file=sys.stderr)
    print(f"metrics: {args.out}/metrics.jsonl  report: {args.out}/report.html")
    return 0
