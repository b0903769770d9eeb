"""Embedded-model decoding: one batched call vs the same requests one at a time.

Generates the same ``--prompts`` seeded requests (``--max-tokens`` new tokens each) two ways with the
local torch backend and prints the generated tokens per second of both and their ratio:

1. ``batched`` — one ``generate`` call with every request, decoded as one micro-batch of up to
   ``--batch`` rows (one forward pass per decoding step for all rows);
2. ``sequential`` — one ``generate`` call per request (batch 1).

Each sample's randomness comes from its own seed, so both ways must produce the same texts; the
script checks it and prints how many sampling decisions were recomputed canonically (near-ties).

    python benchmarks/local_generation.py [--model local/smollm2-135m] [--prompts 32] [--max-tokens 48]
            [--batch 32] [--temperature 1.0] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

from collapse_probe.models import GenerationRequest, SamplingParams
from collapse_probe.models.local import make_hf_model, make_local_model

TOPICS = [
    "why you would or would not donate to a children's charity",
    "your favourite season",
    "how to bake bread",
    "the last book you read",
    "a rainy day in the city",
    "what makes a good teacher",
    "your morning routine",
    "a trip to the mountains",
    "how trains changed the world",
    "the best way to learn a language",
    "a memorable meal",
    "why people keep pets",
    "the ocean at night",
    "your first job",
    "how to save money",
    "a football match you watched",
]


def build_requests(n: int, max_tokens: int, temperature: float) -> list[GenerationRequest]:
    """``n`` transcript-style requests of varied length (so batching has to pad)."""
    requests = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        context = " ".join(["Please keep it natural."] * (i % 4))
        prompt = f"System: You are a friendly person in a chat. {context}\nUser: Tell me about {topic}.\nAssistant:"
        params = SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=1000 + i, stop=("\nUser:",))
        requests.append(GenerationRequest(({"role": "user", "content": prompt},), prompt=prompt, params=params))
    return requests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local/smollm2-135m", help="local/<name> or hf/<dir>")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--batch", type=int, default=32, help="max rows per micro-batch in the batched run")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--device", default=None)
    ap.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    args = ap.parse_args()

    prefix, name = args.model.split("/", 1)
    factory = {"local": make_local_model, "hf": make_hf_model}.get(prefix)
    if factory is None:
        sys.exit(f"--model must be local/<name> or hf/<dir>, got {args.model!r}")
    options = {"max_batch": args.batch}
    if args.device:
        options["device"] = args.device
    model = factory(args.model, name, **options)
    requests = build_requests(args.prompts, args.max_tokens, args.temperature)

    asyncio.run(model.generate(build_requests(2, 4, args.temperature)))  # warm-up, outside the timings

    t0 = time.perf_counter()
    batched = asyncio.run(model.generate(requests))
    batched_s = time.perf_counter() - t0
    recomputes_batched = model.canonical_recomputes_

    t0 = time.perf_counter()
    sequential = [asyncio.run(model.generate([r]))[0] for r in requests]
    sequential_s = time.perf_counter() - t0

    for res in batched + sequential:
        if not res.ok:
            sys.exit(f"generation failed: {res.error}")
    tokens_b = sum(c.n_tokens or 0 for r in batched for c in r.completions)
    tokens_s = sum(c.n_tokens or 0 for r in sequential for c in r.completions)
    same = sum(a.completions[0].text == b.completions[0].text for a, b in zip(batched, sequential, strict=True))
    numbers = {
        "model": args.model,
        "prompts": args.prompts,
        "max_tokens": args.max_tokens,
        "batch": args.batch,
        "torch_threads": __import__("torch").get_num_threads(),
        "load_average_1m": os.getloadavg()[0],
        "batched_tokens": tokens_b,
        "batched_seconds": round(batched_s, 2),
        "batched_tokens_per_s": round(tokens_b / batched_s, 1),
        "sequential_tokens": tokens_s,
        "sequential_seconds": round(sequential_s, 2),
        "sequential_tokens_per_s": round(tokens_s / sequential_s, 1),
        "speedup": round((tokens_b / batched_s) / (tokens_s / sequential_s), 2),
        "identical_texts": f"{same}/{len(requests)}",
        "canonical_recomputes": model.canonical_recomputes_,
        "canonical_recomputes_batched": recomputes_batched,
    }
    print(f"model {args.model}: {args.prompts} prompts x {args.max_tokens} max tokens, "
          f"{numbers['torch_threads']} torch threads, load average {numbers['load_average_1m']:.1f}")  # fmt: skip
    print(
        f"  batched (batch {args.batch}):  {tokens_b:5d} tokens in {batched_s:7.2f} s = {numbers['batched_tokens_per_s']:8.1f} tok/s"
    )
    print(
        f"  sequential (batch 1): {tokens_s:5d} tokens in {sequential_s:7.2f} s = {numbers['sequential_tokens_per_s']:8.1f} tok/s"
    )
    print(f"  ratio batched/sequential: {numbers['speedup']:.2f}x")
    print(
        f"  identical texts both ways: {numbers['identical_texts']}; near-tie recomputes: {numbers['canonical_recomputes']}"
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(numbers, f, indent=2)


if __name__ == "__main__":
    main()
