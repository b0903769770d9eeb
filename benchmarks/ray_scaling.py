"""Throughput of one model served by 1 vs 2 (or more) Ray replica actors, on a local cluster.

Sends the same batch of single-turn requests (``--prompts`` prompts x ``--n`` samples, seeded) to the
embedded model three ways and prints wall time, samples/s and the ratio to one replica:

1. ``in-process`` — the backend in this process, no Ray (reference; uses this process's torch threads);
2. ``ray xK`` — :class:`collapse_probe.models.ray_replicas.RayReplicaModel` with K replicas, each an
   actor with ``--cpus-per-replica`` CPUs (torch threads) on an in-process cluster of ``--num-cpus``.

Every replica loads its model and decodes one warm-up batch before timing. The texts of every way are
compared with the in-process ones (they must be identical: the split is exact), so the speed-up is
not bought with different samples.

    python benchmarks/ray_scaling.py [--model smollm2] [--prompts 16] [--n 4] [--max-tokens 32]
            [--replicas 1,2] [--num-cpus 2] [--repeats 2] [--json FILE]

``--driver`` measures instead what the driver itself can push, with a scripted model whose replies
cost nothing: the engine's turns/s on a large P4G cross-play without Ray (its ceiling: conversations,
prompts, scoring and the run directory, all in the one driver process), and the per-sample cost Ray
adds (split, serialise, ship, return) on a batch of ``--driver-batch`` requests through 2 replicas.

    python benchmarks/ray_scaling.py --driver [--driver-batch 4096] [--driver-conversations 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

from collapse_probe.models import GenerationRequest, SamplingParams, get_model


def make_batch(prompts: int, n: int, max_tokens: int) -> list[GenerationRequest]:
    return [
        GenerationRequest(
            messages=({"role": "user", "content": f"Tell me one short fact about the number {i}."},),
            n=n,
            params=SamplingParams(temperature=1.0, max_tokens=max_tokens, seed=1000 + i),
        )
        for i in range(prompts)
    ]


def timed(model, batch, repeats: int) -> tuple[float, list[list[str]]]:
    best = float("inf")
    texts: list[list[str]] = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        results = asyncio.run(model.generate(batch))
        best = min(best, time.perf_counter() - t0)
        bad = [r.error for r in results if not r.ok]
        if bad:
            sys.exit(f"generation failed: {bad[0]}")
        texts = [[c.text for c in r.completions] for r in results]
    return best, texts


def driver_overhead(args) -> None:
    import tempfile
    from pathlib import Path

    import ray

    from collapse_probe.models.ray_replicas import ray_replicas, start_ray
    from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay

    tmp = Path(tempfile.mkdtemp(prefix="ray-scaling-"))
    replies = [{"text": f"reply {i} [DONATE ${i % 3}]", "p": 0.125} for i in range(8)]
    (tmp / "m.json").write_text(json.dumps({"responses": replies}))
    spec = f"scripted:{tmp / 'm.json'}"

    # 1. the engine's own ceiling: a cross-play of free replies, no Ray; with and without the run
    #    directory (each finished conversation is appended and fsynced), imports done beforehand
    import collapse_probe.metrics  # noqa: F401 - scipy's import is a one-off cost, not the engine's

    tasks = max(1, args.driver_conversations // 10)
    config = CrossplayConfig(policies=[spec], simulators=[spec], tasks=tasks, rollouts=10, max_turns=3)
    ceiling = {}
    for label, out in (("without run directory", None), ("with run directory", tmp / "run")):
        t0 = time.perf_counter()
        res = run_crossplay(config, out=out, progress=False, cache=False, report=False)
        secs = time.perf_counter() - t0
        n_conv = sum(c["n"] for c in res["cells"])
        turns = n_conv * 2 * 3
        ceiling[label] = turns / secs
        print(f"engine ceiling {label} (no Ray, free replies): {n_conv} conversations, {turns} turns in "
              f"{secs:.2f} s = {turns / secs:.0f} turns/s, {n_conv / secs:.0f} conversations/s")  # fmt: skip

    # 2. what Ray adds per sample
    batch = [
        GenerationRequest(
            messages=({"role": "user", "content": f"prompt {i} " + "x" * 400},),
            n=1,
            params=SamplingParams(seed=i, max_tokens=64),
        )  # fmt: skip
        for i in range(args.driver_batch)
    ]
    plain = get_model(spec)
    t_plain, ref = timed(plain, batch, args.repeats)
    start_ray(ray, "local", args.num_cpus)
    try:
        with ray_replicas("local", replicas=2):
            model = get_model(spec)
            asyncio.run(model.generate(batch[:8]))
            t_ray, texts = timed(model, batch, args.repeats)
    finally:
        ray.shutdown()
    per = (t_ray - t_plain) / len(batch) * 1e6
    print(f"{len(batch)} requests of ~420 characters: in-process {t_plain:.3f} s, 2 Ray replicas {t_ray:.3f} s; "
          f"Ray adds {per:.0f} us per request ({len(batch) / t_ray:.0f} requests/s through the driver); "
          f"same texts: {texts == ref}")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"engine_turns_per_s": ceiling, "ray_us_per_request": per,
                       "ray_requests_per_s": len(batch) / t_ray}, f, indent=2)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--n", type=int, default=4, help="samples per prompt")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--replicas", default="1,2", help="replica counts to time, comma-separated")
    ap.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local cluster")
    ap.add_argument("--cpus-per-replica", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=2, help="timed repetitions; the best is reported")
    ap.add_argument("--skip-in-process", action="store_true", help="skip the no-Ray reference")
    ap.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    ap.add_argument("--driver", action="store_true", help="measure the driver's ceiling and Ray's per-request cost")
    ap.add_argument("--driver-batch", type=int, default=4096)
    ap.add_argument("--driver-conversations", type=int, default=2000)
    args = ap.parse_args()
    if args.driver:
        driver_overhead(args)
        return

    import ray

    from collapse_probe.models.ray_replicas import ray_replicas, start_ray

    batch = make_batch(args.prompts, args.n, args.max_tokens)
    warm = make_batch(2, 2, 8)
    samples = args.prompts * args.n
    rows: list[dict] = []
    reference: list[list[str]] | None = None

    if not args.skip_in_process:
        model = get_model(args.model)
        asyncio.run(model.generate(warm))
        secs, reference = timed(model, batch, args.repeats)
        rows.append({"way": "in-process", "replicas": 0, "seconds": secs})

    start_ray(ray, "local", args.num_cpus)
    try:
        for k in [int(x) for x in args.replicas.split(",") if x.strip()]:
            with ray_replicas("local", replicas=k) as session:
                model = get_model(args.model, replica_cpus=args.cpus_per_replica)
                asyncio.run(model.generate(make_batch(2 * k, 2, 8)))  # every replica decodes once
                secs, texts = timed(model, batch, args.repeats)
                spread = list(session.models[model.spec].stats_.samples_per_replica)
            if reference is None:
                reference = texts
            rows.append({"way": f"ray x{k}", "replicas": k, "seconds": secs, "same_texts": texts == reference,
                         "samples_per_replica": spread})  # fmt: skip
    finally:
        ray.shutdown()

    base = next((r["seconds"] for r in rows if r["replicas"] == 1), None)
    print(f"{args.model}: {args.prompts} prompts x {args.n} samples, max {args.max_tokens} tokens; "
          f"local cluster of {args.num_cpus} CPUs, {args.cpus_per_replica:g} CPU per replica; "
          f"os.cpu_count()={os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'way':<12}{'seconds':>10}{'samples/s':>12}{'vs 1 replica':>14}  same texts")
    for r in rows:
        ratio = f"{base / r['seconds']:.2f}x" if base else "-"
        same = "" if r["replicas"] == 0 else str(r["same_texts"])
        print(f"{r['way']:<12}{r['seconds']:>10.2f}{samples / r['seconds']:>12.1f}{ratio:>14}  {same}")
        r["samples_per_s"] = samples / r["seconds"]
    if base:
        for r in rows:
            if r["replicas"] > 1:
                print(f"speed-up of {r['replicas']} replicas over 1: {base / r['seconds']:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
