"""The verdict line, the terminal table, the per-state rows of ``results.json`` and ``report.html``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from collapse_probe.audit._config import AuditConfig


def _rerun_flags(config: AuditConfig, est: float, lo: float, hi: float) -> str:
    """Flags that should shrink the CI enough to exclude ε*: the half-width falls roughly as one over
    the square root of the number of states, so ask for (half-width / distance to ε*)² times as many."""
    half = (hi - lo) / 2
    gap = max(abs(est - config.epsilon_star), 0.02)
    factor = min(16, max(2, math.ceil((half / gap) ** 2)))
    flags = [f"--states {config.states * factor}"]
    if config.samples < 50:
        flags.append(f"--samples {max(50, config.samples)}")
    return " ".join(flags)


def verdict(summary: dict[str, Any], config: AuditConfig, partition: str | None = None,
            policy: bool | None = None) -> str:  # fmt: skip
    """One line a newcomer can act on: the answer, the evidence and, when INCONCLUSIVE, the flags to
    rerun with.

    COLLAPSED when the CI of the mean ε̂ lies below ε*, NOT COLLAPSED when it lies above,
    INCONCLUSIVE when it contains ε*; LOW CONFIDENCE is appended for N < 20.

    Args:
        summary: the ``summary`` block.
        config: the audit configuration.
        partition: the partition used (default: the one asked for).
        policy: the states are on-policy turns (default: ``config.policy`` is set).
    """
    ce = summary["collapse_error"]
    if ce["estimate"] is None:
        return f"NO RESULT: no state could be measured ({summary['infra_failures']} infrastructure failures)"
    est, (lo, hi) = ce["estimate"], ce["ci95"]
    star = config.epsilon_star
    partition = partition or config.partitioner_name
    on_policy = config.policy is not None if policy is None else policy
    what = "on-policy simulator turns" if on_policy else "probe states"
    where = f"{summary['n_states']} {what}, N = {config.samples} replies each, classes by {partition}"
    evidence = f"mean ε̂ = {est:.3f}, 95% CI [{lo:.3f}, {hi:.3f}]"
    if hi < star:
        line = (f"COLLAPSED: the simulator mostly repeats one answer; {evidence} is below ε* = {star:g} "
                f"({where})")  # fmt: skip
    elif lo > star:
        line = f"NOT COLLAPSED: the simulator's answers vary; {evidence} is above ε* = {star:g} ({where})"
    else:
        line = (f"INCONCLUSIVE: {evidence} contains ε* = {star:g} ({where}); sample more states or responses: "
                f"rerun with {_rerun_flags(config, est, lo, hi)}")  # fmt: skip
    if summary.get("low_confidence"):
        line += f" [LOW CONFIDENCE: N = {config.samples} < 20 responses per state; ε̂ is biased towards collapsed]"
    if summary["infra_failures"]:
        line += f" [{summary['infra_failures']} states excluded: infrastructure failures]"
    return line


def _state_row(r: dict[str, Any]) -> dict[str, Any]:
    """The per-state entry of ``results.json`` (responses stay in ``samples.jsonl``)."""
    keys = ("state_id", "mode", "source", "kind", "turn", "task_id", "status", "n", "class_counts", "class_names",
            "collapse_error", "collapse_error_ci95", "collapse_error_corrected", "collapse_error_estimate",
            "entropy", "entropy_ci95", "entropy_lower_bound_only", "entropy_note", "hill", "hill_note", "distinct_1", "distinct_2", "vendi", "low_confidence", "exact", "decision", "vs", "n_empty", "error")  # fmt: skip
    row = {k: r[k] for k in keys if k in r}
    row.setdefault("n", 0)
    row.setdefault("class_counts", [])
    row.setdefault("collapse_error", None)
    row.setdefault("collapse_error_ci95", None)
    row.setdefault("entropy", None)
    if "vs" in row:
        row["vs"] = {k: v for k, v in row["vs"].items() if k != "examples"}
    return row


def write_audit_report(path: str | Path, results: dict[str, Any], records: Sequence[dict[str, Any]]) -> Path:
    """``report.html``: ε per state with CIs, class histograms with examples, ε by turn, direct vs VS."""
    from collapse_probe.report import write_html_report
    from collapse_probe.report.audit_plots import audit_sections

    return write_html_report(path, f"Collapse audit: {results['simulator']} on {results['benchmark']}",
                             audit_sections(results, records), subtitle=results["verdict"])  # fmt: skip


def summary_table(results: dict[str, Any]) -> str:
    """A plain-text table for the terminal."""
    s = results["summary"]
    ce, en = s["collapse_error"], s["entropy"]

    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    def ci(c: Sequence[float | None] | None) -> str:
        return "" if not c else f"[{f(c[0])}, {'no upper bound' if c[1] is None else f(c[1])}]"

    rows = [
        ("simulator", f"{results['simulator']} ({results['mode']})"),
        ("states measured", f"{s['n_states']} (infra failures excluded: {s['infra_failures']})"),
        (
            "samples per state",
            f"{results['samples_per_state']}" + ("  LOW CONFIDENCE (N < 20)" if s["low_confidence"] else ""),
        ),
        (
            "partitioner",
            results["partitioner"] + ("  (by meaning)" if results["partitioner"] in ("embedding", "judge") else ""),
        ),  # fmt: skip
        ("headline over", results.get("states_audited", "probe states")),
        ("collapse error ε̂ (mean)", f"{f(ce['estimate'])} {ci(ce['ci95'])}"),
        ("ε corrected (mean)", f(s["collapse_error_corrected"])),
        ("entropy, nats (CWJ)", f"{f(en['estimate'])} {ci(en['ci95'])}  (estimate incl. unseen classes)"),
        (
            "effective modes exp(H)",
            f"{f(s['effective_modes'])}  (estimate incl. unseen classes)"
            if s.get("effective_modes") is not None or s.get("effective_modes_lower_bound") is None
            else f"at least {f(s['effective_modes_lower_bound'])}  (lower bound only: most replies are distinct)",
        ),
        (
            "exact ε (closed set + outside)",
            f"{f(s['exact_collapse_error'])} over {s['n_exact_states']} states"
            + (
                f"; mass outside the set {s['exact_outside_mass']:.4f}"
                if s.get("exact_outside_mass") is not None
                else ""
            ),
        ),  # fmt: skip
        ("accumulated ε̄_H", f(s["accumulated_collapse_error"])),
    ]
    views = s.get("by_kind") or s.get("by_source", {})
    for kind, b in views.items():
        rows.append((f"  ε̂ at {kind} states", f"{f(b['collapse_error'])} {ci(b['ci95'])} (n={b['n_states']})"))
    d = s.get("decision_collapse_error")
    if d:
        rows.append(("decision ε (reward's label)", f"{f(d['estimate'])} {ci(d['ci95'])} over {d['n_states']} "
                     "states that ask for a decision"))  # fmt: skip
    if results.get("trajectory"):
        t = results["trajectory"]
        rows.append(
            (
                "gradient-bias bound",
                f"2·B·R_max·ε̄_H = {t['gradient_bias_bound']:.3f} (B={t['B']:g}, R_max={t['R_max']:g})",
            )
        )
    if "vs_parse_failures" in s:
        v = s["vs_parse_failures"]
        rate = f" ({v['rate']:.0%} of turns fell back: no usable candidates or probabilities)" if v.get("rate") else ""
        rows.append(("VS parse failures", f"{v['count']} of {v['of']}{rate}"))
    if "compare_vs" in results:
        c = results["compare_vs"]
        d = c["difference_vs_minus_direct"]
        rows.append(("direct ε̂", f(c["direct"]["collapse_error"]["estimate"])))
        rows.append(("VS ε̂", f(c["verbalized"]["collapse_error"]["estimate"])))
        rows.append(("VS − direct", f"{f(d['estimate'])} {ci(d['ci95'])}"))
        if c.get("vs_parse_failures"):
            v = c["vs_parse_failures"]
            rate = f"{v['rate']:.0%}, " if v.get("rate") is not None else ""
            rows.append(("VS parse failures", f"{v['count']} of {v['of']} ({rate}{v['reasons']})"))
    if results.get("variance_share"):
        v = results["variance_share"]
        rows.append(
            ("simulator variance share", f"{f(v.get('share'))} {ci(v.get('ci'))} {v.get('note') or ''}".strip())
        )
    if results.get("human_reference"):
        d = results["human_reference"]["donations"]
        if "wasserstein" in d:
            rows.append(
                (
                    "donations vs human",
                    f"W1 {d['wasserstein']:.3f}, KS {d['ks_statistic']:.3f}, L1 {d['l1_binned']:.3f}",
                )
            )
    width = max(len(r[0]) for r in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
