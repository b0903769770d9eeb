"""Coverage of ``collapse-probe compare``'s simulator-effect intervals, and exactness of its noise floor and
rank flips, on simulated results files with known per-task success probabilities.

Two parts:

1. **Panel** (the statistic alone, :func:`collapse_probe.metrics.simulator_effects.simulator_effect`): the
   hard cases. Every task of a configuration has the same success probability (the binomial case, where
   the interval is least conservative), or probabilities spread over [0, 1], or exactly 0 and 1, or the
   same under both simulators (a tie, true difference 0); 5, 10 and 40 tasks; 1, 2 and 4 trials. For
   each cell: how often the 95 % interval covers the truth (the difference of the mean per-task
   probabilities over the shared tasks), how often it misses on each side ("miss lo": the interval lies
   above the truth; "miss hi": below it; each should be near 0.025), its mean width, and, for contrast, the coverage of a paired t
   interval over tasks (which collapses to zero width when every task's trials agree) and the width an
   oracle that knew every task's probability would give (``2 · 1.96 · √Var D``).
   Then trials lost where the outcome is uncertain: half the tasks at 0.5 with 1 trial, half at 0.02
   with 10 (what grouping the tasks by their number of trials is for).
2. **Files** (the whole command, :func:`collapse_probe.pipelines.compare.run_compare`): per replication, τ2-bench
   results files for 3 agents × 3 simulators × k trials over tasks with per-task probabilities drawn
   from Beta(0.6, 0.6) plus a simulator and an agent shift (some exactly 0 or 1), with infrastructure
   failures and, in one simulator's files, renumbered task ids (paired by the task's text). Measured:
   coverage of every simulator effect; the noise floor's flip rate against an independent count from
   the drawn rewards; the rank flips against an independent enumeration; the pairing counts.

    python benchmarks/compare_coverage.py                  # the tables in docs/compare.md
    python benchmarks/compare_coverage.py --quick          # fewer replications
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy import stats

from collapse_probe.metrics.simulator_effects import simulator_effect

PANEL = {
    "equal p = 0.5 vs 0.5 (tie)": (lambda n: np.full(n, 0.5), lambda n: np.full(n, 0.5)),
    "equal p = 0.9 vs 0.95": (lambda n: np.full(n, 0.9), lambda n: np.full(n, 0.95)),
    "equal p = 0.05 vs 0.95": (lambda n: np.full(n, 0.05), lambda n: np.full(n, 0.95)),
    "equal p = 0.02 vs 0.3": (lambda n: np.full(n, 0.02), lambda n: np.full(n, 0.3)),
    "equal p = 0.3 vs 0.7": (lambda n: np.full(n, 0.3), lambda n: np.full(n, 0.7)),
    "spread p vs p + 0.1": (lambda n: np.linspace(0.0, 0.9, n), lambda n: np.linspace(0.1, 1.0, n)),
    "only 0 and 1, swapped on one task": (lambda n: (np.arange(n) % 2).astype(float),
                                          lambda n: np.r_[1.0 - (np.arange(1) % 2), (np.arange(1, n) % 2)].astype(float)),
    "0.99 vs 1.0": (lambda n: np.full(n, 0.99), lambda n: np.full(n, 1.0)),
}  # fmt: skip


def _paired_t(y1: np.ndarray, y0: np.ndarray) -> tuple[float, float]:
    d = y1 - y0
    n = len(d)
    half = stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / np.sqrt(n)
    return d.mean() - half, d.mean() + half


def panel(reps: int, seed: int) -> list[dict[str, object]]:
    rng = np.random.default_rng(seed)
    rows = []
    for name, (f1, f0) in PANEL.items():
        for n in (5, 10, 40):
            for k in (1, 2, 4):
                p1, p0 = f1(n), f0(n)
                truth = float(np.mean(p1) - np.mean(p0))
                cover = cover_t = above = below = 0
                widths = []
                for _ in range(reps):
                    c1, c0 = rng.binomial(k, p1), rng.binomial(k, p0)
                    a = {str(t): [True] * int(c1[t]) + [False] * (k - int(c1[t])) for t in range(n)}
                    b = {str(t): [True] * int(c0[t]) + [False] * (k - int(c0[t])) for t in range(n)}
                    e = simulator_effect(a, b)
                    cover += e.ci95[0] - 1e-12 <= truth <= e.ci95[1] + 1e-12
                    below += truth < e.ci95[0] - 1e-12  # the interval lies above the truth
                    above += truth > e.ci95[1] + 1e-12
                    widths.append(e.ci95[1] - e.ci95[0])
                    lo, hi = _paired_t(c1 / k, c0 / k)
                    cover_t += lo - 1e-12 <= truth <= hi + 1e-12
                oracle = 2 * 1.96 * np.sqrt(np.sum(p1 * (1 - p1) + p0 * (1 - p0)) / k) / n
                rows.append({"case": name, "tasks": n, "trials": k, "truth": truth, "coverage": cover / reps,
                             "miss_low": below / reps, "miss_high": above / reps, "width": float(np.mean(widths)), "oracle_width": float(oracle),
                             "paired_t_coverage": cover_t / reps})  # fmt: skip
    return rows


def unequal(reps: int, seed: int) -> list[dict[str, object]]:
    """Trials lost where the outcome is uncertain (infrastructure failures on the longer, harder tasks):
    half the tasks at p = 0.5 with 1 trial, half at 0.02 with 10, under both simulators (the second
    shifted by ``shift``)."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in (6, 10, 20, 40):
        p = np.r_[np.full(n // 2, 0.5), np.full(n - n // 2, 0.02)]
        k = np.r_[np.full(n // 2, 1), np.full(n - n // 2, 10)]
        for shift in (0.0, 0.1):
            p1 = np.clip(p + shift, 0, 1)
            truth = float(np.mean(p1 - p))
            cover = below = above = 0
            for _ in range(reps):
                a = {str(t): list(rng.random(k[t]) < p1[t]) for t in range(n)}
                b = {str(t): list(rng.random(k[t]) < p[t]) for t in range(n)}
                lo, hi = simulator_effect(a, b).ci95
                cover += lo - 1e-12 <= truth <= hi + 1e-12
                below += truth < lo - 1e-12
                above += truth > hi + 1e-12
            rows.append({"tasks": n, "shift": shift, "coverage": cover / reps, "miss_low": below / reps,
                         "miss_high": above / reps})  # fmt: skip
    return rows


def _write_tau2(path: Path, agent: str, user: str, outcomes: dict[str, list[float | None]],
                texts: dict[str, str]) -> None:  # fmt: skip
    sims = []
    for task, rewards in outcomes.items():
        for trial, r in enumerate(rewards):
            sims.append({"id": f"{task}-{trial}", "task_id": task, "trial": trial,
                         "termination_reason": "infrastructure_error" if r is None else "user_stop",
                         "reward_info": None if r is None else {"reward": r},
                         "messages": [{"role": "assistant", "content": "Hi! How can I help you today?"},
                                      {"role": "user", "content": "I need help with my order."}]})  # fmt: skip
    tasks = [{"id": t, "user_scenario": {"instructions": texts[t]}} for t in outcomes]
    info = {"user_info": {"llm": user}, "agent_info": {"llm": agent}}
    path.write_text(json.dumps({"info": info, "tasks": tasks, "simulations": sims}))


def files(reps: int, seed: int, n_tasks: int, trials: int) -> dict[str, object]:
    from collapse_probe.pipelines.compare import CompareConfig, run_compare

    rng = np.random.default_rng(seed)
    agents, sims = ["agent-a", "agent-b", "agent-c"], ["sim-x", "sim-y", "sim-z"]
    covered = total = miss_low = miss_high = 0
    flip_ok = flip_total = 0
    flips_ok = 0
    flips_seen = 0
    widths: list[float] = []
    oracle: list[float] = []
    for rep in range(reps):
        base = rng.beta(0.6, 0.6, n_tasks)
        base[: max(1, n_tasks // 8)] = 1.0  # some tasks always pass,
        base[max(1, n_tasks // 8) : max(2, n_tasks // 4)] = 0.0  # some never
        shift = {"sim-x": 0.0, "sim-y": rng.uniform(-0.15, 0.15), "sim-z": rng.uniform(-0.15, 0.15)}
        skill = {a: rng.uniform(-0.1, 0.1) for a in agents}
        p = {(a, s): np.clip(base + shift[s] + skill[a] + rng.normal(0, 0.05, n_tasks), 0, 1)
             for a in agents for s in sims}  # fmt: skip
        texts = {f"t{i}": f"Task {i}: you want to change order #{1000 + i}." for i in range(n_tasks)}
        drawn: dict[tuple[str, str], dict[str, list[float | None]]] = {}
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for a, s in itertools.product(agents, sims):
                out: dict[str, list[float | None]] = {}
                for i in range(n_tasks):
                    rs: list[float | None] = [float(rng.random() < p[(a, s)][i]) for _ in range(trials)]
                    if rng.random() < 0.05:
                        rs.append(None)  # an infrastructure failure: excluded, counted
                    out[f"t{i}"] = rs
                drawn[(a, s)] = out
                # sim-z's files renumber the tasks (a fork): pairing must go by the task's text
                ids = {t: (f"z{n_tasks - j}" if s == "sim-z" else t) for j, t in enumerate(out)}
                path = Path(tmp) / f"{a}-{s}.json"
                _write_tau2(path, a, s, {ids[t]: v for t, v in out.items()}, {ids[t]: texts[t] for t in out})
                paths.append(str(path))
            r = run_compare(paths, CompareConfig(n_boot=100, seed=rep), None)
        assert r.pairing.task_key == "content" and r.pairing.tasks == n_tasks
        for e in r.simulator_effects:
            truth = float(np.mean(p[(e.agent, e.simulator)] - p[(e.agent, e.reference)]))
            assert e.ci95 is not None and e.n_tasks == n_tasks
            covered += e.ci95[0] - 1e-12 <= truth <= e.ci95[1] + 1e-12
            miss_low += truth < e.ci95[0] - 1e-12
            miss_high += truth > e.ci95[1] + 1e-12
            total += 1
            widths.append(e.ci95[1] - e.ci95[0])
            pa, pb = p[(e.agent, e.simulator)], p[(e.agent, e.reference)]
            oracle.append(2 * 1.96 * np.sqrt(np.sum(pa * (1 - pa) + pb * (1 - pb)) / trials) / n_tasks)
        # independent counts from the drawn rewards
        scored = {c: {t: [x for x in v if x is not None] for t, v in d.items()} for c, d in drawn.items()}
        for nf in r.noise_floor:
            by_task = scored[(nf.agent, nf.simulator)]
            multi = [v for v in by_task.values() if len(v) >= 2]
            if not multi:  # one trial per task: no flip rate
                flip_ok += nf.flip_rate is None
            else:
                expect = sum(1 for v in multi if 0 < sum(v) < len(v)) / len(multi)
                flip_ok += nf.flip_rate is not None and abs(nf.flip_rate - expect) < 1e-12
            flip_total += 1
        # exact rates: with 3 trials a task's share is a third, and a float sum would break exact ties
        rate = {c: sum(Fraction(int(sum(v)), len(v)) for v in d.values()) / len(d) for c, d in scored.items()}
        expect_flips = set()
        for a, b in itertools.combinations(agents, 2):
            for s, t in itertools.combinations(sims, 2):
                d1, d2 = rate[(a, s)] - rate[(b, s)], rate[(a, t)] - rate[(b, t)]
                if (d1 > 0 > d2) or (d1 < 0 < d2):
                    expect_flips.add((a, b, s, t))
        got = {(f.agents[0], f.agents[1], f.simulators[0], f.simulators[1]) for f in r.rank_flips}
        flips_ok += got == expect_flips
        flips_seen += len(expect_flips)
    return {"replications": reps, "tasks": n_tasks, "trials": trials, "effects": total,
            "coverage": covered / total, "miss_low": miss_low / total, "miss_high": miss_high / total, "mean_width": float(np.mean(widths)),
            "oracle_width": float(np.mean(oracle)),
            "flip_rate_matches": f"{flip_ok}/{flip_total}", "rank_flips_exact": f"{flips_ok}/{reps}",
            "rank_flips_seen": flips_seen}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=2000, help="replications per panel cell (default 2000)")
    ap.add_argument("--file-reps", type=int, default=200, help="replications of the file simulation (default 200)")
    ap.add_argument("--quick", action="store_true", help="400 panel and 40 file replications")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    reps, file_reps = (400, 40) if args.quick else (args.reps, args.file_reps)
    t0 = time.time()
    rows = panel(reps, args.seed)
    print(f"panel: {reps} replications per cell")
    print(f"{'case':38} {'tasks':>5} {'trials':>6} {'truth':>7} {'coverage':>8} {'miss lo':>7} {'miss hi':>7} "
          f"{'width':>6} {'oracle':>6} {'paired t':>8}")  # fmt: skip
    for r in rows:
        print(f"{r['case']:38} {r['tasks']:5d} {r['trials']:6d} {r['truth']:+7.3f} {r['coverage']:8.3f} {r['miss_low']:7.3f} {r['miss_high']:7.3f} "
              f"{r['width']:6.3f} {r['oracle_width']:6.3f} {r['paired_t_coverage']:8.3f}")  # fmt: skip
    cov = [float(r["coverage"]) for r in rows]  # type: ignore[arg-type]
    print(f"panel: lowest coverage {min(cov):.3f}, mean {np.mean(cov):.3f} over {len(rows)} cells; largest one-sided "
          f"miss {max(max(float(r['miss_low']), float(r['miss_high'])) for r in rows):.3f} (each side: 0.025)")  # type: ignore[arg-type]  # fmt: skip
    print("unequal trials: half the tasks at 0.5 with 1 trial, half at 0.02 with 10")
    for r in unequal(reps, args.seed + 1):
        print(f"  {r['tasks']:3d} tasks, shift {r['shift']:.1f}: coverage {r['coverage']:.3f}, miss low "
              f"{r['miss_low']:.3f}, miss high {r['miss_high']:.3f}")  # fmt: skip
    for n_tasks, trials in ((8, 1), (10, 3), (40, 4)):
        print("files:", files(file_reps, args.seed + n_tasks, n_tasks, trials))
    print(f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
