"""``collapse-probe crossplay``: the policy x simulator reward matrix in one batched run."""

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
    add_sampling,
    add_seed,
    add_trackers,
    arena_from_args,
    arena_spec_from_args,
    check_specs,
    env,
    load_models_with_options,
    participants_from_specs,
    positive,
    split_specs,
)

if TYPE_CHECKING:
    from collapse_probe.results import CrossplayResults


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "crossplay",
        help="run every policy against every simulator and measure transfer",
        description="Run the policy x simulator matrix in one batched engine run (requests for the same model "
        "are batched across cells), then write results.json (rewards, transfer ratios, policy strategy entropy) "
        "and report.html to --out. A killed run resumes from --out.",
    )
    p.add_argument(
        "--policies",
        default=env("policies", None),
        required=env("policies", None) is None,
        help="comma-separated policy specs, e.g. smollm2,scripted:policy.json",
    )
    p.add_argument(
        "--sims",
        default=env("sims", None),
        required=env("sims", None) is None,
        help="comma-separated simulator specs, e.g. smollm2,vs:smollm2,gemma3-270m",
    )
    p.add_argument(
        "--train-sim",
        default=env("train-sim", None),
        help="the simulator the policies were trained against (one of --sims); the others are held out",
    )
    p.add_argument("--tasks", type=int, default=env("tasks", 4), help="number of tasks per cell (default 4)")
    p.add_argument(
        "--rollouts", type=int, default=env("rollouts", 2), help="conversations per task and cell (default 2)"
    )
    p.add_argument(
        "--partition",
        "--partitioner",
        dest="partitioner",
        default=env("partitioner", "exact"),
        help="partitioner of the policy's messages for the strategy entropy (default exact; "
        "--partitioner is the same option)",
    )
    p.add_argument(
        "--entropy-turns",
        choices=("first", "all"),
        default=env("entropy-turns", "first"),
        help="policy turns in the strategy entropy: the opening move or all turns (default first)",
    )
    add_benchmark(p)
    add_sampling(p)
    add_seed(p)
    add_cache(p)
    add_ray(p)
    add_out(p)
    add_trackers(p)


def run(args: argparse.Namespace) -> int:
    from collapse_probe._crossplay import CrossplayConfig, run_crossplay

    positive("tasks", args.tasks)
    positive("rollouts", args.rollouts)
    policies, sims = split_specs(args.policies, "--policies"), split_specs(args.sims, "--sims")
    check_specs([*policies, *sims] + ([args.judge] if args.judge else []))
    # the benchmark's own options (and the judge) are recorded with the run, as they were given
    given = {**arena_spec_from_args(args).options, "judge": args.judge}
    extra = {k: v for k, v in given.items() if v and k != "max_turns"}
    config = CrossplayConfig(
        policies=policies,
        simulators=sims,
        train_simulator=args.train_sim,
        benchmark=args.benchmark,
        tasks=args.tasks,
        rollouts=args.rollouts,
        max_turns=args.max_turns,
        seed=args.seed,
        temperature=args.temperature,
        partitioner=args.partitioner,
        entropy_turns=args.entropy_turns,
        extra=extra,
    )
    config.validate()
    from collapse_probe.rollout._rundir import precheck_run_dir

    # the run directory is checked before any model loads: a mismatched --out is refused in seconds
    precheck_run_dir(args.out, config.to_dict(), kind="crossplay", fresh=getattr(args, "fresh", False))
    load_models_with_options(args, {"policy": policies, "sim": sims, "judge": [args.judge] if args.judge else []})
    arena = arena_from_args(args, [*policies, *sims])
    participants = participants_from_specs([*config.policies, *config.simulators], args)
    results = run_crossplay(
        config,
        arena=arena,
        participants=participants,
        out=args.out,
        progress=not args.no_progress,
        max_live=getattr(args, "max_live", None),
        cache=not getattr(args, "no_cache", False),  # recorded in config.json (the participants use it)
        fresh=getattr(args, "fresh", False),
        keep_failed=getattr(args, "keep_failed", False),
    )
    print(format_matrix(results))
    print(f"\nresults: {args.out}/results.json   report: {args.out}/report.html")
    if not any(c.mean_reward is not None for c in results.cells):
        from collapse_probe._observe import no_result_reason

        failures = sum(c.infra_failures for c in results.cells)
        first = next((str(e) for c in results.cells for e in c.infra_errors), None)
        print(f"NO RESULT: no cell has a scored conversation {no_result_reason(failures, first)}", file=sys.stderr)
        return 1
    return 0


def format_matrix(results: CrossplayResults | Mapping[str, Any]) -> str:
    """The reward matrix, transfer ratios and strategy entropies as a terminal table.

    Long specs are shown by short labels (the report's), with a legend of the full specs under the
    matrix, so a row of eight simulators fits a terminal.

    Args:
        results: the run's typed results, or its ``results.json`` object.
    """
    from collapse_probe.metrics.notes import entropy_note
    from collapse_probe.report._layout import display_width, pad
    from collapse_probe.report.crossplay_plots import cell_text, matrix_labels, transfer_text
    from collapse_probe.results import CrossplayResults

    r = CrossplayResults.typed(results)
    sims = r.simulators
    cells = {(c.policy, c.simulator): c for c in r.cells}
    plabels, slabels = matrix_labels(r.to_json())
    slabels = [lab.replace(" (train)", "*") for lab in slabels]
    rr = r.reward_range
    inside = f", inside [{rr[0]:g}, {rr[1]:g}]" if rr else ""
    table = []
    for p in r.policies:
        row = []
        for s in sims:
            c = cells[(p, s)]
            m, ci = c.mean_reward, c.ci95
            val = cell_text(m, ci)
            row.append(f"{val} ({c.n},{c.infra_failures})")
        table.append(row)
    width = max(12, *(display_width(s) + 2 for s in slabels), *(display_width(v) + 2 for line in table for v in line))
    pw = max(8, *(display_width(p) + 2 for p in plabels))
    head = pad("policy", pw) + "".join(pad(s, width, right=True) for s in slabels)
    lines = [
        f"mean reward [95% CI over tasks{inside}] ({r.benchmark}; * = training simulator; (n, infra failures))",
        head,
    ]
    for plabel, row in zip(plabels, table, strict=True):
        lines.append(pad(plabel, pw) + "".join(pad(v, width, right=True) for v in row))
    legend = [(lab, name) for lab, name in zip([*plabels, *slabels], [*r.policies, *sims], strict=True)
              if lab.removesuffix("*") != name]  # fmt: skip
    if legend:
        lw = max(display_width(lab) for lab, _ in legend)
        lines += ["labels:"] + [f"  {pad(lab, lw)}  {name}" for lab, name in legend]
    label = dict(zip(r.policies, plabels, strict=True))
    for t in r.transfer:
        lines.append(f"transfer {label.get(t.policy, t.policy)}: {transfer_text(t)}")
    for d in r.policy_diversity:
        h = d.strategy_entropy
        lines.append(
            f"strategy entropy {label.get(d.policy, d.policy)}: "
            + ("n/a" if h is None else entropy_note(h, d.n_classes, d.n_messages))
        )
    return "\n".join(lines)
