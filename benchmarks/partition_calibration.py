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

3. on real user-simulator replies (``--states``, default ``../shared/datasets/tau2-real/states.jsonl``:
   τ2-bench and τ-bench airline runs, meaning classes labelled against the customer-service rubric):
   per domain and per simulator, the mean |ε̂ − ε_label|, the mean adjusted Rand index and the share of
   states read more than 0.2 too collapsed, for exact text, the embedding partition (P4G threshold) and
   the ``disclosure`` partition. The disclosure model is refitted on the other folds for every fold
   (5 folds grouped by task, with all constructed material, at the shipped model's C and cut), so its
   rows are held out. The full held-out table (sources, domains, constructed pairs, the retail set held
   out from every fit) is ``benchmarks/meaning_partition.py``.

    python benchmarks/partition_calibration.py [--json] [--states FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from collapse_probe.benchmarks.p4g import donor_stance
from collapse_probe.metrics.partitioners import (
    DEFAULT_EMBEDDING_THRESHOLD,
    EmbeddingPartitioner,
    ExactPartitioner,
    calibrate_threshold,
    load_paraphrase_pairs,
    load_paraphrase_sets,
    pair_balanced_accuracy,
    paraphrase_set_pairs,
)
from collapse_probe.metrics.partitioners._calibration import CALIBRATION_PAIRS, _pair_keys

PROBS = (0.6, 0.25, 0.1, 0.05)
DEFAULT_STATES = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "tau2-real" / "states.jsonl"


def real_text_table(path: Path) -> dict:
    """Per-simulator figures of every partition on the labelled real states (see the module docstring)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from meaning_partition import airline_by_task, material

    from collapse_probe.metrics._service import evaluate, load_service_model

    air, con, pairs = material(path.parent)
    shipped = load_service_model()
    held = airline_by_task(air, con, pairs, float(shipped.info.get("C") or 1.0), shipped.cut)
    part = EmbeddingPartitioner()
    exact = ExactPartitioner()
    preds = {
        "exact": [exact.partition(st.texts) for st in air],
        "embedding": part.partition_many([st.texts for st in air]),
        "disclosure (held-out folds)": [held[i] for i in range(len(air))],
    }
    truth = [st.labels for st in air]
    rows = []
    for sim in [None, *sorted({st.simulator for st in air})]:
        idx = [i for i, st in enumerate(air) if sim is None or st.simulator == sim]
        for name, pred in preds.items():
            ev = evaluate([pred[i] for i in idx], [truth[i] for i in idx])
            rows.append({"domain": "customer service (airline)", "simulator": sim or "all", "partition": name, **ev})
    return {"states": len(air), "rows": rows}


def _eps(labels: list[int], meaning: list[int]) -> float:
    mass: dict[int, float] = {}
    for lab, m in zip(labels, meaning, strict=True):
        mass[lab] = mass.get(lab, 0.0) + PROBS[m] / 4
    return 1.0 - max(mass.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    ap.add_argument("--states", default=str(DEFAULT_STATES), help="labelled real states (tau2-real states.jsonl)")
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
    if Path(args.states).is_file():
        out["real_text"] = real_text_table(Path(args.states))
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

    real = out.get("real_text")
    if real is None:
        print(f"\n(no labelled real states at {args.states}: the real-text table is skipped)")
        return
    print()
    print(f"real user-simulator replies: {real['states']} labelled states (per-state means)")
    print(f"{'simulator':<40}{'partition':<29}{'|Δε|':>7}{'ARI':>7}{'too collapsed':>15}{'states':>8}")
    for r in real["rows"]:
        print(f"{r['simulator'][:39]:<40}{r['partition']:<29}{r['mean_abs_error']:>7.3f}{r['mean_ari']:>7.3f}"
              f"{r['too_collapsed_share']:>15.3f}{r['n_states']:>8}")  # fmt: skip


if __name__ == "__main__":
    main()
