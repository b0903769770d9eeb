"""How well the P4G stance reader reads people: held-out human-annotated persuadee sentences.

The gold stance of a sentence is its annotated persuadee act (``ee_label_1``) mapped by
:data:`~collapse_probe.benchmarks.p4g_stance.ACT_STANCE` (agree-donation / provide-donation-amount /
confirm-donation → donate; disagree-donation / disagree-donation-more → refuse; every other act → no
decision). Only the held-out quarter of the dialogues is read
(:func:`~collapse_probe.benchmarks.p4g_stance.heldout_dialogue`; the shipped model never saw them).
Prints, for the rule reader and the fitted model, each read through
:func:`~collapse_probe.benchmarks.p4g.donor_stance`'s reader: per-stance precision / recall / F1,
macro-F1 and accuracy over {donate, refuse, no decision}, on sentences and on whole persuadee turns
(a turn's gold stance is the last decision its sentences state, none if none does; the reader reads the
joined turn as it reads a simulator reply), a 95 % interval of the sentence macro-F1 over dialogues resampled with replacement (13 held-out
refusals make that F1 noisy), and each reader's speed.

    python benchmarks/stance_accuracy.py [--data DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence

import numpy as np
from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support

from collapse_probe.benchmarks.p4g_stance import (
    NO_DECISION,
    STANCES,
    StanceReader,
    act_stance,
    default_annotated_dir,
    heldout_dialogue,
    key_stance,
    load_annotated_p4g,
)


def held_out(data: str) -> tuple[list[str], list[str], list[str], list[str], list[str]]:
    """Held-out persuadee sentences and turns with their gold stances, and each sentence's dialogue."""
    rows = [r for r in load_annotated_p4g(data) if r.speaker == "simulator" and heldout_dialogue(r.dialogue_id)]
    turns: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for r in rows:
        turns.setdefault((r.dialogue_id, r.turn), []).append((r.text, act_stance(r.act)))
    turn_texts = [" ".join(t for t, _ in v) for v in turns.values()]
    turn_gold = [next((s for _, s in reversed(v) if s != NO_DECISION), NO_DECISION) for v in turns.values()]
    return (
        [r.text for r in rows],
        [act_stance(r.act) for r in rows],
        turn_texts,
        turn_gold,
        [r.dialogue_id for r in rows],
    )


def macro_f1(gold: Sequence[str], pred: Sequence[str]) -> float:
    return float(f1_score(gold, pred, labels=list(STANCES), average="macro", zero_division=0))


def dialogue_bootstrap(gold: list[str], pred: list[str], dialogues: list[str], n_boot: int = 1000) -> list[float]:
    """95 % percentile interval of macro-F1 over held-out dialogues resampled with replacement
    (sentences of one dialogue move together: they are not independent)."""
    rng = np.random.default_rng(0)
    ids = sorted(set(dialogues))
    rows = {d: [i for i, x in enumerate(dialogues) if x == d] for d in ids}
    g, p = np.asarray(gold), np.asarray(pred)
    boot = []
    for _ in range(n_boot):
        idx = np.concatenate([rows[ids[j]] for j in rng.integers(0, len(ids), len(ids))])
        boot.append(macro_f1(g[idx].tolist(), p[idx].tolist()))
    lo, hi = np.quantile(boot, [0.025, 0.975])
    return [float(lo), float(hi)]


def scores(gold: list[str], pred: list[str]) -> dict[str, object]:
    p, r, f, n = precision_recall_fscore_support(gold, pred, labels=list(STANCES), zero_division=0)
    return {
        "per_stance": {
            s: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]), "support": int(n[i])}
            for i, s in enumerate(STANCES)
        },  # fmt: skip
        "macro_f1": macro_f1(gold, pred),
        "accuracy": float(accuracy_score(gold, pred)),
        "n": len(gold),
    }


def table(name: str, s: dict[str, object]) -> str:
    per = s["per_stance"]
    assert isinstance(per, dict)
    ci = s.get("macro_f1_ci95")
    where = f" (95% CI over dialogues [{ci[0]:.3f}, {ci[1]:.3f}])" if isinstance(ci, list) else ""
    lines = [f"{name}: macro-F1 {s['macro_f1']:.3f}{where}, accuracy {s['accuracy']:.3f} over {s['n']}",
             f"  {'stance':<12} {'precision':>9} {'recall':>7} {'F1':>6} {'support':>8}"]  # fmt: skip
    for st, v in per.items():
        lines.append(f"  {st:<12} {v['precision']:>9.3f} {v['recall']:>7.3f} {v['f1']:>6.3f} {v['support']:>8}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=default_annotated_dir(), help="directory with annotated_dialog.csv")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = ap.parse_args()
    sents, gold, turn_texts, turn_gold, dialogues = held_out(args.data)
    n_dialogues = len(set(dialogues))
    out: dict[str, object] = {"held_out_dialogues": n_dialogues}
    for name in ("rules", "model"):
        reader = StanceReader(name)
        reader.keys(["warm-up: load the encoder before timing."])
        t0 = time.perf_counter()
        pred = [key_stance(k) for k in reader.keys(sents)]
        seconds = time.perf_counter() - t0
        out[name] = {
            "reader": reader.describe(),
            "sentences": {**scores(gold, pred), "macro_f1_ci95": dialogue_bootstrap(gold, pred, dialogues)},
            "turns": scores(turn_gold, [key_stance(k) for k in reader.keys(turn_texts)]),
            "sentences_per_second": len(sents) / seconds,
        }
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"held-out: {n_dialogues} annotated dialogues (the shipped model was fitted on the others)\n")
    for name in ("rules", "model"):
        r = out[name]
        assert isinstance(r, dict)
        print(f"{r['reader']}  ({r['sentences_per_second']:.0f} sentences/s, encoding included)")
        print(table("  sentences", r["sentences"]))
        print(table("  turns", r["turns"]))
        print()


if __name__ == "__main__":
    main()
