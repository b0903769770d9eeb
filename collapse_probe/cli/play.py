"""``collapse-probe play``: watch a policy and a simulator talk, and score them."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from collapse_probe.cli._common import (
    add_benchmark,
    add_cache,
    add_out,
    add_ray,
    add_sampling,
    add_seed,
    arena_from_args,
    check_specs,
    env,
    load_models_with_options,
    participants_from_specs,
    positive,
)
from collapse_probe.errors import ConfigError

if TYPE_CHECKING:
    from collapse_probe.results import PlayResults


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "play",
        help="run policy-vs-simulator conversations and report the mean reward",
        description="Run conversations of a policy against a simulator on a benchmark. "
        "Defaults run offline on the embedded model.",
    )
    p.add_argument("--policy", default=env("policy", "smollm2"), help="policy model spec (default smollm2)")
    p.add_argument(
        "--sim", default=env("sim", "smollm2"), help="simulator spec; vs:SPEC for Verbalized Sampling (default smollm2)"
    )
    p.add_argument("--tasks", type=int, default=env("tasks", 4), help="number of tasks (default 4)")
    p.add_argument("--rollouts", type=int, default=env("rollouts", 2), help="conversations per task (default 2)")
    p.add_argument("--show", type=int, default=1, help="print this many conversations in full (default 1)")
    add_benchmark(p)
    add_sampling(p)
    add_seed(p)
    add_cache(p)
    add_ray(p)
    add_out(p, default="runs/play")


def run(args: argparse.Namespace) -> int:
    from collapse_probe.play import PlayConfig, run_play

    positive("tasks", args.tasks)
    positive("rollouts", args.rollouts)
    if args.max_live is not None:
        positive("max-live", args.max_live)
    for flag, spec in (("--policy", args.policy), ("--sim", args.sim)):
        if not spec or not spec.strip():
            raise ConfigError(f"{flag}: expected a model spec, got an empty string")
    check_specs([args.policy, args.sim] + ([args.judge] if args.judge else []))
    config = PlayConfig(
        policy=args.policy,
        sim=args.sim,
        benchmark=args.benchmark,
        tasks=args.tasks,
        rollouts=args.rollouts,
        max_turns=args.max_turns,
        seed=args.seed,
        temperature=args.temperature,
        max_live=args.max_live,
    )
    from collapse_probe.rollout._rundir import precheck_run_dir

    config.validate()
    # the run directory is checked before any model loads: a mismatched --out is refused in seconds
    precheck_run_dir(getattr(args, "out", None), config.to_dict(), kind="play", fresh=getattr(args, "fresh", False))
    load_models_with_options(
        args, {"policy": [args.policy], "sim": [args.sim], "judge": [args.judge] if args.judge else []}
    )
    arena = arena_from_args(args, [args.policy, args.sim])
    participants = participants_from_specs([args.policy, args.sim], args)
    records, results = run_play(
        config,
        arena,
        participants,
        args.out,
        progress=not args.no_progress,
        fresh=args.fresh,
        keep_failed=args.keep_failed,
    )
    for rec in records[: max(args.show, 0)]:
        print(f"\n--- task {rec['task_id']} rollout {rec['rollout']} ({rec['status']}, reward {rec['reward']})")
        for m in rec["messages"]:
            role = str(m.get("role"))
            who = {"policy": "POLICY", "simulator": "SIMULATOR"}.get(role, role.upper())
            print(f"{who:>9}: {m.get('content')}")
    print()
    first = next((str(r["infra_error"]) for r in records if r.get("infra_error")), None)
    print(summary_text(results, first_error=first))
    if results.summary.mean_reward is None:
        return 1
    print(f"conversations: {args.out}/conversations.jsonl  report: {args.out}/report.html")
    return 0


def summary_text(results: PlayResults | Mapping[str, Any], first_error: str | None = None) -> str:
    """The result line of a play run: the mean reward with its interval over tasks, or why there is none.

    Args:
        results: the run's typed results, or its ``results.json`` object.
        first_error: the first infrastructure error of the conversations, named when nothing was scored.
    """
    from collapse_probe.results import PlayResults

    r = PlayResults.typed(results)
    s = r.summary
    if s.mean_reward is None:
        from collapse_probe._observe import no_result_reason

        return f"NO RESULT: no scored conversations {no_result_reason(s.infra_failures, first_error)}"
    ci = s.ci95
    ci_s = f"95% CI over tasks {ci[0]:.3f}-{ci[1]:.3f}, " if ci else "no CI from one task, "
    return (
        f"{r.policy} vs {r.sim} on {r.benchmark}: mean reward {s.mean_reward:.3f} "
        f"({ci_s}n={s.n}, infra failures {s.infra_failures})"
    )
