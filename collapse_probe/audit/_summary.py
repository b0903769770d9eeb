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
        collapse_error_ci,
        collapse_error_corrected,
        entropy,
        entropy_ci,
        hill_number,
        low_confidence,
        sample_coverage,
    )
    from collapse_probe.metrics.vendi import distinct_n

    n = int(counts.sum())
    return {
        "collapse_error": collapse_error(counts),
        "collapse_error_ci95": list(collapse_error_ci(counts)),
        "collapse_error_corrected": collapse_error_corrected(counts, seed=seed),
        "entropy": entropy(counts),
        "entropy_ci95": list(entropy_ci(counts, seed=seed)),
        "entropy_plugin": entropy(counts, "plugin"),
        "entropy_miller_madow": entropy(counts, "miller_madow"),
        "hill": {
            "0": hill_number(counts, 0),
            "1": hill_number(counts, 1),
            "2": hill_number(counts, 2),
            "inf": hill_number(counts, float("inf")),
        },  # fmt: skip
        "sample_coverage": sample_coverage(counts),
        "distinct_1": distinct_n(texts, 1),
        "distinct_2": distinct_n(texts, 2),
        "low_confidence": low_confidence(n),
    }


# ----------------------------------------------------------------------------------------------- summaries


def _boot_ci(boot: np.ndarray, est: float, level: float, basic: bool) -> list[float]:
    alpha = 1 - level
    lo_q, hi_q = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    if basic:
        return [float(2 * est - hi_q), float(2 * est - lo_q)]
    return [float(lo_q), float(hi_q)]


def _eps_boot_matrix(counts_list: Sequence[np.ndarray], n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(S, B) plug-in ε̂ of B multinomial resamples of each state's N responses."""
    rows = []
    for c in counts_list:
        n = int(c.sum())
        draws = rng.multinomial(n, c / n, size=n_boot)
        rows.append(1.0 - draws.max(axis=1) / n)
    return np.array(rows)


def mean_collapse_error(counts_list: Sequence[Sequence[int]], n_boot: int = 1000, level: float = 0.95,
                        seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Mean of the per-state ε̂ with a two-level bootstrap CI.

    Each bootstrap replicate resamples the states with replacement (the variation between states)
    and, inside every drawn state, its N responses multinomially (the sampling noise of each ε̂),
    then averages. The interval is the *basic* bootstrap interval (2·est − quantiles) because the
    plug-in max is biased upwards under resampling when classes tie, which puts percentile intervals
    on the wrong side of the truth (see :func:`collapse_probe.metrics.estimators.collapse_error_ci`);
    it is clipped to [0, 1]. With one state only the inner level remains.
    """
    cs = [np.asarray(c, dtype=np.int64) for c in counts_list]
    if not cs:
        return {"estimate": None, "ci95": None, "n_states": 0}
    rng = np.random.default_rng(seed)
    est_states = np.array([1.0 - c.max() / c.sum() for c in cs])
    est = float(est_states.mean())
    mat = _eps_boot_matrix(cs, n_boot, rng)
    idx = rng.integers(0, len(cs), size=(n_boot, len(cs))) if len(cs) > 1 else np.zeros((n_boot, 1), dtype=int)
    boot = mat[idx, np.arange(n_boot)[:, None]].mean(axis=1)
    lo, hi = _boot_ci(boot, est, level, basic=True)
    return {"estimate": est, "ci95": [max(0.0, min(lo, est)), min(1.0, max(hi, est))], "n_states": len(cs),
            "method": "two-level basic bootstrap (states, then responses within each state)"}  # fmt: skip


def mean_with_state_se(estimates: Sequence[float], cis: Sequence[Sequence[float]], n_boot: int = 1000,
                       level: float = 0.95, seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Mean of per-state estimates with a two-level CI: states resampled, and each drawn state's
    estimate perturbed by a normal draw with the standard error implied by its own 95 % CI
    (for entropy: the extended-assemblage bootstrap of :func:`~collapse_probe.metrics.estimators.entropy_ci`)."""
    est = np.asarray(estimates, dtype=np.float64)
    if est.size == 0:
        return {"estimate": None, "ci95": None}
    se = np.array([(hi - lo) / (2 * 1.959964) for lo, hi in cis])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, est.size, size=(n_boot, est.size)) if est.size > 1 else np.zeros((n_boot, 1), dtype=int)
    boot = (est[idx] + se[idx] * rng.standard_normal(idx.shape)).mean(axis=1)
    lo, hi = _boot_ci(boot, float(est.mean()), level, basic=False)
    return {"estimate": float(est.mean()), "ci95": [max(0.0, lo), hi]}


def summarize_states(records: Sequence[dict[str, Any]], config: AuditConfig) -> dict[str, Any]:
    """The summary block of ``results.json`` over the measured states of one mode."""
    from collapse_probe.metrics.estimators import MIN_CONFIDENT_SAMPLES

    ok = [r for r in records if r.get("status") == "ok"]
    infra = [r for r in records if r.get("status") == "infra_error"]
    eps = mean_collapse_error([r["class_counts"] for r in ok], n_boot=config.n_boot, seed=config.seed)
    ent = mean_with_state_se([r["entropy"] for r in ok], [r["entropy_ci95"] for r in ok], n_boot=config.n_boot,
                             seed=config.seed)  # fmt: skip
    exact = [r["exact"]["collapse_error"] for r in ok if (r.get("exact") or {}).get("collapse_error") is not None]
    summary: dict[str, Any] = {
        "collapse_error": {"estimate": eps["estimate"], "ci95": eps["ci95"], "method": eps.get("method")},
        "collapse_error_corrected": float(np.mean([r["collapse_error_corrected"] for r in ok])) if ok else None,
        "entropy": {"estimate": ent["estimate"], "ci95": ent["ci95"], "estimator": "chao_wang_jost", "unit": "nats"},
        "effective_modes": math.exp(ent["estimate"]) if ent["estimate"] is not None else None,
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
                          "entropy": float(np.mean([r["entropy"] for r in rs]))}  # fmt: skip
    summary["by_source"] = by_source
    return summary


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
    rng = np.random.default_rng(seed)
    ca = [np.asarray(ka[s]["class_counts"]) for s in common]
    cb = [np.asarray(kb[s]["class_counts"]) for s in common]
    diff = np.array([(1 - y.max() / y.sum()) - (1 - x.max() / x.sum()) for x, y in zip(ca, cb, strict=True)])
    ma, mb = _eps_boot_matrix(ca, n_boot, rng), _eps_boot_matrix(cb, n_boot, rng)
    idx = (
        rng.integers(0, len(common), size=(n_boot, len(common)))
        if len(common) > 1
        else np.zeros((n_boot, 1), dtype=int)
    )
    cols = np.arange(n_boot)[:, None]
    boot = (mb[idx, cols] - ma[idx, cols]).mean(axis=1)
    est = float(diff.mean())
    lo, hi = _boot_ci(boot, est, 0.95, basic=True)
    return {"estimate": est, "ci95": [lo, hi], "n_states": len(common)}
