"""``collapse-probe play``: watch a policy and a simulator talk, and score them."""

from __future__ import annotations

import argparse

from collapse_probe.cli._common import (
    add_benchmark,
    add_cache,
    add_out,
    add_ray,
    add_sampling,
    prepare_run,
)
from collapse_probe.cli._flags import add_model_options, model_values
from collapse_probe.errors import ConfigError

PLAY_FIELDS = ("policy", "sim", "tasks", "rollouts", "temperature", "max_live", "seed")
"""The fields of :class:`~collapse_probe.pipelines.play.PlayConfig` that are flags of ``play``."""


CONFIG = "collapse_probe.pipelines.play:PlayConfig"
"""The config model this subcommand's flags are generated from."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "play",
        help="run policy-vs-simulator conversations and report the mean reward",
        description="Run conversations of a policy against a simulator on a benchmark. "
        "Defaults run offline on the embedded model.",
    )
    add_model_options(p, CONFIG, PLAY_FIELDS)
    p.add_argument("--show", type=int, default=1, help="print this many conversations in full (default 1)")
    add_benchmark(p, CONFIG)
    add_sampling(p)
    add_cache(p)
    add_ray(p)
    add_out(p, default="runs/play")


def run(args: argparse.Namespace) -> int:
    from collapse_probe.pipelines.play import PlayConfig, run_play

    if args.show < 0:
        raise ConfigError(f"--show must be an integer >= 0 (conversations to print), got {args.show}")
    config = PlayConfig(**model_values(args, PLAY_FIELDS), benchmark=args.benchmark, max_turns=args.max_turns)
    judge = [args.judge] if args.judge else []
    arena, participants = prepare_run(
        args, config, "play", {"policy": [args.policy], "sim": [args.sim], "judge": judge}
    )
    results = run_play(
        config,
        arena,
        participants,
        args.out,
        progress=not args.no_progress,
        fresh=args.fresh,
        keep_failed=args.keep_failed,
    )
    records = results.conversations
    for rec in records[: args.show]:
        print(f"\n--- task {rec.task_id} rollout {rec.rollout} ({rec.status}, reward {rec.reward})")
        for m in rec.messages:
            who = {"policy": "POLICY", "simulator": "SIMULATOR"}.get(m.role, m.role.upper())
            print(f"{who:>9}: {m.content}")
    print()
    first = next((r.infra_error for r in records if r.infra_error), None)
    from collapse_probe.report.terminal import play_text

    print(play_text(results, first_error=first))
    if results.summary.mean_reward is None:
        return 1
    print(f"conversations: {args.out}/conversations.jsonl  report: {args.out}/report.html")
    return 0
