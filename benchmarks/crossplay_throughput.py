"""Cross-play matrix in one batched engine run vs its cells run one after another.

Runs the same policy x simulator matrix (same tasks, rollout seeds, turns and token budget) two ways
and prints both wall times and their ratio:

1. ``batched`` — :func:`collapse_probe.pipelines.crossplay.run_crossplay`: ONE engine run; at every turn all
   pending requests for the same model, whatever the cell, go to that model in one batch;
2. ``per-cell`` — one engine run per cell, the cells one after another (what a loop over
   ``collapse-probe play`` does).

The response cache is disabled (``--no-cache`` semantics), models are loaded and warmed up before
timing, and the mean rewards of both ways are printed side by side (each sample's randomness comes
from its own seed, so the two ways agree up to float rounding in batched decoding).

    python benchmarks/crossplay_throughput.py [--tasks 4] [--rollouts 2] [--max-turns 2] [--max-tokens 32]
            [--policies smollm2,gemma3-270m] [--sims smollm2,vs:smollm2,gemma3-270m] [--vs-k 5] [--device cpu]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from collapse_probe.benchmarks.p4g import P4GArena
from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay
from collapse_probe.rollout import EngineConfig, make_specs, run_conversations
from collapse_probe.simulators import make_participant


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", default="smollm2,gemma3-270m")
    ap.add_argument("--sims", default="smollm2,vs:smollm2,gemma3-270m")
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--rollouts", type=int, default=2)
    ap.add_argument("--max-turns", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--vs-k", type=int, default=5, help="candidates per Verbalized-Sampling turn (default 5)")
    ap.add_argument("--device", default=None, help="device of the local models (default: the backend's, cpu)")
    ap.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    args = ap.parse_args()

    policies = [s.strip() for s in args.policies.split(",") if s.strip()]
    sims = [s.strip() for s in args.sims.split(",") if s.strip()]
    options = {"device": args.device} if args.device else {}
    participants = {
        s: make_participant(s, cache=False, vs_k=args.vs_k, **options) for s in dict.fromkeys(policies + sims)
    }
    arena = P4GArena(max_turns=args.max_turns, max_tokens=args.max_tokens)
    base = dict(tasks=args.tasks, rollouts=args.rollouts, max_turns=args.max_turns, seed=0)

    # warm-up: load every model and run one short conversation per participant, outside the timings
    tasks = arena.load_tasks(1, seed=1)
    warm = make_specs(tasks, policies[:1], sims, 1, seed=1)
    asyncio.run(run_conversations(P4GArena(max_turns=1, max_tokens=8), warm, participants,
                                  config=EngineConfig(progress=False)))  # fmt: skip

    print("warm-up done; timing the batched matrix", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    batched = run_crossplay(CrossplayConfig(policies=policies, simulators=sims, **base), arena=arena,
                            participants=participants, progress=False)  # fmt: skip
    t_batched = time.perf_counter() - t0
    print(f"batched: {t_batched:.1f} s; timing the cells one after another", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    per_cell: dict[tuple[str, str], float | None] = {}
    for p in policies:
        for s in sims:
            res = run_crossplay(CrossplayConfig(policies=[p], simulators=[s], **base), arena=arena,
                                participants=participants, progress=False)  # fmt: skip
            per_cell[(p, s)] = res["cells"][0]["mean_reward"]
    t_seq = time.perf_counter() - t0

    n_conv = len(policies) * len(sims) * args.tasks * args.rollouts
    print(f"{len(policies)} policies x {len(sims)} simulators, {args.tasks} tasks x {args.rollouts} rollouts "
          f"= {n_conv} conversations, max_turns {args.max_turns}, max_tokens {args.max_tokens}, no cache")  # fmt: skip
    print(f"{'cell':<40} {'batched':>8} {'per-cell':>9}")
    for c in batched["cells"]:
        seq = per_cell[(c["policy"], c["simulator"])]
        print(f"{c['policy'] + ' vs ' + c['simulator']:<40} {_f(c['mean_reward']):>8} {_f(seq):>9}")
    print(f"batched matrix (one engine run): {t_batched:8.1f} s  ({n_conv / t_batched:.2f} conversations/s)")
    print(f"cells one after another:         {t_seq:8.1f} s  ({n_conv / t_seq:.2f} conversations/s)")
    print(f"speed-up (per-cell / batched):   {t_seq / t_batched:8.2f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"policies": policies, "simulators": sims, **base, "max_tokens": args.max_tokens,
                       "device": args.device or "default", "conversations": n_conv, "batched_s": t_batched,
                       "per_cell_s": t_seq, "speedup": t_seq / t_batched}, f, indent=2)  # fmt: skip


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


if __name__ == "__main__":
    main()
