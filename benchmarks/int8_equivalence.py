"""Is the int8 embedded model's collapse error the same as float32's where a verdict can flip? An equivalence test.

    COLLAPSE_PROBE_TORCH_THREADS=1 python benchmarks/int8_equivalence.py [--replies 400] [--screen 40]
            [--margin 0.05] [--json out.json]

The verdict compares ε̄ with ε* = 0.2, so int8 is tested at states where float32's ε is near 0.2, not at
the README audit's ε̂ ≈ 0.9 where no verdict can flip. The states are forced-choice prompts with a small
answer set (a few-shot "answer yes or no" quiz): a reply's meaning is its first word (lower case), so
ε = 1 − the modal answer's share needs no partitioner.

1. **Screen** (float32 alone, seeds ``SCREEN_SEED + k``): ``--screen`` replies at each of the
   :data:`TEMPLATES` × :data:`QUESTIONS` candidates; the states kept are those whose float32 ε̂ lies in
   [0.10, 0.35], at most ``--states`` of them in candidate order. The screen's replies are not reused:
   the states are chosen on draws independent of the ones tested, so the choice cannot favour either dtype.
2. **Test** (seeds ``TEST_SEED + k``, the same for both dtypes, so reply ``i`` of a state gets the same
   sampling noise in float32 and in int8): ``--replies`` replies per kept state in each dtype; per state
   the paired difference d = ε̂_int8 − ε̂_float32 (ε̂ = 1 − own modal share, the audit's plug-in).
3. **TOST** (two one-sided t tests over states, level 0.05 each) of the mean d against the margin
   ``±--margin`` fixed before the run: equivalent when the 90 % t interval of the mean d lies inside
   (−margin, +margin). The states are the units, so the interval carries both the states' spread and each
   state's own sampling noise. The same test is printed for the share of the screen's modal answer (a
   class fixed in advance) as a second reading.

Why ±0.05: it is the audit's finest resolution. At its cap (4 states × 80 replies) the exact (Clopper–
Pearson) interval of the pooled modal mass at ε̄ = 0.2 is [0.158, 0.248] in ε, about ±0.045, so a shift
below 0.05 is inside what the most precise default audit can resolve, and half the distance from ε* = 0.2
at which the sequential audit becomes decisive (ε̄ 0.30: NOT COLLAPSED in 0.89–0.99 of audits,
``docs/audit-verdict.md``).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from collapse_probe.models import GenerationRequest, SamplingParams
from collapse_probe.models.local import make_local_model

SCREEN_SEED = 1_000
TEST_SEED = 50_000
BAND = (0.10, 0.35)
"""float32's screened ε̂ a state must show to be tested: around ε* = 0.2, wide enough for the screen's noise."""

TEMPLATES = [
    "Answer each question with yes or no.\nQ: Is the sky blue? A: yes\nQ: Is fire cold? A: no\n"
    "Q: Can fish swim? A: yes\nQ: Do cows fly? A: no\nQ: {q} A:",
    "Answer each question with yes or no.\nQ: Is grass green? A: yes\nQ: Is ice hot? A: no\n"
    "Q: Do birds have wings? A: yes\nQ: Is milk white? A: yes\nQ: {q} A:",
    "Answer each question with yes or no.\nQ: Is salt sweet? A: no\nQ: Can stones sing? A: no\n"
    "Q: Is the sea dry? A: no\nQ: Do dogs bark? A: yes\nQ: {q} A:",
]
QUESTIONS = [
    "Is a tomato a fruit?", "Do you like cats?", "Is it going to rain tomorrow?", "Would you lend money to a friend?",
    "Is coffee healthy?", "Are dogs better than cats?", "Is the moon made of rock?", "Can birds talk?",
    "Is chess a sport?", "Is water wet?", "Is zero a number?", "Do plants sleep?", "Is a whale a fish?",
    "Can a penguin fly?", "Is glass a liquid?", "Is math invented?", "Are bats blind?", "Is the earth round?",
    "Do you donate to charity?", "Is it rude to be late?", "Can money buy happiness?", "Is a hot dog a sandwich?",
    "Is pluto a planet?", "Do ants have hearts?", "Is bread healthy?", "Is the sun a star?", "Is honey sweet?",
    "Can a car swim?", "Is winter cold?", "Is snow white?",
]  # fmt: skip


def meaning(text: str) -> str:
    """A reply's meaning: its first word in lower case ("" when it has none)."""
    words = re.findall(r"[a-z']+", text.lower())
    return words[0] if words else ""


def candidates() -> list[str]:
    return [t.format(q=q) for t in TEMPLATES for q in QUESTIONS]


def draw(model: Any, prompts: list[str], n: int, seed: int) -> list[list[str]]:
    """``n`` replies' meanings per prompt; prompt ``k`` is seeded ``seed + k`` (sample ``i`` derives from it)."""
    requests = [
        GenerationRequest(
            ({"role": "user", "content": p},),
            n=n,
            prompt=p,
            params=SamplingParams(temperature=1.0, max_tokens=2, seed=seed + k, stop=("\n",)),
        )
        for k, p in enumerate(prompts)
    ]
    out = []
    for r in model.generate_sync(requests):
        if not r.ok:
            raise SystemExit(f"generation failed: {r.error}")
        out.append([meaning(c.text) for c in r.completions])
    return out


def eps(labels: list[str]) -> float:
    return 1.0 - Counter(labels).most_common(1)[0][1] / len(labels)


def tost(diffs: list[float], margin: float) -> dict[str, Any]:
    """Two one-sided t tests of mean(diffs) against ±margin, and the 90 % t interval (its equivalent)."""
    from scipy.stats import t

    k = len(diffs)
    m = statistics.fmean(diffs)
    se = statistics.stdev(diffs) / math.sqrt(k)
    p_low = float(t.sf((m + margin) / se, k - 1))  # H0: mean ≤ −margin
    p_high = float(t.cdf((m - margin) / se, k - 1))  # H0: mean ≥ +margin
    h = float(t.ppf(0.95, k - 1)) * se
    return {"states": k, "mean": m, "sd": statistics.stdev(diffs), "ci90": [m - h, m + h],
            "p_tost": max(p_low, p_high), "equivalent": -margin < m - h and m + h < margin}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replies", type=int, default=400, help="replies per state and dtype in the test")
    ap.add_argument("--screen", type=int, default=40, help="float32 replies per candidate in the screen")
    ap.add_argument("--states", type=int, default=24, help="most states tested")
    ap.add_argument("--margin", type=float, default=0.05, help="equivalence margin on the mean paired ε difference")
    ap.add_argument("--max-batch", type=int, default=64)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    started = time.time()
    models = {d: make_local_model("local/smollm2-135m", "smollm2-135m", dtype=d, max_batch=args.max_batch)
              for d in ("float32", "int8")}  # fmt: skip
    pool = candidates()
    screen_labels = draw(models["float32"], pool, args.screen, SCREEN_SEED)
    screened = [eps(x) for x in screen_labels]
    keep = [k for k, e in enumerate(screened) if BAND[0] <= e <= BAND[1]][: args.states]
    if len(keep) < 3:
        raise SystemExit(f"only {len(keep)} of {len(pool)} candidates screened into {BAND}; nothing to test")
    prompts = [pool[k] for k in keep]
    screen_mode = [Counter(screen_labels[k]).most_common(1)[0][0] for k in keep]  # fixed before the test
    labels = {d: draw(m, prompts, args.replies, TEST_SEED) for d, m in models.items()}
    print(f"int8 vs float32 at {len(keep)} states near ε* = 0.2 (screened {len(pool)} candidates × {args.screen} "
          f"float32 replies into ε̂ ∈ [{BAND[0]}, {BAND[1]}]); {args.replies} replies per state and dtype, "
          f"seeds {TEST_SEED}+k for both; margin ±{args.margin}")  # fmt: skip
    print(f"{'state':>5s} {'screen ε̂':>9s} {'float32 ε̂':>10s} {'int8 ε̂':>8s} {'d':>7s}  modal answer shares")
    rows, d_eps, d_share = [], [], []
    for i, k in enumerate(keep):
        f, q = labels["float32"][i], labels["int8"][i]
        ef, eq = eps(f), eps(q)
        sf, sq = f.count(screen_mode[i]) / len(f), q.count(screen_mode[i]) / len(q)
        d_eps.append(eq - ef)
        d_share.append(sq - sf)
        rows.append({"candidate": k, "screen_eps": screened[k], "float32_eps": ef, "int8_eps": eq,
                     "mode": screen_mode[i], "float32_share": sf, "int8_share": sq,
                     "float32": Counter(f).most_common(3), "int8": Counter(q).most_common(3)})  # fmt: skip
        print(f"{k:5d} {screened[k]:9.3f} {ef:10.3f} {eq:8.3f} {eq - ef:+7.3f}  "
              f"float32 {Counter(f).most_common(2)}  int8 {Counter(q).most_common(2)}")  # fmt: skip
    result = {"margin": args.margin, "replies": args.replies, "screen": args.screen, "rows": rows,
              "eps": tost(d_eps, args.margin), "mode_share": tost(d_share, args.margin),
              "float32_mean_eps": statistics.fmean(r["float32_eps"] for r in rows),
              "int8_mean_eps": statistics.fmean(r["int8_eps"] for r in rows), "seconds": time.time() - started}  # fmt: skip
    for name, key in (("ε (own mode)", "eps"), ("share of the screen's mode", "mode_share")):
        r = result[key]
        print(f"TOST {name}: mean int8 − float32 {r['mean']:+.4f} (sd over states {r['sd']:.4f}), 90% CI "
              f"[{r['ci90'][0]:+.4f}, {r['ci90'][1]:+.4f}], p = {r['p_tost']:.2g} -> "
              f"{'EQUIVALENT' if r['equivalent'] else 'NOT SHOWN EQUIVALENT'} within ±{args.margin}")  # fmt: skip
    print(f"mean ε̂: float32 {result['float32_mean_eps']:.3f}, int8 {result['int8_mean_eps']:.3f}; "
          f"{result['seconds']:.0f} s")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
