"""Comparison of the audited simulator with the human Persuasion-for-Good data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from collapse_probe.audit._config import DONATION_BINS

# ----------------------------------------------------------------------------------------------- human reference


def donation_comparison(simulated: Sequence[float], human: Sequence[float]) -> dict[str, Any]:
    """Simulated vs human donation distributions: Wasserstein-1, two-sample KS, and L1 over the
    bins :data:`DONATION_BINS` (Σ|p − q|, in [0, 2])."""
    from scipy.stats import ks_2samp, wasserstein_distance

    s = np.clip(np.asarray(simulated, dtype=np.float64), 0, 2)
    h = np.clip(np.asarray(human, dtype=np.float64), 0, 2)
    if s.size == 0 or h.size == 0:
        return {
            "note": "no simulated or no human donations to compare",
            "n_simulated": int(s.size),
            "n_human": int(h.size),
        }
    edges = np.array(DONATION_BINS)
    ps = np.histogram(s, bins=edges)[0] / s.size
    ph = np.histogram(h, bins=edges)[0] / h.size
    ks = ks_2samp(s, h)
    return {
        "wasserstein": float(wasserstein_distance(s, h)),
        "ks_statistic": float(ks.statistic),
        "ks_pvalue": float(ks.pvalue),
        "l1_binned": float(np.abs(ps - ph).sum()),
        "bins": ["$0", "($0, $0.5]", "($0.5, $1]", "($1, $1.5]", "($1.5, $2]"],
        "simulated_binned": ps.tolist(),
        "human_binned": ph.tolist(),
        "simulated_mean": float(s.mean()),
        "human_mean": float(h.mean()),
        "n_simulated": int(s.size),
        "n_human": int(h.size),
    }


def human_reference(
    records: Sequence[dict[str, Any]], dialogues: Sequence[Any], embedder: Any = None
) -> dict[str, Any]:
    """Compare the audited simulator with the human P4G data."""
    from collapse_probe.benchmarks.p4g import parse_donation
    from collapse_probe.metrics.vendi import distinct_n, vendi_score

    ok = [r for r in records if r.get("status") == "ok"]
    sim_donations, stated, total = [], 0, 0
    for r in ok:
        if r["source"] in ("elicitation",) or r.get("closed_set"):
            for t in r["responses"]:
                total += 1
                d = parse_donation(t)
                if d is not None:
                    stated += 1
                    sim_donations.append(min(d, 2.0))
    human_donations = [d.donation for d in dialogues if d.donation is not None]
    out: dict[str, Any] = {"donations": donation_comparison(sim_donations, human_donations)}
    out["donations"]["simulated_stated_fraction"] = stated / total if total else None
    hs = [r for r in ok if r["source"] == "human" and r.get("human_reply")]
    if hs:
        human_texts = [r["human_reply"] for r in hs]
        sim_texts = [r["responses"][0] for r in hs]  # one draw per prefix: like with like
        div: dict[str, Any] = {"n_prefixes": len(hs)}
        for n in (1, 2):
            div[f"distinct_{n}"] = {"simulator": distinct_n(sim_texts, n), "human": distinct_n(human_texts, n)}
        if embedder is not None and len(hs) >= 2:
            emb = embedder.embed(sim_texts + human_texts)
            div["vendi"] = {"simulator": vendi_score(emb[: len(hs)]), "human": vendi_score(emb[len(hs) :])}
        out["diversity"] = div
    return out
