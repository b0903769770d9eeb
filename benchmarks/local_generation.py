"""Embedded-model decoding: one batched call, the same requests one at a time, and llama.cpp.

Generates the same ``--prompts`` seeded requests (``--max-tokens`` new tokens each) with the local
torch backend two ways, and with llama.cpp on the same GGUF, and prints the generated tokens per
second of each and their ratios, all measured in one run:

1. ``batched`` -- one ``generate`` call with every request, decoded as one micro-batch of up to
   ``--batch`` rows (one forward pass per decoding step for all rows);
2. ``sequential`` -- one ``generate`` call per request (batch 1);
3. ``llama.cpp`` -- ``llama-cpp-python`` (when installed) on the embedded model's own GGUF, one
   request at a time, with the same number of threads, temperature, stop string and token budget
   (top-k, min-p and the repetition penalty off, so it samples the plain softmax as we do).

Each sample's randomness comes from its own seed, so in float32 ways 1 and 2 must produce the same
texts (in int8 and bfloat16 batching moves a row's numbers enough to change some; see
``collapse_probe/models/local/_int8.py``); the script counts them and prints how many sampling decisions
were recomputed canonically (near-ties).
The load average is printed beside the numbers: the ratios are measured in the same run, the
absolute rates depend on what else the machine runs.

    python benchmarks/local_generation.py [--model local/smollm2-135m] [--prompts 32] [--max-tokens 48]
            [--batch 32] [--temperature 1.0] [--dtypes float32,int8,bfloat16] [--no-llama-cpp] [--json out.json]

Every dtype of ``--dtypes`` is timed both ways in the same run, and the ratios against the first
(float32) and against llama.cpp are printed beside them; the model's CPU default is marked
(SmolLM2: int8). A Llama model (SmolLM2) decodes through the lean step of
``collapse_probe/models/local/_llama_step.py``, one row at a time and batched.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from collapse_probe.models import GenerationRequest, SamplingParams
from collapse_probe.models.local import LOCAL_MODELS, make_hf_model, make_local_model
from collapse_probe.models.local._int8 import weights_name

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
STOP = ("\nUser:",)


def build_requests(n: int, max_tokens: int, temperature: float) -> list[GenerationRequest]:
    """``n`` transcript-style requests of varied length (so batching has to pad)."""
    requests = []
    for i in range(n):
        topic = TOPICS[i % len(TOPICS)]
        context = " ".join(["Please keep it natural."] * (i % 4))
        prompt = f"System: You are a friendly person in a chat. {context}\nUser: Tell me about {topic}.\nAssistant:"
        params = SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=1000 + i, stop=STOP)
        requests.append(GenerationRequest(({"role": "user", "content": prompt},), prompt=prompt, params=params))
    return requests


def time_llama_cpp(gguf: Path, requests: list[GenerationRequest], threads: int) -> dict[str, Any]:
    """llama.cpp on ``gguf``, one request at a time (after one warm-up request)."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(gguf), n_ctx=1024, n_threads=threads, n_threads_batch=threads, verbose=False)

    def run(r: GenerationRequest, max_tokens: int) -> int:
        out = llm.create_completion(
            r.prompt or "",
            max_tokens=max_tokens,
            temperature=r.params.temperature,
            top_p=r.params.top_p,
            top_k=0,
            min_p=0.0,
            repeat_penalty=1.0,
            stop=list(r.params.stop),
            seed=r.params.seed,
        )
        return int(out["usage"]["completion_tokens"])

    run(requests[0], 4)  # warm-up, outside the timing
    t0 = time.perf_counter()
    tokens = sum(run(r, r.params.max_tokens) for r in requests)
    seconds = time.perf_counter() - t0
    return {"tokens": tokens, "seconds": round(seconds, 2), "tokens_per_s": round(tokens / seconds, 1)}


def time_dtype(factory: Any, spec: str, name: str, options: dict[str, Any], requests: list[GenerationRequest],
               temperature: float) -> dict[str, Any]:  # fmt: skip
    """Both ways (one batched call, then one call per request) for one model configuration."""
    model = factory(spec, name, **options)
    asyncio.run(model.generate(build_requests(2, 4, temperature)))  # warm-up, outside the timings
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
    rate_b, rate_s = tokens_b / batched_s, tokens_s / sequential_s
    return {
        "dtype": weights_name(model.model),
        "batched_tokens": tokens_b,
        "batched_seconds": round(batched_s, 2),
        "batched_tokens_per_s": round(rate_b, 1),
        "sequential_tokens": tokens_s,
        "sequential_seconds": round(sequential_s, 2),
        "sequential_tokens_per_s": round(rate_s, 1),
        "speedup": round(rate_b / rate_s, 2),
        "identical_texts": f"{same}/{len(requests)}",
        "canonical_recomputes": model.canonical_recomputes_,
        "canonical_recomputes_batched": recomputes_batched,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local/smollm2-135m", help="local/<name> or hf/<dir>")
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--batch", type=int, default=32, help="max rows per micro-batch in the batched run")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--device", default=None)
    ap.add_argument("--dtypes", default="float32,int8,bfloat16",
                    help="weights to time, each both ways, in this run (float32, int8, bfloat16, float16)")  # fmt: skip
    ap.add_argument("--no-llama-cpp", action="store_true", help="skip the llama.cpp timing")
    ap.add_argument("--json", default=None, help="also write the numbers to this JSON file")
    args = ap.parse_args()

    prefix, name = args.model.split("/", 1)
    factory = {"local": make_local_model, "hf": make_hf_model}.get(prefix)
    if factory is None:
        sys.exit(f"--model must be local/<name> or hf/<dir>, got {args.model!r}")
    if not args.no_llama_cpp and prefix == "local" and importlib.util.find_spec("llama_cpp") is not None:
        import llama_cpp  # noqa: F401  (a broken install fails here, before minutes of torch timings)
    requests = build_requests(args.prompts, args.max_tokens, args.temperature)
    torch = __import__("torch")
    runs = []
    for dtype in [d.strip() for d in args.dtypes.split(",") if d.strip()]:
        options: dict[str, Any] = {"max_batch": args.batch, "dtype": dtype}
        if args.device:
            options["device"] = args.device
        runs.append(time_dtype(factory, args.model, name, options, requests, args.temperature))
    # as the backend set it when it loaded ($COLLAPSE_PROBE_TORCH_THREADS): llama.cpp gets as many
    threads = torch.get_num_threads()

    llama = None
    llama_note = ""
    if args.no_llama_cpp:
        llama_note = "skipped (--no-llama-cpp)"
    elif prefix != "local":
        llama_note = "skipped: llama.cpp needs the GGUF of an embedded local/ model"
    elif importlib.util.find_spec("llama_cpp") is None:
        llama_note = "skipped: llama-cpp-python is not installed (pip install -e '.[bench]')"
    else:
        with tempfile.TemporaryDirectory() as scratch:
            gguf = LOCAL_MODELS[name].gguf(Path(scratch))
            llama = time_llama_cpp(gguf, requests, threads)

    numbers: dict[str, Any] = {
        "model": args.model,
        "prompts": args.prompts,
        "max_tokens": args.max_tokens,
        "batch": args.batch,
        "torch_threads": threads,
        "load_average_1m": os.getloadavg()[0],
        "runs": runs,
        "llama_cpp": llama,
    }
    print(f"model {args.model}: {args.prompts} prompts x {args.max_tokens} max tokens, "
          f"T = {args.temperature:g}, {threads} threads, load average {numbers['load_average_1m']:.1f}")  # fmt: skip
    if llama is not None:
        print(f"  llama.cpp (1 at a time): {llama['tokens']:5d} tokens in {llama['seconds']:7.2f} s = "
              f"{llama['tokens_per_s']:8.1f} tok/s")  # fmt: skip
    else:
        print(f"  llama.cpp: {llama_note}")
    base = runs[0] if runs else None
    for r in runs:
        if llama is not None:
            r["batched_vs_llama_cpp"] = round(r["batched_tokens_per_s"] / llama["tokens_per_s"], 2)
            r["sequential_vs_llama_cpp"] = round(r["sequential_tokens_per_s"] / llama["tokens_per_s"], 2)
        default = " (the default)" if prefix == "local" and r["dtype"] == LOCAL_MODELS[name].cpu_dtype else ""
        print(f"  {r['dtype']}{default}:")
        print(f"    batched (batch {args.batch}):  {r['batched_tokens']:5d} tokens in {r['batched_seconds']:7.2f} s = "
              f"{r['batched_tokens_per_s']:8.1f} tok/s")  # fmt: skip
        print(f"    sequential (batch 1): {r['sequential_tokens']:5d} tokens in {r['sequential_seconds']:7.2f} s = "
              f"{r['sequential_tokens_per_s']:8.1f} tok/s")  # fmt: skip
        ratios = [f"batched/sequential {r['speedup']:.2f}x"]
        if base is not None and r is not base:
            ratios.append(f"vs {base['dtype']}: batched {r['batched_tokens_per_s'] / base['batched_tokens_per_s']:.2f}x, "
                          f"sequential {r['sequential_tokens_per_s'] / base['sequential_tokens_per_s']:.2f}x")  # fmt: skip
        if llama is not None:
            ratios.append(
                f"vs llama.cpp: batched {r['batched_vs_llama_cpp']:.2f}x, sequential {r['sequential_vs_llama_cpp']:.2f}x"
            )
        print(f"    ratios: {'; '.join(ratios)}")
        print(
            f"    identical texts both ways: {r['identical_texts']}; near-tie recomputes: {r['canonical_recomputes']}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(numbers, f, indent=2)


if __name__ == "__main__":
    main()
