"""collapse-probe dashboard: a read-only Streamlit app over the run directories under RUNS_DIR.

Start it with ``collapse-probe dashboard RUNS_DIR`` (or ``streamlit run dashboards/app.py -- RUNS_DIR``;
``$COLLAPSE_PROBE_RUNS_DIR`` takes precedence). Views: Runs (what was found), Simulator (audit runs),
Cross-play (matrix, transfer, gate verdicts), Training (train and lab curves, overlaid) and Compare.
The figures come from the same functions as the HTML reports (``collapse_probe.report.*``).

The app only parses JSON from the run directories (no pickle, no eval) and shows a run that is being
written, or was killed mid-write, as "in progress" instead of failing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import streamlit as st

_REPO = Path(__file__).resolve().parents[1]
if str(_REPO) not in sys.path:  # a checkout that is not pip-installed
    sys.path.insert(0, str(_REPO))

from collapse_probe.report import runs as rd  # noqa: E402

VIEWS = ("Runs", "Simulator", "Cross-play", "Training", "Compare")
AUDIT_KINDS = ("audit",)
CROSSPLAY_KINDS = ("crossplay",)
TRAINING_KINDS = ("train", "lab")


# ------------------------------------------------------------------------------------------------ data access


def runs_root() -> Path:
    """RUNS_DIR: ``$COLLAPSE_PROBE_RUNS_DIR``, else the argument after ``--`` of ``streamlit run``, else ``runs``."""
    env = os.environ.get("COLLAPSE_PROBE_RUNS_DIR")
    if env:
        return Path(env)
    if sys.argv and Path(sys.argv[0]).name == Path(__file__).name and len(sys.argv) > 1:
        return Path(sys.argv[1])
    return Path("runs")


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st_ = path.stat()
        return st_.st_mtime_ns, st_.st_size
    except OSError:
        return 0, 0


@st.cache_data(show_spinner=False, max_entries=64)
def _jsonl_cached(path: str, stamp: tuple[int, int]) -> rd.JsonlRead:
    del stamp  # part of the cache key only: a file that grew is read again
    return rd.read_jsonl(path)


def jsonl(run: rd.RunInfo, name: str) -> rd.JsonlRead:
    """A run's JSONL file, re-read only when it changed on disk."""
    p = run.file(name)
    return _jsonl_cached(str(p), _stamp(p))


def fmt(x: Any, digits: int = 3) -> str:
    """A number for display; ``None``/non-numbers as "n/a"."""
    if isinstance(x, bool) or not isinstance(x, int | float) or x != x:
        return "n/a"
    return f"{x:.{digits}f}"


def fmt_ci(ci: Any, digits: int = 3) -> str:
    if isinstance(ci, list | tuple) and len(ci) == 2:
        return f"[{fmt(ci[0], digits)}, {fmt(ci[1], digits)}]"
    return "n/a"


def get(d: Any, *keys: str, default: Any = None) -> Any:
    """``d[k1][k2]...`` or ``default`` when any level is missing or not a mapping."""
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return default
        d = d[k]
    return d


def show_figure(fig: Any) -> None:
    st.plotly_chart(fig, width="stretch")


def figure_or_note(make: Any, *args: Any) -> None:
    """Draw ``make(*args)``; a result that does not fit the figure (e.g. a run of an older schema) is a note."""
    try:
        fig = make(*args)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError) as exc:
        st.warning(f"cannot draw {getattr(make, '__name__', 'figure')}: {type(exc).__name__}: {exc}")
        return
    if fig is not None:
        show_figure(fig)


def in_progress_note(run: rd.RunInfo) -> None:
    """Explain a run without usable results: what has been recorded so far."""
    counts = []
    for name in ("samples.jsonl", "conversations.jsonl", "metrics.jsonl"):
        if name in run.files:
            read = jsonl(run, name)
            extra = " (last line still being written)" if read.torn_tail else ""
            counts.append(f"{len(read.records)} records in {name}{extra}")
    what = "; ".join(counts) if counts else "nothing recorded yet"
    st.info(f"**{run.name}** is in progress: {what}. Results appear when the run writes results.json.")
    for prob in run.problems:
        st.caption(prob)


def pick_run(runs: list[rd.RunInfo], label: str, key: str, index: int = 0) -> rd.RunInfo | None:
    if not runs:
        return None
    labels = [r.label for r in runs]
    choice = st.selectbox(label, labels, index=min(index, len(labels) - 1), key=key)
    return runs[labels.index(choice)]


def of_kind(runs: list[rd.RunInfo], kinds: tuple[str, ...]) -> list[rd.RunInfo]:
    return [r for r in runs if r.kind in kinds]


# ------------------------------------------------------------------------------------------------ views


def view_runs(root: Path, runs: list[rd.RunInfo]) -> None:
    import datetime

    import pandas as pd

    st.subheader("Run directories")
    if not runs:
        st.info(
            f"No run directories under {root}. Runs of `collapse-probe audit | crossplay | gate | train | lab` appear here."
        )
        return
    rows = [
        {
            "run": r.name,
            "kind": r.kind,
            "status": r.status,
            "schema": r.schema or "",
            "modified": datetime.datetime.fromtimestamp(r.mtime).strftime("%Y-%m-%d %H:%M:%S") if r.mtime else "",
            "notes": "; ".join(r.problems),
        }
        for r in runs
    ]
    st.dataframe(pd.DataFrame(rows), width="stretch", hide_index=True)


# -- simulator (audit)


def view_simulator(runs: list[rd.RunInfo]) -> None:
    from collapse_probe.report import dashboard_plots as ap

    st.subheader("Simulator: collapse error per state")
    audits = of_kind(runs, AUDIT_KINDS)
    run = pick_run(audits, "Audit run", "sim_run")
    if run is None:
        st.info("No audit runs found. Create one with `collapse-probe audit --out RUNS_DIR/NAME ...`.")
        return
    if not run.complete:
        in_progress_note(run)
        return
    res = run.results
    audit_summary(res)
    samples = jsonl(run, "samples.jsonl").records
    for title, make in (
        ("ε per state (sorted, 95% CI)", ap.collapse_error_by_state_figure),
        ("ε by turn", ap.collapse_error_by_turn_figure),
    ):
        st.markdown(f"**{title}**")
        figure_or_note(make, res)
    vs = ap.vs_results(res)
    if vs is not None:
        st.markdown("**Direct vs Verbalized Sampling**")
        left, right = st.columns(2)
        with left:
            st.caption("direct")
            audit_summary(res, compact=True)
        with right:
            st.caption("verbalized sampling")
            audit_summary(vs, compact=True)
        figure_or_note(ap.direct_vs_figure, res)
    if ap.human_reference(res) is not None:
        st.markdown("**Simulator vs human reference**")
        figure_or_note(ap.human_reference_figure, res)
    state_detail(res, samples)


def audit_summary(res: dict[str, Any], compact: bool = False) -> None:
    s = res.get("summary") or {}
    ce = s.get("collapse_error") or {}
    ent = s.get("entropy") or {}
    cols = st.columns(2 if compact else 4)
    cols[0].metric("collapse error ε", fmt(ce.get("estimate")), help=f"95% CI {fmt_ci(ce.get('ci95'))}; 0 = collapsed")
    cols[1].metric(
        "entropy (nats)", fmt(ent.get("estimate")), help=f"{ent.get('estimator', '')} 95% CI {fmt_ci(ent.get('ci95'))}"
    )
    if not compact:
        cols[2].metric("effective modes", fmt(s.get("effective_modes"), 2))
        cols[3].metric("accumulated ε̄_H", fmt(s.get("accumulated_collapse_error")))
        st.caption(
            f"simulator **{res.get('simulator')}** on **{res.get('benchmark')}**, partitioner {res.get('partitioner')}, "
            f"{res.get('samples_per_state')} samples per state, {len(res.get('states') or [])} states; "
            f"ε 95% CI {fmt_ci(ce.get('ci95'))}"
        )


def state_detail(res: dict[str, Any], samples: list[dict[str, Any]]) -> None:
    import pandas as pd

    from collapse_probe.report import dashboard_plots as ap

    states = [s for s in res.get("states") or [] if isinstance(s, dict) and "state_id" in s]
    if not states:
        return
    st.markdown("**Equivalence classes of one state**")
    states = sorted(states, key=lambda s: (s.get("collapse_error") is None, s.get("collapse_error") or 0.0))
    labels = [
        f"{s['state_id']} (turn {s.get('turn')}, ε={fmt(s.get('collapse_error'))}, n={s.get('n')})" for s in states
    ]
    choice = st.selectbox("State", labels, key="sim_state")
    state = states[labels.index(choice)]
    classes = ap.state_classes(state, samples)
    if not classes:
        st.caption("no responses recorded for this state in samples.jsonl")
        return
    vs = ap.vs_results(res)
    vs_classes = ap.state_classes(state, samples, mode="vs") if vs is not None else []
    if vs_classes and any(r.get("examples") for r in vs_classes):
        left, right = st.columns(2)
        with left:
            st.caption("direct")
            st.dataframe(pd.DataFrame(classes), width="stretch", hide_index=True)
        with right:
            st.caption("verbalized sampling")
            st.dataframe(pd.DataFrame(vs_classes), width="stretch", hide_index=True)
    else:
        st.dataframe(pd.DataFrame(classes), width="stretch", hide_index=True)
    context = ap.state_context(state, samples)
    if context:
        with st.expander("conversation so far"):
            for m in context:
                st.markdown(f"**{m.get('role', '?')}**: {m.get('content', '')}")


# -- cross-play


def view_crossplay(runs: list[rd.RunInfo]) -> None:
    import pandas as pd

    from collapse_probe.report import crossplay_plots as cp

    st.subheader("Cross-play: policies x simulators")
    cps = of_kind(runs, CROSSPLAY_KINDS)
    run = pick_run(cps, "Cross-play run", "cp_run")
    if run is None:
        st.info("No cross-play runs found. Create one with `collapse-probe crossplay --out RUNS_DIR/NAME ...`.")
    elif not run.complete:
        in_progress_note(run)
        progress = crossplay_progress(run)
        if progress:
            st.dataframe(pd.DataFrame(progress), width="stretch", hide_index=True)
    else:
        res = run.results
        st.caption(
            f"benchmark **{res.get('benchmark')}**, training simulator **{res.get('train_simulator') or 'none'}**; "
            "hover a cell for its 95% CI, n and infrastructure failures (excluded from every mean)"
        )
        figure_or_note(cp.reward_heatmap, res)
        if res.get("transfer"):
            figure_or_note(cp.transfer_bars, res)
        if res.get("policy_diversity"):
            figure_or_note(cp.strategy_entropy_bars, res)
        table = cp.crossplay_table(res)
        st.dataframe(pd.DataFrame(table["rows"], columns=table["columns"]), width="stretch", hide_index=True)
    verdicts_section(runs, run)


def crossplay_progress(run: rd.RunInfo) -> list[dict[str, Any]]:
    """Conversations finished so far per cell of a running cross-play."""
    cells: dict[tuple[str, str], list[int]] = {}
    for r in jsonl(run, "conversations.jsonl").records:
        key = (str(r.get("policy")), str(r.get("simulator")))
        c = cells.setdefault(key, [0, 0])
        c[0] += 1
        c[1] += r.get("status") == "infra_error"
    return [
        {"policy": p, "simulator": s, "finished": n, "infra failures": f} for (p, s), (n, f) in sorted(cells.items())
    ]


def verdicts_section(runs: list[rd.RunInfo], selected: rd.RunInfo | None) -> None:
    found = gate_verdicts(runs)
    if not found:
        return
    st.markdown("**Gate verdicts**")
    icon = {"pass": "✅", "fail": "❌", "error": "⚠️"}
    for where, v in found:
        here = selected is not None and where.startswith(selected.name + "/")
        head = f"{icon.get(str(v.get('outcome')), '⚠️')} "
        head += f"**{v.get('policy')}**: {v.get('outcome')} ({where})" + (" — this run" if here else "")
        st.markdown(head)
        rows = [
            {
                "check": c.get("name"),
                "status": f"{icon.get(c.get('status'), '')} {c.get('status')}",
                "value": c.get("value"),
                "threshold": c.get("threshold"),
                "95% CI": fmt_ci(c.get("ci95")),
                "message": c.get("message"),
            }
            for c in v.get("checks") or []
            if isinstance(c, dict)
        ]
        if rows:
            import pandas as pd

            st.dataframe(pd.DataFrame(rows), width="stretch", hide_index=True)


def gate_verdicts(runs: list[rd.RunInfo]) -> list[tuple[str, dict[str, Any]]]:
    """``(where, verdict)`` for every gate verdict file found in the runs."""
    return [(f"{r.name}/{name}", v) for r in runs for name, v in r.verdicts]


# -- training


def view_training(runs: list[rd.RunInfo]) -> None:
    from collapse_probe.report import training_plots as tp

    st.subheader("Training: reward, policy entropy and simulator ε over steps")
    trains = of_kind(runs, TRAINING_KINDS) + [r for r in runs if r.kind == "lab-compare"]
    if not trains:
        st.info(
            "No train or lab runs found. Create one with `collapse-probe train --out ...` or `collapse-probe lab --out ...`."
        )
        return
    labels = [r.label for r in trains]
    chosen = st.multiselect("Runs (overlaid)", labels, default=labels[: min(4, len(labels))], key="train_runs")
    curves: dict[str, list[dict[str, Any]]] = {}
    for r in trains:
        if r.label not in chosen:
            continue
        if "metrics.jsonl" in r.files:
            curves[r.name] = rd.training_curve_from_records(jsonl(r, "metrics.jsonl").records)
        else:
            curves.update(rd.training_curves(r))
        if not r.complete:
            st.caption(f"{r.name}: in progress, {len(curves.get(r.name, []))} steps recorded so far")
    curves = {k: v for k, v in curves.items() if v}
    if not curves:
        st.info("The selected runs have no steps recorded yet (in progress).")
        return
    for _, fig in tp.training_figures(curves):
        show_figure(fig)
    lab_checks = [(r.name, get(r.results, "bound_checks")) for r in trains if r.label in chosen and r.kind == "lab"]
    lab_checks = [(n, b) for n, b in lab_checks if isinstance(b, dict)]
    if lab_checks:
        import pandas as pd

        st.markdown("**Theorem 3.2 bound checks (lab)**")
        st.dataframe(
            pd.DataFrame(
                [{"run": n, **{k: "holds" if v else "VIOLATED" for k, v in b.items()}} for n, b in lab_checks]
            ),
            width="stretch",
            hide_index=True,
        )


# -- compare


def view_compare(runs: list[rd.RunInfo]) -> None:
    from collapse_probe.report import dashboard_plots as ap

    st.subheader("Compare two audits (two simulators, or one simulator before and after a fix)")
    audits = [r for r in of_kind(runs, AUDIT_KINDS) if r.complete]
    if len(audits) < 2:
        st.info("Comparing needs two finished audit runs.")
        return
    cols = st.columns(2)
    picked = []
    for i, col in enumerate(cols):
        with col:
            run = pick_run(audits, f"Audit {'AB'[i]}", f"cmp_{i}", index=i)
            picked.append(run)
            if run is not None:
                audit_summary(run.results, compact=True)
                st.caption(f"simulator {run.results.get('simulator')}")
                figure_or_note(ap.collapse_error_by_state_figure, run.results)
    a, b = picked
    if a is not None and b is not None:
        figure_or_note(ap.compare_audits_figure, {a.name: a.results, b.name: b.results})


# ------------------------------------------------------------------------------------------------ main


def main() -> None:
    st.set_page_config(page_title="collapse-probe", layout="wide")
    root = runs_root()
    st.sidebar.title("collapse-probe")
    st.sidebar.caption(f"runs: `{root}`")
    if not root.is_dir():
        st.error(f"RUNS_DIR {str(root)!r} is not a directory.")
        return
    st.sidebar.button("Refresh", help="re-read the run directories")
    wanted = st.query_params.get("view")  # deep link: ?view=Cross-play
    view = st.sidebar.radio("View", VIEWS, index=VIEWS.index(wanted) if wanted in VIEWS else 0, key="view")
    runs = rd.discover_runs(root)
    counts = {}
    for r in runs:
        counts[r.kind] = counts.get(r.kind, 0) + 1
    st.sidebar.caption(", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no runs yet")
    show = {
        "Runs": lambda: view_runs(root, runs),
        "Simulator": lambda: view_simulator(runs),
        "Cross-play": lambda: view_crossplay(runs),
        "Training": lambda: view_training(runs),
        "Compare": lambda: view_compare(runs),
    }[view]
    try:
        show()
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        # a results file of another schema version or hand-edited JSON: say so, keep the app usable
        st.warning(
            f"This view cannot show the selected run (its files do not match the expected schema): "
            f"{type(exc).__name__}: {exc}"
        )


main()
