"""A generator of τ2-bench results files in the official format (``Results`` / ``SimulationRun`` of
tau2-bench's ``data_model/simulation.py``), written here with a known user-simulator distribution.

Every trial of a task starts with the agent's fixed greeting; the user's first reply is drawn from the
task's distribution, the agent answers it deterministically (a lookup tool call, its result and a
question), and the user's second reply is drawn from a second distribution, so trials that agree on
the first reply share a prefix two user turns deep. Rewards depend on the replies. Optional records:
an infrastructure failure, a user-simulator error found by a review, a directory-format file.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

GREETING = "Hi! How can I help you today?"
NOW = "2025-06-01T12:00:00.000000"


def _msg(role: str, content: str | None, turn: int, **extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"role": role, "content": content, "turn_idx": turn, "timestamp": NOW, "cost": 0.0,
                         "usage": {"completion_tokens": 9, "prompt_tokens": 99}, "raw_data": None}  # fmt: skip
    m.update(extra)
    return m


def _draw(rng: random.Random, dist: list[tuple[str, float]]) -> str:
    return rng.choices([t for t, _ in dist], weights=[p for _, p in dist])[0]


def make_results(
    path: str | Path,
    tasks: dict[str, list[tuple[str, float]]],
    trials: int,
    *,
    second: list[tuple[str, float]] | None = None,
    seed: int = 0,
    user_llm: str = "gpt-4.1-2025-04-14",
    agent_llm: str = "claude-3-7-sonnet-20250219",
    agent_temperature: float = 0.0,
    domain: str = "retail",
    infra_failures: int = 0,
    reviewed_user_errors: int = 0,
    dir_format: bool = False,
) -> dict[str, Any]:
    """Write a results file and return its content.

    Args:
        path: ``results.json`` to write (with ``dir_format``: the metadata file beside ``simulations/``).
        tasks: task id -> the user's first-reply distribution ``[(text, p), ...]``.
        trials: trials per task.
        second: the user's second-reply distribution (default: two answers).
        seed: seed of every draw.
        user_llm, agent_llm, agent_temperature, domain: the ``info`` block.
        infra_failures: the first N simulations end with ``infrastructure_error`` (not evaluable).
        reviewed_user_errors: the next N carry a review with a critical user-simulator error.
        dir_format: write tau2-bench's directory format (one file per simulation).
    """
    rng = random.Random(seed)
    second = second or [("It is order #W123.", 0.7), ("I don't remember the number.", 0.3)]
    sims = []
    k = 0
    for task_id, dist in tasks.items():
        for trial in range(trials):
            first = _draw(rng, dist)
            lookup = {"id": f"call_{trial}", "name": "find_user_id_by_email",
                      "arguments": {"email": f"{first[:12].lower().replace(' ', '_')}@example.com"},
                      "requestor": "assistant"}  # fmt: skip
            reply2 = _draw(rng, second)
            messages = [
                _msg("assistant", GREETING, 0),
                _msg("user", first, 1),
                _msg("assistant", None, 2, tool_calls=[lookup]),
                {"id": lookup["id"], "role": "tool", "content": '"user_4711"', "requestor": "assistant",
                 "error": False, "turn_idx": 3, "timestamp": NOW},
                _msg("assistant", "Thanks, I found your account. Which order is it about?", 4),
                _msg("user", reply2, 5),
                _msg("assistant", "Done. Anything else?", 6),
                _msg("user", "###STOP###", 7),
            ]  # fmt: skip
            reward = 1.0 if ("order" in reply2.lower() and rng.random() < 0.8) else 0.0
            term = "user_stop"
            review = None
            if k < infra_failures:
                term, reward = "infrastructure_error", 0.0
                messages = messages[:2]
            elif k < infra_failures + reviewed_user_errors:
                review = {"summary": "the user gave a wrong order number", "agent_error": False, "user_error": True,
                          "critical_user_error": True, "has_errors": True, "cost": 0.01,
                          "errors": [{"source": "user", "error_type": "content_error", "error_tags": ["wrong_info"],
                                      "severity": "critical_hindered", "turn_idx": 5,
                                      "reasoning": "made up an order number", "correct_behavior": "say it is unknown"}]}  # fmt: skip
            sim = {
                "id": str(uuid.UUID(int=rng.getrandbits(128))), "task_id": task_id, "timestamp": NOW,
                "start_time": NOW, "end_time": NOW, "duration": 12.5 + trial, "termination_reason": term,
                "agent_cost": 0.02, "user_cost": 0.001,
                "reward_info": {"reward": reward, "db_check": {"db_match": bool(reward), "db_reward": reward},
                                "env_assertions": None, "action_checks": None, "nl_assertions": None,
                                "communicate_checks": None, "reward_basis": ["DB"], "reward_breakdown": {"DB": reward},
                                "info": None},
                "messages": messages, "trial": trial, "seed": 300 + trial, "mode": "half-duplex",
                "review": review, "hallucination_retries_used": 0,
            }  # fmt: skip
            sims.append(sim)
            k += 1
    results = {
        "timestamp": NOW,
        "info": {
            "git_commit": "0" * 40, "num_trials": trials, "max_steps": 200, "max_errors": 10,
            "user_info": {"implementation": "user_simulator", "llm": user_llm, "llm_args": {"temperature": 0.0},
                          "global_simulation_guidelines": "Be a customer."},
            "agent_info": {"implementation": "llm_agent", "llm": agent_llm,
                           "llm_args": {"temperature": agent_temperature}},
            "environment_info": {"domain_name": domain, "policy": "Help the customer.", "tool_defs": {}},
            "seed": 300, "text_streaming_config": None,
        },
        "tasks": [{"id": t, "description": {"purpose": f"task {t}"}, "user_scenario": {"persona": None,
                   "instructions": {"domain": domain, "reason_for_call": "order", "known_info": "email",
                                    "unknown_info": None, "task_instructions": "ask"}},
                   "initial_state": None, "evaluation_criteria": {"actions": [], "env_assertions": None,
                   "communicate_info": [], "nl_assertions": None, "reward_basis": ["DB"]}} for t in tasks],
        "simulations": sims,
    }  # fmt: skip
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if dir_format:
        (p.parent / "simulations").mkdir(exist_ok=True)
        for s in sims:
            (p.parent / "simulations" / f"{s['id']}.json").write_text(json.dumps(s, indent=2))
        meta = {k: v for k, v in results.items() if k != "simulations"}
        meta["simulation_index"] = [{"id": s["id"], "task_id": s["task_id"], "trial": s["trial"],
                                     "reward": s["reward_info"]["reward"], "termination_reason": s["termination_reason"],
                                     "agent_cost": s["agent_cost"], "duration": s["duration"]} for s in sims]  # fmt: skip
        p.write_text(json.dumps(meta, indent=2))
    else:
        p.write_text(json.dumps(results, indent=2))
    return results


def reply_counts(replies: list[str]) -> list[int]:
    """Class counts of replies by exact text, largest first (what ``--partition exact`` counts here)."""
    seen: dict[str, int] = {}
    for r in replies:
        seen[r] = seen.get(r, 0) + 1
    return sorted(seen.values(), reverse=True)
