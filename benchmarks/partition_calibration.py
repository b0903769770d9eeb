"""Calibration and held-out check of the semantic (embedding) partition's threshold.

Calibrates the cosine threshold of :class:`~collapse_probe.metrics.partitioners.EmbeddingPartitioner`
on the shipped labelled pairs (``data/calibration/paraphrase_pairs.jsonl`` plus every pair of the
``calibration`` paraphrase sets in ``paraphrase_sets.jsonl``), with and without the P4G decision key
(:func:`~collapse_probe.benchmarks.p4g.donor_stance`), and prints:

1. the threshold and the balanced accuracy of "same meaning" pair predictions on the calibration
   pairs and on the ``heldout`` pairs (sets written separately, never used to choose anything);
2. for every paraphrase set (4 meanings x 4 paraphrases, meaning probabilities 0.6 / 0.25 / 0.1 /
   0.05, true ε = 0.40): the collapse error of the partition each method makes of the 16 replies
   (exact text, embedding alone at its calibrated threshold, embedding with the decision key at the
   default threshold and at the key's pair-calibrated threshold), computed from the probabilities,
   so no sampling noise. The pair-level optimum is not the cluster-level one: average linkage joins
   groups, so a threshold that classifies single pairs best can still merge a group of questions
   into a decision class.

    python benchmarks/partition_calibration.py [--json]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from collapse_probe.benchmarks.p4g import donor_stance
from collapse_probe.metrics.partitioners import (
    CALIBRATION_PAIRS,
    DEFAULT_EMBEDDING_THRESHOLD,
    EmbeddingPartitioner,
    ExactPartitioner,
    _pair_keys,
    calibrate_threshold,
    load_paraphrase_pairs,
    load_paraphrase_sets,
    pair_balanced_accuracy,
    paraphrase_set_pairs,
)

PROBS = (0.6, 0.25, 0.1, 0.05)


def _eps(labels: list[int], meaning: list[int]) -> float:
    mass: dict[int, float] = {}
    for lab, m in zip(labels, meaning, strict=True):
        mass[lab] = mass.get(lab, 0.0) + PROBS[m] / 4
    return 1.0 - max(mass.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = ap.parse_args()

    calib = load_paraphrase_pairs(CALIBRATION_PAIRS) + paraphrase_set_pairs("calibration")
    held = paraphrase_set_pairs("heldout")
    plain = calibrate_threshold(calib)
    keyed = calibrate_threshold(calib, key=donor_stance)
    part = EmbeddingPartitioner()

    def held_bacc(thr: float, key: bool) -> float:
        emb_a = part.embed([p["a"] for p in held])
        emb_b = part.embed([p["b"] for p in held])
        dist = (1.0 - np.sum(emb_a * emb_b, axis=1)).tolist()
        decided = [_pair_keys(donor_stance, p["a"], p["b"]) for p in held] if key else None
        return pair_balanced_accuracy(dist, [p["same"] for p in held], thr, decided)

    out = {
        "calibration_pairs": len(calib),
        "heldout_pairs": len(held),
        "default_threshold": DEFAULT_EMBEDDING_THRESHOLD,
        "embedding": {"threshold": plain.threshold, "calibration_bacc": plain.balanced_accuracy,
                      "heldout_bacc": held_bacc(plain.threshold, False)},
        "embedding+key": {"threshold": keyed.threshold, "calibration_bacc": keyed.balanced_accuracy,
                          "heldout_bacc": held_bacc(keyed.threshold, True),
                          "heldout_bacc_at_default": held_bacc(DEFAULT_EMBEDDING_THRESHOLD, True)},
        "sets": [],
    }  # fmt: skip
    exact = ExactPartitioner()
    with_key = EmbeddingPartitioner(key=donor_stance)
    with_key_calibrated = EmbeddingPartitioner(threshold=keyed.threshold, key=donor_stance)
    alone = EmbeddingPartitioner(threshold=plain.threshold)
    for rec in load_paraphrase_sets():
        texts = [t for g in rec["meanings"] for t in g]
        meaning = [i for i, g in enumerate(rec["meanings"]) for _ in g]
        out["sets"].append({
            "set": rec["set"], "split": rec["split"], "true": 0.4,
            "exact": _eps(exact.partition(texts), meaning),
            "embedding": _eps(alone.partition(texts), meaning),
            "embedding+key": _eps(with_key.partition(texts), meaning),
            "embedding+key@calibrated": _eps(with_key_calibrated.partition(texts), meaning),
        })  # fmt: skip
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"calibration pairs: {out['calibration_pairs']}, held-out pairs: {out['heldout_pairs']}")
    print(f"{'method':<16}{'threshold':>10}{'bacc calib':>12}{'bacc held-out':>15}")
    for m in ("embedding", "embedding+key"):
        r = out[m]
        print(f"{m:<16}{r['threshold']:>10.3f}{r['calibration_bacc']:>12.3f}{r['heldout_bacc']:>15.3f}")
    print(f"embedding+key at the default threshold {DEFAULT_EMBEDDING_THRESHOLD}: held-out balanced accuracy "
          f"{out['embedding+key']['heldout_bacc_at_default']:.3f}")  # fmt: skip
    print()
    print("collapse error of 4 meanings x 4 paraphrases (0.6/0.25/0.1/0.05; true 0.40)")
    print(f"{'set':<18}{'split':<13}{'exact':>7}{'embedding':>11}{'emb+key':>9}{'emb+key@calibrated':>20}")
    for r in out["sets"]:
        print(f"{r['set']:<18}{r['split']:<13}{r['exact']:>7.3f}{r['embedding']:>11.3f}{r['embedding+key']:>9.3f}"
              f"{r['embedding+key@calibrated']:>20.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
