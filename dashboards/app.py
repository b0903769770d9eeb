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

_HERE = Path(__file__).resolve().parent  # dashboards/ in a checkout, collapse_probe/dashboard/ when installed
_REPO = _HERE.parent if (_HERE.parent / "collapse_probe").is_dir() else _HERE.parents[1]
if str(_REPO) not in sys.path:  # a checkout that is not pip-installed
    sys.path.insert(0, str(_REPO))

from collapse_probe.report import runs as rd  # noqa: E402
from collapse_probe.report._layout import Table  # noqa: E402
from collapse_probe.results import (  # noqa: E402
    AuditResults,
    AuditSummary,
    CrossplayResults,
    LabRunResults,
)

VIEWS = ("Runs", "Simulator", "Cross-play", "Training", "Monitor", "Compare", "Simulator effects")
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
        st_ = path.lstat()
        return st_.st_mtime_ns, st_.st_size
    except OSError:
        return 0, 0


@st.cache_data(show_spinner=False, max_entries=64)
def _jsonl_cached(path: str, stamp: tuple[int, int]) -> rd.JsonlRead:
    del stamp  # part of the cache key only: a file that grew is read again
    return rd.read_jsonl(path)


def jsonl(run: rd.RunInfo, name: str) -> rd.JsonlRead:
    """A run's JSONL file, re-read only when it changed on disk; a file that is not read (a link, a
    FIFO, too large) is one warning line on this run."""
    p = run.file(name)
    read = _jsonl_cached(str(p), _stamp(p))
    if read.problem:
        st.warning(f"{run.name}: {read.problem}")
    return read


def md_text(text: Any) -> str:
    """Text from a run shown through markdown literally: ``$`` would start LaTeX ("[DONATE $1] ... $2")."""
    return str(text).replace("\\", "\\\\").replace("$", "\\$").replace("*", "\\*").replace("_", "\\_")


def fmt(x: Any, digits: int = 3) -> str:
    """A number for display; ``None``/non-numbers as "n/a"."""
    if isinstance(x, bool) or not isinstance(x, int | float) or x != x:
        return "n/a"
    return f"{x:.{digits}f}"


def fmt_ci(ci: Any, digits: int = 3) -> str:
    if isinstance(ci, list | tuple) and len(ci) == 2:
        return f"[{fmt(ci[0], digits)}, {fmt(ci[1], digits)}]"
    return "n/a"


def show_figure(fig: Any, key: str | None = None) -> None:
    """Draw a plotly figure; ``key`` tells apart two identical figures on one page (Streamlit derives an
    element's id from its content, so the same chart twice, as for two identical runs side by side, is
    a StreamlitDuplicateElementId without one)."""
    st.plotly_chart(fig, width="stretch", key=key)


def figure_or_note(make: Any, *args: Any, key: str | None = None) -> None:
    """Draw ``make(*args)``; a result that does not fit the figure (e.g. a run of an older schema) is a note."""
    try:
        fig = make(*args)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError) as exc:
        st.warning(f"cannot draw {getattr(make, '__name__', 'figure')}: {type(exc).__name__}: {exc}")
        return
    if fig is not None:
        show_figure(fig, key=key)


def in_progress_note(run: rd.RunInfo) -> None:
    """Explain a run without usable results: what has been recorded so far, or the one line saying
    why its results file does not read as its results model."""
    if run.invalid is not None:
        st.error(md_text(f"{run.name}: {run.invalid}"))
        return
    counts = []
    for name in ("samples.jsonl", "conversations.jsonl", "metrics.jsonl"):
        if name in run.files:
            read = jsonl(run, name)
            extra = " (last line still being written)" if read.torn_tail else ""
            counts.append(f"{len(read.records)} records in {name}{extra}")
    what = "; ".join(counts) if counts else "nothing recorded yet"
    if run.failed:
        st.error(
            f"**{run.name}** failed: it stopped without results and no process is writing to it ({what}). "
            "Rerun the same command with the same --out to resume it; infrastructure failures are retried."
        )
    else:
        st.info(f"**{run.name}** is in progress: {what}. Results appear when the run writes results.json.")
    for prob in run.problems:
        st.caption(prob)


# Run names longer than this are cut in the middle in selectors (the full name is written under them).
# (Comments, not docstrings: Streamlit writes a bare string of the app script onto the page.)
RUN_LABEL_CHARS = 40


def run_labels(runs: list[rd.RunInfo]) -> list[str]:
    """Unique selector labels ``name [kind, status]`` with long names cut in the middle, so a selector
    in a half-width column shows the whole label instead of cutting it at the end."""
    from collapse_probe.report._layout import short_labels

    names = short_labels([r.name for r in runs], RUN_LABEL_CHARS)
    return [f"{n} [{r.kind}, {r.status}]" for n, r in zip(names, runs, strict=True)]


def pick_run(runs: list[rd.RunInfo], label: str, key: str, index: int = 0, param: str = "run") -> rd.RunInfo | None:
    """A run selector; the deep link ``?run=NAME`` (``param``) preselects the run of that name."""
    if not runs:
        return None
    labels = run_labels(runs)
    names = [r.name for r in runs]
    wanted = st.query_params.get(param)
    if wanted in names:
        index = names.index(wanted)
    choice = st.selectbox(label, labels, index=min(index, len(labels) - 1), key=key)
    run = runs[labels.index(choice)]
    if run.label != choice:
        st.caption(md_text(run.name))
    return run


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
            "verdict": run_verdict(r),
            **usage_columns(r),
            "modified": datetime.datetime.fromtimestamp(r.mtime).strftime("%Y-%m-%d %H:%M:%S") if r.mtime else "",
            "schema": r.schema or "",
            "notes": "; ".join(r.problems),
        }
        for r in runs
    ]
    config = {name: st.column_config.TextColumn(name, width=w) for name, w in runs_column_widths(rows).items()}
    st.caption(
        f"{len(rows)} runs" + (f"; the table scrolls (first {RUNS_SHOWN} in view)" if len(rows) > RUNS_SHOWN else "")
    )
    st.dataframe(pd.DataFrame(rows), width="stretch", hide_index=True, column_config=config,
                 height=runs_table_height(len(rows)))  # fmt: skip


# (comments, not docstrings: Streamlit's magic would write a bare string onto every page)
RUNS_SHOWN = 30  # runs in view at once in the Runs table; more scroll inside it (every run is in the table)
ROW_PX = 35  # height of one row of a Streamlit dataframe (and of its header)
CHAR_PX = 7  # width of one character of a dataframe cell, rounded up (Source Sans at 14 px)
CELL_PAD_PX = 22  # a dataframe cell's padding and the room for its sort arrow
# free-text columns are capped (the cell shows the rest on hover), so that at 1400 px status, verdict
# and cost stay in view
CAPPED = {"run": 320, "verdict": 220, "schema": 240, "notes": 420}


def runs_table_height(n: int) -> int:
    """Pixel height of the Runs table: every run in view up to :data:`RUNS_SHOWN`, the rest scroll."""
    return ROW_PX * (min(n, RUNS_SHOWN) + 1) + 3


def runs_column_widths(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Pixel width of each Runs column: its longest cell or heading in full (``not recorded``, not
    ``not recorde``), the free-text columns capped at :data:`CAPPED`."""
    out: dict[str, int] = {}
    for name in rows[0] if rows else ():
        chars = max(len(str(name)), *(len(str(r.get(name) or "")) for r in rows))
        out[name] = min(CELL_PAD_PX + CHAR_PX * chars, CAPPED.get(name, 10**6))
    return out


def run_verdict(run: rd.RunInfo) -> str:
    """A run's verdict in one short line: an audit's answer, a gate's outcome per policy, "—" for a
    run kind that gives none (training, the lab)."""
    if isinstance(run.typed, AuditResults):
        r = run.typed
        return r.verdict_text.answer if r.verdict_text else (r.verdict or "").split("\n")[0] or "—"
    from collapse_probe.results import CompareResults

    if isinstance(run.typed, CompareResults):  # how many simulator effects lie beyond their interval's 0
        effects = [e for e in run.typed.simulator_effects if e.beyond_noise is not None]
        beyond = sum(1 for e in effects if e.beyond_noise)
        return f"{beyond} of {len(effects)} simulator effects exclude 0" if effects else "—"
    found = []
    for _, v in run.verdicts:
        typed, _problem = rd.read_gate_verdict(v, run.name)
        policy, outcome = (typed.policy, typed.outcome) if typed is not None else (v.get("policy"), v.get("outcome"))
        found.append(f"{policy}: {outcome}")
    return "; ".join(found) or "—"


# Run kinds that call no model (the tabular lab; the gate reads a cross-play run; compare reads results files):
# usage does not apply.
NO_MODELS = ("lab", "lab-compare", "gate", "compare")


def usage_columns(run: rd.RunInfo) -> dict[str, Any]:
    """Model calls, tokens and cost of a run as text: ``results.json``'s ``usage``, or ``usage.json``
    while it runs; "—" where the run kind calls no model, "not recorded" where a run has no usage."""
    usage, problem = rd.read_usage(run)
    if problem and problem not in run.problems:
        run.problems.append(problem)
    if not isinstance(usage, dict) or not usage:
        none = "—" if run.kind in NO_MODELS else "not recorded"
        return {"model calls": none, "tokens": none, "cost (USD)": none}
    rows = [u for u in usage.values() if isinstance(u, dict)]

    def whole(v: Any) -> int:
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    costs = [u.get("cost_usd") for u in rows]
    known = [c for c in costs if isinstance(c, int | float) and not isinstance(c, bool) and c == c]
    return {
        "model calls": f"{sum(whole(u.get('requests')) for u in rows):,}",
        "tokens": f"{sum(whole(u.get('input_tokens')) + whole(u.get('output_tokens')) for u in rows):,}",
        "cost (USD)": f"{sum(float(c) for c in known):.4f}" if len(known) == len(costs) else "unknown",
    }


# -- simulator (audit)


def view_simulator(runs: list[rd.RunInfo]) -> None:
    from collapse_probe.report import audit_plots as ap

    st.subheader("Simulator: collapse error per state")
    audits = of_kind(runs, AUDIT_KINDS)
    run = pick_run(audits, "Audit run", "sim_run")
    if run is None:
        st.info("No audit runs found. Create one with `collapse-probe audit --out RUNS_DIR/NAME ...`.")
        return
    by_mode = rd.audit_records(jsonl(run, "samples.jsonl").records)
    if not run.complete:
        in_progress_note(run)
        partial_audit(by_mode)
        return
    res = run.results or {}  # a complete run has parsed results, in the JSON the figures read
    typed = run.typed
    if not isinstance(typed, AuditResults):
        st.error(md_text(f"{run.name}: results.json is not an audit's results ({run.schema})"))
        return
    st.info(md_text(typed.verdict))
    audit_summary(typed)
    show_table(ap.summary_table(res), expander="all summary quantities")
    figure_or_note(ap.collapse_map_figure, res)
    st.markdown("**ε per state (95% CI)**")
    figure_or_note(ap.collapse_error_per_state_figure, res)
    if typed.trajectory is not None:
        st.markdown("**ε by turn along the on-policy rollouts**")
        figure_or_note(ap.collapse_error_by_turn_figure, res)
    if typed.compare_vs is not None:
        c = typed.compare_vs
        st.markdown("**Direct vs Verbalized Sampling**")
        left, right = st.columns(2)
        with left:
            st.caption("direct")
            audit_summary(typed, c.direct, compact=True)
        with right:
            st.caption("verbalized sampling")
            audit_summary(typed, c.verbalized, compact=True)
        figure_or_note(ap.compare_vs_figure, res)
    if typed.variance_share is not None:
        st.markdown("**Simulator share of reward variance (Lemma 3.3)**")
        show_table(ap.variance_share_table(res))
    if typed.variance is not None:
        st.markdown("**Reward variance: task, simulator, agent, judge**")
        figure_or_note(ap.variance_figure, res)
        for note in typed.variance.notes:
            st.caption(note)
    if typed.human_reference:
        st.markdown("**Simulator vs the human P4G data**")
        donations = typed.human_reference["donations"]
        if "bins" in donations:
            figure_or_note(ap.donation_comparison_figure, res)
        else:
            st.caption(
                f"donations: {donations.get('note')} ({donations.get('n_simulated')} simulated, "
                f"{donations.get('n_human')} human); simulated donations come from the states that ask for an amount"
            )
        if typed.human_reference.get("people_epsilon"):
            figure_or_note(ap.people_vs_simulator_figure, res)
        for caption, table in (
            ("every realism measure with its 95 % bootstrap interval", ap.realism_table(res)),
            ("the human persuadee's actual reply at each human-grounded state, among the simulator's classes",
             ap.grounding_table(res)),
            ("people's own ε at the matched states (annotated dialogues) beside the simulator's",
             ap.people_epsilon_table(res)),
            ("does Verbalized Sampling move the simulator towards the people?", ap.towards_people_table(res)),
        ):  # fmt: skip
            if table:
                st.caption(caption)
                show_table(table)
    show_table(ap.states_table(res), expander="per-state table")
    state_detail(typed, by_mode)


def partial_audit(by_mode: dict[str, dict[str, dict[str, Any]]]) -> None:
    """ε per state of the states an unfinished audit has measured so far (read from samples.jsonl)."""
    from collapse_probe.report import audit_plots as ap

    for mode, recs in by_mode.items():
        rows = [r for r in recs.values() if r.get("status") == "ok" and r.get("collapse_error") is not None]
        if rows:
            st.markdown(f"**ε per state measured so far ({mode}, {len(rows)} states)**")
            figure_or_note(ap.collapse_error_per_state_figure, {"mode": mode, "states": rows})


def show_table(table: Table | None, expander: str | None = None) -> None:
    """Show a ``{"columns", "rows"}`` table of :mod:`collapse_probe.report.audit_plots` (optionally folded)."""
    import pandas as pd

    if not table:
        return
    frame = pd.DataFrame(table["rows"], columns=table["columns"]).astype(str)
    if expander is None:
        st.dataframe(frame, width="stretch", hide_index=True)
        return
    with st.expander(expander):
        st.dataframe(frame, width="stretch", hide_index=True)


def audit_summary(res: AuditResults, summary: AuditSummary | None = None, compact: bool = False) -> None:
    """Headline metrics of an audit (of ``summary``, default the primary mode's)."""
    from collapse_probe.report import audit_plots as ap

    s = res.summary if summary is None else summary
    ce, ent, rv = s.collapse_error, s.entropy, s.reward_view
    verdicts = res.verdicts if summary is None else None

    def label(view: str) -> str | None:
        """The view's verdict, shown under its number (a label beside the name would be cut in a column)."""
        return None if verdicts is None else getattr(verdicts, view).label

    cols = st.columns(3 if compact else 5)
    cols[0].metric("meaning ε̂", fmt(ce.estimate), label("meaning"), delta_color="off", delta_arrow="off",
                   help=f"classes by {res.partitioner}; 95% CI {fmt_ci(ce.ci95)}; 0 = collapsed")  # fmt: skip
    cols[1].metric("reward-view ε̂", fmt(rv and rv.estimate), label("reward"), delta_color="off", delta_arrow="off",
                   help=f"95% CI {fmt_ci(rv and rv.ci95)}; {(rv and rv.classes) or 'no reward view'}")  # fmt: skip
    cols[2].metric(
        "entropy (nats)",
        fmt(ent and ent.estimate),
        help=f"{(ent and ent.estimator) or ''} 95% CI {fmt_ci(ent and ent.ci95)}",
    )
    if compact:
        v = s.vs_parse_failures
        st.caption(
            f"meaning ε 95% CI {fmt_ci(ce.ci95)}, {s.n_states} states; reward-view ε 95% CI "
            f"{fmt_ci(rv and rv.ci95)}, {rv.n_states if rv else 0} states"
            + (f"; VS parse failures {v.count} of {v.of}" if v else "")
        )
        return
    cols[3].metric("effective modes", fmt(s.effective_modes, 2) if not s.effective_modes_lower_bound_only
                   else f"≥ {fmt(s.effective_modes_lower_bound, 1)}",
                   help=ap.effective_modes_text(s.to_json(), res.samples_per_state or 0))  # fmt: skip
    cols[4].metric("accumulated ε̄_H", fmt(s.accumulated_collapse_error))
    data = res.to_json()
    errors = ap.simulator_errors_text(data)
    st.caption(
        f"simulator **{res.simulator}** ({res.mode}) on **{res.benchmark}**, "
        f"partitioner {res.partitioner}, samples per state {ap.samples_per_state_text(data)}, "
        f"{s.n_states} states measured, infra failures excluded {ap.infra_failures_text(data)}; "
        f"ε 95% CI {fmt_ci(ce.ci95)}" + (f"; user-simulator errors: {errors}" if errors else "")
    )


def state_detail(res: AuditResults, by_mode: dict[str, dict[str, dict[str, Any]]]) -> None:
    """The classes of one state (recounted from its responses in samples.jsonl), in every sampling mode."""
    import pandas as pd

    from collapse_probe.report import audit_plots as ap

    states = [s for s in res.states if s.status == "ok"]
    if not states:
        return
    st.markdown("**Equivalence classes of one state**")
    est = {s.state_id: ap.state_estimate(s.to_json()) for s in states}  # ε̂ as the audit prints it
    states = sorted(states, key=lambda s: (est[s.state_id], s.state_id))
    labels = [f"{s.state_id} ({s.source}, turn {s.turn}, ε̂={fmt(est[s.state_id])}, n={s.n})" for s in states]
    choice = st.selectbox("State", labels, key="sim_state")
    sid = states[labels.index(choice)].state_id
    found = [(mode, recs[sid]) for mode, recs in by_mode.items() if sid in recs]
    if not found:
        st.caption("no responses recorded for this state in samples.jsonl")
        return
    for col, (mode, rec) in zip(st.columns(len(found)), found, strict=True):
        with col:
            st.caption(
                f"{mode} sampling: ε̂ {fmt(rec.get('collapse_error_estimate'))} {fmt_ci(rec.get('collapse_error_ci95'))}"
                f" (plug-in 1 − max/N {fmt(rec.get('collapse_error'))})"
            )
            if rec.get("status") != "ok":
                st.warning(f"infrastructure failure (excluded from every estimate): {rec.get('error')}")
                continue
            st.dataframe(pd.DataFrame(ap.state_classes(rec)), width="stretch", hide_index=True)
            rv = rec.get("reward_view") or {}
            if rv:
                classes = ", ".join(f"{k}: {c}" for k, c in zip(rv["class_names"], rv["class_counts"], strict=False))
                st.caption(
                    f"reward view: ε̂ {fmt(rv.get('collapse_error_estimate'))} {fmt_ci(rv.get('collapse_error_ci95'))} "
                    f"({md_text(classes)})"
                )
            exact = rec.get("exact") or {}
            if exact.get("collapse_error") is not None:
                st.caption(
                    f"exact scores of the closed answers: P(the whole reply is one of them) "
                    f"{fmt(exact.get('closed_set_mass'), 4)} (format compliance, not collapse); ε of the answer given "
                    f"one of them {fmt(exact.get('collapse_error_conditional'))}; with 'outside the set' as a class "
                    f"{fmt(exact['collapse_error'])}"
                )
    mode, rec = found[0]
    if rec.get("status") == "ok":
        figure_or_note(ap.class_histograms_figure, [r for _, r in found], len(found))
    with st.expander("conversation so far"):
        for m in rec.get("context") or []:
            st.markdown(f"**{m.get('role', '?')}**: {md_text(m.get('content', ''))}")
        if rec.get("human_reply"):
            st.markdown(f"*the human persuadee replied*: {md_text(rec['human_reply'])}")


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
        res = run.results or {}
        typed = run.typed
        if not isinstance(typed, CrossplayResults):
            st.error(md_text(f"{run.name}: results.json is not a cross-play's results ({run.schema})"))
            return
        st.caption(
            f"benchmark **{typed.benchmark}**, training simulator **{typed.train_simulator or 'none'}**; "
            "hover a cell for its 95% CI, n and infrastructure failures (excluded from every mean)"
        )
        figure_or_note(cp.reward_heatmap, res)
        labels = cp.labels_table(typed)
        if labels:
            show_table(labels, expander="the full spec behind each label")
        if typed.train_simulator:
            figure_or_note(cp.train_heldout_figure, res)
        if typed.transfer:
            figure_or_note(cp.transfer_bars, res)
        if typed.policy_diversity:
            figure_or_note(cp.strategy_entropy_bars, res)
        table = cp.crossplay_table(typed)
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
        typed, problem = rd.read_gate_verdict(v, where)
        # an older ``gate --json`` file still says whose verdict it is and what it was
        policy, outcome = (typed.policy, typed.outcome) if typed is not None else (v.get("policy"), v.get("outcome"))
        head = f"{icon.get(str(outcome), '⚠️')} "
        head += f"**{policy}**: {outcome} ({where})" + (" — this run" if here else "")
        st.markdown(head)
        if typed is None:
            st.warning(md_text(f"checks not shown: {problem}"))
            continue
        rows = [
            {
                "check": c.name,
                "status": f"{icon.get(c.status, '')} {c.status}",
                "value": c.value,
                "threshold": c.threshold,
                "95% CI": fmt_ci(c.ci95),
                "message": c.message,
            }
            for c in typed.checks
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
    labels = run_labels(trains)
    picked = st.multiselect("Runs (overlaid)", labels, default=labels[: min(4, len(labels))], key="train_runs")
    chosen = {r.label for r, lab in zip(trains, labels, strict=True) if lab in picked}
    curves: dict[str, list[dict[str, Any]]] = {}
    for r in trains:
        if r.label not in chosen:
            continue
        if r.invalid is not None:
            st.error(md_text(f"{r.name}: {r.invalid}"))
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
    alarms = [{**a, "run": r.name} for r in trains if r.label in chosen for a in rd.monitor_alarms(r)]
    axes = {"auto": "auto", "training step": "step", "share of each run's steps": "progress"}
    axis = st.radio("x axis", list(axes), horizontal=True, key="train_axis")
    if axes[axis] == "auto" and tp.progress_axis(curves):
        st.caption(
            "These runs differ more than tenfold in length: each is drawn against the share of its own steps "
            "(pick 'training step' for the step axis)."
        )
    for heading, fig in tp.training_figures(curves, alarms, x=axes[axis]):
        if isinstance(fig, str):  # nothing to draw: the sentence that says so, not an empty chart
            st.markdown(f"**{heading}**")
            st.info(md_text(fig))
        else:
            show_figure(fig)
    lab_checks = [
        (r.name, r.typed.bound_checks) for r in trains if r.label in chosen and isinstance(r.typed, LabRunResults)
    ]
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


# -- live collapse monitor


def view_monitor(runs: list[rd.RunInfo]) -> None:
    """The collapse monitor's rows of one run (``monitor.jsonl``): ε̂ per step in both views, alarms."""
    from collapse_probe.report.monitor_plots import monitor_figures

    st.subheader("Collapse monitor: the simulator's ε on the states training visits, step by step")
    monitored = [r for r in runs if r.kind == "monitor" or "monitor.jsonl" in r.files]
    if not monitored:
        st.info("No monitor runs found. Give `CollapseMonitor(out=...)` a directory under the runs root.")
        return
    run = pick_run(monitored, "Monitor run", "monitor_run")
    if run is None:
        return
    rows = jsonl(run, "monitor.jsonl").records
    if not rows:
        st.info("This monitor has recorded no step yet.")
        return
    monitor = (run.config or {}).get("monitor")
    eps_star = monitor.get("epsilon_star") if isinstance(monitor, dict) else None
    for _, fig in monitor_figures(rows, eps_star if isinstance(eps_star, int | float) else None):
        show_figure(fig)
    alarms = [a for r in rows if isinstance(found := r.get("alarms"), list) for a in found if isinstance(a, dict)]
    if alarms:
        import pandas as pd

        st.markdown("**Alarms**")
        st.dataframe(
            pd.DataFrame([{k: a.get(k) for k in ("step", "kind", "message")} for a in alarms]),
            width="stretch",
            hide_index=True,
            column_config={
                "step": st.column_config.NumberColumn("step", width="small"),
                "kind": st.column_config.TextColumn("kind", width="small"),
                "message": st.column_config.TextColumn("message", width="large"),
            },  # fmt: skip
        )


# -- compare


def view_compare(runs: list[rd.RunInfo]) -> None:
    from collapse_probe.report import audit_plots as ap

    st.subheader("Compare two audits (two simulators, or one simulator before and after a fix)")
    audits = [r for r in of_kind(runs, AUDIT_KINDS) if r.complete]
    if len(audits) < 2:
        st.info("Comparing needs two finished audit runs.")
        return
    cols = st.columns(2)
    picked = []
    for i, col in enumerate(cols):
        with col:
            picked.append(pick_run(audits, f"Audit {'AB'[i]}", f"cmp_{i}", index=i, param=("run", "run_b")[i]))
    a, b = picked
    if a is not None and b is not None and a.path == b.path:
        st.info("Audit A and audit B are the same run; pick two different audits to compare them.")
        picked = [a, None]
    for i, (col, run) in enumerate(zip(cols, picked, strict=True)):
        if run is None:
            continue
        with col:
            if not isinstance(run.typed, AuditResults):
                st.error(md_text(run.invalid or f"{run.name}: results.json is not an audit's results"))
                continue
            audit_summary(run.typed, compact=True)
            st.caption(f"simulator {run.typed.simulator} ({run.typed.mode})")
            figure_or_note(ap.collapse_error_per_state_figure, run.results or {}, key=f"cmp_states_{i}")
    a, b = picked
    if a is not None and b is not None:
        figure_or_note(ap.compare_audits_figure, {a.name: a.results or {}, b.name: b.results or {}}, key="cmp_audits")


# -- simulator effects across published runs (collapse-probe compare)


def view_simulator_effects(runs: list[rd.RunInfo]) -> None:
    import pandas as pd

    from collapse_probe.report import compare_plots as cmp
    from collapse_probe.results import CompareResults

    st.subheader("Simulator effects: how much of each agent's score is the user simulator")
    done = [r for r in runs if r.kind == "compare" and r.complete]
    run = pick_run(done, "Compare run", "se_run")
    if run is None:
        st.info("No compare runs found. Create one with `collapse-probe compare FILE... --out RUNS_DIR/NAME`.")
        return
    typed = run.typed
    if not isinstance(typed, CompareResults):
        st.error(md_text(run.invalid or f"{run.name}: results.json is not a comparison's results"))
        return
    p = typed.pairing
    left = ", ".join(f"{n} {k}" for k, n in p.left_out.items())
    st.caption(md_text(f"{p.paired_records} of {p.records} conversations paired into {p.tasks} tasks by task "
                       f"{p.task_key} ({p.why})" + (f"; left out: {left}" if left else "")))  # fmt: skip
    for e in typed.simulator_effects:
        st.markdown(md_text(cmp.effect_line(e.to_json())))
    figure_or_note(cmp.effects_figure, typed, key="se_effects")
    for title, rows in (("Noise floor (reruns of one configuration)", cmp.noise_rows(typed)),
                        ("Agent ranking across simulators", cmp.rank_rows(typed))):  # fmt: skip
        if rows:
            st.markdown(f"**{title}**")
            st.dataframe(pd.DataFrame(rows), width="stretch", hide_index=True)
    if typed.rank_flips:
        st.markdown("**Rank flips**")
        st.dataframe(pd.DataFrame([{"agents": " vs ".join(f.agents), "simulators": " vs ".join(f.simulators),
                                    "shared tasks": f.n_tasks} for f in typed.rank_flips]),
                     width="stretch", hide_index=True)  # fmt: skip
    for note in typed.notes:
        st.caption(md_text(note))


# ------------------------------------------------------------------------------------------------ main


def main() -> None:
    st.set_page_config(page_title="collapse-probe", layout="wide")
    root = runs_root()
    st.sidebar.title("collapse-probe")
    st.sidebar.caption(f"runs: `{root}`")
    if not root.is_dir():
        from collapse_probe.dashboard._serve import runs_dir_problem

        st.error(md_text(runs_dir_problem(root)))
        return
    st.sidebar.button("Refresh", help="re-read the run directories")
    wanted = st.query_params.get("view")  # deep link: ?view=Cross-play
    view = st.sidebar.radio("View", VIEWS, index=VIEWS.index(wanted) if wanted in VIEWS else 0, key="view")
    runs = rd.discover_runs(root)
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.kind] = counts.get(r.kind, 0) + 1
    st.sidebar.caption(", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no runs yet")
    show = {
        "Runs": lambda: view_runs(root, runs),
        "Simulator": lambda: view_simulator(runs),
        "Cross-play": lambda: view_crossplay(runs),
        "Training": lambda: view_training(runs),
        "Monitor": lambda: view_monitor(runs),
        "Compare": lambda: view_compare(runs),
        "Simulator effects": lambda: view_simulator_effects(runs),
    }[view]
    try:
        show()
    except Exception as exc:  # noqa: BLE001 - any file the view cannot show must leave the app usable
        # a results file of another schema version or hand-edited JSON: say so, keep the app usable
        st.warning(
            f"This view cannot show the selected run (its files do not match the expected schema): "
            f"{type(exc).__name__}: {exc}"
        )


main()
