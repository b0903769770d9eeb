"""Terminal renderings of the pipelines' results: the lines ``collapse-probe play``, ``crossplay``,
``train`` and ``lab`` print (each reads the typed results or their ``results.json`` object)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from collapse_probe.errors import ConfigError

if TYPE_CHECKING:
    from collapse_probe.results import (
        CrossplayResults,
        LabCompareResults,
        LabRunResults,
        LabSweepResults,
        PlayResults,
        TrainResults,
    )
    from collapse_probe.results._lab import Stat


def play_text(results: PlayResults | Mapping[str, object], first_error: str | None = None) -> str:
    """The result line of a play run: the mean reward with its interval over tasks, or why there is none.

    Args:
        results: the run's typed results, or its ``results.json`` object.
        first_error: the first infrastructure error of the conversations, named when nothing was scored.
    """
    from collapse_probe.results import PlayResults

    r = PlayResults.typed(results)
    s = r.summary
    if s.mean_reward is None:
        from collapse_probe.core._observe import no_result_reason

        return f"NO RESULT: no scored conversations {no_result_reason(s.infra_failures, first_error)}"
    ci = s.ci95
    ci_s = f"95% CI over tasks {ci[0]:.3f}-{ci[1]:.3f}, " if ci else "no CI from one task, "
    return (
        f"{r.policy} vs {r.sim} on {r.benchmark}: mean reward {s.mean_reward:.3f} "
        f"({ci_s}n={s.n}, infra failures {s.infra_failures})"
    )


def crossplay_text(results: CrossplayResults | Mapping[str, object]) -> str:
    """The reward matrix, transfer ratios and strategy entropies as a terminal table.

    Long specs are shown by short labels (the report's), with a legend of the full specs under the
    matrix, so a row of eight simulators fits a terminal.

    Args:
        results: the run's typed results, or its ``results.json`` object.
    """
    from collapse_probe.metrics.notes import entropy_note
    from collapse_probe.report._layout import display_width, pad
    from collapse_probe.report.crossplay_plots import cell_text, matrix_labels, transfer_text
    from collapse_probe.results import CrossplayResults

    r = CrossplayResults.typed(results)
    sims = r.simulators
    cells = {(c.policy, c.simulator): c for c in r.cells}
    plabels, slabels = matrix_labels(r)
    slabels = [lab.replace(" (train)", "*") for lab in slabels]
    rr = r.reward_range
    inside = f", inside [{rr[0]:g}, {rr[1]:g}]" if rr else ""
    table = []
    for p in r.policies:
        row = []
        for s in sims:
            c = cells[(p, s)]
            m, ci = c.mean_reward, c.ci95
            val = cell_text(m, ci)
            row.append(f"{val} ({c.n},{c.infra_failures})")
        table.append(row)
    width = max(12, *(display_width(s) + 2 for s in slabels), *(display_width(v) + 2 for line in table for v in line))
    pw = max(8, *(display_width(p) + 2 for p in plabels))
    head = pad("policy", pw) + "".join(pad(s, width, right=True) for s in slabels)
    lines = [
        f"mean reward [95% CI over tasks{inside}] ({r.benchmark}; * = training simulator; (n, infra failures))",
        head,
    ]
    for plabel, row in zip(plabels, table, strict=True):
        lines.append(pad(plabel, pw) + "".join(pad(v, width, right=True) for v in row))
    legend = [(lab, name) for lab, name in zip([*plabels, *slabels], [*r.policies, *sims], strict=True)
              if lab.removesuffix("*") != name]  # fmt: skip
    if legend:
        lw = max(display_width(lab) for lab, _ in legend)
        lines += ["labels:"] + [f"  {pad(lab, lw)}  {name}" for lab, name in legend]
    label = dict(zip(r.policies, plabels, strict=True))
    for t in r.transfer:
        lines.append(f"transfer {label.get(t.policy, t.policy)}: {transfer_text(t)}")
    for d in r.policy_diversity:
        h = d.strategy_entropy
        lines.append(
            f"strategy entropy {label.get(d.policy, d.policy)}: "
            + ("n/a" if h is None else entropy_note(h, d.n_classes, d.n_messages))
        )
    return "\n".join(lines)


def zero_variance_warning(results: TrainResults | Mapping[str, object]) -> str | None:
    """A warning when every group of every step had zero reward variance (zero-std share 1 throughout):
    group-relative advantages were then all 0, so the policy learned nothing (``None`` otherwise)."""
    from collapse_probe.results import TrainResults

    r = TrainResults.typed(results)
    mean = r.mean.get("zero_std_share")
    shares = [x for x in (mean, r.first.zero_std_share, r.final.zero_std_share) if x is not None]
    if not shares or min(shares) < 1.0:
        return None
    return (
        f"warning: every group of all {r.steps} steps had zero reward variance (zero-std share 1.000): every "
        "advantage was 0, so the policy learned nothing. The simulator's rewards never differ within a group "
        "(an audit says where: collapse-probe audit --sim SPEC); try a more diverse simulator (vs:SPEC, "
        "--method ensemble), a larger --group-size or more --max-turns"
    )


def train_text(results: TrainResults | Mapping[str, object]) -> str:
    """The result line of a training run: the last step's rewards, zero-std share, entropy and simulator ε.

    Args:
        results: the run's typed results, or its ``results.json`` object.
    """
    from collapse_probe.results import TrainResults

    r = TrainResults.typed(results)
    final = r.final

    def fmt(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    return (
        f"{r.method}: {r.steps} steps; final train reward {fmt(final.train_reward)}, "
        f"held-out reward {fmt(final.heldout_reward)}, zero-std share {fmt(final.zero_std_share)}, "
        f"policy entropy {fmt(final.policy_entropy)} (estimate incl. unseen classes), simulator ε {fmt(final.sim_collapse_error)}"
    )


def lab_text(results: LabRunResults | LabCompareResults | LabSweepResults | Mapping[str, object]) -> str:
    """The terminal table of a lab output: one run's end-of-run numbers, a comparison's means over seeds,
    or a sweep's real-user reward at each value.

    Args:
        results: a typed lab output, or its ``results.json`` / ``compare.json`` / ``sweep.json`` object
            (told apart by its ``schema``).
    """
    from collapse_probe.results import LabCompareResults, LabRunResults, LabSweepResults, read_results

    r: Any = results if isinstance(results, LabRunResults | LabCompareResults | LabSweepResults) else None
    if r is None:
        r, problem = read_results(results, "results")
        if problem is not None:
            raise ConfigError(problem)
    if isinstance(r, LabRunResults):
        return lab_run_text(r)
    if isinstance(r, LabCompareResults):
        return lab_compare_text(r)
    if isinstance(r, LabSweepResults):
        return lab_sweep_text(r)
    raise ConfigError(f"results: expected a lab output, got schema {type(r).__name__}")


def lab_run_text(result: LabRunResults) -> str:
    """Terminal table of one run: rewards at start, peak and end, entropy ratio, collapse error, bounds."""
    header = (
        f"{'method':<11} {'train end':>9} {'held start':>10} {'held peak':>9} {'@step':>5} {'held end':>8} "
        f"{'families end':>12} {'entropy end/start':>17} {'collapse err':>12} {'bounds':>6}"
    )
    s = result.summary
    ok = "ok" if all(result.bound_checks.values()) else "FAIL"
    row = (
        f"{result.method:<11} {s['train_reward_end']:>9.3f} {s['heldout_reward_start']:>10.3f} "
        f"{s['heldout_reward_peak']:>9.3f} {int(s['heldout_reward_peak_step'] or 0):>5d} {s['heldout_reward_end']:>8.3f} "
        f"{s['heldout_sim_reward_end']:>12.3f} {s['entropy_ratio']:>17.3f} {s['collapse_error_end']:>12.3f} {ok:>6}"
    )
    return "\n".join([header, "-" * len(header), row])


def _stat(stat: Stat | None) -> str:
    from collapse_probe.report.lab_plots import fmt_stat

    return fmt_stat(stat.to_json() if stat is not None else None)


def lab_compare_text(payload: LabCompareResults | Mapping[str, object]) -> str:
    """Terminal table of a comparison: mean ± 95% half-width over seeds."""
    from collapse_probe.results import LabCompareResults

    r = LabCompareResults.typed(payload)
    header = (
        f"{'method':<26} {'train final':>15} {'real users final':>17} {'real users peak':>16} "
        f"{'families final':>15} {'users - single':>16} {'entropy end/start':>17} {'bounds':>6}"
    )
    lines = [
        f"{r.n_seeds} seeds, mean ± 95% half-width; 'users - single': paired difference in the same worlds",
        header,
        "-" * len(header),
    ]
    for m in r.methods:
        b = m.bounds
        ok = b["tv_exact_holds_all"] and b["grad_holds_all"] and b["tv_sampled_holds"] == b["tv_sampled_n_seeds"]
        lines.append(
            f"{m.label:<26} {_stat(m.train_final):>15} {_stat(m.heldout_final):>17} "
            f"{_stat(m.heldout_peak):>16} {_stat(m.heldout_sim_final):>15} "
            f"{_stat(m.heldout_final_vs_single):>16} "
            f"{_stat(m.entropy_ratio):>17} {'ok' if ok else 'FAIL':>6}"
        )
    return "\n".join(lines)


def lab_sweep_text(payload: LabSweepResults | Mapping[str, object]) -> str:
    """Terminal lines of a sweep: each method's real-user reward at each value of the parameter."""
    from collapse_probe.results import LabSweepResults

    r = LabSweepResults.typed(payload)
    lines = []
    for m in r.methods:
        cells = "  ".join(f"{p.value:g}: {_stat(p.heldout_final)}" for p in m.points)
        lines.append(f"{m.label:<26} real users  {cells}")
    return "\n".join(lines)
