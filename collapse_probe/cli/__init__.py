"""The ``collapse-probe`` command line: a thin layer over the Python API.

One module per subcommand; each exposes ``add_parser(subparsers)`` and ``run(args) -> int``. The
modules import only argparse-level code at start-up; the work (and heavy imports) happen in ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from collapse_probe._version import __version__
from collapse_probe.errors import CollapseProbeError

COMMANDS = ("play", "audit", "crossplay", "gate", "train", "lab", "dashboard", "models")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="collapse-probe",
        description="Diagnose and fix simulator collapse in multi-agent RL for LLM agents.",
    )
    parser.add_argument("--version", action="version", version=f"collapse-probe {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"collapse_probe.cli.{name}")
        except ModuleNotFoundError as exc:  # a subcommand module absent from a partial install
            if exc.name != f"collapse_probe.cli.{name}":
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``collapse-probe`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    module = importlib.import_module(f"collapse_probe.cli.{args.command}")
    try:
        return int(module.run(args) or 0)
    except CollapseProbeError as exc:
        print(f"collapse-probe {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; completed work is saved in the run directory and resumes on the next run", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
