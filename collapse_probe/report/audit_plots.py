"""Figures of an audit run (plotly), shared by ``report.html`` and the dashboard.

Every function takes the ``results.json`` dictionary of :mod:`collapse_probe.audit` (and, for the
class histograms, the per-state records of ``samples.jsonl``, which hold the example texts) and
returns a ``plotly.graph_objects.Figure``; plotly is imported inside the functions.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

__all__ = [
    "audit_sections",
    "class_histograms_figure",
    "collapse_error_by_turn_figure",
    "collapse_error_per_state_figure",
    "compare_vs_figure",
    "donation_comparison_figure",
]


def _ok(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("status") == "ok" and r.get("collapse_error") is not None]


def collapse_error_per_state_figure(results: dict[str, Any], epsilon_star: float | None = None) -> Any:
    """ε̂ per state with its 95 % CI (error bars), one marker colour per state source, ε* as a line.

    With ``compare_vs`` the Verbalized-Sampling states are drawn beside the direct ones.
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    series = [(results.get("mode", "direct"), results["states"])]
    if results.get("compare_vs"):
        series.append(("verbalized" if series[0][0] == "direct" else "direct", results["compare_vs"]["states"]))
    for mode, rows in series:
        ok = _ok(rows)
        for src in sorted({r["source"] for r in ok}):
            rs = [r for r in ok if r["source"] == src]
            fig.add_trace(go.Scatter(
                x=[r["state_id"] for r in rs], y=[r["collapse_error"] for r in rs], mode="markers",
                name=f"{mode}: {src}",
                error_y={"type": "data", "symmetric": False,
                         "array": [r["collapse_error_ci95"][1] - r["collapse_error"] for r in rs],
                         "arrayminus": [r["collapse_error"] - r["collapse_error_ci95"][0] for r in rs]},
                customdata=[[r["n"], r["entropy"], " / ".join(f"{n}: {c}" for n, c in zip(r.get("class_names", []), r["class_counts"], strict=False))[:300]] for r in rs],
                hovertemplate="%{x}<br>ε̂ %{y:.3f}<br>N %{customdata[0]}<br>entropy %{customdata[1]:.3f} nats"
                              "<br>%{customdata[2]}<extra></extra>",
            ))  # fmt: skip
    star = epsilon_star if epsilon_star is not None else results.get("epsilon_star")
    if star is not None:
        fig.add_hline(y=star, line_dash="dash", annotation_text=f"ε* = {star:g}")
    fig.update_layout(title="Collapse error per state (95% CI)", yaxis_title="ε̂ = 1 − max_count/N",
                      yaxis_range=[0, 1], xaxis_title="state", height=450)  # fmt: skip
    return fig


def class_histograms_figure(records: Sequence[dict[str, Any]], max_states: int = 12, max_classes: int = 8) -> Any:
    """Class histograms of the first ``max_states`` measured states; hovering a bar shows example
    responses of that class."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    ok = [r for r in records if r.get("status") == "ok"][:max_states]
    if not ok:
        return go.Figure().update_layout(title="No measured states")
    cols = 2
    rows = (len(ok) + cols - 1) // cols
    fig = make_subplots(
        rows=rows, cols=cols, subplot_titles=[f"{r['state_id']} (ε̂ {r['collapse_error']:.2f})"[:60] for r in ok]
    )
    for i, r in enumerate(ok):
        names = [str(n)[:30] for n in r.get("class_names", [])][:max_classes]
        counts = r["class_counts"][:max_classes]
        examples = r.get("class_examples", [[]] * len(counts))[:max_classes]
        hover = ["<br>".join(html.escape(e[:120]) for e in ex) or "(no example)" for ex in examples]
        fig.add_trace(go.Bar(x=[f"{j}: {n}" for j, n in enumerate(names)], y=counts, customdata=hover, showlegend=False,
                             hovertemplate="%{x}<br>count %{y}<br>%{customdata}<extra></extra>"),
                      row=i // cols + 1, col=i % cols + 1)  # fmt: skip
    fig.update_layout(title="Response classes per state (hover: example responses)", height=260 * rows)
    return fig


def collapse_error_by_turn_figure(results: dict[str, Any]) -> Any:
    """Mean ε̂ by simulator turn along the on-policy rollouts, with ε̄_H in the title."""
    import plotly.graph_objects as go

    traj = results.get("trajectory")
    if not traj:
        return go.Figure().update_layout(title="No on-policy rollouts (run with --policy)")
    rows = traj["collapse_error_by_turn"]
    fig = go.Figure(go.Scatter(x=[r["turn"] for r in rows], y=[r["mean"] for r in rows], mode="lines+markers",
                               customdata=[r["n_states"] for r in rows],
                               hovertemplate="turn %{x}<br>mean ε̂ %{y:.3f}<br>states %{customdata}<extra></extra>"))  # fmt: skip
    fig.update_layout(
        title=f"ε̂ by turn; accumulated ε̄_H = {traj['accumulated_collapse_error']:.3f}, "
        f"gradient-bias bound {traj['gradient_bias_bound']:.3f}",
        xaxis_title="simulator turn", yaxis_title="mean ε̂", yaxis_range=[0, 1], height=380,
    )  # fmt: skip
    return fig


def compare_vs_figure(results: dict[str, Any]) -> Any:
    """Direct vs Verbalized Sampling: mean ε̂ with CIs and mean entropy."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    c = results.get("compare_vs")
    if not c:
        return go.Figure().update_layout(title="Run with --compare-vs to compare direct and VS")
    fig = make_subplots(rows=1, cols=2, subplot_titles=["mean ε̂ (95% CI)", "mean entropy, nats (95% CI)"])
    for col, key in ((1, "collapse_error"), (2, "entropy")):
        ys, lo, hi = [], [], []
        for mode in ("direct", "verbalized"):
            e = c[mode][key]
            ys.append(e["estimate"] or 0.0)
            ci = e["ci95"] or [e["estimate"] or 0.0] * 2
            lo.append((e["estimate"] or 0.0) - ci[0])
            hi.append(ci[1] - (e["estimate"] or 0.0))
        fig.add_trace(go.Bar(x=["direct", "VS"], y=ys, showlegend=False,
                             error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo}),
                      row=1, col=col)  # fmt: skip
    d = c["difference_vs_minus_direct"]
    sub = (
        "" if d["estimate"] is None else f"VS − direct ε̂ = {d['estimate']:.3f} [{d['ci95'][0]:.3f}, {d['ci95'][1]:.3f}]"
    )
    v = c.get("vs_parse_failures")
    if v:
        sub += f"; VS parse failures {v['count']} of {v['of']}"
    fig.update_layout(title=f"Direct vs Verbalized Sampling. {sub}", height=380)
    return fig


def donation_comparison_figure(results: dict[str, Any]) -> Any:
    """Binned donation distribution of the simulator vs the human P4G donors."""
    import plotly.graph_objects as go

    d = ((results.get("human_reference") or {}).get("donations")) or {}
    if "bins" not in d:
        return go.Figure().update_layout(title="No human reference (run with --human PATH)")
    fig = go.Figure([go.Bar(name="simulator", x=d["bins"], y=d["simulated_binned"]),
                     go.Bar(name="human", x=d["bins"], y=d["human_binned"])])  # fmt: skip
    fig.update_layout(barmode="group", yaxis_title="share of donations", height=380,
                      title=f"Donations: W1 {d['wasserstein']:.3f}, KS {d['ks_statistic']:.3f}, L1 {d['l1_binned']:.3f}")  # fmt: skip
    return fig


def audit_sections(results: dict[str, Any], records: Sequence[dict[str, Any]]) -> list[tuple[str, Any]]:
    """The sections of an audit's ``report.html`` (headings and figures/tables, in order)."""
    from collapse_probe.report import table_html

    s = results["summary"]
    ce, en = s["collapse_error"], s["entropy"]
    summary_rows = [
        ["simulator", f"{results['simulator']} ({results.get('mode')})"],
        ["benchmark / partitioner", f"{results['benchmark']} / {results['partitioner']}"],
        [
            "samples per state",
            str(results["samples_per_state"]) + (" (LOW CONFIDENCE: N < 20)" if s["low_confidence"] else ""),
        ],
        ["states measured / infra failures", f"{s['n_states']} / {s['infra_failures']}"],
        ["mean ε̂ [95% CI]", _est(ce)],
        ["mean ε corrected", _f(s.get("collapse_error_corrected"))],
        ["mean entropy, nats (CWJ) [95% CI]", _est(en)],
        ["effective modes exp(H)", _f(s.get("effective_modes"))],
        [
            "exact ε (closed answer set)",
            f"{_f(s.get('exact_collapse_error'))} over {s.get('n_exact_states', 0)} states",
        ],
        ["accumulated ε̄_H", _f(s.get("accumulated_collapse_error"))],
    ]
    sections: list[tuple[str, Any]] = [("Summary", {"columns": ["quantity", "value"], "rows": summary_rows})]
    sections.append(("Collapse error per state", collapse_error_per_state_figure(results)))
    state_rows = [
        [r["state_id"], r.get("source"), r.get("turn"), r.get("n"), _f(r.get("collapse_error")),
         _ci(r.get("collapse_error_ci95")), _f(r.get("entropy")), (r.get("exact") or {}).get("collapse_error"),
         r.get("status"), r.get("error") or ""]
        for r in results["states"]
    ]  # fmt: skip
    sections.append(("States", {"columns": ["state", "source", "turn", "N", "ε̂", "95% CI", "entropy", "exact ε",
                                            "status", "error"], "rows": state_rows}))  # fmt: skip
    sections.append(("Response classes", class_histograms_figure(records)))
    if results.get("trajectory"):
        sections.append(("Collapse error by turn", collapse_error_by_turn_figure(results)))
    if results.get("compare_vs"):
        sections.append(("Direct vs Verbalized Sampling", compare_vs_figure(results)))
    if results.get("variance_share"):
        v = results["variance_share"]
        sections.append(("Simulator share of reward variance (Lemma 3.3)", table_html(
            ["share", "95% CI", "within", "between", "note"],
            [[_f(v.get("share")), _ci(v.get("ci")), _f(v.get("within")), _f(v.get("between")), v.get("note") or ""]])))  # fmt: skip
    if results.get("human_reference"):
        sections.append(("Human reference: donations", donation_comparison_figure(results)))
        div = results["human_reference"].get("diversity")
        if div:
            rows = [[k, _f(v.get("simulator")), _f(v.get("human"))] for k, v in div.items() if isinstance(v, dict)]
            sections.append(("Human reference: diversity at the same prefixes",
                             {"columns": ["metric", "simulator", "human"], "rows": rows}))  # fmt: skip
    return sections


def _f(x: Any) -> str:
    return "n/a" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def _ci(c: Sequence[float] | None) -> str:
    return "" if not c else f"[{c[0]:.3f}, {c[1]:.3f}]"


def _est(e: dict[str, Any]) -> str:
    return f"{_f(e.get('estimate'))} {_ci(e.get('ci95'))}"
