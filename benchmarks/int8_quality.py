"""Is the int8 embedded model the same simulator as float32? Measured three ways in one run.

    python benchmarks/int8_quality.py [--seeds 6] [--dtypes int8,bfloat16] [--json out.json]

1. **Teacher-forced log-likelihood** of a fixed text (the P4G-style dialogues below, every token
   scored given the ones before): mean log p per token in each dtype, and the mean and mean absolute
   per-token difference against float32.
2. **The README's audit** (``collapse-probe audit``: the embedded SmolLM2 simulator, its 2 personas
   = 4 probe states, N = 20; the personas fixed so that the seed changes the sampling only) at
   ``--seeds`` seeds in each dtype: the meaning-view and reward-view ε̂ per
   seed, the mean paired difference (dtype − float32) with a t interval over seeds, and how many of
   the dtype's estimates lie inside float32's own 95 % interval at the same seed.
3. **Class distributions**: per state, the decision each reply states (P4G's stance reader, a fixed
   rule-based reader, so the classes mean the same in every run) over all seeds, float32 against the
   dtype: the total variation distance with a permutation p-value, and beside it the distance between
   float32's even and odd seeds (sampling alone). The identity check: float32 rerun at the same seed
   gives the same texts.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import random
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

TEXT = [
    "System: You are a friendly person in a chat.\nUser: Hi! Have you heard of the charity Save the Children?\n"
    "Assistant: I have heard of it, but I don't know much about what they do. Is it an international charity?",
    "User: Yes, they help children in developing countries with health care, education and safety.\n"
    "Assistant: That sounds like a good cause. How much of each donation actually reaches the children?",
    "User: Most of it goes to programs. Would you consider donating part of your task payment today?\n"
    "Assistant: I think I could give a little. Maybe fifty cents, since I am saving for a trip this summer.",
    "User: Thank you! Every bit helps.\nAssistant: You're welcome. I hope the money helps someone who needs it.",
]


def loglik_per_token(dtype: str) -> list[float]:
    """log p of every token of :data:`TEXT` (each segment scored after the segments before it)."""
    import torch

    from collapse_probe.models.local import load_local_model

    model, tok = load_local_model("smollm2-135m", dtype=dtype, shared=False)
    ids = tok("\n".join(TEXT))["input_ids"]
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].to(torch.float32)
        logp = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
    return [float(x) for x in logp]


README_PERSONAS = ("p4g-057", "p4g-103")
"""The personas ``collapse-probe audit`` probes at its default seed 0."""


def write_personas(path: Path) -> Path:
    """The README audit's two personas as a persona file, so every seed audits the same 4 states."""
    from importlib.resources import files

    lines = files("collapse_probe").joinpath("data/p4g/personas.jsonl").read_text(encoding="utf-8").splitlines()
    keep = [line for line in lines if line.strip() and json.loads(line).get("persona_id") in README_PERSONAS]
    if len(keep) != len(README_PERSONAS):
        sys.exit(f"the shipped personas lack {README_PERSONAS}")
    path.write_text("\n".join(keep) + "\n", encoding="utf-8")
    return path


def run_audit(dtype: str, seed: int, out: Path, personas: Path) -> dict[str, Any]:
    from collapse_probe.cli import main

    args = ["audit", "--seed", str(seed), "--out", str(out), "--no-progress", "--no-cache", "--personas", str(personas)]
    args += ["-M", f"sim.dtype={dtype}"]  # explicit: float32 is not the embedded default
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(args)
    if code not in (0, 1):
        sys.exit(f"audit {dtype} seed {seed} exited {code}")
    results = json.loads((out / "results.json").read_text())
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines() if line.strip()]
    return {"results": results, "replies": {s["state_id"]: s.get("responses") or [] for s in samples}}


def tvd(a: list[str], b: list[str]) -> float:
    """Total variation distance between the label distributions of ``a`` and ``b``."""
    ca, cb = Counter(a), Counter(b)
    return 0.5 * sum(abs(ca[c] / len(a) - cb[c] / len(b)) for c in set(ca) | set(cb))


def t_interval(xs: list[float]) -> tuple[float, float, float]:
    from scipy.stats import t

    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, float("nan"), float("nan")
    h = float(t.ppf(0.975, len(xs) - 1)) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - h, m + h


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--dtypes", default="int8,bfloat16", help="compared against float32 (comma-separated)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    dtypes = [d for d in args.dtypes.split(",") if d and d != "float32"]
    numbers: dict[str, Any] = {"seeds": args.seeds, "loglik": {}, "audit": {}, "tvd": {}}

    base = loglik_per_token("float32")
    print(f"1. teacher-forced log-likelihood, {len(base)} tokens: float32 mean log p {statistics.fmean(base):.4f}")
    for d in dtypes:
        lp = loglik_per_token(d)
        diff = [x - y for x, y in zip(lp, base, strict=True)]
        numbers["loglik"][d] = {"mean_logp": statistics.fmean(lp), "mean_diff": statistics.fmean(diff),
                                "mean_abs_diff": statistics.fmean(abs(x) for x in diff), "max_abs_diff": max(map(abs, diff))}  # fmt: skip
        row = numbers["loglik"][d]
        print(f"   {d:9s} mean log p {row['mean_logp']:.4f}; per token vs float32: mean {row['mean_diff']:+.4f}, "
              f"mean |Δ| {row['mean_abs_diff']:.4f}, max |Δ| {row['max_abs_diff']:.3f} nats")  # fmt: skip

    with tempfile.TemporaryDirectory() as scratch:
        personas = write_personas(Path(scratch) / "personas.jsonl")
        runs = {
            (d, s): run_audit(d, s, Path(scratch) / f"{d}-{s}", personas)
            for d in ["float32", *dtypes]
            for s in range(args.seeds)
        }
        again = run_audit("float32", 0, Path(scratch) / "float32-0-again", personas)
    same_texts = again["replies"] == runs["float32", 0]["replies"]
    print(f"2. the README's audit at {args.seeds} seeds (4 probe states, N = 20); identity: float32 rerun at seed 0 "
          f"gives the same texts: {same_texts}")  # fmt: skip
    for view in ("meaning", "reward"):
        for d in dtypes:
            diffs, inside = [], 0
            for s in range(args.seeds):
                ref, got = runs["float32", s]["results"]["verdicts"][view], runs[d, s]["results"]["verdicts"][view]
                if ref.get("estimate") is None or got.get("estimate") is None:
                    continue
                diffs.append(got["estimate"] - ref["estimate"])
                lo, hi = ref["ci95"]
                inside += lo <= got["estimate"] <= hi
            # what sampling alone gives: float32 at the next seed inside float32's interval at this one (two
            # draws of one simulator land inside each other's 95 % interval ~83 % of the time, not 100 %)
            alone = 0
            for s in range(args.seeds):
                ref = runs["float32", s]["results"]["verdicts"][view]
                other = runs["float32", (s + 1) % args.seeds]["results"]["verdicts"][view]
                if ref.get("estimate") is not None and other.get("estimate") is not None:
                    alone += ref["ci95"][0] <= other["estimate"] <= ref["ci95"][1]
            m, lo, hi = t_interval(diffs)
            ref_mean = statistics.fmean(
                runs["float32", s]["results"]["verdicts"][view]["estimate"] or 0 for s in range(args.seeds)
            )
            numbers["audit"][f"{view}/{d}"] = {"float32_mean": ref_mean, "mean_diff": m, "ci95": [lo, hi],
                                               "inside_float32_ci": f"{inside}/{len(diffs)}",
                                               "float32_next_seed_inside": f"{alone}/{args.seeds}"}  # fmt: skip
            print(f"   {view:7s} ε̂ {d:9s} − float32 (mean {ref_mean:.3f}): {m:+.3f} [{lo:+.3f}, {hi:+.3f}]; "
                  f"inside float32's 95% interval at the same seed: {inside}/{len(diffs)} (float32 at the next "
                  f"seed, sampling alone: {alone}/{args.seeds})")  # fmt: skip
    print("3. stance distributions (the P4G decision a reply states, a fixed reader), per state over all seeds")
    from collapse_probe.benchmarks.p4g import donor_stance

    def stances(d: str, seeds: range) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for s in seeds:
            for k, replies in runs[d, s]["replies"].items():
                out.setdefault(k, []).extend(str(donor_stance(r)) for r in replies)
        return out

    rng = random.Random(0)
    ref = stances("float32", range(args.seeds))
    half = stances("float32", range(0, args.seeds, 2)), stances("float32", range(1, args.seeds, 2))
    for d in dtypes:
        got = stances(d, range(args.seeds))
        rows = []
        for k in ref:
            observed = tvd(ref[k], got[k])
            pooled = ref[k] + got[k]
            null = []
            for _ in range(2000):
                rng.shuffle(pooled)
                null.append(tvd(pooled[: len(ref[k])], pooled[len(ref[k]) :]))
            p = (1 + sum(x >= observed - 1e-12 for x in null)) / (1 + len(null))
            rows.append({"state": k, "tvd": observed, "p_permutation": p, "tvd_float32_halves": tvd(half[0][k], half[1][k]),
                         "float32": Counter(ref[k]).most_common(3), d: Counter(got[k]).most_common(3)})  # fmt: skip
            print(f"   {k:24s} TVD float32 vs {d} {observed:.3f} (permutation p {p:.3f}); float32 even vs odd seeds "
                  f"{rows[-1]['tvd_float32_halves']:.3f}; float32 {rows[-1]['float32']}; {d} {rows[-1][d]}")  # fmt: skip
        numbers["tvd"][d] = rows
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=2))


if __name__ == "__main__":
    main()
