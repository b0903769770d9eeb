"""``collapse-probe compare``: how much of a score is the user simulator, across published runs of the same tasks."""

from __future__ import annotations

import argparse
from typing import Any

from collapse_probe.cli._common import add_out
from collapse_probe.cli._flags import add_model_options, config_fields, model_values

CONFIG = "collapse_probe.pipelines.compare:CompareConfig"
"""The config model this subcommand's flags are generated from."""


def _repeatable(base: type[argparse.Action]) -> type[argparse.Action]:
    """``base`` whose values add up over repeated flags on the command line (``--simulator-of A=x
    --simulator-of B=y``); the first one replaces what a config file or variable gave."""

    class Repeatable(base):  # type: ignore[valid-type,misc]
        def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
            seen = f"_{self.dest}_from_command_line"
            prior = getattr(namespace, self.dest, None) if getattr(namespace, seen, False) else None
            setattr(namespace, self.dest, [*(prior or []), *(values or [])])
            setattr(namespace, seen, True)

    return Repeatable


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="the user simulator's effect on agents' success across published runs of the same tasks",
        description="Compare results files (tau2-bench results, tau-bench trajectories, inspect logs, JSONL "
        "conversations, ...) or cross-play run directories of the same tasks run with different user simulators. "
        "For each agent and pair of simulators: the difference in success rate paired by task with a 95 % "
        "interval, beside the range two reruns of one configuration would differ by; per agent and simulator the "
        "noise floor (flip rate, pass^k); with two or more agents, whether their ranking changes with the "
        "simulator (Kendall's tau with an interval, and every pair whose order flips). Tasks are paired by their "
        "own text where the files carry it (ids change between forks), else by id; what could not be paired is "
        "counted by reason. No model is called.",
    )
    p.add_argument("inputs", nargs="+", metavar="FILE_OR_RUN_DIR",
                   help="results files or run directories (two or more runs of the same tasks)")  # fmt: skip
    add_model_options(p, CONFIG)
    for action in p._actions:  # --agent-of / --simulator-of name one file each: repeated, they add up
        if action.dest in ("agent_of", "simulator_of"):
            action.__class__ = _repeatable(type(action))
    add_out(p, default="runs/compare", resume_flags=False)
    p.add_argument(
        "--fresh", action="store_true", default=False,
        help="start over in --out: the previous comparison's files move to --out/.previous/<time>/ (nothing is deleted)",
    )  # fmt: skip


def _tasks(n: int) -> str:
    return f"{n} task" if n == 1 else f"{n} tasks"


def run(args: argparse.Namespace) -> int:
    from collapse_probe.pipelines.compare import CompareConfig, run_compare
    from collapse_probe.report.compare_plots import effect_line

    config = CompareConfig(**model_values(args, config_fields(CONFIG)))
    results = run_compare(args.inputs, config, args.out, fresh=args.fresh)
    p = results.pairing
    left = ", ".join(f"{n} {k}" for k, n in p.left_out.items())
    print(f"paired {p.paired_records} of {p.records} conversations into {_tasks(p.tasks)} by task {p.task_key} "
          f"({p.why}){'; left out: ' + left if left else ''}")  # fmt: skip
    for e in results.simulator_effects:
        line = effect_line(e.to_json())
        if e.left_out:
            line += f" ({', '.join(f'{_tasks(n)} {k}' for k, n in e.left_out.items())} left out)"
        print(line)
    for n in results.noise_floor:
        fr = (
            "n/a (one trial per task)"
            if n.flip_rate is None
            else f"{n.flip_rate:.2f} ({n.flipping_tasks}/{_tasks(n.tasks_with_repeats)})"
        )
        print(f"  noise floor {n.agent} under {n.simulator}: flip rate {fr}")  # fmt: skip
    for c in results.rank_correlation:
        ci = "" if c.ci95 is None else f" [{c.ci95[0]:+.2f}, {c.ci95[1]:+.2f}]"
        tau = "undefined (ties)" if c.tau is None else f"{c.tau:+.2f}{ci}"
        print(f"  agents' ranking, {c.simulators[0]} vs {c.simulators[1]}: Kendall's tau {tau} over {len(c.agents)} "
              f"agents, {c.n_tasks} shared {'task' if c.n_tasks == 1 else 'tasks'}")  # fmt: skip
    for f in results.rank_flips:
        print(
            f"  rank flip: {f.agents[0]} and {f.agents[1]} change order between {f.simulators[0]} and {f.simulators[1]}"
        )
    for note in results.notes:
        print(f"note: {note}")
    print(f"results: {args.out}/results.json  report: {args.out}/report.html")
    return 0
