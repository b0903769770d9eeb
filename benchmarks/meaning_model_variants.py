"""Does a non-linear classifier on the `disclosure` partition's pair features beat its logistic regression?

The shipped model is a logistic regression on :func:`~collapse_probe.metrics._disclosure.pair_features`
(`docs/meaning-partition.md`). This script fits, on the same features and the same weighting (each state
weighs the same; the constructed pairs together weigh ``PAIR_WEIGHT`` times the states; classes
balanced), gradient-boosted trees (depth 2 and 3) and a random forest beside it, and reads each on the
training material's own cross-validation splits only:

- *airline by task*: the 73 labelled states of ``../shared/datasets/tau2-real/states.jsonl`` in the 5
  folds of ``benchmarks/meaning_partition.py`` (never sharing a task), each fitted on the other folds
  plus all constructed material;
- *constructed, domain held out*: each domain of ``collapse_probe/data/meaning/`` (states and contrast /
  paraphrase pairs) read by a model fitted on the airline states and the other domains.

It reads neither held-out set (``collapse_probe/data/meaning/heldout/``, ``../shared/datasets/tau2-real/
retail/``): a variant that won here would still have to be checked there once. Each row: mean
|ε̂ − ε_label| and ARI of the states, and the pairs' share of contrasts split / paraphrases merged, at
the cuts given (the shipped cut first). Skips cleanly when ``../shared`` is absent. About 3 minutes on
2 cores.

    python benchmarks/meaning_model_variants.py [--cuts 0.5,0.4,0.6] [--variants lr,gbm-2,gbm-3,forest]
    python benchmarks/meaning_model_variants.py --wrong   # what the wrongly read constructed pairs differ in
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from meaning_partition import SHARED, airline_by_task, material  # noqa: E402

VARIANTS = ("lr", "gbm-2", "gbm-3", "forest")


class _Classifier:
    """What :func:`~collapse_probe.metrics._service.service_labels` reads of a model: ``p_same`` and ``cut``."""

    def __init__(self, clf: object, cut: float) -> None:
        self.clf, self.cut = clf, cut

    def p_same(self, x: np.ndarray) -> np.ndarray:
        proba = self.clf.predict_proba(np.asarray(x, dtype=np.float64))  # type: ignore[attr-defined]
        return np.asarray(proba[:, list(self.clf.classes_).index(True)])  # type: ignore[attr-defined]


def training_rows(states: Sequence, pairs: Sequence) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shipped fit's rows (:func:`~collapse_probe.metrics._service.training_rows`), their weights times the
    classes' balance by counts (what ``class_weight="balanced"`` does in the logistic regression)."""
    from collapse_probe.metrics._service import training_rows as rows_of

    x, y, w = rows_of(states, pairs)
    balance = {c: len(y) / (2 * max(int((y == c).sum()), 1)) for c in (False, True)}
    return x, y, w * np.array([balance[bool(v)] for v in y])


def fitter(variant: str, c: float) -> Callable[[Sequence, Sequence], object]:
    """A function (states, pairs) → a fitted classifier with ``predict_proba``."""

    def fit(states: Sequence, pairs: Sequence) -> object:
        from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier

        x, y, w = training_rows(states, pairs)
        if variant.startswith("gbm-"):
            clf = HistGradientBoostingClassifier(max_depth=int(variant[4:]), learning_rate=0.05, max_iter=200,
                                                 l2_regularization=1.0, min_samples_leaf=20, random_state=0)  # fmt: skip
        elif variant == "forest":
            clf = RandomForestClassifier(n_estimators=300, min_samples_leaf=5, random_state=0, n_jobs=2)
        else:
            raise SystemExit(f"--variants: unknown variant {variant!r} (expected one of {', '.join(VARIANTS)})")
        return clf.fit(x, y, sample_weight=w)

    return fit


def _labels(states: Sequence, model: object) -> list[list[int]]:
    from collapse_probe.metrics._service import _renumber, service_labels

    out = []
    for st in states:
        reps, inverse = st.distinct()
        labels = service_labels([st.found[r] for r in reps], st.emb[reps], model, st.words, st.known)  # type: ignore[arg-type]
        out.append(_renumber([labels[d] for d in inverse]))
    return out


def rows(variants: Sequence[str], cuts: Sequence[float], shared: Path = SHARED) -> list[dict]:
    """One row per variant and cut: airline by task and constructed (domain held out) states and pairs."""
    from collapse_probe.metrics._service import (
        _fit_lr,
        _predict,
        _predict_pairs,
        _splits,
        load_service_model,
    )

    air, con, pairs = material(shared)
    c = float(load_service_model().info.get("C") or 1.0)
    domains = sorted({st.domain for st in con} | {p.domain for p in pairs})
    out = []
    for variant in variants:
        if variant == "lr":  # the shipped fit itself, through the benchmark's own functions
            for cut in cuts:
                held = airline_by_task(air, con, pairs, c, cut)
                pred, truth, same, held_pairs = [], [], [], []
                for d in domains:
                    coef, icpt = _fit_lr(
                        air + [s for s in con if s.domain != d], c, [p for p in pairs if p.domain != d]
                    )
                    test = [s for s in con if s.domain == d]
                    pred += _predict(test, coef, icpt, cut)
                    truth += test
                    dp = [p for p in pairs if p.domain == d]
                    same += _predict_pairs(dp, coef, icpt, cut)
                    held_pairs += dp
                out.append(_row(variant, cut, [held[i] for i in range(len(air))], air, pred, truth, same, held_pairs))
            continue
        fit = fitter(variant, c)
        folds = [(b, fit([air[i] for i in a] + con, pairs)) for a, b in _splits([st.group for st in air], 5)]
        by_domain = [(d, fit(air + [s for s in con if s.domain != d], [p for p in pairs if p.domain != d]))
                     for d in domains]  # fmt: skip
        for cut in cuts:
            held_air: dict[int, list[int]] = {}
            for b, clf in folds:
                held_air.update(zip(b, _labels([air[i] for i in b], _Classifier(clf, cut)), strict=True))
            pred, truth, same, held_pairs = [], [], [], []
            for d, clf in by_domain:
                test = [s for s in con if s.domain == d]
                pred += _labels(test, _Classifier(clf, cut))
                truth += test
                dp = [p for p in pairs if p.domain == d]
                if dp:
                    p_same = _Classifier(clf, cut).p_same(np.vstack([p.x for p in dp]))
                    same += [bool(v) for v in (1.0 - p_same) < cut]
                held_pairs += dp
            out.append(_row(variant, cut, [held_air[i] for i in range(len(air))], air, pred, truth, same, held_pairs))
    return out


def _row(variant: str, cut: float, air_pred: list, air: list, pred: list, truth: list, same: list, pairs: list) -> dict:
    from collapse_probe.metrics._service import evaluate, evaluate_pairs

    a = evaluate(air_pred, [st.labels for st in air])
    s = evaluate(pred, [st.labels for st in truth])
    p = evaluate_pairs(same, pairs)
    return {"variant": variant, "cut": cut, "airline": (a["mean_abs_error"], a["mean_ari"]),
            "constructed": (s["mean_abs_error"], s["mean_ari"]),
            "pairs": (p["contrasts_split"], p["paraphrases_merged"])}  # fmt: skip


def wrong_pairs(cut: float, shared: Path = SHARED) -> dict[tuple[str, str], int]:
    """The constructed pairs the shipped logistic regression reads the wrong way with their domain held out,
    counted by kind and by what the features see differ: ``distinct substitution`` (a content word with no
    synonym on the other side in place of another), else ``distinct addition`` (words only one reply has),
    else ``fact or act`` (a fact family, an act, a negation, polarity or choice), else ``nothing counted``."""
    from collapse_probe.metrics._disclosure import feature_names
    from collapse_probe.metrics._service import _fit_lr, _predict_pairs, load_service_model

    air, con, pairs = material(shared)
    c = float(load_service_model().info.get("C") or 1.0)
    col = {name: i for i, name in enumerate(feature_names())}
    marks = [n for n in col if n.startswith("differs:") or n == "n_act_differences"]
    out: dict[tuple[str, str], int] = {}
    for d in sorted({p.domain for p in pairs}):
        coef, icpt = _fit_lr(air + [s for s in con if s.domain != d], c, [p for p in pairs if p.domain != d])
        held = [p for p in pairs if p.domain == d]
        for p, same in zip(held, _predict_pairs(held, coef, icpt, cut), strict=True):
            if same == p.same:
                continue
            if p.x[col["distinct_words_substituted"]] > 0:
                what = "distinct substitution"
            elif p.x[col["distinct_words_added"]] > 0:
                what = "distinct addition"
            elif any(p.x[col[n]] > 0 for n in marks):
                what = "fact or act"
            else:
                what = "nothing counted"
            key = ("contrast merged" if not p.same else "paraphrase split", what)
            out[key] = out.get(key, 0) + 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--cuts", default="0.5,0.4,0.6", help="comma-separated cuts (default: 0.5,0.4,0.6)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--wrong", action="store_true",
                        help="instead: the constructed pairs the shipped model reads the wrong way (first cut), by what differs")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        cuts = [float(x) for x in args.cuts.split(",") if x.strip()]
    except ValueError:
        parser.error(f"--cuts: expected comma-separated numbers, got {args.cuts!r}")
    if not cuts or not all(0 < x < 1 for x in cuts):
        parser.error(f"--cuts: every cut must lie in (0, 1), got {args.cuts!r}")
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        parser.error(f"--variants: expected some of {', '.join(VARIANTS)}, got {args.variants!r}")
    if not (SHARED / "states.jsonl").is_file():
        print(f"skipped: {SHARED / 'states.jsonl'} is absent (the airline states live in ../shared)")
        return 0
    if args.wrong:
        counts = wrong_pairs(cuts[0])
        print(f"constructed pairs read the wrong way, domain held out (logistic regression, cut {cuts[0]}):")
        for (kind, what), n in sorted(counts.items()):
            print(f"  {kind:<18} {what:<22} {n:>4}")
        return 0
    print(
        "pair-feature classifiers on the training material's own splits (|Δε| / ARI; pairs: contrasts split / paraphrases merged)"
    )
    print(
        f"{'variant':<8} {'cut':>5}  {'airline by task':>16}  {'constructed, domain out':>24}  {'constructed pairs':>18}"
    )
    for r in rows(variants, cuts):
        print(f"{r['variant']:<8} {r['cut']:>5.2f}  {r['airline'][0]:>7.3f} / {r['airline'][1]:.3f}  "
              f"{r['constructed'][0]:>15.3f} / {r['constructed'][1]:.3f}  "
              f"{r['pairs'][0]:>9.0%} / {r['pairs'][1]:.0%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
