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

from collapse_probe.report._layout import Table, empty_figure, rows_height, short_labels, titled

__all__ = [
    "MIN_CONFIDENT_SAMPLES",
    "audit_sections",
    "class_histograms_figure",
    "collapse_error_by_turn_figure",
    "collapse_map_figure",
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
    "people_vs_simulator_figure",
    "short_state_id",
    "state_classes",
    "states_by_mode",
    "state_estimate",
    "states_table",
    "summary_table",
    "variance_figure",
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


MAX_STATE_TICKS = 16
"""States named on the x axis; with more, vertical labels would overlap in a half-width column."""


def _category_axis(fig: Any, ids: Sequence[str]) -> None:
    ticks = short_labels([short_state_id(i) for i in ids], 30)
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=list(ids), tickvals=list(ids),
                     ticktext=ticks, autotickangles=[0, 90], automargin=True,
                     showticklabels=len(ids) <= MAX_STATE_TICKS, tickfont={"size": 10})  # fmt: skip


TICK_CHAR_PX = 6
"""Pixels one character of an upright state label takes (10 px tick font)."""


def _epsilon_layout(
    fig: Any, title: str, xaxis_title: str, star: float | None, height: int = 450, note: str | None = None
) -> Any:
    if star is not None:  # ε* in the legend, not as a label on the plot where it would cover states
        fig.add_hline(y=star, line_dash="dash", line_color="#888")
        fig.add_trace(_star_legend(star))
    n = len(fig.layout.xaxis.categoryarray or [])
    many = f" ({n}, hover for each)"
    ticks = fig.layout.xaxis.ticktext if fig.layout.xaxis.showticklabels is not False else None
    # state labels may stand upright under the plot: the figure grows by their length, so the plot area
    # keeps the height of the y title (a short plot pushed it up into the figure's title)
    height += TICK_CHAR_PX * max((len(str(t)) for t in ticks or ()), default=0)
    fig.update_layout(yaxis_title="collapse error ε̂ (bias-aware; 0 = collapsed)", yaxis_range=[-0.02, 1.02],
                      xaxis_title=xaxis_title + ("" if n <= MAX_STATE_TICKS else many), height=height)  # fmt: skip
    return titled(fig, title, note)  # the legend stays at the right: above the plot it would wrap into the title


def _star_legend(star: float) -> Any:
    import plotly.graph_objects as go

    return go.Scatter(x=[None], y=[None], mode="lines", name=f"ε* = {star:g}", hoverinfo="skip",
                      line={"dash": "dash", "color": "#888"})  # fmt: skip


def collapse_error_per_state_figure(results: Mapping[str, Any], epsilon_star: float | None = None) -> Any:
    """ε̂ per state with its 95 % CI (error bars), one trace per sampling mode and state source, ε* as a line.

    States are on a category axis in the order of ``results["states"]``; with ``compare_vs`` the
    other mode's estimate of the same state is drawn at the same x. States with N < 20 responses
    are drawn hollow (low confidence).
    """
    import plotly.graph_objects as go

    title = "Collapse error per state (95% CI; hollow: N < 20)"
    if not any(_ok(rows) for rows in states_by_mode(results).values()):
        return empty_figure(title, _none_measured(results))
    fig = go.Figure()
    order = [r["state_id"] for r in results["states"]]
    k = 0
    for mode, rows in states_by_mode(results).items():
        ok = _ok(rows)
        order += [r["state_id"] for r in ok if r["state_id"] not in order]
        for src in sorted({str(r.get("source")) for r in ok}):
            rs = [r for r in ok if str(r.get("source")) == src]
            name = mode if src == mode else f"{mode}: {src}"  # a published file's states: "published", once
            trace = _state_trace(go, rs, name, _PALETTE[k % len(_PALETTE)], [r["state_id"] for r in rs])
            fig.add_trace(trace.update(offsetgroup=mode))  # the modes of one state side by side
            k += 1
    _category_axis(fig, order)
    fig.update_layout(scattermode="group")
    star = epsilon_star if epsilon_star is not None else results.get("epsilon_star")
    return _epsilon_layout(fig, title, "state", star)


def reward_view_per_state_figure(results: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> Any:
    """The reward view per state: ε̂ of the classes the reward pays (the bias-aware estimate, as the
    reward view's headline) with its 95 % CI, at the states where the reward reads the reply, ε* as a
    line and the reward view's mean over states (``summary.reward_view``) in the title."""
    import plotly.graph_objects as go

    title = "Where the reward looks: collapse error per state (95% CI; hollow: N < 20)"
    rv = (results.get("summary") or {}).get("reward_view") or {}
    rows = []
    for r in records:
        v = r.get("reward_view") or {}
        if r.get("status", "ok") == "ok" and v.get("collapse_error") is not None:
            rows.append({"state_id": r["state_id"], "n": sum(v.get("class_counts") or []),
                         "class_names": v.get("class_names"), "class_counts": v.get("class_counts"),
                         "collapse_error": v["collapse_error"], "collapse_error_estimate": v.get("collapse_error_estimate"),
                         "collapse_error_ci95": v.get("collapse_error_ci95"), "entropy": None,
                         "source": r.get("source")})  # fmt: skip
    if not rows:
        return empty_figure(title, rv.get("reason") or "no state where the reward reads the reply")
    fig = go.Figure()
    fig.add_trace(_state_trace(go, rows, "reward view", _PALETTE[1], [r["state_id"] for r in rows]))
    _category_axis(fig, [r["state_id"] for r in rows])
    sub = None
    if rv.get("estimate") is not None and rv.get("ci95"):
        sub = f"mean over {n_states(rv.get('n_states'))}: ε̂ {fmt_value(rv['estimate'])} {fmt_interval(rv['ci95'])}"
    return _epsilon_layout(fig, title, "state where the reward reads the reply", results.get("epsilon_star"), note=sub)


VERDICT_COLOURS = {
    "COLLAPSED": "#b3261e",
    "NOT COLLAPSED": "#1e7b34",
    "INCONCLUSIVE": "#9a6700",
    "NO RESULT": "#555",
    "NO REWARD SIGNAL": "#9a6700",
}


def verdict_box(results: Mapping[str, Any]) -> str:
    """The verdict at the top of the report: the answer in its colour (red COLLAPSED, green NOT
    COLLAPSED, amber INCONCLUSIVE, and amber where the reward view is NO REWARD SIGNAL and nothing is
    COLLAPSED: a simulator the policy gets no reward signal from is not a green light), then the why,
    next and ``--compare-vs`` lines, as the terminal prints them."""
    parts = results.get("verdict_text") or {}
    lines = [p for p in (parts.get(k) for k in ("answer", "why", "next", "compare_vs")) if p]
    if not lines:
        lines = str(results.get("verdict") or "").splitlines() or ["no verdict"]
    answer = lines[0]
    colour = next((c for label, c in VERDICT_COLOURS.items() if answer.startswith(label)), "#555")
    reward = ((results.get("verdicts") or {}).get("reward") or {}).get("label")
    if reward == "NO REWARD SIGNAL" and not answer.startswith("COLLAPSED"):
        colour = VERDICT_COLOURS["NO REWARD SIGNAL"]
    from collapse_probe.pipelines.audit._sequential import looks_line

    looks = looks_line((results.get("summary") or {}).get("sequential"))
    body = "".join(f'<div style="margin-top:0.3rem">{html.escape(line)}</div>'
                   for line in [*lines[1:], *([looks] if looks else [])])  # fmt: skip
    return (f'<div class="verdict" style="border-left:6px solid {colour};padding:0.5rem 0.8rem;background:#fafafa">'
            f'<div style="font-size:1.25rem;font-weight:600;color:{colour}">{html.escape(answer)}</div>{body}</div>')  # fmt: skip


def _none_measured(results: Mapping[str, Any]) -> str:
    """Why an audit has no state to draw, in one line: the infrastructure failures and the first error."""
    failed = [r for rows in states_by_mode(results).values() for r in rows if r.get("status", "ok") != "ok"]
    if not failed:
        return "no state was measured"
    first = next((str(r["error"]) for r in failed if r.get("error")), "no message recorded")
    return f"no state was measured: {len(failed)} infrastructure failures, the first: {first}"


DODGE = 0.6
"""Share of the space between two neighbouring states that the compared audits' markers spread over."""


def compare_audits_figure(audits: Mapping[str, Mapping[str, Any]]) -> Any:
    """Several audits' ε̂ per state on one axis (two simulators, or one before and after a fix).

    States the audits share (same state ids, e.g. P4G probe states of the same seed) are matched on a
    category axis, sorted by the first audit's ε̂; audits without shared states are drawn as their
    sorted ε̂ profiles against the state quantile. Each audit's primary sampling mode is drawn. The
    audits of one state (or quantile) are drawn side by side, never at the same x, so that each
    audit's error bar can be read.
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
            fig.add_trace(_state_trace(go, [t[i] for i in ids], label, colour, ids).update(offsetgroup=str(k)))
        else:
            rows = sorted(t.values(), key=state_estimate)
            shift = (k - (len(tables) - 1) / 2) * DODGE / (max(len(rows), 1) * len(tables))  # no row: none drawn
            xs = [(i + 0.5) / len(rows) + shift for i in range(len(rows))]
            fig.add_trace(_state_trace(go, rows, label, colour, xs))
    if shared:
        _category_axis(fig, sorted(shared, key=lambda i: (state_estimate(first[i]), i)))
        fig.update_layout(scattermode="group")  # each audit in its own slot of a state's category
    xtitle = "shared state (sorted by the first audit's ε̂)" if shared else "state quantile (each audit sorted by ε̂)"
    return _epsilon_layout(fig, "Collapse error per state, compared (95% CI; hollow: N < 20)", xtitle, None)


def _by_state(
    records: Sequence[Mapping[str, Any]],
) -> tuple[list[str], list[str], dict[tuple[str, str], Mapping[str, Any]]]:
    """``(state ids, modes, {(state, mode): record})`` of measured records, in their first-seen order."""
    states: list[str] = []
    modes: list[str] = []
    table: dict[tuple[str, str], Mapping[str, Any]] = {}
    for r in records:
        if r.get("status", "ok") != "ok" or not r.get("class_counts"):
            continue
        sid, mode = str(r["state_id"]), str(r.get("mode") or "direct")
        if sid not in states:
            states.append(sid)
        if mode not in modes:
            modes.append(mode)
        table[(sid, mode)] = r
    return states, modes, table


def _class_label(rank: int, name: Any) -> str:
    text = " ".join(str(name).split())
    return f"{rank + 1}. " + (text if len(text) <= CLASS_CHARS else text[: CLASS_CHARS - 1] + "…")


CLASS_CHARS = 22
"""Characters of a class name on an axis (the whole reply is in the hover)."""


def class_histograms_figure(records: Sequence[Mapping[str, Any]], max_states: int = 12, max_classes: int = 8) -> Any:
    """The classes of the first ``max_states`` measured states, one row per state and one column per
    sampling mode (direct beside Verbalized Sampling), largest class on top; hovering a bar shows the
    class's full name and example responses.

    Bars are horizontal so class names read without rotation; each name is cut to
    :data:`CLASS_CHARS` characters, and each row is as tall as its largest class list.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    states, modes, table = _by_state(records)
    states = states[:max_states]
    if not states:
        return empty_figure("Response classes per state", "no state was measured")
    ids = dict(zip(states, short_labels([short_state_id(s) for s in states], 40), strict=True))
    per_row = [
        max(min(len(table[(s, m)]["class_counts"]), max_classes) for m in modes if (s, m) in table) for s in states
    ]
    gap_px, bar_px = 64, 20
    plot_px = sum(n * bar_px + 12 for n in per_row) + gap_px * (len(states) - 1)
    titles = []
    for s in states:
        for m in modes:
            r = table.get((s, m))
            titles.append(f"{ids[s]} · {m} · ε̂ {state_estimate(r):.2f}" if r else f"{ids[s]} · {m} · not measured")
    fig = make_subplots(rows=len(states), cols=len(modes), subplot_titles=titles, horizontal_spacing=0.28 / len(modes),
                        vertical_spacing=gap_px / plot_px if len(states) > 1 else 0.0, row_heights=[n * bar_px + 12 for n in per_row])  # fmt: skip
    for i, s in enumerate(states):
        for j, m in enumerate(modes):
            r = table.get((s, m))
            if r is None:
                continue
            names = list(r.get("class_names") or [])
            counts = list(r["class_counts"])[:max_classes]
            examples = list(r.get("class_examples") or [[] for _ in counts])[:max_classes]
            labels = [_class_label(k, names[k] if k < len(names) else k) for k in range(len(counts))]
            hover = [html.escape(str(names[k] if k < len(names) else k))[:300] + "<br>"
                     + ("<br>".join(html.escape(str(e)[:120]) for e in (examples[k] if k < len(examples) else []))
                        or "(no example)") for k in range(len(counts))]  # fmt: skip
            fig.add_trace(go.Bar(y=labels, x=counts, orientation="h", customdata=hover, showlegend=False,
                                 marker_color=_PALETTE[j % len(_PALETTE)],
                                 hovertemplate="count %{x}<br>%{customdata}<extra>" + html.escape(m) + "</extra>"),
                          row=i + 1, col=j + 1)  # fmt: skip
            fig.update_yaxes(autorange="reversed", type="category", row=i + 1, col=j + 1, tickfont={"size": 11})
            fig.update_xaxes(row=i + 1, col=j + 1, tickfont={"size": 10}, nticks=4)
    for a in fig.layout.annotations:  # subplot titles: small, left-aligned over their plot
        a.update(font={"size": 12})
    fig.update_layout(height=plot_px + 140, margin={"l": 170, "r": 20, "b": 30})
    return titled(fig, "Response classes per state (hover: the whole class and example replies)", top=20)


def collapse_map_figure(results: Mapping[str, Any], max_classes: int = 8) -> Any:
    """The audit at a glance: one row per state, one column per class rank, each cell the share of
    the state's replies in its k-th largest class, one panel per sampling mode side by side.

    A collapsed state is a row with one dark first cell and nothing after it; a diverse state
    spreads along its row. Rows are sorted by the primary mode's ε̂ (most collapsed on top); hovering
    a cell names the class. Classes past rank ``max_classes - 1`` are summed in the last column,
    drawn in grey on its own scale (:data:`TAIL_COLOURSCALE`): a state of many small classes fills
    it, and in the blue of the ranked cells it would read as the darkest, most collapsed column.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    by_mode = {m: {str(r["state_id"]): r for r in _ok(rows) if r.get("class_counts")}
               for m, rows in states_by_mode(results).items()}  # fmt: skip
    modes = [m for m, rows in by_mode.items() if rows]
    if not modes:
        return empty_figure("Collapse map", _none_measured(results))
    first = by_mode[modes[0]]
    order = sorted(first, key=lambda i: (state_estimate(first[i]), i))
    order += [i for m in modes[1:] for i in by_mode[m] if i not in order]
    ylabels = short_labels([short_state_id(i) for i in order], 30)
    ylabels = [
        f"{lab}  ε̂ {state_estimate(first[i]):.2f}" if i in first else lab for lab, i in zip(ylabels, order, strict=True)
    ]
    cols = [f"#{k + 1}" for k in range(max_classes - 1)] + [f"#{max_classes}+"]
    fig = make_subplots(rows=1, cols=len(modes), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[f"{m} sampling" for m in modes])  # fmt: skip
    for j, m in enumerate(modes):
        z, hover = [], []
        for sid in order:
            r = by_mode[m].get(sid)
            if r is None:
                z.append([None] * max_classes)
                hover.append(["not measured in this mode"] * max_classes)
                continue
            counts, names = list(r["class_counts"]), list(r.get("class_names") or [])
            n = sum(counts) or 1
            shares = [c / n for c in counts[: max_classes - 1]] + [sum(counts[max_classes - 1 :]) / n]
            shares += [0.0] * (max_classes - len(shares))
            z.append(shares)
            row = []
            for k in range(max_classes):
                if k < max_classes - 1:
                    name = html.escape(" ".join(str(names[k]).split())[:120]) if k < len(names) else "(no class)"
                    row.append(
                        f"{html.escape(sid)}<br>class {k + 1}: {name}<br>{counts[k] if k < len(counts) else 0} of {n}"
                    )
                else:
                    row.append(f"{html.escape(sid)}<br>classes {max_classes} and on: {max(len(counts) - k, 0)} classes, "
                               f"{sum(counts[k:])} of {n}")  # fmt: skip
            hover.append(row)
        ranked = [row[:-1] for row in z]
        fig.add_trace(go.Heatmap(z=ranked, x=list(range(max_classes - 1)), y=ylabels, zmin=0, zmax=1, colorscale="Blues", xgap=1, ygap=1,
                                 customdata=[h[:-1] for h in hover], name=f"{m}: classes by rank",
                                 hovertemplate="%{customdata}<br>share %{z:.2f}<extra></extra>", showscale=j == 0,
                                 colorbar={"title": {"text": "share of replies", "side": "right"}, "thickness": 12}),
                      row=1, col=j + 1)  # fmt: skip
        fig.add_trace(go.Heatmap(z=[row[-1:] for row in z], x0=max_classes - 1, dx=1, y=ylabels, zmin=0, zmax=1,
                                 colorscale=TAIL_COLOURSCALE, showscale=False, xgap=1, ygap=1,
                                 customdata=[h[-1:] for h in hover], name=f"{m}: the smaller classes together",
                                 hovertemplate="%{customdata}<br>share %{z:.2f}<extra></extra>"),
                      row=1, col=j + 1)  # fmt: skip
        # numbers, named by rank: on a category axis the tail's one-column heatmap spans several columns
        fig.update_xaxes(title_text="class, by size", row=1, col=j + 1, tickmode="array", tickfont={"size": 10},
                         tickvals=list(range(max_classes)), ticktext=cols, range=[-0.5, max_classes - 0.5])  # fmt: skip
    fig.update_yaxes(autorange="reversed", type="category", automargin=True, tickfont={"size": 11})
    fig.update_layout(height=rows_height(len(order), per_row=20, fixed=200))
    note = (f"{len(order)} states, sorted by ε̂ of {modes[0]} sampling (most collapsed on top); "
            f"grey column {cols[-1]}: classes {max_classes} and on together (many small classes: a diverse state)")  # fmt: skip
    return titled(fig, COLLAPSE_MAP_TITLE, note)


COLLAPSE_MAP_TITLE = (
    "Collapse map: each cell the share of a state's replies in its k-th largest class "
    "(collapsed: a dark first cell, the rest of the row empty)"
)
TAIL_COLOURSCALE = [[0.0, "#ffffff"], [1.0, "#4d4d4d"]]
"""The collapse map's last column (every class past the ranked ones together): grey, apart from the
blue of the ranked cells."""


def state_classes(record: Mapping[str, Any], examples: int = 3) -> list[dict[str, str | int | float]]:
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
        return empty_figure("ε̂ by turn", "no on-policy rollouts (run with --policy)")
    rows = traj["collapse_error_by_turn"]
    fig = go.Figure(go.Scatter(x=[r["turn"] for r in rows], y=[r["mean"] for r in rows], mode="lines+markers",
                               customdata=[r["n_states"] for r in rows],
                               hovertemplate="turn %{x}<br>mean ε̂ %{y:.3f}<br>states %{customdata}<extra></extra>"))  # fmt: skip
    fig.update_xaxes(dtick=1)
    fig.update_layout(xaxis_title="simulator turn", yaxis_title="mean ε̂", yaxis_range=[0, 1], height=380)
    return titled(
        fig,
        f"ε̂ by turn; accumulated ε̄_H = {traj['accumulated_collapse_error']:.3f}, gradient-bias bound "
        f"2·B·R_max·ε̄_H = {traj['gradient_bias_bound']:.3f} (B = {traj.get('B', 1):g}, R_max = {traj.get('R_max', 1):g})",
    )


def compare_vs_figure(results: Mapping[str, Any]) -> Any:
    """Direct vs Verbalized Sampling side by side: mean ε̂ of each mode with its 95 % CI, their
    difference with its interval, and mean entropy with CIs.

    The ε̂ bars are the two estimates the difference is taken of (``a_estimate`` / ``b_estimate`` of
    ``difference_vs_minus_direct``, which may be over the states measured in both modes), so the
    bars and the printed difference always agree.
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    c = results.get("compare_vs")
    if not c:
        return empty_figure("Direct vs Verbalized Sampling", "run with --compare-vs to compare direct and VS")
    d = c.get("difference_vs_minus_direct") or {}
    fig = make_subplots(rows=1, cols=3, column_widths=[0.38, 0.24, 0.38], horizontal_spacing=0.09,
                        subplot_titles=["mean ε̂ (95% CI)", "VS − direct ε̂ (95% CI)", "mean entropy, nats (95% CI)"])  # fmt: skip
    for col, key in ((1, "collapse_error"), (3, "entropy")):
        ys, lo, hi = [], [], []
        for mode, pair in (("direct", "a_estimate"), ("verbalized", "b_estimate")):
            e = c[mode][key]
            est = e.get("estimate")
            if key == "collapse_error" and d.get(pair) is not None:
                est = d[pair]
            ci = e.get("ci95") or [est, est]
            ys.append(est)
            lo.append(0.0 if est is None or ci[0] is None else max(est - ci[0], 0.0))
            hi.append(0.0 if est is None or ci[1] is None else max(ci[1] - est, 0.0))
        fig.add_trace(go.Bar(x=["direct", "VS"], y=ys, showlegend=False, marker_color=[_PALETTE[0], _PALETTE[1]],
                             error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo},
                             hovertemplate="%{x}: %{y:.3f}<extra></extra>"),
                      row=1, col=col)  # fmt: skip
    if d.get("estimate") is not None:
        est = d["estimate"]
        lo_d, hi_d = (d.get("ci95") or [est, est])[:2]
        fig.add_trace(go.Scatter(x=["VS − direct"], y=[est], mode="markers", showlegend=False,
                                 marker={"size": 11, "color": "#333"},
                                 error_y={"type": "data", "symmetric": False,
                                          "array": [0.0 if hi_d is None else max(hi_d - est, 0.0)],
                                          "arrayminus": [0.0 if lo_d is None else max(est - lo_d, 0.0)]},
                                 hovertemplate="VS − direct %{y:.3f}<extra></extra>"), row=1, col=2)  # fmt: skip
        fig.add_hline(y=0, line_dash="dot", line_color="#888", row=1, col=2)
    fig.update_yaxes(tickformat=".3~g")
    sub = "" if d.get("estimate") is None else f"VS − direct ε̂ = {d['estimate']:.3f} {_ci(d.get('ci95'))}"
    if d.get("all_states") is False:
        sub += f" over the {n_states(d.get('n_states'))} measured in both modes"
    v = c.get("vs_parse_failures")
    if v:
        sub += f"; VS parse failures {v['count']} of {v['of']}"
    if c.get("unreliable"):
        sub += " (most VS replies fell back to a plain draw: the VS numbers describe the fallback)"
    fig.update_layout(height=400)
    return titled(fig, "Direct vs Verbalized Sampling", sub.strip("; ") or None, top=30)


def donation_comparison_figure(results: Mapping[str, Any]) -> Any:
    """Binned donation distribution of the simulator vs the human P4G donors."""
    import plotly.graph_objects as go

    d = ((results.get("human_reference") or {}).get("donations")) or {}
    if "bins" not in d:
        return empty_figure(
            "Donations, simulator vs people", d.get("note") or "no human reference (run with --human PATH)"
        )
    fig = go.Figure([go.Bar(name=f"simulator (n={d['n_simulated']})", x=d["bins"], y=d["simulated_binned"]),
                     go.Bar(name=f"human (n={d['n_human']})", x=d["bins"], y=d["human_binned"])])  # fmt: skip
    fig.update_layout(barmode="group", yaxis_title="share of donations", height=400,
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0})  # fmt: skip
    return titled(
        fig, f"Donations: W1 {d['wasserstein']:.3f}, KS {d['ks_statistic']:.3f}, L1 {d['l1_binned']:.3f}", top=40
    )


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


def effective_modes_text(s: Mapping[str, object], n: int) -> str:
    """The effective modes exp(H) as measured, or as a lower bound where N replies cannot show them."""
    est = s.get("effective_modes")
    if est is None:
        return "n/a"
    if s.get("effective_modes_lower_bound_only"):
        lb = s.get("effective_modes_lower_bound")
        bound = f"at least {lb:.1f}" if lb is not None else "no finite estimate"
        return f"{bound} (lower bound only: {n} replies per state cannot resolve more classes)"
    return f"{est:.2f}  (estimate incl. unseen classes)"


def _interval_of(v: Mapping[str, object], key: str = "ci95") -> str:
    """A view's interval (``key``) as :func:`fmt_interval` writes it."""
    ci = v.get(key)
    return fmt_interval(ci if isinstance(ci, list) else None)


def view_text(v: Mapping[str, object] | None, epsilon_star: float) -> str:
    """One view's number, interval and label for a table cell: ``0.811 [0.672, 0.934]  NOT COLLAPSED``
    (``v``: the view's verdict, ``results.json`` ``verdicts.meaning`` or ``verdicts.reward``)."""
    if not v:
        return "n/a"
    est = v.get("estimate")
    number = fmt_value(est if isinstance(est, int | float) else None)
    if v["label"] == "NOT MEASURED":
        return f"not measured: {v.get('reason')}"
    if v["label"] == "NO REWARD SIGNAL":
        from collapse_probe.pipelines.audit._verdict import FORMAT_COMPLIANCE_LOW, given_text, percent

        return (f"{number} {_interval_of(v)}  NO REWARD SIGNAL (a closed answer in "
                f"{given_text(v)}, below {percent(FORMAT_COMPLIANCE_LOW)}: format, not collapse; the interval alone "
                f"reads {v.get('interval_label') or 'COLLAPSED'})")  # fmt: skip
    rel = "<" if v["label"] == "COLLAPSED" else ">" if v["label"] == "NOT COLLAPSED" else "∋"
    if v.get("exact_bounds"):  # decided by the sequential test's exact bounds at its last look
        return (f"{number} {_interval_of(v)}  {v['label']} (exact bounds "
                f"{_interval_of(v, 'exact_bounds')} {rel} ε* = {epsilon_star:g} at N = {v.get('decided_at')})")  # fmt: skip
    return f"{number} {_interval_of(v)}  {v['label']} (CI {rel} ε* = {epsilon_star:g})"


# ----------------------------------------------------------------------------------------------- tables


def n_states(n: Any) -> str:
    """``1 state``, ``2 states``."""
    return f"{n} state{'' if n == 1 else 's'}"


def samples_per_state_text(results: Mapping[str, Any]) -> str:
    """Replies per state as measured (the states' own N, not the N asked for: a published file's states
    hold as many replies as its trials), with LOW CONFIDENCE when the summary flags N < 20. The
    terminal table, the report and the dashboard print this text."""
    from collapse_probe.pipelines.audit._verdict import replies_text

    summary = results.get("summary") or {}
    text = replies_text(list(results.get("states") or [])) or str(results.get("samples_per_state") or "n/a")
    return text + ("  LOW CONFIDENCE (N < 20)" if summary.get("low_confidence") else "")


def infra_failures_text(results: Mapping[str, Any]) -> str:
    """States excluded as infrastructure failures, and for a published file the conversations whose
    records carry one (``source.infra_failures``): two counts, each with its unit."""
    n = int((results.get("summary") or {}).get("infra_failures") or 0)
    text = f"{n} state{'s' if n != 1 else ''}"
    src = results.get("source") or {}
    if "infra_failures" in src:
        c = int(src.get("infra_failures") or 0)
        text += f"; {c} conversation{'s' if c != 1 else ''} of the file ({src.get('conversations')} read)"
    return text


def reward_classes_text(results: Mapping[str, Any]) -> str:
    """What a class of the reward view is, or ``not measured`` (the reason is on the estimate's row)."""
    rv = (results.get("summary") or {}).get("reward_view") or {}
    return str(rv.get("classes") or "not measured")


def simulator_errors_text(results: Mapping[str, Any]) -> str | None:
    """``audit --from``: the user-simulator errors the records flag, in one line (``None`` otherwise)."""
    e = results.get("simulator_errors")
    if not isinstance(e, Mapping):
        return None
    flags = e.get("flags") or {}
    kinds = ", ".join(f"{k} {v}" for k, v in flags.items()) if isinstance(flags, Mapping) else ""
    text = f"{e.get('flagged', 0)} of {e.get('conversations', 0)} conversations flagged"
    if e.get("flagged_critical"):
        text += f" ({e['flagged_critical']} critical)"
    if kinds:
        text += f": {kinds}"
    if e.get("failed") is not None:
        text += f"; {e.get('failed_flagged', 0)} of the {e['failed']} failed conversations flagged"
    return text


def states_audited_text(results: Mapping[str, Any]) -> str:
    """What the audited states are, with the note on them when there is one; the note's own opening
    (``these are probe states, ...``) is not said a second time after the name."""
    audited = str(results.get("states_audited") or "probe states")
    note = str(results.get("states_note") or "").removeprefix("note: ").strip()
    if not note:
        return audited
    for opening in (f"these are {audited}, ", f"these are {audited} ", f"these are {audited}"):
        if note.lower().startswith(opening.lower()):
            note = note[len(opening) :].lstrip(",;: ")
            break
    return f"{audited}: {note}" if note else audited


def summary_table(results: Mapping[str, Any], summary: Mapping[str, Any] | None = None) -> Table:
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
        ["samples per state", samples_per_state_text(results) if summary is None
         else str(n) + ("  LOW CONFIDENCE (N < 20)" if s["low_confidence"] else "")],
        ["states measured", str(s["n_states"])],
        ["infra failures excluded", infra_failures_text({**results, "summary": s})],
        ["states audited", states_audited_text(results)],
    ]  # fmt: skip
    for key, name in (("meaning", "meaning view"), ("reward", "reward view")):
        if key in verdicts:
            v = verdicts[key]
            over = f" over {v['over']}" if v.get("over") and v["label"] != "NOT MEASURED" else ""
            rows.append([f"verdict, {name}", view_text(v, star) + over])
    rows += [
        [f"mean ε̂, classes by {results['partitioner']} [95% CI]", _est(s["collapse_error"])],
        [f"mean ε̂, classes by {results['partitioner']}, plug-in 1 − max/N", _f(s["collapse_error"].get("plugin"))],
        ["reward view: classes and states", reward_classes_text({"summary": s})],
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
                     f"{ex['closed_set_mass']:.4f} over {n_states(ex['n_states'])}"])  # fmt: skip
        rows.append(["exact: ε of the answer given a closed answer", _f(ex.get("collapse_error_in_set"))])
        rows.append(["exact: ε with 'outside the set' as one class", _f(ex.get("collapse_error_with_outside"))])
    if s.get("decision_collapse_error"):
        d = s["decision_collapse_error"]
        rows.append(["decision-label ε (the benchmark's labels, not the reward's classes) [95% CI]",
                     f"{_f(d['estimate'])} {_ci(d['ci95'])} over {n_states(d['n_states'])} that ask for a decision"])  # fmt: skip
    if s.get("vs_parse_failures"):
        v = s["vs_parse_failures"]
        rows.append(["VS parse failures", f"{v['count']} of {v['of']} {v['reasons'] or ''}".strip()])
    errors = simulator_errors_text(results) if summary is None else None
    if errors:
        rows.append(["user-simulator errors the records flag", errors])
    return {"columns": ["quantity", "value"], "rows": rows}


def states_table(results: Mapping[str, Any]) -> Table:
    """One row per state and sampling mode: ε̂ (bias-aware, as in the headline) with its CI, the plug-in
    beside it, entropy, the reward view, the exact closed-set scores, status.

    A state is named by :func:`short_state_id` (an on-policy id repeats the audit's policy and simulator
    specs); a column with nothing in any row (no exact scores, no decision, no error) is left out, so
    the table fits the page's width instead of cutting its last columns.
    """
    rows = []
    for mode, rs in states_by_mode(results).items():
        for r in rs:
            ok = r.get("collapse_error") is not None
            ex, rv = r.get("exact") or {}, r.get("reward_view") or {}
            rows.append([
                short_state_id(str(r["state_id"])), mode, r.get("source"), r.get("turn"), r.get("n"), r.get("status"),
                _f(state_estimate(r)) if ok else "n/a", _ci(r.get("collapse_error_ci95")), _f(r.get("collapse_error")),
                _f(r.get("entropy")), _f(rv.get("collapse_error_estimate")),
                " / ".join(f"{k}: {c}" for k, c in zip(rv.get("class_names") or [], rv.get("class_counts") or [], strict=False)),
                _f(ex.get("closed_set_mass")), _f(ex.get("collapse_error_conditional")),
                _f((r.get("decision") or {}).get("collapse_error")), r.get("error") or "",
            ])  # fmt: skip
    # status right after N: on a narrow page the table scrolls, and what a state's numbers mean starts there
    columns = ["state", "mode", "source", "turn", "N", "status", "ε̂", "95% CI", "ε̂ plug-in (1 − max/N)", "entropy",
               "reward-view ε̂", "reward classes", "exact: P(closed answer)", "exact: ε given a closed answer",
               "decision-label ε (plug-in)", "error"]  # fmt: skip
    keep = [j for j in range(len(columns)) if j < 2 or any(row[j] not in (None, "", "n/a") for row in rows)]
    return {"columns": [columns[j] for j in keep], "rows": [[row[j] for j in keep] for row in rows]}


def variance_share_table(results: Mapping[str, Any]) -> Table:
    """The simulator's share of reward variance (Lemma 3.3), one row."""
    v = results.get("variance_share") or {}
    return {"columns": ["share", "95% CI", "within", "between", "note"],
            "rows": [[_f(v.get("share")), _ci(v.get("ci")), _f(v.get("within")), _f(v.get("between")),
                      v.get("note") or ""]]}  # fmt: skip


def variance_figure(results: Mapping[str, Any]) -> Any:
    """Whose noise the reward's variance is: the task, simulator, agent and judge shares with their 95 %
    intervals (a share the data cannot identify is drawn as a gap and named n/a), and the flip rate and
    pass^k in the title."""
    import plotly.graph_objects as go

    v = results.get("variance") or {}
    shares = v.get("shares") or {}
    if not any(shares.get(k) for k in ("task", "simulator", "agent", "judge")):
        note = "; ".join(v.get("notes") or []) or "no decomposition"
        return empty_figure("Reward variance: task, simulator, agent, judge", note[:200])
    names, ys, lo, hi, text = [], [], [], [], []
    for k in ("task", "simulator", "agent", "judge"):
        sh = shares.get(k)
        names.append(k)
        est = None if sh is None else sh.get("estimate")
        ci = (sh or {}).get("ci95") or [est, est]
        ys.append(est)
        lo.append(0.0 if est is None or ci[0] is None else max(est - ci[0], 0.0))
        hi.append(0.0 if est is None or ci[1] is None else max(ci[1] - est, 0.0))
        text.append("n/a (not identified)" if est is None else f"{est:.3f} {fmt_interval(ci)}")
    fig = go.Figure(go.Bar(x=names, y=ys, text=text, textposition="outside", marker_color=list(_PALETTE[:4]),
                           error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo},
                           hovertemplate="%{x}: %{y:.3f}<extra></extra>"))  # fmt: skip
    pk = v.get("pass_k") or {}
    extra = []
    if v.get("flip_rate") is not None:
        extra.append(f"flip rate {v['flip_rate']:.3f}")
    if pk:
        last = max(pk, key=int)
        extra.append(f"pass^1 {pk['1']:.3f}" + (f", pass^{last} {pk[last]:.3f}" if last != "1" else ""))
    title = f"Share of reward variance over {v.get('n_tasks', 0)} tasks (95% CI)" + (
        f"; {'; '.join(extra)}" if extra else ""
    )
    fig.update_layout(title=title, yaxis={"range": [0, 1.15], "title": "share of reward variance"},
                      height=380, margin={"t": 60})  # fmt: skip
    return fig


def human_diversity_table(results: Mapping[str, Any]) -> Table | None:
    """Diversity of the simulator's vs the human persuadees' replies at the same prefixes (``None``
    when the run has no human-prefix states)."""
    div = (results.get("human_reference") or {}).get("diversity")
    if not div:
        return None
    rows = [[k, _f(v.get("simulator")), _f(v.get("human"))] for k, v in div.items() if isinstance(v, Mapping)]
    rows.append(["prefixes", str(div.get("n_prefixes")), ""])
    return {"columns": ["metric", "simulator", "human"], "rows": rows}


def realism_table(results: Mapping[str, Any]) -> Table | None:
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


def people_vs_simulator_figure(results: Mapping[str, Any]) -> Any:
    """People's ε of the stance at the matched states beside the simulator's (pooled over its samples),
    per persuader act and on average, each with its 95 % CI (``human_reference.people_epsilon``;
    ``None`` without annotated dialogues). The two are measured with the same classes (stances)."""
    import plotly.graph_objects as go

    pe = (results.get("human_reference") or {}).get("people_epsilon")
    if not pe:
        return None
    # (the state, people's ε, the simulator's ε, the key of the estimate: a mean's or one group's)
    rows: list[tuple[str, Mapping[str, Any], Mapping[str, Any], str]] = [
        ("mean over persuader acts", pe["people"], pe["simulator_pooled"], "estimate")
    ]
    rows += [(g["persuader_act"], g["people"], g["simulator_pooled"], "collapse_error") for g in pe["groups"]]
    labels = short_labels([r[0] for r in rows])
    fig = go.Figure()
    for k, (name, colour) in enumerate((("people (95% CI)", "#2ca02c"), ("simulator (95% CI)", "#1f77b4"))):
        views = [(r[1] if k == 0 else r[2]) for r in rows]
        ys = [v.get(r[3]) for v, r in zip(views, rows, strict=True)]
        ci = [v.get("ci95") or [y, y] for v, y in zip(views, ys, strict=True)]
        fig.add_trace(go.Scatter(
            x=labels, y=ys, mode="markers", name=name, offsetgroup=name, marker={"color": colour, "size": 10},
            error_y={"type": "data", "symmetric": False, "thickness": 1,
                     "array": [max(c[1] - y, 0) if y is not None and c[1] is not None else 0 for y, c in zip(ys, ci, strict=True)],
                     "arrayminus": [max(y - c[0], 0) if y is not None and c[0] is not None else 0 for y, c in zip(ys, ci, strict=True)]},
            customdata=[[r[0], c[0], c[1]] for r, c in zip(rows, ci, strict=True)],
            hovertemplate="%{customdata[0]}<br>ε̂ %{y:.3f} [%{customdata[1]:.3f}, %{customdata[2]:.3f}]<extra>" + name + "</extra>",
        ))  # fmt: skip
    fig.update_layout(scattermode="group", yaxis_title="ε̂ of the stance (0 = one stance)", yaxis_range=[-0.02, 1.02],
                      xaxis={"type": "category", "automargin": True, "autotickangles": [0, 90],
                             "title": {"text": "state (the persuader's act)"}}, height=420)  # fmt: skip
    return titled(fig, "People vs the simulator at the matched states: ε of the stance")


def people_epsilon_table(results: Mapping[str, Any]) -> Table | None:
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


def grounding_table(results: Mapping[str, Any]) -> Table | None:
    """One row per human-grounded state: the human's actual reply and where it falls among the simulator's classes."""
    rows = (results.get("human_reference") or {}).get("grounding_states") or []
    if not rows:
        return None
    return {
        "columns": ["state", "the human persuadee replied", "simulator's P(human's class)", "rank", "classes"],
        "rows": [[r["state_id"], r["human_reply"][:160], _f(r["human_class_share"]),
                  "outside" if r["outside"] else str(r["human_class_rank"]), str(r["n_classes"])] for r in rows],
    }  # fmt: skip


def towards_people_table(results: Mapping[str, Any]) -> Table | None:
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
    sections: list[tuple[str, Any]] = [("Verdict", verdict_box(results)), ("Summary", summary_table(results))]
    sections.append(("Where the reward looks", reward_view_per_state_figure(results, records)))
    sections.append(("Collapse map", collapse_map_figure(results)))
    sections.append(("Collapse error per state, by meaning", collapse_error_per_state_figure(results)))
    sections.append(("States", states_table(results)))
    sections.append(("Response classes", class_histograms_figure(records)))
    if results.get("trajectory"):
        sections.append(("Collapse error by turn", collapse_error_by_turn_figure(results)))
    if results.get("compare_vs"):
        sections.append(("Direct vs Verbalized Sampling", compare_vs_figure(results)))
    if results.get("variance_share"):
        sections.append(("Simulator share of reward variance (Lemma 3.3)", variance_share_table(results)))
    if results.get("variance"):
        sections.append(("Reward variance: task, simulator, agent, judge", variance_figure(results)))
    if results.get("human_reference"):
        sections.append(("Realism: donations, simulator vs people", donation_comparison_figure(results)))
        if people_vs_simulator_figure(results) is not None:
            sections.append(("People vs the simulator: ε at the matched states", people_vs_simulator_figure(results)))
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
