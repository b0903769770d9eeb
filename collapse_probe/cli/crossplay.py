"""``collapse-probe crossplay``: the policy x simulator reward matrix in one batched run."""

from __future__ import annotations

import argparse
import sys

from collapse_probe.cli._common import (
    add_benchmark,
    add_cache,
    add_out,
    add_ray,
    add_sampling,
    add_trackers,
    arena_spec_from_args,
    prepare_run,
)
from collapse_probe.cli._flags import add_model_options, model_values

CROSSPLAY_FIELDS = (
    "policies", "simulators", "train_simulator", "tasks", "rollouts", "partitioner", "entropy_turns",
    "temperature", "max_live", "seed",
)  # fmt: skip
"""The fields of :class:`~collapse_probe.pipelines.crossplay.CrossplayConfig` that are flags of ``crossplay``."""


CONFIG = "collapse_probe.pipelines.crossplay:CrossplayConfig"
"""The config model this subcommand's flags are generated from."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "crossplay",
        help="run every policy against every simulator and measure transfer",
        description="Run the policy x simulator matrix in one batched engine run (requests for the same model "
        "are batched across cells), then write results.json (rewards, transfer ratios, policy strategy entropy) "
        "and report.html to --out. A killed run resumes from --out.",
    )
    add_model_options(p, CONFIG, CROSSPLAY_FIELDS, required=("policies", "simulators"))
    add_benchmark(p, CONFIG)
    add_sampling(p)
    add_cache(p)
    add_ray(p)
    add_out(p)
    add_trackers(p)


def run(args: argparse.Namespace) -> int:
    from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay

    # the benchmark's own options (and the judge) are recorded with the run, as they were given
    given = {**arena_spec_from_args(args).options, "judge": args.judge}
    extra = {k: v for k, v in given.items() if v and k != "max_turns"}
    values = model_values(args, CROSSPLAY_FIELDS)
    config = CrossplayConfig(**values, benchmark=args.benchmark, max_turns=args.max_turns, extra=extra)
    policies, sims = config.policies, config.simulators
    judge = [args.judge] if args.judge else []
    arena, participants = prepare_run(args, config, "crossplay", {"policy": policies, "sim": sims, "judge": judge})
    results = run_crossplay(
        config,
        arena=arena,
        participants=participants,
        out=args.out,
        progress=not args.no_progress,
        max_live=config.max_live,
        cache=not args.no_cache,  # recorded in config.json (the participants use it)
        fresh=args.fresh,
        keep_failed=args.keep_failed,
    )
    from collapse_probe.report.terminal import crossplay_text

    print(crossplay_text(results))
    print(f"\nresults: {args.out}/results.json   report: {args.out}/report.html")
    if not any(c.mean_reward is not None for c in results.cells):
        from collapse_probe.core._observe import no_result_reason

        failures = sum(c.infra_failures for c in results.cells)
        first = next((str(e) for c in results.cells for e in c.infra_errors), None)
        print(f"NO RESULT: no cell has a scored conversation {no_result_reason(failures, first)}", file=sys.stderr)
        return 1
    return 0
