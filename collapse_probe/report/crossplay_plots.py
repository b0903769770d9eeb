"""Figures of a cross-play run (plotly), shared by ``report.html`` and the dashboard.

Every function takes the ``results.json`` dictionary of :mod:`collapse_probe.crossplay` and returns a
``plotly.graph_objects.Figure``; plotly is imported inside the functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from collapse_probe.report._html import TICK_FORMAT, note_figure


def _fmt(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def reward_heatmap(results: dict[str, Any]) -> Any:
    """Policy x simulator mean reward; hovering a cell shows its 95 % CI over tasks, n and infra failures.

    The training simulator's column is marked with a ``(train)`` suffix. Cells with no scored
    conversation are blank.
    """
    import plotly.graph_objects as go

    policies, sims = results["policies"], results["simulators"]
    train = results.get("train_simulator")
    cells = {(c["policy"], c["simulator"]): c for c in results["cells"]}
    z, text, hover = [], [], []
    for p in policies:
        zr, tr, hr = [], [], []
        for s in sims:
            c = cells.get((p, s), {})
            m = c.get("mean_reward")
            ci = c.get("ci95") or [None, None]
            zr.append(m)
            tr.append(_fmt(m, 2) if m is not None else "no data")
            method = f" ({c['ci95_method']})" if c.get("ci95_method") else ""
            hr.append(
                f"policy {p}<br>simulator {s}<br>mean reward {_fmt(m)}<br>95% CI [{_fmt(ci[0])}, {_fmt(ci[1])}]"
                f" over {c.get('n_tasks', 'n/a')} tasks{method}"
                f"<br>success rate {_fmt(c.get('success_rate'))}<br>n {c.get('n', 0)}"
                f"<br>infra failures {c.get('infra_failures', 0)}"
            )
        z.append(zr)
        text.append(tr)
        hover.append(hr)
    cols = [f"{s} (train)" if s == train else s for s in sims]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=cols,
            y=policies,
            text=text,
            texttemplate="%{text}",
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            colorscale="Viridis",
            zmin=0,
            zmax=1,
            colorbar={"title": "mean reward"},
        )
    )
    fig.update_layout(
        title="Cross-play matrix: mean reward",
        xaxis_title="simulator",
        yaxis_title="policy",
        yaxis={"autorange": "reversed"},
        height=160 + 60 * len(policies),
    )
    return fig


def transfer_bars(results: dict[str, Any]) -> Any:
    """Transfer ratio per policy with its 95 % CI (error bars); a dashed line at 1 (no loss)."""
    import plotly.graph_objects as go

    entries = results.get("transfer") or []
    xs = [t["policy"] for t in entries]
    ys = [t.get("transfer_ratio") for t in entries]
    plus = [
        (t["ci95"][1] - t["transfer_ratio"]) if t.get("ci95") and t.get("transfer_ratio") is not None else 0
        for t in entries
    ]
    minus = [
        (t["transfer_ratio"] - _lower(t)) if _lower(t) is not None and t.get("transfer_ratio") is not None else 0
        for t in entries
    ]
    hover = [
        f"{t['policy']}<br>transfer ratio {_fmt(t.get('transfer_ratio'))}<br>train reward {_fmt(t.get('train_reward'))}"
        f"<br>held-out reward {_fmt(t.get('heldout_reward'))}" + (f"<br>{t['note']}" if t.get("note") else "")
        for t in entries
    ]
    fig = go.Figure(
        go.Bar(
            x=xs,
            y=ys,
            error_y={"type": "data", "array": plus, "arrayminus": minus, "symmetric": False},
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            marker_color="#4c72b0",
        )
    )
    fig.add_hline(y=1.0, line_dash="dash", line_color="#888")
    fig.update_layout(
        title=f"Transfer ratio (held-out / {results.get('train_simulator')} reward)",
        xaxis_title="policy",
        yaxis_title="transfer ratio",
        yaxis_tickformat=TICK_FORMAT,
        height=380,
    )
    undefined = [t for t in entries if t.get("transfer_ratio") is None]
    if not entries:
        note_figure(fig, "no transfer ratio: the run names no training simulator (--train-sim)")
    elif undefined:
        why = "; ".join(f"{t['policy']}: {t.get('note') or 'undefined'}" for t in undefined)
        note_figure(fig, f"undefined transfer ratio — {why}")
    return fig


def _lower(t: dict[str, Any]) -> float | None:
    """The lower end of a transfer ratio's CI, also when the interval has no upper end."""
    return t["ci95"][0] if t.get("ci95") else t.get("ci95_lower")


def strategy_entropy_bars(results: dict[str, Any]) -> Any:
    """Strategy entropy (nats) of each policy's own messages: low entropy is policy-diversity collapse."""
    import plotly.graph_objects as go

    entries = results.get("policy_diversity") or []
    fig = go.Figure(
        go.Bar(
            x=[e["policy"] for e in entries],
            y=[e.get("strategy_entropy") for e in entries],
            customdata=[
                f"{e['policy']}<br>entropy {_fmt(e.get('strategy_entropy'))} nats ({e.get('estimator')})"
                f"<br>{e.get('n_classes')} classes in {e.get('n_messages')} messages ({e.get('turns')} turns, "
                f"{e.get('partitioner')} partitioner)"
                + ("<br>low confidence (N < 20)" if e.get("low_confidence") else "")
                for e in entries
            ],
            hovertemplate="%{customdata}<extra></extra>",
            marker_color="#55a868",
        )
    )
    fig.update_layout(
        title="Policy strategy entropy",
        xaxis_title="policy",
        yaxis_title="entropy (nats)",
        yaxis_tickformat=TICK_FORMAT,
        height=360,
    )
    missing = [e["policy"] for e in entries if e.get("strategy_entropy") is None]
    if not entries:
        note_figure(fig, "no policy messages were recorded, so there is no strategy entropy")
    elif missing:
        note_figure(fig, f"no strategy entropy for {', '.join(missing)}: no scored messages of that policy")
    return fig


def crossplay_table(results: dict[str, Any]) -> dict[str, Any]:
    """The cells as a ``{"columns", "rows"}`` table for reports (the CI is over tasks)."""
    rows = []
    for c in results["cells"]:
        ci = c.get("ci95") or [None, None]
        rows.append(
            [
                c["policy"],
                c["simulator"],
                c.get("n"),
                c.get("n_tasks"),
                c.get("mean_reward"),
                ci[0],
                ci[1],
                c.get("success_rate"),
                c.get("infra_failures"),
            ]
        )
    return {
        "columns": [
            "policy",
            "simulator",
            "n",
            "tasks",
            "mean reward",
            "95% CI low",
            "95% CI high",
            "success rate",
            "infra failures",
        ],  # fmt: skip
        "rows": rows,
    }


def write_crossplay_report(results: dict[str, Any], path: str | Path) -> Path:
    """Write the self-contained ``report.html`` of a cross-play run."""
    from collapse_probe.report._html import write_html_report

    sections: list[tuple[str, Any]] = [("Reward matrix", reward_heatmap(results))]
    if results.get("transfer") or results.get("train_simulator"):
        sections.append(("Transfer", transfer_bars(results)))
    if results.get("policy_diversity"):
        sections.append(("Policy strategy entropy", strategy_entropy_bars(results)))
    sections.append(("Cells", crossplay_table(results)))
    infra = sum(c.get("infra_failures", 0) for c in results["cells"])
    subtitle = (
        f"{results['benchmark']}: {len(results['policies'])} policies x {len(results['simulators'])} simulators, "
        f"training simulator {results.get('train_simulator') or 'none'}, {infra} infrastructure failures (excluded)"
    )
    return write_html_report(path, "collapse-probe cross-play", sections, subtitle=subtitle)
