"""Cost of the collapse lab's many-seed runs: all seeds at once (vectorised) vs one seed at a time,
and the cost of a default ``collapse-probe lab --compare``.

Run: ``python benchmarks/lab_seeds.py [--seeds 20] [--method population]``

Times are CPU seconds of this process (``time.process_time``), so a busy machine does not inflate
them; the two ways give the same numbers per seed (checked here, up to float summation order).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from collapse_probe.trainers.lab import LabConfig, compare_runs, run_compare_seeds, run_lab, run_lab_seeds


def cpu(fn):
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--method", default="population")
    args = ap.parse_args()
    config = LabConfig(method=args.method)
    seeds = list(range(args.seeds))
    t_vec, vec = cpu(lambda: run_lab_seeds(config, seeds))
    t_loop, loop = cpu(lambda: [run_lab(LabConfig(method=args.method, seed=s)) for s in seeds])
    worst = max(
        float(np.max(np.abs(np.array(a.heldout_reward) - np.array(b.heldout_reward))))
        for a, b in zip(vec, loop, strict=True)
    )
    print(
        f"{args.method}, {args.seeds} seeds x {config.steps} steps: vectorised {t_vec:.2f} s, one at a time "
        f"{t_loop:.2f} s ({t_loop / t_vec:.1f}x); largest held-out difference {worst:.1e}"
    )
    t_cmp, res = cpu(lambda: run_compare_seeds(LabConfig(), seeds))
    print(f"lab --compare ({len(compare_runs())} rows x {args.seeds} seeds): {t_cmp:.1f} CPU s")


if __name__ == "__main__":
    main()
