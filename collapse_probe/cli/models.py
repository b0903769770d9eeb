"""``collapse-probe models``: list model aliases and backend prefixes."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("models", help="list model aliases and backend spec prefixes")


def run(args: argparse.Namespace) -> int:
    from collapse_probe.models import BACKENDS, list_models

    print(f"{'alias':<18} {'spec':<34} description")
    for alias, spec, desc in list_models():
        print(f"{alias:<18} {spec:<34} {desc}")
    print(
        "\nbackend prefixes: " + ", ".join(f"{p}/MODEL" for p in BACKENDS if p != "scripted") + ", scripted:FILE.json"
    )
    print("simulator modes: vs:SPEC (Verbalized Sampling), direct:SPEC (default)")
    return 0
