"""Options shared by several subcommands, declared once. Every option can also be set by an
environment variable ``COLLAPSE_PROBE_<OPTION>`` (e.g. ``COLLAPSE_PROBE_SEED=3``)."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import time
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any

from collapse_probe.cli._env import BadEnv
from collapse_probe.cli._flags import add_benchmark_flags, add_model_options, builds_flags
from collapse_probe.errors import ConfigError

if TYPE_CHECKING:
    from collapse_probe.benchmarks import Arena
    from collapse_probe.rollout.runspec import ArenaSpec
    from collapse_probe.simulators import Participant


def check_env_defaults(args: argparse.Namespace) -> None:
    """Raise the error of the first invalid ``$COLLAPSE_PROBE_*`` default the parsed command uses."""
    for value in vars(args).values():
        if isinstance(value, BadEnv):
            raise value.error()


def check_finite(args: argparse.Namespace) -> None:
    """Every float option must be finite (``nan`` and ``inf`` parse as floats but mean nothing here)."""
    for name, value in vars(args).items():
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"--{name.replace('_', '-')}: expected a finite number, got {value}")


class AutoOut:
    """The default ``--out``: a new directory ``runs/<kind>-<UTC time>-<pid>`` per run, so two runs
    never share a directory by accident."""

    def __init__(self, base: str) -> None:
        self.base = base

    def resolve(self) -> str:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        path = f"{self.base}-{stamp}-{os.getpid()}"
        i = 1
        while os.path.exists(path + (f"-{i}" if i > 1 else "")):
            i += 1
        return path + (f"-{i}" if i > 1 else "")

    def __repr__(self) -> str:
        return f"{self.base}-<time>-<pid>"

    __str__ = __repr__


def add_out(p: argparse.ArgumentParser, default: str | None = None, resume_flags: bool = True) -> None:
    p.add_argument(
        "--out",
        default=AutoOut(default) if default is not None else None,
        required=default is None,
        help="run directory (created; an existing run with the same config and models resumes"
        + (f"; default: a new {default}-<UTC time>-<pid>)" if default is not None else ")"),
    )
    if resume_flags:
        p.add_argument(
            "--fresh",
            action="store_true",
            default=False,
            help="start over in --out: the previous run's files move to --out/.previous/<time>/ (nothing is deleted)",
        )
        p.add_argument(
            "--keep-failed",
            action="store_true",
            default=False,
            help="on resume, keep units that ended in an infrastructure failure (default: run them again)",
        )


def resolve_out(args: argparse.Namespace) -> None:
    """Give a run without ``--out`` its own new directory (see :class:`AutoOut`), named on stderr once
    the run has checked and taken it; refuse an empty ``--out`` (``--out ''`` or
    ``COLLAPSE_PROBE_OUT=''``), which would put the run's files into the current directory."""
    out = getattr(args, "out", None)
    if isinstance(out, AutoOut):
        args.out = out.resolve()
        from collapse_probe.rollout._rundir import announce_when_created

        announce_when_created(args.out)
    elif isinstance(out, str) and not out.strip():
        raise ConfigError(
            f"--out: expected a run directory, got {out!r}; an empty path would write the run into the current directory"
        )


def add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-cache",
        action="store_true",
        default=False,
        help="bypass the response cache ($COLLAPSE_PROBE_CACHE: a directory, which then holds responses.sqlite, "
        "or the SQLite file itself; default ~/.cache/collapse-probe/responses.sqlite)",
    )
    add_budget(p)  # every command that calls models takes the cache option, and the spend options with it


def add_budget(p: argparse.ArgumentParser) -> None:
    """``--cost-limit``, ``--token-limit``, ``--price-table``, ``--batch`` / ``--no-batch`` (applied by
    the CLI's main before the run)."""
    g = p.add_argument_group("hosted-model spend (results.json 'usage') and batch APIs")
    g.add_argument(
        "--cost-limit",
        type=float,
        default=None,
        metavar="USD",
        help="stop the run cleanly once its model calls cost this much (resume with a higher limit)",
    )
    g.add_argument(
        "--token-limit",
        type=int,
        default=None,
        metavar="N",
        help="stop the run cleanly once its model calls used N input+output tokens",
    )
    g.add_argument(
        "--price-table",
        default=None,
        metavar="FILE",
        help="TOML price table overriding the shipped one (USD per million tokens; see collapse_probe/data/prices.toml)",
    )
    batch = g.add_mutually_exclusive_group()
    batch.add_argument(
        "--batch",
        dest="batch",
        action="store_const",
        const="on",
        default="auto",
        help="send hosted-model calls through the provider's batch API (OpenAI, Anthropic: half price, answers "
        "within 24 h; a killed run resumes the pending batch). Default: automatic for audit sampling of at least "
        "$COLLAPSE_PROBE_BATCH_THRESHOLD (500) samples",
    )
    batch.add_argument("--no-batch", dest="batch", action="store_const", const="off", help="never use the batch APIs")


def print_usage(args: argparse.Namespace) -> None:
    """Print the run's spend (``usage.json`` of ``--out``) after a command that calls models."""
    if not hasattr(args, "cost_limit") or not getattr(args, "out", None):
        return
    import collapse_probe.core._observe as _observe
    from collapse_probe.models._usage import run_usage_text

    read_from = getattr(args, "from_file", None)  # audit --from: the replies come from a file, not a cache
    text = run_usage_text(args.out, failures=_observe.tally()["infra_failures"], read_from=read_from)
    if text is not None:
        print(text)


def apply_budget(args: argparse.Namespace) -> None:
    """Hand the spend options of a parsed command line to the usage ledger."""
    if not hasattr(args, "cost_limit"):
        return
    from collapse_probe.models._usage import LEDGER

    LEDGER.configure(cost_limit=args.cost_limit, token_limit=args.token_limit, price_table=args.price_table)
    from collapse_probe.models._batch import configure_batch

    configure_batch(
        args.batch,
        auto=args.command == "audit",  # independent samples at fixed states; conversations wait turn by turn
        state_dir=getattr(args, "out", None),
        progress=not getattr(args, "no_progress", False),
    )


def add_trackers(p: argparse.ArgumentParser) -> None:
    """``--log-to``, ``--log-project``, ``--tensorboard-dir``: the finished run's results.json figures
    logged to experiment trackers (applied by the CLI's main after the run)."""
    g = p.add_argument_group("experiment trackers (results.json's figures, logged after the run)")
    g.add_argument(
        "--log-to",
        default=None,
        metavar="TRACKERS",
        help="log the run's figures to wandb, mlflow and/or tensorboard (comma-separated; the trackers extra). "
        "W&B reads WANDB_MODE/WANDB_API_KEY, MLflow $MLFLOW_TRACKING_URI",
    )
    g.add_argument(
        "--log-project",
        default="collapse-probe",
        help="W&B project / MLflow experiment (default collapse-probe)",
    )
    g.add_argument(
        "--tensorboard-dir",
        default=None,
        help="TensorBoard log directory (default: OUT/tensorboard)",
    )


def check_trackers(args: argparse.Namespace) -> None:
    """Refuse an unknown tracker or one whose package is missing before the run starts."""
    if getattr(args, "log_to", None):
        from collapse_probe.integrations.interop._trackers import check_trackers as check

        check(str(args.log_to))


def log_to_trackers(args: argparse.Namespace) -> None:
    """Log the finished run in ``--out`` to the trackers of ``--log-to`` (nothing without it)."""
    value = getattr(args, "log_to", None)
    if not value:
        return
    from collapse_probe.errors import CollapseProbeError
    from collapse_probe.integrations.interop import log_run

    try:
        where = log_run(args.out, value, project=args.log_project, tensorboard_dir=args.tensorboard_dir)
    except CollapseProbeError:
        raise
    except Exception as exc:  # a tracker's own failure (network, login): one line; the run itself is saved
        detail = str(exc).splitlines()[0][:300] if str(exc) else ""
        raise ConfigError(
            f"--log-to {value}: logging failed ({type(exc).__name__}: {detail}); the run finished and its results "
            f"are in {args.out}"
        ) from None
    for tracker, dest in where.items():
        print(f"logged to {tracker}: {dest}")


def benchmark_help() -> str:
    """The help of ``--benchmark``: the registered names (no plugin is imported for it)."""
    from collapse_probe.benchmarks._registry import BENCHMARKS, DEFAULT_BENCHMARK

    return (
        f"{' | '.join(BENCHMARKS)}, or a benchmark an installed package registers (default {DEFAULT_BENCHMARK}; "
        "--benchmark NAME --help lists its own options)"
    )


def add_benchmark(p: argparse.ArgumentParser, config: str, only: Collection[str] | None = None) -> None:
    """``--benchmark`` (the field of ``config``, a ``"module:Class"`` model) and a flag for every option
    of the registered benchmarks' ``Options`` (of those in ``only`` when given; ``--judge`` among them);
    a plugin benchmark's own options are added by :func:`add_benchmark_options` once the command line
    names it."""
    from collapse_probe.benchmarks._registry import BENCHMARKS, get_benchmark

    if not builds_flags(p):
        return  # another subcommand runs: its benchmarks need not be imported for this parser
    add_model_options(p, config, ["benchmark"], helps={"benchmark": benchmark_help()}, mark_default=("benchmark",))
    benches = [get_benchmark(name) for name, target in BENCHMARKS.items() if isinstance(target, str)]
    add_benchmark_flags(p, benches, only=only)


def add_sampling(p: argparse.ArgumentParser) -> None:
    """``--vs-k`` and ``--no-progress``: how the participants sample and whether bars are drawn (the
    temperature, like every field of the run's config, is a flag of the config model)."""
    p.add_argument("--vs-k", type=int, default=5, help="candidates per Verbalized-Sampling turn (default 5)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def arena_spec_from_args(args: argparse.Namespace) -> ArenaSpec:
    """The :class:`~collapse_probe.rollout.runspec.ArenaSpec` the command's benchmark options describe: every
    option of the chosen benchmark's ``Options`` that the command line (or its defaults) gives."""
    from collapse_probe.benchmarks._registry import get_benchmark
    from collapse_probe.rollout.runspec import ArenaSpec

    fields = get_benchmark(args.benchmark).options.model_fields
    _refuse_other_benchmarks_options(args, fields)
    options = {f: getattr(args, f) for f in fields if getattr(args, f, None) is not None}
    return ArenaSpec(args.benchmark, options)


_RUN_WIDE_OPTIONS = frozenset({"judge", "compact"})
"""Benchmark options that are settings of the whole run (a judge model, compact prompts for small models):
given with a benchmark that has no such option, it simply does not use them."""


def _refuse_other_benchmarks_options(args: argparse.Namespace, fields: Collection[str]) -> None:
    """Refuse a flag of another benchmark's own option (``--scenarios FILE`` without ``--benchmark
    scenarios``, ``--tau2-data`` with P4G): the chosen benchmark would ignore it and the run would measure
    something else than asked. Only a flag on the command line (``given_on_command_line``, recorded by
    :func:`~collapse_probe.cli._config.parse_args`) is refused: a ``--config`` file's value or one from
    ``$COLLAPSE_PROBE_<OPTION>`` may serve other runs (a lab-wide file naming every benchmark's data folder)."""
    from collapse_probe.benchmarks._registry import BENCHMARKS, get_benchmark

    typed: Collection[str] = getattr(args, "given_on_command_line", frozenset())
    owners: dict[str, list[str]] = {}
    for name, target in BENCHMARKS.items():
        if isinstance(target, str):
            for f in get_benchmark(name).options.model_fields:
                owners.setdefault(f, []).append(name)
    for f, names in owners.items():
        value = getattr(args, f, None)
        if f in fields or f in _RUN_WIDE_OPTIONS or f not in typed or value is None or value is False:
            continue
        flag = "--" + f.replace("_", "-")
        shown = flag if value is True else f"{flag} {value}"  # a switch is named without its value
        raise ConfigError(
            f"{shown}: an option of --benchmark {' or '.join(names)}, not of {args.benchmark}, which "
            f"would ignore it; add --benchmark {names[0]}, or drop {flag}"
        )


def arena_from_args(args: argparse.Namespace, specs: list[str] | None = None) -> Arena:
    """Build the arena named by ``--benchmark`` with the shared options (one builder for every command:
    :meth:`~collapse_probe.rollout.runspec.ArenaSpec.build`).

    Resolves ``args.max_turns`` in place (P4G default 3). ``specs`` are the participant specs of the
    run: when any is a small local model, tau2 prompts are compact and tools use the text protocol.
    """
    spec = arena_spec_from_args(args).resolve(specs or [])
    args.max_turns = spec.options.get("max_turns")
    return spec.build(specs or [], cache=not args.no_cache)


def load_models_with_options(
    args: argparse.Namespace, roles: dict[str, list[str]], handled: tuple[str, ...] = ()
) -> None:
    """Construct the models of each role with the backend options ``-M`` gives that role
    (:func:`~collapse_probe.simulators.load_role_models`); ``handled`` names roles whose options the
    command applies itself."""
    from collapse_probe.cli._config import parse_model_args
    from collapse_probe.simulators import load_role_models

    parsed = {r: o for r, o in parse_model_args(getattr(args, "model_arg", None)).items() if r not in handled}
    load_role_models({r: s for r, s in roles.items() if r not in handled}, parsed)


def prepare_run(
    args: argparse.Namespace,
    config: Any,
    kind: str,
    roles: dict[str, list[str]],
    participants: bool = True,
    resumable: Collection[str] = (),
) -> tuple[Arena, dict[str, Participant]]:
    """What a run command does before it runs, in this order: check the model specs of ``roles``,
    validate ``config``, check the run directory (a mismatched ``--out`` is refused in seconds, before
    any model loads), load each role's models with its ``-M`` options; returns the arena and the
    participants of the policies and simulators (label -> participant; none for ``participants=False``);
    ``resumable``: the configuration fields the run may change on resume, as the pipeline's ``RunDir.create``
    allows them (a stored run is otherwise refused in seconds when any field differs)."""
    from collapse_probe.rollout._rundir import precheck_run_dir
    from collapse_probe.simulators import check_specs, make_participants

    check_specs([spec for specs in roles.values() for spec in specs])
    arena_spec_from_args(args)  # a flag of another benchmark is refused before anything is read or loaded
    config.validate()
    precheck_run_dir(args.out, config.to_dict(), kind=kind, fresh=args.fresh, resumable=resumable)
    load_models_with_options(args, roles)
    specs = roles["policy"] + roles["sim"]
    arena = arena_from_args(args, specs)
    return arena, make_participants(specs, vs_k=args.vs_k, cache=not args.no_cache) if participants else {}


def add_ray(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ray-address",
        default=None,
        help="serve every model by replica actors on a Ray cluster: HOST:PORT or ray://HOST:10001, auto (the "
        "cluster `ray start` runs on this machine) or local (an in-process cluster that ends with the run); "
        "results are the same as without Ray (default: $RAY_ADDRESS when --replicas is given)",
    )
    p.add_argument(
        "--replicas",
        default=None,
        help="replica actors per model: N, or N,MODEL=M,... for per-model counts (default 1; needs --ray-address)",
    )
    p.add_argument(
        "--ray-num-cpus",
        type=int,
        default=None,
        help="CPUs of a --ray-address local cluster (default: this machine's)",
    )


@contextlib.contextmanager
def ray_from_args(args: argparse.Namespace) -> Iterator[Any]:
    """Serve the run's models by Ray replicas when ``--ray-address``/``--replicas`` ask for it."""
    address, replicas = getattr(args, "ray_address", None), getattr(args, "replicas", None)
    if address is None and replicas is None:
        yield None
        return
    from collapse_probe.models.ray_replicas import ray_replicas

    with ray_replicas(address, replicas or 1, num_cpus=getattr(args, "ray_num_cpus", None)) as session:
        yield session
