"""What the dashboard draws over a runs root, as JSON: to check that a change to its readers draws the same.

Every view is rendered headless (Streamlit's ``AppTest``) for every run of its kind, selected by the deep
link ``?run=NAME``; the snapshot holds each element's value (markdown, captions, notes, metrics with
their help, tables as CSV without the modification time, plotly figure specs, selectors).

    python scripts/dashboard_snapshot.py RUNS_DIR before.json            # on the old code
    python scripts/dashboard_snapshot.py RUNS_DIR after.json --compare before.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "collapse_probe" / "dashboard" / "app.py"
VIEWS = {"Runs": None, "Simulator": ("audit",), "Cross-play": ("crossplay",), "Training": None, "Compare": None}
"""View -> the run kinds it selects one of (``None``: the view shows them all at once)."""
ELEMENTS = ("markdown", "caption", "info", "warning", "error", "metric", "dataframe", "plotly_chart", "selectbox")


def _value(kind: str, e: Any) -> Any:
    if kind == "dataframe":
        return e.value.drop(columns=["modified"], errors="ignore").to_csv()
    if kind == "plotly_chart":
        return e.proto.spec
    if kind == "metric":
        return [e.label, e.value, e.proto.help]
    if kind == "selectbox":
        return [e.label, e.value]
    return e.value


def snapshot(root: Path) -> dict[str, Any]:
    from streamlit.testing.v1 import AppTest

    from collapse_probe.report import runs as rd

    os.environ["COLLAPSE_PROBE_RUNS_DIR"] = str(root)
    found = rd.discover_runs(root)
    out = {}
    for view, kinds in VIEWS.items():
        for run in [None] if kinds is None else [r.name for r in found if r.kind in kinds]:
            at = AppTest.from_file(str(APP), default_timeout=120)
            at.query_params["view"] = view
            if run is not None:
                at.query_params["run"] = run
            at.run()
            out[f"{view}|{run}"] = {
                "exception": [str(e.value) for e in at.exception],
                "items": [[kind, _value(kind, e)] for kind in ELEMENTS for e in at.get(kind)],
            }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs_dir", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--compare", type=Path, help="an earlier snapshot: print the pages that differ, exit 1 if any")
    args = ap.parse_args()
    snap = snapshot(args.runs_dir)
    args.out.write_text(json.dumps(snap, indent=0, sort_keys=True), encoding="utf-8")
    print(f"{len(snap)} pages, {sum(len(p['items']) for p in snap.values())} elements -> {args.out}")
    if args.compare is None:
        return 0
    before = json.loads(args.compare.read_text(encoding="utf-8"))
    differ = sorted(k for k in before.keys() | snap.keys() if before.get(k) != snap.get(k))
    print("identical" if not differ else "differ: " + ", ".join(differ))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
