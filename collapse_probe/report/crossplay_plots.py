"""Figures of a cross-play run (plotly), shared by ``report.html`` and the dashboard.

Every function takes the ``results.json`` dictionary of :mod:`collapse_probe.crossplay` and returns a
``plotly.graph_objects.Figure``; plotly is imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from collapse_probe.report._html import TICK_FORMAT
from collapse_probe.report._layout import LABEL_CHARS, Table, rows_height, short_labels, titled

if TYPE_CHECKING:
    from collapse_probe.results import CrossplayResults
    from collapse_probe.results._crossplay import CellJSON, CrossplayJSON, TransferJSON

MAX_CI_COLUMNS = 10
"""Above this many simulators a cell is too narrow for its interval; the hover still has it."""


def _fmt(x: float | None, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def cell_text(mean: float | None, ci: Any) -> str:
    """A cell's mean reward with its 95 % CI, as the terminal, the report and the dashboard print it."""
    if mean is None:
        return "n/a"
    return f"{mean:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def transfer_text(t: Any) -> str:
    """A policy's transfer ratio with its 95 % CI (or why it is undefined), as every surface prints it."""
    get = t.get if isinstance(t, Mapping) else lambda k: getattr(t, k, None)
    ratio, ci, lower = get("transfer_ratio"), get("ci95"), get("ci95_lower")
    if ratio is None:
        return f"undefined ({get('note')})"
    if ci:
        return f"{ratio:.3f} (95% CI {ci[0]:.3f}-{ci[1]:.3f})"
    if lower is not None:
        return f"{ratio:.3f} (95% CI {lower:.3f}-unbounded: {get('note')})"
    return f"{ratio:.3f}"


def transfer_table(results: CrossplayJSON) -> Table | None:
    """The transfer ratios as a table (the figures of :func:`transfer_text`)."""
    entries = results.get("transfer") or []
    if not entries:
        return None
    rows = [[t.get("policy"), transfer_text(t), _fmt(t.get("heldout_reward")), _fmt(t.get("train_reward"))]
            for t in entries]  # fmt: skip
    return {"columns": ["policy", "transfer ratio (95% CI)", "held-out reward", "training reward"], "rows": rows}


def as_json(results: CrossplayResults | CrossplayJSON) -> CrossplayJSON:
    """The ``results.json`` object of a cross-play's typed results (a JSON object is returned as it is)."""
    return results if isinstance(results, dict) else cast("CrossplayJSON", results.to_json())


def matrix_labels(results: CrossplayResults | CrossplayJSON) -> tuple[list[str], list[str]]:
    """Short unique axis labels of the policies and simulators (full specs in the hover and in
    :func:`labels_table`); the training simulator's label ends with ``(train)``."""
    results = as_json(results)
    train = results.get("train_simulator")
    policies = short_labels(results.get("policies") or [])
    names = results.get("simulators") or []
    sims = short_labels(names, LABEL_CHARS - len(" (train)"))
    sims = [f"{lab} (train)" if s == train else lab for lab, s in zip(sims, names, strict=True)]
    return policies, sims


def labels_table(results: CrossplayResults | CrossplayJSON) -> Table | None:
    """The full spec behind each shortened label of the matrix figures (``None``: no label was shortened)."""
    results = as_json(results)
    policies, sims = matrix_labels(results)
    rows = []
    for what, labels, names in (("policy", policies, results["policies"]), ("simulator", sims, results["simulators"])):
        rows += [
            [lab, what, name] for lab, name in zip(labels, names, strict=True) if lab.removesuffix(" (train)") != name
        ]
    return {"columns": ["label", "role", "spec"], "rows": rows} if rows else None


def reward_heatmap(results: CrossplayJSON) -> Any:
    """Policy x simulator mean reward with each cell's 95 % CI over tasks written under its mean (the
    transfer matrix with intervals); hovering a cell shows the full specs, the interval's method, n and
    infra failures.

    The training simulator's column is marked with a ``(train)`` suffix. Cells with no scored
    conversation are blank. Labels are short (:func:`matrix_labels`); the figure grows with the
    number of policies, and the intervals are left out of the cells when more than
    :data:`MAX_CI_COLUMNS` columns leave no room for them (they stay in the hover).
    """
    import plotly.graph_objects as go

    policies, sims = results["policies"], results["simulators"]
    cells = {(c["policy"], c["simulator"]): c for c in results["cells"]}
    with_ci = len(sims) <= MAX_CI_COLUMNS
    z, text, hover = [], [], []
    for p in policies:
        zr, tr, hr = [], [], []
        for s in sims:
            c: CellJSON = cells.get((p, s)) or {"policy": p, "simulator": s}
            m = c.get("mean_reward")
            ci: Sequence[float | None] = c.get("ci95") or [None, None]
            zr.append(m)
            cell = _fmt(m, 2) if m is not None else "no data"
            if with_ci and m is not None and c.get("ci95"):
                cell += f"<br>[{_fmt(ci[0], 2)}, {_fmt(ci[1], 2)}]"
            tr.append(cell)
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
    ylabels, xlabels = matrix_labels(results)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=xlabels,
            y=ylabels,
            text=text,
            texttemplate="%{text}",
            textfont={"size": 11},
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            colorscale="Viridis",
            zmin=0,
            zmax=1,
            xgap=1,
            ygap=1,
            colorbar={"title": {"text": "mean reward", "side": "right"}, "thickness": 14},
        )
    )
    fig.update_xaxes(title_text="simulator", autotickangles=[0, 90], automargin=True,
                     type="category")  # fmt: skip
    fig.update_yaxes(title_text="policy", autorange="reversed", automargin=True, type="category")
    titled(fig, "Cross-play matrix: mean reward" + (" [95% CI]" if with_ci else " (95% CI in the hover)"), top=10)
    fig.update_layout(height=rows_height(len(policies), per_row=48 if with_ci else 30, fixed=260))
    return fig


def transfer_bars(results: CrossplayJSON) -> Any:
    """Transfer ratio per policy with its 95 % CI (error bars); a dashed line at 1 (no loss)."""
    import plotly.graph_objects as go

    entries = results.get("transfer") or []
    xs = _policy_labels(results, [t["policy"] for t in entries])
    ys = [t.get("transfer_ratio") for t in entries]
    plus = [_above(t) for t in entries]
    minus = [_below(t) for t in entries]
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
    fig.update_layout(xaxis_title="policy", yaxis_title="transfer ratio", yaxis_tickformat=TICK_FORMAT, height=400,
                      xaxis={"type": "category", "automargin": True, "autotickangles": [0, 90]}, yaxis_rangemode="tozero")  # fmt: skip
    undefined = [(x, t) for x, t in zip(xs, entries, strict=True) if t.get("transfer_ratio") is None]
    note = None
    if not entries:
        note = "no transfer ratio: the run names no training simulator (--train-sim)"
    elif undefined:
        note = "undefined transfer ratio — " + "; ".join(f"{x}: {t.get('note') or 'undefined'}" for x, t in undefined)
    train = results.get("train_simulator")
    sims = dict(zip(results.get("simulators") or [], matrix_labels(results)[1], strict=True))
    name = (sims.get(train, train) if train is not None else str(train)).removesuffix(" (train)")
    return titled(fig, f"Transfer ratio (held-out / {name} reward)", note)


def _lower(t: TransferJSON) -> float | None:
    """The lower end of a transfer ratio's CI, also when the interval has no upper end."""
    ci = t.get("ci95")
    return ci[0] if ci else t.get("ci95_lower")


def _above(t: TransferJSON) -> float:
    """How far the CI reaches above the transfer ratio (its error bar; 0 without an upper end)."""
    ratio, ci = t.get("transfer_ratio"), t.get("ci95")
    return (ci[1] - ratio) if ci and ratio is not None else 0


def _below(t: TransferJSON) -> float:
    """How far the CI reaches below the transfer ratio (its error bar; 0 without a lower end)."""
    ratio, lower = t.get("transfer_ratio"), _lower(t)
    return (ratio - lower) if lower is not None and ratio is not None else 0


def strategy_entropy_bars(results: CrossplayJSON) -> Any:
    """Strategy entropy (nats) of each policy's own messages: low entropy is policy-diversity collapse."""
    import plotly.graph_objects as go

    entries = results.get("policy_diversity") or []
    fig = go.Figure(
        go.Bar(
            x=_policy_labels(results, [e["policy"] for e in entries]),
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
    fig.update_layout(xaxis_title="policy", yaxis_title="entropy (nats)", yaxis_tickformat=TICK_FORMAT, height=380,
                      xaxis={"type": "category", "automargin": True, "autotickangles": [0, 90]}, yaxis_rangemode="tozero")  # fmt: skip
    missing = _policy_labels(results, [e["policy"] for e in entries if e.get("strategy_entropy") is None])
    note = None
    if not entries:
        note = "no policy messages were recorded, so there is no strategy entropy"
    elif missing:
        note = f"no strategy entropy for {', '.join(missing)}: no scored messages of that policy"
    return titled(fig, "Policy strategy entropy", note)


def _policy_labels(results: CrossplayJSON, policies: list[str]) -> list[str]:
    """The matrix's short label of each policy in ``policies``."""
    short = dict(zip(results.get("policies") or [], matrix_labels(results)[0], strict=True))
    return [short.get(p) or short_labels([p])[0] for p in policies]


def train_heldout_figure(results: CrossplayJSON) -> Any:
    """Each policy's reward on the training simulator beside its reward on every held-out simulator,
    each cell with its 95 % CI, and the held-out mean the transfer ratio divides by the training reward."""
    import plotly.graph_objects as go

    train = results.get("train_simulator")
    cells = {(c["policy"], c["simulator"]): c for c in results["cells"]}
    policies = list(results["policies"])
    labels = _policy_labels(results, policies)
    heldout = [s for s in results["simulators"] if s != train]
    fig = go.Figure()

    def cell_trace(sims: list[str], name: str, colour: str, size: int) -> None:
        xs, ys, plus, minus, hover = [], [], [], [], []
        for lab, p in zip(labels, policies, strict=True):
            for s in sims:
                c: CellJSON = cells.get((p, s)) or {"policy": p, "simulator": s}
                m = c.get("mean_reward")
                if m is None:
                    continue
                ci = c.get("ci95") or [m, m]
                xs.append(lab)
                ys.append(m)
                plus.append(max(ci[1] - m, 0) if ci[1] is not None else 0)
                minus.append(max(m - ci[0], 0) if ci[0] is not None else 0)
                hover.append(f"policy {p}<br>simulator {s}<br>mean reward {_fmt(m)} [{_fmt(ci[0])}, {_fmt(ci[1])}]")
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=name, marker={"color": colour, "size": size},
                                 error_y={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus,
                                          "thickness": 1},
                                 customdata=hover, hovertemplate="%{customdata}<extra></extra>", offsetgroup=name))  # fmt: skip

    if train:
        cell_trace([train], "training simulator (95% CI)", "#d62728", 11)
    cell_trace(heldout, "each held-out simulator (95% CI)", "#7f7f7f", 7)
    means = results.get("heldout_reward") or {}
    if isinstance(means, dict) and means:
        fig.add_trace(go.Scatter(x=labels, y=[means.get(p) for p in policies], mode="markers", name="held-out mean",
                                 marker={"color": "#1f77b4", "size": 13, "symbol": "diamond"}, offsetgroup="mean",
                                 hovertemplate="held-out mean %{y:.3f}<extra></extra>"))  # fmt: skip
    fig.update_layout(scattermode="group", yaxis_title="mean reward", yaxis_range=[-0.02, 1.02], height=420,
                      xaxis={"type": "category", "automargin": True, "title": {"text": "policy"}})  # fmt: skip
    note = None if train else "no training simulator (--train-sim): every simulator is held out"
    return titled(fig, "Reward on the training simulator vs the held-out simulators", note)


def crossplay_table(results: CrossplayResults | CrossplayJSON) -> Table:
    """The cells as a ``{"columns", "rows"}`` table for reports (the CI is over tasks)."""
    from collapse_probe.results import CrossplayResults

    rows = []
    for c in CrossplayResults.typed(results).cells:
        rate = None if c.success_rate is None else f"{c.success_rate:.3f}"
        rows.append([c.policy, c.simulator, c.n, c.n_tasks, cell_text(c.mean_reward, c.ci95), rate, c.infra_failures])
    return {
        "columns": [
            "policy",
            "simulator",
            "n",
            "tasks",
            "mean reward [95% CI]",
            "success rate",
            "infra failures",
        ],  # fmt: skip
        "rows": rows,
    }


def write_crossplay_report(results: CrossplayResults | CrossplayJSON, path: str | Path) -> Path:
    """Write the self-contained ``report.html`` of a cross-play run (its typed results or its
    ``results.json`` object, parsed through :class:`~collapse_probe.results.CrossplayResults` first;
    the figures draw the validated JSON).

    Raises:
        ConfigError: the results do not hold what their model declares (one line naming the field).
    """
    from collapse_probe.report._html import report_results, write_html_report
    from collapse_probe.results import CrossplayResults

    r = report_results(CrossplayResults, results, path)
    data = as_json(r)
    sections: list[tuple[str, Any]] = [("Reward matrix", reward_heatmap(data))]
    labels = labels_table(data)
    if labels:
        sections.append(("Labels", labels))
    if r.transfer or r.train_simulator:
        sections.append(("Training vs held-out simulators", train_heldout_figure(data)))
        sections.append(("Transfer", transfer_bars(data)))
        table = transfer_table(data)
        if table:
            sections.append(("Transfer ratios", table))
    if r.policy_diversity:
        sections.append(("Policy strategy entropy", strategy_entropy_bars(data)))
    sections.append(("Cells", crossplay_table(r)))
    infra = sum(c.infra_failures for c in r.cells)
    subtitle = (
        f"{r.benchmark}: {len(r.policies)} policies x {len(r.simulators)} simulators, "
        f"training simulator {r.train_simulator or 'none'}, {infra} infrastructure failures (excluded)"
    )
    return write_html_report(path, "collapse-probe cross-play", sections, subtitle=subtitle)
