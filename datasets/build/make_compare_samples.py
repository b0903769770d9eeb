"""Write the samples of ``collapse_probe/data/published/compare/`` (deterministic): τ2-bench results files of
two agents, each run under two user simulators on the same 12 tasks with 4 trials per task, from known
per-task success probabilities, for ``docs/compare.md`` and the tests.

    python datasets/build/make_compare_samples.py [--out DIR]

The ``gpt-4.1-mini`` runs come from a fork that renumbered the tasks and re-wrapped their texts, so their
task ids do not match the ``gpt-4.1`` runs: ``compare`` pairs them by the task's text. A few trials end in
an infrastructure error. Every text was written for this project.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "collapse_probe" / "data" / "published" / "compare"

TASKS = [
    "You want to cancel order #W2378156 because it arrived late. You will accept a refund to the original card.",
    "You want to exchange the blue T-shirt of order #W4776164 for the same shirt in size L.",
    "You want to change the shipping address of order #W9911714 to 11 Elm Street, Denver, CO 80014.",
    "You want to return the keyboard of order #W7273336; you do not remember the order number at first.",
    "You want to know the status of order #W5694685 and, if it has not shipped, cancel it.",
    "You want to change the payment method of order #W8632528 to your gift card.",
    "You want to exchange two items of order #W3942868 in one request and insist on a single exchange.",
    "You want a refund for a missing item of order #W6874763 and refuse store credit.",
    "You want to update your default address, then ask for the total of your pending orders.",
    "You want to cancel one of two pending orders but cannot say which; the agent must ask.",
    "You want to return everything in order #W1092119 except the lamp.",
    "You want to change the size of the shoes of order #W2611340 and add a second pair.",
]
"""The tasks' user instructions (what the user simulator is told)."""

# per-task success probabilities: (agent, simulator) -> 12 probabilities. The mini simulator gives in
# more easily on the tasks where the user must insist (tasks 6, 7, 9): agent-small gains there, and the
# two agents' order reverses (true rates: agent-large 0.742 and 0.750, agent-small 0.496 and 0.833 under
# gpt-4.1 and gpt-4.1-mini).
BASE = [0.95, 0.9, 0.85, 0.6, 0.8, 0.9, 0.3, 0.4, 0.7, 0.2, 0.5, 0.65]
P = {
    ("agent-large", "gpt-4.1"): [min(1.0, p + 0.1) for p in BASE],
    ("agent-large", "gpt-4.1-mini"): [min(1.0, p + 0.12) for p in BASE],
    ("agent-small", "gpt-4.1"): [max(0.0, p - 0.15) for p in BASE],
    ("agent-small", "gpt-4.1-mini"): [min(1.0, p + (0.6 if i in (6, 7, 9) else 0.05)) for i, p in enumerate(BASE)],
}
TRIALS = 4


def _file(agent: str, user: str, rng: random.Random) -> dict[str, object]:
    fork = user == "gpt-4.1-mini"
    ids = [str(100 + 7 * i) if fork else str(i) for i in range(len(TASKS))]
    texts = [t.replace("; ", ";\n").replace(", ", ",  ") if fork else t for t in TASKS]
    sims = []
    for i, (tid, p) in enumerate(zip(ids, P[(agent, user)], strict=True)):
        for trial in range(TRIALS):
            infra = rng.random() < 0.03
            ok = rng.random() < p
            sims.append({
                "id": f"{agent}-{user}-{tid}-{trial}", "task_id": tid, "trial": trial,
                "termination_reason": "infrastructure_error" if infra else "user_stop",
                "reward_info": None if infra else {"reward": 1.0 if ok else 0.0},
                "messages": [
                    {"role": "assistant", "content": "Hi! How can I help you today?"},
                    {"role": "user", "content": TASKS[i].split(".")[0].replace("You want", "I want") + "."},
                    {"role": "assistant", "content": "Done." if ok else "I am sorry, I cannot do that."},
                ],
            })  # fmt: skip
    return {
        "info": {"user_info": {"implementation": "user_simulator", "llm": user},
                 "agent_info": {"implementation": "llm_agent", "llm": agent, "llm_args": {"temperature": 0.0}},
                 "environment_info": {"domain_name": "retail"}, "num_trials": TRIALS},
        "tasks": [{"id": tid, "user_scenario": {"instructions": text}} for tid, text in zip(ids, texts, strict=True)],
        "simulations": sims,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"directory to write the samples to (default {OUT})")
    out = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(54)
    for agent, user in P:
        path = out / f"{agent}_user_{user}.json"
        path.write_text(json.dumps(_file(agent, user, rng), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
