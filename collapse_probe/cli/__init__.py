"""The ``collapse-probe`` command line: a thin layer over the Python API.

One module per subcommand; each exposes ``add_parser(subparsers)`` and ``run(args) -> int``. The
modules import only argparse-level code at start-up; the work (and heavy imports) happen in ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from collapse_probe._version import __version__
from collapse_probe.cli._config import add_config_option, add_model_args, parse_args
from collapse_probe.cli._env import apply_env
from collapse_probe.errors import CollapseProbeError

COMMANDS = ("play", "audit", "crossplay", "gate", "compare", "train", "lab", "dashboard", "models", "export", "card")
CONFIG_COMMANDS = ("play", "audit", "crossplay", "gate", "compare", "train", "lab")
"""Subcommands that take ``--config FILE``."""
MODEL_COMMANDS = ("play", "audit", "crossplay", "train")
"""Subcommands that take ``-M / --model-arg`` backend options."""


class OneLineParser(argparse.ArgumentParser):
    """argparse with one error line: ``collapse-probe audit: error: argument --samples: invalid int value:
    'x' (collapse-probe audit --help lists the options)`` and exit status 2, not the usage block first
    (30 lines for ``train``). Subparsers are of the same class (argparse's default).

    Long flags are never abbreviated (``allow_abbrev=False``): ``--sample 5`` is refused, with
    ``--samples`` suggested, rather than silently taken as ``--samples``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        hint = "" if f"{self.prog} --help" in message else f" ({self.prog} --help lists the options)"
        self.exit(2, f"{self.prog}: error: {message}{hint}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="collapse-probe",
        description="Diagnose and fix simulator collapse in multi-agent RL for LLM agents.",
    )
    parser.add_argument("--version", action="version", version=f"collapse-probe {__version__}")
    _add_logging(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"collapse_probe.cli.{name}")
        except ModuleNotFoundError as exc:  # a subcommand module absent from a partial install
            if exc.name != f"collapse_probe.cli.{name}":
                raise
            continue
        module.add_parser(sub)
        sp = sub.choices[name]
        if name in CONFIG_COMMANDS:
            add_config_option(sp)
        if name in MODEL_COMMANDS:
            add_model_args(sp)
    for name, sp in sub.choices.items():
        _add_logging(sp, top=False, calls_models=name in MODEL_COMMANDS or name == "gate")
        apply_env(sp)
        _show_defaults(sp)
    return parser


def _show_defaults(p: argparse.ArgumentParser) -> None:
    """Every option's help names its default: an option whose help does not already say it gets
    ``(default X)`` appended (switches, options without a default and suppressed ones excepted)."""
    from collapse_probe.cli._common import BadEnv

    for a in p._actions:
        if not a.option_strings or a.help in (None, argparse.SUPPRESS) or "default" in str(a.help).lower():
            continue
        if a.nargs == 0 or a.default in (None, argparse.SUPPRESS, "", [], {}) or isinstance(a.default, BadEnv):
            continue
        if isinstance(a.default, bool):
            continue
        shown = ",".join(map(str, a.default)) if isinstance(a.default, list) else str(a.default)
        a.help = f"{a.help} (default {shown.replace('%', '%%')})"


def _name_env_source(message: str, argv: Sequence[str]) -> str:
    """An error about ``--flag`` whose value came from ``$COLLAPSE_PROBE_FLAG`` (the flag was not
    given) names the variable: ``$COLLAPSE_PROBE_STATES (--states) must be ...``."""
    m = re.match(r"--([a-z][a-z0-9-]*)", message)
    if m is None:
        return message
    flag = m.group(0)
    if any(a == flag or a.startswith(flag + "=") for a in argv):
        return message
    var = "COLLAPSE_PROBE_" + m.group(1).upper().replace("-", "_")
    if os.environ.get(var) is None:
        return message
    return f"${var} ({flag}){message[len(flag) :]}"


def _add_logging(p: argparse.ArgumentParser, top: bool, calls_models: bool = True) -> None:
    from collapse_probe.core._observe import LEVELS

    have = {o for a in p._actions for o in a.option_strings}
    default = 0 if top else argparse.SUPPRESS
    if "-v" not in have and "--verbose" not in have:
        p.add_argument(
            "-v",
            "--verbose",
            action="count",
            default=default,
            help=(
                "more output: -v logs every retried request, -vv debug detail; tracebacks of internal errors"
                if calls_models
                else "more output: -v info, -vv debug detail; tracebacks of internal errors"
            ),
        )
    if "--log-level" not in have:
        p.add_argument(
            "--log-level",
            choices=LEVELS,
            default=None if top else argparse.SUPPRESS,
            help="logging level of collapse-probe's messages (default warning; -v is info)",
        )


def unknown_command(argv: Sequence[str]) -> str | None:
    """The one-line error for a subcommand that does not exist, with the nearest names ("did you
    mean"), or ``None`` when the command is known or absent (``--help``, ``--version``)."""
    import difflib

    rest = list(argv)
    while rest and rest[0].startswith("-"):  # the top-level options before the command
        opt = rest.pop(0)
        if opt == "--log-level" and rest:
            rest.pop(0)
        elif opt in ("-h", "--help", "--version"):
            return None
    if not rest or rest[0] in COMMANDS:
        return None
    close = difflib.get_close_matches(rest[0], COMMANDS, n=2, cutoff=0.5)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return f"unknown command {rest[0]!r}; {hint}commands: {', '.join(COMMANDS)} (collapse-probe COMMAND --help)"


RUN_COMMANDS = ("play", "audit", "crossplay", "train")
"""Commands that call models: they end with the reliability summary line."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``collapse-probe`` console script.

    Exit status: the subcommand's (``gate``: 0 pass, 1 fail, 3 could not judge); 2 for bad input,
    named in one line on stderr; 130 when interrupted. Any unexpected exception is also one line
    (``-v`` shows the traceback), never a bare traceback. Nothing printed holds a configured secret
    (an API key, the credentials of a base URL in a model spec: :mod:`collapse_probe.core._secrets`).
    """
    from collapse_probe.core._secrets import scrubbed_terminal

    with scrubbed_terminal():
        return _main(argv)


def _public_args(args: argparse.Namespace) -> None:
    """Model specs given with URL credentials are held in their redacted form from here on (the
    backend that connects gets the real URL back): nothing records or prints the credentials."""
    from collapse_probe.core._secrets import public_spec

    for name, value in vars(args).items():
        if isinstance(value, str) and "://" in value:
            setattr(args, name, public_spec(value))
        elif isinstance(value, list) and any(isinstance(v, str) and "://" in v for v in value):
            setattr(args, name, [public_spec(v) if isinstance(v, str) else v for v in value])


def _main(argv: Sequence[str] | None = None) -> int:
    from collapse_probe.cli import _flags

    words = list(sys.argv[1:] if argv is None else argv)
    unknown = unknown_command(words)
    if unknown is not None:
        print(f"collapse-probe: error: {unknown}", file=sys.stderr)
        return 2
    _flags.ONLY_COMMAND = next((a for a in words if a in COMMANDS), "")
    try:
        parser = build_parser()
        args = parse_args(parser, words)
    finally:
        _flags.ONLY_COMMAND = None
    if args.command is None:
        parser.print_help()
        return 0
    _public_args(args)
    import collapse_probe.core._observe as _observe
    from collapse_probe.cli._common import (
        BadEnv,
        apply_budget,
        check_env_defaults,
        check_finite,
        check_trackers,
        log_to_trackers,
        print_usage,
        ray_from_args,
        resolve_out,
    )
    from collapse_probe.models._usage import BudgetExceeded

    verbose = int(getattr(args, "verbose", 0) or 0)
    level = getattr(args, "log_level", None)
    _observe.configure(verbose, None if isinstance(level, BadEnv) else level)
    _observe.reset()
    if getattr(args, "no_progress", False) is True:
        # transformers and huggingface_hub draw their own bars (loading weights) unless told at import
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    module = importlib.import_module(f"collapse_probe.cli.{args.command}")
    code = 2
    try:
        check_env_defaults(args)
        check_finite(args)
        resolve_out(args)
        apply_budget(args)
        check_trackers(args)
        with ray_from_args(args):
            code = int(module.run(args) or 0)
        print_usage(args)
        if code == 0:
            log_to_trackers(args)
        return code
    except BudgetExceeded as exc:
        print_usage(args)
        print(
            f"collapse-probe {args.command}: stopped: {exc}; finished work and the spend so far are saved in the "
            "run directory; run the same command with a higher limit to resume",
            file=sys.stderr,
        )
        code = 3
        return code
    except CollapseProbeError as exc:
        given = list(sys.argv[1:] if argv is None else argv)
        print(f"collapse-probe {args.command}: error: {_name_env_source(str(exc), given)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; completed work is saved in the run directory and resumes on the next run", file=sys.stderr)
        code = 130
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the backstop: a one-line error, the traceback only on request
        if verbose:
            traceback.print_exc()
        detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:500] if str(exc) else type(exc).__name__
        print(
            f"collapse-probe {args.command}: error: {detail}"
            + ("" if verbose else " (rerun with -v for the traceback)"),
            file=sys.stderr,
        )
        return 2
    finally:
        if args.command in RUN_COMMANDS and code != 2:
            print(_observe.summary_line(), file=sys.stderr)
            first = _observe.first_error_line()
            if first is not None:
                print(first, file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
