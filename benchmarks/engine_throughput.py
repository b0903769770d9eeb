"""Batched engine vs a sequential one-conversation-at-a-time loop, on the same local model.

Runs the same P4G conversations (same tasks, seeds, turns and token budget) three ways and prints
replies per second of each, measured in this one run:

1. ``sequential`` — the loop peers use: one conversation at a time, one model call per turn;
2. ``engine`` — the batched engine: every live conversation advances one turn per step and all
   requests for the model go in one batched call;
3. ``raw`` — the model's raw batched generation limit: the engine's own turn requests replayed as
   plain batched ``generate`` calls with no engine around them.

Targets: engine / sequential >= 8, engine / raw >= 0.8. No response cache is used.

    python benchmarks/engine_throughput.py [--conversations 32] [--max-turns 1] [--model smollm2]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from collapse_probe.benchmarks.p4g import P4GArena
from collapse_probe.models import get_model
from collapse_probe.rollout import EngineConfig, make_specs, run_conversations
from collapse_probe.rollout._engine import _Live, _request
from collapse_probe.simulators import Participant


async def sequential(arena, specs, participant, config):
    """One conversation at a time, one call per turn: the baseline loop."""
    replies = 0
    for spec in specs:
        conv = _Live(spec, arena.new_episode(spec.task, spec.seed), random.Random(spec.seed))
        while (side := arena.next_side(conv.episode)) is not None:
            prompt = arena.prompt_for(conv.episode, side)
            [res] = await participant.model.generate([_request(prompt, conv, side, config)])
            arena.apply(conv.episode, side, res.completions[0], res.completions[0].text)
            replies += 1
    return replies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=32)
    ap.add_argument("--max-turns", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--model", default="smollm2")
    args = ap.parse_args()

    model = get_model(args.model)
    participant = Participant(args.model, model)
    parts = {args.model: participant}
    arena = P4GArena(max_turns=args.max_turns, max_tokens=args.max_tokens)
    specs = make_specs(arena.load_tasks(args.conversations), [args.model], [args.model], 1, seed=0)
    config = EngineConfig(progress=False)

    # warm-up (model load, first-call allocation) outside the timings
    asyncio.run(run_conversations(arena, specs[:2], parts, config=config))

    by_step: dict[int, list] = {}

    def record(ev):  # the engine issues every conversation's turn k in the same step
        by_step.setdefault(ev.turn_index, []).append(ev.request)

    t0 = time.perf_counter()
    records = asyncio.run(run_conversations(arena, specs, parts, config=config, on_turn=record))
    t_engine = time.perf_counter() - t0
    n_engine = sum(
        len(r["messages"]) - sum(1 for m in r["messages"] if m.get("meta", {}).get("elicitation")) for r in records
    )

    # the same requests, grouped as the engine grouped them (one call per step)
    t0 = time.perf_counter()
    n_raw = 0
    for batch in by_step.values():
        res = asyncio.run(model.generate(batch))
        n_raw += len(res)
    t_raw = time.perf_counter() - t0

    t0 = time.perf_counter()
    n_seq = asyncio.run(sequential(arena, specs, participant, config))
    t_seq = time.perf_counter() - t0

    eng, raw, seq = n_engine / t_engine, n_raw / t_raw, n_seq / t_seq
    print(f"model {args.model}, {len(specs)} conversations, max_turns {args.max_turns}, max_tokens {args.max_tokens}")
    print(f"sequential loop : {n_seq:4d} replies in {t_seq:7.1f} s = {seq:6.2f} replies/s")
    print(f"batched engine  : {n_engine:4d} replies in {t_engine:7.1f} s = {eng:6.2f} replies/s")
    print(f"raw batched gen : {n_raw:4d} replies in {t_raw:7.1f} s = {raw:6.2f} replies/s")
    print(f"engine / sequential = {eng / seq:.1f}x (target >= 8)")
    print(f"engine / raw        = {eng / raw:.2f} (target >= 0.8)")


if __name__ == "__main__":
    main()
