"""``collapse-probe compare``: pairing tasks across published files, the simulator effects, the noise
floor and the rank flips, the command's output and its one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from collapse_probe.interop._tau2 import read_tau2_results, task_contents
from collapse_probe.interop._taubench import read_taubench


def tau2_file(path: Path, agent: str, user: str, rewards: dict[str, list[float | None]],
              scenarios: dict[str, Any] | None = None) -> Path:  # fmt: skip
    """A τ2-bench results file: per task id the rewards of its trials (``None``: an infrastructure error)."""
    sims = []
    for task, trial_rewards in rewards.items():
        for trial, r in enumerate(trial_rewards):
            sims.append({
                "id": f"{task}-{trial}", "task_id": task, "trial": trial,
                "termination_reason": "infrastructure_error" if r is None else "user_stop",
                "reward_info": None if r is None else {"reward": r},
                "messages": [{"role": "assistant", "content": "Hi! How can I help?"},
                             {"role": "user", "content": f"task {task}"}],
            })  # fmt: skip
    tasks = [{"id": t, "user_scenario": {"instructions": s}} for t, s in (scenarios or {}).items()]
    data = {"info": {"user_info": {"llm": user}, "agent_info": {"llm": agent}}, "tasks": tasks, "simulations": sims}
    path.write_text(json.dumps(data))
    return path


def test_tau2_task_content_from_the_user_scenario(tmp_path: Path) -> None:
    structured = {"domain": "airline", "reason_for_call": "cancel", "known_info": "I am Raj", "unknown_info": None,
                  "task_instructions": "insist"}  # fmt: skip
    f = tau2_file(tmp_path / "r.json", "a", "u", {"1": [1.0], "2": [0.0], "3": [1.0]},
                  {"1": structured, "2": "Book a flight."})  # fmt: skip
    run = read_tau2_results(f)
    by_task = {c.task_id: c.task_content for c in run.conversations}
    assert by_task["1"] == "domain: airline\nreason_for_call: cancel\nknown_info: I am Raj\ntask_instructions: insist"
    assert by_task["2"] == "Book a flight."
    assert by_task["3"] is None  # no task entry: paired by id only


def test_tau2_task_contents_tolerate_odd_tasks() -> None:
    assert task_contents(None) == {}
    assert task_contents([1, {"id": True}, {"id": "x", "user_scenario": 3}, {"id": 4, "user_scenario": {
        "persona": "calm", "instructions": "go"}}]) == {"4": "calm\ngo"}  # fmt: skip


def test_taubench_task_content_is_the_instruction(tmp_path: Path) -> None:
    recs = [{"task_id": 0, "trial": 0, "reward": 1.0, "traj": [], "info": {"task": {"instruction": "You are Olivia."}}},
            {"task_id": 1, "trial": 0, "reward": 0.0, "traj": [], "info": {}}]  # fmt: skip
    (tmp_path / "t.json").write_text(json.dumps(recs))
    run = read_taubench(tmp_path / "t.json")
    assert [c.task_content for c in run.conversations] == ["You are Olivia.", None]
