"""``collapse-probe lab``: run the tabular collapse lab for one method, compare all methods over
many seeds, or sweep one simulator parameter."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from collapse_probe.cli._common import AutoOut
from collapse_probe.cli._flags import add_model_options, model_values
from collapse_probe.errors import ConfigError

DEFAULT_SEEDS = 20
"""Seeds of ``--compare`` and ``--sweep`` unless ``--seeds`` says otherwise."""


CONFIG = "collapse_probe.trainers.lab:LabConfig"
"""The config model this subcommand's flags are generated from."""


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


LAB_FIELDS = ("method", "steps", "seed", "cotrain_reward", "sim_temperature", "vs_error", "delta")
"""The fields of :class:`~collapse_probe.trainers.lab.LabConfig` that are flags of ``lab``."""
LAB_HELPS = {
    "method": "training method: single, vs, ensemble, persona, cotrain, population or selfplay",
    "sim_temperature": "aligned simulator phi = softmax(log P_ref / T); 1 is the base model, below 1 collapses",
    "vs_error": "Verbalized Sampling returns (1 - e) P_ref + e phi, in [0, 1]",
    "delta": "family noise: how far each base model is from real users, >= 0",
}
"""Where the command line says a field in its own terms (the flags' letters, not the paper's)."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``lab`` subcommand."""
    p = subparsers.add_parser(
        "lab",
        help="exact tabular arena: simulator collapse and its fixes against theory",
        description="Train a softmax-table policy against tabular user simulators (families of base models, "
        "their aligned simulators and the fixes) and log exact training and held-out reward (held-out "
        "families and real users), policy entropy, collapse error and the Theorem 3.2 bounds.",
    )
    add_model_options(p, CONFIG, LAB_FIELDS, helps=LAB_HELPS)
    p.add_argument(
        "--out",
        default=AutoOut("runs/lab"),
        help="run directory for the results and the HTML report (default: a new runs/lab-<UTC time>-<pid>)",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        default=False,
        help="run every method over --seeds seeds; writes compare.json and compare.html",
    )
    p.add_argument(
        "--sweep",
        default=None,
        metavar="PARAM=V1,V2,...",
        help="compare every method at each value of one parameter, named like its flag (sim-temperature, "
        "vs-error or delta); writes sweep.json and sweep.html",
    )
    p.add_argument(
        "--seeds",
        type=int,
        default=None,
        help=f"seeds of --compare / --sweep: --seed, --seed+1, ... (default {DEFAULT_SEEDS})",
    )
    return p


def _config_from_args(args: argparse.Namespace, method: str) -> Any:
    from collapse_probe.trainers.lab import LabConfig

    return LabConfig(**{**model_values(args, LAB_FIELDS), "method": method})


def _validate(args: argparse.Namespace) -> None:
    from collapse_probe.trainers.methods import get_method

    if not args.out:
        raise ConfigError("--out: a run directory is required (or set $COLLAPSE_PROBE_OUT)")
    get_method(args.method, "--method", lab=True)
    from collapse_probe._constraints import check_field
    from collapse_probe.trainers.lab import LabConfig

    for flag in ("--cotrain-reward", "--steps", "--sim-temperature", "--vs-error", "--delta"):
        check_field(LabConfig, flag[2:].replace("-", "_"), getattr(args, flag[2:].replace("-", "_")), flag)
    if args.compare and args.sweep:
        raise ConfigError("--sweep: runs its own comparison at each value; drop --compare")
    if args.seeds is not None:
        if not (args.compare or args.sweep):
            raise ConfigError("--seeds: only with --compare or --sweep (a single run uses --seed)")
        if args.seeds < 1:
            raise ConfigError(f"--seeds must be an integer >= 1, got {args.seeds}")
    if args.seed < 0:  # numpy seeds each world from --seed (and the next ones with --seeds)
        raise ConfigError(f"--seed must be an integer >= 0 (the lab's worlds are seeded by numpy), got {args.seed}")


def run(args: argparse.Namespace) -> int:
    """Run the lab as the parsed arguments say; returns the exit status."""
    _validate(args)
    from collapse_probe.trainers.lab import parse_sweep

    sweep = parse_sweep(args.sweep) if args.sweep else None
    from collapse_probe.report.terminal import lab_compare_text, lab_sweep_text, lab_text
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
        print(lab_sweep_text(payload))
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
        print(lab_compare_text(payload))
        print(f"wrote {out / 'compare.json'} and {out / 'compare.html'}")
        return 0
    result = run_lab(config)
    data = result.to_json()
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "config.json", {"kind": "lab", **data["config"]})
    write_json_atomic(out / "results.json", data)
    from collapse_probe.report.lab_plots import write_run_report

    write_run_report(data, out / "report.html")
    print(lab_text(data))
    print(f"wrote {out / 'results.json'} and {out / 'report.html'}")
    return 0
