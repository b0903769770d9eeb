"""The verdict line, the terminal table and ``report.html`` of an audit (the audit reaches the last two
through :mod:`collapse_probe._reports`, by name)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from collapse_probe.audit._verdict import NOT_MEASURED, states_text, verdict
from collapse_probe.metrics.partitioners import groups_by_meaning
from collapse_probe.report.audit_plots import effective_modes_text, fmt_interval, fmt_value, view_text

__all__ = ["summary_table", "verdict", "write_audit_report"]


def write_audit_report(path: str | Path, results: dict[str, Any], records: Sequence[dict[str, Any]]) -> Path:
    """``report.html``: ε per state with CIs, class histograms with examples, ε by turn, direct vs VS."""
    from collapse_probe.report import write_html_report
    from collapse_probe.report.audit_plots import audit_sections

    return write_html_report(path, f"Collapse audit: {results['simulator']} on {results['benchmark']}",
                             audit_sections(results, records), subtitle=results["verdict"])  # fmt: skip


def _kinds_text(s: dict[str, Any]) -> str:
    kinds = s.get("by_kind") or s.get("by_source") or {}
    return ", ".join(f"{b['n_states']} {k}" for k, b in kinds.items())


def states_rows(results: dict[str, Any]) -> list[tuple[str, str]]:
    """What the audited states are; probe states are said not to be Definition 3.1's (the notice says how to
    ask for those)."""
    s = results["summary"]
    text = states_text(s, results.get("policy") is not None)
    kinds = _kinds_text(s)
    if results.get("policy") is None:
        kinds += ("; " if kinds else "") + "not the on-policy states of Definition 3.1"
    return [("states", text + (f" ({kinds})" if kinds else ""))]


def summary_table(results: dict[str, Any]) -> str:
    """A plain-text table for the terminal: the meaning view, the reward view, then the other views.

    Every ε printed is the bias-aware estimate with its interval (the plug-in 1 − max/N only where
    labelled as such), so the rows agree with the verdict line and with each other.
    """
    s = results["summary"]
    ce, en = s["collapse_error"], s["entropy"]
    star = results.get("epsilon_star", 0.2)
    verdicts = results.get("verdicts") or {}
    n = results["samples_per_state"]
    f, ci = fmt_value, fmt_interval
    part = results["partitioner"]
    meaning = verdicts.get("meaning") or {"label": "", "estimate": ce["estimate"], "ci95": ce["ci95"]}
    rows = [
        ("simulator", f"{results['simulator']} ({results['mode']})"),
        *states_rows(results),
        ("samples per state", f"{n}" + ("  LOW CONFIDENCE (N < 20)" if s["low_confidence"] else "")),
        ("threshold ε*", f"{star:g}  (--epsilon-star: a view is COLLAPSED when its interval lies below ε*)"),
        ("infra failures excluded", str(s["infra_failures"])),
        ("meaning view: classes by", part + ("  (by meaning)" if groups_by_meaning(part) else "  (not by meaning)")),
        *([("  meaning key", results["meaning_key"])] if results.get("meaning_key") else []),
        ("  collapse error ε̂ (mean)", f"{f(ce['estimate'])} {ci(ce['ci95'])}"
         + (f"  no meaning verdict: {meaning['reason']}" if meaning.get("label") == NOT_MEASURED else "")
         if meaning.get("label") in (NOT_MEASURED, "") else view_text(meaning, star)),
    ]  # fmt: skip
    for kind, b in (s.get("by_kind") or s.get("by_source", {})).items():
        rows.append((f"  ε̂ at {kind} states", f"{f(b['collapse_error'])} {ci(b['ci95'])} (n={b['n_states']})"))
    rows += [
        ("  entropy, nats (CWJ)", f"{f(en['estimate'])} {ci(en['ci95'])}  (estimate incl. unseen classes)"),
        ("  effective modes exp(H)", effective_modes_text(s, n)),
    ]
    rv = s.get("reward_view") or {}
    reward = verdicts.get("reward")
    rows.append(("reward view", str(rv.get("classes") or "none (the benchmark declares no reward_class hook)")))
    if reward is not None:
        over = f" over {reward['over']}" if reward["label"] != NOT_MEASURED else ""
        rows.append(("  collapse error ε̂ (mean)", view_text(reward, star) + over))
    ex = s.get("exact")
    if ex:
        text = (f"over {ex['n_states']} states: P(the whole reply is one of the closed answers) {ex['closed_set_mass']:.4f} "
                "(format compliance, not collapse)")  # fmt: skip
        if ex.get("collapse_error_in_set") is not None:
            text += f"; ε of the answer given one of them {ex['collapse_error_in_set']:.3f}"
        rows.append(("exact closed-set scores", text))
    eps_bar = s["accumulated_collapse_error"]
    rows.append(("accumulated ε̄_H", f(eps_bar) if eps_bar is not None else "n/a (along on-policy rollouts: --policy)"))
    if results.get("trajectory"):
        t = results["trajectory"]
        rows.append(("gradient-bias bound",
                     f"2·B·R_max·ε̄_H = {t['gradient_bias_bound']:.3f}  (assumes B = {t['B']:g}, --bound-b; R_max = {t['R_max']:g}, --r-max)"))  # fmt: skip
    if "vs_parse_failures" in s:
        v = s["vs_parse_failures"]
        rate = f" ({v['rate']:.0%} of turns fell back: no usable candidates or probabilities)" if v.get("rate") else ""
        rows.append(("VS parse failures", f"{v['count']} of {v['of']}{rate}"))
    if "compare_vs" in results:
        rows += compare_vs_rows(results["compare_vs"])
    if results.get("variance_share"):
        v = results["variance_share"]
        rows.append(
            ("simulator variance share", f"{f(v.get('share'))} {ci(v.get('ci'))} {v.get('note') or ''}".strip())
        )
    if results.get("human_reference"):
        d = results["human_reference"]["donations"]
        if "wasserstein" in d:
            rows.append(("donations vs human",
                         f"W1 {d['wasserstein']:.3f}, KS {d['ks_statistic']:.3f}, L1 {d['l1_binned']:.3f}"))  # fmt: skip
    from collapse_probe.audit._human import people_epsilon_rows
    from collapse_probe.report._layout import display_width, pad

    rows += people_epsilon_rows(results)
    width = max(display_width(r[0]) for r in rows)
    return "\n".join(f"{pad(k, width)}  {v}" for k, v in rows)


def compare_vs_rows(c: dict[str, Any]) -> list[tuple[str, str]]:
    """Direct and VS side by side; ``VS − direct`` is the difference of the two printed estimates."""
    f, ci = fmt_value, fmt_interval
    rows = []
    for name, key in (("", "difference_vs_minus_direct"), ("reward-view ", "reward_view_difference_vs_minus_direct")):
        d = c.get(key)
        if not d or d.get("estimate") is None:
            continue
        subset = "" if d.get("all_states", True) else f" (over the {d['n_states']} states measured in both)"
        rows.append((f"direct {name}ε̂", f"{f(d['a_estimate'])}{subset}"))
        rows.append((f"VS {name}ε̂", f(d["b_estimate"])))
        rows.append(
            (f"VS − direct {name}ε̂", f"{f(d['estimate'])} {ci(d['ci95'])} (each side's 97.5% interval, combined)")
        )
    if c.get("vs_parse_failures"):
        v = c["vs_parse_failures"]
        rate = f"{v['rate']:.0%}, " if v.get("rate") is not None else ""
        rows.append(("VS parse failures", f"{v['count']} of {v['of']} ({rate}{v['reasons']})"))
    return rows
