"""The customer-service meaning partition: a pairwise equivalence model over what replies disclose.

Two replies at one state are the same meaning when they make the same request and disclose the same
task facts (:data:`~collapse_probe.metrics._disclosure.RUBRIC`). The model reads a pair through
:func:`~collapse_probe.metrics._disclosure.pair_features` — which fact families and concepts differ
between the two replies' new disclosures (what the conversation so far had not said), and their
cosine distance under the packaged all-MiniLM-L6-v2 — and a logistic regression gives the
probability that they are one class. The replies of a state are clustered by average linkage on
``1 − P(same)``, cut at :attr:`ServiceModel.cut`.

The coefficients ship as plain numbers in ``collapse_probe/data/calibration/service_meaning.json``,
fitted by ``python scripts/fit_service_partition.py`` on labelled states of real user simulators
(τ2-bench and τ-bench airline runs; ``C`` and the cut chosen by cross-validation grouped by source
file, the held-out figures stored beside the coefficients), with the *domain* they are valid for:
the centroid of the training replies' embeddings and the similarity below which a state's replies
are not customer-service replies (:meth:`ServiceModel.in_domain`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from collapse_probe._resources import package_path
from collapse_probe._state import on_reset
from collapse_probe.errors import ConfigError
from collapse_probe.metrics._disclosure import disclosures, feature_names, pair_features
from collapse_probe.metrics._text import normalize_text

__all__ = [
    "MODEL_FILE",
    "SERVICE_DOMAIN",
    "ServiceModel",
    "domain_similarity",
    "fit_service_model",
    "load_service_model",
    "service_labels",
    "state_disclosures",
]

MODEL_FILE = ("data", "calibration", "service_meaning.json")
MODEL_FORMAT = "collapse-probe/service-meaning/v1"
SERVICE_DOMAIN = "customer-service user replies (τ2-bench / τ-bench airline user simulators)"
"""The domain the shipped model was fitted and checked on, as the audit names it."""


@dataclass(frozen=True)
class ServiceModel:
    """The fitted pairwise model and its domain (see the module docstring)."""

    coef: np.ndarray
    intercept: float
    cut: float
    """Average-linkage cut on ``1 − P(same)``: groups merge while their mean is below it."""
    features: tuple[str, ...]
    centroid: np.ndarray
    """Unit mean of the training states' mean reply embeddings."""
    domain_threshold: float
    """A state is in the domain when its replies' mean embedding has cosine ≥ this with the centroid."""
    encoder: str
    sha256: str
    info: dict[str, Any]

    def p_same(self, x: np.ndarray) -> np.ndarray:
        """P(one class) for rows of pair features."""
        z = np.asarray(x, dtype=np.float64) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))

    def in_domain(self, similarity: float) -> bool:
        """Whether a state of this :func:`domain_similarity` is in the model's domain."""
        return similarity >= self.domain_threshold


@lru_cache(maxsize=1)
def _load(path: str) -> ServiceModel:
    from pathlib import Path

    p = Path(path)
    try:
        raw = p.read_bytes()
        payload = json.loads(raw)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{p}: the shipped service-meaning model cannot be read ({exc})") from None
    if not isinstance(payload, dict) or payload.get("format") != MODEL_FORMAT:
        raise ConfigError(f"{p}: expected a {MODEL_FORMAT} file")
    names = list(payload.get("features") or [])
    if names != feature_names():
        raise ConfigError(f"{p}: its features do not match this version's ({len(names)} vs {len(feature_names())})")
    return ServiceModel(
        coef=np.asarray(payload["coef"], dtype=np.float64),
        intercept=float(payload["intercept"]),
        cut=float(payload["cut"]),
        features=tuple(names),
        centroid=np.asarray(payload["domain"]["centroid"], dtype=np.float64),
        domain_threshold=float(payload["domain"]["threshold"]),
        encoder=str(payload.get("encoder")),
        sha256=hashlib.sha256(raw).hexdigest()[:12],
        info={k: payload.get(k) for k in ("C", "trained_on", "cv")},
    )


on_reset("metrics.service_model", _load.cache_clear)


def load_service_model(path: str | None = None) -> ServiceModel:
    """The shipped model (``path``: another file of the same format)."""
    return _load(str(path or package_path(*MODEL_FILE)))


def state_disclosures(replies: Sequence[str], context: str | None) -> list[frozenset[str]]:
    """Each reply's disclosures less what ``context`` (the conversation so far) already disclosed."""
    known = disclosures(context) if context else frozenset()
    return [disclosures(t) - known for t in replies]


def _pairs(found: Sequence[frozenset[str]], emb: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    idx = list(itertools.combinations(range(len(found)), 2))
    if not idx:
        return np.zeros((0, len(feature_names()))), idx
    dist = np.clip(1.0 - np.einsum("ij,ij->i", emb[[i for i, _ in idx]], emb[[j for _, j in idx]]), 0.0, 2.0)
    x = np.array([pair_features(found[i], found[j], float(d)) for (i, j), d in zip(idx, dist, strict=True)])
    return x, idx


def _cluster(n: int, idx: list[tuple[int, int]], p_same: np.ndarray, cut: float) -> list[int]:
    if n == 1:
        return [0]
    from sklearn.cluster import AgglomerativeClustering

    d = np.zeros((n, n))
    for (i, j), p in zip(idx, p_same, strict=True):
        d[i, j] = d[j, i] = 1.0 - p
    fit = AgglomerativeClustering(n_clusters=None, metric="precomputed", linkage="average", distance_threshold=cut)
    return _renumber(fit.fit(d).labels_.tolist())


def service_labels(found: Sequence[frozenset[str]], emb: np.ndarray, model: ServiceModel) -> list[int]:
    """Class labels of one state's distinct replies (their disclosures and unit embeddings)."""
    x, idx = _pairs(found, emb)
    p = model.p_same(x) if len(idx) else np.zeros(0)
    return _cluster(len(found), idx, p, model.cut)


def domain_similarity(emb: np.ndarray, centroid: np.ndarray) -> float:
    """Cosine between a state's mean reply embedding and a domain's centroid."""
    m = np.asarray(emb, dtype=np.float64).mean(axis=0)
    norm = float(np.linalg.norm(m))
    return float(m @ centroid / norm) if norm > 0 else 0.0


# --------------------------------------------------------------------------------------------------
# fitting


@dataclass
class LabelledState:
    """A labelled state for fitting: its distinct replies' disclosures, embeddings and labels."""

    found: list[frozenset[str]]
    emb: np.ndarray
    labels: list[int]
    group: str
    simulator: str = ""
    texts: list[str] = field(default_factory=list)

    def distinct(self) -> tuple[list[int], list[int]]:
        """``(first index of each distinct reply, each reply's distinct index)``: replies equal after
        :func:`~collapse_probe.metrics.partitioners.normalize_text` are one reply, as the partition reads them."""
        firsts: dict[str, int] = {}
        inverse = []
        for t in self.texts or [str(i) for i in range(len(self.labels))]:
            inverse.append(firsts.setdefault(normalize_text(t), len(firsts)))
        reps = [0] * len(firsts)
        for i, d in reversed(list(enumerate(inverse))):
            reps[d] = i
        return reps, inverse


def _collapse_error(labels: Sequence[int]) -> float:
    return 1.0 - max(np.bincount(np.asarray(labels))) / len(labels)


def evaluate(pred: Sequence[Sequence[int]], truth: Sequence[Sequence[int]]) -> dict[str, float]:
    """Per-state mean |ε̂ − ε|, mean adjusted Rand index, mean signed error and the share of states read
    more than 0.2 too collapsed, of predicted against labelled partitions."""
    from sklearn.metrics import adjusted_rand_score

    d = np.array([_collapse_error(p) - _collapse_error(t) for p, t in zip(pred, truth, strict=True)])
    ari = np.array([adjusted_rand_score(t, p) for p, t in zip(pred, truth, strict=True)])
    return {"mean_abs_error": float(np.abs(d).mean()), "mean_ari": float(ari.mean()),
            "bias": float(d.mean()), "too_collapsed_share": float((d < -0.2).mean()), "n_states": len(d)}  # fmt: skip


def _fit_lr(states: Sequence[LabelledState], c: float) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    xs, ys, ws = [], [], []
    for st in states:
        reps, _ = st.distinct()
        x, idx = _pairs([st.found[r] for r in reps], st.emb[reps])
        if not idx:
            continue
        xs.append(x)
        ys.append(np.array([st.labels[reps[i]] == st.labels[reps[j]] for i, j in idx]))
        ws.append(np.full(len(idx), 1.0 / len(idx)))  # every state weighs the same, whatever its size
    y = np.concatenate(ys)
    if y.all() or not y.any():
        raise ConfigError("fitting the service model needs both same-class and different-class pairs")
    m = LogisticRegression(C=c, max_iter=5000, class_weight="balanced")
    m.fit(np.vstack(xs), y, sample_weight=np.concatenate(ws))
    return m.coef_[0].astype(np.float64), float(m.intercept_[0])


def _predict(states: Sequence[LabelledState], coef: np.ndarray, intercept: float, cut: float) -> list[list[int]]:
    model = ServiceModel(coef, intercept, cut, tuple(feature_names()), np.zeros(1), 0.0, "", "", {})
    out = []
    for st in states:
        reps, inverse = st.distinct()
        labels = service_labels([st.found[r] for r in reps], st.emb[reps], model)
        out.append(_renumber([labels[d] for d in inverse]))
    return out


def _renumber(labels: Sequence[int]) -> list[int]:
    seen: dict[int, int] = {}
    return [seen.setdefault(x, len(seen)) for x in labels]


def _grouped_folds(states: Sequence[LabelledState], folds: int) -> list[tuple[list[int], list[int]]]:
    from sklearn.model_selection import GroupKFold

    groups = [st.group for st in states]
    k = min(folds, len(set(groups)))
    return [(list(a), list(b)) for a, b in GroupKFold(n_splits=k).split(groups, groups=groups)]


def _choose(states: Sequence[LabelledState], cs: Sequence[float], cuts: Sequence[float],
            folds: int) -> tuple[float, float, dict[str, float]]:  # fmt: skip
    """``(C, cut, grouped-CV mean |Δε| by "C/cut")``: the pair whose cut *and its neighbours in the grid*
    have the smallest mean |Δε| on average, so the choice sits on a plateau and not at the edge of a
    cliff (a cut just beside the best one can merge every reply); ties: the smaller C, then cut."""
    splits = _grouped_folds(states, folds)
    scores: dict[str, float] = {}
    best: tuple[float, float, float] | None = None
    for c in cs:
        fitted = [(_fit_lr([states[i] for i in a], c), b) for a, b in splits]
        errors = []
        for cut in cuts:
            pred: dict[int, list[int]] = {}
            for (coef, icpt), b in fitted:
                for i, lab in zip(b, _predict([states[i] for i in b], coef, icpt, cut), strict=True):
                    pred[i] = lab
            ev = evaluate([pred[i] for i in range(len(states))], [st.labels for st in states])
            scores[f"{c:g}/{cut:g}"] = round(ev["mean_abs_error"], 4)
            errors.append(ev["mean_abs_error"])
        for k, cut in enumerate(cuts):
            plateau = float(np.mean(errors[max(0, k - 1) : k + 2]))
            if best is None or (plateau, c, cut) < best:
                best = (plateau, c, cut)
    assert best is not None
    return best[1], best[2], scores


def fit_service_model(
    states: Sequence[LabelledState],
    encoder: str,
    cs: Sequence[float] = (0.03, 0.1, 0.3, 1.0, 3.0),
    cuts: Sequence[float] = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6),
    folds: int = 5,
) -> dict[str, Any]:
    """Fit the model on labelled states; returns the model file's content.

    ``C`` and the cut are chosen by cross-validation grouped by ``group`` (the source file: no run's
    states are both fitted and checked); the figures stored under ``cv`` are *nested*: for each outer
    fold, C and the cut are chosen on the other folds only, so they are held-out estimates of the
    whole procedure. Then the model is refitted on all states. The domain threshold is the 2nd
    percentile of the training states' similarity to their centroid, less 0.05.
    """
    splits = _grouped_folds(states, folds)
    outer: dict[int, list[int]] = {}
    chosen = []
    for a, b in splits:
        inner = [states[i] for i in a]
        c, cut, _ = _choose(inner, cs, cuts, folds)
        coef, icpt = _fit_lr(inner, c)
        chosen.append(f"{c:g}/{cut:g}")
        for i, lab in zip(b, _predict([states[i] for i in b], coef, icpt, cut), strict=True):
            outer[i] = lab
    pred = [outer[i] for i in range(len(states))]
    truth = [st.labels for st in states]
    by_sim: dict[str, dict[str, float]] = {}
    for sim in sorted({st.simulator for st in states}):
        rows = [i for i, st in enumerate(states) if st.simulator == sim]
        by_sim[sim] = evaluate([pred[i] for i in rows], [truth[i] for i in rows])
    c, cut, scores = _choose(states, cs, cuts, folds)
    coef, icpt = _fit_lr(states, c)
    means = np.array([st.emb.mean(axis=0) / max(np.linalg.norm(st.emb.mean(axis=0)), 1e-12) for st in states])
    centroid = means.mean(axis=0)
    centroid /= np.linalg.norm(centroid)
    sims = means @ centroid
    return {
        "format": MODEL_FORMAT,
        "encoder": encoder,
        "features": feature_names(),
        "C": c,
        "cut": cut,
        "coef": np.round(coef, 6).tolist(),
        "intercept": round(icpt, 6),
        "domain": {
            "name": SERVICE_DOMAIN,
            "centroid": np.round(centroid, 6).tolist(),
            "threshold": round(float(np.percentile(sims, 2)) - 0.05, 4),
            "training_similarity": {"min": round(float(sims.min()), 4), "median": round(float(np.median(sims)), 4)},
        },  # fmt: skip
        "trained_on": {
            "states": len(states),
            "sources": len({st.group for st in states}),
            "simulators": sorted({st.simulator for st in states}),
        },  # fmt: skip
        "cv": {
            "nested_grouped_by_source": {**evaluate(pred, truth), "chosen_per_fold": chosen, "by_simulator": by_sim},
            "grid_mean_abs_error": scores,
        },  # fmt: skip
    }


def labelled_states(records: Sequence[dict[str, Any]], embed: Callable[[list[str]], np.ndarray]) -> list[LabelledState]:
    """Labelled states from ``states.jsonl``-shaped records (``replies``, ``labels``, ``prefix``,
    ``source``, ``simulator``), with each reply's embedding from ``embed`` (called once, on the
    distinct texts)."""
    prepared = []
    texts: dict[str, None] = {}
    for n, rec in enumerate(records):
        replies, labels = rec.get("replies"), rec.get("labels")
        if not isinstance(replies, list) or not isinstance(labels, list) or len(replies) != len(labels) or not replies:
            raise ConfigError(f"state {n}: 'replies' and 'labels' must be non-empty lists of one length")
        context = " ".join(str(m.get("content") or "") for m in rec.get("prefix") or [] if isinstance(m, dict))
        prepared.append((rec, [str(t) for t in replies], labels, context))
        texts.update(dict.fromkeys(str(t) for t in replies))
    unique = list(texts)
    emb = np.asarray(embed(unique))
    row = {t: i for i, t in enumerate(unique)}
    return [
        LabelledState(
            found=state_disclosures(replies, context),
            emb=emb[[row[t] for t in replies]],
            labels=[int(x) for x in labels],
            group=str(rec.get("source")),
            simulator=str(rec.get("simulator") or ""),
            texts=replies,
        )  # fmt: skip
        for rec, replies, labels, context in prepared
    ]
