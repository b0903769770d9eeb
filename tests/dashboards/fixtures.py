"""Generators of run directories of every kind for the dashboard tests.

Where a pipeline exists it produces the run (cross-play on scripted models, the gate on that run,
the tabular lab through its CLI, the audit on scripted simulators, with ``--compare-vs``,
``--policy`` and ``--human``); the train run is written as its
schema says (``metrics.jsonl`` per step + ``results.json``) from a real lab run's exact curves.
:func:`write_half_written_runs` leaves runs in the states a reader meets while another process
writes them or after a kill.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

POLICY_A = {"responses": [{"text": "Please donate to Save the Children.", "p": 0.5},
                          {"text": "Kids need your help, will you give a little?", "p": 0.5}]}  # fmt: skip
POLICY_B = {"responses": [{"text": "Donate now.", "p": 1.0}]}
SIM_COLLAPSED = {"responses": [{"text": "Sure [DONATE $1]", "p": 0.9}, {"text": "No thanks [DONATE $0]", "p": 0.1}]}
_DONOR = [{"text": "Sure [DONATE $1]", "p": 0.7}, {"text": "No thanks [DONATE $0]", "p": 0.1},
          {"text": "1. (p=0.6) Sure [DONATE $1]\n2. (p=0.4) No thanks [DONATE $0]", "p": 0.2}]  # fmt: skip
SIM_AUDIT = {
    "responses": _DONOR,
    "turns": [[{"text": "Tell me more about it.", "p": 0.8},
               {"text": "1. (p=0.5) Tell me more.\n2. (p=0.5) Not interested.", "p": 0.2}],
              [{"text": "I see, kids matter.", "p": 0.9}, {"text": "No.", "p": 0.1}],
              [{"text": "Hmm, let me think.", "p": 0.6}, {"text": "I see, kids matter.", "p": 0.4}],
              _DONOR],
}  # fmt: skip
"""An audit simulator whose replies depend on the turn (from the fourth turn on, which
with ``max_turns=3`` is the donation-elicitation turn, it states a donation);
a fifth of them are candidate lists, which Verbalized Sampling parses (the rest are counted as VS
parse failures)."""
SIM_DIVERSE = {"responses": [{"text": "Sure [DONATE $1]", "p": 0.3}, {"text": "No thanks [DONATE $0]", "p": 0.3},
                             {"text": "Okay, all of it [DONATE $2]", "p": 0.2},
                             {"text": "Maybe half [DONATE $0.5]", "p": 0.2}]}  # fmt: skip


@contextlib.contextmanager
def _cwd(path: Path) -> Iterator[None]:
    """Run in ``path`` so scripted specs are short relative names (readable matrix labels)."""
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def write_models(root: Path) -> Path:
    """Write the scripted policy and simulator files into ``root/models``; return that folder."""
    d = root / "models"
    d.mkdir(parents=True, exist_ok=True)
    for name, data in (
        ("pol_a", POLICY_A),
        ("pol_b", POLICY_B),
        ("sim_mode", SIM_COLLAPSED),
        ("sim_div", SIM_DIVERSE),
        ("sim_audit", SIM_AUDIT),
    ):
        (d / f"{name}.json").write_text(json.dumps(data))
    return d


def write_crossplay_run(root: Path, name: str = "crossplay", report: bool = False) -> Path:
    """A finished 2 policies x 2 simulators cross-play run on P4G, made by the real pipeline."""
    from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay

    root = root.resolve()
    write_models(root)
    with _cwd(root):
        cfg = CrossplayConfig(
            policies=["scripted:models/pol_a.json", "scripted:models/pol_b.json"],
            simulators=["scripted:models/sim_mode.json", "scripted:models/sim_div.json"],
            train_simulator="scripted:models/sim_mode.json",
            tasks=4,
            rollouts=2,
            max_turns=2,
        )
        run_crossplay(cfg, out=name, progress=False, cache=False, report=report)
    return root / name


def write_gate_verdict(crossplay_dir: Path, out: Path) -> dict[str, Any]:
    """Judge policy A of a cross-play run with the real gate and write its verdict as ``gate --json`` does
    (``--decision point``: 4 tasks x 2 rollouts are too few for the default interval rule to decide)."""
    from collapse_probe.pipelines.gate import gate_run_dir

    crossplay_dir = crossplay_dir.resolve()
    with _cwd(crossplay_dir.parent):
        verdict = gate_run_dir(
            crossplay_dir, "scripted:models/pol_a.json", min_transfer=0.8, decision="point"
        ).to_json()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(verdict, indent=2) + "\n")
    return verdict


def write_lab_run(root: Path, name: str, method: str = "single", steps: int = 30, compare: bool = False) -> Path:
    """A tabular-lab run made through the ``collapse-probe lab`` command's own code (``--compare`` optional)."""
    from collapse_probe.cli import lab

    parser = argparse.ArgumentParser()
    lab.add_parser(parser.add_subparsers(dest="command"))
    argv = ["lab", "--method", method, "--steps", str(steps), "--out", str(root / name)]
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        lab.run(parser.parse_args([*argv, *(["--compare"] if compare else [])]))
    return root / name


def write_train_run(root: Path, name: str, method: str = "single", steps: int = 60, eval_every: int = 10) -> Path:
    """A train run in the ``collapse-probe/train/v1`` layout: one ``metrics.jsonl`` line per step.

    The curves are the exact ones of a real lab run of ``method`` (train reward, held-out reward,
    policy entropy, simulator collapse error), held-out reward only every ``eval_every`` steps as
    the trainer logs it.
    """
    from collapse_probe.trainers.lab import LabConfig, run_lab

    res = run_lab(LabConfig(method=method, steps=steps, eval_every=1, seed=1))
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(
        json.dumps({"kind": "train", "method": method, "steps": steps, "eval_every": eval_every})
    )
    with open(d / "metrics.jsonl", "w", encoding="utf-8") as f:
        for i, step in enumerate(res.steps):
            rec = {
                "step": step,
                "train_reward": res.train_reward[i],
                "zero_std_share": None if i == 0 else res.zero_std_fraction[i],
                "policy_entropy": res.policy_entropy[i],
                "sim_collapse_error": res.collapse_error[i],
            }
            if step % eval_every == 0:
                rec["heldout_reward"] = res.heldout_reward[i]
            f.write(json.dumps(rec) + "\n")
    results = {
        "schema": "collapse-probe/train/v1",
        "method": method,
        "steps": steps,
        "final": {"train_reward": res.train_reward[-1], "heldout_reward": res.heldout_reward[-1]},
        "first": {"step": res.steps[0], "train_reward": res.train_reward[0]},
    }
    (d / "results.json").write_text(json.dumps(results, indent=2))
    return d


def official_p4g_dir() -> Path | None:
    """The official P4G CSVs at ``../shared/datasets/p4g`` (as the ``p4g_dir`` fixture finds them), or ``None``."""
    d = Path(__file__).resolve().parents[3] / "shared" / "datasets" / "p4g"
    return d if (d / "full_info.csv").exists() else None


def write_audit_run(
    root: Path,
    name: str,
    simulator: str = "sim_audit",
    samples: int = 12,
    states: int = 2,
    compare_vs: bool = False,
    policy: str | None = None,
    human: str | Path | None = None,
    max_turns: int = 2,
    seed: int = 0,
    partition: str | None = None,
) -> Path:
    """An audit run of a scripted simulator on P4G, made by the real audit pipeline.

    Args:
        root: the runs root (the scripted models are written to ``root/models``).
        name: the run directory under ``root``.
        simulator: ``sim_audit`` (turn-dependent replies, some of them verbalized candidate lists),
            ``sim_mode`` (collapsed) or ``sim_div`` (diverse).
        samples: N, responses per state.
        states: P4G personas probed.
        compare_vs: also audit the Verbalized-Sampling mode (``--compare-vs``).
        policy: ``pol_a`` or ``pol_b``: audit the on-policy states of its rollouts (``--policy``);
            ``None``: the opening and elicitation probe states.
        human: directory of the official P4G CSVs (``--human``).
        max_turns: conversation length of the on-policy rollouts.
        seed: audit seed.
        partition: the audit's ``--partition`` (``None``: its default, by meaning, which may load the
            sentence encoder: a test that does so is marked ``realmodel``).
    """
    from collapse_probe.pipelines.audit import AuditConfig, run_audit

    root = root.resolve()
    write_models(root)
    cfg = AuditConfig(
        sim=f"scripted:models/{simulator}.json",
        policy=None if policy is None else f"scripted:models/{policy}.json",
        states=states,
        samples=samples,
        stop_early=False,  # N replies per state exactly, as the dashboards' tests count them
        compare_vs=compare_vs,
        vs_k=2,
        human=None if human is None else str(human),
        max_turns=max_turns,
        seed=seed,
        n_boot=200,
        partition=partition,
    )
    with _cwd(root):
        run_audit(cfg, name, progress=False, cache=False)
    return root / name


def write_half_written_runs(root: Path) -> dict[str, Path]:
    """Runs caught mid-write: torn JSONL tails, missing or truncated results.json, an empty config.json.

    Returns:
        ``{what: run directory}``.
    """
    out: dict[str, Path] = {}

    # an audit killed mid-write: its results and report never written, the last record torn
    d = write_audit_run(root, "audit_running", "sim_div", samples=8, states=2, partition="exact")
    (d / "results.json").unlink()
    (d / "report.html").unlink()
    lines = (d / "samples.jsonl").read_text().splitlines()
    (d / "samples.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:60])
    out["audit_torn"] = d

    d = root / "crossplay_resuming"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"kind": "crossplay", "policies": ["p"], "simulators": ["s"]}))
    rec = {"key": "k0", "task_id": "t0", "rollout": 0, "policy": "p", "simulator": "s", "reward": 0.5, "status": "done"}
    (d / "conversations.jsonl").write_text(json.dumps(rec) + "\n" + json.dumps(rec)[:25])
    (d / "results.json").write_text('{"schema": "collapse-probe/crossplay/v1", "cells": [{"policy": "p", "simu')
    out["crossplay_partial_results"] = d

    d = root / "train_running"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"kind": "train", "method": "single"}))
    lines = [json.dumps({"step": s, "train_reward": 0.1 * s, "policy_entropy": 2.0 - 0.1 * s}) for s in range(4)]
    (d / "metrics.jsonl").write_text("\n".join(lines) + "\n" + "not json in the middle\n" + '{"step": 4, "train_rew')
    out["train_torn"] = d

    d = root / "lab_starting"
    d.mkdir(parents=True)
    (d / "config.json").write_text("")
    out["empty_config"] = d

    d = root / "foreign_results"
    d.mkdir(parents=True)
    (d / "results.json").write_text("[1, 2, 3]")
    out["foreign_results"] = d
    return out


# ------------------------------------------------------------------------------------------------ hard runs

LONG_SPEC_CHARS = 100
"""The length of the long ``scripted:`` specs of the hard runs."""
DOWN_SERVER = "openai-compatible/no-such-model@http://127.0.0.1:9/v1"
"""An OpenAI-compatible server that is not running (port 9, discard, has no listener here): every call
fails at connect, as a run whose server is down."""


def long_spec(root: Path, stem: str, data: dict[str, Any], chars: int = LONG_SPEC_CHARS) -> str:
    """Write ``data`` as a scripted model under ``root/models`` whose spec (relative to ``root``) is
    exactly ``chars`` characters long, and return that spec."""
    d = root / "models"
    d.mkdir(parents=True, exist_ok=True)
    fixed = len("scripted:models/") + len(".json")
    name = (stem + "_" + "very_long_persona_name_of_a_scripted_simulator" * 4)[: chars - fixed]
    (d / f"{name}.json").write_text(json.dumps(data))
    spec = f"scripted:models/{name}.json"
    assert len(spec) == chars
    return spec


def _variant(i: int) -> dict[str, Any]:
    """Scripted models that differ in how collapsed they are (a mode of 1 - i/10)."""
    top = max(0.2, 0.95 - 0.1 * i)
    rest = (1 - top) / 3
    texts = ["Sure [DONATE $1]", "No thanks [DONATE $0]", "Okay, all of it [DONATE $2]", "Maybe half [DONATE $0.5]"]
    return {"responses": [{"text": texts[0], "p": top}] + [{"text": t, "p": rest} for t in texts[1:]]}


def write_long_audit_run(root: Path, name: str, states: int = 16, samples: int = 8, compare_vs: bool = True) -> Path:
    """An audit of a 100-character simulator spec over ``2 * states`` probe states (32 by default),
    both sampling modes (``--compare-vs``), made by the real pipeline."""
    from collapse_probe.pipelines.audit import AuditConfig, run_audit

    root = root.resolve()
    write_models(root)
    sim = long_spec(root, "donor", SIM_AUDIT)
    cfg = AuditConfig(sim=sim, states=states, samples=samples, compare_vs=compare_vs, vs_k=2, seed=1, n_boot=100)
    with _cwd(root):
        run_audit(cfg, name, progress=False, cache=False)
    return root / name


def write_matrix_run(root: Path, name: str, n: int = 8) -> Path:
    """An ``n`` x ``n`` cross-play run (100-character specs, one training simulator) by the real pipeline."""
    from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay

    root = root.resolve()
    write_models(root)
    policies = [long_spec(root, f"policy{i}", POLICY_A if i % 2 else POLICY_B) for i in range(n)]
    sims = [long_spec(root, f"sim{i}", _variant(i)) for i in range(n)]
    with _cwd(root):
        cfg = CrossplayConfig(policies=policies, simulators=sims, train_simulator=sims[0], tasks=2, rollouts=1,
                              max_turns=1)  # fmt: skip
        run_crossplay(cfg, out=name, progress=False, cache=False, report=True)
    return root / name


def _down_model() -> None:
    """Build the down server's model once, with no retries (one failed connect per call)."""
    from collapse_probe.models import get_model

    get_model(DOWN_SERVER, max_retries=0)


def write_failed_audit_run(root: Path, name: str) -> Path:
    """An audit whose simulator's server is down: every state an infrastructure failure, no result."""
    from collapse_probe.pipelines.audit import AuditConfig, run_audit

    _down_model()
    root = root.resolve()
    with _cwd(root):
        run_audit(AuditConfig(sim=DOWN_SERVER, states=1, samples=4, n_boot=100), name, progress=False, cache=False)
    return root / name


def write_failed_crossplay_run(root: Path, name: str) -> Path:
    """A cross-play run whose simulator's server is down: every conversation an infrastructure failure."""
    from collapse_probe.pipelines.crossplay import CrossplayConfig, run_crossplay

    _down_model()
    root = root.resolve()
    write_models(root)
    with _cwd(root):
        cfg = CrossplayConfig(policies=["scripted:models/pol_a.json"], simulators=[DOWN_SERVER, "scripted:models/sim_mode.json"],
                              train_simulator="scripted:models/sim_mode.json", tasks=2, rollouts=1,
                              max_turns=1)  # fmt: skip
        run_crossplay(cfg, out=name, progress=False, cache=False, report=True)
    return root / name


def write_hard_runs(root: Path) -> dict[str, Path]:
    """The runs that break layouts: 100-character specs, 32 states in two modes, an 8 x 8 matrix, runs
    whose server was down, and a lab comparison; ``{what: run directory}``."""
    return {
        "audit_32_states": write_long_audit_run(root, "audit-long-specs-32-states"),
        "crossplay_8x8": write_matrix_run(root, "crossplay-8x8-long-specs"),
        "audit_all_failed": write_failed_audit_run(root, "audit-server-down"),
        "crossplay_all_failed": write_failed_crossplay_run(root, "crossplay-server-down"),
    }


def _cli(argv: list[str]) -> int:
    """Run a ``collapse-probe`` command in this process, its terminal output discarded."""
    from collapse_probe.cli import main

    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
        return main(argv)


def write_play_run(root: Path, name: str, sim: str = "scripted:models/sim_div.json") -> Path:
    """A play run (policy A against ``sim``) through the ``collapse-probe play`` command."""
    root = root.resolve()
    write_models(root)
    if sim == DOWN_SERVER:
        _down_model()
    with _cwd(root):
        _cli(["play", "--policy", "scripted:models/pol_a.json", "--sim", sim, "--tasks", "2", "--rollouts", "2",
              "--max-turns", "2", "--out", name, "--no-progress", "--no-cache"])  # fmt: skip
    return root / name


def write_monitor_rows(out: Path, steps: int = 24, states: int = 4, collapse_at: int = 12) -> Path:
    """A monitor run directory written by :class:`~collapse_probe.integrations.monitor.CollapseMonitor` itself: each
    step shadows ``states`` states with six replies, varied before ``collapse_at`` and one reply after
    it, so the rows from the step after it on raise the collapse alarm (the run-wide test bets on what the
    first collapsed step showed); its ``report.html`` is the monitor's own."""
    from collapse_probe.integrations.monitor import CollapseMonitor

    m = CollapseMonitor(partition="exact", out=out, seed=0)
    for step in range(steps):
        for s in range(states):
            replies = [f"[DONATE ${(s + k) % 4}]" for k in range(6)] if step < collapse_at else ["[DONATE $1]"] * 6
            m.record_turn(f"{step}-{s}", replies[0], replies[1:])
        m.end_step(step, rewards=[0.25 + 0.5 * (step >= collapse_at)] * states)
    m.close()
    return out


def write_train_report_run(root: Path, name: str, steps: int = 40) -> Path:
    """A train run with its ``report.html`` written by the trainer's own report function, from the
    exact curves of a lab run (:func:`write_train_run`), and the collapse monitor's rows in its
    ``integrations/monitor/`` subdirectory, where the LLM trainers keep them (:func:`write_monitor_rows`)."""
    from collapse_probe.trainers._train_results import write_train_report

    d = write_train_run(root, name, steps=steps, eval_every=5)
    metrics = [json.loads(line) for line in (d / "metrics.jsonl").read_text().splitlines()]
    write_monitor_rows(d / "monitor", steps=steps, collapse_at=steps // 2)
    results = json.loads((d / "results.json").read_text())
    results.update(final={"step": steps - 1, **metrics[-1]}, advantage={"convention": "z-score within the group", "std_ddof": 0, "eps": 1e-6},
                   config={"policy": "scripted:models/pol_a.json", "sims": ["scripted:models/sim_mode.json"],
                           "benchmark": "p4g", "group_size": 4, "tasks": 4})  # fmt: skip
    write_train_report(results, metrics, d / "report.html", label=name)
    return d


def write_report_runs(root: Path) -> dict[str, Path]:
    """One report of every kind, the hard runs among them: ``{what: report file}``."""
    root.mkdir(parents=True, exist_ok=True)
    hard = write_hard_runs(root)
    cp = write_crossplay_run(root, "crossplay-2x2", report=True)
    reports = {what: d / "report.html" for what, d in hard.items()}
    reports["crossplay_2x2"] = cp / "report.html"
    human = official_p4g_dir()
    d = write_audit_run(
        root, "audit-on-policy-vs", "sim_audit", compare_vs=True, policy="pol_a", max_turns=3, human=human
    )
    reports["audit_on_policy_vs"] = d / "report.html"
    reports["play"] = write_play_run(root, "play") / "report.html"
    reports["play_all_failed"] = write_play_run(root, "play-server-down", DOWN_SERVER) / "report.html"
    reports["train"] = write_train_report_run(root, "train-with-monitor") / "report.html"
    reports["monitor"] = write_monitor_rows(root / "monitor-collapsing") / "report.html"
    for what, argv, page in (
        ("lab", ["--steps", "30"], "report.html"),
        ("lab_compare", ["--compare", "--seeds", "2", "--steps", "20"], "compare.html"),
        ("lab_sweep", ["--sweep", "sim-temperature=0.3,1.0", "--seeds", "2", "--steps", "20"], "sweep.html"),
    ):
        out = root / what.replace("_", "-")
        _cli(["lab", *argv, "--out", str(out)])
        reports[what] = out / page
    return reports
