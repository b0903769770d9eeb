"""Figures of training runs over steps, several runs overlaid (e.g. Single vs Population Co-Training).

Shared by the trainers' HTML reports and the dashboard's Training view. Every function takes
``curves``: a mapping ``{run label: per-step records}``, each record ``{"step": int, key: float, ...}``
as :func:`collapse_probe.report.runs.training_curve` returns them (the lines of ``metrics.jsonl``).
A key missing from a record (``heldout_reward`` between evaluations) is simply not plotted there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collapse_probe.report._html import Sentence
    from collapse_probe.results import TrainResults

__all__ = [
    "Curves",
    "mark_alarms",
    "metric_over_steps_figure",
    "policy_entropy_figure",
    "progress_axis",
    "progress_curves",
    "reward_curves_figure",
    "sim_collapse_error_figure",
    "training_figures",
    "zero_std_share_figure",
]

Curves = Mapping[str, Sequence[Mapping[str, object]]]
"""``{run label: [{"step": ..., "train_reward": ..., ...}, ...]}``."""
Alarms = Sequence[Mapping[str, object]]
"""Collapse-monitor alarms ``[{"step": int, "kind": str, "message": str}, ...]`` (``monitor.jsonl``'s
``alarms`` of each step; :func:`collapse_probe.report.runs.monitor_alarms` reads them)."""

_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f")


def _series(records: Sequence[Mapping[str, object]], key: str) -> tuple[list[Any], list[float]]:
    xs, ys = [], []
    for r in records:
        v = r.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and v == v:  # v == v drops NaN
            xs.append(r.get("step"))
            ys.append(float(v))
    return xs, ys


def _with_alias(curves: Curves, key: str, alias: str) -> dict[str, list[Mapping[str, object]]]:
    """Copy ``alias`` into ``key`` in records that lack ``key`` (train and lab runs name a few quantities differently)."""
    return {
        label: [{**r, key: r[alias]} if key not in r and alias in r else r for r in records]
        for label, records in curves.items()
    }


def _layout(fig: Any, title: str, ytitle: str, yrange: Sequence[float] | None = None, steps: Sequence[Any] = ()) -> Any:
    from collapse_probe.report._html import TICK_FORMAT, step_axis

    step_axis(fig, steps)
    fig.update_yaxes(tickformat=TICK_FORMAT)
    fig.update_layout(
        title=title,
        xaxis_title="training step",
        yaxis_title=ytitle,
        template="plotly_white",
        # the legend at the right: below the plot its rows would run into the step axis as runs are added
        legend={"x": 1.02, "xanchor": "left", "y": 1, "yanchor": "top", "tracegroupgap": 2},
        margin={"l": 60, "r": 20, "b": 40},
        height=max(380, 160 + 24 * len(fig.data)),  # every legend entry fits beside the plot
    )
    if yrange is not None:  # a little room at both ends: the y tick at 0 then clears the x tick at step 0
        pad = 0.02 * (yrange[1] - yrange[0])
        fig.update_yaxes(range=[yrange[0] - pad, yrange[1] + pad])
    return fig


def mark_alarms(fig: Any, alarms: Alarms, y: float) -> Any:
    """Mark each alarm's step: a dotted red line across the plot and an ``×`` at height ``y`` whose
    hover says what the monitor saw (one marker per step, its alarms joined)."""
    import plotly.graph_objects as go

    by_step: dict[float, list[str]] = {}
    for a in alarms:
        step = a.get("step")
        if isinstance(step, int | float) and not isinstance(step, bool):
            run = f"{a['run']}: " if a.get("run") else ""
            at = a.get("at_step", step)  # the training step, where the axis shows progress
            text = f"step {at}: {run}{a.get('kind') or 'alarm'}: {a.get('message') or ''}"
            by_step.setdefault(step, []).append(text)
    if not by_step:
        return fig
    for step in by_step:
        fig.add_vline(x=step, line_dash="dot", line_color="#d62728", opacity=0.5)
    import html

    fig.add_trace(go.Scatter(x=list(by_step), y=[y] * len(by_step), mode="markers", name="monitor alarm",
                             marker={"symbol": "x", "size": 11, "color": "#d62728"},
                             customdata=["<br>".join(html.escape(m[:220]) for m in ms) for ms in by_step.values()],
                             hovertemplate="%{customdata}<extra>alarm</extra>"))  # fmt: skip
    return fig


def metric_over_steps_figure(
    curves: Curves,
    keys: Mapping[str, str],
    title: str,
    ytitle: str,
    yrange: Sequence[float] | None = None,
    alarms: Alarms = (),
) -> Any:
    """One line per (run, key): runs by colour, keys by dash style; a single run's keys each in a
    colour of their own (four series of one run in one colour read as one).

    Args:
        curves: ``{run label: per-step records}``.
        keys: ``{record key: legend suffix}``, e.g. ``{"train_reward": "train", "heldout_reward": "held-out"}``.
        title: figure title.
        ytitle: y-axis title.
        yrange: fixed y range, or ``None`` for automatic.
        alarms: collapse-monitor alarms, marked at their steps (:func:`mark_alarms`).

    Returns:
        a ``plotly.graph_objects.Figure`` (with an annotation when no run has the keys).
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    dashes = ("solid", "dash", "dot", "dashdot")
    plotted = 0
    steps: list[Any] = []
    top: list[float] = []
    by_key = len(curves) == 1 and len(keys) > 1
    for ri, (label, records) in enumerate(curves.items()):
        for ki, (key, suffix) in enumerate(keys.items()):
            colour = _PALETTE[(ki if by_key else ri) % len(_PALETTE)]
            xs, ys = _series(records, key)
            if not xs:
                continue
            steps += xs
            top += ys
            name = f"{label} — {suffix}" if len(keys) > 1 else label
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    name=name,
                    mode="lines+markers" if len(xs) <= 30 else "lines",
                    line={"color": colour, "dash": dashes[ki % len(dashes)]},
                    marker={"color": colour},
                    legendgroup=label,
                )
            )
            plotted += 1
    if not plotted:
        from collapse_probe.report._html import note_figure

        names = " / ".join(keys)
        note_figure(fig, f"no data yet: no step of these runs has recorded {names}")
    if alarms and plotted:
        mark_alarms(fig, alarms, yrange[1] if yrange is not None else max(top))
        steps += [a["step"] for a in alarms if isinstance(a.get("step"), int)]
    return _layout(fig, title, ytitle, yrange, steps)


def reward_curves_figure(curves: Curves, alarms: Alarms = ()) -> Any:
    """Train reward (solid) against held-out reward (dashed) over steps; the gap is the overfit to the simulator."""
    return metric_over_steps_figure(
        curves,
        {"train_reward": "train", "heldout_reward": "held-out"},
        "Train vs held-out reward",
        "mean reward",
        alarms=alarms,
    )


def policy_entropy_figure(curves: Curves, alarms: Alarms = ()) -> Any:
    """Policy (strategy) entropy over steps: a fall is the policy entropy collapse of DESIGN.md."""
    return metric_over_steps_figure(
        curves, {"policy_entropy": "policy entropy"}, "Policy entropy", "entropy (nats)", alarms=alarms
    )


def sim_collapse_error_figure(curves: Curves, alarms: Alarms = ()) -> Any:
    """Simulator collapse error ε over steps (``sim_collapse_error``; lab runs name it ``collapse_error``)."""
    merged = _with_alias(curves, "sim_collapse_error", "collapse_error")
    return metric_over_steps_figure(
        merged,
        {"sim_collapse_error": "simulator ε"},
        "Simulator collapse error ε",
        "ε (0 = collapsed)",
        (0, 1),
        alarms=alarms,
    )


def zero_std_share_figure(curves: Curves) -> Any:
    """Share of rollout groups with zero reward std (no advantage signal) over steps.

    Lab runs name it ``zero_std_fraction``; that key is used when ``zero_std_share`` is absent.
    """
    merged = _with_alias(curves, "zero_std_share", "zero_std_fraction")
    keys = {"zero_std_share": "zero-std groups"}
    causes = {"zero_std_all_success_share": "all success", "zero_std_all_fail_share": "all fail",
              "zero_std_sim_caused_share": "simulator-caused (of zero-std)"}  # fmt: skip
    keys.update({k: v for k, v in causes.items() if any(r.get(k) is not None for rs in merged.values() for r in rs)})
    return metric_over_steps_figure(merged, keys, "Groups with zero reward variance", "share of groups", (0, 1))


PROGRESS_RATIO = 10
"""Overlaid runs whose last steps differ by this factor or more are drawn against the share of each
run's own steps (``x="auto"``): on one step axis a 2-step run is a dot under a 300-step one."""


def last_steps(curves: Curves) -> dict[str, float]:
    """Each run's last recorded step (runs with no numeric step left out)."""
    out: dict[str, float] = {}
    for label, records in curves.items():
        steps = [r.get("step") for r in records]
        nums = [float(s) for s in steps if isinstance(s, int | float) and not isinstance(s, bool)]
        if nums:
            out[label] = max(nums)
    return out


def progress_axis(curves: Curves) -> bool:
    """Whether ``x="auto"`` draws ``curves`` against progress: two or more runs whose last steps differ
    by :data:`PROGRESS_RATIO` or more."""
    ends = [max(v, 1.0) for v in last_steps(curves).values()]
    return len(ends) > 1 and max(ends) >= PROGRESS_RATIO * min(ends)


def progress_curves(
    curves: Curves, alarms: Alarms = ()
) -> tuple[dict[str, list[dict[str, object]]], list[dict[str, object]]]:
    """``curves`` and ``alarms`` with each step replaced by its share of the run's last step (0..1).

    An alarm is scaled by the run it names (``alarm["run"]``), or by the longest run when it names none."""
    ends = last_steps(curves)
    longest = max(ends.values(), default=1.0) or 1.0

    def share(step: Any, end: float) -> Any:
        if isinstance(step, int | float) and not isinstance(step, bool):
            return float(step) / end if end > 0 else 0.0
        return step

    scaled = {
        label: [{**r, "step": share(r.get("step"), ends.get(label, 1.0))} for r in records]
        for label, records in curves.items()
    }
    marks = [
        {**a, "at_step": a.get("step"), "step": share(a.get("step"), ends.get(str(a.get("run")), longest))}
        for a in alarms
    ]
    return scaled, marks


def training_figures(curves: Curves, alarms: Alarms = (), x: str = "auto") -> list[tuple[str, Any]]:
    """The Training view's figures as ``(heading, figure)`` pairs, ready for ``write_html_report``;
    collapse-monitor ``alarms`` are marked on the reward, entropy and ε curves. The zero-variance
    figure is a :class:`~collapse_probe.report._html.Sentence` instead when it has nothing to draw
    (:func:`zero_variance_sentence`).

    ``x``: ``"step"`` (training steps), ``"progress"`` (each run's steps as a share of its own last
    step, so runs of very different length overlay), or ``"auto"``: progress where
    :func:`progress_axis` says the lengths differ too much for one step axis.

    Raises:
        ValueError: ``x`` is none of the three.
    """
    if x not in ("auto", "step", "progress"):
        raise ValueError(f"x must be 'auto', 'step' or 'progress', got {x!r}")
    progress = x == "progress" or (x == "auto" and progress_axis(curves))
    if progress:
        curves, alarms = progress_curves(curves, alarms)
    figures: list[tuple[str, Any]] = [
        ("Train vs held-out reward", reward_curves_figure(curves, alarms)),
        ("Policy entropy", policy_entropy_figure(curves, alarms)),
        ("Simulator collapse error", sim_collapse_error_figure(curves, alarms)),
        ("Zero-variance groups", zero_std_share_figure(curves)),
    ]
    if progress:
        for _, fig in figures:
            fig.update_xaxes(title="share of the run's steps (each run from its first to its last step)",
                             tickmode="auto", dtick=None, tick0=None, tickformat=".0%", range=[-0.02, 1.02])  # fmt: skip
    zero = zero_variance_sentence(curves)
    return [(h, zero if h == "Zero-variance groups" and zero else f) for h, f in figures]


def zero_variance_sentence(curves: Curves) -> Sentence | None:
    """What the zero-variance chart would show when it has nothing to draw, as a sentence: no step
    recorded the share, or no group of any step had zero reward variance (a line along the axis).
    ``None`` when there is a share above 0 to draw."""
    from collapse_probe.report._html import Sentence

    merged = _with_alias(curves, "zero_std_share", "zero_std_fraction")
    shares = [v for rs in merged.values() for v in _series(rs, "zero_std_share")[1]]
    if not shares:
        return Sentence("No step of these runs recorded the share of rollout groups with zero reward variance.")
    if max(shares) == 0:
        runs = f" of {len(merged)} runs" if len(merged) > 1 else ""
        return Sentence(f"No rollout group had zero reward variance in any of the {len(shares)} steps{runs} recorded: "
                        "every group gave the policy an advantage signal.")  # fmt: skip
    return None


def write_train_report(
    results: TrainResults | Mapping[str, object],
    metrics: Sequence[Mapping[str, object]],
    path: str | Path,
    *,
    label: str,
) -> Path:
    """``report.html``: the training figures (reward, entropy, ε, zero-std share) and a summary table.

    The results (typed, or the ``results.json`` object) are parsed through
    :class:`~collapse_probe.results.TrainResults` first; the figures draw the per-step ``metrics``.

    Raises:
        ConfigError: the results do not hold what their model declares (one line naming the field).
    """
    from collapse_probe.report._html import report_results, write_html_report
    from collapse_probe.results import TrainResults

    r = report_results(TrainResults, results, path)
    rows = [
        [k, getattr(r.final, k)]
        for k in ("step", "train_reward", "heldout_reward", "zero_std_share", "policy_entropy", "sim_collapse_error")
    ]
    sections: list[tuple[str, Any]] = [("Final step", {"columns": ["quantity", "value"], "rows": rows})]
    sections += training_figures({label: list(metrics)})
    if r.advantage is not None:
        sections.append(("Advantage convention", r.advantage.convention))
    cfg = r.config
    return write_html_report(
        path,
        f"collapse-probe train: {r.method}",
        sections,
        subtitle=f"policy {cfg['policy']} vs {', '.join(cfg['sims']) or 'itself'} on {cfg['benchmark']}; "
        f"{r.steps} steps, G={cfg['group_size']}, T={cfg['tasks']}",
    )
