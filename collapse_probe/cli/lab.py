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


def _validate(args: argparse.Namespace) -> None:
    """Refuse what the config does not check: the method's name for the lab, the run options."""
    from collapse_probe.trainers.methods import get_method

    if not args.out:
        raise ConfigError("--out: a run directory is required (or set $COLLAPSE_PROBE_OUT)")
    get_method(args.method, "--method", lab=True)
    from collapse_probe._constraints import check_field
    from collapse_probe.trainers.lab import LabConfig

    for name in LAB_FIELDS:  # the config names its fields (the API's keywords); here they are flags
        check_field(LabConfig, name, getattr(args, name), "--" + name.replace("_", "-"))
    if args.compare and args.sweep:
        raise ConfigError("--sweep: runs its own comparison at each value; drop --compare")
    if args.seeds is not None:
        if not (args.compare or args.sweep):
            raise ConfigError("--seeds: only with --compare or --sweep (a single run uses --seed)")
        if args.seeds < 1:
            raise ConfigError(f"--seeds must be an integer >= 1, got {args.seeds}")


def run(args: argparse.Namespace) -> int:
    """Run the lab as the parsed arguments say; returns the exit status."""
    _validate(args)
    from collapse_probe.report import lab_plots
    from collapse_probe.report.terminal import lab_text
    from collapse_probe.rollout import write_json_atomic
    from collapse_probe.rollout._rundir import announce_taken, check_out_path
    from collapse_probe.trainers import lab

    config = lab.LabConfig(**model_values(args, LAB_FIELDS))
    sweep = lab.parse_sweep(args.sweep) if args.sweep else None
    out = Path(args.out)
    check_out_path(out, ("lab", "lab-sweep"))  # a file, or another kind of run (a cross-play's results), is refused
    announce_taken(out)
    seeds = list(range(args.seed, args.seed + (args.seeds if args.seeds is not None else DEFAULT_SEEDS)))
    shared = {k: v for k, v in config.__dict__.items() if k not in ("method", "seed") and v is not None}
    results: Any  # the run, the comparison or the sweep, and the report writer of its kind
    write: Any
    if sweep is not None:
        param, values = sweep
        results = lab.run_sweep(config, param, values, seeds)
        record = {"kind": "lab-sweep", "sweep": True, "param": param, "values": values, "seeds": seeds, **shared}
        name, write = "sweep", lab_plots.write_sweep_report
    elif args.compare:
        rows = lab.run_compare_seeds(config, seeds)
        results = lab.compare_results(config, seeds, rows)
        record = {"kind": "lab", "compare": True, "methods": list(rows), "seeds": seeds, **shared}
        name, write = "compare", lab_plots.write_compare_report
    else:
        from collapse_probe.trainers._api import lab as lab_run

        results = lab_run(config)
        record = {"kind": "lab", **results.to_json()["config"]}
        name, write = "results", lab_plots.write_run_report
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "config.json", record)
    write_json_atomic(out / f"{name}.json", results.to_json())
    html = out / ("report.html" if name == "results" else f"{name}.html")
    write(results, html)
    print(lab_text(results))
    print(f"wrote {out / f'{name}.json'} and {html}")
    return 0
