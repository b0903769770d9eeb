"""``collapse-probe export``: a finished run as an inspect_ai eval log, parquet tables or a Hugging Face dataset."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="write a run as an inspect_ai eval log, parquet tables or a Hugging Face dataset",
        description="Export a finished play, audit, crossplay or train run directory. --to inspect: one eval log "
        "(.eval or .json; one sample per conversation, or per audited state) that inspect_ai's reader and `inspect "
        "view` open; --to parquet: a directory of tables (conversations, turns, states, audit_samples, cells, ...) "
        "with schema.json; --to hf: a Hugging Face datasets DatasetDict saved to a directory (one split per table), "
        "pushed to the Hub with --push-to-hub. Nothing in the run directory changes; nothing is overwritten.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run directory (--out of play, audit, crossplay or train)")
    p.add_argument(
        "--to",
        choices=("inspect", "parquet", "hf"),
        default=None,
        required=True,
        help="inspect (an eval log file), parquet (a directory of tables) or hf (a datasets directory)",
    )
    p.add_argument(
        "--out",
        default=None,
        required=True,
        help="where to write: a new .eval/.json file (inspect) or a new or empty directory (parquet, hf)",
    )
    p.add_argument(
        "--push-to-hub",
        default=None,
        metavar="REPO",
        help="with --to hf: also push every table to this Hub dataset repository (owner/name) as a configuration; "
        "needs $HF_TOKEN or `huggingface-cli login`",
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def run(args: argparse.Namespace) -> int:
    from collapse_probe.integrations.interop import export_run

    written = export_run(args.run_dir, args.to, args.out, push_to_hub=args.push_to_hub, progress=not args.no_progress)
    for path in written:
        print(f"wrote {path}")
    if args.push_to_hub:
        print(f"pushed to https://huggingface.co/datasets/{args.push_to_hub}")
    return 0
