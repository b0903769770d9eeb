"""What the HTML reports under a runs root show, as JSON: to check that a change to their readers writes the same.

Every ``*.html`` under the root (``report.html``, the lab's ``compare.html`` and ``sweep.html``) is reduced
to what a reader sees: the inlined plotly.js bundle is dropped (it is the same library in every file) and
the random id of each figure's ``<div>`` is numbered in order, so two writes of the same report compare
equal; the titles, subtitles, tables, text and every figure's data and layout stay as written.

    python scripts/report_snapshot.py RUNS_DIR before.json            # on the old code
    python scripts/report_snapshot.py RUNS_DIR after.json --compare before.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

BUNDLE = re.compile(r'(<script type="text/javascript" data-plotlyjs="[^"]*">).*?(</script>)', re.S)
FIGURE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalise(html: str) -> str:
    """The report without the plotly.js bundle, its figure ids numbered in order of appearance."""
    html = BUNDLE.sub(r"\1(plotly.js)\2", html)
    ids: dict[str, str] = {}
    return FIGURE_ID.sub(lambda m: ids.setdefault(m.group(0), f"figure-{len(ids)}"), html)


def snapshot(root: Path) -> dict[str, str]:
    """Report path relative to ``root`` -> its normalised HTML."""
    return {str(p.relative_to(root)): normalise(p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.html"))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="the runs directory")
    ap.add_argument("out", type=Path, help="where to write the snapshot (JSON)")
    ap.add_argument("--compare", type=Path, help="an earlier snapshot: report each report that differs")
    args = ap.parse_args(argv)
    snap = snapshot(args.root)
    args.out.write_text(json.dumps(snap, indent=1, sort_keys=True), encoding="utf-8")
    print(f"{len(snap)} reports -> {args.out}")
    if args.compare is None:
        return 0
    before = json.loads(args.compare.read_text(encoding="utf-8"))
    differ = sorted(k for k in before.keys() | snap.keys() if before.get(k) != snap.get(k))
    for name in differ:
        a, b = before.get(name, ""), snap.get(name, "")
        at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        print(f"DIFFERS {name} at character {at}: {a[at - 80 : at + 120]!r} -> {b[at - 80 : at + 120]!r}")
    print(f"{len(snap) - len(differ)} of {len(snap)} reports identical" + ("" if differ else " (all)"))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
