"""Figures and the ``report.html`` of a ``compare`` run (the dashboard's compare view draws the same figures)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from collapse_probe.report._html import Sentence
from collapse_probe.report._layout import Table
from collapse_probe.results import CompareResults
from collapse_probe.results._compare import SimulatorEffect

Cell = str | int | float | None
"""One cell of a report row: a name, a count, a number or a formatted interval (``None``: not defined)."""
Row = dict[str, Cell]
"""One row of a compare table, column heading -> cell, in column order."""


def effect_rows(r: CompareResults) -> list[Row]:
    """The simulator effects as the terminal, the report and the dashboard show them (points, not shares)."""
    rows: list[Row] = []
    for e in r.simulator_effects:
        rows.append({"agent": e.agent, "simulator": e.simulator, "reference": e.reference,
                     "difference (points)": None if e.difference is None else round(100 * e.difference, 1),
                     "95% CI": None if e.ci95 is None else f"[{100 * e.ci95[0]:+.1f}, {100 * e.ci95[1]:+.1f}]",
                     "shared tasks": e.n_tasks,
                     "reruns differ by": None if e.rerun_difference_ci95 is None else f"±{100 * e.rerun_difference_ci95[1]:.1f}",
                     "left out": ", ".join(f"{n} {k}" for k, n in e.left_out.items())})  # fmt: skip
    return rows


def effects_figure(r: CompareResults) -> Any:
    """The simulator effects with their 95 % intervals, beside the band two reruns would show."""
    import plotly.graph_objects as go

    from collapse_probe.report._layout import rows_height, short_labels, titled

    effects = [e for e in r.simulator_effects if e.difference is not None and e.ci95 is not None]
    if not effects:
        from collapse_probe.report._layout import empty_figure

        return empty_figure("Simulator effect on success", "no agent ran under two simulators on shared tasks")
    names = [f"{e.agent}: {e.simulator} vs {e.reference}" for e in effects]
    labels = short_labels(names, 40)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=[100 * (e.difference or 0.0) for e in effects], y=labels, mode="markers", name="difference (95% CI)",
        error_x={"type": "data", "symmetric": False,
                 "array": [100 * (e.ci95[1] - (e.difference or 0.0)) for e in effects if e.ci95],
                 "arrayminus": [100 * ((e.difference or 0.0) - e.ci95[0]) for e in effects if e.ci95]},
        hovertext=names,
    ))  # fmt: skip
    noisy = [(lab, e.rerun_difference_ci95) for lab, e in zip(labels, effects, strict=True) if e.rerun_difference_ci95]
    if noisy:
        fig.add_trace(go.Scatter(
            x=[0.0] * len(noisy), y=[lab for lab, _ in noisy], mode="markers", name="reruns alone (±)",
            marker={"symbol": "line-ns-open", "color": "gray"},
            error_x={"type": "data", "array": [100 * c[1] for _, c in noisy], "color": "gray", "thickness": 6},
        ))  # fmt: skip
    fig.add_vline(x=0, line_dash="dot", line_color="gray")
    fig.update_layout(height=rows_height(len(effects)), xaxis_title="difference in success rate (points)")
    return titled(fig, "Simulator effect on success (paired by task)",
                  "grey: the range two reruns of one configuration differ by")  # fmt: skip


def noise_rows(r: CompareResults) -> list[Row]:
    """The noise floor per agent and simulator."""
    return [{"agent": n.agent, "simulator": n.simulator, "tasks": n.n_tasks, "with repeats": n.tasks_with_repeats,
             "flip rate": n.flip_rate, "flipping tasks": n.flipping_tasks,
             "pass^k": ", ".join(f"{k}: {v:.3f}" for k, v in n.pass_k.items()),
             "reruns differ by": None if n.rerun_difference_ci95 is None else f"±{100 * n.rerun_difference_ci95[1]:.1f}"}
            for n in r.noise_floor]  # fmt: skip


def rank_rows(r: CompareResults) -> list[Row]:
    """The rank correlation per pair of simulators and the flips."""
    rows: list[Row] = [{"simulators": " vs ".join(c.simulators), "agents": len(c.agents), "tau": c.tau,
                                   "95% CI": None if c.ci95 is None else f"[{c.ci95[0]:.2f}, {c.ci95[1]:.2f}]",
                                   "shared tasks": c.n_tasks} for c in r.rank_correlation]  # fmt: skip
    return rows


def _table(rows: Sequence[Row]) -> Table:
    cols = list(rows[0]) if rows else []
    return {"columns": cols, "rows": [[row[c] for c in cols] for row in rows]}


def write_compare_report(path: str | Path, results: CompareResults | Mapping[str, object]) -> Path:
    """Write the self-contained ``report.html`` of a compare run.

    Raises:
        ConfigError: the results do not hold what their model declares (one line naming the field).
    """
    from collapse_probe.report._html import report_results, write_html_report

    r = report_results(CompareResults, results, path)
    p = r.pairing
    pairing = Sentence(
        f"{p.paired_records} of {p.records} conversations paired into {p.tasks} tasks by task {p.task_key} "
        f"({p.why})" + (f"; left out: {', '.join(f'{n} {k}' for k, n in p.left_out.items())}" if p.left_out else "")
    )
    flips = (
        _table(
            [
                {
                    "agents": " vs ".join(f.agents),
                    "simulators": " vs ".join(f.simulators),
                    "rates": "; ".join(
                        f"{s}: " + ", ".join(f"{a} {v:.3f}" for a, v in d.items()) for s, d in f.rates.items()
                    ),
                    "shared tasks": f.n_tasks,
                }
                for f in r.rank_flips
            ]
        )  # fmt: skip
        if r.rank_flips
        else Sentence("no pair of agents changes order between simulators")
    )
    sections: list[tuple[str, Any]] = [
        ("Pairing", pairing),
        ("Simulator effects", effects_figure(r)),
        ("Simulator effects (table)", _table(effect_rows(r)) if r.simulator_effects else Sentence("none")),
        ("Noise floor (reruns of one configuration)", _table(noise_rows(r))),
        ("Agent ranking across simulators", _table(rank_rows(r)) if r.rank_correlation
         else Sentence("fewer than two agents share two simulators")),
        ("Rank flips", flips),
        ("Inputs", _table([{"path": s.path, "format": s.format, "conversations": s.conversations,
                            "agents": ", ".join(s.agents), "simulators": ", ".join(s.simulators)} for s in r.sources])),
    ]  # fmt: skip
    if r.notes:
        sections.append(("Notes", Sentence("; ".join(r.notes))))
    lines = [effect_line(e) for e in r.simulator_effects]
    return write_html_report(path, "collapse-probe compare", sections, subtitle=lines[0] if lines else "")


def _points(x: float) -> str:
    """A difference in success rate as signed points, one decimal; a difference that rounds to zero reads
    ``+0.0``, never ``-0.0``."""
    return f"{round(100 * x, 1) + 0.0:+.1f}"


def effect_line(row: SimulatorEffect | Mapping[str, object]) -> str:
    """One simulator pair in a line: ``gpt-4.1-mini vs gpt-4.1: +6.2 points [+1.0, +11.4] on 40 shared tasks;
    reruns alone differ by ±4.1`` (``row``: the effect, or its JSON object)."""
    e = SimulatorEffect.typed(row)
    head = f"{e.agent}: {e.simulator} vs {e.reference}"
    if e.difference is None or e.ci95 is None:
        return f"{head}: no shared task"
    lo, hi = e.ci95
    rerun = e.rerun_difference_ci95
    noise = (f"reruns alone differ by ±{100 * rerun[1]:.1f}" if rerun is not None
             else "rerun noise unknown (one trial per task)")  # fmt: skip
    if rerun is not None and rerun[1] == 0:  # an estimate of zero: no trial disagreed, not a proof of no noise
        noise += " (every repeated task's trials agreed: the estimate is 0, the noise need not be)"
    n = e.n_tasks
    return (f"{head}: {_points(e.difference)} points [{_points(lo)}, {_points(hi)}] on {n} shared "
            f"task{'s' if n != 1 else ''}; {noise}")  # fmt: skip
