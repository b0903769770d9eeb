"""Figures and tables of an audit run (plotly), shared by ``report.html`` and the dashboard.

The one module that draws audit runs (schema ``collapse-probe/audit/v1``, written by
:mod:`collapse_probe.audit`). Figure functions take the ``results.json`` dictionary (the class
histograms take the per-state records of ``samples.jsonl``, which hold the responses and example
texts) and return a ``plotly.graph_objects.Figure``; plotly is imported inside the functions.
Table helpers return ``{"columns": [...], "rows": [[...], ...]}``, which ``report.html`` renders as
an HTML table and the dashboard as a data frame.

The layout read here: ``results["states"]`` are the per-state rows of the primary sampling mode
``results["mode"]`` (``direct`` or ``verbalized``); with ``--compare-vs``,
``results["compare_vs"]["states"]`` are the rows of the other mode on the same states, and
``compare_vs["direct"]`` / ``compare_vs["verbalized"]`` the two summaries. A ``samples.jsonl``
record holds the same keys plus ``responses``, ``labels`` (each response's index into
``class_counts``/``class_names``, largest class first), ``class_examples``, ``context`` (the last
messages before the simulator's turn) and ``human_reply`` (human-prefix states). With ``--human``,
``results["human_reference"]`` holds ``donations`` (binned simulated vs human donations, W1, KS, L1)
and ``diversity`` (distinct-n and Vendi of simulator vs human replies at the same prefixes).
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "MIN_CONFIDENT_SAMPLES",
    "audit_sections",
    "class_histograms_figure",
    "collapse_error_by_turn_figure",
    "collapse_error_per_state_figure",
    "compare_audits_figure",
    "compare_vs_figure",
    "effective_modes_text",
    "fmt_interval",
    "fmt_value",
    "donation_comparison_figure",
    "human_diversity_table",
    "other_mode",
    "people_epsilon_table",
    "short_state_id",
    "state_classes",
    "states_by_mode",
    "state_estimate",
    "states_table",
    "summary_table",
    "variance_share_table",
    "view_text",
]

MIN_CONFIDENT_SAMPLES = 20
"""States with fewer responses are drawn hollow (low confidence), as the estimators flag them."""
_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def _ok(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [r for r in rows if r.get("status", "ok") == "ok" and r.get("collapse_error") is not None]


def other_mode(results: Mapping[str, Any]) -> str | None:
    """The sampling mode of ``compare_vs["states"]`` (``None`` without ``--compare-vs``)."""
    if not results.get("compare_vs"):
        return None
    return "verbalized" if results.get("mode", "direct") == "direct" else "direct"


def states_by_mode(results: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """``{mode: per-state rows}``: the primary mode first, then the other mode of ``--compare-vs``."""
    out = {str(results.get("mode", "direct")): list(results["states"])}
    other = other_mode(results)
    if other is not None:
        out[other] = list(results["compare_vs"]["states"])
    return out


def state_estimate(r: Mapping[str, Any]) -> float:
    """A state's ε̂ as the audit prints it: the bias-aware estimate (``collapse_error_estimate``; the
    plug-in ``collapse_error`` only for records written before it existed)."""
    est = r.get("collapse_error_estimate")
    return float(r["collapse_error"] if est is None else est)


def _low_confidence(r: Mapping[str, Any]) -> bool:
    if "low_confidence" in r:
        return bool(r["low_confidence"])
    return int(r.get("n") or 0) < MIN_CONFIDENT_SAMPLES


def _classes_text(r: Mapping[str, Any]) -> str:
    pairs = zip(r.get("class_names") or [], r.get("class_counts") or [], strict=False)
    return html.escape(" / ".join(f"{n}: {c}" for n, c in pairs)[:300])


def short_state_id(state_id: str) -> str:
    """A state id short enough for an axis label: an on-policy id ``on_policy:POLICY|SIM|TASK|ROLLOUT:MSG``
    keeps its task, rollout and message index (policy and simulator are the same for the whole audit)."""
    if "|" not in state_id:
        return state_id
    source = state_id.split(":", 1)[0]
    return f"{source}:{'|'.join(state_id.split('|')[-2:])}"


def _state_trace(go: Any, rows: Sequence[Mapping[str, Any]], name: str, colour: str, x: Sequence[Any]) -> Any:
    """ε̂ per state (the bias-aware estimate) with its 95 % CI as error bars; low-confidence states (N < 20) hollow."""
    ys = [state_estimate(r) for r in rows]
    ci = [r.get("collapse_error_ci95") or [y] * 2 for r, y in zip(rows, ys, strict=True)]
    return go.Scatter(
        x=list(x), y=ys, mode="markers", name=name,
        marker={"color": colour, "size": 8, "line": {"color": colour, "width": 1.5},
                "symbol": ["circle-open" if _low_confidence(r) else "circle" for r in rows]},
        error_y={"type": "data", "symmetric": False, "thickness": 1,
                 "array": [max(c[1] - y, 0.0) for y, c in zip(ys, ci, strict=True)],
                 "arrayminus": [max(y - c[0], 0.0) for y, c in zip(ys, ci, strict=True)]},
        customdata=[[r["state_id"], r.get("n"), r.get("entropy"), _classes_text(r),
                     " (low confidence: N < 20)" if _low_confidence(r) else "", r["collapse_error"]] for r in rows],
        hovertemplate="%{customdata[0]}<br>ε̂ %{y:.3f} (plug-in 1 − max/N %{customdata[5]:.3f})<br>N %{customdata[1]}%{customdata[4]}"
                      "<br>entropy %{customdata[2]:.3f} nats<br>%{customdata[3]}<extra>" + html.escape(name) + "</extra>",
    )  # fmt: skip


def _category_axis(fig: Any, ids: Sequence[str]) -> None:
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=list(ids), tickvals=list(ids),
                     ticktext=[short_state_id(i) for i in ids], tickangle=-35, showticklabels=len(ids) <= 40)  # fmt: skip


def _epsilon_layout(fig: Any, title: str, xaxis_title: str, star: float | None, height: int = 450) -> Any:
    if star is not None:
        fig.add_hline(y=star, line_dash="dash", line_color="#888", annotation_text=f"ε* = {star:g}")
    fig.update_layout(title=title, yaxis_title="ε̂ = 1 − max_count/N (0 = collapsed)", yaxis_range=[-0.02, 1.02],
                      xaxis_title=xaxis_title, height=height,
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0}, margin={"t": 90})  # fmt: skip
    return fig


def collapse_error_per_state_figure(results: Mapping[str, Any], epsilon_star: float | None = None) -> Any:
    """ε̂ per state with its 95 % CI (error bars), one trace per sampling mode and state source, ε* as a line.

    States are on a category axis in the order of ``results["states"]``; with ``compare_vs`` the
    other mode's estimate of the same state is drawn at the same x. States with N < 20 responses
    are drawn hollow (low confidence).
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    order = [r["state_id"] for r in results["states"]]
    k = 0
    for mode, rows in states_by_mode(results).items():
        ok = _ok(rows)
        order += [r["state_id"] for r in ok if r["state_id"] not in order]
        for src in sorted({str(r.get("source")) for r in ok}):
            rs = [r for r in ok if str(r.get("source")) == src]
            trace = _state_trace(go, rs, f"{mode}: {src}", _PALETTE[k % len(_PALETTE)], [r["state_id"] for r in rs])
            fig.add_trace(trace.update(offsetgroup=mode))  # the modes of one state side by side
            k += 1
    _category_axis(fig, order)
    fig.update_layout(scattermode="group")
    star = epsilon_star if epsilon_star is not None else results.get("epsilon_star")
    return _epsilon_layout(fig, "Collapse error per state (95% CI; hollow: N < 20)", "state", star)


def compare_audits_figure(audits: Mapping[str, Mapping[str, Any]]) -> Any:
    """Several audits' ε̂ per state on one axis (two simulators, or one before and after a fix).

    States the audits share (same state ids, e.g. P4G probe states of the same seed) are matched on a
    category axis, sorted by the first audit's ε̂; audits without shared states are drawn as their
    sorted ε̂ profiles against the state quantile. Each audit's primary sampling mode is drawn.
    """
    import plotly.graph_objects as go

    tables = {label: {r["state_id"]: r for r in _ok(res["states"])} for label, res in audits.items()}
    shared = set.intersection(*(set(t) for t in tables.values())) if tables else set()
    fig = go.Figure()
    first = next(iter(tables.values()), {})
    for k, (label, t) in enumerate(tables.items()):
        colour = _PALETTE[k % len(_PALETTE)]
        if shared:
            ids = sorted(shared, key=lambda i: (state_estimate(first[i]), i))
            fig.add_trace(_state_trace(go, [t[i] for i in ids], label, colour, ids))
        else:
            rows = sorted(t.values(), key=state_estimate)
            fig.add_trace(_state_trace(go, rows, label, colour, [(i + 0.5) / len(rows) for i in range(len(rows))]))
    if shared:
        _category_axis(fig, sorted(shared, key=lambda i: (state_estimate(first[i]), i)))
    xtitle = "shared state (sorted by the first audit's ε̂)" if shared else "state quantile (each audit sorted by ε̂)"
    return _epsilon_layout(fig, "Collapse error per state, compared (95% CI; hollow: N < 20)", xtitle, None)


def class_histograms_figure(records: Sequence[Mapping[str, Any]], max_states: int = 12, max_classes: int = 8) -> Any:
    """Class histograms of the first ``max_states`` measured states of ``samples.jsonl``; hovering a
    bar shows example responses of that class."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    ok = [r for r in records if r.get("status") == "ok"][:max_states]
    if not ok:
        return go.Figure().update_layout(title="No measured states")
    cols = 2 if len(ok) > 1 else 1
    rows = (len(ok) + cols - 1) // cols
    titles = [
        f"{short_state_id(r['state_id'])[:48]} [{r.get('mode', 'direct')}] (ε̂ {state_estimate(r):.2f})" for r in ok
    ]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles)
    for i, r in enumerate(ok):
        names = [str(n)[:30] for n in r.get("class_names", [])][:max_classes]
        counts = r["class_counts"][:max_classes]
        examples = r.get("class_examples", [[]] * len(counts))[:max_classes]
        hover = ["<br>".join(html.escape(e[:120]) for e in ex) or "(no example)" for ex in examples]
        fig.add_trace(go.Bar(x=[f"{j}: {n}" for j, n in enumerate(names)], y=counts, customdata=hover, showlegend=False,
                             hovertemplate="%{x}<br>count %{y}<br>%{customdata}<extra></extra>"),
                      row=i // cols + 1, col=i % cols + 1)  # fmt: skip
    fig.update_layout(title="Response classes per state (hover: example responses)", height=max(300, 260 * rows))
    return fig


def state_classes(record: Mapping[str, Any], examples: int = 3) -> list[dict[str, Any]]:
    """The equivalence classes of one ``samples.jsonl`` record, largest first: name, count, share, examples.

    Counts come from the record's ``labels`` (each response's class index) and its ``responses``, so
    they are recounted from the draws rather than copied; the class names are the partitioner's.
    An infrastructure failure has no classes (empty list).
    """
    responses, labels = record.get("responses") or [], record.get("labels") or []
    if len(responses) != len(labels):
        raise ValueError(
            f"samples.jsonl record {record.get('state_id')!r}: {len(responses)} responses but {len(labels)} labels"
        )
    names = list(record.get("class_names") or [])
    groups: dict[int, list[str]] = {}
    for text, lab in zip(responses, labels, strict=True):
        groups.setdefault(int(lab), []).append(str(text))
    n = len(responses)
    return [
        {"class": names[lab] if lab < len(names) else str(lab), "count": len(texts), "share": len(texts) / n,
         "examples": " | ".join(list(dict.fromkeys(texts))[:examples])}
        for lab, texts in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    ]  # fmt: skip


def collapse_error_by_turn_figure(results: Mapping[str, Any]) -> Any:
    """Mean ε̂ by simulator turn along the on-policy rollouts, with ε̄_H in the title."""
    import plotly.graph_objects as go

    traj = results.get("trajectory")
    if not traj:
        return go.Figure().update_layout(title="No on-policy rollouts (run with --policy)")
    rows = traj["collapse_error_by_turn"]
    fig = go.Figure(go.Scatter(x=[r["turn"] for r in rows], y=[r["mean"] for r in rows], mode="lines+markers",
                               customdata=[r["n_states"] for r in rows],
                               hovertemplate="turn %{x}<br>mean ε̂ %{y:.3f}<br>states %{customdata}<extra></extra>"))  # fmt: skip
    fig.update_xaxes(dtick=1)
    fig.update_layout(
        title=f"ε̂ by turn; accumulated ε̄_H = {traj['accumulated_collapse_error']:.3f}, "
        f"gradient-bias bound {traj['gradient_bias_bound']:.3f}",
        xaxis_title="simulator turn", yaxis_title="mean ε̂", yaxis_range=[0, 1], height=380,
    )  # fmt: skip
    return fig


def compare_vs_figure(results: Mapping[str, Any]) -> Any:
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
            hi.append(0.0 if ci[1] is None else ci[1] - (e["estimate"] or 0.0))  # None: lower bound only
        fig.add_trace(go.Bar(x=["direct", "VS"], y=ys, showlegend=False,
                             error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo}),
                      row=1, col=col)  # fmt: skip
    d = c["difference_vs_minus_direct"]
    sub = "" if d["estimate"] is None else f"VS − direct ε̂ = {d['estimate']:.3f} {_ci(d['ci95'])}"
    v = c.get("vs_parse_failures")
    if v:
        sub += f"; VS parse failures {v['count']} of {v['of']}"
    fig.update_layout(title=f"Direct vs Verbalized Sampling. {sub}", height=380)
    return fig


def donation_comparison_figure(results: Mapping[str, Any]) -> Any:
    """Binned donation distribution of the simulator vs the human P4G donors."""
    import plotly.graph_objects as go

    d = ((results.get("human_reference") or {}).get("donations")) or {}
    if "bins" not in d:
        return go.Figure().update_layout(title=d.get("note") or "No human reference (run with --human PATH)")
    fig = go.Figure([go.Bar(name=f"simulator (n={d['n_simulated']})", x=d["bins"], y=d["simulated_binned"]),
                     go.Bar(name=f"human (n={d['n_human']})", x=d["bins"], y=d["human_binned"])])  # fmt: skip
    fig.update_layout(barmode="group", yaxis_title="share of donations", height=380,
                      title=f"Donations: W1 {d['wasserstein']:.3f}, KS {d['ks_statistic']:.3f}, L1 {d['l1_binned']:.3f}")  # fmt: skip
    return fig


# ----------------------------------------------------------------------------------------------- text


def fmt_value(x: float | None, digits: int = 3) -> str:
    """A number as the audit prints it (``n/a`` for ``None``)."""
    return "n/a" if x is None else f"{x:.{digits}f}"


def fmt_interval(c: Sequence[float | None] | None, digits: int = 3) -> str:
    """``[lo, hi]``; an interval without a finite upper end prints as ``[lo, no upper bound]``."""
    if not c:
        return ""
    lo, hi = c[0], c[1]
    if hi is None or not math.isfinite(hi):
        return f"[{fmt_value(lo, digits)}, no upper bound]"
    return f"[{fmt_value(lo, digits)}, {fmt_value(hi, digits)}]"


def effective_modes_text(s: dict[str, Any], n: int) -> str:
    """The effective modes exp(H) as measured, or as a lower bound where N replies cannot show them."""
    est = s.get("effective_modes")
    if est is None:
        return "n/a"
    if s.get("effective_modes_lower_bound_only"):
        lb = s.get("effective_modes_lower_bound")
        bound = f"at least {lb:.1f}" if lb is not None else "no finite estimate"
        return f"{bound} (lower bound only: {n} replies per state cannot resolve more classes)"
    return f"{est:.2f}  (estimate incl. unseen classes)"


def view_text(v: dict[str, Any] | None, epsilon_star: float) -> str:
    """One view's number, interval and label for a table cell: ``0.811 [0.672, 0.934]  NOT COLLAPSED``."""
    if not v:
        return "n/a"
    if v["label"] == "NOT MEASURED":
        return f"not measured: {v.get('reason')}"
    rel = "<" if v["label"] == "COLLAPSED" else ">" if v["label"] == "NOT COLLAPSED" else "∋"
    return f"{fmt_value(v['estimate'])} {fmt_interval(v['ci95'])}  {v['label']} (CI {rel} ε* = {epsilon_star:g})"


# ----------------------------------------------------------------------------------------------- tables


def summary_table(results: Mapping[str, Any], summary: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The audit's headline quantities (of ``summary``, default the primary mode's): both verdict views
    first, then what each view is made of. Every ε is the bias-aware estimate printed by the verdict."""
    s = summary if summary is not None else results["summary"]
    star = float(results.get("epsilon_star") or 0.2)
    verdicts = (results.get("verdicts") or {}) if summary is None else {}
    n = int(results["samples_per_state"])
    rv = s.get("reward_view") or {}
    rows = [
        ["simulator", f"{results['simulator']} ({results.get('mode')})"],
        ["benchmark / partitioner", f"{results['benchmark']} / {results['partitioner']}"],
        ["samples per state", str(n) + (" (LOW CONFIDENCE: N < 20)" if s["low_confidence"] else "")],
        ["states measured / infra failures", f"{s['n_states']} / {s['infra_failures']}"],
        ["states audited", str(results.get("states_audited") or "probe states")
         + (f" — {results['states_note'].removeprefix('note: ')}" if results.get("states_note") else "")],
    ]  # fmt: skip
    for key, name in (("meaning", "meaning view"), ("reward", "reward view")):
        if key in verdicts:
            v = verdicts[key]
            rows.append([f"verdict, {name}", view_text(v, star) + (f" over {v['over']}" if v.get("over") else "")])
    rows += [
        [f"mean ε̂, classes by {results['partitioner']} [95% CI]", _est(s["collapse_error"])],
        [f"mean ε̂, classes by {results['partitioner']}, plug-in 1 − max/N", _f(s["collapse_error"].get("plugin"))],
        ["reward view: classes and states", str(rv.get("classes") or "none (no reward_class hook)")],
        ["mean ε̂ of the reward view [95% CI]", f"{_est(rv)} {rv.get('states') or rv.get('reason') or ''}".strip()],
        ["mean entropy, nats (CWJ, estimate incl. unseen classes) [95% CI]", _est(s["entropy"])],
        ["effective modes exp(H)", effective_modes_text(dict(s), n)],
        ["accumulated ε̄_H", _f(s.get("accumulated_collapse_error"))],
    ]  # fmt: skip
    for src, b in (s.get("by_kind") or s.get("by_source") or {}).items():
        rows.append([f"ε̂ at {src} states [95% CI]", f"{_f(b['collapse_error'])} {_ci(b['ci95'])} (n={b['n_states']})"])
    ex = s.get("exact")
    if ex:
        rows.append(["exact: P(the whole reply is a closed answer), format compliance",
                     f"{ex['closed_set_mass']:.4f} over {ex['n_states']} states"])  # fmt: skip
        rows.append(["exact: ε of the answer given a closed answer", _f(ex.get("collapse_error_in_set"))])
        rows.append(["exact: ε with 'outside the set' as one class", _f(ex.get("collapse_error_with_outside"))])
    if s.get("decision_collapse_error"):
        d = s["decision_collapse_error"]
        rows.append(["decision-label ε (the benchmark's labels, not the reward's classes) [95% CI]",
                     f"{_f(d['estimate'])} {_ci(d['ci95'])} over {d['n_states']} states that ask for a decision"])  # fmt: skip
    if s.get("vs_parse_failures"):
        v = s["vs_parse_failures"]
        rows.append(["VS parse failures", f"{v['count']} of {v['of']} {v['reasons'] or ''}".strip()])
    return {"columns": ["quantity", "value"], "rows": rows}


def states_table(results: Mapping[str, Any]) -> dict[str, Any]:
    """One row per state and sampling mode: ε̂ (bias-aware, as in the headline) with its CI, the plug-in
    beside it, entropy, the reward view, the exact closed-set scores, status."""
    rows = []
    for mode, rs in states_by_mode(results).items():
        for r in rs:
            ok = r.get("collapse_error") is not None
            ex, rv = r.get("exact") or {}, r.get("reward_view") or {}
            rows.append([
                r["state_id"], mode, r.get("source"), r.get("turn"), r.get("n"),
                _f(state_estimate(r)) if ok else "n/a", _ci(r.get("collapse_error_ci95")), _f(r.get("collapse_error")),
                _f(r.get("entropy")), _f(rv.get("collapse_error_estimate")),
                " / ".join(f"{k}: {c}" for k, c in zip(rv.get("class_names") or [], rv.get("class_counts") or [], strict=False)),
                _f(ex.get("closed_set_mass")), _f(ex.get("collapse_error_conditional")),
                _f((r.get("decision") or {}).get("collapse_error")), r.get("status"), r.get("error") or "",
            ])  # fmt: skip
    return {"columns": ["state", "mode", "source", "turn", "N", "ε̂", "95% CI", "ε̂ plug-in (1 − max/N)", "entropy",
                        "reward-view ε̂", "reward classes", "exact: P(closed answer)", "exact: ε given a closed answer",
                        "decision-label ε (plug-in)", "status", "error"], "rows": rows}  # fmt: skip


def variance_share_table(results: Mapping[str, Any]) -> dict[str, Any]:
    """The simulator's share of reward variance (Lemma 3.3), one row."""
    v = results.get("variance_share") or {}
    return {"columns": ["share", "95% CI", "within", "between", "note"],
            "rows": [[_f(v.get("share")), _ci(v.get("ci")), _f(v.get("within")), _f(v.get("between")),
                      v.get("note") or ""]]}  # fmt: skip


def human_diversity_table(results: Mapping[str, Any]) -> dict[str, Any] | None:
    """Diversity of the simulator's vs the human persuadees' replies at the same prefixes (``None``
    when the run has no human-prefix states)."""
    div = (results.get("human_reference") or {}).get("diversity")
    if not div:
        return None
    rows = [[k, _f(v.get("simulator")), _f(v.get("human"))] for k, v in div.items() if isinstance(v, Mapping)]
    rows.append(["prefixes", str(div.get("n_prefixes")), ""])
    return {"columns": ["metric", "simulator", "human"], "rows": rows}


def realism_table(results: Mapping[str, Any]) -> dict[str, Any] | None:
    """The simulator next to the people: every realism measure with its 95 % bootstrap interval."""
    ref = results.get("human_reference") or {}
    if not ref:
        return None
    rows: list[list[str]] = []
    d = ref.get("donations") or {}
    ci = d.get("ci95") or {}
    if "wasserstein" in d:
        rows.append(["donations: Wasserstein-1 ($)", _f(d["wasserstein"]), _ci(ci.get("wasserstein"))])
        rows.append(["donations: KS statistic (p-value)", f"{_f(d['ks_statistic'])} (p={d['ks_pvalue']:.3g})",
                     _ci(ci.get("ks_statistic"))])  # fmt: skip
        rows.append(["donations: binned L1 (right-closed bins)", _f(d["l1_binned"]), _ci(ci.get("l1_binned"))])
        rows.append(["share giving $0: simulator / human",
                     f"{_f(d['simulated_share_zero'])} / {_f(d['human_share_zero'])}", _ci(ci.get("share_zero_gap"))])  # fmt: skip
    if d.get("simulated_stated_fraction") is not None:
        rows.append(["simulated replies stating an amount", _f(d["simulated_stated_fraction"]), ""])
    g = ref.get("grounding") or {}
    if g:
        rows.append(["simulator's probability of the human's class", _f(g["human_class_share"]["estimate"]),
                     _ci(g["human_class_share"]["ci95"])])  # fmt: skip
        rows.append(["states where the human said what the simulator never did", _f(g["outside_share"]["estimate"]),
                     _ci(g["outside_share"]["ci95"])])  # fmt: skip
        rows.append(["states where the human's class is the simulator's mode", _f(g["human_is_mode_share"]["estimate"]),
                     _ci(g["human_is_mode_share"]["ci95"])])  # fmt: skip
    m = ref.get("matched_states") or {}
    if m:
        ln = m["length_words"]
        rows.append(["reply length, words: simulator / human", f"{ln['simulator']:.1f} / {ln['human']:.1f}",
                     "difference " + _ci(ln["difference_ci95"])])  # fmt: skip
        for k in ("distinct_1", "distinct_2", "vendi"):
            if k in m:
                rows.append([f"{k.replace('_', '-')} at the same states: simulator / human",
                             f"{_f(m[k]['simulator'])} / {_f(m[k]['human'])}", "difference " + _ci(m[k]["difference_ci95"])])  # fmt: skip
    if not rows:
        return None
    return {"columns": ["measure", "value", "95% CI"], "rows": rows}


def people_epsilon_table(results: Mapping[str, Any]) -> dict[str, Any] | None:
    """People's own ε at the matched states beside the simulator's, per persuader act and on average
    (``human_reference.people_epsilon``; ``None`` without annotated dialogues)."""
    pe = (results.get("human_reference") or {}).get("people_epsilon")
    if not pe:
        return None

    def cell(x: Mapping[str, Any], key: str = "collapse_error") -> str:
        return f"{_f(x.get(key))} {_ci(x.get('ci95'))}".strip()

    rows = [["mean over persuader acts", cell(pe["people"], "estimate"), cell(pe["people_acts"], "estimate"),
             cell(pe["simulator_pooled"], "estimate"), cell(pe["simulator_within_state"], "estimate"),
             f"{pe['n_people_replies']} / {pe['n_states']}"]]  # fmt: skip
    for g in pe["groups"]:
        rows.append([g["persuader_act"], cell(g["people"]), f"{cell(g['people_acts'])} (mode {g['people_acts']['modal_act']})",
                     cell(g["simulator_pooled"]), cell(g["simulator_within_state"], "estimate"),
                     f"{g['people']['n']} / {g['n_states']}"])  # fmt: skip
    return {
        "columns": ["state (the persuader's act)", "people's ε, stance", "people's ε, act", "simulator's ε, stance (pooled)",
                    "simulator's ε, stance (within a state)", "human replies / audited states"],
        "rows": rows,
    }  # fmt: skip


def grounding_table(results: Mapping[str, Any]) -> dict[str, Any] | None:
    """One row per human-grounded state: the human's actual reply and where it falls among the simulator's classes."""
    rows = (results.get("human_reference") or {}).get("grounding_states") or []
    if not rows:
        return None
    return {
        "columns": ["state", "the human persuadee replied", "simulator's P(human's class)", "rank", "classes"],
        "rows": [[r["state_id"], r["human_reply"][:160], _f(r["human_class_share"]),
                  "outside" if r["outside"] else str(r["human_class_rank"]), str(r["n_classes"])] for r in rows],
    }  # fmt: skip


def towards_people_table(results: Mapping[str, Any]) -> dict[str, Any] | None:
    """Direct vs Verbalized Sampling on the realism measures: which one is closer to the people."""
    t = (results.get("compare_vs") or {}).get("towards_people") or {}
    if not t:
        return None
    return {
        "columns": ["measure", "direct [95% CI]", "VS [95% CI]", "closer to people"],
        "rows": [[k, f"{_f(v['direct'])} {_ci(v['direct_ci95'])}", f"{_f(v['verbalized'])} {_ci(v['verbalized_ci95'])}",
                  v["closer"]] for k, v in t.items()],
    }  # fmt: skip


# ----------------------------------------------------------------------------------------------- report


def audit_sections(results: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """The sections of an audit's ``report.html`` (headings and figures/tables, in order)."""
    sections: list[tuple[str, Any]] = [("Summary", summary_table(results))]
    sections.append(("Collapse error per state", collapse_error_per_state_figure(results)))
    sections.append(("States", states_table(results)))
    sections.append(("Response classes", class_histograms_figure(records)))
    if results.get("trajectory"):
        sections.append(("Collapse error by turn", collapse_error_by_turn_figure(results)))
    if results.get("compare_vs"):
        sections.append(("Direct vs Verbalized Sampling", compare_vs_figure(results)))
    if results.get("variance_share"):
        sections.append(("Simulator share of reward variance (Lemma 3.3)", variance_share_table(results)))
    if results.get("human_reference"):
        sections.append(("Realism: donations, simulator vs people", donation_comparison_figure(results)))
        for title, table in (
            ("Realism: the simulator next to the people", realism_table(results)),
            ("Realism: the human's actual reply at each human-grounded state", grounding_table(results)),
            (
                "People as the reference: their own ε at the matched states beside the simulator's",
                people_epsilon_table(results),
            ),
            ("Realism: does Verbalized Sampling move the simulator towards the people?", towards_people_table(results)),
        ):
            if table:
                sections.append((title, table))
    return sections


def _f(x: Any) -> str:
    return "n/a" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def _ci(c: Sequence[float | None] | None) -> str:
    return fmt_interval(c)


def _est(e: Mapping[str, Any]) -> str:
    return f"{_f(e.get('estimate'))} {_ci(e.get('ci95'))}"
