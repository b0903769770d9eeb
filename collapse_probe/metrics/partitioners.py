"""Partitioners: map the N responses sampled at one state to semantic equivalence classes.

The collapse error is defined over equivalence classes of responses, not raw strings (DESIGN.md):
a partitioner turns texts into integer class labels ``0, 1, 2, …`` (numbered by first appearance),
and :func:`class_counts` turns labels into the counts every estimator takes.

Partitioners (``get_partitioner(name, **kw)``):

- ``exact`` — :class:`ExactPartitioner`: equal after :func:`normalize_text`.
- ``embedding`` — :class:`EmbeddingPartitioner`: sentence embeddings (packaged all-MiniLM-L6-v2,
  offline) clustered by average-linkage agglomerative clustering with a calibrated cosine threshold.
- ``disclosure`` — :class:`DisclosurePartitioner`: customer-service replies by the request they make and
  the task facts they disclose (a pairwise model fitted on real user-simulator replies); the default
  meaning partition where no benchmark meaning key applies.
- ``judge`` — :class:`JudgeEquivalencePartitioner`: an LLM judge answers "same meaning?" for
  (class representative, response) pairs, batched one ``generate()`` call per round.
- ``label`` — :class:`LabelPartitioner`: a benchmark's decision labeller (by default the default
  benchmark's), or any function reply -> class.

Every partitioner has ``partition(texts) -> list[int]`` for one state and
``partition_many(groups)`` / ``await apartition_many(groups)`` for many states at once (one encoder
pass or one judge batch per round across all states).
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from collapse_probe._constraints import Integer, Number, check_value
from collapse_probe._meaning import KeyFamily
from collapse_probe._resources import package_path
from collapse_probe.errors import ConfigError, InfraError, require
from collapse_probe.metrics._text import normalize_text

__all__ = [
    "DEFAULT_EMBEDDING_THRESHOLD",
    "PARTITIONERS",
    "check_partitioner",
    "groups_by_meaning",
    "meaning_partitions",
    "partitioner_class",
    "partitioner_names",
    "partitioner_needs_model",
    "usable_partitioners",
    "DisclosurePartitioner",
    "EmbeddingPartitioner",
    "ExactPartitioner",
    "JudgeEquivalencePartitioner",
    "KeyFamily",
    "LabelPartitioner",
    "Partitioner",
    "ThresholdCalibration",
    "best_threshold",
    "calibrate_threshold",
    "canonical_labels",
    "class_counts",
    "get_partitioner",
    "load_encoder",
    "load_paraphrase_pairs",
    "load_paraphrase_sets",
    "pair_balanced_accuracy",
    "paraphrase_set_pairs",
    "normalize_text",
    "parse_yes_no",
    "partitioner_for",
]

CALIBRATION_PAIRS = package_path("data", "calibration", "paraphrase_pairs.jsonl")
"""The shipped labelled paraphrase / different-meaning reply pairs used to calibrate the threshold."""
PARAPHRASE_SETS = Path(__file__).resolve().parents[1] / "data" / "calibration" / "paraphrase_sets.jsonl"
"""Shipped sets of replies, four paraphrases of each of four meanings, split into ``calibration``
(with :data:`CALIBRATION_PAIRS`, for the threshold) and ``heldout`` (for checking it)."""

DEFAULT_EMBEDDING_THRESHOLD = 0.46
"""Cosine-distance threshold of :class:`EmbeddingPartitioner` with the packaged all-MiniLM-L6-v2.

Calibrated on :data:`CALIBRATION_PAIRS` by :func:`calibrate_threshold` (48 persuadee-reply pairs:
0.46, balanced accuracy 0.71) and checked on the paraphrase sets of :data:`PARAPHRASE_SETS`
(``python benchmarks/partition_calibration.py``). On their 648 calibration pairs (the 48 plus the
calibration sets) / 960 held-out pairs, "same meaning" pair predictions reach balanced accuracy
0.80 / 0.70 by distance alone and 0.95 / 0.88 with the P4G decision key at 0.46. The key's
pair-level optimum, 0.64, is not used: with average linkage it merges groups of questions into a
decision class (2 of 8 held-out 4 x 4 sets off by > 0.06), while at 0.46 the partition of every one
of the 13 sets gives the true collapse error 0.40 (exact text: 0.85; distance alone: 0.11 to 0.70)."""


# --------------------------------------------------------------------------------------------------
# labels and counts


def canonical_labels(labels: Sequence[Hashable]) -> list[int]:
    """Renumber arbitrary class labels as 0, 1, 2, … in order of first appearance.

    Example:
        >>> canonical_labels(["b", "a", "b", "c"])
        [0, 1, 0, 2]
    """
    ids: dict[Hashable, int] = {}
    return [ids.setdefault(x, len(ids)) for x in labels]


def class_counts(labels: Sequence[Hashable]) -> np.ndarray:
    """Counts of each class, in order of first appearance — the input of every estimator.

    Example:
        >>> class_counts([0, 1, 0, 2, 0]).tolist()
        [3, 1, 1]
    """
    if len(labels) == 0:
        raise ConfigError("labels: no responses to count")
    return np.bincount(canonical_labels(labels)).astype(np.int64)


def _check_texts(texts: Sequence[str], name: str = "texts") -> list[str]:
    if isinstance(texts, str):
        raise ConfigError(f"{name}: expected a list of response texts, got a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ConfigError(f"{name}[{i}]: expected a string, got {type(t).__name__}")
    return out


@runtime_checkable
class Partitioner(Protocol):
    """What every partitioner implements."""

    name: str

    def partition(self, texts: Sequence[str]) -> list[int]:
        """Class label of each response at one state (0, 1, … by first appearance)."""
        ...

    def partition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        """Labels for many states at once."""
        ...

    async def apartition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        """Async form of :meth:`partition_many` (for pipelines already inside an event loop)."""
        ...


class _SyncPartitioner:
    """Shared code for partitioners that need no model calls: ``partition`` does the work."""

    name = "base"
    by_meaning = False
    needs_model = False
    needs_benchmark = False
    arena_hooks: ClassVar[Mapping[str, str]] = {}

    def partition(self, texts: Sequence[str]) -> list[int]:  # pragma: no cover - overridden
        raise NotImplementedError

    def partition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        return [self.partition(g) for g in groups]

    async def apartition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        return self.partition_many(groups)


# --------------------------------------------------------------------------------------------------
# exact match


class ExactPartitioner(_SyncPartitioner):
    """Responses are equivalent iff their :func:`normalize_text` forms are equal.

    Example:
        >>> ExactPartitioner().partition(["No.", "no", "Yes!", " NO "])
        [0, 0, 1, 0]
    """

    name = "exact"

    def partition(self, texts: Sequence[str]) -> list[int]:
        return canonical_labels([normalize_text(t) for t in _check_texts(texts)])


# --------------------------------------------------------------------------------------------------
# embedding clustering


def load_encoder(model: str | None = None, device: str | None = None) -> Any:
    """The sentence-transformers encoder of :class:`EmbeddingPartitioner` (see
    :func:`collapse_probe.models.load_encoder`; loaded once per process, never from the network)."""
    from collapse_probe.models._encoder import load_encoder as load

    return load(model, device)


_APART = 1e9
"""Distance given to two texts whose keys differ: larger than any average of real cosine distances
(at most 2) over fewer than 10^8 pairs, so average linkage never merges clusters that contain them."""


def _agglomerative_labels(
    embeddings: np.ndarray, threshold: float, keys: Sequence[Hashable | None] | None = None
) -> list[int]:
    """Average-linkage clusters of the rows of ``embeddings`` (unit norm) cut at cosine distance
    ``threshold``; with ``keys``, rows with the same non-``None`` key are one class (a
    :class:`KeyFamily` key: they join by distance), rows with different non-``None`` keys are never
    in one class, and ``None`` rows join by distance only."""
    n = embeddings.shape[0]
    if n == 1:
        return [0]
    cluster = require("sklearn.cluster", "embed", "The embedding partitioner", package="scikit-learn")
    dist = np.clip(1.0 - embeddings @ embeddings.T, 0.0, 2.0).astype(np.float64)
    if keys is not None:
        ks = list(keys)
        for i in range(n):
            if ks[i] is None:
                continue
            for j in range(i + 1, n):
                if ks[j] is None:
                    continue
                if ks[i] != ks[j]:
                    dist[i, j] = dist[j, i] = _APART
                elif not isinstance(ks[i], KeyFamily):
                    dist[i, j] = dist[j, i] = 0.0
    np.fill_diagonal(dist, 0.0)
    model = cluster.AgglomerativeClustering(
        n_clusters=None, metric="precomputed", linkage="average", distance_threshold=threshold
    )
    return canonical_labels(model.fit(dist).labels_.tolist())


class EmbeddingPartitioner:
    """Sentence-embedding clustering: average-linkage agglomerative clustering on cosine distance,
    optionally constrained by a key that states what a reply decides.

    The distinct responses of a state (equal after :func:`normalize_text`) are clustered, so a
    class is a set of distinct replies and how often one was sampled does not move the boundaries.
    Two groups merge while the average cosine distance between them is below ``threshold``; so two
    single responses are one class iff their cosine distance < ``threshold``, which is what the
    threshold is calibrated for (:func:`calibrate_threshold`).

    Sentence encoders measure topic and wording more than decision: with all-MiniLM-L6-v2, "Sure,
    I'll donate $1." and "No thanks, I'd rather not donate." are 0.26 apart while paraphrases such
    as "No." / "I'll skip it." are 0.72 apart; no threshold separates those. ``key`` supplies what the
    encoder misses: a function text -> a hashable decision (``None`` when the reply states none).
    Replies with the same key are one class; replies with different keys are never one class;
    replies without a key join by distance. A benchmark provides its key through the arena's
    ``meaning_key`` hook (P4G: :func:`~collapse_probe.benchmarks.p4g.donor_stance`).

    The default :data:`DEFAULT_EMBEDDING_THRESHOLD` was calibrated with the packaged
    all-MiniLM-L6-v2 on the labelled reply pairs shipped in ``data/calibration/paraphrase_pairs.jsonl``
    (see :data:`DEFAULT_EMBEDDING_THRESHOLD` for the procedure and the balanced accuracy). Recalibrate
    when you change the encoder.

    Identical texts are encoded once; all texts of all states go through the encoder in one batched
    call; the encoder is loaded once per process (:func:`load_encoder`).

    Args:
        threshold: cosine-distance threshold in (0, 2).
        model: sentence-transformers model directory; ``None`` for the packaged all-MiniLM-L6-v2.
        device: torch device, ``None`` to let sentence-transformers choose.
        batch_size: encoder batch size.
        key: optional text -> decision key (``None``: no constraint).
    """

    name = "embedding"
    validated_on = "P4G persuadee replies (threshold calibrated on labelled reply pairs)"
    by_meaning = True
    needs_model = False
    needs_benchmark = False
    arena_hooks: ClassVar[Mapping[str, str]] = {"key": "meaning_key"}
    """On a benchmark the decision key is the arena's ``meaning_key`` (``None`` there: no constraint)."""

    def __init__(
        self,
        threshold: float = DEFAULT_EMBEDDING_THRESHOLD,
        model: str | None = None,
        device: str | None = None,
        batch_size: int = 64,
        key: Callable[[str], Hashable | None] | None = None,
    ) -> None:
        if key is not None and not callable(key):
            raise ConfigError(f"key must be a callable text -> hashable or None, got {type(key).__name__}")
        check_value(threshold, "threshold", [Number(gt=0, lt=2, why="a cosine distance")])
        check_value(batch_size, "batch_size", [Integer(1)])
        self.threshold = float(threshold)
        self.model = model
        self.device = device
        self.batch_size = batch_size
        self.key = key

    @property
    def encoder(self) -> Any:
        """The (process-cached) sentence-transformers encoder."""
        return load_encoder(self.model, self.device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm embeddings (n, d) of ``texts``; each distinct text is encoded once."""
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        unique = list(dict.fromkeys(texts))
        emb = self.encoder.encode(
            unique,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        row = {t: i for i, t in enumerate(unique)}
        return np.asarray(emb)[[row[t] for t in texts]]

    def _keys(
        self, texts: list[str], emb: np.ndarray, contexts: list[str | None] | None
    ) -> list[Hashable | None] | None:
        """The key of each text. A key that reads many texts at once (``key.keys(texts, embeddings)``,
        e.g. the P4G stance reader) is called once for all states and, when this partition uses the
        packaged encoder its embeddings come from, is handed them, so no reply is encoded twice; one
        that also takes ``context`` gets each text's state context (the message it answers)."""
        if self.key is None:
            return None
        batch = getattr(self.key, "keys", None)
        if callable(batch):
            given = emb if self.model is None else None
            if contexts is not None and takes_keyword(batch, "context"):
                return list(batch(texts, given, context=contexts))
            return list(batch(texts, given))
        return [self.key(t) for t in texts]

    def partition(self, texts: Sequence[str]) -> list[int]:
        return self.partition_many([texts])[0]

    def partition_many(
        self, groups: Sequence[Sequence[str]], contexts: Sequence[str | None] | None = None
    ) -> list[list[int]]:
        """Labels for many states at once; ``contexts``: one per group, the message the state's replies
        answer (the persuader's last message), handed to a key that reads it (``None``: no context)."""
        groups = [_check_texts(g, f"groups[{i}]") for i, g in enumerate(groups)]
        if contexts is not None and len(contexts) != len(groups):
            raise ConfigError(f"contexts: expected one per group ({len(groups)}), got {len(contexts)}")
        flat = [t for g in groups for t in g]
        if not flat:
            return [[] for _ in groups]
        distinct = [list(dict.fromkeys(normalize_text(t) for t in g)) for g in groups]
        first = [{normalize_text(t): t for t in reversed(g)} for g in groups]  # a representative per text
        reps = [[first[gi][u] for u in us] for gi, us in enumerate(distinct)]
        flat_reps = [t for r in reps for t in r]
        emb = self.embed(flat_reps)
        flat_ctx = None if contexts is None else [c for c, r in zip(contexts, reps, strict=True) for _ in r]
        all_keys = self._keys(flat_reps, emb, flat_ctx)
        out: list[list[int]] = []
        start = 0
        for g, us in zip(groups, distinct, strict=True):
            if not g:
                out.append([])
                continue
            keys = all_keys[start : start + len(us)] if all_keys is not None else None
            lab = _agglomerative_labels(emb[start : start + len(us)], self.threshold, keys)
            start += len(us)
            of = dict(zip(us, lab, strict=True))
            out.append(canonical_labels([of[normalize_text(t)] for t in g]))
        return out

    async def apartition_many(
        self, groups: Sequence[Sequence[str]], contexts: Sequence[str | None] | None = None
    ) -> list[list[int]]:
        return await asyncio.to_thread(self.partition_many, groups, contexts)


# --------------------------------------------------------------------------------------------------
# customer-service meaning: requests and disclosed facts


class DisclosurePartitioner(EmbeddingPartitioner):
    """Customer-service replies classed by the request they make and the task facts they disclose.

    A pairwise equivalence model (:mod:`collapse_probe.metrics._service`, fitted on labelled states
    of real τ2-bench / τ-bench user simulators) reads each pair of a state's distinct replies: which
    facts (ids, names, reservation or order numbers, dates, times, amounts, places) and which
    requests or preferences (cancel, refund, nonstop, a reason, ending the call …) differ between
    what the two disclose beyond the conversation so far, and their cosine distance under the
    packaged all-MiniLM-L6-v2. Replies are clustered by average linkage on ``1 − P(same)``. A
    state's context (the conversation so far) is subtracted from what its replies disclose:
    restating what the agent said discloses nothing.

    The default meaning partition where no benchmark meaning key applies. Validated on
    :data:`~collapse_probe.metrics._service.SERVICE_DOMAIN` only: :meth:`domain_similarities` says how
    far a state's replies are from that domain, and the audit's meaning view is INCONCLUSIVE outside it.

    Args:
        model: sentence-transformers model directory; ``None`` for the packaged all-MiniLM-L6-v2 (the
            fitted model's features assume it).
        device: torch device.
        batch_size: encoder batch size.
        model_file: another fitted model file (default: the shipped one).
    """

    name = "disclosure"
    by_meaning = True
    needs_model = False
    needs_benchmark = False
    arena_hooks: ClassVar[Mapping[str, str]] = {}
    validated_on = "customer-service user replies (τ2-bench / τ-bench airline user simulators)"

    def __init__(self, model: str | None = None, device: str | None = None, batch_size: int = 64,
                 model_file: str | None = None) -> None:  # fmt: skip
        super().__init__(model=model, device=device, batch_size=batch_size)
        from collapse_probe.metrics._service import load_service_model

        self.model_file = model_file
        self.service = load_service_model(model_file)

    def partition_many(
        self, groups: Sequence[Sequence[str]], contexts: Sequence[str | None] | None = None
    ) -> list[list[int]]:
        """Labels for many states at once; ``contexts``: one per group, the conversation so far."""
        from collapse_probe.metrics._service import service_labels, state_disclosures

        groups = [_check_texts(g, f"groups[{i}]") for i, g in enumerate(groups)]
        if contexts is not None and len(contexts) != len(groups):
            raise ConfigError(f"contexts: expected one per group ({len(groups)}), got {len(contexts)}")
        reps = []
        for g in groups:
            first = {normalize_text(t): t for t in reversed(g)}
            reps.append([first[u] for u in dict.fromkeys(normalize_text(t) for t in g)])
        flat = [t for r in reps for t in r]
        emb = self.embed(flat) if flat else np.zeros((0, 0))
        out: list[list[int]] = []
        start = 0
        for gi, (g, r) in enumerate(zip(groups, reps, strict=True)):
            if not g:
                out.append([])
                continue
            e = emb[start : start + len(r)]
            start += len(r)
            found = state_disclosures(r, None if contexts is None else contexts[gi])
            lab = service_labels(found, e, self.service)
            of = {normalize_text(t): x for t, x in zip(r, lab, strict=True)}
            out.append(canonical_labels([of[normalize_text(t)] for t in g]))
        return out

    def domain_similarity(self, embeddings: np.ndarray) -> float:
        """Cosine between a state's mean reply embedding (of this partition's encoder) and the domain's centroid."""
        from collapse_probe.metrics._service import domain_similarity

        return domain_similarity(embeddings, self.service.centroid)

    @classmethod
    def domain_threshold(cls) -> float:
        """A state whose :meth:`domain_similarity` is below this lies outside the validated domain."""
        from collapse_probe.metrics._service import load_service_model

        return load_service_model().domain_threshold


def takes_keyword(fn: Callable[..., Any], name: str) -> bool:
    """Whether ``fn`` accepts the keyword argument ``name`` (a hook written before it existed does not)."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


async def apartition_states(
    partitioner: Any, groups: Sequence[Sequence[str]], contexts: Sequence[str | None] | None
) -> list[list[int]]:
    """``partitioner.apartition_many(groups)``, with each state's context where the partitioner takes
    one (the embedding partition hands it to its meaning key; the others class replies without it)."""
    if contexts is not None and takes_keyword(partitioner.apartition_many, "contexts"):
        return list(await partitioner.apartition_many(groups, contexts=contexts))
    return list(await partitioner.apartition_many(groups))


@dataclass(frozen=True)
class ThresholdCalibration:
    """Result of :func:`calibrate_threshold`."""

    threshold: float
    """Cosine-distance threshold: pairs closer than this are called paraphrases."""
    balanced_accuracy: float
    """Mean of the true-paraphrase and true-different rates at ``threshold``."""
    n_pairs: int
    n_same: int
    distances: tuple[float, ...]
    """Cosine distance of each pair, in input order."""


def best_threshold(distances: Sequence[float], same: Sequence[bool]) -> tuple[float, float]:
    """Threshold on distance that best separates ``same`` pairs (small distance) from different ones.

    Every midpoint between consecutive sorted distances is a candidate; the score is balanced
    accuracy (pairs with distance < threshold are predicted "same"). Among equally good thresholds
    the midpoint of the widest optimal gap is returned, so the choice is not at the edge of a tie.

    Returns:
        ``(threshold, balanced_accuracy)``.

    Example:
        >>> best_threshold([0.1, 0.2, 0.5, 0.7], [True, True, False, False])
        (0.35, 1.0)
    """
    d = np.asarray(distances, dtype=np.float64)
    y = np.asarray(same, dtype=bool)
    if d.ndim != 1 or d.size != y.size or d.size == 0:
        raise ConfigError("distances and same must be equally long, non-empty lists")
    if y.all() or not y.any():
        raise ConfigError("calibration needs both paraphrase (same) and different-meaning pairs")
    s = np.unique(d)
    cands = np.concatenate([[s[0] - 1e-6], (s[:-1] + s[1:]) / 2, [s[-1] + 1e-6]])
    pred = d[None, :] < cands[:, None]
    tpr = (pred & y).sum(1) / y.sum()
    tnr = (~pred & ~y).sum(1) / (~y).sum()
    bacc = (tpr + tnr) / 2
    best = np.flatnonzero(np.isclose(bacc, bacc.max()))
    # widest gap among optimal candidates: gap width around candidate i is s[i] - s[i-1]
    edges = np.concatenate([[s[0]], s, [s[-1]]])
    widths = edges[best + 1] - edges[best]
    i = int(best[int(np.argmax(widths))])
    return float(round(cands[i], 6)), float(bacc[i])


def load_paraphrase_pairs(path: str | Path = CALIBRATION_PAIRS) -> list[dict[str, Any]]:
    """Read labelled pairs: JSON lines ``{"a": str, "b": str, "same": bool}`` (other keys allowed)."""
    return [_check_pair(rec, where) for where, rec in _calibration_records(path, "paraphrase pairs")]


def _calibration_records(path: str | Path, what: str) -> list[tuple[str, Any]]:
    """``(file:line, parsed JSON)`` for every non-blank line of a calibration JSONL file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{what} file {str(p)!r} does not exist")
    out = []
    for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((f"{p}:{lineno}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{p}:{lineno}: not valid JSON ({exc.msg})") from None
    return out


def _check_pair(rec: Any, where: str) -> dict[str, Any]:
    if isinstance(rec, Mapping):
        a, b, same = rec.get("a"), rec.get("b"), rec.get("same")
    elif isinstance(rec, Sequence) and len(rec) == 3:
        a, b, same = rec
    else:
        raise ConfigError(f"{where}: expected {{'a': str, 'b': str, 'same': bool}} or (a, b, same)")
    if not isinstance(a, str) or not isinstance(b, str) or not isinstance(same, bool):
        raise ConfigError(f"{where}: fields 'a' and 'b' must be strings and 'same' a boolean")
    return {"a": a, "b": b, "same": same}


def paraphrase_set_pairs(split: str | None = None, path: str | Path = PARAPHRASE_SETS) -> list[dict[str, Any]]:
    """Labelled pairs from the shipped paraphrase sets: every two replies of one meaning are a
    paraphrase pair (``same``), every two replies of different meanings of one set are not.

    Args:
        split: ``"calibration"``, ``"heldout"`` or ``None`` for both.
        path: JSONL of ``{"set": str, "split": str, "meanings": [[reply, ...], ...]}``.
    """
    pairs = []
    for rec in load_paraphrase_sets(path):
        if split is not None and rec["split"] != split:
            continue
        flat = [(i, t) for i, group in enumerate(rec["meanings"]) for t in group]
        for x in range(len(flat)):
            for y in range(x + 1, len(flat)):
                pairs.append({"a": flat[x][1], "b": flat[y][1], "same": flat[x][0] == flat[y][0], "set": rec["set"]})
    return pairs


def load_paraphrase_sets(path: str | Path = PARAPHRASE_SETS) -> list[dict[str, Any]]:
    """Read paraphrase sets: JSON lines ``{"set", "split", "meanings": [[reply, ...], ...]}``."""
    out = []
    for where, rec in _calibration_records(path, "paraphrase sets"):
        groups = rec.get("meanings") if isinstance(rec, dict) else None
        if not isinstance(groups, list) or not all(
            isinstance(g, list) and g and all(isinstance(t, str) for t in g) for g in groups
        ):
            raise ConfigError(f"{where}: field 'meanings' must be a list of non-empty lists of strings")
        lineno = where.rsplit(":", 1)[1]
        out.append({"set": str(rec.get("set", lineno)), "split": str(rec.get("split", "")), "meanings": groups})
    return out


def _pair_keys(key: Callable[[str], Hashable | None] | None, a: str, b: str) -> bool | None:
    """What the key alone says of a pair: ``True`` (same decision), ``False`` (different keys) or
    ``None`` (the distance decides), as :class:`EmbeddingPartitioner` uses it."""
    if key is None:
        return None
    ka, kb = key(a), key(b)
    if ka is None or kb is None:
        return None
    if ka != kb:
        return False
    return None if isinstance(ka, KeyFamily) else True


def pair_balanced_accuracy(
    distances: Sequence[float],
    same: Sequence[bool],
    threshold: float,
    decided: Sequence[bool | None] | None = None,
) -> float:
    """Balanced accuracy of "same meaning" predictions on labelled pairs: a pair is predicted
    ``decided[i]`` where that is not ``None`` (a key's verdict), else ``distance < threshold``."""
    d = np.asarray(distances, dtype=np.float64)
    y = np.asarray(same, dtype=bool)
    pred = d < threshold
    if decided is not None:
        for i, v in enumerate(decided):
            if v is not None:
                pred[i] = v
    tpr = float((pred & y).sum() / max(1, y.sum()))
    tnr = float((~pred & ~y).sum() / max(1, (~y).sum()))
    return (tpr + tnr) / 2


def calibrate_threshold(
    pairs: Iterable[Mapping[str, Any] | Sequence[Any]] | str | Path = CALIBRATION_PAIRS,
    model: str | None = None,
    device: str | None = None,
    key: Callable[[str], Hashable | None] | None = None,
) -> ThresholdCalibration:
    """Calibrate the :class:`EmbeddingPartitioner` cosine threshold on labelled reply pairs.

    Procedure: embed both replies of every pair with the encoder (unit-norm), take the cosine
    distance 1 − cos, and choose the threshold that maximises balanced accuracy of "distance <
    threshold ⇔ same meaning" (:func:`best_threshold`). With ``key``, the pairs the key decides on
    its own (both replies keyed: same decision or different ones) are predicted by the key, as the
    partitioner does, and the threshold is chosen on the remaining pairs; the balanced accuracy
    reported is over all pairs. The shipped pairs are persuadee-style replies to a donation request
    written for this purpose: paraphrases (same decision, same content, different wording) and
    different meanings, including hard negatives that share most words but differ in decision
    ("I'd be happy to donate" vs "I'd be happy to hear more, but I won't donate").

    Args:
        pairs: a JSONL path or an iterable of ``{"a", "b", "same"}`` mappings / ``(a, b, same)``
            tuples; defaults to the shipped :data:`CALIBRATION_PAIRS`.
        model: encoder directory (``None``: packaged all-MiniLM-L6-v2).
        device: torch device.
        key: the decision key the partitioner will use (e.g. an arena's ``meaning_key``).
    """
    if isinstance(pairs, (str, Path)):
        recs = load_paraphrase_pairs(pairs)
    else:
        recs = [_check_pair(r, f"pairs[{i}]") for i, r in enumerate(pairs)]
    if not recs:
        raise ConfigError("pairs: no calibration pairs")
    part = EmbeddingPartitioner(model=model, device=device)
    ea = part.embed([r["a"] for r in recs])
    eb = part.embed([r["b"] for r in recs])
    dist = 1.0 - np.sum(ea * eb, axis=1)
    same = [r["same"] for r in recs]
    decided = [_pair_keys(key, r["a"], r["b"]) for r in recs]
    free = [i for i, v in enumerate(decided) if v is None]
    fs = [same[i] for i in free]
    if free and any(fs) and not all(fs):
        thr, _ = best_threshold([float(dist[i]) for i in free], fs)
    else:
        thr = DEFAULT_EMBEDDING_THRESHOLD
    bacc = pair_balanced_accuracy(dist.tolist(), same, thr, decided)
    return ThresholdCalibration(thr, bacc, len(recs), int(sum(same)), tuple(float(x) for x in dist))


# --------------------------------------------------------------------------------------------------
# LLM-judge equivalence

JUDGE_SYSTEM = (
    "You compare two replies written by the same person in a conversation. Answer YES if they mean "
    "the same thing (same decision, same stance, same information asked for or given), even if worded "
    "differently. Answer NO otherwise. Answer with one word: YES or NO."
)
JUDGE_TEMPLATE = 'Reply A: "{a}"\nReply B: "{b}"\nDo Reply A and Reply B mean the same thing? Answer YES or NO.'

_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_yes_no(text: str) -> bool | None:
    """Parse a judge verdict: the first standalone "yes"/"no" word wins (markdown and case ignored).

    Returns:
        True for yes, False for no, ``None`` if neither word occurs (a parse failure).

    Example:
        >>> parse_yes_no("**Yes.** They agree"), parse_yes_no("No, A refuses"), parse_yes_no("unclear")
        (True, False, None)
    """
    m = _YES_NO.search(text or "")
    if m is None:
        return None
    return m.group(1).lower() == "yes"


class JudgeEquivalencePartitioner:
    """Clustering by bidirectional equivalence judged by an LLM, as in semantic entropy (Kuhn et al.,
    2023, "Semantic Uncertainty"; Farquhar et al., 2024): two replies share a class when the judge
    says A means B *and* B means A.

    Leader clustering: the first unassigned response becomes the representative of a new class and
    every other unassigned response is compared with it in both orders; those judged equivalent both
    ways join it; repeat. A response therefore joins the first earlier representative it is
    equivalent to, but it takes one round per class instead of one per response, and each round is
    *one* ``generate()`` call holding both questions of every pair of every state. Asking both orders
    cancels a judge's bias towards the answer in one position (small judges say YES to "A means B"
    far more often than to "B means A" when A is the longer reply).

    Responses equal after :func:`normalize_text` are joined without asking. The judge runs greedy
    (temperature 0) with a fixed seed, so through the response cache (``make_participant(spec).model``)
    a rerun asks nothing again. A verdict that is neither YES nor NO is a parse failure: counted in
    ``n_parse_failures_`` (raw answers kept in ``parse_failure_examples_``) and treated as NO, which
    can only split classes (ε̂ biased up, never faked down). A request the backend failed on, an empty
    answer, or a round where most answers are neither YES nor NO raises
    :class:`~collapse_probe.errors.InfraError`: the states are infrastructure failures (sampled again on
    resume), not measurements.

    Args:
        model: a :class:`~collapse_probe.models.ChatModel` or a model spec string.
        max_tokens: tokens allowed for a verdict.
        seed: sampling seed of the judge requests.
        bidirectional: ask both orders (``False``: only "does the response mean the representative").
        rubric: the definition of a meaning class added to the judge's instruction (the audit gives the
            customer-service rubric, :data:`~collapse_probe.metrics._disclosure.RUBRIC`, where no
            benchmark meaning key applies).

    Attributes:
        n_questions_: judge questions asked so far.
        n_rounds_: ``generate()`` calls made so far.
        n_parse_failures_: verdicts that were neither YES nor NO.
        parse_failure_examples_: up to 5 unparsed verdict texts.
    """

    name = "judge"
    by_meaning = True
    needs_model = True
    needs_benchmark = False
    arena_hooks: ClassVar[Mapping[str, str]] = {}

    def __init__(self, model: Any, max_tokens: int = 8, seed: int = 0, bidirectional: bool = True,
                 rubric: str | None = None) -> None:  # fmt: skip
        if rubric is not None and (not isinstance(rubric, str) or not rubric.strip()):
            raise ConfigError(f"rubric must be a non-empty string (the definition of a meaning class), got {rubric!r}")
        self.rubric = rubric
        self.model = model
        self.max_tokens = max_tokens
        self.seed = seed
        self.bidirectional = bidirectional
        self.n_questions_ = 0
        self.n_rounds_ = 0
        self.n_parse_failures_ = 0
        self.parse_failure_examples_: list[str] = []

    def _chat_model(self) -> Any:
        if isinstance(self.model, str):
            from collapse_probe.models import get_model

            self.model = get_model(self.model)
        if not hasattr(self.model, "generate"):
            raise ConfigError(f"model: expected a ChatModel or a model spec string, got {type(self.model).__name__}")
        return self.model

    def _request(self, a: str, b: str) -> Any:
        from collapse_probe.models import GenerationRequest, SamplingParams

        system = JUDGE_SYSTEM if self.rubric is None else f"{JUDGE_SYSTEM}\n\n{self.rubric}"
        messages = (
            {"role": "system", "content": system},
            {"role": "user", "content": JUDGE_TEMPLATE.format(a=a, b=b)},
        )
        return GenerationRequest(
            messages=messages, n=1, params=SamplingParams(temperature=0.0, max_tokens=self.max_tokens, seed=self.seed)
        )

    def partition(self, texts: Sequence[str]) -> list[int]:
        return self.partition_many([texts])[0]

    def partition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.apartition_many(groups))
        raise ConfigError(
            "JudgeEquivalencePartitioner.partition* called inside an event loop: use `await apartition_many`"
        )

    def _verdict(self, res: Any) -> bool:
        verdict = parse_yes_no(res.completions[0].text)
        if verdict is None:
            self.n_parse_failures_ += 1
            if len(self.parse_failure_examples_) < 5:
                self.parse_failure_examples_.append(res.completions[0].text[:200])
            return False
        return verdict

    async def apartition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        model = self._chat_model()
        groups = [_check_texts(g, f"groups[{i}]") for i, g in enumerate(groups)]
        norm = [[normalize_text(t) for t in g] for g in groups]
        labels: list[list[int | None]] = [[None] * len(g) for g in groups]
        n_classes = [0] * len(groups)
        orders = 2 if self.bidirectional else 1
        while True:
            questions: list[tuple[int, int, int]] = []  # (group, candidate index, class id)
            reqs = []
            for gi, g in enumerate(groups):
                todo = [i for i, lab in enumerate(labels[gi]) if lab is None]
                if not todo:
                    continue
                leader, rest = todo[0], todo[1:]
                cls = n_classes[gi]
                n_classes[gi] += 1
                labels[gi][leader] = cls
                asked: dict[str, int] = {}  # one question per distinct candidate text
                for i in rest:
                    if norm[gi][i] == norm[gi][leader]:
                        labels[gi][i] = cls
                    elif norm[gi][i] in asked:
                        continue
                    else:
                        asked[norm[gi][i]] = i
                        questions.append((gi, i, cls))
                        reqs.append(self._request(g[leader], g[i]))
                        if self.bidirectional:
                            reqs.append(self._request(g[i], g[leader]))
            if not questions:
                if all(lab is not None for gl in labels for lab in gl):
                    break
                continue
            results = await model.generate(reqs)
            self.n_rounds_ += 1
            self.n_questions_ += len(reqs)
            if len(results) != len(reqs):
                raise InfraError(
                    f"judge {getattr(model, 'spec', model)!r} returned {len(results)} results for {len(reqs)} requests"
                )
            failed = [r.error for r in results if not r.ok or not r.completions]
            if failed:
                raise InfraError(
                    f"judge {getattr(model, 'spec', model)!r} failed on {len(failed)} of {len(reqs)} "
                    f"equivalence questions (first error: {failed[0]})"
                )
            blank = sum(1 for r in results if not r.completions[0].text.strip())
            if blank:  # an empty answer is the backend's failure, not a NO: the states are sampled again
                raise InfraError(f"judge {getattr(model, 'spec', model)!r} returned {blank} empty answers to "
                                 f"{len(reqs)} equivalence questions")  # fmt: skip
            unparsed = sum(1 for r in results if parse_yes_no(r.completions[0].text) is None)
            if unparsed * 2 > len(reqs):
                raise InfraError(f"judge {getattr(model, 'spec', model)!r} answered neither YES nor NO to {unparsed} "
                                 f"of {len(reqs)} equivalence questions (e.g. {results[0].completions[0].text[:80]!r}): "
                                 "its classes would be guesses; use a judge that follows the instruction")  # fmt: skip
            for q, (gi, i, cls) in enumerate(questions):
                verdicts = [self._verdict(results[q * orders + k]) for k in range(orders)]
                if all(verdicts):
                    for j, t in enumerate(norm[gi]):
                        if labels[gi][j] is None and t == norm[gi][i]:
                            labels[gi][j] = cls
        return [[int(x) for x in gl] for gl in labels]  # type: ignore[arg-type]


LABELLERS: dict[str, Callable[[str], str]] = {}
"""Named labellers registered in this process for :class:`LabelPartitioner`; a benchmark name also
names its labeller (the ``labeller`` of its :class:`~collapse_probe.benchmarks.Benchmark`)."""


def _named_labeller(name: str) -> Callable[[str], str]:
    """The labeller ``name`` names: one in :data:`LABELLERS`, else the benchmark ``name``'s own.

    Raises:
        ConfigError: neither (naming the known labellers)."""
    if name in LABELLERS:
        return LABELLERS[name]
    from collapse_probe.benchmarks._registry import labeller_of

    found = labeller_of(name)
    if found is None:
        raise ConfigError(f"labeller must be a benchmark with a decision labeller, a name in {sorted(LABELLERS)} "
                          f"or a callable, got {name!r}")  # fmt: skip
    return found


class LabelPartitioner(_SyncPartitioner):
    """Classes from a domain labeller (a function text -> class name); default: P4G donation decisions.

    Args:
        labeller: a callable ``str -> str``, a name in :data:`LABELLERS` or a benchmark's name (its own
            labeller); default: the default benchmark's.

    Example:
        >>> LabelPartitioner().labels_for(["[DONATE $1]", "no", "[donate 1.00]"])
        ['donate:$1', 'refuse', 'donate:$1']
    """

    name = "label"
    needs_benchmark = True
    arena_hooks: ClassVar[Mapping[str, str]] = {"labeller": "decision_label"}

    def __init__(self, labeller: str | Callable[[str], str] | None = None) -> None:
        if labeller is None:
            from collapse_probe.benchmarks._registry import DEFAULT_BENCHMARK

            labeller = DEFAULT_BENCHMARK
        if isinstance(labeller, str):
            self._fn = _named_labeller(labeller)
        elif not callable(labeller):
            raise ConfigError(f"labeller must be a name or a callable str -> str, got {type(labeller).__name__}")
        self.labeller = labeller

    def labels_for(self, texts: Sequence[str]) -> list[str]:
        """The class name of each response."""
        fn = self._fn if isinstance(self.labeller, str) else self.labeller
        return [fn(t) for t in _check_texts(texts)]

    def partition(self, texts: Sequence[str]) -> list[int]:
        return canonical_labels(self.labels_for(texts))


# --------------------------------------------------------------------------------------------------
# factory

PARTITIONERS: dict[str, type] = {
    "exact": ExactPartitioner,
    "embedding": EmbeddingPartitioner,
    "disclosure": DisclosurePartitioner,
    "judge": JudgeEquivalencePartitioner,
    "label": LabelPartitioner,
}
"""Partitioner name -> class: the one registry of partitioners. An installed distribution adds one
through the entry-point group ``collapse_probe.partitioners`` (the entry point's name is the
partitioner's, its object the class).

A class declares what its callers need to know, as class attributes (a plugin may leave any out; the
defaults are those of exact text matching):

- ``by_meaning`` (``False``): its classes are meanings, so the audit's meaning view may judge them.
- ``needs_model`` (``False``): its constructor takes ``model=`` (a judge ChatModel); only callers with
  a judge can build it (the audit, with ``--judge`` or the simulator's model).
- ``arena_hooks`` (``{}``): constructor keyword -> arena hook filled in from the benchmark when not given
  (the embedding partition's ``key`` from ``meaning_key``).
- ``needs_benchmark`` (``False``): it classes a benchmark's simulator replies through those hooks and a
  benchmark must provide them (``label``: the ``decision_label``); callers that class the policy's own
  messages (strategy entropy) cannot use it.
"""


def _trait(cls: Any, name: str) -> Any:
    default: Any = {} if name == "arena_hooks" else False
    return getattr(cls, name, default)


def partitioner_names() -> list[str]:
    """Every selectable name: the registered ones, then those of installed entry points, sorted (not loaded)."""
    from collapse_probe._plugins import PARTITIONERS_GROUP, plugin_entry_points

    return [*PARTITIONERS, *sorted(n for n in plugin_entry_points(PARTITIONERS_GROUP) if n not in PARTITIONERS)]


def partitioner_class(name: str) -> Any:
    """The class of partitioner ``name``: registered here, else an installed entry point (``None``: none).

    Raises:
        ConfigError: an entry point of that name that cannot be loaded.
    """
    if name in PARTITIONERS:
        return PARTITIONERS[name]
    from collapse_probe._plugins import PARTITIONERS_GROUP, load_target, plugin_entry_points

    ep = plugin_entry_points(PARTITIONERS_GROUP).get(str(name))
    return None if ep is None else load_target(ep, f"partitioner {name!r}")


_partitioner_class = partitioner_class  # the name it had


def _missing_need(cls: Any, *, model: bool, benchmark: bool) -> str | None:
    """Why a caller with (or without) a judge model and a benchmark cannot build ``cls`` (``None``: it can)."""
    if _trait(cls, "needs_model") and not model:
        return "it needs a judge model"
    if _trait(cls, "needs_benchmark") and not benchmark:
        hooks = ", ".join(_trait(cls, "arena_hooks").values()) or "its hooks"
        return f"it classes a benchmark's replies by the benchmark's {hooks}"
    return None


def usable_partitioners(*, model: bool = True, benchmark: bool = True, installed: bool = False) -> tuple[str, ...]:
    """Names a caller can build: one with (``model``) or without a judge model, classing a benchmark's
    simulator replies (``benchmark``) or the policy's own messages.

    Args:
        installed: also the installed entry points (each loaded to read what it needs; one that
            cannot be loaded is left out). Without it: the registered names only.
    """
    names = partitioner_names() if installed else list(PARTITIONERS)
    out = []
    for name in names:
        try:
            cls = partitioner_class(name)
        except ConfigError:
            continue  # a broken plugin is named when it is chosen, not here
        if cls is not None and _missing_need(cls, model=model, benchmark=benchmark) is None:
            out.append(name)
    return tuple(out)


def meaning_partitions() -> tuple[str, ...]:
    """The registered partitions whose classes are meanings (``embedding``, ``judge``)."""
    return tuple(n for n, cls in PARTITIONERS.items() if _trait(cls, "by_meaning"))


def groups_by_meaning(name: str) -> bool:
    """Partition ``name``'s classes are meanings (``False`` for a name not installed here)."""
    try:
        cls = partitioner_class(name)
    except ConfigError:
        return False
    return bool(_trait(cls, "by_meaning"))


def partitioner_needs_model(name: str) -> bool:
    """Partition ``name`` is built with ``model=`` (a judge)."""
    return bool(_trait(partitioner_class(name), "needs_model"))


def check_partitioner(name: object, flag: str, use: str | None = None, *, model: bool = False,
                      benchmark: bool = False) -> None:  # fmt: skip
    """Check at a config boundary that ``name`` is a partitioner this caller can build.

    Args:
        name: the value received.
        flag: the flag or field named in the error.
        use: what the classes are for, named in the error (e.g. "the policy strategy entropy").
        model: the caller hands the partitioner a judge model.
        benchmark: the caller classes a benchmark's simulator replies (its arena hooks are there).

    Raises:
        ConfigError: one line naming ``flag``, the allowed names (installed ones included), the value
            received, why a known name does not fit, and the closest names of an unknown one.
    """
    cls = partitioner_class(name) if isinstance(name, str) else None
    why = None if cls is None else _missing_need(cls, model=model, benchmark=benchmark)
    if cls is not None and why is None:
        return
    allowed = usable_partitioners(model=model, benchmark=benchmark, installed=True)
    close = difflib.get_close_matches(str(name), allowed, n=2, cutoff=0.5) if cls is None else []
    hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
    where = f" for {use}" if use else ""
    raise ConfigError(f"{flag} must be one of {', '.join(allowed)}{where}, got {name!r}"
                      f"{f' ({why})' if why else ''}.{hint}")  # fmt: skip


class _PartitionOnly:
    """A partitioner that implements only ``partition(texts)`` (as a plugin may), with the batch forms
    every pipeline calls; its labels are checked (one per text) and renumbered by first appearance."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = str(getattr(inner, "name", type(inner).__name__))

    def partition(self, texts: Sequence[str]) -> list[int]:
        texts = _check_texts(texts)
        labels = list(self.inner.partition(texts))
        if len(labels) != len(texts):
            raise ConfigError(f"partitioner {self.name!r} returned {len(labels)} labels for {len(texts)} texts")
        return canonical_labels(labels)

    def partition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        return [self.partition(g) for g in groups]

    async def apartition_many(self, groups: Sequence[Sequence[str]]) -> list[list[int]]:
        return self.partition_many(groups)

    def __getattr__(self, attr: str) -> Any:  # the plugin's own attributes (options, fitted state)
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)


def get_partitioner(name: str, **kw: Any) -> Partitioner:
    """Construct a partitioner by name (``exact``, ``embedding``, ``judge``, ``label`` or an installed one).

    Args:
        name: partitioner name.
        **kw: constructor arguments (``judge`` needs ``model=``).

    Raises:
        ConfigError: for an unknown name (with close matches) or constructor arguments it does not take.
    """
    cls = partitioner_class(name)
    if cls is None:
        known = partitioner_names()
        close = difflib.get_close_matches(str(name), known, n=2, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ConfigError(f"unknown partitioner {name!r}.{hint} Known: {', '.join(known)}")
    if _trait(cls, "needs_model") and "model" not in kw:
        raise ConfigError(f"partitioner {name!r} needs model= (a ChatModel or a model spec such as 'smollm2')")
    import inspect

    allowed = [p for p in inspect.signature(cls).parameters]
    unknown = sorted(set(kw) - set(allowed))
    if unknown:
        raise ConfigError(f"partitioner {name!r} does not take {unknown}; its options are {allowed}")
    made = cls(**kw)
    if not (hasattr(made, "partition_many") and hasattr(made, "apartition_many")):
        return _PartitionOnly(made)
    return made


def partitioner_for(name: str, arena: Any = None, **kw: Any) -> Partitioner:
    """A partitioner of the simulator's replies on ``arena``'s benchmark: each keyword of the class's
    ``arena_hooks`` not given is filled from the arena (``embedding``'s ``key`` from ``meaning_key``,
    ``label``'s ``labeller`` from ``decision_label``; see
    :class:`~collapse_probe.benchmarks._base.AuditHooks`); otherwise as :func:`get_partitioner`.

    Raises:
        ConfigError: a partitioner that needs a benchmark hook the arena lacks, or an unknown name.
    """
    cls = partitioner_class(name)
    for option, hook in dict(_trait(cls, "arena_hooks") if cls is not None else {}).items():
        if option in kw:
            continue
        value = getattr(arena, hook, None)
        if value is None and _trait(cls, "needs_benchmark"):
            where = f"benchmark {arena.name}" if arena is not None and hasattr(arena, "name") else "this benchmark"
            others = ", ".join(usable_partitioners(benchmark=False))
            raise ConfigError(f"partition {name!r}: {where} has no {hook.replace('_', ' ')}; use one of {others}")
        kw[option] = value
    return get_partitioner(name, **kw)
