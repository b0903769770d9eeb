"""Figures and tables of audit runs (schema ``collapse-probe/audit/v1``) for the dashboard and reports.

Every figure function takes the ``results.json`` dictionary of an audit (or several) and returns a
``plotly.graph_objects.Figure``; plotly is imported inside the functions. Per state an audit holds
``collapse_error`` ε̂ = 1 − max_count/N with its 95 % CI, the entropy and the class counts; states with
N < 20 samples are drawn hollow (low confidence, see ``MIN_CONFIDENT_SAMPLES``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "VS_KEYS",
    "collapse_error_by_state_figure",
    "collapse_error_by_turn_figure",
    "compare_audits_figure",
    "direct_vs_figure",
    "human_reference",
    "human_reference_figure",
    "state_classes",
    "state_context",
    "vs_results",
]

VS_KEYS = ("vs", "verbalized", "compare_vs")
"""Keys under which an audit run with ``--compare-vs`` may hold the Verbalized-Sampling results."""
_HUMAN_KEYS = ("human_reference", "human", "reference")
_MIN_CONFIDENT = 20


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float) or x != x:
        return None
    return float(x)


def _states(results: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        s for s in results.get("states") or [] if isinstance(s, Mapping) and _num(s.get("collapse_error")) is not None
    ]


def _err(states: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    plus, minus = [], []
    for s in states:
        e = float(s["collapse_error"])
        ci = s.get("collapse_error_ci95")
        if isinstance(ci, list | tuple) and len(ci) == 2 and _num(ci[0]) is not None and _num(ci[1]) is not None:
            plus.append(max(float(ci[1]) - e, 0.0))
            minus.append(max(e - float(ci[0]), 0.0))
        else:
            plus.append(0.0)
            minus.append(0.0)
    return {"type": "data", "array": plus, "arrayminus": minus, "symmetric": False, "thickness": 1}


def _hover(s: Mapping[str, Any]) -> str:
    ci = s.get("collapse_error_ci95") or [None, None]
    low = " (low confidence: N < 20)" if (_num(s.get("n")) or 0) < _MIN_CONFIDENT else ""
    return (
        f"state {s.get('state_id')}<br>turn {s.get('turn')}<br>ε {_f(s.get('collapse_error'))} "
        f"[{_f(ci[0])}, {_f(ci[1])}]<br>entropy {_f(s.get('entropy'))} nats<br>N {s.get('n')}{low}"
        f"<br>classes {len(s.get('class_counts') or [])}"
    )


def _f(x: Any) -> str:
    v = _num(x)
    return "n/a" if v is None else f"{v:.3f}"


def _trace_by_state(go: Any, states: Sequence[Mapping[str, Any]], name: str, colour: str, x: Sequence[Any]) -> Any:
    low = [(_num(s.get("n")) or 0) < _MIN_CONFIDENT for s in states]
    return go.Scatter(
        x=list(x),
        y=[float(s["collapse_error"]) for s in states],
        error_y=_err(states),
        mode="markers",
        name=name,
        marker={
            "color": colour,
            "size": 8,
            "symbol": ["circle-open" if lo else "circle" for lo in low],
            "line": {"color": colour, "width": 1.5},
        },
        customdata=[_hover(s) for s in states],
        hovertemplate="%{customdata}<extra>" + name + "</extra>",
    )


def _layout(fig: Any, title: str, xtitle: str, height: int = 400) -> Any:
    fig.update_layout(
        title=title,
        xaxis_title=xtitle,
        yaxis_title="collapse error ε (0 = collapsed)",
        template="plotly_white",
        height=height,
        margin={"l": 60, "r": 20, "t": 50, "b": 60},
        legend={"orientation": "h", "y": -0.25},
    )
    fig.update_yaxes(range=[-0.02, 1.02])
    return fig


def collapse_error_by_state_figure(results: Mapping[str, Any]) -> Any:
    """ε per state with its 95 % CI, states sorted from most collapsed to most diverse.

    A dashed line marks the run's mean ε (the ε*-collapse level over the visited states).
    """
    import plotly.graph_objects as go

    states = sorted(_states(results), key=lambda s: float(s["collapse_error"]))
    fig = go.Figure()
    fig.add_trace(
        _trace_by_state(go, states, str(results.get("simulator", "simulator")), "#1f77b4", range(len(states)))
    )
    mean = _num((results.get("summary") or {}).get("collapse_error", {}).get("estimate"))
    if mean is not None:
        fig.add_hline(y=mean, line_dash="dash", line_color="#888", annotation_text=f"mean ε = {mean:.3f}")
    fig.update_xaxes(
        tickmode="array",
        tickvals=list(range(len(states))),
        ticktext=[str(s.get("state_id")) for s in states],
        showticklabels=len(states) <= 40,
    )
    return _layout(fig, f"Collapse error per state ({len(states)} states, sorted)", "state (sorted by ε)")


def collapse_error_by_turn_figure(results: Mapping[str, Any]) -> Any:
    """Every state's ε (points) and the mean ε per turn (line): where in the conversation the simulator collapses."""
    import plotly.graph_objects as go

    states = [s for s in _states(results) if _num(s.get("turn")) is not None]
    by_turn: dict[float, list[float]] = {}
    for s in states:
        by_turn.setdefault(float(s["turn"]), []).append(float(s["collapse_error"]))
    turns = sorted(by_turn)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[float(s["turn"]) for s in states],
            y=[float(s["collapse_error"]) for s in states],
            mode="markers",
            name="state",
            marker={"color": "rgba(31,119,180,0.45)", "size": 7},
            customdata=[_hover(s) for s in states],
            hovertemplate="%{customdata}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=turns,
            y=[sum(v) / len(v) for t in turns for v in [by_turn[t]]],
            mode="lines+markers",
            name="mean ε per turn",
            line={"color": "#d62728", "width": 2},
        )
    )
    fig.update_xaxes(dtick=1)
    return _layout(fig, "Collapse error by simulator turn", "simulator turn")


def vs_results(results: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The Verbalized-Sampling audit held by an audit run made with ``--compare-vs`` (``None`` without)."""
    for k in VS_KEYS:
        sub = results.get(k)
        if isinstance(sub, Mapping) and isinstance(sub.get("states"), list):
            return sub
    return None


def direct_vs_figure(results: Mapping[str, Any]) -> Any:
    """ε per state under direct sampling and under Verbalized Sampling, states matched by id.

    Raises:
        ValueError: the run holds no Verbalized-Sampling results.
    """
    import plotly.graph_objects as go

    vs = vs_results(results)
    if vs is None:
        raise ValueError("this audit has no Verbalized-Sampling results (run it with --compare-vs)")
    direct = {str(s.get("state_id")): s for s in _states(results)}
    verbal = {str(s.get("state_id")): s for s in _states(vs)}
    either = {**verbal, **direct}
    ids = sorted(either, key=lambda i: float(either[i]["collapse_error"]))
    fig = go.Figure()
    for name, table, colour in (("direct", direct, "#1f77b4"), ("verbalized sampling", verbal, "#2ca02c")):
        xs = [i for i in ids if i in table]
        fig.add_trace(_trace_by_state(go, [table[i] for i in xs], name, colour, xs))
    fig.update_xaxes(type="category", showticklabels=len(ids) <= 40)
    return _layout(fig, "Direct vs Verbalized Sampling: collapse error per state", "state (sorted by direct ε)")


def compare_audits_figure(audits: Mapping[str, Mapping[str, Any]]) -> Any:
    """Several audits' ε per state on one axis: matched by state id where the audits share states,
    otherwise each audit's sorted ε profile (rank on the x axis)."""
    import plotly.graph_objects as go

    palette = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e")
    tables = {label: {str(s.get("state_id")): s for s in _states(r)} for label, r in audits.items()}
    shared = set.intersection(*(set(t) for t in tables.values())) if tables else set()
    fig = go.Figure()
    if shared:
        first = next(iter(tables.values()))
        ids = sorted(shared, key=lambda i: float(first[i]["collapse_error"]))
        for k, (label, t) in enumerate(tables.items()):
            fig.add_trace(_trace_by_state(go, [t[i] for i in ids], label, palette[k % len(palette)], ids))
        fig.update_xaxes(type="category", showticklabels=len(ids) <= 40)
        xtitle = "shared state (sorted by the first audit's ε)"
    else:
        for k, (label, t) in enumerate(tables.items()):
            states = sorted(t.values(), key=lambda s: float(s["collapse_error"]))
            n = len(states)
            xs = [(i + 0.5) / n for i in range(n)]
            fig.add_trace(_trace_by_state(go, states, label, palette[k % len(palette)], xs))
        xtitle = "state quantile (each audit sorted by ε)"
    return _layout(fig, "Collapse error per state, compared", xtitle)


def human_reference(results: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The human reference an audit holds (a ``{"collapse_error": ..., ...}`` mapping), or ``None``."""
    for k in _HUMAN_KEYS:
        sub = results.get(k)
        if isinstance(sub, Mapping):
            return sub
    return None


def human_reference_figure(results: Mapping[str, Any]) -> Any:
    """The simulator's ε per state over the human reference's ε (per state when it has states, else a band).

    Raises:
        ValueError: the run holds no human reference.
    """
    import plotly.graph_objects as go

    ref = human_reference(results)
    if ref is None:
        raise ValueError("this audit has no human reference")
    fig = collapse_error_by_state_figure(results)
    ref_states = {str(s.get("state_id")): s for s in _states(ref)}
    if ref_states:
        ids = list(fig.data[0].x)
        order = sorted(_states(results), key=lambda s: float(s["collapse_error"]))
        xs = [x for x, s in zip(ids, order, strict=False) if str(s.get("state_id")) in ref_states]
        ys = [
            float(ref_states[str(s.get("state_id"))]["collapse_error"])
            for s in order
            if str(s.get("state_id")) in ref_states
        ]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="markers",
                name="human reference",
                marker={"color": "#ff7f0e", "symbol": "diamond", "size": 9},
            )
        )
    est = (
        _num((ref.get("summary") or {}).get("collapse_error", {}).get("estimate"))
        if isinstance(ref.get("summary"), Mapping)
        else _num(ref.get("collapse_error"))
    )
    if est is not None:
        fig.add_hline(
            y=est,
            line_dash="dot",
            line_color="#ff7f0e",
            annotation_text=f"humans ε = {est:.3f}",
            annotation_position="bottom right",
        )
    fig.update_layout(title="Collapse error per state: simulator vs human reference")
    return fig


def state_classes(
    state: Mapping[str, Any], samples: Sequence[Mapping[str, Any]], examples: int = 3, mode: str = "direct"
) -> list[dict[str, Any]]:
    """The equivalence classes of one state, largest first: count, share and example responses.

    Responses and their class labels come from the state's records in ``samples.jsonl`` (keys
    ``responses`` and ``labels``/``classes``); without them the counts of ``results.json`` are listed.
    Records that carry a ``mode`` (``direct`` or ``vs`` in an audit with ``--compare-vs``) count only
    for that sampling mode.
    """
    sid = state.get("state_id")
    responses: list[str] = []
    labels: list[Any] = []
    for rec in samples:
        if rec.get("state_id") != sid or rec.get("mode", mode) != mode:
            continue
        r = rec.get("responses")
        lab = next((rec[k] for k in ("labels", "classes", "class_labels") if isinstance(rec.get(k), list)), None)
        if isinstance(r, list) and isinstance(lab, list) and len(r) == len(lab):
            responses.extend(str(x) for x in r)
            labels.extend(lab)
    if responses:
        groups: dict[str, list[str]] = {}
        for text, lab in zip(responses, labels, strict=True):
            groups.setdefault(str(lab), []).append(text)
        n = len(responses)
        ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
        return [
            {
                "class": lab,
                "count": len(texts),
                "share": round(len(texts) / n, 4),
                "examples": " | ".join(list(dict.fromkeys(texts))[:examples]),
            }
            for lab, texts in ordered
        ]
    counts = [c for c in state.get("class_counts") or [] if isinstance(c, int)]
    total = sum(counts)
    return [
        {"class": str(i), "count": c, "share": round(c / total, 4) if total else None, "examples": ""}
        for i, c in sorted(enumerate(counts), key=lambda ic: -ic[1])
    ]


def state_context(state: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The conversation history that defines a state (``history``/``messages`` of its sample record)."""
    for rec in samples:
        if rec.get("state_id") == state.get("state_id"):
            for k in ("history", "messages", "context"):
                if isinstance(rec.get(k), list):
                    return [m for m in rec[k] if isinstance(m, Mapping)]
    return []
