"""Does the LLM trainer learn, and does training against a collapsed simulator transfer badly?

Trains the embedded policy (smollm2-135m, P4G persuader, LoRA) with ``run_train`` (method
``single``) against a scripted donor whose response distribution is known
(``collapse_probe/data/scripted/*.json``, see each file's ``description``):

- ``p4g_donor_collapsed_cause.json`` (default training donor): answers ``[DONATE $2]`` with
  probability 0.95 when the persuader mentions the cause (children, kids, help, donate), else
  ``[DONATE $0]`` with probability 0.95 — a collapsed mode that rewards one keyword exploit;
- held-out donors ``p4g_donor_rapport.json`` (ignores the cause words, rewards a greeting or a
  question) and ``p4g_donor_skeptic.json`` (gives *less* when the cause is pitched);
- ``--compare p4g_donor_diverse.json`` additionally trains a second policy, identically seeded,
  against a less collapsed donor (eps about 0.6) whose expected reward does not depend on the keyword.

Prints per step: train reward, keyword rate of the policy's turns (the training donor's exploit
words), the trainer's policy strategy entropy (exact partitioner, nats) and a coarse strategy
entropy over keyword classes, and the held-out reward (mean over held-out donors, also measured
before the first update); then start vs end. ``--json PATH`` writes every number.

    python benchmarks/train_learning.py [--steps 12] [--lr 2e-3] [--compare collapse_probe/data/scripted/p4g_donor_diverse.json]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from collapse_probe.rollout import iter_jsonl
from collapse_probe.trainers import TrainConfig
from collapse_probe.trainers.llm import LLMTrainer, run_train

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = ROOT / "collapse_probe" / "data" / "scripted"
TRAIN_DONOR = SCRIPTED / "p4g_donor_collapsed_cause.json"
HELDOUT_DONORS = (SCRIPTED / "p4g_donor_rapport.json", SCRIPTED / "p4g_donor_skeptic.json")


def keywords_of(path: Path) -> list[str]:
    """The exploit words of a scripted donor (its ``keywords`` key, else its first rule's words)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    words = data.get("keywords") or (data.get("rules") or [{}])[0].get("if_contains") or []
    return [str(w).casefold() for w in words]


def policy_turns(records: Sequence[dict[str, Any]]) -> list[str]:
    """The policy's own messages (arena-injected elicitations excluded)."""
    return [
        str(m["content"])
        for r in records
        for m in r.get("messages", [])
        if m.get("role") == "policy" and not (m.get("meta") or {}).get("elicitation")
    ]


def keyword_rate(texts: Sequence[str], words: Sequence[str]) -> float | None:
    """Share of ``texts`` containing any of ``words`` (case-insensitive substring, as the donor checks)."""
    if not texts:
        return None
    return sum(any(w in t.casefold() for w in words) for t in texts) / len(texts)


def class_entropy(texts: Sequence[str], classes: dict[str, Sequence[str]]) -> float | None:
    """Plug-in entropy (nats) of the messages over keyword classes (first matching class, else ``other``)."""
    if not texts:
        return None
    counts: dict[str, int] = {}
    for t in texts:
        low = t.casefold()
        label = next((name for name, ws in classes.items() if any(w in low for w in ws)), "other")
        counts[label] = counts.get(label, 0) + 1
    n = len(texts)
    return -sum(c / n * math.log(c / n) for c in counts.values())


def train_one(donor: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Train against ``donor`` in ``out`` and return the per-step curve and the start/end summary."""
    config = TrainConfig(
        method="single",
        policy=args.policy,
        sims=[f"scripted:{donor}"],
        heldout=[f"scripted:{p}" for p in HELDOUT_DONORS],
        steps=args.steps,
        group_size=args.group_size,
        tasks=args.tasks,
        max_turns=1,
        max_tokens=args.max_tokens,
        lr=args.lr,
        eval_every=args.eval_every,
        eval_tasks=args.eval_tasks,
        eval_rollouts=args.eval_rollouts,
        collapse_states=2,
        collapse_samples=16,
        save_every=args.steps,
        keep_checkpoints=1,
        cache=False,
        seed=args.seed,
    )
    # Held-out reward before any update: the same evaluation the trainer runs, on the initial adapter.
    t0 = time.perf_counter()
    probe = LLMTrainer(config, out)
    probe.setup()
    heldout0 = probe.evaluate_heldout()
    del probe
    results = run_train(config, out).to_json()
    seconds = time.perf_counter() - t0

    words = keywords_of(TRAIN_DONOR)
    classes = {"cause": words, "rapport": keywords_of(HELDOUT_DONORS[0])}
    by_step: dict[int, list[dict[str, Any]]] = {}
    for r in iter_jsonl(out / "rollouts.jsonl"):
        by_step.setdefault(int(r["step"]), []).append(r)
    curve = []
    for m in sorted(iter_jsonl(out / "metrics.jsonl"), key=lambda r: r["step"]):
        texts = policy_turns(by_step.get(int(m["step"]), []))
        curve.append(
            {
                "step": m["step"],
                "train_reward": m["train_reward"],
                "keyword_rate": keyword_rate(texts, words),
                "rapport_rate": keyword_rate(texts, classes["rapport"]),
                "policy_entropy": m["policy_entropy"],
                "keyword_class_entropy": class_entropy(texts, classes),
                "zero_std_share": m["zero_std_share"],
                "sim_collapse_error": m["sim_collapse_error"],
                "heldout_reward": m.get("heldout_reward"),
                "loss": m["loss"],
                "seconds": m["seconds"],
                "examples": texts[:2],
            }
        )

    def window_mean(rows: Sequence[dict[str, Any]], key: str) -> float | None:
        vals = [r[key] for r in rows if r.get(key) is not None]
        return sum(vals) / len(vals) if vals else None

    k = max(1, min(3, len(curve) // 3))
    evals = [r for r in curve if r["heldout_reward"] is not None]
    summary = {
        f"{key}_{which}": window_mean(rows, key)
        for key in ("train_reward", "keyword_rate", "keyword_class_entropy", "policy_entropy")
        for which, rows in (("start", curve[:k]), ("end", curve[-k:]))
    }
    summary.update(
        heldout_reward_start=heldout0,
        heldout_reward_end=evals[-1]["heldout_reward"] if evals else None,
        window_steps=k,
        seconds=round(seconds, 1),
    )
    return {
        "donor": str(donor.relative_to(ROOT)) if donor.is_relative_to(ROOT) else str(donor),
        "heldout": [str(p.relative_to(ROOT)) for p in HELDOUT_DONORS],
        "keywords": words,
        "heldout_reward_step0": heldout0,
        "curve": curve,
        "summary": summary,
        "final": results["final"],
        "config": config.to_dict(),
    }


def fmt(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else ("-" if v is None else str(v))


def print_run(label: str, run: dict[str, Any]) -> None:
    print(f"\n== {label}: trained against {run['donor']} (held-out: {', '.join(run['heldout'])})")
    print("step  train_R  kw_rate  rapport  H_exact  H_class  heldout_R  eps_sim  secs")
    print(f"{0:>4}  {'':>7}  {'':>7}  {'':>7}  {'':>7}  {'':>7}  {fmt(run['heldout_reward_step0']):>9}")
    for r in run["curve"]:
        print(
            f"{r['step']:>4}  {fmt(r['train_reward']):>7}  {fmt(r['keyword_rate']):>7}  {fmt(r['rapport_rate']):>7}  "
            f"{fmt(r['policy_entropy']):>7}  {fmt(r['keyword_class_entropy']):>7}  {fmt(r['heldout_reward']):>9}  "
            f"{fmt(r['sim_collapse_error']):>7}  {fmt(r['seconds']):>5}"
        )
    s = run["summary"]
    print(f"start vs end (mean of first/last {s['window_steps']} steps; held-out: step 0 vs last evaluation):")
    for key in ("train_reward", "keyword_rate", "keyword_class_entropy", "policy_entropy", "heldout_reward"):
        print(f"  {key:<22} {fmt(s[f'{key}_start']):>7} -> {fmt(s[f'{key}_end']):>7}")
    print("  last policy turns:", " | ".join(repr(t) for t in run["curve"][-1]["examples"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="smollm2")
    ap.add_argument("--donor", type=Path, default=TRAIN_DONOR, help="training donor (scripted JSON)")
    ap.add_argument("--compare", type=Path, default=None, help="also train against this less collapsed donor")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=20)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--eval-every", type=int, default=4)
    ap.add_argument("--eval-tasks", type=int, default=4)
    ap.add_argument("--eval-rollouts", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="keep the run directories here (default: a temp dir)")
    ap.add_argument("--json", type=Path, default=None, help="write every number here")
    args = ap.parse_args()

    root = args.out or Path(tempfile.mkdtemp(prefix="train-learning-"))
    runs = {"collapsed": train_one(args.donor.resolve(), args, root / "collapsed")}
    print_run("collapsed donor", runs["collapsed"])
    if args.compare is not None:
        runs["compare"] = train_one(args.compare.resolve(), args, root / "compare")
        print_run("less collapsed donor", runs["compare"])
        a, b = runs["collapsed"]["summary"], runs["compare"]["summary"]
        print(
            f"\nheld-out reward at the end: collapsed-trained {fmt(a['heldout_reward_end'])} vs "
            f"less-collapsed-trained {fmt(b['heldout_reward_end'])} (both {fmt(a['heldout_reward_start'])} at step 0)"
        )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, **runs}, indent=2))
        print(f"\nwrote {args.json}")
    if args.out is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
