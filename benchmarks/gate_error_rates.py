"""Error rates of the CI gate, and coverage of its intervals, on simulated cross-play runs.

Each simulated run is a cross-play matrix of two policies (``candidate``, ``baseline``) against a
training simulator and ``--heldout`` held-out simulators, ``tasks`` tasks x ``rollouts``
conversations per cell. Tasks differ: task i has a success rate p_i drawn from the panel's task
distribution; on the training simulator both policies score with mean p_i, on the held-out
simulators the candidate scores with mean ``transfer`` * p_i and the baseline with p_i. The true
transfer ratio of the candidate is therefore exactly ``transfer``, and its true held-out drop below
the baseline (1 − transfer) * E[reward]. Rewards per conversation follow the panel:

- ``bernoulli``: 1 with probability p (τ2-bench and CooperBench successes), p_i ~ Beta(2, 2);
- ``p4g``: a P4G-like donation, reward 0 or min(amount / 2, 1) with the amount $0.50, $1 or $2
  (rewards 0, 0.25, 0.5, 1), donating with probability p, p_i ~ Beta(2, 2);
- ``beta``: a continuous reward ~ Beta with mean p and concentration 4, p_i ~ Beta(2, 2);
- ``ceiling``: Bernoulli with p_i ~ Beta(8, 1): most tasks succeed, many cells tie at 1;
- ``low``: Bernoulli with p_i ~ Beta(0.5, 2): a long tail of hard tasks, many cells tie at 0.

Every run goes through the real pipeline: conversation records → :func:`crossplay_results` (cells,
per-cell CIs, transfer ratios) → :func:`evaluate_gate`. Per design the script prints the share of
runs that pass a ``--min-transfer 0.8`` gate at true transfer 0.75 and 1.0, under the default rule
(``interval``) and ``--decision point``, how often the default could not judge at 1.0, and the
coverage of the 95 % intervals of the transfer ratio and of the paired drop (new: MOVER over tasks;
old: the percentile cluster bootstrap they replace), pooled over both truths (the ratio's over the
runs where it is defined: a training reward of 0 leaves no ratio, and the gate cannot judge). ``--cells`` prints
the coverage and width of the per-cell reward CI instead (new: Korn–Graubard over tasks inside the
reward range; old: Student t over conversations). ``--compare`` prints, for the transfer ratio
alone, the coverage and the share of intervals whose lower end lies above the truth (what makes a
gate pass a policy it should not) for the shipped MOVER-R interval and the alternatives it was
chosen over: Fieller (MOVER-R with Student-t arms, no range), a delta-method studentized interval,
scipy's BCa bootstrap over tasks and the percentile bootstrap. ``--at-threshold`` prints the share
of runs that pass and that fail when the true transfer is the threshold itself (0.8), where the
default rule's one-sided 95 % bounds promise at most 5 % each. ``--each`` gates with
``--min-transfer-each 0.8`` alone, for 1, 2 and 4 held-out simulators (``--heldout-list``): the share
of runs whose verdict fails when every simulator's true transfer is exactly 0.8 (the verdict-level
false fail, promised at most 5 %: Bonferroni over the simulators on the fail side) and passes at 0.75
(promised at most 5 %: each must pass) — and its power: the share that passes at 1.0 and 0.9.

Run: ``python benchmarks/gate_error_rates.py [--reps 1000] [--seed 0] [--panel bernoulli ...]
[--tasks 10 20 40] [--rollouts 1 2 4] [--heldout 2] [--cells | --compare | --at-threshold | --each
[--heldout-list 1 2 4]]``. The shipped tables are in
``docs/ci-gate.md`` (with the commands that made them).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from collapse_probe.core._records import ConversationRecord
from collapse_probe.metrics.transfer import cluster_bootstrap_diff, mean_ci, transfer_ratio
from collapse_probe.pipelines.crossplay import CrossplayConfig, crossplay_results
from collapse_probe.pipelines.gate import EXIT_CANNOT_JUDGE, evaluate_gate

REWARD_RANGE = (0.0, 1.0)
THRESHOLD = 0.8
BAD, GOOD = 0.75, 1.0
P4G_REWARDS = np.array([0.25, 0.5, 1.0])  # $0.50, $1, $2 -> min(amount / 2, 1)


@dataclass(frozen=True)
class Panel:
    """How task success rates and per-conversation rewards are drawn."""

    task_a: float
    task_b: float
    rewards: str
    """``bernoulli``, ``p4g`` or ``beta``."""

    @property
    def reward_scale(self) -> float:
        """E[reward] / p: the mean reward of a task with success rate p is p times this."""
        return float(P4G_REWARDS.mean()) if self.rewards == "p4g" else 1.0

    def draw(self, rng: np.random.Generator, mean: np.ndarray, rollouts: int) -> np.ndarray:
        """Rewards [task, rollout] of conversations whose task success rates are ``mean``."""
        shape = (mean.size, rollouts)
        m = np.broadcast_to(mean[:, None], shape)
        if self.rewards == "bernoulli":
            return (rng.random(shape) < m).astype(float)
        if self.rewards == "p4g":
            return (rng.random(shape) < m) * rng.choice(P4G_REWARDS, size=shape)
        mc = np.clip(m, 1e-3, 1 - 1e-3)
        return rng.beta(4 * mc, 4 * (1 - mc))


PANELS: dict[str, Panel] = {
    "bernoulli": Panel(2, 2, "bernoulli"),
    "p4g": Panel(2, 2, "p4g"),
    "beta": Panel(2, 2, "beta"),
    "ceiling": Panel(8, 1, "bernoulli"),
    "low": Panel(0.5, 2, "bernoulli"),
}


def simulate_run(
    rng: np.random.Generator, panel: Panel, tasks: int, rollouts: int, transfer: float, heldout: int = 2
) -> dict:
    """One simulated cross-play ``results.json`` (module docstring)."""
    p = rng.beta(panel.task_a, panel.task_b, size=tasks)
    sims = ["train", *(f"heldout-{j + 1}" for j in range(heldout))]
    means = {
        ("candidate", "train"): p,
        ("baseline", "train"): p,
        **{("candidate", s): transfer * p for s in sims[1:]},
        **{("baseline", s): p for s in sims[1:]},
    }
    records = []
    for (pol, sim), m in means.items():
        rewards = panel.draw(rng, m, rollouts)
        for t in range(tasks):
            for g in range(rollouts):
                r = float(rewards[t, g])
                records.append(ConversationRecord.make(policy=pol, simulator=sim, task_id=f"t{t}", rollout=g,
                                                       reward=r, success=r > 0))  # fmt: skip
    config = CrossplayConfig(
        policies=["candidate", "baseline"], simulators=sims, train_simulator="train", tasks=tasks, rollouts=rollouts
    )
    return crossplay_results(records, config, task_ids=[f"t{t}" for t in range(tasks)], reward_range=REWARD_RANGE)


def _per_task(results: dict, policy: str, sims: Sequence[str]) -> np.ndarray:
    cells = {(c["policy"], c["simulator"]): c for c in results["cells"]}
    return np.array([[np.mean(cells[(policy, s)]["task_rewards"][t]) for t in results["tasks"]] for s in sims]).mean(0)


def design_row(panel: Panel, tasks: int, rollouts: int, reps: int, seed: int, heldout: int) -> dict[str, float]:
    """Pass rates and coverages of one design (module docstring)."""
    rng = np.random.default_rng([seed, tasks, rollouts, heldout, int(panel.task_a * 10), int(panel.task_b * 10)])
    count: dict[str, float] = {
        k: 0 for k in ("bad_default", "bad_point", "good_default", "good_point", "good_undecided",
                       "ratio_new", "ratio_old", "drop_new", "drop_old", "defined")
    }  # fmt: skip
    mean_reward = panel.task_a / (panel.task_a + panel.task_b) * panel.reward_scale
    for transfer, tag in ((BAD, "bad"), (GOOD, "good")):
        true_drop = (1 - transfer) * mean_reward
        for _ in range(reps):
            res = simulate_run(rng, panel, tasks, rollouts, transfer, heldout)
            default = evaluate_gate(res, "candidate", min_transfer=THRESHOLD).exit_code
            point = evaluate_gate(res, "candidate", min_transfer=THRESHOLD, decision="point").exit_code
            count[f"{tag}_default"] += default == 0
            count[f"{tag}_point"] += point == 0
            if tag == "good":
                count["good_undecided"] += default == EXIT_CANNOT_JUDGE
            entry = next(t for t in res["transfer"] if t["policy"] == "candidate")
            ci, lo = entry["ci95"], entry["ci95_lower"]
            defined = entry["transfer_ratio"] is not None  # a training reward of 0: no ratio, the gate cannot judge
            count["defined"] += defined
            count["ratio_new"] += defined and lo is not None and lo <= transfer and (ci is None or transfer <= ci[1])
            reg = evaluate_gate(res, "candidate", baseline_policy="baseline", max_drop=0.05).checks[-1]
            assert reg.name == "regression" and reg.ci95 is not None
            count["drop_new"] += reg.ci95[0] <= true_drop <= reg.ci95[1]  # type: ignore[operator]
            # the intervals these replace, on the same per-task values
            held = _per_task(res, "candidate", res["heldout_simulators"])
            train = _per_task(res, "candidate", ["train"])
            base = _per_task(res, "baseline", res["heldout_simulators"])
            old = transfer_ratio([[v] for v in held], [[v] for v in train], method="percentile", n_boot=1000)
            count["ratio_old"] += defined and old.contains(transfer)
            count["drop_old"] += cluster_bootstrap_diff([[v] for v in base], [[v] for v in held], n_boot=1000).contains(
                true_drop
            )
    out = {k: v / reps for k, v in count.items()}
    for k in ("drop_new", "drop_old"):
        out[k] /= 2  # pooled over both truths
    for k in ("ratio_new", "ratio_old"):
        out[k] = count[k] / max(count["defined"], 1)  # over the runs whose ratio is defined
    return out


def cell_row(panel: Panel, tasks: int, rollouts: int, reps: int, seed: int) -> dict[str, float]:
    """Coverage and mean width of one cell's 95 % reward CI, new (over tasks, in range) and old."""
    rng = np.random.default_rng([seed, tasks, rollouts, 7, int(panel.task_a * 10), int(panel.task_b * 10)])
    truth = panel.task_a / (panel.task_a + panel.task_b) * panel.reward_scale
    if panel.rewards == "beta":  # the Beta mean is clipped to [1e-3, 1 - 1e-3]; the clip moves it < 1e-6
        truth = float(np.clip(rng.beta(panel.task_a, panel.task_b, 400_000), 1e-3, 1 - 1e-3).mean())
    hits = {"new": 0, "old": 0}
    widths: dict[str, list[float]] = {"new": [], "old": []}
    outside = 0
    config = CrossplayConfig(policies=["p"], simulators=["s"], tasks=tasks, rollouts=rollouts)
    for _ in range(reps):
        p = rng.beta(panel.task_a, panel.task_b, size=tasks)
        rewards = panel.draw(rng, p, rollouts)
        records = [ConversationRecord.make(policy="p", simulator="s", task_id=f"t{t}", rollout=g,
                                           reward=float(rewards[t, g]))
                   for t in range(tasks) for g in range(rollouts)]  # fmt: skip
        cell = crossplay_results(records, config, reward_range=REWARD_RANGE)["cells"][0]
        old = mean_ci(rewards.ravel())
        for name, ci in (("new", cell["ci95"]), ("old", [old.lo, old.hi] if old.lo is not None else None)):
            if ci is None:
                continue
            hits[name] += ci[0] <= truth <= ci[1]
            widths[name].append(ci[1] - ci[0])
        outside += old.lo is not None and (old.lo < 0 or old.hi > 1)  # type: ignore[operator]
    return {
        "truth": truth,
        "new_cov": hits["new"] / reps,
        "new_width": float(np.mean(widths["new"])) if widths["new"] else float("nan"),
        "old_cov": hits["old"] / reps,
        "old_width": float(np.mean(widths["old"])) if widths["old"] else float("nan"),
        "old_outside": outside / reps,
    }


def _delta_t(held: np.ndarray, train: np.ndarray, level: float) -> tuple[float, float]:
    """Delta-method studentized interval for mean(held) / mean(train): R ± t · sd(h − R t) / (√n · mean t)."""
    from scipy.stats import t as student_t

    n, r = held.size, held.mean() / train.mean()
    half = student_t.ppf(1 - (1 - level) / 2, n - 1) * (held - r * train).std(ddof=1) / np.sqrt(n) / train.mean()
    return r - half, r + half


def _bca(held: np.ndarray, train: np.ndarray, level: float, seed: int) -> tuple[float, float]:
    from scipy.stats import bootstrap

    def ratio(h: np.ndarray, t: np.ndarray, axis: int = -1) -> np.ndarray:
        den = t.mean(axis=axis)
        return np.where(den > 0, h.mean(axis=axis) / np.where(den > 0, den, 1.0), np.nan)

    with warnings.catch_warnings():  # a degenerate resample gives a NaN interval: counted as a miss, not shown
        warnings.simplefilter("ignore")
        res = bootstrap((held, train), ratio, paired=True, vectorized=True, confidence_level=level,
                        n_resamples=999, method="BCa", random_state=seed)  # fmt: skip
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


RATIO_METHODS: dict[str, Callable[..., tuple[float | None, float | None]]] = {
    # (per-task held-out values, per-task training values, seed, conversations behind each arm)
    "MOVER-R, Korn-Graubard arms (shipped)": lambda h, t, s, u: _est(
        transfer_ratio(h, t, reward_range=REWARD_RANGE, n_units=u)
    ),
    "Fieller (Student-t arms)": lambda h, t, s, u: _est(transfer_ratio(h, t)),
    "delta-method t": lambda h, t, s, u: _delta_t(np.ravel(h), np.ravel(t), 0.95),
    "BCa bootstrap": lambda h, t, s, u: _bca(np.ravel(h), np.ravel(t), 0.95, s),
    "percentile bootstrap (before)": lambda h, t, s, u: _est(
        transfer_ratio(h, t, method="percentile", n_boot=999, seed=s)
    ),
}


def _est(e: object) -> tuple[float | None, float | None]:
    return e.lo, e.hi  # type: ignore[attr-defined]


def _compare_table(panels: Sequence[str], args: argparse.Namespace) -> None:
    print(f"transfer ratio, 95% intervals; {args.reps} runs per design and truth (0.75 and 1.0), "
          f"{args.heldout} held-out simulators, seed {args.seed}: coverage / share with the lower end above the "
          "truth (target: >= 0.95 / <= 0.025)")  # fmt: skip
    for name in panels:
        print(f"\n### panel `{name}`\n")
        print("| tasks x rollouts | " + " | ".join(RATIO_METHODS) + " |")
        print("|---|" + "---:|" * len(RATIO_METHODS))
        for n in args.tasks:
            for g in args.rollouts:
                rng = np.random.default_rng([args.seed, n, g, 11])
                cover = dict.fromkeys(RATIO_METHODS, 0)
                high = dict.fromkeys(RATIO_METHODS, 0)
                runs = 0
                for transfer in (BAD, GOOD):
                    for rep in range(args.reps):
                        res = simulate_run(rng, PANELS[name], n, g, transfer, args.heldout)
                        held = _per_task(res, "candidate", res["heldout_simulators"])
                        train = _per_task(res, "candidate", ["train"])
                        if train.mean() == 0:
                            continue
                        runs += 1
                        units = (n * g * args.heldout, n * g)
                        for m, fn in RATIO_METHODS.items():
                            lo, hi = fn([[v] for v in held], [[v] for v in train], rep, units)
                            lo_ok = lo is None or not np.isfinite(lo) or lo <= transfer
                            cover[m] += bool(lo_ok and (hi is None or transfer <= hi))
                            high[m] += not lo_ok
                cells = [f"{cover[m] / runs:.3f} / {high[m] / runs:.3f}" for m in RATIO_METHODS]
                print(f"| {n} x {g} | " + " | ".join(cells) + " |", flush=True)


def _threshold_table(panels: Sequence[str], args: argparse.Namespace) -> None:
    print(f"true transfer = the threshold {THRESHOLD}; {args.reps} runs per design, {args.heldout} held-out "
          f"simulators, seed {args.seed}: share of runs that pass / fail (default rule: at most 0.05 each)")  # fmt: skip
    for name in panels:
        print(f"\n### panel `{name}`\n")
        print("| tasks x rollouts | default: pass | default: fail | point: pass | strict: pass |")
        print("|---|---:|---:|---:|---:|")
        for n in args.tasks:
            for g in args.rollouts:
                rng = np.random.default_rng([args.seed, n, g, 13])
                got = {"pass": 0, "fail": 0, "point": 0, "strict": 0}
                for _ in range(args.reps):
                    res = simulate_run(rng, PANELS[name], n, g, THRESHOLD, args.heldout)
                    code = evaluate_gate(res, "candidate", min_transfer=THRESHOLD).exit_code
                    got["pass"] += code == 0
                    got["fail"] += code == 1
                    got["point"] += (
                        evaluate_gate(res, "candidate", min_transfer=THRESHOLD, decision="point").exit_code == 0
                    )
                    got["strict"] += evaluate_gate(res, "candidate", min_transfer=THRESHOLD, strict=True).exit_code == 0
                cells = " | ".join(f"{got[k] / args.reps:.3f}" for k in ("pass", "fail", "point", "strict"))
                print(f"| {n} x {g} | {cells} |", flush=True)


def _each_table(panels: Sequence[str], args: argparse.Namespace) -> None:
    print(f"gate --min-transfer-each {THRESHOLD} (alone); {args.reps} runs per design, truth and number of held-out "
          f"simulators, seed {args.seed}: false fail = verdict fails at true transfer {THRESHOLD} on every simulator "
          "(stated: at most 0.05); false pass = passes at 0.75 (stated: at most 0.05); power = passes at 1.0 / 0.9")  # fmt: skip
    from scipy.stats import beta

    for name in panels:
        print(f"\n### panel `{name}`\n")
        print("| held-out simulators | tasks x rollouts | false fail at 0.8 [95% CP] | false pass at 0.75 | "
              "pass at 1.0 | pass at 0.9 |")  # fmt: skip
        print("|---:|---|---:|---:|---:|---:|")
        for k in args.heldout_list:
            for n in args.tasks:
                for g in args.rollouts:
                    rng = np.random.default_rng([args.seed, n, g, k, 17])
                    got = {}
                    for truth, want in ((THRESHOLD, 1), (BAD, 0), (GOOD, 0), (0.9, 0)):
                        hits = 0
                        for _ in range(args.reps):
                            res = simulate_run(rng, PANELS[name], n, g, truth, k)
                            hits += evaluate_gate(res, "candidate", min_transfer_each=THRESHOLD).exit_code == want
                        got[truth] = hits
                    f = got[THRESHOLD]
                    lo = 0.0 if f == 0 else float(beta.ppf(0.025, f, args.reps - f + 1))
                    hi = 1.0 if f == args.reps else float(beta.ppf(0.975, f + 1, args.reps - f))
                    print(f"| {k} | {n} x {g} | {f / args.reps:.3f} [{lo:.3f}, {hi:.3f}] | {got[BAD] / args.reps:.3f} | "
                          f"{got[GOOD] / args.reps:.3f} | {got[0.9] / args.reps:.3f} |", flush=True)  # fmt: skip


def _gate_table(panels: Sequence[str], args: argparse.Namespace) -> None:
    print(f"gate --min-transfer {THRESHOLD}; {args.reps} runs per design and truth, {args.heldout} held-out simulators, "
          f"seed {args.seed}; 95% interval coverage pooled over both truths (target >= 0.93)")  # fmt: skip
    for name in panels:
        print(f"\n### panel `{name}`\n")
        print("| tasks x rollouts | pass at 0.75: default | pass at 0.75: point | pass at 1.0: default | "
              "pass at 1.0: point | could not judge at 1.0 | ratio CI coverage: new / old | "
              "drop CI coverage: new / old |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for n in args.tasks:
            for g in args.rollouts:
                r = design_row(PANELS[name], n, g, args.reps, args.seed, args.heldout)
                print(f"| {n} x {g} | {r['bad_default']:.3f} | {r['bad_point']:.3f} | {r['good_default']:.3f} | "
                      f"{r['good_point']:.3f} | {r['good_undecided']:.3f} | {r['ratio_new']:.3f} / {r['ratio_old']:.3f} | "
                      f"{r['drop_new']:.3f} / {r['drop_old']:.3f} |", flush=True)  # fmt: skip


def _cell_table(panels: Sequence[str], args: argparse.Namespace) -> None:
    print(f"per-cell mean reward, 95% CI; {args.reps} cells per row, seed {args.seed}; "
          "new: Korn-Graubard over tasks in [0, 1]; old: Student t over conversations")  # fmt: skip
    print(
        "\n| panel | tasks x rollouts | truth | new coverage | new width | old coverage | old width | old CI leaves [0, 1] |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in panels:
        for n in args.tasks:
            for g in args.rollouts:
                r = cell_row(PANELS[name], n, g, args.reps, args.seed)
                print(f"| {name} | {n} x {g} | {r['truth']:.3f} | {r['new_cov']:.3f} | {r['new_width']:.3f} | "
                      f"{r['old_cov']:.3f} | {r['old_width']:.3f} | {r['old_outside']:.3f} |", flush=True)  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000, help="simulated runs per design and truth (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--panel", nargs="+", choices=sorted(PANELS), help="panels (default bernoulli)")
    ap.add_argument("--tasks", type=int, nargs="+", default=[10, 20, 40])
    ap.add_argument("--rollouts", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--heldout", type=int, default=2, help="held-out simulators (default 2)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--cells", action="store_true", help="per-cell reward CI coverage instead of the gate table")
    mode.add_argument("--compare", action="store_true", help="transfer-ratio intervals compared, instead of the gate")
    mode.add_argument("--at-threshold", action="store_true", help="pass and fail rates at true transfer = 0.8")
    mode.add_argument("--each", action="store_true", help="--min-transfer-each: verdict-level errors and power")
    ap.add_argument("--heldout-list", type=int, nargs="+", default=[1, 2, 4], help="held-out simulators for --each")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    table: Callable[[Sequence[str], argparse.Namespace], None] = (
        _cell_table
        if args.cells
        else _compare_table
        if args.compare
        else _threshold_table
        if args.at_threshold
        else _each_table
        if args.each
        else _gate_table
    )
    table(args.panel or (list(PANELS) if args.cells else ["bernoulli"]), args)
    print(f"\n{time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
