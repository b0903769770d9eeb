"""How well the P4G stance reader reads people: held-out human-annotated persuadee sentences.

The gold stance of a sentence is its annotated persuadee act (``ee_label_1``) mapped by
:data:`~collapse_probe.benchmarks.p4g.stance.ACT_STANCE` (agree-donation / provide-donation-amount /
confirm-donation → donate; disagree-donation / disagree-donation-more → refuse; every other act → no
decision). Only the held-out quarter of the dialogues is read
(:func:`~collapse_probe.benchmarks.p4g.stance.heldout_dialogue`; the shipped model never saw them).
Prints, for the rule reader and the fitted model, each read through
:func:`~collapse_probe.benchmarks.p4g.donor_stance`'s reader: per-stance precision / recall / F1,
macro-F1 and accuracy over {donate, refuse, no decision}, on sentences and on whole persuadee turns
(a turn's gold stance is the last decision its sentences state, none if none does; the reader reads the
joined turn as it reads a simulator reply), a 95 % interval of the sentence macro-F1 over dialogues resampled with replacement (13 held-out
refusals make that F1 noisy), and each reader's cost per reply. Every sentence and turn is read with
the persuader's sentences just before it as context (as the audit reads a state's replies, see
``StanceReader.keys``); the scores without it are printed beside them.

    python benchmarks/stance_accuracy.py [--data DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support

from collapse_probe.benchmarks.p4g.stance import (
    NO_DECISION,
    STANCES,
    StanceReader,
    act_stance,
    default_annotated_dir,
    heldout_dialogue,
    key_stance,
    load_annotated_p4g,
)


@dataclass
class HeldOut:
    """Held-out persuadee sentences and turns, their gold stances, and what each answers."""

    sentences: list[str]
    gold: list[str]
    contexts: list[str | None]
    """The persuader's sentences just before the sentence's turn, joined: the message it answers."""
    dialogues: list[str]
    turns: list[str]
    turn_gold: list[str]
    turn_contexts: list[str | None]


def held_out(data: str) -> HeldOut:
    """The held-out persuadee sentences and turns (consecutive persuadee sentences) of ``data``."""
    rows = load_annotated_p4g(data)
    contexts: list[str | None] = []
    turns: list[list[int]] = []
    persuader: list[str] = []
    keep: list[int] = []
    for i, r in enumerate(rows):
        if i and rows[i - 1].dialogue_id != r.dialogue_id:
            persuader = []
        if r.speaker == "policy":
            persuader = [] if i and rows[i - 1].speaker != "policy" else persuader
            persuader.append(r.text)
            continue
        if not heldout_dialogue(r.dialogue_id):
            continue
        prev = rows[i - 1] if i else None
        if prev is not None and prev.speaker == "simulator" and prev.dialogue_id == r.dialogue_id and turns:
            turns[-1].append(len(keep))
        else:
            turns.append([len(keep)])
        keep.append(i)
        contexts.append(" ".join(persuader) or None)
    sents = [rows[i] for i in keep]
    gold = [act_stance(r.act) for r in sents]
    return HeldOut(
        sentences=[r.text for r in sents],
        gold=gold,
        contexts=contexts,
        dialogues=[r.dialogue_id for r in sents],
        turns=[" ".join(sents[j].text for j in t) for t in turns],
        turn_gold=[next((gold[j] for j in reversed(t) if gold[j] != NO_DECISION), NO_DECISION) for t in turns],
        turn_contexts=[contexts[t[0]] for t in turns],
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


def read(reader: StanceReader, h: HeldOut, encode: bool) -> dict[str, object]:
    """One reader's scores on ``h``, with the persuader's message as context (as the audit reads a
    state's replies) and without it, and its cost per reply."""
    emb_s = emb_t = None
    out: dict[str, object] = {"reader": reader.describe()}
    if encode:  # the audit's embedding partition encodes every reply anyway and hands the rows over
        from collapse_probe.metrics.partitioners import EmbeddingPartitioner

        part = EmbeddingPartitioner()
        t0 = time.perf_counter()
        emb_t = part.embed(h.turns)
        out["encode_ms_per_reply"] = 1000 * (time.perf_counter() - t0) / len(h.turns)
        emb_s = part.embed(h.sentences)
    t0 = time.perf_counter()
    turn_keys = reader.keys(h.turns, emb_t, h.turn_contexts)
    out["reader_ms_per_reply"] = 1000 * (time.perf_counter() - t0) / len(h.turns)
    pred = [key_stance(k) for k in reader.keys(h.sentences, emb_s, h.contexts)]
    out["sentences"] = {**scores(h.gold, pred), "macro_f1_ci95": dialogue_bootstrap(h.gold, pred, h.dialogues)}
    out["turns"] = scores(h.turn_gold, [key_stance(k) for k in turn_keys])
    bare = [key_stance(k) for k in reader.keys(h.sentences, emb_s)]
    out["without_context"] = {
        "sentences": scores(h.gold, bare),
        "turns": scores(h.turn_gold, [key_stance(k) for k in reader.keys(h.turns, emb_t)]),
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=default_annotated_dir(), help="directory with annotated_dialog.csv")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = ap.parse_args()
    h = held_out(args.data)
    n_dialogues = len(set(h.dialogues))
    out: dict[str, object] = {"held_out_dialogues": n_dialogues}
    for name in ("rules", "model"):
        reader = StanceReader(name)
        reader.keys(["warm-up: load the encoder before timing."])
        out[name] = read(reader, h, encode=name == "model")
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"held-out: {n_dialogues} annotated dialogues (the shipped model was fitted on the others)")
    print("each reply read with the persuader's message before it as context, as the audit reads a state\n")
    for name in ("rules", "model"):
        r = out[name]
        assert isinstance(r, dict)
        enc = f", encoding {r['encode_ms_per_reply']:.1f} ms" if "encode_ms_per_reply" in r else ""
        print(f"{r['reader']}  ({r['reader_ms_per_reply']:.2f} ms per reply{enc})")
        print(table("  sentences", r["sentences"]))
        print(table("  turns", r["turns"]))
        bare = r["without_context"]
        assert isinstance(bare, dict)
        print(f"  without context: sentences macro-F1 {bare['sentences']['macro_f1']:.3f}, "
              f"turns macro-F1 {bare['turns']['macro_f1']:.3f}\n")  # fmt: skip


if __name__ == "__main__":
    main()
