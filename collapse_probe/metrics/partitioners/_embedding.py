"""Sentence-embedding partitions: :class:`EmbeddingPartitioner` (average-linkage clusters at a calibrated
cosine threshold, optionally keyed by decision) and :class:`DisclosurePartitioner` (customer-service replies
by request and disclosed facts)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from collapse_probe.core._constraints import Integer, Number, check_value
from collapse_probe.core._meaning import KeyFamily
from collapse_probe.errors import ConfigError, require
from collapse_probe.metrics._text import normalize_text
from collapse_probe.metrics.partitioners._base import _check_texts, canonical_labels, takes_keyword

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
    """Service-conversation replies classed by the request they make and the facts they state.

    A pairwise equivalence model (:mod:`collapse_probe.metrics._service`, fitted on labelled states of
    real τ2-bench / τ-bench user simulators and on states and contrast / paraphrase pairs written for
    this project in seven further domains) reads each pair of a state's distinct replies: which facts
    (identifiers, numbers, amounts, dates, times, e-mails, phones, names, quoted strings, option values)
    differ, how many content words (items, settings, conditions, read by a lexicon, with synonyms found
    by the encoder) one has in place of the other's, whether an act (return, exchange, cancel, yes / no,
    a question, ending the call), a negation or an on / off differs, and their cosine distance under
    the packaged all-MiniLM-L6-v2. Replies are clustered by average linkage on ``1 − P(same)``. What
    the conversation so far said is no difference when one reply restates it; two replies that pick
    different items of it are.

    The default meaning partition where no benchmark meaning key applies. Validated on the domains the
    model file names (:data:`validated_on`): :meth:`domain_similarity` says how close a state's replies
    are to the nearest of them, and the audit's meaning view is INCONCLUSIVE outside them.

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
    validated_on = (
        "customer-service user replies in the domains airline (τ2-bench / τ-bench runs), retail, telecom, "
        "healthcare, banking, IT support, travel and insurance (replies written for collapse-probe)"
    )

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
        from collapse_probe.metrics._service import WordVectors, service_labels, state_disclosures

        groups = [_check_texts(g, f"groups[{i}]") for i, g in enumerate(groups)]
        if contexts is not None and len(contexts) != len(groups):
            raise ConfigError(f"contexts: expected one per group ({len(groups)}), got {len(contexts)}")
        reps = []
        for g in groups:
            first = {normalize_text(t): t for t in reversed(g)}
            reps.append([first[u] for u in dict.fromkeys(normalize_text(t) for t in g)])
        flat = [t for r in reps for t in r]
        emb = self.embed(flat) if flat else np.zeros((0, 0))
        read = [state_disclosures(r, None if contexts is None else contexts[gi]) for gi, r in enumerate(reps)]
        words = WordVectors(self.embed).add([f for found, _ in read for f in found])
        out: list[list[int]] = []
        start = 0
        for g, r, (found, known) in zip(groups, reps, read, strict=True):
            if not g:
                out.append([])
                continue
            e = emb[start : start + len(r)]
            start += len(r)
            lab = service_labels(found, e, self.service, words, known)
            of = {normalize_text(t): x for t, x in zip(r, lab, strict=True)}
            out.append(canonical_labels([of[normalize_text(t)] for t in g]))
        return out

    def domain_similarity(self, embeddings: np.ndarray) -> float:
        """Cosine between a state's mean reply embedding (of this partition's encoder) and the domain's centroid."""
        from collapse_probe.metrics._service import domain_similarity

        return domain_similarity(embeddings, self.service.centroid, self.service.others)

    @classmethod
    def domain_threshold(cls) -> float:
        """A state whose :meth:`domain_similarity` is below this lies outside the validated domain."""
        from collapse_probe.metrics._service import load_service_model

        return load_service_model().domain_threshold
