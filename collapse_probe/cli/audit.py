"""``collapse-probe audit``: how collapsed is a simulator, where, with CIs, and does VS help."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from collapse_probe.cli._common import (
    add_benchmark,
    add_cache,
    add_out,
    add_ray,
    add_trackers,
    prepare_run,
)
from collapse_probe.cli._flags import Default, add_model_options, builds_flags, config_fields, model_values
from collapse_probe.errors import ConfigError

if TYPE_CHECKING:
    from collapse_probe.results import AuditResults


CONFIG = "collapse_probe.pipelines.audit:AuditConfig"
"""The config model this subcommand's flags are generated from."""
NOT_FLAGS = ("benchmark", "max_turns", "personas", "arena_options")
"""Fields of :class:`~collapse_probe.pipelines.audit.AuditConfig` that come with ``--benchmark`` (its options,
``--max-turns`` and ``--personas`` among them); every other field is a flag of ``audit``."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit", help="measure a simulator's collapse error per state, with CIs (and VS vs direct)",
        description="Sample N responses from the simulator at each probe state, partition them into "
        "equivalence classes and estimate the collapse error ε = 1 − p(mode) with CIs, entropy and "
        "effective modes, by meaning and where the reward looks (what the benchmark's reward pays), with "
        "a verdict for each view. With no flags: the embedded smollm2 on P4G, offline on CPU.",
    )  # fmt: skip
    helps = {"sim": "simulator spec; vs:SPEC audits Verbalized Sampling (default {default}). With --from: which "
             "simulator of the file to audit (default: the file's only one)",
             "exact": "skip the exact closed-set scores (how often the whole reply is one of the benchmark's closed answers)",
             "stop_early": "draw all --samples replies per state (estimates at a fixed N); by default the audit stops "
             "at the first look (20, 40, ... replies per state) where every view is decisive. The verdict is the same "
             "sequential test either way"}  # fmt: skip
    add_model_options(p, CONFIG, exclude=NOT_FLAGS, helps=helps, mark_default=("sim",))
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    add_benchmark(p, CONFIG)
    add_cache(p)
    add_ray(p)
    add_out(p, default="runs/audit")
    add_trackers(p)
    if not builds_flags(p):
        return  # another subcommand runs: the readers of published files need not be imported
    from collapse_probe.pipelines.audit._published import FORMATS

    g = p.add_argument_group("audit of published trajectories (no model is called)")
    g.add_argument("--from", dest="from_file", default=None, metavar="FILE",
                   help="audit the simulator of trajectories already published: a tau2-bench results.json (or its "
                   "directory; voice runs too), an inspect eval log, τ-bench trajectories, a verifiers traces.jsonl "
                   "or results.jsonl, a NeMo-Gym rollouts.jsonl, or JSONL conversations. Replies are grouped by shared "
                   "conversation prefix (same task, same messages so far); prefixes answered 2+ times are the states")  # fmt: skip
    g.add_argument("--format", dest="from_format", choices=FORMATS, default=None,
                   help="format of --from (default: told from the file's content, else from the name: .eval "
                   "inspect, .jsonl jsonl, a directory or results.json tau2)")  # fmt: skip
    g.add_argument("--sim-role", choices=("user", "assistant"), default=None,
                   help="inspect and generic JSONL chats: the role the simulator speaks as (default user)")  # fmt: skip


def run_from(args: argparse.Namespace) -> int:
    """``audit --from FILE``: the audit of published trajectories."""
    from collapse_probe.pipelines.audit import AuditConfig, run_audit_from
    from collapse_probe.pipelines.audit._published import format_of

    fmt = format_of(args.from_file, args.from_format)
    for flag, value in (("--policy", args.policy), ("--human", args.human), ("--compare-vs", args.compare_vs),
                        ("--variance-share", args.variance_share)):  # fmt: skip
        if value:
            raise ConfigError(f"{flag} does not apply to --from (a published file's replies are audited as they are)")
    kept = ("partition", "epsilon_star", "bound_b", "r_max", "seed", "vendi")  # what a published file's audit reads
    config = AuditConfig(benchmark=args.benchmark, judge=args.judge, **model_values(args, kept))
    simulator = None if isinstance(args.sim, Default) else args.sim
    named = None if isinstance(args.benchmark, Default) else str(args.benchmark)
    results = run_audit_from(args.from_file, fmt, config, args.out, simulator=simulator,
                             sim_role=args.sim_role or "user", benchmark=named,
                             cache=not args.no_cache, progress=not args.no_progress, fresh=args.fresh)  # fmt: skip
    src = results["source"]
    c = int(src["infra_failures"] or 0)
    print(f"read {src['conversations']} conversations from {src['path']} ({fmt}): {src['states']} shared-prefix "
          f"states; {c} conversation{'s' if c != 1 else ''} with an infrastructure failure excluded")  # fmt: skip
    if results.variance is not None:
        from collapse_probe.metrics.variance import variance_lines

        print("\n".join(variance_lines(results.variance.to_json())))
    return _report(args, results)


def _report(args: argparse.Namespace, results: AuditResults) -> int:
    """The terminal table, the notices and the verdict line; exit 1 when no state was measured."""
    from collapse_probe.pipelines.audit import summary_table

    print()
    print(summary_table(results))
    for notice in [*results.notices, *([results.states_note] if results.states_note else [])]:
        print(notice)
    from collapse_probe.pipelines.audit._sequential import looks_line

    looks = looks_line(results.to_json()["summary"].get("sequential"))
    if looks:
        print(looks)
    print()
    print(results.verdict)
    print(f"results: {args.out}/results.json  report: {args.out}/report.html  samples: {args.out}/samples.jsonl")
    return 0 if results.summary.n_states else 1


def _check_from(args: argparse.Namespace) -> bool:
    """Whether this is an audit of a published file (``--from``); an empty ``--from`` and the options
    of ``--from`` without it are refused, never read as a live audit of the default simulator."""
    if args.from_file is not None:
        if not str(args.from_file).strip():
            raise ConfigError("--from: expected a published file or directory, got an empty path")
        return True
    for flag, value in (("--format", args.from_format), ("--sim-role", args.sim_role)):
        if value is not None:
            raise ConfigError(f"{flag} {value}: applies only to --from FILE (an audit of published trajectories)")
    return False


def run(args: argparse.Namespace) -> int:
    if _check_from(args):
        return run_from(args)
    from collapse_probe.pipelines.audit import AuditConfig, run_audit
    from collapse_probe.pipelines.audit._pipeline import RESUMABLE

    judge = [args.judge] if args.judge else []
    roles = {"sim": [args.sim], "policy": [args.policy] if args.policy else [], "judge": judge}
    values = model_values(args, config_fields(CONFIG, exclude=NOT_FLAGS))
    config = AuditConfig(**values, benchmark=args.benchmark, max_turns=args.max_turns, personas=args.personas)
    arena, _ = prepare_run(args, config, "audit", roles, participants=False, resumable=RESUMABLE)
    results = run_audit(config, args.out, arena=arena, cache=not args.no_cache, progress=not args.no_progress,
                        fresh=args.fresh, keep_failed=args.keep_failed)  # fmt: skip
    return _report(args, results)
