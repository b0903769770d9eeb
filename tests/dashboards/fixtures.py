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


def write_crossplay_run(root: Path, name: str = "crossplay") -> Path:
    """A finished 2 policies x 2 simulators cross-play run on P4G, made by the real pipeline."""
    from collapse_probe.crossplay import CrossplayConfig, run_crossplay

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
            n_boot=200,
        )
        run_crossplay(cfg, out=name, progress=False, cache=False, report=False)
    return root / name


def write_gate_verdict(crossplay_dir: Path, out: Path) -> dict[str, Any]:
    """Judge policy A of a cross-play run with the real gate and write its verdict as ``gate --json`` does
    (``--decision point``: 4 tasks x 2 rollouts are too few for the default interval rule to decide)."""
    from collapse_probe.gate import gate_run_dir

    crossplay_dir = crossplay_dir.resolve()
    with _cwd(crossplay_dir.parent):
        verdict = gate_run_dir(
            crossplay_dir, "scripted:models/pol_a.json", min_transfer=0.8, decision="point"
        ).to_dict()
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
    """
    from collapse_probe.audit import AuditConfig, run_audit

    root = root.resolve()
    write_models(root)
    cfg = AuditConfig(
        sim=f"scripted:models/{simulator}.json",
        policy=None if policy is None else f"scripted:models/{policy}.json",
        states=states,
        samples=samples,
        compare_vs=compare_vs,
        vs_k=2,
        human=None if human is None else str(human),
        max_turns=max_turns,
        seed=seed,
        n_boot=200,
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
    d = write_audit_run(root, "audit_running", "sim_div", samples=8, states=2)
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
