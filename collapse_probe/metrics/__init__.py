"""Collapse metrics: partitioners, per-state estimators, trajectory bounds and transfer statistics.

Typical use at one simulator state (N sampled responses)::

    from collapse_probe.metrics import get_partitioner, class_counts, collapse_error, collapse_error_ci

    labels = get_partitioner("exact").partition(responses)
    counts = class_counts(labels)
    eps, (lo, hi) = collapse_error(counts), collapse_error_ci(counts)

Modules:

- :mod:`~collapse_probe.metrics.estimators` — ε̂, its CI and bias correction, entropies, Hill
  numbers, exact distributions, and the metric registry with ``higher_is_better``; the bias-aware
  intervals with measured coverage (``collapse_error_interval``, ``mean_collapse_error_interval``).
- :mod:`~collapse_probe.metrics.partitioners` — exact / embedding / judge / label partitioners.
- :mod:`~collapse_probe.metrics.vendi` — Vendi score, distinct-n, mean pairwise cosine.
- :mod:`~collapse_probe.metrics.trajectory` — accumulated collapse error, TV and gradient-bias
  bounds, simulator share of reward variance.
- :mod:`~collapse_probe.metrics.transfer` — mean CIs, paired cluster bootstrap, transfer ratio.

Nothing here imports an optional dependency at import time; the embedding partitioner loads
sentence-transformers and scikit-learn when first used.
"""

from collapse_probe.metrics._exact import (
    ExactBounds,
    Look,
    LookSchedule,
    SequentialVerdict,
    collapsed_cutoff,
    exact_collapse_error_bounds,
    next_look,
    not_collapsed_cutoff,
    predictable_mode_hits,
    sequential_verdict,
)
from collapse_probe.metrics._meaning_material import (
    MeaningMaterial,
    MeaningPair,
    MeaningState,
    load_meaning_material,
    read_labelled_states,
    read_meaning_pairs,
)
from collapse_probe.metrics.estimators import (
    METRICS,
    MIN_CONFIDENT_SAMPLES,
    IntervalEstimate,
    MetricInfo,
    as_counts,
    bootstrap_collapse_errors,
    collapse_error,
    collapse_error_ci,
    collapse_error_corrected,
    collapse_error_interval,
    collapse_error_intervals,
    decisive_sample_size,
    entropy,
    entropy_chao_wang_jost,
    entropy_ci,
    entropy_interval,
    entropy_miller_madow,
    entropy_plugin,
    exact_class_distribution,
    exact_collapse_error,
    get_metric,
    higher_is_better,
    hill_number,
    low_confidence,
    mean_collapse_error_interval,
    mean_entropy_interval,
    sample_coverage,
)
from collapse_probe.metrics.partitioners import (
    DEFAULT_EMBEDDING_THRESHOLD,
    PARTITIONERS,
    EmbeddingPartitioner,
    ExactPartitioner,
    JudgeEquivalencePartitioner,
    LabelPartitioner,
    Partitioner,
    ThresholdCalibration,
    best_threshold,
    calibrate_threshold,
    canonical_labels,
    class_counts,
    get_partitioner,
    load_encoder,
    load_paraphrase_pairs,
    normalize_text,
    parse_yes_no,
)
from collapse_probe.metrics.trajectory import (
    VarianceShare,
    accumulated_collapse_error,
    gradient_bias_bound,
    reward_variance_bound,
    simulator_variance_share,
    tv_bound,
)
from collapse_probe.metrics.transfer import (
    Estimate,
    cluster_bootstrap_diff,
    cluster_mean_ci,
    mean_ci,
    paired_mean_diff,
    transfer_ratio,
)
from collapse_probe.metrics.vendi import (
    distinct_n,
    mean_pairwise_cosine,
    normalize_rows,
    vendi_eigenvalues,
    vendi_score,
)

__all__ = [
    "DEFAULT_EMBEDDING_THRESHOLD",
    "METRICS",
    "MIN_CONFIDENT_SAMPLES",
    "PARTITIONERS",
    "EmbeddingPartitioner",
    "Estimate",
    "ExactBounds",
    "ExactPartitioner",
    "IntervalEstimate",
    "JudgeEquivalencePartitioner",
    "LabelPartitioner",
    "Look",
    "LookSchedule",
    "MeaningMaterial",
    "MeaningPair",
    "MeaningState",
    "MetricInfo",
    "Partitioner",
    "SequentialVerdict",
    "ThresholdCalibration",
    "VarianceShare",
    "accumulated_collapse_error",
    "as_counts",
    "best_threshold",
    "bootstrap_collapse_errors",
    "calibrate_threshold",
    "canonical_labels",
    "class_counts",
    "cluster_bootstrap_diff",
    "cluster_mean_ci",
    "collapse_error",
    "collapse_error_ci",
    "collapse_error_corrected",
    "collapse_error_interval",
    "collapse_error_intervals",
    "collapsed_cutoff",
    "decisive_sample_size",
    "distinct_n",
    "entropy",
    "entropy_chao_wang_jost",
    "entropy_ci",
    "entropy_interval",
    "entropy_miller_madow",
    "entropy_plugin",
    "exact_class_distribution",
    "exact_collapse_error",
    "exact_collapse_error_bounds",
    "get_metric",
    "get_partitioner",
    "gradient_bias_bound",
    "higher_is_better",
    "hill_number",
    "load_encoder",
    "load_meaning_material",
    "load_paraphrase_pairs",
    "low_confidence",
    "mean_ci",
    "mean_collapse_error_interval",
    "mean_entropy_interval",
    "mean_pairwise_cosine",
    "next_look",
    "normalize_rows",
    "normalize_text",
    "not_collapsed_cutoff",
    "paired_mean_diff",
    "parse_yes_no",
    "predictable_mode_hits",
    "read_labelled_states",
    "read_meaning_pairs",
    "reward_variance_bound",
    "sample_coverage",
    "sequential_verdict",
    "simulator_variance_share",
    "transfer_ratio",
    "tv_bound",
    "vendi_eigenvalues",
    "vendi_score",
]
