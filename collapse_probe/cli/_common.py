"""Options shared by several subcommands, declared once. Every option can also be set by an
environment variable ``COLLAPSE_PROBE_<OPTION>`` (e.g. ``COLLAPSE_PROBE_SEED=3``)."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import time
from collections.abc import Collection, Iterator
from typing import Any

from collapse_probe.cli._benchmark_flags import _add_option_flags as _add_option_flags  # where it always was
from collapse_probe.cli._benchmark_flags import add_benchmark_options as add_benchmark_options
from collapse_probe.cli._env import _FALSE as _FALSE  # where the subcommands have always found them
from collapse_probe.cli._env import _TRUE as _TRUE
from collapse_probe.cli._env import BadEnv, env
from collapse_probe.errors import ConfigError


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


def add_seed(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=env("seed", 0), help="random seed (default 0)")


class AutoOut:
    """The default ``--out``: a new directory ``runs/<kind>-<UTC time>-<pid>`` per run, so two runs
    never share a directory by accident. ``--out runs/<kind>`` (the former fixed default) still works."""

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
    auto = default is not None and env("out", None) is None
    p.add_argument(
        "--out",
        default=env("out", AutoOut(default) if auto and default is not None else default),
        required=default is None and env("out", None) is None,
        help="run directory (created; an existing run with the same config and models resumes"
        + (f"; default: a new {default}-<UTC time>-<pid>)" if auto else ")"),
    )
    if resume_flags:
        p.add_argument(
            "--fresh",
            action="store_true",
            default=env("fresh", False),
            help="start over in --out: the previous run's files move to --out/.previous/<time>/ (nothing is deleted)",
        )
        p.add_argument(
            "--keep-failed",
            action="store_true",
            default=env("keep-failed", False),
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
        default=env("no-cache", False),
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
        default=env("cost-limit", None),
        metavar="USD",
        help="stop the run cleanly once its model calls cost this much (resume with a higher limit)",
    )
    g.add_argument(
        "--token-limit",
        type=int,
        default=env("token-limit", None),
        metavar="N",
        help="stop the run cleanly once its model calls used N input+output tokens",
    )
    g.add_argument(
        "--price-table",
        default=env("price-table", None),
        metavar="FILE",
        help="TOML price table overriding the shipped one (USD per million tokens; see collapse_probe/data/prices.toml)",
    )
    batch = g.add_mutually_exclusive_group()
    batch.add_argument(
        "--batch",
        dest="batch",
        action="store_const",
        const="on",
        default=env("batch", "auto"),
        help="send hosted-model calls through the provider's batch API (OpenAI, Anthropic: half price, answers "
        "within 24 h; a killed run resumes the pending batch). Default: automatic for audit sampling of at least "
        "$COLLAPSE_PROBE_BATCH_THRESHOLD (500) samples",
    )
    batch.add_argument("--no-batch", dest="batch", action="store_const", const="off", help="never use the batch APIs")


def print_usage(args: argparse.Namespace) -> None:
    """Print the run's spend (``usage.json`` of ``--out``) after a command that calls models."""
    if not hasattr(args, "cost_limit") or not getattr(args, "out", None):
        return
    from pathlib import Path

    import collapse_probe._observe as _observe
    from collapse_probe.models._usage import USAGE_FILE, format_usage, read_usage_file

    p = Path(args.out) / USAGE_FILE
    if not os.path.lexists(p):
        return
    try:
        usage = {k: u.to_dict() for k, u in read_usage_file(p).items()}
    except ConfigError as exc:
        print(f"usage: not shown: {exc}")
        return
    print(format_usage(usage, failures=_observe.tally()["infra_failures"]))


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
        default=env("log-to", None),
        metavar="TRACKERS",
        help="log the run's figures to wandb, mlflow and/or tensorboard (comma-separated; the trackers extra). "
        "W&B reads WANDB_MODE/WANDB_API_KEY, MLflow $MLFLOW_TRACKING_URI",
    )
    g.add_argument(
        "--log-project",
        default=env("log-project", "collapse-probe"),
        help="W&B project / MLflow experiment (default collapse-probe)",
    )
    g.add_argument(
        "--tensorboard-dir",
        default=env("tensorboard-dir", None),
        help="TensorBoard log directory (default: OUT/tensorboard)",
    )


def check_trackers(args: argparse.Namespace) -> None:
    """Refuse an unknown tracker or one whose package is missing before the run starts."""
    value = getattr(args, "log_to", None)
    if not value:
        return
    from collapse_probe.errors import require
    from collapse_probe.interop._trackers import TRACKERS

    names = [t.strip() for t in str(value).split(",")]
    bad = [t for t in names if t not in TRACKERS]
    if bad:
        raise ConfigError(f"--log-to: unknown tracker {', '.join(map(repr, bad))}; expected {', '.join(TRACKERS)}")
    for t in names:
        require(t, "trackers", f"--log-to {t}")


def log_to_trackers(args: argparse.Namespace) -> None:
    """Log the finished run in ``--out`` to the trackers of ``--log-to`` (nothing without it)."""
    value = getattr(args, "log_to", None)
    if not value:
        return
    from collapse_probe.errors import CollapseProbeError
    from collapse_probe.interop import log_run

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


ONLY_COMMAND: str | None = None
"""Set by :func:`collapse_probe.cli.main` to the subcommand the command line runs: only its parser gets
the benchmark option flags (which import the benchmarks' ``Options``); ``None``: every parser does."""


def benchmark_help() -> str:
    """The help of ``--benchmark``: the registered names (no plugin is imported for it)."""
    from collapse_probe.benchmarks._registry import BENCHMARKS, DEFAULT_BENCHMARK

    return (
        f"{' | '.join(BENCHMARKS)}, or a benchmark an installed package registers (default {DEFAULT_BENCHMARK}; "
        "--benchmark NAME --help lists its own options)"
    )


class DefaultName(str):
    """A flag's default, told apart from the same value given by the user (a flag, an environment
    variable or a config-file key): ``audit --from`` takes a benchmark's hooks only from a named one."""


def add_benchmark(p: argparse.ArgumentParser, only: Collection[str] | None = None) -> None:
    """``--benchmark``, ``--judge`` and a flag for every option of the registered benchmarks' ``Options``
    (of those in ``only`` when given); a plugin benchmark's own options are added by
    :func:`add_benchmark_options` once the command line names it."""
    from collapse_probe.benchmarks._registry import BENCHMARKS, DEFAULT_BENCHMARK, get_benchmark

    p.add_argument("--benchmark", default=env("benchmark", DefaultName(DEFAULT_BENCHMARK), str), help=benchmark_help())
    if only is None or "judge" in only:
        p.add_argument(
            "--judge",
            default=env("judge", None),
            help="judge model spec of the benchmark's natural-language assertions (without one the reward is "
            "DB-only)"
            + (
                " and --partition judge (default there: the simulator's model)"
                if p.prog.endswith(" audit")
                else "; default: none"
            ),
        )
    if ONLY_COMMAND is not None and p.prog.rsplit(" ", 1)[-1] != ONLY_COMMAND:
        return  # another subcommand runs: its benchmarks need not be imported for this parser
    benches = [get_benchmark(name) for name, target in BENCHMARKS.items() if isinstance(target, str)]
    _add_option_flags(p, benches, only=only)


def add_sampling(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--temperature", type=float, default=env("temperature", 1.0), help="sampling temperature (default 1.0)"
    )
    p.add_argument(
        "--vs-k", type=int, default=env("vs-k", 5), help="candidates per Verbalized-Sampling turn (default 5)"
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument(
        "--max-live",
        type=int,
        default=env("max-live", None),
        help="at most this many conversations in flight (default: all at once)",
    )


def positive(name: str, value: int) -> int:
    if value < 1:
        raise ConfigError(f"--{name} must be >= 1, got {value}")
    return value


def arena_spec_from_args(args: argparse.Namespace) -> Any:
    """The :class:`~collapse_probe.runspec.ArenaSpec` the command's benchmark options describe: every
    option of the chosen benchmark's ``Options`` that the command line (or its defaults) gives."""
    from collapse_probe.benchmarks._registry import get_benchmark
    from collapse_probe.runspec import ArenaSpec

    fields = get_benchmark(args.benchmark).options.model_fields
    options = {f: getattr(args, f) for f in fields if getattr(args, f, None) is not None}
    return ArenaSpec(args.benchmark, options)


def arena_from_args(args: argparse.Namespace, specs: list[str] | None = None) -> Any:
    """Build the arena named by ``--benchmark`` with the shared options (one builder for every command:
    :meth:`~collapse_probe.runspec.ArenaSpec.build`).

    Resolves ``args.max_turns`` in place (P4G default 3). ``specs`` are the participant specs of the
    run: when any is a small local model, tau2 prompts are compact and tools use the text protocol.
    """
    spec = arena_spec_from_args(args).resolve(specs or [])
    args.max_turns = spec.options.get("max_turns")
    return spec.build(specs or [], cache=not args.no_cache)


def load_models_with_options(
    args: argparse.Namespace, roles: dict[str, list[str]], handled: tuple[str, ...] = ()
) -> None:
    """Construct the models of each role with the backend options ``-M`` gives that role.

    Models are built once per process (see :func:`~collapse_probe.models.get_model`), so participants
    made afterwards from the same specs use these instances. Without ``-M`` nothing is loaded here.

    ``handled`` names roles whose options the command applies itself (they are left alone here).

    Raises:
        ConfigError: ``-M`` names a role this command has no model for, or gives one model two
            different values of one option through two roles (options of different roles that a
            model plays are merged: it is one backend instance).
    """
    from collapse_probe.cli._config import parse_model_args
    from collapse_probe.models import get_model, resolve_spec
    from collapse_probe.models._registry import use_options
    from collapse_probe.simulators import parse_participant_spec

    parsed = {r: o for r, o in parse_model_args(getattr(args, "model_arg", None)).items() if r not in handled}
    if not parsed:  # this command's models take their defaults, whatever an earlier command in the process gave
        for role, specs in roles.items():
            if role not in handled:
                for spec in specs:
                    use_options(resolve_spec(parse_participant_spec(spec)[1]), {})
        return
    for role in parsed:
        if role != "*" and not roles.get(role):
            raise ConfigError(
                f"-M/--model-arg: this run has no {role!r} model (roles here: {', '.join(r for r in roles if roles[r])})"
            )
    # one model is one backend instance, whatever roles it plays: the options its roles give are
    # merged, and only two different values for the same option conflict
    wanted: dict[str, dict[str, Any]] = {}
    given_by: dict[tuple[str, str], str] = {}
    for role, specs in roles.items():
        options = {**parsed.get("*", {}), **parsed.get(role, {})}
        for spec in specs:
            model = resolve_spec(parse_participant_spec(spec)[1])
            merged = wanted.setdefault(model, {})
            for key, value in options.items():
                if key in merged and merged[key] != value:
                    raise ConfigError(
                        f"-M/--model-arg: model {model!r} plays the {given_by[(model, key)]} and {role} roles with "
                        f"different values of {key} ({merged[key]!r} vs {value!r}); one model has one value: give "
                        f"{key}={value} without a role, or use two models"
                    )
                merged[key] = value
                given_by.setdefault((model, key), role)
    for model, options in wanted.items():
        use_options(model, options)
        get_model(model, **options)


def participants_from_specs(specs: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Label -> participant for each spec (models load once and are shared)."""
    from collapse_probe.models import resolve_spec
    from collapse_probe.simulators import make_participant, parse_participant_spec

    if getattr(args, "vs_k", 5) < 2:
        raise ConfigError(f"--vs-k must be >= 2, got {args.vs_k}")
    for s in specs:  # validate every spec (and every scripted file) before loading any model
        check_spec_cheaply(resolve_spec(parse_participant_spec(s)[1]))
    return {s: make_participant(s, vs_k=args.vs_k, cache=not args.no_cache) for s in dict.fromkeys(specs)}


def check_specs(specs: list[str]) -> None:
    """Validate participant specs (prefix, scripted files, hf directories) before loading any model."""
    from collapse_probe.models import resolve_spec
    from collapse_probe.simulators import parse_participant_spec

    for s in specs:
        check_spec_cheaply(resolve_spec(parse_participant_spec(s)[1]))


def check_spec_cheaply(spec: str) -> None:
    """The checks of a model spec that cost nothing: a scripted file parses, an ``hf/`` path is a
    model directory. Run before any weights load, so a typo fails in a second, not after a minute."""
    from pathlib import Path

    if spec.startswith("scripted:"):
        from collapse_probe.models.scripted import load_scripted

        load_scripted(spec[len("scripted:") :])
    elif spec.startswith("hf/"):
        path = Path(spec[len("hf/") :])
        if not (path / "config.json").is_file():
            raise ConfigError(
                f"model spec {spec!r}: expected a local transformers model directory containing config.json, "
                f"but {str(path)!r} {'has no config.json' if path.is_dir() else 'does not exist'}"
            )


def split_specs(value: str, flag: str) -> list[str]:
    specs = [s.strip() for s in value.split(",") if s.strip()]
    if not specs:
        raise ConfigError(f"{flag}: expected a comma-separated list of model specs, got {value!r}")
    return specs


def add_ray(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ray-address",
        default=env("ray-address", None),
        help="serve every model by replica actors on a Ray cluster: HOST:PORT or ray://HOST:10001, auto (the "
        "cluster `ray start` runs on this machine) or local (an in-process cluster that ends with the run); "
        "results are the same as without Ray (default: $RAY_ADDRESS when --replicas is given)",
    )
    p.add_argument(
        "--replicas",
        default=env("replicas", None),
        help="replica actors per model: N, or N,MODEL=M,... for per-model counts (default 1; needs --ray-address)",
    )
    p.add_argument(
        "--ray-num-cpus",
        type=int,
        default=env("ray-num-cpus", None),
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
