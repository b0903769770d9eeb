"""Report pages of the collapse lab: one run, a many-seed comparison, a parameter sweep.

Every number of a comparison or sweep is a mean over seeds with its 95% interval (Student t over
seeds); the figures draw the intervals as error bars or bands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collapse_probe.report._layout import Table
    from collapse_probe.results import LabCompareResults, LabRunResults, LabSweepResults

PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#7f7f7f",
    "#bcbd22",
)


def fmt_stat(stat: Mapping[str, Any] | None, digits: int = 3) -> str:
    """``mean ± half-width`` of a ``{mean, ci95, n_seeds}`` entry ("n/a" when missing)."""
    if not stat or stat.get("mean") is None:
        return "n/a"
    ci = stat.get("ci95")
    if not ci:
        return f"{stat['mean']:.{digits}f}"
    return f"{stat['mean']:.{digits}f} ± {(ci[1] - ci[0]) / 2:.{digits}f}"


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _err(stat: Mapping[str, Any]) -> tuple[float | None, float, float]:
    mean = stat.get("mean")
    ci = stat.get("ci95") or [mean, mean]
    if mean is None:
        return None, 0.0, 0.0
    return mean, ci[1] - mean, mean - ci[0]


# ---------------------------------------------------------------- one run


def run_figure(result: Mapping[str, Any]) -> Any:
    """Rewards, policy entropy, collapse error and the Theorem 3.2 bounds of one run."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=2,
        cols=2,
        subplot_titles=(
            "Reward (exact)",
            "Policy entropy (nats)",
            "Collapse error of the training simulator",
            "Theorem 3.2: TV(P_phi, P_mode) vs eps_bar_H",
        ),
    )
    x = result["steps"]
    fig.add_trace(go.Scatter(x=x, y=result["train_reward"], name="train reward"), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=result["heldout_reward"], name="held-out reward (real users)"), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=result["heldout_sim_reward"], name="held-out families"), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=result["policy_entropy"], name="policy entropy"), row=1, col=2)
    fig.add_trace(go.Scatter(x=x, y=result["collapse_error"], name="collapse error E[eps]"), row=2, col=1)
    fig.add_trace(go.Scatter(x=x, y=result["tv"], name="TV exact"), row=2, col=2)
    fig.add_trace(go.Scatter(x=x, y=result["tv_sampled"], name="TV sampled", mode="markers"), row=2, col=2)
    fig.add_trace(go.Scatter(x=x, y=result["tv_bound"], name="bound eps_bar_H", line={"dash": "dash"}), row=2, col=2)
    for r in (1, 2):
        for c in (1, 2):
            fig.update_xaxes(title_text="step", row=r, col=c)
    fig.update_layout(height=800)
    return fig


def write_run_report(result: LabRunResults | Mapping[str, object], path: str | Path) -> Path:
    """Self-contained ``report.html`` of one lab run (its typed results or its ``results.json`` object,
    parsed through :class:`~collapse_probe.results.LabRunResults` first; the figure draws the validated JSON).

    Raises:
        ConfigError: the results do not hold what their model declares (one line naming the field).
    """
    from collapse_probe.report._html import report_results, write_html_report
    from collapse_probe.results import LabRunResults

    r = report_results(LabRunResults, result, path)
    s = r.summary
    checks = r.bound_checks
    tv = r.tv_sampled_check
    fit = r.corollary_3_5
    rows = [
        ["train reward start → end", f"{s['train_reward_start']:.3f} → {s['train_reward_end']:.3f}"],
        [
            "held-out reward, real users: start → peak (step) → end",
            f"{s['heldout_reward_start']:.3f} → {s['heldout_reward_peak']:.3f} ({s['heldout_reward_peak_step']}) → "
            f"{s['heldout_reward_end']:.3f}",
        ],
        ["held-out reward, held-out families: end", f"{s['heldout_sim_reward_end']:.3f}"],
        ["policy entropy end / start", f"{s['entropy_ratio']:.3f}"],
        ["TV ≤ eps_bar_H at every logged step (exact)", str(checks["tv_bound_holds"])],
        [
            "TV ≤ eps_bar_H against the sampled TV",
            f"{checks['tv_sampled_bound_holds']}: sampled {tv['estimate']:.4f} "
            f"[{tv['ci95'][0]:.4f}, {tv['ci95'][1]:.4f}] (n={tv['n']}) vs mean bound {tv['bound']:.4f}",
        ],
        [
            "gradient gap ≤ 2 B R_max eps_bar_H; tightness max (gap / bound)",
            f"{checks['grad_bound_holds']}; {s['max_grad_gap_over_bound']:.4f}",
        ],
        [
            "Corollary 3.5: exploit log-odds slope, R² (middle phase)",
            "no middle phase"
            if fit["slope"] is None
            else f"{fit['slope']:.4f} per step, R² = {fit['r2']:.3f} ({fit['n_points']} points)",
        ],
    ]
    cfg = r.config
    subtitle = (
        f"method={r.method}, seed={cfg['seed']}, steps={cfg['steps']}, sim temperature={cfg['sim_temperature']}, "
        f"VS error={cfg['vs_error']}, delta={cfg['delta']}"
    )
    sections: list[tuple[str, Any]] = [
        ("Summary", {"columns": ["quantity", "value"], "rows": rows}),
        ("Curves", run_figure(r.to_json())),
    ]
    return write_html_report(path, "collapse-probe lab run", sections, subtitle=subtitle)


# ---------------------------------------------------------------- comparison


def compare_table(payload: Mapping[str, Any]) -> Table:
    """Headline table: one row per method, every cell ``mean ± 95% half-width`` over seeds; the seeds of
    each method where they are not all the run's ``n_seeds`` (said in the subtitle)."""
    columns = [
        "method",
        "train final",
        "train peak",
        "held-out real users: final",
        "real users: peak",
        "held-out families: final",
        "families: peak",
        "real users: final − single (paired)",
        "families: final − single (paired)",
        "entropy end / start",
        "seeds",
    ]
    rows = [
        [
            m["label"],
            fmt_stat(m["train_final"]),
            fmt_stat(m["train_peak"]),
            fmt_stat(m["heldout_final"]),
            fmt_stat(m["heldout_peak"]),
            fmt_stat(m["heldout_sim_final"]),
            fmt_stat(m["heldout_sim_peak"]),
            fmt_stat(m.get("heldout_final_vs_single")),
            fmt_stat(m.get("heldout_sim_final_vs_single")),
            fmt_stat(m["entropy_ratio"]),
            m["heldout_final"]["n_seeds"],
        ]
        for m in payload["methods"]
    ]
    if len({r[-1] for r in rows}) == 1 and rows[0][-1] == payload.get("n_seeds"):
        # every method over the seeds the subtitle names: the column repeats it and pushes the table past the page
        columns, rows = columns[:-1], [r[:-1] for r in rows]
    return {"columns": columns, "rows": rows}


def bounds_table(payload: Mapping[str, Any]) -> Table:
    """Theorem 3.2 and Corollary 3.5 per method."""
    columns = [
        "method",
        "TV ≤ bound, exact (all seeds)",
        "TV ≤ bound vs sampled TV (seeds passing)",
        "exact TV / bound, max",
        "gradient bound holds (all seeds)",
        "gradient tightness gap/bound, max",
        "Cor. 3.5 slope",
        "Cor. 3.5 R²",
        "seeds with a middle phase",
    ]
    rows = []
    for m in payload["methods"]:
        b, c = m["bounds"], m["corollary_3_5"]
        rows.append(
            [
                m["label"],
                str(b["tv_exact_holds_all"]),
                f"{b['tv_sampled_holds']}/{b['tv_sampled_n_seeds']}",
                fmt_stat(b["tv_exact_over_bound_max"]),
                str(b["grad_holds_all"]),
                fmt_stat(b["grad_tightness_max"], 4),
                fmt_stat(c["slope"], 4),
                fmt_stat(c["r2"]),
                c["n_seeds_with_phase"],
            ]
        )
    return {"columns": columns, "rows": rows}


def final_bars_figure(payload: Mapping[str, Any]) -> Any:
    """Final reward per method on the training simulator, the held-out families and real users (95% CI)."""
    import plotly.graph_objects as go

    labels = [m["label"] for m in payload["methods"]]
    fig = go.Figure()
    for key, name, colour in (
        ("train_final", "training simulator", PALETTE[7]),
        ("heldout_sim_final", "held-out families", PALETTE[0]),
        ("heldout_final", "real users", PALETTE[1]),
    ):
        means, plus, minus = zip(*(_err(m[key]) for m in payload["methods"]), strict=True)
        fig.add_trace(
            go.Bar(
                x=labels,
                y=means,
                name=name,
                marker_color=colour,
                error_y={"type": "data", "array": plus, "arrayminus": minus, "visible": True},
            )
        )
    lo = min(v for m in payload["methods"] for k in ("train_final", "heldout_final") if (v := m[k]["mean"]) is not None)
    fig.update_layout(
        barmode="group",
        yaxis_title="expected reward (exact), mean over seeds",
        yaxis_range=[max(0.0, lo - 0.15), 1.0],
        height=450,
    )
    return fig


def curves_figure(payload: Mapping[str, Any], key: str, title: str) -> Any:
    """Seed-mean curve of ``key`` per method with its 95% band."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, m in enumerate(payload["methods"]):
        colour = PALETTE[i % len(PALETTE)]
        steps = [r["step"] for r in m["curve"]]
        mean = [r[key] for r in m["curve"]]
        ci = [r.get(f"{key}_ci95") or [r[key], r[key]] for r in m["curve"]]
        fig.add_trace(
            go.Scatter(
                x=steps + steps[::-1],
                y=[c[1] for c in ci] + [c[0] for c in ci][::-1],
                fill="toself",
                fillcolor=_rgba(colour, 0.15),
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=m["label"],
            )
        )
        fig.add_trace(go.Scatter(x=steps, y=mean, name=m["label"], line={"color": colour}, legendgroup=m["label"]))
    fig.update_layout(xaxis_title="step", yaxis_title=title, height=450)
    return fig


def write_compare_report(payload: LabCompareResults | Mapping[str, object], path: str | Path) -> Path:
    """Self-contained ``compare.html``: tables and figures with 95% intervals over seeds (the comparison,
    typed or its ``compare.json`` object, is parsed through :class:`~collapse_probe.results.LabCompareResults`
    first; the tables and figures draw the validated JSON).

    Raises:
        ConfigError: the comparison does not hold what its model declares (one line naming the field).
    """
    from collapse_probe.report._html import report_results, write_html_report
    from collapse_probe.results import LabCompareResults

    r = report_results(LabCompareResults, payload, path, "compare.json")
    data = r.to_json()
    cfg = r.config
    intro = (
        "<p>Every number is a mean over seeds with a 95% Student-t interval (± half-width). Every method "
        "trains in the same worlds (one per seed), so its difference to <i>single</i> is also given seed by seed "
        "(paired), which removes the world-to-world spread. "
        "<b>Real users</b> are the people the simulators were built from; <b>held-out families</b> are the "
        f"aligned simulators of families {r.heldout_families}, which no method trains on. "
        f"Reward table: <code>{r.reward_family}</code>.</p>"
    )
    sections: list[tuple[str, Any]] = [
        ("About", intro),
        ("Final and peak rewards", compare_table(data)),
        ("Final reward by method", final_bars_figure(data)),
        (
            "Held-out reward on real users over training",
            curves_figure(data, "heldout_reward", "reward on real users"),
        ),
        (
            "Held-out reward on held-out families over training",
            curves_figure(data, "heldout_sim_reward", "reward on held-out families"),
        ),
        ("Training reward over training", curves_figure(data, "train_reward", "reward on the training simulator")),
        ("Policy entropy over training", curves_figure(data, "policy_entropy", "policy entropy (nats)")),
        ("Theorem 3.2 and Corollary 3.5", bounds_table(data)),
    ]
    subtitle = (
        f"{r.n_seeds} seeds, {r.steps} steps; sim temperature {cfg['sim_temperature']}, "
        f"VS error {cfg['vs_error']}, family noise delta {cfg['delta']}"
    )
    return write_html_report(path, "collapse-probe lab: methods compared", sections, subtitle=subtitle)


# ---------------------------------------------------------------- sweep


def sweep_figure(payload: Mapping[str, Any], key: str, title: str) -> Any:
    """``key`` (a ``{mean, ci95}`` per point) of every method over the swept parameter, with 95% error bars."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, m in enumerate(payload["methods"]):
        xs = [p["value"] for p in m["points"]]
        means, plus, minus = zip(*(_err(p.get(key) or {}) for p in m["points"]), strict=True)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=means,
                name=m["label"],
                mode="lines+markers",
                line={"color": PALETTE[i % len(PALETTE)]},
                error_y={"type": "data", "array": plus, "arrayminus": minus, "visible": True},
            )
        )
    fig.update_layout(xaxis_title=payload["param"], yaxis_title=title, height=450)
    return fig


def sweep_table(payload: Mapping[str, Any], key: str) -> Table:
    values: Sequence[Any] = payload["values"]
    columns = ["method", *[f"{payload['param']}={v}" for v in values]]
    rows = [[m["label"], *[fmt_stat(p.get(key)) for p in m["points"]]] for m in payload["methods"]]
    return {"columns": columns, "rows": rows}


def write_sweep_report(payload: LabSweepResults | Mapping[str, object], path: str | Path) -> Path:
    """Self-contained ``sweep.html``: each method's held-out reward over the grid, 95% intervals (the sweep,
    typed or its ``sweep.json`` object, is parsed through :class:`~collapse_probe.results.LabSweepResults`
    first; the tables and figures draw the validated JSON).

    Raises:
        ConfigError: the sweep does not hold what its model declares (one line naming the field).
    """
    from collapse_probe.report._html import report_results, write_html_report
    from collapse_probe.results import LabSweepResults

    r = report_results(LabSweepResults, payload, path, "sweep.json")
    data = r.to_json()

    sections: list[tuple[str, Any]] = [
        ("Held-out reward on real users", sweep_figure(data, "heldout_final", "final reward on real users")),
        ("Real users (mean ± 95% half-width)", sweep_table(data, "heldout_final")),
        (
            "Real users: difference to single in the same worlds",
            sweep_figure(data, "heldout_final_vs_single", "final reward on real users − single (paired)"),
        ),
        ("Real users − single (paired; mean ± 95% half-width)", sweep_table(data, "heldout_final_vs_single")),
        (
            "Held-out reward on held-out families",
            sweep_figure(data, "heldout_sim_final", "final reward on held-out families"),
        ),
        ("Held-out families (mean ± 95% half-width)", sweep_table(data, "heldout_sim_final")),
        ("Training reward", sweep_figure(data, "train_final", "final reward on the training simulator")),
    ]
    subtitle = f"sweep of {r.param} over {r.values}, {r.n_seeds} seeds each"
    return write_html_report(path, "collapse-probe lab: parameter sweep", sections, subtitle=subtitle)
