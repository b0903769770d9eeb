"""Figures and the ``report.html`` of a monitor run directory (shared with the dashboard's monitor view).

The rows are the monitor's :class:`~collapse_probe.integrations.monitor._core.MonitorRow` as written to
``monitor.jsonl``, possibly read back by the dashboard from a file still being written: each figure
reads what it finds and leaves out what is missing or not a number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from collapse_probe.integrations.monitor._config import MonitorConfig
from collapse_probe.report._layout import Table

Row = Mapping[str, object]
"""One monitor row (``MonitorRow``, or a ``monitor.jsonl`` line read back)."""


def _alarms(row: Row) -> list[Mapping[str, object]]:
    """The row's alarms (``[]`` when it has none, or when ``alarms`` is not a list of objects)."""
    alarms = row.get("alarms")
    return [a for a in alarms if isinstance(a, Mapping)] if isinstance(alarms, list) else []


def _step(row: Row) -> int | None:
    """The row's training step (``None``: the row has none)."""
    step = row.get("step")
    return int(step) if isinstance(step, int | float) and not isinstance(step, bool) else None


def _xy(rows: Sequence[Row], get: Any) -> tuple[list[int], list[float]]:
    xs, ys = [], []
    for r in rows:
        try:
            v = get(r)
        except (KeyError, TypeError, IndexError):
            v = None
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
            step = _step(r)
            if step is not None:
                xs.append(step)
                ys.append(float(v))
    return xs, ys


def collapse_error_figure(rows: Sequence[Row], epsilon_star: float | None = None) -> Any:
    """ε̂ per step in the meaning and reward views with their intervals, ε*, and the collapse alarms."""
    import plotly.graph_objects as go

    from collapse_probe.report._html import TICK_FORMAT, note_figure, step_axis

    fig = go.Figure()
    steps: list[int] = []
    for key, name, colour in (
        ("collapse_error", "meaning view", "#1f77b4"),
        ("reward_collapse_error", "reward view", "#d62728"),
    ):
        xs, ys = _xy(rows, lambda r, k=key: r[k]["estimate"])
        if not xs:
            continue
        steps += xs
        _, lo = _xy(rows, lambda r, k=key: r[k]["ci95"][0])
        _, hi = _xy(rows, lambda r, k=key: r[k]["ci95"][1])
        if len(lo) == len(xs) == len(hi):
            fig.add_trace(go.Scatter(x=xs + xs[::-1], y=hi + lo[::-1], fill="toself", line={"width": 0},
                                     fillcolor=colour, opacity=0.15, name=f"{name} 95% CI", hoverinfo="skip"))  # fmt: skip
        fig.add_trace(go.Scatter(x=xs, y=ys, name=f"ε̂ ({name})", mode="lines+markers", line={"color": colour}))
    alarm_steps = [
        s for r in rows if any(a.get("kind") == "collapse" for a in _alarms(r)) and (s := _step(r)) is not None
    ]
    if alarm_steps:
        fig.add_trace(go.Scatter(x=alarm_steps, y=[0.0] * len(alarm_steps), mode="markers", name="collapse alarm",
                                 marker={"symbol": "x", "size": 12, "color": "black"}))  # fmt: skip
    if epsilon_star is not None:
        fig.add_hline(y=epsilon_star, line_dash="dot", annotation_text=f"ε* = {epsilon_star:g}")
    if not steps:
        note_figure(fig, "no step has shadowed states yet")
    step_axis(fig, steps)
    fig.update_yaxes(tickformat=TICK_FORMAT, range=[0, 1])
    fig.update_layout(title="Simulator collapse error on the visited states", xaxis_title="training step",
                      yaxis_title="collapse error ε", template="plotly_white", height=380,
                      legend={"orientation": "h", "y": -0.2})  # fmt: skip
    return fig


def _lines_figure(rows: Sequence[Row], series: Sequence[tuple[str, Any]], title: str, ytitle: str) -> Any:
    import plotly.graph_objects as go

    from collapse_probe.report._html import TICK_FORMAT, note_figure, step_axis

    fig = go.Figure()
    steps: list[int] = []
    for name, get in series:
        xs, ys = _xy(rows, get)
        if xs:
            steps += xs
            fig.add_trace(go.Scatter(x=xs, y=ys, name=name, mode="lines+markers"))
    if not steps:
        note_figure(fig, "no data yet")
    step_axis(fig, steps)
    fig.update_yaxes(tickformat=TICK_FORMAT)
    fig.update_layout(title=title, xaxis_title="training step", yaxis_title=ytitle, template="plotly_white",
                      height=340, legend={"orientation": "h", "y": -0.25})  # fmt: skip
    return fig


def monitor_figures(rows: Sequence[Row], epsilon_star: float | None = None) -> list[tuple[str, Any]]:
    """The monitor's figures over steps, as ``(heading, figure)`` sections."""
    return [
        ("Collapse error", collapse_error_figure(rows, epsilon_star)),
        (
            "Policy",
            _lines_figure(
                rows,
                [
                    ("strategy entropy (nats)", lambda r: r["strategy_entropy"]["estimate"]),
                    ("train reward", lambda r: r["train_reward"]),
                ],
                "Strategy entropy and train reward",
                "value",
            ),
        ),  # fmt: skip
        (
            "Learning signal",
            _lines_figure(
                rows,
                [
                    ("simulator share of reward variance", lambda r: r["sim_variance_share"]["share"]),
                    ("zero-std group share", lambda r: r["zero_std_share"]),
                ],
                "Simulator-side reward variance (Lemma 3.3) and zero-std groups",
                "share",
            ),
        ),  # fmt: skip
        (
            "Entropy and accumulated error",
            _lines_figure(
                rows,
                [
                    ("response entropy (nats)", lambda r: r["response_entropy"]["estimate"]),
                    ("ε̄_H", lambda r: r["accumulated_collapse_error"]["estimate"]),
                ],
                "Response entropy and accumulated collapse error",
                "value",
            ),
        ),  # fmt: skip
    ]


def alarm_table(rows: Sequence[Row]) -> Table:
    alarms = [a for r in rows for a in _alarms(r)]
    return {
        "columns": ["step", "kind", "message"],
        "rows": [[a.get("step"), a.get("kind"), a.get("message")] for a in alarms],
    }


def write_monitor_report(rows: Sequence[Row], path: str | Path, *, config: MonitorConfig) -> Path:
    """``report.html``: the figures, the alarms and the last step's numbers."""
    from collapse_probe.report._html import write_html_report

    sections: list[tuple[str, Any]] = monitor_figures(rows, config.epsilon_star)
    sections.append(
        ("Alarms", alarm_table(rows) if any(r.get("alarms") for r in rows) else "<p>No alarm was raised.</p>")
    )
    last: Row = rows[-1] if rows else {}
    table = [[k, _brief(last.get(k))] for k in ("step", "collapse_error", "reward_collapse_error", "response_entropy",
                                                "strategy_entropy", "accumulated_collapse_error", "sim_variance_share",
                                                "zero_std_share", "train_reward", "shadow_states", "simulator_turns")]  # fmt: skip
    sections.append(("Last step", {"columns": ["quantity", "value"], "rows": table}))
    subtitle = (f"{len(rows)} steps; shadow-sampled {config.shadow_fraction:g} of simulator turns, N = {config.shadow_samples}"
                f" replies per state; ε* = {config.epsilon_star:g}")  # fmt: skip
    return write_html_report(path, "collapse-probe monitor", sections, subtitle=subtitle)


def _brief(v: object) -> object:
    if isinstance(v, dict):
        est = v.get("estimate", v.get("share"))
        ci = v.get("ci95", v.get("ci"))
        if est is None:
            return "—"
        hi = "no upper bound" if ci and ci[1] is None else f"{ci[1]:.3f}" if ci else ""
        return f"{est:.3f}" + (f" [{ci[0]:.3f}, {hi}]" if ci else "")
    return v
