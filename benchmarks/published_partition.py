"""Why ``audit --from`` classes published replies by meaning: exact text against the embedding partition
on τ2-bench results files whose user simulator says one of 4 meanings, each in 4 wordings.

For every held-out paraphrase set shipped in ``collapse_probe/data/calibration/paraphrase_sets.jsonl``
(the sets written apart from the ones the partition was calibrated on), a results file in tau2-bench's
official format is generated: ``--tasks`` tasks, ``--trials`` trials each; the user's reply to the fixed
greeting takes meaning k with probability 0.6 / 0.25 / 0.1 / 0.05 and one of its 4 wordings uniformly,
so the true collapse error of every opening state is 0.40 by meaning and 0.85 by exact text. The audit
of each file (``run_audit_from``) is run with ``--partition exact`` and with the default partition;
the table prints the mean ε̂ over the opening states with its interval, per set and partition.

    python benchmarks/published_partition.py --trials 20 --tasks 4
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "interop"))
from tau2_results import make_results  # noqa: E402

PROBS = (0.6, 0.25, 0.1, 0.05)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20, help="trials per task (replies per opening state)")
    ap.add_argument("--tasks", type=int, default=4, help="tasks per file (opening states per set)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from collapse_probe.metrics.estimators import mean_collapse_error_interval
    from collapse_probe.metrics.partitioners import load_paraphrase_sets
    from collapse_probe.pipelines.audit import AuditConfig, run_audit_from

    sets = [s for s in load_paraphrase_sets() if s["split"] != "calibration"]
    true_meaning = 1 - PROBS[0]
    print(f"{len(sets)} held-out paraphrase sets; {args.tasks} tasks x {args.trials} trials; true ε of an opening state: "
          f"{true_meaning:.2f} by meaning, {1 - PROBS[0] / 4:.2f} by exact text")  # fmt: skip
    print(f"{'set':<22} {'exact ε̂ [95% CI]':<26} {'by meaning ε̂ [95% CI]':<26} classes (exact / meaning)")
    rows = {"exact": [], "default": []}
    partitioner = None
    with tempfile.TemporaryDirectory() as tmp:
        for k, s in enumerate(sets):
            meanings = s["meanings"][:4]
            dist = [(t, p / len(m)) for m, p in zip(meanings, PROBS, strict=True) for t in m]
            rng = random.Random(args.seed + k)
            tasks = {f"{s['set']}-{i}": dist for i in range(args.tasks)}
            f = Path(tmp) / f"{k}" / "results.json"
            make_results(f, tasks, args.trials, seed=rng.randrange(1 << 30))
            out = {}
            for name, partition in (("exact", "exact"), ("default", None)):
                res = run_audit_from(f, "tau2", AuditConfig(partition=partition), None, progress=False).to_json()
                partitioner = partitioner or (res["partitioner"] if name == "default" else None)
                opening = [st for st in res["states"] if st["kind"] == "opening"]
                est = mean_collapse_error_interval([st["class_counts"] for st in opening], seed=args.seed)
                classes = sum(len(st["class_counts"]) for st in opening) / len(opening)
                out[name] = (est, classes)
                rows[name].extend(st["class_counts"] for st in opening)
            (ex, cx), (me, cm) = out["exact"], out["default"]
            print(f"{s['set']:<22} {ex.estimate:.3f} [{ex.ci95[0]:.3f}, {ex.ci95[1]:.3f}]{'':<6} "
                  f"{me.estimate:.3f} [{me.ci95[0]:.3f}, {me.ci95[1]:.3f}]{'':<6} {cx:.1f} / {cm:.1f}")  # fmt: skip
    for name in ("exact", "default"):
        est = mean_collapse_error_interval(rows[name], seed=args.seed)
        label = "exact text" if name == "exact" else f"default ({partitioner})"
        print(f"all sets, {label}: mean ε̂ {est.estimate:.3f} [{est.ci95[0]:.3f}, {est.ci95[1]:.3f}] over "
              f"{len(rows[name])} opening states (truth {1 - PROBS[0] / 4 if name == 'exact' else true_meaning:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
