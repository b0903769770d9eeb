"""Write the JSON Schema of every results kind and record kind to ``collapse_probe/schemas/<kind>.json``, from the typed models.

    python scripts/write_schemas.py            # (re)write collapse_probe/schemas/*.json (shipped in the wheel)
    python scripts/write_schemas.py --check    # exit 1 when a committed schema differs from its model

The schemas are generated, never edited by hand: ``tests/results/test_schemas.py`` fails when a
committed file is not what its model generates.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import collapse_probe
from collapse_probe.results import KINDS, RECORDS, schema_text

SCHEMA_DIR = Path(collapse_probe.__file__).resolve().parent / "schemas"
"""The source tree's schema folder (run from a checkout or an editable install)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on a difference")
    parser.add_argument("--out", type=Path, default=SCHEMA_DIR, help=f"directory (default {SCHEMA_DIR})")
    args = parser.parse_args(argv)
    stale = []
    for kind in [*KINDS, *RECORDS]:
        path = args.out / f"{kind}.json"
        text = schema_text(kind)
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    if stale:
        print("stale (run python scripts/write_schemas.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
