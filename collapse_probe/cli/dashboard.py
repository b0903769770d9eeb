"""``collapse-probe dashboard``: browse run directories in a local Streamlit app."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dashboard",
        help="browse audit, cross-play, gate, train and lab runs in a local web app",
        description="Start the Streamlit dashboard over every run directory found under RUNS_DIR (recursively). "
        "It only reads JSON files; it listens on 127.0.0.1 unless --host says otherwise.",
    )
    p.add_argument(
        "runs_dir",
        metavar="RUNS_DIR",
        nargs="?",
        default="runs",
        help="directory holding run directories (default: runs)",
    )
    p.add_argument("--port", type=int, default=8501, help="port to listen on (default 8501)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; 0.0.0.0 exposes the runs to the network)",
    )


def run(args: argparse.Namespace) -> int:
    from collapse_probe.dashboard._serve import serve

    return serve(args.runs_dir, args.port, args.host)
