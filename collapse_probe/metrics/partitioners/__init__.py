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

from collapse_probe.core._meaning import KeyFamily
from collapse_probe.metrics._text import normalize_text
from collapse_probe.metrics.partitioners._base import ExactPartitioner, Partitioner, canonical_labels, class_counts
from collapse_probe.metrics.partitioners._calibration import (
    ThresholdCalibration,
    best_threshold,
    calibrate_threshold,
    load_paraphrase_pairs,
    load_paraphrase_sets,
    pair_balanced_accuracy,
    paraphrase_set_pairs,
)
from collapse_probe.metrics.partitioners._embedding import (
    DEFAULT_EMBEDDING_THRESHOLD,
    DisclosurePartitioner,
    EmbeddingPartitioner,
    load_encoder,
)
from collapse_probe.metrics.partitioners._judge import JudgeEquivalencePartitioner, parse_yes_no
from collapse_probe.metrics.partitioners._label import LabelPartitioner
from collapse_probe.metrics.partitioners._registry import (
    PARTITIONERS,
    check_partitioner,
    get_partitioner,
    groups_by_meaning,
    meaning_partitions,
    partitioner_class,
    partitioner_for,
    partitioner_names,
    partitioner_needs_model,
    usable_partitioners,
)

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
