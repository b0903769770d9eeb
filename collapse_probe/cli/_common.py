"""Options shared by several subcommands, declared once. Every option can also be set by an
environment variable ``COLLAPSE_PROBE_<OPTION>`` (e.g. ``COLLAPSE_PROBE_SEED=3``)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from collapse_probe.errors import ConfigError


def env(name: str, default: Any) -> Any:
    """Default for option ``--name`` from ``$COLLAPSE_PROBE_NAME`` (dashes become underscores)."""
    raw = os.environ.get("COLLAPSE_PROBE_" + name.upper().replace("-", "_"))
    if raw is None:
        return default
    if isinstance(default, bool):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(
                f"$COLLAPSE_PROBE_{name.upper().replace('-', '_')}: expected an integer, got {raw!r}"
            ) from None
    if isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(
                f"$COLLAPSE_PROBE_{name.upper().replace('-', '_')}: expected a number, got {raw!r}"
            ) from None
    return raw


def add_seed(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=env("seed", 0), help="random seed (default 0)")


def add_out(p: argparse.ArgumentParser, default: str | None = None) -> None:
    p.add_argument(
        "--out",
        default=env("out", default),
        required=default is None and env("out", None) is None,
        help="run directory (created; an existing run with the same config resumes)",
    )


def add_cache(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-cache",
        action="store_true",
        default=env("no-cache", False),
        help="bypass the response cache ($COLLAPSE_PROBE_CACHE, default ~/.cache/collapse-probe)",
    )


def add_benchmark(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--benchmark",
        default=env("benchmark", "p4g"),
        help="p4g | tau2-retail | tau2-airline | tau2-demo (default p4g)",
    )
    p.add_argument(
        "--max-turns",
        type=int,
        default=env("max-turns", None),
        help="conversation rounds (P4G: persuader+persuadee exchanges, default 3; tau2: optional cap on user "
        "turns, reaching it scores 0, default none)",
    )
    p.add_argument("--personas", default=env("personas", None), help="P4G persona file (JSONL; default: shipped)")
    p.add_argument(
        "--tau2-data",
        default=env("tau2-data", None),
        help="directory with the official tau2 data (or $COLLAPSE_PROBE_TAU2_DATA)",
    )
    p.add_argument(
        "--judge",
        default=env("judge", None),
        help="judge model spec: tau2 natural-language assertions (without one the reward is DB-only) and "
        "audit --partition judge (default there: the simulator's model)",
    )


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


LOCAL_PREFIXES = ("local/", "hf/", "scripted:")


def arena_from_args(args: argparse.Namespace, specs: list[str] | None = None) -> Any:
    """Build the arena named by ``--benchmark`` with the shared options.

    Resolves ``args.max_turns`` in place (P4G default 3). ``specs`` are the participant specs of the
    run: when any is a small local model, tau2 prompts are compact and tools use the text protocol.
    """
    from collapse_probe.benchmarks import make_arena
    from collapse_probe.models import resolve_spec
    from collapse_probe.simulators import parse_participant_spec

    if args.max_turns is not None:
        positive("max-turns", args.max_turns)
    if args.benchmark == "p4g":
        from collapse_probe.benchmarks.p4g import load_personas

        if args.max_turns is None:
            args.max_turns = 3
        personas = load_personas(args.personas) if args.personas else None
        return make_arena("p4g", personas=personas, max_turns=args.max_turns)
    local = any(resolve_spec(parse_participant_spec(s)[1]).startswith(LOCAL_PREFIXES) for s in specs or [])
    options: dict[str, Any] = {"data_dir": args.tau2_data, "max_turns": args.max_turns}
    if local:
        options.update(compact=True, tool_protocol="text")
    if getattr(args, "judge", None):
        from collapse_probe.simulators import make_participant

        options["judge"] = make_participant(args.judge, cache=not args.no_cache).model
    return make_arena(args.benchmark, **options)


def participants_from_specs(specs: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Label -> participant for each spec (models load once and are shared)."""
    from collapse_probe.models import resolve_spec
    from collapse_probe.simulators import make_participant, parse_participant_spec

    for s in specs:  # validate every spec before loading any model
        resolve_spec(parse_participant_spec(s)[1])
    return {s: make_participant(s, vs_k=args.vs_k, cache=not args.no_cache) for s in dict.fromkeys(specs)}


def split_specs(value: str, flag: str) -> list[str]:
    specs = [s.strip() for s in value.split(",") if s.strip()]
    if not specs:
        raise ConfigError(f"{flag}: expected a comma-separated list of model specs, got {value!r}")
    return specs
