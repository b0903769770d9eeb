"""Generate ``collapse_probe/data/p4g/personas.jsonl``: synthetic donor personas with the Persuasion-for-Good survey fields.

The personas are written from scratch by this seeded script (no participant data): Big-Five traits
(1-5), moral foundations (1-6), Schwartz values (1-6), decision style (1-5) and demographics, with
marginals chosen to resemble an online-crowdworker population. Run ``python datasets/build/make_p4g_personas.py`` to
rebuild the file (the generator stays out of the wheel); the output is deterministic.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from collapse_probe.benchmarks.p4g import BIG_FIVE, DECISION, MORAL, SCHWARTZ

FIRST = [
    "Alex",
    "Sam",
    "Jordan",
    "Taylor",
    "Morgan",
    "Casey",
    "Riley",
    "Jamie",
    "Avery",
    "Quinn",
    "Drew",
    "Robin",
    "Jesse",
    "Kendall",
    "Logan",
    "Parker",
    "Reese",
    "Rowan",
    "Skyler",
    "Dana",
]
CHOICES = {
    "sex": [("Female", 0.5), ("Male", 0.48), ("Other", 0.02)],
    "race": [("White", 0.75), ("Other", 0.25)],
    "edu": [("Less than four-year college", 0.5), ("Four-year college", 0.37), ("Postgraduate", 0.13)],
    "marital": [("Unmarried", 0.52), ("Married", 0.48)],
    "employment": [("Employed for wages", 0.65), ("Other", 0.35)],
    "religion": [("Other religion", 0.4), ("Protestant", 0.26), ("Catholic", 0.19), ("Atheist", 0.15)],
    "ideology": [("Liberal", 0.41), ("Conservative", 0.29), ("Moderate", 0.3)],
}


def _pick(rng: random.Random, options: list[tuple[str, float]]) -> str:
    return rng.choices([o for o, _ in options], weights=[w for _, w in options])[0]


def _score(rng: random.Random, lo: float, hi: float, mean: float, sd: float) -> float:
    return round(min(hi, max(lo, rng.gauss(mean, sd))), 1)


def make_personas(n: int = 120, seed: int = 2019) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        p: dict = {"persona_id": f"p4g-{i:03d}", "name": f"{rng.choice(FIRST)} {chr(65 + rng.randrange(26))}."}
        for k in BIG_FIVE:
            p[k] = _score(rng, 1, 5, 3.3, 0.8)
        for k in MORAL:
            p[k] = _score(rng, 1, 6, 3.8, 1.0)
        for k in SCHWARTZ:
            p[k] = _score(rng, 1, 6, 3.9, 1.0)
        for k in DECISION:
            p[k] = _score(rng, 1, 5, 3.6, 0.8)
        p["age"] = int(min(75, max(18, rng.gauss(35, 11))))
        for k, opts in CHOICES.items():
            p[k] = _pick(rng, opts)
        p["income"] = int(min(12, max(1, round(rng.gauss(5, 2.5)))))
        out.append(p)
    return out


OUT = Path(__file__).resolve().parents[2] / "collapse_probe" / "data" / "p4g"
"""The shipped dataset's directory in the source tree (``--out`` writes elsewhere)."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"directory to write personas.jsonl to (default {OUT})")
    path = parser.parse_args(argv).out / "personas.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for p in make_personas():
            f.write(json.dumps(p) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
