"""``collapse-probe card``: a simulator card (card.md and card.json) from audit, crossplay and play runs."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "card",
        help="write a simulator card (card.md + card.json) from audit, crossplay and play runs",
        description="Summarise what the given run directories measured about one simulator: spec and fingerprint, "
        "benchmark and states, both verdict views with intervals, entropy, realism against people and transfer "
        "where measured, failure handling, cost and tool versions. Every figure is copied from a results.json; "
        "card.json names the JSON pointer of each.",
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="audit, crossplay or play run directories")
    p.add_argument("--out", default="card.md", help="the card's Markdown file (default card.md; "
                   "card.json is written beside it)")  # fmt: skip
    p.add_argument("--sim", default=None, help="the simulator the card is about (default: the audited one)")


def run(args: argparse.Namespace) -> int:
    from collapse_probe.integrations.interop import simulator_card, write_card

    card = simulator_card(args.run_dirs, simulator=args.sim)
    md, js = write_card(card, args.out)
    print(f"card: {md}  {js}  (fingerprint {card['card_fingerprint'][:16]})")
    return 0
