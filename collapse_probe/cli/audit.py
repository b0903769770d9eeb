"""``collapse-probe audit``: how collapsed is a simulator, where, with CIs, and does VS help."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from collapse_probe.benchmarks._registry import DIRECTORY_FORMAT, PUBLISHED_FORMATS
from collapse_probe.cli._common import (
    add_benchmark,
    add_cache,
    add_out,
    add_ray,
    add_seed,
    add_trackers,
    arena_from_args,
    check_specs,
    env,
    load_models_with_options,
)
from collapse_probe.errors import ConfigError

if TYPE_CHECKING:
    from collapse_probe.results import AuditResults


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "audit", help="measure a simulator's collapse error per state, with CIs (and VS vs direct)",
        description="Sample N responses from the simulator at each probe state, partition them into "
        "equivalence classes and estimate the collapse error ε = 1 − p(mode) with CIs, entropy and "
        "effective modes, by meaning and where the reward looks (what the benchmark's reward pays), with "
        "a verdict for each view. With no flags: the embedded smollm2 on P4G, offline on CPU.",
    )  # fmt: skip
    p.add_argument(
        "--sim",
        default=env("sim", _DefaultSim("smollm2")),
        help="simulator spec; vs:SPEC audits Verbalized Sampling (default smollm2). With --from: which simulator "
        "of the file to audit (default: the file's only one)",
    )
    p.add_argument("--policy", default=env("policy", None),
                   help="policy spec: audit the on-policy states its rollouts against the simulator visit "
                   "(default: P4G probe states with fixed human-style openings)")  # fmt: skip
    p.add_argument("--states", type=int, default=env("states", 2),
                   help="tasks (P4G personas) probed; each gives an opening and an elicitation state, or the "
                   "simulator turns of its rollouts (default 2)")  # fmt: skip
    p.add_argument(
        "--samples",
        type=int,
        default=env("samples", 20),
        help="N, responses per state (default 20; N < 20 is flagged low-confidence)",
    )
    p.add_argument("--partition", default=env("partition", None), metavar="NAME",
                   help="equivalence classes of replies: exact, embedding, judge, label or an installed "
                   "partitioner. Default: by meaning, i.e. judge (LLM judge of "
                   "bidirectional equivalence) when --judge SPEC is given, else embedding (sentence encoder, "
                   "constrained by the benchmark's decision key; needs the embed extra, else the benchmark's "
                   "fallback with a notice and no meaning verdict). exact: equal text; label: the benchmark's "
                   "decision label")  # fmt: skip
    p.add_argument("--compare-vs", action="store_true", default=env("compare-vs", False),
                   help="also audit the Verbalized-Sampling (or direct) mode on the same states and report the difference")  # fmt: skip
    p.add_argument(
        "--vs-k", type=int, default=env("vs-k", 5), help="candidates per Verbalized-Sampling turn (default 5)"
    )
    p.add_argument(
        "--human",
        default=env("human", None),
        help="directory with the official P4G CSVs: add human-grounded states and compare with the human "
        "persuadees (with annotated_dialog.csv there: people's own ε at the matched states too)",
    )
    p.add_argument(
        "--rollouts", type=int, default=env("rollouts", 1), help="on-policy conversations per task (default 1)"
    )
    p.add_argument(
        "--temperature",
        type=float,
        default=env("temperature", 1.0),
        help="simulator sampling temperature (default 1.0)",
    )
    p.add_argument("--epsilon-star", type=float, default=env("epsilon-star", 0.2),
                   help="ε*: each view (by meaning, where the reward looks) is COLLAPSED when the CI of its mean ε̂ "
                   "lies below it (default 0.2)")  # fmt: skip
    p.add_argument("--bound-b", type=float, default=env("bound-b", 1.0),
                   help="B, bound on the trajectory score-function norm, for the gradient-bias bound 2·B·R_max·ε̄_H (default 1)")  # fmt: skip
    p.add_argument(
        "--r-max", type=float, default=env("r-max", 1.0), help="R_max, bound on |reward| (default 1, the P4G range)"
    )
    p.add_argument("--variance-share", action="store_true", default=env("variance-share", False),
                   help="measure the simulator's share of reward variance by nested resampling (needs --policy)")  # fmt: skip
    p.add_argument(
        "--variance-agents",
        type=int,
        default=env("variance-agents", 3),
        help="agent seeds per task for --variance-share (default 3)",
    )
    p.add_argument(
        "--variance-sims",
        type=int,
        default=env("variance-sims", 4),
        help="simulator continuations per agent seed (default 4)",
    )
    p.add_argument(
        "--vendi", action="store_true", default=env("vendi", False), help="embed responses for the Vendi score"
    )
    p.add_argument("--no-exact", action="store_true", default=env("no-exact", False),
                   help="skip the exact closed-set distribution (score_choices)")  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    add_benchmark(p)
    add_seed(p)
    add_cache(p)
    add_ray(p)
    g = p.add_argument_group("audit of published trajectories (no model is called)")
    g.add_argument("--from", dest="from_file", default=env("from", None), metavar="FILE",
                   help="audit the simulator of trajectories already published: a tau2-bench results.json (or its "
                   "directory), an inspect eval log, or JSONL conversations. Replies are grouped by shared "
                   "conversation prefix (same task, same messages so far); prefixes answered 2+ times are the states")  # fmt: skip
    g.add_argument("--format", dest="from_format", choices=FROM_FORMATS, default=env("format", None),
                   help="format of --from (default: from the name: .eval inspect, .jsonl jsonl, a directory or "
                   "results.json tau2)")  # fmt: skip
    g.add_argument("--sim-role", choices=("user", "assistant"), default=env("sim-role", None),
                   help="inspect and generic JSONL chats: the role the simulator speaks as (default user)")  # fmt: skip
    add_out(p, default="runs/audit")
    add_trackers(p)


FROM_FORMATS = (*PUBLISHED_FORMATS, "inspect", "jsonl", "taubench")


class _DefaultSim(str):
    """The ``--sim`` default, told apart from a ``--sim`` the user gave (which names the simulator of a
    ``--from`` file to audit)."""


def _from_format(path: str, given: str | None) -> str:
    if given:
        return given
    from pathlib import Path

    p = Path(path)
    if p.suffix == ".eval":
        return "inspect"
    if p.suffix == ".jsonl":
        return "jsonl"
    if p.is_dir() or p.name == "results.json":
        return DIRECTORY_FORMAT
    raise ConfigError(f"--from {path}: cannot tell the format from the name; give --format {'|'.join(FROM_FORMATS)}")


def run_from(args: argparse.Namespace) -> int:
    """``audit --from FILE``: the audit of published trajectories."""
    from collapse_probe._audit import AuditConfig, run_audit_from

    fmt = _from_format(args.from_file, args.from_format)
    for flag, value in (("--policy", args.policy), ("--human", args.human), ("--compare-vs", args.compare_vs),
                        ("--variance-share", args.variance_share)):  # fmt: skip
        if value:
            raise ConfigError(f"{flag} does not apply to --from (a published file's replies are audited as they are)")
    config = AuditConfig(
        benchmark=args.benchmark, partition=args.partition, judge=args.judge, epsilon_star=args.epsilon_star,
        bound_b=args.bound_b, r_max=args.r_max, seed=args.seed, vendi=args.vendi,
    )  # fmt: skip
    simulator = None if isinstance(args.sim, _DefaultSim) else args.sim
    from collapse_probe.cli._common import DefaultName

    named = None if isinstance(args.benchmark, DefaultName) else str(args.benchmark)
    results = run_audit_from(args.from_file, fmt, config, args.out, simulator=simulator,
                             sim_role=args.sim_role or "user", benchmark=named,
                             cache=not args.no_cache, progress=not args.no_progress, fresh=args.fresh)  # fmt: skip
    src = results["source"]
    c = int(src["infra_failures"] or 0)
    print(f"read {src['conversations']} conversations from {src['path']} ({fmt}): {src['states']} shared-prefix "
          f"states; {c} conversation{'s' if c != 1 else ''} with an infrastructure failure excluded")  # fmt: skip
    if results.get("variance"):
        from collapse_probe.metrics.variance import variance_lines

        print("\n".join(variance_lines(results["variance"])))
    return _report(args, results)


def _report(args: argparse.Namespace, results: AuditResults) -> int:
    """The terminal table, the notices and the verdict line; exit 1 when no state was measured."""
    from collapse_probe._audit import summary_table

    print()
    print(summary_table(results))
    for notice in [*results.notices, *([results.states_note] if results.states_note else [])]:
        print(notice)
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
    from collapse_probe._audit import AuditConfig, run_audit

    check_specs([args.sim] + ([args.policy] if args.policy else []) + ([args.judge] if args.judge else []))
    roles = {
        "sim": [args.sim],
        "policy": [args.policy] if args.policy else [],
        "judge": [args.judge] if args.judge else [],
    }
    config = AuditConfig(
        sim=args.sim, benchmark=args.benchmark, policy=args.policy, states=args.states, samples=args.samples,
        partition=args.partition, judge=args.judge, compare_vs=args.compare_vs, vs_k=args.vs_k, human=args.human,
        rollouts=args.rollouts, max_turns=args.max_turns, temperature=args.temperature, seed=args.seed,
        epsilon_star=args.epsilon_star, bound_b=args.bound_b, r_max=args.r_max, variance_share=args.variance_share,
        variance_agents=args.variance_agents, variance_sims=args.variance_sims, exact=not args.no_exact,
        vendi=args.vendi, personas=args.personas,
    )  # fmt: skip
    from collapse_probe.rollout._rundir import precheck_run_dir

    config.validate()
    # the run directory is checked before any model loads: a mismatched --out is refused in seconds
    precheck_run_dir(args.out, config.to_dict(), kind="audit", fresh=args.fresh)
    load_models_with_options(args, roles)
    arena = arena_from_args(args, [args.sim] + ([args.policy] if args.policy else []))
    results = run_audit(config, args.out, arena=arena, cache=not args.no_cache, progress=not args.no_progress,
                        fresh=args.fresh, keep_failed=args.keep_failed)  # fmt: skip
    return _report(args, results)
