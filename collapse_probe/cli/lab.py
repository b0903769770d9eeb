"""``collapse-probe lab``: run the tabular collapse lab for one method or compare all methods."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from collapse_probe.cli._common import add_seed, env, positive
from collapse_probe.errors import ConfigError

METHOD_CHOICES = ("single", "vs", "ensemble", "persona", "cotrain", "population", "selfplay")
COTRAIN_REWARDS = ("adversarial", "cooperative", "curriculum")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``lab`` subcommand."""
    p = subparsers.add_parser(
        "lab",
        help="exact tabular arena: simulator collapse and its fixes against theory",
        description="Train a softmax-table policy against tabular user simulators and log exact "
        "held-out reward, policy entropy, collapse error and the Theorem 3.2 bounds.",
    )
    p.add_argument(
        "--method",
        default=env("method", "single"),
        help=f"training method: {' | '.join(METHOD_CHOICES)} (default single)",
    )
    p.add_argument("--steps", type=int, default=env("steps", 300), help="policy updates (default 300)")
    add_seed(p)
    p.add_argument("--out", default=env("out", None), help="run directory for results.json and report.html")
    p.add_argument(
        "--compare",
        action="store_true",
        default=env("compare", False),
        help="run every method with one seed; writes compare.json and compare.html",
    )
    p.add_argument(
        "--cotrain-reward",
        default=env("cotrain-reward", "adversarial"),
        help=f"simulator reward of cotrain/population: {' | '.join(COTRAIN_REWARDS)} (default adversarial)",
    )
    return p


def _config_from_args(args: argparse.Namespace, method: str) -> Any:
    from collapse_probe.trainers.lab import LabConfig

    return LabConfig(method=method, steps=args.steps, seed=args.seed, cotrain_reward=args.cotrain_reward)


def _validate(args: argparse.Namespace) -> None:
    if not args.out:
        raise ConfigError("--out: a run directory is required (or set $COLLAPSE_PROBE_OUT)")
    if args.method not in METHOD_CHOICES:
        raise ConfigError(f"--method: expected one of {', '.join(METHOD_CHOICES)}; got {args.method!r}")
    if args.cotrain_reward not in COTRAIN_REWARDS:
        raise ConfigError(
            f"--cotrain-reward: expected one of {', '.join(COTRAIN_REWARDS)}; got {args.cotrain_reward!r}"
        )
    positive("steps", args.steps)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out: {out} exists and is not a directory")


def _summary_table(rows: dict[str, dict[str, float]], bounds: dict[str, dict[str, bool]]) -> str:
    header = (
        f"{'method':<11} {'train end':>9} {'held start':>10} {'held peak':>9} {'@step':>5} {'held end':>8} "
        f"{'entropy end/start':>17} {'collapse err':>12} {'bounds':>6}"
    )
    lines = [header, "-" * len(header)]
    for method, s in rows.items():
        ok = "ok" if all(bounds[method].values()) else "FAIL"
        lines.append(
            f"{method:<11} {s['train_reward_end']:>9.3f} {s['heldout_reward_start']:>10.3f} "
            f"{s['heldout_reward_peak']:>9.3f} {int(s['heldout_reward_peak_step']):>5d} {s['heldout_reward_end']:>8.3f} "
            f"{s['entropy_ratio']:>17.3f} {s['collapse_error_end']:>12.3f} {ok:>6}"
        )
    return "\n".join(lines)


def write_report(result: Any, path: Path) -> None:
    """Self-contained plotly report of one run (plotly.js inlined)."""
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
    x = result.steps
    fig.add_trace(go.Scatter(x=x, y=result.train_reward, name="train reward"), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=result.heldout_reward, name="held-out reward (real users)"), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=result.heldout_sim_reward, name="held-out simulators"), row=1, col=1)
    fig.add_trace(go.Scatter(x=x, y=result.policy_entropy, name="policy entropy"), row=1, col=2)
    fig.add_trace(go.Scatter(x=x, y=result.collapse_error, name="collapse error E[eps]"), row=2, col=1)
    fig.add_trace(go.Scatter(x=x, y=result.tv, name="TV(P_phi, P_mode)"), row=2, col=2)
    fig.add_trace(go.Scatter(x=x, y=result.tv_bound, name="bound eps_bar_H", line={"dash": "dash"}), row=2, col=2)
    for r in (1, 2):
        for c in (1, 2):
            fig.update_xaxes(title_text="step", row=r, col=c)
    fig.update_layout(title=f"collapse lab: method={result.config.method}, seed={result.config.seed}", height=800)
    fig.write_html(str(path), include_plotlyjs=True, full_html=True)


def write_compare_report(results: dict[str, Any], path: Path) -> None:
    """Held-out reward curves of every method in one self-contained plot."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for method, result in results.items():
        fig.add_trace(go.Scatter(x=result.steps, y=result.heldout_reward, name=method))
    seed = next(iter(results.values())).config.seed
    fig.update_layout(
        title=f"collapse lab: held-out reward (real users) by method, seed={seed}",
        xaxis_title="step",
        yaxis_title="held-out reward (exact)",
    )
    fig.write_html(str(path), include_plotlyjs=True, full_html=True)


def run(args: argparse.Namespace) -> int:
    """Run the lab as the parsed arguments say; returns the exit status."""
    _validate(args)
    from collapse_probe.rollout import write_json_atomic
    from collapse_probe.trainers.lab import METHODS, run_lab

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.compare:
        configs = {m: _config_from_args(args, m) for m in METHODS}
        results = {m: run_lab(c) for m, c in configs.items()}
        payload = {
            "schema": "collapse-probe/lab-compare/v1",
            "seed": args.seed,
            "steps": args.steps,
            "cotrain_reward": args.cotrain_reward,
            "methods": {m: r.to_json() for m, r in results.items()},
            "heldout_reward_end": {m: r.heldout_reward[-1] for m, r in results.items()},
        }
        shared = {k: v for k, v in configs[METHODS[0]].__dict__.items() if k != "method"}
        write_json_atomic(out / "config.json", {"kind": "lab", "compare": True, "methods": list(METHODS), **shared})
        write_json_atomic(out / "compare.json", payload)
        write_compare_report(results, out / "compare.html")
        print(
            _summary_table(
                {m: r.summary() for m, r in results.items()},
                {m: r.to_json()["bound_checks"] for m, r in results.items()},
            )
        )
        print(f"wrote {out / 'compare.json'} and {out / 'compare.html'}")
        return 0
    config = _config_from_args(args, args.method)
    result = run_lab(config)
    data = result.to_json()
    write_json_atomic(out / "config.json", {"kind": "lab", **data["config"]})
    write_json_atomic(out / "results.json", data)
    write_report(result, out / "report.html")
    print(_summary_table({config.method: result.summary()}, {config.method: data["bound_checks"]}))
    print(f"wrote {out / 'results.json'} and {out / 'report.html'}")
    return 0
