"""The ``report.html`` of a ``play`` run: the reward summary, the reward per task and a few conversations."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collapse_probe.report._html import TICK_FORMAT, note_figure

if TYPE_CHECKING:
    from collapse_probe.core._records import ConversationRecord
    from collapse_probe.results import PlayResults

SHOWN_CONVERSATIONS = 6
"""Conversations printed in full in the report."""


def reward_by_task_figure(records: Sequence[ConversationRecord]) -> Any:
    """Mean reward per task over its scored conversations (hover: n and infrastructure failures)."""
    import plotly.graph_objects as go

    by_task: dict[str, list[ConversationRecord]] = {}
    for r in records:
        by_task.setdefault(r.task_id, []).append(r)
    xs, ys, hover = [], [], []
    for task, rows in by_task.items():
        scored = [r.reward for r in rows if r.reward is not None and not r.infra_error]
        xs.append(task)
        ys.append(sum(scored) / len(scored) if scored else None)
        infra = sum(1 for r in rows if r.infra_error)
        hover.append(f"task {task}<br>scored conversations {len(scored)}<br>infrastructure failures {infra}")
    fig = go.Figure(
        go.Bar(x=xs, y=ys, customdata=hover, hovertemplate="%{customdata}<extra></extra>", marker_color="#4c72b0")
    )
    got = [y for y in ys if y is not None]
    low, high = min([0.0, *got]), max([1.0, *got])  # rewards in [0, 1] keep the axis at 0..1, not plotly's -1..1
    fig.update_layout(
        title="Mean reward per task",
        xaxis_title="task",
        yaxis_title="mean reward",
        xaxis_type="category",
        yaxis_tickformat=TICK_FORMAT,
        yaxis_range=[low - 0.02 * (high - low), high + 0.02 * (high - low)],
        height=360,
    )
    if not any(y is not None for y in ys):
        note_figure(fig, "no scored conversations: every conversation ended in an infrastructure failure")
    return fig


def _conversation_html(record: ConversationRecord) -> str:
    head = f"task {record.task_id} rollout {record.rollout} — {record.status}, reward {record.reward}"
    lines = [f"<p><b>{html.escape(head)}</b></p><pre style='white-space:pre-wrap'>"]
    for m in record.messages:
        who = {"policy": "POLICY", "simulator": "SIMULATOR"}.get(m.role, m.role.upper())
        lines.append(html.escape(f"{who:>9}: {m.content}") + "\n")
    lines.append("</pre>")
    return "".join(lines)


def write_play_report(
    results: PlayResults | Mapping[str, object], records: Sequence[ConversationRecord], path: str | Path
) -> Path:
    """Write the self-contained ``report.html`` of a play run (its typed results or its ``results.json``
    object, parsed through :class:`~collapse_probe.results.PlayResults` first).

    Raises:
        ConfigError: the results do not hold what their model declares (one line naming the field).
    """
    from collapse_probe.report._html import report_results, write_html_report
    from collapse_probe.results import PlayResults

    r = report_results(PlayResults, results, path)
    s = r.summary
    ci = s.ci95 or [None, None]
    summary = {
        "columns": [
            "policy",
            "simulator",
            "benchmark",
            "n scored",
            "mean reward",
            "CI low",
            "CI high",
            "infra failures",
        ],
        "rows": [[r.policy, r.sim, r.benchmark, s.n, s.mean_reward, ci[0], ci[1], s.infra_failures]],
    }
    ordered = sorted(records, key=lambda r: (r.task_id, r.rollout))
    shown = "".join(_conversation_html(r) for r in ordered[:SHOWN_CONVERSATIONS]) or "<p>no conversations</p>"
    sections: list[tuple[str, Any]] = [
        ("Summary", summary),
        ("Reward per task", reward_by_task_figure(records)),
        (f"Conversations (first {min(len(ordered), SHOWN_CONVERSATIONS)} of {len(ordered)})", shown),
    ]
    mean = s.mean_reward
    subtitle = (
        f"mean reward {mean:.3f} over {s.n} scored conversations" if mean is not None else "no scored conversations"
    )
    return write_html_report(path, "collapse-probe play", sections, subtitle=subtitle)
