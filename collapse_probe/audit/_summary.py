"""Per-state estimates and the ``summary`` block of ``results.json``."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from collapse_probe.audit._config import AuditConfig


def _state_estimates(counts: np.ndarray, texts: list[str], seed: int) -> dict[str, Any]:
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


def mean_collapse_error(counts_list: Sequence[Sequence[int]], n_boot: int = 1000, level: float = 0.95,
                        seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Mean collapse error over the audited states, bias-aware, with an interval that holds its level.

    The target is the average of these states' true ε (the audited states are the population), so the
    interval covers the sampling noise of the responses within each state plus the small-N bias of the
    max, which averaging over states does not remove; see
    :func:`collapse_probe.metrics.estimators.mean_collapse_error_interval` for the method and its
    measured coverage. ``n_boot`` is accepted for compatibility and unused.
    """
    from collapse_probe.metrics.estimators import mean_collapse_error_interval

    cs = [np.asarray(c, dtype=np.int64) for c in counts_list]
    if not cs:
        return {"estimate": None, "ci95": None, "n_states": 0}
    return mean_collapse_error_interval(cs, level=level, seed=seed).to_dict()


def mean_entropy(counts_list: Sequence[Sequence[int]], level: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """Mean Chao–Wang–Jost entropy (nats, incl. unseen classes) over the audited states, with the interval
    of :func:`collapse_probe.metrics.estimators.mean_entropy_interval`."""
    from collapse_probe.metrics.estimators import mean_entropy_interval

    cs = [np.asarray(c, dtype=np.int64) for c in counts_list]
    if not cs:
        return {"estimate": None, "ci95": None, "n_states": 0}
    return mean_entropy_interval(cs, level=level, seed=seed).to_dict()


def mean_with_state_se(estimates: Sequence[float], cis: Sequence[Sequence[float]], n_boot: int = 1000,
                       level: float = 0.95, seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Mean of per-state estimates with a two-level CI: states resampled, and each drawn state's
    estimate perturbed by a normal draw with the standard error implied by its own 95 % CI."""
    from collapse_probe.metrics.estimators import mean_with_state_se as _mean_with_state_se

    if len(estimates) == 0:
        return {"estimate": None, "ci95": None}
    r = _mean_with_state_se(estimates, cis, n_boot=n_boot, level=level, seed=seed)
    return {"estimate": r.estimate, "ci95": r.ci95}


def summarize_states(records: Sequence[dict[str, Any]], config: AuditConfig) -> dict[str, Any]:
    """The summary block of ``results.json`` over the measured states of one mode."""
    from collapse_probe.metrics.estimators import MIN_CONFIDENT_SAMPLES

    ok = [r for r in records if r.get("status") == "ok"]
    infra = [r for r in records if r.get("status") == "infra_error"]
    eps = mean_collapse_error([r["class_counts"] for r in ok], n_boot=config.n_boot, seed=config.seed)
    ent = mean_entropy([r["class_counts"] for r in ok], seed=config.seed)
    exact = [r["exact"]["collapse_error"] for r in ok if (r.get("exact") or {}).get("collapse_error") is not None]
    summary: dict[str, Any] = {
        "collapse_error": {
            "estimate": eps["estimate"],
            "ci95": eps["ci95"],
            "method": eps.get("method"),
            "plugin": eps.get("plugin"),
            "level": eps.get("level"),
            "target": "mean over the audited states of their true collapse error",
        },
        "collapse_error_corrected": float(np.mean([r["collapse_error_corrected"] for r in ok])) if ok else None,
        "entropy": {
            "estimate": ent["estimate"],
            "ci95": ent["ci95"],
            "estimator": "chao_wang_jost",
            "unit": "nats",
            "method": ent.get("method"),
            "plugin": ent.get("plugin"),
            "note": ent.get("note"),
            "lower_bound_only": ent.get("lower_bound_only", False),
        },  # fmt: skip
        **_effective_modes(ent),
        "accumulated_collapse_error": None,
        "distinct_2": _mean([r.get("distinct_2") for r in ok]),
        "vendi": _mean([r.get("vendi") for r in ok]),
        "exact_collapse_error": float(np.mean(exact)) if exact else None,
        "n_exact_states": len(exact),
        "n_states": len(ok),
        "infra_failures": len(infra),
        "infra_errors": sorted({str(r.get("error")) for r in infra})[:5],
        "samples_per_state": config.samples,
        "low_confidence": config.samples < MIN_CONFIDENT_SAMPLES,
        "n_empty_responses": int(sum(r.get("n_empty", 0) for r in ok)),
    }
    vs = [r["vs"] for r in ok if "vs" in r]
    if vs:
        fails = sum(v["parse_failures"] for v in vs)
        total = sum(r["n"] for r in ok if "vs" in r)
        reasons: Counter[str] = Counter()
        for v in vs:
            reasons.update(v["failure_reasons"])
        summary["vs_parse_failures"] = {"count": fails, "of": total, "rate": fails / total if total else None,
                                        "reasons": dict(reasons)}  # fmt: skip
    by_source: dict[str, Any] = {}
    for src in sorted({r["source"] for r in ok}):
        rs = [r for r in ok if r["source"] == src]
        e = mean_collapse_error([r["class_counts"] for r in rs], n_boot=config.n_boot, seed=config.seed)
        by_source[src] = {"collapse_error": e["estimate"], "ci95": e["ci95"], "n_states": len(rs),
                          "collapse_error_plugin": e["plugin"], "method": e["method"],
                          "entropy": float(np.mean([r["entropy"] for r in rs])),
                          "entropy_ci95": mean_entropy([r["class_counts"] for r in rs], seed=config.seed)["ci95"]}  # fmt: skip
    summary["by_source"] = by_source
    return summary


def _effective_modes(ent: dict[str, Any]) -> dict[str, Any]:
    """exp of the mean entropy; only its lower end where the entropy has no honest upper end (nearly all
    replies distinct), since exp of an estimate that extrapolates unseen classes reads as measured."""
    if ent["estimate"] is None:
        return {"effective_modes": None, "effective_modes_lower_bound": None,
                "effective_modes_note": "no states measured"}  # fmt: skip
    lower = math.exp(ent["ci95"][0])
    if ent.get("lower_bound_only"):
        return {"effective_modes": None, "effective_modes_lower_bound": lower,
                "effective_modes_note": "at least exp of the entropy's lower end: most replies are distinct, "
                "so the number of modes is bounded from below only"}  # fmt: skip
    return {"effective_modes": math.exp(ent["estimate"]), "effective_modes_lower_bound": lower,
            "effective_modes_note": "exp of the mean entropy estimate, incl. unseen classes"}  # fmt: skip


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def paired_difference(
    a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], n_boot: int, seed: int
) -> dict[str, Any]:
    """Mean ε̂(b) − ε̂(a) over the states measured in both modes, with a two-level paired bootstrap
    (the same resampled states in both modes; responses resampled within each)."""
    ka = {r["state_id"]: r for r in a if r.get("status") == "ok"}
    kb = {r["state_id"]: r for r in b if r.get("status") == "ok"}
    common = [s for s in ka if s in kb]
    if not common:
        return {"estimate": None, "ci95": None, "n_states": 0}
    from collapse_probe.metrics.estimators import bootstrap_collapse_errors

    rng = np.random.default_rng(seed)
    ca = [np.asarray(ka[s]["class_counts"]) for s in common]
    cb = [np.asarray(kb[s]["class_counts"]) for s in common]
    diff = np.array([(1 - y.max() / y.sum()) - (1 - x.max() / x.sum()) for x, y in zip(ca, cb, strict=True)])
    ma, mb = bootstrap_collapse_errors(ca, n_boot, rng), bootstrap_collapse_errors(cb, n_boot, rng)
    idx = (
        rng.integers(0, len(common), size=(n_boot, len(common)))
        if len(common) > 1
        else np.zeros((n_boot, 1), dtype=int)
    )
    cols = np.arange(n_boot)[:, None]
    boot = (mb[idx, cols] - ma[idx, cols]).mean(axis=1)
    est = float(diff.mean())
    lo_q, hi_q = np.quantile(boot, [0.025, 0.975])  # basic bootstrap interval: 2·est − quantiles
    return {"estimate": est, "ci95": [float(2 * est - hi_q), float(2 * est - lo_q)], "n_states": len(common)}
