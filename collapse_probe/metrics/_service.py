"""The customer-service meaning partition: a pairwise equivalence model over what replies disclose.

Two replies at one state are the same meaning when they make the same request and disclose the same
task facts (:data:`~collapse_probe.metrics._disclosure.RUBRIC`). The model reads a pair through
:func:`~collapse_probe.metrics._disclosure.pair_features` — which fact families and concepts differ
between the two replies' new disclosures (what the conversation so far had not said), and their
cosine distance under the packaged all-MiniLM-L6-v2 — and a logistic regression gives the
probability that they are one class. The replies of a state are clustered by average linkage on
``1 − P(same)``, cut at :attr:`ServiceModel.cut`.

The coefficients ship as plain numbers in ``collapse_probe/data/calibration/service_meaning.json``,
fitted by ``python datasets/build/fit_service_partition.py`` on labelled states of real user simulators
(τ2-bench and τ-bench airline runs; ``C`` and the cut chosen by cross-validation grouped by source
file, the held-out figures stored beside the coefficients), with the *domain* they are valid for:
the centroid of the training replies' embeddings and the similarity below which a state's replies
are not customer-service replies (:meth:`ServiceModel.in_domain`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NotRequired, Required, TypedDict

import numpy as np
from pydantic import JsonValue

from collapse_probe.core._resources import package_path
from collapse_probe.core._state import on_reset
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
MODEL_FORMAT = "collapse-probe/service-meaning/v2"
SERVICE_DOMAIN = "customer-service user replies"
"""The kind of text the shipped model was fitted and checked on, as the audit names it (the validated
domains themselves are in the model file: :attr:`ServiceModel.domains`)."""


class ServiceInfo(TypedDict, total=False):
    """How a service-meaning model was fitted, as its file says (:class:`ServiceModel`'s ``info``; empty
    for a model fitted on a fold and never written)."""

    C: JsonValue
    """The chosen inverse regularization strength."""
    trained_on: JsonValue
    """What it was fitted on (:class:`TrainedOn`)."""
    cv: JsonValue
    """The cross-validation scores (``{"grid_objective": {"C/cut": score}}``)."""
    domains: JsonValue
    """The validated domains."""


class TrainingSimilarity(TypedDict):
    """The training states' own :func:`domain_similarity`."""

    min: float
    median: float


class ServiceDomain(TypedDict):
    """The model file's ``domain`` (:func:`domain_fields`)."""

    name: str
    """The kind of text (:data:`SERVICE_DOMAIN`)."""
    validated: list[str]
    """The validated domains, one centroid each."""
    centroids: list[list[float]]
    others: dict[str, list[float]]
    """Known other kinds of text -> centroid."""
    threshold: float
    """The in-domain cosine threshold."""
    training_similarity: TrainingSimilarity


class TrainedOn(TypedDict):
    """What a model was fitted on."""

    states: int
    pairs: int
    groups: int
    """Cross-validation groups (tasks and constructed domains)."""
    simulators: list[str]
    domains: list[str]
    sha256: NotRequired[dict[str, str]]
    """Material file -> its digest (added by the fitting script)."""


class CrossValidation(TypedDict, total=False):
    grid_objective: Required[dict[str, float]]
    """``"C/cut"`` -> the grouped cross-validation objective."""
    cut_fixed: float
    """The cut the fit was told to use (``C`` chosen at it), where it was not chosen by the grid."""


class ServiceModelFile(TypedDict):
    """The content of a service-meaning model file (:func:`fit_service_model`)."""

    format: str
    encoder: str
    features: list[str]
    C: float
    cut: float
    coef: list[float]
    intercept: float
    domain: ServiceDomain
    trained_on: TrainedOn
    cv: CrossValidation


@dataclass(frozen=True)
class ServiceModel:
    """The fitted pairwise model and its domain (see the module docstring)."""

    coef: np.ndarray
    intercept: float
    cut: float
    """Average-linkage cut on ``1 − P(same)``: groups merge while their mean is below it."""
    features: tuple[str, ...]
    centroid: np.ndarray
    """One row per validated domain: the unit mean of its states' mean reply embeddings."""
    others: np.ndarray
    """One row per known *other* kind of text (P4G persuadee replies): a state nearer to one of them than
    to every validated domain is outside."""
    domain_threshold: float
    """A state is in a validated domain when its replies' mean embedding has cosine ≥ this with the
    domain's centroid."""
    encoder: str
    sha256: str
    info: ServiceInfo

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
        centroid=np.atleast_2d(np.asarray(payload["domain"]["centroids"], dtype=np.float64)),
        others=np.asarray(list((payload["domain"].get("others") or {}).values()), dtype=np.float64).reshape(
            -1, len(payload["domain"]["centroids"][0])
        ),
        domain_threshold=float(payload["domain"]["threshold"]),
        encoder=str(payload.get("encoder")),
        sha256=hashlib.sha256(raw).hexdigest()[:12],
        info={
            "C": payload.get("C"),
            "trained_on": payload.get("trained_on"),
            "cv": payload.get("cv"),
            "domains": payload["domain"].get("validated"),
        },
    )


on_reset("metrics.service_model", _load.cache_clear)


def load_service_model(path: str | None = None) -> ServiceModel:
    """The shipped model (``path``: another file of the same format)."""
    return _load(str(path or package_path(*MODEL_FILE)))


def state_disclosures(replies: Sequence[str], context: str | None) -> tuple[list[frozenset[str]], frozenset[str]]:
    """Each reply's disclosures, and what ``context`` (the conversation so far) already disclosed
    (:func:`~collapse_probe.metrics._disclosure.pair_features` reads restatements and choices from it)."""
    known = disclosures(context) if context else frozenset()
    return [disclosures(t) for t in replies], known


class WordVectors:
    """Unit encoder embeddings of content words (``w:`` lemmas), embedded once each, and their cosine:
    the synonym test of :func:`~collapse_probe.metrics._disclosure.pair_features`."""

    def __init__(self, embed: Callable[[list[str]], np.ndarray]) -> None:
        self.embed = embed
        self.vectors: dict[str, np.ndarray] = {}

    def add(self, found: Sequence[frozenset[str]]) -> WordVectors:
        """Embed the content words of ``found`` not embedded yet (one call)."""
        new = sorted({x[2:] for f in found for x in f if x.startswith("w:")} - set(self.vectors))
        if new:
            self.vectors.update(zip(new, np.asarray(self.embed(new), dtype=np.float64), strict=True))
        return self

    def similarity(self, a: str, b: str) -> float:
        va, vb = self.vectors.get(a), self.vectors.get(b)
        return float(va @ vb) if va is not None and vb is not None else 0.0


def _pairs(found: Sequence[frozenset[str]], emb: np.ndarray, words: WordVectors | None = None,
           known: frozenset[str] = frozenset()) -> tuple[np.ndarray, list[tuple[int, int]]]:  # fmt: skip
    idx = list(itertools.combinations(range(len(found)), 2))
    if not idx:
        return np.zeros((0, len(feature_names()))), idx
    dist = np.clip(1.0 - np.einsum("ij,ij->i", emb[[i for i, _ in idx]], emb[[j for _, j in idx]]), 0.0, 2.0)
    sim = words.similarity if words is not None else None
    x = np.array([pair_features(found[i], found[j], float(d), sim, known)
                  for (i, j), d in zip(idx, dist, strict=True)])  # fmt: skip
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


def service_labels(found: Sequence[frozenset[str]], emb: np.ndarray, model: ServiceModel,
                   words: WordVectors | None = None, known: frozenset[str] = frozenset()) -> list[int]:  # fmt: skip
    """Class labels of one state's distinct replies (their disclosures, unit embeddings and the
    embeddings of their content words)."""
    x, idx = _pairs(found, emb, words, known)
    p = model.p_same(x) if len(idx) else np.zeros(0)
    return _cluster(len(found), idx, p, model.cut)


def domain_similarity(emb: np.ndarray, centroid: np.ndarray, others: np.ndarray | None = None) -> float:
    """Cosine between a state's mean reply embedding and the nearest validated domain's centroid (rows of
    ``centroid``), less the margin by which the nearest known other kind of text (rows of ``others``) is
    nearer still: persuasion replies about money sit close to banking (0.51) but closer to persuasion."""
    m = np.asarray(emb, dtype=np.float64).mean(axis=0)
    norm = float(np.linalg.norm(m))
    if norm == 0:
        return 0.0
    near = float(np.max(np.atleast_2d(centroid) @ m) / norm)
    if others is not None and len(others):
        near -= max(0.0, float(np.max(others @ m) / norm) - near)
    return near


def domain_fields(states: Sequence[LabelledState], others: dict[str, np.ndarray]) -> ServiceDomain:
    """The model file's ``domain``: each domain of the training states is a validated domain with its
    centroid (:func:`domain_centroids`); ``others`` are centroids of known other kinds of text; the
    threshold is the 5th percentile of the training states' own :func:`domain_similarity`, so that a
    state of an unseen kind (dev-ops, careers, code, chit-chat: 0.2–0.33) reads outside."""
    names, cents = domain_centroids(states)
    other = np.array(list(others.values()), dtype=np.float64).reshape(-1, cents.shape[1])
    sims = np.array([domain_similarity(st.emb, cents, other) for st in states])
    return {
        "name": SERVICE_DOMAIN,
        "validated": names,
        "centroids": np.round(cents, 6).tolist(),
        "others": {k: np.round(v, 6).tolist() for k, v in others.items()},
        "threshold": round(float(np.percentile(sims, 5)), 4),
        "training_similarity": {"min": round(float(sims.min()), 4), "median": round(float(np.median(sims)), 4)},
    }


def domain_centroids(states: Sequence[LabelledState]) -> tuple[list[str], np.ndarray]:
    """Each domain's centroid: the unit mean of its states' unit mean reply embeddings."""
    names = sorted({st.domain for st in states})
    rows = []
    for name in names:
        means = np.array([st.emb.mean(axis=0) / max(np.linalg.norm(st.emb.mean(axis=0)), 1e-12)
                          for st in states if st.domain == name])  # fmt: skip
        c = means.mean(axis=0)
        rows.append(c / np.linalg.norm(c))
    return names, np.array(rows)


# --------------------------------------------------------------------------------------------------
# fitting


@dataclass
class LabelledState:
    """A labelled state for fitting: its distinct replies' disclosures, embeddings and labels."""

    found: list[frozenset[str]]
    emb: np.ndarray
    labels: list[int]
    group: str
    """What no split may share between fitting and checking: the benchmark's task (airline) or the
    domain (constructed material)."""
    simulator: str = ""
    texts: list[str] = field(default_factory=list)
    domain: str = ""
    words: WordVectors | None = None
    known: frozenset[str] = frozenset()

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


@dataclass
class LabelledPair:
    """A constructed pair of replies after one prompt: its features and whether it is one meaning."""

    x: np.ndarray
    same: bool
    domain: str
    kind: str
    differs_in: str = ""


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


def evaluate_pairs(same_pred: Sequence[bool], pairs: Sequence[LabelledPair]) -> dict[str, float]:
    """Share of contrast pairs split and of paraphrase pairs merged."""
    split = [not p for p, q in zip(same_pred, pairs, strict=True) if not q.same]
    merged = [bool(p) for p, q in zip(same_pred, pairs, strict=True) if q.same]
    return {"contrasts_split": float(np.mean(split)) if split else float("nan"), "n_contrasts": len(split),
            "paraphrases_merged": float(np.mean(merged)) if merged else float("nan"), "n_paraphrases": len(merged)}  # fmt: skip


PAIR_WEIGHT = 0.3
"""The constructed pairs' total weight in the fit, as a multiple of the states' (each state weighs 1)."""


def training_rows(
    states: Sequence[LabelledState], pairs: Sequence[LabelledPair] = ()
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fit's rows ``(features, same class, weight)``: every pair of every state's distinct replies (each state
    weighs the same, whatever its size) and the constructed pairs (together ``PAIR_WEIGHT`` times the states)."""
    xs, ys, ws = [], [], []
    for st in states:
        reps, _ = st.distinct()
        x, idx = _pairs([st.found[r] for r in reps], st.emb[reps], st.words, st.known)
        if not idx:
            continue
        xs.append(x)
        ys.append(np.array([st.labels[reps[i]] == st.labels[reps[j]] for i, j in idx]))
        ws.append(np.full(len(idx), 1.0 / len(idx)))
    if pairs:
        xs.append(np.vstack([p.x for p in pairs]))
        ys.append(np.array([p.same for p in pairs]))
        ws.append(np.full(len(pairs), PAIR_WEIGHT * max(len(ws), 1) / len(pairs)))
    return np.vstack(xs), np.concatenate(ys), np.concatenate(ws)


def _fit_lr(states: Sequence[LabelledState], c: float, pairs: Sequence[LabelledPair] = ()) -> tuple[np.ndarray, float]:
    """Logistic regression on :func:`training_rows`, classes balanced."""
    from sklearn.linear_model import LogisticRegression

    x, y, w = training_rows(states, pairs)
    if y.all() or not y.any():
        raise ConfigError("fitting the service model needs both same-class and different-class pairs")
    m = LogisticRegression(C=c, max_iter=5000, class_weight="balanced")
    m.fit(x, y, sample_weight=w)
    return m.coef_[0].astype(np.float64), float(m.intercept_[0])


def _bare_model(coef: np.ndarray, intercept: float, cut: float) -> ServiceModel:
    """A model of these coefficients with no domain (for predicting held-out folds)."""
    return ServiceModel(coef=coef, intercept=intercept, cut=cut, features=tuple(feature_names()),
                        centroid=np.zeros((0, 1)), others=np.zeros((0, 1)), domain_threshold=0.0, encoder="",
                        sha256="", info={})  # fmt: skip


def _predict(states: Sequence[LabelledState], coef: np.ndarray, intercept: float, cut: float) -> list[list[int]]:
    model = _bare_model(coef, intercept, cut)
    out = []
    for st in states:
        reps, inverse = st.distinct()
        labels = service_labels([st.found[r] for r in reps], st.emb[reps], model, st.words, st.known)
        out.append(_renumber([labels[d] for d in inverse]))
    return out


def _predict_pairs(pairs: Sequence[LabelledPair], coef: np.ndarray, intercept: float, cut: float) -> list[bool]:
    """Two replies are one class when ``1 − P(same)`` is below the cut (average linkage of two)."""
    if not pairs:
        return []
    model = _bare_model(coef, intercept, cut)
    return [bool(p) for p in (1.0 - model.p_same(np.vstack([q.x for q in pairs]))) < cut]


def _renumber(labels: Sequence[int]) -> list[int]:
    seen: dict[int, int] = {}
    return [seen.setdefault(x, len(seen)) for x in labels]


def _splits(groups: Sequence[str], folds: int) -> list[tuple[list[int], list[int]]]:
    from sklearn.model_selection import GroupKFold

    k = min(folds, len(set(groups)))
    return [(list(a), list(b)) for a, b in GroupKFold(n_splits=k).split(groups, groups=groups)]


def _objective(ev: dict[str, float], pair_ev: dict[str, float]) -> float:
    """What the choice of C and the cut minimises: mean |Δε| + 0.1 (1 − mean ARI) + 0.1 × the share of
    constructed pairs read the wrong way (contrasts merged and paraphrases split, averaged)."""
    wrong = [1 - pair_ev[k] for k in ("contrasts_split", "paraphrases_merged") if not np.isnan(pair_ev[k])]
    return ev["mean_abs_error"] + 0.1 * (1 - ev["mean_ari"]) + 0.1 * (float(np.mean(wrong)) if wrong else 0.0)


def _choose(states: Sequence[LabelledState], pairs: Sequence[LabelledPair], cs: Sequence[float],
            cuts: Sequence[float], folds: int) -> tuple[float, float, dict[str, float]]:  # fmt: skip
    """``(C, cut, grouped-CV objective by "C/cut")``: states grouped by task or domain and pairs by domain,
    held out together; the pair whose cut *and its neighbours in the grid* score best on average, so the
    choice sits on a plateau and not at the edge of a cliff; ties: the smaller C, then cut."""
    groups = [st.group for st in states] + [p.domain for p in pairs]
    n = len(states)
    splits = _splits(groups, folds)
    scores: dict[str, float] = {}
    best: tuple[float, float, float] | None = None
    for c in cs:
        fitted = []
        for a, b in splits:
            coef, icpt = _fit_lr([states[i] for i in a if i < n], c, [pairs[i - n] for i in a if i >= n])
            fitted.append((coef, icpt, [i for i in b if i < n], [i - n for i in b if i >= n]))
        values = []
        for cut in cuts:
            pred: dict[int, list[int]] = {}
            same: dict[int, bool] = {}
            for coef, icpt, bs, bp in fitted:
                pred.update(zip(bs, _predict([states[i] for i in bs], coef, icpt, cut), strict=True))
                same.update(zip(bp, _predict_pairs([pairs[i] for i in bp], coef, icpt, cut), strict=True))
            ev = evaluate([pred[i] for i in range(n)], [st.labels for st in states])
            pev = evaluate_pairs([same[i] for i in range(len(pairs))], pairs)
            scores[f"{c:g}/{cut:g}"] = round(_objective(ev, pev), 4)
            values.append(scores[f"{c:g}/{cut:g}"])
        for k, cut in enumerate(cuts):
            plateau = float(np.mean(values[max(0, k - 1) : k + 2]))
            if best is None or (plateau, c, cut) < best:
                best = (plateau, c, cut)
    assert best is not None
    return best[1], best[2], scores


DEFAULT_CS = (0.1, 0.3, 1.0, 3.0)
DEFAULT_CUTS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)


def fit_service_model(
    states: Sequence[LabelledState],
    encoder: str,
    pairs: Sequence[LabelledPair] = (),
    cs: Sequence[float] = DEFAULT_CS,
    cuts: Sequence[float] = DEFAULT_CUTS,
    folds: int = 5,
    others: dict[str, np.ndarray] | None = None,
    cut: float | None = None,
) -> ServiceModelFile:
    """Fit the model on labelled states and constructed pairs; returns the model file's content.

    ``C`` and the cut are chosen by cross-validation grouped by task (labelled benchmark states) and
    domain (constructed material), then the model is refitted on everything. Each domain of the states
    is a validated domain (:func:`domain_fields`); ``others``: centroids of known other kinds of text.
    ``cut``: the cut is this grid point (``C`` is still chosen, at it); the file records that it was fixed.
    """
    if cut is not None and cut not in cuts:
        raise ConfigError(f"cut: expected one of the grid's cuts {list(cuts)}, got {cut}")
    cv: CrossValidation = {"grid_objective": {}}
    if cut is not None:
        cv["cut_fixed"] = cut
    c, chosen, scores = _choose(states, pairs, cs, cuts, folds)
    if cut is not None:  # C is the best at the fixed cut (ties: the smaller); the whole grid stays recorded
        c = min(cs, key=lambda x: (scores[f"{x:g}/{cut:g}"], x))
        chosen = cut
    cut = chosen
    cv["grid_objective"] = scores
    coef, icpt = _fit_lr(states, c, pairs)
    return {
        "format": MODEL_FORMAT,
        "encoder": encoder,
        "features": feature_names(),
        "C": c,
        "cut": cut,
        "coef": np.round(coef, 6).tolist(),
        "intercept": round(icpt, 6),
        "domain": domain_fields(states, others or {}),
        "trained_on": {
            "states": len(states),
            "pairs": len(pairs),
            "groups": len({st.group for st in states}),
            "simulators": sorted({st.simulator for st in states if st.simulator}),
            "domains": sorted({st.domain for st in states} | {p.domain for p in pairs}),
        },  # fmt: skip
        "cv": cv,
    }


def _context(rec: Mapping[str, object]) -> str:
    prefix = rec.get("prefix")
    turns = prefix if isinstance(prefix, list) else []
    return " ".join(str(m.get("content") or "") for m in turns if isinstance(m, dict))


def labelled_states(records: Sequence[Mapping[str, object]], embed: Callable[[list[str]], np.ndarray],
                    words: WordVectors | None = None) -> list[LabelledState]:  # fmt: skip
    """Labelled states from ``states.jsonl``-shaped records (``replies``, ``labels``, ``prefix``,
    ``source``, ``simulator``, ``domain``, ``task_id``), with each reply's embedding from ``embed``
    (called once, on the distinct texts). A state's group is its benchmark's task (``τ-bench`` or
    ``τ2`` by the source, and the task id) or, for constructed states, its domain."""
    prepared = []
    texts: dict[str, None] = {}
    for n, rec in enumerate(records):
        replies, labels = rec.get("replies"), rec.get("labels")
        if not isinstance(replies, list) or not isinstance(labels, list) or len(replies) != len(labels) or not replies:
            raise ConfigError(f"state {n}: 'replies' and 'labels' must be non-empty lists of one length")
        prepared.append((rec, [str(t) for t in replies], labels, _context(rec)))
        texts.update(dict.fromkeys(str(t) for t in replies))
    unique = list(texts)
    emb = np.asarray(embed(unique))
    row = {t: i for i, t in enumerate(unique)}
    words = words or WordVectors(embed)
    out = []
    for rec, replies, labels, context in prepared:
        found, known = state_disclosures(replies, context)
        words.add(found)
        out.append(LabelledState(found=found, emb=emb[[row[t] for t in replies]], labels=[int(x) for x in labels],
                                 group=state_group(rec), simulator=str(rec.get("simulator") or ""), texts=replies,
                                 domain=str(rec.get("domain") or ""), words=words, known=known))  # fmt: skip
    return out


def state_group(rec: Mapping[str, object]) -> str:
    """The split group of a labelled state: ``<benchmark>:<domain>:<task>`` for a benchmark's states
    (no task is both fitted and checked), ``constructed:<domain>`` for states written for this project."""
    source = str(rec.get("source") or "")
    domain = str(rec.get("domain") or "")
    repository = source.split(maxsplit=1)[0].rpartition("/")[2] if source else ""
    if repository.endswith("-bench"):  # a benchmark's published runs (its forks share its task ids)
        return f"{repository}:{domain}:{rec.get('task_id')}"
    return f"constructed:{domain}"


def labelled_pairs(records: Sequence[Mapping[str, object]], embed: Callable[[list[str]], np.ndarray],
                   words: WordVectors | None = None) -> list[LabelledPair]:  # fmt: skip
    """Constructed pairs (``a``, ``b``, ``kind``: contrast / paraphrase, ``domain``, ``prefix``)."""
    unique = list(dict.fromkeys(str(r[k]) for r in records for k in ("a", "b")))
    emb = np.asarray(embed(unique)) if unique else np.zeros((0, 0))
    row = {t: i for i, t in enumerate(unique)}
    words = words or WordVectors(embed)
    out = []
    for n, rec in enumerate(records):
        if rec.get("kind") not in ("contrast", "paraphrase"):
            raise ConfigError(f"pair {n}: 'kind' must be 'contrast' or 'paraphrase', got {rec.get('kind')!r}")
        (a, b), known = state_disclosures([str(rec["a"]), str(rec["b"])], _context(rec))
        words.add([a, b])
        d = float(np.clip(1.0 - emb[row[str(rec["a"])]] @ emb[row[str(rec["b"])]], 0.0, 2.0))
        out.append(LabelledPair(x=np.array(pair_features(a, b, d, words.similarity, known)), same=rec["kind"] == "paraphrase",
                                domain=str(rec.get("domain") or ""), kind=str(rec["kind"]),
                                differs_in=str(rec.get("differs_in") or "")))  # fmt: skip
    return out
