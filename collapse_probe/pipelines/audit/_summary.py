"""Per-state estimates and the ``summary`` block of ``results.json``."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, TypeGuard

import numpy as np

from collapse_probe.pipelines.audit._config import AuditConfig
from collapse_probe.pipelines.audit._sequential import drawn_per_state
from collapse_probe.pipelines.audit._types import (
    AuditSummary,
    EffectiveModesBound,
    EntropyBlock,
    Estimate,
    ExactDistribution,
    ExactFailure,
    MeanDifference,
    MeanInterval,
    ParseFailures,
    SourceMean,
    StateEstimates,
    StateRecord,
)

if TYPE_CHECKING:
    from collapse_probe.metrics import IntervalEstimate


def _state_estimates(counts: np.ndarray, texts: list[str], seed: int) -> StateEstimates:
    from collapse_probe.metrics.estimators import (
        collapse_error,
        collapse_error_corrected,
        collapse_error_interval,
        entropy,
        entropy_interval,
        hill_number,
        low_confidence,
        sample_coverage,
    )
    from collapse_probe.metrics.vendi import distinct_n

    n = int(counts.sum())
    eps = collapse_error_interval(counts, seed=seed)
    ent = entropy_interval(counts, seed=seed)
    return {
        "collapse_error": collapse_error(counts),  # plug-in; the bias-aware value is collapse_error_estimate
        "collapse_error_estimate": eps.estimate,
        "collapse_error_ci95": eps.ci95,
        "collapse_error_corrected": collapse_error_corrected(counts, seed=seed),
        "entropy": entropy(counts),
        "entropy_ci95": ent.ci95,
        "entropy_lower_bound_only": ent.lower_bound_only,
        "entropy_note": ent.note,
        "entropy_plugin": entropy(counts, "plugin"),
        "entropy_miller_madow": entropy(counts, "miller_madow"),
        "hill": {
            "0": hill_number(counts, 0),
            "1": hill_number(counts, 1),
            "2": hill_number(counts, 2),
            "inf": hill_number(counts, float("inf")),
        },  # fmt: skip
        "hill_note": "plug-in over the observed classes (D0 counts only classes seen)",
        "sample_coverage": sample_coverage(counts),
        "distinct_1": distinct_n(texts, 1),
        "distinct_2": distinct_n(texts, 2),
        "low_confidence": low_confidence(n),
    }


# ----------------------------------------------------------------------------------------------- summaries


def interval_fields(iv: IntervalEstimate) -> MeanInterval:
    """An interval estimate's fields as ``results.json`` holds them (in its field order, as ``to_dict``)."""
    return {"estimate": iv.estimate, "ci95": list(iv.ci95), "method": iv.method, "plugin": iv.plugin, "level": iv.level,
            "n": iv.n, "n_states": iv.n_states, "low_confidence": iv.low_confidence, "note": iv.note,
            "lower_bound_only": iv.lower_bound_only}  # fmt: skip


def mean_collapse_error(counts_list: Sequence[Sequence[int]], level: float = 0.95, seed: int = 0) -> MeanInterval:
    """Mean collapse error over the audited states, bias-aware, with an interval that holds its level.

    The target is the average of these states' true ε (the audited states are the population), so the
    interval covers the sampling noise of the responses within each state plus the small-N bias of the
    max, which averaging over states does not remove; see
    :func:`collapse_probe.metrics.estimators.mean_collapse_error_interval` for the method and its
    measured coverage.
    """
    from collapse_probe.metrics.estimators import mean_collapse_error_interval

    cs = [np.asarray(c, dtype=np.int64) for c in counts_list]
    if not cs:
        return {"estimate": None, "ci95": None, "n_states": 0}
    return interval_fields(mean_collapse_error_interval(cs, level=level, seed=seed))


def mean_entropy(counts_list: Sequence[Sequence[int]], level: float = 0.95, seed: int = 0) -> MeanInterval:
    """Mean Chao–Wang–Jost entropy (nats, incl. unseen classes) over the audited states, with the interval
    of :func:`collapse_probe.metrics.estimators.mean_entropy_interval`."""
    from collapse_probe.metrics.estimators import mean_entropy_interval

    cs = [np.asarray(c, dtype=np.int64) for c in counts_list]
    if not cs:
        return {"estimate": None, "ci95": None, "n_states": 0}
    return interval_fields(mean_entropy_interval(cs, level=level, seed=seed))


def mean_with_state_se(estimates: Sequence[float], cis: Sequence[Sequence[float]], n_boot: int = 1000,
                       level: float = 0.95, seed: int = 0) -> Estimate:  # fmt: skip
    """Mean of per-state estimates with a two-level CI: states resampled, and each drawn state's
    estimate perturbed by a normal draw with the standard error implied by its own 95 % CI."""
    from collapse_probe.metrics.estimators import mean_with_state_se as _mean_with_state_se

    if len(estimates) == 0:
        return {"estimate": None, "ci95": None}
    r = _mean_with_state_se(estimates, cis, n_boot=n_boot, level=level, seed=seed)
    return {"estimate": r.estimate, "ci95": r.ci95}


def exact_scored(exact: ExactDistribution | ExactFailure | None) -> TypeGuard[ExactDistribution]:
    """Whether a record's ``exact`` holds a scored distribution (not a failure, not absent)."""
    return bool(exact) and exact is not None and exact.get("collapse_error") is not None


def summarize_states(records: Sequence[StateRecord], config: AuditConfig) -> AuditSummary:
    """The summary block of ``results.json`` over the measured states of one mode."""
    from collapse_probe.metrics.estimators import MIN_CONFIDENT_SAMPLES

    ok = [r for r in records if r.get("status") == "ok"]
    infra = [r for r in records if r.get("status") == "infra_error"]
    eps = mean_collapse_error([r["class_counts"] for r in ok], seed=config.rollout.seed)
    ent = mean_entropy([r["class_counts"] for r in ok], seed=config.rollout.seed)
    exact = [ex["collapse_error"] for r in ok if exact_scored(ex := r.get("exact"))]
    summary: AuditSummary = {
        "collapse_error": {
            "estimate": eps["estimate"],
            "ci95": eps["ci95"],
            "method": eps.get("method"),
            "plugin": eps.get("plugin"),
            "level": eps.get("level"),
            "target": "mean over the audited states of their true collapse error",
        },
        "collapse_error_corrected": float(np.mean([r["collapse_error_corrected"] for r in ok])) if ok else None,
        "entropy": _entropy_block(ent),
        "effective_modes": math.exp(ent["estimate"]) if ent["estimate"] is not None else None,
        "effective_modes_note": "exp of the mean entropy estimate, incl. unseen classes",
        **effective_modes_bound(ent, min((int(r["n"]) for r in ok), default=config.samples)),
        "accumulated_collapse_error": None,
        "distinct_2": _mean([r.get("distinct_2") for r in ok]),
        "vendi": _mean([r.get("vendi") for r in ok]),
        "exact_collapse_error": float(np.mean(exact)) if exact else None,
        "n_exact_states": len(exact),
        "n_states": len(ok),
        "infra_failures": len(infra),
        "infra_errors": sorted({str(r.get("error")) for r in infra})[:5],
        "samples_per_state": config.samples,
        # the replies the estimates read (a resumed run keeps replies drawn under a higher cap), not the cap
        "low_confidence": (drawn_per_state(ok) if ok else config.samples) < MIN_CONFIDENT_SAMPLES,
        "n_empty_responses": int(sum(r.get("n_empty", 0) for r in ok)),
    }
    vs_failures = _vs_parse_failures(ok)
    if vs_failures is not None:
        summary["vs_parse_failures"] = vs_failures
    summary["by_source"] = _by_source(ok, config.rollout.seed)
    return summary


def _entropy_block(ent: MeanInterval) -> EntropyBlock:
    """The summary's entropy block: the mean Chao-Wang-Jost estimate (nats) and its interval."""
    return {
        "estimate": ent["estimate"],
        "ci95": ent["ci95"],
        "estimator": "chao_wang_jost",
        "unit": "nats",
        "method": ent.get("method"),
        "plugin": ent.get("plugin"),
        "note": ent.get("note"),
        "lower_bound_only": ent.get("lower_bound_only", False),
    }


def _vs_parse_failures(ok: Sequence[StateRecord]) -> ParseFailures | None:
    """Verbalized-Sampling turns that fell back, over the measured states' replies (``None``: no VS state)."""
    vs = [r["vs"] for r in ok if "vs" in r]
    if not vs:
        return None
    fails = sum(v["parse_failures"] for v in vs)
    total = sum(r["n"] for r in ok if "vs" in r)
    reasons: Counter[str] = Counter()
    for v in vs:
        reasons.update(v["failure_reasons"])
    return {"count": fails, "of": total, "rate": fails / total if total else None, "reasons": dict(reasons)}


def _by_source(ok: Sequence[StateRecord], seed: int) -> dict[str, SourceMean]:
    """State source (benchmark, human, ...) -> the mean ε and entropy over its measured states."""
    by_source: dict[str, SourceMean] = {}
    for src in sorted({r["source"] for r in ok}):
        rs = [r for r in ok if r["source"] == src]
        e = mean_collapse_error([r["class_counts"] for r in rs], seed=seed)
        by_source[src] = {"collapse_error": e["estimate"], "ci95": e["ci95"], "n_states": len(rs),
                          "collapse_error_plugin": e["plugin"], "method": e["method"],
                          "entropy": float(np.mean([r["entropy"] for r in rs])),
                          "entropy_ci95": mean_entropy([r["class_counts"] for r in rs], seed=seed)["ci95"]}  # fmt: skip
    return by_source


def entropy_lower_bound_only(ent: MeanInterval, n: int) -> bool:
    """Whether an entropy (and exp of it, the effective modes) can only be read as a lower bound.

    True when the interval says so (``lower_bound_only``, or no finite upper end) or when the estimate
    exceeds what N replies can show: exp(H) > N means the estimate is mostly the unseen classes it
    extrapolates, so "effective modes 48 from 20 replies" must not read as measured.
    """
    estimate = ent.get("estimate")
    if estimate is None:
        return False
    ci = ent.get("ci95") or [None, None]
    hi = ci[1] if len(ci) > 1 else None
    return bool(ent.get("lower_bound_only")) or hi is None or not math.isfinite(hi) or math.exp(estimate) > n


def effective_modes_bound(ent: MeanInterval, n: int) -> EffectiveModesBound:
    """``effective_modes_lower_bound_only`` and ``effective_modes_lower_bound`` for the summary block.

    The bound is exp of the entropy interval's lower end (a lower confidence bound on exp(H)), capped at
    N: N replies per state cannot resolve more classes than N, so a larger number would again read as
    measured. ``None`` when there is no entropy estimate.
    """
    only = entropy_lower_bound_only(ent, n)
    lo = (ent.get("ci95") or [None])[0]
    bound = math.exp(lo) if lo is not None and math.isfinite(lo) else None
    return {"effective_modes_lower_bound_only": only,
            "effective_modes_lower_bound": None if bound is None else min(bound, float(n))}  # fmt: skip


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


DIFFERENCE_METHOD = (
    "difference of the two modes' bias-aware mean ε (the values printed for each); interval: each mode's interval "
    "at level 1 − α/2 (the headline's method), combined as [lo_b − hi_a, hi_b − lo_a] (union bound)"
)


def collapse_error_difference(counts_a: Sequence[Sequence[int]], counts_b: Sequence[Sequence[int]],
                              level: float = 0.95, seed: int = 0) -> MeanDifference:  # fmt: skip
    """Mean ε of ``b`` minus mean ε of ``a`` over the same states, consistent with each side's own number.

    The estimate is the difference of the two bias-aware estimates of
    :func:`~collapse_probe.metrics.estimators.mean_collapse_error_interval` at ``level`` (so it is the
    difference of the values printed for each side, not of the plug-ins). The interval combines the
    two sides' intervals at level 1 − α/2 each: when each covers its mean ε with probability at least
    1 − α/2, both do with probability at least 1 − α (union bound, whatever the dependence between the
    sides), and then b − a lies in [lo_b − hi_a, hi_b − lo_a]. It inherits the validity of the
    per-side intervals for any mix of states and is conservative; coverage and width on a small panel:
    ``python benchmarks/difference_coverage.py`` (``docs/audit-verdict.md``).

    Args:
        counts_a: class counts per state of the first mode (e.g. direct).
        counts_b: class counts per state of the second mode (e.g. Verbalized Sampling), same states.
        level: confidence level of the difference interval.
        seed: seed of the bias correction (as for the per-side summaries).
    """
    from collapse_probe.metrics.estimators import mean_collapse_error_interval

    if len(counts_a) != len(counts_b):
        raise ValueError(f"counts_a has {len(counts_a)} states but counts_b has {len(counts_b)}: pass the same states")
    if not counts_a:
        return {"estimate": None, "ci95": None, "n_states": 0, "method": DIFFERENCE_METHOD}
    ca = [np.asarray(c, dtype=np.int64) for c in counts_a]
    cb = [np.asarray(c, dtype=np.int64) for c in counts_b]
    a, b = (
        mean_collapse_error_interval(ca, level=level, seed=seed),
        mean_collapse_error_interval(cb, level=level, seed=seed),
    )
    half = 1.0 - (1.0 - level) / 2
    wa, wb = (
        mean_collapse_error_interval(ca, level=half, seed=seed),
        mean_collapse_error_interval(cb, level=half, seed=seed),
    )
    (a_lo, a_hi), (b_lo, b_hi) = (_two_sided(wa), _two_sided(wb))
    est = b.estimate - a.estimate
    lo, hi = min(b_lo - a_hi, est), max(b_hi - a_lo, est)
    return {"estimate": est, "ci95": [lo, hi], "n_states": len(ca), "method": DIFFERENCE_METHOD, "level": level,
            "a": a.estimate, "b": b.estimate, "plugin": b.plugin - a.plugin}  # fmt: skip


def _two_sided(iv: IntervalEstimate) -> tuple[float, float]:
    """The ends of a collapse-error interval (both always finite; only entropy can lack an upper end)."""
    lo, hi = iv.ci95
    assert lo is not None and hi is not None, "collapse-error intervals are two-sided"
    return float(lo), float(hi)


def paired_difference(
    a: Sequence[StateRecord], b: Sequence[StateRecord], seed: int, view: Literal["reward_view"] | None = None
) -> MeanDifference:
    """Mean ε(b) − ε(a) over the states measured in both modes (:func:`collapse_error_difference`).

    ``a`` and ``b`` are the two modes' state records; ``view="reward_view"`` takes each record's
    reward-view counts instead of its headline classes (states the reward does not read are left out).
    ``a_estimate`` / ``b_estimate`` are the two sides' estimates over these states (equal to the modes'
    printed means when every state was measured in both).
    """

    if view not in (None, "reward_view"):
        raise ValueError(f"view: expected 'reward_view' or None, got {view!r}")

    def counts(r: StateRecord) -> list[int] | None:
        if view:
            rv = r.get("reward_view")
            return rv.get("class_counts") if rv else None
        return r.get("class_counts")

    ka = {r["state_id"]: c for r in a if r.get("status") == "ok" and (c := counts(r))}
    kb = {r["state_id"]: c for r in b if r.get("status") == "ok" and (c := counts(r))}
    common = [s for s in ka if s in kb]
    out = collapse_error_difference([ka[s] for s in common], [kb[s] for s in common], seed=seed)
    out["a_estimate"], out["b_estimate"] = out.pop("a", None), out.pop("b", None)
    out["all_states"] = len(common) == len(ka) == len(kb)
    return out
