"""The gold oracle of the CooperBench procedure on a dataset: how often do the gold patches of a pair
conflict, merge, and pass both features' tests?

    python benchmarks/cooperbench_gold.py                      # the shipped cooperbench-demo tasks
    python benchmarks/cooperbench_gold.py --data DIR [--checks] # an official-layout dataset root

Per task it prints pairs, plain-merge conflicts, union merges, union failures and gold-pair successes;
``--checks`` also runs every feature's tests with its gold patch (must pass) and on BASE (must fail).
Official tasks need their BASE tree (``task/repo/`` or ``$COLLAPSE_PROBE_COOPERBENCH_REPOS``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collapse_probe.benchmarks.cooperbench import (  # noqa: E402
    demo_dir,
    discover_tasks,
    gold_pair_table,
    resolve_data_dir,
    run_patch_test,
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="dataset root (default: the shipped demo tasks)")
    ap.add_argument("--checks", action="store_true", help="also check gold passes and BASE fails per feature")
    ap.add_argument("--json", default=None, help="write the per-pair table here")
    args = ap.parse_args()
    root = resolve_data_dir(args.data) if args.data else demo_dir()
    start = time.perf_counter()
    total: Counter[str] = Counter()
    table = []
    print(f"{'task':42} {'feat':>4} {'pairs':>5} {'conflict':>8} {'union':>5} {'error':>5} {'gold ok':>7}")
    for task in discover_tasks(root):
        if args.checks:
            for fid, f in task.features.items():
                gold = run_patch_test(task, fid, f.patch_path)
                base = run_patch_test(task, fid, None)
                total["features"] += 1
                total["gold_passes"] += gold.passed
                total["base_fails"] += not base.passed
                if not gold.passed or base.passed:
                    print(f"  {task.name} feature{fid}: gold passes={gold.passed}, BASE passes={base.passed}")
        rows = gold_pair_table(task)
        c = Counter()
        for r in rows:
            c["pairs"] += 1
            c["conflict"] += r["merge_status"] == "conflicts"
            c["union"] += r["merge"] == "union"
            c["error"] += r["merge"] == "error"
            c["success"] += r["success"]
            table.append({"task": task.name, **r})
        total.update(c)
        print(f"{task.name:42} {len(task.features):>4} {c['pairs']:>5} {c['conflict']:>8} {c['union']:>5} "
              f"{c['error']:>5} {c['success']:>7}")  # fmt: skip
    print(f"{'total':42} {'':>4} {total['pairs']:>5} {total['conflict']:>8} {total['union']:>5} {total['error']:>5} "
          f"{total['success']:>7}")  # fmt: skip
    if args.checks:
        print(f"gold passes its own tests: {total['gold_passes']}/{total['features']}; "
              f"tests fail on BASE: {total['base_fails']}/{total['features']}")  # fmt: skip
    print(
        f"gold pairs passing both features: {total['success']}/{total['pairs']} ({time.perf_counter() - start:.0f} s)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
