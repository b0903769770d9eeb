"""The verdict line, the terminal table and ``report.html`` of an audit (the audit reaches the last two
through :mod:`collapse_probe.core._reports`, by name)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from collapse_probe.metrics.partitioners import groups_by_meaning
from collapse_probe.pipelines.audit._verdict import NOT_MEASURED, states_text, verdict
from collapse_probe.report.audit_plots import (
    effective_modes_text,
    fmt_interval,
    fmt_value,
    infra_failures_text,
    n_states,
    reward_classes_text,
    samples_per_state_text,
    simulator_errors_text,
    view_text,
)
from collapse_probe.results import AuditResults
from collapse_probe.results._audit import AuditSummary, CompareVS

__all__ = ["summary_table", "verdict", "write_audit_report"]


def write_audit_report(
    path: str | Path, results: AuditResults | Mapping[str, object], records: Sequence[Mapping[str, object]]
) -> Path:
    """``report.html``: ε per state with CIs, class histograms with examples, ε by turn, direct vs VS.

    The results (typed, or the ``results.json`` object) are parsed through
    :class:`~collapse_probe.results.AuditResults` first; the sections draw the validated JSON.

    Raises:
        ConfigError: the results do not hold what their model declares (one line naming the field).
    """
    from collapse_probe.report import write_html_report
    from collapse_probe.report._html import report_results
    from collapse_probe.report.audit_plots import audit_sections

    r = report_results(AuditResults, results, path)
    return write_html_report(path, f"Collapse audit: {r.simulator} on {r.benchmark}",
                             audit_sections(r.to_json(), records),
                             subtitle=r.verdict_text.answer if r.verdict_text else (r.verdict or "").split("\n")[0])  # fmt: skip


def _audit(results: AuditResults | Mapping[str, object]) -> AuditResults:
    """The audit's typed results (a pipeline's JSON object is read through :class:`AuditResults`)."""
    return results if isinstance(results, AuditResults) else AuditResults.build(results)


def _kinds_text(s: AuditSummary) -> str:
    kinds = s.by_kind or s.by_source
    return ", ".join(f"{b.n_states} {k}" for k, b in kinds.items())


def states_rows(results: AuditResults | Mapping[str, object]) -> list[tuple[str, str]]:
    """What the audited states are; probe states are said not to be Definition 3.1's (the notice says how to
    ask for those)."""
    r = _audit(results)
    text = states_text(r.summary.to_json(), r.policy is not None)
    kinds = _kinds_text(r.summary)
    if r.policy is None:
        kinds += ("; " if kinds else "") + "not the on-policy states of Definition 3.1"
    return [("states", text + (f" ({kinds})" if kinds else ""))]


def summary_table(results: AuditResults | Mapping[str, object]) -> str:
    """A plain-text table for the terminal: the meaning view, the reward view, then the other views.

    Every ε printed is the bias-aware estimate with its interval (the plug-in 1 − max/N only where
    labelled as such), so the rows agree with the verdict line and with each other.
    """
    r = _audit(results)
    data = r.to_json()
    s = r.summary
    ce, en = s.collapse_error, s.entropy
    star = 0.2 if r.epsilon_star is None else r.epsilon_star
    n = r.samples_per_state
    f, ci = fmt_value, fmt_interval
    part = r.partitioner
    meaning = r.verdicts.meaning.to_json() if r.verdicts else {"label": "", "estimate": ce.estimate, "ci95": ce.ci95}
    rows = [
        ("simulator", f"{r.simulator} ({r.mode})"),
        *states_rows(r),
        ("samples per state", samples_per_state_text(data)),
        ("threshold ε*", f"{star:g}  (--epsilon-star: a view is COLLAPSED when its exact bounds lie below ε*)"),
        ("infra failures excluded", infra_failures_text(data)),
        ("meaning view: classes by", part + ("  (by meaning)" if groups_by_meaning(part) else "  (not by meaning)")),
        *([("  meaning key", r.meaning_key)] if r.meaning_key else []),
        ("  collapse error ε̂ (mean)", f"{f(ce.estimate)} {ci(ce.ci95)}"
         + (f"  no meaning verdict: {meaning['reason']}" if meaning.get("label") == NOT_MEASURED else "")
         if meaning.get("label") in (NOT_MEASURED, "") else view_text(meaning, star)),
    ]  # fmt: skip
    for kind, b in (s.by_kind or s.by_source).items():
        rows.append((f"  ε̂ at {kind} states", f"{f(b.collapse_error)} {ci(b.ci95)} (n={b.n_states})"))
    rows += [
        (
            "  entropy, nats (CWJ)",
            f"{f(en.estimate if en else None)} {ci(en.ci95 if en else None)}  (estimate incl. unseen classes)",
        ),
        ("  effective modes exp(H)", effective_modes_text(s.to_json(), n or 0)),
    ]
    reward = r.verdicts.reward if r.verdicts else None
    rows.append(("reward view", reward_classes_text(data)))
    if reward is not None:
        over = f" over {reward.over}" if reward.label != NOT_MEASURED else ""
        rows.append(("  collapse error ε̂ (mean)", view_text(reward.to_json(), star) + over))
    ex = s.exact
    if ex:
        text = (f"over {n_states(ex.n_states)}: P(the whole reply is one of the closed answers) {ex.closed_set_mass:.4f} "
                "(format compliance, not collapse)")  # fmt: skip
        if ex.collapse_error_in_set is not None:
            text += f"; ε of the answer given one of them {ex.collapse_error_in_set:.3f}"
        rows.append(("exact closed-set scores", text))
    eps_bar = s.accumulated_collapse_error
    rows.append(("accumulated ε̄_H", f(eps_bar) if eps_bar is not None else "n/a (along on-policy rollouts: --policy)"))
    if r.trajectory is not None:
        t = r.trajectory
        rows.append(("gradient-bias bound",
                     f"2·B·R_max·ε̄_H = {t.gradient_bias_bound:.3f}  (assumes B = {t.B:g}, --bound-b; R_max = {t.R_max:g}, --r-max)"))  # fmt: skip
    if s.vs_parse_failures is not None:
        v = s.vs_parse_failures
        rate = f" ({v.rate:.0%} of turns fell back: no usable candidates or probabilities)" if v.rate else ""
        rows.append(("VS parse failures", f"{v.count} of {v.of}{rate}"))
    if r.compare_vs is not None:
        rows += compare_vs_rows(r.compare_vs)
    if r.variance_share is not None:
        vs = r.variance_share  # its interval ``ci`` is a field the model keeps as written
        rows.append(("simulator variance share", f"{f(vs.share)} {ci(vs.get('ci'))} {vs.note or ''}".strip()))
    if r.human_reference:
        d = r.human_reference["donations"]
        if "wasserstein" in d:
            rows.append(("donations vs human",
                         f"W1 {d['wasserstein']:.3f}, KS {d['ks_statistic']:.3f}, L1 {d['l1_binned']:.3f}"))  # fmt: skip
    errors = simulator_errors_text(data)
    if errors:
        rows.append(("user-simulator errors", errors))
    from collapse_probe.pipelines.audit._human import people_epsilon_rows
    from collapse_probe.report._layout import display_width, pad

    rows += people_epsilon_rows(r.to_json())
    width = max(display_width(row[0]) for row in rows)
    return "\n".join(f"{pad(k, width)}  {v}" for k, v in rows)


def compare_vs_rows(c: CompareVS) -> list[tuple[str, str]]:
    """Direct and VS side by side; ``VS − direct`` is the difference of the two printed estimates."""
    f, ci = fmt_value, fmt_interval
    rows = []
    for name, d in (("", c.difference_vs_minus_direct), ("reward-view ", c.reward_view_difference_vs_minus_direct)):
        if d is None or d.estimate is None:
            continue
        subset = "" if d.all_states is not False else f" (over the {n_states(d.n_states)} measured in both)"
        rows.append((f"direct {name}ε̂", f"{f(d.a_estimate)}{subset}"))
        rows.append((f"VS {name}ε̂", f(d.b_estimate)))
        rows.append((f"VS − direct {name}ε̂", f"{f(d.estimate)} {ci(d.ci95)} (each side's 97.5% interval, combined)"))
    if c.vs_parse_failures:
        v = c.vs_parse_failures
        rate = f"{v.rate:.0%}, " if v.rate is not None else ""
        rows.append(("VS parse failures", f"{v.count} of {v.of} ({rate}{v.reasons})"))
    return rows
