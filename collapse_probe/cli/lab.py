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
        help="run directory for the results and the HTML report (default: a new runs/lab-<UTC time>-<pid>); "
        "an existing lab run with the same settings is run again in place, one with other settings or a "
        "folder of other files is refused",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        default=False,
        help="start over in --out: the previous run's files move to --out/.previous/<time>/ (nothing is deleted)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
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
    from collapse_probe.core._constraints import check_field
    from collapse_probe.trainers.lab import LabConfig

    for name in LAB_FIELDS:  # the config names its fields (the API's keywords); here they are flags
        check_field(LabConfig, name, getattr(args, name), "--" + name.replace("_", "-"))
    if args.compare and args.sweep:
        raise ConfigError("--sweep: runs its own comparison at each value; drop --compare")
    if args.seeds is not None:
        if not (args.compare or args.sweep):
            raise ConfigError("--seeds: only with --compare or --sweep (a single run uses --seed)")
        from collapse_probe.core._constraints import Integer, check_value
        from collapse_probe.core.limits import MAX_LAB_SEEDS

        check_value(args.seeds, "--seeds", [Integer(1, most=MAX_LAB_SEEDS)])


def run(args: argparse.Namespace) -> int:
    """Run the lab as the parsed arguments say; returns the exit status.

    ``--out`` is a run directory like every command's (:class:`~collapse_probe.rollout.RunDir`): a
    folder of other files, a run of another kind, or a lab run whose ``config.json`` records other
    settings is refused before anything runs, naming what differs; the same settings run again in
    place (the lab is exact and seeded, so its files are rewritten with the same numbers)."""
    _validate(args)
    from collapse_probe.report import lab_plots
    from collapse_probe.report.terminal import lab_text
    from collapse_probe.rollout._rundir import RunDir, precheck_run_dir
    from collapse_probe.trainers import lab

    config = lab.LabConfig(**model_values(args, LAB_FIELDS))
    sweep = lab.parse_sweep(args.sweep) if args.sweep else None
    out = Path(args.out)
    seeds = list(range(args.seed, args.seed + (args.seeds if args.seeds is not None else DEFAULT_SEEDS)))
    shared = {k: v for k, v in config.__dict__.items() if k not in ("method", "seed") and v is not None}
    rows = lab.compare_runs(config.cotrain_reward)
    record: dict[str, object]  # what config.json records
    write: Any  # the report writer of the results' kind
    if sweep is not None:
        kind, name, write = "lab-sweep", "sweep", lab_plots.write_sweep_report
        record = {"sweep": True, "param": sweep[0], "values": sweep[1], "seeds": seeds, **shared}
        units = len(rows) * len(sweep[1])
    elif args.compare:
        kind, name, write = "lab", "compare", lab_plots.write_compare_report
        record = {"compare": True, "methods": [r.label for r in rows], "seeds": seeds, **shared}
        units = len(rows)
    else:
        kind, name, write = "lab", "results", lab_plots.write_run_report
        record = dict(config.__dict__)
        units = 1
    precheck_run_dir(out, record, kind=kind, fresh=args.fresh)
    run_dir = RunDir(out)
    try:
        run_dir.create(record, kind=kind, fresh=args.fresh)
        results = _compute(config, sweep, seeds, rows, args, units)
        path = run_dir.write_results(results, f"{name}.json")
        html = out / ("report.html" if name == "results" else f"{name}.html")
        write(results, html)
    finally:
        run_dir.release()
    print(lab_text(results))
    print(f"wrote {path} and {html}")
    return 0


def _compute(config: Any, sweep: Any, seeds: list[int], rows: list[Any], args: argparse.Namespace, units: int) -> Any:
    """The run, the comparison or the sweep, with a progress bar over its methods (and values)."""
    from tqdm.auto import tqdm

    from collapse_probe.trainers import lab

    with tqdm(total=units, desc="lab", unit="method", disable=args.no_progress or units < 2, leave=False) as bar:
        if sweep is not None:
            return lab.run_sweep(config, sweep[0], sweep[1], seeds, rows, bar.update)
        if args.compare:
            return lab.compare_results(config, seeds, lab.run_compare_seeds(config, seeds, rows, bar.update))
        from collapse_probe.trainers._api import lab as lab_run

        return lab_run(config)
