"""Markdown tables of the collapse lab, generated from its own output files.

    python scripts/lab_table.py runs/lab/compare.json                 # print the methods table
    python scripts/lab_table.py runs/lab-sweep/sweep.json             # print a sweep table
    python scripts/lab_table.py runs/lab/compare.json --readme README.md
        # rewrite the README block between <!-- lab-table:start --> and <!-- lab-table:end -->
        # (a sweep file fills <!-- lab-sweep:start --> ... <!-- lab-sweep:end -->)

Every cell is a mean over seeds ± the half-width of its 95% Student-t interval, as written by
``collapse-probe lab --compare`` / ``--sweep``; the script computes nothing itself.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from collapse_probe.report.lab_plots import fmt_stat

MARKERS = {
    "collapse-probe/lab-compare/v2": ("<!-- lab-table:start -->", "<!-- lab-table:end -->"),
    "collapse-probe/lab-sweep/v1": ("<!-- lab-sweep:start -->", "<!-- lab-sweep:end -->"),
}


cell = fmt_stat  # the same ``mean ± half-width`` cell as the HTML report


def compare_table(data: dict[str, Any]) -> str:
    cfg = data["config"]
    lines = [
        f"{data['n_seeds']} seeds × {data['steps']} steps; simulator temperature {cfg['sim_temperature']}, "
        f"VS error {cfg['vs_error']}, family noise δ {cfg['delta']}; mean ± 95% CI half-width over seeds.",
        "",
        "| method | train reward (final) | held-out: real users, final | real users, peak | "
        "real users − single (paired) | held-out families, final | families − single (paired) | "
        "policy entropy end/start |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in data["methods"]:
        paired = "—" if m["method"] == "single" and "(" not in m["label"] else cell(m.get("heldout_final_vs_single"))
        paired_sim = "—" if paired == "—" else cell(m.get("heldout_sim_final_vs_single"))
        lines.append(
            f"| {m['label']} | {cell(m['train_final'])} | {cell(m['heldout_final'])} | {cell(m['heldout_peak'])} | "
            f"{paired} | {cell(m['heldout_sim_final'])} | {paired_sim} | {cell(m['entropy_ratio'])} |"
        )
    return "\n".join(lines)


def sweep_table(data: dict[str, Any]) -> str:
    values = data["values"]
    lines = [
        f"Held-out reward on real users (final) over `{data['param']}`, {data['n_seeds']} seeds each; "
        "mean ± 95% CI half-width.",
        "",
        "| method | " + " | ".join(f"{data['param']} = {v:g}" for v in values) + " |",
        "| --- | " + " | ".join("---" for _ in values) + " |",
    ]
    for m in data["methods"]:
        lines.append(f"| {m['label']} | " + " | ".join(cell(p["heldout_final"]) for p in m["points"]) + " |")
    lines += [
        "",
        "The same, as a paired difference to single in the same worlds (mean ± 95% CI half-width):",
        "",
        lines[2],
        lines[3],
    ]
    for m in data["methods"]:
        if m["label"] == "single":
            continue
        lines.append(
            f"| {m['label']} | " + " | ".join(cell(p.get("heldout_final_vs_single")) for p in m["points"]) + " |"
        )
    return "\n".join(lines)


def render(data: dict[str, Any]) -> str:
    schema = data.get("schema")
    if schema == "collapse-probe/lab-compare/v2":
        return compare_table(data)
    if schema == "collapse-probe/lab-sweep/v1":
        return sweep_table(data)
    raise SystemExit(f"lab_table: {schema!r} is not a lab comparison (v2) or sweep; rerun collapse-probe lab")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="compare.json or sweep.json of collapse-probe lab")
    ap.add_argument("--readme", help="rewrite this file's marked block instead of printing")
    args = ap.parse_args(argv)
    try:
        data = json.loads(Path(args.results).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        print(f"lab_table: cannot read {args.results}: {exc}", file=sys.stderr)
        return 2
    table = render(data)
    if not args.readme:
        print(table)
        return 0
    start, end = MARKERS[data["schema"]]
    path = Path(args.readme)
    text = path.read_text(encoding="utf-8")
    if start not in text or end not in text:
        print(f"lab_table: {path} has no {start} ... {end} block", file=sys.stderr)
        return 2
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{start}\n{table}\n{end}{tail}", encoding="utf-8")
    print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
