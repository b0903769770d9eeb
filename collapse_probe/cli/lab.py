"""``collapse-probe lab``: run the tabular collapse lab for one method, compare all methods over
many seeds, or sweep one simulator parameter."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collapse_probe.cli._common import AutoOut, add_seed, env, positive
from collapse_probe.errors import ConfigError

if TYPE_CHECKING:
    from collapse_probe.results import LabCompareResults, LabRunResults, LabSweepResults
    from collapse_probe.results._lab import Stat

DEFAULT_SEEDS = 20
"""Seeds of ``--compare`` and ``--sweep`` unless ``--seeds`` says otherwise."""


def __getattr__(name: str) -> Any:
    # The method and reward names are defined once, in the trainers; imported on use so that
    # building the command line stays light.
    if name == "METHOD_CHOICES":
        from collapse_probe.trainers.lab import METHODS

        return METHODS
    if name == "COTRAIN_REWARDS":
        from collapse_probe.trainers.advantages import SIMULATOR_REWARD_MODES

        return SIMULATOR_REWARD_MODES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``lab`` subcommand."""
    p = subparsers.add_parser(
        "lab",
        help="exact tabular arena: simulator collapse and its fixes against theory",
        description="Train a softmax-table policy against tabular user simulators (families of base models, "
        "their aligned simulators and the fixes) and log exact training and held-out reward (held-out "
        "families and real users), policy entropy, collapse error and the Theorem 3.2 bounds.",
    )
    p.add_argument(
        "--method",
        default=env("method", "single"),
        help="training method: single, vs, ensemble, persona, cotrain, population or selfplay (default single)",
    )
    p.add_argument("--steps", type=int, default=env("steps", 300), help="policy updates (default 300)")
    add_seed(p)
    p.add_argument(
        "--out",
        default=env("out", AutoOut("runs/lab")),
        help="run directory for the results and the HTML report (default: a new runs/lab-<UTC time>-<pid>)",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        default=env("compare", False),
        help="run every method over --seeds seeds; writes compare.json and compare.html",
    )
    p.add_argument(
        "--sweep",
        default=env("sweep", None),
        metavar="PARAM=V1,V2,...",
        help="compare every method at each value of one parameter, named like its flag (sim-temperature, "
        "vs-error or delta); writes sweep.json and sweep.html",
    )
    p.add_argument(
        "--seeds",
        type=int,
        default=env("seeds", None),
        help=f"seeds of --compare / --sweep: --seed, --seed+1, ... (default {DEFAULT_SEEDS})",
    )
    p.add_argument(
        "--cotrain-reward",
        default=env("cotrain-reward", "adversarial"),
        help="simulator reward of cotrain/population: adversarial, cooperative or curriculum (default adversarial)",
    )
    p.add_argument(
        "--sim-temperature",
        type=float,
        default=env("sim-temperature", 0.3),
        help="aligned simulator phi = softmax(log P_ref / T); 1 is the base model, below 1 collapses (default 0.3)",
    )
    p.add_argument(
        "--vs-error",
        type=float,
        default=env("vs-error", 0.3),
        help="Verbalized Sampling returns (1 - e) P_ref + e phi, in [0, 1] (default 0.3)",
    )
    p.add_argument(
        "--delta",
        type=float,
        default=env("delta", 0.5),
        help="family noise: how far each base model is from real users, >= 0 (default 0.5)",
    )
    return p


def _config_from_args(args: argparse.Namespace, method: str) -> Any:
    from collapse_probe.trainers.lab import LabConfig

    return LabConfig(
        method=method,
        steps=args.steps,
        seed=args.seed,
        cotrain_reward=args.cotrain_reward,
        sim_temperature=args.sim_temperature,
        vs_error=args.vs_error,
        delta=args.delta,
    )


def _check_value(flag: str, value: float) -> None:
    """``value`` of a lab flag (or of one of its sweep values), checked by the field's declared constraints."""
    from collapse_probe._constraints import check_field
    from collapse_probe.trainers.lab import LabConfig

    check_field(LabConfig, flag[2:].replace("-", "_"), value, flag)


def parse_sweep(spec: str) -> tuple[str, list[float]]:
    """``"PARAM=v1,v2,..."`` -> ``(PARAM, [v1, v2, ...])``, each value checked like its own flag."""
    from collapse_probe.trainers.lab import SWEEP_PARAMS

    param, sep, raw = spec.partition("=")
    param = param.strip()
    if not sep or param not in SWEEP_PARAMS:
        raise ConfigError(
            f"--sweep: expected PARAM=V1,V2,... with PARAM one of {', '.join(SWEEP_PARAMS)}; got {spec!r}"
        )
    values = []
    for item in raw.split(","):
        try:
            values.append(float(item))
        except ValueError:
            raise ConfigError(f"--sweep: {param} values must be numbers; got {item.strip()!r} in {spec!r}") from None
    try:
        for v in values:
            _check_value(f"--{param}", v)
    except ConfigError as exc:
        raise ConfigError(f"--sweep: {exc}") from None
    if len(set(values)) != len(values):
        raise ConfigError(f"--sweep: {param} values repeat in {spec!r}")
    return param, values


def _validate(args: argparse.Namespace) -> None:
    from collapse_probe.trainers.advantages import SIMULATOR_REWARD_MODES as COTRAIN_REWARDS
    from collapse_probe.trainers.methods import get_method

    if not args.out:
        raise ConfigError("--out: a run directory is required (or set $COLLAPSE_PROBE_OUT)")
    get_method(args.method, "--method", lab=True)
    if args.cotrain_reward not in COTRAIN_REWARDS:
        raise ConfigError(
            f"--cotrain-reward: expected one of {', '.join(COTRAIN_REWARDS)}; got {args.cotrain_reward!r}"
        )
    positive("steps", args.steps)
    for flag in ("--sim-temperature", "--vs-error", "--delta"):
        _check_value(flag, getattr(args, flag[2:].replace("-", "_")))
    if args.compare and args.sweep:
        raise ConfigError("--sweep: runs its own comparison at each value; drop --compare")
    if args.seeds is not None:
        if not (args.compare or args.sweep):
            raise ConfigError("--seeds: only with --compare or --sweep (a single run uses --seed)")
        positive("seeds", args.seeds)
    if args.seed < 0:  # numpy seeds each world from --seed (and the next ones with --seeds)
        raise ConfigError(f"--seed must be an integer >= 0 (the lab's worlds are seeded by numpy), got {args.seed}")


def summary_text(results: LabRunResults | LabCompareResults | LabSweepResults | Mapping[str, Any]) -> str:
    """The terminal table of a lab output: one run's end-of-run numbers, a comparison's means over seeds,
    or a sweep's real-user reward at each value.

    Args:
        results: a typed lab output, or its ``results.json`` / ``compare.json`` / ``sweep.json`` object
            (told apart by its ``schema``).
    """
    from collapse_probe.results import LabCompareResults, LabRunResults, LabSweepResults, parse_results

    r = results if isinstance(results, LabRunResults | LabCompareResults | LabSweepResults) else None
    if r is None:
        r = parse_results(results)  # type: ignore[assignment]  # a lab schema, checked below
    if isinstance(r, LabRunResults):
        return run_text(r)
    if isinstance(r, LabCompareResults):
        return compare_text(r)
    if isinstance(r, LabSweepResults):
        return sweep_text(r)
    raise ConfigError(f"results: expected a lab output, got schema {type(r).__name__}")


def run_text(result: LabRunResults) -> str:
    """Terminal table of one run: rewards at start, peak and end, entropy ratio, collapse error, bounds."""
    header = (
        f"{'method':<11} {'train end':>9} {'held start':>10} {'held peak':>9} {'@step':>5} {'held end':>8} "
        f"{'families end':>12} {'entropy end/start':>17} {'collapse err':>12} {'bounds':>6}"
    )
    s = result.summary
    ok = "ok" if all(result.bound_checks.values()) else "FAIL"
    row = (
        f"{result.method:<11} {s['train_reward_end']:>9.3f} {s['heldout_reward_start']:>10.3f} "
        f"{s['heldout_reward_peak']:>9.3f} {int(s['heldout_reward_peak_step'] or 0):>5d} {s['heldout_reward_end']:>8.3f} "
        f"{s['heldout_sim_reward_end']:>12.3f} {s['entropy_ratio']:>17.3f} {s['collapse_error_end']:>12.3f} {ok:>6}"
    )
    return "\n".join([header, "-" * len(header), row])


def _stat(stat: Stat | None) -> str:
    from collapse_probe.report.lab_plots import fmt_stat

    return fmt_stat(stat.to_json() if stat is not None else None)


def compare_text(payload: LabCompareResults | Mapping[str, Any]) -> str:
    """Terminal table of a comparison: mean ± 95% half-width over seeds."""
    from collapse_probe.results import LabCompareResults

    r = LabCompareResults.typed(payload)
    header = (
        f"{'method':<26} {'train final':>15} {'real users final':>17} {'real users peak':>16} "
        f"{'families final':>15} {'users - single':>16} {'entropy end/start':>17} {'bounds':>6}"
    )
    lines = [
        f"{r.n_seeds} seeds, mean ± 95% half-width; 'users - single': paired difference in the same worlds",
        header,
        "-" * len(header),
    ]
    for m in r.methods:
        b = m.bounds
        ok = b["tv_exact_holds_all"] and b["grad_holds_all"] and b["tv_sampled_holds"] == b["tv_sampled_n_seeds"]
        lines.append(
            f"{m.label:<26} {_stat(m.train_final):>15} {_stat(m.heldout_final):>17} "
            f"{_stat(m.heldout_peak):>16} {_stat(m.heldout_sim_final):>15} "
            f"{_stat(m.heldout_final_vs_single):>16} "
            f"{_stat(m.entropy_ratio):>17} {'ok' if ok else 'FAIL':>6}"
        )
    return "\n".join(lines)


def sweep_text(payload: LabSweepResults | Mapping[str, Any]) -> str:
    """Terminal lines of a sweep: each method's real-user reward at each value of the parameter."""
    from collapse_probe.results import LabSweepResults

    r = LabSweepResults.typed(payload)
    lines = []
    for m in r.methods:
        cells = "  ".join(f"{p.value:g}: {_stat(p.heldout_final)}" for p in m.points)
        lines.append(f"{m.label:<26} real users  {cells}")
    return "\n".join(lines)


def write_report(result: Any, path: Path) -> None:
    """Self-contained HTML report of one run (plotly.js inlined)."""
    from collapse_probe.report.lab_plots import write_run_report

    write_run_report(result.to_json(), path)


def run(args: argparse.Namespace) -> int:
    """Run the lab as the parsed arguments say; returns the exit status."""
    _validate(args)
    sweep = parse_sweep(args.sweep) if args.sweep else None
    from collapse_probe.rollout import write_json_atomic
    from collapse_probe.trainers.lab import compare_payload, run_compare_seeds, run_lab, run_sweep

    out = Path(args.out)
    from collapse_probe.rollout._rundir import announce_taken, check_out_path

    check_out_path(out, ("lab", "lab-sweep"))  # a file, or another kind of run (a cross-play's results), is refused
    announce_taken(out)
    config = _config_from_args(args, args.method)
    n_seeds = args.seeds if args.seeds is not None else DEFAULT_SEEDS
    seeds = list(range(args.seed, args.seed + n_seeds))
    shared = {k: v for k, v in config.__dict__.items() if k not in ("method", "seed") and v is not None}
    if sweep is not None:
        from collapse_probe.report.lab_plots import write_sweep_report

        param, values = sweep
        payload = run_sweep(config, param, values, seeds)
        out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            out / "config.json",
            {"kind": "lab-sweep", "sweep": True, "param": param, "values": values, "seeds": seeds, **shared},
        )
        write_json_atomic(out / "sweep.json", payload)
        write_sweep_report(payload, out / "sweep.html")
        print(sweep_text(payload))
        print(f"wrote {out / 'sweep.json'} and {out / 'sweep.html'}")
        return 0
    if args.compare:
        from collapse_probe.report.lab_plots import write_compare_report

        results = run_compare_seeds(config, seeds)
        payload = compare_payload(config, seeds, results)
        out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            out / "config.json",
            {"kind": "lab", "compare": True, "methods": list(results), "seeds": seeds, **shared},
        )
        write_json_atomic(out / "compare.json", payload)
        write_compare_report(payload, out / "compare.html")
        print(compare_text(payload))
        print(f"wrote {out / 'compare.json'} and {out / 'compare.html'}")
        return 0
    result = run_lab(config)
    data = result.to_json()
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "config.json", {"kind": "lab", **data["config"]})
    write_json_atomic(out / "results.json", data)
    write_report(result, out / "report.html")
    print(summary_text(data))
    print(f"wrote {out / 'results.json'} and {out / 'report.html'}")
    return 0
